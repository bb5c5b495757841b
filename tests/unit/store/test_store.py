"""The store: settings, natural keys, atomic writes, round trips, provenance.

Tests taking ``store`` run on both backends (SQLite and PostgreSQL, the ``db`` fixture in
tests/conftest.py); tests taking ``sqlite_store`` are SQLite-only, each saying why.
"""

from __future__ import annotations

import json
import sqlite3
import threading

import numpy as np
import pandas as pd
import pytest

from peercore.errors import JudgmentError
from peercore.judgments import empty_judgments, judgments_from_frame
from peercore.locations import default_db_path
from peercore.store import SCHEMA_VERSION, Store, StoreError, WriteCounts
from peercore.store import schema
from peercore.app import Study


@pytest.fixture
def store(db):
    store = Store(db)
    store.studies.create("s")
    return store


@pytest.fixture
def sqlite_store(tmp_path):
    store = Store(tmp_path / "pb.sqlite")
    store.studies.create("s")
    return store


def frame(rows, **extra) -> pd.DataFrame:
    keys = ("question_id", "model_a", "model_b", "judge", "winner")
    return pd.DataFrame([dict(zip(keys, r)) for r in rows]).assign(**extra)


def rich() -> pd.DataFrame:
    """Every optional column, with gaps."""
    return judgments_from_frame(pd.DataFrame({
        "question_id": ["1", "1", "2", "3"], "model_a": ["a", "a", "b", "c"], "model_b": ["b", "b", "c", "a"],
        "judge": ["j", "j", "k", "human:x"], "winner": ["model_a", "tie", "model_b", "tie (bothbad)"],
        "p_a": [0.7, None, 0.2, 0.5], "criterion": ["help", None, "style", "help"], "turn": [1, None, 2, 1],
        "round": [None, None, 3, None], "rationale": ["because", None, "so", None],
    }))


# ------------------------------------------------------------------------ settings


def test_wal_foreign_keys_and_schema_version(sqlite_store):
    # SQLite-only: WAL and foreign_keys are SQLite PRAGMAs (the version check runs on both in test_postgres_store).
    store = sqlite_store
    connection = store.connect()
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert connection.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.schema_version() == SCHEMA_VERSION == schema.SCHEMA_VERSION
    assert list(store.migrations()["version"]) == list(range(1, SCHEMA_VERSION + 1))


