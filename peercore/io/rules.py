"""The rules every read path applies, and the budgets that bound what one input may cost.

One place for the limits, so the small-file (careful) path, the large-file (Arrow /
pandas) path, Parquet, folders and zip uploads cannot drift apart. Each rule, where it
is enforced, and the message it gives:

=============================  ==============================================================
rule                           enforced by
=============================  ==============================================================
UTF-8 text, no NUL byte, not   :func:`peercore.io._common.validated_bytes` (every text read);
UTF-16                         the fast path falls back on any doubt
line <= MAX_LINE_BYTES bytes   :func:`longest_line` over the bytes (CSV, JSONL; the fast path
                               scans before Arrow or pandas see the file)
strict JSON: no NaN /          :func:`parse_json` (careful path); the fast path refuses any
Infinity, no repeated field,   non-finite float Arrow let through and any row-count mismatch
nesting <= MAX_JSON_DEPTH,     (two objects on one line); deep lines never reach Arrow (it
no lone surrogate              crashes on them)
one value where one is         ``check_identifiers`` / ``text_column`` / ``whole_numbers`` and
expected (no list / object)    :func:`peercore.judgments.judgments_from_frame`
finite numbers, p_a in         :func:`peercore.judgments.judgments_from_frame`,
[0, 1], whole numbers within   ``whole_numbers``; bounds in :data:`INTEGER_BOUNDS` (SQLite
INTEGER_BOUNDS, booleans are   INTEGER is 64-bit; these are far inside it)
not numbers
rows <= MAX_ROWS               every reader (records are counted as they are parsed);
                               MAX_LISTED_RECORDS for the formats read record by record
Parquet budget                 :func:`parquet_table`: footer row count, honest page headers
                               (uncompressed bytes, values, encodings), dictionary expansion,
                               all before a column is decoded
zip budget                     :func:`check_zip` before anything is extracted
no symlink out of a folder     :func:`check_folder` before a folder is read
=============================  ==============================================================

Identifiers (question ids, model, judge, annotator, criterion names; :func:`peercore.io._common.check_identifiers`
and the fast path's test) also hold no invisible character (:data:`INVISIBLE`,
:func:`invisible_character`): a zero-width space or a joiner makes two names that look the
same rank as two contestants. Names that differ but look alike (a Cyrillic ``р`` for a
Latin ``p``) are legitimate text, so an import only warns about them
(:mod:`peercore.io.names`).

Errors quote values with :func:`quote`: ``repr`` style (control characters escaped) and
cut to :data:`MAX_QUOTE` characters.
"""

from __future__ import annotations

import json
import os
import re
import stat
import struct
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from peercore.errors import JudgmentError

__all__ = [
    "MAX_LINE_BYTES", "MAX_JSON_DEPTH", "MAX_IDENTIFIER", "MAX_QUOTE", "MAX_ROWS", "MAX_LISTED_RECORDS",
    "INTEGER_BOUNDS",
    "MAX_PARQUET_BYTES", "MAX_PARQUET_VALUES", "ZIP_MAX_MEMBERS", "ZIP_MAX_BYTES", "ZIP_MAX_RATIO",
    "quote", "column_list", "is_scalar", "longest_line", "parse_json", "json_depth_problem", "parquet_table", "check_zip",
    "check_folder", "non_finite_row", "INVISIBLE", "invisible_character", "describe_character",
]

MiB = 1 << 20
# A physical line of a CSV or JSONL file longer than this is refused before parsing: a
# record is one verdict, review or answer, and 16 MiB is far above any real one.
MAX_LINE_BYTES = 16 * MiB
# JSON nested deeper than this (the record itself is level 1) is refused. Real records
# are 1-4 levels deep (FastChat choices, ScaleEval speaker entries).
MAX_JSON_DEPTH = 64
# Identifiers (question ids, model, judge, annotator and criterion names) longer than
# this are refused: they are keys, shown in tables and charts, not free text.
MAX_IDENTIFIER = 1000
# Errors quote a bad value escaped (repr style) and at most this long.
MAX_QUOTE = 80
# Records (rows) in one file, in every format.
MAX_ROWS = 10_000_000
# Records of one file for the formats read record by record as Python objects (FastChat,
# PRD, ScaleEval, questions): their real files hold thousands; a million tiny records
# already cost about 1 GB of Python objects.
MAX_LISTED_RECORDS = 1_000_000
# Whole-number fields: inclusive bounds (far inside SQLite's 64-bit INTEGER).
INTEGER_BOUNDS: dict[str, tuple[int, int]] = {
    "turn": (0, 1_000), "round": (0, 1_000), "position": (0, 1_000), "vote": (0, 1_000_000),
    "ID": (0, 1_000_000_000), "id": (0, 1_000_000_000),
}
# Parquet: bytes of the columns read once decompressed and decoded (dictionary / RLE
# expansion included), and leaf values (a nested column's elements).
MAX_PARQUET_BYTES = 512 * MiB
MAX_PARQUET_VALUES = 50_000_000
# Zip uploads: members, bytes once extracted, and compression ratio of any member
# larger than 1 MiB (text compresses 5-15x; 100x is a bomb, not a data file).
ZIP_MAX_MEMBERS = 10_000
ZIP_MAX_BYTES = 256 * MiB
ZIP_MAX_RATIO = 100


