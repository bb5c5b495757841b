"""Retry-After honoured: the one retry policy (tenacity) waits what a 429 or 503 asks for.

The fake server refuses with ``Retry-After`` (seconds) or ``retry-after-ms`` (as OpenAI
sends it) through :meth:`FakeLLMServer.inject_rate_limit`, and the real OpenAI and
Anthropic SDKs (and an OpenAI-compatible server's client) read it. Nothing races the
clock: the policy's waits are recorded by an injected sleep and compared exactly, and
through the command line the server's own arrival times give a lower bound (the second
request can only come after the wait it was told).
"""

from __future__ import annotations

import asyncio

import pytest

from fakes.llm_server import FakeLLMServer
from integration.helpers import make_review_study
from peercore.cli import main
from peercore.jobs.batch import run_batch_sync
from peercore.jobs.review import ReviewJob
from peercore.jobs.specs import parse_judge_spec
from peercore.reviewers import AnthropicBackend, CompatibleBackend, OpenAIBackend
from peercore.reviewers.base import ChatRequest
from peercore.runner import RetryPolicy
from peercore.store import Store

KEYS = {"OPENAI_API_KEY": "sk-test-retry-after-0000", "ANTHROPIC_API_KEY": "sk-ant-test-retry-after-0000"}
SPECS = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-3-5-haiku"}
# backoff far below the waits asked for: a wait equal to Retry-After is Retry-After's doing
TINY = RetryPolicy(max_attempts=4, base_s=0.001, cap_s=0.001)


@pytest.fixture
def keys(monkeypatch):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


def _backend(kind: str, server: FakeLLMServer):
    if kind == "openai":
        return OpenAIBackend("gpt-4o-mini", base_url=server.openai_base_url, timeout=10)
    if kind == "anthropic":
        return AnthropicBackend("claude-3-5-haiku", base_url=server.anthropic_base_url, timeout=10)
    return CompatibleBackend("local-judge", base_url=server.openai_base_url, timeout=10)


def _waits(policy: RetryPolicy, kind: str, server: FakeLLMServer):
    """One call through ``policy`` with the backend of ``kind``: (its completion, the waits it asked for)."""
    waits: list[float] = []

    async def sleep(delay: float) -> None:  # recorded, not slept: no clock in these tests
        waits.append(float(delay))

    async def call():
        backend = _backend(kind, server)
        try:
            async for attempt in policy.retrying(sleep=sleep):
                with attempt:
                    return await backend.complete(ChatRequest(messages=({"role": "user", "content": "hi"},)))
        finally:
            await backend.aclose()

    return asyncio.run(call()), waits


@pytest.mark.parametrize("kind", ["openai", "anthropic", "compatible"])
@pytest.mark.parametrize("status, header, seconds", [(429, "Retry-After", 7.0), (503, "retry-after-ms", 2.5),
                                                     (429, "retry-after-ms", 0.25)])
def test_the_policy_waits_exactly_what_the_server_asks(keys, kind, status, header, seconds):
    with FakeLLMServer() as server:
        server.inject_rate_limit(2, retry_after_s=seconds, header=header, status=status)
        completion, waits = _waits(TINY, kind, server)
        faults = [r["fault"] for r in server.request_log]
    assert completion.text.startswith("Fake review")
    assert faults == [str(status), str(status), None]
    assert waits == [seconds, seconds]


def test_a_retry_after_beyond_the_cap_is_capped(keys):
    with FakeLLMServer() as server:
        server.inject_rate_limit(1, retry_after_s=3600)
        _, waits = _waits(RetryPolicy(base_s=0.001, cap_s=0.001, max_retry_after_s=30.0), "openai", server)
    assert waits == [30.0]


@pytest.mark.parametrize("provider, header", [("openai", "retry-after-ms"), ("anthropic", "Retry-After")])
def test_peercore_review_sends_a_refused_call_again_only_after_retry_after(tmp_path, keys, monkeypatch, capsys,
                                                                           provider, header):
    db = tmp_path / "wait.sqlite"
    make_review_study(Store(db), name="w", questions=1, models=2)  # 2 reviews
    wait_s = 1.0
    with FakeLLMServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        server.inject_rate_limit(2, retry_after_s=wait_s, header=header)
        code = main(["review", "--study", "w", "--db", str(db), "--reviewer", SPECS[provider], "--no-progress",
                     "--concurrency", "1"])
        log = [(r["fault"], r["t"]) for r in server.request_log]
    out = capsys.readouterr().out
    assert code == 0, out
    assert [fault for fault, _ in log] == ["429", "429", None, None]
    stamps = [t for _, t in log]
    assert stamps[1] - stamps[0] >= wait_s and stamps[2] - stamps[1] >= wait_s  # lower bounds: never a race
    assert "2 calls paid, 0 from cache, 2 retries;" in out.splitlines()[0], out
    assert len(Store(db).verdicts.table("w")) == 2


@pytest.mark.parametrize("provider, create, read", [
    ("openai", "POST /v1/batches", "GET /v1/batches/{id}"),
    ("anthropic", "POST /v1/messages/batches", "GET /v1/messages/batches/{id}"),
])
def test_a_batch_request_refused_with_retry_after_waits_that_long(tmp_path, keys, monkeypatch, provider, create,
                                                                  read):
    """A refused create (looked for, then sent again) and a refused read both wait Retry-After first.

    Before: the create was sent again after 0.2 s whatever the server asked.
    """
    store = Store(tmp_path / "batch.sqlite")
    make_review_study(store, name="b", questions=1, models=2)
    wait_s = 1.0
    with FakeLLMServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        server.inject_batch_error(create, (429, wait_s))
        server.inject_batch_error(read, (503, wait_s))
        lines: list[str] = []
        result = run_batch_sync(ReviewJob("b", [parse_judge_spec(SPECS[provider])]), store, poll_s=0.05,
                                on_status=lines.append)
        log = list(server.endpoint_log)
        created = server.batches_created()
    assert result.status == "finished" and result.done == 2 and created == 1
    creates = [t for name, t in log if name == create]
    reads = [t for name, t in log if name == read]
    assert len(creates) == 2 and creates[1] - creates[0] >= wait_s, log
    assert len(reads) >= 2 and reads[1] - reads[0] >= wait_s, log
    assert sum("looking for what it made" in line for line in lines) == 1
