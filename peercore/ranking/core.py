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

Many models. Up to :data:`DENSE_MAX` ratings the Hessian is a dense matrix and each
Newton step a Cholesky solve. Above it no model x model matrix is formed: the rating
block is kept as a sparse Laplacian (one entry per pair that met, so memory grows with
the comparisons) and each step is solved by conjugate gradients preconditioned with the
block diagonal (Hestenes & Stiefel 1952; Saad, *Iterative Methods for Sparse Linear
Systems*, 2003, alg. 9.1). A paired-comparison Laplacian is diagonally dominant, and
on the well-mixed comparison graphs of an arena a few dozen iterations reach a relative
residual of 1e-10. The ratings agree with the dense solve to far below the Newton
tolerance; :func:`sandwich` gives the covariance of a few parameters from one solve per
parameter, and the full (n + k) square covariance only when it is asked for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph
import scipy.special
from scipy.special import expit

from peercore.errors import ConvergenceError

__all__ = [
    "Design", "Solution", "fit", "fit_rounds", "fit_batch", "fit_glm_batch", "information", "meat", "sandwich", "laplacian",
    "objective", "batch_laplacian", "DEFAULT_L2", "DENSE_MAX",
]

DEFAULT_L2 = 1e-6
# Ratings up to which the Hessian is a dense matrix (8 MB at 1,000); above, a sparse Laplacian
# and conjugate gradients (module docstring). Every study up to 1,000 contestants is solved as before.
DENSE_MAX = 1000
# Relative residual of a Newton step's conjugate-gradient solve: the step is then exact to far
# below the Newton tolerance (an inexact Newton step with forcing term 1e-10).
NEWTON_RTOL = 1e-10
# The bootstrap's Newton steps above DENSE_MAX ratings (one Hessian per round) need less: a forcing
# term of 1e-4 keeps the iteration converging fast, and the rounds stop on a step under their tolerance.
ROUNDS_RTOL = 1e-4
# ... and no step of a rating longer than this (natural units; 2 is 347 Elo points): a resample can all
# but separate a group of ratings, whose Hessian is then nearly singular (truncated CG, _pcg).
ROUNDS_RADIUS = 2.0
CG_MAX_ITER = 1000


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
    def incidence(self) -> scipy.sparse.csr_array:
        """Rows x ratings, +1 at ``i`` and -1 at ``j``: ``incidence @ theta`` is each row's theta_i - theta_j."""
        rows = np.arange(self.rows)
        return scipy.sparse.csr_array((np.concatenate([np.ones(self.rows), -np.ones(self.rows)]),
                                       (np.concatenate([rows, rows]), np.concatenate([self.i, self.j]))),
                                      shape=(self.rows, self.n))

    @cached_property
    def pattern(self) -> "_Pattern":
        """The sparse structure of the rating block (used above :data:`DENSE_MAX` ratings)."""
        lo, hi, _ = self.pairs
        return _Pattern(lo, hi, self.n)

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


class _Pattern:
    """Where each pair's weight goes among the CSR arrays of the n x n Laplacian (built once per design).

    The sparse rating block of every Newton step (and of every bootstrap round) is then
    a gather into a fixed structure: one entry per distinct pair and direction plus the
    diagonal, never n x n. A pair of a rating with itself adds nothing (as in
    :func:`laplacian`).
    """

    def __init__(self, lo: np.ndarray, hi: np.ndarray, n: int) -> None:
        pairs = np.flatnonzero(lo != hi)
        diagonal = np.arange(n)
        rows = np.concatenate([lo[pairs], hi[pairs], diagonal])
        columns = np.concatenate([hi[pairs], lo[pairs], diagonal])
        # source of every entry: 1 + pair index (either direction), or -(1 + rating) on the diagonal
        source = np.concatenate([pairs + 1, pairs + 1, -(diagonal + 1)]).astype(float)
        structure = scipy.sparse.csr_array((source, (rows, columns)), shape=(n, n))
        structure.sort_indices()
        source = structure.data.astype(np.int64)
        self.n, self.lo, self.hi = n, lo, hi
        self.indptr, self.indices = structure.indptr, structure.indices
        self.off = np.flatnonzero(source > 0)
        self.off_pair = source[self.off] - 1
        self.on = np.flatnonzero(source < 0)
        self.on_rating = -source[self.on] - 1

    def laplacian(self, per_pair: np.ndarray, diagonal: np.ndarray | float = 0.0) -> scipy.sparse.csr_array:
        """:func:`laplacian` of the pairs weighted ``per_pair`` (plus ``diagonal``), as a sparse matrix."""
        data = np.empty(len(self.indices))
        data[self.off] = -per_pair[self.off_pair]
        other = self.lo != self.hi
        degree = np.bincount(self.lo[other], per_pair[other], minlength=self.n) \
            + np.bincount(self.hi[other], per_pair[other], minlength=self.n)
        data[self.on] = (degree + diagonal)[self.on_rating]
        return scipy.sparse.csr_array((data, self.indices, self.indptr), shape=(self.n, self.n), copy=False)


