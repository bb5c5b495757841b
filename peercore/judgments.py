"""The canonical judgment table: one row per verdict, by any judge.

Every other part of peercore (rankings, bias, agreement, the store, the dashboard)
consumes this one shape, described in DESIGN.md:

========== ======================= ==================================================
column     type                    meaning
========== ======================= ==================================================
question_id str                     the prompt both answers respond to
model_a    str                     contestant whose answer was shown first
model_b    str                     contestant whose answer was shown second
judge      str                     ``openai:gpt-4o``, ``human:alice``, ``debate:...``
winner     str                     ``model_a``, ``model_b`` or ``tie``
p_a        float, optional         probability that model_a's answer is better
criterion  str, optional           e.g. helpfulness
turn       int, optional           MT-Bench turn
round      int, optional           discussion / debate round
rationale  str, optional           the judge's explanation
========== ======================= ==================================================

``tie (bothbad)`` (Chatbot Arena) reads as ``tie``. Optional columns are always present
in the returned frame, filled with missing values when the input lacks them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from peercore.errors import JudgmentError
from peercore.io.rules import INTEGER_BOUNDS, column_list, is_scalar, kind_of, quote

__all__ = [
    "COLUMNS",
    "REQUIRED_COLUMNS",
    "WINNERS",
    "judgments_from_frame",
    "empty_judgments",
    "mirror",
]

REQUIRED_COLUMNS: tuple[str, ...] = ("question_id", "model_a", "model_b", "judge", "winner")
OPTIONAL_TEXT_COLUMNS: tuple[str, ...] = ("criterion", "rationale")
OPTIONAL_INT_COLUMNS: tuple[str, ...] = ("turn", "round")
COLUMNS: tuple[str, ...] = REQUIRED_COLUMNS + ("p_a", "criterion", "turn", "round", "rationale")
WINNERS: tuple[str, ...] = ("model_a", "model_b", "tie")
_WINNER_ALIASES = {"model_a": "model_a", "model_b": "model_b", "tie": "tie", "tie (bothbad)": "tie"}
_TEXT_DTYPE = "str"  # pandas >= 3: Arrow-backed strings, NaN for missing
_FORMATS = ("csv", "jsonl", "parquet")


def empty_judgments() -> pd.DataFrame:
    """A canonical judgment table with no rows (all columns, canonical dtypes)."""
    frame = pd.DataFrame({column: pd.Series([], dtype=object) for column in COLUMNS})
    return _cast(frame)


def judgments_from_frame(frame: pd.DataFrame, *, source: str | None = None) -> pd.DataFrame:
    """Validate a DataFrame and return it in the canonical judgment shape.

    Parameters
    ----------
    frame : DataFrame with at least the columns ``question_id, model_a, model_b, judge,
        winner``; the optional canonical columns are used when present, other columns are
        dropped.
    source : name to quote in error messages (a file name), or None.

    Returns
    -------
    DataFrame
        Exactly the canonical columns, in canonical order, with a fresh RangeIndex.
        In a DataFrame a missing ``p_a`` (None or NaN) means "not given"; files are
        stricter (see :func:`peercore.io.canonical.read_judgments`).

    Raises
    ------
    JudgmentError
        (a ``ValueError``) naming the row, the column and the value (quoted escaped, at
        most 80 characters), when a required column is missing, a value is a list or
        an object instead of one value, a required value is empty, ``winner`` is not
        model_a / model_b / tie, ``model_a == model_b``, ``p_a`` is not a number (a
        boolean, the text 'NaN') or is outside [0, 1] (Infinity included), or ``turn``
        / ``round`` is not a whole number within
        :data:`peercore.io.rules.INTEGER_BOUNDS` (0 to 1,000).
    """
    return _validate(frame, source=source, line_of=None)


def mirror(judgments: pd.DataFrame) -> pd.DataFrame:
    """The same verdicts with the two answers' positions swapped.

    ``model_a`` and ``model_b`` trade places, ``winner`` model_a <-> model_b, and
    ``p_a`` becomes ``1 - p_a``. Useful for "doubled" human reviews (PRD) and for
    position-bias tests.
    """
    out = judgments.copy()
    out["model_a"], out["model_b"] = judgments["model_b"], judgments["model_a"]
    out["winner"] = judgments["winner"].map({"model_a": "model_b", "model_b": "model_a", "tie": "tie"})
    out["p_a"] = 1.0 - judgments["p_a"]
    return _cast(out)


# -------------------------------------------------------------------------- validation


def _missing_whole_numbers(n: int) -> pd.arrays.IntegerArray:
    """``n`` missing whole numbers (``Int64``), made from a mask, not from a list of ``n`` ``pd.NA``s (0.15 s a million)."""
    return pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))


def _validate(frame: pd.DataFrame, *, source: str | None, line_of) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"judgments must be a pandas DataFrame, got {type(frame).__name__}")
    frame = frame.reset_index(drop=True)
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        found = column_list(frame.columns) or "none"
        raise JudgmentError(
            f"missing required column(s) {', '.join(missing)} (found: {found})",
            source=source,
            line=1 if line_of is not None else None,
        )

    def fail(mask: np.ndarray, column: str, problem) -> None:
        bad = np.flatnonzero(mask)
        if bad.size == 0:
            return
        row = int(bad[0])
        value = frame[column].iloc[row]
        if isinstance(value, np.generic):
            value = value.item()
        more = f" ({bad.size - 1} more row(s) like this)" if bad.size > 1 else ""
        raise JudgmentError(
            problem(value) + more,
            source=source,
            line=line_of(row) if line_of is not None else None,
            row=row,
            column=column,
            value=value,
        )

    for column in COLUMNS:  # one value per field: a list or an object is not a name or a number
        if column in frame.columns:
            fail(_non_scalar(frame[column]), column,
                 lambda v, c=column: f"{c} is {kind_of(v)} ({quote(v)}); one value is expected")

    out = pd.DataFrame(index=frame.index)
    for column in ("question_id", "model_a", "model_b", "judge"):
        values = _as_text(frame[column])
        fail(values.isna().to_numpy() | (values.str.strip() == "").fillna(False).to_numpy(), column,
             lambda v: f"{column} is empty ({quote(v)}); every judgment needs one")
        out[column] = values.str.strip()

    winner = _as_text(frame["winner"]).str.strip().str.lower()
    codes, names = pd.factorize(winner)  # map the distinct values, not every row (no Python string per row)
    mapped = np.array([_WINNER_ALIASES.get(name) for name in names] + [None], dtype=object)
    canonical = pd.Series(pd.array(mapped[codes], dtype=_TEXT_DTYPE), index=winner.index)
    fail(canonical.isna().to_numpy(), "winner",
         lambda v: f"winner {quote(v)} is not one of model_a, model_b, tie (or 'tie (bothbad)')")
    out["winner"] = canonical

    fail((out["model_a"] == out["model_b"]).to_numpy(), "model_b",
         lambda v: f"model_a and model_b are both {quote(v)}; a judgment compares two different models")

    if "p_a" in frame.columns:
        out["p_a"] = _as_probability(frame["p_a"], fail)
    else:
        out["p_a"] = np.nan
    for column in OPTIONAL_TEXT_COLUMNS:
        out[column] = _as_text(frame[column]) if column in frame.columns else pd.Series(np.nan, index=out.index, dtype=_TEXT_DTYPE)
    for column in OPTIONAL_INT_COLUMNS:
        out[column] = (_as_whole_number(frame[column], column, fail) if column in frame.columns
                       else _missing_whole_numbers(len(out)))
    return _cast(out[list(COLUMNS)])


def _non_scalar(series: pd.Series) -> np.ndarray:
    """Rows holding a list, an object or an array (only object columns can)."""
    if series.dtype != object:
        return np.zeros(len(series), dtype=bool)
    return np.fromiter((not is_scalar(v) for v in series.tolist()), dtype=bool, count=len(series))


def _as_text(series: pd.Series) -> pd.Series:
    if series.dtype == _TEXT_DTYPE:
        return series
    if isinstance(series.dtype, pd.StringDtype):
        return series.astype(_TEXT_DTYPE)
    if series.isna().all():
        return pd.Series(np.nan, index=series.index, dtype=_TEXT_DTYPE)
    return series.astype(object).map(_to_text).astype(_TEXT_DTYPE)


def _to_text(value: object) -> object:
    """JSON/Parquet ids may be numbers: 1 -> "1", 1.0 -> "1"; None/NaN -> missing."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return pd.NA
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, (bool, np.bool_)):
        return str(value).lower()
    return str(value)


