"""Win rates and pairwise win-fraction matrices (PRD section 3.1, eq. 1)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse

from peercore.ranking._battles import Battles, as_battles, as_series, battle_weights, draw_counts, encode, \
    resample_chunks, rounds_at_once, row_weights, run_chunks, unique_rows

__all__ = ["win_rates", "win_rate_intervals", "pairwise_win_fraction", "battle_counts"]


def win_rates(judgments: pd.DataFrame | Battles, *, weights: Mapping[str, float] | None = None) -> pd.Series:
    """Share of battles won by each model, ties counting half (PRD eq. 1).

    .. math:: \\mathrm{wr}_m = \\frac{\\sum_{r \\ni m} \\tilde w_{j(r)}\\, s_m(r)}{\\#\\{r \\ni m\\}},
              \\qquad \\tilde w_j = w_j / \\overline{w}

    where :math:`s_m(r)` is 1 for a win, 1/2 for a tie and 0 for a loss. As in the PRD
    notebook, wins are weighted but battle counts are not, so with Peer Rank weights a
    win rate can exceed 1 in principle (it does not on the PRD data).

    Parameters
    ----------
    judgments : canonical judgment table, or battles encoded once
        (:func:`peercore.ranking._battles.encode`).
    weights : optional judge -> weight; each row counts weight / mean(weight), the mean
        taken over the judges present.

    Returns
    -------
    Series indexed by model (sorted by name), named ``win_rate``. Empty input gives an
    empty Series.

    Raises
    ------
    ValueError
        If a judge has no weight, or a weight is negative (see ``row_weights``).
    """
    battles = as_battles(judgments)
    weight = battle_weights(judgments, weights)
    won, played = _points(battles, np.ones(len(battles)) if weight is None else weight)
    return as_series(won / played, battles.models, "win_rate")


def _points(battles: Battles, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each model's weighted points (wins + ties/2) and its battles."""
    n = battles.n_models
    won = np.bincount(battles.a, weight * battles.score_a, minlength=n) + np.bincount(
        battles.b, weight * (1.0 - battles.score_a), minlength=n
    )
    played = np.bincount(battles.a, minlength=n) + np.bincount(battles.b, minlength=n)
    return won, played


def pairwise_win_fraction(
    judgments: pd.DataFrame, *, weights: Mapping[str, float] | None = None, models: Sequence[str] | None = None
) -> pd.DataFrame:
    """Matrix of the share of battles the row model won against the column model.

    Ties count half; both presentation orders are pooled. Entry (i, j) plus entry (j, i)
    is 1 wherever the pair met (unweighted). Pairs that never met, and the diagonal,
    are NaN. With ``weights`` the wins are weighted as in :func:`win_rates`.
    (PRD Fig. 7 heatmaps.) ``models``: only the battles between these, rows and columns
    in this order (default every contestant, sorted): the matrix is models x models, so
    with thousands of contestants pass the ones to draw.
    """
    judgments = _between(judgments, models)
    battles = encode(judgments, models=None if models is None else list(models))
    weight = row_weights(judgments, weights)
    weight = np.ones(len(battles)) if weight is None else weight
    n = battles.n_models
    wins = np.zeros((n, n))
    np.add.at(wins, (battles.a, battles.b), weight * battles.score_a)
    np.add.at(wins, (battles.b, battles.a), weight * (1.0 - battles.score_a))
    counts = _counts(battles.a, battles.b, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction = np.where(counts > 0, wins / counts, np.nan)
    index = pd.Index(battles.models, name="model")
    return pd.DataFrame(fraction, index=index, columns=pd.Index(battles.models, name="opponent"))


def battle_counts(judgments: pd.DataFrame, *, models: Sequence[str] | None = None) -> pd.DataFrame:
    """Symmetric matrix of how many battles each pair of models fought (any order); ``models`` as in
    :func:`pairwise_win_fraction`."""
    battles = encode(_between(judgments, models), models=None if models is None else list(models))
    counts = _counts(battles.a, battles.b, battles.n_models)
    index = pd.Index(battles.models, name="model")
    return pd.DataFrame(counts, index=index, columns=pd.Index(battles.models, name="opponent"))


def _between(judgments: pd.DataFrame, models: Sequence[str] | None) -> pd.DataFrame:
    """The rows whose two contestants are both among ``models`` (all rows when None)."""
    if models is None:
        return judgments
    names = set(models)
    keep = judgments["model_a"].isin(names) & judgments["model_b"].isin(names)
    return judgments[keep.to_numpy(dtype=bool)]


def _counts(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    counts = np.bincount(a * n + b, minlength=n * n).reshape(n, n)
    return counts + counts.T


def win_rate_intervals(
    judgments: pd.DataFrame | Battles,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    weights: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Win rates with percentile-bootstrap intervals (battles resampled with replacement).

    Returns
    -------
    DataFrame indexed by model with columns ``win_rate, ci_low, ci_high, battles``.
    With ``rounds=0`` the interval columns are NaN.

    Each round draws how often every distinct battle is picked
    (:func:`peercore.ranking._battles.draw_counts`) and maps the counts to each model's
    points and games through sparse (battles x models) matrices, a bounded number of
    rounds at a time: memory grows with battles plus models, not their product.
    """
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    battles = as_battles(judgments)
    weight = battle_weights(judgments, weights)
    weight = np.ones(len(battles)) if weight is None else weight
    n = battles.n_models
    won, played = _points(battles, weight)
    point = won / played
    low = high = np.full(n, np.nan)
    if rounds and len(battles):
        samples = _bootstrap(unique_rows(battles, weight), n, rounds=rounds, seed=seed)
        alpha = (1.0 - level) / 2.0
        low, high = np.nanquantile(samples, [alpha, 1.0 - alpha], axis=0)
    return pd.DataFrame(
        {"win_rate": point, "ci_low": low, "ci_high": high, "battles": played},
        index=pd.Index(battles.models, name="model"),
    )


def _bootstrap(cats, n: int, *, rounds: int, seed: int) -> np.ndarray:
    """(rounds, n) win rates of resampled battles (NaN for a model a round never drew)."""
    index = np.arange(len(cats.count))
    both = np.concatenate([index, index])
    models = np.concatenate([cats.a, cats.b])
    to_won = scipy.sparse.csr_array((np.concatenate([cats.weight * cats.score_a, cats.weight * (1 - cats.score_a)]),
                                     (both, models)), shape=(len(index), n))
    to_games = scipy.sparse.csr_array((np.ones(2 * len(index)), (both, models)), shape=(len(index), n))
    samples = np.empty((rounds, n))
    chunks = resample_chunks(rounds, seed=seed)
    at_once = rounds_at_once(2 * len(index) + 3 * n, max(stop - start for start, stop, _ in chunks))

    def work(start, stop, chunk_seed):
        rng = np.random.default_rng(chunk_seed)
        for first in range(start, stop, at_once):
            last = min(first + at_once, stop)
            draws = draw_counts(cats.count, last - first, rng).astype(float)
            with np.errstate(invalid="ignore", divide="ignore"):
                samples[first:last] = (draws @ to_won) / (draws @ to_games)

    run_chunks(work, chunks)
    return samples