@dataclass(frozen=True)
class _Blocks:
    """A symmetric (n + k) square matrix above :data:`DENSE_MAX` ratings, never formed whole.

    ``ratings`` is the sparse n x n rating block (a Laplacian, plus penalties), ``cross``
    the dense n x k block and ``features`` the dense k x k block (what
    :func:`_outer_blocks` computes densely for fewer ratings).
    """

    ratings: scipy.sparse.csr_array
    cross: np.ndarray
    features: np.ndarray

    @property
    def n(self) -> int:
        return self.ratings.shape[0]

    def plus_diagonal(self, rating_part, feature_part) -> "_Blocks":
        n, k = self.n, self.features.shape[0]
        rating_part = np.broadcast_to(np.asarray(rating_part, dtype=float), (n,))
        feature_part = np.broadcast_to(np.asarray(feature_part, dtype=float), (k,))
        return _Blocks((self.ratings + scipy.sparse.diags_array(rating_part)).tocsr(), self.cross,
                       self.features + np.diag(feature_part))

    def dot(self, v: np.ndarray) -> np.ndarray:
        """The matrix times ``v`` ((n + k,) or (n + k, m))."""
        n = self.n
        top = self.ratings @ v[:n]
        if not self.features.shape[0]:
            return top
        return np.concatenate([top + self.cross @ v[n:], self.cross.T @ v[:n] + self.features @ v[n:]])

    def toarray(self) -> np.ndarray:
        n, k = self.n, self.features.shape[0]
        if not k:
            return self.ratings.toarray()
        out = np.zeros((n + k, n + k))
        out[:n, :n] = self.ratings.toarray()
        out[:n, n:] = self.cross
        out[n:, :n] = self.cross.T
        out[n:, n:] = self.features
        return out


class _Gauge:
    """:func:`_gauged`'s term as an operator: ``v -> c * (sum of v over v's component / component size)``."""

    def __init__(self, labels: np.ndarray) -> None:
        self.size = np.bincount(labels).astype(float)
        self.member = scipy.sparse.csr_array((np.ones(len(labels)), (np.arange(len(labels)), labels)),
                                             shape=(len(labels), len(self.size)))

    def diagonal(self) -> np.ndarray:
        """The term's diagonal divided by c: ``1 / size`` of each rating's component."""
        return self.member @ (1.0 / self.size)

    def dot(self, v: np.ndarray) -> np.ndarray:
        """The term divided by c, times ``v`` ((n,) or (n, m))."""
        means = self.member.T @ v
        means /= self.size if v.ndim == 1 else self.size[:, None]
        return self.member @ means


class _Conjugate:
    """Solves with :class:`_Blocks` (plus the gauge when ``labels`` are given) by preconditioned conjugate gradients.

    The gauge is :func:`_gauged`'s term applied as an operator (:class:`_Gauge`), the
    preconditioner the inverse diagonal of the rating block and the inverse of the
    feature block (block Jacobi).
    """

    def __init__(self, blocks: _Blocks, labels: np.ndarray | None) -> None:
        self.blocks = blocks
        self.gauge = _Gauge(labels) if labels is not None and blocks.n else None
        diagonal = blocks.ratings.diagonal()
        if self.gauge is not None:
            self.c = max(float(diagonal.mean()), 1.0)
            diagonal = diagonal + self.c * self.gauge.diagonal()
        self.inverse_diagonal = np.where(diagonal > 0, 1.0 / np.where(diagonal > 0, diagonal, 1.0), 1.0)
        features = blocks.features
        self.inverse_features = scipy.linalg.pinvh(features) if features.shape[0] else features

    def dot(self, v: np.ndarray, columns=None) -> np.ndarray:
        out = self.blocks.dot(v)
        if self.gauge is not None:
            out[:self.blocks.n] += self.c * self.gauge.dot(v[:self.blocks.n])
        return out

    def precondition(self, r: np.ndarray, columns=None) -> np.ndarray:
        n = self.blocks.n
        top = r[:n] * (self.inverse_diagonal if r.ndim == 1 else self.inverse_diagonal[:, None])
        if not self.inverse_features.shape[0]:
            return top
        return np.concatenate([top, self.inverse_features @ r[n:]])

    def solve(self, b: np.ndarray, *, rtol: float, max_iter: int = CG_MAX_ITER) -> np.ndarray:
        return _pcg(self.dot, self.precondition, b, rtol=rtol, max_iter=max_iter)


