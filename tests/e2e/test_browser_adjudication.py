"""Adjudication in a real browser at 1366x768 (issue 12): keys never fire in a text box, blind mode,
two annotators with an overlap of two see their agreement, the decision buttons are on screen."""

from __future__ import annotations

import re

import pytest

from e2e_support import ERRORS, full_screenshot, open_page, settle, sign_in
from peercore.store import Store

LAPTOP = {"width": 1366, "height": 768}
DECISION_BUTTONS = ("Submission 1 is better", "Submission 2 is better", "Tie", "Both bad")
HEAD = re.compile(r"Debate #(\d+)")


def head(page) -> int | None:
    """The debate at the head of the queue, None when none is shown.

    Read in one step in the page: counting the headings and then reading the first raced a
    rerun that removed it in between (the read then waited 30 s for a heading that had gone).
    """
    texts = page.locator("h3").evaluate_all("(headings) => headings.map((h) => h.textContent || '')")
    found = [int(match.group(1)) for match in map(HEAD.search, texts) if match]
    return found[0] if found else None


def wait_for_head(page, expected: int | None, timeout_ms: int = 60_000) -> None:
    waited = 0
    while head(page) != expected:
        if waited > timeout_ms:
            raise AssertionError(f"queue head is {head(page)}, expected {expected}")
        page.wait_for_timeout(200)
        waited += 200
    settle(page, pause_ms=200)


def stored(server, study: str = "synthetic") -> list[tuple]:
    store = Store(server.db)
    try:
        frame = store.debates.adjudications(study)
        return sorted(zip(frame["debate_id"].astype(int), frame["annotator"], frame["decision"], frame["note"]))
    finally:
        store.close()


@pytest.fixture
def clean(server):
    """Each test starts with no decision, no skip and no overlap on the synthetic study."""
    def reset():
        store = Store(server.db)
        try:
            for debate_id, annotator, *_ in stored(server):
                store.debates.undo_adjudication(debate_id, annotator)
            store.connect().execute("DELETE FROM adjudication_skips")
            store.connect().execute("DELETE FROM adjudication_leases")  # pages hold what they show (issue 13)
            store.studies.update_settings("synthetic", overlap=0, rubric="")
        finally:
            store.close()
    reset()
    yield server
    reset()


AGENT_TEXT = re.compile(r"first thinks|after reading the others")  # the synthetic agents' replies


def visible(page, pattern) -> int:
    """How many elements showing ``pattern`` are visible (collapsed expanders' content does not count)."""
    found = page.get_by_text(pattern)
    return sum(found.nth(k).is_visible() for k in range(found.count()))


def in_viewport(page, name: str) -> bool:
    box = page.get_by_role("button", name=name).first.bounding_box()
    size = page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= size["height"] \
        and box["x"] + box["width"] <= size["width"]


def test_keys_typed_in_the_note_and_the_name_are_text_not_decisions(chromium, clean, screenshots):
    context = chromium.new_context(viewport=LAPTOP)
    page = context.new_page()
    try:
        open_page(page, clean, "adjudication", "Adjudication")
        name = page.get_by_role("textbox", name="Annotator")
        name.click()
        page.keyboard.type("sub 1 2 0")  # 's', 'u', 'b' and the digits are all shortcuts outside a text box
        assert name.input_value() == "sub 1 2 0"
        page.keyboard.press("Enter")  # submits the name only
        page.locator("h3", has_text="Debate #").first.wait_for(timeout=60_000)
        settle(page)
        # The name is set in its own step (issue 21): the box gives way to "Adjudicating as NAME".
        assert page.get_by_text(re.compile(r"^Adjudicating as sub 1 2 0$")).count() == 1
        assert name.count() == 0 and head(page) == 1 and stored(clean) == []

        note = page.get_by_role("textbox", name="Note (optional)")
        note.click()
        page.keyboard.type("1 beats 2, 0 doubt; both sub-par? no: S U B")
        page.keyboard.press("Enter")  # commits the note, decides nothing
        settle(page)
        note = page.get_by_role("textbox", name="Note (optional)")
        assert note.input_value() == "1 beats 2, 0 doubt; both sub-par? no: S U B"
        assert head(page) == 1 and stored(clean) == []  # no key decided, skipped or undid anything
        assert page.locator(ERRORS).count() == 0
        full_screenshot(page, screenshots / "adjudication-note-typed.png")

        page.get_by_role("heading", name="Adjudication", level=1).click()  # leave the text box: keys work again
        page.keyboard.press("1")
        wait_for_head(page, 2)
        assert stored(clean) == [(1, "sub 1 2 0", "model_a", "1 beats 2, 0 doubt; both sub-par? no: S U B")]
        page.keyboard.press("B")
        wait_for_head(page, 3)
        assert stored(clean)[-1][:3] == (2, "sub 1 2 0", "both_bad")
    finally:
        context.close()