def _booleans(series: pd.Series) -> np.ndarray:
    """Rows holding true / false (a boolean is not a number here)."""
    if pd.api.types.is_bool_dtype(series.dtype):
        return series.notna().to_numpy(dtype=bool)
    if series.dtype != object:
        return np.zeros(len(series), dtype=bool)
    return np.fromiter((isinstance(v, (bool, np.bool_)) for v in series.tolist()), dtype=bool, count=len(series))


def _as_probability(series: pd.Series, fail) -> pd.Series:
    fail(_booleans(series), "p_a", lambda v: f"p_a {quote(v)} is not a number; give a probability in [0, 1] or leave "
                                             "it empty")
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        numbers = series.astype(float)
    else:
        given = series.notna()
        text = series.where(given).astype(object)
        numbers = pd.to_numeric(text, errors="coerce").astype(float)
        literal_nan = given.to_numpy() & text.map(lambda v: isinstance(v, str) and v.strip().lower() in ("nan", "-nan", "+nan")).to_numpy(dtype=bool)
        not_number = given.to_numpy() & (numbers.isna().to_numpy() | literal_nan)
        fail(not_number, "p_a", lambda v: f"p_a {quote(v)} is not a number; give a probability in [0, 1] or leave it empty")
    values = numbers.to_numpy()
    with np.errstate(invalid="ignore"):
        out_of_range = ~np.isnan(values) & ~((values >= 0.0) & (values <= 1.0))
    fail(out_of_range, "p_a", lambda v: f"p_a {quote(v)} is outside [0, 1]")
    return numbers


