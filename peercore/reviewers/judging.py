"""Pairwise comparisons on top of any backend: verdicts and probabilities.

Everything goes through an injected ``call(request) -> Completion`` coroutine, so the
runner can put its cache, retries and rate limits in between (default:
``backend.complete``). Templates (:mod:`peercore.prompts`) decide the text; verdict
parsing (:func:`peercore.prompts.parse_verdict`) decides the verdict.

Methods (Liusie, Manakul, Gales 2024, "LLM Comparative Assessment", Sec. 3):

``"logprobs"``
    One call, temperature 0, ``max_tokens=1``, ``top_logprobs=20``; the template's two
    labels are read from the first token's log-probabilities (tokens equal to a label
    after stripping spaces are summed): ``p = P(l1) / (P(l1) + P(l2))`` (eq. 3). The
    template's prefill is sent when the backend supports prefill.
``"logits"``
    The same read from a local model's next-token logits after the prefill (the
    prompt-based classifier; requires ``capabilities.logits``).
``"samples"``
    K calls at ``temperature`` (default 1), ``sample_index`` 0..K-1; p is the share of
    valid sampled verdicts for the first answer, ties counting half.
``"verdict"``
    One call at temperature 0; p is 1, 0 or 0.5 from the parsed verdict.
``"auto"``
    ``logits`` if the backend has them, else ``logprobs`` if it has them, else
    ``samples`` (K > 1) or ``verdict`` (K = 1). If a logprobs reply carries no
    probabilities (a model that does not allow them), auto falls back to ``verdict``.

Position bias is strong for small judges: score both orders and average with
:func:`debiased_probability` (or use :func:`compare_both_orders`).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Mapping

from ..prompts import PromptTemplate, Rubric, load_template, parse_verdict
from .base import Backend, Capabilities, ChatRequest, Completion

__all__ = [
    "Comparison",
    "SymmetricComparison",
    "METHODS",
    "compare",
    "compare_both_orders",
    "debiased_probability",
    "default_method",
    "label_probability",
    "resolve_method",
]

METHODS = ("auto", "logprobs", "logits", "samples", "verdict")
Call = Callable[[ChatRequest], Awaitable[Completion]]
_DEFAULT_TEMPLATE = {"logprobs": "liusie_classifier_numeric", "logits": "liusie_classifier_numeric",
                     "samples": "liusie_generative", "verdict": "liusie_generative"}
_P_OF = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5}


@dataclass(frozen=True)
class Comparison:
    """One judge's comparison of answer 1 (shown first) with answer 2.

    Attributes
    ----------
    p_first : probability that answer 1 is better, or None when invalid.
    verdict : ``"model_a"``, ``"model_b"``, ``"tie"`` or None (``p_first`` > 0.5 reads
        as ``model_a``, < 0.5 as ``model_b``, exactly 0.5 as ``tie``).
    rationale : the judge's explanation (a generated reply), None for probability methods.
    raw_text : the reply (prefill included); K samples are joined with a ``---`` line.
    valid : False when nothing could be read (never guessed).
    calls : how many backend calls were made.
    method : the method actually used.
    samples : the K sampled verdicts (``samples`` method), in order.
    """

    p_first: float | None
    verdict: str | None
    rationale: str | None
    raw_text: str
    valid: bool
    calls: int
    method: str = ""
    samples: tuple[str | None, ...] = field(default=())


@dataclass(frozen=True)
class SymmetricComparison:
    """Both presentation orders of one pair and their debiased combination.

    ``p_debiased`` is the probability that the answer given first to
    :func:`compare_both_orders` (``answer_a``) is better, or None if either order is invalid.
    """

    forward: Comparison
    backward: Comparison
    p_debiased: float | None

    @property
    def calls(self) -> int:
        return self.forward.calls + self.backward.calls


def debiased_probability(p_12: float, p_21: float) -> float:
    """Average both presentation orders: ``(p_12 + 1 - p_21) / 2`` (Liusie et al. 2024).

    Parameters
    ----------
    p_12 : P(first answer better) when answer 1 is shown first.
    p_21 : P(first answer better) when the same pair is shown swapped.

    Raises
    ------
    ValueError
        If either probability is outside [0, 1] or NaN (the name and value are quoted).
    """
    for label, value in (("p_12", p_12), ("p_21", p_21)):
        if not isinstance(value, (int, float)) or math.isnan(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"{label} must be a probability in [0, 1], got {value!r}")
    return (float(p_12) + 1.0 - float(p_21)) / 2.0


def label_probability(top_logprobs: Mapping[str, float] | None, labels: tuple[str, str]) -> float | None:
    """``P(l1) / (P(l1) + P(l2))`` from first-token log-probabilities (Liusie et al. eq. 3).

    Tokens equal to a label after stripping whitespace (``"1"``, ``" 1"``) are summed.
    Returns None when neither label appears.
    """
    if not top_logprobs:
        return None
    mass = [0.0, 0.0]
    for token, logprob in top_logprobs.items():
        piece = token.strip()
        for i, label in enumerate(labels):
            if piece == label:
                mass[i] += math.exp(logprob)
    total = mass[0] + mass[1]
    if total <= 0.0:
        return None
    return mass[0] / total


def default_method(backend: Backend, *, template: str | PromptTemplate | None = None) -> str:
    """The method PeerBoard uses when none is given, per backend (the CLI and the dashboard agree).

    * the offline judge and other local models (``local``), and OpenAI-compatible
      servers that return next-token log-probabilities (llama.cpp server, vLLM):
      ``"auto"``, i.e. the label-probability classifier (Liusie et al. 2024, eq. 3) with
      ``p_a`` stored. Small local models answer the verdict prompt with the same
      label whatever the order (the 1.5B offline judge replied "2" 40 times out of 40),
      while their label probabilities still rank answers;
    * the OpenAI and Anthropic APIs: ``"verdict"``, the reviewing prompt with its
      reasoning, as PRD and MT-Bench use strong models (log-probabilities stay an option
      with ``method="logprobs"`` where the API offers them).

    With a ``template`` given, its kind decides: a classifier template needs
    probabilities (``"auto"``), a review or generative template a verdict.
    """
    if template is not None:
        kind = (template if isinstance(template, PromptTemplate) else load_template(template)).kind
        return "auto" if kind == "classifier" else "verdict"
    caps = backend.capabilities
    if backend.backend == "local" or (backend.backend == "openai-compatible" and (caps.logprobs or caps.logits)):
        return "auto"
    return "verdict"


def resolve_method(method: str, capabilities: Capabilities, *, k: int = 5) -> str:
    """The concrete method for ``method`` on a backend with these capabilities.

    Raises
    ------
    ValueError
        If ``method`` is unknown, or names a method the backend cannot do
        (``logits`` without local logits, ``logprobs`` without logprobs).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "auto":
        if capabilities.logits:
            return "logits"
        if capabilities.logprobs:
            return "logprobs"
        return "samples" if k > 1 else "verdict"
    if method == "logits" and not capabilities.logits:
        raise ValueError("method='logits' needs a backend that reads next-token logits (the local backend)")
    if method == "logprobs" and not (capabilities.logprobs or capabilities.logits):
        raise ValueError("method='logprobs' needs a backend that returns top_logprobs (openai, compatible, local)")
    return method


