"""Charts of thousands of models draw the first ``MAX_ROWS`` (or ``MAX_LINES``) and say so (issue 17, item 5)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from peercore import charts

MODELS = [f"model-{k:04d}" for k in range(1200)]


def _table(n: int) -> pd.DataFrame:
    score = np.linspace(1500, 500, n)
    return pd.DataFrame({"model": MODELS[:n], "score": score, "ci_low": score - 20, "ci_high": score + 20,
                         "rank": np.arange(1, n + 1), "rank_without": np.arange(1, n + 1)[::-1]})


def test_a_leaderboard_of_1200_models_draws_the_first_50_and_says_so():
    fig = charts.leaderboard_chart(_table(1200), score_label="Elo", title="Ratings")
    assert len(fig.data[0].y) == charts.MAX_ROWS and fig.data[0].y[-1] == MODELS[0]  # best at the top
    assert fig.layout.title.text == "Ratings (the first 50 of 1,200 models)"
    assert charts.cut_note(1200, what="contestants") == "the first 50 of 1,200 contestants"
    assert charts.cut_note(charts.MAX_ROWS) is None
    small = charts.leaderboard_chart(_table(12), title="Ratings")
    assert len(small.data[0].y) == 12 and small.layout.title.text == "Ratings"


def test_rank_changes_and_heatmaps_of_many_models_are_cut_too():
    assert len(charts.rank_change_chart(_table(300)).data) == charts.MAX_ROWS + 2  # a line per model, two marker sets
    matrix = pd.DataFrame(np.random.default_rng(0).random((300, 300)), index=MODELS[:300], columns=MODELS[:300])
    fig = charts.win_rate_heatmap(matrix, title="judge")
    assert np.asarray(fig.data[0].z).shape == (charts.MAX_ROWS, charts.MAX_ROWS)
    assert fig.layout.title.text == "judge (the first 50 x 50 of 300 x 300)"


def test_self_enhancement_of_many_contestants_keeps_the_judges_own_models():
    matrix = pd.DataFrame(0.5, index=["judge-a", "judge-b"], columns=MODELS[:400])
    fig = charts.self_enhancement_heatmap(matrix, {"judge-a": MODELS[399], "judge-b": MODELS[250]})
    assert list(fig.data[0].x[:2]) == [MODELS[399], MODELS[250]] and len(fig.data[0].x) == charts.MAX_ROWS
    assert len(fig.layout.shapes) == 2  # both own cells outlined


def test_elo_curves_of_more_than_20_contestants_draw_20():
    curves = pd.DataFrame([("j", k, m, 1000.0 + k) for m in MODELS[:30] for k in range(3)],
                          columns=["judge", "battles", "model", "elo"])
    fig = charts.elo_curves_chart(curves, models=MODELS[:30])
    assert len(fig.data) == charts.MAX_LINES and "the first 20 of 30 contestants" in fig.layout.title.text
