"""Selective judging with a guaranteed agreement, escalating to humans (Trust or Escalate).

Jung, Brahman & Choi, "Trust or Escalate: LLM Judges with Provable Guarantees for Human
Agreement" (ICLR 2025, arXiv 2407.18370; reference code
``jaehunjung1/cascaded-selective-evaluation``). A judge's verdict on a comparison is
*kept* when its confidence :math:`c` clears a threshold :math:`\\lambda`, otherwise the
comparison is *escalated* (to a stronger judge, finally to a human label). The threshold
is chosen on human-labelled calibration comparisons so that

.. math:: P\\big(\\,P(\\hat y = y_{human} \\mid c \\ge \\hat\\lambda) \\ge 1 - \\alpha\\,\\big) \\ge 1 - \\delta

(the paper's section 2.1, its eq. 1, "human agreement guarantee"): with probability at
least :math:`1 - \\delta` over the calibration draw, agreement with the human majority on
the kept verdicts is at least :math:`1 - \\alpha`.

How the threshold is chosen (paper section 2.1, eqs. 2-4; Bauer 1991's fixed-sequence
testing as in Angelopoulos et al.'s Learn-then-Test):

* on the :math:`n(\\lambda)` calibration comparisons with :math:`c \\ge \\lambda`, the
  :math:`k(\\lambda)` disagreements give the exact binomial (Clopper-Pearson) upper bound
  :math:`\\hat R^+(\\lambda) = \\sup\\{r : P(\\mathrm{Bin}(n(\\lambda), r) \\le k(\\lambda)) \\ge
  \\delta\\}` = the :math:`1 - \\delta` quantile of :math:`\\mathrm{Beta}(k + 1, n - k)`
  (:func:`clopper_pearson_upper`);
* thresholds are walked from the highest down a grid fixed in advance; thresholds that
  keep fewer than ``min_kept`` (30) comparisons are skipped, as the reference code does;
  the walk stops at the first threshold whose bound exceeds :math:`\\alpha`, and
  :math:`\\hat\\lambda` is the last threshold before it (:func:`calibrate`).

Cascade (paper section 2.3): stage :math:`s` (cheapest judge first) is calibrated on the
calibration comparisons that stages :math:`1..s-1` did not keep, at level
:math:`\\delta / S` each, so that by the union bound every stage's guarantee holds at
once with probability at least :math:`1 - \\delta`, and so does the guarantee on all kept
verdicts together (a mixture of stages each at least :math:`1 - \\alpha`). What no stage
keeps becomes a label request for the adjudication queue (:func:`apply_plan` returns
-1). The reference code calibrates every stage at :math:`\\delta`; the split is ours.

Confidence per verdict (paper section 2.2): :math:`\\max(p_a, 1 - p_a)` for a
label-probability judge (:func:`confidence_from_probability`); for a judge sampled K
times, or asked in both orders, the share of its votes that side with their majority
(:func:`confidence_from_samples`, :func:`confidence_from_orders`); for the paper's
Simulated Annotators, the averaged probability of N few-shot "annotators" in both orders
(:func:`confidence_from_annotators`).

Verdict codes are the read model's (:mod:`peercore.domain.verdicts`): 0 ``model_a``,
1 ``model_b``, 2 tie, -1 no readable verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import betaincinv

from peercore.domain.verdicts import TIE, UNPARSED, WINNER_A, WINNER_B

__all__ = [
    "TIES", "DEFAULT_GRID", "StagePlan", "CascadePlan",
    "confidence_from_probability", "verdict_from_probability", "probability_from_votes", "confidence_from_samples",
    "orders_as_votes", "confidence_from_orders", "confidence_from_annotators", "agrees_with_reference",
    "clopper_pearson_upper", "calibrate", "plan_cascade", "apply_plan", "assess",
]

TIES = ("exclude", "disagree")
# The thresholds walked by default: 1.000, 0.999, ..., 0.000 (fixed before any data is
# seen, as fixed-sequence testing needs; the reference code walks 5,000 values of [0, 1]).
DEFAULT_GRID = np.round(np.linspace(1.0, 0.0, 1001), 3)
_P_OF_CODE = np.array([1.0, 0.0, 0.5, np.nan])  # indexed by code (0 a, 1 b, 2 tie, -1 -> last: none)


# ----------------------------------------------------------------------------- confidence


def confidence_from_probability(p_a) -> np.ndarray:
    """Confidence of a label-probability judge: :math:`c = \\max(p_a, 1 - p_a)` (paper section 2.2).

    Parameters
    ----------
    p_a : array of probabilities that ``model_a``'s answer is better; NaN where the judge
        gave none (its confidence is NaN: never kept).

    Returns
    -------
    float array in [0.5, 1] (NaN where ``p_a`` is NaN).

    Raises
    ------
    ValueError
        If a probability lies outside [0, 1] (the first is quoted).
    """
    p = _probabilities(p_a, "p_a")
    return np.maximum(p, 1.0 - p)


def verdict_from_probability(p_a) -> np.ndarray:
    """The verdict a probability reads as: 0 (``model_a``) above 1/2, 1 (``model_b``) below, 2 (tie) at 1/2, -1 NaN.

    The rule of :class:`peercore.reviewers.judging.Comparison` (``p_first`` > 0.5 reads as
    ``model_a``).
    """
    p = _probabilities(p_a, "p_a")
    out = np.where(p > 0.5, WINNER_A, np.where(p < 0.5, WINNER_B, TIE)).astype(np.int8)
    out[np.isnan(p)] = UNPARSED
    return out


def probability_from_votes(votes) -> np.ndarray:
    """Mean vote per comparison, ``model_a`` = 1, tie = 1/2, ``model_b`` = 0 (unreadable votes left out).

    What the ``samples`` method stores as ``p_a`` (:func:`peercore.reviewers.judging.compare`,
    Liusie et al. 2024: the fraction of K sampled verdicts). Its sign around 1/2 is the
    majority of the votes (:func:`peercore.domain.verdicts.majority`'s rule: the sign of
    +1 / 0 / -1 summed).

    Parameters
    ----------
    votes : (n, K) integer verdict codes (0 a, 1 b, 2 tie, -1 none); a 1-D array is one vote
        per comparison.

    Returns
    -------
    (n,) float array; NaN for a comparison with no readable vote.
    """
    codes = _codes(votes, "votes")
    p = _P_OF_CODE[np.where(codes < 0, 3, codes)]
    given = ~np.isnan(p)
    count = given.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, np.where(given, p, 0.0).sum(axis=1) / np.maximum(count, 1), np.nan)


def confidence_from_samples(votes) -> np.ndarray:
    """Confidence of a judge asked K times: the share of its votes that side with their majority.

    .. math:: c = \\max(\\bar v, 1 - \\bar v), \\qquad \\bar v = \\frac{1}{K}\\sum_k v_k,
              \\quad v = 1 (\\text{model\\_a}), \\tfrac12 (\\text{tie}), 0 (\\text{model\\_b})

    so a tie vote counts half for either side; without ties it is exactly the share of
    the K votes equal to the majority verdict (the agreement ratio the paper uses as a
    sampling-based confidence, section 2.2). It is :func:`confidence_from_probability` of
    :func:`probability_from_votes`: the stored ``p_a`` of a ``samples`` judge gives the same.

    Parameters
    ----------
    votes : (n, K) verdict codes, -1 for an unreadable vote (left out).

    Returns
    -------
    (n,) float array in [0.5, 1]; NaN where no vote was readable.
    """
    return confidence_from_probability(probability_from_votes(votes))


def orders_as_votes(forward, backward) -> np.ndarray:
    """Both orders of a comparison as two votes in the forward orientation, (n, 2) verdict codes.

    Parameters
    ----------
    forward : verdict codes with ``model_a`` shown first.
    backward : verdict codes on the same comparisons shown the other way round, in that
        showing's orientation (its ``model_a`` is the forward ``model_b``); they are
        mirrored (``model_a`` <-> ``model_b``).
    """
    forward = _codes(forward, "forward")[:, 0]
    backward = _codes(backward, "backward")[:, 0]
    if len(forward) != len(backward):
        raise ValueError(f"forward and backward must have one length, got {len(forward)} and {len(backward)}")
    mirrored = np.where(backward == WINNER_A, WINNER_B, np.where(backward == WINNER_B, WINNER_A, backward))
    return np.column_stack([forward, mirrored])


def confidence_from_orders(forward, backward) -> np.ndarray:
    """Confidence of a judge asked in both orders: 1 when both prefer the same answer, 1/2 when they split.

    :func:`confidence_from_samples` of :func:`orders_as_votes`: a tie against a preference
    gives 3/4, two ties 1/2 (no preference expressed). The verdict kept is their majority,
    :func:`verdict_from_probability` of :func:`probability_from_votes`.
    """
    return confidence_from_samples(orders_as_votes(forward, backward))


def confidence_from_annotators(p_a) -> np.ndarray:
    """Confidence from the paper's Simulated Annotators (section 2.2): the annotators' mean, then its larger side.

    Each of N simulated annotators (the judge prompted with one annotator's few-shot
    examples) gives a probability that ``model_a`` is better, in both orders (the
    backward one already turned into P(``model_a`` better)); the ensemble's probability
    is their mean, and its confidence :math:`\\max(\\bar p, 1 - \\bar p)` (the reference
    code's ``simulate_annotators`` then ``max``).

    Parameters
    ----------
    p_a : (n, m) probabilities, NaN where an annotator gave none (left out).
    """
    p = _probabilities(p_a, "p_a")
    p = p.reshape(len(p), -1) if p.ndim != 2 else p
    given = ~np.isnan(p)
    count = given.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, np.where(given, p, 0.0).sum(axis=1) / np.maximum(count, 1), np.nan)
    return confidence_from_probability(mean)


def agrees_with_reference(verdict, reference, *, ties: str = "exclude") -> np.ndarray:
    """Whether each judge verdict equals the human label: 1.0, 0.0, or NaN (left out of calibration).

    Parameters
    ----------
    verdict : the judge's verdict codes; an unreadable verdict (-1) is a disagreement
        (its confidence is NaN as well, so it is never kept).
    reference : the human majority's codes, in the verdict's orientation; -1 (no label)
        gives NaN.
    ties : what a human-majority tie (a comparison humans split on) is:
        ``"exclude"`` (default): left out (NaN): it carries no preference to agree with, and
        the guarantee is then about comparisons whose human majority prefers an answer;
        ``"disagree"``: kept, and every judge verdict on it, a tie included, counts as a
        disagreement (conservative: the guarantee then covers every comparison).
        A judge's tie against a human preference is always a disagreement.

    Raises
    ------
    ValueError
        If ``ties`` is unknown or the arrays differ in length.
    """
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    verdict = _codes(verdict, "verdict")[:, 0]
    reference = _codes(reference, "reference")[:, 0]
    if len(verdict) != len(reference):
        raise ValueError(f"verdict and reference must have one length, got {len(verdict)} and {len(reference)}")
    out = (verdict == reference).astype(float)
    out[reference == TIE] = np.nan if ties == "exclude" else 0.0
    out[reference < 0] = np.nan
    return out


# ------------------------------------------------------------------------------- bound


def clopper_pearson_upper(k, n, delta: float) -> np.ndarray:
    """Exact one-sided binomial (Clopper-Pearson) upper bound on a rate of k events in n trials.

    Clopper & Pearson (1934): the :math:`1 - \\delta` quantile of
    :math:`\\mathrm{Beta}(k + 1, n - k)` (``scipy.stats.beta.ppf(1 - delta, k + 1, n - k)``,
    computed by ``scipy.special.betaincinv``, which ``beta.ppf`` calls), 1 when
    :math:`k = n`. The reference code solves ``binom.cdf(k, n, r) = delta`` for r, the same
    number. With probability at least :math:`1 - \\delta` the true rate is below it.

    Parameters
    ----------
    k, n : disagreements and comparisons (arrays broadcast); NaN where n is 0.
    delta : in (0, 1).
    """
    _check_unit(delta, "delta")
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    if np.any((k < 0) | (k > n)):
        raise ValueError(f"need 0 <= k <= n, got k={k.tolist()!r}, n={n.tolist()!r}")
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(k >= n, 1.0, betaincinv(k + 1.0, np.maximum(n - k, 1e-300), 1.0 - delta))
    return np.where(n > 0, out, np.nan)


# ------------------------------------------------------------------------- calibration


@dataclass(frozen=True)
class StagePlan:
    """One judge's threshold, chosen by :func:`calibrate`.

    Attributes
    ----------
    threshold : keep a verdict when its confidence is at least this; ``inf`` when no
        threshold passed (the stage keeps nothing).
    kept_share : share of the calibration comparisons kept.
    agreement : agreement with the human label on the kept calibration comparisons (NaN
        when none is kept).
    upper_bound_disagreement : the Clopper-Pearson bound :math:`\\hat R^+` at the threshold
        (at most ``alpha`` when something is kept).
    guarantee : ``1 - alpha`` when the stage keeps something (agreement on its kept
        verdicts, with probability at least ``1 - delta``), NaN otherwise.
    n_calibration : calibration comparisons (those with a label); ``n_kept`` of them kept.
    alpha, delta : the risk and the level this stage was calibrated at.
    walk : the thresholds tested, from the highest: ``threshold, kept, disagreements,
        upper_bound, passed`` (the walk stops at the first failure).
    """

    threshold: float
    kept_share: float
    agreement: float
    upper_bound_disagreement: float
    guarantee: float
    n_calibration: int
    n_kept: int
    alpha: float
    delta: float
    walk: pd.DataFrame = field(repr=False, compare=False)

    def keeps(self, confidence) -> np.ndarray:
        """Which verdicts this stage keeps (``confidence >= threshold``; NaN never)."""
        c = np.asarray(confidence, dtype=float)
        with np.errstate(invalid="ignore"):
            return c >= self.threshold


def calibrate(confidence, agrees, *, alpha: float, delta: float, min_kept: int = 30, grid=None) -> StagePlan:
    """Choose a judge's confidence threshold by fixed-sequence testing (paper section 2.1, eqs. 2-4).

    For each threshold :math:`\\lambda` of ``grid``, walked from the highest down, the
    kept calibration comparisons (:math:`c \\ge \\lambda`; at least ``min_kept`` of them,
    else the threshold is skipped) give the Clopper-Pearson upper bound
    :math:`\\hat R^+(\\lambda)` on their disagreement rate (:func:`clopper_pearson_upper`
    at ``delta``). The walk stops at the first threshold whose bound exceeds ``alpha``;
    :math:`\\hat\\lambda` is the last threshold before it. Then with probability at least
    ``1 - delta`` the agreement on verdicts with :math:`c \\ge \\hat\\lambda` is at least
    ``1 - alpha`` (Theorem 1 of the paper, by fixed-sequence testing: each
    :math:`\\hat R^+(\\lambda) \\le \\alpha` rejects :math:`H_\\lambda: R(\\lambda) > \\alpha` at
    level :math:`\\delta`).

    Departures from the reference code: when even the first tested threshold fails, the
    stage keeps nothing (``threshold = inf``; the reference returns that threshold anyway,
    without a guarantee). Skipping the thresholds that keep fewer than ``min_kept``
    comparisons makes the start of the walk depend on the data, as in the reference.

    Ties: the caller decides through ``agrees`` (see :func:`agrees_with_reference`):
    a comparison with NaN is left out (by default a human-majority tie); a judge's tie
    verdict is a disagreement.

    Parameters
    ----------
    confidence : (n,) the judge's confidence per calibration comparison; NaN = no verdict
        (never kept, still counted among the calibration comparisons).
    agrees : (n,) 1/True when the judge's verdict equals the human label, 0/False when
        not, NaN to leave the comparison out.
    alpha : tolerated disagreement rate, in (0, 1) (target agreement ``1 - alpha``).
    delta : tolerated probability that the guarantee fails, in (0, 1).
    min_kept : fewest kept calibration comparisons a threshold needs to be tested (the
        paper's 30).
    grid : the thresholds, strictly decreasing, fixed before seeing the data; default
        :data:`DEFAULT_GRID` (1.000, 0.999, ..., 0; confidences here lie in [0.5, 1]).

    Returns
    -------
    StagePlan

    Raises
    ------
    ValueError
        If ``alpha``/``delta`` lie outside (0, 1), ``min_kept`` < 1, the arrays differ in
        length, an ``agrees`` value is not 0, 1 or NaN, or ``grid`` is not strictly
        decreasing (the offending value is quoted).
    """
    _check_unit(alpha, "alpha")
    _check_unit(delta, "delta")
    if isinstance(min_kept, bool) or not isinstance(min_kept, (int, np.integer)) or min_kept < 1:
        raise ValueError(f"min_kept must be an integer >= 1, got {min_kept!r}")
    conf, agree = _calibration_arrays(confidence, agrees)
    lam = _grid(grid)
    labelled = ~np.isnan(agree)
    conf, wrong = conf[labelled], agree[labelled] == 0
    n_total = int(labelled.sum())
    order = np.argsort(-np.where(np.isnan(conf), -np.inf, conf), kind="stable")
    sorted_conf = np.where(np.isnan(conf), -np.inf, conf)[order]
    cum_wrong = np.concatenate([[0], np.cumsum(wrong[order])])
    # kept(lambda) = #{c >= lambda}: position in the descending order
    kept = np.searchsorted(-sorted_conf, -lam, side="right")
    disagreements = cum_wrong[kept]
    tested = kept >= min_kept
    bound = np.full(len(lam), np.nan)
    bound[tested] = clopper_pearson_upper(disagreements[tested], kept[tested], delta)
    passed = tested & (bound <= alpha)
    index = np.flatnonzero(tested)
    failures = index[~passed[index]]
    stop = int(failures[0]) if len(failures) else len(lam)
    walked = index[index <= stop]
    walk = pd.DataFrame({"threshold": lam[walked], "kept": kept[walked], "disagreements": disagreements[walked],
                         "upper_bound": bound[walked], "passed": passed[walked]})
    chosen = index[index < stop]
    if len(chosen) == 0:
        return StagePlan(math.inf, 0.0, math.nan, math.nan, math.nan, n_total, 0, float(alpha), float(delta), walk)
    at = int(chosen[-1])
    n_kept, k = int(kept[at]), int(disagreements[at])
    return StagePlan(float(lam[at]), n_kept / n_total, 1.0 - k / n_kept, float(bound[at]), 1.0 - float(alpha),
                     n_total, n_kept, float(alpha), float(delta), walk)


@dataclass(frozen=True)
class CascadePlan:
    """Thresholds of a cascade of judges, chosen by :func:`plan_cascade`.

    Attributes
    ----------
    stages : one :class:`StagePlan` per judge, cheapest first, each calibrated on what the
        earlier ones did not keep, at ``delta / len(stages)``.
    reach : (S,) share of the calibration comparisons that reach each stage (1 for the first).
    kept : (S,) share of all calibration comparisons each stage keeps.
    escalated : share no stage keeps: label requests for the adjudication queue.
    agreement : agreement with the human label over all kept calibration comparisons.
    guarantee : ``1 - alpha`` (over all kept verdicts, with probability ``1 - delta``) when
        a stage keeps something, else NaN.
    cost_per_1000 : (S,) cost of each stage per 1,000 comparisons submitted to the
        cascade (its per-comparison cost times the share reaching it); NaN without costs.
    human_cost_per_1000 : a human label's cost times the escalated share, per 1,000; NaN
        without it.
    total_cost_per_1000 : the sum of the two (NaN terms count as 0 when some cost is given).
    n_calibration : labelled calibration comparisons.
    alpha, delta : the target and the level of the whole cascade.
    """

    stages: tuple[StagePlan, ...]
    reach: np.ndarray
    kept: np.ndarray
    escalated: float
    agreement: float
    guarantee: float
    cost_per_1000: np.ndarray
    human_cost_per_1000: float
    total_cost_per_1000: float
    n_calibration: int
    alpha: float
    delta: float

    def table(self, names: Sequence[str] | None = None) -> pd.DataFrame:
        """Per stage: ``threshold, reach, kept_share`` (of what reached it), ``kept`` (of all),
        ``agreement, upper_bound_disagreement, guarantee, level, cost_per_1000``, and a
        ``humans`` row for the escalated share."""
        names = list(names) if names is not None else [f"stage {s + 1}" for s in range(len(self.stages))]
        if len(names) != len(self.stages):
            raise ValueError(f"names must name the {len(self.stages)} stages, got {len(names)}")
        rows = [{"stage": name, "threshold": p.threshold, "reach": float(r), "kept_share": p.kept_share,
                 "kept": float(k), "agreement": p.agreement, "upper_bound_disagreement": p.upper_bound_disagreement,
                 "guarantee": p.guarantee, "level": 1.0 - p.delta, "cost_per_1000": float(c)}
                for name, p, r, k, c in zip(names, self.stages, self.reach, self.kept, self.cost_per_1000)]
        rows.append({"stage": "humans", "threshold": math.nan, "reach": self.escalated, "kept_share": 1.0,
                     "kept": self.escalated, "agreement": math.nan, "upper_bound_disagreement": math.nan,
                     "guarantee": math.nan, "level": math.nan, "cost_per_1000": self.human_cost_per_1000})
        return pd.DataFrame(rows).set_index("stage")


def plan_cascade(stages: Sequence[tuple], *, alpha: float, delta: float, costs: Sequence[float] | None = None,
                 human_cost: float | None = None, min_kept: int = 30, grid=None) -> CascadePlan:
    """Calibrate a cascade of judges, cheapest first (paper section 2.3, Cascaded Selective Evaluation).

    Stage :math:`s` is calibrated (:func:`calibrate`) on the calibration comparisons that
    stages :math:`1..s-1` did not keep, at level :math:`\\delta / S`; by the union bound all
    S guarantees hold together with probability at least :math:`1 - \\delta`, so agreement
    on every stage's kept verdicts, and on all of them pooled, is at least
    :math:`1 - \\alpha`. What no stage keeps is escalated to humans.

    Cost per 1,000 comparisons submitted: a comparison pays every stage it reaches, and a
    human label when escalated,

    .. math:: 1000 \\Big(\\sum_s \\mathrm{reach}_s\\, c_s + \\mathrm{escalated}\\; c_{human}\\Big)

    with the shares measured on the calibration comparisons.

    Parameters
    ----------
    stages : one ``(confidence, agrees)`` pair per judge, each over the same calibration
        comparisons in the same order (see :func:`calibrate`). A comparison is a
        calibration comparison when every stage's ``agrees`` gives it a label.
    alpha, delta : the cascade's target disagreement and level.
    costs : per-comparison cost of each stage (any unit: dollars, seconds), or None.
    human_cost : per-comparison cost of a human label, or None.
    min_kept, grid : as :func:`calibrate`.

    Raises
    ------
    ValueError
        If there is no stage, the stages differ in length, or ``costs`` does not give one
        non-negative number per stage.
    """
    if len(stages) == 0:
        raise ValueError("stages is empty; a cascade needs at least one judge")
    arrays = [_calibration_arrays(confidence, agrees) for confidence, agrees in stages]
    lengths = {len(c) for c, _ in arrays}
    if len(lengths) != 1:
        raise ValueError(f"every stage must cover the same calibration comparisons, got lengths {sorted(lengths)}")
    cost = _costs(costs, len(stages))
    if human_cost is not None and not (math.isfinite(human_cost) and human_cost >= 0):
        raise ValueError(f"human_cost must be a non-negative number, got {human_cost!r}")
    _check_unit(delta, "delta")
    labelled = np.logical_and.reduce([~np.isnan(a) for _, a in arrays])
    n_total = int(labelled.sum())
    remaining = labelled.copy()
    plans, reach, kept_share = [], [], []
    correct = kept_total = 0
    for conf, agree in arrays:
        reach.append(remaining.sum() / n_total if n_total else math.nan)
        plan = calibrate(conf[remaining], agree[remaining], alpha=alpha, delta=delta / len(stages),
                         min_kept=min_kept, grid=grid)
        keep = remaining & plan.keeps(conf)
        kept_share.append(keep.sum() / n_total if n_total else math.nan)
        correct += int((agree[keep] == 1).sum())
        kept_total += int(keep.sum())
        remaining &= ~keep
        plans.append(plan)
    reach, kept_share = np.array(reach, dtype=float), np.array(kept_share, dtype=float)
    escalated = remaining.sum() / n_total if n_total else math.nan
    stage_cost = 1000.0 * reach * cost
    human = 1000.0 * escalated * human_cost if human_cost is not None else math.nan
    total = math.nan if costs is None and human_cost is None else float(np.nansum(stage_cost) + np.nan_to_num(human))
    return CascadePlan(tuple(plans), reach, kept_share, float(escalated),
                       correct / kept_total if kept_total else math.nan,
                       1.0 - float(alpha) if kept_total else math.nan, stage_cost, float(human), total, n_total,
                       float(alpha), float(delta))


def apply_plan(plan: StagePlan | CascadePlan, confidences) -> np.ndarray:
    """Which stage keeps each comparison's verdict: its index (0 = first stage), or -1 (escalate to humans).

    Parameters
    ----------
    plan : a :class:`StagePlan` (one judge) or a :class:`CascadePlan`.
    confidences : for a StagePlan, one array; for a CascadePlan, one array per stage
        (the stages' confidences on the same comparisons; NaN where a stage has no
        verdict, or was not run: it does not keep). A comparison goes to the first stage
        whose confidence clears its threshold.

    Returns
    -------
    int array, one entry per comparison.
    """
    stages = (plan,) if isinstance(plan, StagePlan) else plan.stages
    if isinstance(plan, StagePlan):
        confidences = [confidences]
    if len(confidences) != len(stages):
        raise ValueError(f"confidences must give one array per stage ({len(stages)}), got {len(confidences)}")
    arrays = [np.asarray(c, dtype=float).reshape(-1) for c in confidences]
    if len({len(a) for a in arrays}) != 1:
        raise ValueError(f"every stage's confidences must have one length, got {[len(a) for a in arrays]}")
    out = np.full(len(arrays[0]), -1, dtype=np.int64)
    for s in range(len(stages) - 1, -1, -1):  # the first stage that keeps wins: assign from the last down
        out[stages[s].keeps(arrays[s])] = s
    return out


def assess(plan: StagePlan | CascadePlan, confidences, agrees) -> pd.DataFrame:
    """A plan on held-out labelled comparisons: per stage the share kept and the agreement realised.

    Parameters
    ----------
    plan, confidences : as :func:`apply_plan`.
    agrees : one array per stage (a single array for a StagePlan): each stage's agreement
        with the label (1, 0, NaN to leave the comparison out, as in :func:`calibrate`).

    Returns
    -------
    DataFrame indexed by stage number (and ``-1`` for the escalated ones, then ``"all"``
    for everything kept) with ``n`` (comparisons), ``share`` (of the labelled ones),
    ``agreement`` (NaN for the escalated row), ``target`` (``1 - alpha``).
    """
    stage = apply_plan(plan, confidences)
    stage_count = 1 if isinstance(plan, StagePlan) else len(plan.stages)
    if isinstance(plan, StagePlan):
        agrees = [agrees]
    if len(agrees) != stage_count:
        raise ValueError(f"agrees must give one array per stage ({stage_count}), got {len(agrees)}")
    agree = [_calibration_arrays(np.zeros(len(stage)), a)[1] for a in agrees]
    labelled = np.logical_and.reduce([~np.isnan(a) for a in agree])
    n = int(labelled.sum())
    got = np.full(len(stage), np.nan)
    for s in range(stage_count):
        got[stage == s] = agree[s][stage == s]
    rows = []
    for s in [*range(stage_count), -1]:
        mask = labelled & (stage == s)
        rows.append({"stage": s, "n": int(mask.sum()), "share": mask.sum() / n if n else math.nan,
                     "agreement": float(np.mean(got[mask])) if s >= 0 and mask.any() else math.nan})
    mask = labelled & (stage >= 0)
    rows.append({"stage": "all", "n": int(mask.sum()), "share": mask.sum() / n if n else math.nan,
                 "agreement": float(np.mean(got[mask])) if mask.any() else math.nan})
    out = pd.DataFrame(rows).set_index("stage")
    out["target"] = 1.0 - plan.alpha
    return out


# ------------------------------------------------------------------------------ checks


def _probabilities(values, name: str) -> np.ndarray:
    try:
        p = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must hold numbers in [0, 1], got {values!r}") from None
    with np.errstate(invalid="ignore"):
        bad = ~np.isnan(p) & ((p < 0) | (p > 1))
    if bad.any():
        raise ValueError(f"{name} must lie in [0, 1], got {float(p[bad].reshape(-1)[0])!r}")
    return p


def _codes(values, name: str) -> np.ndarray:
    codes = np.asarray(values)
    if codes.dtype.kind not in "iu" and not (codes.dtype.kind == "f" and np.all(np.mod(codes, 1) == 0)):
        raise ValueError(f"{name} must hold verdict codes 0, 1, 2 or -1, got dtype {codes.dtype}")
    codes = codes.astype(np.int64)
    codes = codes.reshape(len(codes), -1) if codes.ndim != 2 else codes
    bad = (codes < -1) | (codes > 2)
    if bad.any():
        raise ValueError(f"{name} must hold verdict codes 0, 1, 2 or -1, got {int(codes[bad][0])!r}")
    return codes


def _calibration_arrays(confidence, agrees) -> tuple[np.ndarray, np.ndarray]:
    conf = np.asarray(confidence, dtype=float).reshape(-1)
    agree = np.asarray(agrees, dtype=float).reshape(-1)
    if len(conf) != len(agree):
        raise ValueError(f"confidence and agrees must have one length, got {len(conf)} and {len(agree)}")
    bad = ~np.isnan(agree) & (agree != 0) & (agree != 1)
    if bad.any():
        raise ValueError(f"agrees must hold 1, 0 or NaN, got {float(agree[bad][0])!r}")
    return conf, agree


def _grid(grid) -> np.ndarray:
    lam = DEFAULT_GRID if grid is None else np.asarray(grid, dtype=float).reshape(-1)
    if len(lam) == 0 or np.isnan(lam).any():
        raise ValueError(f"grid must hold at least one threshold and no NaN, got {lam.tolist()!r}")
    steps = np.diff(lam)
    if (steps >= 0).any():
        at = int(np.flatnonzero(steps >= 0)[0])
        raise ValueError(f"grid must be strictly decreasing (fixed-sequence testing walks it from the top), "
                         f"got {float(lam[at])!r} then {float(lam[at + 1])!r}")
    return lam


def _costs(costs, stages: int) -> np.ndarray:
    if costs is None:
        return np.full(stages, np.nan)
    values = np.asarray(costs, dtype=float).reshape(-1)
    if len(values) != stages or not np.all(np.isfinite(values)) or (values < 0).any():
        raise ValueError(f"costs must give one non-negative number per stage ({stages}), got {list(costs)!r}")
    return values


def _check_unit(value, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not 0 < value < 1:
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
