"""Plotly figure builders for the dashboard: DataFrame in, Figure out.

Pure functions: no streamlit, no I/O, no state. Each takes the table a peercore
function returns (or :mod:`peercore.reports` assembles) and draws it; a frame missing
a column raises ``ValueError`` naming it, and an empty frame gives a figure that says
there is nothing to show.

Names and labels are untrusted text (DESIGN.md): plotly would draw ``<b>``, ``<a href>``,
``<br>`` and entities found in them. Every string a figure draws (title, axis titles,
category tick labels, legend names, text on marks, hover text, annotations) passes
through :func:`peercore.untrusted.escape_plotly`, and hover templates hold only
PeerBoard's own words and ``%{...}`` placeholders: a caller's text reaches them through
the data or the trace's ``meta``, never pasted into the template.

Many models: a chart draws at most :data:`MAX_ROWS` models (rows, bars, heatmap rows
and columns) and an Elo-curve chart :data:`MAX_LINES` lines; with more, it draws the
first ones in the order given (best first, for the leaderboard tables) and its title
says so (:func:`cut_note`). A 10,000 x 10,000 heatmap is neither drawable nor readable;
the pages pass the best-ranked models and say so beside the chart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from peercore.untrusted import escape_plotly as _esc

__all__ = [
    "leaderboard_chart", "elo_curves_chart", "win_rate_heatmap", "count_heatmap", "weight_bars",
    "weight_history_chart", "rank_change_chart", "proportion_chart", "position_bias_chart",
    "swap_consistency_chart", "self_enhancement_heatmap", "length_bias_chart", "agreement_chart",
    "cost_agreement_chart", "efficiency_chart", "opinion_chart", "TEMPLATE", "style_control_chart",
    "coefficient_chart", "bias_model_chart", "baseline_chart", "group_rank_heatmap", "MAX_ROWS", "MAX_LINES",
    "cut_note",
]

TEMPLATE = "plotly_white"
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
            "#bcbd22", "#17becf")
# 20 distinguishable colours for charts with many lines (Elo curves of 15 models): the ten
# above, then their darker and lighter companions (d3's category20 order).
_MANY = _PALETTE + ("#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7",
                    "#dbdb8d", "#9edae5")
#: No chart is drawn lower than this (px): the plot area must stay readable under its legend.
MIN_HEIGHT = 260
#: Category labels on a horizontal axis longer than this are shortened (…); hover gives the whole name.
X_LABEL_CHARS = 18
#: Row names of a heatmap longer than this are shortened (…, keeping the ends that tell them apart).
Y_LABEL_CHARS = 24
#: A heatmap cell is at least this high (px): long row names must not squeeze the rows.
MIN_CELL_PX = 44
_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
#: Models a chart draws at most (rows of a ranking chart, rows and columns of a heatmap): 50 rows of
#: 36 px already make an 1,900 px chart; more are drawn as the first 50, and the title says so.
MAX_ROWS = 50
#: Lines of an Elo-curve chart at most (the 20 colours of the palette).
MAX_LINES = len(_MANY)


def cut_note(total: int, *, limit: int = MAX_ROWS, what: str = "models") -> str | None:
    """What a chart of ``total`` models leaves out when it draws ``limit`` (None when it draws them all)."""
    if total <= limit:
        return None
    return f"the first {limit:,} of {total:,} {what}"


def _cut(frame: pd.DataFrame, title: str | None, *, limit: int = MAX_ROWS, what: str = "models"):
    """The first ``limit`` rows of ``frame`` and a title that says what was left out."""
    note = cut_note(len(frame), limit=limit, what=what)
    if note is None:
        return frame, title
    return frame.iloc[:limit], f"{title} ({note})" if title else note[:1].upper() + note[1:]


def _require(frame: pd.DataFrame, columns: Iterable[str], name: str) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{name} must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} is missing column(s) {missing} (found: {list(frame.columns)})")


def _labels(values: Iterable) -> list[str]:
    """Category labels (ticks, legend entries, text on marks) as plotly-safe strings."""
    return [_esc(v) for v in values]


def _short_labels(values: Iterable, limit: int = X_LABEL_CHARS) -> list[str]:
    """Labels for a horizontal category axis: names longer than ``limit`` cut with "…", kept distinct.

    Long names rotated under a chart squash its plot area; shortened, they stay level.
    The name is cut before it is escaped (an entity is never cut in half).
    """
    texts = ["" if value is None else str(value) for value in values]
    out: list[str] = []
    for text in texts:
        if len(text) <= limit:
            out.append(text)
            continue
        head = text[:limit - 1] + "…"
        if sum(t[:limit - 1] == text[:limit - 1] for t in texts) > 1:  # names alike at the start: keep their ends
            head = text[:5] + "…" + text[-(limit - 6):]
        short, k = head, 2
        while short in out:  # still alike: number them
            short, k = head[:limit - 1 - len(str(k))] + "…" + str(k), k + 1
        out.append(short)
    return [_esc(v) for v in out]


def _figure(title: str | None = None, *, height: int | None = None, legend_rows: int = 0) -> go.Figure:
    """A figure in PeerBoard's layout.

    The legend sits under the plot (its own rows, counted in the height), never at the
    top where plotly's toolbar appears on hover; axes make room for their labels.
    """
    fig = go.Figure()
    fig.update_layout(
        template=TEMPLATE,
        title=dict(text=_esc(title), y=1.0, yanchor="top", yref="container", pad=dict(t=8)) if title else None,
        margin=dict(l=10, r=10, t=60 if title else 40, b=10),
        legend=dict(orientation="h", yanchor="bottom", y=0, yref="container", x=0, xanchor="left"),
    )
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    fig.update_layout(height=max(MIN_HEIGHT, int(height or 450) + 24 * legend_rows))
    return fig


def _legend_rows(names: Iterable, *, per_row: int = 3) -> int:
    """Rows the legend under a chart takes (about ``per_row`` entries a row on a laptop screen)."""
    n = len(list(names))
    return 0 if n <= 1 else -(-n // per_row)


def _empty(title: str | None, message: str = "Nothing to show") -> go.Figure:
    fig = _figure(title)
    fig.add_annotation(text=_esc(message), x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font=dict(size=16))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def _errors(values: pd.Series, low: pd.Series, high: pd.Series) -> dict | None:
    if low.isna().all() or high.isna().all():
        return None
    return dict(type="data", symmetric=False, array=(high - values).to_numpy(dtype=float),
                arrayminus=(values - low).to_numpy(dtype=float), thickness=1.5, width=4)


# ------------------------------------------------------------------------- leaderboard


def leaderboard_chart(table: pd.DataFrame, *, score_label: str = "score", title: str | None = None) -> go.Figure:
    """Scores with their 95% intervals, best at the top (from ``leaderboard().table``).

    Parameters
    ----------
    table : columns ``model, score, ci_low, ci_high`` (intervals may be NaN).
    score_label : axis title (``Elo``, ``win rate`` ...).
    """
    _require(table, ("model", "score", "ci_low", "ci_high"), "table")
    if len(table) == 0:
        return _empty(title)
    table, title = _cut(table, title)
    ordered = table.iloc[::-1]
    fig = _figure(title, height=max(220, 36 * len(table) + 80))
    fig.add_trace(go.Scatter(
        x=ordered["score"], y=_labels(ordered["model"]), mode="markers", marker=dict(size=10, color=_PALETTE[0]),
        error_x=_errors(ordered["score"], ordered["ci_low"], ordered["ci_high"]), name=_esc(score_label),
        hovertemplate="%{y}: %{x:.3f}<extra></extra>",
    ))
    fig.update_xaxes(title=_esc(score_label))
    fig.update_yaxes(title=None, type="category")
    return fig


def elo_curves_chart(curves: pd.DataFrame, *, models: Iterable[str] | None = None,
                     title: str | None = "Elo over battles") -> go.Figure:
    """Elo of each contestant over the battles, one line style per judge (PRD Fig. 4).

    Parameters
    ----------
    curves : long table ``judge, battles, model, elo`` (:func:`peercore.reports.elo_curves`).
    models : draw only these contestants, in this order (colours follow it); default all,
        sorted. Fifteen lines stay apart with 20 colours; pick fewer to read them. At
        most :data:`MAX_LINES` models are drawn (the first ones; the title says so).
    """
    _require(curves, ("judge", "battles", "model", "elo"), "curves")
    present = set(curves["model"])
    models = [m for m in models if m in present] if models is not None else sorted(present)
    models = pd.Series(models, dtype=object)
    models, title = _cut(models, title, limit=MAX_LINES, what="contestants")
    models = models.tolist()
    curves = curves[curves["model"].isin(models)]
    if len(curves) == 0:
        return _empty(title)
    judges = list(dict.fromkeys(curves["judge"]))
    palette = _PALETTE if len(models) <= len(_PALETTE) else _MANY
    fig = _figure(title, height=460, legend_rows=_legend_rows(range(len(models) * len(judges))))
    for j, judge in enumerate(judges):
        for m, model in enumerate(models):
            part = curves[(curves["judge"] == judge) & (curves["model"] == model)]
            if len(part) == 0:
                continue
            fig.add_trace(go.Scatter(
                x=part["battles"], y=part["elo"], mode="lines", name=_esc(f"{model} ({judge})"),
                legendgroup=_esc(judge), line=dict(color=palette[m % len(palette)], dash=_DASHES[j % len(_DASHES)]),
                meta=_esc(f"{model}, judged by {judge}"),
                hovertemplate="%{meta}<br>after %{x} battles: %{y:.0f}<extra></extra>",
            ))
    fig.add_hline(y=1000, line=dict(color="#999", width=1, dash="dot"))
    fig.update_xaxes(title="battles seen")
    fig.update_yaxes(title="Elo")
    return fig


def _heatmap(matrix: pd.DataFrame, *, title, zmin, zmax, colorscale, fmt, colorbar) -> go.Figure:
    if not isinstance(matrix, pd.DataFrame):
        raise ValueError(f"matrix must be a pandas DataFrame, got {type(matrix).__name__}")
    if matrix.size == 0:
        return _empty(title)
    rows, columns = matrix.shape
    if rows > MAX_ROWS or columns > MAX_ROWS:
        matrix = matrix.iloc[:MAX_ROWS, :MAX_ROWS]
        note = f"the first {matrix.shape[0]:,} x {matrix.shape[1]:,} of {rows:,} x {columns:,}"
        title = f"{title} ({note})" if title else note[:1].upper() + note[1:]
    values = matrix.to_numpy(dtype=float)
    text = np.where(np.isnan(values), "", np.vectorize(fmt.format, otypes=[str])(np.nan_to_num(values)))
    names = np.array([[_esc(f"{r} vs {c}") for c in matrix.columns] for r in matrix.index], dtype=object)
    x_labels, y_labels = _short_labels(matrix.columns), _short_labels(matrix.index, Y_LABEL_CHARS)
    fig = _figure(title, height=max(320, MIN_CELL_PX * len(matrix) + 160))
    fig.add_trace(go.Heatmap(
        z=values, x=x_labels, y=y_labels, zmin=zmin, zmax=zmax,
        colorscale=colorscale, text=text, texttemplate="%{text}", colorbar=dict(title=_esc(colorbar)),
        customdata=names, hovertemplate="%{customdata}: %{z}<extra></extra>",
    ))
    fig.update_yaxes(autorange="reversed", type="category", title=_esc(matrix.index.name))
    fig.update_xaxes(type="category", title=_esc(matrix.columns.name), side="bottom")
    return fig


def win_rate_heatmap(matrix: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Share of battles the row model won against the column model (PRD Fig. 7).

    ``matrix`` is :func:`peercore.ranking.pairwise_win_fraction` (NaN where a pair never met).
    """
    return _heatmap(matrix, title=title, zmin=0.0, zmax=1.0, colorscale="RdBu", fmt="{:.2f}", colorbar="row wins")


