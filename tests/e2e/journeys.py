"""A newcomer's first minutes, step by step, in a real browser (issue 21): shared by the browser test
(``test_browser_first_journey.py``, which checks each step) and the benchmark
(``benchmarks/first_journey.py``, which times them).

From an empty database at 1366x768: Home with the bundled studies, the PRD Vicuna80
leaderboard from its Home card (Peer Rank with the paper's reviewer weights), the judges'
health on Bias, and a debate of the sample decided with the keyboard on Adjudication;
every request the browser makes is recorded, and any to another host than the app's
is aborted and reported.
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

from e2e_support import ERRORS, Requests, settle

VIEWPORT = {"width": 1366, "height": 768}
PRD_WEIGHTS = "gpt4 0.488, claude 0.377, vicuna-13b 0.082, gpt35 0.053, bard 0.000"
FIRST_START_S = 240_000  # ms: a first start imports the bundled studies (about 10 s on a quiet machine)


def _nav(page, title: str) -> None:
    """Open a page from the sidebar's menu (the session, and its study, stay)."""
    page.locator("[data-testid=stSidebarNav] a", has_text=title).first.click()
    page.get_by_role("heading", name=title, level=1).wait_for(timeout=60_000)
    settle(page)


def first_journey(browser, server) -> dict:
    """Walk the journey on ``server`` (an empty database); return what each step showed and its seconds.

    Returns
    -------
    dict
        ``steps``: [(name, seconds)], ``leaderboard_caption``, ``health_judges`` (rows of
        the Judge health table), ``saved`` (the flash after the decision), ``elsewhere``
        (requests to another host), ``errors`` (error boxes seen on any step).
    """
    context = browser.new_context(viewport=VIEWPORT)
    requests = Requests(context, urlsplit(server.url).hostname)
    out: dict = {"steps": [], "errors": []}
    try:
        page = context.new_page()
        start = time.monotonic()

        def step(name: str) -> None:
            out["errors"] += page.locator(ERRORS).all_inner_texts()
            out["steps"].append((name, round(time.monotonic() - start, 2)))

        page.goto(server.url)
        page.get_by_role("heading", name="PeerBoard", level=1).wait_for(timeout=FIRST_START_S)
        page.get_by_text("prd-vicuna80").first.wait_for(timeout=FIRST_START_S)
        settle(page)
        step("Home with the bundled studies (first start: they are imported)")

        page.locator(".st-key-home_open--prd-vicuna80 button").first.click()
        page.get_by_role("heading", name="Leaderboard", level=1).wait_for(timeout=60_000)
        page.get_by_text(PRD_WEIGHTS).first.wait_for(timeout=60_000)
        out["leaderboard_caption"] = page.get_by_text(PRD_WEIGHTS).first.inner_text()
        step("PRD leaderboard by Peer Rank (the paper's weights)")

        _nav(page, "Bias")
        page.get_by_role("heading", name="Judge health").wait_for(timeout=60_000)
        health = page.locator("[data-testid=stDataFrame]").filter(has_text="P(first chosen)").first
        health.wait_for(timeout=60_000)
        out["health_judges"] = health.locator("[role=row]").count() - 1  # the header row is one
        step("Judge health on Bias")

        page = context.new_page()  # a second tab: a new session opens on the sample, which has debates
        page.goto(f"{server.url}/adjudication")
        page.get_by_role("heading", name="Adjudication", level=1).wait_for(timeout=60_000)
        settle(page)
        box = page.get_by_role("textbox", name="Annotator")
        box.fill("newcomer")
        box.press("Enter")
        page.locator("h3", has_text="Debate #").first.wait_for(timeout=60_000)
        settle(page)
        page.keyboard.press("1")
        page.get_by_text("Saved: debate #").first.wait_for(timeout=60_000)
        out["saved"] = page.get_by_text("Saved: debate #").first.inner_text()
        step("A debate decided with the keyboard on Adjudication")
    finally:
        out["elsewhere"] = list(requests.elsewhere)
        context.close()
    return out