def _pcg(dot, precondition, b: np.ndarray, *, rtol: float, max_iter: int = CG_MAX_ITER,
         radius: float | None = None) -> np.ndarray:
    """``x`` with ``|A x - b| <= rtol |b|`` for every column of ``b`` ((N,) or (N, m)), by preconditioned CG.

    ``dot(v, columns)`` is A times ``v`` and ``precondition(r, columns)`` the
    preconditioner applied to ``r``, for the columns of ``b`` listed in ``columns``
    (the ones not yet converged). Conjugate gradients on all columns at once (scipy's
    ``cg`` takes one right-hand side; the bootstrap solves tens at once, each product
    over all of them). A column still above ``rtol`` after ``max_iter`` iterations
    returns its last iterate, which still minimises the quadratic model over the Krylov
    space: the Newton or chord iteration around it keeps its own convergence test.

    With ``radius``, a column whose next iterate would leave the box
    :math:`\\|x\\|_\\infty \\le` ``radius`` (or that meets a direction of no curvature) stops
    where its path crosses the box's surface: Steihaug's truncated conjugate gradients
    (Steihaug 1983, SIAM J. Numer. Anal. 20; Nocedal & Wright, *Numerical Optimization*,
    alg. 7.2). Every iterate raises the quadratic model, so the step stays an ascent
    direction of reasonable length even when the matrix is nearly singular (ratings a
    resample all but separates).
    """
    single = b.ndim == 1
    b = b[:, None] if single else b
    x = np.zeros_like(b)
    r = b.copy()
    everyone = np.arange(b.shape[1])
    z = precondition(r, everyone)
    p = z.copy()
    rz = np.einsum("ij,ij->j", r, z)
    target = rtol * np.linalg.norm(b, axis=0)
    active = everyone[np.linalg.norm(r, axis=0) > target]
    for _ in range(max_iter):
        if active.size == 0:
            break
        pa = p[:, active]
        q = dot(pa, active)
        curvature = np.einsum("ij,ij->j", pa, q)
        alpha = np.where(curvature > 0, rz[active] / np.where(curvature > 0, curvature, 1.0), 0.0)
        if radius is not None:
            xa = x[:, active]
            leaving = (curvature <= 0) | (np.max(np.abs(xa + alpha * pa), axis=0) > radius)
            if leaving.any():  # to the surface of the box along p, and stop
                with np.errstate(divide="ignore", invalid="ignore"):
                    room = np.where(pa[:, leaving] != 0, (radius * np.sign(pa[:, leaving]) - xa[:, leaving])
                                    / pa[:, leaving], np.inf)
                x[:, active[leaving]] = xa[:, leaving] + np.min(room, axis=0) * pa[:, leaving]
                keep = ~leaving
                active, pa, q, alpha = active[keep], pa[:, keep], q[:, keep], alpha[keep]
                if active.size == 0:
                    break
        x[:, active] += alpha * pa
        r[:, active] -= alpha * q
        ra = r[:, active]
        za = precondition(ra, active)
        rz_new = np.einsum("ij,ij->j", ra, za)
        beta = np.where(rz[active] > 0, rz_new / np.where(rz[active] > 0, rz[active], 1.0), 0.0)
        p[:, active] = za + beta * pa
        rz[active] = rz_new
        active = active[(np.linalg.norm(ra, axis=0) > target[active]) & (alpha != 0)]
    return x[:, 0] if single else x


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


