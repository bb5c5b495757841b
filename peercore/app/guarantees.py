"""Guarantees a user can rely on (issue 24): one use case each over the maths of :mod:`peercore.audit`,
:mod:`peercore.evaluators` and :mod:`peercore.selective`.

* :func:`audit_leaderboard` -- for each pair of adjacent models, the votes whose removal
  swaps them (Huang, Shen, Wei & Broderick, ICLR 2026, arXiv 2508.11847);
* :func:`evaluator_leaderboard` -- each judge's agreement with humans (the
  Meta-evaluation's own :func:`peercore.app.agreement.meta_evaluation`), rank agreement
  of its leaderboard with the humans', stability, position consistency and biases,
  price and time per 1,000 comparisons (AlpacaEval's annotator leaderboard);
* :func:`escalation_plan` -- a cascade of judges calibrated so that agreement with the
  human majority on the verdicts kept is at least ``target_agreement`` with probability
  at least ``1 - risk`` (Jung, Brahman & Choi, "Trust or Escalate", ICLR 2025, arXiv
  2407.18370); the plan (a dry run). Running the cascade and queueing the rest as label
  requests is :func:`peercore.app.escalation.run_cascade`, on the same thresholds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from peercore.app.agreement import meta_evaluation
from peercore.app.calibration import oriented_scores, reference_codes
from peercore.app.health import health as judge_health_table
from peercore.app.leaderboard import leaderboard
from peercore.app.study import Study
from peercore.audit import audit_bradley_terry, audit_win_rate
from peercore.domain import verdicts as V
from peercore.domain.selection import Selection
from peercore.domain.plain import json_value
from peercore.evaluators import per_thousand, prefers_lists, prefers_longer, rank_agreement, stability
from peercore.position import swap_consistency, wilson
from peercore.reports import run_costs
from peercore.selective import CascadePlan, agrees_with_reference, confidence_from_probability, plan_cascade, \
    verdict_from_probability

__all__ = ["Audit", "audit_leaderboard", "AUDIT_METHODS", "EvaluatorLeaderboard", "evaluator_leaderboard",
           "EVALUATOR_COLUMNS", "EscalationPlan", "escalation_plan", "CascadeEvidence", "cascade_evidence",
           "check_escalation_options", "FRAGILE_SHARE", "fragile_pairs", "fragile_marks"]

AUDIT_METHODS = ("bt", "winrate")
_VOTE_KEYS = ("question_id", "turn", "model_a", "model_b", "judge", "vote", "row")


# ================================================================================ audit


@dataclass(frozen=True)
class Audit:
    """The robustness audit of one leaderboard (:func:`audit_leaderboard`).

    Attributes
    ----------
    pairs : one dict per pair of adjacent models, ranks 1-2 first: ``higher, lower, drop,
        share, pair_share, verified, votes`` (issue 24's shape; ``votes``: each removed
        vote's ``question_id, turn, model_a, model_b, judge, vote, row``).
    gaps : per pair, the score gap before and after the removal and the AMIP count.
    method : ``bt`` or ``winrate``; n_votes : the votes of the leaderboard.
    warnings : what the selection merged or left out.
    """

    pairs: list[dict]
    gaps: list[dict]
    method: str
    n_votes: int
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"pairs": self.pairs, "method": self.method, "n_votes": self.n_votes, "warnings": list(self.warnings)}


def audit_leaderboard(study: Study, selection: Selection | None = None, *, method: str = "bt", soft: bool = False,
                      prior: float | None = None, reweight: bool = False, cap: int | None = None) -> Audit:
    """For each pair adjacent in ``peercore rank``'s leaderboard, the votes whose removal swaps them.

    Huang et al. (ICLR 2026, arXiv 2508.11847), section 3: Bradley-Terry pairs by the
    AMIP influence order then exact refits (:func:`peercore.audit.audit_bradley_terry`;
    ``drop`` is an upper bound on the fewest, ``verified`` when the refit swapped); win
    rates by the exact minimum (:func:`peercore.audit.audit_win_rate`, PRD eq. 1).
    ``share`` = drop / all votes (the paper's measure), ``pair_share`` = drop / the pair's
    battles.

    The votes are those ``peercore rank`` ranks with the same ``selection`` (final rounds,
    majority of repeated votes unless ``repeated_votes="each"``). A vote is named by
    ``question_id, turn, model_a, model_b, judge, vote`` and ``row`` (a file's 0-based data
    row, a stored verdict's id); with the majority of repeated votes, a removed verdict is
    that majority, named by its first vote.

    Raises
    ------
    ValueError
        On an unknown ``method``, a selection with no vote, or a bad ``prior``/``cap``.
    """
    if method not in AUDIT_METHODS:
        raise ValueError(f"method must be one of {AUDIT_METHODS}, got {method!r}")
    if method != "bt" and (prior is not None or reweight):
        raise ValueError(f"a prior and reweighting are Bradley-Terry options (method 'bt'), got method {method!r}")
    selected = study.select(selection)
    chosen = selected.verdicts
    if len(chosen) == 0:
        raise ValueError("the selection holds no judgments to audit")
    score = V.score_a(chosen, soft=soft)
    K = chosen.n_models
    if method == "bt":
        found = audit_bradley_terry(chosen.a, chosen.b, score, n_models=K, prior=prior, reweight=reweight, cap=cap)
    else:
        found = audit_win_rate(chosen.a, chosen.b, score, n_models=K, cap=cap)
    pairs, gaps = [], []
    for pair in found:
        pairs.append({"higher": chosen.models[pair.higher], "lower": chosen.models[pair.lower], "drop": pair.drop,
                      "share": json_value(pair.share), "pair_share": json_value(pair.pair_share),
                      "verified": bool(pair.verified), "votes": _votes(chosen, pair.rows)})
        gaps.append({"gap": json_value(pair.gap), "gap_after": json_value(pair.gap_after), "amip_drop": pair.amip_drop})
    return Audit(pairs=pairs, gaps=gaps, method=method, n_votes=len(chosen), warnings=selected.notes.messages())


#: A pair of adjacent models is fragile when removing fewer than this share of all votes swaps it (issue 24).
FRAGILE_SHARE = 0.01


def fragile_pairs(pairs: Sequence[Mapping], *, share: float = FRAGILE_SHARE) -> list[Mapping]:
    """The audited pairs (:attr:`peercore.app.guarantees.Audit.pairs`) that fewer than ``share`` of all votes swap.

    Only pairs whose swap a refit verified count (an unverified count is no evidence
    that the order flips).
    """
    return [pair for pair in pairs if pair.get("verified") and pair.get("share") is not None and pair["share"] < share]


def fragile_marks(pairs: Sequence[Mapping], *, share: float = FRAGILE_SHARE) -> dict[str, str]:
    """The "fragile" mark of each model whose order with its neighbour flips when a handful of votes go.

    Parameters
    ----------
    pairs : :attr:`peercore.app.guarantees.Audit.pairs` (``higher, lower, drop, share,
        verified``, ranks 1-2 first), the audit ``peercore audit`` prints.
    share : a pair is fragile when ``drop / all votes`` is below this.

    Returns
    -------
    Model -> its mark, on both models of every fragile pair (a model between two fragile
    pairs gets both): ``"swaps with B if 58 votes (0.73%) go"``, for :func:`fragile_pairs`.
    """
    marks: dict[str, list[str]] = {}
    for pair in fragile_pairs(pairs, share=share):
        count = f"{int(pair['drop']):,} votes ({pair['share']:.2%})"
        marks.setdefault(str(pair["higher"]), []).append(f"swaps with {pair['lower']} if {count} go")
        marks.setdefault(str(pair["lower"]), []).append(f"swaps with {pair['higher']} if {count} go")
    return {model: "; ".join(texts) for model, texts in marks.items()}


def _votes(chosen: V.Verdicts, rows) -> list[dict]:
    rows = np.asarray(rows, dtype=np.intp)
    out = []
    for r in rows:
        turn = int(chosen.turn[r])
        out.append({"question_id": str(chosen.questions[chosen.question[r]]), "turn": turn or None,
                    "model_a": chosen.models[chosen.a[r]], "model_b": chosen.models[chosen.b[r]],
                    "judge": chosen.judges[chosen.judge[r]], "vote": int(chosen.vote[r]), "row": int(chosen.row[r])})
    return out


# =================================================================== evaluator leaderboard

EVALUATOR_COLUMNS = [
    "judge", "verdicts", "human_n", "human_agreement", "human_agreement_low", "human_agreement_high",
    "human_n_without_ties", "human_agreement_without_ties", "human_agreement_without_ties_low",
    "human_agreement_without_ties_high", "cohen_kappa", "fleiss_kappa", "spearman", "kendall", "rank_models",
    "stability", "position_consistency", "p_first", "p_longer", "p_lists", "unparsed_share", "price_per_1000",
    "seconds_per_1000"]


@dataclass(frozen=True)
class EvaluatorLeaderboard:
    """Each LLM judge of a study as an evaluator (:func:`evaluator_leaderboard`).

    Attributes
    ----------
    table : one row per judge, best human agreement first: :data:`EVALUATOR_COLUMNS`.
    human_reference : what the human reference is (the Meta-evaluation's sentence).
    notes : why a column is empty (no humans, no answers, unknown order, no runs).
    """

    table: pd.DataFrame
    human_reference: str
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        rows = [{k: json_value(v) for k, v in row.items()} for row in self.table.to_dict(orient="records")]
        return {"judges": rows, "human_reference": self.human_reference, "notes": list(self.notes)}


def evaluator_leaderboard(study: Study, *, level: float = 0.95) -> EvaluatorLeaderboard:
    """AlpacaEval's annotator leaderboard and more, for every LLM judge of ``study`` (issue 24 section 3).

    Columns and the one function each comes from (:mod:`peercore.evaluators`):

    * ``human_agreement`` (ties included) and ``human_agreement_without_ties`` with Wilson
      intervals: :func:`peercore.app.agreement.meta_evaluation`'s ``human_accuracy`` (the
      human majority per comparison, PRD Table 3; ``peercore agree --judge J --reference
      human:``), with its Cohen's and Fleiss' kappa;
    * ``spearman``, ``kendall``: the judge's Bradley-Terry leaderboard against the humans'
      (``peercore rank``'s, every human vote), over the contestants both ranked
      (:func:`peercore.evaluators.rank_agreement`; PRD Table 2's correlation);
    * ``stability``: votes equal to the judge's own majority over K samples
      (:func:`peercore.evaluators.stability`);
    * ``position_consistency``: both orders agree (MT-Bench Table 2,
      :func:`peercore.position.swap_consistency`; empty where the order is unknown);
    * ``p_first``, ``unparsed_share``: :func:`peercore.app.health.health` (the judge health
      every page flags from, :func:`peercore.position.judge_health`);
    * ``p_longer``, ``p_lists``: :func:`peercore.evaluators.prefers_longer`,
      :func:`peercore.evaluators.prefers_lists` (Zheng et al. 2023 section 3.3) on the
      stored answers;
    * ``price_per_1000``, ``seconds_per_1000``: the runs' cost and wall time per judge
      (:func:`peercore.reports.run_costs`) per 1,000 verdicts (:func:`peercore.evaluators.per_thousand`).
    """
    everything = study.select(Selection(kinds=("llm",), repeated_votes="each"), include_invalid=True).verdicts
    notes: list[str] = []
    judges = everything.judges_present()
    if not judges:
        raise ValueError(f"study {study.name!r} has no LLM judge to put on an evaluator leaderboard")
    table = pd.DataFrame(index=pd.Index(judges, name="judge"))
    readable = everything.winner >= 0
    table["verdicts"] = pd.Series(np.bincount(everything.judge[readable], minlength=len(everything.judges)),
                                  index=list(everything.judges)).reindex(table.index).fillna(0).astype("int64")
    meta = meta_evaluation(study)
    humans = meta.human_accuracy
    if humans is None:
        notes.append("no human vote matches these judges' comparisons: the human columns are empty")
        humans = pd.DataFrame(columns=["n", "accuracy", "n_without_ties", "accuracy_without_ties", "cohen_kappa",
                                       "fleiss_kappa"])
    humans = humans.reindex(table.index)
    for column, n_col, acc_col in (("human_agreement", "n", "accuracy"),
                                   ("human_agreement_without_ties", "n_without_ties", "accuracy_without_ties")):
        n = humans[n_col].astype(float).to_numpy()
        acc = humans[acc_col].astype(float).to_numpy()
        low, high = wilson(np.round(np.nan_to_num(acc) * np.nan_to_num(n)), np.nan_to_num(n), level)
        table["human_n" if n_col == "n" else "human_n_without_ties"] = n
        table[column] = acc
        table[f"{column}_low"], table[f"{column}_high"] = low, high
    table["cohen_kappa"] = humans["cohen_kappa"].astype(float).to_numpy()
    table["fleiss_kappa"] = humans["fleiss_kappa"].astype(float).to_numpy()
    _rank_columns(study, table, notes)
    votes = V.take(everything, readable)
    # Only a comparison with two votes has a stability, and one holds a vote numbered above 0 or a later
    # round: the other questions' verdicts (most of them at Arena scale) are not grouped at all.
    repeats = V.take(votes, V.questions_with(votes, (votes.vote != 0) | (votes.round != 0)))
    comparison = V.comparison_ids(repeats, with_round=False)
    stable = stability(comparison, np.array(repeats.judges, dtype=object)[repeats.judge], repeats.winner,
                       judges=judges)
    table["stability"] = stable["stability"]
    consistency = swap_consistency(everything).reindex(table.index)
    table["position_consistency"] = consistency["consistent"]
    health = judge_health_table(study, level=level).reindex(table.index)  # the pages' flags' table
    table["p_first"] = health["p_first"]
    table["unparsed_share"] = health["invalid_share"]
    _style_columns(study, votes, table, notes)
    _run_columns(study, table, notes)
    table = table.reset_index()[EVALUATOR_COLUMNS]
    table = table.sort_values("human_agreement", ascending=False, kind="stable", na_position="last")
    return EvaluatorLeaderboard(table=table.reset_index(drop=True), human_reference=meta.human_reference, notes=notes)


def _rank_columns(study: Study, table: pd.DataFrame, notes: list[str]) -> None:
    table["spearman"] = table["kendall"] = math.nan
    table["rank_models"] = 0
    try:
        humans = leaderboard(study, Selection(kinds=("human",), repeated_votes="each"), method="bt", bootstrap=0)
    except ValueError:
        notes.append("no human leaderboard: the rank correlations are empty")
        return
    reference = humans.table.set_index("model")["score"]
    for judge in table.index:
        try:
            own = leaderboard(study, Selection(judges=(judge,)), method="bt", bootstrap=0).table.set_index("model")
        except ValueError:
            continue
        found = rank_agreement(own["score"], reference)
        table.loc[judge, ["spearman", "kendall", "rank_models"]] = [found["spearman"], found["kendall"],
                                                                   found["n_models"]]


def _style_columns(study: Study, votes: V.Verdicts, table: pd.DataFrame, notes: list[str]) -> None:
    answers = study.answers()
    table["p_longer"] = table["p_lists"] = math.nan
    if answers is None or len(answers) == 0:
        notes.append("no stored answers: P(prefers longer) and P(prefers lists) are empty")
        return
    # A turn not given (0 in the read model, missing in the answers) is the first turn.
    turns_given = answers["turn"] if "turn" in answers.columns else [1] * len(answers)
    text = {(str(q), str(m), max(int(t), 1) if pd.notna(t) else 1): a
            for q, m, t, a in zip(answers["question_id"], answers["model"], turns_given, answers["answer"])}
    question = [str(q) for q in votes.questions[votes.question]]
    turns = np.maximum(votes.turn, 1).tolist()
    answer_a = [text.get((q, votes.models[m], t)) for q, m, t in zip(question, votes.a, turns)]
    answer_b = [text.get((q, votes.models[m], t)) for q, m, t in zip(question, votes.b, turns)]
    judge = np.array(votes.judges, dtype=object)[votes.judge]
    longer = prefers_longer(judge, votes.winner, _lengths(answer_a), _lengths(answer_b))
    lists = prefers_lists(judge, votes.winner, answer_a, answer_b)
    table["p_longer"] = longer["p_longer"].reindex(table.index)
    table["p_lists"] = lists["p_lists"].reindex(table.index)


def _lengths(texts) -> np.ndarray:
    return np.array([len(x) if isinstance(x, str) else np.nan for x in texts], dtype=float)


def _run_columns(study: Study, table: pd.DataFrame, notes: list[str]) -> None:
    runs = study.runs()
    table["price_per_1000"] = table["seconds_per_1000"] = math.nan
    if study.store is None or len(runs) == 0:
        notes.append("no runs recorded (imported verdicts): price and seconds per 1,000 are empty")
        return
    cost = study.run_costs()
    seconds = {}
    if {"created_at", "updated_at"} <= set(runs.columns):
        span = (pd.to_datetime(runs["updated_at"], errors="coerce", utc=True)
                - pd.to_datetime(runs["created_at"], errors="coerce", utc=True)).dt.total_seconds()
        seconds = dict(zip(runs["id"], span.fillna(0.0).clip(lower=0.0)))
    time = run_costs(study.run_configs(), seconds)
    verdicts = table["verdicts"].astype(float)
    table["price_per_1000"] = per_thousand(cost.reindex(table.index), verdicts).reindex(table.index)
    table["seconds_per_1000"] = per_thousand(time.reindex(table.index), verdicts).reindex(table.index)


# ====================================================================== escalation plan


@dataclass(frozen=True)
class CascadeEvidence:
    """What a cascade is calibrated on, per comparison (:func:`cascade_evidence`).

    A comparison is a question, an unordered pair of models, a turn and a criterion.

    Attributes
    ----------
    keys : one ``(question_id, first model, second model, turn, criterion)`` per
        comparison of the study (models in name order; turn 1 where none was given;
        criterion ``""`` for none).
    label : the human majority's verdict code per comparison, oriented as the key
        (0 first model, 1 second, 2 tie, -1 no reference vote).
    stages : per stage, ``(confidence, agrees)`` arrays over the comparisons (NaN
        confidence where the stage has no readable verdict).
    judged : per stage, whether it has any verdict (valid or not) on each comparison.
    votes : per stage, its verdicts on each comparison (both orders, K samples).
    """

    keys: list[tuple[str, str, str, int, str]]
    label: np.ndarray
    stages: list[tuple[np.ndarray, np.ndarray]]
    judged: list[np.ndarray]
    votes: list[np.ndarray] = field(default_factory=list)

    def calibration(self, ties: str = "exclude") -> np.ndarray:
        """The comparisons calibration uses: a human label, a tie only with ``ties="disagree"``."""
        return (self.label >= 0) & ((self.label != V.TIE) | (ties == "disagree"))


def cascade_evidence(study: Study, *, cascade: Sequence[str], reference: str, ties: str = "exclude"
                     ) -> CascadeEvidence:
    """Each comparison's human label and each stage judge's confidence and agreement (Trust or Escalate, 2.2).

    A stage's verdict on a comparison is the mean of its verdicts there (``p_a`` where
    given; both orders and K samples averaged) and its confidence :math:`\\max(\\bar p,
    1 - \\bar p)` (:func:`peercore.selective.confidence_from_probability`). The human
    label is the majority of the reference's votes. ``cascade`` may be empty (the labels
    only).

    Raises
    ------
    ValueError
        If a stage names no judge of the study, or ``reference`` names no judge (a message
        starting with "no human labels").
    """
    everything = study.select(Selection(repeated_votes="each")).verdicts
    for judge in cascade:
        if judge.endswith(":") or judge not in set(everything.judges):
            raise ValueError(f"cascade judge {judge!r} is not one judge of study {study.name!r}; judges are "
                             f"{list(everything.judges)}")
    is_reference = reference_codes(everything, reference, study=study.name)  # a name, prefix or list of them
    low, high, score = oriented_scores(everything)
    unit = V.group_ids([everything.question, low, high, everything.turn, everything.criterion])
    n_units = int(unit.max(initial=-1)) + 1
    refs = is_reference[everything.judge]
    vote = np.sign(2.0 * score[refs] - 1.0)  # +1 the unit's first model, -1 the second, 0 tie
    total = np.bincount(unit[refs], vote, minlength=n_units)
    has_label = np.bincount(unit[refs], minlength=n_units) > 0
    label = np.where(total > 0, V.WINNER_A, np.where(total < 0, V.WINNER_B, V.TIE)).astype(np.int8)
    label[~has_label] = V.UNPARSED
    keys = _unit_keys(everything, unit, low, high, n_units)
    # A key names its models in name order; the unit's first model is the lower model code.
    flipped = np.array([everything.models[lo] != key[1] for key, lo in zip(keys, _first_of(unit, low, n_units))],
                       dtype=bool)
    label = np.where(flipped & (label == V.WINNER_A), V.WINNER_B,
                     np.where(flipped & (label == V.WINNER_B), V.WINNER_A, label)).astype(np.int8)
    stages, judged, votes = [], [], []
    for judge in cascade:
        own = everything.judge == everything.judges.index(judge)
        count = np.bincount(unit[own], minlength=n_units)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(count > 0, np.bincount(unit[own], score[own], minlength=n_units) / np.maximum(count, 1),
                         np.nan)
        p = np.where(flipped, 1.0 - p, p)
        stages.append((confidence_from_probability(p), agrees_with_reference(verdict_from_probability(p), label,
                                                                             ties=ties)))
        judged.append(count > 0)
        votes.append(count)
    return CascadeEvidence(keys=keys, label=label, stages=stages, judged=judged, votes=votes)


def _first_of(unit: np.ndarray, low: np.ndarray, n_units: int) -> np.ndarray:
    first = np.zeros(n_units, dtype=np.intp)
    first[unit] = low
    return first


def _unit_keys(everything: V.Verdicts, unit, low, high, n_units: int) -> list[tuple[str, str, str, int, str]]:
    row = np.zeros(n_units, dtype=np.intp)
    row[unit] = np.arange(len(unit))
    keys = []
    for r in row:
        first, second = sorted((everything.models[low[r]], everything.models[high[r]]))
        criterion = everything.criteria[everything.criterion[r]] if len(everything.criteria) else ""
        keys.append((str(everything.questions[everything.question[r]]), first, second,
                     max(int(everything.turn[r]), 1), str(criterion or "")))
    return keys


@dataclass(frozen=True)
class EscalationPlan:
    """A calibrated cascade of judges, a dry run (:func:`escalation_plan`).

    Attributes
    ----------
    stages : one dict per judge, cheapest first, then ``humans``: ``stage, threshold,
        reach, kept_share`` (of what reached it), ``kept`` (of all), ``agreement`` (on the
        kept calibration comparisons), ``upper_bound_disagreement``, ``guarantee``,
        ``level``, ``cost_per_1000``.
    target_agreement, risk : what was asked (alpha = 1 - target, delta = risk).
    n_calibration : labelled calibration comparisons (human majority known, every stage).
    agreement, guarantee, escalated : over the whole cascade.
    comparisons : comparisons the cascade would be run on (any stage judged them).
    warnings : choices made (ties, confidence of hard verdicts).
    cascade_plan : the :class:`peercore.selective.CascadePlan` (thresholds), for
        :func:`peercore.selective.apply_plan`; evidence : the :class:`CascadeEvidence` it
        was calibrated on.
    """

    stages: list[dict]
    target_agreement: float
    risk: float
    n_calibration: int
    agreement: float
    guarantee: float
    escalated: float
    comparisons: int
    ties: str
    warnings: list[str] = field(default_factory=list)
    cascade_plan: CascadePlan | None = field(default=None, repr=False, compare=False)
    evidence: CascadeEvidence | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict:
        return {"stages": [{k: json_value(v) for k, v in s.items()} for s in self.stages],
                "target_agreement": self.target_agreement, "risk": self.risk, "n_calibration": self.n_calibration,
                "agreement": json_value(self.agreement), "guarantee": json_value(self.guarantee),
                "escalated": json_value(self.escalated), "comparisons": self.comparisons, "ties": self.ties,
                "dry_run": True, "warnings": list(self.warnings)}


def check_escalation_options(*, cascade: Sequence[str], target_agreement: float, risk: float) -> None:
    """Refuse a target or risk outside (0, 1), an empty cascade or one naming an entry twice (ValueError)."""
    for name, value in (("target_agreement", target_agreement), ("risk", risk)):
        if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0.0 < value < 1.0):
            raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    if not cascade:
        raise ValueError("cascade is empty; name at least one judge")
    if len(set(cascade)) != len(cascade):
        raise ValueError(f"cascade names a judge twice: {list(cascade)}")


def escalation_plan(study: Study, *, cascade: list[str] | tuple[str, ...], reference: str, target_agreement: float,
                    risk: float, ties: str = "exclude", min_kept: int = 30) -> EscalationPlan:
    """Thresholds of a cascade of judges with a guaranteed agreement with the human majority (a dry run).

    Jung, Brahman & Choi (ICLR 2025, arXiv 2407.18370): each stage keeps a verdict when its
    confidence clears a threshold chosen on the human-labelled comparisons by fixed-sequence
    testing with exact Clopper-Pearson bounds (section 2.1, eqs. 2-4), stage s on what
    stages before it did not keep at level ``risk / S`` (section 2.3;
    :func:`peercore.selective.plan_cascade`). With probability at least ``1 - risk``,
    agreement with the human majority on the kept verdicts is at least
    ``target_agreement``. The run (:func:`peercore.app.escalation.run_cascade`) uses
    this same function for its thresholds.

    Comparisons are a question, unordered pair, turn and criterion. A stage's verdict is
    the mean of its verdicts there (``p_a`` where given; both orders and K samples
    averaged) and its confidence :math:`\\max(\\bar p, 1 - \\bar p)`
    (:func:`peercore.selective.confidence_from_probability`, the paper's section 2.2: a
    label probability, the agreement of K samples or of both orders;
    :func:`cascade_evidence`). The human label is the majority of the reference's votes;
    a human-majority tie is left out of calibration (``ties="exclude"``) or counted as a
    disagreement (``"disagree"``).

    Raises
    ------
    ValueError
        If a stage names no judge or a judge twice, ``reference`` names no judge, the
        target or risk lies outside (0, 1), or no comparison has a human label and a
        verdict of the first stage (a message starting with "no human labels").
    """
    check_escalation_options(cascade=cascade, target_agreement=target_agreement, risk=risk)
    evidence = cascade_evidence(study, cascade=cascade, reference=reference, ties=ties)
    stages = evidence.stages
    first_labelled = (evidence.label >= 0) & ~np.isnan(stages[0][0])
    if not first_labelled.any():
        raise ValueError(f"no human labels: reference {reference!r} has no vote on a comparison {cascade[0]!r} judged "
                         f"in study {study.name!r}; the plan needs human-labelled comparisons to calibrate on")
    everything = study.select(Selection(repeated_votes="each")).verdicts
    costs = _stage_costs(study, everything, cascade)
    plan = plan_cascade(stages, alpha=1.0 - float(target_agreement), delta=float(risk), costs=costs,
                        min_kept=min_kept)
    table = plan.table(list(cascade)).reset_index()
    warnings = [] if costs is not None else ["no recorded run cost for every stage (imported verdicts): the cost per "
                                             "1,000 comparisons is empty"]
    if ties == "exclude":
        warnings.append("comparisons whose human majority is a tie are left out of calibration; the guarantee is "
                        "about comparisons humans prefer an answer on")
    for judge, (confidence, _), count in zip(cascade, stages, evidence.votes):
        c = confidence[~np.isnan(confidence)]
        if len(c) and np.isin(c, (0.5, 1.0)).all() and (count[count > 0] == 1).all():
            warnings.append(f"{judge!r} gives one hard verdict per comparison (no probability, samples or both "
                            "orders): its confidence is 1 on every preference, so its stage keeps all of them or none")
    for k, stage in enumerate(plan.stages):
        if not math.isfinite(stage.threshold):
            warnings.append(f"stage {cascade[k]!r} keeps nothing: no threshold kept {min_kept}+ calibration "
                            f"comparisons with a disagreement bound under {1 - target_agreement:.3g}")
    judged = np.logical_or.reduce(evidence.judged)
    return EscalationPlan(stages=table.to_dict(orient="records"), target_agreement=float(target_agreement),
                          risk=float(risk), n_calibration=plan.n_calibration, agreement=plan.agreement,
                          guarantee=plan.guarantee, escalated=plan.escalated, comparisons=int(judged.sum()), ties=ties,
                          warnings=warnings, cascade_plan=plan, evidence=evidence)


def _stage_costs(study: Study, everything: V.Verdicts, cascade) -> list[float] | None:
    """Each stage's cost per comparison: its runs' cost (:func:`peercore.reports.run_costs`) over its verdicts.

    None unless every stage has a recorded cost (imported verdicts have none).
    """
    runs = study.runs()
    if study.store is None or len(runs) == 0:
        return None
    cost = study.run_costs()
    verdicts = np.bincount(everything.judge, minlength=len(everything.judges))
    out = []
    for judge in cascade:
        n = verdicts[everything.judges.index(judge)]
        if judge not in cost.index or n == 0:
            return None
        out.append(float(cost[judge]) / float(n))
    return out
