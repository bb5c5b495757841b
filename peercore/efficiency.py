"""How many comparisons does a good ranking need? (Liusie et al. 2024, PoE paper Fig. 1.)

For every question of a study, the candidates are the contestants' answers to it and
the comparisons are one judge's verdicts on pairs of them (``p = p_a`` when given,
else 1 / 0.5 / 0 from the winner). A *budget* of k comparisons is drawn per question
in the order a selection strategy chooses them:

* ``random``: a uniformly random order of the question's comparisons (without
  replacement, EACL 2024);
* ``greedy``: the Gaussian-PoE information-maximising order of
  :class:`peercore.ranking.GreedySelector` (largest posterior variance of
  :math:`s_i - s_j` first, Sherman-Morrison updates), taking one of the judge's
  verdicts on each chosen pair; it stops when every pair the judge compared has been
  taken once.

Each of the five scorers of :mod:`peercore.ranking.poe` (win ratio, Bradley-Terry,
average probability, PoE-BT, PoE-Gaussian) ranks the candidates from the first k
comparisons, and ranking quality is the Spearman correlation with the *full-data
ranking* (by default the same scorer on all the question's comparisons), or with
**human scores** (``reference="human"``: the PoE paper's Fig. 1 measures exactly this,
Spearman with the human ratings of each context's candidates), averaged over
questions. Seeded repeats give a median and a band.

**Debiasing** (``debias=True``; Liusie et al. 2024): the judge's first-position
preference, measured once over all its comparisons in ``judgments``, is removed from
every subset: hard decisions use the threshold :math:`\\tau = \\operatorname{median}(p)`
instead of 1/2 (Liusie, Manakul, Gales 2024, eq. 9-10), the soft scorers use
:math:`\\beta = \\bar p` (average probability of ``p - β + 1/2``, PoE-Gaussian
:math:`\\mu = p - \\beta`, PoE-BT :math:`\\gamma = -\\operatorname{logit}\\beta`). With a
few comparisons per question, a per-question estimate would be degenerate (one
comparison's own ``p``), hence one offset per judge and data set.

The scorers here are batched forms of :mod:`peercore.ranking.poe` (the same objectives,
solved for thousands of small problems at once; PoE-BT through the one solver's
:func:`peercore.ranking.core.fit_batch`);
``tests/unit/test_efficiency.py`` checks them against the one-problem functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import logit

from peercore.domain.verdicts import Verdicts, distinct, from_frame, take
from peercore.ranking.core import batch_laplacian, fit_batch
from peercore.ranking.poe import DEFAULT_L2, METHODS, comparisons_from_judgments
from peercore.ranking.selection import GreedySelector

__all__ = ["METHODS", "STRATEGIES", "Problem", "problems_from_judgments", "batch_scores", "spearman_rows",
           "efficiency_curve", "summarise", "position_offsets", "usable_questions"]

STRATEGIES: tuple[str, ...] = ("random", "greedy")
_TIE_RTOL = 1e-9


@dataclass(frozen=True)
class Problem:
    """One question: ``n`` candidates and K comparisons ``(i, j, p)`` (i shown first)."""

    question_id: str
    candidates: tuple[str, ...]
    i: np.ndarray
    j: np.ndarray
    p: np.ndarray

    @property
    def n(self) -> int:
        return len(self.candidates)


def problems_from_judgments(judgments: pd.DataFrame, *, min_candidates: int = 3,
                            limit: int | None = None) -> list[Problem]:
    """One :class:`Problem` per question of a canonical judgment table, by question id.

    All rows of a question are pooled (filter to one judge first to follow the paper).
    Questions with fewer than ``min_candidates`` compared candidates are dropped.
    ``limit`` keeps the first ``limit`` problems (``problems_from_judgments(j)[:limit]``)
    without building the others: which questions qualify is counted vectorised first,
    so a million verdicts on 100,000 questions cost a fraction of a second, not minutes.
    """
    if min_candidates < 2:
        raise ValueError(f"min_candidates must be >= 2, got {min_candidates!r}")
    if limit is not None and len(judgments):
        judgments = judgments[judgments["question_id"].isin(_first_questions(judgments, min_candidates, limit))]
    out = []
    for question_id, rows in judgments.groupby("question_id", sort=True):
        comparisons = comparisons_from_judgments(rows)
        if comparisons.n >= min_candidates:
            out.append(Problem(str(question_id), comparisons.candidates, np.array(comparisons.i),
                               np.array(comparisons.j), np.array(comparisons.p)))
    return out


def usable_questions(verdicts: Verdicts, *, min_candidates: int = 3) -> list[str]:
    """The question ids (sorted) on which readable ``verdicts`` compare at least ``min_candidates``
    contestants, whoever judged (what the curves can sub-sample, Liusie et al. 2024, Fig. 1)."""
    readable = take(verdicts, verdicts.winner >= 0)
    if len(readable) == 0:
        return []
    n = readable.n_models
    question = readable.question.astype(np.int64)
    pairs = distinct(np.concatenate([question * n + readable.a, question * n + readable.b]))
    codes, sizes = np.unique(pairs // n, return_counts=True)
    return sorted(str(q) for q in np.asarray(readable.questions, dtype=object)[codes[sizes >= min_candidates]])


def _first_questions(judgments: pd.DataFrame, min_candidates: int, limit: int) -> list[str]:
    """The first ``limit`` question ids (sorted) with at least ``min_candidates`` compared candidates."""
    usable = usable_questions(from_frame(judgments.assign(judge="")), min_candidates=min_candidates)
    return usable[:max(int(limit), 0)]


# --------------------------------------------------------------------- batched scores


def position_offsets(p: np.ndarray | Sequence[float]) -> tuple[float, float]:
    """A judge's first-position preference over its comparisons: ``(tau, beta)``.

    :math:`\\tau = \\operatorname{median}(p)` is the decision threshold that makes both
    positions win equally often (Liusie, Manakul, Gales 2024, eq. 9-10;
    :func:`peercore.bias.debias_threshold`); :math:`\\beta = \\bar p` is the mean
    probability (the PoE debiasing offset, Liusie et al. 2024). An unbiased judge on a
    symmetric set has both at 1/2.

    Raises
    ------
    ValueError
        If ``p`` is empty, or ``beta`` is 0 or 1 (every comparison went one way: the
        PoE-BT offset would be infinite).
    """
    values = np.asarray(p, dtype=float).ravel()
    values = values[~np.isnan(values)]
    if values.size == 0:
        raise ValueError("no probabilities to measure the position preference from (p is empty)")
    beta = float(values.mean())
    if not 0.0 < beta < 1.0:
        raise ValueError(f"the mean of p is {beta!r}: every comparison went the same way, so the position offset is "
                         "infinite; debiasing is undefined")
    return float(np.median(values)), beta


def batch_scores(i: np.ndarray, j: np.ndarray, p: np.ndarray, used: np.ndarray, n: int, method: str, *,
                 l2: float = DEFAULT_L2, tol: float = 1e-9, max_iter: int = 200, threshold: float = 0.5,
                 beta: float = 0.5) -> np.ndarray:
    """Scores of B problems with ``n`` candidates each, from the comparisons marked ``used``.

    Parameters
    ----------
    i, j, p : (B, K) comparisons (unused slots may hold anything valid, e.g. 0, 1, 0.5).
    used : (B, K) bool, which comparisons count.
    n : candidates per problem.
    method : one of :data:`METHODS`; the same definitions as
        :func:`peercore.ranking.poe.win_ratio`, :func:`~peercore.ranking.poe.bradley_terry_hard`,
        :func:`~peercore.ranking.poe.average_probability`,
        :func:`~peercore.ranking.poe.poe_bradley_terry` (gamma = 0) and
        :func:`~peercore.ranking.poe.poe_gaussian` (beta = 1/2, per-component anchors).
    threshold : decision threshold of the hard scorers (win ratio, BT): ``p > threshold``
        is a win of the first-shown candidate, ``p == threshold`` a tie (1/2 by default;
        the debiasing threshold :math:`\\tau` of :func:`position_offsets`).
    beta : the soft scorers' position offset (1/2 by default, i.e. none): average
        probability of ``p - beta + 1/2``, PoE-Gaussian :math:`\\mu = p - \\beta`, PoE-BT
        :math:`\\gamma = -\\operatorname{logit}(\\beta)` -- with ``beta`` = the mean of a
        problem's ``p`` these are :func:`~peercore.ranking.poe.poe_gaussian` and
        :func:`~peercore.ranking.poe.poe_bradley_terry` with ``debias=True``.

    Returns
    -------
    (B, n) array; NaN where win ratio / average probability have no comparison.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    i, j = np.asarray(i, dtype=np.intp), np.asarray(j, dtype=np.intp)
    p, used = np.asarray(p, dtype=float), np.asarray(used, dtype=bool)
    if not (i.shape == j.shape == p.shape == used.shape) or i.ndim != 2:
        raise ValueError(f"i, j, p and used must be (B, K) arrays of one shape, got {i.shape}, {j.shape}, {p.shape}, {used.shape}")
    if not (0.0 <= threshold <= 1.0) or not (0.0 < beta < 1.0):
        raise ValueError(f"threshold must be in [0, 1] and beta in (0, 1), got threshold={threshold!r}, beta={beta!r}")
    if method in ("win_ratio", "bt"):
        p = _hard(p, threshold)
    elif beta != 0.5:
        shift = beta - 0.5
        if method == "avg_prob":
            p = p - shift
        elif method == "poe_gaussian":
            return _gaussian(i, j, p - shift, used, n)
        else:
            return fit_batch(i, j, p, used.astype(float), n, l2=l2, tol=tol, max_iter=max_iter,
                             offset=float(logit(beta)))
    if method in ("win_ratio", "avg_prob"):
        return _share(i, j, p, used, n)
    if method == "poe_gaussian":
        return _gaussian(i, j, p, used, n)
    return fit_batch(i, j, p, used.astype(float), n, l2=l2, tol=tol, max_iter=max_iter)