def _outer_blocks(design: Design, per_row: np.ndarray, *, dense: bool = False) -> np.ndarray | _Blocks:
    """The (n + k) square matrix :math:`\\sum_r v_r z_r z_r^\\top`, :math:`z_r = (e_{i_r} - e_{j_r}, x_r)`.

    Dense up to :data:`DENSE_MAX` ratings (or with ``dense``); above, as :class:`_Blocks`.
    """
    n, k = design.n, design.k
    if n > DENSE_MAX:
        lo, hi, pair = design.pairs
        blocks = _Blocks(design.pattern.laplacian(np.bincount(pair, per_row, minlength=len(lo))),
                         _cross(design, per_row) if k else np.zeros((n, 0)),
                         (design.x * per_row[:, None]).T @ design.x if k else np.zeros((0, 0)))
        return blocks.toarray() if dense else blocks
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
    out = _outer_blocks(design, design.w * p * (1.0 - p), dense=True)
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
    out, total, mean = _meat(design, solution, centred=centred, dense=True)
    if centred:
        out -= total * np.outer(mean, mean)
    return out


def _meat(design: Design, solution: Solution, *, centred: bool, dense: bool):
    """:func:`meat` as ``(sum of outer products, total, mean score or None)``; :class:`_Blocks` when large."""
    count = np.ones(design.rows) if design.count is None else design.count
    p = expit(design.eta(solution.theta, solution.gamma))
    with np.errstate(invalid="ignore", divide="ignore"):
        per_row = np.where(count > 0, design.w ** 2 * (design.y - p) ** 2 / np.where(count > 0, count, 1.0), 0.0)
    out = _outer_blocks(design, per_row, dense=dense)
    if not centred:
        return out, 0.0, None
    total = count.sum()
    mean = np.concatenate([solution.l2 * solution.theta, solution.l2_features * solution.gamma]) / max(total, 1.0)
    return out, total, mean


