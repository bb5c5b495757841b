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
    store.create_study("fuzz")
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
    assert np.isfinite(store.revision("fuzz"))
