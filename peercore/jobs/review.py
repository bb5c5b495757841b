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

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from peercore.jobs import _judging
from peercore.jobs.budget import Plan, fit_budget, limit_questions
from peercore.jobs.base import (
    Judge,
    as_judges,
    item_key,
    judge_identity,
    load_answers,
    load_questions,
    parse_item_key,
    resolve_judge_names,
    seeded_rng,
)
from peercore.prompts.templates import PromptTemplate
from peercore.ranking import selection
from peercore.reviewers import judging
from peercore.runner import ItemContext, ItemOutcome, Job, PlannedCall

if TYPE_CHECKING:  # pragma: no cover
    from peercore.store import Store

__all__ = ["ReviewJob", "ReviewSettings", "PairedJob", "STRATEGIES", "ONE_ORDER_STRATEGIES", "select_pairs", "judgment_row", "register_judges"]

STRATEGIES = ("all", "random", "no-repeat", "symmetric", "greedy")


# Most comparisons each strategy can make among N candidates (one order per pair for
# no-repeat and greedy; both orders for random and symmetric).
_MAX_PAIRS = {"random": lambda n: n * (n - 1), "no-repeat": lambda n: n * (n - 1) // 2,
              "symmetric": lambda n: 2 * (n * (n - 1) // 2), "greedy": lambda n: n * (n - 1) // 2}
# Strategies that show each pair in one order only: position bias cannot be measured.
ONE_ORDER_STRATEGIES = ("no-repeat", "greedy")


def select_pairs(n: int, *, strategy: str = "all", k: int | None = None, rng: np.random.Generator,
                 cap: bool = False) -> np.ndarray:
    """Ordered pairs ``(i, j)`` of N candidates to compare (candidate i shown first).

    Parameters
    ----------
    n : number of candidates.
    strategy : ``"all"`` (the N(N-1) ordered pairs, PRD; both presentation orders),
        ``"random"`` (K distinct ordered pairs drawn without replacement),
        ``"no-repeat"`` (K unordered pairs, each in one random order: "if (x_i, x_j) is
        selected then (x_j, x_i) will not be"), ``"symmetric"`` (K // 2 unordered pairs
        in both orders), ``"greedy"`` (PoE information gain, random orientation) -
        Liusie et al. 2024, section 3.4. No-repeat and greedy show each pair in one
        order, so they cannot measure position bias.
    k : comparisons wanted (required unless ``strategy="all"``).
    rng : randomness.
    cap : when True, a ``k`` larger than the strategy can make for N candidates is cut
        to that maximum (a budget is an upper bound); when False it is refused.

    Raises
    ------
    ValueError
        If the strategy is unknown, ``k`` is missing/negative, or (without ``cap``)
        larger than the strategy can make: N(N-1) for random and symmetric, N(N-1)/2 for
        no-repeat and greedy (the value and the maximum are quoted).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if strategy == "all":
        return np.array([(i, j) for i in range(n) for j in range(n) if i != j], dtype=np.intp).reshape(-1, 2)
    if k is None or isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise ValueError(f"k (comparisons per question) must be an integer >= 0 for strategy {strategy!r}, got {k!r}")
    if n < 2:
        return np.zeros((0, 2), dtype=np.intp)
    limit = _MAX_PAIRS[strategy](n)
    if k > limit:
        if not cap:
            raise ValueError(f"comparisons K={k} per question is more than strategy {strategy!r} can make for {n} "
                             f"candidates ({limit}); give at most {limit}")
        k = limit
    k = int(k)
    if strategy == "random":
        return selection.select_random(n, k, rng=rng)
    if strategy == "no-repeat":
        return selection.select_no_repeat(n, k, rng=rng)
    if strategy == "symmetric":
        return selection.select_symmetric(n, k, rng=rng)
    return selection.select_greedy(n, k, rng=rng, order="random")


class PairedJob(Job):
    """Base of jobs over pairs of answers: loads questions and answers, selects the pairs.

    Subclasses set :attr:`ordered` (False: unordered pairs, the job decides the order
    shown) and implement :meth:`items_for_pair` and :meth:`calls_per_pair`.
    """

    ordered = True

    def _init_pairs(self, study: str, *, contestants, questions, strategy, comparisons, budget, seed,
                    max_questions=None) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
        for name, value in (("comparisons", comparisons), ("budget", budget), ("max_questions", max_questions)):
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
        self.max_questions = max_questions
        self.seed = int(seed)
        self.plan_result: Plan | None = None
        self._texts: dict[str, str] = {}
        self._categories: dict[str, str] = {}
        self._answers: dict[tuple[str, str], str] = {}
        self.models: list[str] = []

    def _pair_config(self) -> dict:
        config = {"contestants": self.contestants, "questions": self.questions, "strategy": self.strategy,
                  "comparisons": self.comparisons, "budget": self.budget, "seed": self.seed}
        if self.max_questions is not None:  # only when set: jobs without a limit keep the run ids they had
            config["max_questions"] = self.max_questions
        return config

    def item_calls(self, item: str) -> int:
        """Most calls one item can cost (for budgets)."""
        raise NotImplementedError

    def plan_note(self) -> str:
        """What the question limit and the budget left out, after :meth:`prepare` ('' when nothing)."""
        return "" if self.plan_result is None else self.plan_result.note()

    def calls_per_pair(self) -> int:
        """Most calls one selected pair can cost (for budgets)."""
        raise NotImplementedError

    def items_for_pair(self, question: str, model_a: str, model_b: str) -> list[str]:
        raise NotImplementedError

    def prepare(self, store: "Store") -> list[str]:
        self._texts = load_questions(store, self.study, questions=self.questions)
        frame = store.questions.table(self.study)
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
        n_questions = len(per_question)
        limited = limit_questions(list(per_question), self.max_questions, seed=self.seed)
        k = self._k(len(limited))
        groups: dict[str, list[list[str]]] = {}
        selected: dict[str, list[str]] = {}  # each question's items in the order they run
        for question in limited:
            candidates = per_question[question]
            rng = seeded_rng(self.seed, "pairs", question)
            cap = self.comparisons is None  # K from a budget is an upper bound; a K asked for is checked
            try:
                pairs = select_pairs(len(candidates), strategy=self.strategy, k=k, rng=rng, cap=cap)
            except ValueError as exc:
                raise ValueError(f"question {question!r}: {exc}") from None
            if not self.ordered:
                pairs = _unordered(pairs)
            by_pair: dict[tuple[int, int], list[str]] = {}  # both orders of a pair stay together
            selected[question] = []
            for i, j in pairs:
                pair_items = self.items_for_pair(question, candidates[i], candidates[j])
                by_pair.setdefault((min(i, j), max(i, j)), []).extend(pair_items)
                selected[question].extend(pair_items)
            groups[question] = list(by_pair.values())
        costs = {q: [sum(self.item_calls(item) for item in group) for group in gs] for q, gs in groups.items()}
        self.plan_result = fit_budget(costs, self.budget, seed=self.seed, questions=n_questions,
                                      max_questions=self.max_questions)
        items = []  # the kept groups' items, in the order the pairs were selected
        for question, n in self.plan_result.kept.items():
            kept = {item for group in groups[question][:n] for item in group}
            items.extend(item for item in selected[question] if item in kept)
        return items

    def _k(self, n_questions: int) -> int | None:
        if self.strategy == "all":
            return None
        if self.comparisons is not None:
            return self.comparisons
        # K from the budget; when even one comparison per question is too much, K = 1 and
        # the budget keeps as many questions as it pays for (fit_budget).
        return max(1, self.budget // (n_questions * self.calls_per_pair()))


def _unordered(pairs: np.ndarray) -> np.ndarray:
    """Each unordered pair once (lower index first), in first-seen order."""
    seen, out = set(), []
    for i, j in pairs:
        key = (min(i, j), max(i, j))
        if key not in seen:
            seen.add(key)
            out.append(key)
    return np.array(out, dtype=np.intp).reshape(-1, 2)


@dataclass(frozen=True)
class ReviewSettings:
    """How one reviewer judges in a review job: what its requests carry.

    Attributes
    ----------
    method : the method asked for (``verdict``, ``logprobs``, ``logits``, ``samples``,
        ``auto``), after the per-backend default (:func:`peercore.reviewers.judging.default_method`).
    concrete : what the backend does with it (:func:`peercore.reviewers.judging.resolve_method`).
    template : the prompt template.
    temperature : temperature of generated verdicts (``verdict``: the judge's own, else 0;
        ``samples``: the judge's own, else the job's), None when nothing is generated.
    samples : K (``samples``), else 1.
    max_tokens : reply budget of generated verdicts, None when nothing is generated.
    fields : the rubric fields of templates that have them.
    """

    method: str
    concrete: str
    template: PromptTemplate
    temperature: float | None
    samples: int
    max_tokens: int | None
    fields: dict

    @property
    def generates(self) -> bool:
        return self.max_tokens is not None

    def identity(self, judge: Judge, criterion: str | None) -> dict:
        """The reviewer's identity (:mod:`peercore.judges`): everything that shapes its verdicts."""
        fields = {"role": "review", "method": self.concrete, "template": self.template.name,
                  "template_version": self.template.version, "criterion": criterion,
                  "temperature": self.temperature, "samples": self.samples if self.concrete == "samples" else None,
                  "max_tokens": self.max_tokens}
        if self.method == "auto" and self.concrete == "logprobs":
            fields["fallback"] = "verdict"
        if "rubric" in self.fields:
            fields["rubric_version"] = hashlib.sha256(str(self.fields["rubric"]).encode("utf-8")).hexdigest()[:8]
        return judge_identity(judge, **fields)


class ReviewJob(PairedJob):
    """Pairwise reviews of a study's answers by one or more LLM judges.

    Items are (question, model shown first, model shown second, judge); each item is
    one comparison by :func:`peercore.reviewers.judging.compare` (one call, K calls
    with ``method="samples"``) and one stored judgment.

    A reviewer's verdicts are stored under the name its whole configuration resolves to
    in the study (:meth:`peercore.store.Store.judges.resolve`): ``backend:model`` the
    first time, a variant such as ``openai:gpt-4o~logprobs`` when another
    configuration of the same model already holds that name, and a refusal before any
    call when the user forced a name (``NAME=spec``) that another configuration holds.

    Parameters
    ----------
    study : the study; questions and answers are read from the store.
    reviewers : backends, or :class:`~peercore.jobs.base.Judge` for named configurations.
    contestants : models whose answers are compared (default: every model with answers).
    questions : only these question ids (default all).
    strategy : comparison selection, see :func:`select_pairs` (default ``"all"``: every
        ordered pair, both presentation orders).
    comparisons : K, comparisons per question (per reviewer) for the non-``all`` strategies.
    budget : total calls allowed (at most). Sets K = budget // (questions x reviewers x
        samples) when ``comparisons`` is not given (at least 1); when the comparisons cost
        more, whole questions are kept while they fit, in a seeded random order
        (:func:`peercore.jobs.budget.fit_budget`), and :meth:`plan_note` says what was
        left out. Only a budget below one comparison is refused.
    seed : seeds the pair selection (per question, stable) and the questions a limit keeps.
    max_questions : judge at most this many questions, chosen at random (seeded).
    method : ``"verdict"`` (the reply's verdict line, PRD), ``"logprobs"``, ``"logits"``
        (label probabilities, Liusie et al. eq. 3), ``"samples"`` (share of K sampled
        verdicts), ``"auto"`` (the best the backend can do), or None (default): each
        reviewer's backend default, :func:`peercore.reviewers.judging.default_method`
        (the classifier for local models and log-probability servers, the verdict
        prompt for the OpenAI and Anthropic APIs).
    template : a :mod:`peercore.prompts` template; default per method: ``prd_review``
        (PRD Table 8, 1/2/3=tie) for ``verdict``, ``liusie_classifier_numeric`` for
        probabilities, ``liusie_generative`` for samples.
    criterion : e.g. ``"helpfulness"`` (stored with the judgments; fills the ``{criterion}``
        and ``{rubric}`` of the template, which must have one of them), or None.
    samples : K for ``method="samples"`` (>= 2).
    temperature : sampling temperature for ``samples`` (default 1.0); a judge's own
        temperature wins, and is also sent with a single generated verdict.
    max_tokens : reply budget for generated verdicts (default 512).
    pairs : only these ordered comparisons, ``[(question_id, model_a, model_b), ...]``
        (``model_a`` shown first), in this order, instead of a selection: e.g. what a
        cascade stage must judge (``peercore escalate``). Keyword-only; cannot be combined
        with ``contestants``, ``questions``, a strategy other than ``"all"``,
        ``comparisons``, ``budget`` or ``max_questions``. Every pair must name a question of
        the study and two models that answered it (checked by :meth:`prepare`, before any
        call).

    Raises
    ------
    ValueError
        On an unknown option value, a method the backend cannot do, or an inconsistent
        budget (the values are quoted), or a reviewer with a ``seed`` (reviews do not
        take per-judge seeds), or a criterion with a template that has no place for it
        (:attr:`criterion_fields`): all before any call.
    """

    kind = "review"
    # The template fields that carry the criterion to the judge: a template with none of them
    # cannot run one (the prompt would be the one without it).
    criterion_fields: tuple[str, ...] = ("criterion", "rubric")

    def __init__(self, study: str, reviewers: Sequence, *, contestants: Sequence[str] | None = None,
                 questions: Sequence[str] | None = None, strategy: str = "all", comparisons: int | None = None,
                 budget: int | None = None, seed: int = 0, max_questions: int | None = None,
                 method: str | None = None, template: str | None = None,
                 criterion: str | None = None, samples: int = 1, temperature: float | None = None,
                 max_tokens: int = 512, pairs: Sequence[Sequence[str]] | None = None) -> None:
        if method is not None and method not in judging.METHODS:
            raise ValueError(f"method must be one of {judging.METHODS} or None (each backend's default), got {method!r}")
        if not isinstance(samples, int) or samples < 1:
            raise ValueError(f"samples must be an integer >= 1, got {samples!r}")
        if method == "samples" and samples < 2:
            raise ValueError(f"method='samples' needs samples >= 2, got samples={samples}")
        if method not in ("samples", "auto", None) and samples != 1:
            raise ValueError(f"samples={samples} needs method='samples' or 'auto' (got method={method!r})")
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
        if temperature is not None and not (isinstance(temperature, (int, float)) and 0 <= temperature <= 2):
            raise ValueError(f"temperature must be a number in [0, 2] or None, got {temperature!r}")
        self._init_pairs(study, contestants=contestants, questions=questions, strategy=strategy,
                         comparisons=comparisons, budget=budget, seed=seed, max_questions=max_questions)
        self.pairs = _checked_pairs(pairs, contestants=contestants, questions=questions, strategy=strategy,
                                    comparisons=comparisons, budget=budget, max_questions=max_questions)
        self.reviewers: list[Judge] = as_judges(reviewers, what="reviewers")
        seeded = [r.label for r in self.reviewers if r.seed is not None]
        if seeded:  # samples are seeded by their index; a fixed seed would make all K identical
            raise ValueError(f"reviewers {seeded} have a seed; a review does not take per-judge seeds "
                             "(K samples are seeded by their sample index)")
        self.method = method
        self.template = template
        self.criterion = criterion
        self.samples = samples
        self.temperature = None if temperature is None else float(temperature)
        self.max_tokens = max_tokens
        # Each reviewer's settings, now: a method the backend cannot do fails before any work.
        self.settings = {r.label: self._settings(r) for r in self.reviewers}
        self._by_name = {r.label: r for r in self.reviewers}
        self._item_calls: dict[str, int] = {}
        self._names: dict[str, str] = {}

    def _settings(self, reviewer: Judge) -> ReviewSettings:
        backend = reviewer.backend
        method = self.method or judging.default_method(backend, template=self.template)
        concrete = judging.resolve_method(method, backend.capabilities, k=self.samples)
        try:
            tpl = _judging.comparison_template(self.template, concrete if method != "auto" else concrete)
        except ValueError as exc:
            raise ValueError(f"reviewer {reviewer.label!r}: {exc}") from None
        if concrete in ("logprobs", "logits") and tpl.kind != "classifier":
            raise ValueError(f"reviewer {reviewer.label!r}: method {concrete!r} reads label probabilities and needs a "
                             f"classifier template (e.g. liusie_classifier_numeric), got {tpl.name!r} of kind {tpl.kind!r}")
        if concrete in ("verdict", "samples") and tpl.kind == "classifier":
            raise ValueError(f"reviewer {reviewer.label!r}: template {tpl.name!r} is a classifier (it asks for one "
                             f"label token); method {concrete!r} needs a review or generative template")
        if self.criterion and not set(self.criterion_fields) & set(tpl.fields):
            slots = " or ".join("{" + f + "}" for f in self.criterion_fields)
            raise ValueError(f"criterion {self.criterion!r}: template {tpl.name!r} has no place for a criterion (no "
                             f"{slots}), so the judge would never read it: it would answer the prompts it answers "
                             "without one, under another judge name. Drop the criterion, or choose a "
                             "template that shows it (e.g. scaleeval_initial or scaleeval_compact_initial); nothing "
                             "was run")
        fallback = method == "auto" and concrete == "logprobs"
        if concrete == "samples":
            temperature = reviewer.temperature if reviewer.temperature is not None else (
                1.0 if self.temperature is None else self.temperature)
        elif concrete == "verdict":
            temperature = reviewer.temperature if reviewer.temperature is not None else 0.0
        else:
            temperature = 0.0 if fallback else None
        generates = concrete in ("verdict", "samples") or fallback
        return ReviewSettings(method=method, concrete=concrete, template=tpl, temperature=temperature,
                              samples=self.samples if concrete == "samples" else 1,
                              max_tokens=self.max_tokens if generates else None,
                              fields=_judging.criterion_fields(tpl, self.criterion))

    def config(self) -> dict:
        config = {
            "reviewers": [r.describe() for r in self.reviewers], **self._pair_config(),
            "method": self.method, "template": self.template, "criterion": self.criterion,
            "samples": self.samples, "temperature": self.temperature, "max_output": self.max_tokens,
        }
        if self.pairs is not None:  # only when set: reviews without a pair list keep the run ids they had
            config["pairs"] = [list(pair) for pair in self.pairs]
        return config

    def backends(self) -> list:
        return [r.backend for r in self.reviewers]

    def identities(self) -> dict[str, dict]:
        """label -> the reviewer's identity (see :class:`ReviewSettings`)."""
        return {r.label: self.settings[r.label].identity(r, self.criterion) for r in self.reviewers}

    def judge_names(self) -> dict[str, str]:
        """label -> the judge name the verdicts are stored under (after :meth:`prepare`)."""
        return dict(self._names)

    # ------------------------------------------------------------------ planning

    def calls_per_pair(self) -> int:
        return sum(self.settings[r.label].samples for r in self.reviewers)

    def item_calls(self, item: str) -> int:
        """Every call an item may make (a fallback call included), as the estimate counts them."""
        label = parse_item_key(item)[3]
        calls = self._item_calls.get(label)
        if calls is None:
            calls = self._item_calls[label] = len(self.plan(item))
        return calls

    def items_for_pair(self, question: str, model_a: str, model_b: str) -> list[str]:
        return [item_key(question, model_a, model_b, r.label) for r in self.reviewers]

    def prepare(self, store: "Store") -> list[str]:
        items = super().prepare(store) if self.pairs is None else self._prepare_listed(store)
        self._names = resolve_judge_names(store, self.study, self.reviewers, self.identities(),
                                          contestants=self.models, register=False)
        return items

    def _prepare_listed(self, store: "Store") -> list[str]:
        """The items of the listed pairs (``pairs=``), each checked against the study's questions and answers."""
        self._texts = load_questions(store, self.study)
        frame = store.questions.table(self.study)
        self._categories = dict(zip(frame["question_id"].astype(str), frame["category"].astype(str)))
        self._answers = load_answers(store, self.study)
        for question, model_a, model_b in self.pairs:
            if question not in self._texts:
                raise ValueError(f"pair ({question!r}, {model_a!r}, {model_b!r}): question {question!r} is not in "
                                 f"study {self.study!r}")
            for model in (model_a, model_b):
                if (question, model) not in self._answers:
                    raise ValueError(f"pair ({question!r}, {model_a!r}, {model_b!r}): {model!r} has no answer to "
                                     f"question {question!r} in study {self.study!r}; run `peercore answer` first")
        self.models = sorted({m for pair in self.pairs for m in pair[1:]})
        self.plan_result = None
        return [item for question, model_a, model_b in self.pairs
                for item in self.items_for_pair(question, model_a, model_b)]

    def on_start(self, store: "Store") -> None:
        self._names = resolve_judge_names(store, self.study, self.reviewers, self.identities(),
                                          contestants=self.models, register=True)

    def _texts_of(self, item: str):
        question, model_a, model_b, name = parse_item_key(item)
        return (self._by_name[name], self._texts[question], self._answers[(question, model_a)],
                self._answers[(question, model_b)])

    def _options(self, reviewer: Judge) -> dict:
        settings = self.settings[reviewer.label]
        return dict(template=settings.template.name, method=settings.method, k=settings.samples,
                    temperature=settings.temperature if settings.concrete == "samples" else 1.0,
                    verdict_temperature=settings.temperature if settings.concrete == "verdict" else 0.0,
                    max_tokens=settings.max_tokens or self.max_tokens, fields=settings.fields)

    def plan(self, item: str) -> list[PlannedCall]:
        reviewer, question, answer_1, answer_2 = self._texts_of(item)
        requests = _judging.comparison_requests(reviewer.backend, question, answer_1, answer_2,
                                                **self._options(reviewer))
        return [PlannedCall(reviewer.backend, r, optional=optional,
                            typical_output_tokens=1 if r.top_logprobs else min(self.max_tokens, 200))
                for r, optional in requests]

    # ----------------------------------------------------------------- execution

    async def run_item(self, item: str, ctx: ItemContext) -> ItemOutcome:
        question_id, model_a, model_b, label = parse_item_key(item)
        reviewer, question, answer_1, answer_2 = self._texts_of(item)
        backend = reviewer.backend
        comparison = await judging.compare(
            lambda request: ctx.complete(backend, request), backend, question, answer_1, answer_2,
            **self._options(reviewer))
        verdict = _judging.verdict_of_comparison(comparison, scheme=self.settings[label].template.scheme)
        row = judgment_row(question_id, model_a, model_b, self._names.get(label, label), verdict,
                           criterion=self.criterion)
        return ItemOutcome(status="done" if verdict.valid else "invalid",
                           detail=None if verdict.valid else "no verdict in the output", judgments=(row,))


def _checked_pairs(pairs, *, contestants, questions, strategy, comparisons, budget,
                   max_questions) -> tuple[tuple[str, str, str], ...] | None:
    """``ReviewJob(pairs=...)`` as a tuple of ``(question_id, model_a, model_b)`` string triples, or None.

    Raises
    ------
    ValueError
        If the list is empty, a pair is not three values or names one model twice, a pair
        comes twice, or a selection option is given as well (the option is named).
    """
    if pairs is None:
        return None
    chosen = {"contestants": contestants, "questions": questions, "comparisons": comparisons, "budget": budget,
              "max_questions": max_questions}
    given = [name for name, value in chosen.items() if value is not None]
    if strategy != "all":
        given.insert(0, "strategy")
    if given:
        raise ValueError(f"pairs lists the comparisons to judge; it cannot be combined with {', '.join(given)}")
    out, seen = [], set()
    for index, pair in enumerate(pairs):
        if isinstance(pair, str) or len(pair) != 3:
            raise ValueError(f"pairs[{index}] must be (question_id, model_a, model_b), got {pair!r}")
        question, model_a, model_b = (str(part) for part in pair)
        if model_a == model_b:
            raise ValueError(f"pairs[{index}] compares {model_a!r} with itself")
        if (question, model_a, model_b) in seen:
            raise ValueError(f"pairs[{index}] ({question!r}, {model_a!r}, {model_b!r}) is listed twice")
        seen.add((question, model_a, model_b))
        out.append((question, model_a, model_b))
    if not out:
        raise ValueError("pairs is empty: list at least one (question_id, model_a, model_b)")
    return tuple(out)


def register_judges(store: "Store", study: str, judges: Sequence[Judge], contestants: Sequence[str], *,
                    settings: dict | None = None) -> None:
    """Register LLM judges in the study; a judge named like a contestant gets it as model alias."""
    store.judges.add(study, [
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
