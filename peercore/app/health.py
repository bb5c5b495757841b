"""Judge health: does a judge's verdict carry information? (``peercore review``'s report, every page's flags)."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from peercore.app.study import Study
from peercore.domain.options import RepeatedVotes
from peercore.domain.selection import Selection
from peercore.position import judge_health

__all__ = ["health_facts", "health", "flagged_judges", "HEALTH_SELECTION"]

# Every reply of the study's LLM judges, unparsed ones included, each vote counted, final rounds only.
HEALTH_SELECTION = Selection(kinds=("llm",), repeated_votes=RepeatedVotes.EACH)


def health(study: Study, judges: Iterable[str] | None = None, *, level: float = 0.95) -> pd.DataFrame:
    """:func:`peercore.position.judge_health` of the study's LLM judges (or of ``judges`` among them),
    once per revision and ``level`` (the pages' flags and the evaluator leaderboard share it)."""
    table = study.cached(("health", level), lambda: _health(study, level))
    if judges is not None:
        table = table[table.index.isin(list(judges))]
    return table


def _health(study: Study, level: float) -> pd.DataFrame:
    return judge_health(study.select(HEALTH_SELECTION, include_invalid=True).verdicts, level=level)


def flagged_judges(study: Study, judges: Iterable[str] | None = None) -> dict[str, str]:
    """judge -> why it is flagged as carrying no information (:func:`health`)."""
    table = health(study, judges)
    return {j: r for j, r, f in zip(table.index, table["reasons"], table["flagged"]) if f}


def health_facts(row) -> str:
    """One judge's health row (:func:`health`) in words, the same on the CLI and the pages.

    ``"1,600 replies, P(first) 0.512 [0.487, 0.537], identical 2.50%, unparsed 0.00%"``:
    P(first) over decisive verdicts with its Wilson 95% interval ("n/a" when no pair was
    judged decisively), identical verdicts and unparsed replies as percentages ("—" when
    unknown): the dashboard's formatting rule (shares 3 decimals, percentages 2).
    """
    def percent(value) -> str:
        return "—" if value != value else f"{value:.2%}"  # NaN: unknown

    bias = ("n/a (no decisive verdict)" if row["n_decisive"] == 0
            else f"{row['p_first']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]")
    return (f"{int(row['n']):,} replies, P(first) {bias}, identical {percent(row['identical_share'])}, "
            f"unparsed {percent(row['invalid_share'])}")
