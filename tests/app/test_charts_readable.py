"""Charts and tables you can read: no squashed chart, no toolbar over a legend, numbers formatted alike.

Figures (peercore.charts) and the Leaderboard / Bias pages' new controls: the Elo
curves' contestant picker (top 5 of 15 by default), the category filter, the what-if
chart when every rank ties, the shared number formats (win rate 3 decimals, ratings 1),
LMArena's and AlpacaEval's columns (votes, preliminary, average length).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from app_studies import app_test, open_page, problems
from peercore import charts, reports
from peercore.store import Store

N_MODELS = 15


def _arena(store: Store, name: str = "arena") -> dict:
    """15 contestants with long names, two categories, one judge; answers of growing length."""
    rng = np.random.default_rng(7)
    models = [f"a-rather-long-model-name-{k:02d}-instruct" for k in range(N_MODELS)]
    strength = np.linspace(-1.5, 1.5, N_MODELS)
    questions = [f"q{k:02d}" for k in range(30)]
    store.studies.create(name)
    store.questions.add(name, pd.DataFrame({"question_id": questions, "text": [f"Question {q}?" for q in questions],
                                            "category": ["coding" if k % 2 else "writing" for k in range(30)]}))
    store.questions.add_answers(name, pd.DataFrame([{"question_id": q, "model": m, "answer": "x" * (10 + 5 * k)}
                                                    for q in questions for k, m in enumerate(models)]))
    rows = []
    for q in questions:
        for _ in range(40):
            i, j = rng.choice(N_MODELS, size=2, replace=False)
            p = 1 / (1 + np.exp(strength[j] - strength[i]))
            rows.append({"question_id": q, "model_a": models[i], "model_b": models[j], "judge": "judge-x",
                         "winner": "model_a" if rng.random() < p else "model_b"})
    store.verdicts.add(name, pd.DataFrame(rows))
    return {"models": models, "best": models[::-1][:5]}


@pytest.fixture
def arena(db_file):
    store = Store(db_file)
    info = _arena(store)
    store.close()
    return info


def _column_formats(element) -> dict:
    """The column formats an st.dataframe element was sent with (from its proto)."""
    return {name: spec.get("type_config", {}).get("format") for name, spec in json.loads(element.proto.columns).items()}


# ------------------------------------------------------------------------- figures


def test_a_legend_sits_under_the_plot_where_the_toolbar_never_is():
    fig = charts.elo_curves_chart(pd.DataFrame({"judge": ["j"] * 4, "battles": [1, 2, 1, 2], "model": list("aabb"),
                                                "elo": [1000, 1010, 1000, 990]}))
    assert fig.layout.legend.yref == "container" and fig.layout.legend.y == 0
    assert fig.layout.legend.yanchor == "bottom"  # plotly's mode bar is at the top right


def test_long_category_names_are_shortened_on_a_horizontal_axis_and_whole_in_the_hover():
    names = ["a-rather-long-model-name-01-instruct", "a-rather-long-model-name-02-instruct", "short"]
    matrix = pd.DataFrame(np.full((3, 3), 0.5), index=names, columns=names)
    (heat,) = charts.win_rate_heatmap(matrix).data
    assert all(len(x) <= charts.X_LABEL_CHARS for x in heat.x) and len(set(heat.x)) == 3  # distinct ticks
    assert heat.x[2] == "short"
    assert heat.customdata[0][1] == f"{names[0]} vs {names[1]}"


@pytest.mark.parametrize("build", [
    lambda: charts.weight_bars(pd.Series({"one-very-long-reviewer-name-indeed": 0.6, "b": 0.4})),
    lambda: charts.agreement_chart(pd.DataFrame({"judge": ["one-very-long-judge-name-indeed", "b"],
                                                 "accuracy": [0.8, 0.6]}), metrics={"accuracy": "accuracy"}),
])
def test_judge_names_go_on_the_vertical_axis_not_rotated_under_the_bars(build):
    fig = build()
    assert all(t.orientation == "h" for t in fig.data)
    assert fig.layout.height >= charts.MIN_HEIGHT


def test_no_chart_is_drawn_lower_than_the_minimum():
    small = [charts.weight_bars(pd.Series({"a": 1.0})),
             charts.leaderboard_chart(pd.DataFrame({"model": ["a"], "score": [1.0], "ci_low": [0.5], "ci_high": [1.5]})),
             charts.position_bias_chart(pd.DataFrame({"p_first": [0.5], "ci_low": [0.4], "ci_high": [0.6]},
                                                     index=pd.Index(["j"], name="judge")))]
    assert all(fig.layout.height >= charts.MIN_HEIGHT >= 200 for fig in small)


def test_fifteen_elo_curves_have_fifteen_colours_and_a_selection_draws_only_it():
    curves = pd.DataFrame([{"judge": "j", "battles": b, "model": f"m{k:02d}", "elo": 1000 + k * b}
                           for k in range(N_MODELS) for b in (1, 2)])
    fig = charts.elo_curves_chart(curves)
    assert len({t.line.color for t in fig.data}) == N_MODELS
    picked = charts.elo_curves_chart(curves, models=["m14", "m03"])
    assert [t.name for t in picked.data] == ["m14 (j)", "m03 (j)"]
    assert fig.layout.height > picked.layout.height  # the legend's rows are added below the plot


def test_what_if_draws_the_scores_when_every_rank_ties():
    comparison = pd.DataFrame({"model": ["a", "b", "c"], "rank": [1, 1, 1], "rank_without": [1, 1, 1],
                               "rank_change": [0, 0, 0], "score": [0.6, 0.5, 0.4], "score_without": [0.55, 0.5, 0.45]})
    fig = charts.rank_change_chart(comparison)
    markers = {t.name: list(t.x) for t in fig.data if t.mode == "markers"}
    assert markers == {"all reviewers": [0.6, 0.5, 0.4], "without": [0.55, 0.5, 0.45]}
    assert fig.layout.xaxis.title.text == "score"
    ranked = charts.rank_change_chart(comparison.assign(rank=[1, 2, 3]))
    assert {t.name: list(t.x) for t in ranked.data if t.mode == "markers"}["all reviewers"] == [1, 2, 3]


# ------------------------------------------------------------------------- numbers


def test_one_number_format_rule():
    frame = pd.DataFrame({"win rate": [0.5], "Bradley-Terry (Elo scale)": [1000.0], "Elo points": [3.0],
                          "P(first)": [0.5], "win rate %": [50.0], "battles": [3], "model": ["a"]})
    assert reports.number_formats(frame) == {"win rate": "%.3f", "Bradley-Terry (Elo scale)": "%.1f",
                                             "Elo points": "%.1f", "P(first)": "%.3f", "win rate %": "%.2f"}
    assert reports.score_digits("win rate") == 3 and reports.score_digits("Elo") == 1


# --------------------------------------------------------------------------- pages


def test_leaderboard_shows_votes_preliminary_and_average_length_with_formatted_numbers(arena):
    at = open_page(app_test(), "leaderboard")
    at.button_group(key="lb_quick").set_value("All judges").run()
    at.selectbox(key="lb_method").set_value("Win rate").run()
    assert problems(at) == []
    element = next(e for e in at.dataframe if {"rank", "model", "battles"} <= set(e.value.columns))
    table = element.value
    assert {"preliminary", "avg length"} <= set(table.columns)
    assert table.set_index("model").loc[arena["models"][3], "avg length"] == 25  # "x" * (10 + 5 * 3)
    config = json.loads(element.proto.columns)
    assert config["battles"]["label"] == "votes"  # LMArena's word on screen, the data keeps its name
    score = table.columns[2]
    assert _column_formats(element)[score] == "%.3f"  # win rate, the default method: 3 decimals
    at.selectbox(key="lb_method").set_value("Bradley-Terry").run()
    element = next(e for e in at.dataframe if {"rank", "model", "battles"} <= set(e.value.columns))
    assert _column_formats(element)[element.value.columns[2]] == "%.1f"  # a rating: 1 decimal


def test_the_category_filter_ranks_one_category(arena):
    at = open_page(app_test(), "leaderboard")
    at.button_group(key="lb_quick").set_value("All judges").run()
    assert at.selectbox(key="lb_category").options == [reports.ALL_CATEGORIES, "coding", "writing"]
    every = next(m.value for m in at.metric if m.label == "Judgments counted")
    at.selectbox(key="lb_category").set_value("coding").run()
    assert problems(at) == []
    coding = next(m.value for m in at.metric if m.label == "Judgments counted")
    assert 0 < int(coding.replace(",", "")) < int(every.replace(",", ""))


def test_elo_curves_default_to_the_top_five_of_fifteen(arena):
    at = open_page(app_test(), "leaderboard")
    at.button_group(key="lb_quick").set_value("All judges").run()
    at.session_state["lb_tab"] = "Elo curves"
    at.run()
    assert problems(at) == []
    picked = at.multiselect(key="lb_curve_models").value
    assert len(picked) == 5 and len(at.multiselect(key="lb_curve_models").options) == N_MODELS
    assert set(picked) <= set(arena["models"][8:])  # the strongest ones (the table's top)
    at.multiselect(key="lb_curve_models").set_value(picked[:2]).run()
    assert problems(at) == []


def test_bias_tables_share_the_number_formats(synthetic):
    at = open_page(app_test(), "bias")
    assert problems(at) == []
    for element in at.dataframe:
        formats = {k: v for k, v in _column_formats(element).items() if v}
        assert set(formats.values()) <= {"%.1f", "%.2f", "%.3f", "%d"}, formats
    shares = next(e for e in at.dataframe if "P(first)" in e.value.columns)
    # drawn by the rule's cell texts (peercore.ui.tables.show_cells): 3 decimals each
    drawn = pa.ipc.open_stream(shares.proto.arrow_data.styler.display_values).read_all().to_pandas()
    for column in ("P(first)", "ties"):
        texts = [t for t in drawn.iloc[:, list(shares.value.columns).index(column) - len(shares.value.columns)]]
        assert texts and all(re.fullmatch(r"\d\.\d{3}", t) for t in texts), (column, texts)


def test_a_table_wider_than_its_place_gets_narrower_columns():
    from peercore.ui.tables import fitted_widths

    narrow = pd.DataFrame({"judge": ["a", "b"], "score": [0.5, 0.25]})
    assert fitted_widths(narrow, 880) == {}  # fits: Streamlit sizes the columns itself
    wide = pd.DataFrame({f"column number {k}": ["some rather long text in every cell " * 2] for k in range(8)})
    widths = fitted_widths(wide, 880)
    assert set(widths) == set(wide.columns) and sum(widths.values()) <= 880
    mixed = wide.assign(n=[3])
    widths = fitted_widths(mixed, 880)
    assert widths["n"] < widths["column number 0"] and sum(widths.values()) <= 880  # short columns keep their width
