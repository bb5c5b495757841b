"""The real openai and anthropic SDKs against the wire-format fake server on 127.0.0.1:
replies, usage, logprobs, payloads, every injected fault, keys and their absence."""

from __future__ import annotations

import asyncio
import hashlib
import math
import pickle

import pytest

pytest.importorskip("openai")
pytest.importorskip("anthropic")

from fakes.llm_server import FakeLLMServer, default_p1  # noqa: E402

from peercore.reviewers import (  # noqa: E402
    AnthropicBackend,
    BackendError,
    ChatRequest,
    CompatibleBackend,
    MissingCredentials,
    OpenAIBackend,
    RetryableError,
)

KEY = "sk-test-0123456789abcdef"
MESSAGES = ({"role": "system", "content": "Be fair."}, {"role": "user", "content": "Which answer is better? one two"})


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def no_keys(monkeypatch, tmp_path):
    """No key anywhere: not in the environment, no secrets file in cwd or home."""
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_SERVER_KEY", "PEERBOARD_SECRETS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def server():
    with FakeLLMServer(retry_after_s=0.25, timeout_hang_s=5.0) as fake:
        yield fake


def openai_backend(server, **kw):
    return OpenAIBackend("gpt-x", api_key=KEY, base_url=server.openai_base_url, timeout=kw.pop("timeout", 0.5), **kw)


def anthropic_backend(server, **kw):
    return AnthropicBackend("claude-x", api_key=KEY, base_url=server.anthropic_base_url,
                            timeout=kw.pop("timeout", 0.5), **kw)


MAKERS = {"openai": openai_backend, "anthropic": anthropic_backend}


# ----------------------------------------------------------------------------- replies
def test_openai_text_usage_and_payload(server):
    completion = run(openai_backend(server).complete(
        ChatRequest(messages=MESSAGES, max_tokens=50, seed=7, stop=("###",), temperature=0.0)))
    assert completion.text.splitlines()[-1] in ("Verdict: Answer 1", "Verdict: Answer 2")
    assert completion.prompt_tokens == 8  # "Be fair." (2 words) + "Which answer is better? one two" (6)
    assert completion.completion_tokens == len(completion.text.split())
    assert completion.finish_reason == "stop"
    assert completion.top_logprobs is None
    assert completion.raw["choices"][0]["message"]["content"] == completion.text
    body = server.request_log[-1]["body"]
    assert body["model"] == "gpt-x" and body["messages"] == list(MESSAGES)
    assert body["max_completion_tokens"] == 50 and "max_tokens" not in body
    assert body["seed"] == 7 and body["stop"] == ["###"]
    assert "logprobs" not in body
    assert server.request_log[-1]["key_sha256"] == hashlib.sha256(KEY.encode()).hexdigest()


def test_openai_logprobs_are_parsed(server):
    completion = run(openai_backend(server).complete(ChatRequest(messages=MESSAGES, top_logprobs=5, max_tokens=1)))
    body = server.request_log[-1]["body"]
    assert body["logprobs"] is True and body["top_logprobs"] == 5
    top = completion.top_logprobs
    assert set(top) >= {"1", "2"}
    p1 = math.exp(top["1"]) / (math.exp(top["1"]) + math.exp(top["2"]))
    assert p1 == pytest.approx(default_p1(body))


def test_openai_top_logprobs_capped_at_20(server):
    run(openai_backend(server).complete(ChatRequest(messages=MESSAGES, top_logprobs=50)))
    assert server.request_log[-1]["body"]["top_logprobs"] == 20


def test_openai_prefill_is_a_final_assistant_message(server):
    run(openai_backend(server).complete(ChatRequest(messages=MESSAGES, prefill="The better answer is Answer ")))
    assert server.request_log[-1]["body"]["messages"][-1] == {"role": "assistant",
                                                              "content": "The better answer is Answer "}


