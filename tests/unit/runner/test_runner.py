"""The runner: cache, retries, limits, resume, cancel, progress, accounting (in-process fake backend).

Every test with a store runs on both backends (a SQLite file, then a PostgreSQL schema; issue 13).
"""

from __future__ import annotations

import asyncio
import random
import threading

import pytest

from peercore.jobs.pricing import Price, PriceTable
from peercore.reviewers.base import BackendError, ChatRequest, Completion, MissingCredentials, RetryableError
from peercore.runner import (
    ProviderLimits,
    RetryPolicy,
    Runner,
    RunnerError,
    _TokenBucket,
    estimate_tokens,
    run_job_sync,
    start_run,
)
from peercore.store import Store
from runner.fakes import EchoJob, FakeBackend
from virtual_time import in_virtual_time

FAST = RetryPolicy(max_attempts=4, base_s=0.001, cap_s=0.002)
PRICES = PriceTable({"fake": {"judge": Price(input=1.0, output=2.0)}})


def run(job, store, **options):
    options.setdefault("retry", FAST)
    options.setdefault("prices", PRICES)
    return run_job_sync(job, store, **options)


@pytest.fixture
def store(db):  # tests/conftest.py: a SQLite file path, then a PostgreSQL URL
    s = Store(db)
    yield s
    s.close()


@pytest.fixture
def demo(store):
    store.studies.create("demo")
    return "demo"


# ------------------------------------------------------------------------ basics


def test_every_item_is_stored_once_and_a_rerun_makes_no_call(store, demo):
    backend = FakeBackend(reply=lambda r: "ok " + r.messages[0]["content"])
    result = run(EchoJob(demo, backend, 12), store)
    assert result.status == "finished" and result.ok
    assert (result.done, result.total, result.calls, result.cached) == (12, 12, 12, 0)
    answers = store.questions.answers(demo)
    assert sorted(answers["question_id"]) == sorted(f"i{k}" for k in range(12))
    assert set(answers["answer"]) == {f"ok i{k}" for k in range(12)}
    again = FakeBackend()
    result = run(EchoJob(demo, again, 12), store)
    assert result.status == "finished" and result.calls == 0 and again.requests == []
    assert store.runs.get(result.run_id)["n_done"] == 12


def test_a_new_job_with_identical_calls_reads_them_from_the_cache(store, demo):
    run(EchoJob(demo, FakeBackend(), 5), store)
    # A different job (different config -> different run) asking the same requests.
    backend = FakeBackend()
    job = EchoJob(demo, backend, 6)
    result = run(job, store)
    assert result.run_id != EchoJob(demo, backend, 5).run_id()
    assert (result.calls, result.cached) == (1, 5)
    assert [r.messages[0]["content"] for r in backend.requests] == ["i5"]


def test_identical_requests_in_flight_together_are_paid_once(store, demo):
    backend = FakeBackend(latency_s=0.02)
    prompts = {f"i{k}": "same prompt" for k in range(6)}
    result = run(EchoJob(demo, backend, 6, prompts=prompts), store, concurrency=6)
    assert len(backend.requests) == 1
    assert result.calls == 1 and result.cached == 5 and result.done == 6


def test_run_id_is_deterministic_and_names_the_kind(demo):
    a, b = EchoJob(demo, FakeBackend(), 3), EchoJob(demo, FakeBackend(), 3)
    assert a.run_id() == b.run_id() and a.run_id().startswith("echo-")
    assert EchoJob(demo, FakeBackend(), 4).run_id() != a.run_id()


def test_resuming_a_run_of_another_job_is_refused_and_leaves_the_run_as_it_was(store, demo):
    # Issue 8: a refused resume (--run-id with changed options) flipped the finished run to "failed".
    first = run(EchoJob(demo, FakeBackend(), 2), store)
    before = store.runs.get(first.run_id)
    backend = FakeBackend()
    with pytest.raises(RunnerError, match="was made by another job .*differ in n.*left as it was and nothing was spent"):
        run(EchoJob(demo, backend, 3), store, run_id=first.run_id)
    after = store.runs.get(first.run_id)
    assert after["status"] == "finished" == before["status"] and after["n_items"] == before["n_items"] == 2
    assert store.runs.pending_items(first.run_id) == [] and backend.requests == []


# ----------------------------------------------------------------------- retries


