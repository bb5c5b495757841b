"""Shared fixtures: the real datasets beside the project, and small judgment tables."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peerboard_testing import make_judgments, require_dataset, shared_data_dir  # noqa: E402,F401


@pytest.fixture(scope="session")
def prd_folder() -> Path:
    return require_dataset("prd_vicuna80")


@pytest.fixture
def small_judgments() -> pd.DataFrame:
    """Three models, two judges, a tie, both presentation orders."""
    return make_judgments([
        ("a", "b", "model_a", "j1"),
        ("b", "a", "model_b", "j1"),
        ("a", "c", "tie", "j1"),
        ("c", "b", "model_a", "j2"),
        ("b", "c", "model_a", "j2"),
        ("a", "c", "model_a", "j2"),
    ])


# ------------------------------------------------------------- PostgreSQL (issue 13)
# One throwaway cluster per test session (tests/pg_cluster.py), started the first time a
# test asks for the "postgresql" backend; each such test gets a fresh schema of its own.
# Without PostgreSQL's server programs those tests are skipped, unless PEERBOARD_REQUIRE_PG=1
# (make test, CI), which makes them fail instead.

ENV_REQUIRE_PG = "PEERBOARD_REQUIRE_PG"


@pytest.fixture(scope="session")
def pg_cluster():
    """The session's PostgreSQL cluster (``.url``), or a skip with the reason."""
    import os

    from pg_cluster import ClusterUnavailable, PostgresCluster

    required = os.environ.get(ENV_REQUIRE_PG) == "1"
    try:
        import psycopg  # noqa: F401

        cluster = PostgresCluster().start()
    except (ClusterUnavailable, ImportError) as exc:
        if required:
            pytest.fail(f"{ENV_REQUIRE_PG}=1 but PostgreSQL is not available: {exc}")
        pytest.skip(f"PostgreSQL is not available ({exc}); `make test` installs it (scripts/system-deps.sh postgres)")
    try:
        yield cluster
    finally:
        cluster.stop()


_schemas = iter(range(1, 1_000_000))


@pytest.fixture
def pg_url(pg_cluster):
    """A URL of a fresh, empty schema in the session's cluster; its connections are closed afterwards."""
    import psycopg

    from pg_cluster import closing_pg_connections

    schema = f"t{next(_schemas)}"
    with psycopg.connect(pg_cluster.url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    with closing_pg_connections():
        yield f"{pg_cluster.url}?options=-csearch_path%3D{schema}"


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    """A new database on each backend: a SQLite file path, or a PostgreSQL URL (:func:`pg_url`)."""
    if request.param == "sqlite":
        return tmp_path / "pb.sqlite"
    return request.getfixturevalue("pg_url")


@pytest.fixture(scope="session")
def new_pg_url(pg_cluster):
    """A function giving the URL of a new, empty schema in the session's cluster, for fixtures wider than one test.

    Unlike :func:`pg_url` its connections are not tracked: close the stores opened on it.
    """
    import psycopg

    def make() -> str:
        schema = f"t{next(_schemas)}"
        with psycopg.connect(pg_cluster.url, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {schema}")
        return f"{pg_cluster.url}?options=-csearch_path%3D{schema}"

    return make
