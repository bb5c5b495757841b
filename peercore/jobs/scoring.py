"""Absolute scoring: a judge scores one candidate at a time on a scale (prompt scoring).

Liusie, Manakul, Gales (2024), "LLM Comparative Assessment", Sec. 5: the absolute
baseline that comparative assessment is measured against; Zheng et al. (2023), MT-Bench
single-answer grading. Each item is one (context, candidate, judge): one call whose
reply is read as a score by :mod:`peercore.nlg.scoring`, stored in the store's
``judge_scores`` table (:meth:`peercore.store.Store.scores.add_judge_scores`), not as a verdict.

Methods (per judge; the default follows the backend, as reviews do,
:func:`default_score_method`):

``"logits"`` / ``"logprobs"``
    One call, temperature 0, one token after the prefill ``Score: ``, with the first
    token's log-probabilities (a local model's logits, or a server's ``top_logprobs``):
    the expected score over the scale's labels (:func:`peercore.nlg.scoring.expected_score`)
    and, from the most likely token, the text reading. Valid when the scale's labels
    carry probability. The labels must be single tokens, so such scales are 0-9 at most
    (1-9 by default: Qwen's tokenizer splits ``10``).
``"text"``
    One generated reply (temperature 0 unless the judge sets one); valid when
    :func:`peercore.nlg.scoring.parse_score` reads exactly one score on the scale.
``"auto"``
    ``logits`` where the backend has them, else ``logprobs``, else ``text``.

A judge's identity (:mod:`peercore.judges`) is its backend, model, role ``score``,
method, template and version, attribute (``criterion``), scale, temperature and reply
budget; its scores are stored under the name :meth:`peercore.store.Store.judges.resolve`
gives that identity (``local:qwen2.5-coder-1.5b~score`` when the plain name holds a
reviewer). Every paid call ends as a stored score (valid, or invalid with its raw reply)
or a failed item (:meth:`peercore.store.Store.runs.accounting` counts ``scores``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from peercore.jobs.base import (
    Judge,
    as_judges,
    item_key,
    judge_identity,
    load_answers,
    load_questions,
    parse_item_key,
    resolve_judge_names,
)
from peercore.prompts.templates import PromptTemplate
from peercore.reviewers.base import Backend, ChatRequest
from peercore.runner import ItemContext, ItemOutcome, Job, PlannedCall
from peercore.nlg.prompts import SCORE_TEMPLATE, load_nlg_template, quality_of
from peercore.nlg.scoring import check_scale, expected_score, parse_score

if TYPE_CHECKING:  # pragma: no cover
    from peercore.store import Store

__all__ = ["ScoreJob", "ScoreSettings", "SCORE_METHODS", "default_score_method", "resolve_score_method"]

SCORE_METHODS = ("auto", "logits", "logprobs", "text")
_TOP_LOGPROBS = 20


def default_score_method(backend: Backend) -> str:
    """The method a scoring judge uses when none is given (as :func:`peercore.reviewers.judging.default_method`).

    ``"auto"`` (score-token probabilities) for local models and OpenAI-compatible
    servers with log-probabilities; ``"text"`` for the OpenAI and Anthropic APIs.
    """
    caps = backend.capabilities
    if backend.backend == "local" or (backend.backend == "openai-compatible" and (caps.logprobs or caps.logits)):
        return "auto"
    return "text"


def resolve_score_method(method: str, backend: Backend) -> str:
    """The concrete method (``logits``, ``logprobs`` or ``text``) for ``method`` on ``backend``.

    Raises
    ------
    ValueError
        If ``method`` is unknown or names probabilities the backend cannot give.
    """
    if method not in SCORE_METHODS:
        raise ValueError(f"method must be one of {SCORE_METHODS} or None (each backend's default), got {method!r}")
    caps = backend.capabilities
    if method == "auto":
        return "logits" if caps.logits else "logprobs" if caps.logprobs else "text"
    if method == "logits" and not caps.logits:
        raise ValueError(f"method='logits' needs a backend that reads next-token logits (local); {backend.name} cannot")
    if method == "logprobs" and not (caps.logprobs or caps.logits):
        raise ValueError(f"method='logprobs' needs a backend that returns top_logprobs; {backend.name} does not")
    return method


@dataclass(frozen=True)
class ScoreSettings:
    """What one scoring judge's requests carry (its identity, see :meth:`identity`)."""

    method: str
    concrete: str
    template: PromptTemplate
    low: int
    high: int
    temperature: float | None
    max_tokens: int | None

    @property
    def probabilities(self) -> bool:
        return self.concrete in ("logits", "logprobs")

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(str(v) for v in range(self.low, self.high + 1))

    def identity(self, judge: Judge, attribute: str | None) -> dict:
        """The scoring judge's identity (:mod:`peercore.judges`): everything that shapes its scores."""
        return judge_identity(judge, role="score", method=self.concrete, template=self.template.name,
                              template_version=self.template.version, criterion=attribute,
                              scale=f"{self.low}-{self.high}", temperature=self.temperature,
                              max_tokens=self.max_tokens)


