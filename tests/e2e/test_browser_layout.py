"""Layout in a real browser: no data grid cut off, no squashed chart, no toolbar over a legend.

Every page (and every tab of a page) of the bundled sample study and of the PRD
Vicuna80 study (sample_data/prd_vicuna80, else ../shared/data), at 1366x768 (a
common laptop) and 1920x1080. For each visible data
grid, its own scroller must not need a horizontal scrollbar (``scrollWidth`` <=
``clientWidth``) and its box must lie within the viewport's width; the page itself must
not scroll sideways; each visible chart must be at least 200 px high, and a chart's
toolbar (plotly's mode bar) must not cover its legend.

Issue 21 is checked on the same visits, for the sample at 1366x768 (each page is rendered
once and checked by every check that needs it):

- **Nothing leaves the machine**: every request, websocket and the tab's icon of every page
  (and tab) must go to the app's own host; a request elsewhere is recorded, aborted, and fails
  the page's test (the tab icon used to be fetched from Google's font server).
- **No invisible characters**: the text a user reads and copies on any page holds no
  zero-width character (names used to carry U+2060 word joiners).

Each study's server and each window size's browser window serve all of the study's pages
(a page is opened by its URL: a new app session each time, the browser's cache kept); the
sample's server is the session's read-only ``shared_sample_server``.
"""

from __future__ import annotations

import os
import shutil

import pytest

from e2e_support import (ERRORS, REPO, SCREENSHOTS, Server, Windows, invisible_characters, require_chromium, settle,
                         tab_icon, wait_for_charts)

SIZES = [(1366, 768), (1920, 1080)]
OFFLINE = ("sample", (1366, 768))  # the study and the window size whose visits also check issue 21
FIRST_START_MS = 240_000  # the first visitor of the sample's server waits for the bundled studies' import
MIN_CHART_HEIGHT = 200

# Everything measured in the page, in CSS pixels. A grid is "cut off" when its scroller
# needs a horizontal scrollbar or its box leaves the viewport.
MEASURE = """
() => {
  // Shown on screen: laid out, and not inside a closed expander (whose content is never drawn).
  const visible = (e) => { const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && e.offsetParent !== null && !e.closest('details:not([open])'); };
  const keyOf = (e) => { const k = e.closest('[class*="st-key-"]'); const m = k && k.className.match(/st-key-([A-Za-z0-9_:-]+)/); return m ? m[1] : ''; };
  const grids = [...document.querySelectorAll('[data-testid=stDataFrame]')].filter(visible).map((g, k) => {
    const scroller = g.querySelector('.dvn-scroller') || g;
    const box = g.getBoundingClientRect();
    const headers = [...g.querySelectorAll('[role=columnheader]')].map(h => h.innerText).slice(0, 3).join(' | ');
    return {index: k, headers: keyOf(g) + ' ' + headers, scroll: scroller.scrollWidth, client: scroller.clientWidth,
            left: box.left, right: box.right};
  });
  const charts = [...document.querySelectorAll('[data-testid=stPlotlyChart]')].filter(visible).map((c, k) => {
    const plot = c.querySelector('.js-plotly-plot') || c;
    const box = plot.getBoundingClientRect();
    const title = (c.querySelector('.gtitle') || {}).textContent || '';
    const legend = c.querySelector('.legend');
    const bar = c.querySelector('.modebar-container .modebar') || c.querySelector('.modebar');
    let overlap = false;
    if (legend && bar) {
      const a = legend.getBoundingClientRect(), b = bar.getBoundingClientRect();
      overlap = a.width > 0 && b.width > 0 && a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    }
    return {index: k, title: keyOf(c) + ' ' + title, height: box.height, right: box.right, overlap};
  });
  const main = document.querySelector('[data-testid=stMain]');
  return {width: window.innerWidth, grids, charts,
          pageScroll: main ? main.scrollWidth - main.clientWidth : 0};
}
"""