def test_retryable_errors_are_retried_and_counted(store, demo):
    faults = [RetryableError("429", status=429, retry_after=0.001), RetryableError("500", status=500),
              TimeoutError("slow"), ConnectionResetError("reset")]
    backend = FakeBackend(faults=faults)
    result = run(EchoJob(demo, backend, 3), store, concurrency=1, retry=RetryPolicy(max_attempts=5, base_s=0.001))
    assert result.status == "finished"
    assert result.retries == 4 and result.calls == 3
    assert len(backend.requests) == result.calls + result.retries


def test_retries_exhausted_fail_the_item_and_the_next_run_retries_it(store, demo):
    backend = FakeBackend(faults=[RetryableError("500", status=500)] * 4)
    job = EchoJob(demo, backend, 2)
    result = run(job, store, concurrency=1, retry=RetryPolicy(max_attempts=4, base_s=0.001))
    assert result.status == "failed" and result.failed == 1 and result.done == 1
    assert result.failed_items[0][0] == "i0" and "gave up after 4 attempts" in result.failed_items[0][1]
    assert store.runs.pending_items(result.run_id) == ["i0"]
    result = run(EchoJob(demo, backend, 2), store)
    assert result.status == "finished" and result.done == 2 and result.calls == 1


def test_a_permanent_error_is_not_retried(store, demo):
    backend = FakeBackend(faults=[BackendError("400 bad request")])
    result = run(EchoJob(demo, backend, 1), store)
    assert result.status == "failed" and len(backend.requests) == 1
    assert "400 bad request" in result.failed_items[0][1]


def test_missing_credentials_abort_the_run_with_the_message(store, demo):
    backend = FakeBackend(faults=[MissingCredentials("set OPENAI_API_KEY")] * 50)
    result = run(EchoJob(demo, backend, 20), store, concurrency=2)
    assert result.status == "failed" and "OPENAI_API_KEY" in result.error
    assert len(backend.requests) <= 2  # stopped at once, not once per item
    assert store.runs.get(result.run_id)["status"] == "failed"


@pytest.mark.parametrize("attempt", [0, 1, 3, 10])
def test_backoff_is_full_jitter_within_the_cap(attempt):
    policy = RetryPolicy(base_s=0.5, cap_s=4.0)
    rng = random.Random(1)
    delays = [policy.delay(attempt, rng=rng) for _ in range(500)]
    bound = min(4.0, 0.5 * 2 ** attempt)
    assert all(0 <= d <= bound for d in delays)
    assert max(delays) > 0.8 * bound and min(delays) < 0.2 * bound  # spread over [0, bound]


def test_backoff_never_undercuts_retry_after_but_caps_it():
    policy = RetryPolicy(base_s=0.01, cap_s=0.02, max_retry_after_s=5.0)
    rng = random.Random(0)
    assert all(policy.delay(0, retry_after=1.5, rng=rng) == 1.5 for _ in range(20))
    assert policy.delay(0, retry_after=3600, rng=rng) == 5.0


def test_a_429_pauses_the_whole_provider(store, demo):
    starts = {}

    class Clocked(FakeBackend):
        async def complete(self, request):
            starts.setdefault(request.messages[0]["content"], asyncio.get_running_loop().time())
            return await super().complete(request)

    # i0 and i1 start together; i0 gets a 429 asking for 0.3 s; i2 starts when i1 is done
    backend = Clocked(latency_s=0.05, faults=[RetryableError("429", status=429, retry_after=0.3)])
    run(EchoJob(demo, backend, 3), store, concurrency=2)
    assert starts["i2"] - starts["i0"] >= 0.3  # waited for the pause, not just its own backoff