def test_anthropic_text_usage_and_payload(server):
    completion = run(anthropic_backend(server).complete(ChatRequest(messages=MESSAGES, max_tokens=40, stop=("##",))))
    assert completion.text.splitlines()[-1].startswith("Verdict: Answer ")
    assert completion.prompt_tokens == 8  # the system parameter counts too
    assert completion.completion_tokens == len(completion.text.split())
    assert completion.finish_reason == "end_turn"
    assert completion.top_logprobs is None
    body = server.request_log[-1]["body"]
    assert body["system"] == "Be fair."
    assert body["messages"] == [MESSAGES[1]]
    assert body["max_tokens"] == 40 and body["stop_sequences"] == ["##"]
    assert server.request_log[-1]["key_sha256"] == hashlib.sha256(KEY.encode()).hexdigest()


def test_anthropic_prefill_drops_trailing_whitespace_and_returns_the_continuation(server):
    completion = run(anthropic_backend(server).complete(
        ChatRequest(messages=MESSAGES, prefill="The better answer is Answer ", max_tokens=2)))
    assert server.request_log[-1]["body"]["messages"][-1] == {"role": "assistant",
                                                              "content": "The better answer is Answer"}
    assert completion.text in ("1", "2")


def test_compatible_sends_placeholder_key_and_max_tokens(server, no_keys):
    backend = CompatibleBackend("llama3", base_url=server.openai_base_url, timeout=0.5)
    assert backend.name == f"compatible:llama3@{server.openai_base_url}"
    run(backend.complete(ChatRequest(messages=MESSAGES, max_tokens=9)))
    entry = server.request_log[-1]
    assert entry["key_sha256"] == hashlib.sha256(b"EMPTY").hexdigest()
    assert entry["body"]["max_tokens"] == 9 and "max_completion_tokens" not in entry["body"]


def test_compatible_named_key_variable(server, no_keys, monkeypatch):
    backend = CompatibleBackend("llama3", base_url=server.openai_base_url, api_key_env="MY_SERVER_KEY", timeout=0.5)
    with pytest.raises(MissingCredentials) as err:
        run(backend.complete(ChatRequest(messages=MESSAGES)))
    assert str(err.value) == "set MY_SERVER_KEY (environment or .streamlit/secrets.toml)"
    assert server.requests_total == 0
    monkeypatch.setenv("MY_SERVER_KEY", "server-secret")
    run(backend.complete(ChatRequest(messages=MESSAGES)))
    assert server.request_log[-1]["key_sha256"] == hashlib.sha256(b"server-secret").hexdigest()


def test_clients_work_across_event_loops(server):
    backend = openai_backend(server)
    first = run(backend.complete(ChatRequest(messages=MESSAGES)))
    second = run(backend.complete(ChatRequest(messages=MESSAGES)))  # a new loop: a new client
    assert first.text == second.text
    assert server.successes == 2


def test_concurrent_calls_on_one_backend(server):
    backend = openai_backend(server, timeout=5)

    async def many():
        requests = [ChatRequest(messages=({"role": "user", "content": f"q{i}"},)) for i in range(16)]
        return await asyncio.gather(*(backend.complete(r) for r in requests))

    results = run(many())
    assert len({c.text for c in results}) == 16
    assert server.successes == 16


# ------------------------------------------------------------------------------ faults
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_429_is_retryable_with_retry_after(server, api):
    server.inject("429")
    with pytest.raises(RetryableError) as err:
        run(MAKERS[api](server).complete(ChatRequest(messages=MESSAGES)))
    assert err.value.status == 429
    assert err.value.retry_after == pytest.approx(0.25)
    assert server.faults_injected == 1 and server.requests_total == 1  # SDK retries are off


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_500_is_retryable(server, api):
    server.inject("500")
    with pytest.raises(RetryableError) as err:
        run(MAKERS[api](server).complete(ChatRequest(messages=MESSAGES)))
    assert err.value.status == 500 and err.value.retry_after is None
    assert server.requests_total == 1


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_timeout_is_retryable(server, api):
    server.inject("timeout")
    with pytest.raises(RetryableError, match="timed out") as err:
        run(MAKERS[api](server, timeout=0.3).complete(ChatRequest(messages=MESSAGES)))
    assert err.value.status is None


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_malformed_json_is_retryable(server, api):
    server.inject("malformed")
    with pytest.raises(RetryableError, match="malformed"):
        run(MAKERS[api](server).complete(ChatRequest(messages=MESSAGES)))


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_connection_reset_is_retryable(server, api):
    server.inject("reset")
    with pytest.raises(RetryableError, match="connection failed"):
        run(MAKERS[api](server).complete(ChatRequest(messages=MESSAGES)))
    assert server.requests_total == 1


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("status", ["400", "404"])
def test_client_errors_are_permanent(server, api, status):
    server.inject(status)
    with pytest.raises(BackendError) as err:
        run(MAKERS[api](server).complete(ChatRequest(messages=MESSAGES)))
    assert not isinstance(err.value, RetryableError)
    assert f"HTTP {status}" in str(err.value)


