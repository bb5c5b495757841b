"""The dashboard on PostgreSQL in a real browser (issue 13), started as a user starts it.

``python -m peercore app --db postgresql://user:PASSWORD@host/db --headless --port N`` on a
fresh schema of the session's throwaway cluster (tests/conftest.py ``pg_cluster``; it trusts
127.0.0.1, so the password is accepted and ignored): the first visit seeds the bundled
studies, the Leaderboard shows the sample's three models, the sidebar names the database
as ``peerboard on 127.0.0.1``, and the password is nowhere in the page (its HTML, its text,
the tooltip with the full URL) nor in the server's log.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from e2e_support import ERRORS, REPO, Server, _free_port, grid_rows, open_page, require_chromium, settle

PASSWORD = "s3cret-pw"
SAMPLE_MODELS = ["local:qwen2.5-coder-1.5b", "local:smollm2-135m", "local:smollm2-135m@t1.0"]


class PeercoreApp(Server):
    """``python -m peercore app --db URL --headless`` (which runs ``streamlit run app.py``) in its own process group."""

    def __init__(self, db: str, log) -> None:
        self.db = db
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
        for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PEERBOARD_DB", "PEERBOARD_SAMPLE_DATA"):
            env.pop(variable, None)  # --db alone names the database; the bundled studies are seeded
        self._log = open(log, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "peercore", "app", "--db", db, "--headless", "--port", str(self.port)],
            cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self._wait()


@pytest.fixture(scope="module")
def pg_server(tmp_path_factory, new_pg_url):
    require_chromium()
    scheme, rest = new_pg_url().split("://", 1)
    user, host = rest.split("@", 1)
    log = tmp_path_factory.mktemp("e2e-pg") / "streamlit.log"
    running = PeercoreApp(f"{scheme}://{user}:{PASSWORD}@{host}", log)
    yield running
    running.stop()


def test_leaderboard_on_postgres_shows_the_sample_and_no_password(chromium, pg_server, screenshots):
    context = chromium.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    try:
        open_page(page, pg_server, "leaderboard", "Leaderboard")  # the first visit seeds the bundled studies
        settle(page)
        assert page.locator(ERRORS).count() == 0
        rows = grid_rows(page)
        shown = sorted(cell for row in rows for cell in row if cell in SAMPLE_MODELS)
        assert shown == SAMPLE_MODELS and len(rows) == 3, rows  # the sample's three models, one row each
        assert all(float(row[2]) > 0 for row in rows), rows  # their Bradley-Terry ratings (the default method)
        sidebar = page.locator("[data-testid='stSidebar']")
        sidebar.get_by_text("Database:").first.wait_for(timeout=30_000)
        assert "Database: peerboard on 127.0.0.1" in " ".join(sidebar.inner_text().split())
        page.screenshot(path=str(screenshots / "leaderboard-postgres.png"))
        assert PASSWORD not in page.content()
        assert PASSWORD not in page.inner_text("body")

        # The caption's tooltip holds the whole URL: with its password masked.
        sidebar.locator("[data-testid='stTooltipHoverTarget']").last.hover()
        tooltip = page.locator("[data-testid='stTooltipContent']").first
        tooltip.wait_for(timeout=10_000)
        text = tooltip.inner_text().replace("\u2060", "")
        assert "peerboard:***@127.0.0.1" in text, text
        assert PASSWORD not in page.content()
    finally:
        context.close()
    with open(pg_server._log.name, encoding="utf-8") as log:
        assert PASSWORD not in log.read()
