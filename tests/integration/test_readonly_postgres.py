"""A read-only PostgreSQL role runs the analyst's commands and is refused the writers' (issue 20, item 5).

The CLI runs with the database's own credentials. An analyst's role holds only ``USAGE`` on
the schema and ``SELECT`` on its tables (docs/TEAM.md, "PostgreSQL privileges"). With it,
``peercore rank``, ``agree``, ``bias`` and ``export`` work: opening a store that is already at
the current schema version only reads. ``peercore import`` and ``peercore review`` are refused
by the server at their first write; the transaction rolls back, nothing is written and no
LLM call is paid for. Each command runs in-process through :func:`peercore.cli.main`.
"""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from fakes.llm_server import FakeLLMServer
from peercore.cli import main
from peercore.errors import read_only_refusal
from peercore.store import SCHEMA_VERSION, Store

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_data"
LLM_JUDGE = "local:qwen2.5-coder-1.5b"
_roles = itertools.count(1)


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """``peercore ARGS`` in-process: exit status, stdout, stderr."""
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def as_user(url: str, user: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{user}@{parts.hostname}:{parts.port}"))


def schema_of(url: str) -> str:
    return urlsplit(url).query.split("%3D", 1)[1]


def everything(admin_url: str, schema: str) -> dict:
    """Every row of every table of ``schema`` (sorted, as text), and its tables: what "nothing written" compares."""
    import psycopg

    out = {}
    with psycopg.connect(admin_url, autocommit=True) as connection:
        tables = [r[0] for r in connection.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY table_name", [schema])]
        for table in tables:
            rows = connection.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall()
            out[table] = sorted(tuple(map(str, row)) for row in rows)
    return out


@pytest.fixture
def analyst(pg_cluster, new_pg_url, capsys):
    """(read-only URL, the owner's URL, schema): a study imported by the owner, and a role that may only read it."""
    import psycopg

    owner_url = new_pg_url()
    schema = schema_of(owner_url)
    for name in ("questions.jsonl", "answers.jsonl", "judgments.csv", "human_annotations.csv"):
        code, out, err = cli(capsys, "import", str(SAMPLE / name), "--study", "s", "--db", owner_url)
        assert code == 0, err
    role = f"analyst_{next(_roles)}_{schema}"
    with psycopg.connect(pg_cluster.url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}")
    from pg_cluster import closing_pg_connections

    with closing_pg_connections():
        yield as_user(owner_url, role), owner_url, schema


@pytest.mark.parametrize("snapshots", [False, True], ids=["small-study", "snapshot-due"])
def test_a_read_only_role_ranks_agrees_reports_bias_and_exports(analyst, pg_cluster, capsys, tmp_path, monkeypatch,
                                                                snapshots, caplog):
    """With ``snapshot-due`` the study is as large as one whose read model is kept per revision (schema 14):
    the role may not keep it, so every command reads by scanning, says nothing of it and writes nothing."""
    if snapshots:
        from peercore.store import verdict_reader

        monkeypatch.setattr(verdict_reader, "SNAPSHOT_FROM", 1)
        caplog.set_level("INFO", logger="peercore.store.verdict_reader")
    readonly, _, schema = analyst
    before = everything(pg_cluster.url, schema)
    with contextlib.closing(Store(readonly, create=False)) as store:  # opening at the current version only reads
        assert store.schema_version() == SCHEMA_VERSION
    code, out, err = cli(capsys, "rank", "--study", "s", "--db", readonly)
    assert code == 0, err
    assert LLM_JUDGE.split(":")[1] in out
    code, out, err = cli(capsys, "agree", "--study", "s", "--db", readonly, "--judge", LLM_JUDGE,
                         "--reference", "human:peerboard-lead")
    assert code == 0, err
    code, out, err = cli(capsys, "bias", "--study", "s", "--db", readonly)
    assert code == 0, err
    exported = tmp_path / "judgments.csv"
    code, out, err = cli(capsys, "export", "--study", "s", "--what", "judgments", "--format", "csv", "--output",
                         str(exported), "--db", readonly)
    assert code == 0, err
    assert len(exported.read_text(encoding="utf-8").splitlines()) > 100
    assert everything(pg_cluster.url, schema) == before
    if snapshots:  # the snapshot was due, refused by the server (permission denied), and the reads went on
        assert any("not kept" in r.getMessage() and "permission denied" in r.getMessage() for r in caplog.records)


def test_import_and_review_are_refused_in_one_line_and_write_nothing(analyst, pg_cluster, capsys, monkeypatch):
    """Issue 20 item 5: a read-only database role is refused by ``peercore import`` and ``peercore review``
    with one line naming why (exit 2), nothing written and nothing paid."""
    readonly, _, schema = analyst
    before = everything(pg_cluster.url, schema)
    code, out, err = cli(capsys, "import", str(SAMPLE / "judgments.csv"), "--study", "other", "--db", readonly)
    assert code == 2
    assert err.count("\n") == 1 and "may only read" in err and "nothing was written" in err
    with FakeLLMServer(seed=1) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-readonly-not-a-secret")
        code, out, err = cli(capsys, "review", "--study", "s", "--reviewer", "openai:gpt-4o", "--method", "verdict",
                             "--db", readonly, "--no-progress")
        assert code == 2, err
        assert err.strip().splitlines()[-1].startswith("peercore: error:") and "may only read" in err
        assert "Traceback" not in err
        assert server.requests_total == 0  # refused before any call was paid for
    assert everything(pg_cluster.url, schema) == before
    assert read_only_refusal(ValueError("permission denied"), "x") is None  # only the server's refusal says so


def test_a_read_only_role_cannot_upgrade_an_older_database_and_changes_nothing(analyst, pg_cluster, capsys):
    """Migrations are the owner's (docs/TEAM.md): an analyst opening a version-10 database is refused in one line."""
    import psycopg

    readonly, _, schema = analyst
    with psycopg.connect(pg_cluster.url, autocommit=True) as admin:  # the database as PeerBoard 10 left it
        admin.execute(f"DROP TABLE {schema}.roles, {schema}.audit_log, {schema}.adjudication_history")
        admin.execute(f"DELETE FROM {schema}.schema_migrations WHERE version >= 11")
    before = everything(pg_cluster.url, schema)
    code, out, err = cli(capsys, "rank", "--study", "s", "--db", readonly)
    assert code == 2 and err.count("\n") == 1, err
    assert "permission denied" in err
    assert everything(pg_cluster.url, schema) == before
