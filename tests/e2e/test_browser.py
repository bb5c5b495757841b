"""The dashboard in a real browser: every page, keyboard adjudication, two people at once."""

from __future__ import annotations

import asyncio
import re
import threading

import pytest

from e2e_support import (CHROMIUM, CHROMIUM_ARGS, ERRORS, IDLE, Server, Windows, full_screenshot,
                         open_page, settle, sign_in, wait_for_charts)
from peercore.store import Store

PAGES = [
    ("studies", "Studies"),
    ("leaderboard", "Leaderboard"),
    ("bias", "Bias"),
    ("efficiency", "Efficiency"),
    ("data", "Data"),
    ("reviewers", "Reviewers & runs"),
    ("debates", "Discussions & debates"),
    ("adjudication", "Adjudication"),
    ("meta_evaluation", "Meta-evaluation"),
]
QUEUE_HEAD = re.compile(r"Debate #(\d+)")


def queue_head(page) -> int | None:
    heading = page.locator("h3", has_text="Debate #")
    if heading.count() == 0:
        return None
    return int(QUEUE_HEAD.search(heading.first.inner_text()).group(1))


def wait_for_head(page, expected: int | None, timeout_ms: int = 60_000) -> None:
    waited = 0
    while queue_head(page) != expected:
        if waited > timeout_ms:
            raise AssertionError(f"queue head is {queue_head(page)}, expected {expected}")
        page.wait_for_timeout(200)
        waited += 200
    settle(page, pause_ms=200)


def decisions(server) -> list[tuple[int, str, str]]:
    store = Store(server.db)
    try:
        frame = store.debates.adjudications("synthetic")
        return sorted(zip(frame["debate_id"].astype(int), frame["annotator"], frame["verdict"]))
    finally:
        store.close()


def forget_decisions(server) -> None:
    store = Store(server.db)
    try:
        for debate_id, annotator, _ in decisions(server):
            store.debates.undo_adjudication(debate_id, annotator)
    finally:
        store.close()


# ------------------------------------------------------------------------------ pages


@pytest.fixture(scope="module")
def window(chromium, server):
    """One browser window at 1440x1000 for every page's test (each opens its page by URL: a new app session)."""
    opened = Windows(chromium, server)
    yield opened
    opened.close()


@pytest.mark.parametrize("path, title", PAGES)
def test_every_page_renders_without_an_error(window, server, screenshots, path, title):
    page = window.page(1440, 1000)
    try:
        open_page(page, server, path, title)
        wait_for_charts(page)  # plotly draws after the script ends: the screenshot shows the charts
        assert page.locator(ERRORS).count() == 0, (path, page.locator(ERRORS).all_inner_texts())
        name = (path or "studies") + ".png"
        full_screenshot(page, screenshots / name)
        assert "sk-should-never-show" not in page.content(), path  # a key in a run config never shows
    except Exception:
        window.discard(1440, 1000)  # the next test gets a new window, not this one in whatever state
        raise


def test_leaderboard_interactions_in_the_browser(chromium, server):
    context = chromium.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    try:
        open_page(page, server, "leaderboard", "Leaderboard")
        page.get_by_role("tab", name="Heatmaps").click()
        page.get_by_text("Battles per pair").first.wait_for(timeout=30_000)
        settle(page)
        assert page.locator("[data-testid='stPlotlyChart']").count() == 3
        page.get_by_role("tab", name="What-if").click()
        page.get_by_text("Every judge is ticked").wait_for(timeout=30_000)
        page.get_by_role("checkbox", name="anthropic:bravo").click(force=True)  # untick one reviewer
        page.get_by_text("rank (without)").first.wait_for(state="attached", timeout=30_000)  # grid header (a11y copy)
        settle(page)
        assert page.locator("[data-testid='stPlotlyChart']").count() == 1  # the rank-change chart
        assert page.locator(ERRORS).count() == 0
    finally:
        context.close()


def test_a_fresh_server_opened_on_a_page_url_shows_the_whole_app(chromium, tmp_path):
    """The first visitor of a new server goes straight to /bias (a bookmark), not to the home page."""
    from app_studies import build_synthetic_study

    store = Store(tmp_path / "fresh.sqlite")
    build_synthetic_study(store)
    store.close()
    fresh = Server(tmp_path / "fresh.sqlite", tmp_path / "fresh.log")
    context = chromium.new_context(viewport={"width": 1440, "height": 1000})
    try:
        page = context.new_page()
        open_page(page, fresh, "bias", "Bias")
        assert page.get_by_role("heading", name="Position bias").count() == 1  # the study is open
        assert page.get_by_text("Judge the judges").count() == 1  # our navigation, not a folder listing
        assert page.locator(ERRORS).count() == 0
    finally:
        context.close()
        fresh.stop()


# ----------------------------------------------------------------------- adjudication


def test_adjudicate_with_the_keyboard(chromium, server, screenshots):
    forget_decisions(server)
    context = chromium.new_context(viewport={"width": 1440, "height": 1100})
    page = context.new_page()
    try:
        open_page(page, server, "adjudication", "Adjudication")
        sign_in(page, "keyboard-kim")
        assert queue_head(page) == 1
        full_screenshot(page, screenshots / "adjudication-item.png")
        page.get_by_role("heading", name="Adjudication", level=1).click()  # leave the text box
        page.keyboard.press("1")
        wait_for_head(page, 2)
        assert decisions(server) == [(1, "keyboard-kim", "model_a")]
        page.keyboard.press("0")
        wait_for_head(page, 3)
        assert decisions(server) == [(1, "keyboard-kim", "model_a"), (2, "keyboard-kim", "tie")]
        page.keyboard.press("S")  # skip debate 3
        wait_for_head(page, 4)
        page.keyboard.press("U")  # undo the tie on debate 2
        wait_for_head(page, 2)
        assert decisions(server) == [(1, "keyboard-kim", "model_a")]
        page.keyboard.press("2")
        wait_for_head(page, 4)  # 3 is still skipped
        assert decisions(server) == [(1, "keyboard-kim", "model_a"), (2, "keyboard-kim", "model_b")]
        assert page.locator(ERRORS).count() == 0
    finally:
        context.close()
        forget_decisions(server)


