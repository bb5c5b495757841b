"""Fixtures of the dashboard tests (the studies themselves are built in app_studies.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app_studies import build_prd_study, build_synthetic_study
from peercore.store import Store


@pytest.fixture
def db_file(tmp_path, monkeypatch) -> Path:
    """A fresh database file, exported as $PEERBOARD_DB for the app under test."""
    path = tmp_path / "peerboard.sqlite"
    monkeypatch.setenv("PEERBOARD_DB", str(path))
    return path


def _synthetic_at(location) -> dict:
    """The synthetic study built in the database at ``location``, with ``info["db"]`` naming it."""
    return {**build_synthetic_study(Store(location)), "db": location}


@pytest.fixture
def synthetic(db_file) -> dict:
    return _synthetic_at(db_file)


@pytest.fixture(params=["sqlite", "postgresql"])
def synthetic_on_both(request, monkeypatch) -> dict:
    """:func:`synthetic` on a SQLite file, then on a PostgreSQL schema (issue 13: runs from the dashboard)."""
    if request.param == "sqlite":
        return request.getfixturevalue("synthetic")
    location = request.getfixturevalue("pg_url")
    monkeypatch.setenv("PEERBOARD_DB", location)
    return _synthetic_at(location)


@pytest.fixture(scope="session")
def prd_db(tmp_path_factory) -> Path:
    """A database holding the PRD study, built once per session (copied per test)."""
    path = tmp_path_factory.mktemp("prd") / "prd.sqlite"
    store = Store(path)
    info = build_prd_study(store)
    store.close()
    return path, info


@pytest.fixture
def prd(prd_db, tmp_path, monkeypatch) -> dict:
    import shutil

    source, info = prd_db
    path = tmp_path / "prd.sqlite"
    shutil.copy(source, path)
    monkeypatch.setenv("PEERBOARD_DB", str(path))
    return {**info, "db": path}


@pytest.fixture(autouse=True)
def _navigation_not_pages_folder(monkeypatch):
    """Run every AppTest as ``streamlit run`` does once ``st.navigation`` has been called.

    Streamlit remembers in ``PagesManager.uses_pages_directory`` whether to treat a
    ``pages/`` folder beside the entry script as v1 multipage pages; a real server sets
    it to False for good the first time ``app.py`` calls ``st.navigation``. AppTest
    resets it before every run, so without this it would run ``pages/<page>.py`` on its
    own (skipping ``app.py``) from the second run on.
    """
    from streamlit.runtime.pages_manager import PagesManager

    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)


@pytest.fixture
def hostile(db_file) -> dict:
    """The hostile study (Markdown and HTML in every text field), alone in a fresh database."""
    from app_studies import build_hostile_study

    store = Store(db_file)
    info = build_hostile_study(store)
    info["db"] = db_file
    return info
