"""A label request decided in a real browser at 1366x768 (issue 23), with the decision bar that stays (issue 21).

A label request (active inference, Zrnic & Candès 2024, arXiv 2403.03208, eq. (3): the
comparison was chosen where the judge is least sure) is offered on the Adjudication page with
its two answers; the annotator scrolls down a long submission, the decision buttons stay on
screen (measured with getBoundingClientRect), the "1" key decides it and the decision is stored
as a label of the judge's PPI++ leaderboard (Angelopoulos, Duchi & Zrnic 2023, eq. (2)), which the
Leaderboard's anchored view (opened from a shared link) counts at once.
"""

from __future__ import annotations

import pytest

from e2e_support import ERRORS, Server, require_chromium, settle
from peercore.app.calibration import calibrated_leaderboard, label_requests, queue_label_requests
from peercore.app.study import Study
from peercore.store import Store

LAPTOP = {"width": 1366, "height": 768}
DECISION_BUTTONS = ("Submission 1 is better", "Submission 2 is better", "Tie", "Both bad")
JUDGE, REFERENCE, ANNOTATOR = "local:charlie", "human:,adjudicator:", "lab"
LONG = "\n\n".join(f"Paragraph {k} of a long answer: it goes on and on, so that reading it means scrolling."
                   for k in range(80))


@pytest.fixture(scope="module")
def request_server(tmp_path_factory):
    """The synthetic study with its debates decided by ``lab`` and one label request with two long answers next."""
    require_chromium()
    from app_studies import build_synthetic_study

    folder = tmp_path_factory.mktemp("e2e-label-request")
    store = Store(folder / "e2e.sqlite")
    build_synthetic_study(store)
    for debate_id in store.debates.table("synthetic", status="unresolved", kind="debate")["id"]:
        store.debates.adjudicate(int(debate_id), ANNOTATOR, "tie")
    requests = label_requests(Study(store, "synthetic"), judge=JUDGE, reference=REFERENCE, k=1, seed=0)
    queue_label_requests(store, "synthetic", requests)
    request = store.debates.table("synthetic", kind="label_request").iloc[0]
    connection = store.connect()
    for model in (request["model_a"], request["model_b"]):
        connection.execute("UPDATE answers SET text = ? WHERE question_id = ? AND model = ?",
                           (f"{model}: {LONG}", request["question_id"], model))
    if hasattr(connection, "commit"):
        connection.commit()
    store.close()
    running = Server(folder / "e2e.sqlite", folder / "streamlit.log")
    yield running
    running.stop()


def _rects(page) -> dict[str, dict]:
    """getBoundingClientRect of each decision button of the bar, read in one step in the page."""
    return page.evaluate("""(names) => Object.fromEntries(names.map((name) => {
        const bar = document.querySelector('.st-key-adj_decision_bar');
        const button = bar && [...bar.querySelectorAll('button')].find((b) => (b.innerText || '').includes(name));
        if (!button) return [name, null];
        const r = button.getBoundingClientRect();
        return [name, {top: r.top, bottom: r.bottom, left: r.left, right: r.right}];
    }))""", list(DECISION_BUTTONS))


def _on_screen(page) -> list[str]:
    """The decision buttons that are not wholly inside the 1366x768 viewport."""
    out = []
    for name, rect in _rects(page).items():
        if rect is None or rect["top"] < 0 or rect["bottom"] > LAPTOP["height"] or rect["left"] < 0 \
                or rect["right"] > LAPTOP["width"]:
            out.append(f"{name}: {rect}")
    return out


# The scroller that holds the first submission's text (the nearest scrolling ancestor of its first
# paragraph): found by its text, so that the test reads the page as a user sees it.
SCROLLER = """() => {
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    let node;
    while ((node = walker.nextNode()) && !node.textContent.includes('Paragraph 0 of a long answer')) {}
    let e = node ? node.parentElement : null;
    while (e && !(['auto', 'scroll'].includes(getComputedStyle(e).overflowY) && e.scrollHeight > e.clientHeight + 1)) {
        e = e.parentElement;
    }
    if (!e) return null;
    const r = e.getBoundingClientRect();
    return {top: e.scrollTop, max: e.scrollHeight - e.clientHeight, x: r.left + r.width / 2, y: r.top + r.height / 2};
}"""
MAIN_SCROLL = "() => document.querySelector('[data-testid=stMain]').scrollTop"