# --------------------------------------------------------------------- two at once


async def _head(page) -> str | None:
    """The queue head shown ("Debate #3 · ..."), None when the queue is empty, "?" while re-rendering."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    heading = page.locator("h3", has_text="Debate #")
    try:
        if await heading.count() == 0:
            return None
        return await heading.first.inner_text(timeout=2_000)
    except PlaywrightTimeout:
        return "?"


async def _decide_together(server, names: tuple[str, str], rounds: int) -> None:
    """Two browser contexts (two people) click "Submission 1 is better" at the same moment, ``rounds`` times."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            pages = []
            for name in names:
                context = await browser.new_context(viewport={"width": 1280, "height": 1000})
                page = await context.new_page()
                await page.goto(f"{server.url}/adjudication")
                box = page.get_by_role("textbox", name="Annotator")
                await box.fill(name)
                await box.press("Enter")
                await page.locator("h3", has_text="Debate #").first.wait_for(timeout=60_000)
                await page.wait_for_selector(IDLE, timeout=60_000)
                pages.append(page)
            for round_number in range(rounds):
                heads = []
                for page in pages:
                    await page.wait_for_selector(IDLE, timeout=90_000)
                    head = await _head(page)
                    assert head not in (None, "?"), (f"round {round_number}: a page shows no debate; "
                                                     f"stored: {decisions(server)}")
                    heads.append(head)
                await asyncio.gather(*(page.get_by_role("button", name=re.compile("Submission 1 is better")).click()
                                       for page in pages))
                for page, head in zip(pages, heads):  # wait until each page moved on to its next debate
                    for _ in range(450):
                        await page.wait_for_timeout(200)
                        if await _head(page) not in (head, "?"):
                            break
                    else:
                        raise AssertionError(f"round {round_number}: a page stayed on {head!r} for 90 s")
                    await page.wait_for_selector(IDLE, timeout=90_000)
                    assert await page.locator(ERRORS).count() == 0
        finally:
            await browser.close()


def decide_together(server, names: tuple[str, str], rounds: int) -> None:
    """Run the two async browser contexts in their own thread (the sync browser's loop owns this one)."""
    errors: list[BaseException] = []

    def main() -> None:
        try:
            asyncio.run(_decide_together(server, names, rounds))
        except BaseException as error:  # noqa: BLE001 - re-raised in the test's thread
            errors.append(error)

    thread = threading.Thread(target=main)
    thread.start()
    thread.join(timeout=600)
    assert not thread.is_alive(), "the two browser contexts did not finish within 10 minutes"
    if errors:
        raise errors[0]


def test_two_people_adjudicating_at_once_store_each_decision_exactly_once(server):
    forget_decisions(server)
    try:
        decide_together(server, ("ann-e2e", "ben-e2e"), rounds=4)
        rows = decisions(server)
        assert len(rows) == 8  # 4 debates x 2 annotators, none lost, none doubled
        for name in ("ann-e2e", "ben-e2e"):
            assert sorted(d for d, who, _ in rows if who == name) == [1, 2, 3, 4]
    finally:
        forget_decisions(server)


def test_the_same_person_in_two_windows_still_decides_each_debate_once(server):
    forget_decisions(server)
    try:
        decide_together(server, ("same-e2e", "same-e2e"), rounds=2)
        rows = decisions(server)
        debates = [d for d, _, _ in rows]
        assert len(debates) == len(set(debates)) and set(debates) <= {1, 2, 3, 4}
        assert {who for _, who, _ in rows} == {"same-e2e"}
        assert 2 <= len(rows) <= 4  # each click decided its window's debate; no row twice
    finally:
        forget_decisions(server)


# ------------------------------------------------------------------ the bundled sample


def test_first_run_opens_on_the_bundled_sample_with_no_key(chromium, shared_sample_server, screenshots):
    """An empty database, no API key, no network: the app imports sample_data/ and opens on it.

    Its Leaderboard and Adjudication screenshots are the README's (docs/screenshots/). The server is the
    session's read-only one (``shared_sample_server``): signing in decides nothing.
    """
    sample_server = shared_sample_server
    context = chromium.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    try:
        open_page(page, sample_server, "studies", "Studies")
        assert page.get_by_role("heading", name="sample", exact=True).count() == 1
        assert page.locator(ERRORS).count() == 0
        full_screenshot(page, screenshots / "sample-studies.png")
        page.set_viewport_size({"width": 1440, "height": 1000})
        open_page(page, sample_server, "leaderboard", "Leaderboard")
        wait_for_charts(page)  # plotly draws after the script ends: the screenshot shows the charts
        assert page.locator(ERRORS).count() == 0
        full_screenshot(page, screenshots / "sample-leaderboard.png")
        page.set_viewport_size({"width": 1440, "height": 1000})
        open_page(page, sample_server, "adjudication", "Adjudication")
        sign_in(page, "reviewer")
        assert page.locator(ERRORS).count() == 0
        full_screenshot(page, screenshots / "sample-adjudication.png")
    finally:
        context.close()