def count_heatmap(matrix: pd.DataFrame, *, title: str | None = "Battles per pair") -> go.Figure:
    """How many battles each pair fought (:func:`peercore.ranking.battle_counts`)."""
    values = matrix.where(matrix > 0) if isinstance(matrix, pd.DataFrame) else matrix
    top = float(np.nanmax(values.to_numpy(dtype=float))) if isinstance(values, pd.DataFrame) and values.notna().any().any() else 1.0
    return _heatmap(values, title=title, zmin=0.0, zmax=top, colorscale="Blues", fmt="{:.0f}", colorbar="battles")


def weight_bars(weights: pd.Series, *, title: str | None = "Reviewer weights") -> go.Figure:
    """Final Peer Rank weight of each reviewer, largest first (PRD Fig. 3)."""
    if not isinstance(weights, pd.Series):
        raise ValueError(f"weights must be a pandas Series indexed by judge, got {type(weights).__name__}")
    if len(weights) == 0:
        return _empty(title)
    ordered = weights.sort_values(ascending=False)
    fig = _figure(title, height=max(MIN_HEIGHT, 36 * len(ordered) + 120))
    fig.add_trace(go.Bar(y=_labels(ordered.index), x=ordered.to_numpy(dtype=float), orientation="h",
                         marker_color=_PALETTE[0], text=[f"{v:.3f}" for v in ordered], textposition="outside",
                         name="weight", hovertemplate="%{y}: %{x:.3f}<extra></extra>"))
    fig.update_xaxes(title="weight", range=[0, max(1e-9, float(ordered.max())) * 1.25])
    fig.update_yaxes(title=None, type="category", autorange="reversed")
    return fig


