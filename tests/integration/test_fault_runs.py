"""Real openai / anthropic SDKs against the local wire-format server, with injected faults.

Acceptance (issue 4): at a 30 % fault rate a 500-review run completes with every review
stored exactly once; the server's own count of requests equals the unique requests plus
the failed attempts; a second run of the same job makes zero requests.
"""

from __future__ import annotations

from collections import Counter

import pytest

from fakes.llm_server import FakeLLMServer
from integration.helpers import make_review_study, messages_of
from peercore.jobs.review import ReviewJob
from peercore.reviewers import AnthropicBackend, OpenAIBackend
from peercore.runner import RetryPolicy, run_job_sync
from peercore.store import Store
from peercore.app import Study

RETRY = RetryPolicy(max_attempts=12, base_s=0.005, cap_s=0.05)


# The client timeout must be far below the server's hang for "timeout" faults, and far above
# any stall of a busy machine: a spurious timeout before the request is even written would be
# a failed attempt the server never saw.
CLIENT_TIMEOUT_S, HANG_S = 2.5, 6.0


def backend_for(api: str, server: FakeLLMServer):
    if api == "openai":
        return OpenAIBackend("gpt-4o-mini", base_url=server.openai_base_url, timeout=CLIENT_TIMEOUT_S)
    return AnthropicBackend("claude-haiku-4-5", base_url=server.anthropic_base_url, timeout=CLIENT_TIMEOUT_S)


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")


@pytest.mark.slow
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_500_reviews_at_30_percent_faults_are_stored_exactly_once(tmp_path, keys, api):
    store = Store(tmp_path / "faults.sqlite")
    study = make_review_study(store)  # 25 questions x 20 ordered pairs = 500 reviews
    with FakeLLMServer(fault_rate=0.3, retry_after_s=0.02, timeout_hang_s=HANG_S, seed=11) as server:
        job = ReviewJob(study, [backend_for(api, server)])
        result = run_job_sync(job, store, concurrency=16, retry=RETRY)

        assert result.status == "finished", result.failed_items[:3]
        assert (result.done, result.total, result.failed, result.invalid) == (500, 500, 0, 0)
        assert result.calls == 500 and result.cached == 0

        # the server saw every unique request once successfully, plus every failed attempt
        assert server.requests_total == result.calls + result.retries
        assert server.faults_injected == result.retries
        assert server.successes == 500
        ok = Counter(messages_of(r["body"], r["api"]) for r in server.request_log if r["fault"] is None)
        assert len(ok) == 500 and set(ok.values()) == {1}
        kinds = Counter(r["fault"] for r in server.request_log if r["fault"])
        assert set(kinds) == {"429", "500", "timeout", "malformed", "reset"}
        assert 0.2 < result.retries / server.requests_total < 0.4
        print(f"{api}: server saw {server.requests_total} requests = {result.calls} unique + {result.retries} failed "
              f"attempts {dict(kinds)}; {result.elapsed_s:.1f} s")

        # every review stored exactly once
        judgments = store.verdicts.table(study)
        assert len(judgments) == 500
        assert not judgments.duplicated(["question_id", "model_a", "model_b", "judge"]).any()
        assert Study(store, study).counts()["invalid_judgments"] == 0
        run_row = store.runs.get(result.run_id)
        assert (run_row["n_done"], run_row["status"]) == (500, "finished")
        assert run_row["prompt_tokens"] == result.prompt_tokens > 0

        # a second run of the same job makes zero requests
        server.reset_counts()
        again = run_job_sync(ReviewJob(study, [backend_for(api, server)]), store, concurrency=16, retry=RETRY)
        assert again.run_id == result.run_id and again.status == "finished"
        assert server.requests_total == 0 and again.calls == 0
        assert len(store.verdicts.table(study)) == 500


