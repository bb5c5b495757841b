"""The judging layer the jobs use: build a pairwise request, read a verdict from a completion.

Templates and verdict parsing come from :mod:`peercore.prompts` (data files and
:func:`peercore.prompts.parse_verdict`); this module only turns them into
:class:`~peercore.reviewers.base.ChatRequest` objects and :class:`Verdict` values, so
that every call goes through the runner (cache, retries, accounting).

Verdicts are never guessed: an output with no readable verdict is *invalid*
(``valid=False``) and is stored as such with its raw text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from peercore.prompts import format_turns, load_rubric, load_template, parse_verdict, split_criterion
from peercore.prompts.criteria import RubricError
from peercore.prompts.templates import PromptTemplate, TemplateError
from peercore.reviewers.base import ChatRequest, Completion
from peercore.reviewers import judging

__all__ = ["Verdict", "METHODS", "DEFAULT_TEMPLATES", "review_template", "review_request", "read_verdict",
           "discussion_request", "debate_request", "debate_templates", "p_from_samples", "strip_verdict_line",
           "criterion_fields", "comparison_template", "comparison_requests", "verdict_of_comparison"]

METHODS = ("text", "logprobs", "samples")
DEFAULT_TEMPLATES = {"text": "prd_review", "samples": "prd_review", "logprobs": "liusie_classifier_numeric"}
_TEXT_KINDS = ("review", "generative", "debate_initial")


@dataclass(frozen=True)
class Verdict:
    """One judge's reading of one comparison.

    Attributes
    ----------
    winner : ``"model_a"`` (the answer shown first), ``"model_b"``, ``"tie"``, or None when unreadable.
    p_a : probability that the first answer is better (label probabilities, or the share
        of K samples), or None.
    rationale : the judge's explanation (the output without its verdict line).
    raw : the unparsed output.
    """

    winner: str | None
    p_a: float | None = None
    rationale: str = ""
    raw: str = ""

    @property
    def valid(self) -> bool:
        return self.winner is not None


def review_template(name: str | None, method: str) -> PromptTemplate:
    """The template for a review by ``method`` (default :data:`DEFAULT_TEMPLATES`), checked for fit.

    Raises
    ------
    ValueError
        If the method is unknown, or the template's kind does not suit it (a classifier
        template needs ``method="logprobs"`` and the other way round).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    template = load_template(name or DEFAULT_TEMPLATES[method])
    if method == "logprobs" and template.kind != "classifier":
        raise ValueError(f"method='logprobs' needs a classifier template (e.g. 'liusie_classifier_numeric'), "
                         f"got template {template.name!r} of kind {template.kind!r}")
    if method != "logprobs" and template.kind not in _TEXT_KINDS:
        raise ValueError(f"method={method!r} needs a template of kind {_TEXT_KINDS}, got {template.name!r} "
                         f"of kind {template.kind!r}")
    return template


def criterion_fields(template: PromptTemplate, criterion: str | None) -> dict:
    """``criterion`` and ``rubric`` fields for templates that have them (shipped rubrics)."""
    return _rubric_fields(template, criterion)


def _rubric_fields(template: PromptTemplate, criterion: str | None) -> dict:
    """The ``criterion`` and ``rubric`` fields of a rubric-bearing template.

    A criterion variation (``helpfulness/gibberish``, ScaleEval Table 5) changes what the
    judge reads, so a template without a ``{rubric}`` cannot run one: refused.
    """
    fields: dict[str, str] = {}
    if criterion and split_criterion(criterion)[1] is not None and "rubric" not in template.fields:
        raise ValueError(f"criterion {criterion!r} is a criteria variation (ScaleEval Table 5), but template "
                         f"{template.name!r} shows no rubric, so the varied rubric would never reach the judge; use a "
                         "template with a {rubric} (e.g. scaleeval_initial or scaleeval_compact_initial)")
    if "criterion" in template.fields or "rubric" in template.fields:
        name = criterion or "helpfulness"
        try:
            rubric = load_rubric(name)
        except RubricError as exc:
            raise ValueError(f"criterion {name!r} has no rubric for template {template.name!r}: {exc}") from None
        fields = {"criterion": rubric.title, "criterion_header": rubric.header, "rubric": rubric.render()}
    return fields


