"""Jobs running PRD peer discussions and ScaleEval agent debates (engines in :mod:`peercore.discussion`).

Storage (both jobs): one debate row per discussion/debate (``Store.debates.add``, with
every turn and its verdict), plus judgments in the canonical table:

- each participant's **initial** verdict, ``round`` empty: an independent single-judge
  verdict (ScaleEval's "single judge"; for PRD the reviewer's own review);
- each participant's **final** verdict after the discussion, ``round`` = the last
  round/turn number (only when there was at least one round after the initial one).
  For PRD, ``vote`` is 0 when the reviewer led that discussion and 1 when it followed,
  so both leader orders keep their row;
- for debates that agreed, the consensus as judge ``debate:<name>``.

Debate and discussion keys are ``<run id>:<item>``, so re-running a run never stores a
debate twice and different configurations keep their own debates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from peercore import discussion as engines
from peercore.jobs import _judging
from peercore.prompts import VARIATIONS, list_rubrics, split_criterion
from peercore.jobs.base import Judge, as_judges, item_key, judge_identity, parse_item_key, resolve_judge_names, seeded_rng
from peercore.jobs.review import PairedJob, judgment_row
from peercore.prompts import load_template
from peercore.runner import ItemContext, ItemOutcome, PlannedCall

if TYPE_CHECKING:  # pragma: no cover
    from peercore.store import Store

__all__ = ["DiscussionJob", "DebateJob"]

_TYPICAL_TURN = 120  # tokens in a typical review or discussion turn (for estimates)
DEBATE_TEMPLATES = ("scaleeval_initial", "scaleeval_discussion")  # DebateJob's default (initial, discussion)
DEFAULT_PANEL = "scaleeval"  # DebateJob's default panel name: consensus judge debate:scaleeval
# DiscussionJob's initial reviews: PRD's Table 8 prompt (1 or 2 only), as the paper's discussions used.
DISCUSSION_REVIEW_TEMPLATE = "prd_review_discussion"


def _verdict(winner: str | None, text: str, template: str) -> _judging.Verdict:
    """The stored form of a turn's verdict (rationale without the verdict line)."""
    return _judging.read_verdict(text, template=template) if winner is not None else _judging.Verdict(None, None, text, text)