def _decisions(server) -> list[tuple]:
    store = Store(server.db)
    try:
        frame = store.debates.adjudications("synthetic")
        frame = frame[frame["kind"] == "label_request"]
        return list(zip(frame["annotator"], frame["decision"]))
    finally:
        store.close()


def test_scrolling_a_long_submission_keeps_the_bar_and_the_key_decides(chromium, request_server):
    before = calibrated_leaderboard(Study(Store(request_server.db), "synthetic"), judge=JUDGE, reference=REFERENCE)
    context = chromium.new_context(viewport=LAPTOP)
    page = context.new_page()
    try:
        page.goto(f"{request_server.url}/adjudication")
        page.get_by_role("heading", name="Adjudication", level=1).wait_for(timeout=60_000)
        settle(page)
        box = page.get_by_role("textbox", name="Annotator")
        box.fill(ANNOTATOR)
        box.press("Enter")
        page.locator("h3", has_text="Label request #").first.wait_for(timeout=60_000)
        settle(page)
        assert page.get_by_text("asked by peercore calibrate --request").count() == 1
        assert page.get_by_text("What the agents said").count() == 0
        assert _on_screen(page) == []

        # Scroll down the first submission with the wheel, well past its end.
        start = page.evaluate(SCROLLER)
        assert start is not None and start["top"] == 0 and start["max"] > 1000  # a long answer in a scroller
        page.mouse.move(start["x"], start["y"])
        for _ in range(40):
            page.mouse.wheel(0, 400)
        page.wait_for_function(f"() => {{ const s = ({SCROLLER})(); return s.top >= s.max - 1; }}",
                               timeout=30_000)  # the wheel scrolled the submission to its end
        for _ in range(10):  # and on, past its end: the page behind it must not scroll the bar away
            page.mouse.wheel(0, 400)
        page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
        assert _on_screen(page) == [], f"page scrolled by {page.evaluate(MAIN_SCROLL)} px"

        # Scroll the page itself until the first button would be 40 px above the window: the buttons are sticky.
        first_top = _rects(page)[DECISION_BUTTONS[0]]["top"]
        page.evaluate(f"() => {{ document.querySelector('[data-testid=stMain]').scrollTop += {first_top + 40}; }}")
        page.wait_for_function(f"() => ({MAIN_SCROLL})() > {first_top}", timeout=10_000)
        page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
        assert page.get_by_text("Submission 1", exact=True).first.bounding_box()["y"] < 0  # its head is gone
        assert _on_screen(page) == [], f"page scrolled by {page.evaluate(MAIN_SCROLL)} px"

        # The "1" key decides (no text box has the cursor), and the decision is stored.
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        page.keyboard.press("1")
        page.get_by_text("Saved: debate #").first.wait_for(timeout=60_000)
        settle(page)
        assert _decisions(request_server) == [(ANNOTATOR, "model_a")]
        assert page.locator(ERRORS).count() == 0
        after = calibrated_leaderboard(Study(Store(request_server.db), "synthetic"), judge=JUDGE, reference=REFERENCE)
        assert after.labels == before.labels + 1  # one more label of the anchored leaderboard

        # The Leaderboard anchored to those labels (a shared link) counts the new one at once.
        page.goto(f"{request_server.url}/leaderboard?study=synthetic&method=winrate&judge=local%3Acharlie"
                  "&anchor=1&reference=human%3A%2Cadjudicator%3A")
        page.get_by_role("heading", name="Leaderboard", level=1).wait_for(timeout=60_000)
        page.get_by_text(f"Anchored on {after.labels:,} human labels").first.wait_for(timeout=60_000)
        assert page.get_by_text(f"Anchored on {before.labels:,} human labels").count() == 0
        assert page.locator(ERRORS).count() == 0
    finally:
        context.close()
