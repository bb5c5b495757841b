"""Shared pieces of the importers: careful file reading, record parsing, the import bundle.

Every reader parses and validates a whole input into a :class:`Bundle` *before* anything
touches the database, and every problem raises :class:`~peercore.errors.JudgmentError`
naming the file, the line (or record) and the field, and quoting the bad value (escaped,
at most 80 characters). The rules and budgets themselves live in
:mod:`peercore.io.rules`, so every read path applies the same ones.
"""

from __future__ import annotations

import codecs
import csv
from array import array
import hashlib
import io
import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from peercore.errors import JudgmentError
from peercore.io.rules import (
    INTEGER_BOUNDS,
    INVISIBLE,
    MAX_IDENTIFIER,
    MAX_LINE_BYTES,
    MAX_LISTED_RECORDS,
    MAX_ROWS,
    check_record_depth,
    column_list,
    describe_character,
    invisible_character,
    is_scalar,
    kind_of,
    line_too_long,
    array_element_lines,
    longest_line,
    parquet_table,
    parse_json,
    quote,
)
from peercore.judgments import COLUMNS, _as_text, concat, empty_judgments, whole_number_problems

__all__ = [
    "Bundle",
    "fail",
    "read_text",
    "validated_bytes",
    "json_records",
    "table_records",
    "check_identifiers",
    "plain",
    "quote",
    "sha256_of",
    "MAX_IDENTIFIER",
    "MAX_LINE_BYTES",
]

# Cells that a spreadsheet would execute as a formula (OWASP "CSV injection").
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
# What str.strip() removes (str.isspace), for the same test on Arrow columns.
_PY_SPACE = "\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}" \
            "\\x{202f}\\x{205f}\\x{3000}"
