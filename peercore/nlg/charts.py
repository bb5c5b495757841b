"""Figures of the NLG page: DataFrame in, plotly Figure out (pure; names escaped).

Every string drawn passes through :func:`peercore.untrusted.escape_plotly`, like
:mod:`peercore.charts`, whose efficiency chart draws the curves.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from peercore import charts
from peercore.untrusted import escape_plotly as _esc
from peercore.nlg.report import scorer_label

__all__ = ["correlation_chart", "human_curves_chart"]

_COLOURS = {"absolute": "#7f7f7f", "comparative": "#1f77b4", "debiased": "#ff7f0e"}


def correlation_chart(table: pd.DataFrame, *, measure: str = "spearman",
                      title: str | None = "Averaged per-context correlation with the human scores") -> go.Figure:
    """Horizontal bars of each scorer's mean correlation with its interval.

    ``table`` is :func:`peercore.nlg.evaluation.evaluation_table`; ``measure`` is
    ``"spearman"`` or ``"pearson"``. Grey: absolute scores; blue: comparative, raw;
    orange: comparative, debiased.
    """

    if measure not in ("spearman", "pearson"):
        raise ValueError(f"measure must be 'spearman' or 'pearson', got {measure!r}")
    missing = [c for c in ("approach", "scorer", "debiased", measure, f"{measure}_low", f"{measure}_high")
               if c not in table.columns]
    if missing:
        raise ValueError(f"table is missing column(s) {missing} (found: {list(table.columns)})")
    fig = go.Figure()
    fig.update_layout(template=charts.TEMPLATE, height=max(260, 34 * len(table) + 120),
                      title=dict(text=_esc(title)) if title else None, margin=dict(l=10, r=10, t=60, b=10),
                      showlegend=False)
    if not len(table):
        return fig
    labels = [_esc(scorer_label(a, s, d)) for a, s, d in zip(table["approach"], table["scorer"], table["debiased"])]
    colour = [_COLOURS["absolute"] if a == "absolute" else _COLOURS["debiased" if d else "comparative"]
              for a, d in zip(table["approach"], table["debiased"])]
    values = table[measure].to_numpy(dtype=float)
    fig.add_trace(go.Bar(
        y=labels, x=values, orientation="h", marker_color=colour, customdata=table["contexts"].to_numpy(),
        error_x=dict(type="data", symmetric=False, array=table[f"{measure}_high"].to_numpy(dtype=float) - values,
                     arrayminus=values - table[f"{measure}_low"].to_numpy(dtype=float), thickness=1.5, width=4),
        hovertemplate="%{y}<br>mean %{x:.3f} over %{customdata} contexts<extra></extra>",
    ))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title=_esc(f"{measure.capitalize()} with the human scores (mean over contexts, 95% interval)"),
                     range=[min(-0.1, float(np.nanmin(table[f"{measure}_low"])) - 0.05) if len(table) else -0.1, 1.0])
    return fig


def human_curves_chart(curves: pd.DataFrame, *, method_labels: dict[str, str] | None = None,
                       title: str | None = "Spearman with the human scores against comparisons per context"
                       ) -> go.Figure:
    """The PoE paper's Fig. 1: median Spearman with humans over repeats, with a band.

    ``curves`` is :meth:`peercore.nlg.study.NLGStudy.curves` (``strategy, method,
    debiased, k, median, low, high``). Colour = scorer (and debiasing), line style =
    selection (random, greedy).
    """
    for column in ("strategy", "method", "debiased", "k", "median", "low", "high"):
        if column not in curves.columns:
            raise ValueError(f"curves is missing column {column!r} (found: {list(curves.columns)})")
    names = method_labels or {}
    named = curves.assign(method=[f"{names.get(m, m)}{' (debiased)' if d else ''}"
                                  for m, d in zip(curves["method"], curves["debiased"])])
    fig = charts.efficiency_chart(named.drop(columns="debiased"), title=title)
    fig.update_xaxes(title="comparisons per context")
    fig.update_yaxes(title="Spearman with the human scores", range=[-0.3, 1.0])
    return fig