def _gauged(h: np.ndarray, n: int, labels: np.ndarray | None = None, *, copy: bool = True) -> np.ndarray:
    """Add :math:`c\\,\\mathbf 1_C \\mathbf 1_C^\\top / |C|` to the rating block, per connected component C.

    No row sees a common shift of one component's ratings, so the Hessian's rating
    block is (near-)singular along each :math:`\\mathbf 1_C`. With one penalty for
    every rating those directions are eigenvectors of the Hessian and the gradient has
    no component along them at a start centred per component, so the added term
    changes no Newton step: it only makes the system well conditioned.
    """
    if n == 0:
        return h
    out = h.copy() if copy else h
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
             ridge: float = 0.0, meat_correction: np.ndarray | None = None, params=None) -> np.ndarray:
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
    params : indices of the parameters (ratings ``0 .. n-1``, then the covariates) whose
        covariance block is returned, in that order; default all. Above
        :data:`DENSE_MAX` ratings such a block costs one conjugate-gradient solve per
        parameter and no model x model matrix (what the judge-bias model's few
        coefficients need); the whole matrix is then formed densely only when asked for
        (``params=None``).
    """
    if bread not in ("penalised", "unpenalised"):
        raise ValueError(f"bread must be 'penalised' or 'unpenalised', got {bread!r}")
    used = solution if bread == "penalised" else Solution(solution.theta, solution.gamma, solution.iterations,
                                                           solution.objective, solution.l2,
                                                           np.zeros_like(solution.l2_features))
    uniform = bool(design.n) and float(solution.l2.min()) == float(solution.l2.max())
    if params is not None and design.n > DENSE_MAX:
        return _sandwich_block(design, solution, used, np.asarray(params, dtype=np.intp).reshape(-1), uniform=uniform,
                               centred=centred, ridge=ridge, meat_correction=meat_correction)
    h = information(design, used)
    if ridge:
        h[np.diag_indices_from(h)] += ridge
    if uniform:
        h = _gauged(h, design.n, design.components, copy=False)
    g = meat(design, solution, centred=centred)
    if meat_correction is not None:
        g -= meat_correction
    try:
        factor = scipy.linalg.cho_factor(h, overwrite_a=True)
        left = scipy.linalg.cho_solve(factor, g, overwrite_b=True)
        del g
        cov = scipy.linalg.cho_solve(factor, left.T).T
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        # A parameter the data do not identify (e.g. separated verdicts with no penalty):
        # the pseudo-inverse reports what the data do say and no variance for the rest.
        h = information(design, used)
        if ridge:
            h[np.diag_indices_from(h)] += ridge
        if uniform:
            h = _gauged(h, design.n, design.components, copy=False)
        inverse = scipy.linalg.pinvh(h)
        cov = inverse @ meat(design, solution, centred=centred) @ inverse
        if meat_correction is not None:
            cov -= inverse @ meat_correction @ inverse
    del h
    cov += cov.T
    cov *= 0.5
    if uniform:  # C cov C' with C centring the ratings, in place
        n = design.n
        cov[:n] -= cov[:n].mean(axis=0)
        cov[:, :n] -= cov[:, :n].mean(axis=1)[:, None]
    return cov if params is None else cov[np.ix_(np.asarray(params, dtype=np.intp).reshape(-1),
                                                 np.asarray(params, dtype=np.intp).reshape(-1))]


def _sandwich_block(design: Design, solution: Solution, used: Solution, params: np.ndarray, *, uniform: bool,
                    centred: bool, ridge: float, meat_correction) -> np.ndarray:
    """The ``params`` block of :func:`sandwich` above :data:`DENSE_MAX` ratings, by conjugate gradients.

    With :math:`V` the columns of the centring matrix at ``params`` (unit vectors, minus
    :math:`1/n` on the ratings when the ratings are centred), the block is
    :math:`B^\\top G B` with :math:`B = H^{-1} V`: one solve per parameter.
    """
    n, k = design.n, design.k
    if params.size and (params.min() < 0 or params.max() >= n + k):
        raise ValueError(f"params must index the {n + k} parameters, got {params.tolist()!r}")
    p = expit(design.eta(used.theta, used.gamma))
    h = _outer_blocks(design, design.w * p * (1.0 - p)).plus_diagonal(used.l2 + ridge, used.l2_features + ridge)
    v = np.zeros((n + k, params.size))
    v[params, np.arange(params.size)] = 1.0
    if uniform:
        v[:n, params < n] -= 1.0 / n
    b = _Conjugate(h, design.components if uniform else None).solve(v, rtol=NEWTON_RTOL)
    g, total, mean = _meat(design, solution, centred=centred, dense=False)
    gb = g.dot(b)
    if mean is not None:
        gb -= total * np.outer(mean, mean @ b)
    if meat_correction is not None:
        gb -= meat_correction @ b
    out = b.T @ gb
    return 0.5 * (out + out.T)


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
        if isinstance(h, _Blocks):  # many ratings: sparse, conjugate gradients
            step = _Conjugate(h.plus_diagonal(lam, mu), design.components if uniform else None).solve(
                gradient, rtol=NEWTON_RTOL)
        else:
            h[np.arange(n), np.arange(n)] += lam
            h[n + np.arange(k), n + np.arange(k)] += mu
            step = _solve(_gauged(h, n, design.components, copy=False) if uniform else h, gradient)
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
               max_iter: int = 200, columns: bool = False) -> np.ndarray:
    """Refit the ratings of a covariate-free design for many reweighted copies at once (bootstrap).

    Round b replaces the rows' (score, weight) by ``(wins[b], games[b])``
    (:math:`y = W / N`, :math:`w = N`). Chord-Newton: every round steps with the
    full-data Hessian at ``start`` instead of its own (its Cholesky factor, or above
    :data:`DENSE_MAX` ratings conjugate gradients on its sparse form); a resample's
    Hessian differs from it by :math:`O(1/\\sqrt N)`, so the iteration contracts fast.
    Rounds that stall (e.g. a resample in which a model wins every battle) fall back
    to exact Newton (:func:`fit`). Memory: a few (rows x rounds) arrays, no
    (rows x ratings) matrix.

    With ``columns`` the rounds are columns: ``wins`` and ``games`` are (rows, rounds)
    and the result (n, rounds), the layout the products over rows run fastest in.

    Returns
    -------
    (rounds, n) ratings in natural units, each round centred ((n, rounds) with ``columns``).

    Raises
    ------
    ConvergenceError
        If a round reaches ``max_iter``.
    """
    if design.k:
        raise ValueError("fit_rounds refits ratings only; this design has covariates")
    if columns:
        return _fit_rounds(design, wins, games, start, tol=tol, max_iter=max_iter)
    return _fit_rounds(design, np.ascontiguousarray(np.transpose(wins)), np.ascontiguousarray(np.transpose(games)),
                       start, tol=tol, max_iter=max_iter).T


def _fit_rounds(design: Design, wins: np.ndarray, games: np.ndarray, start: Solution, *, tol: float,
                max_iter: int) -> np.ndarray:
    """:func:`fit_rounds` with rounds as columns: ``wins``, ``games`` (rows, rounds) -> ratings (n, rounds).

    Up to :data:`DENSE_MAX` ratings every round steps with the Cholesky factor of the
    full-data Hessian (chord-Newton); above, :func:`_newton_rounds`.
    """
    rounds, n = wins.shape[1], design.n
    theta = np.repeat(start.theta[:, None], rounds, axis=1)
    if n > DENSE_MAX:
        return _newton_rounds(design, wins, games, theta, start.l2, tol=tol, max_iter=max_iter)
    # Sparse incidence: ``incidence @ theta`` gathers theta_i - theta_j, its transpose scatters the residuals back
    # (no rows x ratings dense matrix). The transpose stays CSC: a pass over the rows, each adding to its two
    # ratings (measured 3x faster than CSR).
    incidence = design.incidence
    scatter = incidence.T
    labels = design.components
    lam = start.l2[:, None]
    p0 = expit(design.eta(start.theta, None))
    h0 = _outer_blocks(design, design.w * p0 * (1 - p0))
    h0[np.arange(n), np.arange(n)] += start.l2
    factor = scipy.linalg.cho_factor(_gauged(h0, n, labels, copy=False))
    active = np.arange(rounds)
    previous = np.full(rounds, np.inf)
    for _ in range(max_iter):
        th, w, g = _columns(active, rounds, theta, wins, games)
        residual = incidence @ th                # theta_i - theta_j per row and round
        expit(residual, out=residual)            # P(i beats j)
        residual *= g
        np.subtract(w, residual, out=residual)  # W - N p
        gradient = scatter @ residual
        del residual
        if lam.any():
            gradient -= lam * th
        step = _centre(scipy.linalg.cho_solve(factor, gradient).T, labels).T
        theta[:, active] = th + step
        change = np.max(np.abs(step), axis=0)
        stalled = change > 0.5 * previous[active]
        previous[active] = change
        keep = (change >= tol) & ~stalled
        for r in active[(change >= tol) & stalled]:
            with np.errstate(invalid="ignore", divide="ignore"):
                y = np.where(games[:, r] > 0, wins[:, r] / np.where(games[:, r] > 0, games[:, r], 1.0), 0.5)
            single = Design(n, design.i, design.j, np.clip(y, 0.0, 1.0), games[:, r])
            theta[:, r] = fit(single, l2=start.l2, tol=tol, max_iter=max_iter).theta
        active = active[keep]
        if active.size == 0:
            return theta
    raise ConvergenceError("Bradley-Terry bootstrap", iterations=max_iter, change=float(previous.max()), tol=tol)


def _columns(active: np.ndarray, rounds: int, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each (rows, rounds) array's columns of the ``active`` rounds (the arrays themselves while all are)."""
    if active.size == rounds:
        return arrays
    return tuple(array[:, active] for array in arrays)