def weight_history_chart(history: pd.DataFrame, *, title: str | None = "Weights per iteration") -> go.Figure:
    """How each reviewer's weight moved per iteration (``PeerRankResult.history``; row 0 = uniform start)."""
    if not isinstance(history, pd.DataFrame):
        raise ValueError(f"history must be a pandas DataFrame, got {type(history).__name__}")
    if history.size == 0:
        return _empty(title)
    fig = _figure(title, height=320, legend_rows=_legend_rows(history.columns))
    for k, judge in enumerate(history.columns):
        fig.add_trace(go.Scatter(x=list(range(len(history))), y=history[judge].to_numpy(dtype=float), mode="lines+markers",
                                 name=_esc(judge), line=dict(color=_PALETTE[k % len(_PALETTE)])))
    fig.update_xaxes(title="iteration", dtick=1)
    fig.update_yaxes(title="weight")
    return fig


def rank_change_chart(comparison: pd.DataFrame, *, title: str | None = "Rank with and without the unticked reviewers") -> go.Figure:
    """Dumbbell chart of each model's place before and after removing reviewers.

    ``comparison`` is :func:`peercore.reports.what_if` (``model, rank, rank_without``,
    optionally ``score, score_without``). When the ranks tell no model apart on either
    side (every interval overlaps, so every model ranks 1), the scores are drawn instead,
    so the chart still shows how far each model moved.
    """
    _require(comparison, ("model", "rank", "rank_without"), "comparison")
    if len(comparison) == 0:
        return _empty(title)
    by_score = ("score" in comparison.columns and "score_without" in comparison.columns
                and comparison["rank"].nunique(dropna=True) <= 1 and comparison["rank_without"].nunique(dropna=True) <= 1
                and len(comparison) > 1)
    before, after = ("score", "score_without") if by_score else ("rank", "rank_without")
    if by_score and title == "Rank with and without the unticked reviewers":
        title = "Score with and without the unticked reviewers (every rank ties)"
    comparison, title = _cut(comparison, title)
    fig = _figure(title, height=max(MIN_HEIGHT, 36 * len(comparison) + 120))
    for row in comparison.itertuples(index=False):
        fig.add_trace(go.Scatter(x=[getattr(row, before), getattr(row, after)], y=_labels([row.model, row.model]),
                                 mode="lines", line=dict(color="#bbb", width=3), showlegend=False, hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=comparison[before], y=_labels(comparison["model"]), mode="markers", name="all reviewers",
                             marker=dict(size=12, color=_PALETTE[0])))
    fig.add_trace(go.Scatter(x=comparison[after], y=_labels(comparison["model"]), mode="markers", name="without",
                             marker=dict(size=9, color=_PALETTE[1], symbol="diamond")))
    if by_score:
        fig.update_xaxes(title="score")
    else:
        fig.update_xaxes(title="rank (1 = best)", autorange="reversed", dtick=1)
    fig.update_yaxes(type="category", autorange="reversed")
    return fig


