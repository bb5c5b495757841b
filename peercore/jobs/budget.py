"""Plan what fits: a question limit and a call budget cut a job down instead of refusing it.

A paired job (review, discussion, debate) is a list of questions, each with its
comparison groups: the items of one unordered pair of answers (both presentation
orders when the strategy shows both, every reviewer or criterion). A limit keeps a
subset of the questions; a budget keeps what its calls can pay for:

1. questions are taken in a seeded random order (so a cut is a random sample of the
   study, not its first categories), and kept whole while their calls fit;
2. when not even one whole question fits, the first question's comparison groups are
   kept while they fit (both orders of a pair stay together);
3. only a budget smaller than one comparison group is refused: nothing can be judged.

Every figure is an upper bound ("at most"): debates stop early on consensus, so a
debate's later rounds may never be called. :class:`Plan` says in one sentence what
was left out (shown by ``--dry-run``, the run's first line and the Reviewers page).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from peercore.jobs.base import seeded_rng

__all__ = ["Plan", "limit_questions", "fit_budget"]


@dataclass(frozen=True)
class Plan:
    """What a question limit and a call budget kept of a job.

    Attributes
    ----------
    kept : question id -> number of its comparison groups kept (in study order).
    available : question id -> its comparison groups before the budget (after the limit).
    questions : questions the job could judge before the question limit.
    calls : calls (at most) of every available group; ``kept_calls`` of the kept ones.
    budget, max_questions : the limits asked for (None = none).
    """

    kept: Mapping[str, int]
    available: Mapping[str, int]
    questions: int
    calls: int
    kept_calls: int
    budget: int | None = None
    max_questions: int | None = None

    @property
    def groups(self) -> int:
        return int(sum(self.available.values()))

    @property
    def kept_groups(self) -> int:
        return int(sum(self.kept.values()))

    @property
    def cut(self) -> bool:
        """True when a limit left something out."""
        return self.kept_groups < self.groups or len(self.available) < self.questions

    def note(self) -> str:
        """One sentence saying what was kept and why ('' when nothing was cut)."""
        parts = []
        if len(self.available) < self.questions:
            parts.append(f"question limit {self.max_questions:,}: {len(self.available):,} of {self.questions:,} "
                         "questions (chosen at random, seeded)")
        if self.kept_groups < self.groups:
            text = (f"call budget {self.budget:,}: {len(self.kept):,} of {len(self.available):,} questions, "
                    f"{self.kept_groups:,} of {self.groups:,} comparisons, at most {self.kept_calls:,} of "
                    f"{self.calls:,} calls")
            if any(n < self.available[q] for q, n in self.kept.items()):
                text += " (not one whole question fits: part of one question)"
            parts.append(text)
        return "; ".join(parts) + ("." if parts else "")


def question_order(questions: Sequence[str], *, seed: int) -> list[str]:
    """The questions in a random order fixed by ``seed`` (stable across machines)."""

    rng = seeded_rng(seed, "question order")
    return [questions[k] for k in rng.permutation(len(questions))]


def limit_questions(questions: Sequence[str], max_questions: int | None, *, seed: int) -> list[str]:
    """At most ``max_questions`` of ``questions``, chosen at random (seeded), in their original order.

    Raises
    ------
    ValueError
        If ``max_questions`` is not an integer >= 1 (or None).
    """
    if max_questions is None:
        return list(questions)
    if isinstance(max_questions, bool) or not isinstance(max_questions, (int, np.integer)) or max_questions < 1:
        raise ValueError(f"max_questions must be an integer >= 1 or None, got {max_questions!r}")
    if max_questions >= len(questions):
        return list(questions)
    chosen = set(question_order(questions, seed=seed)[:max_questions])
    return [q for q in questions if q in chosen]


def fit_budget(costs: Mapping[str, Sequence[int]], budget: int | None, *, seed: int, questions: int | None = None,
               max_questions: int | None = None) -> Plan:
    """Keep the comparison groups a call budget pays for, whole questions first.

    Parameters
    ----------
    costs : question id -> the most calls each of its comparison groups can make, in the
        order the groups would run (study order of questions).
    budget : total calls allowed, or None (keep everything).
    seed : seeds the order in which questions are kept.
    questions, max_questions : for the plan's note: how many questions the job had
        before a question limit, and the limit.

    Returns
    -------
    Plan

    Raises
    ------
    ValueError
        If the budget is not an integer >= 1 (or None), or is smaller than the cheapest
        first comparison (the numbers are quoted).
    """
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1):
        raise ValueError(f"budget must be an integer >= 1 or None, got {budget!r}")
    full = {q: len(groups) for q, groups in costs.items()}
    total_calls = int(sum(sum(groups) for groups in costs.values()))
    kept: dict[str, int] = dict(full)
    if budget is not None and total_calls > budget and costs:
        kept = {}
        left = int(budget)
        order = question_order(list(costs), seed=seed)
        for question in order:
            whole = int(sum(costs[question]))
            if whole <= left:
                kept[question] = full[question]
                left -= whole
        if not kept:  # not one whole question fits: the first question's groups, while they fit
            first = order[0]
            n, spent = 0, 0
            for cost in costs[first]:
                if spent + cost > budget:
                    break
                n, spent = n + 1, spent + cost
            if n == 0:
                raise ValueError(f"budget={budget} calls is too small for a single comparison (one costs up to "
                                 f"{costs[first][0]} calls here: reviewers x samples, or agents x rounds); "
                                 f"give at least {costs[first][0]}")
            kept[first] = n
        kept = {q: kept[q] for q in costs if q in kept}  # study order
    kept_calls = int(sum(sum(costs[q][:n]) for q, n in kept.items()))
    return Plan(kept=kept, available=full, questions=questions if questions is not None else len(costs),
                calls=total_calls, kept_calls=kept_calls, budget=budget, max_questions=max_questions)
