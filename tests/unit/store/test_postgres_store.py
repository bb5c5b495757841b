"""The store on PostgreSQL (issue 13): the dialect layer, one version history, the same results as SQLite.

Tests taking ``db`` run on both backends; ``pg_url`` only on PostgreSQL (tests/conftest.py:
one throwaway cluster per session, a fresh schema per test).
"""

from __future__ import annotations

import sqlite3
import threading

import pandas as pd
import psycopg
import pytest

from peerboard_testing import make_judgments

from peercore import assignment
from peercore.store import schema
from peercore.db import translate
from peercore.locations import redact_url
from peercore.store import SCHEMA_VERSION, ScoreConflict, Store, StoreError, WriteCounts
from peercore.store.legacy import LEGACY
from peercore.app import Study

T0 = 1_800_000_000.0


def _pg(url: str) -> psycopg.Connection:
    return psycopg.connect(url, autocommit=True)


# ------------------------------------------------------------------ dialect layer


def test_translate_rewrites_sql_outside_literals_only():
    t = translate("SELECT '?', \"a?\" FROM x WHERE a = ? AND b LIKE 'human:%' AND c = ?")
    assert t.sql == "SELECT '?', \"a?\" FROM x WHERE a = %s AND b LIKE 'human:%%' AND c = %s" and t.order is None
    t = translate("SELECT * FROM v WHERE s = ?1 AND id IN (SELECT x FROM y WHERE s = ?1) AND z = ?2")
    assert t.sql.count("%s") == 3 and t.order == (0, 0, 1)
    assert translate("INSERT OR IGNORE INTO runs (id) VALUES (?)").sql == \
        "INSERT INTO runs (id) VALUES (%s) ON CONFLICT DO NOTHING"
    assert translate("SELECT 1 WHERE a IS b AND c IS NOT d AND e IS NULL AND f IS NOT NULL").sql == \
        "SELECT 1 WHERE a IS NOT DISTINCT FROM b AND c IS DISTINCT FROM d AND e IS NULL AND f IS NOT NULL"
    assert translate("SELECT COUNT(*) FROM (SELECT 1) WHERE 1 = 1").sql == \
        "SELECT COUNT(*) FROM (SELECT 1) AS _sub0 WHERE 1 = 1"
    assert translate("SELECT COUNT(*) FROM (SELECT 1) t").sql == "SELECT COUNT(*) FROM (SELECT 1) t"
    assert translate("INSERT INTO studies (name) VALUES (?)").returning_id
    assert translate("INSERT INTO labels (study_id, id, text) VALUES (?, ?, ?)").insert == \
        (False, "labels", ("study_id", "id", "text"), ("?", "?", "?"))  # executemany goes through COPY
    upsert = ("INSERT INTO judges (study_id, name, kind) VALUES (?, ?, ?) ON CONFLICT (study_id, name) DO UPDATE SET "
              "kind = COALESCE(excluded.kind, judges.kind)")
    assert translate(upsert).insert is None  # an upsert is never turned into COPY
    assert translate("BEGIN IMMEDIATE").kind == "begin" and translate("PRAGMA foreign_keys = ON").kind == "noop"
    assert translate("PRAGMA busy_timeout = 250").sql == "SET lock_timeout = 250"
    assert translate("CREATE TEMP TABLE t (p REAL)").sql == "CREATE TEMP TABLE t (p DOUBLE PRECISION)"
    assert translate("SELECT 1 FROM t WHERE judge IN ()").sql == "SELECT 1 FROM t WHERE judge IN (NULL)"
    assert redact_url("postgresql://me:s3cret@db.example:5433/pb") == "postgresql://me:***@db.example:5433/pb"


# ------------------------------------------------------------------------ schema


