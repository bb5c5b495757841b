"""Discussions & debates page glue: which columns its wide tables show at a laptop's width.

The list of transcripts has fourteen columns, the leader-effect table nine and the opinion
table eight: at 1366 px
nearly every one of them was cut. By default each shows the columns a reader needs to pick
a debate or compare reviewers (names first, never cut); an "Every column" toggle adds the
rest. The frames come from :mod:`peercore.reports` and keep their column names, so the
CLI's and the page's tables read alike; :func:`peercore.ui.tables.show` draws them.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["LIST_SHOWN", "LEADER_SHOWN", "OPINION_SHOWN", "chosen_columns", "list_columns", "leader_columns",
           "opinion_columns"]

#: The transcript list's default columns (:func:`peercore.reports.debate_list_display`): which debate,
#: between whom, how it ended and whether anyone changed their mind.
LIST_SHOWN = ["id", "kind", "question", "submission 1", "submission 2", "status", "consensus", "opinion changed"]
#: The leader-effect table's default columns (:func:`peercore.reports.leader_display`, PRD Fig. 6): held,
#: altered and the altering rate in each role; the changes made after agreement are one toggle away.
LEADER_SHOWN = ["leader held", "leader altered", "leader altering rate",
                "follower held", "follower altered", "follower altering rate"]

#: The opinion table's default columns (:func:`peercore.reports.opinion_display`, PRD section 5); the
#: changes made after both had agreed (counted apart) are one toggle away.
OPINION_SHOWN = ["speaker", "role", "discussions", "challenged turns", "held", "altered", "altering rate"]


def chosen_columns(frame: pd.DataFrame, shown: list[str], *, every_column: bool = False) -> pd.DataFrame:
    """``frame`` with only the ``shown`` columns (in the frame's order), or all of them with ``every_column``.

    A shown column the frame lacks is ignored; the index is kept.

    Examples
    --------
    >>> frame = pd.DataFrame({"id": [1], "kind": ["debate"], "speakers": [3]})
    >>> list(chosen_columns(frame, ["id", "kind"]).columns)
    ['id', 'kind']
    >>> list(chosen_columns(frame, ["id", "kind"], every_column=True).columns)
    ['id', 'kind', 'speakers']
    """
    if every_column:
        return frame
    return frame[[c for c in frame.columns if c in shown]]


def list_columns(frame: pd.DataFrame, *, every_column: bool = False) -> pd.DataFrame:
    """The transcript list (:func:`peercore.reports.debate_list_display`) with its default columns."""
    return chosen_columns(frame, LIST_SHOWN, every_column=every_column)


def leader_columns(frame: pd.DataFrame, *, every_column: bool = False) -> pd.DataFrame:
    """The leader-effect table (:func:`peercore.reports.leader_display`) with its default columns."""
    return chosen_columns(frame, LEADER_SHOWN, every_column=every_column)


def opinion_columns(frame: pd.DataFrame, *, every_column: bool = False) -> pd.DataFrame:
    """The opinion table (:func:`peercore.reports.opinion_display`) with its default columns."""
    return chosen_columns(frame, OPINION_SHOWN, every_column=every_column)