def _hard(p: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    return np.where(p > threshold, 1.0, np.where(p < threshold, 0.0, 0.5))


def _flat(index: np.ndarray, n: int) -> np.ndarray:
    """Index into a flattened (B, n) array."""
    return index + n * np.arange(index.shape[0])[:, None]


def _share(i, j, p, used, n) -> np.ndarray:
    b = i.shape[0]
    w = used.astype(float)
    won = np.bincount(_flat(i, n).ravel(), (w * p).ravel(), minlength=b * n) + \
        np.bincount(_flat(j, n).ravel(), (w * (1 - p)).ravel(), minlength=b * n)
    games = np.bincount(_flat(i, n).ravel(), w.ravel(), minlength=b * n) + \
        np.bincount(_flat(j, n).ravel(), w.ravel(), minlength=b * n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (won / np.where(games > 0, games, np.nan)).reshape(b, n)


def _gaussian(i, j, p, used, n) -> np.ndarray:
    b = i.shape[0]
    w = used.astype(float)
    mu = (p - 0.5) * w
    rhs = (np.bincount(_flat(i, n).ravel(), mu.ravel(), minlength=b * n)
           - np.bincount(_flat(j, n).ravel(), mu.ravel(), minlength=b * n)).reshape(b, n)
    lap = batch_laplacian(i, j, w, n)
    # Connected components: reachability by repeated squaring of (I + adjacency).
    reach = ((lap != 0) | np.eye(n, dtype=bool)).astype(float)
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))))):
        reach = np.minimum(reach @ reach, 1.0)
    same = reach > 0
    size = same.sum(axis=2).astype(float)
    normal = lap + same / (size[:, :, None] * size[:, None, :])
    return np.linalg.solve(normal, rhs[..., None])[..., 0]


