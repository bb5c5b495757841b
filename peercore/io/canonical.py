"""Canonical judgment files and question / answer tables.

Judgments: the canonical table of :mod:`peercore.judgments` (CSV, JSONL / JSON array,
Parquet) with ``question_id, model_a, model_b, judge, winner`` and optionally ``p_a,
criterion, turn, round, rationale``; an optional ``valid`` (0/1) and ``raw`` keep
unparsed verdicts, ``vote`` numbers repeated verdicts. Questions and answers:

- questions: ``question_id`` and the text as ``question``, ``text``, ``prompt`` or
  ``turns`` (a list, MT-Bench style), optional ``category``, ``reference``;
- answers: ``question_id, model, answer`` (optional ``turn``, default 1);
- question/answer table (one row per answer): ``question_id, question, model, answer``,
  optional ``category``, ``reference``, ``turn``. The same id with two different
  question texts is refused.

Large files take a fast path: JSONL is parsed by Arrow, CSV by pandas, and the
checks run on distinct values (a million battles between a hundred models is a hundred
names to check, not a million). Any doubt falls back to the row-by-row path, which is
what names the file, line and field of the first problem.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from peercore.io._common import (
    FORMULA_PREFIXES,
    MAX_IDENTIFIER,
    Bundle,
    check_identifiers,
    CsvLines,
    dedupe_questions,
    fail,
    file_kind,
    first_non_scalar,
    parquet_frame,
    quote,
    require_columns,
    table_records,
    text_column,
    whole_numbers,
    with_validity,
)
from peercore.io.rules import (
    INTEGER_BOUNDS,
    INVISIBLE,
    MAX_JSON_DEPTH,
    is_scalar,
    kind_of,
    MAX_LINE_BYTES,
    MAX_ROWS,
    json_depth_problem,
    non_finite_row,
    scan_file,
    type_depth,
)
from peercore.errors import JudgmentError
from peercore.judgments import _FORMATS, COLUMNS, REQUIRED_COLUMNS, _as_text, _validate

__all__ = [
    "read_canonical_judgments",
    "read_questions",
    "read_answers",
    "read_qa_table",
    "judgments_frame",
    "fast_canonical",
]

IDENTIFIER_COLUMNS = ("question_id", "model_a", "model_b", "judge", "criterion")
_WINNER_ALIASES = {"model_a": "model_a", "model_b": "model_b", "tie": "tie", "tie (bothbad)": "tie"}
_FAST_PATH_BYTES = 1 << 20  # files smaller than 1 MiB are simply read row by row
# The columns a judgment file may use (others are not kept; Parquet does not even decode them).
READ_COLUMNS = (*COLUMNS, "valid", "raw", "vote", "order_known")
# Python's str.strip() whitespace beyond what Arrow's utf8_trim_whitespace removes.
_PY_WHITESPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006" \
                 "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
QUESTION_TEXT_COLUMNS = ("question", "text", "prompt", "turns", "instruction")


# --------------------------------------------------------------------- judgments


def read_canonical_judgments(path: str | Path, *, judge_prefix: str | None = None,
                             default_judge: str | None = None, format: str = "canonical") -> Bundle:
    """Read a canonical judgment file into an import bundle.

    Parameters
    ----------
    path : .csv, .jsonl / .json, or .parquet.
    judge_prefix : prefix added to judge names that hold no ``:`` (e.g. ``human:`` for
        Chatbot Arena voters); None keeps names as they are.
    default_judge : judge for files without a ``judge`` column (Arena logs may omit it).

    Raises
    ------
    JudgmentError
        Naming the file, line and column: a missing column, an empty key, an unknown
        winner, ``model_a == model_b``, a bad ``p_a`` / ``turn``, a list where one value
        belongs, an identifier that looks like a spreadsheet formula, a repeated field,
        bad encoding, anything over the budgets of :mod:`peercore.io.rules`, ...
    """
    path = Path(path)
    frame, line_of = _judgments_and_lines(path, judge_prefix=judge_prefix, default_judge=default_judge)
    return Bundle(source=str(path), format=format, judgments=frame, judges=_judges_of(frame), files=[path],
                  judgment_lines=line_of, order="known" if format == "arena" else "auto")


def judgments_frame(path: Path, *, judge_prefix: str | None = None, default_judge: str | None = None) -> pd.DataFrame:
    """Canonical judgments (+ ``valid``, ``raw``, optional ``vote``) of one file."""
    return _judgments_and_lines(Path(path), judge_prefix=judge_prefix, default_judge=default_judge)[0]


def _judgments_and_lines(path: Path, *, judge_prefix: str | None, default_judge: str | None):
    """(canonical judgments, row -> line): the fast path when it is sure, else the careful one."""
    name = path.name
    kind = file_kind(path)
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    if size >= _FAST_PATH_BYTES:
        raw = _fast_raw_frame(path, kind)
        if raw is not None:
            if default_judge is not None and "judge" not in raw.columns:
                raw["judge"] = pd.array(np.full(len(raw), default_judge, dtype=object), dtype="str")
            fast = fast_canonical(raw, judge_prefix=judge_prefix)
            if fast is not None:
                return fast, _fast_lines(path, kind)
            del raw  # the careful path reads the file again: free the fast path's copy first
    frame, line_of = table_records(path, format=kind, columns=READ_COLUMNS)
    if default_judge is not None and "judge" not in frame.columns:
        frame["judge"] = default_judge
    return _careful_canonical(frame, name=name, line_of=line_of, judge_prefix=judge_prefix), line_of


def _careful_canonical(frame: pd.DataFrame, *, name: str, line_of, judge_prefix: str | None) -> pd.DataFrame:
    require_columns(frame, REQUIRED_COLUMNS, source=name, what="judgments")
    check_identifiers(frame, IDENTIFIER_COLUMNS, source=name, line_of=line_of)
    valid = _validity(frame, name=name, line_of=line_of)
    good = valid == 1
    if good.all():
        canonical = _validate(frame, source=name, line_of=line_of)
    else:  # an unparsed verdict keeps its key: validate it with a stand-in winner, then blank it
        stand_in = frame["winner"].astype(object).where(good, "tie")
        canonical = _validate(frame.assign(winner=stand_in), source=name, line_of=line_of)
        canonical["winner"] = canonical["winner"].where(good)
    if judge_prefix:
        canonical["judge"] = _prefixed(canonical["judge"], judge_prefix)
    raw = None
    if "raw" in frame.columns:  # the judge's unparsed reply: one text (a number is written as text)
        row = first_non_scalar(frame["raw"])
        if row is not None:
            value = frame["raw"].iloc[row]
            fail(f"raw is {kind_of(value)} ({quote(value)}); the judge's reply is one text", source=name,
                 line=line_of(row), row=row, column="raw", value=quote(value))
        raw = _as_text(frame["raw"])
        raw = raw.astype(object).where(raw.notna(), None)
    out = with_validity(canonical, valid=valid, raw=None if raw is None else raw.tolist())
    if "vote" in frame.columns:
        out["vote"] = whole_numbers(frame, "vote", source=name, line_of=line_of, default=0).astype(np.int64).to_numpy()
    if "order_known" in frame.columns:
        out["order_known"] = _order_known(frame["order_known"], name=name, line_of=line_of)
    return out


_ORDER_VALUES = {"true": True, "1": True, "yes": True, "known": True, "false": False, "0": False, "no": False,
                 "unknown": False}


def _order_known(values: pd.Series, *, name: str, line_of) -> np.ndarray:
    """A file's ``order_known`` column (true / false, 1 / 0, known / unknown; empty: unknown)."""
    out = np.zeros(len(values), dtype=bool)
    for row, value in enumerate(values.tolist()):
        if value is None or (isinstance(value, float) and value != value):
            continue
        if isinstance(value, bool) or (isinstance(value, (int, float)) and value in (0, 1)):
            out[row] = bool(value)
            continue
        flag = _ORDER_VALUES.get(str(value).strip().lower()) if isinstance(value, str) else None
        if flag is None:
            fail(f"order_known {quote(value)} is not true or false (whether model_a is the answer the judge saw "
                 "first)", source=name, line=line_of(row), row=row, column="order_known", value=quote(value))
        out[row] = flag
    return out


