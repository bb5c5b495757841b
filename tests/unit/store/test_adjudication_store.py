"""Migration 5: the adjudication guidelines live in the store (rubric, overlap, both bad, blind, skips)."""

from __future__ import annotations

import sqlite3

import psycopg

import pytest

from peercore.store import SCHEMA_VERSION, Store
from peercore.store.core import _now
from peercore.store.legacy import LEGACY
from peercore.store.schema import statements
from peercore.app import Study


def make_v4(path) -> None:
    """A database exactly as migration 4 left it: a study, two unresolved debates, a decision on each."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                       "applied_at TEXT NOT NULL)")
    connection.execute("BEGIN")
    for version, name, sql in LEGACY[:4]:
        for statement in statements(sql):
            connection.execute(statement)
        connection.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", (version, name, _now()))
    connection.execute("INSERT INTO studies (id, name, created_at, revision) VALUES (1, 'old', '2026-01-01', 3)")
    for debate_id in (1, 2):
        connection.execute("INSERT INTO debates (id, study_id, debate_key, question_id, model_a, model_b, status, "
                           "created_at) VALUES (?, 1, ?, 'q1', 'a', 'b', 'unresolved', '2026-01-01')",
                           (debate_id, f"d{debate_id}"))
    connection.execute("INSERT INTO adjudications (debate_id, annotator, verdict, note, created_at, token) "
                       "VALUES (1, 'ann', 'tie', 'close', '2026-01-02', 'tok')")
    connection.execute("COMMIT")
    connection.close()


def test_a_version_4_file_is_upgraded_with_its_decisions(tmp_path):
    # SQLite-only: upgrades a SQLite file of version 4 (PostgreSQL databases start at the baseline, version 8).
    path = tmp_path / "v4.sqlite"
    make_v4(path)
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION >= 5
    assert store.migrations()["version"].tolist() == list(range(1, SCHEMA_VERSION + 1))
    decided = store.debates.adjudications("old")
    assert decided[["debate_id", "annotator", "verdict", "note", "decision"]].values.tolist() == [
        [1, "ann", "tie", "close", "tie"]]
    assert decided["both_bad"].tolist() == [False] and decided["blind"].isna().all()  # not recorded before 5
    assert store.studies.settings("old") == {"rubric": "", "overlap": 0, "reviewers": []}
    assert store.debates.skipped("old", "ann") == []
    assert store.studies.revision("old") == 3
    # The new columns and table work on the upgraded file.
    assert store.debates.adjudicate(2, "ann", "both_bad", blind=True)
    store.debates.skip(1, "ben")
    store.studies.update_settings("old", rubric="Prefer the correct answer.", overlap=2)
    assert store.integrity_problems() == []
    store.close()
    reopened = Store(path)
    assert reopened.studies.settings("old") == {"rubric": "Prefer the correct answer.", "overlap": 2, "reviewers": []}
    assert reopened.debates.skipped("old", "ben") == [1]
    assert reopened.migrations()["version"].tolist() == list(range(1, SCHEMA_VERSION + 1))  # not migrated twice


@pytest.fixture
def store(db):  # both backends (tests/conftest.py)
    s = Store(db)
    s.studies.create("s")
    s.debates.add_many("s", [({"debate_key": f"d{k}", "question_id": f"q{k}", "model_a": "a", "model_b": "b",
                               "status": "unresolved", "criterion": "help" if k % 2 else "harm",
                               "scenario": "math" if k < 3 else "code"},
                         [{"round": 0, "position": 0, "speaker": "judge-x", "verdict": "model_a"},
                          {"round": 0, "position": 1, "speaker": "judge-y", "verdict": "model_b"}])
                        for k in range(1, 5)])
    yield s
    s.close()


def test_both_bad_is_stored_as_a_flagged_tie_and_the_gold_counts_a_tie(store):
    store.debates.adjudicate(1, "ann", "both_bad", note="neither is right", blind=True)
    store.debates.adjudicate(2, "ann", "model_a", blind=False)
    decided = store.debates.adjudications("s")
    assert decided[["verdict", "decision", "both_bad"]].values.tolist() == [
        ["tie", "both_bad", True], ["model_a", "model_a", False]]
    assert decided["blind"].tolist() == [True, False]
    gold = Study(store, "s").gold()
    assert gold.set_index("debate_id").loc[1, "winner"] == "tie"
    # Changing one's mind replaces the flag too; the CHECK keeps both_bad on ties only.
    store.debates.adjudicate(1, "ann", "model_b")
    assert store.debates.adjudications("s").set_index("debate_id").loc[1, ["verdict", "both_bad"]].tolist() == ["model_b", False]
    with pytest.raises((sqlite3.IntegrityError, psycopg.IntegrityError), match="(?i)check"):
        store.connect().execute("UPDATE adjudications SET both_bad = 1 WHERE debate_id = 1")
    with pytest.raises(ValueError, match="both_bad"):
        store.debates.adjudicate(1, "ann", "neither")


def test_skips_belong_to_the_annotator_and_survive_a_new_connection(store, db):
    revision = store.studies.revision("s")
    assert store.debates.skip(2, "ann") and not store.debates.skip(2, "ann")  # once
    store.debates.skip(3, "ann")
    store.debates.skip(3, "ben")
    assert store.studies.revision("s") == revision  # a skip is no data
    other = Store(db)  # another process / browser session
    assert other.debates.skipped("s", "ann") == [2, 3] and other.debates.skipped("s", "ben") == [3]
    assert other.debates.skipped("s", "carl") == []
    assert other.debates.clear_skips("s", "ann", debate_id=2) == 1
    assert store.debates.skipped("s", "ann") == [3]
    store.debates.adjudicate(3, "ben", "tie")  # deciding a skipped debate clears that skip
    assert store.debates.skipped("s", "ben") == []
    assert store.debates.clear_skips("s", "ann") == 1 and store.debates.skipped("s", "ann") == []
    with pytest.raises(ValueError, match="annotator name is empty"):
        store.debates.skip(1, " ")


def test_overlap_queue_shows_what_still_needs_this_annotator(store):
    store.studies.update_settings("s", overlap=2)
    store.debates.adjudicate(1, "ann", "model_a")
    store.debates.adjudicate(1, "ben", "model_b")
    store.debates.adjudicate(2, "ann", "tie")
    queue = store.debates.queue("s", annotator="carl", overlap=2)
    assert queue["id"].tolist() == [2, 3, 4]  # debate 1 has its two decisions
    assert queue["decisions"].tolist() == [1, 0, 0]
    assert store.debates.queue("s", annotator="ann", overlap=2)["id"].tolist() == [3, 4]
    assert store.debates.queue("s", annotator="carl", overlap=0)["id"].tolist() == [1, 2, 3, 4]  # no limit
    assert store.debates.queue("s", annotator="carl", overlap=1)["id"].tolist() == [3, 4]
    assert store.debates.queue("s")["id"].tolist() == [3, 4]  # nobody decided
    for bad in (-1, 1001, 1.5, True, "2"):
        with pytest.raises(ValueError, match="overlap must be an integer"):
            store.debates.queue("s", annotator="carl", overlap=bad)


def test_rubric_and_overlap_are_study_settings(store):
    revision = store.studies.revision("s")
    store.studies.update_settings("s", rubric="1. Correctness first.\n2. Then clarity.")
    store.studies.update_settings("s", overlap=3)  # one setting leaves the other alone
    assert store.studies.settings("s") == {"rubric": "1. Correctness first.\n2. Then clarity.", "overlap": 3, "reviewers": []}
    assert store.studies.revision("s") == revision
    with pytest.raises(ValueError, match="overlap must be an integer from 0"):
        store.studies.update_settings("s", overlap=-2)
    with pytest.raises(ValueError, match="rubric must be text"):
        store.studies.update_settings("s", rubric=3)
    assert store.studies.settings("s")["overlap"] == 3
    store.studies.create("t")
    assert store.studies.settings("t") == {"rubric": "", "overlap": 0, "reviewers": []}


def test_deleting_a_study_removes_its_skips(store):
    store.debates.skip(1, "ann")
    store.studies.delete("s")
    assert store.connect().execute("SELECT COUNT(*) FROM adjudication_skips").fetchone()[0] == 0
