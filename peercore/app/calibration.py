"""A judge's leaderboard anchored to human labels (issue 23): one use case over :mod:`peercore.calibration`.

:func:`calibrated_leaderboard` is what ``peercore calibrate`` prints. It matches a
judge's verdicts to a reference's votes (people, usually ``human:``) and gives each
model's score as the reference would have produced it on all the judge's comparisons,
by prediction-powered inference (Boyeau, Angelopoulos et al. 2024, "AutoEval Done
Right", arXiv 2403.07008; PPI++, Angelopoulos, Duchi & Zrnic 2023, arXiv 2311.01453),
beside the judge-only and the humans-only estimates and the judge's own score corrected
for its error rates (Lee et al. 2025, arXiv 2511.21140, section 3).

What is matched to what (:func:`matched_comparisons`):

* the **population** is the judge's comparisons: one unit per question, unordered pair of
  models, turn and criterion that the judge gave a readable verdict on. Several verdicts of
  the judge on one unit (both presentation orders, K samples, debate rounds after the
  final-round filter) count as one comparison whose outcome is their mean, a soft
  verdict; a verdict with a probability ``p_a`` counts ``p_a`` (soft verdicts used as
  such). Every outcome is written in the unit's orientation (its lower-coded model
  first); re-orienting the judge to each vote's order instead changes no number, since a
  comparison (a, b) with outcome s is the same battle as (b, a) with 1 - s;
* **each reference vote is a label** on the unit it is about, in either presentation
  order (re-oriented). A unit with several votes is one labelled comparison whose label
  is their mean (the sampling unit is the comparison, :mod:`peercore.calibration`);
  votes on comparisons the judge never judged are left out, said in the warnings;
* a verdict without a turn is on the first turn (a label request's turn is 1 or more).

The reference may be several names or prefixes, comma-separated (``human:,adjudicator:``:
imported human votes and the decisions of the Adjudication page, :func:`reference_names`).

Which comparisons people should label next (:func:`label_requests`, ``peercore calibrate
--request K``): active inference (Zrnic and Candes 2024, "Active Statistical Inference",
arXiv 2403.03208, eq. (3)): among the judge's comparisons the reference has not labelled,
comparison i is requested with probability :math:`\\pi_i` proportional to the judge's
uncertainty mixed with uniform (:func:`peercore.calibration.active_probabilities`), and
:math:`\\pi_i` is stored with the request (its weight :math:`1/\\pi_i` in the estimator).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from peercore.app.study import Study
from peercore.calibration import (active_probabilities, corrected_win_rates, draw_exactly, ppi_bradley_terry,
                                  ppi_win_rates, ppi_win_rates_vs_baseline, uncertainty)
from peercore.domain import verdicts as V
from peercore.domain.selection import Selection
from peercore.domain.plain import json_value

__all__ = ["Matched", "matched_comparisons", "oriented_scores", "CalibratedLeaderboard", "calibrated_leaderboard",
           "METHODS", "LEADERBOARD_COLUMNS", "NO_LABELS", "reference_names", "reference_codes", "LabelRequests",
           "label_requests", "queue_label_requests", "REQUEST_COLUMNS", "REQUESTED_BY", "LabelRequestEffect",
           "label_request_effect", "median_width"]

METHODS = ("winrate", "bt")
LEADERBOARD_COLUMNS = ["model", "score", "ci_low", "ci_high", "judge_score", "reference_score", "reference_ci_low",
                       "reference_ci_high", "effective_labels", "battles", "labelled", "lam"]
NO_LABELS = "no human labels"  # how the message of a study without reference votes on the judge's comparisons starts
_LITTLE = 0.05  # a power-tuning lambda below this: the judge added (almost) nothing


@dataclass(frozen=True)
class Matched:
    """A judge's comparisons and the reference's votes on them (:func:`matched_comparisons`).

    Attributes
    ----------
    models : names of the model codes of ``a`` and ``b`` (only models the judge compared).
    a, b : (N,) each comparison's models, ``a < b`` (the unit's orientation).
    judge_score : (N,) the judge's outcome for ``a`` in [0, 1] (mean of its verdicts).
    label_index, label_score : (L,) the comparison of each reference vote and its outcome
        for that comparison's ``a``.
    votes_elsewhere : reference votes on comparisons the judge did not judge (left out).
    judge_verdicts : the judge's readable verdicts behind the N comparisons.
    question, turn, criterion : (N,) each comparison's question id, turn (1 or more: a
        verdict without a turn is on the first) and criterion ('' for none).
    judge_count : (N,) the judge's verdicts on each comparison.
    judge_soft : (N,) whether one of them carries a probability ``p_a``.
    """

    models: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    judge_score: np.ndarray
    label_index: np.ndarray
    label_score: np.ndarray
    votes_elsewhere: int
    judge_verdicts: int
    question: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object), repr=False)
    turn: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    criterion: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object), repr=False)
    judge_count: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    judge_soft: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool), repr=False)


def oriented_scores(chosen: V.Verdicts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low model, high model, outcome for the low model) of every verdict, soft where ``p_a`` is given."""
    score = V.score_a(chosen, soft=True)
    low, high = np.minimum(chosen.a, chosen.b), np.maximum(chosen.a, chosen.b)
    return low, high, np.where(chosen.a == low, score, 1.0 - score)


