"""PRD two-reviewer discussion and ScaleEval m-agent debate engines, and their outcomes.

**Peer discussion** (Li, Patel, Du 2023, "PRD", section 3.2). Two reviewers first
review a pair of answers independently; then they take turns, the *leader* first, for
a fixed number of turns, each turn ending with a verdict line (1 or 2). Every turn's
verdict is kept, so opinion altering / holding and the leader effect (section 5,
Fig. 6) can be measured (:func:`opinion_altering_holding`, :func:`leader_effect`,
:func:`discussion_outcomes`). A discussion is run in both leader orders by
:class:`peercore.jobs.DiscussionJob`.

**Agent debate** (Chern, Chern, Neubig, Liu 2024, "ScaleEval", section 3). m judge
agents give an initial verdict (1, 2 or 0 = tie) with a justification; while they
disagree, up to D - 1 further rounds follow in which each agent sees the others'
evaluations of the previous round. A debate that ends split is *unresolved* and goes
to the human adjudication queue.

The engines are independent of storage and of the runner: they take an async
``complete(backend, request) -> Completion`` (the runner's cached, retried call) and
return plain results; the jobs store them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from peercore.jobs import _judging
from peercore.jobs.base import Judge
from peercore.reviewers import judging
from peercore.reviewers.base import Backend, ChatRequest, Completion

__all__ = [
    "Turn",
    "DiscussionResult",
    "DebateResult",
    "run_discussion",
    "run_debate",
    "discussion_outcomes",
    "opinion_events",
    "opinion_altering_holding",
    "leader_effect",
    "leader_adoption",
    "verdict_changes",
    "opinion_changes",
    "INITIAL_REVIEWS",
    "discussions_from_prd_examples",
    "EVENTS",
]

Complete = Callable[[Backend, ChatRequest], Awaitable[Completion]]


@dataclass(frozen=True)
class Turn:
    """One contribution: ``round`` 0 is the initial review/verdict; ``position`` is the speaking order in the round.

    ``verdict`` is ``model_a`` (the answer shown first), ``model_b``, ``tie`` or None
    when no verdict could be read from ``text``.
    """

    round: int
    position: int
    speaker: str
    verdict: str | None
    text: str

    def as_row(self) -> dict:
        """The shape :meth:`peercore.store.Store.debates.add` takes for a turn."""
        return {"round": self.round, "position": self.position, "speaker": self.speaker,
                "verdict": self.verdict, "rationale": self.text}


@dataclass(frozen=True)
class DiscussionResult:
    """A PRD discussion: ``leader`` spoke first; ``final`` maps each reviewer to its last verdict."""

    leader: str
    follower: str
    turns: tuple[Turn, ...]
    final: dict[str, str | None]
    initial: dict[str, str | None]

    @property
    def agreed(self) -> bool:
        values = list(self.final.values())
        return all(v is not None for v in values) and len(set(values)) == 1

    @property
    def consensus(self) -> str | None:
        return next(iter(self.final.values())) if self.agreed else None


@dataclass(frozen=True)
class DebateResult:
    """A ScaleEval debate; ``n_rounds`` counts the discussion rounds after the initial one (0 .. D-1)."""

    speakers: tuple[str, ...]
    turns: tuple[Turn, ...]
    initial: dict[str, str | None]
    final: dict[str, str | None]
    n_rounds: int
    consensus: str | None = None
    status: str = field(default="unresolved")


# ------------------------------------------------------------------------ discussion


async def run_discussion(
    complete: Complete,
    question: str,
    answer_1: str,
    answer_2: str,
    *,
    leader: Judge,
    follower: Judge,
    turns: int = 4,
    temperature: float = 0.0,
    max_tokens: int = 512,
    review_template: str = "prd_review",
    discussion_template: str = "prd_discussion",
) -> DiscussionResult:
    """Run one PRD peer discussion between two reviewers (Li et al. 2023, section 3.2).

    Round 0: both reviewers review independently with ``review_template``
    (:func:`peercore.reviewers.judging.compare`, ``method="verdict"``: the same request
    as a :class:`~peercore.jobs.ReviewJob` with the same template and ``max_tokens``, so
    a review run's calls are reused from the cache; PRD's review scheme allows a tie).
    Turns 1..T: the leader speaks on odd turns, the follower on even ones; each sees both
    initial reviews and the discussion so far (``discussion_template``, PRD Table 1) and
    ends with its verdict (1 or 2).

    Parameters
    ----------
    complete : async ``(backend, request) -> Completion``.
    question, answer_1, answer_2 : the texts (answer 1 is shown first).
    leader, follower : the two reviewers (the leader is "reviewer 1" in the prompts).
    turns : T >= 0, the number of discussion turns after the initial reviews.
    temperature : sampling temperature of the discussion turns (a reviewer's own wins;
        the initial reviews are greedy, as in a review run).
    max_tokens : reply budget of every call.
    review_template, discussion_template : :mod:`peercore.prompts` template names.

    Returns
    -------
    DiscussionResult
        Every turn with its verdict (None when unreadable); ``final`` is each reviewer's
        verdict in its last turn (its initial review if it never spoke).

    Raises
    ------
    ValueError
        If ``turns`` is negative or the two reviewers share a name.
    """
    if not isinstance(turns, int) or turns < 0:
        raise ValueError(f"turns must be an integer >= 0, got {turns!r}")
    if leader.label == follower.label:
        raise ValueError(f"leader and follower must differ, both are {leader.label!r}")
    reviewers = (leader, follower)

    def temp(judge: Judge) -> float:
        return temperature if judge.temperature is None else judge.temperature

    reviews = await asyncio.gather(*(
        judging.compare(lambda request, b=r.backend: complete(b, request), r.backend, question, answer_1, answer_2,
                        template=review_template, method="verdict", max_tokens=max_tokens)
        for r in reviewers))
    texts = [c.raw_text for c in reviews]
    out = [Turn(0, k, r.label, c.verdict, c.raw_text) for k, (r, c) in enumerate(zip(reviewers, reviews))]
    initial = {r.label: c.verdict for r, c in zip(reviewers, reviews)}
    final = dict(initial)
    said: list[tuple[int, str]] = []
    for t in range(1, turns + 1):
        number = 1 if t % 2 == 1 else 2
        speaker = reviewers[number - 1]
        request = _judging.discussion_request(
            question, answer_1, answer_2, speaker=number, reviews=texts, turns=said,
            temperature=temp(speaker), max_tokens=max_tokens, template=discussion_template, seed=speaker.seed,
        )
        completion = await complete(speaker.backend, request)
        verdict = _judging.read_verdict(completion, template=discussion_template)
        out.append(Turn(t, 0, speaker.label, verdict.winner, completion.text))
        said.append((number, completion.text))
        final[speaker.label] = verdict.winner
    return DiscussionResult(leader.label, follower.label, tuple(out), final, initial)


# ---------------------------------------------------------------------------- debate


async def run_debate(
    complete: Complete,
    question: str,
    submission_1: str,
    submission_2: str,
    *,
    agents: Sequence[Judge],
    criterion: str | None = None,
    max_rounds: int = 3,
    temperature: float = 0.0,
    max_tokens: int = 256,
    initial_template: str = "scaleeval_initial",
    discussion_template: str = "scaleeval_discussion",
) -> DebateResult:
    """Run one ScaleEval agent debate (Chern et al. 2024, section 3).

    Round 0: every agent evaluates independently on the criterion's 1-5 rubric and gives
    1, 2 or 0 (tie). While the latest verdicts are not all equal (an unreadable verdict
    counts as disagreement), rounds 1 .. D-1 follow: agent k ("Speaker k", k in speaking
    order) sees its own and the other agents' evaluations of the previous round and
    gives a verdict again (templates ``initial_template`` / ``discussion_template``).
    An agent with a ``seed`` sends it with each request (two agents of one model at one
    temperature then sample differently instead of sharing a cached reply).

    Parameters
    ----------
    complete : async ``(backend, request) -> Completion``.
    question, submission_1, submission_2 : the texts, in the order shown.
    agents : m >= 2 agents in speaking order (randomise it upstream, from a seed).
    criterion : the criterion judged, a rubric of :func:`peercore.prompts.load_rubric`
        (default ``"helpfulness"``).
    max_rounds : D >= 1, rounds in total including the initial one.
    temperature, max_tokens : sampling settings (an agent's own temperature wins).
    initial_template, discussion_template : :mod:`peercore.prompts` templates of kinds
        ``debate_initial`` and ``debate_discussion`` (default ScaleEval's;
        ``scaleeval_compact_initial`` / ``scaleeval_compact_discussion`` put the verdict
        first, for small models with a short reply budget).

    Returns
    -------
    DebateResult
        ``status`` ``"agreed"`` with the ``consensus`` verdict, or ``"unresolved"``.

    Raises
    ------
    ValueError
        If there are fewer than two agents, duplicate names, or ``max_rounds < 1``.
    """
    agents = list(agents)
    if len(agents) < 2:
        raise ValueError(f"a debate needs at least 2 agents, got {len(agents)}")
    names = [a.label for a in agents]
    if len(set(names)) != len(names):
        raise ValueError(f"agents must have distinct names, got {names}")
    if not isinstance(max_rounds, int) or max_rounds < 1:
        raise ValueError(f"max_rounds must be an integer >= 1, got {max_rounds!r}")

    def temp(agent: Judge) -> float:
        return temperature if agent.temperature is None else agent.temperature

    def request(position: int, agent: Judge, rnd: int, previous: list[str]) -> ChatRequest:
        others = [(k + 1, text) for k, text in enumerate(previous) if k != position]
        return _judging.debate_request(
            question, submission_1, submission_2, criterion=criterion, speaker=position + 1, round=rnd,
            own=previous[position] if previous else None, others=others, temperature=temp(agent),
            max_tokens=max_tokens, templates=(initial_template, discussion_template), seed=agent.seed,
        )

    async def one_round(rnd: int, previous: list[str]) -> list[Completion]:
        return list(await asyncio.gather(*(complete(a.backend, request(k, a, rnd, previous))
                                           for k, a in enumerate(agents))))

    completions = await one_round(0, [])
    verdicts = [_judging.read_verdict(c, template=initial_template).winner for c in completions]
    turns = [Turn(0, k, a.label, v, c.text) for k, (a, v, c) in enumerate(zip(agents, verdicts, completions))]
    latest = dict(zip(names, verdicts))
    initial = dict(latest)
    previous = [c.text for c in completions]
    rounds = 0
    while not _unanimous(latest) and rounds < max_rounds - 1:
        rounds += 1
        completions = await one_round(rounds, previous)
        for k, (agent, completion) in enumerate(zip(agents, completions)):
            verdict = _judging.read_verdict(completion, template=discussion_template).winner
            turns.append(Turn(rounds, k, agent.label, verdict, completion.text))
            latest[agent.label] = verdict
        previous = [c.text for c in completions]
    agreed = _unanimous(latest)
    return DebateResult(tuple(names), tuple(turns), initial, dict(latest), rounds,
                        consensus=next(iter(latest.values())) if agreed else None,
                        status="agreed" if agreed else "unresolved")


def _unanimous(verdicts: dict[str, str | None]) -> bool:
    values = list(verdicts.values())
    return all(v is not None for v in values) and len(set(values)) == 1


# -------------------------------------------------------------------------- outcomes
#
# PRD (Li, Patel & Du 2023), section 5 ("peer discussion"): a reviewer *holds* its
# opinion when, facing a reviewer who disagrees with it, it keeps its verdict, and
# *alters* it when it takes another verdict; Fig. 6 splits both counts by whether the
# model led the discussion or followed. A verdict that changes while both reviewers
# already agreed is neither (counted apart here as a change after agreement), and a
# verdict that repeats an agreed one is not a hold.

EVENTS: tuple[str, ...] = ("held", "altered", "changed_after_agreement", "kept_agreement", "unreadable")
#: How the initial reviews enter the counts (PRD section 5 does not say): ``"turn0"`` (default)
#: - they are turn 0, each reviewer's opinion before the discussion, so the first
#: discussion turn can hold or alter it; ``"excluded"`` - only the discussion turns count,
#: and a reviewer's first turn states its opinion (it is not classified).
INITIAL_REVIEWS: tuple[str, ...] = ("turn0", "excluded")
_PREFERENCE = {1: "model_a", 2: "model_b", "1": "model_a", "2": "model_b"}
_EVENT_COLUMNS = ["debate_id", "round", "position", "speaker", "role", "previous", "others", "verdict", "event"]
_COUNT_COLUMNS = ["discussions", "turns", "held", "altered", "changed_after_agreement", "altering_rate"]


def opinion_events(debates: pd.DataFrame, turns: pd.DataFrame, *, initial_reviews: str = "turn0") -> pd.DataFrame:
    """Classify every discussion turn as opinion held, altered, or neither (PRD section 5).

    For each turn after the initial reviews (``round >= 1``) of speaker *s*, let
    *p* be the last readable verdict *s* gave before (its initial review at first) and
    *O* the last readable verdicts the other reviewers gave in earlier rounds - what
    they held "at that point" (in a PRD discussion each turn is its own round, so the
    other reviewer's latest turn counts; in a ScaleEval debate the agents of one round
    speak at once and each sees the previous round). Then, with *v* the turn's verdict:

    - some other reviewer disagrees with *p* (an ``o`` in *O* with ``o != p``):
      ``"held"`` if ``v == p``, ``"altered"`` otherwise (PRD's opinion holding /
      altering);
    - every other reviewer agrees with *p*: ``"kept_agreement"`` if ``v == p`` (not a
      hold: nobody challenged the opinion), ``"changed_after_agreement"`` otherwise
      (counted apart, as PRD treats it apart);
    - ``"unreadable"`` when *v* is None or *s* or another reviewer has no readable
      earlier verdict (such a turn is not counted).

    Roles: ``debates.metadata`` ``leader`` / ``follower`` (as
    :class:`peercore.jobs.DiscussionJob` stores them); without them the first speaker
    of round 0 is the leader and every other speaker a follower.

    **Which reading.** PRD does not say whether the initial reviews are opinions the
    discussion can hold or alter. ``initial_reviews="turn0"`` (the default, and every
    number PeerBoard shows: the Debates page, the README) takes them as turn 0, each
    reviewer's opinion before the first turn: on PRD's 8 released discussions 14 held,
    5 altered, 2 changes after agreement. ``"excluded"`` counts the discussion turns
    only: a reviewer's first turn states its opinion and is not classified, the other
    reviewers' opinions are their latest turns (same discussions: 6 held, 2 altered,
    1 change after agreement).

    Parameters
    ----------
    debates : :meth:`Store.debates.table` rows (``id`` and, for roles, ``metadata``).
    turns : :meth:`Store.debates.turns` of those debates (``debate_id, round, position,
        speaker, verdict``; other columns are ignored). Turns of debates not in
        ``debates`` are ignored.
    initial_reviews : ``"turn0"`` or ``"excluded"`` (:data:`INITIAL_REVIEWS`, above).

    Returns
    -------
    DataFrame
        ``debate_id, round, position, speaker, role, previous, others`` (the other
        reviewers' verdicts at that point, a tuple in speaking order), ``verdict``,
        ``event`` (one of :data:`EVENTS`), in speaking order.

    Raises
    ------
    ValueError
        If a column is missing (the missing ones are named), or ``initial_reviews`` is
        not one of :data:`INITIAL_REVIEWS` (quoted).
    """
    _require(debates, ["id"], "debates")
    _require(turns, ["debate_id", "round", "position", "speaker", "verdict"], "turns")
    if initial_reviews not in INITIAL_REVIEWS:
        raise ValueError(f"initial_reviews must be one of {INITIAL_REVIEWS}, got {initial_reviews!r}")
    rows = []
    roles = _roles(debates, turns)
    wanted = set(debates["id"].tolist())
    ordered = turns[turns["debate_id"].isin(wanted)].sort_values(["debate_id", "round", "position"], kind="stable")
    for debate_id, part in ordered.groupby("debate_id", sort=True):
        role_of = roles.get(debate_id, {})
        latest: dict[str, str] = {}  # last readable verdict of each speaker, rounds so far
        speakers = list(dict.fromkeys(part["speaker"]))
        first_round = part["round"].min()  # the initial reviews (round 0)
        for rnd, group in part.groupby("round", sort=True):
            before = dict(latest)  # everyone's position at the start of this round
            for t in group.itertuples(index=False):
                verdict = _verdict_or_none(t.verdict)
                if rnd == first_round and initial_reviews == "excluded":
                    continue  # the initial reviews are no opinion of the discussion's
                if rnd > first_round and (initial_reviews == "turn0" or t.speaker in before):
                    previous = before.get(t.speaker)
                    others = tuple(before.get(s) for s in speakers if s != t.speaker)
                    rows.append((int(debate_id), int(rnd), int(t.position), t.speaker,
                                 role_of.get(t.speaker), previous, others, verdict,
                                 _event(previous, others, verdict)))
                if verdict is not None:
                    latest[t.speaker] = verdict
    out = pd.DataFrame(rows, columns=_EVENT_COLUMNS)
    return out.astype({"debate_id": "int64", "round": "int64", "position": "int64"})


def opinion_altering_holding(debates: pd.DataFrame, turns: pd.DataFrame, *,
                             initial_reviews: str = "turn0") -> pd.DataFrame:
    """Opinion holding and altering per reviewer and role (PRD section 5, Fig. 6).

    Counts the events of :func:`opinion_events`: ``held`` and ``altered`` (turns where
    the other reviewer disagreed with the speaker's opinion) and, reported apart,
    ``changed_after_agreement``. Two reviewers agreeing throughout hold nothing and
    alter nothing. On the 8 released PRD discussions (4 examples, each in both leader
    orders) the totals are 14 held, 5 altered and 2 changes after agreement with the
    initial reviews as turn 0 (the default), 6 / 2 / 1 with them excluded.

    Parameters
    ----------
    debates, turns, initial_reviews : as :func:`opinion_events`.

    Returns
    -------
    DataFrame
        One row per ``speaker, role`` that took part, sorted: ``discussions`` (in that
        role), ``turns`` (``held + altered``), ``held``, ``altered``,
        ``changed_after_agreement``, ``altering_rate`` (``altered / turns``, NaN when
        the reviewer was never challenged).
    """
    events = opinion_events(debates, turns, initial_reviews=initial_reviews)
    columns = ["speaker", "role", *_COUNT_COLUMNS]
    if len(events) == 0:
        return pd.DataFrame(columns=columns)
    events = events.assign(role=events["role"].fillna(""))
    counts = pd.crosstab([events["speaker"], events["role"]], events["event"]).reindex(columns=list(EVENTS), fill_value=0)
    out = pd.DataFrame({
        "discussions": events.groupby(["speaker", "role"])["debate_id"].nunique(),
        "held": counts["held"], "altered": counts["altered"],
        "changed_after_agreement": counts["changed_after_agreement"],
    })
    out["turns"] = out["held"] + out["altered"]
    out["altering_rate"] = _rate(out["altered"], out["turns"])
    out = out.reset_index()
    out["role"] = out["role"].replace("", None)
    return out[columns].astype({c: "int64" for c in ("discussions", "turns", "held", "altered", "changed_after_agreement")})


def leader_effect(debates: pd.DataFrame, turns: pd.DataFrame, *, initial_reviews: str = "turn0") -> pd.DataFrame:
    """Opinion holding and altering of each model as leader and as follower (PRD Fig. 6).

    :func:`opinion_altering_holding` laid out per model: PRD Fig. 6 compares how often
    a model holds and alters its opinion when it leads the discussion (speaks first)
    with when it follows. ``initial_reviews`` as :func:`opinion_events`.

    Returns
    -------
    DataFrame
        Indexed by model (``speaker``), with ``leader_held, leader_altered,
        leader_changed_after_agreement, leader_altering_rate`` and the same four for
        ``follower_``; 0 (rates NaN) for a role the model never had.
    """
    counts = opinion_altering_holding(debates, turns, initial_reviews=initial_reviews)
    measures = ["held", "altered", "changed_after_agreement"]
    columns = [f"{role}_{m}" for role in ("leader", "follower") for m in (*measures, "altering_rate")]
    if len(counts) == 0:
        return pd.DataFrame(columns=columns, index=pd.Index([], name="speaker"))
    counts = counts[counts["role"].isin(["leader", "follower"])]
    wide = counts.pivot(index="speaker", columns="role", values=measures).fillna(0).astype("int64")
    out = pd.DataFrame(index=wide.index)
    for role in ("leader", "follower"):
        for m in measures:
            out[f"{role}_{m}"] = wide[(m, role)] if (m, role) in wide.columns else 0
        out[f"{role}_altering_rate"] = _rate(out[f"{role}_altered"], out[f"{role}_held"] + out[f"{role}_altered"])
    out.index.name = "speaker"
    return out[columns]


def leader_adoption(debates: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """How often a split discussion ends on the leader's initial verdict, per leader.

    Not PRD's leader effect (that is :func:`leader_effect`): among the discussions or
    debates whose speakers disagreed in their initial reviews and agreed at the end,
    the share that agreed on the leader's (first speaker's) initial verdict. This is
    what PeerBoard reported as the leader effect before; it is kept under this name.

    Returns
    -------
    DataFrame
        Indexed by ``leader``: ``debates`` (initially split, finally agreed),
        ``ended_on_leader_verdict``, ``share``.
    """
    columns = ["debates", "ended_on_leader_verdict", "share"]
    if len(debates) == 0 or len(turns) == 0:
        return pd.DataFrame(columns=columns, index=pd.Index([], name="leader"))
    outcomes = discussion_outcomes(debates, turns)
    decided = outcomes[outcomes["followed_leader"].notna()]
    grouped = decided.groupby("leader")
    out = pd.DataFrame({"debates": grouped.size(),
                        "ended_on_leader_verdict": grouped["followed_leader"].sum()}).astype("int64")
    out.index.name = "leader"
    out["share"] = out["ended_on_leader_verdict"] / out["debates"]
    return out[columns]


def verdict_changes(turns: pd.DataFrame) -> pd.DataFrame:
    """Every verdict a speaker gives after an earlier one, and whether it changed.

    For every speaker's readable verdict after its first in the same debate (or
    discussion): the speaker's previous readable verdict and ``altered`` (they differ).
    This counts every repeated verdict as kept, whatever the other reviewers said, so
    it is *not* PRD's opinion holding / altering (see :func:`opinion_events` and
    :func:`opinion_altering_holding`); it answers "did this speaker ever change its
    verdict?". Unreadable verdicts (None) are skipped.

    Parameters
    ----------
    turns : the store's debate turns (:meth:`Store.debates.turns`): ``debate_id, round,
        position, speaker, verdict``.

    Returns
    -------
    DataFrame
        ``debate_id, round, speaker, previous, verdict, altered`` (bool).
    """
    columns = ["debate_id", "round", "speaker", "previous", "verdict", "altered"]
    if len(turns) == 0:
        return pd.DataFrame(columns=columns).astype({"altered": bool})
    spoken = turns[turns["verdict"].notna()].sort_values(["debate_id", "round", "position"], kind="stable")
    previous = spoken.groupby(["debate_id", "speaker"], sort=False)["verdict"].shift(1)
    out = spoken.assign(previous=previous)[previous.notna()]
    out = out.assign(altered=(out["verdict"] != out["previous"]).astype(bool))
    return out[columns].reset_index(drop=True)


def opinion_changes(turns: pd.DataFrame) -> pd.DataFrame:
    """Old name of :func:`verdict_changes` (every later verdict, kept or changed).

    Not PRD's opinion altering / holding, which counts a verdict only when the other
    reviewer disagrees (:func:`opinion_altering_holding`). Kept so existing callers
    work; new code should call :func:`verdict_changes`.
    """
    return verdict_changes(turns)


def discussion_outcomes(debates: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """One row per stored discussion or debate: initial and final verdicts, agreement, opinion counts.

    Parameters
    ----------
    debates : :meth:`Store.debates.table` (``id, question_id, model_a, model_b, status, consensus, ...``).
    turns : :meth:`Store.debates.turns` of those debates.

    Returns
    -------
    DataFrame indexed like ``debates`` with columns ``debate_id``, ``leader`` (first
    speaker of round 0), ``initially_agreed``, ``finally_agreed`` (all speakers' last
    readable verdicts equal), ``final_verdict`` (the agreed verdict or None),
    ``held`` / ``altered`` / ``changed_after_agreement`` (PRD section 5 opinion holding
    and altering, see :func:`opinion_events`), ``followed_leader`` (for debates
    initially split and finally agreed: whether the agreement is the leader's initial
    verdict, see :func:`leader_adoption`; None otherwise).
    """
    rows = []
    events = opinion_events(debates, turns) if len(turns) else pd.DataFrame(columns=_EVENT_COLUMNS)
    event_counts = pd.crosstab(events["debate_id"], events["event"]) if len(events) else pd.DataFrame()
    for debate_id in debates["id"]:
        part = turns[turns["debate_id"] == debate_id].sort_values(["round", "position"], kind="stable")
        first = part[part["round"] == part["round"].min()] if len(part) else part
        leader = first["speaker"].iloc[0] if len(first) else None
        initial = dict(zip(first["speaker"], first["verdict"]))
        last = part[part["verdict"].notna()].groupby("speaker")["verdict"].last() if len(part) else pd.Series(dtype=object)
        speakers = set(part["speaker"]) if len(part) else set()
        init_values = [v for v in initial.values()]
        initially = bool(init_values) and all(isinstance(v, str) for v in init_values) and len(set(init_values)) == 1
        finally_ = bool(speakers) and set(last.index) == speakers and last.nunique() == 1
        final_verdict = last.iloc[0] if finally_ else None
        followed = None
        if finally_ and not initially and leader is not None and isinstance(initial.get(leader), str):
            followed = bool(final_verdict == initial[leader])
        counted = {e: 0 for e in ("held", "altered", "changed_after_agreement")}
        if debate_id in event_counts.index:
            for e in counted:
                counted[e] = int(event_counts.loc[debate_id, e]) if e in event_counts.columns else 0
        rows.append({"debate_id": int(debate_id), "leader": leader, "initially_agreed": initially,
                     "finally_agreed": finally_, "final_verdict": final_verdict, **counted,
                     "followed_leader": followed})
    out = pd.DataFrame(rows, columns=["debate_id", "leader", "initially_agreed", "finally_agreed", "final_verdict",
                                      "held", "altered", "changed_after_agreement", "followed_leader"])
    out.index = debates.index[: len(out)]
    return out


def discussions_from_prd_examples(records: Sequence[Mapping]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Debate and turn tables, in the store's shapes, from PRD's released discussion examples.

    ``records`` is the parsed JSON list of PRD's ``discussions_frame/data/data.json``
    (bcdnlp/PR_LLM_EVAL; see the README beside ``prd_discussion_examples``). Each record
    holds two reviewers' initial reviews (``initial_justification_<model>``, with
    ``preference`` 1 = answer 1 better, 2 = answer 2 better) and the same discussion
    in both leader orders (``<leader>_<follower>_discussion``: a system and a background
    entry, then one ``{<model>: {content, preference}}`` entry per turn).

    One discussion per record and leader order: round 0 holds the leader's (position 0)
    and the follower's (position 1) initial reviews, round t >= 1 the t-th turn, one
    speaker per turn. Preference 1 / 2 becomes ``model_a`` / ``model_b`` (answer 1 /
    answer 2); any other value is an unparsed verdict (None) with ``raw`` kept.

    Parameters
    ----------
    records : the parsed JSON records.

    Returns
    -------
    (debates, turns)
        ``debates``: ``id`` (1, 2, ... in file order), ``debate_key``
        (``prd_example:<record>:<leader>``), ``kind`` ``"discussion"``,
        ``question_id`` (``prd_example:<record>``), ``model_a`` ``"answer_1"``,
        ``model_b`` ``"answer_2"``, ``criterion``, ``scenario``, ``status``
        (agreed / unresolved on the last verdicts), ``consensus``, ``n_rounds`` (turns),
        ``metadata`` (``leader``, ``follower``, ``turns``, ``question``, the answers'
        types). ``turns``: ``debate_id, round, position, speaker, verdict, rationale,
        raw``.

    Raises
    ------
    ValueError
        If a record lacks a reviewer, its initial review or a discussion (the record
        number and key are named).
    """
    debates, turn_rows = [], []
    for number, record in enumerate(records):
        models = [record.get("reviewer_1_model"), record.get("reviewer_2_model")]
        if not all(isinstance(m, str) and m for m in models):
            raise ValueError(f"records[{number}] lacks reviewer_1_model / reviewer_2_model, got {models!r}")
        for lead, follow in (models, models[::-1]):
            key = f"{lead}_{follow}_discussion"
            entries = record.get(key)
            if not isinstance(entries, list):
                raise ValueError(f"records[{number}] has no list {key!r}")
            debate_id = len(debates) + 1
            rows = []
            for position, model in enumerate((lead, follow)):
                initial = record.get(f"initial_justification_{model}")
                if not isinstance(initial, Mapping):
                    raise ValueError(f"records[{number}] has no 'initial_justification_{model}'")
                rows.append(_prd_turn(debate_id, 0, position, model, initial))
            for entry in entries:
                spoken = [(name, value) for name, value in entry.items() if isinstance(value, Mapping)]
                if len(spoken) != 1:
                    continue  # the system and background entries
                name, value = spoken[0]
                rows.append(_prd_turn(debate_id, len(rows) - 1, 0, name, value))
            final = {}
            for row in rows:
                final[row["speaker"]] = row["verdict"]
            verdicts = list(final.values())
            agreed = all(v is not None for v in verdicts) and len(set(verdicts)) == 1
            debates.append({
                "id": debate_id, "debate_key": f"prd_example:{number}:{lead}", "kind": "discussion",
                "question_id": f"prd_example:{number}", "model_a": "answer_1", "model_b": "answer_2",
                "criterion": "", "scenario": "", "status": "agreed" if agreed else "unresolved",
                "consensus": verdicts[0] if agreed else None, "n_rounds": len(rows) - 2,
                "metadata": {"leader": lead, "follower": follow, "turns": len(rows) - 2,
                             "question": record.get("question"), "answer_a_type": record.get("answer_a_type"),
                             "answer_b_type": record.get("answer_b_type")},
            })
            turn_rows.extend(rows)
    debate_frame = pd.DataFrame(debates, columns=["id", "debate_key", "kind", "question_id", "model_a", "model_b",
                                                  "criterion", "scenario", "status", "consensus", "n_rounds", "metadata"])
    turn_frame = pd.DataFrame(turn_rows, columns=["debate_id", "round", "position", "speaker", "verdict", "rationale",
                                                  "raw"])
    return debate_frame, turn_frame


