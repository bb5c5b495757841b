"""Bradley-Terry maximum likelihood on the Elo scale, with bootstrap and sandwich intervals (Chatbot Arena).

The model (Zheng et al. 2023; Chiang et al. 2024, Chatbot Arena):

.. math:: P(a \\succ b) = \\frac{1}{1 + \\beta^{(R_b - R_a)/\\sigma}}

with base :math:`\\beta = 10` and scale :math:`\\sigma = 400`. A tie counts as half a
win for each side. Ratings are identified up to a shift, fixed by an anchor: the mean
rating (default 1000) or one named model at a given rating.

Implementation note (measured in ``benchmarks/ranking.py``): battles are aggregated to
per-pair sufficient statistics (weighted score and count) and solved by the one solver
of :mod:`peercore.ranking.core`. The bootstrap draws the per-round counts of the
distinct (pair, outcome, weight) battles from a multinomial -- the same resampling
Chatbot Arena uses -- then solves all rounds together with a chord-Newton iteration
(:func:`peercore.ranking.core.fit_rounds`). This replaces the per-round scipy L-BFGS fit
used by FastChat; the two agree to well under 0.5 rating points. The sandwich (robust)
interval is arena-rank's ``ci_method="sandwich"``: :math:`H^{-1} G H^{-1}` with the
per-battle score outer products as :math:`G` (:func:`peercore.ranking.core.sandwich`).

Options LMArena's leaderboard has: reweighting battles by :math:`1/\\max(n_{pair}, 50)`
(``reweight``); a minimum-battles "preliminary" flag (in :mod:`peercore.app.leaderboard`). And one
it has not: a weak Gaussian prior on the ratings (``prior``), so that a handful of
verdicts cannot give ratings like 1739 / -479.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse
from scipy.special import ndtri

from peercore.domain.verdicts import counted_unique
from peercore.ranking import core
from peercore.ranking._battles import Battles, as_battles, as_series, battle_weights, draw_counts, resample_chunks, \
    rounds_at_once, run_chunks

__all__ = ["bradley_terry", "bradley_terry_intervals", "arena_ranks", "rank_spread", "prior_l2", "PairTable",
           "pair_table", "sandwich_left_out", "INTERVALS"]

DEFAULT_L2 = core.DEFAULT_L2
INTERVALS = ("bootstrap", "sandwich")
# Bootstrap rounds stop when the last step is under 1e-5 natural units (0.0017 Elo
# points; the chord iteration contracts ~30x per step, so the error left is ~1e-7):
# far below the Monte-Carlo error of a 1000-round percentile (~0.3 Elo points).
BOOTSTRAP_TOL = 1e-5


@dataclass(frozen=True)
class PairTable:
    """Battles aggregated per unordered pair ``i < j``.

    ``wins[p]`` is the (weighted) score of ``i[p]`` against ``j[p]`` (wins + ties/2) and
    ``games[p]`` the (weighted) number of battles, pooled over both presentation orders.
    """

    models: tuple[str, ...]
    i: np.ndarray
    j: np.ndarray
    wins: np.ndarray
    games: np.ndarray

    @property
    def n_models(self) -> int:
        return len(self.models)

    def design(self) -> core.Design:
        """The solver's rows: one per pair, outcome = share of points, weight = battles."""
        with np.errstate(invalid="ignore", divide="ignore"):
            y = np.where(self.games > 0, self.wins / np.where(self.games > 0, self.games, 1.0), 0.5)
        return core.Design(self.n_models, self.i, self.j, np.clip(y, 0.0, 1.0), self.games)


def pair_table(judgments: pd.DataFrame | Battles, *, weights: Mapping[str, float] | None = None,
               reweight: bool = False) -> PairTable:
    """Aggregate a canonical judgment table (or encoded battles) to per-pair sufficient statistics."""
    return _prepare(judgments, weights, reweight).table