_FORMULA_START = f"^[{_PY_SPACE}]*[=+\\-@\\t\\r]"

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
    debates : ``(debate, turns)`` pairs as :meth:`peercore.store.Store.debates.add_many` takes them.
    notes : facts worth reporting (e.g. ``unresolved_debates``), JSON-safe.
    files : the files read, for the checksum and the report.
    answer_lines : row -> line of the answers, to name the line in referential errors.
    judgment_lines : row -> line of the judgments (or ``(file, line)`` for a bundle of
        several files), to name the line of a verdict the store refuses.
    parts : for a folder, the bundle of each file (errors then name the file).
    guidelines : adjudication guidelines that came with the data (a debates file's sibling
        ``<stem>.guidelines.md``); the import makes them the study's guidelines when it has none.
    order : what the format knows of the order its judge saw the answers in, for the
        judgments without an ``order_known`` column: ``known`` (``model_a`` was shown
        first: PRD, ScaleEval, Arena battles, FastChat's two games), ``unknown``
        (AlpacaEval randomises it) or ``auto`` (a canonical file: known for the pairs a
        judge judged in both orientations, :func:`peercore.domain.verdicts.infer_order`).
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
    judgment_lines: Callable[[int], object] | None = None  # where judgment row i came from
    order: str = "auto"
    guidelines: str = ""

    def is_empty(self) -> bool:
        return not (len(self.questions) or len(self.answers) or len(self.judgments) or self.debates)

    def judgment_origin(self, row: int) -> tuple[str, int | None]:
        """(file name, line) that judgment row ``row`` came from (line None when unknown)."""
        name = Path(self.source).name or self.source
        if self.judgment_lines is None or row is None:
            return name, None
        try:
            where = self.judgment_lines(int(row))
        except (IndexError, KeyError, ValueError):
            return name, None
        if isinstance(where, tuple):
            return where
        return name, where


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
    spans, offset = [], 0
    for bundle in bundles:
        if len(bundle.judgments):
            spans.append((offset, bundle))
            offset += len(bundle.judgments)
    out.judgment_lines = lambda row: _origin_in(spans, row)
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


def _origin_in(spans: list[tuple[int, Bundle]], row: int) -> tuple[str, int | None]:
    for start, bundle in reversed(spans):
        if row >= start:
            return bundle.judgment_origin(row - start)
    return "", None


def dedupe_questions(questions: pd.DataFrame, *, source: str, line_of: LineOf | None = None) -> pd.DataFrame:
    """One row per question id; the same id with two different texts is an error."""
    if len(questions) == 0:
        return questions
    first = questions.drop_duplicates("question_id")
    text_of = dict(zip(first["question_id"], first["text"]))
    for row, (qid, text) in enumerate(zip(questions["question_id"], questions["text"])):
        if text_of[qid] != text:
            fail(f"question_id {quote(qid)} appears twice with different text ({quote(_short(text_of[qid]))} and "
                 f"{quote(_short(text))}); question ids must be unique", source=source,
                 line=line_of(row) if line_of else None, row=None if line_of else row, column="question_id", value=qid)
    return first.reset_index(drop=True)


def dedupe_answers(answers: pd.DataFrame, *, source: str, where: Callable[[int], tuple[int | None, str]]
                   ) -> pd.DataFrame:
    """One row per (question_id, model, turn); the same key with two different texts is an error.

    A format that repeats each answer on every record holding it (AlpacaEval's
    ``output_1`` / ``output_2``) gives the same text again: kept once. Another text under
    the same key would silently keep the first answer beside a verdict on the second, so
    it is refused, naming the line (and field) of each. ``where(row)`` is (line, field)
    of answer row ``row``; rows come in the file's order.
    """
    if len(answers) == 0:
        return answers
    key = ["question_id", "model", "turn"]
    group = answers.groupby(key, sort=False).ngroup().to_numpy()
    first = pd.Series(np.arange(len(answers))).groupby(group).transform("min").to_numpy()
    texts = answers["answer"].to_numpy(dtype=object)
    differs = texts != texts[first]
    if differs.any():
        row = int(np.flatnonzero(differs)[0])
        line, field = where(row)
        first_line, first_field = where(int(first[row]))
        at = f"line {first_line}" if first_line is not None else f"row {int(first[row])}"
        model, question = answers["model"].iloc[row], answers["question_id"].iloc[row]
        fail(f"{field} of model {quote(model)} to question {quote(question)} "
             f"is {quote(_short(texts[row]))}, but {at} ({first_field}) gives it {quote(_short(texts[first[row]]))}; "
             "one model has one answer per question: a verdict on one text would be stored beside the other",
             source=source, line=line, row=None if line is not None else row, column=field, value=quote(texts[row]))
    return answers[first == np.arange(len(answers))].reset_index(drop=True)


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


def validated_bytes(path: Path) -> bytes:
    """The file's bytes once known to be UTF-8 text without NUL (a leading BOM removed).

    Checked in 16 MiB steps, so no second copy of the text is made; errors name the
    line of the first bad byte.
    """
    raw = read_bytes(path)
    name = _name(path)
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        fail("the file is UTF-16 text; save it as UTF-8", source=name, line=1)
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(raw)
    step = 16 << 20
    for start in range(0, len(raw), step):
        pending = len(decoder.getstate()[0])
        try:
            decoder.decode(view[start:start + step], final=start + step >= len(raw))
        except UnicodeDecodeError as exc:
            offset = start - pending + exc.start
            line = raw.count(b"\n", 0, offset) + 1
            fail(f"the file is not UTF-8 text (byte 0x{raw[offset]:02x} at offset {offset}); save it as UTF-8",
                 source=name, line=line)
    nul = raw.find(b"\x00")
    if nul >= 0:
        fail("the file holds a NUL byte; is it binary?", source=name, line=raw.count(b"\n", 0, nul) + 1)
    return raw[3:] if raw.startswith(codecs.BOM_UTF8) else raw


def read_text(path: Path) -> str:
    """The file as UTF-8 text (a BOM is dropped); errors name the line of a bad byte."""
    return validated_bytes(path).decode("utf-8")


def check_line_lengths(raw: bytes, name: str) -> None:
    """Refuse a physical line longer than :data:`MAX_LINE_BYTES` bytes (CSV, JSONL)."""
    length, line = longest_line(raw)
    if length > MAX_LINE_BYTES:
        fail(line_too_long(length), source=name, line=line)


def _json_items(path: Path, *, keys: dict | None = None, most: int = MAX_ROWS) -> Iterator[tuple[int | None, dict]]:
    """(line, record) of a JSONL file or a JSON array, every rule of :func:`parse_json` applied."""
    name = _name(path)
    raw = validated_bytes(path)
    start = len(raw) - len(raw.lstrip())
    head = raw[start:start + 1]
    if not head:
        fail("the file holds only blank lines; expected records", source=name)
    if head == b"[":
        yield from _json_array(raw.decode("utf-8"), name, most=most)
        return
    count = 0
    number = 0
    position, size = 0, len(raw)
    while position <= size:
        end = raw.find(b"\n", position)
        if end < 0:
            end = size
        number += 1
        if end - position > MAX_LINE_BYTES:
            fail(line_too_long(end - position), source=name, line=number)
        text = raw[position:end].decode("utf-8")
        position = end + 1
        if not text.strip():
            continue
        record = parse_json(text, name=name, line=number)
        if not isinstance(record, dict):
            fail(f"expected a JSON object per line, got {type(record).__name__} ({quote(text.strip())})",
                 source=name, line=number)
        count += 1
        if count > most:
            fail(_too_many(most), source=name, line=number)
        yield number, (record if keys is None else {keys.setdefault(k, k): v for k, v in record.items()})
    if count == 0:
        fail("the file holds no records", source=name)


def _too_many(most: int) -> str:
    if most == MAX_ROWS:
        return f"holds more than {most:,} records (limit per file)"
    return (f"holds more than {most:,} records, the limit for this format (read record by record); "
            "split the file")


def json_records(path: Path) -> tuple[list[dict], Sequence[int]]:
    """Records of a JSONL file or of a JSON array (even one named ``.jsonl``), with their lines.

    Every record must be a JSON object without repeated fields; NaN / Infinity, nesting
    deeper than 64 levels, lone surrogates and lines longer than :data:`MAX_LINE_BYTES`
    are refused, and at most :data:`~peercore.io.rules.MAX_LISTED_RECORDS` records are
    read (:mod:`peercore.io.rules`).
    """
    records, lines = [], []
    keys: dict = {}
    for line, record in _json_items(Path(path), keys=keys, most=MAX_LISTED_RECORDS):
        records.append(record)
        lines.append(line)
    if lines and lines[0] is None:  # a JSON array: lines found by one scan when an error needs them
        return records, _ArrayLines(Path(path), len(records))
    return records, lines


def _json_array(text: str, name: str, *, most: int = MAX_ROWS) -> Iterator[tuple[None, dict]]:
    """Elements of a top-level JSON array (each must be an object)."""
    data = parse_json(text, name=name, line=None, records=True)
    if not isinstance(data, list):
        fail("expected a JSON array of records", source=name)
    if not data:
        fail("the JSON array is empty; expected records", source=name)
    if len(data) > most:
        fail(_too_many(most), source=name)
    lines = _LazyLines(text, text.index("["), len(data))
    for index, record in enumerate(data):
        if not isinstance(record, dict):
            fail(f"expected a JSON object for record {index + 1}, got {type(record).__name__}",
                 source=name, line=lines[index])
        if any(isinstance(value, (list, dict)) for value in record.values()):
            try:
                check_record_depth(record, name=name, line=None)
            except JudgmentError as exc:
                fail(exc.problem, source=name, line=lines[index], column=exc.column)
    for record in data:
        yield None, record


class _ArrayLines(Sequence):
    """Line of each element of a JSON array file, found by one scan on first use (errors only)."""

    def __init__(self, path: Path, count: int) -> None:
        self._path, self._count, self._lines = path, count, None

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index):
        if self._lines is None:
            text = read_text(self._path)
            self._lines = array_element_lines(text, text.index("["), self._count)
        return self._lines[index]