# The page's measurements (MEASURE) once no shown grid needs a horizontal scrollbar and the page
# held the same grids and charts on two frames in a row; null until then. A grid Streamlit is still
# laying out (its canvas drawn at a first, narrow width, before its headers: "needs 61 px, shows
# 52 px") reaches its width within frames on a quiet machine, and after more than 5 s on CI's loaded
# cores (it failed there at 5 s); a table that is really cut off stays so. The check and the
# measurement are one evaluation in one frame: measured apart, a page that redrew between them (a
# rerun replacing its grids: none shown, so "every grid fits" held at once) was measured mid-layout
# under load ("needs 61 px, shows 52 px" on Studies at 1920x1080 with two CPU-bound processes beside
# the suite). The bound is only paid by a page that is really wrong, so it is generous.
SETTLED_MEASURE = """
() => {
  const seen = (""" + MEASURE.strip() + """)();
  const shape = seen.grids.length + ':' + seen.charts.length;
  const steady = window.__peerboardShape === shape;
  window.__peerboardShape = shape;
  return steady && seen.grids.every((g) => g.scroll <= g.client + 1) ? seen : null;
}
"""
SETTLE_GRIDS_MS = 60_000


def layout_problems(page, where: str) -> list[str]:
    """What is wrong with the layout of the page as it is now (empty when all is well).

    Grids are measured once they have settled (:data:`SETTLED_MEASURE`, evaluated on every
    frame, at most :data:`SETTLE_GRIDS_MS`); one still cut off then is reported.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        seen = page.wait_for_function(SETTLED_MEASURE, timeout=SETTLE_GRIDS_MS, polling="raf").json_value()
    except PlaywrightTimeout:  # the grid is cut off for good: measured and reported below
        seen = page.evaluate(MEASURE)
    out = []
    for grid in seen["grids"]:
        if grid["scroll"] > grid["client"] + 1:
            out.append(f"{where}: data grid {grid['index']} ({grid['headers']}) is cut off: needs "
                       f"{grid['scroll']} px, shows {grid['client']} px")
        if grid["right"] > seen["width"] + 1 or grid["left"] < -1:
            out.append(f"{where}: data grid {grid['index']} ({grid['headers']}) leaves the viewport "
                       f"({grid['left']:.0f}..{grid['right']:.0f} of {seen['width']} px)")
    for chart in seen["charts"]:
        if chart["height"] < MIN_CHART_HEIGHT:
            out.append(f"{where}: chart {chart['index']} ({chart['title']}) is {chart['height']:.0f} px high")
        if chart["right"] > seen["width"] + 1:
            out.append(f"{where}: chart {chart['index']} ({chart['title']}) leaves the viewport")
        if chart["overlap"]:
            out.append(f"{where}: chart {chart['index']} ({chart['title']}): the toolbar covers the legend")
    if seen["pageScroll"] > 1:
        out.append(f"{where}: the page scrolls sideways by {seen['pageScroll']} px")
    return out


def pages_of(page, server) -> list[tuple[str, str]]:
    """Every page of the app as (url path, label), read from the sidebar's navigation."""
    page.goto(server.url)
    page.locator("[data-testid=stSidebarNav] a").first.wait_for(timeout=60_000)
    links = page.locator("[data-testid=stSidebarNav] a")
    out = []
    for k in range(links.count()):
        href = links.nth(k).get_attribute("href") or ""
        out.append((href.rstrip("/").rsplit("/", 1)[-1] if href.rstrip("/") != server.url else "",
                    links.nth(k).inner_text().strip()))
    return out


def open_any(page, server, path: str) -> None:
    """Open a page by its URL and wait until its script has run (its title is drawn)."""
    page.goto(f"{server.url}/{path}")
    page.locator("[data-testid=stMain] h1").first.wait_for(timeout=FIRST_START_MS)
    settle(page)


def finish_background_work(page) -> None:
    """Wait until no background job's progress bar is left: a background job (Efficiency's curves) redraws
    its part of the page every second until it is done, and a grid measured mid-redraw is not the layout
    users look at. Under a loaded CI machine the job outlives the page's first run."""
    running = page.locator("[data-testid=stMain] [data-testid=stProgress]", has_text="in the background")
    if running.count() == 0:  # none (left): the page has settled already
        return
    running.first.wait_for(state="detached", timeout=180_000)
    settle(page)


def offline_problems(page, requests, where: str) -> list[str]:
    """Issue 21 on the page as it is now: its tab icon from another host, zero-width characters in its text."""
    icon = tab_icon(page)
    out = [] if requests._local(icon) else [f"{where}: the tab icon comes from {icon[:100]}"]
    return out + [f"{where}: zero-width character {found}" for found in invisible_characters(page)]