def _validity(frame: pd.DataFrame, *, name: str, line_of) -> np.ndarray:
    if "valid" not in frame.columns:
        return np.ones(len(frame), dtype=np.int64)
    values = whole_numbers(frame, "valid", source=name, line_of=line_of, default=1)
    bad = ~values.isin([0, 1]).to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        fail(f"valid {quote(frame['valid'].iloc[row])} is not 0 or 1", source=name, line=line_of(row), column="valid",
             value=frame["valid"].iloc[row])
    return values.to_numpy(dtype=np.int64)


def _prefixed(judges: pd.Series, prefix: str) -> pd.Series:
    codes, uniques = pd.factorize(judges)
    renamed = np.array([u if ":" in u else prefix + u for u in uniques], dtype=object)
    return pd.Series(pd.array(renamed[codes], dtype="str"), index=judges.index)


def _judges_of(judgments: pd.DataFrame) -> list[dict]:
    """Registrations for the judges of an import: kind from the name prefix."""
    out = []
    for name in pd.unique(judgments["judge"]):
        kind = ("human" if name.startswith("human:") else "debate" if name.startswith("debate:")
                else "adjudicator" if name.startswith("adjudicator:") else "vote" if name.startswith("vote:") else "llm")
        out.append({"name": str(name), "kind": kind})
    return out


