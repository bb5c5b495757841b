"""peercore.charts: each builder draws the table it is given, and refuses a table it cannot draw."""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
import pytest

from peercore import charts
from peercore.bias import position_bias, swap_consistency
from peercore.judgments import judgments_from_frame
from peercore.app import Study, leaderboard
from peercore.ranking import pairwise_win_fraction


@pytest.fixture
def judgments() -> pd.DataFrame:
    rows = []
    for q in range(6):
        for a, b in (("x", "y"), ("y", "x"), ("x", "z"), ("z", "x"), ("y", "z"), ("z", "y")):
            for judge in ("j1", "j2"):
                winner = "model_a" if judge == "j1" else ("model_a" if a < b else "model_b")
                rows.append({"question_id": str(q), "model_a": a, "model_b": b, "judge": judge, "winner": winner})
    return judgments_from_frame(pd.DataFrame(rows))


def test_leaderboard_chart_draws_each_model_with_its_interval(judgments):
    table = leaderboard(Study.from_frame(judgments), method="winrate", bootstrap=50).table
    fig = charts.leaderboard_chart(table, score_label="win rate")
    (trace,) = fig.data
    assert list(trace.y) == list(table["model"])[::-1]  # best at the top
    np.testing.assert_allclose(trace.x, table["score"].to_numpy()[::-1])
    np.testing.assert_allclose(np.asarray(trace.error_x.array), (table["ci_high"] - table["score"]).to_numpy()[::-1])
    assert fig.layout.xaxis.title.text == "win rate"


def test_leaderboard_chart_without_intervals_has_no_error_bars(judgments):
    table = leaderboard(Study.from_frame(judgments), method="bt", bootstrap=0).table
    assert charts.leaderboard_chart(table).data[0].error_x.array is None


def test_missing_columns_are_named():
    with pytest.raises(ValueError, match=r"missing column\(s\) \['ci_low', 'ci_high'\]"):
        charts.leaderboard_chart(pd.DataFrame({"model": ["a"], "score": [1.0]}))
    with pytest.raises(ValueError, match="must be a pandas DataFrame"):
        charts.elo_curves_chart([1, 2])


@pytest.mark.parametrize("build", [
    lambda: charts.leaderboard_chart(pd.DataFrame(columns=["model", "score", "ci_low", "ci_high"])),
    lambda: charts.elo_curves_chart(pd.DataFrame(columns=["judge", "battles", "model", "elo"])),
    lambda: charts.win_rate_heatmap(pd.DataFrame()),
    lambda: charts.weight_bars(pd.Series(dtype=float)),
    lambda: charts.efficiency_chart(pd.DataFrame(columns=["strategy", "method", "k", "median", "low", "high"])),
    lambda: charts.cost_agreement_chart(pd.DataFrame({"judge": ["a"], "cost": [np.nan], "agreement": [0.5]})),
])
def test_empty_input_says_there_is_nothing_to_show(build):
    fig = build()
    assert len(fig.data) == 0
    assert fig.layout.annotations and fig.layout.annotations[0].text


def test_win_rate_heatmap_shows_the_matrix(judgments):
    matrix = pairwise_win_fraction(judgments[judgments["judge"] == "j2"])
    fig = charts.win_rate_heatmap(matrix, title="j2")
    (heat,) = fig.data
    np.testing.assert_array_equal(np.asarray(heat.z, dtype=float), matrix.to_numpy())
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    assert list(heat.x) == list(matrix.columns) and list(heat.y) == list(matrix.index)
    assert heat.text[0][0] == ""  # the diagonal (NaN) is left blank
    assert heat.text[0][1] == f"{matrix.iloc[0, 1]:.2f}"


def test_count_heatmap_scales_to_the_largest_count():
    counts = pd.DataFrame([[0, 4], [4, 0]], index=["a", "b"], columns=["a", "b"])
    (heat,) = charts.count_heatmap(counts).data
    assert heat.zmax == 4.0
    assert np.isnan(heat.z[0][0])


def test_elo_curves_one_line_per_model_and_judge():
    curves = pd.DataFrame({
        "judge": ["j1"] * 4 + ["j2"] * 4, "battles": [1, 2, 1, 2] * 2, "model": ["a", "a", "b", "b"] * 2,
        "elo": [1010, 1020, 990, 980, 1005, 1001, 995, 999],
    })
    fig = charts.elo_curves_chart(curves)
    assert len(fig.data) == 4
    dashes = {t.legendgroup: t.line.dash for t in fig.data}
    assert dashes["j1"] != dashes["j2"]
    first = next(t for t in fig.data if t.name == "a (j1)")
    assert list(first.y) == [1010, 1020]


