"""Layout in a real browser: no data grid cut off, no squashed chart, no toolbar over a legend.

Every page (and every tab of a page) of the bundled sample study and of the PRD
Vicuna80 study (sample_data/prd_vicuna80, else ../shared/data), at 1366x768 (a
common laptop) and 1920x1080. For each visible data
grid, its own scroller must not need a horizontal scrollbar (``scrollWidth`` <=
``clientWidth``) and its box must lie within the viewport's width; the page itself must
not scroll sideways; each visible chart must be at least 200 px high, and a chart's
toolbar (plotly's mode bar) must not cover its legend.
"""

from __future__ import annotations

import os
import shutil

import pytest

from e2e_support import ERRORS, REPO, SCREENSHOTS, Server, require_chromium, settle, wait_for_charts

SIZES = [(1366, 768), (1920, 1080)]
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


def layout_problems(page, where: str) -> list[str]:
    """What is wrong with the layout of the page as it is now (empty when all is well)."""
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
    page.locator("[data-testid=stMain] h1").first.wait_for(timeout=60_000)
    settle(page)


def finish_background_work(page) -> None:
    """Wait until no background job's progress bar is left: a background job (Efficiency's curves) redraws
    its part of the page every second until it is done, and a grid measured mid-redraw is not the layout
    users look at. Under a loaded CI machine the job outlives the page's first run."""
    running = page.locator("[data-testid=stMain] [data-testid=stProgress]", has_text="in the background")
    running.first.wait_for(state="detached", timeout=180_000)
    settle(page)


def check_page(page, server, path: str, where: str) -> list[str]:
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
    tabs = page.locator("[data-testid=stMain] [role=tab]")
    for k in range(1, tabs.count()):
        name = tabs.nth(k).inner_text().strip()
        tabs.nth(k).click()
        settle(page)
        finish_background_work(page)
        wait_for_charts(page)
        assert page.locator(ERRORS).count() == 0, (where, name, page.locator(ERRORS).all_inner_texts())
        found += layout_problems(page, f"{where} [{name}]")
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


#: Every page of the app, by URL path ("" is the home page); a test checks the sidebar lists exactly these.
PAGES = ["", "studies", "leaderboard", "bias", "efficiency", "data", "reviewers", "debates", "adjudication",
         "meta_evaluation", "nlg"]


def test_the_layout_tests_cover_every_page(chromium, study_server):
    _, server = study_server
    context = chromium.new_context(viewport={"width": 1366, "height": 768})
    try:
        listed = {"" if path == "home" else path for path, _ in pages_of(context.new_page(), server)}
    finally:
        context.close()
    assert listed == set(PAGES), f"pages in the app: {sorted(listed)}; add new ones to PAGES"  # /home is /


@pytest.mark.parametrize("path", PAGES, ids=[p or "home" for p in PAGES])
@pytest.mark.parametrize("width, height", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_no_grid_cut_off_and_no_squashed_chart(chromium, study_server, width, height, path):
    name, server = study_server
    context = chromium.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        found = check_page(page, server, path, f"{name} {width}x{height} /{path or 'home'}")
    finally:
        context.close()
    assert not found, "\n".join(found)
