"""Shared pieces of the importers: careful file reading, record parsing, the import bundle.

Every reader parses and validates a whole input into a :class:`Bundle` *before* anything
touches the database, and every problem raises :class:`~peercore.errors.JudgmentError`
naming the file, the line (or record) and the field, and quoting the bad value.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from peercore.errors import JudgmentError
from peercore.judgments import COLUMNS, concat, empty_judgments

__all__ = [
    "Bundle",
    "fail",
    "read_text",
    "json_records",
    "table_records",
    "check_identifiers",
    "plain",
    "sha256_of",
    "MAX_IDENTIFIER",
    "MAX_LINE_BYTES",
]

# Identifiers (question ids, model, judge, annotator and criterion names) longer than
# this are refused: they are keys, shown in tables and charts, not free text.
MAX_IDENTIFIER = 1000
# A line longer than this is refused before JSON parsing (a JSONL record is one verdict,
# review or answer; 16 MiB is far above any real one, and a corrupt file with no line
# breaks fails with a clear message instead of exhausting memory).
MAX_LINE_BYTES = 16 * 1024 * 1024
# Cells that a spreadsheet would execute as a formula (OWASP "CSV injection").
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")

LineOf = Callable[[int], "int | None"]


def fail(problem: str, *, source: str | Path, line: int | None = None, row: int | None = None,
         column: str | None = None, value: object = None) -> None:
    """Raise the one error type of the importers (a ``ValueError``)."""
    raise JudgmentError(problem, source=str(source), line=line, row=row, column=column, value=plain(value))


def plain(value: object) -> object:
    """numpy scalars as Python values (so messages quote ``3.0``, not ``np.float64(3.0)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _name(path: Path) -> str:
    return path.name or str(path)


@dataclass
class Bundle:
    """Everything one import would write, parsed and validated, not yet stored.

    Attributes
    ----------
    source : the file or folder imported (as given).
    format : the format it was read as.
    questions : ``question_id, text, category, reference, metadata`` (one row per id).
    answers : ``question_id, model, turn, answer``.
    judgments : canonical judgments plus ``valid`` (0 = unparsed verdict) and ``raw``.
    judges : judge registrations (``name, kind, model_alias, settings``).
    debates : ``(debate, turns)`` pairs as :meth:`peercore.store.Store.add_debates` takes them.
    notes : facts worth reporting (e.g. ``unresolved_debates``), JSON-safe.
    files : the files read, for the checksum and the report.
    answer_lines : row -> line of the answers, to name the line in referential errors.
    parts : for a folder, the bundle of each file (errors then name the file).
    """

    source: str
    format: str
    questions: pd.DataFrame = field(default_factory=lambda: empty_questions())
    answers: pd.DataFrame = field(default_factory=lambda: empty_answers())
    judgments: pd.DataFrame = field(default_factory=lambda: with_validity(empty_judgments()))
    judges: list[dict] = field(default_factory=list)
    debates: list[tuple[dict, list[dict]]] = field(default_factory=list)
    notes: dict = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    answer_lines: LineOf | None = None  # where answer row i came from (for referential errors)
    parts: list["Bundle"] = field(default_factory=list)  # the files of a folder import, each as read

    def is_empty(self) -> bool:
        return not (len(self.questions) or len(self.answers) or len(self.judgments) or self.debates)


def empty_questions() -> pd.DataFrame:
    return pd.DataFrame({"question_id": pd.Series([], dtype="str"), "text": pd.Series([], dtype="str"),
                         "category": pd.Series([], dtype="str"), "reference": pd.Series([], dtype=object),
                         "metadata": pd.Series([], dtype=object)})


def empty_answers() -> pd.DataFrame:
    return pd.DataFrame({"question_id": pd.Series([], dtype="str"), "model": pd.Series([], dtype="str"),
                         "turn": pd.Series([], dtype="int64"), "answer": pd.Series([], dtype="str")})


def with_validity(judgments: pd.DataFrame, *, valid=None, raw=None) -> pd.DataFrame:
    """A canonical table plus the store's ``valid`` / ``raw`` columns."""
    out = judgments.copy()
    out["valid"] = 1 if valid is None else valid
    out["valid"] = out["valid"].astype(np.int64)
    out["raw"] = pd.Series(raw, index=out.index, dtype=object) if raw is not None else pd.Series(
        [None] * len(out), index=out.index, dtype=object)
    return out


def merge(bundles: Sequence[Bundle], *, source: str, format: str) -> Bundle:
    """One bundle holding several (a folder of files), refusing contradictory questions."""
    questions = [b.questions for b in bundles if len(b.questions)]
    answers = [b.answers for b in bundles if len(b.answers)]
    judgments = [b.judgments for b in bundles if len(b.judgments)]
    out = Bundle(source=source, format=format)
    if questions:
        out.questions = dedupe_questions(pd.concat(questions, ignore_index=True), source=source)
    if answers:
        out.answers = pd.concat(answers, ignore_index=True)
    if judgments:
        canonical = concat([j[list(COLUMNS)] for j in judgments])
        canonical["valid"] = np.concatenate([j["valid"].to_numpy() for j in judgments])
        canonical["raw"] = pd.concat([j["raw"] for j in judgments], ignore_index=True).astype(object)
        out.judgments = canonical
    seen = set()
    for bundle in bundles:
        for judge in bundle.judges:
            if judge["name"] not in seen:
                seen.add(judge["name"])
                out.judges.append(judge)
        out.debates.extend(bundle.debates)
        out.files.extend(bundle.files)
        for key, value in bundle.notes.items():
            if isinstance(value, (int, float)) and isinstance(out.notes.get(key, 0), (int, float)):
                out.notes[key] = out.notes.get(key, 0) + value
            else:
                out.notes[key] = value
    return out


def dedupe_questions(questions: pd.DataFrame, *, source: str, line_of: LineOf | None = None) -> pd.DataFrame:
    """One row per question id; the same id with two different texts is an error."""
    if len(questions) == 0:
        return questions
    first = questions.drop_duplicates("question_id")
    text_of = dict(zip(first["question_id"], first["text"]))
    for row, (qid, text) in enumerate(zip(questions["question_id"], questions["text"])):
        if text_of[qid] != text:
            fail(f"question_id {qid!r} appears twice with different text ({_short(text_of[qid])!r} and "
                 f"{_short(text)!r}); question ids must be unique", source=source,
                 line=line_of(row) if line_of else None, row=None if line_of else row, column="question_id", value=qid)
    return first.reset_index(drop=True)


def _short(text: object, limit: int = 60) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "..."


# ------------------------------------------------------------------------------ files


def sha256_of(paths: Iterable[Path]) -> str:
    """SHA-256 of the files' bytes in sorted path order (one file: its own digest)."""
    digest = hashlib.sha256()
    paths = sorted(Path(p) for p in paths)
    for path in paths:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        fail("is a folder, expected a file", source=path)
    except OSError as exc:
        fail(f"cannot read the file ({exc.strerror})", source=path)
    if not raw:
        fail("the file is empty (0 bytes)", source=_name(path))
    return raw


def read_text(path: Path) -> str:
    """The file as UTF-8 text (a BOM is dropped); errors name the line of a bad byte."""
    raw = read_bytes(path)
    name = _name(path)
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        fail("the file is UTF-16 text; save it as UTF-8", source=name, line=1)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        fail(f"the file is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
             "save it as UTF-8", source=name, line=line)
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        fail("the file holds a NUL byte; is it binary?", source=name, line=line)
    return text


def _no_duplicate_keys(line: int | None, name: str):
    def hook(pairs: list[tuple[str, object]]) -> dict:
        out: dict = {}
        for key, value in pairs:
            if key in out:
                fail(f"field {key!r} appears twice in one record", source=name, line=line, column=key)
            out[key] = value
        return out

    return hook


def _reject_constant(token: str):
    raise ValueError(f"{token} is not valid JSON (use null or a number)")


def _loads(text: str, *, name: str, line: int | None):
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys(line, name), parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        where = line if line is not None else exc.lineno
        fail(f"not valid JSON ({exc.msg} at column {exc.colno})", source=name, line=where)
    except ValueError as exc:
        if isinstance(exc, JudgmentError):
            raise
        fail(f"not valid JSON ({exc})", source=name, line=line)
    except RecursionError:
        fail("not valid JSON (nested too deeply)", source=name, line=line)


def json_records(path: Path, *, text: str | None = None) -> tuple[list[dict], list[int]]:
    """Records of a JSONL file or of a JSON array (even one named ``.jsonl``), with their lines.

    Every record must be a JSON object without repeated fields; NaN / Infinity are
    refused. A line longer than :data:`MAX_LINE_BYTES` is refused before parsing.
    """
    name = _name(path)
    text = read_text(path) if text is None else text
    stripped = text.lstrip()
    if not stripped:
        fail("the file holds only blank lines; expected records", source=name)
    if stripped.startswith("["):
        return _json_array(text, name)
    records, lines = [], []
    for number, line in enumerate(text.split("\n"), start=1):
        if len(line) > MAX_LINE_BYTES:
            fail(f"line is {len(line):,} characters long (limit {MAX_LINE_BYTES:,}); is this a JSONL file?",
                 source=name, line=number)
        if not line.strip():
            continue
        record = _loads(line, name=name, line=number)
        if not isinstance(record, dict):
            fail(f"expected a JSON object per line, got {type(record).__name__} ({_short(line)!r})",
                 source=name, line=number)
        records.append(record)
        lines.append(number)
    if not records:
        fail("the file holds no records", source=name)
    return records, lines


def _json_array(text: str, name: str) -> tuple[list[dict], list[int]]:
    """Elements of a top-level JSON array with the line each starts on."""
    start = text.index("[")
    data = _loads(text, name=name, line=None)  # full validation (duplicates, NaN) with line numbers
    if not isinstance(data, list):
        fail("expected a JSON array of records", source=name)
    lines = _LazyLines(text, start, len(data))
    for index, record in enumerate(data):
        if not isinstance(record, dict):
            fail(f"expected a JSON object for record {index + 1}, got {type(record).__name__}",
                 source=name, line=lines[index])
    if not data:
        fail("the JSON array is empty; expected records", source=name)
    return data, lines


class _LazyLines(Sequence):
    """Line of each element of a JSON array, found by one scan on first use (errors only, usually)."""

    def __init__(self, text: str, start: int, count: int) -> None:
        self._text, self._start, self._count, self._lines = text, start, count, None

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index):
        if self._lines is None:
            self._lines = _array_element_lines(self._text, self._start, self._count)
            self._text = None
        return self._lines[index]


