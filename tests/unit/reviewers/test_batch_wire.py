"""The fake server's batch endpoints through the real SDKs, and batch replies read as live ones.

OpenAI: files.create (purpose batch), batches.create / retrieve / list, files.content of
the output and error files. Anthropic: messages.batches.create / retrieve / list /
results. Each line is answered with the reply its live endpoint gives; batch pricing is
half the list price.
"""

from __future__ import annotations

import asyncio
import json
import time

import anthropic
import openai
import pytest

from fakes.llm_server import FakeLLMServer
from peercore.jobs.batch import _AnthropicBatches, _OpenAIBatches
from peercore.jobs.pricing import load_prices
from peercore.reviewers.anthropic_backend import AnthropicBackend
from peercore.reviewers.base import ChatRequest
from peercore.reviewers.openai_backend import OpenAIBackend

KEY = "sk-test-wire-0123456789"
MESSAGES = [[{"role": "user", "content": f"Which answer is better, {i}? Answer 1 or Answer 2."}] for i in range(6)]


def _openai(server):
    return openai.OpenAI(base_url=server.openai_base_url, api_key=KEY, max_retries=0, timeout=5)


def _anthropic(server):
    return anthropic.Anthropic(base_url=server.anthropic_base_url, api_key=KEY, max_retries=0, timeout=5)


def _upload(client, bodies):
    lines = [{"custom_id": f"c-{i}", "method": "POST", "url": "/v1/chat/completions", "body": body}
             for i, body in enumerate(bodies)]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return client.files.create(file=("in.jsonl", data, "application/jsonl"), purpose="batch")


def _lines(client, file_id):
    return [json.loads(t) for t in client.files.content(file_id).text.splitlines() if t.strip()]


def _without_ids(reply: dict) -> dict:
    return {k: v for k, v in reply.items() if k not in ("id", "created")}


def test_openai_batch_answers_each_line_as_the_live_endpoint_does():
    bodies = [{"model": "gpt-4o-mini", "messages": m, "temperature": 0.0, "max_completion_tokens": 64}
              for m in MESSAGES]
    bodies[0].update(logprobs=True, top_logprobs=5)
    with FakeLLMServer(batch_delay_s=0.3) as server:
        client = _openai(server)
        file = _upload(client, bodies)
        batch = client.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions", completion_window="24h",
                                      metadata={"peercore_token": "tok-1"})
        assert client.batches.retrieve(batch.id).status == "in_progress"  # until batch_delay_s has passed
        assert [b.id for b in client.batches.list()] == [batch.id]
        assert client.batches.list().data[0].metadata == {"peercore_token": "tok-1"}
        assert [f.filename for f in client.files.list(purpose="batch")] == ["in.jsonl"]
        time.sleep(0.35)
        done = client.batches.retrieve(batch.id)
        assert done.status == "completed" and done.error_file_id is None
        assert (done.request_counts.total, done.request_counts.completed, done.request_counts.failed) == (6, 6, 0)
        output = _lines(client, done.output_file_id)
        live = [client.chat.completions.with_raw_response.create(**body).http_response.json() for body in bodies]
        counts = dict(server.endpoint_counts)
    assert [line["custom_id"] for line in output] == [f"c-{i}" for i in range(6)]
    assert all(line["response"]["status_code"] == 200 and line["error"] is None for line in output)
    assert [_without_ids(line["response"]["body"]) for line in output] == [_without_ids(reply) for reply in live]
    assert output[0]["response"]["body"]["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    assert counts == {"POST /v1/files": 1, "GET /v1/files": 1, "POST /v1/batches": 1, "GET /v1/batches/{id}": 2,
                      "GET /v1/batches": 2, "GET /v1/files/{id}/content": 1, "POST /v1/chat/completions": 6}


@pytest.mark.parametrize("mode, status, answered", [("expired", "expired", 3), ("partial", "completed", 4)])
def test_openai_expired_and_partially_failed_batches(mode, status, answered):
    bodies = [{"model": "gpt-4o-mini", "messages": m, "max_completion_tokens": 64} for m in MESSAGES]
    with FakeLLMServer(batch_error_every=3) as server:
        server.inject_batch(mode)
        client = _openai(server)
        batch = client.batches.create(input_file_id=_upload(client, bodies).id, endpoint="/v1/chat/completions",
                                      completion_window="24h")
        done = client.batches.retrieve(batch.id)
        output, errors = _lines(client, done.output_file_id), _lines(client, done.error_file_id)
        log = [entry["outcome"] for entry in server.batch_log]
    assert done.status == status and done.request_counts.failed == 6 - answered
    assert len(output) == answered and len(errors) == 6 - answered and log.count("succeeded") == answered
    if mode == "expired":
        assert all(e["response"] is None and e["error"]["code"] == "batch_expired" for e in errors)
        assert [e["custom_id"] for e in errors] == ["c-3", "c-4", "c-5"]
    else:
        assert all(e["response"]["status_code"] == 400 for e in errors)
        assert [e["custom_id"] for e in errors] == ["c-2", "c-5"]


def test_openai_batch_refuses_a_bad_line_and_an_unknown_file():
    with FakeLLMServer() as server:
        client = _openai(server)
        bad = client.files.create(file=("bad.jsonl", b'{"custom_id": "x", "method": "GET", "url": "/v1/models"}\n',
                                        "application/jsonl"), purpose="batch")
        with pytest.raises(openai.BadRequestError, match="needs method POST"):
            client.batches.create(input_file_id=bad.id, endpoint="/v1/chat/completions", completion_window="24h")
        with pytest.raises(openai.NotFoundError):
            client.batches.create(input_file_id="file-nope", endpoint="/v1/chat/completions", completion_window="24h")
        with pytest.raises(openai.NotFoundError):
            client.batches.retrieve("batch_nope")