class _LazyLines(Sequence):
    """Line of each element of a JSON array, found by one scan on first use (errors only, usually)."""

    def __init__(self, text: str, start: int, count: int) -> None:
        self._text, self._start, self._count, self._lines = text, start, count, None

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index):
        if self._lines is None:
            self._lines = array_element_lines(self._text, self._start, self._count)
            self._text = None
        return self._lines[index]


def _json_frame(path: Path) -> tuple[pd.DataFrame, Sequence[int]]:
    """A JSON file as columns (no dict per record is kept), with each row's line."""
    columns: dict[str, list] = {}
    lines = array("q")  # 8 bytes a row (a JSON array's records have no line of their own: 0)
    whole_array = False
    n = 0
    for line, record in _json_items(path):
        whole_array = line is None
        grew = False
        for key, value in record.items():
            column = columns.get(key)
            if column is None:
                column = columns[key] = [None] * n
                grew = True
            column.append(value)
        n += 1
        lines.append(line or 0)
        if grew or len(record) != len(columns):
            for column in columns.values():
                if len(column) < n:
                    column.append(None)
    frame = pd.DataFrame(columns) if columns else pd.DataFrame(index=range(n))
    if whole_array:
        return frame, _ArrayLines(path, n)
    return frame, lines


def table_records(path: Path, *, format: str | None = None, columns: Sequence[str] | None = None,
                  allow_empty: bool = False) -> tuple[pd.DataFrame, LineOf]:
    """A CSV / JSONL / JSON / Parquet file as a DataFrame of raw values, and row -> line.

    CSV cells are strings (empty cell = missing); a repeated header name is refused.
    Parquet is read within the budget of :func:`peercore.io.rules.parquet_table` (only
    ``columns`` when given), and a NaN / Infinity in a float column arrives as the text
    ``'NaN'`` / ``'inf'`` so the checks refuse it like the same text in a CSV cell (a
    missing value is ``null``).
    """
    name = _name(path)
    kind = format or file_kind(path)
    if kind == "csv":
        return _csv_frame(path, name, allow_empty=allow_empty)
    if kind == "parquet":
        read_bytes(path)  # 0-byte check
        frame = parquet_frame(path, name=name, columns=columns)
        if len(frame) == 0 and not allow_empty:
            fail("the file holds no rows", source=name)
        return frame, lambda row: None
    frame, lines = _json_frame(path)
    return frame, lambda row: lines[row] if row < len(lines) else None


