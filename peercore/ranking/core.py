"""One solver for every Bradley-Terry-type estimator in peercore.

Every paired-comparison model here is a penalised, weighted logistic regression whose
design has two parts (Bradley & Terry 1952; Chatbot Arena's style control, Chiang et
al. 2024 and LMArena's ``arena-rank``; Liusie et al. 2024 PoE-BT; AlpacaEval 2's
length-controlled GLM, Dubois et al. 2024):

.. math:: \\eta_r = \\theta_{i_r} - \\theta_{j_r} + x_r^\\top \\gamma + o_r, \\qquad
          y_r \\sim \\mathrm{Bernoulli}(\\sigma(\\eta_r))

maximising

.. math:: \\ell(\\theta, \\gamma) = \\sum_r w_r\\,[\\,y_r \\log \\sigma(\\eta_r)
          + (1 - y_r) \\log \\sigma(-\\eta_r)\\,]
          - \\tfrac12 \\sum_m \\lambda_m \\theta_m^2 - \\tfrac12 \\sum_f \\mu_f \\gamma_f^2

with soft outcomes :math:`y_r \\in [0, 1]` (a tie is 1/2, a judge's probability a
fractional win), row weights :math:`w_r \\ge 0` (counts times per-battle weights),
a constant offset :math:`o_r` (PoE-BT's position term) and ridge penalties
(:math:`\\lambda` also serves as a Gaussian prior :math:`N(0, 1/\\lambda)` on the
ratings).

Who uses it:

* :mod:`~peercore.ranking.bradley_terry` -- plain BT on per-pair sufficient statistics
  (rows = unordered pairs, :math:`y` = share of points, :math:`w` = battles), its
  bootstrap (:func:`fit_rounds`) and its sandwich intervals (:func:`sandwich`);
* :mod:`~peercore.ranking.poe` -- hard BT and PoE-BT (rows = comparisons, offset
  :math:`-\\gamma`); :func:`fit_batch` solves thousands of small PoE-BT problems at once
  (what ``peercore.efficiency`` needs);
* :mod:`~peercore.ranking.contextual` -- style control (rows = battles, covariates =
  style features);
* :mod:`~peercore.ranking.alpacaeval` -- the length-controlled GLM (no ratings, only
  covariates) and the joint instruction-difficulty fit (ratings = models and
  instructions);
* :mod:`peercore.bias` -- the judge-bias model (covariates = position, self-preference,
  length);
* :mod:`~peercore.ranking.peer_rank` -- BT scores inside the Peer Rank iteration.

The solver is Newton's method with backtracking on the (strictly concave, given a
positive penalty or a connected comparison graph) objective. The rating block of the
Hessian is a weighted graph Laplacian; its null direction (a common shift of all
ratings, which no row sees) is fixed by adding :math:`c\\,\\mathbf 1 \\mathbf 1^\\top / n`
to that block (the "gauge"), which changes no step taken from a centred start.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph
from scipy.special import expit

from peercore.errors import ConvergenceError

__all__ = [
    "Design", "Solution", "fit", "fit_rounds", "fit_batch", "fit_glm_batch", "information", "meat", "sandwich", "laplacian",
    "objective", "batch_laplacian", "DEFAULT_L2",
]

DEFAULT_L2 = 1e-6


@dataclass(frozen=True, eq=False)
class Design:
    """Rows of a paired-comparison logistic model (see the module docstring).

    Attributes
    ----------
    n : number of rating parameters :math:`\\theta` (0 for a GLM with covariates only).
    i, j : (R,) int arrays, the rating indices whose difference enters row r
        (ignored, may be empty, when ``n == 0``).
    y : (R,) outcomes in [0, 1].
    w : (R,) non-negative row weights (for aggregated rows: count x per-battle weight).
    x : (R, k) covariates, or None (k = 0).
    offset : a constant or an (R,) array added to every linear predictor.
    count : (R,) number of battles each row stands for (default 1 each); only the
        sandwich meat uses it (per-battle scores are :math:`w_r / c_r (y_r - p_r)`).
    """

    n: int
    i: np.ndarray
    j: np.ndarray
    y: np.ndarray
    w: np.ndarray
    x: np.ndarray | None = None
    offset: np.ndarray | float = 0.0
    count: np.ndarray | None = None

    def __post_init__(self) -> None:
        y = np.asarray(self.y, dtype=float).reshape(-1)
        w = np.asarray(self.w, dtype=float).reshape(-1)
        if len(y) != len(w):
            raise ValueError(f"y and w must have one length, got {len(y)} and {len(w)}")
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "w", w)
        if self.n:
            i = np.asarray(self.i, dtype=np.intp).reshape(-1)
            j = np.asarray(self.j, dtype=np.intp).reshape(-1)
            if not (len(i) == len(j) == len(y)):
                raise ValueError(f"i, j and y must have one length, got {len(i)}, {len(j)} and {len(y)}")
            object.__setattr__(self, "i", i)
            object.__setattr__(self, "j", j)
        if self.x is not None:
            x = np.asarray(self.x, dtype=float)
            x = x.reshape(len(y), -1) if x.ndim != 2 else x
            if x.shape[0] != len(y):
                raise ValueError(f"x must have one row per outcome, got {x.shape[0]} rows for {len(y)} outcomes")
            object.__setattr__(self, "x", x if x.shape[1] else None)
        if self.count is not None:
            object.__setattr__(self, "count", np.asarray(self.count, dtype=float).reshape(-1))
        if (w < 0).any() or not np.all(np.isfinite(w)):
            raise ValueError("row weights w must be finite and non-negative")
        with np.errstate(invalid="ignore"):
            if not np.all((y >= 0) & (y <= 1)):
                raise ValueError("outcomes y must lie in [0, 1]")

    @property
    def k(self) -> int:
        """Number of covariates."""
        return 0 if self.x is None else self.x.shape[1]

    @property
    def rows(self) -> int:
        return len(self.y)

    @cached_property
    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(lo, hi, pair_of_row)``: the distinct unordered rating pairs and each row's pair.

        The Laplacian blocks are assembled per pair (a bincount over rows, then P
        scatters), which is what makes a million battles among a hundred models cheap.
        """
        if not self.n or not self.rows:
            empty = np.zeros(0, dtype=np.intp)
            return empty, empty, np.zeros(self.rows, dtype=np.intp)
        lo = np.minimum(self.i, self.j).astype(np.int64)
        hi = np.maximum(self.i, self.j).astype(np.int64)
        keys, pair_of_row = np.unique(lo * self.n + hi, return_inverse=True)
        return (keys // self.n).astype(np.intp), (keys % self.n).astype(np.intp), pair_of_row.astype(np.intp)

    @cached_property
    def components(self) -> np.ndarray:
        """Connected-component label of every rating (a rating no row sees is a component of its own)."""
        if not self.n:
            return np.zeros(0, dtype=np.intp)
        lo, hi, _ = self.pairs
        graph = scipy.sparse.coo_matrix((np.ones(len(lo)), (lo, hi)), shape=(self.n, self.n))
        _, labels = scipy.sparse.csgraph.connected_components(graph, directed=False)
        return labels.astype(np.intp)

    def eta(self, theta: np.ndarray, gamma: np.ndarray | None) -> np.ndarray:
        """Linear predictor of every row."""
        out = np.zeros(self.rows) if not self.n else theta[self.i] - theta[self.j]
        if self.k:
            out = out + self.x @ gamma
        return out + self.offset


@dataclass(frozen=True)
class Solution:
    """A fit of :func:`fit`: ratings ``theta`` (natural units), covariate coefficients ``gamma``."""

    theta: np.ndarray
    gamma: np.ndarray
    iterations: int
    objective: float
    l2: np.ndarray = field(repr=False)
    l2_features: np.ndarray = field(repr=False)

    @property
    def params(self) -> np.ndarray:
        return np.concatenate([self.theta, self.gamma])


# ------------------------------------------------------------------------- building blocks


def laplacian(i: np.ndarray, j: np.ndarray, weight: np.ndarray, n: int) -> np.ndarray:
    """:math:`\\sum_r w_r (e_{i_r} - e_{j_r})(e_{i_r} - e_{j_r})^\\top`, the weighted graph Laplacian (n x n)."""
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    off = np.bincount(i * n + j, weight, minlength=n * n) + np.bincount(j * n + i, weight, minlength=n * n)
    out = -off.reshape(n, n)
    out[np.diag_indices(n)] = 0.0
    out[np.diag_indices(n)] = -out.sum(axis=1)
    return out


def _penalties(design: Design, l2, l2_features) -> tuple[np.ndarray, np.ndarray]:
    lam = np.broadcast_to(np.asarray(l2, dtype=float), (design.n,)).copy()
    mu = np.broadcast_to(np.asarray(l2_features, dtype=float), (design.k,)).copy()
    for name, value in (("l2", lam), ("l2_features", mu)):
        if not (np.all(np.isfinite(value)) and np.all(value >= 0)):
            raise ValueError(f"{name} must be finite and >= 0, got {value.tolist()!r}")
    return lam, mu


def objective(design: Design, theta: np.ndarray, gamma: np.ndarray, *, l2=DEFAULT_L2, l2_features=0.0) -> float:
    """The penalised log-likelihood :math:`\\ell(\\theta, \\gamma)` of the module docstring."""
    lam, mu = _penalties(design, l2, l2_features)
    return _objective(design, theta, gamma, lam, mu)


def _objective(design, theta, gamma, lam, mu) -> float:
    eta = design.eta(theta, gamma)
    loglik = -(design.w * (design.y * np.logaddexp(0.0, -eta) + (1.0 - design.y) * np.logaddexp(0.0, eta))).sum()
    return float(loglik - 0.5 * (lam * theta * theta).sum() - 0.5 * (mu * gamma * gamma).sum())


def _pair_laplacian(design: Design, per_row: np.ndarray) -> np.ndarray:
    lo, hi, pair = design.pairs
    per_pair = np.bincount(pair, per_row, minlength=len(lo))
    return laplacian(lo, hi, per_pair, design.n)


def _incidence_times(design: Design, per_row: np.ndarray) -> np.ndarray:
    """:math:`\\sum_r v_r (e_{i_r} - e_{j_r})`, length n."""
    return np.bincount(design.i, per_row, minlength=design.n) - np.bincount(design.j, per_row, minlength=design.n)


def _cross(design: Design, per_row: np.ndarray) -> np.ndarray:
    """:math:`\\sum_r v_r (e_{i_r} - e_{j_r}) x_r^\\top`, n x k."""
    out = np.empty((design.n, design.k))
    for f in range(design.k):
        out[:, f] = _incidence_times(design, per_row * design.x[:, f])
    return out


def _outer_blocks(design: Design, per_row: np.ndarray) -> np.ndarray:
    """The (n + k) square matrix :math:`\\sum_r v_r z_r z_r^\\top`, :math:`z_r = (e_{i_r} - e_{j_r}, x_r)`."""
    n, k = design.n, design.k
    out = np.zeros((n + k, n + k))
    if n:
        out[:n, :n] = _pair_laplacian(design, per_row)
    if k:
        out[n:, n:] = (design.x * per_row[:, None]).T @ design.x
        if n:
            cross = _cross(design, per_row)
            out[:n, n:] = cross
            out[n:, :n] = cross.T
    return out


def _gradient(design: Design, theta, gamma, p, lam, mu) -> np.ndarray:
    residual = design.w * (design.y - p)
    parts = []
    if design.n:
        parts.append(_incidence_times(design, residual) - lam * theta)
    if design.k:
        parts.append(design.x.T @ residual - mu * gamma)
    return np.concatenate(parts) if parts else np.zeros(0)


def information(design: Design, solution: Solution) -> np.ndarray:
    """Negative Hessian of the penalised log-likelihood at ``solution`` ((n + k) square; no gauge)."""
    p = expit(design.eta(solution.theta, solution.gamma))
    out = _outer_blocks(design, design.w * p * (1.0 - p))
    out[np.arange(design.n), np.arange(design.n)] += solution.l2
    out[design.n + np.arange(design.k), design.n + np.arange(design.k)] += solution.l2_features
    return out


def meat(design: Design, solution: Solution, *, centred: bool = False) -> np.ndarray:
    """Sum of the outer products of the per-battle scores (the sandwich's meat).

    A row standing for :math:`c_r` identical battles of per-battle weight
    :math:`w_r / c_r` contributes :math:`c_r (w_r / c_r)^2 (y_r - p_r)^2 z_r z_r^\\top`
    (arena-rank's ``grad_cov``). With ``centred`` the outer product of the mean score
    is removed (it is the penalty's gradient at the optimum, not zero, when covariates
    are penalised).
    """
    count = np.ones(design.rows) if design.count is None else design.count
    p = expit(design.eta(solution.theta, solution.gamma))
    with np.errstate(invalid="ignore", divide="ignore"):
        per_row = np.where(count > 0, design.w ** 2 * (design.y - p) ** 2 / np.where(count > 0, count, 1.0), 0.0)
    out = _outer_blocks(design, per_row)
    if centred:
        total = count.sum()
        mean = np.concatenate([solution.l2 * solution.theta, solution.l2_features * solution.gamma]) / max(total, 1.0)
        out -= total * np.outer(mean, mean)
    return out


def _gauged(h: np.ndarray, n: int, labels: np.ndarray | None = None) -> np.ndarray:
    """Add :math:`c\\,\\mathbf 1_C \\mathbf 1_C^\\top / |C|` to the rating block, per connected component C.

    No row sees a common shift of one component's ratings, so the Hessian's rating
    block is (near-)singular along each :math:`\\mathbf 1_C`. With one penalty for
    every rating those directions are eigenvectors of the Hessian and the gradient has
    no component along them at a start centred per component, so the added term
    changes no Newton step: it only makes the system well conditioned.
    """
    if n == 0:
        return h
    out = h.copy()
    c = max(float(np.mean(np.diag(h[:n, :n]))), 1.0)
    if labels is None or labels.max(initial=0) == 0:
        out[:n, :n] += c / n
        return out
    size = np.bincount(labels)
    same = labels[:, None] == labels[None, :]
    out[:n, :n] += c * same / size[labels][:, None]
    return out


def _centre(theta: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Ratings with mean 0 in every connected component (a matrix of rows works too)."""
    if theta.shape[-1] == 0:
        return theta
    if labels.max(initial=0) == 0:
        return theta - theta.mean(axis=-1, keepdims=True)
    size = np.bincount(labels)
    if theta.ndim == 1:
        return theta - (np.bincount(labels, theta, minlength=len(size)) / size)[labels]
    sums = np.stack([np.bincount(labels, row, minlength=len(size)) for row in theta])
    return theta - (sums / size)[:, labels]


def sandwich(design: Design, solution: Solution, *, centred: bool = False, bread: str = "penalised",
             ridge: float = 0.0, meat_correction: np.ndarray | None = None) -> np.ndarray:
    """Robust (sandwich) covariance :math:`H^{-1} G H^{-1}` of :math:`(\\theta, \\gamma)`.

    :math:`H` is :func:`information` with the gauge on the rating block, :math:`G` is
    :func:`meat`. Because no row sees a common shift of the ratings, :math:`G` and the
    result have no component along it: the rating block is the covariance of the
    centred ratings (what a mean anchor needs; contrasts give any other anchor). This
    is the estimator arena-rank reports (``ci_method="sandwich"``; Huber 1967, White
    1980), robust to judges whose verdicts are not Bradley-Terry.

    Parameters
    ----------
    centred : remove the mean score's outer product from the meat (see :func:`meat`).
    bread : ``"penalised"`` (default): :math:`H` includes the ridge penalties, the
        linearisation of the penalised estimate actually reported (it agrees with the
        bootstrap of that estimate); ``"unpenalised"``: without the penalties, as
        arena-rank's ``ContextualBradleyTerry`` computes it (wider when the penalty is
        strong).
    ridge : added to the whole diagonal of :math:`H` (arena-rank's ``hessian_reg``).
    meat_correction : a matrix subtracted from :math:`G`.
    """
    if bread not in ("penalised", "unpenalised"):
        raise ValueError(f"bread must be 'penalised' or 'unpenalised', got {bread!r}")
    used = solution if bread == "penalised" else Solution(solution.theta, solution.gamma, solution.iterations,
                                                           solution.objective, solution.l2,
                                                           np.zeros_like(solution.l2_features))
    h = information(design, used)
    if ridge:
        h[np.diag_indices_from(h)] += ridge
    uniform = bool(design.n) and float(solution.l2.min()) == float(solution.l2.max())
    if uniform:
        h = _gauged(h, design.n, design.components)
    g = meat(design, solution, centred=centred)
    if meat_correction is not None:
        g = g - meat_correction
    try:
        factor = scipy.linalg.cho_factor(h)
        left = scipy.linalg.cho_solve(factor, g)
        cov = scipy.linalg.cho_solve(factor, left.T).T
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        # A parameter the data do not identify (e.g. separated verdicts with no penalty):
        # the pseudo-inverse reports what the data do say and no variance for the rest.
        inverse = scipy.linalg.pinvh(h)
        cov = inverse @ g @ inverse
    cov = 0.5 * (cov + cov.T)
    if uniform:
        centre = np.eye(design.n + design.k)
        centre[:design.n, :design.n] -= 1.0 / design.n
        cov = centre @ cov @ centre.T
    return cov


# ------------------------------------------------------------------------------- solving


def fit(design: Design, *, l2=DEFAULT_L2, l2_features=0.0, tol: float = 1e-9, max_iter: int = 200,
        start: Solution | tuple[np.ndarray, np.ndarray] | None = None, what: str = "Bradley-Terry") -> Solution:
    """Maximise the penalised log-likelihood by Newton's method with backtracking.

    Parameters
    ----------
    design : the rows.
    l2 : ridge :math:`\\lambda` on the ratings (a number or one per rating); the default
        1e-6 keeps a model that won every battle finite and fixes each disconnected
        component's shift, and is otherwise negligible.
    l2_features : ridge :math:`\\mu` on the covariate coefficients (number or per feature).
    tol : stop when no parameter moves by more than ``tol`` (natural units).
    max_iter : iteration cap.
    start : a previous solution (or ``(theta, gamma)``) to start from (warm start).
    what : what is being fitted, for the error message.

    Returns
    -------
    Solution
        Ratings centred (mean 0) when there are ratings and no penalty pulls them
        elsewhere.

    Raises
    ------
    ValueError
        If a penalty is negative or not finite, ``tol`` is not positive or
        ``max_iter`` < 1.
    ConvergenceError
        If ``max_iter`` is reached (with the iteration count and last change).
    """
    if not (tol > 0 and math.isfinite(tol)):
        raise ValueError(f"tol must be a positive finite number, got {tol!r}")
    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 1):
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    lam, mu = _penalties(design, l2, l2_features)
    n, k = design.n, design.k
    if start is None:
        theta, gamma = np.zeros(n), np.zeros(k)
    else:
        theta, gamma = (start.theta, start.gamma) if isinstance(start, Solution) else start
        theta = np.array(theta, dtype=float)
        gamma = np.zeros(k) if gamma is None else np.array(gamma, dtype=float)
    # With one penalty for every rating a common shift is the Hessian's (near-)null
    # direction and the gauge fixes it exactly; per-rating penalties pin it themselves.
    uniform = bool(n) and float(lam.min()) == float(lam.max())
    if uniform and design.rows:
        theta = _centre(theta, design.components)
    if design.rows == 0 or (n + k) == 0:
        return Solution(theta, gamma, 0, 0.0, lam, mu)
    value = _objective(design, theta, gamma, lam, mu)
    change = math.inf
    for iteration in range(1, max_iter + 1):
        p = expit(design.eta(theta, gamma))
        gradient = _gradient(design, theta, gamma, p, lam, mu)
        h = _outer_blocks(design, design.w * p * (1.0 - p))
        h[np.arange(n), np.arange(n)] += lam
        h[n + np.arange(k), n + np.arange(k)] += mu
        step = _solve(_gauged(h, n, design.components) if uniform else h, gradient)
        t = 1.0
        while True:
            new_theta, new_gamma = theta + t * step[:n], gamma + t * step[n:]
            new_value = _objective(design, new_theta, new_gamma, lam, mu)
            if new_value >= value - 1e-12 * abs(value) or t < 1e-10:
                break
            t *= 0.5
        change = float(np.max(np.abs(t * step))) if step.size else 0.0
        theta, gamma, value = new_theta, new_gamma, new_value
        if change < tol:
            return Solution(theta, gamma, iteration, value, lam, mu)
    raise ConvergenceError(f"{what} Newton iteration", iterations=max_iter, change=change, tol=tol)


def _solve(h: np.ndarray, g: np.ndarray) -> np.ndarray:
    try:
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(h), g)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        return scipy.linalg.lstsq(h, g)[0]


def fit_rounds(design: Design, wins: np.ndarray, games: np.ndarray, start: Solution, *, tol: float = 1e-5,
               max_iter: int = 200) -> np.ndarray:
    """Refit the ratings of a covariate-free design for many reweighted copies at once (bootstrap).

    Round b replaces the rows' (score, weight) by ``(wins[b], games[b])``
    (:math:`y = W / N`, :math:`w = N`). Chord-Newton: every round steps with the
    Cholesky factor of the full-data Hessian at ``start`` instead of its own; a
    resample's Hessian differs from it by :math:`O(1/\\sqrt N)`, so the iteration
    contracts fast. Rounds that stall (e.g. a resample in which a model wins every
    battle) fall back to exact Newton (:func:`fit`).

    Returns
    -------
    (rounds, n) ratings in natural units, each round centred.

    Raises
    ------
    ConvergenceError
        If a round reaches ``max_iter``.
    """
    if design.k:
        raise ValueError("fit_rounds refits ratings only; this design has covariates")
    rounds, n = wins.shape[0], design.n
    lam = start.l2
    # Dense +-1 incidence (rows x models): two BLAS products per iteration beat gathers.
    incidence = np.zeros((design.rows, n))
    incidence[np.arange(design.rows), design.i] = 1.0
    incidence[np.arange(design.rows), design.j] = -1.0
    p0 = expit(design.eta(start.theta, None))
    h0 = _outer_blocks(design, design.w * p0 * (1 - p0))
    h0[np.arange(n), np.arange(n)] += lam
    labels = design.components
    factor = scipy.linalg.cho_factor(_gauged(h0, n, labels))
    theta = np.tile(start.theta, (rounds, 1))
    active = np.arange(rounds)
    previous = np.full(rounds, np.inf)
    for _ in range(max_iter):
        everyone = active.size == rounds
        th = theta if everyone else theta[active]
        w, g = (wins, games) if everyone else (wins[active], games[active])
        residual = th @ incidence.T          # theta_i - theta_j per row
        expit(residual, out=residual)        # P(i beats j)
        residual *= g
        np.subtract(w, residual, out=residual)  # W - N p
        gradient = residual @ incidence
        if lam.any():
            gradient -= lam * th
        step = _centre(scipy.linalg.cho_solve(factor, gradient.T).T, labels)
        theta[active] = th + step
        change = np.max(np.abs(step), axis=1)
        stalled = change > 0.5 * previous[active]
        previous[active] = change
        keep = (change >= tol) & ~stalled
        for r in active[(change >= tol) & stalled]:
            with np.errstate(invalid="ignore", divide="ignore"):
                y = np.where(games[r] > 0, wins[r] / np.where(games[r] > 0, games[r], 1.0), 0.5)
            single = Design(n, design.i, design.j, np.clip(y, 0.0, 1.0), games[r])
            theta[r] = fit(single, l2=lam, tol=tol, max_iter=max_iter).theta
        active = active[keep]
        if active.size == 0:
            return theta
    raise ConvergenceError("Bradley-Terry bootstrap", iterations=max_iter, change=float(previous.max()), tol=tol)


def fit_batch(i: np.ndarray, j: np.ndarray, y: np.ndarray, w: np.ndarray, n: int, *, l2: float = DEFAULT_L2,
              offset: float = 0.0, tol: float = 1e-9, max_iter: int = 200) -> np.ndarray:
    """Solve B small rating problems at once (the same objective as :func:`fit`, no covariates).

    Parameters
    ----------
    i, j, y, w : (B, K) arrays: problem b's rows; a row with weight 0 does not count
        (pad unused slots with any valid indices and ``w = 0``).
    n : ratings per problem.
    l2 : ridge on the ratings (must be > 0: a small problem's graph may be disconnected).
    offset : constant added to every linear predictor (PoE-BT's ``-gamma``).
    tol, max_iter : as :func:`fit`.

    Returns
    -------
    (B, n) ratings.

    Raises
    ------
    ValueError
        If the arrays differ in shape or ``l2`` is not positive.
    ConvergenceError
        If a problem reaches ``max_iter``.
    """
    i, j = np.asarray(i, dtype=np.intp), np.asarray(j, dtype=np.intp)
    y, w = np.asarray(y, dtype=float), np.asarray(w, dtype=float)
    if not (i.shape == j.shape == y.shape == w.shape) or i.ndim != 2:
        raise ValueError(f"i, j, y and w must be (B, K) arrays of one shape, got {i.shape}, {j.shape}, {y.shape}, {w.shape}")
    if not (l2 > 0 and math.isfinite(l2)):
        raise ValueError(f"l2 must be a positive finite number, got {l2!r}")
    b = i.shape[0]
    s = np.zeros((b, n))
    value = _batch_objective(s, i, j, y, w, l2, offset)
    active = np.ones(b, dtype=bool)
    change = np.full(b, np.inf)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            return s
        si, ii, jj, yy, ww = s[idx], i[idx], j[idx], y[idx], w[idx]
        m = idx.size
        flat = si.ravel()
        q = expit(flat[_flat(ii, n)] - flat[_flat(jj, n)] + offset)
        residual = ww * (yy - q)
        gradient = (np.bincount(_flat(ii, n).ravel(), residual.ravel(), minlength=m * n)
                    - np.bincount(_flat(jj, n).ravel(), residual.ravel(), minlength=m * n)).reshape(m, n) - l2 * si
        hessian = batch_laplacian(ii, jj, ww * q * (1.0 - q), n)
        hessian[:, np.arange(n), np.arange(n)] += l2
        step = np.linalg.solve(hessian, gradient[..., None])[..., 0]
        t = np.ones(m)
        current = value[idx]
        accepted = np.zeros(m, dtype=bool)
        candidate, new_value = si.copy(), current.copy()
        while not accepted.all():
            todo = np.flatnonzero(~accepted)
            trial = si[todo] + t[todo, None] * step[todo]
            trial_value = _batch_objective(trial, ii[todo], jj[todo], yy[todo], ww[todo], l2, offset)
            ok = (trial_value >= current[todo] - 1e-12 * np.abs(current[todo])) | (t[todo] < 1e-10)
            candidate[todo[ok]], new_value[todo[ok]] = trial[ok], trial_value[ok]
            accepted[todo[ok]] = True
            t[todo[~ok]] *= 0.5
        moved = np.max(np.abs(candidate - si), axis=1)
        s[idx], value[idx], change[idx] = candidate, new_value, moved
        active[idx[moved < tol]] = False
    if active.any():
        raise ConvergenceError("batched Bradley-Terry Newton iteration", iterations=max_iter,
                               change=float(change[active].max()), tol=tol)
    return s


def _flat(index: np.ndarray, n: int) -> np.ndarray:
    return index + n * np.arange(index.shape[0])[:, None]


def batch_laplacian(i: np.ndarray, j: np.ndarray, weight: np.ndarray, n: int) -> np.ndarray:
    """(B, n, n) weighted graph Laplacians of B problems with (B, K) rows (what PoE-Gaussian's batch needs)."""
    b = i.shape[0]
    base = (n * n) * np.arange(b)[:, None]
    ww = weight.ravel()
    lap = -(np.bincount((base + i * n + j).ravel(), ww, minlength=b * n * n)
            + np.bincount((base + j * n + i).ravel(), ww, minlength=b * n * n)).reshape(b, n, n)
    lap[:, np.arange(n), np.arange(n)] = 0.0
    lap[:, np.arange(n), np.arange(n)] = -lap.sum(axis=2)
    return lap


def _batch_objective(s, i, j, y, w, l2, offset) -> np.ndarray:
    n = s.shape[1]
    flat = s.ravel()
    x = flat[_flat(i, n)] - flat[_flat(j, n)] + offset
    return (w * (-y * np.logaddexp(0.0, -x) - (1.0 - y) * np.logaddexp(0.0, x))).sum(axis=1) - 0.5 * l2 * (s * s).sum(axis=1)


def fit_glm_batch(x: np.ndarray, y: np.ndarray, w: np.ndarray, *, l2_features=0.0, start: np.ndarray | None = None,
                  tol: float = 1e-9, max_iter: int = 100) -> np.ndarray:
    """Covariates-only fits of one design under B weightings at once (e.g. bootstrap rounds of a GLM).

    The objective of :func:`fit` with ``n = 0``: rows ``x`` (R, k), outcomes ``y`` (R,),
    and weights ``w`` (B, R), one row per fit. Plain Newton with backtracking per fit.

    Returns
    -------
    (B, k) coefficients.

    Raises
    ------
    ConvergenceError
        If a fit reaches ``max_iter``.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    w = np.atleast_2d(np.asarray(w, dtype=float))
    b, k = w.shape[0], x.shape[1]
    mu = np.broadcast_to(np.asarray(l2_features, dtype=float), (k,))
    beta = np.zeros((b, k)) if start is None else np.tile(np.asarray(start, dtype=float), (b, 1))

    def value(coef, weights):
        eta = coef @ x.T
        return -(weights * (y * np.logaddexp(0.0, -eta) + (1.0 - y) * np.logaddexp(0.0, eta))).sum(axis=1) \
            - 0.5 * (mu * coef * coef).sum(axis=1)

    current = value(beta, w)
    active = np.ones(b, dtype=bool)
    change = np.full(b, np.inf)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            return beta
        p = expit(beta[idx] @ x.T)
        gradient = (w[idx] * (y - p)) @ x - mu * beta[idx]
        curvature = w[idx] * p * (1.0 - p)
        hessian = np.einsum("br,rf,rg->bfg", curvature, x, x) + np.diag(mu)
        step = np.linalg.solve(hessian + 1e-12 * np.eye(k), gradient[..., None])[..., 0]
        t = np.ones(idx.size)
        accepted = np.zeros(idx.size, dtype=bool)
        trial_beta, trial_value = beta[idx].copy(), current[idx].copy()
        while not accepted.all():
            todo = np.flatnonzero(~accepted)
            candidate = beta[idx[todo]] + t[todo, None] * step[todo]
            cand_value = value(candidate, w[idx[todo]])
            ok = (cand_value >= current[idx[todo]] - 1e-12 * np.abs(current[idx[todo]])) | (t[todo] < 1e-10)
            trial_beta[todo[ok]], trial_value[todo[ok]] = candidate[ok], cand_value[ok]
            accepted[todo[ok]] = True
            t[todo[~ok]] *= 0.5
        moved = np.max(np.abs(trial_beta - beta[idx]), axis=1)
        beta[idx], current[idx], change[idx] = trial_beta, trial_value, moved
        active[idx[moved < tol]] = False
    if active.any():
        raise ConvergenceError("batched GLM Newton iteration", iterations=max_iter, change=float(change[active].max()),
                               tol=tol)
    return beta