# -------------------------------------------------------------------- fast path


def _fast_raw_frame(path: Path, kind: str) -> pd.DataFrame | None:
    """Raw columns with Arrow-backed strings, parsed in C; None whenever the careful path must decide.

    Before Arrow or pandas see a text file, one pass over its bytes checks what they
    would let through: a NUL byte, a line over the limit, and (JSON) a line with
    enough brackets to nest too deep (Arrow's JSON reader crashes on very deep
    input). After parsing: as many rows as non-blank lines (Arrow reads two objects
    on one line as two rows), no NaN / Infinity in any column (Arrow accepts them),
    no nesting over the limit. A Parquet file goes through the same budgeted reader
    as the careful path, so a refusal there is final.
    """
    if kind == "parquet":
        return parquet_frame(path, name=path.name, columns=READ_COLUMNS)
    try:
        if kind == "json":
            return _fast_json(path)
        if kind == "csv" and path.suffix.lower() == ".csv":
            return _fast_csv(path)
    except Exception:  # any parse trouble: the careful path explains it
        return None
    return None


def _fast_json(path: Path) -> pd.DataFrame | None:
    import pyarrow.json as pj

    with path.open("rb") as handle:
        head = handle.read(4096).lstrip()
    if head.startswith(b"\xef\xbb\xbf") or head.startswith(b"["):
        return None
    scan = scan_file(path, json_mode=True)
    if scan.nul or scan.longest > MAX_LINE_BYTES or scan.content_lines > MAX_ROWS:
        return None
    if scan.bracket_lines and not _lines_shallow(path, scan.bracket_lines):
        return None
    block = max(1 << 20, 1 << int(scan.longest + 2).bit_length())  # a line must fit in one block
    table = pj.read_json(path, read_options=pj.ReadOptions(block_size=block))
    if table.num_rows != scan.content_lines:
        return None
    for column in table.column_names:
        array = table.column(column)
        if type_depth(array.type) + 1 > MAX_JSON_DEPTH or non_finite_row(array) is not None:
            return None
    return pd.DataFrame({name: _column(table.column(name)) for name in table.column_names if name in READ_COLUMNS})


def _lines_shallow(path: Path, lines: list[int], *, most: int = 1000) -> bool:
    """True when each of these 0-based lines (bracket-heavy) nests at most MAX_JSON_DEPTH levels."""
    if len(lines) > most:
        return False
    wanted = set(lines)
    with path.open("rb") as handle:
        for number, line in enumerate(handle):
            if number in wanted:
                text = line.decode("utf-8", errors="replace")
                if json_depth_problem(text) is not None:
                    return False
    return True