def reference_names(reference: str) -> list[str]:
    """The names and prefixes of a reference: ``"human:,adjudicator:"`` -> ``["human:", "adjudicator:"]``.

    Raises
    ------
    ValueError
        If no name is given.
    """
    names = [part.strip() for part in str(reference).split(",") if part.strip()]
    if not names:
        raise ValueError(f"the reference names no judge: got {reference!r}")
    return names


def reference_codes(verdicts: V.Verdicts, reference: str, *, study: str = "") -> np.ndarray:
    """Which judges (a boolean per judge) the reference names (:func:`reference_names`; each a name or a
    prefix ending in ``:``, :func:`peercore.domain.verdicts.judge_codes`).

    A name of a list that matches no judge is left out (``adjudicator:`` before the first
    decision); at least one must match.

    Raises
    ------
    ValueError
        Starting with :data:`NO_LABELS` when no name matches a judge.
    """
    chosen = np.zeros(len(verdicts.judges), dtype=bool)
    for name in reference_names(reference):
        try:
            chosen |= V.judge_codes(verdicts, [name])
        except ValueError:
            continue
    if not chosen.any():
        where = f" of study {study!r}" if study else ""
        raise ValueError(f"{NO_LABELS}: reference {reference!r} names no judge{where} (judges: "
                         f"{', '.join(verdicts.judges)}); import human votes or adjudicate some comparisons first")
    return chosen