# Characters that show as nothing yet make two names differ: control characters (Cc),
# format characters (Cf: zero-width space, zero-width (non-)joiner, word joiner, bidi
# controls, soft hyphen, byte-order mark, tags) and Unicode's other default-ignorable code
# points (combining grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian and
# other variation selectors). As one RE2 class, for whole Arrow columns.
_OTHER_INVISIBLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x3164, 0x3164),
                    (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xE0100, 0xE01EF))
INVISIBLE = "[\\p{Cc}\\p{Cf}" + "".join(f"\\x{{{low:04X}}}-\\x{{{high:04X}}}" for low, high in _OTHER_INVISIBLE) + "]"


def invisible_character(text: str) -> tuple[int, str] | None:
    """(0-based position, character) of the first :data:`INVISIBLE` character in ``text``, else None."""
    for position, char in enumerate(text):
        if unicodedata.category(char) in ("Cc", "Cf") or any(low <= ord(char) <= high
                                                             for low, high in _OTHER_INVISIBLE):
            return position, char
    return None


def describe_character(char: str) -> str:
    """``U+200B ZERO WIDTH SPACE``: a character's code point and Unicode name, for messages."""
    unnamed = "control character" if unicodedata.category(char) == "Cc" else "unnamed character"
    return f"U+{ord(char):04X} {unicodedata.name(char, unnamed)}"


def fail(problem: str, *, source, line=None, row=None, column=None, value=None):
    raise JudgmentError(problem, source=str(source), line=line, row=row, column=column, value=value)


# ------------------------------------------------------------------------- quoting


def quote(value: object, limit: int = MAX_QUOTE) -> str:
    """``repr`` of a value (control characters escaped), cut to ``limit`` characters.

    numpy scalars are quoted as the Python value (``3.0``, not ``np.float64(3.0)``).
    """
    if isinstance(value, np.generic):
        value = value.item()
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def column_list(names, *, most: int = 30) -> str:
    """Column names for a message: plain names as they are, anything else quoted; at most ``most``."""
    names = [str(n) for n in names]
    shown = [n if re.fullmatch(r"[\w .:()-]{1,60}", n) else quote(n, 40) for n in names[:most]]
    return ", ".join(shown) + (f", ... ({len(names) - most} more)" if len(names) > most else "")


def is_scalar(value: object) -> bool:
    """False for lists, objects (dicts), arrays and sets: the JSON / Parquet containers."""
    return not isinstance(value, (list, tuple, dict, set, frozenset, np.ndarray))


def kind_of(value: object) -> str:
    """'a list' / 'an object' (for messages about a container where one value belongs)."""
    return "an object" if isinstance(value, dict) else "a list"


# --------------------------------------------------------------------------- lines


@dataclass(frozen=True)
class LineScan:
    """What one pass over a text file's bytes tells (see :func:`scan_file`)."""

    lines: int                # physical lines (a last line without a newline counts)
    longest: int              # bytes of the longest line (without its newline)
    longest_line: int         # 1-based line number of the longest line
    nul: bool                 # a NUL byte anywhere
    content_lines: int        # lines holding something besides space, tab and CR (JSON mode)
    bracket_lines: list[int]  # 0-based lines with more than MAX_JSON_DEPTH '[' / '{' bytes (JSON mode)


def longest_line(raw: bytes | memoryview) -> tuple[int, int]:
    """(bytes of the longest line, its 1-based number), in C-speed chunks."""
    scan = _scan(raw, json_mode=False)
    return scan.longest, scan.longest_line


def scan_file(path: Path, *, json_mode: bool) -> LineScan:
    """One pass over a file's bytes, 16 MiB at a time (nothing else is kept in memory)."""
    with open(path, "rb") as handle:
        return _scan(handle, json_mode=json_mode)