def _sqlite_schema(path) -> tuple[dict, set, set]:
    connection = sqlite3.connect(path)
    tables = {name: [r[1] for r in connection.execute(f"PRAGMA table_info({name})")] for (name,) in connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
    views = {r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'view'")}
    indexes = {r[0] for r in connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}
    connection.close()
    return tables, views, indexes


def test_the_postgresql_schema_has_sqlites_tables_columns_views_and_indexes(tmp_path, pg_url):
    Store(tmp_path / "pb.sqlite")
    Store(pg_url)
    tables, views, indexes = _sqlite_schema(tmp_path / "pb.sqlite")
    with _pg(pg_url) as connection:
        pg_tables: dict[str, list] = {}
        for table, column in connection.execute(
                "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name IN (SELECT table_name FROM information_schema.tables WHERE table_schema = "
                "current_schema() AND table_type = 'BASE TABLE') ORDER BY table_name, ordinal_position"):
            if column != "rowid":
                pg_tables.setdefault(table, []).append(column)
        pg_views = {r[0] for r in connection.execute(
            "SELECT table_name FROM information_schema.views WHERE table_schema = current_schema()")}
        pg_indexes = {r[0] for r in connection.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
            "AND indexname NOT IN (SELECT conname FROM pg_constraint)")}  # not those of PRIMARY KEY / UNIQUE
    assert pg_tables == tables
    assert pg_views == views and pg_indexes == indexes


def test_a_new_database_records_every_version_once(pg_url):
    store = Store(pg_url)
    migrations = store.migrations()
    assert migrations["version"].tolist() == list(range(1, SCHEMA_VERSION + 1))
    assert migrations["name"].tolist() == [name for _, name, _ in LEGACY + schema.UPGRADES + schema.MIGRATIONS]
    store.close()
    again = Store(pg_url)  # another process opening it: nothing to do
    pd.testing.assert_frame_equal(again.migrations(), migrations)
    assert again.schema_version() == SCHEMA_VERSION and again.integrity_problems() == []


def test_a_newer_postgresql_schema_is_refused(pg_url):
    Store(pg_url).connect().execute("INSERT INTO schema_migrations VALUES (99, 'future', 'now')")
    with pytest.raises(StoreError, match="schema version 99, newer than this peercore"):
        Store(pg_url)


def test_a_failed_migration_leaves_a_postgresql_database_as_it_was(pg_url, monkeypatch):
    Store(pg_url).close()
    monkeypatch.setattr(schema, "MIGRATIONS", [(SCHEMA_VERSION + 1, "broken", "CREATE TABLE x (a INTEGER);\n"
                                                                            "SELECT no_such_function();")])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(StoreError, match="no_such_function"):
        Store(pg_url)
    with _pg(pg_url) as connection:
        assert connection.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == SCHEMA_VERSION
        assert connection.execute("SELECT to_regclass('x')").fetchone()[0] is None


def test_an_unreachable_server_is_a_store_error_without_the_password():
    with pytest.raises(StoreError, match=r"postgresql://me:\*\*\*@127\.0\.0\.1:1/pb") as caught:
        Store("postgresql://me:s3cret@127.0.0.1:1/pb")
    assert "s3cret" not in str(caught.value)


def test_secrets_never_reach_postgresql(pg_url):
    store = Store(pg_url)
    store.studies.create("s", source={"token": "tk-9"})
    store.judges.add("s", [{"name": "openai:gpt-4o", "kind": "llm", "settings": {"api_key": "sk-123", "model": "m"}}])
    store.runs.create("s", "review", {"api_key": "sk-456", "max_tokens": 5}, items=["a"])
    store.runs.store_call("k", backend="openai", model="m", request={"api_key": "sk-789", "messages": []}, response={})
    with _pg(pg_url) as connection:
        tables = [r[0] for r in connection.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
            "AND table_type = 'BASE TABLE'")]
        text = "\n".join(str(r[0]) for t in tables for r in connection.execute(f"SELECT row_to_json(x)::text FROM {t} x"))
    assert '"model\\": \\"m\\"' in text or '"model": "m"' in text
    assert not any(secret in text for secret in ("sk-123", "sk-456", "sk-789", "tk-9"))


# ------------------------------------------------------------------- both backends