def whole_number_problems(series: pd.Series, column: str) -> tuple[pd.Series, list]:
    """(numbers as float, [(mask, problem), ...]) for a column of whole numbers.

    In order: a boolean, something that is not a finite whole number, a number outside
    :data:`peercore.io.rules.INTEGER_BOUNDS` (when the column has bounds). Missing values
    are fine. Shared by every reader, so each refuses the same values the same way.
    """
    booleans = _booleans(series)
    numbers = pd.to_numeric(series.astype(object).where(series.notna() & ~booleans), errors="coerce")
    given = series.notna().to_numpy() & ~booleans
    values = numbers.to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        not_whole = given & (np.isnan(values) | ~np.isfinite(values) | (values % 1 != 0))
    problems = [(booleans, lambda v: f"{column} {quote(v)} is not a whole number"),
                (not_whole, lambda v: f"{column} {quote(v)} is not a whole number")]
    bounds = INTEGER_BOUNDS.get(column)
    if bounds is not None:
        low, high = bounds
        with np.errstate(invalid="ignore"):
            outside = given & ~not_whole & ((values < low) | (values > high))
        problems.append((outside, lambda v: f"{column} {quote(v)} is out of range (a whole number from {low:,} to "
                                            f"{high:,})"))
    return numbers, problems


def _as_whole_number(series: pd.Series, column: str, fail) -> pd.Series:
    numbers, problems = whole_number_problems(series, column)
    for mask, problem in problems:
        fail(mask, column, problem)
    return numbers.astype("Int64")


def _cast(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.reset_index(drop=True)
    for column in REQUIRED_COLUMNS + OPTIONAL_TEXT_COLUMNS:
        if out[column].dtype != _TEXT_DTYPE:
            out[column] = _as_text(out[column])
    if out["p_a"].dtype != np.float64:
        out["p_a"] = pd.to_numeric(out["p_a"], errors="coerce").astype(float)
    for column in OPTIONAL_INT_COLUMNS:
        if out[column].dtype != "Int64":
            if out[column].isna().all():
                out[column] = _missing_whole_numbers(len(out))
            else:
                out[column] = pd.to_numeric(out[column], errors="coerce").astype("Int64")
    return out


def concat(frames: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate canonical tables, keeping canonical dtypes."""
    frames = list(frames)
    if not frames:
        return empty_judgments()
    return _cast(pd.concat(frames, ignore_index=True))