def test_weight_bars_sorted_and_history_lines():
    weights = pd.Series({"a": 0.2, "b": 0.5, "c": 0.3})
    (bars,) = charts.weight_bars(weights).data
    assert list(bars.y) == ["b", "c", "a"] and bars.orientation == "h"  # horizontal: long names stay level
    history = pd.DataFrame({"a": [1 / 3, 0.2], "b": [1 / 3, 0.5]})
    fig = charts.weight_history_chart(history)
    assert [t.name for t in fig.data] == ["a", "b"]
    assert list(fig.data[1].y) == [1 / 3, 0.5]


def test_rank_change_chart_marks_both_ranks():
    comparison = pd.DataFrame({"model": ["a", "b"], "rank": [1, 2], "rank_without": [2, 1]})
    fig = charts.rank_change_chart(comparison)
    markers = {t.name: list(t.x) for t in fig.data if t.mode == "markers"}
    assert markers == {"all reviewers": [1, 2], "without": [2, 1]}


def test_position_bias_chart_has_the_half_line_and_groups(judgments):
    frame = position_bias(judgments)
    fig = charts.position_bias_chart(frame)
    assert [s.x0 for s in fig.layout.shapes] == [0.5]
    (bars,) = fig.data
    np.testing.assert_allclose(bars.x, frame["p_first"].to_numpy())
    stacked = pd.concat([frame.assign(stage="before"), frame.assign(stage="after")])
    assert [t.name for t in charts.position_bias_chart(stacked, group="stage").data] == ["before", "after"]


def test_swap_consistency_chart_stacks_three_shares(judgments):
    frame = swap_consistency(judgments)
    fig = charts.swap_consistency_chart(frame)
    assert [t.name for t in fig.data] == ["consistent", "favours first", "favours second"]
    total = sum(np.asarray(t.x, dtype=float) for t in fig.data)
    np.testing.assert_allclose(total, 1.0)


def test_self_enhancement_outlines_own_cells():
    matrix = pd.DataFrame([[0.7, 0.3], [0.4, 0.6]], index=pd.Index(["ja", "jb"], name="judge"),
                          columns=pd.Index(["a", "b"], name="model"))
    fig = charts.self_enhancement_heatmap(matrix, {"ja": "a", "jb": "b", "ghost": "a"})
    assert [(s.x0, s.y0) for s in fig.layout.shapes] == [(-0.5, -0.5), (0.5, 0.5)]


def test_agreement_chart_one_bar_group_per_metric():
    table = pd.DataFrame({"accuracy": [0.8, 0.6], "kappa": [0.5, -0.1]}, index=pd.Index(["a", "b"], name="judge"))
    fig = charts.agreement_chart(table, metrics={"accuracy": "accuracy", "kappa": "kappa"})
    assert [t.name for t in fig.data] == ["accuracy", "kappa"]
    assert fig.layout.xaxis.range[0] == pytest.approx(-0.1)


def test_cost_agreement_chart_skips_judges_without_cost():
    frame = pd.DataFrame({"judge": ["a", "b"], "cost": [0.5, np.nan], "agreement": [0.8, 0.9]})
    (points,) = charts.cost_agreement_chart(frame).data
    assert list(points.text) == ["a"]


def test_efficiency_chart_band_and_median_per_method_and_strategy():
    curves = pd.DataFrame({
        "strategy": ["random"] * 2 + ["greedy"] * 2, "method": ["BT"] * 4, "k": [1, 2, 1, 2],
        "median": [0.3, 0.6, 0.4, 0.7], "low": [0.2, 0.5, 0.3, 0.6], "high": [0.4, 0.7, 0.5, 0.8],
    })
    fig = charts.efficiency_chart(curves)
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [t.name for t in lines] == ["BT (random)", "BT (greedy)"]
    assert lines[0].line.dash != lines[1].line.dash
    band = [t for t in fig.data if t.fill == "toself"][0]
    assert list(band.y) == [0.4, 0.7, 0.5, 0.2]


def test_efficiency_chart_ticks_comparisons_at_whole_numbers_only():
    """The x axis counts comparisons per question (PoE paper, Fig. 1): AlpacaEval's two sizes were
    ticked 1, 1.5, 2 by Plotly's automatic ticks; each size gets one tick, a long axis whole numbers."""
    def curves(ks):
        return pd.DataFrame({"strategy": "random", "method": "BT", "k": ks, "median": 0.5, "low": 0.4, "high": 0.6})

    axis = charts.efficiency_chart(curves([1, 2])).layout.xaxis
    assert list(axis.tickvals) == [1, 2] and list(axis.ticktext) == ["1", "2"]
    axis = charts.efficiency_chart(curves(list(range(2, 2002, 100)))).layout.xaxis
    assert axis.tickvals is None and axis.tickformat == ",d"


