"""Contextual Bradley-Terry: ratings with style control (Chatbot Arena) on the Elo scale.

Chiang et al. (2024, LMArena "style control"; the open ``arena-rank`` package,
``ContextualBradleyTerry``) explain a verdict by the two models' strength *and* by
per-battle covariates :math:`z` (style features of the two answers, see
:mod:`peercore.ranking.style`):

.. math:: P(a \\succ b) = \\sigma(\\xi_a - \\xi_b + \\gamma^\\top z)

fitted by maximising

.. math:: \\sum_r w_r\\,[y_r \\log \\sigma(\\eta_r) + (1 - y_r) \\log \\sigma(-\\eta_r)]
          - \\tfrac12\\,\\mathrm{reg}\\,N\\,\\lVert\\gamma\\rVert^2

(ties :math:`y = 1/2`), i.e. arena-rank's mean log-likelihood with the penalty
:math:`\\tfrac12\\,\\mathrm{reg}\\,\\lVert\\gamma\\rVert^2`, through the one solver
(:func:`peercore.ranking.core.fit`). The ratings :math:`\\xi` are the *style-controlled*
ratings: what the models' verdicts say once the answers' style is accounted for; the
coefficients :math:`\\gamma` say how much style moves a verdict, reported in Elo points
per standard deviation of the feature. With all features zero the model is plain
Bradley-Terry (:func:`peercore.ranking.bradley_terry.bradley_terry`).

Intervals: sandwich (robust, :func:`peercore.ranking.core.sandwich`; arena-rank's
default) and bootstrap over battles (each round a multinomial resample of the battles,
refitted by chord-Newton from the full-data fit).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.linalg
from scipy.special import expit, ndtri

from peercore.errors import ConvergenceError
from peercore.ranking import core
from peercore.ranking._battles import Battles, as_battles, battle_weights, draw_multinomial, resample_chunks, \
    run_chunks
from peercore.ranking.bradley_terry import INTERVALS, _anchor_index, _check_scale, prior_l2, rank_spread

__all__ = ["ContextualFit", "contextual_bradley_terry", "standardise", "DEFAULT_REG", "SANDWICH_FORMS"]

# arena-rank's ContextualBradleyTerry defaults to reg = 1.0 on the *mean* log-likelihood,
# which shrinks style coefficients several-fold (a standardised feature's curvature per
# battle is about 0.2). peercore's default is the weak 1e-3 (parity with arena-rank is
# tested at both).
DEFAULT_REG = 1e-3
SANDWICH_FORMS = ("penalised", "arena-rank")
ARENA_HESSIAN_REG = 1e-5  # arena-rank's hessian_reg, added to its mean-scale Hessian


@dataclass(frozen=True)
class ContextualFit:
    """What :func:`contextual_bradley_terry` returns.

    Attributes
    ----------
    table : indexed by model, best first: ``rating, ci_low, ci_high, rank, battles,
        sandwich_low, sandwich_high, rank_worst`` (as
        :func:`~peercore.ranking.bradley_terry.bradley_terry_intervals`).
    coefficients : indexed by feature: ``coefficient`` (Elo points per standard
        deviation of the feature), ``ci_low``, ``ci_high`` (the same interval kind as
        the table), ``sandwich_low``, ``sandwich_high``, ``probability_shift`` (the change
        in P(first wins) between two equal models when the feature moves one standard
        deviation in the first answer's favour), ``mean``, ``sd`` (of the raw feature).
    n_battles : battles fitted.
    reg : the penalty used; ``intervals``: which interval fills ``ci_low``/``ci_high``.
    """

    table: pd.DataFrame
    coefficients: pd.DataFrame
    n_battles: int
    reg: float
    intervals: str


def standardise(features: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features minus their mean over battles, divided by their standard deviation (1 where it is 0).

    arena-rank's ``normalize_features=True`` (population standard deviation).
    Returns ``(standardised, mean, sd)``.
    """
    x = np.asarray(features, dtype=float)
    mean = x.mean(axis=0) if len(x) else np.zeros(x.shape[1])
    sd = x.std(axis=0) if len(x) else np.ones(x.shape[1])
    sd = np.where(sd == 0, 1.0, sd)
    return (x - mean) / sd, mean, sd


def contextual_bradley_terry(
    judgments: pd.DataFrame | Battles,
    features: pd.DataFrame | np.ndarray,
    *,
    names: Sequence[str] | None = None,
    reg: float = DEFAULT_REG,
    standardise_features: bool = True,
    rounds: int = 0,
    seed: int = 0,
    level: float = 0.95,
    intervals: str = "sandwich",
    scale: float = 400.0,
    base: float = 10.0,
    anchor_model: str | None = None,
    anchor_rating: float = 1000.0,
    weights: Mapping[str, float] | None = None,
    reweight: bool = False,
    prior: float | None = None,
    l2: float = core.DEFAULT_L2,
    sandwich: str = "penalised",
    tol: float = 1e-9,
    max_iter: int = 200,
    workers: int | None = None,
) -> ContextualFit:
    """Style-controlled Bradley-Terry ratings with coefficients, sandwich and bootstrap intervals.

    Parameters
    ----------
    judgments : canonical judgment table (or battles encoded once), one row per battle.
    features : (battles x k) covariates aligned with the rows (a DataFrame's columns
        name them), e.g. :func:`peercore.ranking.style.style_features`. Must be finite
        (drop battles whose answers are missing first).
    names : feature names when ``features`` is an array.
    reg : ridge on the coefficients, on arena-rank's scale (the penalty
        :math:`\\tfrac12 \\mathrm{reg} \\lVert\\gamma\\rVert^2` on the mean log-likelihood;
        arena-rank's default is 1.0, ours :data:`DEFAULT_REG`).
    standardise_features : centre and scale each feature over battles first
        (:func:`standardise`, arena-rank's default); coefficients are then per standard
        deviation.
    rounds : bootstrap rounds (0 = none).
    seed, level, workers : as :func:`~peercore.ranking.bradley_terry.bradley_terry_intervals`.
    intervals : ``"sandwich"`` (default, cheap at any scale) or ``"bootstrap"``: which
        interval fills ``ci_low``/``ci_high`` and sets the ranks (``"bootstrap"`` with
        ``rounds=0`` gives NaN intervals and ranks from the point estimates, as
        :func:`~peercore.ranking.bradley_terry.bradley_terry_intervals`).
    sandwich : ``"penalised"`` (default): the sandwich of the penalised estimate
        reported, whose bread includes the ridge (it matches the bootstrap of that
        estimate); ``"arena-rank"``: arena-rank 0.1.1's formula exactly (bread without
        the ridge plus its ``hessian_reg`` 1e-5, meat minus :math:`\\mathrm{reg}^2
        \\gamma\\gamma^\\top`). The two agree at a weak ``reg``; at arena-rank's default
        ``reg=1`` its formula overstates the rating intervals (up to 50% on
        ``tests/golden``'s synthetic battles, against a bootstrap of the same fit).
    scale, base, anchor_model, anchor_rating, weights, reweight, prior, l2, tol, max_iter :
        as :func:`~peercore.ranking.bradley_terry.bradley_terry`.

    Returns
    -------
    ContextualFit

    Raises
    ------
    ValueError
        If ``features`` does not have one finite row per battle, a parameter is out of
        range.
    ConvergenceError
        If Newton's method reaches ``max_iter``.
    """
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if intervals not in INTERVALS:
        raise ValueError(f"intervals must be one of {INTERVALS}, got {intervals!r}")
    if sandwich not in SANDWICH_FORMS:
        raise ValueError(f"sandwich must be one of {SANDWICH_FORMS}, got {sandwich!r}")
    if not (reg >= 0 and math.isfinite(reg)):
        raise ValueError(f"reg must be a finite number >= 0, got {reg!r}")
    _check_scale(scale, base, l2)
    battles = as_battles(judgments)
    x, names = _feature_matrix(features, names, len(battles))
    mean, sd = np.zeros(x.shape[1]), np.ones(x.shape[1])
    if standardise_features:
        x, mean, sd = standardise(x)
    weight = battle_weights(judgments, weights, reweight=reweight)
    w = np.ones(len(battles)) if weight is None else weight
    n = battles.n_models
    design = core.Design(n, battles.a, battles.b, battles.score_a, w, x=x)
    penalty = l2 + prior_l2(prior, scale=scale, base=base)
    solution = core.fit(design, l2=penalty, l2_features=reg * len(battles), tol=tol, max_iter=max_iter,
                        what="contextual Bradley-Terry")
    elo = scale / math.log(base)
    k = x.shape[1]
    contrast = _contrast(battles.models, anchor_model, k)
    rating = contrast[:n, :n] @ solution.theta * elo + anchor_rating
    if sandwich == "penalised":
        robust = core.sandwich(design, solution)
    else:  # arena-rank 0.1.1, ContextualBradleyTerry.compute_hessian_and_covariance, on the sum scale
        params = np.concatenate([np.zeros(n), solution.gamma])
        robust = core.sandwich(design, solution, bread="unpenalised", ridge=ARENA_HESSIAN_REG * len(battles),
                               meat_correction=reg ** 2 * np.outer(params, params))
    cov = contrast @ robust @ contrast.T
    sd_all = np.sqrt(np.clip(np.diag(cov), 0.0, None)) * elo
    alpha = (1.0 - level) / 2.0
    z = float(ndtri(1.0 - alpha))
    coef = solution.gamma * elo
    s_low = np.concatenate([rating, coef]) - z * sd_all
    s_high = np.concatenate([rating, coef]) + z * sd_all
    low, high = s_low.copy(), s_high.copy()
    if intervals == "bootstrap":
        low, high = np.full(len(low), np.nan), np.full(len(high), np.nan)
    if rounds:
        samples = _bootstrap(design, solution, rounds=rounds, seed=seed, tol=max(tol, 1e-6), max_iter=max_iter,
                             workers=workers) @ contrast.T * elo
        samples[:, :n] += anchor_rating
        b_low, b_high = np.quantile(samples, [alpha, 1.0 - alpha], axis=0)
        if intervals == "bootstrap":
            low, high = b_low, b_high
    played = np.bincount(battles.a, minlength=n) + np.bincount(battles.b, minlength=n)
    table = pd.DataFrame({"rating": rating, "ci_low": low[:n], "ci_high": high[:n], "battles": played,
                          "sandwich_low": s_low[:n], "sandwich_high": s_high[:n]},
                         index=pd.Index(battles.models, name="model"))
    spread = rank_spread(table["ci_low"].fillna(table["rating"]), table["ci_high"].fillna(table["rating"]))
    table["rank"], table["rank_worst"] = spread["rank"], spread["rank_worst"]
    table = table[["rating", "ci_low", "ci_high", "rank", "battles", "sandwich_low", "sandwich_high", "rank_worst"]]
    table = table.sort_values("rating", ascending=False, kind="stable")
    coefficients = pd.DataFrame({
        "coefficient": coef, "ci_low": low[n:], "ci_high": high[n:], "sandwich_low": s_low[n:],
        "sandwich_high": s_high[n:], "probability_shift": expit(solution.gamma) - 0.5, "mean": mean, "sd": sd,
    }, index=pd.Index(list(names), name="feature"))
    return ContextualFit(table, coefficients, len(battles), float(reg), intervals)


def _feature_matrix(features, names, rows: int) -> tuple[np.ndarray, list[str]]:
    if isinstance(features, pd.DataFrame):
        names = [str(c) for c in features.columns] if names is None else list(names)
        x = features.to_numpy(dtype=float)
    else:
        x = np.asarray(features, dtype=float)
        x = x.reshape(-1, 1) if x.ndim == 1 else x
        names = [f"x{f}" for f in range(x.shape[1])] if names is None else list(names)
    if x.shape[0] != rows:
        raise ValueError(f"features must have one row per battle: {x.shape[0]} rows for {rows} battles")
    if len(names) != x.shape[1]:
        raise ValueError(f"names must name every feature: {len(names)} names for {x.shape[1]} features")
    if not np.all(np.isfinite(x)):
        bad = int(np.flatnonzero(~np.isfinite(x).all(axis=1))[0])
        raise ValueError(f"features must be finite; battle {bad} has {x[bad].tolist()} (drop battles whose answers "
                         "are missing)")
    return x, names


def _contrast(models, anchor_model, k: int) -> np.ndarray:
    """(n + k) square map from natural parameters to anchored ratings (mean or a model) and coefficients."""
    n = len(models)
    out = np.eye(n + k)
    if anchor_model is None:
        out[:n, :n] -= 1.0 / n if n else 0.0
    else:
        out[:n, _anchor_index(models, anchor_model)] -= 1.0
    return out


def _bootstrap(design: core.Design, solution: core.Solution, *, rounds, seed, tol, max_iter, workers) -> np.ndarray:
    """(rounds, n + k) natural parameters: battles resampled (multinomial), refitted by chord-Newton.

    Every round steps with the Cholesky factor of the full-data Hessian (a resample's
    differs from it by :math:`O(1/\\sqrt N)`), so an iteration costs one gradient.
    """
    n, k = design.n, design.k
    h = core.information(design, solution)
    factor = scipy.linalg.cho_factor(core._gauged(h, n, design.components))
    counts = np.ones(design.rows, dtype=np.int64)
    out = np.empty((rounds, n + k))
    lam, mu = solution.l2, solution.l2_features

    def one(draw: np.ndarray) -> np.ndarray:
        w = design.w * draw
        theta, gamma = solution.theta.copy(), solution.gamma.copy()
        previous = math.inf
        for _ in range(max_iter):
            p = expit(design.eta(theta, gamma))
            residual = w * (design.y - p)
            gradient = np.concatenate([
                np.bincount(design.i, residual, minlength=n) - np.bincount(design.j, residual, minlength=n) - lam * theta,
                (design.x.T @ residual if k else np.zeros(0)) - mu * gamma])
            step = scipy.linalg.cho_solve(factor, gradient)
            step[:n] = core._centre(step[:n], design.components)
            theta, gamma = theta + step[:n], gamma + step[n:]
            change = float(np.max(np.abs(step)))
            if change < tol:
                return np.concatenate([theta, gamma])
            if change > 0.9 * previous:  # not contracting: exact Newton for this round
                resampled = core.Design(n, design.i, design.j, design.y, w, x=design.x)
                again = core.fit(resampled, l2=lam, l2_features=mu, tol=tol, max_iter=max_iter,
                                 start=(theta, gamma), what="contextual Bradley-Terry bootstrap")
                return again.params
            previous = change
        raise ConvergenceError("contextual Bradley-Terry bootstrap", iterations=max_iter, change=previous, tol=tol)

    def work(start, stop, chunk_seed):
        draws = draw_multinomial(counts, stop - start, chunk_seed)
        for r in range(stop - start):
            out[start + r] = one(draws[r])

    run_chunks(work, resample_chunks(rounds, seed=seed, chunk=10), workers=workers)
    return out
