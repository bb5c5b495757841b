"""Scores from a subset of pairwise comparisons: the Product-of-Experts framework.

Liusie, Raina, Fathullah, Gales (2024), "Efficient LLM Comparative Assessment: a
Product of Experts Framework for Pairwise Comparisons" (EMNLP 2024, arXiv 2405.05894),
and Liusie, Manakul, Gales (2024), "LLM Comparative Assessment" (EACL 2024).

N candidates (N responses to one prompt, or N models) and K comparisons. Comparison k
is ``(i_k, j_k, p_k)``: the judge's probability that candidate ``i_k`` (shown first)
is better than ``j_k``. The hard decision is ``p_k > 1/2`` (``p_k = 1/2`` counts as a
tie, half a win each). Every comparison is an *expert* on the score difference
:math:`s_i - s_j`; the scores maximise the product of the experts:

* :func:`win_ratio` -- share of hard wins (the EACL baseline);
* :func:`average_probability` -- mean probability of being preferred;
* :func:`bradley_terry_hard` -- Bradley-Terry on hard decisions;
* :func:`poe_bradley_terry` -- soft Bradley-Terry experts
  :math:`\\sigma(s_i - s_j - \\gamma)^{p}\\,(1 - \\sigma(s_i - s_j - \\gamma))^{1-p}`;
* :func:`poe_gaussian` -- Gaussian experts :math:`s_i - s_j \\sim N(p - \\beta, \\sigma^2)`
  with a closed-form solution and posterior covariance.

The maths works on integer-coded :class:`Comparisons`; :func:`comparisons_from_judgments`
and :func:`poe_scores` are the DataFrame edges. Which comparisons to make is
:mod:`peercore.ranking.selection`.

Conventions shared by every score here (tested in ``tests/unit/ranking/test_poe.py``):

* Swapping a comparison's presentation order, ``(i, j, p) -> (j, i, 1 - p)``, does not
  change any score unless ``debias=True`` (debiasing is *about* presentation order).
* A candidate with no comparisons scores NaN with :func:`win_ratio` and
  :func:`average_probability`, and exactly 0 (the anchor / prior value) with the three
  model-based scores.
* The model-based scores are centred: each connected component of the comparison graph
  has mean score 0. Scores in different components are not comparable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph
from scipy.special import logit

from peercore.ranking import core
from peercore.ranking._battles import as_series, encode

__all__ = [
    "Comparisons",
    "GaussianPoE",
    "METHODS",
    "BT_PRIORS",
    "comparisons_from_judgments",
    "win_ratio",
    "average_probability",
    "bradley_terry_hard",
    "poe_bradley_terry",
    "poe_gaussian",
    "poe_scores",
]

DEFAULT_L2 = core.DEFAULT_L2
METHODS: tuple[str, ...] = ("win_ratio", "bt", "avg_prob", "poe_bt", "poe_gaussian")
# The hard Bradley-Terry baseline's prior: a negligible ridge, or the PoE paper's 1/(N-1) pseudo-wins.
BT_PRIORS: tuple[str, ...] = ("ridge", "wins")


@dataclass(frozen=True)
class Comparisons:
    """K integer-coded comparisons among N candidates.

    Attributes
    ----------
    candidates : the N candidate names; ``i`` and ``j`` index into it.
    i, j : int arrays of length K, the candidate shown first and second.
    p : float array of length K, the probability that ``i`` is better than ``j``.

    The arrays are converted to numpy and made read-only on construction.

    Raises
    ------
    ValueError
        If a name is repeated, the arrays differ in length, an index is out of range,
        ``i[k] == j[k]``, or a ``p`` is not a finite number in [0, 1] (the offending
        position and value are quoted).
    """

    candidates: tuple[str, ...]
    i: np.ndarray
    j: np.ndarray
    p: np.ndarray

    def __post_init__(self) -> None:
        names = tuple(str(c) for c in self.candidates)
        if len(set(names)) != len(names):
            seen: set[str] = set()
            repeated = next(c for c in names if c in seen or seen.add(c))
            raise ValueError(f"candidates must be distinct; {repeated!r} appears more than once")
        i = _as_index_array("i", self.i)
        j = _as_index_array("j", self.j)
        p = np.array(self.p, dtype=float).reshape(-1) if np.size(self.p) else np.zeros(0)
        if not (len(i) == len(j) == len(p)):
            raise ValueError(f"i, j and p must have the same length, got {len(i)}, {len(j)} and {len(p)}")
        n = len(names)
        for name, index in (("i", i), ("j", j)):
            bad = np.flatnonzero((index < 0) | (index >= n))
            if bad.size:
                raise ValueError(
                    f"{name}[{bad[0]}] = {int(index[bad[0]])} is not a candidate index (there are {n} candidates)"
                )
        same = np.flatnonzero(i == j)
        if same.size:
            raise ValueError(f"comparison {same[0]} compares candidate {int(i[same[0]])} with itself (i == j)")
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero(~((p >= 0.0) & (p <= 1.0)))
        if bad.size:
            raise ValueError(f"p[{bad[0]}] = {float(p[bad[0]])!r} is outside [0, 1]; p must be a probability")
        for array in (i, j, p):
            array.setflags(write=False)
        object.__setattr__(self, "candidates", names)
        object.__setattr__(self, "i", i)
        object.__setattr__(self, "j", j)
        object.__setattr__(self, "p", p)

    @property
    def n(self) -> int:
        """Number of candidates N."""
        return len(self.candidates)

    def __len__(self) -> int:
        return len(self.p)


@dataclass(frozen=True)
class GaussianPoE:
    """Result of :func:`poe_gaussian`.

    Attributes
    ----------
    scores : (N,) posterior mean of the scores.
    covariance : (N, N) posterior covariance :math:`\\sigma^2 (\\tilde W^T \\tilde W)^{-1}`.
    components : (N,) int label of each candidate's connected component in the
        comparison graph; scores are comparable only within a component.
    """

    scores: np.ndarray
    covariance: np.ndarray
    components: np.ndarray

    @property
    def std(self) -> np.ndarray:
        """Posterior standard deviation of each score."""
        return np.sqrt(np.diag(self.covariance))


def comparisons_from_judgments(
    judgments: pd.DataFrame, *, candidates: Sequence[str] | None = None
) -> Comparisons:
    """Integer-code a canonical judgment table as :class:`Comparisons`.

    ``p`` is the row's ``p_a`` when given, otherwise 1, 1/2 or 0 for ``winner`` =
    model_a, tie, model_b. When ``p_a`` is given it is used as is, even if it
    disagrees with ``winner``. All rows are pooled (every judge, question, criterion);
    filter the table first to score one question or one judge.

    Parameters
    ----------
    judgments : canonical judgment table (see :mod:`peercore.judgments`).
    candidates : the candidate list to index into, which may include candidates that
        were never compared; by default the sorted names seen in ``model_a`` / ``model_b``.

    Raises
    ------
    ValueError
        If a contestant is not in ``candidates``, ``winner`` is not model_a / model_b /
        tie, or a ``p_a`` is outside [0, 1].
    """
    battles = encode(judgments, models=None if candidates is None else list(candidates))
    p = battles.score_a.astype(float)
    if "p_a" in judgments.columns and len(judgments):
        given = pd.to_numeric(judgments["p_a"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        p = np.where(np.isnan(given), p, given)
    return Comparisons(battles.models, battles.a, battles.b, p)


def win_ratio(comparisons: Comparisons) -> np.ndarray:
    """Share of comparisons each candidate won on hard decisions, ties counting half.

    .. math:: \\mathrm{wr}_n = \\frac{\\sum_{k: i_k = n} h_k + \\sum_{k: j_k = n} (1 - h_k)}
              {\\#\\{k : n \\in \\{i_k, j_k\\}\\}}, \\qquad
              h_k = \\mathbb{1}[p_k > \\tfrac12] + \\tfrac12 \\mathbb{1}[p_k = \\tfrac12]

    (Liusie, Manakul, Gales 2024, the win-ratio score; Liusie et al. 2024, baseline).

    Returns
    -------
    (N,) array; NaN for a candidate with no comparisons (all NaN when K = 0).
    """
    c = comparisons
    return _share(c, _hard(c.p))


def average_probability(comparisons: Comparisons) -> np.ndarray:
    """Mean probability of being preferred: ``p`` when shown first, ``1 - p`` when second.

    .. math:: \\bar p_n = \\frac{\\sum_{k: i_k = n} p_k + \\sum_{k: j_k = n} (1 - p_k)}
              {\\#\\{k : n \\in \\{i_k, j_k\\}\\}}

    (Liusie et al. 2024, the average-probability baseline.)

    Returns
    -------
    (N,) array in [0, 1]; NaN for a candidate with no comparisons.
    """
    c = comparisons
    return _share(c, c.p)


def bradley_terry_hard(
    comparisons: Comparisons, *, l2: float = DEFAULT_L2, tol: float = 1e-9, max_iter: int = 200,
    prior: str = "ridge",
) -> np.ndarray:
    """Bradley-Terry maximum likelihood on hard decisions (ties as half wins).

    Maximises

    .. math:: \\sum_k h_k \\log \\sigma(s_{i_k} - s_{j_k}) + (1 - h_k) \\log \\sigma(s_{j_k} - s_{i_k})
              - \\tfrac{\\lambda}{2} \\lVert s \\rVert^2

    with :math:`h_k` as in :func:`win_ratio` -- the PoE-BT objective of
    :func:`poe_bradley_terry` with the probabilities rounded (Liusie et al. 2024, the
    BT baseline). Scores are in natural (logit) units; ``peercore.ranking.bradley_terry``
    gives the same fit on the Elo scale.

    **The paper's prior** (``prior="wins"``). The PoE paper's hard Bradley-Terry
    baseline (Liusie, Raina, Fathullah, Gales 2024, EMNLP; the authors'
    ``get_zermelo_solution``, ``PoE_analysis/utils.py``) adds :math:`1/(N-1)` of a win
    of every candidate over every other to the win matrix, :math:`W \\leftarrow W +
    (\\mathbf 1\\mathbf 1^T - I)/(N-1)`, before Zermelo's iterations: every candidate
    holds one pseudo-win spread over the field, so a candidate that won (or lost) all
    its few comparisons gets a moderate score instead of a huge one. The maximum of
    that likelihood is computed here (the same optimum as Zermelo's fixed point), with
    the ridge only centring the scores.

    Parameters
    ----------
    comparisons : the comparisons.
    l2 : ridge :math:`\\lambda > 0`. It keeps every score finite -- a candidate that won
        every comparison gets a large finite score (about ``log(1/l2)`` for one win) --
        centres each connected component at 0, and gives an uncompared candidate 0.
        The default 1e-6 is negligible otherwise.
    tol : Newton stops when no score moves by more than ``tol``.
    max_iter : Newton iteration cap.
    prior : ``"ridge"`` (default, the ridge alone) or ``"wins"`` (the paper's
        :math:`1/(N-1)` pseudo-wins; see above).

    Returns
    -------
    (N,) array of scores; zeros when K = 0.

    Raises
    ------
    ValueError
        If ``l2`` is not a positive finite number, or ``prior`` is unknown.
    ConvergenceError
        If Newton's method reaches ``max_iter``.
    """
    c = comparisons
    if prior not in BT_PRIORS:
        raise ValueError(f"prior must be one of {BT_PRIORS}, got {prior!r}")
    i, j, outcome, weight = c.i, c.j, _hard(c.p), None
    if prior == "wins" and c.n > 1:
        # (i beats j) and (j beats i), 1/(N-1) each: one row per unordered pair, outcome 1/2, weight 2/(N-1)
        lo, hi = np.triu_indices(c.n, 1)
        i, j = np.r_[i, lo], np.r_[j, hi]
        outcome = np.r_[outcome, np.full(len(lo), 0.5)]
        weight = np.r_[np.ones(len(c.p)), np.full(len(lo), 2.0 / (c.n - 1))]
    return _fit_soft_bt(i, j, outcome, c.n, gamma=0.0, l2=l2, tol=tol, max_iter=max_iter, weight=weight)


def poe_bradley_terry(
    comparisons: Comparisons,
    *,
    debias: bool = False,
    l2: float = DEFAULT_L2,
    tol: float = 1e-9,
    max_iter: int = 200,
) -> np.ndarray:
    """Product of soft Bradley-Terry experts (PoE-BT; Liusie et al. 2024).

    Each comparison is the expert
    :math:`p(s_i - s_j \\mid p_k) \\propto \\sigma(s_i - s_j - \\gamma)^{p_k}
    (1 - \\sigma(s_i - s_j - \\gamma))^{1 - p_k}`, i.e. a Bradley-Terry likelihood
    with ``p_k`` as a fractional win. The scores maximise

    .. math:: \\sum_k p_k \\log \\sigma(d_k - \\gamma) + (1 - p_k) \\log \\sigma(\\gamma - d_k)
              - \\tfrac{\\lambda}{2} \\lVert s \\rVert^2, \\qquad d_k = s_{i_k} - s_{j_k}

    by Newton's method (the objective is strictly concave).

    Parameters
    ----------
    comparisons : the comparisons.
    debias : if True, :math:`\\gamma = -\\operatorname{logit}(\\bar p)` with
        :math:`\\bar p` the mean of the observed ``p`` (the judge's average preference
        for the first position); otherwise :math:`\\gamma = 0`. The model's probability
        that the first-shown candidate wins is then :math:`\\sigma(d + \\operatorname{logit}\\bar p)`,
        so for equal candidates it predicts exactly the judge's average :math:`\\bar p`:
        a judge that always says 0.6 yields equal scores.
    l2, tol, max_iter : as in :func:`bradley_terry_hard`.

    Returns
    -------
    (N,) array of scores in natural units; an uncompared candidate scores 0.

    Raises
    ------
    ValueError
        If ``l2`` is not a positive finite number, or ``debias=True`` while the mean
        of ``p`` is 0 or 1 (the offset would be infinite).
    ConvergenceError
        If Newton's method reaches ``max_iter``.
    """
    c = comparisons
    gamma = 0.0
    if debias and len(c):
        mean = float(np.mean(c.p))
        if not 0.0 < mean < 1.0:
            raise ValueError(
                f"debias needs the mean of p strictly inside (0, 1), got {mean!r}; "
                "every comparison went the same way, so the position offset is infinite"
            )
        gamma = -float(logit(mean))
    return _fit_soft_bt(c.i, c.j, c.p, c.n, gamma=gamma, l2=l2, tol=tol, max_iter=max_iter)


def poe_gaussian(comparisons: Comparisons, *, debias: bool = False, sigma2: float = 1.0) -> GaussianPoE:
    """Product of Gaussian experts: closed-form scores and posterior covariance.

    Each comparison is the expert :math:`s_i - s_j \\sim N(\\alpha (p_k - \\beta), \\sigma^2)`
    with :math:`\\alpha = 1`. With :math:`W` the K x N matrix whose row k is
    :math:`e_{i_k} - e_{j_k}` and :math:`\\mu_k = p_k - \\beta` (Liusie et al. 2024,
    Gaussian experts):

    .. math:: s^* = (\\tilde W^T \\tilde W)^{-1} \\tilde W^T \\tilde\\mu, \\qquad
              \\Sigma = \\sigma^2 (\\tilde W^T \\tilde W)^{-1}

    :math:`\\tilde W, \\tilde\\mu` add an anchoring row, because :math:`W` alone cannot
    see a common shift. **Anchor used here:** the row :math:`\\tfrac1N \\mathbf 1^T` with
    target 0, i.e. a pseudo-observation "mean score = 0" with the noise of one
    comparison. The fitted scores therefore sum to exactly zero (the paper's code pins
    :math:`s_1 = 0` instead; the two differ by a common shift only). For a connected
    comparison graph :math:`\\Sigma = \\sigma^2 (L^+ + \\mathbf 1 \\mathbf 1^T)` with
    :math:`L = W^T W`: the :math:`\\mathbf 1 \\mathbf 1^T` term is the anchor's own
    uncertainty about the common shift and cancels in any difference, so
    :math:`\\operatorname{Var}(s_i - s_j) = \\sigma^2 (A_{ii} + A_{jj} - 2A_{ij})` does
    not depend on the anchor (this is the greedy-selection criterion).

    A disconnected graph makes the single anchor row insufficient, so each connected
    component C gets its own row :math:`\\tfrac1{|C|} \\mathbf 1_C^T` (identical to the
    above when the graph is connected). Each component then has mean score 0, the
    components are independent in ``covariance``, and a candidate with no comparisons
    gets score 0 and variance :math:`\\sigma^2`: the anchor, nothing learned.

    Parameters
    ----------
    comparisons : the comparisons.
    debias : if True, :math:`\\beta = \\bar p`, the mean of the observed ``p`` (removes
        the judge's average first-position preference); otherwise :math:`\\beta = 1/2`.
        With every ordered pair compared once (a symmetric set) :math:`\\beta` cancels.
    sigma2 : expert variance :math:`\\sigma^2 > 0`; scales ``covariance`` only.

    Returns
    -------
    GaussianPoE with ``scores``, ``covariance`` and ``components``.

    Raises
    ------
    ValueError
        If ``sigma2`` is not a positive finite number.

    Notes
    -----
    With every ordered pair (i, j), i != j, compared exactly once, :math:`L = 2(N I -
    \\mathbf 1 \\mathbf 1^T)` and the solution is the affine map of
    :func:`average_probability` :math:`s_n = \\tfrac{N-1}{N} (\\bar p_n - \\tfrac12)`.
    Cost: O(K + N^3) time, O(N^2) memory (the normal equations are solved by Cholesky).
    """
    _check_positive("sigma2", sigma2)
    c = comparisons
    n = c.n
    components = _components(c.i, c.j, n)
    if n == 0:
        return GaussianPoE(np.zeros(0), np.zeros((0, 0)), components)
    beta = float(np.mean(c.p)) if debias and len(c) else 0.5
    mu = c.p - beta
    rhs = np.bincount(c.i, mu, minlength=n) - np.bincount(c.j, mu, minlength=n)  # W' mu
    size = np.bincount(components)[components].astype(float)
    same = components[:, None] == components[None, :]
    # W~'W~ = W'W + sum_C (1_C / |C|)(1_C / |C|)'
    normal = _laplacian(c.i, c.j, np.ones(len(c)), n) + same / np.outer(size, size)
    factor = scipy.linalg.cho_factor(normal)
    scores = scipy.linalg.cho_solve(factor, rhs)
    covariance = sigma2 * scipy.linalg.cho_solve(factor, np.eye(n))
    covariance = 0.5 * (covariance + covariance.T)
    return GaussianPoE(scores, covariance, components)


def poe_scores(
    judgments: pd.DataFrame,
    *,
    method: str = "poe_gaussian",
    debias: bool = False,
    candidates: Sequence[str] | None = None,
    bt_prior: str = "ridge",
) -> pd.Series:
    """Score candidates from a canonical judgment table with one of the PoE-paper methods.

    Parameters
    ----------
    judgments : canonical judgment table; ``p_a`` is used where given, otherwise the
        ``winner`` (see :func:`comparisons_from_judgments`).
    method : ``"win_ratio"`` (:func:`win_ratio`), ``"bt"`` (:func:`bradley_terry_hard`),
        ``"avg_prob"`` (:func:`average_probability`), ``"poe_bt"``
        (:func:`poe_bradley_terry`) or ``"poe_gaussian"`` (:func:`poe_gaussian`).
    debias : remove the judge's average first-position preference; only for
        ``"poe_bt"`` and ``"poe_gaussian"``.
    candidates : candidates to score (may include uncompared ones); default all seen.
    bt_prior : ``"bt"`` only: ``"ridge"`` or the paper's ``"wins"`` (see
        :func:`bradley_terry_hard`).

    Returns
    -------
    Series indexed by candidate (index named ``model``, as the other rankings),
    named ``score``; higher is better. Scales differ between methods.

    Raises
    ------
    ValueError
        If ``method`` is unknown, or ``debias=True`` with a method that has no
        debiased form; and as :func:`comparisons_from_judgments`.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if debias and method not in ("poe_bt", "poe_gaussian"):
        raise ValueError(f"debias applies to method 'poe_bt' or 'poe_gaussian' only, got method={method!r}")
    c = comparisons_from_judgments(judgments, candidates=candidates)
    if method == "win_ratio":
        values = win_ratio(c)
    elif method == "avg_prob":
        values = average_probability(c)
    elif method == "bt":
        values = bradley_terry_hard(c, prior=bt_prior)
    elif method == "poe_bt":
        values = poe_bradley_terry(c, debias=debias)
    else:
        values = poe_gaussian(c, debias=debias).scores
    return as_series(values, c.candidates, "score")


# ------------------------------------------------------------------------------ helpers


def _as_index_array(name: str, values) -> np.ndarray:
    array = np.asarray(values).reshape(-1)
    if array.size == 0:
        return np.zeros(0, dtype=np.intp)
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)) or np.any(array != np.round(array)):
            bad = np.flatnonzero(~np.isfinite(array) | (array != np.round(array)))[0]
            raise ValueError(f"{name}[{bad}] = {array[bad].item()!r} is not a whole-number candidate index")
    elif array.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integer candidate indices, got dtype {array.dtype}")
    return array.astype(np.intp)


def _check_positive(name: str, value) -> None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not (math.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")


def _hard(p: np.ndarray) -> np.ndarray:
    """1 if p > 1/2, 0 if p < 1/2, 1/2 at exactly 1/2."""
    return np.where(p > 0.5, 1.0, np.where(p < 0.5, 0.0, 0.5))


def _share(c: Comparisons, score_first: np.ndarray) -> np.ndarray:
    n = c.n
    won = np.bincount(c.i, score_first, minlength=n) + np.bincount(c.j, 1.0 - score_first, minlength=n)
    played = np.bincount(c.i, minlength=n) + np.bincount(c.j, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(played > 0, won / np.maximum(played, 1), np.nan)


def _laplacian(i: np.ndarray, j: np.ndarray, weight: np.ndarray, n: int) -> np.ndarray:
    """sum_k weight_k (e_i - e_j)(e_i - e_j)': the weighted graph Laplacian W' diag(w) W (the core's)."""
    return core.laplacian(i, j, weight, n)


def _components(i: np.ndarray, j: np.ndarray, n: int) -> np.ndarray:
    """Connected-component label of each candidate (uncompared ones are singletons)."""
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    graph = scipy.sparse.coo_matrix((np.ones(len(i)), (i, j)), shape=(n, n))
    _, labels = scipy.sparse.csgraph.connected_components(graph, directed=False)
    return labels.astype(np.intp)


def _fit_soft_bt(i, j, p, n, *, gamma: float, l2: float, tol: float, max_iter: int,
                 weight: np.ndarray | None = None) -> np.ndarray:
    """The (strictly concave) soft-BT objective, solved by the one solver (:func:`peercore.ranking.core.fit`).

    Rows are the comparisons, outcome ``p``, weight 1 (or ``weight``) and offset :math:`-\\gamma`.
    """
    _check_positive("l2", l2)
    _check_positive("tol", tol)
    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 1):
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    if n == 0 or len(p) == 0:
        return np.zeros(n)
    design = core.Design(n, i, j, p, np.ones(len(p)) if weight is None else weight, offset=-gamma)
    return core.fit(design, l2=l2, tol=tol, max_iter=max_iter, what="PoE Bradley-Terry").theta