def check_page(page, server, path: str, where: str, requests=None) -> list[str]:
    """The layout problems of a page and of each of its tabs (and, given the window's ``requests``, issue 21's)."""
    try:
        open_any(page, server, path)
    except Exception:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"layout-failed-{where.replace(' ', '_').replace('/', '')}.png"))
        raise
    finish_background_work(page)
    wait_for_charts(page)  # plotly draws after the script ends
    assert page.locator(ERRORS).count() == 0, (where, page.locator(ERRORS).all_inner_texts())
    found = layout_problems(page, where)
    if requests is not None:
        found += offline_problems(page, requests, where)
    tabs = page.locator("[data-testid=stMain] [role=tab]")
    for k in range(1, tabs.count()):
        name = tabs.nth(k).inner_text().strip()
        tabs.nth(k).click()
        settle(page)
        finish_background_work(page)
        wait_for_charts(page)
        assert page.locator(ERRORS).count() == 0, (where, name, page.locator(ERRORS).all_inner_texts())
        found += layout_problems(page, f"{where} [{name}]")
        if requests is not None:
            found += offline_problems(page, requests, f"{where} [{name}]")
    if requests is not None:
        page.wait_for_load_state("networkidle")
        found += [f"{where}: a request left 127.0.0.1: {url}" for url in requests.elsewhere]
    return found


# ---------------------------------------------------------------------------- studies


def _prd_folder():
    """The bundled PRD study when it is in sample_data/, else the shared copy (None when neither)."""
    for folder in (REPO / "sample_data" / "prd_vicuna80", REPO.parent / "shared" / "data" / "prd_vicuna80"):
        if folder.is_dir():
            return folder
    return None


@pytest.fixture(scope="module", params=["sample", "prd"])
def study_server(request, tmp_path_factory):
    """The app on the bundled sample (seeded on first run) or on the PRD Vicuna80 study alone."""
    require_chromium()
    if request.param == "sample":  # the same app as the session's read-only sample server: share it
        yield request.param, request.getfixturevalue("shared_sample_server")
        return
    folder = tmp_path_factory.mktemp(f"layout-{request.param}")
    env = {}
    if request.param == "prd":
        source = _prd_folder()
        if source is None:
            pytest.skip("the PRD Vicuna80 data is neither in sample_data/ nor in ../shared/data")
        from peercore.io.importer import import_path
        from peercore.store import Store

        store = Store(folder / "prd.sqlite")
        import_path(source, store=store, study="prd")
        store.close()
        env["PEERBOARD_SAMPLE_DATA"] = ""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        running = Server(folder / f"{request.param}.sqlite", folder / "streamlit.log")
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    yield request.param, running
    running.stop()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def windows(chromium, study_server):
    """One browser window per window size on the study's server, for all its pages (closed with the study)."""
    name, server = study_server
    opened = Windows(chromium, server, record=(OFFLINE[1],) if name == OFFLINE[0] else ())
    yield opened
    opened.close()


#: Every page of the app, by URL path ("" is the home page); a test checks the sidebar lists exactly these.
PAGES = ["", "studies", "leaderboard", "bias", "efficiency", "data", "reviewers", "debates", "adjudication",
         "meta_evaluation", "nlg"]


def test_the_layout_tests_cover_every_page(windows, study_server):
    _, server = study_server
    try:
        listed = {"" if path == "home" else path for path, _ in pages_of(windows.page(*SIZES[0]), server)}
    except Exception:
        windows.discard(*SIZES[0])  # the next test gets a new window, not this one in whatever state
        raise
    assert listed == set(PAGES), f"pages in the app: {sorted(listed)}; add new ones to PAGES"  # /home is /


@pytest.mark.parametrize("path", PAGES, ids=[p or "home" for p in PAGES])
@pytest.mark.parametrize("width, height", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_no_grid_cut_off_and_no_squashed_chart(windows, study_server, width, height, path):
    """The layout of the page (and its tabs); for the sample at 1366x768 also issue 21 (see the module's doc)."""
    name, server = study_server
    page = windows.page(width, height)
    try:
        found = check_page(page, server, path, f"{name} {width}x{height} /{path or 'home'}",
                           requests=windows.requests(width, height))
    except Exception:
        windows.discard(width, height)  # the next test gets a new window, not this one in whatever state
        raise
    if found:
        windows.discard(width, height)  # a request recorded on this page must not fail the next one too
    assert not found, "\n".join(found)