async def compare(call: Call | Backend, backend_caps: Capabilities | Backend | None, question: str, answer_1: str,
                  answer_2: str, *, template: str | PromptTemplate | None = None, method: str = "auto",
                  k: int = 5, temperature: float = 1.0, max_tokens: int = 512, top_logprobs: int = 20,
                  fields: Mapping[str, object] | None = None, verdict_temperature: float = 0.0) -> Comparison:
    """Compare two answers to one question with one judge.

    Parameters
    ----------
    call : ``async (ChatRequest) -> Completion`` (the runner's cached, retried call), or
        a :class:`~peercore.reviewers.base.Backend` (its ``complete`` is used).
    backend_caps : the backend's :class:`~peercore.reviewers.base.Capabilities` (or the
        backend itself); None takes them from ``call`` when it is a backend.
    question, answer_1, answer_2 : the texts; answer 1 is shown first.
    template : a template name or object; default ``liusie_classifier_numeric`` (the
        wording validated on the offline judge) for probability methods and
        ``liusie_generative`` for generated verdicts.
    method : one of :data:`METHODS` (see the module docstring).
    k : number of samples for ``samples``.
    temperature : sampling temperature for ``samples``.
    max_tokens : reply budget for generated verdicts.
    verdict_temperature : temperature of the single generated verdict (``verdict``;
        default 0, greedy); a judge configured with a temperature sends it here.
    top_logprobs : how many first-token alternatives to ask for.
    fields : extra template fields (``aspect``, ``criterion``, ``rubric`` -- a
        :class:`~peercore.prompts.Rubric` is rendered -- ...).

    Returns
    -------
    Comparison
        ``valid=False`` (with the raw text) when no probability or verdict was readable.

    Raises
    ------
    ValueError
        On an unknown method, a method the backend cannot do, or ``k < 1``.
    BackendError
        Whatever the call raises after the runner's retries (never swallowed).
    """
    if isinstance(call, Backend):
        if backend_caps is None:
            backend_caps = call.capabilities
        call = call.complete
    if isinstance(backend_caps, Backend):
        backend_caps = backend_caps.capabilities
    if backend_caps is None:
        backend_caps = Capabilities()
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    chosen = resolve_method(method, backend_caps, k=k)
    tmpl = load_template(template if template is not None else _DEFAULT_TEMPLATE[chosen])
    values = {key: (value.render() if isinstance(value, Rubric) else value) for key, value in (fields or {}).items()}
    messages = tmpl.render(question=question, answer_1=answer_1, answer_2=answer_2, **values)
    prefill = tmpl.prefill if (tmpl.prefill and backend_caps.prefill) else None

    if chosen in ("logprobs", "logits"):
        request = ChatRequest(messages=messages, temperature=0.0, max_tokens=1, top_logprobs=top_logprobs,
                              prefill=prefill)
        completion = await call(request)
        raw = (prefill or "") + completion.text
        p = label_probability(completion.top_logprobs, tmpl.labels)
        if p is None:
            if method == "auto":
                fallback = await _verdict(call, messages, tmpl, prefill=None, max_tokens=max_tokens)
                return Comparison(fallback.p_first, fallback.verdict, fallback.rationale, fallback.raw_text,
                                  fallback.valid, 1 + fallback.calls, "verdict")
            return Comparison(None, None, None, raw, False, 1, chosen)
        return Comparison(p, _verdict_of(p), None, raw, True, 1, chosen)
    if chosen == "verdict":
        return await _verdict(call, messages, tmpl, prefill=prefill, max_tokens=max_tokens,
                              temperature=verdict_temperature)
    return await _samples(call, messages, tmpl, prefill=prefill, k=k, temperature=temperature, max_tokens=max_tokens)


