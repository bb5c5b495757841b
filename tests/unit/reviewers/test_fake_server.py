"""The wire-format fake LLM server: shapes, faults, counters, determinism and real concurrency."""

from __future__ import annotations

import http.client
import json
import math
import socket
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from fakes.llm_server import FAULT_KINDS, FakeLLMServer, default_p1, default_reply

OPENAI_BODY = {"model": "gpt-x", "messages": [{"role": "user", "content": "Which is better? one two three"}]}
ANTHROPIC_BODY = {"model": "claude-x", "max_tokens": 16, "messages": [{"role": "user", "content": "Which is better?"}]}


def post(url: str, body: dict, *, timeout: float = 5.0, headers: dict | None = None):
    """POST JSON; return (status, headers, raw bytes) for any status."""
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


@pytest.fixture
def server():
    with FakeLLMServer() as fake:
        yield fake


def test_binds_loopback_with_an_ephemeral_port(server):
    assert server.url.startswith("http://127.0.0.1:")
    assert server.port > 0
    assert server.openai_base_url == server.url + "/v1"
    assert server.anthropic_base_url == server.url


def test_openai_reply_shape_and_usage(server):
    status, _, raw = post(server.openai_base_url + "/chat/completions", OPENAI_BODY)
    assert status == 200
    payload = json.loads(raw)
    assert payload["object"] == "chat.completion"
    choice = payload["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["content"].splitlines()[-1] in ("Verdict: Answer 1", "Verdict: Answer 2")
    assert choice["logprobs"] is None
    usage = payload["usage"]
    assert usage["prompt_tokens"] == 6  # "Which is better? one two three": six words
    assert usage["completion_tokens"] == len(choice["message"]["content"].split())
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_openai_logprobs_follow_p1_and_the_verdict(server):
    body = {**OPENAI_BODY, "logprobs": True, "top_logprobs": 5}
    payload = json.loads(post(server.openai_base_url + "/chat/completions", body)[2])
    choice = payload["choices"][0]
    top = {t["token"]: t["logprob"] for t in choice["logprobs"]["content"][0]["top_logprobs"]}
    assert len(top) == 5
    p1 = math.exp(top["1"]) / (math.exp(top["1"]) + math.exp(top["2"]))
    assert p1 == pytest.approx(default_p1(body))
    verdict_first = choice["message"]["content"].endswith("Answer 1")
    assert verdict_first == (p1 >= 0.5)


def test_openai_top_logprobs_truncated_but_keeps_both_digits(server):
    body = {**OPENAI_BODY, "logprobs": True, "top_logprobs": 1}
    payload = json.loads(post(server.openai_base_url + "/chat/completions", body)[2])
    tokens = [t["token"] for t in payload["choices"][0]["logprobs"]["content"][0]["top_logprobs"]]
    assert tokens == ["1", "2"]


def test_anthropic_reply_shape_and_usage(server):
    status, _, raw = post(server.anthropic_base_url + "/v1/messages", ANTHROPIC_BODY)
    assert status == 200
    payload = json.loads(raw)
    assert payload["type"] == "message" and payload["role"] == "assistant"
    text = payload["content"][0]["text"]
    assert payload["content"][0]["type"] == "text"
    assert text.splitlines()[-1].startswith("Verdict: Answer ")
    assert payload["usage"] == {"input_tokens": 3, "output_tokens": len(text.split())}
    assert payload["stop_reason"] == "end_turn"


def test_anthropic_prefill_gets_only_the_continuation(server):
    body = {**ANTHROPIC_BODY, "messages": ANTHROPIC_BODY["messages"] + [
        {"role": "assistant", "content": "The better answer is Answer "}]}
    payload = json.loads(post(server.anthropic_base_url + "/v1/messages", body)[2])
    assert payload["content"][0]["text"] in ("1", "2")


def test_default_reply_is_deterministic_and_message_dependent():
    a = default_reply(OPENAI_BODY, "openai")
    assert a == default_reply(json.loads(json.dumps(OPENAI_BODY)), "openai")
    others = {default_reply({"messages": [{"role": "user", "content": f"q{i}"}]}, "openai") for i in range(20)}
    assert len(others) == 20
    verdicts = {text.splitlines()[-1] for text in others}
    assert verdicts == {"Verdict: Answer 1", "Verdict: Answer 2"}


def test_temperature_sampling_tracks_p1():
    prompts = [{"model": "m", "temperature": 1.0, "messages": [{"role": "user", "content": f"q{i}"}]} for i in range(4)]
    with FakeLLMServer(seed=3) as fake:
        for body in prompts:
            firsts = [json.loads(post(fake.openai_base_url + "/chat/completions", body)[2])["choices"][0]["message"]
                      ["content"].endswith("Answer 1") for _ in range(60)]
            # 60 Bernoulli(p1) draws: a 5-sigma band around p1 (cannot pass for a constant verdict unless p1 is extreme)
            p1 = default_p1(body)
            assert abs(sum(firsts) / 60 - p1) < 5 * math.sqrt(p1 * (1 - p1) / 60)


def test_custom_reply_callable_sees_body_and_api():
    seen = []

    def reply(body, api):
        seen.append((api, body["model"]))
        return f"custom {api}"

    with FakeLLMServer(reply=reply) as fake:
        assert json.loads(post(fake.openai_base_url + "/chat/completions", OPENAI_BODY)[2])["choices"][0][
            "message"]["content"] == "custom openai"
        assert json.loads(post(fake.anthropic_base_url + "/v1/messages", ANTHROPIC_BODY)[2])["content"][0][
            "text"] == "custom anthropic"
    assert seen == [("openai", "gpt-x"), ("anthropic", "claude-x")]


def test_injected_429_has_retry_after_and_provider_bodies():
    with FakeLLMServer(retry_after_s=0.25) as fake:
        fake.inject("429", "429")
        status, headers, raw = post(fake.openai_base_url + "/chat/completions", OPENAI_BODY)
        assert status == 429 and float(headers["Retry-After"]) == 0.25
        assert json.loads(raw)["error"]["type"] == "rate_limit_error"
        status, headers, raw = post(fake.anthropic_base_url + "/v1/messages", ANTHROPIC_BODY)
        assert status == 429 and float(headers["Retry-After"]) == 0.25
        assert json.loads(raw) == {"type": "error", "error": {"type": "rate_limit_error",
                                                               "message": "rate limit exceeded (fake)"}}


def test_injected_500_and_malformed():
    with FakeLLMServer() as fake:
        fake.inject("500", "malformed")
        status, _, raw = post(fake.openai_base_url + "/chat/completions", OPENAI_BODY)
        assert status == 500 and json.loads(raw)["error"]["type"] == "server_error"
        status, headers, raw = post(fake.openai_base_url + "/chat/completions", OPENAI_BODY)
        assert status == 200 and headers["Content-Type"] == "application/json"
        with pytest.raises(json.JSONDecodeError):
            json.loads(raw)
        assert fake.faults_injected == 2 and fake.successes == 0


def test_injected_timeout_hangs_longer_than_the_client_waits():
    with FakeLLMServer(timeout_hang_s=5.0) as fake:
        fake.inject("timeout")
        with pytest.raises((TimeoutError, socket.timeout, urllib.error.URLError)):
            post(fake.openai_base_url + "/chat/completions", OPENAI_BODY, timeout=0.3)
        assert [entry["fault"] for entry in fake.request_log] == ["timeout"]
    # stop() woke the hung handler: leaving the with block did not wait 5 s (it would hang the suite)


def test_injected_reset_closes_without_a_response():
    with FakeLLMServer() as fake:
        fake.inject("reset")
        conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=5)
        conn.request("POST", "/v1/chat/completions", body=json.dumps(OPENAI_BODY),
                     headers={"Content-Type": "application/json"})
        with pytest.raises((ConnectionResetError, http.client.RemoteDisconnected, ConnectionAbortedError)):
            conn.getresponse()
        conn.close()
        # the server keeps serving after a reset
        assert post(fake.openai_base_url + "/chat/completions", OPENAI_BODY)[0] == 200