def review_request(question: str, answer_1: str, answer_2: str, *, template: str | PromptTemplate | None = None,
                   criterion: str | None = None, method: str = "text", temperature: float = 0.0,
                   max_tokens: int | None = None, sample_index: int = 0, seed: int | None = None) -> ChatRequest:
    """The request asking a judge which of two answers is better.

    ``method="text"`` renders a review template whose reply ends with a verdict line;
    ``"samples"`` is the same at a temperature > 0, one request per ``sample_index``;
    ``"logprobs"`` renders a classifier template, sets its assistant prefill and asks
    for the top log-probabilities of the next token (Liusie et al. 2024, eq. 3).
    """
    tpl = template if isinstance(template, PromptTemplate) else review_template(template, method)
    messages = tpl.render(question=question, answer_1=answer_1, answer_2=answer_2, **_rubric_fields(tpl, criterion))
    if method == "logprobs":
        return ChatRequest(messages=messages, temperature=0.0, max_tokens=max_tokens or 1, top_logprobs=5,
                           prefill=tpl.prefill, seed=seed)
    return ChatRequest(messages=messages, temperature=temperature, max_tokens=max_tokens or 256,
                       sample_index=sample_index, seed=seed)


def read_verdict(completion: Completion | str, *, template: str | PromptTemplate = "prd_review",
                 prefill: str | None = None) -> Verdict:
    """Read a verdict with the template's scheme (:func:`peercore.prompts.parse_verdict`).

    With token log-probabilities (a classifier request), ``p_a`` =
    P(label 1) / (P(label 1) + P(label 2)) over the template's two labels and the winner
    is the likelier label (``tie`` at exactly 0.5). Otherwise the last verdict line of
    the text (after ``prefill``) decides; no readable line means an invalid verdict.
    """
    tpl = load_template(template)
    text = completion if isinstance(completion, str) else completion.text
    top = None if isinstance(completion, str) else completion.top_logprobs
    if top:
        p_a = _p_from_logprobs(top, tpl.labels)
        if p_a is not None:
            winner = "model_a" if p_a > 0.5 else "model_b" if p_a < 0.5 else "tie"
            return Verdict(winner, p_a, "", text)
    full = f"{prefill}{text}" if prefill else text
    parsed = parse_verdict(full, scheme=tpl.scheme)
    return Verdict(parsed.verdict, None, strip_verdict_line(full, parsed.line), text)


def strip_verdict_line(text: str, line: str | None) -> str:
    """``text`` without its (last occurrence of the) verdict ``line``, trimmed."""
    if not line:
        return text.strip()
    head, sep, tail = text.rpartition(line)
    return (head + tail).strip() if sep else text.strip()


def _p_from_logprobs(top: Mapping[str, float], labels: Sequence[str]) -> float | None:
    mass = {labels[0].lower(): 0.0, labels[1].lower(): 0.0}
    for token, logprob in top.items():
        key = str(token).strip().lower()
        if key in mass and logprob is not None and math.isfinite(logprob):
            mass[key] += math.exp(logprob)
    total = sum(mass.values())
    if total <= 0:
        return None
    return mass[labels[0].lower()] / total


def p_from_samples(verdicts: Sequence[Verdict]) -> float | None:
    """Share of readable sampled verdicts preferring the first answer, ties counting half (Liusie et al.)."""
    valid = [v for v in verdicts if v.valid]
    if not valid:
        return None
    return sum(1.0 if v.winner == "model_a" else 0.5 if v.winner == "tie" else 0.0 for v in valid) / len(valid)


# ----------------------------------------------------------------------- discussion

