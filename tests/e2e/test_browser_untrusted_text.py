"""Untrusted text stays text in a real browser (issue 8, "Untrusted text is text").

The hostile study (tests/app/app_studies.py) carries Markdown and HTML in every text
field: questions, answers, rationales, model / judge / speaker / annotator names,
criteria, scenarios, notes, the study's name, description and provenance, a run's
error. Every page is visited, with its tabs and expanders opened, and after each view:

- no request left the page: every request goes to the Streamlit server on 127.0.0.1
  (the rest are recorded and aborted, so nothing reaches the network either);
- nothing active rendered from the data: no image or link to the hostile hosts, no
  badge reading "FAKE VERDICT", no bold / italic / link inside a plotly SVG, no
  heading, quote, table, code block, LaTeX, icon or emoji made from the data.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from app_studies import BADGE, EVIL, FAKE, TRACKER
from e2e_support import ERRORS, full_screenshot, open_page, settle, sign_in

LOCAL = {"127.0.0.1", "localhost"}  # every request goes here, the tab's icon included (issue 21)

# Everything the hostile text could make the page do, read from the DOM: a list of
# what rendered (empty when the page shows the data as text).
RENDERED = r"""
([tracker, evil, fake]) => {
  const out = [];
  const text = (e) => (e.textContent || '').trim();
  const hostile = (url) => url.includes(tracker) || url.includes(evil);
  for (const img of document.querySelectorAll('img, image')) {
    const src = img.getAttribute('src') || img.getAttribute('href') || img.getAttribute('xlink:href') || '';
    if (hostile(src) || /^(https?:)?\/\//i.test(src) && !src.startsWith(location.origin)) out.push('image ' + src);
    if (img.getAttribute('alt') === 'Streamlit logo') out.push('the :streamlit: logo image');
  }
  for (const a of document.querySelectorAll('a[href], a[*|href]')) {
    const href = a.getAttribute('href') || a.getAttributeNS('http://www.w3.org/1999/xlink', 'href') || '';
    if (hostile(href) || href.startsWith('mailto:') || /www\./i.test(href)) out.push('link ' + href);
  }
  for (const badge of document.querySelectorAll('.stMarkdownBadge, .stMarkdownColoredText, .stMarkdownColoredBackground'))
    if (text(badge).includes(fake) || text(badge) === 'red') out.push('badge "' + text(badge) + '"');
  for (const svg of document.querySelectorAll('.js-plotly-plot svg')) {
    for (const a of svg.querySelectorAll('a')) out.push('plotly link "' + text(a) + '"');
    // <b>/<i> in a name become a bold / italic tspan holding the tag's content (titles may be bold by theme)
    for (const t of svg.querySelectorAll('tspan[style*="bold"], tspan[style*="italic"]'))
      if (['alpha', 'x', 'c', 'bold', 'study', 'eve', 'ann'].includes(text(t))) out.push('plotly bold/italic "' + text(t) + '"');
  }
  const exactly = {
    'strong, b': ['bold', 'strong', 'alpha', 'x', 'c', 'eve', 'study'],
    'em, i': ['em', 'ann'],
    'del, s': ['struck'],
  };
  for (const [selector, texts] of Object.entries(exactly))
    for (const e of document.querySelectorAll(selector))
      if (texts.includes(text(e))) out.push(selector + ' "' + text(e) + '"');
  const from_data = {
    'h1, h2, h3, h4, h5, h6': ['A heading'],
    'blockquote': ['a quote'],
    '[data-testid="stMarkdownContainer"] table': null,
    '[data-testid="stMarkdownContainer"] pre': null,
    '[data-testid="stMarkdownContainer"] li': ['a list item', 'a numbered item'],
    '.katex': null,
    'span[role="img"][aria-label="warning icon"]': null,
  };
  for (const [selector, texts] of Object.entries(from_data))
    for (const e of document.querySelectorAll(selector))
      if (texts === null || texts.some((t) => text(e).startsWith(t))) out.push(selector + ' "' + text(e).slice(0, 60) + '"');
  if (document.body.innerText.includes('\u{1F604}')) out.push('the :smile: emoji');
  return out;
}
"""


class Outbound:
    """Every request of a browser context that is not for the local server: recorded, then aborted."""

    def __init__(self, context) -> None:
        self.requests: list[str] = []
        context.route("**/*", self._route)
        context.on("request", self._seen)
        context.on("page", lambda page: page.on("websocket", lambda ws: self._check(ws.url)))

    def _check(self, url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about") or parts.hostname in LOCAL:
            return True
        if url not in self.requests:
            self.requests.append(url)
        return False

    def _seen(self, request) -> None:
        self._check(request.url)

    def _route(self, route) -> None:
        if self._check(route.request.url):
            route.continue_()
        else:
            route.abort()


# Plotly draws, and images load (or fail: hostile hosts are aborted), after the script ends: the page is
# read once every visible chart has its SVG and every image has finished, not after a pause.
DRAWN = """
() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
        .filter((chart) => chart.offsetParent !== null)
        .every((chart) => chart.querySelector('.main-svg'))
      && [...document.querySelectorAll('img')].every((img) => img.complete)
"""


HOVER_TEXT = "[...document.querySelectorAll('.js-plotly-plot .hoverlayer')].map((e) => e.textContent).join(' ')"


def check(page, outbound: Outbound, view: str) -> None:
    settle(page)
    page.wait_for_function(DRAWN, timeout=60_000)
    rendered = page.evaluate(RENDERED, [TRACKER, EVIL, FAKE])
    assert page.locator(ERRORS).count() == 0, (view, page.locator(ERRORS).all_inner_texts())
    assert outbound.requests == [] and rendered == [], (
        f"{view}: untrusted text was rendered as Markdown/HTML\n"
        f"  requests that left the page: {outbound.requests}\n  rendered from the data: {rendered}")


def click_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()
    settle(page)


def expand(page, label: str) -> None:
    page.locator("[data-testid='stExpander'] summary", has_text=label).first.click()
    settle(page)


# Each page with the views that show text: (path, title, [(view name, action before it)]).
VIEWS = [
    ("", "PeerBoard", [("page", None)]),
    ("studies", "Studies", [("page", None), ("delete expander", lambda p: expand(p, "Delete this study"))]),
    ("leaderboard", "Leaderboard", [("Table", None)] + [
        (tab, lambda p, tab=tab: click_tab(p, tab)) for tab in ("Elo curves", "Heatmaps", "Reviewer weights", "What-if")]),
    ("bias", "Bias", [("page", None)]),
    ("efficiency", "Efficiency", [("page", None)]),
    ("data", "Data", [("page", None)]),
    ("reviewers", "Reviewers & runs", [("page", None)]),
    ("debates", "Discussions & debates", [
        ("transcript", None), ("submissions", lambda p: expand(p, "The two submissions"))]),
    ("adjudication", "Adjudication", [
        ("queue head", lambda p: sign_in(p, "e2e-hostile")),
        ("models revealed", lambda p: (p.get_by_text("Show which model wrote each submission").click(), settle(p))),
        # blind mode is on by default: the agents' verdicts and reasons appear on request
        ("agents shown", lambda p: (p.get_by_role("button", name="Show the agents' verdicts now").click(), settle(p))),
        ("whole debate", lambda p: expand(p, "The whole debate")),
        ("all decisions", lambda p: expand(p, "All decisions")),
    ]),
    ("meta_evaluation", "Meta-evaluation", [("page", None)]),
]


@pytest.mark.parametrize("path, title, views", VIEWS, ids=[path or "home" for path, _, _ in VIEWS])
def test_untrusted_text_renders_as_text(chromium, hostile_server, screenshots, path, title, views):
    context = chromium.new_context(viewport={"width": 1440, "height": 1400})
    outbound = Outbound(context)
    page = context.new_page()
    try:
        open_page(page, hostile_server, path, title)
        for view, action in views:
            if action is not None:
                action(page)
            check(page, outbound, f"{title} / {view}")
        full_screenshot(page, screenshots / f"hostile-{path or 'home'}.png")  # for a human to look at
    finally:
        context.close()


def test_hostile_text_is_on_screen_as_written(chromium, hostile_server):
    """The other side of the coin: escaped, not dropped. A transcript shows the forged badge as its literal text."""
    context = chromium.new_context(viewport={"width": 1440, "height": 1400})
    outbound = Outbound(context)
    page = context.new_page()
    try:
        open_page(page, hostile_server, "debates", "Discussions & debates")
        check(page, outbound, "debates")
        shown = page.locator("[data-testid='stMain']").inner_text()
        assert BADGE in shown and f"![](http://{TRACKER}/track.png)" in shown
        charts = " ".join(page.locator(".js-plotly-plot svg").all_text_contents())
        assert "<b>alpha</b>" in charts  # a judge name with HTML is drawn as written

        open_page(page, hostile_server, "leaderboard", "Leaderboard")  # hover text is drawn on demand
        points = page.locator(".js-plotly-plot .scatterlayer .point")
        points.first.wait_for(timeout=30_000)  # plotly draws after the script has run
        shown = [""]
        for point in points.all():
            point.hover(force=True)
            # the hover label of this point is drawn: the hover layer shows a text other than the last one's
            page.wait_for_function(f"(before) => {{ const now = {HOVER_TEXT}; return now.trim() !== '' && now !== before; }}",
                                   arg=shown[-1], timeout=30_000)
            shown.append(page.evaluate(f"() => {HOVER_TEXT}"))
            check(page, outbound, "leaderboard, hovering a model")
        assert any("<b>alpha</b>" in text for text in shown), shown
    finally:
        context.close()