def test_opinion_chart_stacks_held_and_altered():
    counts = pd.DataFrame({"altered": [1, 0], "held": [2, 3]}, index=pd.Index(["s1", "s2"], name="speaker"))
    fig = charts.opinion_chart(counts)
    assert {t.name: list(t.x) for t in fig.data} == {"held": [2, 3], "altered": [1, 0]}


# ------------------------------------------------------------- names are text, not HTML
# Plotly draws <b>, <i>, <a href>, <br>, <span style> and entities in every label. A judge
# or model name holding them must be drawn as written: escaped wherever a figure puts it.

HOSTILE_NAMES = ["<b>bold</b>", "x <a href='http://evil.invalid/'>link</a>", "&lt;i&gt;y", "%{y} <br>z"]
OUR_TAGS = re.compile(r"<br>|<extra></extra>")  # PeerBoard's own, in hover templates only


def drawn_strings(fig) -> list[tuple[str, str]]:
    """(path, string) for every string of a figure except the theme template."""
    found = []

    def walk(value, path):
        if isinstance(value, str):
            found.append((path, value))
        elif isinstance(value, dict):
            for key, item in value.items():
                if path == "layout" and key == "template":
                    continue
                walk(item, f"{path}.{key}")
        elif isinstance(value, (list, tuple, np.ndarray)):
            for k, item in enumerate(list(value)):
                walk(item if not isinstance(item, np.generic) else item.item(), f"{path}[{k}]")

    plotly_json = fig.to_plotly_json()
    walk(plotly_json["data"], "data")
    walk(plotly_json["layout"], "layout")
    return found


def hostile_figures() -> dict[str, object]:
    a, b, c, d = HOSTILE_NAMES
    names = [a, b, c]
    matrix = pd.DataFrame([[np.nan, 0.7, 0.2], [0.3, np.nan, 0.5], [0.8, 0.5, np.nan]],
                          index=pd.Index(names, name=d), columns=pd.Index(names, name=d))
    shares = pd.DataFrame({"p_first": [0.5, 0.7, 0.4], "ci_low": [0.4, 0.6, 0.3], "ci_high": [0.6, 0.8, 0.5]},
                          index=pd.Index(names, name="judge"))
    return {
        "leaderboard": charts.leaderboard_chart(pd.DataFrame({"model": names, "score": [3.0, 2.0, 1.0],
                                                              "ci_low": [2.5, 1.5, 0.5], "ci_high": [3.5, 2.5, 1.5]}),
                                                score_label=d, title=a),
        "elo curves": charts.elo_curves_chart(pd.DataFrame({"judge": [a, a, b, b], "battles": [1, 2, 1, 2],
                                                            "model": [c, c, d, d], "elo": [1010, 1020, 990, 980]}),
                                              title=b),
        "win rates": charts.win_rate_heatmap(matrix, title=a),
        "counts": charts.count_heatmap(matrix.fillna(0) * 10, title=c),
        "weights": charts.weight_bars(pd.Series([0.5, 0.3, 0.2], index=names), title=d),
        "weight history": charts.weight_history_chart(pd.DataFrame({n: [1 / 3, 0.4] for n in names})),
        "rank change": charts.rank_change_chart(pd.DataFrame({"model": names, "rank": [1, 2, 3],
                                                              "rank_without": [2, 1, 3]})),
        "position": charts.position_bias_chart(pd.concat([shares.assign(stage=c), shares.assign(stage=d)]),
                                               group="stage"),
        "length": charts.proportion_chart(shares, value="p_first", axis_title=a, title=b),
        "swap": charts.swap_consistency_chart(pd.DataFrame({
            "judge": names, "n_pairs": [4, 4, 4], "consistent": [0.5, 0.5, 1.0], "inconsistent_first": [0.5, 0, 0],
            "inconsistent_second": [0, 0.5, 0]})),
        "self": charts.self_enhancement_heatmap(matrix, {a: a, b: c}),
        "agreement": charts.agreement_chart(shares.rename(columns={"p_first": "accuracy"}), metrics={"accuracy": d}),
        "cost": charts.cost_agreement_chart(pd.DataFrame({"judge": names, "cost": [1.0, 2.0, 3.0],
                                                          "agreement": [0.5, 0.6, 0.7]}), cost_label=a),
        "efficiency": charts.efficiency_chart(pd.DataFrame({
            "strategy": [a, a], "method": [b, b], "k": [1, 2], "median": [0.3, 0.6], "low": [0.2, 0.5],
            "high": [0.4, 0.7]})),
        "opinion": charts.opinion_chart(pd.DataFrame({"altered": [1, 0, 2], "held": [2, 3, 0]},
                                                     index=pd.Index(names, name="speaker"))),
        "empty": charts.leaderboard_chart(pd.DataFrame(columns=["model", "score", "ci_low", "ci_high"]), title=a),
    }