@pytest.mark.parametrize("bad", [{"max_attempts": 0}, {"base_s": -1}, {"cap_s": float("nan")}])
def test_retry_policy_rejects_bad_values(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        RetryPolicy(**bad)


# ------------------------------------------------------------------------ limits


def test_concurrency_limit_is_reached_and_never_exceeded(store, demo):
    backend = FakeBackend(latency_s=0.02)
    run(EchoJob(demo, backend, 24), store, concurrency=4)
    assert backend.max_in_flight == 4


def test_provider_concurrency_limit(store, demo):
    backend = FakeBackend(latency_s=0.01)
    run(EchoJob(demo, backend, 8), store, concurrency=8, limits={"fake": ProviderLimits(concurrency=2)})
    assert backend.max_in_flight == 2


def test_local_models_run_one_call_at_a_time_by_default(store, demo):
    backend = FakeBackend(backend="local", latency_s=0.01)
    run(EchoJob(demo, backend, 6), store, concurrency=6)
    assert backend.max_in_flight == 1


def test_token_bucket_spaces_requests_at_the_rate():
    clock = [0.0]

    async def main():
        bucket = _TokenBucket(60, burst_s=1.0)  # 1 per second
        stamps = []
        for _ in range(10):
            await bucket.take(1)
            stamps.append(clock[0])
        return stamps

    stamps = in_virtual_time(main, clock)
    assert stamps[0] == 0.0  # a full bucket lets the first one through
    assert stamps[-1] == pytest.approx(9.0)  # then exactly one per second


def test_token_bucket_lets_a_big_request_through_then_repays_the_debt():
    clock = [0.0]

    async def main():
        bucket = _TokenBucket(600, burst_s=1.0, minimum=0.0)  # 10 tokens/s
        await bucket.take(50)   # bigger than the bucket (10): goes when full, leaves -40
        first = clock[0]
        await bucket.take(10)   # must wait for 50 tokens of refill: 5 s
        return first, clock[0]

    first, second = in_virtual_time(main, clock)
    assert first == 0.0 and second == pytest.approx(5.0)


def test_provider_limits_validate():
    with pytest.raises(ValueError, match="requests_per_minute"):
        ProviderLimits(requests_per_minute=0)
    with pytest.raises(ValueError, match="concurrency"):
        ProviderLimits(concurrency=0)


def test_estimate_tokens_counts_characters_over_four():
    request = ChatRequest(messages=({"role": "user", "content": "x" * 400},))
    assert estimate_tokens(request) == 100 + 4


# ------------------------------------------------------------------ resume, crash


def test_a_crash_between_the_call_and_the_commit_loses_nothing_and_pays_once(store, demo):
    backend = FakeBackend(reply=lambda r: "answer")
    job = EchoJob(demo, backend, 4, fail_write={"i2"})
    with pytest.raises(RuntimeError, match="simulated crash"):
        run(job, store, concurrency=1)
    run_id = job.run_id()
    assert store.runs.get(run_id)["status"] == "failed"
    assert "i2" in store.runs.pending_items(run_id)
    assert "i2" not in set(store.questions.answers(demo)["question_id"])  # rolled back with its done mark
    calls_before = len(backend.requests)
    result = run(job, store, concurrency=1)
    assert result.status == "finished" and store.runs.get(run_id)["n_done"] == 4
    assert sorted(store.questions.answers(demo)["question_id"]) == ["i0", "i1", "i2", "i3"]
    new = [r.messages[0]["content"] for r in backend.requests[calls_before:]]
    assert "i2" not in new  # its call came from the cache
    # tokens of the call paid before the crash are counted once, in the resumed item
    assert store.runs.get(run_id)["prompt_tokens"] == 4 * backend.prompt_tokens


def test_invalid_items_are_settled_and_not_redone(store, demo):
    backend = FakeBackend()
    result = run(EchoJob(demo, backend, 3, invalid={"i1"}), store)
    assert result.status == "finished" and result.invalid == 1 and result.done == 3
    assert store.runs.pending_items(result.run_id) == []


# ------------------------------------------------------------- cancel, progress


def test_cancel_stops_new_work_and_a_rerun_finishes_without_repeating(store, demo):
    backend = FakeBackend(latency_s=0.005)
    cancel = threading.Event()

    def progress(event):
        if event.done >= 5:
            cancel.set()

    result = run(EchoJob(demo, backend, 40), store, concurrency=2, cancel=cancel, on_progress=progress,
                 commit_batch=1)
    assert result.status == "cancelled" and 5 <= result.done < 40
    assert store.runs.get(result.run_id)["status"] == "cancelled"
    first = [r.messages[0]["content"] for r in backend.requests]
    result = run(EchoJob(demo, backend, 40), store, concurrency=2)
    assert result.status == "finished" and result.done == 40
    later = [r.messages[0]["content"] for r in backend.requests[len(first):]]
    assert not set(later) & set(first)  # no item asked twice
    assert len(store.questions.answers(demo)) == 40


def test_progress_events_count_up_to_the_total(store, demo):
    events = []
    run(EchoJob(demo, FakeBackend(), 7), store, on_progress=events.append)
    assert events[0].done == 0 and events[0].status == "running"
    assert [e.done for e in events] == sorted(e.done for e in events)
    assert events[-1].status == "finished" and events[-1].fraction == 1.0
    assert events[-1].calls == 7 and events[-1].total == 7


def test_a_failing_progress_callback_does_not_stop_the_run(store, demo):
    def boom(event):
        raise RuntimeError("ui went away")

    result = run(EchoJob(demo, FakeBackend(), 3), store, on_progress=boom)
    assert result.status == "finished" and result.done == 3


def test_cost_and_tokens_are_accounted_per_run(store, demo):
    backend = FakeBackend(prompt_tokens=1000, completion_tokens=500)
    result = run(EchoJob(demo, backend, 4), store)
    expected = 4 * (1000 * 1.0 + 500 * 2.0) / 1e6
    assert result.cost_usd == pytest.approx(expected)
    row = store.runs.get(result.run_id)
    assert row["cost_usd"] == pytest.approx(expected)
    assert (row["prompt_tokens"], row["completion_tokens"]) == (4000, 2000)


def test_unknown_price_makes_cost_unknown_not_zero(store, demo):
    events = []
    result = run(EchoJob(demo, FakeBackend(model="mystery"), 2), store, on_progress=events.append)
    assert result.cost_usd is None and all(e.cost_usd is None for e in events)


def test_run_handle_runs_in_a_thread_with_progress_and_cancel(store, demo):
    backend = FakeBackend(latency_s=0.01)
    handle = start_run(EchoJob(demo, backend, 200), store, concurrency=2, retry=FAST, prices=PRICES, commit_batch=1)
    assert handle.run_id == EchoJob(demo, backend, 200).run_id()
    for _ in range(500):
        if handle.progress is not None and handle.progress.done >= 3:
            break
        threading.Event().wait(0.01)
    handle.cancel()
    result = handle.wait(timeout=30)
    assert handle.done() and result.status == "cancelled" and 3 <= result.done < 200
    assert handle.progress.status == "cancelled"
    resumed = start_run(EchoJob(demo, backend, 200), store, concurrency=8, retry=FAST, prices=PRICES).wait(60)
    assert resumed.status == "finished" and resumed.done == 200
    assert len({r.messages[0]["content"] for r in backend.requests}) == len(backend.requests)


def test_backends_are_closed_by_run_job_sync(store, demo):
    backend = FakeBackend()
    run(EchoJob(demo, backend, 1), store)
    assert backend.closed == 1


def test_runner_rejects_bad_options(store):
    with pytest.raises(ValueError, match="concurrency"):
        Runner(store, concurrency=0)
    with pytest.raises(ValueError, match="call_timeout_s"):
        Runner(store, call_timeout_s=0)


def test_one_runner_runs_one_job_at_a_time(store, demo):
    async def main():
        runner = Runner(store, retry=FAST, prices=PRICES)
        slow = EchoJob(demo, FakeBackend(latency_s=0.05), 2)
        first = asyncio.create_task(runner.run(slow))
        await asyncio.sleep(0.01)
        with pytest.raises(RunnerError, match="already running"):
            await runner.run(EchoJob(demo, FakeBackend(), 1))
        return await first

    assert asyncio.run(main()).status == "finished"


def test_call_timeout_turns_a_hung_call_into_a_retry(store, demo):
    calls = []

    class Hangs(FakeBackend):
        async def complete(self, request):
            calls.append(1)
            if len(calls) == 1:
                await asyncio.sleep(30)
            return Completion("fine", 1, 1)

    result = run(EchoJob(demo, Hangs(), 1), store, call_timeout_s=0.05)
    assert result.status == "finished" and result.retries == 1 and len(calls) == 2


def test_finished_items_are_committed_in_batches_with_their_results(store, demo):
    events, seen = [], []

    def progress(event):
        events.append(event.done)
        seen.append(len(store.questions.answers(demo)))  # what is durable when the event fires

    run(EchoJob(demo, FakeBackend(), 25), store, commit_batch=10, commit_interval_s=60, on_progress=progress)
    assert events == [0, 10, 20, 25, 25]
    assert seen == [0, 10, 20, 25, 25]


def test_a_cancelled_run_still_stores_the_items_it_finished(store, demo):
    backend = FakeBackend(latency_s=0.002)
    cancel = threading.Event()
    calls_at_cancel = []

    def progress(event):
        if len(backend.requests) >= 7 and not cancel.is_set():
            calls_at_cancel.append(len(backend.requests))
            cancel.set()

    class Watch(EchoJob):
        async def run_item(self, item, ctx):
            outcome = await super().run_item(item, ctx)
            progress(None)
            return outcome

    result = run(Watch(demo, backend, 50), store, concurrency=1, cancel=cancel, commit_batch=1000,
                 commit_interval_s=60)
    assert result.status == "cancelled"
    # nothing was committed before the cancel (batch of 1000); the final flush stored them
    assert result.done == len(store.questions.answers(demo)) >= 7
    assert store.runs.get(result.run_id)["n_done"] == result.done
