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
  votes on comparisons the judge never judged are left out, said in the warnings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from peercore.app.study import Study
from peercore.calibration import (corrected_win_rates, ppi_bradley_terry, ppi_win_rates,
                                  ppi_win_rates_vs_baseline)
from peercore.domain import verdicts as V
from peercore.domain.selection import Selection
from peercore.domain.plain import json_value

__all__ = ["Matched", "matched_comparisons", "oriented_scores", "CalibratedLeaderboard", "calibrated_leaderboard",
           "METHODS", "LEADERBOARD_COLUMNS", "NO_LABELS"]

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
    """

    models: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    judge_score: np.ndarray
    label_index: np.ndarray
    label_score: np.ndarray
    votes_elsewhere: int
    judge_verdicts: int


def oriented_scores(chosen: V.Verdicts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low model, high model, outcome for the low model) of every verdict, soft where ``p_a`` is given."""
    score = V.score_a(chosen, soft=True)
    low, high = np.minimum(chosen.a, chosen.b), np.maximum(chosen.a, chosen.b)
    return low, high, np.where(chosen.a == low, score, 1.0 - score)


def matched_comparisons(study: Study, *, judge: str, reference: str, final_only: bool = True) -> Matched:
    """The judge's comparisons (the population) and the reference's votes on them (the labels).

    See the module docstring for the matching rule.

    Parameters
    ----------
    study : the study.
    judge : one judge's name.
    reference : a judge's name, or a prefix ending in ``:`` naming several (``human:``).
    final_only : each judge's final-round verdicts only (as ``peercore rank`` by default).

    Raises
    ------
    ValueError
        If ``judge`` names no judge or several, ``reference`` names no judge, or the judge
        is among the reference's judges; a reference that names no judge of the study gets
        a message starting with :data:`NO_LABELS`.
    """
    everything = study.select(Selection(final_only=final_only, repeated_votes="each")).verdicts
    judges = np.array(everything.judges, dtype=object)
    if judge.endswith(":") or judge not in set(everything.judges):
        raise ValueError(f"judge {judge!r} is not one judge of study {study.name!r}; judges are "
                         f"{list(everything.judges)}")
    try:
        is_reference = V.judge_codes(everything, [reference])
    except ValueError:
        raise ValueError(f"{NO_LABELS}: reference {reference!r} names no judge of study {study.name!r} "
                         f"(judges: {', '.join(everything.judges)}); import human votes or adjudicate some "
                         "comparisons first") from None
    judge_code = int(np.flatnonzero(judges == judge)[0])
    if is_reference[judge_code]:
        raise ValueError(f"judge {judge!r} is one of the reference's judges ({reference!r}); choose another reference")
    own = everything.judge == judge_code
    refs = is_reference[everything.judge]
    low, high, score = oriented_scores(everything)
    unit = V.group_ids([everything.question, low, high, everything.turn, everything.criterion])
    judged_units, position = np.unique(unit[own], return_inverse=True)
    if len(judged_units) == 0:
        raise ValueError(f"judge {judge!r} has no readable verdict in study {study.name!r}")
    n = len(judged_units)
    count = np.bincount(position, minlength=n)
    judge_score = np.bincount(position, score[own], minlength=n) / count
    first = np.full(n, -1, dtype=np.int64)
    rows = np.flatnonzero(own)
    first[position] = rows  # any verdict of a unit gives its models (low and high are the unit's)
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
                   judge_verdicts=int(own.sum()))


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
                           level: float = 0.95) -> CalibratedLeaderboard:
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
    reference : the labels' judge(s): a name or a prefix ending in ``:`` (``human:``).
    method : ``"winrate"`` or ``"bt"``.
    baseline : with ``"winrate"``: each model's win rate against this model only.
    labels : use a random ``labels`` of the reference's votes on the judge's comparisons
        (drawn without replacement with ``seed``); None: all of them.
    seed : seed of that draw.
    level : two-sided coverage of the intervals.

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
    matched = matched_comparisons(study, judge=judge, reference=reference)
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