def test_default_path_from_env_then_xdg(monkeypatch, tmp_path):
    # The default database is a file; $PEERBOARD_DB as a URL: tests/unit/test_cli.py and test_cli_on_postgres.
    monkeypatch.setenv("PEERBOARD_DB", str(tmp_path / "env.sqlite"))
    assert default_db_path() == tmp_path / "env.sqlite"
    monkeypatch.delenv("PEERBOARD_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_db_path() == tmp_path / "xdg" / "peerboard" / "peerboard.sqlite"


def test_memory_folder_missing_and_foreign_files_are_refused(tmp_path):
    # SQLite-only: file paths (PostgreSQL's unreachable server: test_postgres_store).
    with pytest.raises(ValueError, match="':memory:' is not supported"):
        Store(":memory:")
    with pytest.raises(StoreError, match="is a folder"):
        Store(tmp_path)
    with pytest.raises(StoreError, match="no PeerBoard database at"):
        Store(tmp_path / "missing.sqlite", create=False)
    assert not (tmp_path / "missing.sqlite").exists()
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database at all, just text" * 100)
    with pytest.raises(StoreError, match="is not a PeerBoard database"):
        Store(junk)


def test_a_newer_schema_is_refused(tmp_path):
    # SQLite-only: a file (PostgreSQL: test_a_newer_postgresql_schema_is_refused).
    path = tmp_path / "new.sqlite"
    Store(path).connect().execute("INSERT INTO schema_migrations VALUES (99, 'future', 'now')")
    with pytest.raises(StoreError, match="schema version 99, newer than this peercore"):
        Store(path)


def test_each_thread_gets_its_own_connection(store):
    seen = []
    thread = threading.Thread(target=lambda: seen.append(store.connect()))
    thread.start()
    thread.join()
    assert seen[0] is not store.connect()
    assert Study(store, "s").counts()["judgments"] == 0


# ---------------------------------------------------------------------- judgments


def test_round_trip_keeps_every_canonical_column(store):
    assert store.verdicts.add("s", rich()) == WriteCounts(4, 0)
    pd.testing.assert_frame_equal(store.verdicts.table("s"), rich())


def test_round_trip_of_an_empty_study(store):
    pd.testing.assert_frame_equal(store.verdicts.table("s"), empty_judgments())
    assert store.verdicts.add("s", empty_judgments()) == WriteCounts(0, 0)


def test_same_judgment_twice_is_one_row_and_repeats_are_votes(store):
    rows = frame([("q", "a", "b", "crowd", "model_a"), ("q", "a", "b", "crowd", "tie"), ("q", "b", "a", "crowd", "tie")])
    assert store.verdicts.add("s", rows) == WriteCounts(3, 0, repeated=1)
    assert store.verdicts.add("s", rows) == WriteCounts(0, 3)
    out = store.verdicts.table("s", with_vote=True)
    assert list(out["vote"]) == [0, 1, 0]
    assert list(out["winner"]) == ["model_a", "tie", "tie"]
    assert store.connect().execute("SELECT COUNT(*) FROM verdicts").fetchone()[0] == 3


def test_vote_column_given_explicitly(store):
    rows = frame([("q", "a", "b", "crowd", "model_a"), ("q", "a", "b", "crowd", "tie")], vote=[5, 7])
    store.verdicts.add("s", rows)
    assert list(store.verdicts.table("s", with_vote=True)["vote"]) == [5, 7]


def test_invalid_verdicts_keep_key_and_raw_text(store):
    rows = frame([("q", "a", "b", "j", "model_a"), ("q2", "a", "b", "j", None)], valid=[1, 0],
                 raw=[None, "I cannot decide [[?]]"])
    assert store.verdicts.add("s", rows) == WriteCounts(2, 0, invalid=1)
    assert len(store.verdicts.table("s")) == 1
    everything = store.verdicts.table("s", include_invalid=True)
    assert list(everything["valid"]) == [1, 0]
    assert everything["winner"].isna().tolist() == [False, True]
    assert everything["raw"].iloc[1] == "I cannot decide [[?]]"
    assert Study(store, "s").counts()["invalid_judgments"] == 1


def test_bad_judgments_are_named_and_nothing_is_written(store):
    rows = frame([("q", "a", "b", "j", "model_a"), ("q2", "a", "b", "j", "modelB")])
    with pytest.raises(JudgmentError, match=r"row 1, column 'winner': winner 'modelB'"):
        store.verdicts.add("s", rows)
    with pytest.raises(JudgmentError, match="model_a and model_b are both"):
        store.verdicts.add("s", frame([("q", "a", "a", "j", None)], valid=[0]))
    assert Study(store, "s").counts()["judgments"] == 0 and store.studies.revision("s") == 0


def test_trusted_frames_are_still_checked(store):
    bad = rich()
    bad.loc[2, "winner"] = "maybe"  # canonical dtypes, non-canonical value
    with pytest.raises(JudgmentError, match="winner 'maybe'"):
        store.verdicts.add("s", bad)
    spaced = rich()
    spaced.loc[0, "judge"] = " j "
    store.verdicts.add("s", spaced)  # falls back to full validation, which strips
    assert set(store.verdicts.table("s")["judge"]) == {"j", "k", "human:x"}


def test_judge_filter_and_names_are_integer_coded(store):
    store.verdicts.add("s", rich())
    assert list(store.verdicts.table("s", judges=["k"])["question_id"]) == ["2"]
    assert len(store.verdicts.table("s", judges=["nobody"])) == 0
    labels = store.verdicts.labels("s")
    assert set(labels) == {"a", "b", "c", "j", "k", "human:x", "help", "style"}
    stored = store.connect().execute("SELECT model_a, judge, winner FROM verdicts ORDER BY id").fetchall()
    assert [tuple(r) for r in stored][0] == (labels["a"], labels["j"], 0)


def test_judgments_view_decodes_and_is_read_only(store):
    """The view is for people reading the database with SQL; writes go through the store (schema version 10)."""
    store.verdicts.add("s", rich())
    sid = store.studies.study_id("s")
    rows = store.connect().execute(
        "SELECT question_id, model_a, model_b, judge, winner, criterion FROM judgments ORDER BY id").fetchall()
    assert tuple(rows[0]) == ("1", "a", "b", "j", "model_a", "help")
    with pytest.raises(Exception, match="view"):
        store.connect().execute(
            "INSERT INTO judgments (study_id, question_id, model_a, model_b, judge, winner, criterion) "
            "VALUES (?, 'q9', 'a', 'newmodel', 'sqluser', 'model_b', 'help')", (sid,))
    assert store.integrity_problems() == []


def test_each_write_is_one_transaction(store):
    before = Study(store, "s").counts()
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.verdicts.add("s", rich())
            store.questions.add("s", pd.DataFrame({"question_id": ["1"], "text": ["?"]}))
            raise RuntimeError("boom")
    assert Study(store, "s").counts() == before
    assert store.verdicts.labels("s") == {}


def test_integrity_problems_finds_orphan_codes(store):
    store.verdicts.add("s", rich())
    store.connect().execute("DELETE FROM labels WHERE text = 'k'")
    assert store.integrity_problems() == ["1 verdict(s) with a judge code missing from labels"]


# ------------------------------------------------------------------ other tables


def test_questions_answers_and_conflicts(store):
    questions = pd.DataFrame({"question_id": ["1", "2"], "text": ["2+2?", "Colour?"], "category": ["math", None],
                              "metadata": [{"turns": ["2+2?", "and 3+3?"]}, {}]})
    assert store.questions.add("s", questions) == WriteCounts(2, 0)
    assert store.questions.add("s", questions) == WriteCounts(0, 2)
    assert store.questions.table("s", with_metadata=True)["metadata"].iloc[0] == {"turns": ["2+2?", "and 3+3?"]}
    answers = pd.DataFrame({"question_id": ["1", "1"], "model": ["a", "a"], "answer": ["4", "6"], "turn": [1, 2]})
    assert store.questions.add_answers("s", answers) == WriteCounts(2, 0)
    clash = store.questions.question_conflicts("s", pd.DataFrame({"question_id": ["1", "2"], "text": ["2+2?", "Animal?"]}))
    assert list(clash["question_id"]) == ["2"] and clash["stored_text"].iloc[0] == "Colour?"
    changed = store.questions.answer_conflicts("s", pd.DataFrame({"question_id": ["1"], "model": ["a"], "answer": ["five"]}))
    assert list(changed["stored_answer"]) == ["4"]


def test_debates_turns_queue_and_adjudication(store):
    debate = {"debate_key": "k1", "question_id": "1", "model_a": "a", "model_b": "b", "status": "unresolved",
              "criterion": "help", "scenario": "code", "n_rounds": 1}
    turns = [{"round": 0, "position": 0, "speaker": "x", "verdict": "model_a"},
             {"round": 0, "position": 1, "speaker": "y", "verdict": None, "raw": '"4"'},
             {"round": 1, "position": 0, "speaker": "x", "verdict": "model_a"},
             {"round": 1, "position": 1, "speaker": "y", "verdict": "model_b"}]
    assert store.debates.add("s", debate, turns) is True
    assert store.debates.add("s", debate, turns) is False
    queue = store.debates.queue("s")
    assert list(queue["debate_key"]) == ["k1"] and queue["scenario"].iloc[0] == "code"
    stored = store.debates.turns(queue["id"])
    assert len(stored) == 4 and stored["raw"].iloc[1] == '"4"'
    assert store.debates.adjudicate(int(queue["id"].iloc[0]), "ann", "model_a") is True
    assert store.debates.queue("s").empty
    with pytest.raises(ValueError, match="consensus must be one of"):
        store.debates.add("s", {**debate, "debate_key": "k2", "consensus": "A"}, [])


def test_import_provenance_goes_to_imports_and_study_source(store):
    with store.transaction():
        import_id = store.studies.record_import("s", source="/data/x.csv", format="canonical", sha256="ab" * 32)
        store.verdicts.add("s", rich(), import_id=import_id)
        store.studies.set_import_counts(import_id, {"judgments": WriteCounts(4, 0), "notes": {"x": np.int64(1)}})
    imports = store.studies.imports("s")
    assert list(imports["format"]) == ["canonical"]
    assert imports["counts"].iloc[0] == {"judgments": {"added": 4, "skipped": 0}, "notes": {"x": 1}}
    record = store.studies.source("s")["imports"][0]
    assert record["source"] == "/data/x.csv" and record["sha256"] == "ab" * 32
    ids = {r[0] for r in store.connect().execute("SELECT import_id FROM verdicts")}
    assert ids == {import_id}


def test_revision_changes_with_every_write(store):
    first = store.studies.revision("s")
    store.verdicts.add("s", rich())
    second = store.studies.revision("s")
    store.verdicts.add("s", rich())  # nothing new: no bump
    assert first < second == store.studies.revision("s")


def test_summary_counts(store):
    store.verdicts.add("s", rich())
    summary = Study(store, "s").counts()
    assert summary["judgments"] == 4 and summary["human_votes"] == 1 and summary["contestants"] == 3
    assert summary["judges"] == 3
    judges = store.judges.table("s").set_index("name")
    assert judges.loc["human:x", "kind"] == "human" and judges.loc["j", "n_judgments"] == 2


def test_unknown_study_lists_the_studies(store):
    with pytest.raises(StoreError, match=r"no study named 'x' in .*; studies are \['s'\]"):
        store.verdicts.table("x")


def test_secrets_never_reach_the_database(sqlite_store):
    # SQLite-only: reads the whole file with iterdump (test_postgres_store dumps PostgreSQL's tables).
    store = sqlite_store
    store.judges.add("s", [{"name": "openai:gpt-4o", "kind": "llm", "settings": {"api_key": "sk-123", "model": "m"}}])
    text = "\n".join(sqlite3.connect(store.path).iterdump())
    assert "sk-123" not in text and '"model": "m"' in text


def test_optional_columns_are_fetched_only_when_filled(store):
    store.verdicts.add("s", frame([("q", "a", "b", "j", "model_a")]))
    filled = {r[0] for r in store.connect().execute("SELECT name FROM verdict_columns")}
    assert filled == set()
    store.verdicts.add("s", frame([("q2", "a", "b", "j", "tie")], p_a=[0.5]))
    filled = {r[0] for r in store.connect().execute("SELECT name FROM verdict_columns")}
    assert filled == {"p_a"}
    assert store.verdicts.table("s")["p_a"].tolist()[1] == 0.5


def test_json_text_round_trips_unicode(store):
    store.verdicts.add("s", frame([("问题", "模型甲", "b", "j", "model_a")], rationale=["因为 ✓"]))
    out = store.verdicts.table("s")
    assert out["question_id"].iloc[0] == "问题" and out["rationale"].iloc[0] == "因为 ✓"
    assert json.loads(json.dumps(store.verdicts.labels("s"), ensure_ascii=False))


def test_secret_keys_are_scrubbed_but_token_counts_are_not():
    from peercore.store import scrub_secrets

    config = {"api_key": "sk-1", "OPENAI_API_KEY": "sk-2", "accessToken": "t", "nested": [{"password": "p"}],
              "max_tokens": 512, "prompt_tokens": 7, "keyboard": "qwerty", "model": "gpt-4o"}
    assert scrub_secrets(config) == {"api_key": "***", "OPENAI_API_KEY": "***", "accessToken": "***",
                                     "nested": [{"password": "***"}], "max_tokens": 512, "prompt_tokens": 7,
                                     "keyboard": "qwerty", "model": "gpt-4o"}


def test_discussions_do_not_enter_the_adjudication_queue(store):
    base = {"question_id": "1", "model_a": "a", "model_b": "b", "status": "unresolved"}
    store.debates.add("s", {**base, "debate_key": "talk", "kind": "discussion"}, [])
    store.debates.add("s", {**base, "debate_key": "fight", "kind": "debate"}, [])
    assert list(store.debates.queue("s")["debate_key"]) == ["fight"]


def test_run_progress_counts_each_item_once(store):
    run = store.runs.create("s", "review", {"max_tokens": 5}, items=["a", "b", "c"])
    store.runs.finish_item(run, "a")
    store.runs.finish_item(run, "a")  # a repeated mark does not count twice
    store.runs.finish_item(run, "b", status="invalid")
    store.runs.finish_item(run, "c", status="failed")
    assert store.runs.get(run)["n_done"] == 2
    assert store.runs.pending_items(run) == ["c"]
    assert store.runs.get(run)["config"] == {"max_tokens": 5}
    with pytest.raises(StoreError, match="has no item 'zzz'"):
        store.runs.finish_item(run, "zzz")