def matched_comparisons(study: Study, *, judge: str, reference: str, final_only: bool = True,
                        leave_out: pd.DataFrame | None = None, unlabelled_ok: bool = False) -> Matched:
    """The judge's comparisons (the population) and the reference's votes on them (the labels).

    See the module docstring for the matching rule.

    Parameters
    ----------
    study : the study.
    judge : one judge's name.
    reference : a judge's name, or a prefix ending in ``:`` naming several (``human:``), or
        several of them comma-separated (:func:`reference_names`).
    final_only : each judge's final-round verdicts only (as ``peercore rank`` by default).
    leave_out : optional reference votes to leave out, one row per vote's judge and
        comparison: ``judge, question_id, model_a, model_b, turn, criterion`` (the model
        order does not matter; what :func:`label_request_effect` removes to show what the
        decided label requests added).
    unlabelled_ok : a reference that names no judge of the study gives no label instead
        of the :data:`NO_LABELS` error (what :func:`label_requests` needs: requests are how
        labels start).

    Raises
    ------
    ValueError
        If ``judge`` names no judge or several, or the judge is among the reference's
        judges; a reference that names no judge of the study gets a message starting with
        :data:`NO_LABELS`.
    """
    everything = study.select(Selection(final_only=final_only, repeated_votes="each")).verdicts
    judges = np.array(everything.judges, dtype=object)
    if judge.endswith(":") or judge not in set(everything.judges):
        raise ValueError(f"judge {judge!r} is not one judge of study {study.name!r}; judges are "
                         f"{list(everything.judges)}")
    try:
        is_reference = reference_codes(everything, reference, study=study.name)
    except ValueError:
        if not unlabelled_ok:
            raise
        is_reference = np.zeros(len(everything.judges), dtype=bool)  # no reference judge yet: no label
    judge_code = int(np.flatnonzero(judges == judge)[0])
    if is_reference[judge_code]:
        raise ValueError(f"judge {judge!r} is one of the reference's judges ({reference!r}); choose another reference")
    own = everything.judge == judge_code
    refs = is_reference[everything.judge]
    low, high, score = oriented_scores(everything)
    turn = np.maximum(everything.turn, 1)  # no turn given: the first (a label request's decision says 1)
    unit = V.group_ids([everything.question, low, high, turn, everything.criterion])
    if leave_out is not None and len(leave_out):
        refs &= ~_left_out(everything, leave_out, low, high, turn)
    judged_units, position = np.unique(unit[own], return_inverse=True)
    if len(judged_units) == 0:
        raise ValueError(f"judge {judge!r} has no readable verdict in study {study.name!r}")
    n = len(judged_units)
    count = np.bincount(position, minlength=n)
    judge_score = np.bincount(position, score[own], minlength=n) / count
    first = np.full(n, -1, dtype=np.int64)
    rows = np.flatnonzero(own)
    first[position] = rows  # any verdict of a unit gives its models (low and high are the unit's)
    soft = np.bincount(position, np.isfinite(everything.p_a[own]), minlength=n) > 0
    ref_rows = np.flatnonzero(refs)
    where = np.searchsorted(judged_units, unit[ref_rows])
    where = np.minimum(where, n - 1)
    on_judged = judged_units[where] == unit[ref_rows]
    a_codes, b_codes = low[first], high[first]
    used = np.unique(np.r_[a_codes, b_codes])
    recode = np.full(everything.n_models, -1, dtype=np.intp)
    recode[used] = np.arange(len(used))
    return Matched(models=tuple(everything.models[k] for k in used), a=recode[a_codes], b=recode[b_codes],
                   judge_score=judge_score, label_index=where[on_judged].astype(np.intp),
                   label_score=score[ref_rows[on_judged]], votes_elsewhere=int((~on_judged).sum()),
                   judge_verdicts=int(own.sum()),
                   question=np.asarray(everything.questions, dtype=object)[everything.question[first]],
                   turn=turn[first].astype(np.int64),
                   criterion=np.asarray(everything.criteria, dtype=object)[everything.criterion[first]],
                   judge_count=count.astype(np.int64), judge_soft=soft)


def _left_out(everything: V.Verdicts, leave_out: pd.DataFrame, low: np.ndarray, high: np.ndarray,
              turn: np.ndarray) -> np.ndarray:
    """A boolean per verdict: the verdict is one of ``leave_out``'s (judge and comparison, either model order)."""
    wanted = {(str(r.judge), str(r.question_id), *sorted((str(r.model_a), str(r.model_b))),
               max(int(r.turn) if pd.notna(r.turn) else 1, 1), str(r.criterion or ""))
              for r in leave_out.itertuples(index=False)}
    judges = set(map(str, leave_out["judge"]))
    out = np.zeros(len(everything.judge), dtype=bool)
    for k in np.flatnonzero(np.isin(np.asarray(everything.judges, dtype=object)[everything.judge], list(judges))):
        key = (everything.judges[everything.judge[k]], str(everything.questions[everything.question[k]]),
               everything.models[low[k]], everything.models[high[k]], int(turn[k]),
               everything.criteria[everything.criterion[k]])
        out[k] = key in wanted
    return out