def _fast_csv(path: Path) -> pd.DataFrame | None:
    scan = scan_file(path, json_mode=False)
    if scan.nul or scan.longest > MAX_LINE_BYTES or scan.lines > MAX_ROWS:
        return None
    with path.open("rb") as handle:
        first = handle.readline()
    if first.startswith(b"\xef\xbb\xbf") or b'"' in first:
        return None
    header = [h.strip() for h in first.decode("utf-8").rstrip("\r\n").split(",")]
    if len(set(header)) != len(header):
        return None
    frame = pd.read_csv(path, dtype="str", keep_default_na=False, na_values=[""], encoding="utf-8",
                        skip_blank_lines=True)
    if len(set(frame.columns)) != len(frame.columns) or any(str(c) != str(c).strip() for c in frame.columns):
        return None
    return frame


def _fast_lines(path: Path, kind: str):
    """row -> line for a file read by the fast path (found on first use: errors only)."""
    if kind == "parquet":
        return lambda row: None
    if kind == "csv":
        return CsvLines(path)
    found: list = []

    def line_of(row: int):
        if not found:
            found.append(_content_line_numbers(path))
        numbers = found[0]
        return int(numbers[row]) if 0 <= row < len(numbers) else None

    return line_of


def _content_line_numbers(path: Path) -> np.ndarray:
    """1-based numbers of the lines holding something besides space, tab and CR."""
    data = np.fromfile(path, dtype=np.uint8)
    newlines = np.flatnonzero(data == 10)
    solid = np.flatnonzero((data != 32) & (data != 9) & (data != 13) & (data != 10))
    return np.unique(np.searchsorted(newlines, solid)) + 1


def _column(chunked: pa.ChunkedArray):
    if pa.types.is_string(chunked.type) or pa.types.is_large_string(chunked.type):
        return pd.array(chunked.cast(pa.large_string()).combine_chunks(), dtype="str")
    if pa.types.is_null(chunked.type):
        return pd.Series([None] * len(chunked), dtype=object).array
    return chunked.to_pandas()


