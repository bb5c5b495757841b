"""The NLG assessment page in a real browser, on the bundled TopicalChat study (issue 10).

A fresh database seeds the sample and the bundled TopicalChat study (sample_data/topicalchat:
the USR ratings, the offline judge's comparisons and absolute scores); the page must open
on real numbers, draw its two figures and follow a change of attribute without an error.
"""

from __future__ import annotations

import pytest

from e2e_support import ERRORS, REPO, Server, full_screenshot, open_page, require_chromium, settle

BUNDLE = REPO / "sample_data" / "topicalchat"


@pytest.fixture(scope="module")
def first_run_server(tmp_path_factory):
    """The app on an empty database: it seeds sample_data/ and the TopicalChat bundle by itself."""
    require_chromium()
    if not (BUNDLE / "judgments.csv").is_file():
        pytest.skip("the bundled TopicalChat study (sample_data/topicalchat) is not in the repository")
    folder = tmp_path_factory.mktemp("e2e-nlg")
    running = Server(folder / "empty.sqlite", folder / "streamlit.log")
    yield running
    running.stop()


def _choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the selectbox labelled ``label`` (Streamlit's combobox) and wait for the rerun."""
    page.get_by_role("combobox", name=label).click()
    page.get_by_role("option", name=option, exact=True).click()
    settle(page)


def test_the_nlg_page_opens_on_the_bundled_study(chromium, first_run_server, screenshots):
    context = chromium.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    try:
        open_page(page, first_run_server, "nlg", "NLG assessment")
        # the sample study opens first (it has no human scores): the page says what to do
        page.get_by_text("This study has no human scores").wait_for(timeout=30_000)
        _choose(page, "Study", "topicalchat-usr")
        page.get_by_role("heading", name="Correlation with the human scores").wait_for(timeout=60_000)
        page.locator("[data-testid='stPlotlyChart']").nth(1).wait_for(timeout=120_000)  # the curves
        settle(page, pause_ms=1500)
        assert page.locator(ERRORS).count() == 0, page.locator(ERRORS).all_inner_texts()
        metrics = page.locator("[data-testid='stMetric']").all_inner_texts()
        assert any(m.startswith("Contexts") for m in metrics)
        assert int(next(m for m in metrics if m.startswith("Comparisons")).split("\n")[-1].replace(",", "")) >= 30
        assert page.get_by_text("comparative: PoE-Gaussian (debiased)").count() >= 1 or \
            "PoE-Gaussian (debiased)" in page.content()
        assert page.locator("[data-testid='stPlotlyChart']").count() == 2
        full_screenshot(page, screenshots / "nlg.png")

        _choose(page, "Attribute", "engagingness")
        page.get_by_role("heading", name="Correlation with the human scores").wait_for(timeout=60_000)
        page.locator("[data-testid='stPlotlyChart']").nth(1).wait_for(timeout=120_000)
        settle(page, pause_ms=1000)
        assert page.locator(ERRORS).count() == 0, page.locator(ERRORS).all_inner_texts()
        assert "engagingness" in page.get_by_role("combobox", name="Comparative judge (its verdicts' criterion)") \
            .input_value() or "engagingness" in page.content()
    finally:
        context.close()