def test_human_and_judge_scores(db):
    store = Store(db)
    store.studies.create("s")
    human = pd.DataFrame({"question_id": ["c1", "c1", "c2"], "model": ["m", "n", "m"], "attribute": "coherence",
                          "value": [2.5, 1.0, 3.0]})
    assert store.scores.add_human_scores("s", human).added == 3 and store.scores.add_human_scores("s", human).skipped == 3
    pd.testing.assert_frame_equal(store.scores.human_scores("s"), human.astype({"attribute": "str", "question_id": "str",
                                                                                "model": "str"}))
    with pytest.raises(ScoreConflict, match="already stored"):
        store.scores.add_human_scores("s", human.assign(value=[2.0, 1.0, 3.0]))
    scores = pd.DataFrame({"question_id": ["c1", "c2", "c3"], "model": "m", "judge": "j", "score": [4.0, None, 2.0],
                           "expected": [3.9, None, None], "distribution": [{"4": 0.9, "3": 0.1}, None, None],
                           "valid": [1, 0, 1], "raw": [None, "no idea", None]})
    assert store.scores.add_judge_scores("s", scores, run_id="r1").added == 3
    out = store.scores.judge_scores("s")
    assert out["value"].tolist() == [3.9, 2.0] and out["distribution"].iloc[0] == {"3": 0.1, "4": 0.9}
    assert len(store.scores.judge_scores("s", include_invalid=True)) == 3
    assert store.scores.score_judges("s").to_dict("records") == [{"judge": "j", "attribute": "", "n_scores": 2,
                                                                  "n_invalid": 1}]
    assert store.runs.accounting("r1")["scores"] == 3 and Study(store, "s").counts()["judge_scores"] == 2


def test_a_large_write_goes_through_copy_and_reads_back_in_order(db):
    """20,000 verdicts with every optional column (COPY on PostgreSQL), a repeat (all skipped), an overlapping
    write (only the new rows added, in order), another verdict on a stored comparison (a repeated vote)."""
    from peercore.judgments import judgments_from_frame

    n, more = 20_000, 4_000
    k = range(n + more)
    everything = judgments_from_frame(pd.DataFrame({
        "question_id": [f"q{i}" for i in k], "model_a": [f"m{i % 7}" for i in k],
        "model_b": [f"m{(i % 7) + 1}" for i in k], "judge": [f"j{i % 3}" for i in k],
        "winner": [("model_a", "model_b", "tie")[i % 3] for i in k],
        "p_a": [None if i % 5 == 0 else (i % 11) / 10 for i in k],
        "criterion": [None if i % 4 else "help" for i in k], "turn": [i % 3 or None for i in k],
        "round": [None] * len(k), "rationale": [None if i % 2 else f"because {i} 'quoted' \\ ; %s ?" for i in k]}))
    frame = everything.iloc[:n].reset_index(drop=True)
    store = Store(db)
    store.studies.create("s")
    assert store.verdicts.add("s", frame).added == n
    assert store.verdicts.add("s", frame).skipped == n
    pd.testing.assert_frame_equal(store.verdicts.table("s"), frame)
    assert store.verdicts.add("s", everything.iloc[::-1]) == WriteCounts(more, n)  # new rows last-first
    pd.testing.assert_frame_equal(store.verdicts.table("s"), pd.concat([frame, everything.iloc[n:][::-1]],
                                                                        ignore_index=True))
    again = frame.iloc[[5]].copy()
    again["winner"] = "model_b" if again["winner"].iloc[0] != "model_b" else "model_a"
    assert store.verdicts.add("s", again) == WriteCounts(1, 0, repeated=1)  # another vote on q5 (issue 18)
    assert len(store.verdicts.table("s")) == n + more + 1


def test_concurrent_annotators_never_share_a_debate_at_overlap_one(db):
    """Four threads (one connection each) claim and decide until nothing is left: each debate decided once."""
    store = Store(db)
    store.studies.create("s")
    store.studies.update_settings("s", overlap=1)
    store.debates.add_many("s", [({"debate_key": f"d{k}", "question_id": f"q{k}", "model_a": "a", "model_b": "b",
                                   "status": "unresolved"}, []) for k in range(24)])
    decided: dict[str, list[int]] = {}
    errors: list[BaseException] = []

    def annotate(who: str) -> None:
        mine = decided.setdefault(who, [])
        try:
            while (item := assignment.next_item(store, "s", who, lease=60, now=T0)) is not None:
                store.debates.adjudicate(item.debate_id, who, "tie")
                mine.append(item.debate_id)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=annotate, args=(f"ann{k}",)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    everything = sorted(d for ids in decided.values() for d in ids)
    assert everything == sorted(store.debates.table("s")["id"].tolist())  # every debate once, none twice
    assert len(store.debates.adjudications("s")) == 24 and store.debates.leases("s").empty