# -------------------------------------------------------------------------------- bias


def proportion_chart(
    frame: pd.DataFrame,
    *,
    value: str,
    title: str | None = None,
    axis_title: str | None = None,
    reference: float | None = 0.5,
    group: str | None = None,
) -> go.Figure:
    """Per-judge shares with Wilson intervals and a reference line (default 0.5).

    Parameters
    ----------
    frame : indexed by judge (or with a ``judge`` column), columns ``value``, ``ci_low``,
        ``ci_high`` and, with ``group``, the group column (e.g. before / after).
    """
    data = frame.reset_index() if "judge" not in frame.columns else frame
    _require(data, ("judge", value, "ci_low", "ci_high") + ((group,) if group else ()), "frame")
    if len(data) == 0:
        return _empty(title)
    fig = _figure(title, height=max(260, 40 * data["judge"].nunique() + 120))
    groups = list(dict.fromkeys(data[group])) if group else [None]
    for k, name in enumerate(groups):
        part = data if name is None else data[data[group] == name]
        fig.add_trace(go.Bar(
            x=part[value], y=_labels(part["judge"]), orientation="h", name=_esc(name if name is not None else value),
            marker_color=_PALETTE[k % len(_PALETTE)], error_x=_errors(part[value], part["ci_low"], part["ci_high"]),
            hovertemplate="%{y}: %{x:.3f}<extra></extra>",
        ))
    if reference is not None:
        fig.add_vline(x=reference, line=dict(color="#d62728", dash="dash", width=2))
    fig.update_layout(barmode="group")
    fig.update_xaxes(title=_esc(axis_title or value), range=[0, 1])
    fig.update_yaxes(type="category", autorange="reversed")
    return fig