@dataclass(frozen=True)
class CalibratedLeaderboard:
    """A judge's leaderboard anchored to the reference's labels (what :func:`calibrated_leaderboard` returns).

    Attributes
    ----------
    table : one row per model, best first: :data:`LEADERBOARD_COLUMNS` (``score`` and its
        interval: PPI++; ``judge_score``: the judge alone; ``reference_*``: the labels
        alone, PPI++ at lambda = 0; ``effective_labels``: n Var(classical) / Var(PPI);
        ``battles``, ``labelled``: the model's comparisons and labelled ones; ``lam``: the
        power-tuning parameter), and for win rates without a baseline ``corrected_score``,
        ``corrected_ci_low``, ``corrected_ci_high``: the judge's win rate corrected with
        its 3 x 3 (loss, tie, win) confusion matrix on the labelled comparisons
        (Rogan-Gladen, Lee et al. 2025).
    method, judge, reference, baseline : what was asked.
    comparisons : the judge's comparisons (N); ``labelled_comparisons`` of them labelled.
    labels : reference votes used as labels; ``available_labels`` before ``--labels``.
    effective_labels : the median of the models' effective labels (the headline figure).
    seed : the seed of the label subsample (None when every label is used).
    warnings : what was left out or merged, and a judge that added nothing.
    """

    table: pd.DataFrame
    method: str
    judge: str
    reference: str
    baseline: str | None
    comparisons: int
    labelled_comparisons: int
    labels: int
    available_labels: int
    effective_labels: float
    seed: int | None
    warnings: list[str] = field(default_factory=list)

    @property
    def score_label(self) -> str:
        if self.method == "bt":
            return "Bradley-Terry (Elo scale)"
        return f"win rate against {self.baseline}" if self.baseline else "win rate"

    def to_json(self) -> dict:
        """``{"leaderboard": [...], "labels", "effective_labels", "warnings", ...}`` (issue 23's shape)."""
        rows = [{k: json_value(v) for k, v in row.items()} for row in self.table.to_dict(orient="records")]
        return {"leaderboard": rows, "labels": self.labels, "effective_labels": json_value(self.effective_labels),
                "warnings": list(self.warnings), "method": self.method, "score": self.score_label,
                "judge": self.judge, "reference": self.reference, "baseline": self.baseline,
                "comparisons": self.comparisons, "labelled_comparisons": self.labelled_comparisons,
                "available_labels": self.available_labels, "seed": self.seed}


