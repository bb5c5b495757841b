"""Migration 4: human scores and judges' scores are tables of their own, keyed, validated, accounted for."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

from peercore.store import SCHEMA_VERSION, ScoreConflict, Store
from peercore.store.core import _now
from peercore.store.legacy import LEGACY
from peercore.store.schema import statements
from peercore.app import Study


def test_a_version_3_file_is_upgraded_with_its_data(tmp_path):
    path = tmp_path / "v3.sqlite"
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                       "applied_at TEXT NOT NULL)")
    for version, name, sql in LEGACY[:3]:
        for statement in statements(sql):
            connection.execute(statement)
        connection.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", (version, name, _now()))
    connection.execute("INSERT INTO studies (name, created_at) VALUES ('old', '2026-01-01')")
    connection.close()
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION and 4 in store.migrations()["version"].tolist()
    assert store.studies.exists("old") and Study(store, "old").counts()["human_scores"] == 0
    store.scores.add_human_scores("old", pd.DataFrame({"question_id": ["c"], "model": ["m"], "attribute": ["coherence"],
                                                       "value": [2.5]}))
    assert store.scores.human_scores("old")["value"].tolist() == [2.5]
    assert store.integrity_problems() == []


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "pb.sqlite")
    s.studies.create("s")
    yield s
    s.close()


def test_human_scores_are_keyed_and_conflicts_refused(store):
    frame = pd.DataFrame({"question_id": ["c1", "c1"], "model": ["a", "b"], "attribute": ["coh", "coh"],
                          "value": [2.0, 3.0]})
    assert store.scores.add_human_scores("s", frame).added == 2
    revision = store.studies.revision("s")
    assert store.scores.add_human_scores("s", frame) == type(store.scores.add_human_scores("s", frame))(0, 2)
    assert store.studies.revision("s") == revision  # nothing written, nothing bumped
    with pytest.raises(ScoreConflict, match="already stored in study 's' with value 3.0, not 2.5") as caught:
        store.scores.add_human_scores("s", frame.assign(value=[2.0, 2.5]))
    assert caught.value.row == 1 and caught.value.key == {"question_id": "c1", "model": "b", "attribute": "coh"}
    with pytest.raises(ScoreConflict, match="given twice"):
        store.scores.add_human_scores("s", pd.concat([frame, frame.assign(value=[9.0, 3.0])]).assign(question_id="c9"))
    for bad, words in ((frame.assign(value=[float("inf"), 1.0]), "finite"), (frame.assign(value=[True, 1.0]), "number"),
                       (frame.assign(model=["", "b"]), "model is empty"), (frame.drop(columns="value"), "missing")):
        with pytest.raises(ValueError, match=words):
            store.scores.add_human_scores("s", bad)
    assert len(store.scores.human_scores("s")) == 2


def test_judge_scores_keep_unreadable_replies_and_count_in_the_run(store):
    run = store.runs.create("s", "score", {}, items=["i1", "i2"], run_id="score-1")
    rows = pd.DataFrame([
        {"question_id": "c1", "model": "a", "judge": "j", "attribute": "coh", "score": 7.0, "expected": 6.25,
         "distribution": {"6": 0.75, "7": 0.25}},
        {"question_id": "c1", "model": "b", "judge": "j", "attribute": "coh", "valid": 0, "raw": "Score: 7 or 8"},
    ])

    def write(tx):
        store.scores.add_judge_scores("s", rows, run_id=run)

    store.runs.finish_item(run, "i1", write=write)
    frame = store.scores.judge_scores("s", include_invalid=True)
    assert frame["valid"].tolist() == [1, 0] and frame["value"].iloc[0] == 6.25
    assert frame["distribution"].iloc[0] == {"6": 0.75, "7": 0.25} and frame["raw"].iloc[1] == "Score: 7 or 8"
    assert len(store.scores.judge_scores("s")) == 1  # valid only by default
    assert store.runs.accounting(run)["scores"] == 2
    assert Study(store, "s").counts()["judge_scores"] == 1
    assert store.scores.score_judges("s").values.tolist() == [["j", "coh", 1, 1]]
    assert store.scores.add_judge_scores("s", rows).skipped == 2
    with pytest.raises(ScoreConflict, match="already stored"):
        store.scores.add_judge_scores("s", rows.assign(score=[8.0, None]))
    with pytest.raises(ValueError, match="needs 'score' or 'expected'"):
        store.scores.add_judge_scores("s", pd.DataFrame([{"question_id": "c2", "model": "a", "judge": "j"}]))
    store.studies.delete("s")  # scores go with their study
    assert store.connect().execute("SELECT COUNT(*) FROM judge_scores").fetchone()[0] == 0