def discussion_request(question: str, answer_1: str, answer_2: str, *, speaker: int, reviews: Sequence[str],
                       turns: Sequence[tuple[int, str]], temperature: float = 0.0, max_tokens: int = 256,
                       template: str = "prd_discussion", seed: int | None = None) -> ChatRequest:
    """One PRD discussion turn for reviewer ``speaker`` (1 = the leader, 2), laid out as PRD ran it.

    Li, Patel, Du (2023), section 3.2 and Table 1; the layout of bcdnlp/PRD's
    ``prompt_discuss_generation_lfqa`` / ``add_prompt_each_turn_lfqa``: a system line
    naming the reviewer's role, the question, both answers and both initial ``reviews``
    (reviewer 1's first) with the instruction, then the discussion so far, ``turns`` =
    ``[(reviewer number, text), ...]``: the speaker's own turns as its (assistant)
    replies, the other reviewer's as user messages, and every turn followed by the
    template's reminder addressed to the reviewer who speaks after it. Consecutive
    messages of one role are joined, so roles alternate (as Anthropic requires).
    A template without a reminder gets the turns in its ``{discussion}`` field instead.
    """
    if speaker not in (1, 2):
        raise ValueError(f"speaker must be 1 or 2, got {speaker!r}")
    tpl = load_template(template)
    fields = dict(reviewer=speaker, other=3 - speaker, question=question, answer_1=answer_1, answer_2=answer_2,
                  review_1=reviews[0], review_2=reviews[1])
    if not tpl.reminder:
        messages = tpl.render(**fields, discussion=format_turns([(f"Reviewer {who}", text) for who, text in turns]))
        return ChatRequest(messages=messages, temperature=temperature, max_tokens=max_tokens, seed=seed)
    messages = [dict(m) for m in tpl.render(**fields)]
    for who, text in turns:
        after = 3 - who  # PRD's reviewers alternate: the reminder goes to the one who speaks next
        content = f"{text.strip()}\n\n{tpl.render_reminder(reviewer=after, other=who)}"
        role = "assistant" if who == speaker else "user"
        if messages[-1]["role"] == role:
            messages[-1] = {"role": role, "content": f"{messages[-1]['content']}\n\n{content}"}
        else:
            messages.append({"role": role, "content": content})
    if messages[-1]["role"] != "user":  # the speaker spoke last (turns = 0 is the only such case)
        messages.append({"role": "user", "content": tpl.render_reminder(reviewer=speaker, other=3 - speaker)})
    return ChatRequest(messages=tuple(messages), temperature=temperature, max_tokens=max_tokens, seed=seed)


# --------------------------------------------------------------------------- debate

def debate_request(question: str, submission_1: str, submission_2: str, *, criterion: str | None, speaker: int,
                   round: int = 0, own: str | None = None, others: Sequence[tuple[int, str]] = (),
                   temperature: float = 0.0, max_tokens: int = 256,
                   templates: tuple[str, str] = ("scaleeval_initial", "scaleeval_discussion"),
                   seed: int | None = None) -> ChatRequest:
    """One ScaleEval agent turn (Chern et al. 2024, section 3).

    ``round`` 0 is the independent initial evaluation; in round r >= 1 speaker k sees its
    own previous evaluation (``own``) and the others' previous ones (``others`` =
    ``[(speaker number, text), ...]``). The reply gives 1, 2 or 0 (tie): on its last line
    (``scaleeval_*``) or first (``scaleeval_compact_*``). ``templates`` are the (initial,
    discussion) templates; ``seed`` is the request's sampling seed (None: the backend's).
    """
    tpl = load_template(templates[0] if round == 0 else templates[1])
    fields = {"question": question, "answer_1": submission_1, "answer_2": submission_2,
              **_rubric_fields(tpl, criterion)}
    if round > 0:
        fields.update(speaker=speaker, round=round, own_evaluation=own or "",
                      other_evaluations=format_turns([(f"Speaker {k}", text) for k, text in others]))
    return ChatRequest(messages=tpl.render(**fields), temperature=temperature, max_tokens=max_tokens, seed=seed)


