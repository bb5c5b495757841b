"""Random inputs never crash an import, and a rejected one never changes the database (hypothesis).

- Byte-level fuzz: a valid file (canonical CSV / JSONL, human votes, a debate table)
  with random bytes inserted, deleted or replaced.
- Record-level fuzz: JSONL records with random subsets of the known fields and values
  of random types.

Each input is either imported (and the store stays consistent) or rejected with a
:class:`~peercore.errors.PeercoreError` (a ``ValueError`` naming the file), and a
rejected input leaves the logical dump and the checkpointed bytes unchanged. Also:
the fast Arrow path and the row-by-row path of the canonical reader agree.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from peercore.errors import PeercoreError
from peercore.io.canonical import _careful_canonical, fast_canonical
from peercore.io.importer import import_bundle, read_path
from peercore.store import Store

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

SEEDS = {
    "judgments.csv": "question_id,model_a,model_b,judge,winner,p_a,turn\nq1,a,b,j,model_a,0.7,1\nq2,b,c,k,tie,,2\n",
    "judgments.jsonl": '{"question_id": "q1", "model_a": "a", "model_b": "b", "judge": "j", "winner": "model_b"}\n'
                       '{"question_id": 2, "model_a": "c", "model_b": "a", "judge": "j", "winner": "tie (bothbad)"}\n',
    "votes.csv": "question_id,model_a,model_b,annotator,winner\nq1,a,b,ann,model_a\nq1,a,b,bob,tie\n",
    "debates.csv": "debate_id,question_id,model_a,model_b,round,speaker,verdict\nd1,q1,a,b,0,x,model_a\n"
                   "d1,q1,a,b,0,y,model_b\nd1,q1,a,b,1,x,model_a\nd1,q1,a,b,1,y,model_a\n",
}
FIELDS = ["question_id", "model_a", "model_b", "judge", "winner", "p_a", "turn", "round", "criterion", "rationale",
          "annotator", "tstamp", "valid", "raw", "vote", "instruction", "preference", "note"]
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["model_a", "model_b", "tie", "tie (bothbad)", "a", "b", "", " ", "=1+1", "@x", "-", "human:z"]),
    st.text(max_size=8), st.lists(st.integers(0, 2), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def fingerprint(path) -> tuple[list[str], str]:
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    dump = list(connection.iterdump())
    connection.close()
    return dump, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def store(tmp_path):
    store = Store(tmp_path / "fuzz.sqlite")
    store.studies.create("fuzz")
    return store


def try_import(path, store) -> None:
    before = fingerprint(store.path)
    try:
        bundle = read_path(path)
        import_bundle(bundle, store=store, study="fuzz")
    except PeercoreError as exc:
        assert path.name in str(exc) or "fuzz" in str(exc), str(exc)
        store.close()
        assert fingerprint(store.path) == before
        return
    assert store.integrity_problems() == []


@SETTINGS
@given(name=st.sampled_from(sorted(SEEDS)), edits=st.lists(
    st.tuples(st.sampled_from(["insert", "delete", "replace"]), st.integers(0, 10_000), st.binary(min_size=1, max_size=4)),
    min_size=1, max_size=4))
def test_byte_fuzz_is_imported_or_rejected_cleanly(name, edits, store, tmp_path):
    data = bytearray(SEEDS[name].encode())
    for kind, position, blob in edits:
        position %= len(data) + 1
        if kind == "insert":
            data[position:position] = blob
        elif kind == "delete":
            del data[position:position + len(blob)]
        else:
            data[position:position + len(blob)] = blob
    path = tmp_path / name
    path.write_bytes(bytes(data))
    try_import(path, store)


@SETTINGS
@given(records=st.lists(st.dictionaries(st.sampled_from(FIELDS), VALUES, min_size=1, max_size=8), min_size=1,
                        max_size=5))
def test_record_fuzz_is_imported_or_rejected_cleanly(records, store, tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    try_import(path, store)


NAMES = st.text(alphabet="abcxyz -:_", min_size=1, max_size=6)


@settings(max_examples=80, deadline=None)
@given(rows=st.lists(st.tuples(NAMES, NAMES, NAMES, NAMES, st.sampled_from(["model_a", "model_b", "tie", "TIE (bothbad)",
                                                                           " model_a", "x"]),
                               st.one_of(st.none(), st.floats(0, 1), st.floats(-1, 2)), st.one_of(st.none(), st.integers(0, 3))),
                     min_size=1, max_size=12))
def test_fast_path_agrees_with_the_careful_path(rows):
    raw = pd.DataFrame(rows, columns=["question_id", "model_a", "model_b", "judge", "winner", "p_a", "turn"])
    raw = raw.astype({c: "str" for c in ("question_id", "model_a", "model_b", "judge", "winner")})
    raw["p_a"] = raw["p_a"].astype(float)
    raw["turn"] = raw["turn"].astype("Int64")
    fast = fast_canonical(raw, judge_prefix="human:")
    try:
        careful = _careful_canonical(raw, name="x", line_of=lambda row: row + 1, judge_prefix="human:")
    except PeercoreError:
        assert fast is None  # the fast path never accepts what the careful one rejects
        return
    if fast is not None:
        pd.testing.assert_frame_equal(fast, careful)


def test_fuzz_strategies_can_produce_valid_and_invalid_inputs(store, tmp_path):
    """The properties above are not vacuous: the seeds import, and a broken seed is rejected."""
    for name, text in SEEDS.items():
        path = tmp_path / name
        path.write_text(text)
        report = import_bundle(read_path(path), store=store, study="fuzz")
        assert sum(c.added for c in report.counts.values()) > 0, name
    broken = tmp_path / "broken.csv"
    broken.write_text(SEEDS["judgments.csv"].replace("tie", "tye"))
    with pytest.raises(PeercoreError, match="broken.csv, line 3, column 'winner'"):
        read_path(broken)
    assert np.isfinite(store.studies.revision("fuzz"))


# ------------------------------------------------ the fast and careful paths on whole files
# The frame-level property above cannot see what the fast path's parsers let through
# (Arrow reads NaN, two objects on one line, 1e20 as a float; pandas renames a repeated
# CSV header). These build files and compare the two readers on the same bytes: the fast
# path may give up (None), but what it accepts the careful path accepts identically.

RAW_VALUES = st.one_of(
    st.sampled_from(["NaN", "-NaN", "Infinity", "-Infinity", "1e20", "1e400", "100000000000000000000", "-1", "0",
                     "1", "2", "0.5", "1.0", "true", "null", '"\\ud800"', '"x\\u0000y"', "[1]", '{"a": 1}',
                     "[" * 70 + "]" * 70, '" model_a"', '"\\u00a0a"', '"\\u001ca"', '"=1"', '"a\\nb"', '""',
                     '"tie (bothbad)"', '"TIE"', '"model_b"', '"a"', '"b"', '"j"']),
    st.integers(-3, 10**20).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.text(max_size=6).map(json.dumps),
)
CANONICAL_FIELDS = ["question_id", "model_a", "model_b", "judge", "winner", "p_a", "turn", "round", "criterion",
                    "rationale", "tstamp"]


def _valid(k: int) -> dict:
    return {"question_id": f"q{k}", "model_a": "a", "model_b": "b", "judge": "j", "winner": "model_a", "p_a": 0.5,
            "turn": 1}


def _both_paths(path, monkeypatch):
    """(fast result or None, careful result or the careful path's error)."""
    import peercore.io.canonical as canonical
    from peercore.io._common import file_kind

    try:
        raw = canonical._fast_raw_frame(path, file_kind(path))
    except PeercoreError:
        raw = None  # a refusal the careful path gives too (the same function)
    fast = None if raw is None else canonical.fast_canonical(raw)
    monkeypatch.setattr(canonical, "_FAST_PATH_BYTES", float("inf"))
    try:
        careful = canonical.read_canonical_judgments(path).judgments
    except PeercoreError as exc:
        careful = exc
    return fast, careful


def _agree(fast, careful) -> None:
    if fast is None:
        return
    assert not isinstance(careful, Exception), f"the fast path accepted what the careful path refuses: {careful}"
    pd.testing.assert_frame_equal(fast, careful)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bad=st.lists(st.tuples(st.integers(0, 7), st.sampled_from(CANONICAL_FIELDS), RAW_VALUES), max_size=3),
       extra=st.sampled_from(["", "two_on_a_line", "duplicate_field", "blank_lines", "crlf", "bom"]))
