"""Fixtures of the browser tests (helpers in e2e_support.py).

Chromium comes from Debian (``apt-get install -y chromium``), never from
``playwright install``. Without it the tests skip with that reason, unless
PEERBOARD_REQUIRE_E2E is set (CI), where they fail instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e_support import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS, Server, require_chromium


@pytest.fixture(scope="module")
def chromium():
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app on the synthetic study (4 unresolved debates)."""
    require_chromium()
    from app_studies import build_synthetic_study
    from peercore.store import Store

    folder = tmp_path_factory.mktemp("e2e")
    store = Store(folder / "e2e.sqlite")
    build_synthetic_study(store)
    store.close()
    running = Server(folder / "e2e.sqlite", folder / "streamlit.log")
    yield running
    running.stop()


@pytest.fixture
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


def _seeding_server(tmp_path_factory, name: str):
    """The app on an empty database, which it seeds with sample_data/ on its first run (stopped when done)."""
    require_chromium()
    from e2e_support import REPO

    if not any(p.suffix in (".csv", ".jsonl") for p in (REPO / "sample_data").glob("*")):
        pytest.skip("sample_data/ is not in the repository yet")
    folder = tmp_path_factory.mktemp(name)
    running = Server(folder / "empty.sqlite", folder / "streamlit.log")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def sample_server(tmp_path_factory):
    """The app on an empty database: it must import sample_data/ by itself on first run."""
    yield from _seeding_server(tmp_path_factory, "e2e-sample")


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory):
    """The app on the hostile study: Markdown and HTML in every text field (app_studies.build_hostile_study)."""
    require_chromium()
    from app_studies import build_hostile_study
    from peercore.store import Store

    folder = tmp_path_factory.mktemp("e2e-hostile")
    store = Store(folder / "hostile.sqlite")
    build_hostile_study(store)
    store.close()
    running = Server(folder / "hostile.sqlite", folder / "streamlit.log")
    yield running
    running.stop()


@pytest.fixture(scope="session")
def shared_sample_server(tmp_path_factory):
    """Like ``sample_server`` (an empty database the app seeds with sample_data/ on its first run), but one for
    the whole session: only for tests that change nothing stored (they open pages, click tabs, sign in, switch
    study), so that the order they run in never matters. Whichever runs first waits for the seeding."""
    yield from _seeding_server(tmp_path_factory, "e2e-shared-sample")
