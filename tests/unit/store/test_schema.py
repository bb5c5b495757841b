"""One schema for SQLite and PostgreSQL (issue 19, item 2): a new database and an upgraded one are the same.

:mod:`peercore.store.schema` writes the schema once; these tests check that a database
made from its baseline and one upgraded from an older version (a SQLite file of version
1 through the frozen legacy history, a PostgreSQL schema of version 8 as PeerBoard made
it) have the same tables, columns, types, indexes and views, and that an upgrade keeps
every row (runs, paid calls, debates, leases, decisions) as it was.
"""

from __future__ import annotations

import sqlite3

import pytest

from peerboard_testing import make_version_8
from peercore.store import SCHEMA_VERSION, Store
from peercore.store import schema


def _sqlite_shape(path) -> dict:
    connection = sqlite3.connect(path)
    tables = {}
    for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                      "AND name NOT LIKE 'sqlite_%' ORDER BY name"):
        tables[name] = [(r[1], _affinity(r[2]), bool(r[3]), r[4], r[5])
                        for r in connection.execute(f"PRAGMA table_info({name})")]
    indexes = {r[0]: r[1] for r in connection.execute(
        "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}
    index_columns = {name: [r[2] for r in connection.execute(f"PRAGMA index_info({name})")] for name in indexes}
    views = {r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'view'")}
    triggers = {r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    checks = {name: sorted(_checks(sql)) for name, sql in connection.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table'")}
    connection.close()
    return {"tables": tables, "indexes": indexes, "index_columns": index_columns, "views": views,
            "triggers": triggers, "checks": checks}


def _affinity(declared: str) -> str:
    """SQLite's type affinity of a declared type (section 3.1 of its datatype page)."""
    text = declared.upper()
    if "INT" in text:
        return "INTEGER"
    if any(word in text for word in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if any(word in text for word in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def _checks(sql: str) -> list[str]:
    """The CHECK constraints of a CREATE TABLE, whitespace-normalised (wherever ALTER TABLE put them)."""
    out, rest = [], sql
    while "CHECK" in rest:
        rest = rest[rest.index("CHECK") + 5:]
        depth, start = 0, rest.index("(")
        for k in range(start, len(rest)):
            depth += {"(": 1, ")": -1}.get(rest[k], 0)
            if depth == 0:
                out.append(" ".join(rest[start:k + 1].split()))
                break
    return out


def test_a_new_sqlite_file_and_one_upgraded_from_version_1_have_one_schema(tmp_path):
    """The baseline and the frozen history (versions 1-8, then the upgrades) end in the same tables."""
    from peercore.store.legacy import LEGACY
    from peercore.store.schema import statements

    old = tmp_path / "v1.sqlite"
    connection = sqlite3.connect(old, isolation_level=None)
    connection.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                       "applied_at TEXT NOT NULL)")
    for statement in statements(LEGACY[0][2]):
        connection.execute(statement)
    connection.execute("INSERT INTO schema_migrations VALUES (1, 'initial schema', '2024-01-01')")
    connection.close()
    Store(old).close()
    new = tmp_path / "new.sqlite"
    Store(new).close()
    upgraded, fresh = _sqlite_shape(old), _sqlite_shape(new)
    assert upgraded["tables"] == fresh["tables"]
    assert upgraded["index_columns"] == fresh["index_columns"]
    assert upgraded["views"] == fresh["views"] == {"judgments"}
    assert upgraded["triggers"] == fresh["triggers"] == set()
    assert upgraded["checks"] == fresh["checks"]


def _pg_shape(url: str) -> dict:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        columns = {}
        for table, column, kind, nullable, default in connection.execute(
                "SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns "
                "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"):
            columns.setdefault(table, []).append((column, kind, nullable, default))
        indexes = {r[0]: r[1].replace(f" ON {r[2]}.", " ON ") for r in connection.execute(
            "SELECT indexname, indexdef, schemaname FROM pg_indexes WHERE schemaname = current_schema()")}
        checks = sorted(r[0] for r in connection.execute(
            "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace "
            "WHERE n.nspname = current_schema()"))
        triggers = {r[0] for r in connection.execute(
            "SELECT trigger_name FROM information_schema.triggers WHERE trigger_schema = current_schema()")}
        views = {r[0] for r in connection.execute(
            "SELECT table_name FROM information_schema.views WHERE table_schema = current_schema()")}
    return {"columns": columns, "indexes": indexes, "checks": checks, "triggers": triggers, "views": views}


def test_a_new_postgresql_schema_and_one_upgraded_from_version_8_have_one_schema(new_pg_url):
    old, new = new_pg_url(), new_pg_url()
    make_version_8(old)
    Store(old).close()
    Store(new).close()
    upgraded, fresh = _pg_shape(old), _pg_shape(new)
    rowless = lambda shape: {t: [c for c in cols if c[0] != "rowid"] for t, cols in shape["columns"].items()}  # noqa: E731
    assert rowless(upgraded) == rowless(fresh)
    assert upgraded["indexes"] == fresh["indexes"]
    assert upgraded["checks"] == fresh["checks"]
    assert upgraded["triggers"] == fresh["triggers"] == set()
    assert upgraded["views"] == fresh["views"] == {"judgments"}


def test_both_engines_have_the_same_columns_in_the_same_order(tmp_path, pg_url):
    Store(tmp_path / "pb.sqlite").close()
    Store(pg_url).close()
    sqlite_tables = {t: [c[0] for c in cols] for t, cols in _sqlite_shape(tmp_path / "pb.sqlite")["tables"].items()}
    pg_tables = {t: [c[0] for c in cols if c[0] != "rowid"] for t, cols in _pg_shape(pg_url)["columns"].items()
                 if t != "judgments"}
    assert pg_tables == sqlite_tables


# A version-8 database with a row in every table the upgrade must keep.
_V8_ROWS = [
    "INSERT INTO studies (id, name, created_at, rubric, overlap) VALUES (1, 's', '2026-11-01', 'guide', 2)",
    "INSERT INTO questions (study_id, question_id, text, category) VALUES (1, 'q1', 'Why?', 'writing')",
    "INSERT INTO answers (study_id, question_id, model, text) VALUES (1, 'q1', 'a', 'Because.')",
    "INSERT INTO answers (study_id, question_id, model, text) VALUES (1, 'q1', 'b', 'Who knows.')",
    "INSERT INTO judges (study_id, name, kind, settings, origin, fingerprint, base) VALUES "
    "(1, 'openai:gpt-4o', 'llm', '{\"model\": \"gpt-4o\"}', 'run', 'abc', 'openai:gpt-4o')",
    "INSERT INTO labels (study_id, id, text) VALUES (1, 1, 'a')",
    "INSERT INTO labels (study_id, id, text) VALUES (1, 2, 'b')",
    "INSERT INTO labels (study_id, id, text) VALUES (1, 3, 'openai:gpt-4o')",
    "INSERT INTO runs (id, study_id, kind, config, status, n_items, n_done, prompt_tokens, completion_tokens, cost_usd, "
    "created_at, updated_at) VALUES ('run-1', 1, 'review', '{}', 'finished', 2, 2, 120, 8, 0.0123, '2026-11-01', "
    "'2026-11-01')",
    "INSERT INTO run_items (run_id, item_key, status, updated_at) VALUES ('run-1', 'q1|a|b', 'done', '2026-11-01')",
    "INSERT INTO llm_calls (cache_key, backend, model, request, response, prompt_tokens, completion_tokens, latency_s, "
    "run_id, created_at, item_key) VALUES ('k1', 'openai', 'gpt-4o', '{}', '{\"text\": \"A\"}', 60, 4, 0.5, 'run-1', "
    "'2026-11-01', 'q1|a|b')",
    "INSERT INTO verdicts (id, study_id, question_id, model_a, model_b, judge, winner, p_a, rationale, valid, run_id, "
    "created_at) VALUES (1, 1, 'q1', 1, 2, 3, 0, 0.75, 'A is clearer', 1, 'run-1', '2026-11-01')",
    "INSERT INTO verdict_columns (study_id, name) VALUES (1, 'p_a')",
    "INSERT INTO debates (id, study_id, debate_key, question_id, model_a, model_b, status, created_at, panel) VALUES "
    "(1, 1, 'd1', 'q1', 'a', 'b', 'unresolved', '2026-11-01', 'debate:panel')",
    "INSERT INTO debate_turns (debate_id, round, position, speaker, verdict, rationale) VALUES "
    "(1, 0, 0, 'agent-1', 'model_a', 'clearer')",
    "INSERT INTO adjudications (id, debate_id, annotator, verdict, note, created_at, token, both_bad, blind) VALUES "
    "(1, 1, 'ann', 'tie', 'both wrong', '2026-11-01', 't1', 1, 1)",
    "INSERT INTO adjudication_leases (debate_id, annotator, expires_at, created_at) VALUES "
    "(1, 'ben', '2026-11-01T01:00:00', '2026-11-01')",
    "INSERT INTO adjudication_skips (debate_id, annotator, created_at) VALUES (1, 'cat', '2026-11-01')",
    "INSERT INTO batches (token, run_id, provider, judge, status, n_requests, created_at, updated_at) VALUES "
    "('tok', 'run-1', 'openai', 'openai:gpt-4o', 'fetched', 1, '2026-11-01', '2026-11-01')",
    "INSERT INTO batch_requests (token, custom_id, cache_key, item_key, request, status) VALUES "
    "('tok', 'c1', 'k1', 'q1|a|b', '{}', 'succeeded')",
]


def _rows(db) -> dict:
    """Every row of every table (ordered by all its columns), the new columns (order_known, reviewers) left out."""
    tables = ["studies", "questions", "answers", "judges", "labels", "runs", "run_items", "llm_calls", "verdicts",
              "verdict_columns", "debates", "debate_turns", "adjudications", "adjudication_leases",
              "adjudication_skips", "batches", "batch_requests"]
    out = {}
    if str(db).startswith("postgresql://"):
        import psycopg

        with psycopg.connect(str(db), autocommit=True) as connection:
            for table in tables:
                cursor = connection.execute(f"SELECT * FROM {table}")
                names = [d.name for d in cursor.description]
                out[table] = sorted(tuple(str(v) for n, v in zip(names, row) if n not in ("rowid", "order_known", "reviewers"))
                                    for row in cursor.fetchall())
        return out
    connection = sqlite3.connect(db)
    for table in tables:
        cursor = connection.execute(f"SELECT * FROM {table}")
        names = [d[0] for d in cursor.description]
        out[table] = sorted(tuple(str(v) for n, v in zip(names, row) if n not in ("order_known", "reviewers")) for row in cursor.fetchall())
    connection.close()
    return out


def test_a_version_8_database_upgrades_with_every_row_as_it_was(db):
    """SQLite and PostgreSQL: runs, paid calls, debates, leases and decisions survive the upgrade unchanged."""
    make_version_8(db)
    if str(db).startswith("postgresql://"):
        import psycopg

        with psycopg.connect(str(db), autocommit=True) as connection:
            for statement in _V8_ROWS:
                connection.execute(statement)
    else:
        connection = sqlite3.connect(db, isolation_level=None)
        for statement in _V8_ROWS:
            connection.execute(statement)
        connection.close()
    before = _rows(db)
    assert all(before[table] for table in before)  # every table holds a row
    store = Store(db)
    assert store.schema_version() == SCHEMA_VERSION
    assert store.migrations()["version"].tolist() == list(range(1, SCHEMA_VERSION + 1))
    assert store.integrity_problems() == []
    assert store.verdicts.table("s")["winner"].tolist() == ["model_a"]
    store.close()
    assert _rows(db) == before
    # Version 13 rebuilt SQLite's debates table (a CHECK changed) with foreign keys off: the
    # turns, decisions, leases and skips that refer to debate 1 are all still there (above),
    # and the queue's new kind is accepted.
    if str(db).startswith("postgresql://"):  # the rows above were inserted with their ids: move the identity on
        import psycopg

        with psycopg.connect(str(db), autocommit=True) as connection:
            connection.execute("SELECT setval(pg_get_serial_sequence('debates', 'id'), 1)")
    with Store(db) as store:
        added = store.debates.add_label_requests("s", [{"question_id": "q1", "model_a": "a", "model_b": "b"}],
                                                 requested_by="test", reason="check")
        assert added.added == 1
        assert store.debates.table("s", kind="label_request")["debate_key"].tolist() == ["label:q1|1||a|b"]


def test_render_fills_the_dialects_and_refuses_another():
    sqlite, postgres = schema.render(schema.BASELINE, "sqlite"), schema.render(schema.BASELINE, "postgresql")
    assert "{id}" not in sqlite + postgres and "{rowid}" not in sqlite + postgres
    assert "GENERATED BY DEFAULT AS IDENTITY" in postgres and "INTEGER PRIMARY KEY" in sqlite
    with pytest.raises(ValueError, match="dialect must be one of"):
        schema.render("SELECT 1", "mysql")