def test_fast_and_careful_agree_on_jsonl_files(bad, extra, tmp_path_factory, monkeypatch):
    lines = [json.dumps(_valid(k)) for k in range(8)]
    for row, field, token in bad:
        record = dict(_valid(row))
        record[field] = "__RAW__"
        lines[row] = json.dumps(record).replace('"__RAW__"', token)
    if extra == "two_on_a_line":
        lines[3] = lines[3] + " " + lines[4]
    elif extra == "duplicate_field":
        lines[2] = lines[2][:-1] + ', "winner": "tie"}'
    elif extra == "blank_lines":
        lines.insert(4, "   ")
        lines.insert(0, "")
    text = ("\r\n" if extra == "crlf" else "\n").join(lines) + "\n"
    path = tmp_path_factory.mktemp("agree") / "battles.jsonl"
    path.write_bytes((b"\xef\xbb\xbf" if extra == "bom" else b"") + text.encode("utf-8", "surrogatepass"))
    _agree(*_both_paths(path, monkeypatch))


CSV_CELLS = st.one_of(
    st.sampled_from(["NaN", "nan", "-nan", "+nan", "inf", "-Infinity", "1e20", "-1", "1.5", "0.5", "1", "2.0", "", " ",
                     "true", " 0.5 ", "1e-1", "0x1", "1_0", ".5", "5.", "-0", "1e400", "0.5\t",
                     "model_a", "tie (bothbad)", "TIE", "=1", "\u00a0a", "\x1ca", '"a\nb"', "a" * 1001, "x\x00y"]),
    st.text(alphabet="ab ,\"-:", max_size=5),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cells=st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["question_id", "model_a", "judge", "winner", "p_a",
                                                                     "turn", "round", "criterion"]), CSV_CELLS),
                      max_size=3),
       header=st.sampled_from(["plain", "repeated", "spaced", "bom"]))
