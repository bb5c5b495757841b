"""Leaderboard robustness audit: the fewest votes whose removal swaps two adjacent models.

Huang, Shen, Wei & Broderick, "Dropping Just a Handful of Preferences Can Change Top
Large Language Model Rankings" (ICLR 2026, arXiv 2508.11847; reference code
``JennyHuang19/IsRankingRobust``, ``RankAMIP/logistic.py``). For each pair of models
adjacent by point estimate, the audit finds votes whose removal makes the lower model
rank above the higher one, and reports how many: ``share`` = dropped / all votes (the
paper's measure), ``pair_share`` = dropped / the two models' battles.

Bradley-Terry (:func:`audit_bradley_terry`): the paper's approximate maximum influence
perturbation (AMIP, Broderick, Giordano & Meager 2020; the paper's section 3). The fit
maximises :math:`\\ell(\\theta) = \\sum_r w_r \\ell_r(\\theta) - \\tfrac{\\lambda}{2}\\lVert\\theta
\\rVert^2` with :math:`\\ell_r = y_r \\log\\sigma(\\eta_r) + (1 - y_r)\\log\\sigma(-\\eta_r)`,
:math:`\\eta_r = \\theta_{i_r} - \\theta_{j_r}` (:mod:`peercore.ranking.core`). Giving
battle r the weight :math:`(1 - \\epsilon) w_r` moves the estimate by
:math:`\\partial\\hat\\theta / \\partial\\epsilon = -H^{-1} g_r` to first order, with
:math:`H` the information (negative Hessian) and
:math:`g_r = w_r (y_r - p_r)(e_{i_r} - e_{j_r})`. For the gap
:math:`d = \\theta_h - \\theta_l` of a pair, one solve :math:`u = H^{-1}(e_h - e_l)` gives every
battle's influence

.. math:: \\Delta_r = -\\,w_r (y_r - p_r)\\,(u_{i_r} - u_{j_r})

(the paper's eq. for the AMIP of a contrast; its code's ``get_influence_IF``). Battles
with :math:`\\Delta_r < 0` are removed in increasing order of :math:`\\Delta_r`, the model
refitted exactly after each candidate number removed, until the pair swaps (the refit
gives :math:`d < 0`) or the cap is reached. The count is an upper bound on the fewest
votes that swap the pair (finding the fewest exactly is a subset search); ``verified``
says the exact refit swapped.

Aggregation, which makes it fast: a battle enters the fit only through its
*category* -- (unordered pair, outcome for the lower-index model, per-battle weight) --
and every battle of a category has the same influence. The removal order is therefore a
sequence of categories, and removing the first k battles in that order subtracts known
counts from a few categories: with :math:`r_c` battles of category c removed, the pair
table becomes

.. math:: N_p' = \\sum_{c \\in p} (n_c - r_c)\\, w_c, \\qquad
          W_p' = \\sum_{c \\in p} (n_c - r_c)\\, w_c\\, y_c

(battles and points of the lower-index model of pair p), and with LMArena's reweighting the
pair weight :math:`1/\\max(n_p', 50)` is recomputed from the remaining battle counts and
scaled to mean 1 over the remaining battles, as :func:`peercore.ranking._battles.pair_reweighting`
does on the reduced battle set. So a refit costs the same whatever the number of battles
(a Newton solve over the pairs), and many candidate counts are refitted at once
(:func:`peercore.ranking.core.fit_rounds`, the bootstrap's chord-Newton): counts 1, 2, 4,
... up to the cap, then the bracket of the first swap is narrowed by evaluating 16 counts
inside it at a time; the count found is verified by a full Newton fit
(:func:`peercore.ranking.core.fit`, tolerance 1e-9).

Win rates (:func:`audit_win_rate`): the exact minimum. PRD's win rate
:math:`\\mathrm{wr}_m = W_m / N_m` (weighted points over battles, :func:`peercore.ranking.winrate.win_rates`)
depends on a removal only through how many of the higher model's other battles, the
lower model's other battles and their shared battles are removed, and the points
removed with them; for given counts the best battles to remove are the higher model's
best results, the lower model's worst results, and the shared battles in an order that
only depends on the ratio of the remaining battle counts. Enumerating the counts (with
each side's best prefix) gives the exact minimum.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

from peercore.ranking import core
from peercore.ranking.bradley_terry import DEFAULT_L2, prior_l2

__all__ = ["AuditPair", "audit_bradley_terry", "audit_win_rate", "vote_influence", "adjacent_pairs", "REWEIGHT_FLOOR"]

REWEIGHT_FLOOR = 50.0  # LMArena's min_pair_count (peercore.ranking._battles.pair_reweighting's default)
_REFIT_TOL = 1e-6       # chord-Newton refits of candidate counts (natural units)
_VERIFY_TOL = 1e-9      # the final exact refit
_PROBES = 16            # counts evaluated at once inside a bracket
_PARTIAL = 1 << 16      # categories sorted first when there are more (a partial sort)


@dataclass(frozen=True)
class AuditPair:
    """The audit of one pair of models (indices into the models).

    Attributes
    ----------
    higher, lower : the model ranked higher and lower by the point estimate.
    drop : votes whose removal swaps them (an upper bound on the fewest for Bradley-Terry,
        the exact minimum for win rates); None when no removal within the cap swaps them.
    share : ``drop`` / all votes (the paper's measure); None with ``drop``.
    pair_share : ``drop`` / the battles between the two models (NaN when they never met);
        None with ``drop``.
    verified : True when refitting without ``rows`` ranks ``lower`` strictly above ``higher``.
    rows : indices into the battle arrays of the votes to remove (empty when not found).
    gap : rating of ``higher`` minus rating of ``lower`` on the full data, in rating
        points (``scale`` / ``ln(base)`` times natural units; win-rate points for win rates).
    gap_after : the same after removing ``rows`` (negative when verified); NaN when not found.
    amip_drop : Bradley-Terry only: how many votes the linear (AMIP) approximation says
        suffice, in the same order; None when even all helpful votes do not suffice by it.
    """

    higher: int
    lower: int
    drop: int | None
    share: float | None
    pair_share: float | None
    verified: bool
    rows: np.ndarray
    gap: float
    gap_after: float
    amip_drop: int | None = None


def adjacent_pairs(scores: np.ndarray) -> list[tuple[int, int]]:
    """Pairs of models adjacent by score, best first: ``[(rank 1, rank 2), (rank 2, rank 3), ...]``.

    Equal scores keep the lower index first (a stable sort), as a leaderboard sorted by
    rating does.
    """
    order = np.argsort(-np.asarray(scores, dtype=float), kind="stable")
    return [(int(order[k]), int(order[k + 1])) for k in range(len(order) - 1)]


# ----------------------------------------------------------------------- Bradley-Terry


@dataclass(frozen=True)
class _Categories:
    """Battles grouped by (pair, outcome of the lower-index model, weight)."""

    lo: np.ndarray          # (P,) pair -> lower model index
    hi: np.ndarray          # (P,) pair -> higher model index
    pair: np.ndarray        # (C,) category -> pair
    y: np.ndarray           # (C,) outcome for lo
    w: np.ndarray           # (C,) per-battle weight
    count: np.ndarray       # (C,) battles
    members: np.ndarray     # battle indices grouped by category, in row order within each
    start: np.ndarray       # (C + 1,) offsets into members
    games: np.ndarray       # (P,) sum of weights per pair, no removal
    wins: np.ndarray        # (P,) sum of weight x outcome of lo per pair
    battles: np.ndarray     # (P,) battles per pair


def _categorise(a, b, score_a, weight, n_models) -> _Categories:
    lo, hi = np.minimum(a, b).astype(np.int64), np.maximum(a, b).astype(np.int64)
    y = np.where(a < b, score_a, 1.0 - score_a)
    pair_keys, pair_of = np.unique(lo * n_models + hi, return_inverse=True)
    y_values, y_code = np.unique(y, return_inverse=True)
    w_values, w_code = np.unique(weight, return_inverse=True)
    key = (pair_of.astype(np.int64) * len(y_values) + y_code) * len(w_values) + w_code
    keys, category, count = np.unique(key, return_inverse=True, return_counts=True)
    pair = (keys // (len(y_values) * len(w_values))).astype(np.intp)
    cy = y_values[(keys // len(w_values)) % len(y_values)]
    cw = w_values[keys % len(w_values)]
    members = np.argsort(category, kind="stable")
    start = np.concatenate([[0], np.cumsum(count)])
    n_pairs = len(pair_keys)
    return _Categories((pair_keys // n_models).astype(np.intp), (pair_keys % n_models).astype(np.intp), pair, cy, cw,
                       count.astype(np.int64), members, start, np.bincount(pair, count * cw, minlength=n_pairs),
                       np.bincount(pair, count * cw * cy, minlength=n_pairs),
                       np.bincount(pair, count, minlength=n_pairs).astype(float))


def _pair_tables(cats: _Categories, columns: np.ndarray, taken: np.ndarray,
                 reweight: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(wins, games)`` per pair, shape (R, P), after removing ``taken[r, k]`` battles of category ``columns[k]``.

    Only the categories a removal touches are read (a prefix of the removal order), so a
    refit costs the same whatever the number of categories (soft outcomes make one per vote).
    """
    rounds, n_pairs = taken.shape[0], len(cats.lo)
    index = (np.arange(rounds)[:, None] * n_pairs + cats.pair[columns][None, :]).ravel()

    def minus(base, per_battle):
        removed = np.bincount(index, (taken * per_battle[None, :]).ravel(), minlength=rounds * n_pairs)
        return base[None, :] - removed.reshape(rounds, n_pairs)

    w = cats.w[columns]
    games, wins = minus(cats.games, w), minus(cats.wins, w * cats.y[columns])
    if reweight:
        n = minus(cats.battles, np.ones(len(columns)))
        pair_weight = 1.0 / np.maximum(n, REWEIGHT_FLOOR)
        total = n.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = np.where(total > 0, total / (n * pair_weight).sum(axis=1, keepdims=True), 1.0)
        games, wins = games * pair_weight * scale, wins * pair_weight * scale
    return np.clip(wins, 0.0, None), np.clip(games, 0.0, None)


def _design(cats: _Categories, n_models: int, wins: np.ndarray, games: np.ndarray) -> core.Design:
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.where(games > 0, wins / np.where(games > 0, games, 1.0), 0.5)
    return core.Design(n_models, cats.lo, cats.hi, np.clip(y, 0.0, 1.0), games)


def audit_bradley_terry(a, b, score_a, *, n_models: int, weights=None, prior: float | None = None,
                        reweight: bool = False, anchor: int | None = None, l2: float = DEFAULT_L2,
                        cap: int | None = None, pairs: Sequence[tuple[int, int]] | None = None,
                        scale: float = 400.0, base: float = 10.0) -> list[AuditPair]:
    """For each pair of models adjacent in the Bradley-Terry ranking, votes whose removal swaps them.

    See the module docstring for the method (AMIP order, aggregated exact refits). The
    fit is :func:`peercore.ranking.bradley_terry.bradley_terry`'s with the same options:
    ties (0.5) and soft outcomes as fractional wins, per-battle ``weights``, ``prior``
    (added to ``l2``), ``reweight``; ``refit`` means that fit on the battles left.

    Parameters
    ----------
    a, b : (N,) model indices of each battle's first and second contestant.
    score_a : (N,) outcome for ``a``: 1 won, 0.5 tie, 0 lost, or a probability.
    n_models : number of models (indices lie in ``[0, n_models)``).
    weights : (N,) per-battle weights (e.g. Peer Rank judge weights mapped to battles,
        :func:`peercore.ranking._battles.battle_weights` without ``reweight``), or None.
        They are taken as given: removing votes does not renormalise them.
    prior : standard deviation of the rating prior in rating points
        (:func:`peercore.ranking.bradley_terry.prior_l2`), or None.
    reweight : LMArena's pair reweighting, recomputed on the battles left at every refit.
    anchor : the anchored model's index, or None (mean anchor). Anchoring moves every
        rating by one constant, so it changes no order and no result; it is accepted so
        that a leaderboard's options can be passed unchanged, and checked.
    l2 : ridge on the natural-scale ratings (as ``bradley_terry``).
    cap : most votes removed for one pair; default: every vote whose influence helps.
    pairs : ``(i, j)`` model pairs to audit instead of the adjacent ones; each is reported
        with the one rated higher as ``higher``.
    scale, base : the rating scale of ``gap`` (400, 10: Elo points).

    Returns
    -------
    list of :class:`AuditPair`, in the order of ``pairs`` (default: ranks 1-2, 2-3, ...).

    Raises
    ------
    ValueError
        On arrays of different lengths, a model index outside ``[0, n_models)``, a battle
        of a model against itself, an outcome outside [0, 1], a negative weight, a bad
        ``cap``, ``prior`` or ``anchor`` (the value is quoted).
    ConvergenceError
        If a refit does not converge.
    """
    a, b, score, weight = _battles(a, b, score_a, weights, n_models)
    if anchor is not None and not (isinstance(anchor, (int, np.integer)) and 0 <= anchor < n_models):
        raise ValueError(f"anchor must be a model index in [0, {n_models}), got {anchor!r}")
    cap = _cap(cap, len(a))
    penalty = _penalty(l2, prior, scale, base)
    to_points = scale / math.log(base)
    if len(a) == 0:
        return []
    fitted = _fit(a, b, score, weight, n_models, penalty, reweight)
    cats, design, solution, theta = fitted.cats, fitted.design, fitted.solution, fitted.solution.theta
    chosen = adjacent_pairs(theta) if pairs is None else _oriented(pairs, theta, n_models)
    if not chosen:
        return []
    change, u = _influence(fitted, chosen)
    lo_of, hi_of = cats.lo[cats.pair], cats.hi[cats.pair]
    battles_between = _battles_between(cats, n_models)
    out = []
    # The refits solve many small (n x n) systems: BLAS threads cost more in synchronisation
    # than they gain there (on 2 loaded cores: 10 ms vs 0.2 ms per 100 x 100 solve).
    with threadpool_limits(limits=1, user_api="blas"):
        for k, (hi_model, lo_model) in enumerate(chosen):
            gap = float(theta[hi_model] - theta[lo_model])
            influence = change * (u[lo_of, k] - u[hi_of, k])  # one column at a time: C may be every vote
            found = _search(cats, design, solution, influence, hi_model, lo_model, gap, cap, reweight,
                            penalty)
            between = battles_between.get((min(hi_model, lo_model), max(hi_model, lo_model)), 0)
            out.append(_report(hi_model, lo_model, found, len(a), between, gap, to_points))
    return out


@dataclass(frozen=True)
class _Fitted:
    cats: _Categories
    design: core.Design
    solution: core.Solution
    games: np.ndarray  # (P,) the fit's pair weights (battles x weights)
    reweight: bool


def _penalty(l2, prior, scale, base) -> float:
    penalty = l2 + prior_l2(prior, scale=scale, base=base)
    if not (isinstance(l2, (int, float, np.floating)) and math.isfinite(penalty) and l2 >= 0):
        raise ValueError(f"l2 must be a finite number >= 0, got {l2!r}")
    return penalty


def _fit(a, b, score, weight, n_models, penalty, reweight) -> _Fitted:
    cats = _categorise(a, b, score, weight, n_models)
    wins, games = _pair_tables(cats, np.zeros(0, dtype=np.intp), np.zeros((1, 0), dtype=np.int64), reweight)
    design = _design(cats, n_models, wins[0], games[0])
    return _Fitted(cats, design, core.fit(design, l2=penalty, tol=_VERIFY_TOL), games[0], reweight)


def _influence(fitted: _Fitted, chosen: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(change, u)``: pair k's gap moves by ``change[c] * (u[lo_c, k] - u[hi_c, k])`` to first order when one
    battle of category c is removed.

    One factorisation of :math:`H`, one solve per pair: :math:`u = H^{-1}(e_h - e_l)`; the
    gauge (a multiple of :math:`11^\\top/n`) leaves the solve of a contrast unchanged and
    keeps :math:`H` well conditioned. A battle's weight in the fit is its own weight times
    its pair's factor :math:`f_p`. With reweighting, removing one of the :math:`n_p > 50`
    battles of pair p also raises :math:`f_p` by :math:`f_p / (n_p - 1)` for the others,
    so the first-order change is

    .. math:: \\Delta_r = \\frac{f_p}{n_p - 1}\\big(R_p - n_p\\, w_r (y_r - p_r)\\big)(u_{i_r} - u_{j_r}),
              \\qquad R_p = \\sum_{s \\in p} w_s (y_s - p_s)

    (the common rescaling to mean 1 only matters through the ridge and is left out; the
    refits include everything).
    """
    cats, theta, n = fitted.cats, fitted.solution.theta, fitted.design.n
    h = core.information(fitted.design, fitted.solution)
    h[:n, :n] += max(float(np.mean(np.diag(h))), 1.0) / n
    contrast = np.zeros((n, len(chosen)))
    for k, (hi_model, lo_model) in enumerate(chosen):
        contrast[hi_model, k], contrast[lo_model, k] = 1.0, -1.0
    u = scipy.linalg.cho_solve(scipy.linalg.cho_factor(h), contrast)  # (n, pairs)
    factor = fitted.games / np.where(cats.games > 0, cats.games, 1.0)
    p_lo = 1.0 / (1.0 + np.exp(-(theta[cats.lo] - theta[cats.hi])))
    own = cats.w * (cats.y - p_lo[cats.pair])               # w_r (y_r - p_r), per category
    change = -factor[cats.pair] * own                        # without reweighting
    if fitted.reweight:
        n_p = np.bincount(cats.pair, cats.count, minlength=len(cats.lo)).astype(float)
        total = np.bincount(cats.pair, cats.count * own, minlength=len(cats.lo))  # R_p
        moves = n_p[cats.pair] > REWEIGHT_FLOOR
        scaled = factor[cats.pair] / np.maximum(n_p[cats.pair] - 1.0, 1.0)
        change = np.where(moves, scaled * (total[cats.pair] - n_p[cats.pair] * own), change)
    return change, u


def vote_influence(a, b, score_a, *, n_models: int, higher: int, lower: int, weights=None,
                   prior: float | None = None, reweight: bool = False, l2: float = DEFAULT_L2,
                   scale: float = 400.0, base: float = 10.0) -> np.ndarray:
    """Each vote's influence (AMIP) on the Bradley-Terry gap between two models, in rating points.

    .. math:: \\Delta_r = -\\,w_r (y_r - p_r)\\,(u_{i_r} - u_{j_r}), \\qquad u = H^{-1}(e_{higher} - e_{lower})

    the first-order change of :math:`\\theta_{higher} - \\theta_{lower}` when vote r is
    removed (Huang et al. 2026, section 3; Broderick et al. 2020). Negative values bring
    ``lower`` closer; :func:`audit_bradley_terry` removes votes in increasing order of it.
    Options as :func:`audit_bradley_terry`.

    Returns
    -------
    (N,) float array, one value per vote.
    """
    a, b, score, weight = _battles(a, b, score_a, weights, n_models)
    _oriented([(higher, lower)], np.zeros(n_models), n_models)  # checks the two indices
    if len(a) == 0:
        return np.zeros(0)
    fitted = _fit(a, b, score, weight, n_models, _penalty(l2, prior, scale, base), reweight)
    change, u = _influence(fitted, [(int(higher), int(lower))])
    cats = fitted.cats
    per_category = change * (u[cats.lo[cats.pair], 0] - u[cats.hi[cats.pair], 0])
    category = np.empty(len(a), dtype=np.int64)
    category[fitted.cats.members] = np.repeat(np.arange(len(fitted.cats.count)), fitted.cats.count)
    return per_category[category] * (scale / math.log(base))


def _search(cats, design, solution, influence, hi_model, lo_model, gap, cap, reweight, penalty):
    """Remove the most helpful categories first; the smallest count whose refit swaps the pair.

    With many categories (soft outcomes: one per vote) only the most helpful
    :data:`_PARTIAL` are sorted first (a partial sort); the whole order is sorted only if
    no swap is found among them.
    """
    helpful = np.flatnonzero(influence < 0)
    if len(helpful) > _PARTIAL:
        part = helpful[np.argpartition(influence[helpful], _PARTIAL)[:_PARTIAL]]
        order = part[np.argsort(influence[part], kind="stable")]
        found, amip = _search_order(cats, design, solution, influence, order, hi_model, lo_model, gap, cap, reweight,
                                    penalty)
        if found is not None:
            return found, amip
    order = helpful[np.argsort(influence[helpful], kind="stable")]
    return _search_order(cats, design, solution, influence, order, hi_model, lo_model, gap, cap, reweight, penalty)


def _search_order(cats, design, solution, influence, order, hi_model, lo_model, gap, cap, reweight, penalty):
    """:func:`_search` along one removal order (categories, most helpful first)."""
    counts = cats.count[order]
    ends = np.cumsum(counts)
    limit = int(min(cap, ends[-1])) if len(ends) else 0
    amip = _amip_count(influence[order], counts, gap)
    if limit == 0:
        return None, amip

    # The two models' battles per category of the order: a refit in which either has none
    # left does not rank it at all (it would sit at the prior's centre), so it is no swap.
    touches = (cats.lo[cats.pair[order]] == hi_model) | (cats.hi[cats.pair[order]] == hi_model), \
        (cats.lo[cats.pair[order]] == lo_model) | (cats.hi[cats.pair[order]] == lo_model)
    played = [float(np.sum(cats.battles[(cats.lo == m) | (cats.hi == m)])) for m in (hi_model, lo_model)]

    def removal(sizes):
        """``(columns, taken)``: the categories a removal of each size touches and how many battles of each."""
        sizes = np.asarray(sizes, dtype=np.int64)
        m = int(np.searchsorted(ends, sizes.max(), side="left")) + 1
        taken = np.clip(sizes[:, None] - (ends[:m] - counts[:m])[None, :], 0, counts[None, :m])
        return order[:m], taken

    def left_unranked(taken) -> np.ndarray:
        m = taken.shape[1]
        return (taken @ touches[0][:m] >= played[0]) | (taken @ touches[1][:m] >= played[1])

    def gaps(sizes):
        columns, taken = removal(sizes)
        wins, games = _pair_tables(cats, columns, taken, reweight)
        theta = core.fit_rounds(design, wins, games, solution, tol=_REFIT_TOL, max_iter=200)
        return np.where(left_unranked(taken), np.inf, theta[:, hi_model] - theta[:, lo_model])

    # Bracket the first swap: counts around the AMIP prediction first (it is usually close),
    # then doubling; small removals keep the chord-Newton refits to a few iterations.
    low, high = 0, None
    for probes in _ladder(amip, limit):
        probes = probes[probes > low]
        if len(probes) == 0:
            continue
        d = gaps(probes)
        swapped = np.flatnonzero(d < 0)
        if len(swapped):
            high = int(probes[swapped[0]])
            low = int(probes[swapped[0] - 1]) if swapped[0] > 0 else low
            break
        low = int(probes[-1])
    if high is None:
        return None, amip
    while high - low > 1:
        probes = np.unique(np.linspace(low, high, _PROBES + 2)[1:-1].round().astype(np.int64))
        probes = probes[(probes > low) & (probes < high)]
        d = gaps(probes)
        swapped = np.flatnonzero(d < 0)
        if len(swapped):
            high, low = int(probes[swapped[0]]), (int(probes[swapped[0] - 1]) if swapped[0] > 0 else low)
        else:
            low = int(probes[-1])
    # Verify with a full Newton fit; near the boundary the chord refit's tolerance can err:
    # then step up until an exact refit swaps.
    step = 1
    while high <= limit:
        columns, taken = removal([high])
        if not left_unranked(taken)[0]:
            verified_gap = _exact_gap(cats, design, solution, columns, taken, reweight, penalty, hi_model, lo_model)
            if verified_gap < 0:
                return (high, _rows(cats, columns, taken[0]), verified_gap), amip
        high, step = high + step, step * 2
    return None, amip


def _ladder(amip: int | None, limit: int):
    """Batches of candidate counts, increasing: around the AMIP prediction, then doubling up to ``limit``."""
    start = 1
    if amip is not None and amip <= limit:
        around = np.unique(np.clip(np.round(amip * np.array([0.5, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.25, 1.5, 2.0])),
                                   1, limit).astype(np.int64))
        yield around
        start = int(around[-1]) * 2
    while start <= limit:
        batch = np.minimum(start * 2 ** np.arange(6), limit).astype(np.int64)
        yield np.unique(batch)
        if batch[-1] >= limit:
            return
        start = int(batch[-1]) * 2
    yield np.array([limit], dtype=np.int64)


def _exact_gap(cats, design, solution, columns, taken, reweight, penalty, hi_model, lo_model) -> float:
    wins, games = _pair_tables(cats, columns, taken, reweight)
    refit = core.fit(_design(cats, design.n, wins[0], games[0]), l2=penalty, tol=_VERIFY_TOL, start=solution)
    return float(refit.theta[hi_model] - refit.theta[lo_model])


def _amip_count(influence_sorted, counts, gap) -> int | None:
    """Fewest battles, in the given order, whose summed influence exceeds the gap (linear prediction)."""
    if gap < 0:
        return 0
    total = np.cumsum(influence_sorted * counts)
    reached = np.flatnonzero(gap + total < 0)
    if len(reached) == 0:
        return None
    c = int(reached[0])
    before = gap + (total[c - 1] if c else 0.0)
    needed = int(math.floor(before / -influence_sorted[c])) + 1
    return int(counts[:c].sum()) + min(needed, int(counts[c]))


def _rows(cats: _Categories, categories: np.ndarray, taken: np.ndarray) -> np.ndarray:
    parts = [cats.members[cats.start[c]:cats.start[c] + t] for c, t in zip(categories, taken) if t > 0]
    return np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


def _battles_between(cats: _Categories, n_models: int) -> dict[tuple[int, int], int]:
    return {(int(i), int(j)): int(c) for i, j, c in zip(cats.lo, cats.hi, cats.battles)}


# --------------------------------------------------------------------------- win rate


def audit_win_rate(a, b, score_a, *, n_models: int, weights=None, cap: int | None = None,
                   pairs: Sequence[tuple[int, int]] | None = None) -> list[AuditPair]:
    """For each pair adjacent by win rate, the exact fewest votes whose removal swaps them.

    The win rate is PRD's (eq. 1, :func:`peercore.ranking.winrate.win_rates`):
    :math:`\\mathrm{wr}_m = W_m / N_m`, :math:`W_m` the (weighted) points of m (ties half),
    :math:`N_m` its battles (unweighted). For a pair (h, l) with
    :math:`\\mathrm{wr}_h \\ge \\mathrm{wr}_l`, removing :math:`m_1` of h's battles against
    others, :math:`m_2` of l's against others and :math:`m_3` of theirs against each other
    gives

    .. math:: f = \\frac{W_l - A_l}{N_l - m_2 - m_3} - \\frac{W_h - A_h}{N_h - m_1 - m_3}

    with :math:`A` the points removed. For fixed counts f is linear in the removed items,
    so the best choice takes h's highest-scoring other battles, l's lowest-scoring ones
    and the shared battles in decreasing :math:`x_h - \\rho x_l` (:math:`x` the points each
    side loses, :math:`\\rho` the ratio of the remaining battle counts). Every order of the
    shared battles that some :math:`\\rho > 0` gives is tried (one without weights: a
    shared battle h won always goes first); for each :math:`m_3` and :math:`m_1` the
    fewest :math:`m_2` is found by a binary search on l's best win rate so far. The
    minimum of :math:`m_1 + m_2 + m_3` with :math:`f > 0` (strictly: the lower model ends
    above) and both models keeping at least one battle is exact.

    Parameters
    ----------
    a, b, score_a, n_models, weights, cap, pairs : as :func:`audit_bradley_terry`
        (``weights`` multiply the points, as Peer Rank weights do in ``win_rates``).

    Returns
    -------
    list of :class:`AuditPair` (``verified`` is True whenever ``drop`` is given: the
    reported removal is checked by recomputing both win rates; ``gap`` in win-rate units).
    """
    a, b, score, weight = _battles(a, b, score_a, weights, n_models)
    cap = _cap(cap, len(a))
    if len(a) == 0:
        return []
    points_a, points_b = weight * score, weight * (1.0 - score)
    won = np.bincount(a, points_a, minlength=n_models) + np.bincount(b, points_b, minlength=n_models)
    played = np.bincount(a, minlength=n_models) + np.bincount(b, minlength=n_models)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(played > 0, won / np.maximum(played, 1), -np.inf)
    chosen = adjacent_pairs(rate) if pairs is None else _oriented(pairs, rate, n_models)
    chosen = [(h, l) for h, l in chosen if played[h] and played[l]]
    # Without weights every win rate is a ratio of exact binary numbers (points are halves),
    # so floating-point division orders them exactly and equal rates compare equal; with
    # weights, sums are rounded, and "above" must clear a margin so that a tie is no swap.
    margin = 0.0 if weights is None else 1e-9
    # Each model's battles (indices), so that a pair only looks at its two models' battles.
    involved = np.concatenate([a, b])
    by_model = np.concatenate([np.arange(len(a)), np.arange(len(a))])[np.argsort(involved, kind="stable")]
    offsets = np.concatenate([[0], np.cumsum(played)])
    out = []
    for h, l in chosen:
        sides = []
        for model, other in ((h, l), (l, h)):
            rows = by_model[offsets[model]:offsets[model + 1]]
            first = a[rows] == model
            opponent = np.where(first, b[rows], a[rows])
            points = np.where(first, points_a[rows], points_b[rows])
            sides.append((rows[opponent != other], points[opponent != other], rows[opponent == other],
                          points[opponent == other]))
        (h_only, x1, shared, xh), (l_only, x2, shared_l, xl_unsorted) = sides
        xl = xl_unsorted[np.argsort(shared_l, kind="stable")][np.argsort(np.argsort(shared, kind="stable"))]
        found = _win_rate_minimum(h_only, x1, l_only, x2, shared, xh, xl, float(won[h]), float(won[l]),
                                  int(played[h]), int(played[l]), cap, margin)
        gap = float(rate[h] - rate[l])
        if found is None:
            out.append(_report(h, l, (None, None), len(a), len(shared), gap, 1.0))
            continue
        removed = np.zeros(len(a), dtype=bool)
        removed[found] = True
        after = []
        for model, rows, points in ((h, h_only, x1), (l, l_only, x2)):
            gone = removed[rows].sum() + removed[shared].sum()
            lost = points[removed[rows]].sum() + (xh if model == h else xl)[removed[shared]].sum()
            after.append((won[model] - lost) / (played[model] - gone))
        difference = after[0] - after[1]
        out.append(_report(h, l, ((len(found), found, difference if difference < -margin else abs(difference)), None),
                           len(a), len(shared), gap, 1.0))
    return out


def _win_rate_minimum(h_only, x1, l_only, x2, shared, xh, xl, w_h, w_l, n_h, n_l, cap, margin):
    """Rows of a smallest removal that puts l strictly above h by win rate, or None within ``cap``.

    ``x1``/``x2``: the points h/l took in each of their other battles; ``xh``/``xl``: the
    points each took in their shared battles; ``w``/``n``: their points and battles.
    """
    o1 = h_only[np.argsort(-x1, kind="stable")]
    o2 = l_only[np.argsort(x2, kind="stable")]
    p1 = np.concatenate([[0.0], np.cumsum(np.sort(x1)[::-1])])
    p2 = np.concatenate([[0.0], np.cumsum(np.sort(x2))])
    best, best_choice = cap + 1, None
    for shared_order in _shared_orders(xh, xl):
        sh = np.concatenate([[0.0], np.cumsum(xh[shared_order])])
        sl = np.concatenate([[0.0], np.cumsum(xl[shared_order])])
        for m3 in range(0, len(shared) + 1):
            if m3 >= best or m3 >= n_h or m3 >= n_l:
                break
            room = best - m3 - 1  # at most this many more removals improve on best
            top1 = min(len(o1), n_h - m3 - 1, room)
            top2 = min(len(o2), n_l - m3 - 1, room)
            m1 = np.arange(top1 + 1)
            gh = (w_h - sh[m3] - p1[:top1 + 1]) / (n_h - m3 - m1)
            m2 = np.arange(top2 + 1)
            best_l = np.maximum.accumulate((w_l - sl[m3] - p2[:top2 + 1]) / (n_l - m3 - m2))
            need = np.searchsorted(best_l, gh + margin, side="right")
            ok = need <= top2
            if not ok.any():
                continue
            total = np.where(ok, m1 + need, len(o1) + len(o2) + 1)
            at = int(np.argmin(total))
            if m3 + int(total[at]) < best:
                best = m3 + int(total[at])
                best_choice = (int(m1[at]), int(need[at]), m3, shared_order)
    if best_choice is None:
        return None
    m1, m2, m3, shared_order = best_choice
    return np.sort(np.concatenate([o1[:m1], o2[:m2], shared[shared_order[:m3]]])).astype(np.int64)


def _shared_orders(xh: np.ndarray, xl: np.ndarray) -> list[np.ndarray]:
    """Every order of the shared battles by decreasing ``xh - rho * xl`` for some rho > 0."""
    if len(xh) == 0:
        return [np.zeros(0, dtype=np.int64)]
    kinds = np.unique(np.column_stack([xh, xl]), axis=0)
    dh = kinds[:, None, 0] - kinds[None, :, 0]
    dl = kinds[:, None, 1] - kinds[None, :, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        crossing = dh / dl
    rhos = np.unique(crossing[np.isfinite(crossing) & (crossing > 0)])
    points = np.concatenate([[rhos[0] / 2] if len(rhos) else [1.0], (rhos[:-1] + rhos[1:]) / 2, rhos[-1:] * 2])
    orders, seen = [], set()
    for rho in points:
        order = np.lexsort((np.arange(len(xh)), -(xh - rho * xl)))
        key = order.tobytes()
        if key not in seen:
            seen.add(key)
            orders.append(order)
    return orders


# ------------------------------------------------------------------------------ shared


def _report(higher, lower, found, total, between, gap, to_points) -> AuditPair:
    result, amip = found
    if result is None:
        return AuditPair(higher, lower, None, None, None, False, np.zeros(0, dtype=np.int64), gap * to_points,
                         math.nan, amip)
    drop, rows, after = result
    return AuditPair(higher, lower, int(drop), drop / total, drop / between if between else math.nan, bool(after < 0),
                     np.asarray(rows, dtype=np.int64), gap * to_points, after * to_points, amip)


def _oriented(pairs, scores, n_models) -> list[tuple[int, int]]:
    out = []
    for pair in pairs:
        try:
            i, j = (int(v) for v in pair)
        except (TypeError, ValueError):
            raise ValueError(f"pairs must hold (i, j) model indices, got {pair!r}") from None
        if not (0 <= i < n_models and 0 <= j < n_models) or i == j:
            raise ValueError(f"pairs must hold two different model indices in [0, {n_models}), got {pair!r}")
        out.append((i, j) if scores[i] >= scores[j] else (j, i))
    return out


def _cap(cap, total: int) -> int:
    if cap is None:
        return total
    if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < 1:
        raise ValueError(f"cap must be an integer >= 1 (most votes removed for one pair), got {cap!r}")
    return int(cap)


def _battles(a, b, score_a, weights, n_models):
    if isinstance(n_models, bool) or not isinstance(n_models, (int, np.integer)) or n_models < 0:
        raise ValueError(f"n_models must be an integer >= 0, got {n_models!r}")
    a = np.asarray(a).reshape(-1)
    b = np.asarray(b).reshape(-1)
    score = np.asarray(score_a, dtype=float).reshape(-1)
    if not (len(a) == len(b) == len(score)):
        raise ValueError(f"a, b and score_a must have one length, got {len(a)}, {len(b)} and {len(score)}")
    for name, index in (("a", a), ("b", b)):
        if len(index) and (index.dtype.kind not in "iu" or index.min() < 0 or index.max() >= n_models):
            bad = index[(index < 0) | (index >= n_models)] if index.dtype.kind in "iu" else index
            raise ValueError(f"{name} must hold model indices in [0, {n_models}), got {bad[0].item()!r}")
    a, b = a.astype(np.intp), b.astype(np.intp)
    if (a == b).any():
        raise ValueError(f"a battle of a model against itself (model {int(a[a == b][0])}, battle "
                         f"{int(np.flatnonzero(a == b)[0])})")
    if not np.all(np.isfinite(score)) or ((score < 0) | (score > 1)).any():
        raise ValueError(f"score_a must lie in [0, 1], got {float(score[~((score >= 0) & (score <= 1))][0])!r}")
    weight = np.ones(len(a)) if weights is None else np.asarray(weights, dtype=float).reshape(-1)
    if len(weight) != len(a):
        raise ValueError(f"weights must give one weight per battle ({len(a)}), got {len(weight)}")
    if not np.all(np.isfinite(weight)) or (weight < 0).any():
        raise ValueError(f"weights must be finite and >= 0, got "
                         f"{float(weight[~(np.isfinite(weight) & (weight >= 0))][0])!r}")
    return a, b, score, weight