def _prd_turn(debate_id: int, rnd: int, position: int, speaker: str, entry: Mapping) -> dict:
    preference = entry.get("preference")
    text = entry.get("justification", entry.get("content", ""))
    return {"debate_id": debate_id, "round": rnd, "position": position, "speaker": speaker,
            "verdict": _PREFERENCE.get(preference), "rationale": text if isinstance(text, str) else "",
            "raw": None if preference is None else str(preference)}


def _rate(altered: pd.Series, challenged: pd.Series) -> np.ndarray:
    """altered / challenged, NaN where the reviewer was never challenged."""
    return np.where(challenged > 0, altered / challenged.where(challenged > 0, 1), np.nan)


def _event(previous: str | None, others: tuple, verdict: str | None) -> str:
    if verdict is None or previous is None or not others or any(o is None for o in others):
        return "unreadable"
    if any(o != previous for o in others):
        return "held" if verdict == previous else "altered"
    return "kept_agreement" if verdict == previous else "changed_after_agreement"


def _verdict_or_none(value) -> str | None:
    return value if isinstance(value, str) and value else None


def _roles(debates: pd.DataFrame, turns: pd.DataFrame) -> dict[int, dict[str, str]]:
    """debate id -> speaker -> "leader" / "follower" (metadata first, else round-0 order)."""
    out: dict[int, dict[str, str]] = {}
    metadata = debates["metadata"] if "metadata" in debates.columns else pd.Series([None] * len(debates), index=debates.index)
    for debate_id, meta in zip(debates["id"], metadata):
        meta = meta if isinstance(meta, Mapping) else {}
        part = turns[turns["debate_id"] == debate_id]
        if isinstance(meta.get("leader"), str):
            roles = {s: "follower" for s in part["speaker"]}
            roles[meta["leader"]] = "leader"
            if isinstance(meta.get("follower"), str):
                roles[meta["follower"]] = "follower"
        else:
            ordered = part.sort_values(["round", "position"], kind="stable")["speaker"]
            speakers = list(dict.fromkeys(ordered))
            roles = {s: ("leader" if k == 0 else "follower") for k, s in enumerate(speakers)}
        out[int(debate_id)] = roles
    return out


def _require(frame: pd.DataFrame, columns: list[str], name: str) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{name} must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} is missing column(s) {missing}")
