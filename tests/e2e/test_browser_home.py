"""Home in a real browser on a first run: the gallery of bundled studies, and the PRD study's leaderboard one click away.

An empty database, no key, no network (the ``shared_sample_server`` of conftest.py, which no test
changes): the app seeds
every bundled study, opens on Home at 1366x768, and the PRD Vicuna80 card's button opens the
Leaderboard on that study with Peer Rank weights (PRD Table 2: gpt4 0.488, claude 0.377,
vicuna-13b 0.082, gpt35 0.053, bard 0.000) and its five models.
"""

from __future__ import annotations

from e2e_support import ERRORS, grid_rows, open_page, settle

PRD_COUNTS = "80 questions · 5 models · 9,760 judgments · 1,760 human votes"
PRD_WEIGHTS = "gpt4 0.488, claude 0.377, vicuna-13b 0.082, gpt35 0.053, bard 0.000"
MODELS = ["gpt4", "claude", "vicuna-13b", "gpt35", "bard"]


def test_first_run_home_shows_the_gallery_and_opens_the_prd_leaderboard(chromium, shared_sample_server, screenshots):
    sample_server = shared_sample_server
    context = chromium.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    try:
        open_page(page, sample_server, "", "PeerBoard")
        assert page.locator(ERRORS).count() == 0
        page.get_by_text(PRD_COUNTS, exact=True).wait_for(timeout=30_000)
        for name in ("sample", "prd-vicuna80", "topicalchat-usr"):
            assert page.get_by_text(name, exact=True).count() >= 1, name
        assert page.get_by_role("link", name="Import your data").count() == 1
        assert page.get_by_role("link", name="Launch a review").count() == 1
        assert page.get_by_role("link", name="Adjudicate: 9 debate(s) waiting in sample").count() == 1
        button = page.locator(".st-key-home_open--prd-vicuna80 button").first  # the PRD card's (key home_open::prd-vicuna80)
        assert button.inner_text().strip() == "Open leaderboard"
        box = button.bounding_box()
        assert box is not None and box["y"] + box["height"] <= 768, "the PRD card's button is below the fold"
        page.screenshot(path=str(screenshots / "home-first-run.png"))

        button.click()
        page.get_by_role("heading", name="Leaderboard", level=1).wait_for(timeout=60_000)
        settle(page)
        page.get_by_text(PRD_WEIGHTS).first.wait_for(timeout=60_000)
        assert page.locator(ERRORS).count() == 0
        rows = grid_rows(page)
        shown = [cell for row in rows for cell in row if cell in MODELS]
        assert shown == MODELS, rows  # five models, in PRD's weighted order
        study = page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").first.evaluate(
            "e => [e.textContent, ...[...e.querySelectorAll('input')].map(i => i.value)].join(' ')")
        assert "prd-vicuna80" in study, study  # the open study
        page.screenshot(path=str(screenshots / "home-opened-prd-leaderboard.png"))
    finally:
        context.close()