def test_blind_mode_hides_the_agents_until_the_decision(chromium, clean, screenshots):
    context = chromium.new_context(viewport=LAPTOP)
    page = context.new_page()
    try:
        open_page(page, clean, "adjudication", "Adjudication")
        sign_in(page, "blind-bo")
        assert head(page) == 1
        assert visible(page, AGENT_TEXT) == 0  # no verdict badge, no reason, no transcript
        show = page.get_by_role("button", name="Show the agents' verdicts now")
        assert show.is_visible()
        page.screenshot(path=str(screenshots / "adjudication-blind-1366.png"))
        page.get_by_role("heading", name="Adjudication", level=1).click()
        page.keyboard.press("2")
        wait_for_head(page, 2)
        page.screenshot(path=str(screenshots / "adjudication-after-decision-1366.png"), full_page=True)
        assert visible(page, AGENT_TEXT) == 0  # debate 2's agents are hidden in turn
        after = page.get_by_text(re.compile(r"which you just decided"))
        assert after.count() == 1
        after.first.click()  # open it: debate 1's agents are readable now that it is decided
        page.wait_for_timeout(500)
        assert visible(page, AGENT_TEXT) == 3  # its three agents' final reasons
        page.get_by_role("button", name="Show the agents' verdicts now").click()  # asked to see them before deciding
        settle(page)
        assert page.get_by_role("button", name="Show the agents' verdicts now").count() == 0
        assert visible(page, AGENT_TEXT) >= 3
        settle(page)
        assert page.locator(ERRORS).count() == 0
    finally:
        context.close()


def test_two_annotators_with_an_overlap_of_two_see_their_agreement(chromium, clean, screenshots):
    store = Store(clean.db)
    store.studies.update_settings("synthetic", overlap=2, rubric="Correct beats fluent. Both bad: neither answers.")
    store.close()
    plan = {"ovl-ann": ["1", "2", "0"], "ovl-ben": ["1", "0", "0"]}
    for annotator, keys in plan.items():
        context = chromium.new_context(viewport=LAPTOP)
        page = context.new_page()
        try:
            open_page(page, clean, "adjudication", "Adjudication")
            sign_in(page, annotator)
            assert page.get_by_text("Correct beats fluent. Both bad: neither answers.").is_visible()  # the rubric
            for expected, key in zip((1, 2, 3), keys):
                wait_for_head(page, expected)
                page.get_by_role("heading", name="Adjudication", level=1).click()
                page.keyboard.press(key)
            wait_for_head(page, 4)
        finally:
            context.close()
    context = chromium.new_context(viewport=LAPTOP)
    page = context.new_page()
    try:
        open_page(page, clean, "adjudication", "Adjudication")
        box = page.get_by_role("textbox", name="Annotator")  # not sign_in(): no debate heading comes
        box.fill("ovl-carl")
        box.press("Enter")
        # Debates 1-3 have their two annotators; 4 was on ovl-ann's and ovl-ben's screens when they left, so
        # their leases hold it (issue 13) until they run out: carl is told, not offered it.
        waiting = page.get_by_text(re.compile(r"The 1 debate\(s\) that still need you are being decided by others"))
        waiting.first.wait_for(timeout=60_000)
        settle(page)
        assert head(page) is None
        assert page.get_by_text(re.compile(r"1 still need you · 3 complete · each debate needs 2 annotators")).count() == 1
        alpha = page.get_by_text(re.compile(r"Krippendorff's alpha over all 2 annotators"))
        alpha.first.wait_for(timeout=30_000)
        assert "0.545" in alpha.first.inner_text() and "on 3 debate(s)" in alpha.first.inner_text()
        full_screenshot(page, screenshots / "adjudication-overlap-agreement.png")
        assert page.locator(ERRORS).count() == 0
    finally:
        context.close()


@pytest.mark.parametrize("viewport", [LAPTOP, {"width": 1920, "height": 1080}], ids=["1366x768", "1920x1080"])
def test_decision_buttons_are_on_screen_for_every_debate_of_the_bundled_sample(chromium, sample_server, screenshots,
                                                                              viewport):
    """Every item of the sample's queue (so its median-length one too) without scrolling."""
    context = chromium.new_context(viewport=viewport)
    page = context.new_page()
    try:
        open_page(page, sample_server, "adjudication", "Adjudication")
        page.locator("[data-testid=stSidebar] [data-testid=stSelectbox]").click()
        page.get_by_role("option", name="sample", exact=True).click()
        settle(page)
        sign_in(page, f"viewport-{viewport['width']}")
        seen = []
        while head(page) is not None and head(page) not in seen:
            seen.append(head(page))
            off = [name for name in DECISION_BUTTONS if not in_viewport(page, name)]
            assert off == [], f"debate #{seen[-1]} at {viewport}: {off} below the fold"
            if len(seen) == 1:
                page.screenshot(path=str(screenshots / f"adjudication-sample-{viewport['width']}.png"))
            page.get_by_role("heading", name="Adjudication", level=1).click()
            page.keyboard.press("S")  # skip to the next debate
            for _ in range(150):
                page.wait_for_timeout(200)
                if head(page) != seen[-1]:
                    break
            settle(page, pause_ms=200)
        assert len(seen) == 9  # the sample's nine unresolved debates
        assert page.locator(ERRORS).count() == 0
    finally:
        context.close()
