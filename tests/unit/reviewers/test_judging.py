"""Comparisons and probabilities on top of Backend.complete: stub calls and the fake server."""

from __future__ import annotations

import asyncio
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from peercore.prompts import load_template
from peercore.prompts.templates import TemplateError
from peercore.reviewers import (
    AnthropicBackend,
    BackendError,
    Capabilities,
    ChatRequest,
    Completion,
    OpenAIBackend,
    RetryableError,
    compare,
    compare_both_orders,
    debiased_probability,
    label_probability,
    resolve_method,
)

LOCAL = Capabilities(logprobs=True, logits=True, prefill=True, seed=True)
OPENAI = Capabilities(logprobs=True, prefill=False, seed=True)
PLAIN = Capabilities()


def run(coro):
    return asyncio.run(coro)


class Recorder:
    """A stub call: returns completions from a function and records every request."""

    def __init__(self, respond):
        self.respond = respond
        self.requests: list[ChatRequest] = []

    async def __call__(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        return self.respond(request)


def logprob_reply(p1: float):
    return lambda request: Completion(text="1" if p1 >= 0.5 else "2",
                                      top_logprobs={"1": math.log(p1), "2": math.log(1 - p1), "The": -5.0})


# ------------------------------------------------------------------------ probabilities
def test_debiased_probability_formula():
    assert debiased_probability(0.9, 0.2) == pytest.approx(0.85)
    assert debiased_probability(1.0, 1.0) == 0.5  # always picks the first: no information
    assert debiased_probability(0.5, 0.5) == 0.5


@given(st.floats(0, 1), st.floats(0, 1))
def test_debiased_probability_is_antisymmetric_under_swapping(p12, p21):
    # swapping the roles of the two answers gives the complement
    assert debiased_probability(p12, p21) + debiased_probability(p21, p12) == pytest.approx(1.0)
    assert 0.0 <= debiased_probability(p12, p21) <= 1.0


@pytest.mark.parametrize(("p12", "p21", "name"), [(1.2, 0.5, "p_12"), (0.5, -0.1, "p_21"), (float("nan"), 0.5, "p_12")])
def test_debiased_probability_rejects_bad_values(p12, p21, name):
    with pytest.raises(ValueError, match=name):
        debiased_probability(p12, p21)


def test_label_probability_sums_spaced_variants_and_handles_absence():
    top = {"1": math.log(0.3), " 1": math.log(0.1), "2": math.log(0.2), "x": math.log(0.4)}
    assert label_probability(top, ("1", "2")) == pytest.approx(0.4 / 0.6)
    assert label_probability({" A": math.log(0.6), "B": math.log(0.2)}, ("A", "B")) == pytest.approx(0.75)
    assert label_probability({"x": 0.0}, ("1", "2")) is None
    assert label_probability(None, ("1", "2")) is None


# ------------------------------------------------------------------------------ methods
def test_resolve_method():
    assert resolve_method("auto", LOCAL) == "logits"
    assert resolve_method("auto", OPENAI) == "logprobs"
    assert resolve_method("auto", PLAIN, k=5) == "samples"
    assert resolve_method("auto", PLAIN, k=1) == "verdict"
    with pytest.raises(ValueError, match="logits"):
        resolve_method("logits", OPENAI)
    with pytest.raises(ValueError, match="logprobs"):
        resolve_method("logprobs", PLAIN)
    with pytest.raises(ValueError, match="'guess'"):
        resolve_method("guess", PLAIN)


def test_logits_method_uses_prefill_and_reads_labels():
    call = Recorder(logprob_reply(0.8))
    result = run(compare(call, LOCAL, "Q?", "good", "bad", template="liusie_classifier_numeric"))
    assert (result.method, result.valid, result.calls, result.verdict) == ("logits", True, 1, "model_a")
    assert result.p_first == pytest.approx(0.8)
    request = call.requests[0]
    assert request.prefill == "The better answer is Answer "
    assert request.top_logprobs == 20 and request.max_tokens == 1 and request.temperature == 0.0
    user = request.messages[-1]["content"]
    assert user.index("good") < user.index("bad")


def test_logprobs_method_without_prefill_support_sends_no_prefill():
    call = Recorder(logprob_reply(0.3))
    result = run(compare(call, OPENAI, "Q?", "a1", "a2", template="liusie_classifier_numeric"))
    assert call.requests[0].prefill is None
    assert result.method == "logprobs" and result.verdict == "model_b" and result.p_first == pytest.approx(0.3)


def test_missing_logprobs_is_invalid_when_asked_explicitly_and_falls_back_in_auto():
    call = Recorder(lambda r: Completion(text="Verdict: Answer 2") if r.top_logprobs is None
                    else Completion(text="2", top_logprobs=None))
    explicit = run(compare(call, OPENAI, "Q?", "a", "b", method="logprobs", template="liusie_classifier_numeric"))
    assert (explicit.valid, explicit.p_first, explicit.verdict) == (False, None, None)
    call.requests.clear()
    auto = run(compare(call, OPENAI, "Q?", "a", "b", template="liusie_classifier_numeric"))
    assert (auto.method, auto.valid, auto.verdict, auto.p_first, auto.calls) == ("verdict", True, "model_b", 0.0, 2)


def test_verdict_method_parses_and_never_guesses():
    good = run(compare(Recorder(lambda r: Completion(text="Reasoning...\nVerdict: Response A")), PLAIN, "Q", "a", "b",
                       method="verdict"))
    assert (good.verdict, good.p_first, good.valid, good.rationale) == ("model_a", 1.0, True,
                                                                         "Reasoning...\nVerdict: Response A")
    bad = run(compare(Recorder(lambda r: Completion(text="Both have merits; hard to say.")), PLAIN, "Q", "a", "b",
                      method="verdict"))
    assert (bad.verdict, bad.p_first, bad.valid) == (None, None, False)
    assert bad.raw_text == "Both have merits; hard to say."


def test_samples_method_counts_verdicts_with_ties_half():
    texts = iter(["Verdict: Response A", "Verdict: Response B", "Verdict: Response A", "[[C]]", "unclear"])
    call = Recorder(lambda r: Completion(text=next(texts)))
    result = run(compare(call, PLAIN, "Q", "a", "b", method="samples", k=5))
    assert [r.sample_index for r in call.requests] == [0, 1, 2, 3, 4]
    assert all(r.temperature == 1.0 for r in call.requests)
    assert result.samples == ("model_a", "model_b", "model_a", "tie", None)
    assert result.p_first == pytest.approx((1 + 0 + 1 + 0.5) / 4)
    assert (result.verdict, result.valid, result.calls) == ("model_a", True, 5)
    assert result.raw_text.count("---") == 4


def test_samples_all_invalid_is_invalid():
    result = run(compare(Recorder(lambda r: Completion(text="no idea")), PLAIN, "Q", "a", "b", method="samples", k=3))
    assert (result.valid, result.p_first, result.calls) == (False, None, 3)


def test_template_fields_and_rubric_are_rendered():
    from peercore.prompts import load_rubric

    # the rubric's header line (ScaleEval, Chern et al. 2024, Table 6): named for a plain criterion,
    # the bare "[Criteria]" for a variation that hides the name (issue 22, item 4)
    call = Recorder(lambda r: Completion(text="0"))
    rubric = load_rubric("helpfulness")
    result = run(compare(call, PLAIN, "Q", "a", "b", method="verdict", template="scaleeval_initial",
                         fields={"criterion": "helpfulness", "criterion_header": rubric.header, "rubric": rubric}))
    assert result.verdict == "tie" and result.p_first == 0.5
    user = call.requests[0].messages[-1]["content"]
    assert f"[Criterion: {rubric.title}]" in user and "5: Very Helpful" in user
    varied = load_rubric("helpfulness/gibberish")
    call = Recorder(lambda r: Completion(text="0"))
    run(compare(call, PLAIN, "Q", "a", "b", method="verdict", template="scaleeval_initial",
                fields={"criterion": "helpfulness", "criterion_header": varied.header, "rubric": varied}))
    user = call.requests[0].messages[-1]["content"]
    assert "[Criteria]" in user and "[Criterion:" not in user
    # without the header the template is refused, naming the missing field
    with pytest.raises(TemplateError, match="criterion_header"):
        run(compare(Recorder(lambda r: Completion(text="0")), PLAIN, "Q", "a", "b", method="verdict",
                    template="scaleeval_initial", fields={"criterion": "helpfulness", "rubric": rubric}))


def test_backend_errors_propagate():
    async def failing(request):
        raise RetryableError("boom", status=500)

    with pytest.raises(BackendError, match="boom"):
        run(compare(failing, PLAIN, "Q", "a", "b", method="samples", k=3))


def test_bad_k_is_rejected():
    with pytest.raises(ValueError, match="k must be"):
        run(compare(Recorder(lambda r: Completion(text="1")), PLAIN, "Q", "a", "b", k=0))


def test_compare_both_orders_debiases_a_first_position_bias():
    # a judge that prefers whatever is first, slightly more so when the good answer is first
    def respond(request):
        user = request.messages[-1]["content"]
        p = 0.9 if user.index("GOOD") < user.index("BAD") else 0.7
        return logprob_reply(p)(request)

    result = run(compare_both_orders(Recorder(respond), LOCAL, "Q", "GOOD", "BAD", template="liusie_classifier_numeric"))
    assert result.forward.p_first == pytest.approx(0.9)
    assert result.backward.p_first == pytest.approx(0.7)
    assert result.p_debiased == pytest.approx((0.9 + 1 - 0.7) / 2)
    assert result.calls == 2


# --------------------------------------------------------------- through the fake server
def test_compare_with_openai_logprobs_through_the_wire():
    from fakes.llm_server import FakeLLMServer, default_p1

    with FakeLLMServer() as server:
        backend = OpenAIBackend("gpt-x", api_key="k", base_url=server.openai_base_url, timeout=2)
        result = run(compare(backend, None, "Q?", "first answer", "second answer"))
        body = server.request_log[-1]["body"]
    assert result.method == "logprobs" and result.valid
    assert result.p_first == pytest.approx(default_p1(body))
    assert body["logprobs"] is True


def test_compare_with_anthropic_samples_through_the_wire():
    from fakes.llm_server import FakeLLMServer

    with FakeLLMServer(seed=5) as server:
        backend = AnthropicBackend("claude-x", api_key="k", base_url=server.anthropic_base_url, timeout=2,
                                   send_temperature=True)
        template = load_template("prd_review")
        result = run(compare(backend, None, "Q?", "first answer", "second answer", template=template, k=8))
        assert server.successes == 8
        assert all(entry["body"]["temperature"] == 1.0 for entry in server.request_log)
    assert result.method == "samples" and result.calls == 8 and result.valid
    assert len(result.samples) == 8 and set(result.samples) <= {"model_a", "model_b"}
    assert result.p_first == pytest.approx(result.samples.count("model_a") / 8)