class DiscussionJob(PairedJob):
    """PRD peer discussions between two reviewers on pairs of answers (Li et al. 2023, section 3.2).

    Items are (question, first model, second model, leader): with ``both_orders`` every
    pair is discussed twice, once with each reviewer leading.

    Parameters
    ----------
    study : the study (questions and answers from the store).
    reviewers : exactly two backends or :class:`~peercore.jobs.base.Judge`.
    turns : T, discussion turns after the two initial reviews (leader on odd turns).
    review_template : the initial reviews' template (default ``prd_review_discussion``,
        PRD Table 8: 1 or 2, no tie, as the paper's discussions; ``prd_review`` is the
        Vicuna80 reviewing prompt with a tie).
    both_orders : run each pair with each reviewer as leader (default True).
    contestants, questions, strategy, comparisons, budget, seed, max_questions : pair selection, as
        :class:`~peercore.jobs.review.ReviewJob`.
    temperature : sampling temperature of the discussion turns.
    max_tokens : reply budget (default 512, as :class:`~peercore.jobs.ReviewJob`, so the
        initial reviews are shared with a review run's cache).

    Raises
    ------
    ValueError
        If there are not exactly two reviewers, or an option is out of range.
    """

    kind = "discussion"

    def __init__(self, study: str, reviewers: Sequence, *, turns: int = 4, both_orders: bool = True,
                 contestants: Sequence[str] | None = None, questions: Sequence[str] | None = None,
                 strategy: str = "all", comparisons: int | None = None, budget: int | None = None, seed: int = 0,
                 max_questions: int | None = None, temperature: float = 0.0, max_tokens: int = 512,
                 review_template: str = DISCUSSION_REVIEW_TEMPLATE) -> None:
        reviewers = as_judges(reviewers, what="reviewers")
        if len(reviewers) != 2:
            raise ValueError(f"a PRD discussion needs exactly 2 reviewers, got {len(reviewers)}: "
                             f"{[r.label for r in reviewers]}")
        if not isinstance(turns, int) or turns < 0:
            raise ValueError(f"turns must be an integer >= 0, got {turns!r}")
        self._init_pairs(study, contestants=contestants, questions=questions, strategy=strategy,
                         comparisons=comparisons, budget=budget, seed=seed, max_questions=max_questions)
        self.reviewers: list[Judge] = reviewers
        self.turns = turns
        self.both_orders = bool(both_orders)
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.review_template = _judging.review_template(review_template, "text").name
        self._by_name = {r.label: r for r in reviewers}
        self._names: dict[str, str] = {}

    def identities(self) -> dict[str, dict]:
        """label -> the reviewer's identity in this discussion (templates, turns, sampling)."""
        review, turn = load_template(self.review_template), load_template("prd_discussion")
        return {r.label: judge_identity(
            r, role="discussion", method="verdict", template=review.name, template_version=review.version,
            discussion_template=turn.name, discussion_template_version=turn.version, turns=self.turns,
            temperature=self.temperature if r.temperature is None else r.temperature, max_tokens=self.max_tokens)
            for r in self.reviewers}

    def judge_names(self) -> dict[str, str]:
        return dict(self._names)

    def config(self) -> dict:
        return {"reviewers": [r.describe() for r in self.reviewers], "turns": self.turns,
                "both_orders": self.both_orders, **self._pair_config(), "temperature": self.temperature,
                "max_output": self.max_tokens, "review_template": self.review_template}

    def backends(self) -> list:
        return [r.backend for r in self.reviewers]

    def calls_per_pair(self) -> int:
        return 2 + self.turns * (2 if self.both_orders else 1)

    def item_calls(self, item: str) -> int:
        return 2 + self.turns

    def items_for_pair(self, question: str, model_a: str, model_b: str) -> list[str]:
        leaders = self.reviewers if self.both_orders else self.reviewers[:1]
        return [item_key(question, model_a, model_b, leader.label) for leader in leaders]

    def prepare(self, store: "Store") -> list[str]:
        items = super().prepare(store)
        self._names = resolve_judge_names(store, self.study, self.reviewers, self.identities(),
                                          contestants=self.models, register=False)
        return items

    def on_start(self, store: "Store") -> None:
        self._names = resolve_judge_names(store, self.study, self.reviewers, self.identities(),
                                          contestants=self.models, register=True)

    def _roles(self, item: str):
        question, model_a, model_b, leader = parse_item_key(item)
        lead = self._by_name[leader]
        follow = next(r for r in self.reviewers if r.label != leader)
        return question, model_a, model_b, lead, follow

    def plan(self, item: str) -> list[PlannedCall]:
        question, model_a, model_b, lead, follow = self._roles(item)
        q, a1, a2 = self._texts[question], self._answers[(question, model_a)], self._answers[(question, model_b)]
        calls = []
        for reviewer in (lead, follow):
            (request, _), = _judging.comparison_requests(
                reviewer.backend, q, a1, a2, template=self.review_template, method="verdict", k=1, temperature=0.0,
                max_tokens=self.max_tokens)
            calls.append(PlannedCall(reviewer.backend, request, typical_output_tokens=_TYPICAL_TURN))
        filler = "x" * (4 * _TYPICAL_TURN)
        said: list[tuple[int, str]] = []
        for t in range(1, self.turns + 1):
            number = 1 if t % 2 == 1 else 2
            reviewer = (lead, follow)[number - 1]
            temp = self.temperature if reviewer.temperature is None else reviewer.temperature
            request = _judging.discussion_request(q, a1, a2, speaker=number, reviews=[filler, filler], turns=said,
                                                  temperature=temp, max_tokens=self.max_tokens, seed=reviewer.seed)
            calls.append(PlannedCall(reviewer.backend, request, typical_output_tokens=_TYPICAL_TURN))
            said.append((number, filler))
        return calls

    async def run_item(self, item: str, ctx: ItemContext) -> ItemOutcome:
        question, model_a, model_b, lead, follow = self._roles(item)
        result = await engines.run_discussion(
            ctx.complete, self._texts[question], self._answers[(question, model_a)],
            self._answers[(question, model_b)], leader=lead, follower=follow, turns=self.turns,
            temperature=self.temperature, max_tokens=self.max_tokens, review_template=self.review_template,
        )
        rows = []
        texts = {}
        named = lambda label: self._names.get(label, label)  # noqa: E731
        for turn in result.turns:
            texts[turn.speaker] = turn.text
            if turn.round == 0:
                rows.append(judgment_row(question, model_a, model_b, named(turn.speaker),
                                         _verdict(turn.verdict, turn.text, self.review_template)))
        if self.turns > 0:
            for reviewer in (lead, follow):
                rows.append(judgment_row(
                    question, model_a, model_b, named(reviewer.label),
                    _verdict(result.final[reviewer.label], texts[reviewer.label], "prd_discussion"),
                    round=self.turns, vote=0 if reviewer is lead else 1,
                ))
        unreadable = sum(t.verdict is None for t in result.turns)
        debate = {
            "debate_key": f"{ctx.run_id}:{item}", "kind": "discussion", "question_id": question,
            "model_a": model_a, "model_b": model_b, "scenario": self._categories.get(question, ""),
            "status": "agreed" if result.agreed else "unresolved", "consensus": result.consensus,
            "n_rounds": self.turns,
            "metadata": {"leader": named(lead.label), "follower": named(follow.label), "turns": self.turns,
                         "run_id": ctx.run_id, "initial": result.initial, "final": result.final},
        }
        return ItemOutcome(status="invalid" if unreadable else "done",
                           detail=f"{unreadable} unreadable verdict(s)" if unreadable else None,
                           judgments=tuple(rows), debates=((debate, tuple({**t.as_row(), "speaker": named(t.speaker)} for t in result.turns)),))