def _newton_rounds(design: Design, wins: np.ndarray, games: np.ndarray, theta: np.ndarray, lam: np.ndarray, *,
                   tol: float, max_iter: int) -> np.ndarray:
    """Every round's own Newton iteration, all rounds at once (above :data:`DENSE_MAX` ratings).

    Without a Cholesky factor to reuse a chord step costs a solve too, and on the sparse
    comparison graphs of many models (a battle or two per pair) the chord iteration
    contracts only by ~0.5 a step. Here each round steps with its own Hessian
    (:class:`_RoundCurvature`, solved for all rounds by conjugate gradients to a relative
    residual :data:`ROUNDS_RTOL`) and backtracks, as :func:`fit` does, until its
    penalised log-likelihood does not decrease. A step that moves no row's
    :math:`\\eta` by more than 1 (``2 max |s| <= 1``) is taken without evaluating it: along
    it the logistic curvature changes at most e-fold (the logistic loss has
    :math:`|\\ell'''| \\le \\ell''`; Bach 2010, *Self-concordant analysis for logistic
    regression*, EJS 4), so with :math:`g^\\top s = s^\\top H s` (true of a
    conjugate-gradient iterate) the objective rises by at least
    :math:`(3 - e)\\, s^\\top H s > 0`. Ratings a round separates start at their own
    estimate (:func:`_separated_start`). A round stops when its last step is under
    ``tol``, or when Newton's quadratic convergence (:math:`s_k \\approx K s_{k-1}^2`, K
    from its last two full steps, plus the solve's relative error) puts the next one
    under ``tol / 10``.
    """
    incidence = design.incidence
    scatter = incidence.T  # CSC: a pass over the rows, each adding to its two ratings (3x faster than CSR)
    labels = design.components
    gauge = _Gauge(labels)
    lo, hi, pair_of_row = design.pairs
    rows = np.arange(design.rows)
    per_pair = None if len(lo) == design.rows and (pair_of_row == rows).all() else \
        scipy.sparse.csr_array((np.ones(design.rows), (pair_of_row, rows)), shape=(len(lo), design.rows))
    rounds = theta.shape[1]
    theta = _separated_start(design, wins, games, theta, lam, labels)
    eta = incidence @ theta
    p = expit(eta)                               # P(i beats j), per row and round
    lost = games - wins
    value = _round_values(p, eta, games, lost, theta, lam)
    del eta
    active = np.arange(rounds)
    change = np.full(rounds, np.inf)
    for _ in range(max_iter):
        th, w, g = _columns(active, rounds, theta, wins, games)
        q = g * p                                # N p
        gradient = scatter @ np.subtract(w, q)   # W - N p, scattered to the ratings
        gradient -= lam[:, None] * th
        np.subtract(1.0, p, out=p)
        p *= q                                   # each row's curvature N p (1 - p)
        del q
        curvature = _RoundCurvature(design.pairs, p if per_pair is None else per_pair @ p, lam, gauge)
        del p
        step = _pcg(curvature.dot, curvature.precondition, gradient, rtol=ROUNDS_RTOL, radius=ROUNDS_RADIUS)
        step = _centre(step.T, labels).T
        del curvature, gradient
        t = np.ones(active.size)
        # A step that moves no row's eta by more than 1 cannot lower the objective (docstring): taken unevaluated.
        short = 2.0 * np.max(np.abs(step), axis=0) <= 1.0
        safe, todo = np.flatnonzero(short), np.flatnonzero(~short)
        if safe.size == active.size:
            theta[:, active] = candidate = th + step
            p = incidence @ candidate
            expit(p, out=p)
            value[active] = np.nan  # evaluated again only if a later step needs it
        else:
            p = np.empty((design.rows, active.size))
        if 0 < safe.size < active.size:
            candidate = th[:, safe] + step[:, safe]
            p[:, safe] = expit(incidence @ candidate)
            theta[:, active[safe]] = candidate
            value[active[safe]] = np.nan  # evaluated again only if a later step needs it
        unknown = todo[np.isnan(value[active[todo]])]
        if unknown.size:
            now = incidence @ th[:, unknown]
            value[active[unknown]] = _round_values(expit(now), now, games[:, active[unknown]], lost[:, active[unknown]],
                                                   th[:, unknown], lam)
            del now
        while todo.size:  # backtracking, as fit(); the accepted points' probabilities serve the next step
            candidate = th[:, todo] + t[todo] * step[:, todo]
            candidate_eta = incidence @ candidate
            candidate_p = expit(candidate_eta)
            rounds_todo = active[todo]
            new_value = _round_values(candidate_p, candidate_eta, games[:, rounds_todo], lost[:, rounds_todo],
                                      candidate, lam)
            del candidate_eta
            ok = (new_value >= value[rounds_todo] - 1e-12 * np.abs(value[rounds_todo])) | (t[todo] < 1e-10)
            theta[:, rounds_todo[ok]] = candidate[:, ok]
            value[rounds_todo[ok]] = new_value[ok]
            p[:, todo[ok]] = candidate_p[:, ok]
            t[todo[~ok]] *= 0.5
            todo = todo[~ok]
        last = np.max(np.abs(step * t), axis=0)
        # Newton's steps shrink quadratically (s_k ~ K s_{k-1}^2): with K estimated from the last two full
        # steps, a round whose next step would be under tol / 10 is done without taking it.
        predicted = np.where(t == 1.0, last * last * last / np.maximum(change[active], 1e-300) ** 2, np.inf) \
            + ROUNDS_RTOL * last
        change[active] = last
        going = (last >= tol) & (predicted >= tol / 10)
        active, p = active[going], p[:, going]
        if active.size == 0:
            return theta
    raise ConvergenceError("Bradley-Terry bootstrap", iterations=max_iter, change=float(change.max()), tol=tol)