def _scan(source, *, json_mode: bool, chunk: int = 16 * MiB) -> LineScan:
    lines = 0            # newlines seen
    longest, longest_line = 0, 1
    current = 0          # bytes of the line in progress
    nul = False
    heavy: list[int] = []
    carry_brackets = 0   # '[' / '{' of the line in progress
    carry_content = False
    content = 0
    offset = 0
    view = memoryview(source) if isinstance(source, (bytes, bytearray, memoryview)) else None
    while True:
        if view is not None:
            block = view[offset:offset + chunk]
            offset += len(block)
        else:
            block = source.read(chunk)
        if not len(block):
            break
        data = np.frombuffer(block, dtype=np.uint8)
        if not nul and (data == 0).any():
            nul = True
        newlines = np.flatnonzero(data == 10)
        if len(newlines):
            lengths = np.diff(newlines, prepend=-1) - 1
            lengths[0] += current
            k = int(np.argmax(lengths))
            if lengths[k] > longest:
                longest, longest_line = int(lengths[k]), lines + k + 1
            current = len(data) - int(newlines[-1]) - 1
        else:
            current += len(data)
        if json_mode:  # per line segment (each ends with its newline; the last one continues in the next block)
            starts = np.concatenate(([0], newlines + 1))
            inside = starts < len(data)
            opening = (data == 91) | (data == 123)
            counts = np.zeros(len(starts), dtype=np.int64)
            if opening.any():
                counts[inside] = np.add.reduceat(opening, starts[inside], dtype=np.int64)
            counts[0] += carry_brackets
            heavy.extend(lines + int(i) for i in np.flatnonzero(counts[:-1] > MAX_JSON_DEPTH))
            carry_brackets = int(counts[-1])
            solid = (data != 32) & (data != 9) & (data != 13) & (data != 10)
            has = np.zeros(len(starts), dtype=bool)
            has[inside] = np.logical_or.reduceat(solid, starts[inside])
            has[0] |= carry_content
            content += int(has[:-1].sum())
            carry_content = bool(has[-1])
        lines += len(newlines)
        if current > longest:
            longest, longest_line = current, lines + 1
    if json_mode:
        if carry_brackets > MAX_JSON_DEPTH:
            heavy.append(lines)
        content += int(carry_content)
    return LineScan(lines=lines + (1 if current else 0), longest=longest, longest_line=longest_line, nul=nul,
                    content_lines=content, bracket_lines=heavy)


def line_too_long(length: int) -> str:
    return f"line is {length:,} bytes long (limit {MAX_LINE_BYTES:,}); is the file in the format its name says?"


# ---------------------------------------------------------------------------- JSON


_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}:]')
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class _Constant:
    """What ``NaN`` / ``Infinity`` / ``-Infinity`` parse to, so the field holding one is named."""

    __slots__ = ("token",)

    def __init__(self, token: str) -> None:
        self.token = token


def json_depth_problem(text: str, *, base: int = 0) -> tuple[int, str | None] | None:
    """(offset, top-level field) where nesting first exceeds :data:`MAX_JSON_DEPTH`, else None.

    A token scan (strings skipped), never recursion. ``base`` is the depth of the
    records' container (1 for a JSON array of records).
    """
    depth, key, last = 0, None, None
    limit = MAX_JSON_DEPTH + base
    for match in _TOKENS.finditer(text):
        token = match.group()
        first = token[0]
        if first == '"':
            last = token
        elif first == ":":
            if depth == base + 1:
                key = last
        elif first in "[{":
            depth += 1
            if depth > limit:
                return match.start(), _key_text(key)
        else:
            depth -= 1
            if depth == base:
                key = None
    return None


def _key_text(token: str | None) -> str | None:
    if token is None:
        return None
    try:
        return str(json.loads(token))
    except ValueError:
        return token.strip('"')


def _field_at(text: str, position: int, *, base: int = 0) -> str | None:
    """The record's field whose value starts at ``position`` (for 'Expecting value' errors)."""
    head = text[:position].rstrip()
    if not head.endswith(":"):
        return None
    depth, key, last = 0, None, None
    for match in _TOKENS.finditer(head):
        token = match.group()
        if token[0] == '"':
            last = token
        elif token == ":":
            if depth == base + 1:
                key = last
        elif token in "[{":
            depth += 1
        else:
            depth -= 1
    return _key_text(key) if depth == base + 1 else None