def position_bias_chart(frame: pd.DataFrame, *, group: str | None = None, title: str | None = "Share of first-position wins") -> go.Figure:
    """Share of decisive verdicts that picked the first-shown answer, with the 0.5 line.

    ``frame`` is :func:`peercore.bias.position_bias` (optionally stacked with a
    ``group`` column such as ``stage`` = before / after discussion).
    """
    return proportion_chart(frame, value="p_first", title=title, axis_title="P(first answer chosen)", group=group)


def length_bias_chart(frame: pd.DataFrame, *, title: str | None = "Share of verdicts for the longer answer") -> go.Figure:
    """:func:`peercore.bias.length_bias` as bars with intervals and the 0.5 line."""
    return proportion_chart(frame, value="longer_win_rate", title=title, axis_title="P(longer answer chosen)")


def swap_consistency_chart(frame: pd.DataFrame, *, title: str | None = "Swap consistency") -> go.Figure:
    """Stacked shares: consistent / inconsistent favouring first / favouring second.

    ``frame`` is :func:`peercore.bias.swap_consistency` (judges with no pair are left out).
    """
    data = frame.reset_index() if "judge" not in frame.columns else frame
    _require(data, ("judge", "n_pairs", "consistent", "inconsistent_first", "inconsistent_second"), "frame")
    data = data[data["n_pairs"] > 0]
    if len(data) == 0:
        return _empty(title, "No judge judged a pair in both orders")
    fig = _figure(title, height=max(240, 40 * len(data) + 120))
    for k, (column, label) in enumerate((("consistent", "consistent"), ("inconsistent_first", "favours first"),
                                         ("inconsistent_second", "favours second"))):
        fig.add_trace(go.Bar(x=data[column], y=_labels(data["judge"]), orientation="h", name=_esc(label),
                             marker_color=("#2ca02c", "#ff7f0e", "#9467bd")[k], meta=_esc(label),
                             hovertemplate="%{y}: %{meta} %{x:.2f}<extra></extra>"))
    fig.update_layout(barmode="stack", legend_traceorder="normal")  # legend left to right as the bars stack
    fig.update_xaxes(title="share of swapped pairs", range=[0, 1])
    fig.update_yaxes(type="category", autorange="reversed")
    return fig


def self_enhancement_heatmap(matrix: pd.DataFrame, aliases: Mapping[str, str], *, title: str | None = "Win rate each judge gives each contestant") -> go.Figure:
    """Judge x contestant win rates, each judge's own model outlined (self-enhancement).

    ``matrix`` is ``peercore.bias.self_enhancement(...).win_rates``. With more than
    :data:`MAX_ROWS` contestants the judges' own models come first, so their outlined
    cells stay among the columns drawn.
    """
    if isinstance(matrix, pd.DataFrame) and matrix.shape[1] > MAX_ROWS:
        own = [m for m in dict.fromkeys(aliases.values()) if m in set(matrix.columns)]
        matrix = matrix[own + [c for c in matrix.columns if c not in set(own)]]
    fig = _heatmap(matrix, title=title, zmin=0.0, zmax=1.0, colorscale="RdBu", fmt="{:.2f}", colorbar="win rate")
    if matrix.size == 0:
        return fig
    rows, columns = [str(i) for i in matrix.index], [str(c) for c in matrix.columns]
    for judge, model in aliases.items():
        if judge in rows and model in columns:
            r, c = rows.index(judge), columns.index(model)
            fig.add_shape(type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5,
                          line=dict(color="#111", width=3), xref="x", yref="y")
    return fig


# -------------------------------------------------------------------- meta-evaluation