def _array_element_lines(text: str, start: int, count: int) -> list[int]:
    """Line on which each of the ``count`` top-level elements starts (one scan, no parsing)."""
    lines: list[int] = []
    depth = 0
    in_string = escape = False
    line = text.count("\n", 0, start) + 1
    expecting = True
    for char in text[start + 1:]:
        if char == "\n":
            line += 1
        if in_string:
            if escape:
                escape = False
            elif char == "\\":
                escape = True
            elif char == '"':
                in_string = False
            continue
        if expecting and not char.isspace() and char not in ",]":
            lines.append(line)
            expecting = False
        if char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth < 0:
                break
        elif char == "," and depth == 0:
            expecting = True
    return lines if len(lines) == count else [None] * count


def table_records(path: Path, *, format: str | None = None) -> tuple[pd.DataFrame, LineOf]:
    """A CSV / JSONL / JSON / Parquet file as a DataFrame of raw values, and row -> line.

    CSV cells are strings (empty cell = missing); a repeated header name is refused.
    """
    name = _name(path)
    kind = format or file_kind(path)
    if kind == "csv":
        return _csv_frame(path, name)
    if kind == "parquet":
        read_bytes(path)  # 0-byte check
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            fail(f"not a readable Parquet file ({type(exc).__name__}: {exc})", source=name)
        if len(set(frame.columns)) != len(frame.columns):
            fail("repeated column names", source=name)
        if len(frame) == 0:
            fail("the file holds no rows", source=name)
        return frame, lambda row: None
    records, lines = json_records(path)
    return pd.DataFrame.from_records(records), lambda row: lines[row] if row < len(lines) else None


