"""A large study's read model kept per revision (``verdict_snapshots``, schema 14; issue 18).

The read model (:mod:`peercore.store.verdict_reader`) of a study with at least
``SNAPSHOT_FROM`` verdicts is kept as one row at the study's revision; a reader at that
revision reads the row instead of scanning the verdicts. Here ``SNAPSHOT_FROM`` is 1 so
that small studies use it; on both backends:

* the snapshot gives the same read model as the scan, bit for bit (odd question texts,
  unreadable verdicts, probabilities, criteria, turns, rounds, repeated votes, store ids);
* a write makes it stale: the next read scans, sees the write, and keeps a new snapshot;
  deleting the study deletes it;
* a reader never waits for a writer to keep one, and one inside a transaction keeps none;
* ``peercore copy`` leaves snapshots behind (a cache) and the copy reads the same.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

from peercore.cli import main
from peercore.domain import verdicts as V
from peercore.store import Store
from peercore.store import verdict_reader

ODD = ["NA", "null", "a,b", "two\nlines", "naïve ✓", "\\N"]


@pytest.fixture(autouse=True)
def snapshots_for_every_study(monkeypatch):
    monkeypatch.setattr(verdict_reader, "SNAPSHOT_FROM", 1)


def _judgments(n: int = 60, *, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(n):
        a, b = rng.choice(4, 2, replace=False)
        bad = k % 9 == 0
        rows.append({"question_id": ODD[k % len(ODD)] + f"#{k // len(ODD)}", "model_a": f"m{a}", "model_b": f"m{b}",
                     "judge": ["gpt", "human:ann", "NA"][k % 3], "winner": None if bad else ["model_a", "model_b", "tie"][k % 3],
                     "p_a": [np.nan, float(rng.random()), 0.9030385791534981, 3e-300][k % 4] if not bad else np.nan,
                     "criterion": [None, "helpful"][k % 2], "turn": k % 2 + 1, "round": k % 2,
                     "raw": "unparsed" if bad else None, "valid": 0 if bad else 1})
    rows += [dict(rows[1], winner="model_b", vote=1), dict(rows[1], winner="tie", vote=2)]  # repeated votes
    return pd.DataFrame(rows)


def _frame(store: Store, study: str) -> pd.DataFrame:
    return V.to_frame(verdict_reader.read_verdicts(store, study), include_invalid=True)


def _snapshots(store: Store) -> list[tuple]:
    return [tuple(row) for row in store.connect().execute(
        "SELECT study_id, revision, verdicts FROM verdict_snapshots ORDER BY study_id").fetchall()]


def _scan_forbidden(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("the verdicts were scanned although the snapshot is current")

    monkeypatch.setattr(verdict_reader, "_scan", forbidden)


def test_the_snapshot_reads_as_the_scan_bit_for_bit(db, monkeypatch):
    store = Store(db)
    store.studies.create("s")
    store.verdicts.add("s", _judgments())
    assert _snapshots(store) == []
    scanned = _frame(store, "s")
    assert _snapshots(store) == [(store.studies.study_id("s"), store.studies.revision("s"), len(scanned))]
    _scan_forbidden(monkeypatch)
    kept = _frame(store, "s")
    pd.testing.assert_frame_equal(kept, scanned)
    assert [v.hex() for v in kept["p_a"].fillna(-1.0)] == [v.hex() for v in scanned["p_a"].fillna(-1.0)]
    store.close()


def test_a_write_makes_it_stale_and_the_next_read_keeps_a_new_one(db):
    store = Store(db)
    store.studies.create("s")
    store.verdicts.add("s", _judgments())
    before = _frame(store, "s")
    store.verdicts.add("s", pd.DataFrame({"question_id": ["new"], "model_a": ["m0"], "model_b": ["newcomer"],
                                          "judge": ["gpt"], "winner": ["tie"]}))
    after = _frame(store, "s")
    assert len(after) == len(before) + 1 and "newcomer" in set(after["model_b"])
    assert _snapshots(store) == [(store.studies.study_id("s"), store.studies.revision("s"), len(after))]
    store.studies.delete("s")
    assert _snapshots(store) == []  # gone with its study
    store.close()


def test_a_reader_never_waits_for_the_write_lock_and_keeps_none_inside_a_transaction(tmp_path):
    path = tmp_path / "pb.sqlite"
    store = Store(path)
    store.studies.create("s")
    store.verdicts.add("s", _judgments())
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process writing: the reader must not wait for it (busy timeout 120 s)
    try:
        assert len(_frame(store, "s")) == len(_judgments())
        assert _snapshots(store) == []
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with store.transaction():
        assert len(_frame(store, "s")) == len(_judgments())
    assert _snapshots(store) == []  # inside a write transaction: read, not kept
    _frame(store, "s")
    assert len(_snapshots(store)) == 1
    store.close()


def test_copy_leaves_snapshots_behind_and_the_copy_reads_the_same(tmp_path, pg_url, capsys):
    source = tmp_path / "source.sqlite"
    store = Store(source)
    store.studies.create("s")
    store.verdicts.add("s", _judgments())
    expected = _frame(store, "s")
    assert len(_snapshots(store)) == 1
    store.close()
    assert main(["copy", str(source), pg_url]) == 0
    assert "verdict_snapshots" not in capsys.readouterr().out
    target = Store(pg_url)
    assert _snapshots(target) == []
    pd.testing.assert_frame_equal(_frame(target, "s"), expected)
    assert len(_snapshots(target)) == 1  # the copy's first reader keeps its own
    target.close()
