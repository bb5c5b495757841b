"""Charts readable at 1366x768 (issue 21, "Charts at 1366x768"): figure objects, no browser.

- cost versus agreement with every judge at one cost (PRD: all gave 1,600 verdicts) is a
  strip, one column per judge, not a vertical line of points labelled "1,599.5";
- heatmaps with long names keep cells of a readable height and row names cut with the
  whole name in the hover;
- a stacked bar chart's legend reads in the order its bars stack.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from peercore import charts

PRD_JUDGES = ["gpt-4", "claude-v1", "gpt-3.5-turbo", "vicuna-13b", "bard"]


def _same_count() -> pd.DataFrame:
    return pd.DataFrame({"judge": PRD_JUDGES, "cost": [1600] * 5, "agreement": [0.62, 0.61, 0.58, 0.47, 0.55]})


def test_judges_with_the_same_number_of_verdicts_each_get_their_own_place():
    fig = charts.cost_agreement_chart(_same_count(), cost_label="verdicts")
    (points,) = fig.data
    assert fig.layout.xaxis.type == "category"  # no numeric axis around one value: no "1,599.5" tick
    assert len(set(points.x)) == len(PRD_JUDGES)  # one place per judge, not one vertical line
    assert points.mode == "markers"  # the names are on the axis, not printed on top of each other
    assert "1,600" in fig.layout.xaxis.title.text  # the shared count is said once
    assert list(points.text) == PRD_JUDGES  # hover names each point


def test_whole_counts_on_a_numeric_axis_get_whole_ticks():
    frame = pd.DataFrame({"judge": ["a", "b", "c"], "cost": [1600, 1601, 1598], "agreement": [0.6, 0.5, 0.4]})
    fig = charts.cost_agreement_chart(frame, cost_label="verdicts")
    assert fig.layout.xaxis.type != "category"
    assert fig.layout.xaxis.tickformat == ",d"  # never a fractional tick such as 1,599.5
    money = frame.assign(cost=[0.5, 1.25, 2.0])
    assert charts.cost_agreement_chart(money).layout.xaxis.tickformat is None


def test_heatmap_with_long_names_keeps_readable_cells():
    names = [f"local:qwen2.5-coder-1.5b@agent-t0.{k}a-with-a-long-tail" for k in range(8)]
    matrix = pd.DataFrame(np.full((8, 8), 0.5), index=names, columns=names)
    fig = charts.win_rate_heatmap(matrix)
    (heat,) = fig.data
    assert fig.layout.height >= charts.MIN_CELL_PX * 8 and charts.MIN_CELL_PX >= 36
    assert all(len(label) <= charts.Y_LABEL_CHARS for label in heat.y)  # row names no longer squeeze the plot
    assert len(set(heat.y)) == len(names) and len(set(heat.x)) == len(names)  # still told apart
    assert names[3] in heat.customdata[3][0]  # the whole name in the hover


def test_swap_consistency_legend_reads_as_the_bars_stack():
    frame = pd.DataFrame({"judge": ["a", "b"], "n_pairs": [10, 8], "consistent": [0.6, 0.5],
                          "inconsistent_first": [0.3, 0.25], "inconsistent_second": [0.1, 0.25]})
    fig = charts.swap_consistency_chart(frame)
    stacking = [trace.name for trace in fig.data]  # left to right along each bar
    assert stacking == ["consistent", "favours first", "favours second"]
    # plotly lists a stacked chart's legend reversed unless told otherwise
    assert fig.layout.legend.traceorder == "normal"


def test_opinion_legend_reads_as_the_bars_stack():
    counts = pd.DataFrame({"speaker": ["a", "b"], "altered": [1, 2], "held": [3, 1]})
    fig = charts.opinion_chart(counts)
    assert [trace.name for trace in fig.data] == ["held", "altered"]
    assert fig.layout.legend.traceorder == "normal"
