"""Issue 21 in a real browser at 1366x768, on the bundled sample study.

- **Nothing leaves the machine** and **no invisible characters**: checked on every page of the
  navigation (its tabs too) by ``test_browser_layout.py``, on the visits it makes of the sample at
  1366x768 (``test_no_grid_cut_off_and_no_squashed_chart[1366x768-*-sample]``), so that each page
  is rendered once for all the checks that need it: every request, websocket and the tab's icon
  must go to the app's own host (a request elsewhere is recorded, aborted, and fails the page's
  test; the tab icon used to be fetched from Google's font server), and the text a user reads and
  copies holds no zero-width character (names used to carry U+2060 word joiners).
- **Names told apart** (here): in the grids that list judges and models, the part of each name
  the grid draws (its column's width, read from the canvas, against the text's width in
  the grid's font) differs between two different names.
"""

from __future__ import annotations

import pytest

from e2e_support import SCREENSHOTS, Windows, settle

VIEWPORT = {"width": 1366, "height": 768}


def _open(page, server, path: str) -> None:
    page.goto(f"{server.url}/{path}")
    page.locator("[data-testid=stMain] h1").first.wait_for(timeout=240_000)  # a first visitor waits for the import
    settle(page)
    running = page.locator("[data-testid=stMain] [data-testid=stProgress]", has_text="in the background")
    running.first.wait_for(state="detached", timeout=180_000)  # a background job redraws until it is done
    settle(page)


@pytest.fixture(scope="module")
def window(chromium, shared_sample_server):
    """One browser window at 1366x768 on the session's read-only sample server, for every grid of this module."""
    opened = Windows(chromium, shared_sample_server)
    yield opened
    opened.close()


# The part of each cell of a grid's column the grid draws: column edges are the vertical lines of the
# grid's canvas (the pixels that stay dark on every body row), the text is measured in the grid's font
# and cut where the column ends (glide draws a cell's text from its 8 px padding and clips at its edge).
DRAWN_NAMES = """
([index, column]) => {
  const grid = document.querySelectorAll('[data-testid=stMain] [data-testid=stDataFrame]')[index];
  const canvas = grid.querySelector('canvas[data-testid=data-grid-canvas]');
  const scale = canvas.width / canvas.getBoundingClientRect().width;
  const ctx = canvas.getContext('2d');
  const top = Math.round(40 * scale), bottom = canvas.height - 2;
  const pixels = ctx.getImageData(0, top, canvas.width, bottom - top).data;
  const rows = bottom - top, dark = new Array(canvas.width).fill(0);
  for (let y = 0; y < rows; y++)
    for (let x = 0; x < canvas.width; x++) {
      const k = 4 * (y * canvas.width + x);
      if (pixels[k] < 246 && pixels[k + 1] < 246 && pixels[k + 2] < 246) dark[x]++;
    }
  const edges = [];
  for (let x = 3; x < canvas.width - 3; x++)
    if (dark[x] >= 0.97 * rows && (edges.length === 0 || x / scale - edges[edges.length - 1] > 4)) edges.push(x / scale);
  const left = column === 0 ? 0 : edges[column - 1], right = edges[column];
  const style = getComputedStyle(grid.querySelector('.stDataFrameGlideDataEditor'));
  const measure = document.createElement('canvas').getContext('2d');
  measure.font = `${style.getPropertyValue('--gdg-base-font-style').trim()} ${style.getPropertyValue('--gdg-font-family').trim()}`;
  const room = right - left - 8;
  const cells = [...grid.querySelectorAll('table tbody tr')].map(r => r.querySelectorAll('td')[column].textContent);
  const header = grid.querySelectorAll('table thead th')[column].textContent;
  return {room, edges, header, cells: cells.map(text => {
    let k = text.length;
    while (k > 0 && measure.measureText(text.slice(0, k)).width > room) k--;
    return [text, text.slice(0, k)];
  })};
}
"""


# (page, which grid on it, which column holds the names, that column's header): the sample's Judge health
# (five judges sharing "local:qwen2.5-coder-1.5b") and its leaderboard ("local:smollm2-135m" and "...@t1.0").
GRIDS = [("bias", 0, 0, "judge"), ("leaderboard", 0, 1, "model")]


@pytest.mark.parametrize("path, index, column, header", GRIDS, ids=["judge health", "leaderboard"])
def test_two_different_names_never_read_alike(window, shared_sample_server, path, index, column, header):
    page = window.page(VIEWPORT["width"], VIEWPORT["height"])
    try:
        _open(page, shared_sample_server, path)
        grid = page.locator("[data-testid=stMain] [data-testid=stDataFrame]").nth(index)
        grid.locator("table").first.wait_for(state="attached", timeout=60_000)
        seen = page.evaluate(DRAWN_NAMES, [index, column])
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        grid.screenshot(path=str(SCREENSHOTS / f"names-{path}-1366.png"))
    except Exception:
        window.discard(VIEWPORT["width"], VIEWPORT["height"])  # the next test gets a new window
        raise
    assert seen["header"] == header, seen
    names = {name for name, _ in seen["cells"]}
    assert len(names) >= 3 and len(seen["edges"]) >= 2, seen  # the sample's judges / models, and a grid measured
    drawn: dict[str, set[str]] = {}
    for name, part in seen["cells"]:
        drawn.setdefault(part, set()).add(name)
    alike = {part: sorted(group) for part, group in drawn.items() if len(group) > 1}
    assert alike == {}, f"{path}: names drawn alike in {seen['room']:.0f} px: {alike}"