async def compare_both_orders(call: Call | Backend, backend_caps: Capabilities | Backend | None, question: str,
                              answer_a: str, answer_b: str, **options) -> SymmetricComparison:
    """:func:`compare` in both orders and :func:`debiased_probability` of the two.

    ``p_debiased`` is P(``answer_a`` better) = (p(a first) + 1 - p(b first)) / 2; the two
    calls run concurrently. Options are passed to :func:`compare`.
    """
    forward, backward = await asyncio.gather(
        compare(call, backend_caps, question, answer_a, answer_b, **options),
        compare(call, backend_caps, question, answer_b, answer_a, **options),
    )
    p = None
    if forward.valid and backward.valid:
        p = debiased_probability(forward.p_first, backward.p_first)
    return SymmetricComparison(forward, backward, p)


def _verdict_of(p: float) -> str:
    return "model_a" if p > 0.5 else "model_b" if p < 0.5 else "tie"


async def _verdict(call: Call, messages, tmpl: PromptTemplate, *, prefill: str | None, max_tokens: int,
                   temperature: float = 0.0) -> Comparison:
    completion = await call(ChatRequest(messages=messages, temperature=temperature, max_tokens=max_tokens,
                                        prefill=prefill))
    raw = (prefill or "") + completion.text
    parsed = parse_verdict(raw, scheme=tmpl.scheme)
    p = _P_OF[parsed.verdict] if parsed.valid else None
    return Comparison(p, parsed.verdict, raw, raw, parsed.valid, 1, "verdict")


async def _samples(call: Call, messages, tmpl: PromptTemplate, *, prefill: str | None, k: int,
                   temperature: float, max_tokens: int) -> Comparison:
    requests = [ChatRequest(messages=messages, temperature=temperature, max_tokens=max_tokens, prefill=prefill,
                            sample_index=i) for i in range(k)]
    tasks = [asyncio.ensure_future(call(r)) for r in requests]
    try:
        completions = await asyncio.gather(*tasks)
    except BaseException:  # the first failure wins; cancel the other samples
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    texts = [(prefill or "") + c.text for c in completions]
    parsed = [parse_verdict(text, scheme=tmpl.scheme) for text in texts]
    valid = [p.verdict for p in parsed if p.valid]
    raw = "\n\n---\n\n".join(texts)
    verdicts = tuple(p.verdict for p in parsed)
    if not valid:
        return Comparison(None, None, None, raw, False, k, "samples", verdicts)
    p_first = sum(_P_OF[v] for v in valid) / len(valid)
    verdict = _verdict_of(p_first)
    rationale = next((text for text, p in zip(texts, parsed) if p.verdict == verdict), texts[0])
    return Comparison(p_first, verdict, rationale, raw, True, k, "samples", verdicts)