class DebateJob(PairedJob):
    """ScaleEval agent debates on pairs of answers (Chern et al. 2024, section 3).

    Items are (question, unordered pair, criterion). For each, the seed decides which
    answer is Submission 1 and the agents' speaking order; m agents give initial
    verdicts, then up to D - 1 rounds follow while they disagree. Unresolved debates
    enter the adjudication queue (:meth:`Store.debates.queue`).

    Parameters
    ----------
    study : the study (questions and answers from the store; the question's category is
        stored as the debate's scenario).
    agents : m >= 2 backends or :class:`~peercore.jobs.base.Judge` (distinct names;
        e.g. one model at three temperatures under three names).
    criteria : criteria to debate, rubrics of :func:`peercore.prompts.load_rubric`
        (``helpfulness``, ``creativity``, ``interpretability``, ``reasoning``), each
        optionally with a ScaleEval variation (``helpfulness/gibberish``); default
        ``("helpfulness",)``.
    max_rounds : D, rounds in total including the initial verdicts (ScaleEval: 3).
    name : the panel's name; the consensus is stored as judge ``debate:<name>``.
    contestants, questions, strategy, comparisons, budget, seed, max_questions : pair selection as in
        :class:`~peercore.jobs.review.ReviewJob` (pairs are unordered here).
    temperature, max_tokens : sampling settings (an agent's own temperature wins; an
        agent's ``seed`` is sent with its requests).
    initial_template, discussion_template : the agents' prompts, :mod:`peercore.prompts`
        templates of kinds ``debate_initial`` / ``debate_discussion`` with one verdict
        scheme. Default ScaleEval's (``scaleeval_initial`` / ``scaleeval_discussion``,
        verdict on the last line); ``scaleeval_compact_initial`` /
        ``scaleeval_compact_discussion`` ask for the verdict first, so it survives a
        short ``max_tokens`` (small local models). Part of the run's configuration
        when not the defaults.

    Raises
    ------
    ValueError
        If fewer than two agents are given, an option is out of range, or a template is
        unknown or of the wrong kind.
    """

    kind = "debate"
    ordered = False

    def __init__(self, study: str, agents: Sequence, *, criteria: Sequence[str] = ("helpfulness",),
                 max_rounds: int = 3, name: str | None = None, contestants: Sequence[str] | None = None,
                 questions: Sequence[str] | None = None, strategy: str = "all", comparisons: int | None = None,
                 budget: int | None = None, seed: int = 0, max_questions: int | None = None,
                 temperature: float = 0.0, max_tokens: int = 256,
                 initial_template: str = DEBATE_TEMPLATES[0], discussion_template: str = DEBATE_TEMPLATES[1]) -> None:
        agents = as_judges(agents, what="agents")
        if len(agents) < 2:
            raise ValueError(f"a debate needs at least 2 agents, got {len(agents)}")
        if not isinstance(max_rounds, int) or max_rounds < 1:
            raise ValueError(f"max_rounds must be an integer >= 1, got {max_rounds!r}")
        criteria = list(criteria)
        if not criteria or len(set(criteria)) != len(criteria):
            raise ValueError(f"criteria must be non-empty without duplicates, got {criteria}")
        known = list_rubrics()
        unknown = [c for c in criteria if split_criterion(c)[0] not in known]
        if unknown:
            raise ValueError(f"criteria {unknown} have no rubric; choose from {known} (optionally /<variation>, "
                             f"one of {VARIATIONS}: ScaleEval Table 5)")
        self._explicit_name = name is not None
        name = DEFAULT_PANEL if name is None else name
        if not isinstance(name, str) or not name.strip() or ":" in name or "~" in name:
            raise ValueError(f"name must be non-empty without ':' or '~', got {name!r}")
        self.templates = _judging.debate_templates(initial_template, discussion_template)
        self._init_pairs(study, contestants=contestants, questions=questions, strategy=strategy,
                         comparisons=comparisons, budget=budget, seed=seed, max_questions=max_questions)
        self.agents: list[Judge] = agents
        self.criteria = criteria
        self.max_rounds = max_rounds
        self.name = name
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self._by_name = {a.label: a for a in agents}
        self._names: dict[str, str] = {}
        self._panel: str | None = None

    @property
    def consensus_judge(self) -> str:
        """The panel's judge name (``debate:<name>``, or the variant this configuration resolved to)."""
        return self._panel or f"debate:{self.name}"

    def identities(self) -> dict[str, dict]:
        """label -> the agent's identity: templates, sampling, rounds and the layout seed.

        The seed decides each debate's submission order and speaking order, which shape
        every later round, so two layouts are two panels (and their agents two judges).
        """
        initial, discussion = (load_template(t) for t in self.templates)
        return {a.label: judge_identity(
            a, role="debate agent", template=initial.name, template_version=initial.version,
            discussion_template=discussion.name, discussion_template_version=discussion.version,
            max_rounds=self.max_rounds, layout_seed=self.seed,
            temperature=self.temperature if a.temperature is None else a.temperature, max_tokens=self.max_tokens)
            for a in self.agents}

    def panel_identity(self) -> dict:
        """The panel's identity: its agents' identities (in order of names), rounds, layout."""
        agents = self.identities()
        return {"role": "debate panel", "agents": [agents[k] for k in sorted(agents)], "max_rounds": self.max_rounds,
                "layout_seed": self.seed}

    def judge_names(self) -> dict[str, str]:
        return {**self._names, f"debate:{self.name}": self.consensus_judge}

    def _resolve(self, store: "Store", *, register: bool) -> None:
        self._names = resolve_judge_names(store, self.study, self.agents, self.identities(), contestants=self.models,
                                          register=register, labels_are_roles=True)
        self._panel = store.judges.resolve(self.study, f"debate:{self.name}", self.panel_identity(),
                                           explicit=self._explicit_name, kind="debate", register=register)

    def config(self) -> dict:
        out = {"agents": [a.describe() for a in self.agents], "criteria": self.criteria,
               "max_rounds": self.max_rounds, "name": self.name, **self._pair_config(),
               "temperature": self.temperature, "max_output": self.max_tokens}
        if self.templates != DEBATE_TEMPLATES:  # only when set: default runs keep the ids they had
            out["initial_template"], out["discussion_template"] = self.templates
        return out

    def backends(self) -> list:
        return [a.backend for a in self.agents]

    def calls_per_pair(self) -> int:
        return len(self.agents) * self.max_rounds * len(self.criteria)

    def item_calls(self, item: str) -> int:
        return len(self.agents) * self.max_rounds

    def items_for_pair(self, question: str, model_a: str, model_b: str) -> list[str]:
        return [item_key(question, model_a, model_b, criterion) for criterion in self.criteria]

    def prepare(self, store: "Store") -> list[str]:
        items = super().prepare(store)
        self._resolve(store, register=False)
        return items

    def on_start(self, store: "Store") -> None:
        self._resolve(store, register=True)

    def layout(self, item: str) -> tuple[str, str, str, str, list[Judge]]:
        """(question, submission 1 model, submission 2 model, criterion, agents in speaking order) of an item.

        Both orders are drawn from ``seeded_rng(seed, "debate", item)``: a fair coin
        for which answer is Submission 1, a uniform permutation of the agents.
        """
        question, first, second, criterion = parse_item_key(item)
        rng = seeded_rng(self.seed, "debate", item)
        if rng.random() < 0.5:
            first, second = second, first
        order = [self.agents[k] for k in rng.permutation(len(self.agents))]
        return question, first, second, criterion, order

    def plan(self, item: str) -> list[PlannedCall]:
        question, first, second, criterion, order = self.layout(item)
        q, s1, s2 = self._texts[question], self._answers[(question, first)], self._answers[(question, second)]
        calls = []
        filler = "x" * (4 * _TYPICAL_TURN)
        for rnd in range(self.max_rounds):
            for k, agent in enumerate(order):
                others = [(j + 1, filler) for j in range(len(order)) if j != k]
                temp = self.temperature if agent.temperature is None else agent.temperature
                request = _judging.debate_request(q, s1, s2, criterion=criterion, speaker=k + 1, round=rnd,
                                                  own=filler if rnd else None, others=others if rnd else (),
                                                  temperature=temp, max_tokens=self.max_tokens,
                                                  templates=self.templates, seed=agent.seed)
                calls.append(PlannedCall(agent.backend, request, optional=rnd > 0,
                                         typical_output_tokens=_TYPICAL_TURN))
        return calls

    async def run_item(self, item: str, ctx: ItemContext) -> ItemOutcome:
        question, first, second, criterion, order = self.layout(item)
        result = await engines.run_debate(
            ctx.complete, self._texts[question], self._answers[(question, first)], self._answers[(question, second)],
            agents=order, criterion=criterion, max_rounds=self.max_rounds, temperature=self.temperature,
            max_tokens=self.max_tokens, initial_template=self.templates[0], discussion_template=self.templates[1],
        )
        rows = []
        last_text: dict[str, str] = {}
        named = lambda label: self._names.get(label, label)  # noqa: E731
        for turn in result.turns:
            last_text[turn.speaker] = turn.text
            if turn.round == 0:
                rows.append(judgment_row(question, first, second, named(turn.speaker),
                                         _verdict(turn.verdict, turn.text, self.templates[0]), criterion=criterion))
        if result.n_rounds > 0:
            for agent in order:
                rows.append(judgment_row(question, first, second, named(agent.label),
                                         _verdict(result.final[agent.label], last_text[agent.label],
                                                  self.templates[1]),
                                         criterion=criterion, round=result.n_rounds))
        if result.status == "agreed":
            rows.append(judgment_row(question, first, second, self.consensus_judge,
                                     _judging.Verdict(result.consensus, None, f"consensus of {len(order)} agents "
                                                      f"after {result.n_rounds} round(s)"), criterion=criterion))
        unreadable = sum(t.verdict is None for t in result.turns)
        debate = {
            "debate_key": f"{ctx.run_id}:{item}", "kind": "debate", "question_id": question, "model_a": first,
            "model_b": second, "criterion": criterion, "scenario": self._categories.get(question, ""),
            "status": result.status, "consensus": result.consensus, "n_rounds": result.n_rounds,
            "panel": self.consensus_judge,
            "metadata": {"speakers": [named(k) for k in result.speakers], "max_rounds": self.max_rounds,
                         "name": self.consensus_judge.split(":", 1)[1],
                         "templates": list(self.templates), "run_id": ctx.run_id, "initial": result.initial,
                         "final": result.final},
        }
        return ItemOutcome(status="invalid" if unreadable else "done",
                           detail=f"{unreadable} unreadable verdict(s)" if unreadable else None,
                           judgments=tuple(rows), debates=((debate, tuple({**t.as_row(), "speaker": named(t.speaker)} for t in result.turns)),))