def test_a_new_job_with_the_same_requests_is_served_from_the_cache(tmp_path, keys):
    store = Store(tmp_path / "cache.sqlite")
    study = make_review_study(store, questions=3, models=3)
    with FakeLLMServer(fault_rate=0.2, retry_after_s=0.01, timeout_hang_s=HANG_S, seed=3) as server:
        first = run_job_sync(ReviewJob(study, [backend_for("openai", server)], questions=["q000"]), store,
                             concurrency=4, retry=RETRY)
        assert first.calls == 6
        server.reset_counts()
        # a wider job (another run) repeats q000's six requests: they come from the cache
        wider = run_job_sync(ReviewJob(study, [backend_for("openai", server)]), store, concurrency=4, retry=RETRY)
        assert wider.run_id != first.run_id
        assert wider.calls == 12 and wider.cached == 6
        assert server.requests_total == wider.calls + wider.retries


def test_logprobs_through_the_openai_sdk(tmp_path, keys):
    store = Store(tmp_path / "lp.sqlite")
    study = make_review_study(store, questions=2, models=2)
    with FakeLLMServer() as server:
        result = run_job_sync(ReviewJob(study, [backend_for("openai", server)], method="logprobs"), store)
        assert result.status == "finished" and result.calls == 4
        sent = server.request_log[0]["body"]
        assert sent["logprobs"] is True and sent["top_logprobs"] == 20
    p = store.verdicts.table(study)["p_a"]
    assert p.notna().all() and ((p > 0) & (p < 1)).all()


def test_debate_and_discussion_through_the_anthropic_sdk(tmp_path, keys):
    from peercore.jobs.base import Judge
    from peercore.jobs.discussion import DebateJob, DiscussionJob

    store = Store(tmp_path / "debate.sqlite")
    study = make_review_study(store, questions=2, models=3)
    with FakeLLMServer(fault_rate=0.2, retry_after_s=0.01, timeout_hang_s=HANG_S, seed=5) as server:
        def agent(name, temperature):
            return Judge(backend_for("anthropic", server), name=name, temperature=temperature)

        debate = run_job_sync(DebateJob(study, [agent("a", 0.0), agent("b", 0.7), agent("c", 1.0)]), store,
                              concurrency=4, retry=RETRY)
        assert debate.status == "finished" and debate.done == 6
        discussion = run_job_sync(DiscussionJob(study, [agent("x", 0.0), agent("y", 0.5)], turns=2,
                                                questions=["q000"]), store, concurrency=4, retry=RETRY)
        assert discussion.status == "finished" and discussion.done == 12
        assert server.requests_total == debate.calls + debate.retries + discussion.calls + discussion.retries
    assert len(store.debates.table(study, kind="debate")) == 6
    assert len(store.debates.table(study, kind="discussion")) == 12


@pytest.mark.parametrize("faults, max_attempts, retries", [
    (("400",), 6, 0),         # a permanent error: the call fails at once, nothing is retried
    (("500", "500"), 2, 1),   # two attempts, both failed: one retry, then the item fails
])
def test_the_review_output_counts_retries_not_failed_attempts(tmp_path, keys, monkeypatch, capsys, faults,
                                                              max_attempts, retries):
    """"N retries" is the attempts after a call's first; a call that fails for good is a failed item."""
    from peercore.cli import main

    db = tmp_path / "retries.sqlite"
    make_review_study(Store(db), name="r", questions=1, models=2)  # 2 reviews
    with FakeLLMServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        server.inject(*faults)
        command = ["review", "--study", "r", "--db", str(db), "--reviewer", "openai:gpt-4o-mini", "--no-progress",
                   "--concurrency", "1", "--max-attempts", str(max_attempts)]
        main(command)
        out = capsys.readouterr().out
        requests = server.requests_total
    first = out.splitlines()[0]
    assert f"(0 invalid, 1 failed); 1 calls paid, 0 from cache, {retries} retries;" in first, first
    assert requests == 1 + retries + 1  # the paid call, the retries, the failed call's first attempt