def test_fast_and_careful_agree_on_csv_files(cells, header, tmp_path_factory, monkeypatch):
    columns = ["question_id", "model_a", "model_b", "judge", "winner", "p_a", "turn", "round", "criterion"]
    rows = [{"question_id": f"q{k}", "model_a": "a", "model_b": "b", "judge": "j", "winner": "tie", "p_a": "",
             "turn": "1", "round": "", "criterion": "help"} for k in range(6)]
    for row, column, value in cells:
        rows[row][column] = value
    head = list(columns)
    if header == "repeated":
        head[-1] = "winner"
    elif header == "spaced":
        head[0] = " question_id"
    text = ",".join(head) + "\n" + "".join(",".join(str(r.get(c, "")) for c in columns) + "\n" for r in rows)
    path = tmp_path_factory.mktemp("agree") / "battles.csv"
    path.write_bytes((b"\xef\xbb\xbf" if header == "bom" else b"") + text.encode("utf-8"))
    _agree(*_both_paths(path, monkeypatch))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(p_a=st.lists(st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)), min_size=4, max_size=4),
       turn=st.lists(st.one_of(st.none(), st.integers(-5, 2**62)), min_size=4, max_size=4))
def test_fast_and_careful_agree_on_parquet_files(p_a, turn, tmp_path_factory, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"question_id": [f"q{k}" for k in range(4)], "model_a": ["a"] * 4, "model_b": ["b"] * 4,
                      "judge": ["j"] * 4, "winner": ["model_a"] * 4,
                      "p_a": pa.array(p_a, pa.float64(), from_pandas=False), "turn": pa.array(turn, pa.int64())})
    path = tmp_path_factory.mktemp("agree") / "battles.parquet"
    pq.write_table(table, path)
    fast, careful = _both_paths(path, monkeypatch)
    _agree(fast, careful)
    values = [v for v in p_a if v is not None]
    if any(v != v or v in (float("inf"), float("-inf")) for v in values):  # NaN / inf: refused, never stored
        assert isinstance(careful, PeercoreError) and fast is None


def test_the_file_level_properties_can_fail(tmp_path, monkeypatch):
    """Not vacuous: a clean file goes through both paths identically, and main's fast path accepted NaN."""
    path = tmp_path / "ok.jsonl"
    path.write_text("".join(json.dumps(_valid(k)) + "\n" for k in range(5)))
    fast, careful = _both_paths(path, monkeypatch)
    assert fast is not None and not isinstance(careful, Exception)
    nan = tmp_path / "nan.jsonl"
    nan.write_text("".join(json.dumps(_valid(k)) + "\n" for k in range(5)).replace('"p_a": 0.5,', '"p_a": NaN,', 1))
    fast, careful = _both_paths(nan, monkeypatch)
    assert fast is None and isinstance(careful, PeercoreError) and "p_a is nan" in str(careful)
    monkeypatch.undo()
    clean = pd.DataFrame([_valid(k) for k in range(5)])
    clean.drop(columns="p_a").to_csv(tmp_path / "ok.csv", index=False)
    clean.to_parquet(tmp_path / "ok.parquet")
    for name in ("ok.csv", "ok.parquet"):  # the fast path does take honest CSV and Parquet files
        fast, careful = _both_paths(tmp_path / name, monkeypatch)
        monkeypatch.undo()
        assert fast is not None and not isinstance(careful, Exception), name