def file_kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "json"
    fail(f"cannot tell the file type from the extension {suffix!r}; use .csv, .jsonl, .json or .parquet",
         source=_name(path))


def _csv_frame(path: Path, name: str) -> tuple[pd.DataFrame, LineOf]:
    text = read_text(path)
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        header = next(csv.reader(io.StringIO(text), delimiter=delimiter))
    except StopIteration:
        fail("the file holds no header", source=name)
    except csv.Error as exc:
        fail(f"not valid CSV ({exc})", source=name, line=1)
    header = [h.strip() for h in header]
    seen: dict[str, int] = {}
    for position, column in enumerate(header):
        if column in seen:
            fail(f"column {column!r} appears twice in the header (positions {seen[column] + 1} and {position + 1})",
                 source=name, line=1, column=column)
        seen[column] = position
    if any(len(line) > MAX_LINE_BYTES for line in text.split("\n")):
        number = next(i for i, line in enumerate(text.split("\n"), start=1) if len(line) > MAX_LINE_BYTES)
        fail(f"line is longer than {MAX_LINE_BYTES:,} characters; is this a CSV file?", source=name, line=number)
    try:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_values=[""],
                            skip_blank_lines=True, sep=delimiter)
    except pd.errors.EmptyDataError:
        fail("the file holds no header and no rows", source=name)
    except pd.errors.ParserError as exc:
        message = " ".join(str(exc).split())
        found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", message)
        if found:
            fail(f"not valid CSV: {found[3]} fields where the header has {found[1]}", source=name, line=int(found[2]))
        fail(f"not valid CSV ({message})", source=name)
    frame.columns = [str(c).strip() for c in frame.columns]
    if len(frame) == 0:
        fail("the file holds a header but no rows", source=name, line=1)
    return frame, lambda row: _csv_line_of(text, row, delimiter)


