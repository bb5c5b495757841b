"""The Leaderboard and Bias pages on a study of thousands of contestants (issue 17, item 5).

Before: at 10,000 models both pages died with a MemoryError (models x models Hessians,
rank tables, heatmaps); at 3,000 they took minutes and gigabytes and drew charts of
3,000 rows and a 3,000 x 3,000 heatmap. Now every chart draws at most
``charts.MAX_ROWS`` models (the best-ranked first) and each page says so beside it;
heatmaps are computed for those models only. The two judges are contestants, so the
Bias page's self-enhancement heatmap (judges x contestants) is drawn too.
"""

from __future__ import annotations

import json

import pytest

from app_studies import app_test, open_page, problems
from peerboard_testing import arena_judgments
from peercore import charts
from peercore.store import Store

N_MODELS, N_BATTLES = 3000, 30_000
NAMES = [f"model-{k:04d}" for k in range(N_MODELS)]


@pytest.fixture
def many_models(db_file, monkeypatch):
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", "")
    store = Store(db_file)
    store.studies.create("many")
    store.verdicts.add("many", arena_judgments(N_MODELS, N_BATTLES, seed=5, judges=("judge-x", "judge-y"),
                                               per_question=10))
    store.judges.set("many", "judge-x", kind="llm", model_alias=str(NAMES[0]))
    store.judges.set("many", "judge-y", kind="llm", model_alias=str(NAMES[1]))
    store.close()
    at = app_test(timeout=600)
    at.session_state["study"] = "many"
    return at


def _texts(at, kind: str) -> list[str]:
    return [element.value for element in getattr(at, kind)]


def test_leaderboard_of_3000_contestants_draws_the_best_ranked_and_says_so(many_models):
    at = open_page(many_models, "leaderboard")
    assert problems(at) == []
    columns = {"model", "battles", "robust interval"}
    table = next(frame.value for frame in at.dataframe if columns <= set(frame.value.columns))
    assert len(table) == N_MODELS
    assert any("sandwich intervals were not computed for 3,000 models" in w for w in _texts(at, "warning"))
    assert any(f"The chart draws the first {charts.MAX_ROWS} of 3,000 contestants" in i for i in _texts(at, "info"))

    at.session_state["lb_tab"] = "Heatmaps"
    at.run()
    assert problems(at) == []
    assert any(f"3,000 contestants: the heatmaps show the {charts.MAX_ROWS} best-ranked" in i
               for i in _texts(at, "info"))
    heat = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    assert heat and all(len(fig["data"][0]["y"]) <= charts.MAX_ROWS for fig in heat)

    at.session_state["lb_tab"] = "Elo curves"
    at.run()
    assert problems(at) == []
    curves = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert 0 < len(curves["data"]) <= charts.MAX_LINES * 3  # the top contestants, per judge and pooled


def test_bias_page_of_3000_contestants_draws_the_judges_own_models_first_and_fits_the_bias_model(many_models):
    at = open_page(many_models, "bias")
    assert problems(at) == []
    assert any(f"The heatmap draws the first {charts.MAX_ROWS} of 3,000 contestants" in i for i in _texts(at, "info"))
    figures = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    heatmaps = [fig for fig in figures if fig["data"] and fig["data"][0].get("type") == "heatmap"]
    assert len(heatmaps) == 1 and len(heatmaps[0]["data"][0]["x"]) == charts.MAX_ROWS
    assert heatmaps[0]["data"][0]["x"][:2] == [str(NAMES[0]), str(NAMES[1])]  # the judges' own models, outlined
    # the judge-bias model (3,000 ratings, sparse) is fitted: its table, no "cannot be fitted" message
    assert not [i for i in _texts(at, "info") if "cannot be fitted" in i]
    assert any({"judge", "bias toward", "Elo points"} <= set(frame.value.columns) for frame in at.dataframe)