def calibrated_leaderboard(study: Study, *, judge: str, reference: str, method: str = "winrate",
                           baseline: str | None = None, labels: int | None = None, seed: int = 0,
                           level: float = 0.95, leave_out: pd.DataFrame | None = None) -> CalibratedLeaderboard:
    """The leaderboard the reference would have produced from all the judge's comparisons, with honest intervals.

    Estimand: the reference's win rate per model (PRD eq. 1, ties half), its Bradley-Terry
    ratings (Elo scale, mean 1000, as ``peercore rank --method bt``), or its win rate
    against ``baseline``, on the judge's comparisons. Estimator: PPI++ (Angelopoulos,
    Duchi & Zrnic 2023, eq. (2) with the tuned lambda of Example 6.1) per model for win
    rates (:func:`peercore.calibration.ppi_win_rates`), the PPI M-estimator with one
    scalar lambda minimising the trace of the sandwich covariance (PPI++ eqs. (4), (7);
    Boyeau et al. 2024 section 3) for Bradley-Terry
    (:func:`peercore.calibration.ppi_bradley_terry`).

    Parameters
    ----------
    study : the study.
    judge : the judge whose verdicts are anchored (one name).
    reference : the labels' judge(s): a name or a prefix ending in ``:`` (``human:``), or
        several comma-separated (``human:,adjudicator:``: imported votes and decisions).
    method : ``"winrate"`` or ``"bt"``.
    baseline : with ``"winrate"``: each model's win rate against this model only.
    labels : use a random ``labels`` of the reference's votes on the judge's comparisons
        (drawn without replacement with ``seed``); None: all of them.
    seed : seed of that draw.
    level : two-sided coverage of the intervals.
    leave_out : reference votes to leave out (:func:`matched_comparisons`).

    Returns
    -------
    CalibratedLeaderboard

    Raises
    ------
    ValueError
        On an unknown method, a baseline with ``"bt"`` or not among the judge's models,
        ``labels`` < 1 or above the votes available, a bad judge or reference; a study
        with no reference vote on the judge's comparisons gets a message starting with
        :data:`NO_LABELS`.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if baseline is not None and method != "winrate":
        raise ValueError(f"a baseline goes with method 'winrate', got method {method!r}")
    if labels is not None and (isinstance(labels, bool) or not isinstance(labels, (int, np.integer)) or labels < 1):
        raise ValueError(f"labels must be a whole number >= 1, got {labels!r}")
    matched = matched_comparisons(study, judge=judge, reference=reference, leave_out=leave_out)
    available = len(matched.label_index)
    if available == 0:
        raise ValueError(f"{NO_LABELS}: reference {reference!r} has no vote on the {len(matched.a):,} comparisons "
                         f"judge {judge!r} judged in study {study.name!r}; import human votes on them or adjudicate "
                         "some first")
    index, score = matched.label_index, matched.label_score
    if labels is not None:
        if labels > available:
            raise ValueError(f"labels must be at most the {available:,} votes of reference {reference!r} on judge "
                             f"{judge!r}'s comparisons, got {labels:,}")
        keep = np.sort(np.random.default_rng(seed).choice(available, size=labels, replace=False))
        index, score = index[keep], score[keep]
    K = len(matched.models)
    if K < 2:
        raise ValueError(f"judge {judge!r} compared fewer than two models")
    args = (matched.a, matched.b, matched.judge_score, index, score)
    warnings: list[str] = []
    if method == "bt":
        table = _bt_table(ppi_bradley_terry(*args, n_models=K, level=level), warnings, judge)
        units = np.unique(index)
        table["battles"] = np.bincount(matched.a, minlength=K) + np.bincount(matched.b, minlength=K)
        table["labelled"] = np.bincount(matched.a[units], minlength=K) + np.bincount(matched.b[units], minlength=K)
    elif baseline is not None:
        if baseline not in matched.models:
            raise ValueError(f"baseline {baseline!r} is not among the models judge {judge!r} compared: "
                             f"{list(matched.models)}")
        table = _winrate_table(ppi_win_rates_vs_baseline(*args, baseline=matched.models.index(baseline), n_models=K,
                                                         level=level))
        table = table[table["battles"] > 0]
    else:
        table = _winrate_table(ppi_win_rates(*args, n_models=K, level=level))
        corrected = corrected_win_rates(*args, n_models=K, level=level)
        table = table.assign(corrected_score=corrected["estimate"], corrected_ci_low=corrected["ci_low"],
                             corrected_ci_high=corrected["ci_high"])
    table.insert(0, "model", [matched.models[k] for k in table.index])
    table = table.sort_values("score", ascending=False, kind="stable", na_position="last").reset_index(drop=True)
    labelled_units = np.unique(index)
    warnings[:0] = _warnings(matched, index, table, judge=judge, reference=reference, method=method)
    finite = table["effective_labels"].replace([np.inf, -np.inf], np.nan).dropna()
    return CalibratedLeaderboard(
        table=table, method=method, judge=judge, reference=reference, baseline=baseline, comparisons=len(matched.a),
        labelled_comparisons=len(labelled_units), labels=len(index), available_labels=available,
        effective_labels=float(np.median(finite)) if len(finite) else math.nan,
        seed=seed if labels is not None else None, warnings=warnings)


def _winrate_table(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "score": frame["estimate"], "ci_low": frame["ci_low"], "ci_high": frame["ci_high"],
        "judge_score": frame["judge_only"], "reference_score": frame["classical"],
        "reference_ci_low": frame["classical_low"], "reference_ci_high": frame["classical_high"],
        "effective_labels": frame["effective_labels"], "battles": frame["battles"], "labelled": frame["labelled"],
        "lam": frame["lam"]}, index=frame.index)


def _bt_table(estimate, warnings: list[str], judge: str) -> pd.DataFrame:
    frame = estimate.to_frame()
    if estimate.clipped_pairs:
        warnings.append(f"{estimate.clipped_pairs} model pairs had a rectified outcome outside [0, 1] (few unlabelled "
                        f"comparisons, or a judge biased on them) and were clipped to it")
    if estimate.lam < _LITTLE:
        warnings.append(f"judge {judge!r} added almost nothing (power-tuning lambda {estimate.lam:.3f}): the anchored "
                        "ratings are the labels' own")
    if not np.isfinite(estimate.classical).all():
        warnings.append("the labelled comparisons do not connect every model: the humans-only ratings are not "
                        "defined (null)")
    return pd.DataFrame({
        "score": frame["rating"], "ci_low": frame["ci_low"], "ci_high": frame["ci_high"], "judge_score": frame["judge"],
        "reference_score": frame["classical"], "reference_ci_low": frame["classical_low"],
        "reference_ci_high": frame["classical_high"], "effective_labels": frame["effective_labels"],
        "battles": 0, "labelled": 0, "lam": estimate.lam}, index=frame.index)


def _warnings(matched: Matched, index: np.ndarray, table: pd.DataFrame, *, judge: str, reference: str,
              method: str) -> list[str]:
    out = []
    if matched.votes_elsewhere:
        out.append(f"{matched.votes_elsewhere:,} votes of {reference!r} are on comparisons judge {judge!r} did not "
                   "judge and were left out")
    per_unit = np.bincount(index)
    several = int((per_unit > 1).sum())
    if several:
        out.append(f"{several:,} comparisons carry several votes of {reference!r}: each counts once, with the mean "
                   "of its votes as its label (the sampling unit is the comparison), so the humans-only score can "
                   f"differ from `peercore rank --judge {reference} --each-vote`")
    if method == "winrate":
        unlabelled = table.loc[table["labelled"] == 0, "model"].tolist()
        if unlabelled:
            out.append(f"no label on any comparison of {', '.join(unlabelled)}: no anchored score (null)")
        lam = table["lam"].dropna()
        if len(lam) and (lam < _LITTLE).all():
            out.append(f"judge {judge!r} added almost nothing (power-tuning lambda below {_LITTLE} for every model): "
                       "the anchored scores are the labels' own")
    return out


# ======================================================================= label requests

REQUESTED_BY = "peercore calibrate --request"
# What a label request of :func:`label_requests` carries, in order (``queued`` added by :func:`queue_label_requests`).
REQUEST_COLUMNS = ["question_id", "model_a", "model_b", "turn", "criterion", "probability", "uncertainty"]
_MIX = 0.5  # weight of the uniform rule in the active probabilities (peercore.calibration.active_probabilities)


@dataclass(frozen=True)
class LabelRequests:
    """The comparisons people should label next (what :func:`label_requests` returns).

    Attributes
    ----------
    table : one row per chosen comparison, :data:`REQUEST_COLUMNS`: ``model_a`` is the
        answer shown first (drawn at random), ``probability`` the inclusion probability
        :math:`\\pi_i` it was drawn with, ``uncertainty`` the judge's uncertainty there.
    judge, reference, seed : what was asked.
    unlabelled : the judge's comparisons without a reference label (the population drawn from).
    labelled : the judge's comparisons with one.
    informative : whether the judge's verdicts carried uncertainty (soft verdicts, both
        orders or several samples); False: every comparison had one hard verdict and the
        draw is uniform.
    """

    table: pd.DataFrame
    judge: str
    reference: str
    seed: int
    unlabelled: int
    labelled: int
    informative: bool

    def metadata(self) -> list[dict]:
        """What each request keeps in the store: judge, reference, probability, uncertainty, seed, budget."""
        return [{"judge": self.judge, "reference": self.reference, "probability": float(p), "uncertainty": float(u),
                 "seed": self.seed, "budget": len(self.table)}
                for p, u in zip(self.table["probability"], self.table["uncertainty"])]


def judge_uncertainty(matched: Matched) -> tuple[np.ndarray, bool]:
    """The judge's uncertainty on each comparison and whether it says anything.

    :math:`\\sqrt{\\bar s(1 - \\bar s)}` of the mean outcome :math:`\\bar s` of its verdicts
    (:func:`peercore.calibration.uncertainty`; Zrnic and Candes 2024, section 4): the soft
    ``p_a`` where given, the disagreement of both orders or of several samples otherwise.
    A comparison with a single hard verdict has no uncertainty to read: it gets the mean
    of the others' (neutral), and when no comparison has any, every one gets 1 (uniform).

    Returns
    -------
    (N,) uncertainties, and True when at least one comparison was informative.
    """
    informative = matched.judge_soft | (matched.judge_count > 1)
    u = uncertainty(p_a=matched.judge_score)
    if not informative.any():
        return np.ones(len(u)), False
    return np.where(informative, u, u[informative].mean()), True


def label_requests(study: Study, *, judge: str, reference: str, k: int, seed: int = 0) -> LabelRequests:
    """Which K of the judge's comparisons people should label next (active inference).

    Among the judge's comparisons (:func:`matched_comparisons`) that the reference has
    not labelled, comparison i is chosen with probability

    .. math:: \\pi_i = \\min\\big(1,\\; c\\,[(1 - \\alpha)\\,u_i/\\bar u + \\alpha]\\big),
              \\qquad \\sum_i \\pi_i = K,

    :math:`u_i` the judge's uncertainty (:func:`judge_uncertainty`), :math:`\\alpha = 1/2`
    (:func:`peercore.calibration.active_probabilities`; Zrnic and Candes 2024, "Active
    Statistical Inference", arXiv 2403.03208, section 4), exactly K of them drawn
    (:func:`peercore.calibration.draw_exactly`, inclusion probability :math:`\\pi_i`). :math:`\\pi_i` is kept
    with the request: the active estimator weights the label by :math:`1/\\pi_i`
    (their eq. (3)). A request skipped or left undecided loses that weight and breaks the
    estimator's unbiasedness. The same study, arguments and seed draw the same requests.
    The reference may have no label yet (requests are how labels start).

    Parameters
    ----------
    study : the study.
    judge : the judge whose comparisons are labelled.
    reference : the labels' judge(s), as :func:`calibrated_leaderboard` takes them.
    k : how many comparisons to request (1 to the unlabelled comparisons).
    seed : seed of the draw (and of which answer is shown first).

    Raises
    ------
    ValueError
        On a judge that is not one judge of the study, a judge among the reference's, or
        ``k`` outside 1 to the number of unlabelled comparisons.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"--request must be a whole number >= 1, got {k!r}")
    matched = matched_comparisons(study, judge=judge, reference=reference, unlabelled_ok=True)
    labelled = np.zeros(len(matched.a), dtype=bool)
    labelled[matched.label_index] = True
    free = np.flatnonzero(~labelled)
    if k > len(free):
        raise ValueError(f"--request {k} is more than the {len(free):,} comparisons of judge {judge!r} that "
                         f"reference {reference!r} has not labelled")
    u, informative = judge_uncertainty(matched)
    pi = active_probabilities(u[free], k, mix=_MIX)
    rng = np.random.default_rng(seed)
    drawn = draw_exactly(pi, rng=rng)
    chosen, pi_chosen = free[drawn], pi[drawn]
    models = np.asarray(matched.models, dtype=object)
    swap = rng.random(len(chosen)) < 0.5  # which answer is shown first: at random, no side favoured
    first = np.where(swap, matched.b[chosen], matched.a[chosen])
    second = np.where(swap, matched.a[chosen], matched.b[chosen])
    table = pd.DataFrame({
        "question_id": matched.question[chosen].astype(str), "model_a": models[first], "model_b": models[second],
        "turn": matched.turn[chosen].astype(int), "criterion": matched.criterion[chosen].astype(str),
        "probability": pi_chosen, "uncertainty": u[chosen]}, columns=REQUEST_COLUMNS)
    return LabelRequests(table=table.sort_values("probability", ascending=False, kind="stable").reset_index(drop=True),
                         judge=judge, reference=reference, seed=int(seed), unlabelled=len(free),
                         labelled=int(labelled.sum()), informative=informative)