def _csv_line_of(text: str, row: int, delimiter: str) -> int:
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    next(reader, None)
    index = 0
    for record in reader:
        if not record or all(not cell.strip() for cell in record):
            continue
        if index == row:
            return reader.line_num
        index += 1
    return row + 2


# ------------------------------------------------------------------------ checks


def check_identifiers(frame: pd.DataFrame, columns: Sequence[str], *, source: str, line_of: LineOf | None) -> None:
    """Refuse keys that are too long, hold line breaks, or start like a spreadsheet formula.

    Identifiers (question ids, model, judge, annotator, criterion names) end up in CSV
    exports and dashboards; one starting with ``=``, ``+``, ``-``, ``@``, tab or CR is
    what a formula-injection payload looks like, so it is rejected at the door rather
    than carried around (exports also neutralise cells, see :mod:`peercore.io.export`).
    """
    for column in columns:
        if column not in frame.columns:
            continue
        values = frame[column]
        text = values.astype(object).where(values.notna(), None)
        for row, value in enumerate(text.tolist()):
            if value is None:
                continue
            value = str(value)
            problem = None
            stripped = value.strip()
            if stripped.startswith(FORMULA_PREFIXES) or value.startswith(FORMULA_PREFIXES):
                problem = (f"{column} {_short(value)!r} starts with {stripped[:1] or value[:1]!r} like a spreadsheet "
                           "formula (CSV injection); rename it")
            elif len(value) > MAX_IDENTIFIER:
                problem = f"{column} is {len(value):,} characters long (limit {MAX_IDENTIFIER:,}); is it in the right column?"
            elif "\n" in value or "\r" in value or "\x00" in value:
                problem = f"{column} {_short(value)!r} holds a line break; identifiers are one line"
            if problem:
                fail(problem, source=source, line=line_of(row) if line_of else None,
                     row=None if line_of and line_of(row) else row, column=column, value=_short(value, 80))


def require_columns(frame: pd.DataFrame, columns: Sequence[str], *, source: str, what: str,
                    line: int | None = 1) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        found = ", ".join(map(str, frame.columns)) or "none"
        fail(f"missing required column(s) {', '.join(missing)} for {what} (found: {found})", source=source, line=line)


def text_column(frame: pd.DataFrame, column: str, *, source: str, line_of: LineOf | None,
                required: bool = True) -> pd.Series:
    """A column as stripped text ("str" dtype); empty required values are named."""
    from peercore.judgments import _as_text

    values = _as_text(frame[column]) if column in frame.columns else pd.Series(np.nan, index=frame.index, dtype="str")
    if required:
        empty = (values.isna() | (values.str.strip() == "")).to_numpy(dtype=bool)
        if empty.any():
            row = int(np.flatnonzero(empty)[0])
            fail(f"{column} is empty; every row needs one", source=source,
                 line=line_of(row) if line_of else None, row=row, column=column, value=frame[column].iloc[row])
    return values.str.strip()


def whole_numbers(frame: pd.DataFrame, column: str, *, source: str, line_of: LineOf | None,
                  default: int | None = None) -> pd.Series:
    """A column of whole numbers (Int64); a non-number is named with its line."""
    if column not in frame.columns:
        return pd.Series(pd.array([default] * len(frame), dtype="Int64"), index=frame.index)
    raw = frame[column]
    numbers = pd.to_numeric(raw.astype(object).where(raw.notna()), errors="coerce")
    given = raw.notna().to_numpy()
    with np.errstate(invalid="ignore"):
        bad = given & (numbers.isna().to_numpy() | (numbers.to_numpy(dtype=float, na_value=np.nan) % 1 != 0))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        fail(f"{column} {raw.iloc[row]!r} is not a whole number", source=source,
             line=line_of(row) if line_of else None, row=row, column=column, value=raw.iloc[row])
    out = numbers.astype("Int64")
    if default is not None:
        out = out.fillna(default)
    return out


def is_missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