# ------------------------------------------------------------------------- correlation


def spearman_rows(predicted: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Spearman correlation of each row pair (average ranks for ties).

    A row whose prediction is constant scores 0 (it says nothing about the order); a
    row whose reference is constant is NaN (there is no order to recover). Inputs must
    hold no NaN: :func:`efficiency_curve` gives uncompared candidates the neutral
    share 0.5 first.
    """
    from scipy.stats import rankdata  # on use (about 0.6 s): pages that import this module may never rank

    ranked_p = rankdata(predicted, axis=1)
    ranked_r = rankdata(reference, axis=1)
    dp = ranked_p - ranked_p.mean(axis=1, keepdims=True)
    dr = ranked_r - ranked_r.mean(axis=1, keepdims=True)
    vp, vr = (dp * dp).sum(axis=1), (dr * dr).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (dp * dr).sum(axis=1) / np.sqrt(vp * vr)
    rho = np.where(vp == 0, 0.0, rho)
    return np.where(vr == 0, np.nan, rho)


# -------------------------------------------------------------------------- the curve


def _orders(problem: Problem, strategy: str, rng: np.random.Generator) -> np.ndarray:
    """Comparison indices of ``problem`` in the order ``strategy`` takes them."""
    k = len(problem.p)
    if strategy == "random":
        return rng.permutation(k)
    lo, hi = np.minimum(problem.i, problem.j), np.maximum(problem.i, problem.j)
    rows_of: dict[tuple[int, int], list[int]] = {}
    for row, key in enumerate(zip(lo.tolist(), hi.tolist())):
        rows_of.setdefault(key, []).append(row)
    selector = GreedySelector(problem.n, rng=rng)
    available = np.zeros((problem.n, problem.n), dtype=bool)
    for a, b in rows_of:
        available[a, b] = True
    order = []
    while available.any():
        value = np.where(available, selector.criterion(), -np.inf)
        best = value.max()
        tied = np.flatnonzero(value >= best - _TIE_RTOL * abs(best))
        a, b = divmod(int(tied[rng.integers(len(tied))] if len(tied) > 1 else tied[0]), problem.n)
        selector.add(a, b)
        available[a, b] = False
        rows = rows_of[(a, b)]
        order.append(rows[int(rng.integers(len(rows)))] if len(rows) > 1 else rows[0])
    return np.array(order, dtype=np.intp)


def _default_sizes(cap: int) -> list[int]:
    if cap <= 12:
        return list(range(1, cap + 1))
    return sorted(set(np.unique(np.round(np.geomspace(1, cap, 12)).astype(int)).tolist()))


def efficiency_curve(
    judgments: pd.DataFrame,
    *,
    methods: Sequence[str] = METHODS,
    strategies: Sequence[str] = STRATEGIES,
    sizes: Sequence[int] | None = None,
    repeats: int = 10,
    seed: int = 0,
    reference: str = "self",
    max_questions: int | None = None,
    human: pd.DataFrame | None = None,
    debias: bool = False,
    progress=None,
) -> pd.DataFrame:
    """Ranking quality against the number of comparisons per question.

    Parameters
    ----------
    judgments : canonical judgment table, usually one judge's verdicts.
    methods : scorers from :data:`METHODS`.
    strategies : ``"random"`` and/or ``"greedy"`` (see the module docstring).
    sizes : budgets k (comparisons per question); default about 12 values from 1 to the
        largest number of comparisons a question has. A question with fewer
        comparisons than k (or, for greedy, fewer compared pairs) uses all it has.
    repeats : seeded repeats (random orders; greedy tie-breaks).
    seed : seed of ``numpy.random.default_rng``; the same seed gives the same curve.
    reference : ``"self"`` (each method's own full-data ranking), one of
        :data:`METHODS` (that method's full-data ranking, shared by all), or ``"human"``
        (the ``human`` scores of each question's candidates; PoE paper Fig. 1).
    max_questions : use at most this many questions (the first by id) to bound the cost.
    human : ``question_id, model, value`` (one attribute's human scores, as
        :meth:`peercore.store.Store.scores.human_scores` gives them); needed for
        ``reference="human"``. Questions with a candidate that has no human score are
        left out.
    debias : remove the judge's first-position preference (:func:`position_offsets`,
        measured on all of ``judgments``) from every subset's scores and from the
        full-data reference (see the module docstring).
    progress : optional ``callback(fraction, rows)`` called as the work advances:
        ``fraction`` in [0, 1] and ``rows`` the finished part of the result (the
        strategies completed so far, each with all its methods, budgets and repeats).
        The numbers are those of a call without it.

    Returns
    -------
    DataFrame ``strategy, method, k, repeat, spearman, questions``: the Spearman
    correlation averaged over the questions whose reference ranking is not constant.

    Raises
    ------
    ValueError
        If an option is unknown or out of range, or no question has three candidates.
    """
    unknown = [m for m in methods if m not in METHODS] + [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown method(s) or strategy(ies) {unknown}; methods are {METHODS}, strategies {STRATEGIES}")
    if reference not in ("self", "human") and reference not in METHODS:
        raise ValueError(f"reference must be 'self', 'human' or one of {METHODS}, got {reference!r}")
    if reference == "human" and human is None:
        raise ValueError(f"reference must be 'self' or one of {METHODS} when no human scores are given; "
                         "reference='human' needs human= (a DataFrame of question_id, model, value)")
    if not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    # Without human scores the first max_questions questions are known before any is built.
    problems = problems_from_judgments(judgments, limit=max_questions if reference != "human" else None)
    truth: dict[str, np.ndarray] = {}
    if reference == "human":
        values = {(str(q), str(m)): float(v) for q, m, v in zip(human["question_id"], human["model"], human["value"])}
        for problem in problems:
            row = [values.get((problem.question_id, c)) for c in problem.candidates]
            if all(v is not None for v in row):
                truth[problem.question_id] = np.array(row, dtype=float)
        problems = [problem for problem in problems if problem.question_id in truth]
    if max_questions is not None:
        problems = problems[:max_questions]
    if not problems:
        raise ValueError("no question has three or more compared candidates" +
                         (" with a human score for each" if reference == "human" else "") + "; nothing to rank")
    offsets = {}
    if debias:
        tau, beta = position_offsets(np.concatenate([problem.p for problem in problems]))
        offsets = {"threshold": tau, "beta": beta}
    cap = max(len(problem.p) for problem in problems)
    sizes = _default_sizes(cap) if sizes is None else sorted({int(k) for k in sizes})
    if not sizes or sizes[0] < 1:
        raise ValueError(f"sizes must be positive integers, got {sizes!r}")
    rng = np.random.default_rng(seed)
    rows = []
    by_n: dict[int, list[Problem]] = {}
    for problem in problems:
        by_n.setdefault(problem.n, []).append(problem)
    columns = ["strategy", "method", "k", "repeat", "spearman", "questions"]
    steps, done = len(strategies) * (len(by_n) + 1), 0
    for strategy in strategies:
        # orders[n][q][r] = comparison order of question q, repeat r
        orders = {n: [[_orders(problem, strategy, rng) for _ in range(repeats)] for problem in group]
                  for n, group in by_n.items()}
        done += 1
        if progress is not None:
            progress(done / steps, pd.DataFrame(rows, columns=columns))
        # A strategy's curve ends where its longest order ends (greedy takes each pair once).
        longest = max(len(order) for group in orders.values() for per_question in group for order in per_question)
        budgets = [k for k in sizes if k <= longest]
        if longest < sizes[-1] and longest not in budgets:
            budgets.append(longest)
        results = {method: np.zeros((len(budgets), repeats)) for method in methods}
        counts = {method: np.zeros((len(budgets), repeats)) for method in methods}
        for n, group in by_n.items():
            i, j, p, full = _pad(group)
            q, width = i.shape
            # Batch: (size, repeat, question) problems.
            rank = np.full((q, repeats, width), width, dtype=np.intp)  # position of each comparison in the order
            for a, problem_orders in enumerate(orders[n]):
                for r, order in enumerate(problem_orders):
                    rank[a, r, order] = np.arange(len(order))
            used = rank[None, :, :, :] < np.asarray(budgets)[:, None, None, None]  # (S, Q, R, W)
            used = np.moveaxis(used, 2, 1)  # (S, R, Q, W)
            shape = used.shape[:3]
            tile = lambda x: np.broadcast_to(x[None, None], (*shape[:2], *x.shape)).reshape(-1, width)  # noqa: E731
            bi, bj, bp = tile(i), tile(j), tile(p)
            for method in methods:
                if reference == "human":
                    reference_scores = np.stack([truth[problem.question_id] for problem in group])
                else:
                    ref_method = method if reference == "self" else reference
                    reference_scores = _neutral(batch_scores(i, j, p, full, n, ref_method, **offsets), ref_method)
                scores = _neutral(batch_scores(bi, bj, bp, used.reshape(-1, width), n, method, **offsets), method)
                rho = spearman_rows(scores, np.broadcast_to(reference_scores[None, None], (*shape[:2], q, n)).reshape(-1, n))
                rho = rho.reshape(shape)
                results[method] += np.nansum(rho, axis=2)
                counts[method] += np.sum(~np.isnan(rho), axis=2)
            done += 1
            if progress is not None and done < steps:
                progress(done / steps, pd.DataFrame(rows, columns=columns))
        for method in methods:
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = results[method] / counts[method]
            for s, k in enumerate(budgets):
                for r in range(repeats):
                    rows.append((strategy, method, k, r, mean[s, r], int(counts[method][s, r])))
        if progress is not None and done < steps:  # this strategy's curve is whole: show it
            progress(done / steps, pd.DataFrame(rows, columns=columns))
    out = pd.DataFrame(rows, columns=columns)
    if progress is not None:
        progress(1.0, out)
    return out


def _pad(group: list[Problem]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    width = max(len(problem.p) for problem in group)
    q = len(group)
    i, j = np.zeros((q, width), dtype=np.intp), np.ones((q, width), dtype=np.intp)
    p, full = np.full((q, width), 0.5), np.zeros((q, width), dtype=bool)
    for a, problem in enumerate(group):
        k = len(problem.p)
        i[a, :k], j[a, :k], p[a, :k], full[a, :k] = problem.i, problem.j, problem.p, True
    return i, j, p, full


def _neutral(scores: np.ndarray, method: str) -> np.ndarray:
    """Uncompared candidates (NaN share) take the neutral value 0.5."""
    return np.where(np.isnan(scores), 0.5, scores) if method in ("win_ratio", "avg_prob") else scores


def summarise(curve: pd.DataFrame, *, band: tuple[float, float] = (0.1, 0.9)) -> pd.DataFrame:
    """Median and band over repeats of :func:`efficiency_curve`.

    Returns
    -------
    DataFrame ``strategy, method, k, median, low, high`` (low/high = the ``band``
    quantiles over repeats).
    """
    if not 0 <= band[0] <= band[1] <= 1:
        raise ValueError(f"band must be two quantiles 0 <= low <= high <= 1, got {band!r}")
    grouped = curve.groupby(["strategy", "method", "k"], sort=False)["spearman"]
    out = pd.DataFrame({
        "median": grouped.median(), "low": grouped.quantile(band[0]), "high": grouped.quantile(band[1]),
    }).reset_index()
    return out