def _comparison(question, a, b, turn, criterion) -> tuple:
    """One comparison as a key: question, unordered pair, turn (>= 1), criterion."""
    turn = 1 if turn is None or pd.isna(turn) else max(int(turn), 1)
    return (str(question), *sorted((str(a), str(b))), turn, str(criterion or ""))


def queue_label_requests(store, study: str, requests: LabelRequests, *, requested_by: str = REQUESTED_BY,
                         reason: str | None = None) -> tuple[pd.DataFrame, int]:
    """Put the requests in the adjudication queue (:meth:`peercore.store.Store.debates.add_label_requests`).

    Returns
    -------
    (table, already)
        ``requests.table`` with ``queued``: True for a request added now, False for one
        already queued (asked before: left as it is, never queued twice); ``already`` the
        number of those.
    """
    table = requests.table
    before = store.debates.table(study, kind="label_request")
    known = {_comparison(r.question_id, r.model_a, r.model_b, (r.metadata or {}).get("turn"), r.criterion)
             for r in before.itertuples(index=False)}
    queued = np.array([_comparison(*row) not in known for row in
                       table[["question_id", "model_a", "model_b", "turn", "criterion"]].itertuples(index=False)],
                      dtype=bool)
    if reason is None:
        reason = f"judge {requests.judge} is unsure here (active inference)"
    rows = [{"question_id": r.question_id, "model_a": r.model_a, "model_b": r.model_b, "turn": int(r.turn),
             "criterion": r.criterion, "metadata": meta}
            for r, meta in zip(table.itertuples(index=False), requests.metadata())]
    if rows:
        store.debates.add_label_requests(study, rows, requested_by=requested_by, reason=reason)
    return table.assign(queued=queued), int((~queued).sum())


