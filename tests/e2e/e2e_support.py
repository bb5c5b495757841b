"""Helpers of the browser tests: the Streamlit server, Chromium's path and flags, screenshots.

Chromium comes from Debian (``apt-get install -y chromium``), never from
``playwright install``. Without /usr/bin/chromium the tests skip with that reason,
unless PEERBOARD_REQUIRE_E2E is set (CI), where they fail instead.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from urllib.parse import urlsplit
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "app"))  # the fixture studies (app_studies.py)

CHROMIUM = os.environ.get("PEERBOARD_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
SCREENSHOTS = REPO / "test-output" / "screenshots"
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
ERRORS = "[data-testid='stException'], [data-testid='stAlertContentError']"


def require_chromium() -> None:
    if Path(CHROMIUM).is_file():
        return
    message = (f"{CHROMIUM} is missing: install Debian's browser with `apt-get install -y chromium` "
               "(never `playwright install`)")
    if os.environ.get("PEERBOARD_REQUIRE_E2E"):
        pytest.fail(message + " — PEERBOARD_REQUIRE_E2E is set, so the browser tests must run")
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """One ``streamlit run app.py`` process on 127.0.0.1 with its own database."""

    def __init__(self, db: Path, log: Path) -> None:
        self.db = db
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PEERBOARD_DB": str(db), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
        for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # screenshots must never depend on keys
            env.pop(variable, None)
        self._log = open(log, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"), "--server.port", str(self.port),
             "--server.address", "127.0.0.1", "--server.headless", "true"],
            cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self._wait()

    def _wait(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.process.returncode}; see {self._log.name}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"streamlit did not answer on {self.url} within {timeout} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # our own process group only
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self._log.close()


# ------------------------------------------------------------------ driving a page


def settle(page, *, pause_ms: int = 600) -> None:
    """Wait until the script has finished running and the page stopped changing."""
    page.wait_for_selector(IDLE, timeout=60_000)
    page.wait_for_timeout(pause_ms)
    page.wait_for_selector(IDLE, timeout=60_000)


def full_screenshot(page, path) -> None:
    """Grow the window to the page's content (Streamlit scrolls inside its main block), then capture it."""
    height = page.evaluate("() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], "
                           "[data-testid=stMainBlockContainer]')].map(e => e.scrollHeight), 800)")
    page.set_viewport_size({"width": page.viewport_size["width"], "height": min(int(height) + 80, 6000)})
    page.wait_for_timeout(800)
    page.screenshot(path=str(path), full_page=True)


def open_page(page, server, path: str, title: str) -> None:
    page.goto(f"{server.url}/{path}")
    page.get_by_role("heading", name=title, level=1).wait_for(timeout=60_000)
    settle(page)


def sign_in(page, name: str) -> None:
    """Type an annotator's name on Adjudication and wait for the first debate of the queue."""
    box = page.get_by_role("textbox", name="Annotator")
    box.fill(name)
    box.press("Enter")
    page.locator("h3", has_text="Debate #").first.wait_for(timeout=60_000)
    settle(page)


def grid_rows(page, index: int = 0) -> list[list[str]]:
    """The cells of the ``index``-th data grid, read from its accessible copy of the table."""
    grid = page.locator("[data-testid='stDataFrame']").nth(index)
    grid.locator("table").first.wait_for(state="attached", timeout=30_000)
    return grid.evaluate("g => [...g.querySelectorAll('table tbody tr')].map("
                         "r => [...r.querySelectorAll('td')].map(c => c.textContent.trim()))")


# Every visible chart has drawn its SVG (plotly draws after the script ends, in the browser).
_CHARTS_DRAWN = """() => [...document.querySelectorAll('[data-testid=stPlotlyChart]')]
    .filter(c => c.getBoundingClientRect().width > 0 && !c.closest('details:not([open])'))
    .every(c => c.querySelector('.main-svg') !== null && c.querySelector('.main-svg').getBoundingClientRect().height > 0)"""


def wait_for_charts(page, *, timeout_ms: int = 60_000) -> None:
    """Wait until every visible plotly chart of the page has drawn (a condition, not a pause)."""
    page.wait_for_function(_CHARTS_DRAWN, timeout=timeout_ms)


class Requests:
    """Every request, websocket and navigation of a browser context that goes to another host: recorded and aborted."""

    def __init__(self, context, host: str) -> None:
        self.host = host
        self.elsewhere: list[str] = []
        context.route("**/*", self._route)
        context.on("request", lambda request: self._local(request.url))
        context.on("page", lambda page: page.on("websocket", lambda ws: self._local(ws.url)))

    def _local(self, url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about") or parts.hostname == self.host:
            return True
        if url not in self.elsewhere:
            self.elsewhere.append(url)
        return False

    def _route(self, route) -> None:
        if self._local(route.request.url):
            route.continue_()
        else:
            route.abort()


# ------------------------------------------------------------- windows reused across tests

#: Characters that draw nothing but are copied with the text (a name with one reads alike and compares unequal).
ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad")


def invisible_characters(page) -> list[str]:
    """Every zero-width character in the text of the page as it is now (its body and its grids' cells), in context."""
    shown = page.evaluate("() => document.body.innerText + ' ' + [...document.querySelectorAll("
                          "'[data-testid=stDataFrame] td, [data-testid=stDataFrame] th')].map(c => c.textContent).join(' ')")
    return sorted({f"U+{ord(c):04X} in {shown[max(0, k - 30):k + 30]!r}" for k, c in enumerate(shown) if c in ZERO_WIDTH})


def tab_icon(page) -> str:
    """The address the browser tab's icon is loaded from ('' when the page sets none)."""
    return page.evaluate("() => (document.querySelector(\"link[rel='shortcut icon']\") || {}).href || ''")


class Windows:
    """Browser windows (one context and one tab per window size) kept open across the tests of a module.

    A test asks for the window of its size, opens its page there by URL (a new app session; the browser's
    cache of the app's scripts is kept, which is what makes it cheap), and calls :meth:`discard` when it
    failed half-way, so that the next test gets a new window rather than a broken one. The windows of the
    sizes in ``record`` record (and abort) every request to another host (:class:`Requests`; the browser
    does not cache for a context whose requests are intercepted, so only where needed).
    """

    def __init__(self, browser, server, *, record: tuple[tuple[int, int], ...] = ()) -> None:
        self.browser = browser
        self.server = server
        self.record = record
        self._open: dict[tuple[int, int], tuple[object, object, Requests | None]] = {}

    def page(self, width: int, height: int):
        """The tab of the window of this size (opened on first use)."""
        if (width, height) not in self._open:
            context = self.browser.new_context(viewport={"width": width, "height": height})
            requests = Requests(context, urlsplit(self.server.url).hostname) if (width, height) in self.record else None
            self._open[(width, height)] = (context, context.new_page(), requests)
        context, page, _ = self._open[(width, height)]
        page.set_viewport_size({"width": width, "height": height})  # a screenshot may have grown it
        page.bring_to_front()  # the window in use is the active one (a background tab draws no frames)
        return page

    def requests(self, width: int, height: int) -> Requests | None:
        """The request recorder of the window of this size (None when the size is not in ``record``)."""
        self.page(width, height)
        return self._open[(width, height)][2]

    def discard(self, width: int, height: int) -> None:
        """Close the window of this size (after a failure); the next :meth:`page` opens a new one."""
        context = self._open.pop((width, height), (None,))[0]
        if context is not None:
            context.close()

    def close(self) -> None:
        for width, height in list(self._open):
            self.discard(width, height)