def _array_element_with_repeat(text: str) -> int | None:
    """Line of the first element of a JSON array holding a repeated field (looked for only on error)."""
    def strict(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise KeyError(keys)
        return dict(pairs)

    decoder = json.JSONDecoder(object_pairs_hook=strict, parse_constant=lambda token: None)
    position = text.index("[") + 1
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position >= len(text) or text[position] == "]":
            return None
        start = position
        try:
            _, position = decoder.raw_decode(text, position)
        except KeyError:
            return text.count("\n", 0, start) + 1
        except (ValueError, RecursionError):
            return None


def parse_json(text: str, *, name: str, line: int | None, records: bool = False):
    """Strict JSON: one value, no NaN / Infinity, no repeated field, nesting and text checked.

    ``records`` means ``text`` is a JSON array of records (its elements' fields are
    named in errors); otherwise it is one record (a JSONL line).
    """
    base = 1 if records else 0
    if not records and text.count("[") + text.count("{") > MAX_JSON_DEPTH:  # a line: scan before parsing
        _refuse_deep(text, name=name, line=line, base=base)
    constants: list[_Constant] = []

    def constant(token: str) -> _Constant:
        constants.append(_Constant(token))
        return constants[-1]

    def no_repeats(pairs):
        out = {}
        for key, value in pairs:
            if key in out:
                at = line if not records else _array_element_with_repeat(text)
                fail(f"field {quote(key)} appears twice in one record", source=name, line=at, column=key)
            out[key] = value
        return out

    try:
        value = json.loads(text, object_pairs_hook=no_repeats, parse_constant=constant)
    except json.JSONDecodeError as exc:
        at = line if line is not None else exc.lineno
        field = _field_at(text, exc.pos, base=base) if exc.msg == "Expecting value" else None
        fail(f"not valid JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})", source=name, line=at,
             column=field)  # "Unterminated string starting at" + " at column ..." said "at" twice
    except RecursionError:  # a whole array (records are checked level by level once parsed) or a crafted line
        _refuse_deep(text, name=name, line=line, base=base)
        fail(f"nested more than {MAX_JSON_DEPTH} levels deep (limit {MAX_JSON_DEPTH})", source=name, line=line)
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        if isinstance(exc, JudgmentError):
            raise
        fail(f"not valid JSON ({quote(str(exc), 120)})", source=name, line=line)
    if constants or (_SURROGATE_ESCAPE.search(text) is not None):
        _check_values(value, name=name, line=line, records=records, text=text)
    return value


def _refuse_deep(text: str, *, name: str, line: int | None, base: int) -> None:
    deep = json_depth_problem(text, base=base)
    if deep is not None:
        offset, key = deep
        at = line if line is not None else text.count("\n", 0, offset) + 1
        fail(f"nested more than {MAX_JSON_DEPTH} levels deep (limit {MAX_JSON_DEPTH})", source=name, line=at,
             column=key)


def _check_values(value, *, name, line, records, text) -> None:
    """Name the field holding NaN / Infinity or text that is not valid Unicode (lone surrogates)."""
    items = list(enumerate(value)) if records and isinstance(value, list) else [(None, value)]
    for index, record in items:
        fields = record.items() if isinstance(record, dict) else [(None, record)]
        for key, field in fields:
            problem = _bad_value(field) or (_bad_text(key) if isinstance(key, str) else None)
            if problem is None:
                continue
            at = line
            if index is not None:
                at = _array_line(text, index, len(value))
            fail(problem.format(field=key if key is not None else "value"), source=name, line=at,
                 column=key if isinstance(key, str) and not _bad_text(key) else None)


def _bad_value(value) -> str | None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Constant):
            return "{field} is " + repr(float(item.token)) + f": {item.token} is not valid JSON (use null or a number)"
        if isinstance(item, str):
            problem = _bad_text(item)
            if problem:
                return problem
        elif isinstance(item, dict):
            for key in item:
                if isinstance(key, str) and _bad_text(key):
                    return _bad_text(key)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _bad_text(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "{field} holds an escaped lone surrogate (\\ud800-\\udfff), which is not valid Unicode text"
    return None


def array_element_lines(text: str, start: int, count: int) -> list[int]:
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


def _array_line(text: str, index: int, count: int) -> int | None:
    return array_element_lines(text, text.index("["), count)[index]


def check_record_depth(record, *, name: str, line: int | None) -> None:
    """Refuse a parsed record nested deeper than :data:`MAX_JSON_DEPTH` (arrays of records)."""
    if not isinstance(record, dict):
        return
    for key, value in record.items():
        if not isinstance(value, (list, dict)):
            continue
        stack = [(value, 2)]
        while stack:
            item, depth = stack.pop()
            if depth > MAX_JSON_DEPTH:
                fail(f"nested more than {MAX_JSON_DEPTH} levels deep (limit {MAX_JSON_DEPTH})", source=name,
                     line=line, column=key)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, (list, dict)))


