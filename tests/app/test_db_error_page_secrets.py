"""The dashboard's error page shows no part of a PostgreSQL password (issue 17, item 3).

With the server not there, app.py says "The database could not be opened: ..." to every
visitor. The passwords (with ``#``, ``?``, ``/``, ``@``, ``%``, in the user info or in
``?password=``) and their markers are those of tests/integration/test_pg_url_secrets.py.
"""

from __future__ import annotations

import pytest

from app_studies import app_test
from integration.test_pg_url_secrets import UNREACHABLE, assert_no_marker, url_with
from test_pages_on_postgres import rendered


@pytest.mark.parametrize("name", ["hash", "question", "all five encoded", "slash as written", "query parameter"])
def test_the_dashboard_error_page_shows_no_password(name, monkeypatch):
    monkeypatch.setenv("PEERBOARD_DB", url_with(name, host=UNREACHABLE, rest="peerboard"))
    at = app_test(page=None)
    assert [e.value for e in at.exception] == []
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("The database could not be opened: "), errors
    assert_no_marker(rendered(at), name)