@pytest.mark.parametrize(("api", "var"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
@pytest.mark.parametrize("status", ["401", "403"])
def test_refused_key_names_the_variable_and_hides_the_key(server, api, var, status):
    server.inject(status)
    with pytest.raises(BackendError) as err:
        run(MAKERS[api](server).complete(ChatRequest(messages=MESSAGES)))
    assert not isinstance(err.value, RetryableError)
    assert var in str(err.value) and KEY not in str(err.value)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_fault_does_not_poison_the_next_call(server, api):
    backend = MAKERS[api](server)
    for fault in ("reset", "malformed", "500", "429"):
        server.inject(fault)
        with pytest.raises(RetryableError):
            run(backend.complete(ChatRequest(messages=MESSAGES)))
        assert run(backend.complete(ChatRequest(messages=MESSAGES))).text
    assert server.successes == 4


def test_connection_refused_is_retryable():
    with FakeLLMServer() as fake:
        url = fake.openai_base_url
    backend = OpenAIBackend("gpt-x", api_key=KEY, base_url=url, timeout=0.5)  # nothing listens there now
    with pytest.raises(RetryableError):
        run(backend.complete(ChatRequest(messages=MESSAGES)))


# -------------------------------------------------------------------------------- keys
@pytest.mark.parametrize(("cls", "var"), [(OpenAIBackend, "OPENAI_API_KEY"), (AnthropicBackend, "ANTHROPIC_API_KEY")])
def test_missing_key_says_exactly_what_to_set(server, no_keys, cls, var):
    backend = cls("m", base_url=server.url, timeout=0.5)
    with pytest.raises(MissingCredentials) as err:
        run(backend.complete(ChatRequest(messages=MESSAGES)))
    assert str(err.value) == f"set {var} (environment or .streamlit/secrets.toml)"
    with pytest.raises(MissingCredentials):
        backend.check_credentials()
    assert server.requests_total == 0


def test_key_from_environment(server, no_keys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    run(OpenAIBackend("gpt-x", base_url=server.openai_base_url, timeout=0.5).complete(ChatRequest(messages=MESSAGES)))
    assert server.request_log[-1]["key_sha256"] == hashlib.sha256(b"sk-env").hexdigest()


def test_key_from_streamlit_secrets_file(server, no_keys):
    (no_keys / ".streamlit").mkdir()
    (no_keys / ".streamlit" / "secrets.toml").write_text('ANTHROPIC_API_KEY = "sk-ant-from-secrets"\n')
    backend = AnthropicBackend("claude-x", base_url=server.anthropic_base_url, timeout=0.5)
    run(backend.complete(ChatRequest(messages=MESSAGES)))
    assert server.request_log[-1]["key_sha256"] == hashlib.sha256(b"sk-ant-from-secrets").hexdigest()


def test_explicit_key_wins_over_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    run(openai_backend(server).complete(ChatRequest(messages=MESSAGES)))
    assert server.request_log[-1]["key_sha256"] == hashlib.sha256(KEY.encode()).hexdigest()


@pytest.mark.parametrize("maker", [openai_backend, anthropic_backend])
def test_key_never_in_repr_or_pickle(server, maker):
    backend = maker(server)
    run(backend.complete(ChatRequest(messages=MESSAGES)))
    assert KEY not in repr(backend) and KEY not in str(backend)
    assert KEY not in repr(vars(backend))
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(backend)