def debate_templates(initial: str, discussion: str) -> tuple[str, str]:
    """The names of a debate's (initial, discussion) templates, checked for kind and scheme.

    Raises
    ------
    ValueError
        If a template is unknown, or of the wrong kind (``debate_initial`` /
        ``debate_discussion``), or the two use different verdict schemes (quoted).
    """
    out = []
    for what, name, kind in (("initial_template", initial, "debate_initial"),
                             ("discussion_template", discussion, "debate_discussion")):
        if not isinstance(name, str):
            raise ValueError(f"{what} must be the name of a shipped template, got {name!r}")
        try:
            tpl = load_template(name)
        except TemplateError as exc:
            raise ValueError(f"{what}: {exc}") from None
        if tpl.kind != kind:
            raise ValueError(f"{what} must be a template of kind {kind!r}, got {tpl.name!r} of kind {tpl.kind!r}")
        out.append(tpl)
    if out[0].scheme != out[1].scheme:
        raise ValueError(f"initial_template {out[0].name!r} (scheme {out[0].scheme!r}) and discussion_template "
                         f"{out[1].name!r} (scheme {out[1].scheme!r}) must use one verdict scheme")
    return out[0].name, out[1].name


# ------------------------------------------------ comparisons by peercore.reviewers.judging

def comparison_template(template: str | None, method: str) -> PromptTemplate:
    """The template :func:`peercore.reviewers.judging.compare` will use.

    PRD peer review by default for ``method="verdict"`` (``prd_review``, Li et al. 2023
    Table 8); the judging module's defaults otherwise (the prompt-based classifier
    ``liusie_classifier_numeric`` for probability methods).
    """

    if method not in judging.METHODS:
        raise ValueError(f"method must be one of {judging.METHODS}, got {method!r}")
    if template is None:
        template = "prd_review" if method == "verdict" else judging._DEFAULT_TEMPLATE.get(method)
    return load_template(template) if template is not None else None


def comparison_requests(backend, question: str, answer_1: str, answer_2: str, *, template: str | None,
                        method: str, k: int, temperature: float, max_tokens: int, top_logprobs: int = 20,
                        fields: Mapping | None = None, verdict_temperature: float = 0.0) -> list[tuple[ChatRequest, bool]]:
    """The requests :func:`~peercore.reviewers.judging.compare` makes, as ``(request, optional)``.

    For estimates before a run. Mirrors ``compare``'s construction (a test checks that
    the two agree); ``optional`` marks the verdict fallback of ``method="auto"``.
    """

    chosen = judging.resolve_method(method, backend.capabilities, k=k)
    tpl = load_template(template if template is not None else judging._DEFAULT_TEMPLATE[chosen])
    messages = tpl.render(question=question, answer_1=answer_1, answer_2=answer_2, **dict(fields or {}))
    prefill = tpl.prefill if (tpl.prefill and backend.capabilities.prefill) else None
    if chosen in ("logprobs", "logits"):
        out = [(ChatRequest(messages=messages, temperature=0.0, max_tokens=1, top_logprobs=top_logprobs,
                            prefill=prefill), False)]
        if method == "auto":
            out.append((ChatRequest(messages=messages, temperature=0.0, max_tokens=max_tokens), True))
        return out
    if chosen == "verdict":
        return [(ChatRequest(messages=messages, temperature=verdict_temperature, max_tokens=max_tokens,
                             prefill=prefill), False)]
    return [(ChatRequest(messages=messages, temperature=temperature, max_tokens=max_tokens, prefill=prefill,
                         sample_index=i), False) for i in range(k)]


def verdict_of_comparison(comparison, *, scheme: str = "prd") -> Verdict:
    """A stored :class:`Verdict` from a :class:`peercore.reviewers.judging.Comparison`.

    ``p_a`` is kept for probability methods (label probabilities, sample shares) and left
    empty for a single parsed verdict (whose 1 / 0 / 0.5 is not a probability).
    """
    p_a = comparison.p_first if comparison.method in ("logprobs", "logits", "samples") else None
    if not comparison.valid:
        return Verdict(None, None, "", comparison.raw_text)
    rationale = comparison.rationale or ""
    if rationale:
        parsed = parse_verdict(rationale, scheme=scheme)
        rationale = strip_verdict_line(rationale, parsed.line) if parsed.valid else rationale.strip()
    return Verdict(comparison.verdict, p_a, rationale, comparison.raw_text)