def fast_canonical(raw: pd.DataFrame, *, judge_prefix: str | None = None) -> pd.DataFrame | None:
    """The canonical table of ``raw`` if every check passes on whole Arrow columns, else None.

    Returns exactly what the careful path returns for the same input (a property test
    checks this); None means "ask the careful path", which names the first bad row.
    """
    if any(c not in raw.columns for c in REQUIRED_COLUMNS) or "valid" in raw.columns or "raw" in raw.columns \
            or "vote" in raw.columns or "order_known" in raw.columns:
        return None
    n = len(raw)
    if n == 0:
        return None
    out: dict[str, object] = {}
    arrays: dict[str, pa.Array] = {}
    for column in ("question_id", "model_a", "model_b", "judge"):
        values = _fast_text(raw[column])
        if values is None:
            return None
        arrow = _large(values)
        if arrow.null_count:
            return None
        stripped = pc.utf8_trim_whitespace(arrow)
        if not _identifiers_ok(arrow) or pc.any(pc.equal(stripped, "")).as_py():
            return None
        if not pc.all(pc.equal(pc.utf8_trim(arrow, _PY_WHITESPACE), stripped)).as_py():
            return None  # whitespace that Python and Arrow strip differently: let the careful path strip it
        arrays[column] = stripped
    if pc.any(pc.equal(arrays["model_a"], arrays["model_b"])).as_py():
        return None
    if judge_prefix:
        encoded = pc.dictionary_encode(arrays["judge"])
        names = [u if ":" in u else judge_prefix + u for u in encoded.dictionary.to_pylist()]
        arrays["judge"] = pa.array(names, pa.large_string()).take(encoded.indices)
    for column, array in arrays.items():
        out[column] = pd.array(array, dtype="str")
    winner = _fast_text(raw["winner"])
    if winner is None:
        return None
    encoded = pc.dictionary_encode(_large(winner))
    if encoded.null_count:
        return None
    mapped = [_WINNER_ALIASES.get(str(u).strip().lower()) for u in encoded.dictionary.to_pylist()]
    if any(m is None for m in mapped):
        return None
    out["winner"] = pd.array(pa.array(mapped, pa.large_string()).take(encoded.indices), dtype="str")
    if "p_a" in raw.columns:
        p_a = raw["p_a"]
        if p_a.dtype == object and p_a.isna().all():
            numbers = np.full(n, np.nan)
        elif pd.api.types.is_numeric_dtype(p_a.dtype) and not pd.api.types.is_bool_dtype(p_a.dtype):
            numbers = p_a.to_numpy(dtype=float, na_value=np.nan)
        elif p_a.dtype == "str":  # CSV text, parsed exactly as the careful path parses it
            numbers = pd.to_numeric(p_a.astype(object).where(p_a.notna()), errors="coerce").to_numpy(
                dtype=float, na_value=np.nan)
            if (p_a.notna().to_numpy() & np.isnan(numbers)).any():
                return None
        else:
            return None
        with np.errstate(invalid="ignore"):
            if (~np.isnan(numbers) & ~((numbers >= 0) & (numbers <= 1))).any():
                return None
        out["p_a"] = numbers
    else:
        out["p_a"] = np.full(n, np.nan)
    for column in ("criterion", "rationale"):
        if column in raw.columns:
            values = _fast_text(raw[column], allow_missing=True)
            if values is None:
                return None
            if column == "criterion":
                arrow = _large(values)
                if not _identifiers_ok(arrow):
                    return None
            out[column] = values
        else:
            out[column] = _null_text(n)
    for column in ("turn", "round"):
        if column in raw.columns:
            values = raw[column]
            if values.dtype == object and values.isna().all():
                out[column] = _null_int(n)
                continue
            if pd.api.types.is_integer_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
                numbers = values.to_numpy(dtype=float, na_value=np.nan)
            elif pd.api.types.is_float_dtype(values.dtype):
                numbers = values.to_numpy(dtype=float, na_value=np.nan)
            elif values.dtype == "str":
                parsed = pd.to_numeric(values.astype(object).where(values.notna()), errors="coerce")
                if (parsed.isna() & values.notna()).any():
                    return None
                numbers = parsed.to_numpy(dtype=float, na_value=np.nan)
            else:
                return None
            low, high = INTEGER_BOUNDS[column]
            given = ~np.isnan(numbers)
            with np.errstate(invalid="ignore"):
                if (given & (~np.isfinite(numbers) | (numbers % 1 != 0) | (numbers < low) | (numbers > high))).any():
                    return None
            out[column] = pd.arrays.IntegerArray(np.where(given, numbers, 0).astype(np.int64), ~given)
        else:
            out[column] = _null_int(n)
    return with_validity(pd.DataFrame({column: out[column] for column in COLUMNS}))


def _null_text(n: int):
    return pd.array(pa.nulls(n, pa.large_string()), dtype="str")


def _null_int(n: int):
    return pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))


def _large(values) -> pa.Array:
    array = pa.array(values)
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return array if array.type == pa.large_string() else array.cast(pa.large_string())


def _fast_text(series: pd.Series, *, allow_missing: bool = False):
    """Arrow-backed text of a column, or None when the careful path must decide."""
    if series.dtype == "str":
        return series.array
    if pd.api.types.is_integer_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        return pd.array(series.astype(str), dtype="str")
    if allow_missing and series.dtype == object and series.isna().all():
        return _null_text(len(series))
    return None


def _identifiers_ok(arrow: pa.Array) -> bool:
    """No formula-like start (after Python's whitespace), no line break or other invisible character
    (:data:`peercore.io.rules.INVISIBLE`), not too long (nulls are fine)."""
    stripped = pc.utf8_trim(arrow, _PY_WHITESPACE)
    for prefix in FORMULA_PREFIXES:
        if pc.any(pc.starts_with(arrow, prefix)).as_py() or pc.any(pc.starts_with(stripped, prefix)).as_py():
            return False
    if pc.any(pc.greater(pc.utf8_length(arrow), MAX_IDENTIFIER)).as_py():
        return False
    return not pc.any(pc.match_substring_regex(arrow, INVISIBLE)).as_py()  # line breaks, NUL, zero-width ...


