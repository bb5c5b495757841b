"""PRD two-reviewer discussion and ScaleEval m-agent debate engines, and their outcomes.

**Peer discussion** (Li, Patel, Du 2023, "PRD", section 3.2). Two reviewers first
review a pair of answers independently; then they take turns, the *leader* first, for
a fixed number of turns, each turn ending with a verdict line (1 or 2). Every turn's
verdict is kept, so opinion altering / holding per turn and the leader effect can be
measured (:func:`discussion_outcomes`, :func:`opinion_changes`). A discussion is run in
both leader orders by :class:`peercore.jobs.DiscussionJob`.

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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

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
    "opinion_changes",
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
        """The shape :meth:`peercore.store.Store.add_debate` takes for a turn."""
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


def opinion_changes(turns: pd.DataFrame) -> pd.DataFrame:
    """Opinion altering and holding, one row per verdict that follows an earlier one.

    For every speaker's verdict after its first in the same debate (or discussion), the
    previous verdict of that speaker, and whether it was *altered* or *held*
    (Li et al. 2023, section 5.2, "opinion altering"). Unreadable verdicts (None) are
    skipped: they neither alter nor hold.

    Parameters
    ----------
    turns : the store's debate turns (:meth:`Store.debate_turns`): ``debate_id, round,
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


def discussion_outcomes(debates: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """One row per stored discussion or debate: initial and final verdicts, agreement, leader effect.

    Parameters
    ----------
    debates : :meth:`Store.debates` (``id, question_id, model_a, model_b, status, consensus, ...``).
    turns : :meth:`Store.debate_turns` of those debates.

    Returns
    -------
    DataFrame indexed like ``debates`` with columns ``debate_id``, ``leader`` (first
    speaker of round 0), ``initially_agreed``, ``finally_agreed`` (all speakers' last
    readable verdicts equal), ``final_verdict`` (the agreed verdict or None),
    ``altered`` / ``held`` (counts over later verdicts, see :func:`opinion_changes`),
    ``followed_leader`` (for debates initially split and finally agreed: whether the
    agreement is the leader's initial verdict; None otherwise) - the quantities of
    PRD section 5 (opinion altering, the leader effect).
    """
    rows = []
    changes = opinion_changes(turns)
    change_counts = changes.groupby("debate_id")["altered"].agg(["sum", "count"]) if len(changes) else None
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
        altered = held = 0
        if change_counts is not None and debate_id in change_counts.index:
            altered = int(change_counts.loc[debate_id, "sum"])
            held = int(change_counts.loc[debate_id, "count"]) - altered
        rows.append({"debate_id": int(debate_id), "leader": leader, "initially_agreed": initially,
                     "finally_agreed": finally_, "final_verdict": final_verdict, "altered": altered,
                     "held": held, "followed_leader": followed})
    out = pd.DataFrame(rows, columns=["debate_id", "leader", "initially_agreed", "finally_agreed", "final_verdict",
                                      "altered", "held", "followed_leader"])
    out.index = debates.index[: len(out)]
    return out
