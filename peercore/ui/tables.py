"""Tables on the pages: one call that shows a display frame with PeerBoard's number formats.

The formats come from :func:`peercore.reports.number_formats` (win rates and shares
with 3 decimals, ratings with 1, percentages with 2), so the Leaderboard, Bias and
Debates pages print the same kind of number the same way. Cells of ``st.dataframe``
are text already: no Markdown or HTML is rendered in them.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import streamlit as st

from peercore.reports import number_formats

__all__ = ["show", "column_config", "grouped_columns"]


def column_config(frame: pd.DataFrame, *, decimals: Mapping[str, int] | None = None,
                  labels: Mapping[str, str] | None = None, helps: Mapping[str, str] | None = None) -> dict:
    """Number columns with their formats; ``labels`` renames a header on screen (the data keeps its name)."""
    config = {}
    for column, fmt in number_formats(frame, decimals=decimals).items():
        config[column] = st.column_config.NumberColumn((labels or {}).get(column, column), format=fmt,
                                                       help=(helps or {}).get(column))
    for column in {*(labels or {}), *(helps or {})}:
        if column in frame.columns and column not in config:
            config[column] = st.column_config.Column((labels or {}).get(column, column), help=(helps or {}).get(column))
    return config


def show(frame: pd.DataFrame, *, key: str, decimals: Mapping[str, int] | None = None,
         labels: Mapping[str, str] | None = None, helps: Mapping[str, str] | None = None, hide_index: bool = True,
         container=None, **options) -> None:
    """``st.dataframe`` of a display frame, full width, with the shared number formats."""
    target = container if container is not None else st
    target.dataframe(frame, hide_index=hide_index, width="stretch", key=key,
                     column_config=column_config(frame, decimals=decimals, labels=labels, helps=helps), **options)


def grouped_columns(wide: pd.DataFrame, *, digits: int) -> dict:
    """Narrow columns for leaderboards side by side (:func:`peercore.reports.grouped_table`).

    ``score (group)`` shows as the group's name, ``rank (group)`` as ``#``, so four
    groups with their ranks fit a 1366 px screen.
    """
    config = {"model": st.column_config.TextColumn("model", width=160)}
    for column in wide.columns:
        if column.startswith("score ("):
            config[column] = st.column_config.NumberColumn(column[len("score ("):-1], format=f"%.{digits}f",
                                                           width=100, help=f"Score, {column[len('score ('):-1]}")
        elif column.startswith("rank ("):
            config[column] = st.column_config.NumberColumn("#", format="%d", width=45,
                                                           help=f"Rank, {column[len('rank ('):-1]}")
    return config