@dataclass(frozen=True)
class _Prepared:
    """Pair table plus what the intervals need.

    ``categories`` are the distinct (pair, outcome, weight) battles with their counts:
    the bootstrap resamples them (outcomes kept to 1/1000 for soft verdicts) and the
    sandwich sums their per-battle scores.
    """

    table: PairTable
    played: np.ndarray           # battles per model
    pair_of_battle: np.ndarray
    score_lo: np.ndarray         # outcome for the lower-index model of each battle
    weight: np.ndarray | None    # per-battle weight (None = 1)


def _prepare(judgments, weights, reweight: bool = False) -> _Prepared:
    battles = as_battles(judgments)
    weight = battle_weights(judgments, weights, reweight=reweight)
    n = battles.n_models
    lo, hi, score_lo = _orient(battles.a, battles.b, battles.score_a)
    played = np.bincount(battles.a, minlength=n) + np.bincount(battles.b, minlength=n)
    pair_keys, pair_of_battle, _ = counted_unique(lo.astype(np.int64) * n + hi, n * n, return_inverse=True)
    w = np.ones(len(battles)) if weight is None else weight
    wins = np.bincount(pair_of_battle, w * score_lo, minlength=len(pair_keys))
    games = np.bincount(pair_of_battle, w, minlength=len(pair_keys))
    table = PairTable(battles.models, (pair_keys // n).astype(np.intp), (pair_keys % n).astype(np.intp), wins, games)
    return _Prepared(table, played, pair_of_battle.astype(np.intp), score_lo, weight)


def _categories(prepared: _Prepared, *, decimals: int | None):
    """Distinct (pair, outcome, weight) battles: ``(pair, outcome, weight, count)``."""
    outcome = prepared.score_lo if decimals is None else np.round(prepared.score_lo, decimals)
    outcome_code, outcome_values = pd.factorize(outcome, sort=True)  # hashing: a million outcomes, 3 values
    outcome_values = np.asarray(outcome_values, dtype=float)
    if prepared.weight is None:
        weight_values, weight_code = np.ones(1), np.zeros(len(outcome), dtype=np.intp)
    else:
        weight_code, weight_values = pd.factorize(prepared.weight)
        weight_values = np.asarray(weight_values, dtype=float)
    n_out, n_w = len(outcome_values), len(weight_values)
    key = (prepared.pair_of_battle.astype(np.int64) * n_out + outcome_code) * n_w + weight_code
    keys, count = counted_unique(key, len(prepared.table.i) * n_out * n_w)
    pair = (keys // (n_out * n_w)).astype(np.intp)
    return pair, outcome_values[(keys // n_w) % n_out], weight_values[keys % n_w], count


def prior_l2(prior: float | None, *, scale: float = 400.0, base: float = 10.0) -> float:
    """Ridge (natural units) of a Gaussian prior with standard deviation ``prior`` Elo points (0 if None).

    A prior :math:`R \\sim N(\\bar R, \\tau^2)` is the penalty :math:`\\tfrac12 \\theta^2 / \\tau_{nat}^2`
    with :math:`\\tau_{nat} = \\tau \\ln\\beta / \\sigma`.

    Raises
    ------
    ValueError
        If ``prior`` is not a positive finite number.
    """
    if prior is None:
        return 0.0
    if isinstance(prior, bool) or not (isinstance(prior, (int, float)) and math.isfinite(prior) and prior > 0):
        raise ValueError(f"prior must be a positive number of Elo points (the prior's standard deviation), got {prior!r}")
    tau = prior * math.log(base) / scale
    return 1.0 / (tau * tau)


def bradley_terry(
    judgments: pd.DataFrame | Battles,
    *,
    scale: float = 400.0,
    base: float = 10.0,
    anchor_model: str | None = None,
    anchor_rating: float = 1000.0,
    weights: Mapping[str, float] | None = None,
    l2: float = DEFAULT_L2,
    prior: float | None = None,
    reweight: bool = False,
    tol: float = 1e-9,
    max_iter: int = 200,
) -> pd.Series:
    """Bradley-Terry maximum-likelihood ratings on the Elo scale, ties as half wins.

    Maximises

    .. math:: \\ell(\\theta) = \\sum_{i<j} W_{ij} \\log \\sigma(\\theta_i - \\theta_j)
              + (N_{ij} - W_{ij}) \\log \\sigma(\\theta_j - \\theta_i)
              - \\tfrac{\\lambda}{2} \\lVert\\theta\\rVert^2

    and reports :math:`R = c + \\theta\\,\\sigma/\\ln\\beta`, where :math:`W_{ij}` is i's
    score against j (wins + ties/2), :math:`N_{ij}` their number of battles and the
    constant :math:`c` sets the anchor.

    Parameters
    ----------
    judgments : canonical judgment table, or battles encoded once
        (:func:`peercore.ranking._battles.encode`).
    scale, base : the Elo scale (400) and base (10).
    anchor_model : a model to pin at ``anchor_rating``; if None, the mean rating is
        ``anchor_rating``.
    anchor_rating : see ``anchor_model``; default 1000.
    weights : optional judge -> weight, each row counting weight / mean(weight).
    l2 : ridge penalty :math:`\\lambda` on the natural-scale ratings. The default 1e-6 is
        negligible with data but keeps the estimate finite when a model won (or lost)
        every battle: such a model then gets a very large (small) finite rating, and
        its bootstrap interval is correspondingly wide. Use 0 for the pure MLE, which
        exists only when the comparison graph is strongly connected.
    prior : standard deviation, in Elo points, of a weak Gaussian prior on the ratings
        around the anchor (adds :func:`prior_l2` to ``l2``). With ``prior=200`` five
        verdicts give ratings within 1000 +- 200; with thousands of battles it moves
        nothing. Default None (no prior, Chatbot Arena's estimate).
    reweight : weigh each battle by :math:`1/\\max(n_{pair}, 50)` (LMArena; see
        :func:`peercore.ranking._battles.pair_reweighting`).
    tol : stop when no rating moves by more than ``tol`` natural units (``tol * scale
        / ln(base)`` Elo points).
    max_iter : Newton iteration cap.

    Returns
    -------
    Series indexed by model (sorted), named ``rating``. Empty input gives an empty Series.

    Raises
    ------
    ValueError
        If ``anchor_model`` is not a contestant, or a parameter is out of range.
    ConvergenceError
        If Newton's method hits ``max_iter`` (only plausible with ``l2=0`` and
        separable data).
    """
    _check_scale(scale, base, l2)
    table = pair_table(judgments, weights=weights, reweight=reweight)
    theta = _fit(table, l2=l2 + prior_l2(prior, scale=scale, base=base), tol=tol, max_iter=max_iter)
    ratings = _to_elo(theta[None, :], table.models, scale=scale, base=base,
                      anchor_model=anchor_model, anchor_rating=anchor_rating)[0]
    return as_series(ratings, table.models, "rating")


def bradley_terry_intervals(
    judgments: pd.DataFrame | Battles,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    intervals: str = "bootstrap",
    scale: float = 400.0,
    base: float = 10.0,
    anchor_model: str | None = None,
    anchor_rating: float = 1000.0,
    weights: Mapping[str, float] | None = None,
    l2: float = DEFAULT_L2,
    prior: float | None = None,
    reweight: bool = False,
    tol: float = 1e-9,
    max_iter: int = 200,
    workers: int | None = None,
    progress=None,
) -> pd.DataFrame:
    """Bradley-Terry ratings with bootstrap and sandwich intervals, Arena ranks and rank spread.

    Bootstrap: each round resamples the battles with replacement (as multinomial counts
    of the distinct (pair, outcome, weight) battles, as Chatbot Arena does), refits, and
    re-anchors; the interval is the central ``level`` percentile range of the rounds.
    Sandwich: rating :math:`\\pm z_{(1+level)/2}` robust standard errors
    (:func:`peercore.ranking.core.sandwich`, arena-rank's ``ci_method="sandwich"``),
    computed whatever ``intervals`` is up to :data:`peercore.ranking.core.DENSE_MAX`
    models; with more, only when ``intervals="sandwich"`` asks for them (they need a
    models x models covariance matrix), NaN otherwise (:func:`sandwich_left_out` says
    so). ``rank`` is the Arena rule and ``rank_worst`` the worst rank the same intervals
    allow (:func:`rank_spread`).

    Parameters
    ----------
    rounds : number of bootstrap rounds; 0 gives NaN bootstrap intervals.
    seed : seed for ``numpy.random.SeedSequence``; results are identical for a given
        seed whatever ``workers`` is.
    level : interval coverage, in (0, 1).
    intervals : which interval fills ``ci_low``/``ci_high`` and sets the ranks:
        ``"bootstrap"`` (default; with ``rounds=0`` the ranks come from the point
        estimate alone) or ``"sandwich"``.
    workers : threads used to draw the resamples (default: all CPUs).
    progress : called with the share of bootstrap rounds done (0..1) after each chunk of
        rounds; it changes nothing in the result.
    Other parameters as in :func:`bradley_terry`.

    Returns
    -------
    DataFrame indexed by model, sorted by rating (best first), with columns
    ``rating, ci_low, ci_high, rank, battles, sandwich_low, sandwich_high, rank_worst``.
    """
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if intervals not in INTERVALS:
        raise ValueError(f"intervals must be one of {INTERVALS}, got {intervals!r}")
    _check_scale(scale, base, l2)
    prepared = _prepare(judgments, weights, reweight)
    table = prepared.table
    penalty = l2 + prior_l2(prior, scale=scale, base=base)
    design = table.design()
    solution = core.fit(design, l2=penalty, tol=tol, max_iter=max_iter)
    theta = solution.theta
    to_elo = dict(scale=scale, base=base, anchor_model=anchor_model, anchor_rating=anchor_rating)
    rating = _to_elo(theta[None, :], table.models, **to_elo)[0]
    alpha = (1.0 - level) / 2.0
    low = high = np.full(len(rating), np.nan)
    if rounds and intervals == "bootstrap" and len(table.i):
        samples = _bootstrap(prepared, solution, rounds=rounds, seed=seed, tol=max(tol, BOOTSTRAP_TOL),
                             max_iter=max_iter, workers=workers, progress=progress)
        boot = _to_elo(samples, table.models, **to_elo)
        low, high = np.quantile(boot, [alpha, 1.0 - alpha], axis=0)
    sd = np.full(len(rating), np.nan) if sandwich_left_out(len(rating), intervals) else \
        _sandwich_sd(prepared, penalty, theta, table.models, scale=scale, base=base, anchor_model=anchor_model)
    z = float(ndtri(1.0 - alpha))
    s_low, s_high = rating - z * sd, rating + z * sd
    if intervals == "sandwich":
        low, high = s_low, s_high
    frame = pd.DataFrame(
        {"rating": rating, "ci_low": low, "ci_high": high, "battles": prepared.played,
         "sandwich_low": s_low, "sandwich_high": s_high},
        index=pd.Index(table.models, name="model"),
    )
    spread = rank_spread(frame["ci_low"].fillna(frame["rating"]), frame["ci_high"].fillna(frame["rating"]))
    frame["rank"], frame["rank_worst"] = spread["rank"], spread["rank_worst"]
    frame = frame[["rating", "ci_low", "ci_high", "rank", "battles", "sandwich_low", "sandwich_high", "rank_worst"]]
    return frame.sort_values(["rating"], ascending=False, kind="stable")


def sandwich_left_out(n_models: int, intervals: str = "bootstrap") -> str | None:
    """Why :func:`bradley_terry_intervals` leaves the sandwich columns empty, or None when it fills them.

    Above :data:`peercore.ranking.core.DENSE_MAX` models the sandwich needs a dense
    models x models covariance (8 bytes x n^2, several times over): it is computed only
    when asked for (``intervals="sandwich"``).
    """
    if n_models <= core.DENSE_MAX or intervals == "sandwich":
        return None
    gigabytes = 8 * n_models ** 2 / 1e9
    return (f"sandwich intervals were not computed for {n_models:,} models: above {core.DENSE_MAX:,} they need a "
            f"{n_models:,} x {n_models:,} covariance matrix ({gigabytes:.1f} GB, several times over); ask for them "
            "with --intervals sandwich (Intervals: sandwich on the Leaderboard)")


def arena_ranks(ci_low: pd.Series, ci_high: pd.Series) -> pd.Series:
    """Chatbot Arena rank: 1 + the number of models whose lower bound exceeds this upper bound.

    Parameters
    ----------
    ci_low, ci_high : model-indexed interval bounds (same index).

    Returns
    -------
    Series of ints named ``rank``. Models whose intervals overlap share a rank, and
    ranks can skip numbers (1, 1, 3, ...).
    """
    low = np.asarray(ci_low, dtype=float)
    high = np.asarray(ci_high, dtype=float)
    if low.shape != high.shape:
        raise ValueError(f"ci_low and ci_high differ in length ({low.shape} vs {high.shape})")
    return pd.Series(1 + _count_above(low, high), index=getattr(ci_low, "index", None), name="rank")


def rank_spread(ci_low: pd.Series, ci_high: pd.Series) -> pd.DataFrame:
    """Best and worst rank the intervals allow (LMArena's "rank spread").

    .. math:: \\mathrm{rank}_m = 1 + \\#\\{k : \\ell_k > u_m\\}, \\qquad
              \\mathrm{rank\\_worst}_m = n - \\#\\{k : u_k < \\ell_m\\}

    ``rank`` is :func:`arena_ranks` (the models surely better, plus one); ``rank_worst``
    counts down from the last place the models surely worse. Equal bounds (no interval)
    give ``rank == rank_worst`` for models with distinct scores.

    Returns
    -------
    DataFrame with the index of ``ci_low`` and int columns ``rank, rank_worst``.
    """
    low = np.asarray(ci_low, dtype=float)
    high = np.asarray(ci_high, dtype=float)
    rank = arena_ranks(ci_low, ci_high)
    worst = len(low) - _count_below(high, low)
    return pd.DataFrame({"rank": rank.to_numpy(), "rank_worst": worst}, index=getattr(ci_low, "index", None))


# ------------------------------------------------------------------------------ maths


def _count_above(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """For every bound b: #{k : values_k > b} (NaN compares false), by sorting: O(n log n), no n x n table."""
    ordered = np.sort(values[~np.isnan(values)])
    out = len(ordered) - np.searchsorted(ordered, bounds, side="right")
    return np.where(np.isnan(bounds), 0, out)


def _count_below(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """For every bound b: #{k : values_k < b} (NaN compares false)."""
    ordered = np.sort(values[~np.isnan(values)])
    out = np.searchsorted(ordered, bounds, side="left")
    return np.where(np.isnan(bounds), 0, out)


def _check_scale(scale: float, base: float, l2: float) -> None:
    if not (scale > 0 and base > 1):
        raise ValueError(f"need scale > 0 and base > 1, got scale={scale!r}, base={base!r}")
    if not (l2 >= 0 and math.isfinite(l2)):
        raise ValueError(f"l2 must be a finite number >= 0, got {l2!r}")


def _orient(a: np.ndarray, b: np.ndarray, score_a: np.ndarray):
    swap = a > b
    lo = np.where(swap, b, a)
    hi = np.where(swap, a, b)
    score_lo = np.where(swap, 1.0 - score_a, score_a)
    return lo, hi, score_lo


def _fit(table: PairTable, *, l2: float, tol: float, max_iter: int) -> np.ndarray:
    """Natural-scale ratings of a pair table (the one solver, :func:`peercore.ranking.core.fit`)."""
    if table.n_models == 0 or len(table.i) == 0:
        return np.zeros(table.n_models)
    return core.fit(table.design(), l2=l2, tol=tol, max_iter=max_iter).theta


def _to_elo(theta: np.ndarray, models, *, scale, base, anchor_model, anchor_rating) -> np.ndarray:
    ratings = theta * (scale / math.log(base))
    if anchor_model is None:
        return ratings - ratings.mean(axis=1, keepdims=True) + anchor_rating
    return ratings - ratings[:, [_anchor_index(models, anchor_model)]] + anchor_rating


def _anchor_index(models, anchor_model: str) -> int:
    try:
        return list(models).index(anchor_model)
    except ValueError:
        raise ValueError(f"anchor_model {anchor_model!r} is not a contestant; models are {list(models)}") from None


def _sandwich_sd(prepared: _Prepared, penalty: float, theta: np.ndarray, models, *, scale, base,
                 anchor_model) -> np.ndarray:
    """Robust standard errors of the Elo-scale ratings (mean or model anchor)."""
    n = len(models)
    if n == 0 or len(prepared.table.i) == 0:
        return np.full(n, np.nan)
    pair, outcome, weight, count = _categories(prepared, decimals=None)
    table = prepared.table
    design = core.Design(n, table.i[pair], table.j[pair], outcome, weight * count, count=count)
    solution = core.Solution(theta, np.zeros(0), 0, 0.0, np.full(n, penalty), np.zeros(0))
    cov = core.sandwich(design, solution)
    variance = np.diag(cov).copy()
    if anchor_model is not None:  # Var(theta_m - theta_k)
        k = _anchor_index(models, anchor_model)
        variance += cov[k, k] - 2.0 * cov[:, k]
    return np.sqrt(np.clip(variance, 0.0, None)) * (scale / math.log(base))


def _bootstrap(prepared: _Prepared, solution: core.Solution, *, rounds, seed, tol, max_iter, workers,
               progress=None) -> np.ndarray:
    """Natural-scale ratings for each bootstrap round, shape (rounds, n).

    Each thread draws a chunk of rounds and solves it at once, so drawing (numpy
    releases the GIL) and solving (BLAS) keep every core busy. A chunk is drawn and
    solved in parts of :func:`peercore.ranking._battles.rounds_at_once` rounds (the
    same draws: one stream per chunk), so memory stays bounded when there are a
    million distinct pairs.
    """
    table = prepared.table
    pair, outcome, weight, count = _categories(prepared, decimals=3)
    n_pairs = len(table.i)
    rows = np.arange(len(pair))
    # (pairs x categories) maps from a round's category counts to its pair statistics.
    to_wins = scipy.sparse.csr_matrix((weight * outcome, (pair, rows)), shape=(n_pairs, len(pair)))
    to_games = scipy.sparse.csr_matrix((weight, (pair, rows)), shape=(n_pairs, len(pair)))
    design = table.design()
    out = np.empty((rounds, table.n_models))
    done = [0]
    chunks = resample_chunks(rounds, seed=seed)
    # per round: its draws (int and float), wins, games and the Newton iteration's working arrays (seven per pair)
    at_once = rounds_at_once(2 * len(pair) + 9 * n_pairs, max((stop - start for start, stop, _ in chunks), default=1))

    def work(start, stop, chunk_seed):
        rng = np.random.default_rng(chunk_seed)
        for first in range(start, stop, at_once):
            last = min(first + at_once, stop)
            draws = np.ascontiguousarray(draw_counts(count, last - first, rng).T, dtype=float)
            wins, games = to_wins @ draws, to_games @ draws
            del draws
            out[first:last] = core.fit_rounds(design, wins, games, solution, tol=tol, max_iter=max_iter,
                                              columns=True).T
            if progress is not None:
                done[0] += last - first  # (a lost update between threads only delays the next report)
                progress(min(done[0] / rounds, 1.0))

    run_chunks(work, chunks, workers=workers)
    return out