# ------------------------------------------------------------ questions, answers


def read_questions(path: str | Path) -> Bundle:
    """Questions: ``question_id`` + ``question`` / ``text`` / ``prompt`` / ``turns``, optional ``category``, ``reference``."""
    path = Path(path)
    frame, line_of = table_records(path)
    questions = questions_frame(frame, name=path.name, line_of=line_of)
    return Bundle(source=str(path), format="questions", questions=questions, files=[path])


def questions_frame(frame: pd.DataFrame, *, name: str, line_of) -> pd.DataFrame:
    """``question_id, text, category, reference, metadata`` from a raw questions frame."""
    require_columns(frame, ("question_id",), source=name, what="questions")
    text_column_name = next((c for c in QUESTION_TEXT_COLUMNS if c in frame.columns), None)
    if text_column_name is None:
        fail(f"missing the question text: give one of the columns {', '.join(QUESTION_TEXT_COLUMNS)} "
             f"(found: {', '.join(map(str, frame.columns))})", source=name, line=1)
    check_identifiers(frame, ("question_id", "category"), source=name, line_of=line_of)
    qid = text_column(frame, "question_id", source=name, line_of=line_of)
    metadata = [{} for _ in range(len(frame))]
    if text_column_name == "turns":
        texts = []
        for row, turns in enumerate(frame["turns"].tolist()):
            if isinstance(turns, str):
                turns = [turns]
            if not isinstance(turns, (list, tuple, np.ndarray)) or not len(turns) or not all(
                    isinstance(t, str) and t.strip() for t in turns):
                fail(f"turns must be a non-empty list of texts, got {quote(turns)}", source=name, line=line_of(row),
                     column="turns", value=turns)
            texts.append(turns[0])
            if len(turns) > 1:
                metadata[row]["turns"] = list(turns)
        text = pd.Series(texts, index=frame.index, dtype="str")
    else:
        text = text_column(frame, text_column_name, source=name, line_of=line_of)
    category = text_column(frame, "category", source=name, line_of=line_of, required=False).fillna("") \
        if "category" in frame.columns else pd.Series("", index=frame.index, dtype="str")
    reference = [None] * len(frame)
    if "reference" in frame.columns:
        for row, value in enumerate(frame["reference"].tolist()):
            if isinstance(value, dict) or (isinstance(value, (list, tuple, np.ndarray))
                                           and not all(is_scalar(v) for v in value)):
                fail(f"reference {quote(value)} is not a text or a list of texts (one per turn)", source=name,
                     line=line_of(row), row=row, column="reference", value=quote(value))
            if isinstance(value, (list, tuple, np.ndarray)):
                value = [str(v) for v in value]
                if len(value) > 1:
                    metadata[row]["reference_turns"] = value
                value = value[0] if value else None
            reference[row] = None if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
    questions = pd.DataFrame({"question_id": qid, "text": text, "category": category,
                              "reference": pd.Series(reference, index=frame.index, dtype=object),
                              "metadata": pd.Series(metadata, index=frame.index, dtype=object),
                              "_line": [line_of(row) for row in range(len(frame))]})
    return dedupe_questions(questions, source=name, line_of=line_of)


def read_answers(path: str | Path) -> Bundle:
    """Answers: ``question_id, model, answer`` (optional ``turn``)."""
    path = Path(path)
    frame, line_of = table_records(path)
    answers = answers_frame(frame, name=path.name, line_of=line_of)
    return Bundle(source=str(path), format="answers", answers=answers, files=[path], answer_lines=line_of)