def agreement_chart(table: pd.DataFrame, *, metrics: Mapping[str, str], title: str | None = None) -> go.Figure:
    """Grouped bars of agreement metrics per judge.

    Parameters
    ----------
    table : indexed by judge (or with a ``judge`` column).
    metrics : column -> legend label, e.g. ``{"accuracy": "accuracy (with ties)"}``.
    """
    data = table.reset_index() if "judge" not in table.columns else table
    _require(data, ("judge", *metrics), "table")
    if len(data) == 0:
        return _empty(title)
    fig = _figure(title, height=max(MIN_HEIGHT, 22 * len(data) * max(1, len(metrics)) + 120),
                  legend_rows=_legend_rows(metrics))
    for k, (column, label) in enumerate(metrics.items()):
        fig.add_trace(go.Bar(y=_labels(data["judge"]), x=data[column], orientation="h", name=_esc(label),
                             marker_color=_PALETTE[k % len(_PALETTE)],
                             meta=_esc(label), hovertemplate="%{y}: %{meta} %{x:.3f}<extra></extra>"))
    fig.update_layout(barmode="group")
    fig.update_xaxes(range=[min(0.0, float(np.nanmin(data[list(metrics)].to_numpy(dtype=float), initial=0.0))), 1])
    fig.update_yaxes(type="category", title=None, autorange="reversed")
    return fig


def cost_agreement_chart(frame: pd.DataFrame, *, cost: str = "cost", agreement: str = "agreement",
                         cost_label: str = "cost (USD)", title: str | None = "Cost versus agreement with the gold set") -> go.Figure:
    """One point per judge: what it cost against how often it agrees with the gold.

    ``frame`` has ``judge`` and the two columns named by ``cost`` and ``agreement``.
    """
    _require(frame, ("judge", cost, agreement), "frame")
    data = frame.dropna(subset=[cost, agreement])
    if len(data) == 0:
        return _empty(title, "No judge has both a cost and an agreement")
    if len(data) > 1 and data[cost].nunique() == 1:
        return _cost_strip(data, cost=cost, agreement=agreement, cost_label=cost_label, title=title)
    fig = _figure(title, height=380)
    fig.add_trace(go.Scatter(x=data[cost], y=data[agreement], mode="markers+text", text=_labels(data["judge"]),
                             textposition="top center", marker=dict(size=14, color=_PALETTE[0]),
                             hovertemplate="%{text}: %{x:.4g}, agreement %{y:.3f}<extra></extra>"))
    fig.update_xaxes(title=_esc(cost_label))
    if _whole_numbers(data[cost]):
        fig.update_xaxes(tickformat=",d")
    fig.update_yaxes(title="agreement", range=[0, 1.05])
    return fig


def _cost_strip(data: pd.DataFrame, *, cost: str, agreement: str, cost_label: str, title: str | None) -> go.Figure:
    """Every judge at the same cost: one column per judge (its name under it), the shared cost in the axis title.

    A scatter would stack every point on one vertical line, their names on top of each
    other, on an axis plotly labels around the single value ("1,599.5").
    """
    value = float(data[cost].iloc[0])
    shown = f"{value:,.0f}" if value.is_integer() else f"{value:,.4g}"
    names = [str(v) for v in data["judge"]]
    fig = _figure(title, height=380)
    fig.add_trace(go.Scatter(
        x=_short_labels(names), y=data[agreement], mode="markers", marker=dict(size=14, color=_PALETTE[0]),
        text=_labels(names), hovertemplate="%{text}: agreement %{y:.3f}<extra></extra>"))
    fig.update_xaxes(type="category", title=_esc(f"judge (each: {cost_label} = {shown})"))
    fig.update_yaxes(title="agreement", range=[0, 1.05])
    return fig


def _whole_numbers(values: pd.Series) -> bool:
    numbers = pd.to_numeric(values, errors="coerce").dropna().to_numpy(dtype=float)
    return len(numbers) > 0 and bool(np.all(np.mod(numbers, 1) == 0))


# -------------------------------------------------------------------------- efficiency


def _whole_number_ticks(values: pd.Series, *, at_most: int = 15) -> dict:
    """Axis options that tick a count only at whole numbers.

    Plotly's automatic ticks put half steps on a short range (1, 1.5, 2 comparisons); up to
    ``at_most`` distinct values get a tick each; a longer axis keeps the automatic ticks (steps of
    1, 2 or 5 times a power of ten there), written as whole numbers.
    """
    distinct = sorted({int(v) for v in values})
    if len(distinct) <= at_most:
        return {"tickmode": "array", "tickvals": distinct, "ticktext": [f"{v:,}" for v in distinct]}
    return {"tickformat": ",d"}