class ScoreJob(Job):
    """Absolute scores of every candidate answer of a study's contexts by one or more judges.

    Parameters
    ----------
    study : the study; contexts (questions) and candidates (answers) are read from it.
    judges : backends, or :class:`~peercore.jobs.base.Judge` for named configurations.
    attribute : what is scored (``"coherence"``); stored as the scores' attribute and
        phrased by :func:`peercore.nlg.prompts.quality_of`; None for overall quality.
    contestants : only these candidates (default every model with answers).
    questions : only these contexts (default all), in the order given: items run context
        by context so that one context's calls share their prompt prefix.
    method : one of :data:`SCORE_METHODS`, or None for each backend's default
        (:func:`default_score_method`).
    template : an NLG score template name (default ``nlg_score``) or a template of kind
        ``score``.
    scale : ``(low, high)``; default the template's labels (1-9).
    temperature : for ``text`` replies (a judge's own temperature wins; default 0).
    max_tokens : reply budget of ``text`` replies (default 64).

    Raises
    ------
    ValueError
        On an unknown option value, a template that is not a score template, a scale a
        probability method cannot read (labels that are not single digits), or a
        method the backend cannot do (the values are quoted).
    """

    kind = "score"

    def __init__(self, study: str, judges: Sequence, *, attribute: str | None = None,
                 contestants: Sequence[str] | None = None, questions: Sequence[str] | None = None,
                 method: str | None = None, template: str | PromptTemplate | None = None,
                 scale: tuple[int, int] | None = None, temperature: float | None = None, max_tokens: int = 64) -> None:

        if method is not None and method not in SCORE_METHODS:
            raise ValueError(f"method must be one of {SCORE_METHODS} or None (each backend's default), got {method!r}")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise ValueError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
        if temperature is not None and not (isinstance(temperature, (int, float)) and 0 <= temperature <= 2):
            raise ValueError(f"temperature must be a number in [0, 2] or None, got {temperature!r}")
        if attribute is not None and (not isinstance(attribute, str) or not attribute.strip()):
            raise ValueError(f"attribute must be a non-empty name or None, got {attribute!r}")
        tpl = template if isinstance(template, PromptTemplate) else load_nlg_template(template or SCORE_TEMPLATE)
        if tpl.kind != "score":
            raise ValueError(f"template {tpl.name!r} is of kind {tpl.kind!r}; absolute scoring needs a template of kind "
                             "'score' (e.g. nlg_score)")
        if scale is None:
            scale = (int(float(tpl.labels[0])), int(float(tpl.labels[-1])))
        if not isinstance(scale, (tuple, list)) or len(scale) != 2:
            raise ValueError(f"scale must be (low, high), got {scale!r}")
        self.low, self.high = check_scale(*scale)
        self.study = study
        self.judges: list[Judge] = as_judges(judges, what="judges")
        self.attribute = attribute
        self.contestants = sorted(contestants) if contestants is not None else None
        self.questions = list(questions) if questions is not None else None
        self.method = method
        self.template = tpl
        self.temperature = None if temperature is None else float(temperature)
        self.max_tokens = max_tokens
        self.settings = {j.label: self._settings(j) for j in self.judges}
        self._by_name = {j.label: j for j in self.judges}
        self._names: dict[str, str] = {}
        self._texts: dict[str, str] = {}
        self._answers: dict[tuple[str, str], str] = {}

    def _settings(self, judge: Judge) -> ScoreSettings:
        method = self.method or default_score_method(judge.backend)
        try:
            concrete = resolve_score_method(method, judge.backend)
        except ValueError as exc:
            raise ValueError(f"judge {judge.label!r}: {exc}") from None
        if concrete != "text" and not (0 <= self.low and self.high <= 9):
            raise ValueError(f"judge {judge.label!r}: method {concrete!r} reads the probability of each score token, so "
                             f"every score must be one digit; the scale {self.low}-{self.high} is not (use 1-9: "
                             "Qwen's tokenizer splits '10' into two tokens), or use method 'text'")
        text = concrete == "text"
        temperature = (judge.temperature if judge.temperature is not None else
                       self.temperature if self.temperature is not None else 0.0) if text else None
        return ScoreSettings(method=method, concrete=concrete, template=self.template, low=self.low, high=self.high,
                             temperature=temperature, max_tokens=self.max_tokens if text else None)

    # ------------------------------------------------------------------ the job

    def config(self) -> dict:
        return {"judges": [j.describe() for j in self.judges], "attribute": self.attribute,
                "contestants": self.contestants, "questions": self.questions, "method": self.method,
                "template": self.template.name, "template_version": self.template.version,
                "scale": [self.low, self.high], "temperature": self.temperature, "max_output": self.max_tokens}

    def backends(self) -> list:
        return [j.backend for j in self.judges]

    def identities(self) -> dict[str, dict]:
        """label -> the scoring judge's identity (role ``score``)."""
        return {j.label: self.settings[j.label].identity(j, self.attribute) for j in self.judges}

    def judge_names(self) -> dict[str, str]:
        """label -> the judge name the scores are stored under (after :meth:`prepare`)."""
        return dict(self._names)

    def prepare(self, store: "Store") -> list[str]:
        self._texts = load_questions(store, self.study, questions=self.questions)
        self._answers = load_answers(store, self.study)
        models = sorted({m for (_, m) in self._answers})
        if self.contestants is not None:
            unknown = [m for m in self.contestants if m not in models]
            if unknown:
                raise ValueError(f"contestants {unknown} have no answers in study {self.study!r} "
                                 f"(models with answers: {models})")
            models = list(self.contestants)
        items = [item_key(question, model, judge.label) for question in self._texts for judge in self.judges
                 for model in models if (question, model) in self._answers]
        if not items:
            raise ValueError(f"study {self.study!r} has no answer to score in the chosen contexts; import answers first")
        self._names = resolve_judge_names(store, self.study, self.judges, self.identities(), register=False)
        return items

    def on_start(self, store: "Store") -> None:
        self._names = resolve_judge_names(store, self.study, self.judges, self.identities(), register=True)

    def request(self, judge: Judge, question: str, answer: str) -> ChatRequest:
        """The request scoring ``answer`` to ``question`` by ``judge``."""

        settings = self.settings[judge.label]
        messages = settings.template.render(question=question, answer=answer, quality=quality_of(self.attribute),
                                            low=settings.low, high=settings.high)
        prefill = settings.template.prefill if judge.backend.capabilities.prefill else None
        if settings.probabilities:
            return ChatRequest(messages=messages, temperature=0.0, max_tokens=1, top_logprobs=_TOP_LOGPROBS,
                               prefill=prefill)
        return ChatRequest(messages=messages, temperature=float(settings.temperature or 0.0),
                           max_tokens=settings.max_tokens or self.max_tokens, prefill=prefill)

    def plan(self, item: str) -> list[PlannedCall]:
        question, model, label = parse_item_key(item)
        judge = self._by_name[label]
        request = self.request(judge, self._texts[question], self._answers[(question, model)])
        return [PlannedCall(judge.backend, request, typical_output_tokens=1 if request.top_logprobs else 16)]

    async def run_item(self, item: str, ctx: ItemContext) -> ItemOutcome:

        question, model, label = parse_item_key(item)
        judge = self._by_name[label]
        settings = self.settings[label]
        request = self.request(judge, self._texts[question], self._answers[(question, model)])
        completion = await ctx.complete(judge.backend, request)
        reply = (request.prefill or "") + completion.text
        parsed = parse_score(reply, low=settings.low, high=settings.high)
        expected, distribution, problem = None, None, parsed.problem
        if settings.probabilities:
            found = expected_score(completion.top_logprobs, settings.labels)
            if found is not None:
                expected, distribution, _ = found
                problem = None
            else:
                problem = f"no score token ({', '.join(settings.labels)}) among the next-token probabilities"
        valid = expected is not None if settings.probabilities else parsed.valid
        row = {"question_id": question, "model": model, "judge": self._names.get(label, label),
               "attribute": self.attribute or "", "vote": 0, "score": parsed.score, "expected": expected,
               "distribution": distribution, "valid": int(valid),
               "rationale": completion.text.strip() or None if valid and not settings.probabilities else None,
               "raw": None if valid else reply}
        frame = pd.DataFrame([row])
        return ItemOutcome(write=lambda store, run_id: store.scores.add_judge_scores(self.study, frame, run_id=run_id),
                           status="done" if valid else "invalid", detail=None if valid else problem)