def test_the_prd_import_gives_the_same_study_on_both_backends(tmp_path, pg_url, prd_folder):
    from peercore.io.importer import import_path

    stores = [Store(tmp_path / "prd.sqlite"), Store(pg_url)]
    reports = [import_path(prd_folder, store=s, study="prd") for s in stores]
    assert reports[0].counts == reports[1].counts and reports[0].notes == reports[1].notes
    assert reports[0].counts["judgments"].added > 0
    sqlite, postgres = stores
    pd.testing.assert_frame_equal(sqlite.verdicts.table("prd", include_invalid=True, with_vote=True),
                                  postgres.verdicts.table("prd", include_invalid=True, with_vote=True))
    assert Study(sqlite, "prd").counts() == Study(postgres, "prd").counts()
    assert len(sqlite.verdicts.table("prd")) > 0
    for what, read in {"questions": lambda s: s.questions.table, "answers": lambda s: s.questions.answers,
                       "debates": lambda s: s.debates.table, "judges": lambda s: s.judges.table}.items():
        pd.testing.assert_frame_equal(read(sqlite)("prd"), read(postgres)("prd"), check_dtype=False, obj=what)
    ids = sqlite.debates.table("prd")["id"].tolist()
    pd.testing.assert_frame_equal(sqlite.debates.turns(ids), postgres.debates.turns(postgres.debates.table("prd")["id"]),
                                  check_dtype=False)


def test_a_writer_waits_for_another_at_most_its_busy_timeout(db):
    """Two connections: while one holds the write transaction the other gives up after its timeout."""
    import time

    from peercore.judgments import judgments_from_frame

    first, second = Store(db), Store(db)
    first.studies.create("s")
    rows = judgments_from_frame(pd.DataFrame({"question_id": ["q"], "model_a": ["a"], "model_b": ["b"],
                                              "judge": ["j"], "winner": ["tie"]}))
    with first.transaction():
        first.verdicts.add("s", rows)
        started = time.monotonic()
        with second.runs.busy_timeout(200), pytest.raises((sqlite3.OperationalError, psycopg.errors.LockNotAvailable)):
            second.verdicts.add("s", rows)
        assert time.monotonic() - started < 5
    assert second.verdicts.add("s", rows) == WriteCounts(0, 1)  # the first one's write landed; the lock is free
    first.close()
    second.close()