def efficiency_chart(curves: pd.DataFrame, *, title: str | None = "Ranking quality against number of comparisons") -> go.Figure:
    """Median Spearman correlation with a band, per method and strategy (PoE paper Fig. 1).

    ``curves`` is :func:`peercore.efficiency.summarise` (``strategy, method, k, median,
    low, high``). Colour = method, line style = strategy.
    """
    _require(curves, ("strategy", "method", "k", "median", "low", "high"), "curves")
    if len(curves) == 0:
        return _empty(title)
    methods = list(dict.fromkeys(curves["method"]))
    strategies = list(dict.fromkeys(curves["strategy"]))
    fig = _figure(title, height=460, legend_rows=_legend_rows(range(len(methods) * len(strategies))))
    for m, method in enumerate(methods):
        color = _PALETTE[m % len(_PALETTE)]
        for s, strategy in enumerate(strategies):
            part = curves[(curves["method"] == method) & (curves["strategy"] == strategy)].sort_values("k")
            if len(part) == 0:
                continue
            group = _esc(f"{method} ({strategy})")
            fig.add_trace(go.Scatter(
                x=np.r_[part["k"], part["k"][::-1]], y=np.r_[part["high"], part["low"][::-1]], fill="toself",
                fillcolor=_rgba(color, 0.12), line=dict(width=0), hoverinfo="skip", showlegend=False, legendgroup=group,
            ))
            fig.add_trace(go.Scatter(
                x=part["k"], y=part["median"], mode="lines+markers", name=group, legendgroup=group,
                line=dict(color=color, dash=_DASHES[s % len(_DASHES)]),
                meta=group, hovertemplate="%{meta}<br>%{x} comparisons: median %{y:.3f}<extra></extra>",
            ))
    fig.update_xaxes(title="comparisons per question", **_whole_number_ticks(curves["k"]))
    fig.update_yaxes(title="Spearman to the full-data ranking", range=[-0.05, 1.05])
    return fig


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[k:k + 2], 16) for k in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


# ------------------------------------------------------------------------- discussions


def opinion_chart(counts: pd.DataFrame, *, title: str | None = "Opinion altering and holding") -> go.Figure:
    """Stacked bars of held / altered opinions per speaker (PRD section 5; :func:`peercore.reports.opinion_chart_rows`)."""
    data = counts.reset_index() if "speaker" not in counts.columns else counts
    _require(data, ("speaker", "altered", "held"), "counts")
    if len(data) == 0 or (data["altered"] + data["held"]).sum() == 0:
        return _empty(title, "No reviewer's opinion was challenged")
    fig = _figure(title, height=max(240, 40 * len(data) + 120))
    speakers = _labels(data["speaker"])
    fig.add_trace(go.Bar(x=data["held"], y=speakers, orientation="h", name="held", marker_color="#2ca02c"))
    fig.add_trace(go.Bar(x=data["altered"], y=speakers, orientation="h", name="altered", marker_color="#d62728"))
    fig.update_layout(barmode="stack", legend_traceorder="normal")  # legend left to right as the bars stack
    fig.update_xaxes(title="turns challenged by the other reviewer")
    fig.update_yaxes(type="category", autorange="reversed")
    return fig


# ------------------------------------------------------------------ style control & bias model


def style_control_chart(table: pd.DataFrame, *, title: str | None = "Plain vs style-controlled rating") -> go.Figure:
    """Each model's plain Bradley-Terry rating and its style-controlled rating, joined by a line.

    ``table`` is a style-controlled :class:`peercore.app.Ranking`'s table (``model,
    score, ci_low, ci_high, plain_score, rank_change``); models in its order.
    """
    _require(table, ("model", "score", "ci_low", "ci_high", "plain_score", "rank_change"), "table")
    if len(table) == 0:
        return _empty(title)
    table, title = _cut(table, title)
    fig = _figure(title, height=max(240, 36 * len(table) + 100))
    for row in table.itertuples(index=False):
        fig.add_trace(go.Scatter(x=[row.plain_score, row.score], y=_labels([row.model, row.model]), mode="lines",
                                 line=dict(color="#bbb", width=3), showlegend=False, hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=table["plain_score"], y=_labels(table["model"]), mode="markers", name="plain",
                             marker=dict(size=11, color=_PALETTE[1], symbol="diamond"),
                             hovertemplate="%{y} plain: %{x:.1f}<extra></extra>"))
    changes = [("" if c == 0 or pd.isna(c) else (f"▲{int(c)}" if c > 0 else f"▼{int(-c)}")) for c in table["rank_change"]]
    fig.add_trace(go.Scatter(x=table["score"], y=_labels(table["model"]), mode="markers+text", name="style-controlled",
                             text=_labels(changes), textposition="middle right",
                             marker=dict(size=11, color=_PALETTE[0]),
                             error_x=_errors(table["score"], table["ci_low"], table["ci_high"]),
                             hovertemplate="%{y} controlled: %{x:.1f}<extra></extra>"))
    fig.update_xaxes(title="rating (Elo scale)")
    fig.update_yaxes(type="category", autorange="reversed")
    return fig