# -------------------------------------------------------------------------- Arrow


def non_finite_row(array) -> int | None:
    """First row of an Arrow (chunked) array holding NaN or +-Infinity in any float leaf, else None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    offset = 0
    for chunk in chunks:
        bad = _non_finite_mask(chunk)
        if bad is not None and pc.any(bad).as_py():
            return offset + int(pc.index(bad, True).as_py())
        offset += len(chunk)
    return None


def _non_finite_mask(array):
    """Boolean array (one per row of ``array``) marking rows with a non-finite float leaf."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if pa.types.is_floating(kind):
        return pc.fill_null(pc.invert(pc.is_finite(array)), False)
    if pa.types.is_struct(kind):
        masks = [_non_finite_mask(array.field(i)) for i in range(kind.num_fields)]
        masks = [m for m in masks if m is not None]
        if not masks:
            return None
        out = masks[0]
        for mask in masks[1:]:
            out = pc.or_(out, mask)
        return out
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        inner = _non_finite_mask(array.flatten())
        if inner is None:
            return None
        if not pc.any(inner).as_py():
            return pa.array(np.zeros(len(array), dtype=bool))
        parents = pc.list_parent_indices(array).to_numpy()
        hits = np.zeros(len(array), dtype=bool)
        hits[parents[inner.to_numpy(zero_copy_only=False)]] = True
        return pa.array(hits)
    return None


