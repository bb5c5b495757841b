"""Exports: judgments and leaderboards as CSV, JSONL or Parquet (files or bytes).

CSV is what people open in a spreadsheet, and a cell starting with ``=``, ``+``, ``-``,
``@``, tab or carriage return is executed there as a formula ("CSV injection", OWASP).
Every text cell of a CSV export that starts like that gets a leading single quote,
which spreadsheets display but do not execute; numbers are written as numbers and are
not touched (a negative score stays ``-0.5``). JSONL and Parquet are data formats and
are written unchanged.

The dashboard calls :func:`table_bytes` (for download buttons), the CLI
:func:`write_table`; what a study's export holds is :mod:`peercore.app.exports`.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import BinaryIO

import pandas as pd

from peercore.io.formats import EXPORT_FORMATS, EXPORT_WHAT

__all__ = [
    "EXPORT_FORMATS",
    "EXPORT_WHAT",
    "FORMULA_PREFIXES",
    "neutralise_formulas",
    "table_bytes",
    "write_table",
]

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells starting with = + - @ tab CR get a leading ``'``.

    Only text columns are changed (numbers stay numbers); missing values stay missing.
    Column names are neutralised too. Following OWASP's CSV-injection advice, the quote
    is prefixed rather than the character removed, so nothing is lost.
    """
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if not (values.dtype == object or values.dtype == "str" or isinstance(values.dtype, pd.StringDtype)):
            continue
        as_object = values.astype(object)
        risky = as_object.map(lambda v: isinstance(v, str) and v.startswith(FORMULA_PREFIXES)).to_numpy(dtype=bool)
        if risky.any():
            fixed = as_object.where(~risky, "'" + as_object.astype(str))
            out[column] = fixed.astype(values.dtype) if values.dtype != object else fixed
    out.columns = ["'" + c if isinstance(c, str) and c.startswith(FORMULA_PREFIXES) else c for c in out.columns]
    return out


def table_bytes(frame: pd.DataFrame, *, format: str) -> bytes:
    """The table as bytes in ``format`` (``csv`` neutralised, ``jsonl``, ``parquet``)."""
    buffer = io.BytesIO()
    write_table(frame, buffer, format=format)
    return buffer.getvalue()


def write_table(frame: pd.DataFrame, destination: str | os.PathLike[str] | BinaryIO, *, format: str) -> None:
    """Write a table to a path or a binary file object.

    Parameters
    ----------
    frame : any table (a canonical judgment table, a leaderboard, ...).
    destination : file path, or a binary file object (e.g. ``sys.stdout.buffer``).
    format : ``csv`` (UTF-8, header, formula cells neutralised), ``jsonl`` (one JSON
        object per row, missing values as null) or ``parquet``.

    Raises
    ------
    ValueError
        If ``format`` is not one of :data:`EXPORT_FORMATS`.
    """
    if format not in EXPORT_FORMATS:
        raise ValueError(f"format must be one of {', '.join(EXPORT_FORMATS)}; got {format!r}")
    if format == "csv":
        data = neutralise_formulas(frame).to_csv(index=False, lineterminator="\n").encode("utf-8")
    elif format == "jsonl":
        data = _jsonl(frame).encode("utf-8")
    else:
        buffer = io.BytesIO()
        frame.reset_index(drop=True).to_parquet(buffer, index=False)
        data = buffer.getvalue()
    if isinstance(destination, (str, os.PathLike)):
        Path(destination).write_bytes(data)
    else:
        destination.write(data)


def _jsonl(frame: pd.DataFrame) -> str:
    if len(frame) == 0:
        return ""
    text = frame.reset_index(drop=True).to_json(orient="records", lines=True, force_ascii=False, double_precision=15)
    return text if text.endswith("\n") else text + "\n"
