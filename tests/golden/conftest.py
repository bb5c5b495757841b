"""Fixtures of the golden tests: the published numbers are checked on both backends (issue 13).

``golden_db`` is a new database for a test module, once as a SQLite file and once as a
schema of the suite's throwaway PostgreSQL cluster (``tests/conftest.py``): every test of a
module using it runs on both, so each paper's numbers are shown to come out of PostgreSQL
as they come out of SQLite.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def golden_db(request, tmp_path_factory) -> str:
    """A location for :class:`peercore.store.Store` and ``--db``: a SQLite file path or a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path_factory.mktemp("golden") / "pb.sqlite")
    return request.getfixturevalue("new_pg_url")()