def type_depth(kind) -> int:
    """Nesting depth of an Arrow type (a scalar is 0, a list of scalars 1, ...), without recursion."""
    import pyarrow as pa

    deepest, stack = 0, [(kind, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if pa.types.is_struct(item):
            stack.extend((item.field(i).type, depth + 1) for i in range(item.num_fields))
        elif pa.types.is_list(item) or pa.types.is_large_list(item) or pa.types.is_fixed_size_list(item):
            stack.append((item.value_type, depth + 1))
        elif pa.types.is_map(item):
            stack.extend(((item.key_type, depth + 1), (item.item_type, depth + 1)))
    return deepest


# ------------------------------------------------------------------------- Parquet

# Parquet encodings whose decoded size is bounded by the page bytes or the row count.
# DELTA_BYTE_ARRAY (shared prefixes) can expand without bound and is not read.
_ENCODINGS = {0: "PLAIN", 2: "PLAIN_DICTIONARY", 3: "RLE", 4: "BIT_PACKED", 5: "DELTA_BINARY_PACKED",
              6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY", 8: "RLE_DICTIONARY", 9: "BYTE_STREAM_SPLIT"}
_UNBOUNDED_ENCODINGS = {7}
_MAX_PAGES = 1_000_000


@dataclass
class _Pages:
    uncompressed: int = 0      # bytes of every page once decompressed (as their headers declare)
    values: int = 0            # values of the data pages (leaf values, nulls included)
    dictionary: int = 0        # bytes of the dictionary page, decompressed
    encodings: set = None


def parquet_table(path: Path, *, name: str, columns=None):
    """(Arrow table, every column name of the file): a Parquet file read within the budget.

    1. The footer: at most :data:`MAX_ROWS` rows, no repeated column names.
    2. The page headers of the columns read (the sizes a reader allocates, which a
       footer could misstate): decompressed bytes at most :data:`MAX_PARQUET_BYTES`,
       values at most :data:`MAX_PARQUET_VALUES`, no DELTA_BYTE_ARRAY pages.
    3. Text columns are read dictionary-encoded and their decoded size (the sum of the
       lengths of the values each row points to: a dictionary/RLE bomb repeats one
       long value millions of times) is checked before they are expanded.

    Parameters
    ----------
    columns : top-level columns to read (others are never decoded); None reads all.

    Raises
    ------
    JudgmentError
        Naming the file (and the column) of anything over budget or unreadable.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        handle = pq.ParquetFile(path)
        metadata = handle.metadata
        schema = handle.schema_arrow
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        fail(f"not a readable Parquet file ({type(exc).__name__}: {quote(str(exc), 200)})", source=name)
    names = list(schema.names)
    if len(set(names)) != len(names):
        fail("repeated column names", source=name)
    if metadata.num_rows > MAX_ROWS:
        fail(f"holds {metadata.num_rows:,} rows (limit {MAX_ROWS:,} per file)", source=name)
    wanted = [n for n in names if columns is None or n in columns]
    pages = _page_budget(path, metadata, wanted, name=name)
    flat_text = [n for n in wanted if _is_text(schema.field(n).type)]
    nested = [n for n in wanted if pa.types.is_nested(schema.field(n).type)]
    for column in nested:  # a dictionary-encoded nested text leaf: every value may be the longest entry
        info = pages[column]
        if info.dictionary and info.values * info.dictionary > MAX_PARQUET_BYTES:
            fail(f"column {column!r} may expand to {_size(info.values * info.dictionary)} when decoded "
                 f"({info.values:,} values over a {_size(info.dictionary)} dictionary; limit "
                 f"{_size(MAX_PARQUET_BYTES)})", source=name, column=column)
    try:
        reader = pq.ParquetFile(path, read_dictionary=flat_text) if flat_text else handle
        table = reader.read(columns=wanted, use_threads=False)
    except Exception as exc:
        fail(f"not a readable Parquet file ({type(exc).__name__}: {quote(str(exc), 200)})", source=name)
    decoded = 0
    for column in wanted:
        array = table.column(column)
        if pa.types.is_dictionary(array.type):  # the size once every row holds its own copy of its value
            size = 0
            for chunk in array.chunks:
                if _is_text(chunk.dictionary.type):
                    lengths = pc.binary_length(chunk.dictionary)
                    size += int(pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0) + 8 * len(chunk)
                else:
                    size += chunk.dictionary.nbytes // max(len(chunk.dictionary), 1) * len(chunk) + 8 * len(chunk)
        else:
            size = array.nbytes
        decoded += size
        if decoded > MAX_PARQUET_BYTES:
            stored = pages[column].uncompressed if column in pages else 0
            why = (f"{_size(stored)} in the file: values stored once and repeated on many rows"
                   if size > 20 * max(stored, 1) else f"{table.num_rows:,} rows")
            fail(f"expands to more than {_size(MAX_PARQUET_BYTES)} when decoded (column {column!r} alone: "
                 f"{_size(size)}, from {why}); split the file or drop columns", source=name, column=column)
    dense = []
    for column in wanted:
        array = table.column(column)
        if pa.types.is_dictionary(array.type):
            value_type = array.type.value_type
            if _is_text(value_type):
                target = pa.large_string() if pa.types.is_string(value_type) or pa.types.is_large_string(value_type) \
                    else pa.large_binary()
            else:
                target = value_type
            array = pa.chunked_array([chunk.dictionary.cast(target).take(chunk.indices) for chunk in array.chunks],
                                     type=target)
        dense.append(array)
    table = pa.table(dense, names=wanted)
    try:
        table.validate(full=True)  # UTF-8 of every text value, offsets
    except pa.ArrowInvalid as exc:
        fail(f"not a readable Parquet file ({quote(str(exc), 200)})", source=name)
    return table, names


def _is_text(kind) -> bool:
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind)
            or pa.types.is_large_binary(kind))


def _size(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):,.1f} GiB"
    return f"{n / MiB:,.0f} MiB" if n >= MiB else f"{n:,} bytes"


def _page_budget(path: Path, metadata, wanted: list[str], *, name: str) -> dict[str, _Pages]:
    """Walk the page headers of the wanted columns' chunks; refuse what is over budget."""
    out = {column: _Pages(encodings=set()) for column in wanted}
    total_bytes = total_values = pages = 0
    leaves = {}
    for i in range(metadata.num_columns):
        top = metadata.schema.column(i).path.split(".")[0]
        if top in out:
            leaves[i] = top
    with open(path, "rb") as handle:
        for g in range(metadata.num_row_groups):
            group = metadata.row_group(g)
            for i, column in leaves.items():
                chunk = group.column(i)
                start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
                if start is None or start < 0:
                    start = chunk.data_page_offset
                end = start + chunk.total_compressed_size
                position = start
                while position < end:
                    header, length = _page_header(handle, position, name=name)
                    pages += 1
                    if pages > _MAX_PAGES:
                        fail(f"holds more than {_MAX_PAGES:,} pages", source=name)
                    kind, size, compressed, values, encoding = header
                    if size < 0 or compressed < 0 or (values is not None and values < 0):
                        fail("not a readable Parquet file (a page header declares a negative size)", source=name)
                    info = out[column]
                    info.uncompressed += size
                    total_bytes += size
                    if kind == 2:  # DICTIONARY_PAGE
                        info.dictionary += size
                    elif values is not None:
                        info.values += values
                        total_values += values
                    if encoding is not None:
                        if encoding in _UNBOUNDED_ENCODINGS:
                            fail(f"column {column!r} uses the {_ENCODINGS[encoding]} encoding, whose decoded size "
                                 "is not bounded by the file; write the file with pandas or pyarrow defaults",
                                 source=name, column=column)
                        info.encodings.add(encoding)
                    if total_bytes > MAX_PARQUET_BYTES:
                        fail(f"holds more than {_size(MAX_PARQUET_BYTES)} of data once decompressed (column "
                             f"{column!r}); split the file or drop columns", source=name, column=column)
                    if total_values > MAX_PARQUET_VALUES:
                        fail(f"holds more than {MAX_PARQUET_VALUES:,} values (column {column!r})", source=name,
                             column=column)
                    position += length + compressed
    return out


class _Short(Exception):
    """The buffer ended inside a page header."""


def _page_header(handle, position: int, *, name: str):
    """(type, uncompressed size, compressed size, values, encoding) and header length at ``position``."""
    size = 256
    while True:
        handle.seek(position)
        buffer = handle.read(size)
        try:
            reader = _Compact(buffer)
            header = reader.page_header()
            return header, reader.pos
        except _Short:
            if len(buffer) < size or size >= 16 * MiB:
                fail("not a readable Parquet file (a page header is cut or too large)", source=name)
            size *= 8
        except (ValueError, IndexError, struct.error):
            fail("not a readable Parquet file (a page header is malformed)", source=name)


class _Compact:
    """Just enough of Thrift's compact protocol to read a Parquet PageHeader."""

    def __init__(self, buffer: bytes) -> None:
        self.buf, self.pos = buffer, 0

    def byte(self) -> int:
        if self.pos >= len(self.buf):
            raise _Short
        value = self.buf[self.pos]
        self.pos += 1
        return value

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 70:
                raise ValueError("varint too long")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def skip(self, kind: int, depth: int = 0) -> None:
        if depth > 32:
            raise ValueError("thrift nesting too deep")
        if kind in (1, 2):
            return
        if kind == 3:
            self.byte()
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.take(8)
        elif kind == 8:
            self.take(self.varint())
        elif kind in (9, 10):
            head = self.byte()
            count = head >> 4
            if count == 15:
                count = self.varint()
            for _ in range(count):
                self.skip(head & 0x0F if head & 0x0F not in (1, 2) else 3, depth + 1)
        elif kind == 11:
            count = self.varint()
            if count:
                types = self.byte()
                for _ in range(count):
                    self.skip(types >> 4, depth + 1)
                    self.skip(types & 0x0F, depth + 1)
        elif kind == 12:
            self.struct(lambda field, kind_: False, depth + 1)
        else:
            raise ValueError(f"unknown thrift type {kind}")

    def take(self, n: int) -> None:
        if n < 0:
            raise ValueError("negative length")
        if self.pos + n > len(self.buf):
            raise _Short
        self.pos += n

    def struct(self, handle, depth: int = 0) -> None:
        """Read fields until STOP; ``handle(field, type)`` reads a field it wants and returns True."""
        field = 0
        while True:
            head = self.byte()
            if head == 0:
                return
            kind = head & 0x0F
            delta = head >> 4
            field = field + delta if delta else self.zigzag()
            if not handle(field, kind):
                self.skip(kind, depth)

    def page_header(self):
        values = {"type": None, "size": None, "compressed": None, "values": None, "encoding": None}

        def data_page(field, kind, v2=False):
            if field == 1 and kind == 5:
                values["values"] = self.zigzag()
                return True
            if field == (4 if v2 else 2) and kind == 5:
                values["encoding"] = self.zigzag()
                return True
            return False

        def top(field, kind):
            if field in (1, 2, 3) and kind == 5:
                values[{1: "type", 2: "size", 3: "compressed"}[field]] = self.zigzag()
                return True
            if field == 5 and kind == 12:
                self.struct(data_page, 1)
                return True
            if field == 8 and kind == 12:
                self.struct(lambda f, k: data_page(f, k, v2=True), 1)
                return True
            return False

        self.struct(top)
        if values["size"] is None or values["compressed"] is None or values["type"] is None:
            raise ValueError("page header without sizes")
        return values["type"], values["size"], values["compressed"], values["values"], values["encoding"]


# ----------------------------------------------------------------------------- zip


def zip_entry_count(path: Path) -> int:
    """Entries the zip's end-of-central-directory record declares, read before ``zipfile`` builds its index."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - (65535 + 22)))
        tail = handle.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + 22 > len(tail):
        return -1
    count = struct.unpack("<H", tail[at + 10: at + 12])[0]
    if count == 0xFFFF:  # zip64: the locator sits just before the end record
        locator = tail.rfind(b"PK\x06\x07", 0, at)
        if locator >= 0:
            with open(path, "rb") as handle:
                handle.seek(struct.unpack("<Q", tail[locator + 8: locator + 16])[0])
                record = handle.read(56)
            if record[:4] == b"PK\x06\x06" and len(record) >= 40:
                count = struct.unpack("<Q", record[32:40])[0]
    return count


def check_zip(path: Path, *, name: str) -> list:
    """The members of a zip upload if it fits the budget, checked before anything is extracted.

    Refused: more than :data:`ZIP_MAX_MEMBERS` entries, more than :data:`ZIP_MAX_BYTES`
    once extracted, a member over 1 MiB compressed more than :data:`ZIP_MAX_RATIO` to
    one, a member whose path leaves the archive, a symbolic link.

    Returns
    -------
    list of zipfile.ZipInfo
        The file members, in archive order.
    """
    import zipfile

    declared = zip_entry_count(path)
    if declared > ZIP_MAX_MEMBERS:
        fail(f"the archive holds {declared:,} entries (limit {ZIP_MAX_MEMBERS:,})", source=name)
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        fail(f"not a readable zip archive ({quote(str(exc), 120)})", source=name)
    if len(members) > ZIP_MAX_MEMBERS:
        fail(f"the archive holds {len(members):,} entries (limit {ZIP_MAX_MEMBERS:,})", source=name)
    total = 0
    files = []
    for member in members:
        parts = Path(member.filename.replace("\\", "/")).parts
        if member.filename.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
            fail(f"the archive member {quote(member.filename)} would land outside the archive's folder", source=name)
        mode = member.external_attr >> 16
        if stat.S_ISLNK(mode):
            fail(f"the archive member {quote(member.filename)} is a symbolic link; links are not extracted",
                 source=name)
        if member.is_dir():
            continue
        if member.file_size > MiB and member.file_size > ZIP_MAX_RATIO * max(member.compress_size, 1):
            ratio = member.file_size / max(member.compress_size, 1)
            fail(f"the archive member {quote(member.filename)} is compressed {ratio:,.0f} to 1 (limit "
                 f"{ZIP_MAX_RATIO} to 1 for members over 1 MiB); is it a zip bomb?", source=name)
        total += member.file_size
        if total > ZIP_MAX_BYTES:
            fail(f"the archive expands to more than {_size(ZIP_MAX_BYTES)} (at member {quote(member.filename)}); "
                 "upload fewer or smaller files", source=name)
        files.append(member)
    return files


def extract_zip(path: Path, members: list, root: Path, *, name: str) -> None:
    """Extract checked members under ``root``, never writing more than each declares."""
    import zipfile

    inside = root.resolve()
    with zipfile.ZipFile(path) as archive:
        for member in members:
            target = (root / member.filename).resolve()
            if not target.is_relative_to(inside):
                fail(f"the archive member {quote(member.filename)} would land outside the archive's folder",
                     source=name)
            target.parent.mkdir(parents=True, exist_ok=True)
            written = 0
            with archive.open(member) as source, open(target, "wb") as sink:
                while True:
                    block = source.read(MiB)
                    if not block:
                        break
                    written += len(block)
                    if written > member.file_size:
                        fail(f"the archive member {quote(member.filename)} holds more than it declares", source=name)
                    sink.write(block)


# -------------------------------------------------------------------------- folders


def check_folder(folder: Path) -> None:
    """Refuse a folder holding a symbolic link that points outside it, or to a folder, or a special file.

    Checked before anything in the folder is read, so no error can quote a file from
    elsewhere (``/etc/passwd`` behind a link named ``votes.csv``). Links to files that
    stay inside the folder are fine.
    """
    root = Path(os.path.realpath(folder))
    for current, dirs, files in os.walk(folder, followlinks=False):
        for entry in sorted(dirs) + sorted(files):
            path = Path(current) / entry
            relative = path.relative_to(folder)
            try:
                info = os.lstat(path)
            except OSError as exc:
                fail(f"cannot read {quote(str(relative))} ({exc.strerror})", source=folder.name or str(folder))
            if stat.S_ISLNK(info.st_mode):
                target = Path(os.path.realpath(path))
                if not target.is_relative_to(root):
                    fail(f"{quote(str(relative))} is a symbolic link to a place outside the folder; copy the file "
                         "into the folder instead", source=folder.name or str(folder))
                if target.is_dir():
                    fail(f"{quote(str(relative))} is a symbolic link to a folder; links to folders are not followed "
                         "(they can loop); copy the folder instead", source=folder.name or str(folder))
            elif not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                fail(f"{quote(str(relative))} is not a regular file (a pipe, socket or device)",
                     source=folder.name or str(folder))