def _round_values(p: np.ndarray, eta: np.ndarray, games: np.ndarray, lost: np.ndarray, theta: np.ndarray,
                  lam: np.ndarray) -> np.ndarray:
    """The penalised log-likelihood of :func:`objective` for every round (column), given ``p = expit(eta)``.

    :math:`W \\log p + (N - W) \\log (1 - p) = N \\log p - (N - W)\\,\\eta`: one logarithm per
    row, of the probability the next step needs anyway (``lost`` is :math:`N - W`).
    """
    log_p = np.maximum(p, np.finfo(float).tiny)
    np.log(log_p, out=log_p)
    # einsum: a column sum of a (rows, few rounds) array is 3x slower than its dot products
    return (np.einsum("ij,ij->j", games, log_p) - np.einsum("ij,ij->j", lost, eta)
            - 0.5 * np.einsum("ij,ij->j", theta, lam[:, None] * theta))


def _separated_start(design: Design, wins: np.ndarray, games: np.ndarray, theta: np.ndarray, lam: np.ndarray,
                     labels: np.ndarray) -> np.ndarray:
    """Start values for the ratings a round separates: those that won (or lost) every battle they played.

    With a ridge the estimate of such a rating is finite but large, and Newton's method
    creeps towards it by about one natural unit a step (the likelihood is exponential
    there). Its stationarity condition, with the opponents held where they are and
    :math:`1 - \\sigma(x) \\approx e^{-x}`, is :math:`S e^{-\\theta} = \\lambda\\theta` with
    :math:`S = \\sum N e^{\\theta_{opp}}`: :math:`\\theta = W(S/\\lambda)` (Lambert's W;
    minus that with :math:`e^{-\\theta_{opp}}` for a model that lost every battle). The
    ratings are then centred again; Newton's steps take it from there.
    """
    if not (lam > 0).all():
        return theta
    i, j, n = design.i, design.j, design.n
    for r in range(theta.shape[1]):
        w, g = wins[:, r], games[:, r]
        played = np.bincount(i, g, minlength=n) + np.bincount(j, g, minlength=n)
        score = np.bincount(i, w, minlength=n) + np.bincount(j, g - w, minlength=n)
        above, below = (played > 0) & (score >= played), (played > 0) & (score <= 0)
        if not (above.any() or below.any()):
            continue
        th = theta[:, r]
        up = np.bincount(i, g * np.exp(th[j]), minlength=n) + np.bincount(j, g * np.exp(th[i]), minlength=n)
        down = np.bincount(i, g * np.exp(-th[j]), minlength=n) + np.bincount(j, g * np.exp(-th[i]), minlength=n)
        th = th.copy()
        th[above] = scipy.special.lambertw(up[above] / lam[above]).real
        th[below] = -scipy.special.lambertw(down[below] / lam[below]).real
        theta[:, r] = _centre(th, labels)
    return theta