# ------------------------------------------------------------- what the decisions narrowed


def median_width(board: CalibratedLeaderboard) -> float:
    """The median over models of the anchored interval's width, ``ci_high - ci_low`` (NaN when none is finite)."""
    width = (board.table["ci_high"] - board.table["ci_low"]).replace([np.inf, -np.inf], np.nan).dropna()
    return float(np.median(width)) if len(width) else math.nan


@dataclass(frozen=True)
class LabelRequestEffect:
    """How much the decided label requests of one judge and reference narrowed its anchored interval.

    Attributes
    ----------
    judge, reference : from the requests' metadata.
    requests, open, decided : label requests for them, those nobody decided, those decided.
    width_with, width_without : median interval width of :func:`calibrated_leaderboard`
        (win rates) with every label, and without the decisions on label requests (NaN when
        it cannot be computed: see ``message_with`` / ``message_without``).
    labels_with, labels_without : labels used by each.
    message_with, message_without : why a width is missing (the leaderboard's message), or ''.
    """

    judge: str
    reference: str
    requests: int
    open: int
    decided: int
    width_with: float
    width_without: float
    labels_with: int
    labels_without: int
    message_with: str = ""
    message_without: str = ""


def label_request_effect(study: Study, *, method: str = "winrate") -> list[LabelRequestEffect]:
    """For each (judge, reference) named in the study's label requests' metadata, their counts and the
    median width of the anchored interval (PPI++, Angelopoulos, Duchi & Zrnic 2023, eq. (2)) with all
    decided label requests and without them.

    "Without them" leaves out the reference votes that are decisions on label requests
    (judge ``adjudicator:<annotator>`` on the request's comparison); label requests of the
    ``peercore calibrate --request`` kind carry ``judge`` and ``reference`` in their
    metadata, others are counted under an empty judge and get no widths.
    """
    store = study.store
    requests = store.debates.table(study.name, kind="label_request")
    if not len(requests):
        return []
    decisions = store.debates.adjudications(study.name)
    decisions = decisions[decisions["kind"] == "label_request"]
    decided_ids = set(decisions["debate_id"].astype(int))
    meta = requests["metadata"].map(lambda m: m or {})
    groups = pd.DataFrame({"id": requests["id"].astype(int), "judge": meta.map(lambda m: str(m.get("judge") or "")),
                           "reference": meta.map(lambda m: str(m.get("reference") or ""))})
    out = []
    for (judge, reference), rows in groups.groupby(["judge", "reference"], sort=False):
        ids = set(rows["id"])
        decided = len(ids & decided_ids)
        widths, labels, messages = [math.nan, math.nan], [0, 0], ["", ""]
        if judge and reference:
            mine = decisions[decisions["debate_id"].isin(ids)]
            leave = pd.DataFrame({"judge": "adjudicator:" + mine["annotator"].astype(str),
                                  "question_id": mine["question_id"], "model_a": mine["model_a"],
                                  "model_b": mine["model_b"], "turn": mine["turn"], "criterion": mine["criterion"]})
            for k, left in enumerate((None, leave)):
                try:
                    board = calibrated_leaderboard(study, judge=judge, reference=reference, method=method,
                                                   leave_out=left)
                except ValueError as exc:
                    messages[k] = str(exc)
                    continue
                widths[k], labels[k] = median_width(board), board.labels
        out.append(LabelRequestEffect(judge=judge, reference=reference, requests=len(ids), open=len(ids) - decided,
                                      decided=decided, width_with=widths[0], width_without=widths[1],
                                      labels_with=labels[0], labels_without=labels[1], message_with=messages[0],
                                      message_without=messages[1]))
    return out
