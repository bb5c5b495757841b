"""Win rates and pairwise win-fraction matrices (PRD section 3.1, eq. 1)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from peercore.ranking._battles import as_series, encode, multinomial_resample, row_weights, unique_rows

__all__ = ["win_rates", "win_rate_intervals", "pairwise_win_fraction", "battle_counts"]


def win_rates(judgments: pd.DataFrame, *, weights: Mapping[str, float] | None = None) -> pd.Series:
    """Share of battles won by each model, ties counting half (PRD eq. 1).

    .. math:: \\mathrm{wr}_m = \\frac{\\sum_{r \\ni m} \\tilde w_{j(r)}\\, s_m(r)}{\\#\\{r \\ni m\\}},
              \\qquad \\tilde w_j = w_j / \\overline{w}

    where :math:`s_m(r)` is 1 for a win, 1/2 for a tie and 0 for a loss. As in the PRD
    notebook, wins are weighted but battle counts are not, so with Peer Rank weights a
    win rate can exceed 1 in principle (it does not on the PRD data).

    Parameters
    ----------
    judgments : canonical judgment table.
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
    battles = encode(judgments)
    weight = row_weights(judgments, weights)
    weight = np.ones(len(battles)) if weight is None else weight
    n = battles.n_models
    won = np.bincount(battles.a, weight * battles.score_a, minlength=n) + np.bincount(
        battles.b, weight * (1.0 - battles.score_a), minlength=n
    )
    played = np.bincount(battles.a, minlength=n) + np.bincount(battles.b, minlength=n)
    return as_series(won / played, battles.models, "win_rate")


def pairwise_win_fraction(
    judgments: pd.DataFrame, *, weights: Mapping[str, float] | None = None
) -> pd.DataFrame:
    """Matrix of the share of battles the row model won against the column model.

    Ties count half; both presentation orders are pooled. Entry (i, j) plus entry (j, i)
    is 1 wherever the pair met (unweighted). Pairs that never met, and the diagonal,
    are NaN. With ``weights`` the wins are weighted as in :func:`win_rates`.
    (PRD Fig. 7 heatmaps.)
    """
    battles = encode(judgments)
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


def battle_counts(judgments: pd.DataFrame) -> pd.DataFrame:
    """Symmetric matrix of how many battles each pair of models fought (any order)."""
    battles = encode(judgments)
    counts = _counts(battles.a, battles.b, battles.n_models)
    index = pd.Index(battles.models, name="model")
    return pd.DataFrame(counts, index=index, columns=pd.Index(battles.models, name="opponent"))


def _counts(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    counts = np.bincount(a * n + b, minlength=n * n).reshape(n, n)
    return counts + counts.T


def win_rate_intervals(
    judgments: pd.DataFrame,
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
    """
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    battles = encode(judgments)
    weight = row_weights(judgments, weights)
    weight = np.ones(len(battles)) if weight is None else weight
    n = battles.n_models
    played = np.bincount(battles.a, minlength=n) + np.bincount(battles.b, minlength=n)
    point = win_rates(judgments, weights=weights).to_numpy()
    low = high = np.full(n, np.nan)
    if rounds and len(battles):
        cats = unique_rows(battles, weight)
        draws = multinomial_resample(cats.count, rounds=rounds, seed=seed)
        won = draws @ _scatter(cats.a, cats.weight * cats.score_a, n) + draws @ _scatter(cats.b, cats.weight * (1 - cats.score_a), n)
        games = draws @ _scatter(cats.a, np.ones(len(cats.a)), n) + draws @ _scatter(cats.b, np.ones(len(cats.b)), n)
        with np.errstate(invalid="ignore", divide="ignore"):
            samples = won / games
        alpha = (1.0 - level) / 2.0
        low, high = np.nanquantile(samples, [alpha, 1.0 - alpha], axis=0)
    return pd.DataFrame(
        {"win_rate": point, "ci_low": low, "ci_high": high, "battles": played},
        index=pd.Index(battles.models, name="model"),
    )


def _scatter(index: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Dense (categories x models) matrix putting ``values`` at column ``index``."""
    out = np.zeros((len(index), n))
    out[np.arange(len(index)), index] = values
    return out