def _every_method(store) -> dict:
    """Call every public Store method once; what each returns (times and ids left out)."""
    out = {}
    store.studies.create("s", description="d", source={"from": "x"})
    store.studies.create("t")
    out["studies"] = store.studies.table().drop(columns=["created_at"])
    store.studies.update_source("s", {"more": 1})
    out["source"] = store.studies.source("s")
    store.questions.add("s", pd.DataFrame({"question_id": ["1", "2"], "text": ["a", "b"]}))
    store.questions.add_answers("s", pd.DataFrame({"question_id": ["1", "2"], "model": ["m", "n"], "answer": ["x", "y"]}))
    out["answers"] = store.questions.answers("s")
    out["qc"] = store.questions.question_conflicts("s", pd.DataFrame({"question_id": ["1"], "text": ["z"]}))
    name = store.judges.resolve("s", "openai:gpt", {"backend": "openai", "model": "gpt", "temperature": 0}, register=True)
    name2 = store.judges.resolve("s", "openai:gpt", {"backend": "openai", "model": "gpt", "temperature": 1}, register=True)
    out["names"] = (name, name2)
    store.judges.set("s", "human:x", kind="human", model_alias="m")
    out["aliases"] = store.judges.aliases("s"); out["registered"] = store.judges.registered("s"); out["runj"] = store.judges.run_judges("s")
    run = store.runs.create("s", "review", {"api_key": "k", "x": 1}, items=["i1", "i2", "i3"], run_id="r1")
    store.runs.set_status(run, "running")
    store.runs.store_call("c1", backend="openai", model="gpt", request={"m": 1}, response={"t": "v"}, prompt_tokens=3, run_id=run, item_key="i1")
    out["dup_call"] = store.runs.store_call("c1", backend="openai", model="gpt", request={"m": 1}, response={"t": "v"})
    out["cached"] = {k: v for k, v in store.runs.cached_call("c1").items() if k != "created_at"}
    store.runs.finish_item(run, "i1", prompt_tokens=3, cost_usd=0.5, write=lambda tx: store.verdicts.add("s", make_judgments([("m", "n", "model_a", name)]), run_id=run))
    out["run"] = {k: v for k, v in store.runs.get(run).items() if k not in ("created_at", "updated_at")}
    out["runs"] = store.runs.table("s").drop(columns=["created_at", "updated_at"])
    out["acct"] = store.runs.accounting(run)
    out["pending"] = store.runs.pending_items(run)
    out["run_judgments"] = store.runs.judgments(run)
    out["judges"] = store.judges.table("s")
    store.debates.add_many("s", [({"debate_key": f"d{k}", "question_id": "1", "model_a": "m", "model_b": "n", "status": "unresolved", "scenario": "sc" if k else ""}, [{"round": 0, "position": 0, "speaker": "x", "verdict": "tie"}]) for k in range(3)])
    ids = store.debates.table("s")["id"].tolist()
    out["claim"] = {k: v for k, v in store.debates.claim("s", "ann", lease_seconds=60, scenario="sc", now=1.8e9).items() if k not in ("expires_at", "debate_id")}
    out["leases"] = store.debates.leases("s", now=1.8e9)[["annotator", "live"]]
    out["release"] = store.debates.release_leases("s", "ann")
    store.debates.adjudicate(ids[0], "ann", "both_bad", token="t1", blind=True)
    out["queue"] = store.debates.queue("s", annotator="ben", overlap=2).drop(columns=["id"])
    out["undo"] = store.debates.undo_adjudication(ids[0], "ann", token="t1")
    store.debates.skip(ids[1], "ann")
    out["skips"] = len(store.debates.skipped("s", "ann")); out["clear"] = store.debates.clear_skips("s", "ann")
    store.studies.update_settings("s", rubric="r", overlap=1)
    out["settings"] = store.studies.settings("s")
    store.scores.add_human_scores("s", pd.DataFrame({"question_id": ["1"], "model": ["m"], "attribute": ["a"], "value": [1.5]}))
    out["hs"] = store.scores.human_scores("s", attribute="a")
    store.scores.add_judge_scores("s", pd.DataFrame({"question_id": ["1"], "model": ["m"], "judge": ["j"], "score": [3.0], "attribute": ["a"]}))
    out["js"] = store.scores.judge_scores("s", judges=["j"], attribute="a")
    iid = store.studies.record_import("s", source="f.csv", format="canonical", counts={"a": 1})
    out["imports"] = store.studies.imports("s").drop(columns=["created_at", "id"])
    out["summary"] = Study(store, "s").counts(); out["rev"] = store.studies.revision("s"); out["labels"] = store.verdicts.labels("s")
    out["turns"] = store.debates.turns([])
    store.studies.delete("t"); out["has_t"] = store.studies.exists("t")
    out["integrity"] = store.integrity_problems()
    return out


def test_every_store_method_returns_the_same_on_both_backends(tmp_path, pg_url):
    sqlite, postgres = _every_method(Store(tmp_path / "pb.sqlite")), _every_method(Store(pg_url))
    assert list(sqlite) == list(postgres)
    for what in sqlite:
        if isinstance(sqlite[what], pd.DataFrame):
            pd.testing.assert_frame_equal(sqlite[what], postgres[what], obj=what)
        else:
            assert sqlite[what] == postgres[what], what


def test_processes_opening_a_new_database_at_once_create_it_once(pg_url):
    opened, errors = [], []

    def open_store() -> None:
        try:
            store = Store(pg_url)
            opened.append(store.schema_version())
            store.close()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and opened == [SCHEMA_VERSION] * 4
    assert Store(pg_url).migrations()["version"].tolist() == list(range(1, SCHEMA_VERSION + 1))


def test_a_reader_does_not_create_a_postgresql_database(pg_url):
    with pytest.raises(StoreError, match=r"no PeerBoard database at postgresql://"):
        Store(pg_url, create=False)
    with _pg(pg_url) as connection:
        assert connection.execute("SELECT to_regclass('schema_migrations')").fetchone()[0] is None
    Store(pg_url)
    assert Store(pg_url, create=False).schema_version() == SCHEMA_VERSION
