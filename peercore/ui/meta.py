"""The Meta-evaluation page's circular-gold check and leave-one-agent-out gold (cached per revision and panel).

The maths is :mod:`peercore.circularity`; this module only selects the same verdicts
and gold as :func:`peercore.ui.data.meta_evaluation` and caches the result.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from peercore import charts
from peercore.app.agreement import accuracy_table
from peercore.app.study import CONSENSUS
from peercore.circularity import circular_gold, leave_one_agent_out_gold
from peercore.domain.selection import Selection
from peercore.ui import data, safe

GOLD_CHOICES = {"panel": "Panel gold (ScaleEval)", "loao": "Leave-one-agent-out gold"}

# Headers of :func:`peercore.reports.accuracy_display` on screen: a few plain words that fit a 1366 px
# screen, the detail in the column's help (``tables.show(labels=..., helps=...)``).
ACCURACY_LABELS = {"Fleiss' kappa (PRD Table 3)": "Fleiss' kappa", "unparsed (counted as misses)": "unparsed",
                   "matched w/o ties": "matched, no ties", "accuracy w/o ties": "accuracy, no ties",
                   "Cohen's kappa w/o ties": "Cohen, no ties"}
#: A median of reference votes that is not a whole number keeps one decimal (a whole one is a count, "1,200").
ACCURACY_DECIMALS = {"reference votes": 1}
ACCURACY_HELP = {
    "reference votes": "Median number of reference votes per matched comparison.",
    "matched": "Comparisons both the judge and the reference decided.",
    "Cohen's kappa": "Agreement corrected for chance (MT-Bench's measure).",
    "Fleiss' kappa (PRD Table 3)": "Judge and reference as two raters, as PRD's Table 3 reports it.",
    "unparsed (counted as misses)": "Replies with no readable verdict; they count as misses (ScaleEval eq. 2).",
    "matched w/o ties": "Matched comparisons where neither side called a tie.",
    "accuracy w/o ties": "Accuracy over the matched comparisons where neither side called a tie.",
    "Cohen's kappa w/o ties": "Cohen's kappa over the matched comparisons where neither side called a tie.",
}


@st.cache_data(show_spinner=False, max_entries=16)
def circularity(db: str, study_: str, rev: int, panel: str | None = None) -> dict:
    """Which judges argued in the panel's debates, and every judge's accuracy against leave-one-agent-out gold.

    Returns
    -------
    dict
        ``circular``: :func:`peercore.circularity.circular_gold` (empty when no judge
        under evaluation was an agent); ``loao_accuracy``: a
        :func:`peercore.app.agreement.accuracy_table` against each judge's leave-one-agent-out
        gold (None when nothing is circular or nothing matches); ``comparison``: judge,
        its gold it helped form, its accuracy against either gold.
    """
    debates = data.debates(db, study_, rev)
    debates = debates[debates["kind"] == "debate"]
    if panel is not None:
        debates = debates[debates["panel"].replace("", CONSENSUS) == panel]
    turns = data.turns(db, study_, rev)
    turns = turns[turns["debate_id"].isin(debates["id"])]
    empty = {"circular": pd.DataFrame(columns=["debates", "gold_formed", "gold"]), "loao_accuracy": None,
             "comparison": pd.DataFrame()}
    if len(turns) == 0:  # no debate, no agent: nothing can be circular (and no verdict needs reading)
        return empty
    handle = data.study(db, study_)
    evaluated = handle.judgments(Selection(kinds=("llm", "human"), repeated_votes="each"), include_invalid=True)
    gold = handle.gold(panel)
    if len(evaluated) == 0:
        return empty
    circular = circular_gold(gold, turns, evaluated["judge"].astype(str).unique())
    if len(circular) == 0:
        return empty
    no_criterion = evaluated["criterion"].isna().all()
    tables = []
    for judge in sorted(evaluated["judge"].astype(str).unique()):
        own_gold = leave_one_agent_out_gold(gold, debates, turns, judge)
        if len(own_gold) == 0:
            continue
        if no_criterion:  # as the page's main table: verdicts without a criterion match gold of any criterion
            own_gold = own_gold.assign(criterion=pd.Series(pd.NA, index=own_gold.index, dtype="str"))
        tables.append(accuracy_table(evaluated[evaluated["judge"] == judge], own_gold))
    loao = pd.concat(tables) if tables else None
    loao = loao if loao is not None and len(loao) else None
    if no_criterion and len(gold):
        gold = gold.assign(criterion=pd.Series(pd.NA, index=gold.index, dtype="str"))
    standard = accuracy_table(evaluated, gold) if len(gold) else pd.DataFrame(columns=["n", "accuracy"])
    comparison = pd.DataFrame({
        "agent in debates": circular["debates"],
        "gold verdicts it helped form": circular["gold_formed"],
        "matched (panel gold)": standard["n"].reindex(circular.index),
        "accuracy (panel gold)": standard["accuracy"].reindex(circular.index).astype(float).round(3),
        "matched (leave-one-agent-out)": (loao["n"].reindex(circular.index) if loao is not None
                                          else pd.Series(pd.NA, index=circular.index)),
        "accuracy (leave-one-agent-out)": (loao["accuracy"].reindex(circular.index).astype(float).round(3)
                                           if loao is not None else pd.Series(float("nan"), index=circular.index)),
    })
    return {"circular": circular, "loao_accuracy": loao, "comparison": comparison}


def circular_text(circular: pd.DataFrame) -> str:
    """The warning above the gold table: who is scored against a consensus it formed."""
    names = ", ".join(safe.code(name) for name in circular.index[:4])
    more = f" and {len(circular) - 4} more" if len(circular) > 4 else ""
    formed = int(circular["gold_formed"].max())
    total = int(circular["gold"].max())
    return (f"**Circular gold.** {len(circular)} judge(s) scored here also argued in this panel's debates "
            f"({names}{more}). On a debate its panel agreed on, the gold *is* that agent's own final verdict "
            f"(up to {formed} of the {total} agreed-debate gold verdicts), and the debates where it was the lone "
            "dissent have no gold, so its accuracy against the panel gold is inflated. Leave-one-agent-out gold "
            "scores each agent against what the *other* agents agreed on without it (and the human decisions).")


def cost_chart(costs: dict, *, against: str):
    """The cost-versus-agreement chart with what it compares written on it (title, both axes, legend).

    ``costs`` is the ``costs`` entry of :func:`peercore.ui.data.meta_evaluation` (its
    ``axis`` says whether the x axis is money or, with no recorded cost, verdicts);
    ``against`` is what the agreement is measured with ("the gold set" or "the human
    majority").
    """
    spent = "cost of its runs" if "USD" in costs["axis"] else "verdicts it gave"
    fig = charts.cost_agreement_chart(costs["table"], cost="cost", agreement="agreement", cost_label=costs["axis"],
                                      title=f"Each judge: {spent} against its accuracy with {against}")
    fig.update_yaxes(title=f"accuracy with {against} (ties counted)")
    beside = "under it" if fig.layout.xaxis.type == "category" else "beside it"  # all at one cost: a strip
    fig.update_traces(name=f"one point per judge (its name {beside})", showlegend=True)
    fig.update_layout(showlegend=True)
    return fig


#: What the Cost versus agreement section says when it has no point to draw and no run recorded a cost.
NO_RUN_ACCOUNTING = ("No run accounting: costs are known for runs made here (**Reviewers & runs**), and no judge of "
                     "this study has both a count or cost and an accuracy to draw.")


def cost_chart_note(costs: dict) -> str | None:
    """Why the cost-versus-agreement chart is not drawn, or None when some judge has a point on it.

    ``costs`` as for :func:`cost_chart`: a judge is drawn when its cost (or verdicts) and its
    accuracy are both known; with none, an empty chart would say nothing.
    """
    table = costs["table"]
    if len(table.dropna(subset=["cost", "agreement"])):
        return None
    if "USD" in costs["axis"]:
        return "No judge with a recorded cost has an accuracy to draw: costs are known for runs made here."
    return NO_RUN_ACCOUNTING
