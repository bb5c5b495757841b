"""Tables on the pages: one call that shows a display frame with PeerBoard's number formats.

The formats come from :func:`peercore.reports.number_formats` (win rates and shares
with 3 decimals, ratings with 1, percentages with 2), so the Leaderboard, Bias and
Debates pages print the same kind of number the same way. Cells of ``st.dataframe``
are text already: no Markdown or HTML is rendered in them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import pandas as pd
import streamlit as st

from peercore.reports import number_formats

__all__ = ["show", "show_cells", "cell_texts", "MISSING", "with_widths", "column_config", "grouped_columns", "fitted_widths", "telling_width", "FULL_WIDTH"]


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


#: Pixels a full-width table may take on a 1366 px screen with the sidebar open (the grid's own width there).
FULL_WIDTH = 880
_CHAR_PX, _PAD_PX, _MIN_PX, _MAX_PX = 7.6, 28, 56, 420
#: Characters a name keeps beyond the first one that tells it from another (a glyph may be cut in half).
_TELL_MARGIN = 2


def fitted_widths(frame: pd.DataFrame, budget: int, *, labels: Mapping[str, str] | None = None,
                  formats: Mapping[str, str] | None = None, index: bool = False) -> dict[str, int]:
    """Column widths (px) that keep a table within ``budget`` pixels, or {} when it fits as it is.

    Each column's natural width is its longest cell or header; when they add up to more
    than the budget, the widest columns are cut to one common cap (long text then ends
    in "…" in its cell, whole when the cell is opened), never below a header's first
    letters, and never below :func:`telling_width`: a text column (names of models and
    judges) keeps the characters that tell any two of its values apart, so two rows
    never read alike ("local:smollm2-135m" and "local:smollm2-135m@t1.0"), as long as
    the budget holds it, columns to the left first (names lead PeerBoard's tables).
    ``index``: the frame's index is drawn as a first column.
    """
    def natural(name: str, cells: pd.Series, fmt: str | None) -> int:
        if fmt is not None:
            texts = [fmt % v if pd.notna(v) else "" for v in cells]
        else:  # a missing cell is drawn empty ("—" by show_cells); astype(str) may keep NaN as NaN
            texts = ["" if not isinstance(v, str) and pd.isna(v) else str(v) for v in cells]
        longest = max([len(str((labels or {}).get(name, name))) + 2, *map(len, texts)])
        return _px(longest)

    sample = frame.head(200)
    widths = {str(c): natural(str(c), sample[c], (formats or {}).get(str(c))) for c in sample.columns}
    texts = [c for c in frame.columns if str(c) not in (formats or {}) and _is_text(frame[c])]
    floors = {str(c): _floor(frame[c], widths[str(c)], budget, lead=bool(texts) and c == texts[0])
              if str(c) not in (formats or {}) else _MIN_PX for c in frame.columns}
    fixed = max(natural("", pd.Series(sample.index.astype(str)), None), telling_width(frame.index)) if index else 0
    if sum(widths.values()) + fixed <= budget:
        return {}
    floors = _within(floors, budget - fixed)
    low, high = _MIN_PX, max(widths.values())
    while low < high:  # the largest common cap that fits
        cap = (low + high + 1) // 2
        if sum(max(min(w, cap), floors[n]) for n, w in widths.items()) + fixed <= budget:
            low = cap
        else:
            high = cap - 1
    return {name: max(min(w, low), floors[name]) for name, w in widths.items()}


#: The share of a table's width its leading names (models, judges) may keep whole.
_LEAD_SHARE = 0.4
_NUMERIC_TEXT = re.compile(r"^[\s\d.,:%+\-–−—\[\]()/x×]*$")


def _written_numbers(cells: pd.Series) -> bool | None:
    """Whether a column's text is numbers written as text (intervals, rank spreads); None: it holds no text."""
    texts = [v for v in cells.head(200) if isinstance(v, str) and v != ""]
    return all(_NUMERIC_TEXT.match(t) for t in texts) if texts else None


def _is_text(cells: pd.Series) -> bool:
    """Whether a column holds words (names, notes), not numbers or numbers written as text."""
    return _written_numbers(cells) is False


def _floor(cells: pd.Series, natural: int, budget: int, *, lead: bool) -> int:
    """The narrowest a text column may be cut to (before :func:`_within` spends the budget left to right).

    Text made of numbers (an interval "1232.9 – 1282.1", a rank spread "1–2") is never cut:
    a cut number reads as another number. The table's first column of words (the names) keeps them
    whole when that takes at most :data:`_LEAD_SHARE` of the budget ("FuseChat-Llama-3.2-3B-Instruct",
    not "FuseChat-Lla…"); any other text keeps the characters that tell its values apart
    (:func:`telling_width`).
    """
    if _written_numbers(cells):
        return natural
    if lead and natural <= _LEAD_SHARE * budget:
        return natural
    return min(natural, telling_width(cells))


def _within(floors: dict[str, int], budget: int) -> dict[str, int]:
    """The floors kept, left to right, while every column can still have :data:`_MIN_PX` within ``budget``.

    Names come first in PeerBoard's tables (the judge, the model, the debate's id): they keep
    theirs; a long text column further right is cut like any other when the budget is spent.
    """
    total = _MIN_PX * len(floors)
    kept = {}
    for name, floor in floors.items():
        extra = max(0, floor - _MIN_PX)
        kept[name] = floor if total + extra <= budget else _MIN_PX
        total += extra if kept[name] == floor else 0
    return kept


def telling_width(values: Iterable) -> int:
    """Pixels a text column needs so that no two of its different values read alike when cut.

    A value cut after its first ``k`` characters reads like another when they share
    those ``k`` characters; each value needs one more character than its longest common
    prefix with any other (plus :data:`_TELL_MARGIN` for a glyph cut in half), or its
    whole length if shorter. Numbers and missing values need nothing (:data:`_MIN_PX`).
    """
    texts = sorted({str(v) for v in values if isinstance(v, str) and v != ""})
    need = 0
    for before, text, after in zip([None, *texts[:-1]], texts, [*texts[1:], None]):
        shared = max(_common_prefix(text, before), _common_prefix(text, after))
        if before is not None or after is not None:
            need = max(need, min(len(text), shared + 1 + _TELL_MARGIN))
    return _px(need) if need else _MIN_PX


def _common_prefix(a: str, b: str | None) -> int:
    if b is None:
        return 0
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _px(chars: int) -> int:
    """Pixels a column of ``chars`` characters takes (PeerBoard's estimate of the grid's 14 px font)."""
    return int(min(_MAX_PX, max(_MIN_PX, _CHAR_PX * chars + _PAD_PX)))


def show(frame: pd.DataFrame, *, key: str, decimals: Mapping[str, int] | None = None,
         labels: Mapping[str, str] | None = None, helps: Mapping[str, str] | None = None, hide_index: bool = True,
         container=None, budget: int = FULL_WIDTH, **options) -> None:
    """``st.dataframe`` of a display frame with the shared number formats, no wider than ``budget`` pixels.

    ``budget`` is the width the table's place has on a 1366 px screen (:data:`FULL_WIDTH`
    for the whole page, about half of it in a column of two): a table that needs more
    gets narrower columns rather than a cut-off right side.
    """
    target = container if container is not None else st
    config = column_config(frame, decimals=decimals, labels=labels, helps=helps)
    formats = number_formats(frame, decimals=decimals)
    for name, width in fitted_widths(frame, budget, labels=labels, formats=formats, index=not hide_index).items():
        base = config.get(name) or st.column_config.Column((labels or {}).get(name, name))
        base["width"] = width
        config[name] = base
    target.dataframe(frame, hide_index=hide_index, width="stretch", key=key, column_config=config, **options)


def with_widths(frame: pd.DataFrame, config: Mapping[str, dict], *, budget: int = FULL_WIDTH) -> dict:
    """``config`` (a column_config for ``st.dataframe`` / ``st.data_editor``) with widths that fit ``budget`` px.

    For tables :func:`show` cannot draw, such as editable ones; columns without an entry
    get a plain one carrying only the width.
    """
    out = dict(config)
    for name, width in fitted_widths(frame, budget).items():
        base = out.get(name) or st.column_config.Column(name)
        out[name] = {**base, "width": width}
    return out


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


#: How a missing cell reads on every table (the pages' "—", never "None" or "nan").
MISSING = "—"
#: Cells a table may have for :func:`show_cells` to spell each one (pandas' Styler renders every cell).
CELL_BUDGET = 100_000


def cell_texts(frame: pd.DataFrame, *, decimals: Mapping[str, int] | None = None) -> dict:
    """A function per number column that spells a cell as PeerBoard's rule does.

    Float columns with the format :func:`peercore.reports.number_formats` gives them
    (shares 3 decimals, percentages 2, ratings 1); integer columns (counts) with thousands
    separators as the metric cards print them (``f"{n:,}"``), except identifiers (a column
    named ``id`` or ending in ``id``), which are names, not amounts. Missing cells are left
    to the caller (:data:`MISSING`).

    Examples
    --------
    >>> frame = pd.DataFrame({"judgments added": [1600], "P(first)": [0.5], "id": [1234], "judge": ["j"]})
    >>> {name: spell(frame[name][0]) for name, spell in cell_texts(frame).items()}
    {'judgments added': '1,600', 'P(first)': '0.500'}
    """
    formats, out = number_formats(frame, decimals=decimals), {}
    for column in frame.columns:
        values, name = frame[column], str(column)
        if name in formats:
            out[column] = lambda value, fmt=formats[name]: fmt % value
        elif (pd.api.types.is_integer_dtype(values) and not pd.api.types.is_bool_dtype(values)
              and not name.lower().endswith("id")):
            out[column] = lambda value: f"{int(value):,}"
    return out


def show_cells(frame: pd.DataFrame, *, key: str, decimals: Mapping[str, int] | None = None,
               labels: Mapping[str, str] | None = None, helps: Mapping[str, str] | None = None,
               hide_index: bool = True, container=None, budget: int = FULL_WIDTH, **options) -> None:
    """:func:`show` for tables whose every cell must read by the rule: counts and missing cells too.

    ``st.dataframe``'s column formats cover decimals only: an integer column has no
    thousands separator and a missing cell reads "None". Here each cell is spelled by
    :func:`cell_texts` (the same decimals as :func:`show`) through a pandas Styler, so the
    data keep their types (a column still sorts as numbers), and a missing cell is drawn as
    :data:`MISSING` (the grid's placeholder; the Styler's text of a missing cell is the same).
    Tables beyond :data:`CELL_BUDGET` cells are drawn by :func:`show` (missing cells "—",
    counts without separators: a Styler spells every cell on every rerun).
    """
    if frame.size > CELL_BUDGET:
        show(frame, key=key, decimals=decimals, labels=labels, helps=helps, hide_index=hide_index,
             container=container, budget=budget, placeholder=MISSING, **options)
        return
    target = container if container is not None else st
    texts = cell_texts(frame, decimals=decimals)
    drawn = frame.astype(object).where(frame.notna(), MISSING)  # the widths of the texts drawn
    for column, spell in texts.items():
        drawn[column] = [MISSING if pd.isna(v) else spell(v) for v in frame[column]]
    widths = fitted_widths(drawn, budget, labels=labels, index=not hide_index)
    config = {}
    for column in frame.columns:
        name = str(column)
        if name in (labels or {}) or name in (helps or {}) or name in widths:
            config[name] = st.column_config.Column((labels or {}).get(name, name), help=(helps or {}).get(name),
                                                   width=widths.get(name))
    styled = frame.style.format(texts, na_rep=MISSING)
    target.dataframe(styled, hide_index=hide_index, width="stretch", key=key, column_config=config,
                     placeholder=MISSING, **options)  # the grid draws a missing cell with its placeholder
