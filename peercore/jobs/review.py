"""Peer review: judges compare ordered pairs of answers (PRD; Liusie et al. comparative assessment).

For each question, the contestants that answered it are paired: all N(N-1) ordered
pairs (PRD: every reviewer reviews every ordered pair), or K pairs chosen by a
selection strategy of :mod:`peercore.ranking.selection` (Liusie et al. 2024: random,
no-repeat, symmetric, greedy PoE information gain) under a call budget. Every reviewer
judges the same pairs, so judges can be compared with each other.

Each comparison is made by :func:`peercore.reviewers.judging.compare` through the
runner's cached call: a verdict line (``method="verdict"``, read by
:func:`peercore.prompts.parse_verdict`), the probabilities of the two labels as the next
token after a prefill (``"logprobs"`` / ``"logits"``: p = P(1) / (P(1) + P(2)), Liusie
et al. eq. 3), or K samples (``"samples"``: p = share of samples preferring the first
answer, ties half). Unreadable outputs are stored as invalid
judgments (``valid=0``, raw text kept), never guessed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from peercore.jobs import _judging
from peercore.jobs.base import Judge, as_judges, item_key, load_answers, load_questions, parse_item_key, seeded_rng
from peercore.prompts import load_template
from peercore.ranking import selection
from peercore.reviewers import judging
from peercore.runner import ItemContext, ItemOutcome, Job, PlannedCall

if TYPE_CHECKING:  # pragma: no cover
    from peercore.store import Store

__all__ = ["ReviewJob", "PairedJob", "STRATEGIES", "select_pairs", "judgment_row", "register_judges"]

STRATEGIES = ("all", "random", "no-repeat", "symmetric", "greedy")


def select_pairs(n: int, *, strategy: str = "all", k: int | None = None, rng: np.random.Generator) -> np.ndarray:
    """Ordered pairs ``(i, j)`` of N candidates to compare (candidate i shown first).

    Parameters
    ----------
    n : number of candidates.
    strategy : ``"all"`` (the N(N-1) ordered pairs, PRD), ``"random"`` (with replacement;
        repeats are dropped, so fewer than K may remain), ``"no-repeat"``, ``"symmetric"``
        (K // 2 unordered pairs in both orders), ``"greedy"`` (PoE information gain,
        random orientation) - Liusie et al. 2024.
    k : comparisons wanted (required unless ``strategy="all"``); capped at what the
        strategy can give for N candidates.
    rng : randomness.

    Raises
    ------
    ValueError
        If the strategy is unknown or ``k`` is missing/negative (the value is quoted).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if strategy == "all":
        return np.array([(i, j) for i in range(n) for j in range(n) if i != j], dtype=np.intp).reshape(-1, 2)
    if k is None or isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise ValueError(f"k (comparisons per question) must be an integer >= 0 for strategy {strategy!r}, got {k!r}")
    if n < 2:
        return np.zeros((0, 2), dtype=np.intp)
    if strategy == "random":
        pairs = selection.select_random(n, int(k), rng=rng)
        _, first = np.unique(pairs, axis=0, return_index=True)
        return pairs[np.sort(first)]
    if strategy == "no-repeat":
        return selection.select_no_repeat(n, min(int(k), n * (n - 1)), rng=rng)
    if strategy == "symmetric":
        return selection.select_symmetric(n, min(int(k), n * (n - 1)), rng=rng)
    return selection.select_greedy(n, min(int(k), n * (n - 1) // 2), rng=rng, order="random")


class PairedJob(Job):
    """Base of jobs over pairs of answers: loads questions and answers, selects the pairs.

    Subclasses set :attr:`ordered` (False: unordered pairs, the job decides the order
    shown) and implement :meth:`items_for_pair` and :meth:`calls_per_pair`.
    """

    ordered = True

    def _init_pairs(self, study: str, *, contestants, questions, strategy, comparisons, budget, seed) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
        for name, value in (("comparisons", comparisons), ("budget", budget)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be an integer >= 1 or None, got {value!r}")
        if strategy == "all" and comparisons is not None:
            raise ValueError(f"comparisons={comparisons} needs a selection strategy other than 'all'")
        if strategy != "all" and comparisons is None and budget is None:
            raise ValueError(f"strategy {strategy!r} needs comparisons (K per question) or a budget (total calls)")
        self.study = study
        self.contestants = sorted(contestants) if contestants is not None else None
        self.questions = list(questions) if questions is not None else None
        self.strategy = strategy
        self.comparisons = comparisons
        self.budget = budget
        self.seed = int(seed)
        self._texts: dict[str, str] = {}
        self._categories: dict[str, str] = {}
        self._answers: dict[tuple[str, str], str] = {}
        self.models: list[str] = []

    def _pair_config(self) -> dict:
        return {"contestants": self.contestants, "questions": self.questions, "strategy": self.strategy,
                "comparisons": self.comparisons, "budget": self.budget, "seed": self.seed}

    def calls_per_pair(self) -> int:
        """Most calls one selected pair can cost (for budgets)."""
        raise NotImplementedError

    def items_for_pair(self, question: str, model_a: str, model_b: str) -> list[str]:
        raise NotImplementedError

    def prepare(self, store: "Store") -> list[str]:
        self._texts = load_questions(store, self.study, questions=self.questions)
        frame = store.questions(self.study)
        self._categories = dict(zip(frame["question_id"].astype(str), frame["category"].astype(str)))
        self._answers = load_answers(store, self.study)
        models = sorted({m for (_, m) in self._answers})
        if self.contestants is not None:
            unknown = [m for m in self.contestants if m not in models]
            if unknown:
                raise ValueError(f"contestants {unknown} have no answers in study {self.study!r} "
                                 f"(models with answers: {models}); run `peercore answer` first")
            models = list(self.contestants)
        self.models = models
        per_question = {q: [m for m in models if (q, m) in self._answers] for q in self._texts}
        per_question = {q: ms for q, ms in per_question.items() if len(ms) >= 2}
        if not per_question:
            raise ValueError(f"study {self.study!r} has no question with answers from two contestants; "
                             "run `peercore answer` first")
        k = self._k(len(per_question))
        items = []
        for question, candidates in per_question.items():
            rng = seeded_rng(self.seed, "pairs", question)
            if self.ordered:
                pairs = select_pairs(len(candidates), strategy=self.strategy, k=k, rng=rng)
            else:
                pairs = _unordered(select_pairs(len(candidates), strategy=self.strategy, k=k, rng=rng))
            for i, j in pairs:
                items.extend(self.items_for_pair(question, candidates[i], candidates[j]))
        return items

    def _k(self, n_questions: int) -> int | None:
        if self.strategy == "all":
            return None
        if self.comparisons is not None:
            return self.comparisons
        per = n_questions * self.calls_per_pair()
        k = self.budget // per
        if k < 1:
            raise ValueError(f"budget={self.budget} calls is too small for one comparison per question "
                             f"({n_questions} questions x up to {self.calls_per_pair()} calls per comparison "
                             f"= {per} calls)")
        return k

    def _check_budget(self, n_pairs_calls: int) -> None:
        if self.budget is not None and n_pairs_calls > self.budget:
            raise ValueError(f"budget={self.budget} calls is less than the up to {n_pairs_calls} this job needs")


def _unordered(pairs: np.ndarray) -> np.ndarray:
    """Each unordered pair once (lower index first), in first-seen order."""
    seen, out = set(), []
    for i, j in pairs:
        key = (min(i, j), max(i, j))
        if key not in seen:
            seen.add(key)
            out.append(key)
    return np.array(out, dtype=np.intp).reshape(-1, 2)


class ReviewJob(PairedJob):
    """Pairwise reviews of a study's answers by one or more LLM judges.

    Items are (question, model shown first, model shown second, judge); each item is
    one comparison by :func:`peercore.reviewers.judging.compare` (one call, K calls
    with ``method="samples"``) and one stored judgment.

    Parameters
    ----------
    study : the study; questions and answers are read from the store.
    reviewers : backends, or :class:`~peercore.jobs.base.Judge` for named configurations.
    contestants : models whose answers are compared (default: every model with answers).
    questions : only these question ids (default all).
    strategy : comparison selection, see :func:`select_pairs` (default ``"all"``).
    comparisons : K, comparisons per question (per reviewer) for the non-``all`` strategies.
    budget : total calls allowed; sets K = budget // (questions x reviewers x samples)
        when ``comparisons`` is not given, and is checked when it is.
    seed : seeds the pair selection (per question, stable).
    method : ``"verdict"`` (default: the reply's verdict line, PRD), ``"logprobs"``,
        ``"logits"`` (label probabilities, Liusie et al. eq. 3), ``"samples"`` (share of
        K sampled verdicts) or ``"auto"`` (the best the backend can do).
    template : a :mod:`peercore.prompts` template; default ``prd_review`` (PRD Table 8,
        1/2/3=tie) for ``verdict``, the judging module's defaults otherwise
        (``liusie_classifier_numeric`` for probabilities, ``liusie_generative`` for samples).
    criterion : e.g. ``"helpfulness"`` (stored with the judgments; fills the rubric of
        templates that have one), or None.
    samples : K for ``method="samples"`` (>= 2).
    temperature : sampling temperature for ``samples`` (default 1.0); a judge's own
        temperature wins.
    max_tokens : reply budget for generated verdicts (default 512).

    Raises
    ------
    ValueError
        On an unknown option value or an inconsistent budget (the values are quoted), or
        a reviewer with a ``seed`` (reviews do not take per-judge seeds).
    """

    kind = "review"

    def __init__(self, study: str, reviewers: Sequence, *, contestants: Sequence[str] | None = None,
                 questions: Sequence[str] | None = None, strategy: str = "all", comparisons: int | None = None,
                 budget: int | None = None, seed: int = 0, method: str = "verdict", template: str | None = None,
                 criterion: str | None = None, samples: int = 1, temperature: float = 1.0,
                 max_tokens: int = 512) -> None:
        tpl = _judging.comparison_template(template, method)
        if not isinstance(samples, int) or samples < 1:
            raise ValueError(f"samples must be an integer >= 1, got {samples!r}")
        if method == "samples" and samples < 2:
            raise ValueError(f"method='samples' needs samples >= 2, got samples={samples}")
        if method not in ("samples", "auto") and samples != 1:
            raise ValueError(f"samples={samples} needs method='samples' or 'auto' (got method={method!r})")
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
        self._init_pairs(study, contestants=contestants, questions=questions, strategy=strategy,
                         comparisons=comparisons, budget=budget, seed=seed)
        self.reviewers: list[Judge] = as_judges(reviewers, what="reviewers")
        seeded = [r.label for r in self.reviewers if r.seed is not None]
        if seeded:  # samples are seeded by their index; a fixed seed would make all K identical
            raise ValueError(f"reviewers {seeded} have a seed; a review does not take per-judge seeds "
                             "(K samples are seeded by their sample index)")
        for reviewer in self.reviewers:  # a method the backend cannot do fails now, not mid-run
            judging.resolve_method(method, reviewer.backend.capabilities, k=samples)
        self.method = method
        self.template = tpl.name if tpl is not None else None
        self._fields = _judging.criterion_fields(tpl, criterion) if tpl is not None else {}
        self.criterion = criterion
        self.samples = samples
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        self._by_name = {r.label: r for r in self.reviewers}

    def config(self) -> dict:
        return {
            "reviewers": [r.describe() for r in self.reviewers], **self._pair_config(),
            "method": self.method, "template": self.template, "criterion": self.criterion,
            "samples": self.samples, "temperature": self.temperature, "max_output": self.max_tokens,
        }

    def backends(self) -> list:
        return [r.backend for r in self.reviewers]

    # ------------------------------------------------------------------ planning

    def calls_per_pair(self) -> int:
        return len(self.reviewers) * self.samples

    def items_for_pair(self, question: str, model_a: str, model_b: str) -> list[str]:
        return [item_key(question, model_a, model_b, r.label) for r in self.reviewers]

    def prepare(self, store: "Store") -> list[str]:
        items = super().prepare(store)
        self._check_budget(len(items) * self.samples)
        return items

    def on_start(self, store: "Store") -> None:
        register_judges(store, self.study, self.reviewers, self.models,
                        settings={"template": self.template, "method": self.method})

    def _texts_of(self, item: str):
        question, model_a, model_b, name = parse_item_key(item)
        return (self._by_name[name], self._texts[question], self._answers[(question, model_a)],
                self._answers[(question, model_b)])

    def _temperature(self, reviewer: Judge) -> float:
        return self.temperature if reviewer.temperature is None else reviewer.temperature

    def plan(self, item: str) -> list[PlannedCall]:
        reviewer, question, answer_1, answer_2 = self._texts_of(item)
        requests = _judging.comparison_requests(
            reviewer.backend, question, answer_1, answer_2, template=self.template, method=self.method,
            k=self.samples, temperature=self._temperature(reviewer), max_tokens=self.max_tokens, fields=self._fields,
        )
        return [PlannedCall(reviewer.backend, r, optional=optional,
                            typical_output_tokens=1 if r.top_logprobs else min(self.max_tokens, 200))
                for r, optional in requests]

    # ----------------------------------------------------------------- execution

    async def run_item(self, item: str, ctx: ItemContext) -> ItemOutcome:
        question_id, model_a, model_b, name = parse_item_key(item)
        reviewer, question, answer_1, answer_2 = self._texts_of(item)
        backend = reviewer.backend
        comparison = await judging.compare(
            lambda request: ctx.complete(backend, request), backend, question, answer_1, answer_2,
            template=self.template, method=self.method, k=self.samples, temperature=self._temperature(reviewer),
            max_tokens=self.max_tokens, fields=self._fields,
        )
        scheme = load_template(self.template).scheme if self.template else "prd"
        verdict = _judging.verdict_of_comparison(comparison, scheme=scheme)
        row = judgment_row(question_id, model_a, model_b, name, verdict, criterion=self.criterion)
        return ItemOutcome(status="done" if verdict.valid else "invalid",
                           detail=None if verdict.valid else "no verdict in the output", judgments=(row,))


def register_judges(store: "Store", study: str, judges: Sequence[Judge], contestants: Sequence[str], *,
                    settings: dict | None = None) -> None:
    """Register LLM judges in the study; a judge named like a contestant gets it as model alias."""
    store.add_judges(study, [
        {"name": j.label, "kind": "llm", "model_alias": j.label if j.label in contestants else None,
         "settings": {**j.describe(), **(settings or {})}}
        for j in judges
    ])


def judgment_row(question: str, model_a: str, model_b: str, judge: str, verdict: "_judging.Verdict", *,
                 criterion: str | None = None, round: int | None = None, vote: int = 0) -> dict:
    """A canonical judgment row (+ ``valid``, ``raw``, ``vote``) for a verdict; invalid ones keep the raw text."""
    p_a = verdict.p_a
    if p_a is not None and not (0.0 <= p_a <= 1.0 and math.isfinite(p_a)):
        p_a = None
    row = {
        "question_id": question, "model_a": model_a, "model_b": model_b, "judge": judge,
        "winner": verdict.winner, "p_a": p_a, "criterion": criterion, "round": round,
        "rationale": verdict.rationale or None, "valid": int(verdict.valid),
        "raw": None if verdict.valid else verdict.raw, "vote": int(vote),
    }
    return row