def test_fault_rate_counts_and_log_are_consistent_and_seeded():
    def run(seed):
        with FakeLLMServer(fault_rate=0.5, faults=("500", "429", "malformed"), seed=seed) as fake:
            statuses = [post(fake.openai_base_url + "/chat/completions", OPENAI_BODY)[0] for _ in range(40)]
            log = [entry["fault"] for entry in fake.request_log]
            assert fake.requests_total == 40
            assert fake.faults_injected == sum(f is not None for f in log)
            assert fake.successes == 40 - fake.faults_injected
            assert 5 <= fake.faults_injected <= 35
            assert set(log) - {None} <= {"500", "429", "malformed"}
            assert all((s == 500) == (f == "500") for s, f in zip(statuses, log))
            return log

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_fault_rate_one_faults_everything_and_zero_nothing():
    with FakeLLMServer(fault_rate=1.0, faults=("500",)) as fake:
        assert {post(fake.openai_base_url + "/chat/completions", OPENAI_BODY)[0] for _ in range(5)} == {500}
    with FakeLLMServer(fault_rate=0.0) as fake:
        assert {post(fake.openai_base_url + "/chat/completions", OPENAI_BODY)[0] for _ in range(5)} == {200}


def test_request_log_records_api_body_and_key_presence_not_the_key(server):
    post(server.openai_base_url + "/chat/completions", OPENAI_BODY, headers={"Authorization": "Bearer sk-secret"})
    post(server.anthropic_base_url + "/v1/messages", ANTHROPIC_BODY)
    log = server.request_log
    assert [(e["api"], e["fault"], e["has_key"]) for e in log] == [("openai", None, True), ("anthropic", None, False)]
    assert log[0]["body"] == OPENAI_BODY
    assert "sk-secret" not in json.dumps(log)