def test_anthropic_message_batch_answers_each_request_as_the_live_endpoint_does():
    params = [{"model": "claude-3-5-haiku", "max_tokens": 64, "messages": m} for m in MESSAGES]
    params[1]["system"] = "You are a careful judge."
    with FakeLLMServer(batch_delay_s=0.3, batch_error_every=3) as server:
        server.inject_batch("ok", "partial")
        client = _anthropic(server)
        batch = client.messages.batches.create(requests=[{"custom_id": f"c-{i}", "params": p}
                                                         for i, p in enumerate(params)])
        assert batch.processing_status == "in_progress" and batch.results_url is None
        with pytest.raises(anthropic.AnthropicError, match="results_url"):
            client.messages.batches.results(batch.id)
        time.sleep(0.35)
        ended = client.messages.batches.retrieve(batch.id)
        results = list(client.messages.batches.results(batch.id))
        live = [client.messages.create(**p) for p in params]
        partial = client.messages.batches.create(requests=[{"custom_id": f"p-{i}", "params": p}
                                                           for i, p in enumerate(params)])
        time.sleep(0.35)
        mixed = list(client.messages.batches.results(partial.id))
        listed = [b.id for b in client.messages.batches.list()]
        counts = dict(server.endpoint_counts)
    assert ended.processing_status == "ended" and ended.request_counts.succeeded == 6
    assert [r.custom_id for r in results] == [f"c-{i}" for i in range(6)]
    assert [r.result.message.content[0].text for r in results] == [m.content[0].text for m in live]
    assert [r.result.message.usage.input_tokens for r in results] == [m.usage.input_tokens for m in live]
    assert [r.result.type for r in mixed] == ["succeeded", "succeeded", "errored"] * 2
    assert listed == [partial.id, batch.id]
    assert counts["POST /v1/messages/batches"] == 2 and counts["GET /v1/messages/batches/{id}/results"] == 2
    assert counts["GET /v1/messages/batches"] == 1 and counts["POST /v1/messages"] == 6


def test_batch_replies_read_as_the_live_backend_reads_them(monkeypatch):
    request = ChatRequest(messages=({"role": "system", "content": "Judge."}, {"role": "user", "content": "A or B?"}),
                          max_tokens=32, top_logprobs=5)
    with FakeLLMServer() as server:
        oa = OpenAIBackend("gpt-4o-mini", api_key=KEY, base_url=server.openai_base_url, timeout=5)
        an = AnthropicBackend("claude-3-5-haiku", api_key=KEY, base_url=server.anthropic_base_url, timeout=5)

        async def both():
            live = (await oa.complete(request), await an.complete(request))
            await oa.aclose()
            await an.aclose()
            return live

        live_oa, live_an = asyncio.run(both())
        body_oa = server._answer("openai", _OpenAIBatches(oa).line("c", request)["body"])
        params = _AnthropicBatches(an).line("c", request)["params"]
        message = server._answer("anthropic", params)  # a result line's message, as decoded JSON
    batch_oa, batch_an = _OpenAIBatches(oa).completion(body_oa), _AnthropicBatches(an).completion(message)
    for live, batch in ((live_oa, batch_oa), (live_an, batch_an)):
        assert (batch.text, batch.prompt_tokens, batch.completion_tokens, batch.top_logprobs, batch.finish_reason) == (
            live.text, live.prompt_tokens, live.completion_tokens, live.top_logprobs, live.finish_reason)
    assert batch_oa.top_logprobs and set(batch_oa.top_logprobs) >= {"1", "2"}


def test_batch_prices_are_half_the_list_prices(tmp_path):
    prices = load_prices()
    batch = prices.at_batch_rate()
    for backend, model in (("openai", "gpt-4o"), ("anthropic", "claude-sonnet-4-5")):
        assert batch.cost(backend, model, 1000, 500) == pytest.approx(prices.cost(backend, model, 1000, 500) / 2)
    assert batch.cost("local", "anything", 10, 10) is None  # no batch API: unknown, never the list price
    mine = tmp_path / "mine.toml"
    mine.write_text('[batch_rate]\nopenai = 0.4\n[openai]\n"gpt-4o" = { input = 1.0, output = 2.0 }\n')
    custom = load_prices(mine).at_batch_rate()
    assert custom.price("openai", "gpt-4o").input == pytest.approx(0.4)
    assert custom.price("anthropic", "claude-sonnet-4-5").input == pytest.approx(1.5)
    mine.write_text("[batch_rate]\nopenai = 2\n")
    with pytest.raises(ValueError, match=r"batch_rate\.openai must be a number in \[0, 1\].*got 2"):
        load_prices(mine)


def test_fake_server_refuses_unknown_batch_modes():
    with pytest.raises(ValueError, match="batch_mode"):
        FakeLLMServer(batch_mode="slow")
    server = FakeLLMServer()
    with pytest.raises(ValueError, match="unknown"):
        server.inject_batch("ok", "boom")


def test_batches_are_cut_by_lines_and_by_bytes():
    from peercore.jobs.batch import _chunks

    calls = [(f"k{i}", None, ChatRequest(messages=({"role": "user", "content": "x" * 1000},)), f"item{i}")
             for i in range(10)]
    assert [len(c) for c in _chunks(calls, 4, 10**9)] == [4, 4, 2]
    assert [len(c) for c in _chunks(calls, 100, 2600 * 3)] == [3, 3, 3, 1]  # each line weighs 2 x 1000 + 512
    assert [len(c) for c in _chunks(calls[:1], 100, 10)] == [1]  # a line larger than the limit goes alone
    assert [c[0] for chunk in _chunks(calls, 3, 10**9) for c in chunk] == [f"k{i}" for i in range(10)]
