"""A version-1 file (text judgments) opened by the current code is upgraded in place."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

from peercore.store import SCHEMA_VERSION, Store, StoreError
from peercore.store.legacy import LEGACY
from peercore.store.schema import statements


def make_v1(path) -> None:
    """A database exactly as migration 1 left it, with a study, answers, judgments, a debate."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                       "applied_at TEXT NOT NULL)")
    version, name, sql = LEGACY[0]
    assert version == 1
    connection.execute("BEGIN")
    for statement in statements(sql):
        connection.execute(statement)
    connection.execute("INSERT INTO schema_migrations VALUES (1, ?, '2024-01-01T00:00:00Z')", (name,))
    connection.execute("INSERT INTO studies (id, name, created_at, revision) VALUES (1, 'old', '2024-01-01', 7), "
                       "(2, 'other', '2024-01-02', 0)")
    connection.execute("INSERT INTO questions (study_id, question_id, text, category) VALUES (1, 'q1', '2+2?', 'math')")
    connection.execute("INSERT INTO answers (study_id, question_id, model, text) VALUES (1, 'q1', 'gpt4', '4')")
    rows = [
        (1, "q1", "gpt4", "claude", "gpt4", "", 0, 0, 0, "model_a", 0.8, "clear", 1, None),
        (1, "q1", "claude", "gpt4", "gpt4", "help", 1, 0, 0, "tie", None, None, 1, None),
        (1, "q1", "claude", "gpt4", "human:ann", "", 0, 0, 0, "model_b", None, None, 1, None),
        (1, "q1", "claude", "gpt4", "human:ann", "", 0, 0, 1, "tie", None, None, 1, None),
        (1, "q2", "gpt4", "claude", "gpt4", "", 0, 2, 0, None, None, None, 0, "no verdict"),
        (2, "x", "gpt4", "bard", "gpt4", "", 0, 0, 0, "model_b", None, None, 1, None),
    ]
    connection.executemany(
        "INSERT INTO judgments (study_id, question_id, model_a, model_b, judge, criterion, turn, round, vote, winner, "
        "p_a, rationale, valid, raw, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '2024-01-01')", rows)
    connection.execute("INSERT INTO debates (id, study_id, debate_key, question_id, model_a, model_b, status, "
                       "created_at) VALUES (1, 1, 'd1', 'q1', 'gpt4', 'claude', 'unresolved', '2024-01-01')")
    connection.execute("INSERT INTO debate_turns VALUES (1, 0, 0, 'gpt4', 'model_a', 'because')")
    connection.execute("COMMIT")
    connection.close()


def test_version_1_file_is_upgraded_in_place_with_its_data(tmp_path):
    # SQLite-only: upgrades a version-1 SQLite file; PostgreSQL databases start at the baseline (test_postgres_store).
    path = tmp_path / "v1.sqlite"
    make_v1(path)
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION
    migrations = store.migrations()
    assert list(migrations["version"]) == list(range(1, SCHEMA_VERSION + 1))
    assert migrations["applied_at"].iloc[0] == "2024-01-01T00:00:00Z"  # the old record is kept
    out = store.verdicts.table("old", with_vote=True)
    assert out[["model_a", "model_b", "judge", "winner"]].values.tolist() == [
        ["gpt4", "claude", "gpt4", "model_a"], ["claude", "gpt4", "gpt4", "tie"],
        ["claude", "gpt4", "human:ann", "model_b"], ["claude", "gpt4", "human:ann", "tie"]]
    assert out["p_a"].iloc[0] == 0.8 and out["rationale"].iloc[0] == "clear"
    assert out["criterion"].isna().tolist() == [True, False, True, True] and out["criterion"].iloc[1] == "help"
    assert out["turn"].isna().tolist() == [True, False, True, True] and out["turn"].iloc[1] == 1
    assert list(out["vote"]) == [0, 0, 0, 1]
    everything = store.verdicts.table("old", include_invalid=True)
    assert everything["raw"].iloc[-1] == "no verdict" and everything["round"].iloc[-1] == 2
    assert store.verdicts.table("other")["winner"].tolist() == ["model_b"]
    assert store.studies.revision("old") == 7
    assert store.questions.table("old", with_metadata=True)["metadata"].iloc[0] == {}
    assert store.debates.turns([1])["raw"].isna().all()
    assert store.integrity_problems() == []
    # The old table is now a view over the coded verdicts, and writes go on working.
    view = store.connect().execute("SELECT judge, winner FROM judgments WHERE study_id = 1 ORDER BY id").fetchall()
    assert [tuple(r) for r in view][:2] == [("gpt4", "model_a"), ("gpt4", "tie")]
    added = store.verdicts.add("old", pd.DataFrame({"question_id": ["q3"], "model_a": ["gpt4"], "model_b": ["claude"],
                                                    "judge": ["gpt4"], "winner": ["tie"]}))
    assert added.added == 1 and len(store.verdicts.table("old")) == 5
    # Reopening does not migrate again.
    assert list(Store(path).migrations()["version"]) == list(range(1, SCHEMA_VERSION + 1))


def test_a_failed_upgrade_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    # SQLite-only: a file's upgrade (PostgreSQL: test_a_failed_migration_leaves_a_postgresql_database_as_it_was).
    path = tmp_path / "v1.sqlite"
    make_v1(path)
    broken = [*LEGACY[:1], (2, "broken", LEGACY[1][2] + "\nSELECT no_such_function();\n")]
    monkeypatch.setattr("peercore.store.front.LEGACY", broken)
    with pytest.raises(StoreError, match="upgrading the schema failed .*no_such_function.*the file is unchanged"):
        Store(path)
    monkeypatch.undo()
    connection = sqlite3.connect(path)
    assert [r[0] for r in connection.execute("SELECT version FROM schema_migrations")] == [1]
    assert connection.execute("SELECT COUNT(*) FROM judgments").fetchone()[0] == 6
    assert connection.execute("SELECT type FROM sqlite_master WHERE name = 'judgments'").fetchone()[0] == "table"
    connection.close()
    assert Store(path).schema_version() == SCHEMA_VERSION  # and the real upgrade still works afterwards