class _RoundCurvature:
    """Each round's Hessian :math:`L(h_r) + \\mathrm{diag}(\\lambda)` plus its gauge, as an operator on the rounds.

    ``h`` (pairs, rounds) are the curvatures :math:`N p (1 - p)` of the design's
    distinct pairs (sorted by ``lo, hi``: :attr:`Design.pairs`). A round's Laplacian is
    :math:`D_r - A_r - A_r^\\top` with :math:`A_r` the strictly upper triangle, whose CSR
    arrays are the pairs themselves (``indices = hi``, data = ``h[:, r]``): no matrix
    is assembled, a product is one pass over the pairs each way. Products and the
    Jacobi preconditioner act on the rounds (columns) they are given.
    """

    def __init__(self, pairs, h: np.ndarray, lam: np.ndarray, gauge: _Gauge) -> None:
        lo, hi, _ = pairs
        n = gauge.member.shape[0]
        h = np.ascontiguousarray(h.T)  # (rounds, pairs): each round's data contiguous
        if (lo == hi).any():
            h[:, lo == hi] = 0.0       # a rating against itself adds nothing
        indptr = np.concatenate([[0], np.cumsum(np.bincount(lo, minlength=n))])
        self.upper = [scipy.sparse.csr_array((row, hi, indptr), shape=(n, n), copy=False) for row in h]
        degree = np.stack([np.bincount(lo, row, minlength=n) + np.bincount(hi, row, minlength=n) for row in h], axis=1)
        degree += lam[:, None]
        self.degree = degree
        self.c = np.maximum(degree.mean(axis=0), 1.0)
        diagonal = degree + self.c * gauge.diagonal()[:, None]
        self.inverse = np.where(diagonal > 0, 1.0 / np.where(diagonal > 0, diagonal, 1.0), 1.0)
        self.gauge = gauge

    def dot(self, v: np.ndarray, columns: np.ndarray) -> np.ndarray:
        out = v * self.degree[:, columns]
        for k, column in enumerate(columns):
            upper, x = self.upper[column], v[:, k]
            out[:, k] -= upper @ x
            out[:, k] -= upper.T @ x
        out += self.c[columns] * self.gauge.dot(v)
        return out

    def precondition(self, r: np.ndarray, columns: np.ndarray) -> np.ndarray:
        return r * self.inverse[:, columns]


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