def coefficient_chart(frame: pd.DataFrame, *, label: str = "feature", title: str | None = None,
                      axis_title: str = "Elo points") -> go.Figure:
    """Coefficients with 95% intervals around a zero line (style coefficients, judge biases).

    Parameters
    ----------
    frame : columns ``label``, ``value``, ``ci_low``, ``ci_high`` and optionally ``group``
        (one colour per group, e.g. the bias kind).
    """
    _require(frame, (label, "value", "ci_low", "ci_high"), "frame")
    if len(frame) == 0:
        return _empty(title)
    fig = _figure(title, height=max(240, 30 * len(frame) + 120))
    groups = list(dict.fromkeys(frame["group"])) if "group" in frame.columns else [None]
    for k, name in enumerate(groups):
        part = frame if name is None else frame[frame["group"] == name]
        fig.add_trace(go.Scatter(
            x=part["value"], y=_labels(part[label]), mode="markers", name=_esc(name if name is not None else axis_title),
            marker=dict(size=10, color=_PALETTE[k % len(_PALETTE)]),
            error_x=_errors(part["value"], part["ci_low"], part["ci_high"]),
            hovertemplate="%{y}: %{x:.1f}<extra></extra>",
        ))
    fig.add_vline(x=0, line=dict(color="#d62728", dash="dash", width=2))
    fig.update_xaxes(title=_esc(axis_title))
    fig.update_yaxes(type="category", autorange="reversed")
    return fig


def bias_model_chart(table: pd.DataFrame, *, title: str | None = "Judge biases (Elo points, 95% intervals)") -> go.Figure:
    """:func:`peercore.bias.judge_bias_model`'s table as a forest plot: one row per judge, a colour per bias."""
    data = table.reset_index() if "judge" not in table.columns else table
    _require(data, ("judge", "bias", "elo", "ci_low", "ci_high"), "table")
    data = data[data["elo"].notna()]
    frame = pd.DataFrame({"row": data["judge"].astype(str) + " · " + data["bias"].astype(str),
                          "value": data["elo"], "ci_low": data["ci_low"], "ci_high": data["ci_high"],
                          "group": data["bias"]})
    return coefficient_chart(frame, label="row", title=title)


def baseline_chart(table: pd.DataFrame, *, baseline: str | None = None,
                   title: str | None = "Win rate and length-controlled win rate against the baseline") -> go.Figure:
    """AlpacaEval's win rate and LC win rate per model (percent, with ± 1.96 standard errors)."""
    _require(table, ("model", "win_rate", "standard_error", "lc_win_rate", "lc_standard_error"), "table")
    data = table if baseline is None else table[table["model"] != baseline]
    if len(data) == 0:
        return _empty(title)
    fig = _figure(title, height=max(260, 40 * len(data) + 120))
    for k, (column, se, name) in enumerate((("win_rate", "standard_error", "win rate"),
                                            ("lc_win_rate", "lc_standard_error", "length-controlled"))):
        values = data[column]
        half = 1.96 * data[se].fillna(0.0)
        fig.add_trace(go.Bar(x=values, y=_labels(data["model"]), orientation="h", name=_esc(name),
                             marker_color=_PALETTE[k], error_x=_errors(values, values - half, values + half),
                             hovertemplate="%{y}: %{x:.2f}%<extra></extra>"))
    fig.add_vline(x=50, line=dict(color="#999", dash="dot", width=1))
    fig.update_layout(barmode="group")
    fig.update_xaxes(title="% of instructions won against the baseline")
    fig.update_yaxes(type="category", autorange="reversed")
    return fig


def group_rank_heatmap(wide: pd.DataFrame, *, title: str | None = "Rank per group (1 = best)") -> go.Figure:
    """Ranks of :func:`peercore.reports.grouped_table` as a model x group heatmap."""
    _require(wide, ("model",), "wide")
    columns = [c for c in wide.columns if c.startswith("rank (")]
    if len(wide) == 0 or not columns:
        return _empty(title)
    matrix = wide.set_index("model")[columns].astype(float)
    matrix.columns = pd.Index([c[len("rank ("):-1] for c in columns], name="group")
    return _heatmap(matrix, title=title, zmin=1, zmax=max(float(np.nanmax(matrix.to_numpy())), 1.0),
                    colorscale="Blues_r", fmt="{:.0f}", colorbar="rank")
