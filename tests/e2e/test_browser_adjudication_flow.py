"""The adjudication flow at 1366x768 in a real browser (issue 21): the name box lets go on Enter,
both submissions and the decision bar are on screen together, the sample's guidelines are shown."""

from __future__ import annotations

import re

import pytest

from e2e_support import ERRORS, open_page, settle, sign_in
from peercore.store import Store

LAPTOP = {"width": 1366, "height": 768}
DECISION_BUTTONS = ("Submission 1 is better", "Submission 2 is better", "Tie", "Both bad")
HEAD = re.compile(r"Debate #(\d+)")


def head(page) -> int | None:
    """The debate shown (read in one step in the page), None when none is."""
    texts = page.locator("h3").evaluate_all("(headings) => headings.map((h) => h.textContent || '')")
    found = [int(match.group(1)) for match in map(HEAD.search, texts) if match]
    return found[0] if found else None


def wait_for(page, condition, timeout_ms: int = 20_000) -> bool:
    """Poll ``condition()`` (a read of the page) until it holds or ``timeout_ms`` passes; whether it held."""
    waited = 0
    while not condition():
        if waited >= timeout_ms:
            return False
        page.wait_for_timeout(200)
        waited += 200
    settle(page, pause_ms=200)
    return True


def decisions(server, study: str = "synthetic") -> list[tuple]:
    store = Store(server.db)
    try:
        frame = store.debates.adjudications(study)
        return sorted(zip(frame["debate_id"].astype(int), frame["annotator"], frame["decision"]))
    finally:
        store.close()


@pytest.fixture
def clean(server):
    """No decision, skip or lease on the synthetic study before and after the test."""
    def reset():
        store = Store(server.db)
        try:
            for debate_id, annotator, _ in decisions(server):
                store.debates.undo_adjudication(debate_id, annotator)
            store.connect().execute("DELETE FROM adjudication_skips")
            store.connect().execute("DELETE FROM adjudication_leases")
        finally:
            store.close()
    reset()
    yield server
    reset()


def test_enter_in_the_name_box_then_1_decides_under_the_typed_name(chromium, clean, screenshots):
    # Before: the cursor stayed in the name box after Enter, and "1" renamed the annotator "ux-bob1".
    context = chromium.new_context(viewport=LAPTOP)
    page = context.new_page()
    try:
        open_page(page, clean, "adjudication", "Adjudication")
        box = page.get_by_role("textbox", name="Annotator")
        box.click()
        page.keyboard.type("ux-bob")
        page.keyboard.press("Enter")
        page.locator("h3", has_text="Debate #").first.wait_for(timeout=60_000)
        settle(page)
        assert head(page) == 1
        focused = page.evaluate("() => document.activeElement ? document.activeElement.tagName : ''")
        assert focused not in ("INPUT", "TEXTAREA"), f"the cursor is still in a text box ({focused})"
        page.keyboard.press("1")
        decided = wait_for(page, lambda: decisions(clean) != [] and head(page) == 2)
        page.screenshot(path=str(screenshots / "adjudication-flow-after-enter-1.png"))
        assert decided, f"pressing 1 decided nothing; stored {decisions(clean)}"
        assert decisions(clean) == [(1, "ux-bob", "model_a")]
        assert page.get_by_text(re.compile(r"^Adjudicating as ux-bob$")).count() == 1  # the name is unchanged
        assert page.get_by_role("textbox", name="Annotator").count() == 0
        assert page.locator(ERRORS).count() == 0
    finally:
        context.close()


def test_both_submissions_the_decision_bar_and_the_guidelines_of_the_sample_at_1366x768(chromium, sample_server,
                                                                                     screenshots):
    context = chromium.new_context(viewport=LAPTOP)
    page = context.new_page()
    try:
        open_page(page, sample_server, "adjudication", "Adjudication")
        page.locator("[data-testid=stSidebar] [data-testid=stSelectbox]").click()
        page.get_by_role("option", name="sample", exact=True).click()
        settle(page)
        sign_in(page, "viewport-1366")
        page.screenshot(path=str(screenshots / "adjudication-flow-1366x768.png"))
        height = LAPTOP["height"]

        def box(locator) -> dict:
            found = locator.first.bounding_box()
            assert found is not None, f"{locator} is not rendered"
            return found

        tops = {}
        for label in ("Submission 1", "Submission 2"):
            label_box = box(page.get_by_text(label, exact=True))
            column = page.locator("[data-testid=stColumn]").filter(has=page.get_by_text(label, exact=True)).last
            body = box(column.locator("[data-testid=stText]"))  # the submission's text, in its scroller
            tops[label] = label_box["y"]
            assert 0 <= label_box["y"] and body["y"] + 120 <= height, (
                f"{label}: its heading at y={label_box['y']:.0f}, its body at y={body['y']:.0f}; "
                f"less than 120 px of it above the fold ({height} px)")
        assert abs(tops["Submission 1"] - tops["Submission 2"]) < 4  # side by side
        one, two = (box(page.get_by_text(label, exact=True)) for label in ("Submission 1", "Submission 2"))
        assert two["x"] > one["x"] + one["width"]
        for name in DECISION_BUTTONS:
            button = box(page.get_by_role("button", name=name))
            assert 0 <= button["y"] and button["y"] + button["height"] <= height, \
                f"{name!r} at y={button['y']:.0f}..{button['y'] + button['height']:.0f}, below the fold ({height} px)"
            assert button["x"] + button["width"] <= LAPTOP["width"]

        guidelines = Store(sample_server.db).studies.settings("sample")["rubric"]
        assert guidelines.startswith("Adjudication guidelines for the sample study")
        first_line = guidelines.splitlines()[0]
        assert page.get_by_text(first_line).count() >= 1  # the sample's guidelines are on the page
        assert page.locator(ERRORS).count() == 0
    finally:
        context.close()