@pytest.mark.parametrize("name", list(hostile_figures()))
def test_no_name_reaches_a_figure_as_html(name):
    fig = hostile_figures()[name]
    strings = drawn_strings(fig)
    raw = [(path, s) for path, s in strings
           if "<" in (OUR_TAGS.sub("", s) if path.endswith("hovertemplate") else s)]
    assert raw == [], f"unescaped markup in the {name} figure"
    templates = [s for path, s in strings if path.endswith("hovertemplate")]
    assert all("evil" not in t and "bold" not in t and "%{y} <" not in t for t in templates)  # names go via meta/data
    shown = " ".join(s for _, s in strings)
    assert "&lt;" in shown  # the names are there, escaped (plotly decodes &lt; to < once, as text)


def test_escaped_labels_decode_to_the_names():
    fig = charts.leaderboard_chart(pd.DataFrame({"model": HOSTILE_NAMES, "score": [4.0, 3.0, 2.0, 1.0],
                                                 "ci_low": [np.nan] * 4, "ci_high": [np.nan] * 4}))
    assert [html.unescape(y) for y in fig.data[0].y] == HOSTILE_NAMES[::-1]
    curves = charts.elo_curves_chart(pd.DataFrame({"judge": ["<b>j</b>"] * 2, "battles": [1, 2], "model": ["m&n"] * 2,
                                                   "elo": [1000, 1010]}))
    assert curves.data[0].meta == "m&amp;n, judged by &lt;b&gt;j&lt;/b&gt;"
    assert curves.data[0].hovertemplate.startswith("%{meta}<br>")


# ------------------------------------------------------------------ issue 11 figures


def test_style_control_chart_joins_plain_and_controlled_with_rank_arrows():
    table = pd.DataFrame({"model": ["a", "b"], "score": [1010.0, 990.0], "ci_low": [1000.0, 980.0],
                          "ci_high": [1020.0, 1000.0], "plain_score": [980.0, 1020.0], "rank_change": [1, -1]})
    fig = charts.style_control_chart(table)
    plain, controlled = fig.data[-2], fig.data[-1]
    assert list(plain.x) == [980.0, 1020.0] and list(controlled.x) == [1010.0, 990.0]
    assert list(controlled.text) == ["▲1", "▼1"]
    with pytest.raises(ValueError, match="plain_score"):
        charts.style_control_chart(table.drop(columns=["plain_score"]))


def test_bias_model_chart_one_point_per_estimated_term_and_a_zero_line():
    table = pd.DataFrame({"judge": ["j", "j", "k"], "bias": ["position", "self", "position"],
                          "elo": [30.0, np.nan, -10.0], "ci_low": [10.0, np.nan, -30.0],
                          "ci_high": [50.0, np.nan, 10.0]}).set_index(["judge", "bias"])
    fig = charts.bias_model_chart(table)
    assert sum(len(trace.x) for trace in fig.data) == 2        # the NaN term is left out
    assert {trace.name for trace in fig.data} == {"position"}
    assert fig.layout.shapes[0].x0 == 0


def test_baseline_chart_and_group_heatmap():
    table = pd.DataFrame({"model": ["m", "base"], "win_rate": [30.0, 50.0], "standard_error": [2.0, 0.0],
                          "lc_win_rate": [40.0, 50.0], "lc_standard_error": [1.0, 0.0]})
    fig = charts.baseline_chart(table, baseline="base")
    assert [list(trace.y) for trace in fig.data] == [["m"], ["m"]]
    assert [list(trace.x) for trace in fig.data] == [[30.0], [40.0]]
    wide = pd.DataFrame({"model": ["a", "b"], "score (x)": [1.0, 2.0], "rank (x)": [2, 1], "rank (y)": [1, 2]})
    heat = charts.group_rank_heatmap(wide)
    assert list(heat.data[0].x) == ["x", "y"] and heat.data[0].z.tolist() == [[2.0, 1.0], [1.0, 2.0]]
    assert charts.group_rank_heatmap(wide.iloc[:0]).layout.annotations[0].text == "Nothing to show"