def answers_frame(frame: pd.DataFrame, *, name: str, line_of) -> pd.DataFrame:
    require_columns(frame, ("question_id", "model", "answer"), source=name, what="answers")
    check_identifiers(frame, ("question_id", "model"), source=name, line_of=line_of)
    answers = pd.DataFrame({
        "question_id": text_column(frame, "question_id", source=name, line_of=line_of),
        "model": text_column(frame, "model", source=name, line_of=line_of),
        "turn": whole_numbers(frame, "turn", source=name, line_of=line_of, default=1).astype(np.int64),
        "answer": _answer_text(frame, name=name, line_of=line_of),
    })
    key = answers[["question_id", "model", "turn"]]
    duplicated = key.duplicated(keep="first").to_numpy()
    if duplicated.any():
        row = int(np.flatnonzero(duplicated)[0])
        first = int(np.flatnonzero((key == key.iloc[row]).all(axis=1).to_numpy())[0])
        fail(f"a second answer of model {quote(answers['model'].iloc[row])} to question {quote(answers['question_id'].iloc[row])} "
             f"(turn {answers['turn'].iloc[row]}); the first is on line {line_of(first)}", source=name,
             line=line_of(row), column="question_id", value=answers["question_id"].iloc[row])
    return answers


def _answer_text(frame: pd.DataFrame, *, name: str, line_of) -> pd.Series:
    values = frame["answer"]
    bad = values.isna().to_numpy() | np.array([not isinstance(v, (str, int, float)) for v in values.tolist()])
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        fail(f"answer {quote(values.iloc[row])} is not a text", source=name, line=line_of(row), column="answer",
             value=values.iloc[row])
    return values.astype(str)


def read_qa_table(path: str | Path) -> Bundle:
    """A question/answer table: ``question_id, question, model, answer`` (+ ``category``, ``reference``, ``turn``)."""
    path = Path(path)
    frame, line_of = table_records(path)
    require_columns(frame, ("question_id", "question", "model", "answer"), source=path.name, what="a question/answer table")
    questions = questions_frame(frame.drop(columns=[c for c in ("turns", "text", "prompt") if c in frame.columns]),
                                name=path.name, line_of=line_of)
    answers = answers_frame(frame, name=path.name, line_of=line_of)
    return Bundle(source=str(path), format="qa", questions=questions, answers=answers, files=[path],
                  answer_lines=line_of)


# ------------------------------------------------------------- a canonical file as a table


def read_judgments(path: str | os.PathLike[str], *, format: str = "auto") -> pd.DataFrame:
    """Read a canonical judgment table from a CSV, JSONL or Parquet file.

    The file is read by the importers' careful reader (:mod:`peercore.io._common`), so
    it is held to the same rules as ``peercore import`` (:mod:`peercore.io.rules`).

    Parameters
    ----------
    path : the file.
    format : ``"auto"`` (from the extension: .csv, .jsonl/.json/.ndjson, .parquet/.pq),
        or one of ``"csv"``, ``"jsonl"``, ``"parquet"``.

    Returns
    -------
    DataFrame in the canonical shape (see :func:`judgments_from_frame`).

    Raises
    ------
    JudgmentError
        Naming the file, line and column: everything :func:`judgments_from_frame`
        rejects, plus an empty file, text that is not UTF-8, a line that is not valid
        JSON, and an explicit ``NaN`` in ``p_a`` (an empty CSV cell or a JSON ``null``
        means "not given").
    """
    path = Path(path)
    fmt = _detect_format(path, format)
    name = path.name
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise JudgmentError(f"cannot read the file ({exc.strerror})", source=str(path)) from None
    if size == 0:
        raise JudgmentError("the file is empty (0 bytes); expected judgments", source=name)
    kind = {"csv": "csv", "jsonl": "json", "parquet": "parquet"}[fmt]
    frame, line_of = table_records(path, format=kind, allow_empty=True)
    if len(frame) == 0:
        raise JudgmentError("the file holds no judgments (no data rows)", source=name)
    return _validate(frame, source=name, line_of=line_of)


def _detect_format(path: Path, format: str) -> str:
    if format != "auto":
        if format not in _FORMATS:
            raise ValueError(f"format must be 'auto' or one of {_FORMATS}, got {format!r}")
        return format
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise JudgmentError(
        f"cannot tell the format from the extension {quote(suffix)}; "
        "use .csv, .jsonl or .parquet (or pass format=)",
        source=path.name,
    )