def test_reset_counts(server):
    post(server.openai_base_url + "/chat/completions", OPENAI_BODY)
    server.reset_counts()
    assert (server.requests_total, server.faults_injected, server.successes, server.request_log) == (0, 0, 0, [])


def test_bad_routes_and_bodies_are_provider_errors(server):
    assert post(server.url + "/v1/nothing", OPENAI_BODY)[0] == 404
    assert post(server.openai_base_url + "/chat/completions", {"model": "m"})[0] == 400
    assert post(server.openai_base_url + "/chat/completions", {**OPENAI_BODY, "stream": True})[0] == 400


def test_32_concurrent_requests_are_all_in_flight_at_once():
    """Every request waits at a 32-party barrier inside the reply: it only passes if the
    server handles all 32 at the same time (a serial server would break the barrier)."""
    barrier = threading.Barrier(32, timeout=10)

    def reply(body, api):
        barrier.wait()
        return "ok"

    with FakeLLMServer(reply=reply, latency_s=0.2) as fake:
        with ThreadPoolExecutor(32) as pool:
            results = list(pool.map(lambda i: post(fake.openai_base_url + "/chat/completions",
                                                   {**OPENAI_BODY, "model": str(i)}, timeout=20)[0], range(32)))
        assert results == [200] * 32
        assert fake.max_in_flight == 32
        assert fake.successes == 32


def test_invalid_settings_name_the_parameter():
    with pytest.raises(ValueError, match="faults.*'boom'"):
        FakeLLMServer(faults=("boom",))
    with pytest.raises(ValueError, match="fault_rate.*1.5"):
        FakeLLMServer(fault_rate=1.5)
    with pytest.raises(ValueError, match="latency_s"):
        FakeLLMServer(latency_s=-1)
    with pytest.raises(ValueError, match="unknown fault"):
        FakeLLMServer().inject("nope")
    assert set(FAULT_KINDS) == {"429", "500", "timeout", "malformed", "reset"}


def test_url_before_start_is_an_error():
    with pytest.raises(RuntimeError, match="not started"):
        FakeLLMServer().url
