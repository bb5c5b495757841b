"""Judges against a reference: ``peercore agree`` and the Meta-evaluation page, one computation.

:func:`agreement_table` is the one judge-versus-reference table (accuracy, Cohen's and
Fleiss' kappa, unparsed replies, reference votes per comparison), a judge never compared
with its own votes. :func:`agreement` picks the judge and the reference by name or
prefix (the CLI's ``--judge`` / ``--reference``); :func:`meta_evaluation` picks each
LLM judge against the human votes and against a debate panel's gold set, in either
reference mode, and adds ScaleEval's tables.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from peercore.agreement import agreement_of_pairs, krippendorff_alpha, match_reference
from peercore.app.study import CONSENSUS, Study
from peercore.domain import verdicts as V
from peercore.domain.options import ReferenceMode, Ties, Unparsed, parse
from peercore.domain.selection import Selection
from peercore.judgments import COLUMNS
from peercore.reports import criteria_variation, scaleeval_table

__all__ = ["agreement_table", "accuracy_table", "agreement", "alpha", "meta_evaluation", "MetaEvaluation", "reference_description",
           "AGREEMENT_COLUMNS", "ACCURACY_COLUMNS"]

AGREEMENT_COLUMNS = ["n", "agreement", "cohen_kappa", "fleiss_kappa", "unparsed", "reference_votes"]
ACCURACY_COLUMNS = ["n", "accuracy", "cohen_kappa", "fleiss_kappa", "unparsed", "reference_votes", "n_without_ties",
                    "accuracy_without_ties", "cohen_kappa_without_ties"]


def agreement_table(judged: pd.DataFrame, reference: pd.DataFrame, *, ties: str = Ties.INCLUDE,
                    reference_mode: str = ReferenceMode.MAJORITY, unparsed: str = Unparsed.MISS) -> pd.DataFrame:
    """Each judge of ``judged`` against ``reference``, never against its own votes.

    For each judge, the reference is every reference verdict not its own (leave-one-out,
    as FastChat's human agreement is computed), matched by question, pair (either
    orientation), turn and criterion (:func:`peercore.agreement.match_reference`);
    agreement, Cohen's kappa and Fleiss' kappa (judge and reference as two raters, as
    PRD's Table 3 reports it) by :func:`peercore.agreement.agreement_of_pairs`. Unparsed
    replies (``valid`` 0) count as misses by default (ScaleEval eq. 2).

    Returns
    -------
    DataFrame indexed by judge (sorted): ``n, agreement, cohen_kappa, fleiss_kappa,
    unparsed, reference_votes`` (median reference votes per matched comparison).
    """
    ties = parse(Ties, ties, "ties")
    return _agreement_tables(judged, reference, ties=(ties,), reference_mode=reference_mode, unparsed=unparsed)[ties]


def _agreement_tables(judged: pd.DataFrame, reference: pd.DataFrame, *, ties: tuple[Ties, ...],
                      reference_mode: str, unparsed: str) -> dict[Ties, pd.DataFrame]:
    """:func:`agreement_table` for each of ``ties``, from one match of each judge with the reference."""
    reference_mode = parse(ReferenceMode, reference_mode, "reference_mode")
    unparsed = parse(Unparsed, unparsed, "unparsed")
    if "valid" not in judged.columns:
        judged = judged.assign(valid=judged["winner"].notna().astype(int))
    if "valid" in reference.columns:
        reference = reference[reference["valid"].to_numpy() == 1]
    reference = reference[list(COLUMNS)]
    rows: dict[Ties, list] = {t: [] for t in ties}
    for name in sorted(pd.unique(judged["judge"].astype(str))):
        own = judged[(judged["judge"] == name).to_numpy()][list(COLUMNS) + ["valid"]]
        others = reference[(reference["judge"] != name).to_numpy()]
        if len(others) == 0:
            for t in ties:
                rows[t].append((name, 0, math.nan, math.nan, math.nan, 0, 0.0))
            continue
        pairs = match_reference(own, others, reference_mode=reference_mode.value)
        every_vote = pairs if reference_mode is ReferenceMode.VOTES else \
            match_reference(own, others, reference_mode=ReferenceMode.VOTES.value)
        votes = every_vote.groupby(["question_id", "model_a", "model_b"], dropna=False, sort=False).size() \
            if len(every_vote) else pd.Series(dtype=int)
        median_votes = float(np.median(votes)) if len(votes) else 0.0
        for t in ties:
            result = agreement_of_pairs(pairs, ties=t.value, unparsed=unparsed.value)
            rows[t].append((name, result.n, result.agreement, result.cohen_kappa, result.fleiss_kappa, result.unparsed,
                            median_votes))
    return {t: _typed(pd.DataFrame(rows[t], columns=["judge"] + AGREEMENT_COLUMNS).set_index("judge")) for t in ties}


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """The column types :func:`peercore.agreement.agreement` gives (counts as integers, the rest as floats)."""
    return frame.astype({"n": "int64", "agreement": float, "cohen_kappa": float, "fleiss_kappa": float,
                         "unparsed": "int64", "reference_votes": float})


def _decoded(study: Study, chosen: V.Verdicts) -> pd.DataFrame:
    return V.to_frame(chosen, include_invalid=True, extras=("valid",))


def agreement(study: Study, judge: str, reference: str, *, ties: str = Ties.INCLUDE,
              reference_mode: str = ReferenceMode.MAJORITY, unparsed: str = Unparsed.MISS,
              final_only: bool = True) -> pd.DataFrame:
    """Each judge ``judge`` names (a name, or a prefix ending in ``:``) against ``reference`` (:func:`agreement_table`).

    With ``--judge human:expert_0 --reference human:`` the expert is compared with the
    *other* experts only, and ``--judge human: --reference human:`` gives each
    annotator's agreement with the rest (and their pooled figure, :func:`pooled`).

    Raises
    ------
    ValueError
        If ``judge`` or ``reference`` matches no judge, or the reference has no readable verdict.
    """
    everything = study.select(Selection(final_only=final_only, repeated_votes="each"), include_invalid=True).verdicts
    judged = V.take(everything, V.judge_codes(everything, [judge])[everything.judge])
    references = V.take(everything, V.judge_codes(everything, [reference])[everything.judge] & (everything.winner >= 0))
    if len(references) == 0:
        raise ValueError(f"reference {reference!r} has no readable verdict")
    return agreement_table(_decoded(study, judged), _decoded(study, references), ties=ties,
                           reference_mode=reference_mode, unparsed=unparsed)


def alpha(study: Study, raters: Sequence[str], *, rounds: int = 1000, seed: int = 0, final_only: bool = True):
    """Krippendorff's alpha among the judges ``raters`` names (names, or prefixes ending in ``:``).

    Every vote counts (a rater's repeated votes on a presentation become its majority
    there, inside :func:`peercore.agreement.krippendorff_alpha`), unparsed replies are
    left out.
    """
    chosen = study.select(Selection(judges=tuple(raters), final_only=final_only, repeated_votes="each")).verdicts
    return krippendorff_alpha(V.to_frame(chosen), rounds=rounds, seed=seed)


# -------------------------------------------------------------------- meta-evaluation


def reference_description(humans: V.Verdicts) -> str:
    """What the human reference is: how many annotator names and how many votes each comparison has.

    The reference's strength is the number of votes per comparison (question and
    unordered pair), not the number of annotator names (PRD's ``human:prd`` is one name
    holding three votes per pair).
    """
    readable = V.take(humans, humans.winner >= 0)
    if len(readable) == 0:
        return "no human votes"
    comparison = V.group_ids([readable.question, np.minimum(readable.a, readable.b),
                              np.maximum(readable.a, readable.b)])
    votes = np.bincount(comparison)
    names = len(readable.judges_present())
    low, high, middle = int(votes.min()), int(votes.max()), float(np.median(votes))
    spread = f"{low}" if low == high else f"{low}–{high}, median {middle:g}"
    return (f"the majority of the human votes on each comparison ({len(readable):,} votes by {names} annotator "
            f"name{'s' if names != 1 else ''}; {spread} vote{'s' if high != 1 else ''} per comparison)")


@dataclass(frozen=True)
class MetaEvaluation:
    """Everything the Meta-evaluation page shows (:func:`meta_evaluation`).

    Attributes
    ----------
    n_judges, n_humans, n_gold : judges evaluated (LLM judges with a verdict), annotator
        names, gold verdicts of the panel.
    panel : the debate panel whose gold set is used (None: every panel).
    reference_mode : how human votes form the reference (``majority`` or ``votes``).
    gold_accuracy, human_accuracy : :data:`ACCURACY_COLUMNS` per judge, or None.
    scaleeval : ScaleEval's example- and system-level table (empty without gold).
    criteria : the criteria of that table.
    human_reference : what the human reference is (a sentence).
    costs : cost (or verdicts) against agreement, for the chart.
    variation : ScaleEval Table 5 (criteria variations).
    metrics : label -> count (the page's cards).
    warnings : what the selection merged or left out.
    """

    n_judges: int
    n_humans: int
    n_gold: int
    panel: str | None
    reference_mode: str
    gold_accuracy: pd.DataFrame | None
    human_accuracy: pd.DataFrame | None
    scaleeval: pd.DataFrame
    criteria: list
    human_reference: str
    costs: dict
    variation: pd.DataFrame
    metrics: dict = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def accuracy_table(judged: pd.DataFrame, reference: pd.DataFrame, *,
                   reference_mode: str = ReferenceMode.MAJORITY) -> pd.DataFrame:
    """:func:`agreement_table` with ties and without, side by side: the Meta-evaluation page's accuracy.

    Returns
    -------
    DataFrame indexed by judge with :data:`ACCURACY_COLUMNS`, judges with a match only
    (empty when nothing matches).
    """
    if len(judged) == 0 or len(reference) == 0:
        return pd.DataFrame(columns=ACCURACY_COLUMNS)
    tables = _agreement_tables(judged, reference, ties=(Ties.INCLUDE, Ties.EXCLUDE), reference_mode=reference_mode,
                               unparsed=Unparsed.MISS)
    both, without = tables[Ties.INCLUDE], tables[Ties.EXCLUDE]
    out = both.rename(columns={"agreement": "accuracy"}).assign(
        n_without_ties=without["n"], accuracy_without_ties=without["agreement"],
        cohen_kappa_without_ties=without["cohen_kappa"])[ACCURACY_COLUMNS]
    return out[out["n"] > 0]


def _accuracy(judged: pd.DataFrame, reference: pd.DataFrame, *, reference_mode) -> pd.DataFrame | None:
    """:func:`accuracy_table`, None when nothing matches."""
    out = accuracy_table(judged, reference, reference_mode=reference_mode)
    return out if len(out) else None


def meta_evaluation(study: Study, *, panel: str | None = None,
                    reference_mode: str = ReferenceMode.MAJORITY) -> MetaEvaluation:
    """Each LLM judge against the human votes and against the gold set (ScaleEval), and the tables around it.

    Judges are the study's LLM judges, final debate verdicts only, every vote counted,
    unparsed replies counted as misses (ScaleEval eq. 2); the human reference is the
    majority of the human votes on each comparison (``majority``, PRD Table 3) or every
    vote (``votes``, MT-Bench), a human never compared with its own votes: the numbers
    of ``peercore agree --judge J --reference human: --reference-mode M``.

    Computed once per study revision, panel and reference mode (:meth:`Study.cached`): the
    page, the evaluator leaderboard and the exports share one result; treat it as read-only.
    """
    reference_mode = parse(ReferenceMode, reference_mode, "reference_mode")
    return study.cached(("meta_evaluation", panel, reference_mode.value),
                        lambda: _meta_evaluation(study, panel=panel, reference_mode=reference_mode))


def _meta_evaluation(study: Study, *, panel: str | None, reference_mode: ReferenceMode) -> MetaEvaluation:
    selected = study.select(Selection(kinds=("llm", "human"), repeated_votes="each"), include_invalid=True)
    everything = selected.verdicts
    kinds = np.array(everything.judge_kinds, dtype=object)
    is_human = (kinds == "human")[everything.judge] if len(everything) else np.zeros(0, dtype=bool)
    humans = V.take(everything, is_human & (everything.winner >= 0))
    machine = V.take(everything, ~is_human)
    gold_rows = study.gold(panel)
    # The judges' verdicts as a table only when there is something to compare them with (decoding
    # a million verdicts takes about half a second; with no gold and no human vote nothing reads it).
    machine_frame = _decoded(study, machine) if len(machine) and (len(gold_rows) or len(humans)) else None
    if len(gold_rows) and machine_frame is not None and machine_frame["criterion"].isna().all():
        # Verdicts recorded without a criterion are compared with the gold of any criterion.
        gold_rows = gold_rows.assign(criterion=pd.Series(pd.NA, index=gold_rows.index, dtype="str"))
    debates = study.debates()
    if panel is not None:
        debates = debates[debates["panel"].replace("", CONSENSUS) == panel]
    decided = study.adjudications()
    gold_accuracy = _accuracy(machine_frame, gold_rows, reference_mode=ReferenceMode.MAJORITY) \
        if machine_frame is not None and len(gold_rows) else None
    scaleeval = scaleeval_table(machine_frame, gold_rows, study.question_groups()) \
        if gold_accuracy is not None else pd.DataFrame()
    human_accuracy = _accuracy(machine_frame, _decoded(study, humans), reference_mode=reference_mode) \
        if machine_frame is not None and len(humans) else None
    n_judges = len(machine.judges_present())
    verdicts = pd.Series(np.bincount(machine.judge[machine.winner >= 0], minlength=len(machine.judges)),
                         index=list(machine.judges)) if len(machine) else pd.Series(dtype=float)
    return MetaEvaluation(
        n_judges=n_judges, n_humans=len(humans.judges_present()), n_gold=len(gold_rows), panel=panel,
        reference_mode=reference_mode.value, gold_accuracy=gold_accuracy, human_accuracy=human_accuracy,
        scaleeval=scaleeval, criteria=sorted(scaleeval["criterion"].fillna("(none)").unique()) if len(scaleeval) else [],
        human_reference=reference_description(humans) if reference_mode is ReferenceMode.MAJORITY
        else _votes_description(humans),
        costs=cost_table(study, gold_accuracy, human_accuracy, verdicts[verdicts > 0],
                         human=HUMAN_REFERENCE_WORDS[reference_mode]),
        variation=criteria_variation(machine_frame if machine_frame is not None else pd.DataFrame(), gold_rows,
                                     families=study.judge_families()),
        metrics={"Judges evaluated": len(_scored(gold_accuracy, human_accuracy)), "Gold verdicts": len(gold_rows),
                 "Debates agreed": int((debates["status"] == "agreed").sum()),
                 "Adjudicated debates": int(decided[decided["debate_id"].isin(debates["id"])]["debate_id"].nunique())},
        warnings=tuple(selected.notes.messages()))


def _scored(*accuracies: pd.DataFrame | None) -> set[str]:
    """The judges some accuracy table scores (against the gold set or the humans): the judges evaluated.

    A judge with verdicts on no comparison a reference covers is not evaluated, however
    many verdicts it gave ("Judges evaluated 66" when one judge was scored).
    """
    return {str(judge) for table in accuracies if table is not None for judge in table.index}


HUMAN_REFERENCE_WORDS = {ReferenceMode.MAJORITY: "the human majority", ReferenceMode.VOTES: "every human vote"}


def _votes_description(humans: V.Verdicts) -> str:
    text = reference_description(humans)
    return text.replace("the majority of the human votes on each comparison", "every human vote, each compared on "
                        "its own", 1)


def cost_table(study: Study, gold_accuracy, human_accuracy, verdicts: pd.Series, *,
               human: str = "the human majority") -> dict:
    """Cost (or, without recorded costs, verdicts given) against agreement per judge, for the chart
    (``human``: what the human reference is, in words)."""
    accuracy, against = (gold_accuracy, "the gold set") if gold_accuracy is not None else \
        (human_accuracy, human)
    cost = study.run_costs()
    judges = sorted(set(verdicts.index) if accuracy is None else set(accuracy.index))
    agreement_ = accuracy["accuracy"] if accuracy is not None else pd.Series(dtype=float)
    if len(cost.reindex(judges).dropna()):
        table = pd.DataFrame({"judge": judges, "cost": cost.reindex(judges).to_numpy(),
                              "agreement": agreement_.reindex(judges).to_numpy()})
        return {"table": table, "axis": "cost of its runs (USD)",
                "caption": f"Cost of each judge's runs against its accuracy with {against}; "
                           "judges imported from files have no recorded cost and are not drawn."}
    table = pd.DataFrame({"judge": judges, "cost": verdicts.reindex(judges).to_numpy(dtype=float),
                          "agreement": agreement_.reindex(judges).to_numpy()})
    return {"table": table, "axis": "verdicts given (no cost recorded)",
            "caption": f"No run in this study recorded a cost, so the number of verdicts stands in for the cost; "
                       f"agreement is accuracy with {against}. Runs launched on **Reviewers & runs** record their cost."}