def parquet_frame(path: Path, *, name: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """A Parquet file (within budget) as a DataFrame; non-finite floats become their text."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table, names = parquet_table(path, name=name, columns=columns)
    out = {}
    for column in table.column_names:
        array = table.column(column)
        if pa.types.is_floating(array.type) and len(array) and not pc.all(
                pc.fill_null(pc.is_finite(array), True)).as_py():
            values = array.to_numpy(zero_copy_only=False)
            nulls = array.is_null().to_numpy(zero_copy_only=False)
            texts = np.where(np.isnan(values), "NaN", np.where(values > 0, "inf", "-inf"))
            out[column] = pd.Series([None if null else (text if not np.isfinite(v) else float(v))
                                     for v, null, text in zip(values, nulls, texts)], dtype=object)
        elif pa.types.is_large_string(array.type) or pa.types.is_string(array.type):
            out[column] = pd.Series(pd.array(array, dtype="str"))
        elif pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type):
            out[column] = pd.Series(pd.array(_utf8_column(array, column=column, name=name), dtype="str"))
        else:
            out[column] = array.to_pandas()
    frame = pd.DataFrame(out) if out else pd.DataFrame(index=range(table.num_rows))
    frame.attrs["all_columns"] = names
    return frame


def _utf8_column(array, *, column: str, name: str):
    """A Parquet binary column (BYTE_ARRAY written without the UTF8 annotation) read as UTF-8 text.

    The values are text to every tool that writes them so; as bytes they would reach the
    store as Python reprs (``b'gpt4'``). A value that is not UTF-8 is refused, naming its
    row (0-based, as every Parquet error) and the offending byte, as a text file's would be.
    """
    import pyarrow as pa

    try:
        return array.cast(pa.large_string())  # Arrow checks every value is valid UTF-8
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    for row, value in enumerate(array.to_pylist()):
        if value is None:
            continue
        try:
            value.decode("utf-8")
        except UnicodeDecodeError as exc:
            fail(f"{column} is not UTF-8 text (byte 0x{value[exc.start]:02x} at offset {exc.start} of the value); "
                 "save the file's text as UTF-8", source=name, row=row, column=column, value=quote(value))
    fail(f"{column} is not UTF-8 text", source=name, column=column)


def file_kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "json"
    fail(f"cannot tell the file type from the extension {quote(suffix)}; use .csv, .jsonl, .json or .parquet",
         source=_name(path))


def _physical_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` one at a time (with their newline), without splitting it all."""
    position = 0
    while position < len(text):
        end = text.find("\n", position)
        end = len(text) if end < 0 else end + 1
        yield text[position:end]
        position = end


def csv_header(text: str, *, name: str, delimiter: str) -> list[str]:
    """The CSV header, stripped; a repeated column name is refused."""
    try:
        header = next(csv.reader(_physical_lines(text), delimiter=delimiter))
    except StopIteration:
        fail("the file holds no header", source=name)
    except csv.Error as exc:
        fail(f"not valid CSV ({exc})", source=name, line=1)
    header = [h.strip() for h in header]
    seen: dict[str, int] = {}
    for position, column in enumerate(header):
        if column in seen:
            fail(f"column {quote(column)} appears twice in the header (positions {seen[column] + 1} and {position + 1})",
                 source=name, line=1, column=column)
        seen[column] = position
    return header


def _csv_frame(path: Path, name: str, *, allow_empty: bool = False) -> tuple[pd.DataFrame, LineOf]:
    raw = validated_bytes(path)
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    csv_header(raw[: raw.find(b"\n") + 1 or len(raw)].decode("utf-8") if b'"' not in raw[: raw.find(b"\n") + 1]
               else raw.decode("utf-8"), name=name, delimiter=delimiter)
    check_line_lengths(raw, name)
    try:
        frame = pd.read_csv(io.BytesIO(raw), dtype=str, keep_default_na=False, na_values=[""],
                            skip_blank_lines=True, sep=delimiter, encoding="utf-8")
    except pd.errors.EmptyDataError:
        fail("the file holds no header and no rows", source=name)
    except pd.errors.ParserError as exc:
        message = " ".join(str(exc).split())
        found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", message)
        if found:
            fail(f"not valid CSV: {found[3]} fields where the header has {found[1]}", source=name, line=int(found[2]))
        fail(f"not valid CSV ({quote(message, 200)})", source=name)
    frame.columns = [str(c).strip() for c in frame.columns]
    if len(frame) == 0 and not allow_empty:
        fail("the file holds a header but no rows", source=name, line=1)
    return frame, CsvLines(path, delimiter)


class CsvLines:
    """row -> physical line of a CSV file's data rows (quoted cells may span lines).

    Found by one pass of the csv module over the file on first use (errors, mostly),
    then looked up.
    """

    def __init__(self, path: Path, delimiter: str = ",") -> None:
        self._path, self._delimiter, self._lines = path, delimiter, None

    def __call__(self, row: int) -> int:
        if self._lines is None:
            csv.field_size_limit(sys.maxsize)  # a long cell (a rationale) is fine; lines are limited elsewhere
            reader = csv.reader(_physical_lines(read_text(self._path)), delimiter=self._delimiter)
            next(reader, None)
            self._lines = array("q", (reader.line_num for record in reader  # 8 bytes a row, not a Python int
                                      if record and not all(not cell.strip() for cell in record)))
        return self._lines[row] if 0 <= row < len(self._lines) else row + 2


def csv_line_of(path: Path, row: int, delimiter: str = ",") -> int:
    """Physical line of data row ``row`` of a CSV file (quoted cells may span lines)."""
    return CsvLines(path, delimiter)(row)


# ------------------------------------------------------------------------ checks


def first_non_scalar(values: pd.Series) -> int | None:
    """Row of the first list / object / array in an object column, else None."""
    if values.dtype != object:
        return None
    for row, value in enumerate(values.tolist()):
        if not is_scalar(value):
            return row
    return None


def _where(line_of: LineOf | None, row: int) -> dict:
    line = line_of(row) if line_of else None
    return {"line": line, "row": None if line else row}


def check_identifiers(frame: pd.DataFrame, columns: Sequence[str], *, source: str, line_of: LineOf | None) -> None:
    """Refuse keys that are lists, too long, hold line breaks or invisible characters, or start like a
    spreadsheet formula.

    Identifiers (question ids, model, judge, annotator, criterion names) end up in CSV
    exports and dashboards; one starting with ``=``, ``+``, ``-``, ``@``, tab or CR is
    what a formula-injection payload looks like, so it is rejected at the door rather
    than carried around (exports also neutralise cells, see :mod:`peercore.io.export`).
    One holding an invisible character (:data:`peercore.io.rules.INVISIBLE`: a zero-width
    space, a joiner, a control character) would rank as another contestant than the name
    it looks like, so it is refused, naming the character and where it is.
    The tests run on whole Arrow columns; only a row they flag is looked at in Python.
    """
    import pyarrow as pa
    import pyarrow.compute as pc


    for column in columns:
        if column not in frame.columns:
            continue
        values = frame[column]
        row = first_non_scalar(values)
        if row is not None:
            value = values.iloc[row]
            fail(f"{column} is {kind_of(value)} ({quote(value)}); one name is expected", source=source,
                 **_where(line_of, row), column=column, value=quote(value))
        text = _as_text(values)
        arrow = pa.array(text)
        if isinstance(arrow, pa.ChunkedArray):
            arrow = arrow.combine_chunks()
        if arrow.type != pa.large_string():
            arrow = arrow.cast(pa.large_string())
        suspect = pc.or_(pc.or_(pc.match_substring_regex(arrow, _FORMULA_START),
                                pc.greater(pc.utf8_length(arrow), MAX_IDENTIFIER)),
                         pc.match_substring_regex(arrow, INVISIBLE))  # line breaks and NUL included
        suspect = pc.fill_null(suspect, False)
        if not pc.any(suspect).as_py():
            continue
        for row in np.flatnonzero(suspect.to_numpy(zero_copy_only=False)):
            row = int(row)
            value = str(text.iloc[row])
            problem = None
            stripped = value.strip()
            if stripped.startswith(FORMULA_PREFIXES) or value.startswith(FORMULA_PREFIXES):
                problem = (f"{column} {quote(value)} starts with {quote(stripped[:1] or value[:1])} like a spreadsheet "
                           "formula (CSV injection); rename it")
            elif len(value) > MAX_IDENTIFIER:
                problem = f"{column} is {len(value):,} characters long (limit {MAX_IDENTIFIER:,}); is it in the right column?"
            elif "\n" in value or "\r" in value or "\x00" in value:
                problem = f"{column} {quote(value)} holds a line break; identifiers are one line"
            elif (hidden := invisible_character(value)) is not None:
                problem = invisible_problem(column, value, *hidden)
            if problem:
                fail(problem, source=source, **_where(line_of, row), column=column, value=quote(value))


def invisible_problem(field: str, value: str, position: int, char: str) -> str:
    """The message for an identifier holding an invisible character (see :func:`check_identifiers`)."""
    shown = "".join(c for c in value if invisible_character(c) is None)
    return (f"{field} {quote(value)} holds an invisible character, {describe_character(char)}, at character "
            f"{position + 1}; it would make a name that looks like {quote(shown)} a different one. Remove it")


def require_columns(frame: pd.DataFrame, columns: Sequence[str], *, source: str, what: str,
                    line: int | None = 1) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        everything = frame.attrs.get("all_columns") or list(frame.columns)
        found = column_list(everything) or "none"
        fail(f"missing required column(s) {', '.join(missing)} for {what} (found: {found})", source=source, line=line)


def text_column(frame: pd.DataFrame, column: str, *, source: str, line_of: LineOf | None,
                required: bool = True) -> pd.Series:
    """A column as stripped text ("str" dtype); empty required values are named, lists refused."""

    if column in frame.columns:
        row = first_non_scalar(frame[column])
        if row is not None:
            value = frame[column].iloc[row]
            fail(f"{column} is {kind_of(value)} ({quote(value)}); one value is expected", source=source,
                 line=line_of(row) if line_of else None, row=row, column=column, value=quote(value))
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
    """A column of whole numbers (Int64) within :data:`peercore.io.rules.INTEGER_BOUNDS`.

    A list, a boolean, a non-number, a non-finite number or one out of bounds is named
    with its line.
    """

    if column not in frame.columns:
        return pd.Series(pd.array([default] * len(frame), dtype="Int64"), index=frame.index)
    raw = frame[column]
    row = first_non_scalar(raw)
    if row is not None:
        fail(f"{column} is {kind_of(raw.iloc[row])} ({quote(raw.iloc[row])}); one whole number is expected",
             source=source, line=line_of(row) if line_of else None, row=row, column=column, value=quote(raw.iloc[row]))
    numbers, problems = whole_number_problems(raw, column)
    for mask, problem in problems:
        if mask.any():
            row = int(np.flatnonzero(mask)[0])
            fail(problem(plain(raw.iloc[row])), source=source, line=line_of(row) if line_of else None, row=row,
                 column=column, value=raw.iloc[row])
    out = numbers.astype("Int64")
    if default is not None:
        out = out.fillna(default)
    return out


def record_text(record: dict, field: str, *, source: str, line: int | None, required: bool = True) -> str | None:
    """A record's field as one piece of text (numbers become text); a list or object is refused."""
    value = record.get(field)
    if value is None:
        if required:
            fail(f"missing field {quote(field)}", source=source, line=line, column=field)
        return None
    if not is_scalar(value):
        fail(f"{field} is {kind_of(value)} ({quote(value)}); one value is expected", source=source, line=line,
             column=field, value=quote(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            fail(f"{field} {quote(value)} is not a finite number", source=source, line=line, column=field)
        if value.is_integer():
            return str(int(value))
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def record_whole_number(record: dict, field: str, *, source: str, line: int | None) -> int:
    """A record's field as a whole number within bounds (booleans, lists and text refused).

    The same verdicts and words as :func:`peercore.judgments.whole_number_problems`,
    without building a Series per record.
    """

    value = record.get(field)
    if not is_scalar(value):
        fail(f"{field} is {kind_of(value)} ({quote(value)}); one whole number is expected", source=source, line=line,
             column=field, value=quote(value))
    whole = None
    if isinstance(value, int) and not isinstance(value, bool):
        whole = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        whole = int(value)
    if whole is None:
        fail(f"{field} {quote(value)} is not a whole number", source=source, line=line, column=field,
             value=quote(value))
    bounds = INTEGER_BOUNDS.get(field)
    if bounds is not None and not bounds[0] <= whole <= bounds[1]:
        fail(f"{field} {quote(value)} is out of range (a whole number from {bounds[0]:,} to {bounds[1]:,})",
             source=source, line=line, column=field, value=quote(value))
    return whole


def is_missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def json_items(path: Path, *, most: int = MAX_ROWS) -> Iterator[tuple[int | None, dict]]:
    """(line, record) one at a time (a JSON array's lines are None), every rule applied; at most ``most``."""
    return _json_items(Path(path), most=most)
