"""Human-anchored leaderboards from judge verdicts: prediction-powered inference (issue 23).

A judge has given a verdict on every one of N comparisons; a reference (people) has
labelled some of them. The functions here estimate what the reference would have said on
all N -- a mean, each model's win rate, its win rate against a baseline, Bradley-Terry
ratings -- with intervals that account for the judge's errors and for how few labels
there are. They are pure array maths: integer model codes, outcome arrays, no names, no
store. Every outcome is a score in [0, 1] for the comparison's model ``a`` (1 a wins,
1/2 tie, 0 b wins, or a judge's soft probability ``p_a``), as in
:mod:`peercore.ranking.winrate` (PRD eq. 1).

Sources and the equations used
------------------------------
* **PPI++** (Angelopoulos, Duchi, Zrnic 2023, arXiv 2311.01453), mean estimation with
  labelled sample :math:`(Y_i, \\hat Y_i)_{i \\le n}` and unlabelled predictions
  :math:`(\\tilde Y_j)_{j \\le N}`, eq. (2) and Example 6.1:

  .. math:: \\hat\\theta_\\lambda = \\lambda\\,\\overline{\\tilde Y}_N
            + \\overline{(Y - \\lambda \\hat Y)}_n, \\qquad
            \\widehat{\\mathrm{Var}} = \\lambda^2 \\frac{\\hat\\sigma^2_{\\tilde Y}}{N}
            + \\frac{\\hat\\sigma^2_{Y - \\lambda \\hat Y}}{n},

  power-tuned by :math:`\\hat\\lambda = \\widehat{\\mathrm{Cov}}(Y, \\hat Y) /
  ((1 + n/N)\\,\\widehat{\\mathrm{Var}}(\\hat Y))`, clipped to [0, 1] (the
  ``ppi_py`` convention; at 0 the estimate is the classical one on the labels alone, so a
  judge that carries nothing gets :math:`\\lambda \\approx 0`). Labels are drawn from
  inside the judge's comparisons, so the judge term averages the N - n *unlabelled*
  comparisons only and the two samples are independent (the issue's first option).
* **PPI M-estimation** (same paper, eq. (4) and Algorithm 1; Boyeau, Angelopoulos et al.
  2024, "AutoEval Done Right", arXiv 2403.07008, section 3 for Bradley-Terry): the
  rectified loss :math:`L^{PP}_\\lambda(\\theta) = \\lambda \\bar\\ell_N(\\theta; \\tilde Y)
  + \\bar\\ell_n(\\theta; Y) - \\lambda \\bar\\ell_n(\\theta; \\hat Y)`, covariance
  :math:`H^{-1}(\\widehat V_{n}(\\lambda) + \\tfrac nN \\lambda^2 \\widehat V_N)H^{-1}/n`
  and the scalar :math:`\\lambda` minimising its trace (PPI++ eq. (7)).
* **Active inference** (Zrnic and Candes 2024, arXiv 2403.03208, section 3, eq. (3)):
  comparison i is labelled with probability :math:`\\pi_i` and
  :math:`\\hat\\theta = \\frac1N \\sum_i \\lambda \\hat Y_i + (Y_i - \\lambda \\hat
  Y_i)\\xi_i/\\pi_i`; here in its self-normalised (Hajek) form, see :func:`ppi_mean`.
* **Misclassification correction** (Lee et al. 2025, "How to Correctly Report
  LLM-as-a-Judge Evaluations", arXiv 2511.21140, section 3; Rogan and Gladen 1978):
  :math:`\\hat\\theta = (\\hat p + \\hat q_0 - 1)/(\\hat q_0 + \\hat q_1 - 1)` with the
  delta-method variance from both samples, generalised to the 3 x 3 confusion matrix of
  (loss, tie, win); see :func:`rogan_gladen`.

Conventions shared by every function: ``level`` is the two-sided coverage; variances are
``ppi_py``'s (``ddof=0`` for means, ``ddof=1`` for the M-estimator's gradient
covariances), so that ``ppi_py`` is an exact oracle (tests/unit/test_calibration.py).
Several labels on one comparison (several reference votes) count as one labelled
comparison whose label is their mean: the sampling unit is the comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph
from scipy.special import expit, ndtri
from threadpoolctl import threadpool_limits

from peercore.errors import ConvergenceError
from peercore.ranking.core import DEFAULT_L2, laplacian

__all__ = [
    "MeanEstimate", "ppi_mean", "ppi_win_rates", "ppi_win_rates_vs_baseline", "BradleyTerryEstimate",
    "ppi_bradley_terry", "CorrectedScore", "rogan_gladen", "corrected_win_rates", "uncertainty",
    "active_probabilities", "draw_labels", "draw_exactly", "TUNED", "ELO_SCALE", "ELO_BASE", "ELO_ANCHOR",
]

TUNED = "tuned"
ELO_SCALE, ELO_BASE, ELO_ANCHOR = 400.0, 10.0, 1000.0
# Per-model table columns, in order (ppi_win_rates, ppi_win_rates_vs_baseline).
_COLUMNS = ("battles", "labelled", "estimate", "se", "ci_low", "ci_high", "lam", "classical", "classical_se",
            "classical_low", "classical_high", "judge_only", "judge_only_se", "effective_labels")


# =============================================================================== results


@dataclass(frozen=True)
class MeanEstimate:
    """A prediction-powered mean beside the two estimates it combines.

    Attributes
    ----------
    estimate, se, ci_low, ci_high : PPI++ point estimate, standard error, interval.
    lam : the power-tuning parameter used (NaN without labels).
    classical, classical_se, classical_low, classical_high : the labels alone
        (PPI++ at ``lam = 0``).
    judge_only, judge_only_se : the judge's mean over all comparisons, with its sampling
        error only (it says nothing of the judge's bias).
    n_labelled, n_unlabelled : labelled and unlabelled comparisons.
    effective_labels : :math:`n\\,\\mathrm{Var}_{classical}/\\mathrm{Var}_{PPI}`, the number
        of labels the classical estimate would need for the PPI interval's width.
    """

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    lam: float
    classical: float
    classical_se: float
    classical_low: float
    classical_high: float
    judge_only: float
    judge_only_se: float
    n_labelled: int
    n_unlabelled: int
    effective_labels: float


@dataclass(frozen=True)
class BradleyTerryEstimate:
    """Prediction-powered Bradley-Terry ratings on the Elo scale (mean rating 1000).

    Arrays are indexed by model code (length ``n_models``).

    Attributes
    ----------
    rating, se, ci_low, ci_high : PPI++ ratings, standard errors and intervals.
    lam : the scalar power-tuning parameter (NaN without labels).
    covariance : (n_models, n_models) covariance of the PPI ratings (Elo points squared).
    classical, classical_se, classical_low, classical_high : the labels alone (``lam = 0``);
        NaN when the labelled comparisons do not connect every model.
    judge, judge_se : the judge's own ratings from all N verdicts, sandwich standard errors.
    effective_labels : per model, :math:`n\\,\\mathrm{Var}_{classical}/\\mathrm{Var}_{PPI}`.
    n_labelled, n_unlabelled : labelled and unlabelled comparisons.
    iterations : Newton iterations of the final PPI fit.
    clipped_pairs : model pairs whose rectified outcome was clipped to [0, 1] (see
        :func:`ppi_bradley_terry`); 0 in the regime the intervals are for.
    """

    rating: np.ndarray
    se: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    lam: float
    covariance: np.ndarray = field(repr=False)
    classical: np.ndarray = field(repr=False)
    classical_se: np.ndarray = field(repr=False)
    classical_low: np.ndarray = field(repr=False)
    classical_high: np.ndarray = field(repr=False)
    judge: np.ndarray = field(repr=False)
    judge_se: np.ndarray = field(repr=False)
    effective_labels: np.ndarray = field(repr=False)
    n_labelled: int = 0
    n_unlabelled: int = 0
    iterations: int = 0
    clipped_pairs: int = 0

    def to_frame(self) -> pd.DataFrame:
        """One row per model code: every array attribute as a column."""
        return pd.DataFrame(
            {"rating": self.rating, "se": self.se, "ci_low": self.ci_low, "ci_high": self.ci_high,
             "classical": self.classical, "classical_se": self.classical_se, "classical_low": self.classical_low,
             "classical_high": self.classical_high, "judge": self.judge, "judge_se": self.judge_se,
             "effective_labels": self.effective_labels},
            index=pd.RangeIndex(len(self.rating), name="model"))


@dataclass(frozen=True)
class CorrectedScore:
    """A judge's score corrected for its misclassification rates (:func:`rogan_gladen`).

    Attributes
    ----------
    estimate, se, ci_low, ci_high : corrected expected score (clipped to [0, 1]).
    judge_score : the judge's raw score on the comparisons used for it.
    confusion : (judge class x reference class) matrix of P(judge says k | reference says l)
        over the labelled comparisons; rows and columns are ``classes``.
    classes : the outcome classes in play, among 0 (loss), 0.5 (tie), 1 (win).
    n_judge, n_labels : the judge's sample and the labels behind the confusion matrix.
    """

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    judge_score: float
    confusion: np.ndarray = field(repr=False)
    classes: tuple[float, ...] = ()
    n_judge: int = 0
    n_labels: int = 0


# ============================================================================ validation


def _level_z(level: float) -> float:
    if isinstance(level, bool) or not (isinstance(level, (int, float, np.floating)) and 0.0 < level < 1.0):
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")
    return float(ndtri(0.5 + level / 2.0))


def _check_lam(lam) -> float | None:
    """None for the tuned parameter, else the fixed value in [0, 1]."""
    if isinstance(lam, str):
        if lam == TUNED:
            return None
        raise ValueError(f"lam must be {TUNED!r} or a number in [0, 1], got {lam!r}")
    if isinstance(lam, bool) or not (isinstance(lam, (int, float, np.floating)) and 0.0 <= lam <= 1.0):
        raise ValueError(f"lam must be {TUNED!r} or a number in [0, 1], got {lam!r}")
    return float(lam)


def _scores(values, name: str) -> np.ndarray:
    out = np.asarray(values, dtype=float).reshape(-1)
    bad = ~(np.isfinite(out) & (out >= 0.0) & (out <= 1.0))
    if bad.any():
        raise ValueError(f"{name} must be scores in [0, 1], got {float(out[bad][0])!r} at position {int(np.flatnonzero(bad)[0])}")
    return out


def _codes(values, name: str, n_models: int) -> np.ndarray:
    arr = np.asarray(values)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must be integer model codes, got dtype {arr.dtype}")
    arr = arr.astype(np.intp).reshape(-1)
    bad = (arr < 0) | (arr >= n_models)
    if bad.any():
        raise ValueError(f"{name} must be model codes in [0, {n_models}), got {int(arr[bad][0])} "
                         f"at position {int(np.flatnonzero(bad)[0])}")
    return arr


def _comparisons(a, b, judge_score_a, n_models) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if isinstance(n_models, bool) or not (isinstance(n_models, (int, np.integer)) and n_models >= 2):
        raise ValueError(f"n_models must be an integer >= 2, got {n_models!r}")
    a, b = _codes(a, "a", n_models), _codes(b, "b", n_models)
    f = _scores(judge_score_a, "judge_score_a")
    if not (len(a) == len(b) == len(f)):
        raise ValueError(f"a, b and judge_score_a must have one length, got {len(a)}, {len(b)} and {len(f)}")
    same = a == b
    if same.any():
        raise ValueError(f"a comparison needs two different models; a == b == {int(a[same][0])} "
                         f"at position {int(np.flatnonzero(same)[0])}")
    return a, b, f


def _label_arrays(labelled_index, label_score, n: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Checked ``(comparison index, score)`` of every label."""
    index = np.asarray(labelled_index)
    if index.size and not np.issubdtype(index.dtype, np.integer):
        raise ValueError(f"labelled_index must be integer comparison indices, got dtype {index.dtype}")
    index = index.astype(np.intp).reshape(-1)
    score = _scores(label_score, name)
    if len(index) != len(score):
        raise ValueError(f"labelled_index and {name} must have one length, got {len(index)} and {len(score)}")
    bad = (index < 0) | (index >= n)
    if bad.any():
        raise ValueError(f"labelled_index must index the {n} comparisons, got {int(index[bad][0])}")
    return index, score


def _inverse_probabilities(values, name: str, count: int) -> np.ndarray:
    """Checked weights 1/pi >= 1, one per label."""
    w = np.asarray(values, dtype=float).reshape(-1)
    if len(w) != count:
        raise ValueError(f"{name} must have one weight per label, got {len(w)} for {count} labels")
    bad = ~(np.isfinite(w) & (w >= 1.0))
    if bad.any():
        raise ValueError(f"{name} must be 1/pi >= 1, got {float(w[bad][0])!r} at position {int(np.flatnonzero(bad)[0])}")
    return w


def _labels(labelled_index, label_score, n: int, label_weight=None):
    """Collapse labels to labelled comparisons: ``(mask, y per comparison, weight per comparison)``.

    ``y`` and ``weight`` are length-``n`` arrays (NaN / 1 where unlabelled); a comparison
    with several labels gets their mean.
    """
    index, score = _label_arrays(labelled_index, label_score, n, "label_score_a")
    count = np.bincount(index, minlength=n)
    mask = count > 0
    y = np.full(n, np.nan)
    y[mask] = np.bincount(index, score, minlength=n)[mask] / count[mask]
    weight = np.ones(n)
    if label_weight is not None:
        w = _inverse_probabilities(label_weight, "label_weight", len(index))
        weight[index] = w
        if not np.allclose(weight[index], w):
            raise ValueError("label_weight must be the same for every label of one comparison")
    return mask, y, weight


# ======================================================================== mean estimates


def ppi_mean(y, yhat_labelled, yhat_unlabelled, *, lam=TUNED, level: float = 0.95,
             weights=None) -> MeanEstimate:
    """Prediction-powered mean of the reference's outcome (PPI++; active inference with ``weights``).

    Without ``weights`` (labels drawn uniformly, the unlabelled sample independent of
    them), PPI++ eq. (2) with the tuned :math:`\\hat\\lambda` of Example 6.1 (Angelopoulos,
    Duchi, Zrnic 2023)::

        theta = lam * mean(yhat_unlabelled) + mean(y - lam * yhat_labelled)
        var   = lam^2 var(yhat_unlabelled) / N + var(y - lam * yhat_labelled) / n
        lam   = clip(cov(y, yhat_labelled) / ((1 + n/N) var(yhat_all)), 0, 1)

    identical to ``ppi_py.ppi_mean_ci``.

    With ``weights`` :math:`w_i = 1/\\pi_i` (label i was requested with probability
    :math:`\\pi_i`; active inference, Zrnic and Candes 2024, eq. (3)), the population is
    all :math:`M = n + N` comparisons and the estimator is the self-normalised form of
    theirs:

    .. math:: \\hat\\theta = \\lambda \\bar{\\hat Y}_M
              + \\frac{\\sum_{i \\in L} w_i (Y_i - \\lambda \\hat Y_i)}{\\sum_{i \\in L} w_i},
              \\qquad \\widehat{\\mathrm{Var}} = \\frac1{M^2}\\sum_{i \\le M}
              \\big(\\lambda(\\hat Y_i - \\bar{\\hat Y}_M) + \\xi_i w_i e_i\\big)^2

    with :math:`e_i = Y_i - \\lambda\\hat Y_i - (\\hat\\theta - \\lambda \\bar{\\hat Y}_M)`
    (the linearisation of the estimator), and :math:`\\lambda` minimising that variance:
    :math:`\\hat\\lambda = \\sum_L w(w-1)(Y - \\hat\\theta_0)(\\hat Y - \\bar{\\hat Y}) /
    \\sum_L w(w-1)(\\hat Y - \\bar{\\hat Y})^2`, clipped to [0, 1]. Normalising by
    :math:`\\sum w` instead of M (Hajek rather than Horvitz-Thompson) keeps the random
    number of labels from inflating the variance; with uniform :math:`\\pi = n/M` the
    estimate is PPI++ with the judge term over all M comparisons and the same asymptotic
    variance as the unweighted form. The classical estimate is the weighted mean of the
    labels.

    Parameters
    ----------
    y : (n,) the reference's outcomes on the labelled comparisons, in [0, 1].
    yhat_labelled : (n,) the judge's outcomes on the same comparisons.
    yhat_unlabelled : (N,) the judge's outcomes on the comparisons without a label.
    lam : ``"tuned"`` (default) or a fixed value in [0, 1] (0: classical, 1: plain PPI).
    level : two-sided coverage of the intervals.
    weights : optional (n,) inverse inclusion probabilities 1/pi >= 1 of the labels.

    Returns
    -------
    MeanEstimate
        With no label, only ``judge_only`` is defined (the rest NaN, ``effective_labels``
        0); with fewer than 2 labels the standard errors are NaN; with no unlabelled
        comparison ``lam`` is 0 and the estimate is the classical one.

    Raises
    ------
    ValueError
        If an outcome is outside [0, 1], the lengths differ, a weight is < 1, or ``lam``
        or ``level`` is out of range.
    """
    z = _level_z(level)
    fixed = _check_lam(lam)
    y = _scores(y, "y")
    f_l = _scores(yhat_labelled, "yhat_labelled")
    f_u = _scores(yhat_unlabelled, "yhat_unlabelled")
    if len(y) != len(f_l):
        raise ValueError(f"y and yhat_labelled must have one length, got {len(y)} and {len(f_l)}")
    w = None if weights is None else _inverse_probabilities(weights, "weights", len(y))
    group = np.zeros(len(y) + len(f_u), dtype=np.intp)
    labelled = np.r_[np.ones(len(y), dtype=bool), np.zeros(len(f_u), dtype=bool)]
    table = _grouped(group, np.r_[f_l, f_u], labelled, np.r_[y, np.full(len(f_u), np.nan)],
                     None if w is None else np.r_[w, np.ones(len(f_u))], 1, fixed, z, len(y))
    row = {k: float(v[0]) for k, v in table.items()}
    return MeanEstimate(
        estimate=row["estimate"], se=row["se"], ci_low=row["ci_low"], ci_high=row["ci_high"], lam=row["lam"],
        classical=row["classical"], classical_se=row["classical_se"], classical_low=row["classical_low"],
        classical_high=row["classical_high"], judge_only=row["judge_only"], judge_only_se=row["judge_only_se"],
        n_labelled=len(y), n_unlabelled=len(f_u), effective_labels=row["effective_labels"])


def ppi_win_rates(a, b, judge_score_a, labelled_index, label_score_a, *, n_models: int, level: float = 0.95,
                  lam=TUNED, label_weight=None) -> pd.DataFrame:
    """Each model's win rate as the reference would give it, by PPI++ per model.

    The win rate of model m is the mean of its score over its battles, ties half (PRD
    eq. 1; :func:`peercore.ranking.winrate.win_rates`): a comparison (a, b) with outcome
    s for a is a battle of a with score s and a battle of b with score 1 - s. For each
    model, :func:`ppi_mean` is applied to its battles (its own tuned :math:`\\lambda_m`):
    the labelled ones give :math:`(Y, \\hat Y)`, the unlabelled ones the judge term.

    Parameters
    ----------
    a, b : (N,) int model codes of every comparison (first- and second-shown; a != b).
    judge_score_a : (N,) the judge's outcome for a: 1 / 0.5 / 0, or the soft ``p_a``.
    labelled_index : (L,) the comparison index of each label; a comparison may have
        several labels (several reference votes): they count as one labelled comparison
        whose label is their mean.
    label_score_a : (L,) each label's outcome for the comparison's model a (a reference
        vote in the other order must be re-oriented first: 1 - score).
    n_models : number of model codes.
    level : two-sided coverage.
    lam : ``"tuned"`` or a fixed value in [0, 1] for every model.
    label_weight : optional (L,) 1/pi of each label's comparison (active inference; see
        :func:`ppi_mean`); labels of one comparison share it. Labels of unknown
        probability (imported) must be left out of a weighted estimate.

    Returns
    -------
    DataFrame indexed by model code (``model``), columns ``battles, labelled, estimate, se,
    ci_low, ci_high, lam, classical, classical_se, classical_low, classical_high,
    judge_only, judge_only_se, effective_labels``. ``judge_only`` is the judge's own win
    rate over all N comparisons (= ``win_rates`` of its verdicts). ``effective_labels`` is
    :math:`n\\,\\mathrm{Var}_{classical}/\\mathrm{Var}_{PPI}` with n all labelled comparisons
    (not the model's): how many labels the people alone would need for this model's
    interval; its median over models is the headline figure.

    Raises
    ------
    ValueError
        On a code outside [0, n_models), a == b, an outcome outside [0, 1], a label index
        outside [0, N), mismatched lengths, or ``lam``/``level`` out of range.
    """
    z = _level_z(level)
    fixed = _check_lam(lam)
    a, b, f = _comparisons(a, b, judge_score_a, n_models)
    mask, y, w = _labels(labelled_index, label_score_a, len(a), label_weight)
    group = np.r_[a, b]
    table = _grouped(group, np.r_[f, 1.0 - f], np.r_[mask, mask], np.r_[y, 1.0 - y],
                     None if label_weight is None else np.r_[w, w], n_models, fixed, z, int(mask.sum()))
    return _frame(table, n_models)


def ppi_win_rates_vs_baseline(a, b, judge_score_a, labelled_index, label_score_a, *, baseline: int,
                              n_models: int, level: float = 0.95, lam=TUNED, label_weight=None) -> pd.DataFrame:
    """Each model's win rate against one baseline model (AlpacaEval's set-up, plain win rate), by PPI++.

    Model m's win rate against baseline :math:`b_0` is the mean of m's score over the
    comparisons between m and :math:`b_0` (ties half); :func:`ppi_mean` per model on those
    comparisons only. Other comparisons are ignored.

    Parameters
    ----------
    baseline : the baseline's model code.
    Other parameters as in :func:`ppi_win_rates`.

    Returns
    -------
    DataFrame as :func:`ppi_win_rates`; the baseline's row, and rows of models that never
    met it, have 0 battles and NaN estimates.
    """
    z = _level_z(level)
    fixed = _check_lam(lam)
    a, b, f = _comparisons(a, b, judge_score_a, n_models)
    if isinstance(baseline, bool) or not (isinstance(baseline, (int, np.integer)) and 0 <= baseline < n_models):
        raise ValueError(f"baseline must be a model code in [0, {n_models}), got {baseline!r}")
    mask, y, w = _labels(labelled_index, label_score_a, len(a), label_weight)
    a_side, b_side = b == baseline, a == baseline
    group = np.r_[a[a_side], b[b_side]]
    table = _grouped(group, np.r_[f[a_side], 1.0 - f[b_side]], np.r_[mask[a_side], mask[b_side]],
                     np.r_[y[a_side], 1.0 - y[b_side]],
                     None if label_weight is None else np.r_[w[a_side], w[b_side]], n_models, fixed, z,
                     int(mask[a_side].sum() + mask[b_side].sum()))
    return _frame(table, n_models)


def _frame(table: dict, n_models: int) -> pd.DataFrame:
    frame = pd.DataFrame({k: table[k] for k in _COLUMNS}, index=pd.RangeIndex(n_models, name="model"))
    return frame.astype({"battles": np.int64, "labelled": np.int64})


def _grouped(group, f, labelled, y, w, n_groups: int, fixed: float | None, z: float, n_labels: int) -> dict:
    """PPI++ (``w is None``) or the weighted active estimator, for every group at once.

    Units are rows: ``group`` (int), the judge's outcome ``f``, whether the row is
    labelled and its label ``y`` (ignored where not), and the inverse inclusion
    probability ``w``. All sums are bincounts, so a million rows cost milliseconds.
    ``n_labels`` is the n of the effective labels :math:`n\\,\\mathrm{Var}_{classical}/
    \\mathrm{Var}_{PPI}`: all labelled comparisons behind the estimate, not one group's.
    """
    G = n_groups
    L = labelled
    gl, gu = group[L], group[~L]
    fl, yl, fu = f[L], y[L], f[~L]

    def s(g, x=None):
        return np.bincount(g, x, minlength=G).astype(float)

    n, nu = s(gl), s(gu)
    total = n + nu
    with np.errstate(invalid="ignore", divide="ignore"):
        f_all_mean = (s(gl, fl) + s(gu, fu)) / total
        f_all_var0 = (s(gl, fl * fl) + s(gu, fu * fu)) / total - f_all_mean ** 2
        judge_only = f_all_mean
        judge_only_se = np.sqrt(np.clip(f_all_var0, 0.0, None) / total)
        if w is None:
            out = _uniform(gl, fl, yl, gu, fu, n, nu, s, fixed)
        else:
            out = _weighted(gl, fl, yl, w[L], group, f, n, total, f_all_mean, s, fixed)
        estimate, var, lam, classical, var0 = out
        few = n < 2
        se = np.where(few, np.nan, np.sqrt(np.clip(var, 0.0, None)))
        classical_se = np.where(few, np.nan, np.sqrt(np.clip(var0, 0.0, None)))
        effective = np.where(var > 0, n_labels * var0 / np.where(var > 0, var, 1.0),
                             np.where(var0 > 0, np.inf, n_labels))
        effective = np.where(few, np.where(n == 0, 0.0, np.nan), effective)
    return {"battles": total.astype(np.int64), "labelled": n.astype(np.int64), "estimate": estimate, "se": se,
            "ci_low": estimate - z * se, "ci_high": estimate + z * se, "lam": lam, "classical": classical,
            "classical_se": classical_se, "classical_low": classical - z * classical_se,
            "classical_high": classical + z * classical_se, "judge_only": judge_only,
            "judge_only_se": judge_only_se, "effective_labels": effective}


def _uniform(gl, fl, yl, gu, fu, n, nu, s, fixed):
    """PPI++ mean per group, independent labelled and unlabelled samples (``ppi_py`` conventions)."""
    y_mean, fl_mean = s(gl, yl) / n, s(gl, fl) / n
    var_y = s(gl, yl * yl) / n - y_mean ** 2
    var_fl = s(gl, fl * fl) / n - fl_mean ** 2
    cov = s(gl, yl * fl) / n - y_mean * fl_mean
    fu_mean = s(gu, fu) / nu
    var_fu = s(gu, fu * fu) / nu - fu_mean ** 2
    total = n + nu
    all_mean = (s(gl, fl) + s(gu, fu)) / total
    var_all1 = (s(gl, fl * fl) + s(gu, fu * fu) - total * all_mean ** 2) / (total - 1)  # ddof=1, as np.cov
    if fixed is None:
        lam = np.clip(cov / ((1.0 + n / nu) * var_all1), 0.0, 1.0)
        lam = np.where((nu > 0) & (var_all1 > 1e-15) & np.isfinite(lam), lam, 0.0)
    else:
        lam = np.where(nu > 0, fixed, 0.0)
    lam = np.where(n > 0, lam, np.nan)
    judge_term = np.where(lam > 0, lam * fu_mean, 0.0)
    estimate = judge_term + y_mean - lam * fl_mean
    var = np.where(lam > 0, lam ** 2 * var_fu / nu, 0.0) + (var_y - 2 * lam * cov + lam ** 2 * var_fl) / n
    return estimate, var, lam, y_mean, var_y / n


def _weighted(gl, fl, yl, wl, group, f, n, total, f_mean, s, fixed):
    """The self-normalised active-inference estimator per group (see :func:`ppi_mean`)."""
    W = s(gl, wl)
    theta0 = s(gl, wl * yl) / W
    fc_l = fl - f_mean[gl]
    fc_all = f - f_mean[group]
    if fixed is None:
        k = wl * (wl - 1.0)
        num = s(gl, k * (yl - theta0[gl]) * fc_l)
        den = s(gl, k * fc_l * fc_l)
        lam = np.clip(num / den, 0.0, 1.0)
        lam = np.where((den > 1e-15) & np.isfinite(lam), lam, 0.0)
    else:
        lam = np.full(len(W), fixed)
    lam = np.where(n > 0, lam, np.nan)
    d = yl - lam[gl] * fl
    d_mean = s(gl, wl * d) / W
    estimate = lam * f_mean + d_mean
    e = d - d_mean[gl]
    lam_l = lam[gl]
    phi2 = lam ** 2 * s(group, fc_all * fc_all) + s(gl, 2 * lam_l * fc_l * wl * e + wl * wl * e * e)
    var = phi2 / total ** 2
    var0 = s(gl, wl * wl * (yl - theta0[gl]) ** 2) / total ** 2
    return estimate, var, lam, theta0, var0


# ====================================================================== Bradley-Terry


@dataclass(frozen=True)
class _PairStats:
    """Per-pair sufficient statistics of the comparisons (pair p = models lo[p] < hi[p]).

    Labelled comparisons: count ``l``, sums of y, f, y^2, f^2, y f (outcomes for ``lo``);
    unlabelled: count ``u``, sums of f, f^2. Everything the rectified loss, its gradient
    covariances and its Hessian need, from one pass over the comparisons.
    """

    lo: np.ndarray
    hi: np.ndarray
    l: np.ndarray
    sy: np.ndarray
    sf: np.ndarray
    syy: np.ndarray
    sff: np.ndarray
    syf: np.ndarray
    u: np.ndarray
    su: np.ndarray
    suu: np.ndarray
    n_models: int

    @property
    def n(self) -> float:
        return float(self.l.sum())

    @property
    def nu(self) -> float:
        return float(self.u.sum())


def _pair_stats(a, b, f, mask, y, n_models) -> _PairStats:
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    flip = a > b
    f_lo = np.where(flip, 1.0 - f, f)
    y_lo = np.where(flip, 1.0 - y, y)
    key = lo.astype(np.int64) * n_models + hi
    if n_models * n_models <= max(4 * len(key), 1 << 16):
        # A bincount over the K^2 possible pairs: O(N), where np.unique sorts.
        present = np.flatnonzero(np.bincount(key, minlength=n_models * n_models))
        code = np.full(n_models * n_models, -1, dtype=np.intp)
        code[present] = np.arange(len(present))
        keys, pair = present.astype(np.int64), code[key]
    else:
        keys, pair = np.unique(key, return_inverse=True)
    P = len(keys)

    def s(sel, x=None):
        return np.bincount(pair[sel], None if x is None else x[sel], minlength=P).astype(float)

    u_sel = ~mask
    yl = np.where(mask, y_lo, 0.0)
    return _PairStats(
        lo=(keys // n_models).astype(np.intp), hi=(keys % n_models).astype(np.intp),
        l=s(mask), sy=s(mask, yl), sf=s(mask, f_lo), syy=s(mask, yl * yl), sff=s(mask, f_lo * f_lo),
        syf=s(mask, yl * f_lo), u=s(u_sel), su=s(u_sel, f_lo), suu=s(u_sel, f_lo * f_lo), n_models=n_models)


def _scatter(st: _PairStats, v: np.ndarray) -> np.ndarray:
    """:math:`\\sum_p v_p (e_{lo_p} - e_{hi_p})`."""
    K = st.n_models
    return np.bincount(st.lo, v, minlength=K) - np.bincount(st.hi, v, minlength=K)


def _connected(st: _PairStats, weight: np.ndarray) -> bool:
    use = weight > 0
    K = st.n_models
    graph = scipy.sparse.coo_matrix((np.ones(int(use.sum())), (st.lo[use], st.hi[use])), shape=(K, K))
    return scipy.sparse.csgraph.connected_components(graph, directed=False)[0] == 1


def _solve(st: _PairStats, W: np.ndarray, S: np.ndarray, ridge: float, *, start=None, tol: float = 1e-10,
           max_iter: int = 100) -> tuple[np.ndarray, int]:
    """Minimise :math:`\\sum_p W_p \\log(1 + e^{\\eta_p}) - S_p \\eta_p + \\tfrac{\\rho}{2}\\lVert\\theta\\rVert^2`.

    :math:`\\eta_p = \\theta_{lo} - \\theta_{hi}`. This is the rectified PPI loss
    aggregated per pair: :math:`W_p = \\lambda u_p/N + (1-\\lambda) l_p/n` and
    :math:`S_p = \\lambda \\sum_U \\tilde Y/N + \\sum_L (Y - \\lambda \\hat Y)/n`. Its
    "outcome" :math:`S_p/W_p` may leave [0, 1] (a labelled pair where the judge said the
    opposite of the reference), which :class:`peercore.ranking.core.Design` rightly
    refuses for a likelihood; it stays convex for :math:`\\lambda \\in [0, 1]` (every
    :math:`W_p \\ge 0`), so a dozen lines of Newton with backtracking on the dense
    K x K system solve it. The common shift is fixed by a gauge term as in
    :func:`peercore.ranking.core.fit` (it changes no step from a centred start).
    """
    K = st.n_models
    theta = np.zeros(K) if start is None else start - start.mean()

    def value(t):
        eta = t[st.lo] - t[st.hi]
        return float((W * np.logaddexp(0.0, eta) - S * eta).sum() + 0.5 * ridge * (t @ t))

    current = value(theta)
    change = math.inf
    for iteration in range(1, max_iter + 1):
        p = expit(theta[st.lo] - theta[st.hi])
        grad = _scatter(st, W * p - S) + ridge * theta
        h = laplacian(st.lo, st.hi, W * p * (1.0 - p), K)
        h[np.diag_indices(K)] += ridge
        h += max(float(np.mean(np.diag(h))), 1e-12) / K
        step = -scipy.linalg.solve(h, grad, assume_a="pos")
        if float(-(grad @ step)) < 1e-24:    # Newton decrement at rounding level: nothing left to gain
            return theta, iteration
        t = 1.0
        while True:
            candidate = theta + t * step
            new = value(candidate)
            if new <= current + 1e-12 * abs(current) or t < 1e-10:
                break
            t *= 0.5
        change = float(np.max(np.abs(t * step)))
        theta, current = candidate - candidate.mean(), new
        if change < tol:
            return theta, iteration
    raise ConvergenceError("PPI Bradley-Terry Newton iteration", iterations=max_iter, change=change, tol=tol)


def _rectified(st: _PairStats, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-pair weight and score of the rectified loss, the score clipped to [0, weight].

    :math:`W_p = \\lambda u_p/N + (1-\\lambda) l_p/n`, :math:`S_p = \\lambda \\sum_U \\tilde Y/N
    + \\sum_L (Y - \\lambda \\hat Y)/n`. Where a pair's comparisons are mostly labelled and the
    judge is biased on it, :math:`S_p` can leave :math:`[0, W_p]` (an "outcome" below 0 or
    above 1), and the rectified loss is then unbounded below: at 1,000 of PRD's 1,760 votes
    labelled, Newton ran to its cap with ratings drifting apart. Clipping the pair's outcome
    to [0, 1] keeps a finite minimiser; it changes nothing when no pair leaves the range (the
    asymptotic regime, and every ``ppi_py`` comparison in the tests) and
    :attr:`BradleyTerryEstimate.clipped_pairs` counts the pairs it touched.
    """
    n, nu = st.n, st.nu
    if nu == 0 or lam == 0:
        return st.l / n, st.sy / n
    W = lam * st.u / nu + (1 - lam) * st.l / n
    S = lam * st.su / nu + (st.sy - lam * st.sf) / n
    return W, np.clip(S, 0.0, W)


def _clipped(st: _PairStats, lam: float) -> int:
    if st.nu == 0 or lam == 0:
        return 0
    W = lam * st.u / st.nu + (1 - lam) * st.l / st.n
    S = lam * st.su / st.nu + (st.sy - lam * st.sf) / st.n
    return int(((S < 0) | (S > W)).sum())


def _pinv_laplacian(h: np.ndarray) -> np.ndarray:
    """Moore-Penrose inverse of a connected graph's Laplacian-like matrix (null space = the constants)."""
    K = h.shape[0]
    j = np.full((K, K), 1.0 / K)
    return scipy.linalg.inv(h + j) - j


def _gradient_moments(st: _PairStats, theta: np.ndarray):
    """Per-pair sums of the gradient residuals at ``theta`` (see :func:`ppi_bradley_terry`).

    With :math:`\\sigma_p = \\sigma(\\theta_{lo} - \\theta_{hi})` the gradients of the
    logistic loss are :math:`(\\sigma_p - Y)x_p` (labels), :math:`(\\sigma_p - \\hat Y)x_p`
    (judge on labelled) and :math:`(\\sigma_p - \\tilde Y)x_p` (judge on unlabelled),
    :math:`x_p = e_{lo} - e_{hi}`. Returns ``sigma`` and a dict of first and second
    moment sums per pair.
    """
    p = expit(theta[st.lo] - theta[st.hi])
    m = {
        "g1": st.l * p - st.sy, "g2": st.l * p * p - 2 * p * st.sy + st.syy,
        "h1": st.l * p - st.sf, "h2": st.l * p * p - 2 * p * st.sf + st.sff,
        "gh": st.l * p * p - p * (st.sy + st.sf) + st.syf,
        "u1": st.u * p - st.su, "u2": st.u * p * p - 2 * p * st.su + st.suu,
    }
    return p, m


def _covariance(st: _PairStats, first: np.ndarray, second: np.ndarray, count: float, ddof: int) -> np.ndarray:
    """Covariance of row vectors :math:`d_r x_{p(r)}` from per-pair sums of d and d^2."""
    mean = _scatter(st, first) / count
    return (laplacian(st.lo, st.hi, second, st.n_models) - count * np.outer(mean, mean)) / (count - ddof)


def _tuned_lambda(st: _PairStats, theta: np.ndarray) -> float:
    """The scalar minimising the trace of the PPI sandwich (PPI++ eq. (7), ``ppi_py._calc_lam_glm``)."""
    n, nu = st.n, st.nu
    p, m = _gradient_moments(st, theta)
    v = _pinv_laplacian(laplacian(st.lo, st.hi, (st.l + st.u) * p * (1 - p), st.n_models) / (n + nu))
    g_mean, h_mean = _scatter(st, m["g1"]) / n, _scatter(st, m["h1"]) / n
    cross = laplacian(st.lo, st.hi, m["gh"], st.n_models) - n * np.outer(g_mean, h_mean)
    cov_grads = (cross + cross.T) / n
    var_hat = _covariance(st, m["h1"] + m["u1"], m["h2"] + m["u2"], n + nu, 1)
    num = np.trace(v @ cov_grads @ v)
    den = 2.0 * (1.0 + n / nu) * np.trace(v @ var_hat @ v)
    if not (den > 0 and np.isfinite(num)):
        return 0.0
    return float(np.clip(num / den, 0.0, 1.0))


def _ppi_covariance(st: _PairStats, theta: np.ndarray, lam: float) -> np.ndarray:
    """:math:`H^{+}(\\widehat V_n(\\lambda) + \\tfrac nN \\lambda^2 \\widehat V_N)H^{+}/n` in natural units.

    The Hessian uses every comparison, for the classical interval (``lam = 0``) too: it
    does not depend on the outcomes, and one bread for both makes their widths differ by
    the meat alone. (``ppi_py.ppi_logistic_ci`` takes the labelled rows only at
    ``lam = 0``; with 300 labels among 5,000 comparisons that noisier bread made the
    classical interval up to 20% narrower than PPI++'s for some models in
    ``benchmarks/calibration_simulation.py``.)
    """
    n, nu = st.n, st.nu
    p, m = _gradient_moments(st, theta)
    rows = st.l + st.u
    v = _pinv_laplacian(laplacian(st.lo, st.hi, rows * p * (1 - p), st.n_models) / rows.sum())
    first = m["g1"] - lam * m["h1"]
    second = m["g2"] - 2 * lam * m["gh"] + lam * lam * m["h2"]
    meat = _covariance(st, first, second, n, 1)
    if lam > 0:
        meat = meat + (n / nu) * lam * lam * _covariance(st, m["u1"], m["u2"], nu, 1)
    cov = v @ meat @ v / n
    return 0.5 * (cov + cov.T)


def _judge_only(st: _PairStats) -> tuple[np.ndarray, np.ndarray]:
    """The judge's own BT ratings and sandwich covariance from all N verdicts (natural units)."""
    N = st.n + st.nu
    count, total = st.l + st.u, st.sf + st.su
    theta, _ = _solve(st, count / N, total / N, DEFAULT_L2 / N)
    p = expit(theta[st.lo] - theta[st.hi])
    v = _pinv_laplacian(laplacian(st.lo, st.hi, count * p * (1 - p), st.n_models) / N)
    first = count * p - total
    second = count * p * p - 2 * p * total + (st.sff + st.suu)
    cov = v @ _covariance(st, first, second, N, 1) @ v / N
    return theta, 0.5 * (cov + cov.T)


def _elo(theta: np.ndarray, cov: np.ndarray, z: float):
    """Ratings :math:`R = 1000 + (\\theta - \\bar\\theta)\\,400/\\ln 10` (mean 1000, as
    ``peercore rank --method bt``), standard errors and intervals."""
    c = ELO_SCALE / math.log(ELO_BASE)
    rating = ELO_ANCHOR + (theta - theta.mean()) * c
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None)) * c
    return rating, se, rating - z * se, rating + z * se


def ppi_bradley_terry(a, b, judge_score_a, labelled_index, label_score_a, *, n_models: int, level: float = 0.95,
                      lam=TUNED, tol: float = 1e-10, max_iter: int = 100) -> BradleyTerryEstimate:
    """Bradley-Terry ratings the reference would give, by the PPI M-estimator (rectified gradient).

    Bradley-Terry is logistic regression on :math:`x = e_a - e_b` without intercept,
    :math:`\\ell_\\theta(x, y) = \\log(1 + e^{x^\\top\\theta}) - y\\,x^\\top\\theta` with soft
    outcomes y (ties 1/2). The PPI estimate solves the rectified loss (PPI++ eq. (4);
    Boyeau et al. 2024 section 3)

    .. math:: \\hat\\theta_\\lambda = \\arg\\min_\\theta \\frac{\\lambda}{N}\\sum_{U} \\ell_\\theta(x, \\tilde Y)
              + \\frac1n \\sum_{L} \\big(\\ell_\\theta(x, Y) - \\lambda\\,\\ell_\\theta(x, \\hat Y)\\big),

    whose gradient is the rectified gradient. Its covariance is the sandwich

    .. math:: \\Sigma_\\lambda = \\frac1n H^{+}\\Big(\\mathrm{Cov}_L\\big(\\nabla\\ell(Y) - \\lambda\\nabla\\ell(\\hat Y)\\big)
              + \\frac nN \\lambda^2\\,\\mathrm{Cov}_U\\big(\\nabla\\ell(\\tilde Y)\\big)\\Big) H^{+}

    with :math:`H` the Hessian over all comparisons and :math:`H^{+}` its pseudo-inverse
    (ratings are centred: a common shift is not identified). :math:`\\lambda` is the one
    scalar minimising :math:`\\mathrm{tr}\\,\\Sigma_\\lambda` (PPI++ eq. (7)), computed at the
    :math:`\\lambda = 1` estimate and clipped to [0, 1] (``ppi_py.ppi_logistic_ci``), which
    also keeps the rectified loss convex. A pair whose rectified outcome leaves [0, 1] (few
    unlabelled comparisons, a biased judge) is clipped to it so that the loss keeps a
    finite minimiser (:func:`_rectified`; ``clipped_pairs`` counts them). Ratings on the Elo scale, mean 1000, as
    ``peercore rank --method bt`` anchors them: :math:`R = 1000 + (\\theta - \\bar\\theta)
    \\cdot 400/\\ln 10`. A negligible ridge (``peercore.ranking.core.DEFAULT_L2`` per
    comparison, as ``peercore rank``) keeps a model that won every battle finite.

    Parameters
    ----------
    a, b, judge_score_a, labelled_index, label_score_a, n_models : as :func:`ppi_win_rates`.
    level : two-sided coverage.
    lam : ``"tuned"`` or a fixed value in [0, 1].
    tol, max_iter : Newton stopping rule (largest rating change, natural units) and cap.

    Returns
    -------
    BradleyTerryEstimate
        Without labels only the judge's ratings are defined. The classical ratings (labels
        alone) are NaN when the labelled comparisons do not connect every model.

    Raises
    ------
    ValueError
        On bad input (see :func:`ppi_win_rates`) or when the judge's comparisons do not
        connect every model (ratings in separate components are not comparable).
    ConvergenceError
        If Newton's method reaches ``max_iter``.
    """
    z = _level_z(level)
    fixed = _check_lam(lam)
    a, b, f = _comparisons(a, b, judge_score_a, n_models)
    mask, y, _ = _labels(labelled_index, label_score_a, len(a))
    st = _pair_stats(a, b, f, mask, y, n_models)
    # The algebra is on K x K matrices: BLAS threads only contend (a 100 x 100 inverse took
    # 0.3 s with two threads on a loaded 2-core machine, 1 ms with one).
    with threadpool_limits(limits=1, user_api="blas"):
        return _bradley_terry(st, n_models, fixed, z, tol, max_iter)


def _bradley_terry(st: _PairStats, n_models: int, fixed: float | None, z: float, tol: float,
                   max_iter: int) -> BradleyTerryEstimate:
    if not _connected(st, st.l + st.u):
        raise ValueError(f"the comparisons must connect all {n_models} models (n_models counts codes that never "
                         "played, or the comparison graph has separate components)")
    K, n, nu = n_models, st.n, st.nu
    judge_theta, judge_cov = _judge_only(st)
    judge, judge_se, _, _ = _elo(judge_theta, judge_cov, z)
    nan = np.full(K, np.nan)
    if n == 0:
        return BradleyTerryEstimate(nan, nan, nan, nan, math.nan, np.full((K, K), np.nan), nan, nan, nan, nan,
                                    judge, judge_se, np.zeros(K), 0, int(nu), 0)

    def fit(weight: float, start=None):
        W, S = _rectified(st, weight)
        return _solve(st, W, S, DEFAULT_L2 / (n + nu if weight else n), start=start, tol=tol, max_iter=max_iter)

    if nu == 0:
        used = 0.0
    elif fixed is None:
        used = _tuned_lambda(st, fit(1.0)[0])
    else:
        used = fixed
    theta, iterations = fit(used, start=judge_theta)
    clipped = _clipped(st, used)
    cov = _ppi_covariance(st, theta, used)
    rating, se, low, high = _elo(theta, cov, z)
    if _connected(st, st.l) and n >= 2:
        c_theta, _ = fit(0.0, start=theta)
        c_cov = _ppi_covariance(st, c_theta, 0.0)
        classical, c_se, c_low, c_high = _elo(c_theta, c_cov, z)
        with np.errstate(invalid="ignore", divide="ignore"):
            effective = n * c_se ** 2 / se ** 2
    else:
        classical = c_se = c_low = c_high = effective = nan
    return BradleyTerryEstimate(rating, se, low, high, used, cov * (ELO_SCALE / math.log(ELO_BASE)) ** 2, classical,
                                c_se, c_low, c_high, judge, judge_se, effective, int(n), int(nu), iterations, clipped)


# ============================================================== misclassification correction


_CLASSES = (0.0, 0.5, 1.0)


def _classify(score: np.ndarray) -> np.ndarray:
    """0 (loss), 1 (tie), 2 (win) of scores in [0, 1]: soft scores by which side of 1/2 they fall."""
    return np.where(score > 0.5, 2, np.where(score < 0.5, 0, 1))


def rogan_gladen(judge_score, labelled_index, label_score, *, level: float = 0.95) -> CorrectedScore:
    """A judge-measured score corrected with the judge's error rates (Rogan-Gladen; Lee et al. 2025).

    The judge calls each comparison loss / tie / win for one side; the score it reports is
    :math:`\\hat p^\\top c` with :math:`\\hat p` its class shares and :math:`c = (0, 1/2, 1)`.
    Its confusion matrix :math:`M_{kl} = P(\\text{judge } k \\mid \\text{reference } l)` is
    estimated on the labelled comparisons (one column per reference class); the corrected
    class shares solve :math:`M \\pi = \\hat p` (least squares when a class is missing) and
    the corrected score is :math:`\\hat\\theta = c^\\top \\pi`. With two classes this is Lee
    et al.'s bias-adjusted estimator (arXiv 2511.21140, section 3):

    .. math:: \\hat\\theta = \\frac{\\hat p + \\hat q_0 - 1}{\\hat q_0 + \\hat q_1 - 1}

    (:math:`q_0` specificity, :math:`q_1` sensitivity). Ties are kept: the 3 x 3 matrix
    (reference loss/tie/win against judge loss/tie/win). The variance is the delta method
    over both samples -- the judge's multinomial shares over the *unlabelled* comparisons
    (independent of the labels; all comparisons when every one is labelled) and each
    column of :math:`M` as a multinomial of its labels --

    .. math:: \\mathrm{Var}(\\hat\\theta) = \\frac{u^\\top \\Sigma_{\\hat p} u}{N}
              + \\sum_l \\frac{g_l^\\top \\Sigma_{M_l} g_l}{m_l}, \\qquad
              u^\\top = c^\\top M^{+},\\; g_l = -\\pi_l u + (c^\\top (M^\\top M)^{-1})_l\\, r,

    with :math:`r = \\hat p - M\\pi` the least-squares residual (0 for a square M). With
    two classes it is Lee et al.'s plug-in variance :math:`[\\hat p(1-\\hat p)/N +
    (1-\\theta)^2 q_0(1-q_0)/m_0 + \\theta^2 q_1(1-q_1)/m_1]/(q_0+q_1-1)^2` (without their
    pseudo-count smoothing). Estimate and interval are clipped to [0, 1]. Soft scores are
    classed by the side of 1/2 they fall on; each label is one observation of its column.

    Parameters
    ----------
    judge_score : (N,) the judge's outcome per comparison for the side scored.
    labelled_index : (L,) comparison index of each label.
    label_score : (L,) each label's outcome for the same side.
    level : two-sided coverage.

    Returns
    -------
    CorrectedScore
        NaN estimate when there is no label, or when the judge cannot tell the reference's
        classes apart (singular confusion matrix, e.g. :math:`q_0 + q_1 = 1`).
    """
    z = _level_z(level)
    f = _scores(judge_score, "judge_score")
    index, y = _label_arrays(labelled_index, label_score, len(f), "label_score")
    judge_class = _classify(f)
    labelled = np.zeros(len(f), dtype=bool)
    labelled[index] = True
    counts = _judge_pool(np.bincount(judge_class[~labelled], minlength=3), np.bincount(judge_class, minlength=3))
    table = np.bincount(judge_class[index] * 3 + _classify(y), minlength=9).reshape(3, 3)
    return _corrected(counts.astype(float), table.astype(float), z)


def _judge_pool(counts_unlabelled: np.ndarray, counts_all: np.ndarray) -> np.ndarray:
    """The judge's class counts over the unlabelled comparisons, or all of them when every one is labelled."""
    return counts_unlabelled if counts_unlabelled.sum() > 0 else counts_all


def _corrected(judge_counts: np.ndarray, table: np.ndarray, z: float) -> CorrectedScore:
    """:func:`rogan_gladen` from the judge's class counts (3,) and the (judge x reference) label counts (3, 3)."""
    size, n_labels = int(judge_counts.sum()), int(table.sum())
    raw = float(judge_counts @ np.asarray(_CLASSES) / max(size, 1))
    ref = np.flatnonzero(table.sum(axis=0) > 0)
    judged = np.flatnonzero((judge_counts > 0) | (table.sum(axis=1) > 0))
    nan = CorrectedScore(math.nan, math.nan, math.nan, math.nan, raw, table, _CLASSES, size, n_labels)
    if n_labels == 0 or size == 0:
        return nan
    m_l = table[:, ref].sum(axis=0)
    M = table[np.ix_(judged, ref)] / m_l
    p = judge_counts[judged] / size
    c = np.asarray(_CLASSES)[ref]
    if np.linalg.matrix_rank(M) < len(ref) or np.linalg.cond(M) > 1e8:
        return CorrectedScore(math.nan, math.nan, math.nan, math.nan, raw, table[np.ix_(judged, ref)],
                              tuple(np.asarray(_CLASSES)[ref]), size, n_labels)
    mtm_inv = np.linalg.inv(M.T @ M)
    m_plus = mtm_inv @ M.T
    pi = m_plus @ p
    theta = float(c @ pi)
    u = m_plus.T @ c
    v = mtm_inv @ c
    r = p - M @ pi
    var = u @ (np.diag(p) - np.outer(p, p)) @ u / size
    for col in range(len(ref)):
        g = -pi[col] * u + v[col] * r
        ml = M[:, col]
        var += g @ (np.diag(ml) - np.outer(ml, ml)) @ g / m_l[col]
    se = math.sqrt(max(float(var), 0.0))
    clip = lambda x: min(1.0, max(0.0, x))  # noqa: E731
    return CorrectedScore(clip(theta), se, clip(theta - z * se), clip(theta + z * se), raw,
                          table[np.ix_(judged, ref)] / m_l, tuple(np.asarray(_CLASSES)[ref]), size, n_labels)


def corrected_win_rates(a, b, judge_score_a, labelled_index, label_score_a, *, n_models: int,
                        level: float = 0.95) -> pd.DataFrame:
    """Each model's judge win rate corrected with the judge's per-model error rates (:func:`rogan_gladen`).

    Model m's battles are re-oriented to m (score 1 - s where m was shown second); the
    judge's loss/tie/win shares over m's unlabelled battles are corrected with the 3 x 3
    confusion matrix of m's labelled battles (per model, since a judge's errors differ by
    model, e.g. self-preference). Each label is one observation.

    Parameters
    ----------
    As :func:`ppi_win_rates` (without ``lam``).

    Returns
    -------
    DataFrame indexed by model code with columns ``estimate, se, ci_low, ci_high,
    judge_score, judge_battles, labels``.
    """
    z = _level_z(level)
    a, b, f = _comparisons(a, b, judge_score_a, n_models)
    index, y = _label_arrays(labelled_index, label_score_a, len(a), "label_score_a")
    K = n_models
    labelled = np.zeros(len(a), dtype=bool)
    labelled[index] = True
    # Every battle oriented to its model: (model, judge class) for both sides of each comparison.
    model = np.r_[a, b]
    judge_class = np.r_[_classify(f), _classify(1.0 - f)]
    unl = np.r_[~labelled, ~labelled]
    pools_unl = np.bincount(model[unl] * 3 + judge_class[unl], minlength=3 * K).reshape(K, 3)
    pools_all = np.bincount(model * 3 + judge_class, minlength=3 * K).reshape(K, 3)
    lab_model = np.r_[a[index], b[index]]
    lab_judge = np.r_[_classify(f[index]), _classify(1.0 - f[index])]
    lab_ref = np.r_[_classify(y), _classify(1.0 - y)]
    tables = np.bincount((lab_model * 3 + lab_judge) * 3 + lab_ref, minlength=9 * K).reshape(K, 3, 3)
    rows = []
    for m in range(K):
        result = _corrected(_judge_pool(pools_unl[m], pools_all[m]).astype(float), tables[m].astype(float), z)
        rows.append({"estimate": result.estimate, "se": result.se, "ci_low": result.ci_low,
                     "ci_high": result.ci_high, "judge_score": result.judge_score,
                     "judge_battles": result.n_judge, "labels": result.n_labels})
    return pd.DataFrame(rows, index=pd.RangeIndex(n_models, name="model"))


# ======================================================================= active selection


def uncertainty(*, p_a=None, both_orders=None, samples=None) -> np.ndarray:
    """The judge's uncertainty about each comparison, :math:`\\sqrt{\\bar s(1 - \\bar s)}`.

    Zrnic and Candes (2024, section 4) sample proportionally to
    :math:`\\sqrt{E[(Y - \\hat Y)^2 \\mid X]}`; for a calibrated probability :math:`p` that
    is :math:`\\sqrt{p(1-p)}`. Give exactly one of:

    Parameters
    ----------
    p_a : (N,) soft verdicts (the judge's probability for a).
    both_orders : (N, 2) the judge's outcomes for a when shown in each order (already
        re-oriented to a): agreement gives 0, a win and a loss 1/2.
    samples : (N, K) K sampled verdicts per comparison (outcomes for a).

    With a single hard verdict per comparison there is no uncertainty to read: use
    uniform selection (``np.ones(N)``).

    Returns
    -------
    (N,) values in [0, 1/2], :math:`\\bar s` the mean of the given outcomes per comparison.
    """
    given = [(name, v) for name, v in (("p_a", p_a), ("both_orders", both_orders), ("samples", samples))
             if v is not None]
    if len(given) != 1:
        raise ValueError(f"give exactly one of p_a, both_orders, samples; got {[name for name, _ in given] or 'none'}")
    name, values = given[0]
    arr = np.asarray(values, dtype=float)
    if name == "p_a":
        arr = arr.reshape(-1, 1)
    elif arr.ndim != 2 or (name == "both_orders" and arr.shape[1] != 2):
        raise ValueError(f"{name} must be an (N, {'2' if name == 'both_orders' else 'K'}) array, got shape {arr.shape}")
    mean = _scores(arr.reshape(-1), name).reshape(arr.shape).mean(axis=1)
    return np.sqrt(mean * (1.0 - mean))


def active_probabilities(uncertainty, budget: float, *, mix: float = 0.5) -> np.ndarray:
    """Label probabilities proportional to the judge's uncertainty, mixed with uniform, capped at 1.

    .. math:: \\pi_i = \\min\\big(1,\\; c\\,[(1 - \\alpha)\\,u_i/\\bar u + \\alpha]\\big), \\qquad
              \\sum_i \\pi_i = K

    (Zrnic and Candes 2024, section 4: uncertainty sampling mixed with the uniform rule so
    that no :math:`\\pi_i` is near 0, which would make :math:`1/\\pi_i` explode); the
    constant c is found by water-filling (probabilities that reach 1 are fixed and the
    rest rescaled). The default half-and-half mix bounds the loss when the uncertainty
    misleads (a judge that agrees with itself in both orders and is still wrong): with
    ``mix=0.2`` such a judge's intervals were 1.5x wider than uniform selection's in
    ``benchmarks/calibration_simulation.py``, with 0.5 1.1x. Store :math:`\\pi_i` with each request: the estimators weight by
    :math:`1/\\pi_i`. Draw the requests with :func:`draw_labels`.

    Parameters
    ----------
    uncertainty : (N,) non-negative scores (:func:`uncertainty`); all zero gives uniform.
    budget : expected number of labels K, in (0, N].
    mix : weight :math:`\\alpha` of the uniform rule, in (0, 1] (1 = uniform).

    Returns
    -------
    (N,) probabilities in (0, 1] summing to ``budget``.

    Raises
    ------
    ValueError
        If an uncertainty is negative or not finite, ``budget`` is outside (0, N] or
        ``mix`` outside (0, 1].
    """
    u = np.asarray(uncertainty, dtype=float).reshape(-1)
    bad = ~(np.isfinite(u) & (u >= 0))
    if bad.any():
        raise ValueError(f"uncertainty must be finite and >= 0, got {float(u[bad][0])!r} at position {int(np.flatnonzero(bad)[0])}")
    n = len(u)
    if isinstance(budget, bool) or not (isinstance(budget, (int, float, np.integer, np.floating)) and 0 < budget <= n):
        raise ValueError(f"budget must be in (0, {n}] (the number of comparisons), got {budget!r}")
    if isinstance(mix, bool) or not (isinstance(mix, (int, float, np.floating)) and 0 < mix <= 1):
        raise ValueError(f"mix must be in (0, 1], got {mix!r}")
    mean = u.mean()
    q = (1.0 - mix) * (u / mean if mean > 0 else np.ones(n)) + mix
    pi = np.zeros(n)
    capped = np.zeros(n, dtype=bool)
    for _ in range(n + 1):
        free = ~capped
        scale = (budget - capped.sum()) / q[free].sum()
        pi[free] = scale * q[free]
        over = free & (pi >= 1.0)
        if not over.any():
            break
        capped |= over
        pi[capped] = 1.0
    return np.clip(pi, 0.0, 1.0)


def draw_labels(pi, *, rng: np.random.Generator) -> np.ndarray:
    """Which comparisons to request: independent :math:`\\xi_i \\sim \\mathrm{Bernoulli}(\\pi_i)` (Poisson sampling).

    Returns
    -------
    (N,) boolean mask. The expected count is :math:`\\sum \\pi_i`; the actual count varies.
    A requested label that is skipped or left undecided breaks the estimator's
    unbiasedness (its :math:`1/\\pi` weight is lost): count them and report it.
    """
    p = np.asarray(pi, dtype=float).reshape(-1)
    bad = ~(np.isfinite(p) & (p > 0) & (p <= 1))
    if bad.any():
        raise ValueError(f"pi must be probabilities in (0, 1], got {float(p[bad][0])!r} at position {int(np.flatnonzero(bad)[0])}")
    return rng.random(len(p)) < p


def draw_exactly(pi, *, rng: np.random.Generator) -> np.ndarray:
    """Which comparisons to request: exactly ``round(sum(pi))`` of them, comparison i with probability ``pi[i]``.

    Randomised systematic sampling (Madow 1949): the comparisons in a random order, the
    cumulative sums of their :math:`\\pi` cut at :math:`u, u + 1, \\dots` with
    :math:`u \\sim U[0, 1)`. Each inclusion probability is exactly :math:`\\pi_i`, so the
    inverse-probability weights of the active estimator (Zrnic and Candès 2024, eq. (3))
    stay right, and the number drawn is the budget, not the random count of
    :func:`draw_labels`' Poisson sampling.

    Returns
    -------
    (K,) sorted indices of the requested comparisons.
    """
    p = np.asarray(pi, dtype=float).reshape(-1)
    bad = ~(np.isfinite(p) & (p >= 0) & (p <= 1))
    if bad.any():
        raise ValueError(f"pi must be probabilities in [0, 1], got {float(p[bad][0])!r} at position {int(np.flatnonzero(bad)[0])}")
    k = int(round(float(p.sum())))
    if k == 0:
        return np.empty(0, dtype=np.int64)
    order = rng.permutation(len(p))
    edges = np.cumsum(p[order])
    points = rng.random() + np.arange(k)
    hit = np.minimum(np.searchsorted(edges, points, side="right"), len(p) - 1)
    return np.sort(order[np.unique(hit)])
