"""Names at the edges, integer indices inside the maths.

:func:`encode` turns a canonical judgment table into integer arrays that every
estimator in :mod:`peercore.ranking` works on; the estimators turn their results back
into name-indexed pandas objects.
"""

from __future__ import annotations

from collections.abc import Mapping
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd

from peercore.domain.verdicts import counted_unique


_SCORE_OF_WINNER = {"model_a": 1.0, "tie": 0.5, "model_b": 0.0}
# An optional column of a judgment table holding the outcome for model_a as a number in
# [0, 1] (a soft verdict, e.g. the judge's p_a); where given it replaces the winner's
# 1 / 0.5 / 0 in every estimator (win rate, Elo, Bradley-Terry, Peer Rank). Rows where it
# is missing keep their hard outcome. peercore.app.leaderboard adds it for "soft" rankings.
SOFT_COLUMN = "outcome_a"


@dataclass(frozen=True)
class Battles:
    """Integer-coded battles.

    Attributes
    ----------
    models : sorted contestant names; ``a`` and ``b`` index into it.
    a, b : int arrays, first- and second-shown contestant of each battle.
    score_a : float array, 1 if model_a won, 0.5 for a tie, 0 if model_b won (or the
        soft outcome of :data:`SOFT_COLUMN` where a table gives one).
    judges : sorted judge names; ``judge`` indexes into it.
    judge : int array, the judge of each battle.
    """

    models: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    score_a: np.ndarray
    judges: tuple[str, ...]
    judge: np.ndarray

    @property
    def n_models(self) -> int:
        return len(self.models)

    def __len__(self) -> int:
        return len(self.a)


def encode(judgments: pd.DataFrame, *, models: list[str] | None = None) -> Battles:
    """Integer-code a canonical judgment table (see :class:`Battles`).

    Parameters
    ----------
    judgments : canonical judgment table.
    models : the contestant list to index into; by default the sorted names seen.
    """
    missing = [c for c in ("model_a", "model_b", "judge", "winner") if c not in judgments.columns]
    if missing:
        raise ValueError(
            f"judgments is missing column(s) {missing}; build it with peercore.judgments_from_frame"
        )
    n_rows = len(judgments)
    both = pd.concat([judgments["model_a"], judgments["model_b"]], ignore_index=True)
    codes, seen = pd.factorize(both, sort=True)
    if models is None:
        models = [str(m) for m in seen]
        recode = np.arange(len(seen))
    else:
        recode = pd.Index(list(models)).get_indexer(seen)
        if (recode < 0).any():
            unknown = sorted(str(m) for m in np.asarray(seen, dtype=object)[recode < 0])
            raise ValueError(f"models {unknown} are not in the models list {list(models)}")
    codes = recode[codes]
    a, b = codes[:n_rows], codes[n_rows:]
    winner_codes, winner_values = pd.factorize(judgments["winner"])
    lookup = np.array([_SCORE_OF_WINNER.get(str(v), np.nan) for v in winner_values], dtype=float)
    if np.isnan(lookup).any():
        bad = [str(v) for v, x in zip(winner_values, lookup) if np.isnan(x)][0]
        raise ValueError(f"winner {bad!r} is not one of model_a, model_b, tie")
    score_a = lookup[winner_codes] if n_rows else np.zeros(0)
    if SOFT_COLUMN in judgments.columns:  # soft verdicts: the probability as a fractional win
        soft = pd.to_numeric(judgments[SOFT_COLUMN], errors="coerce").to_numpy(dtype=float)
        if (~np.isnan(soft) & ((soft < 0) | (soft > 1))).any():
            raise ValueError(f"{SOFT_COLUMN} must lie in [0, 1]")
        score_a = np.where(np.isnan(soft), score_a, soft)
    judge_codes, judge_names = pd.factorize(judgments["judge"], sort=True)
    return Battles(
        models=tuple(models),
        a=a.astype(np.intp),
        b=b.astype(np.intp),
        score_a=score_a,
        judges=tuple(str(j) for j in judge_names),
        judge=judge_codes.astype(np.intp),
    )


def as_battles(judgments: "pd.DataFrame | Battles") -> Battles:
    """An encoded battle set: ``judgments`` itself when already encoded, else :func:`encode` of it.

    Estimators accept either, so a caller that ranks one selection several ways
    (plain and style-controlled, bootstrap and sandwich) encodes the table once.
    """
    return judgments if isinstance(judgments, Battles) else encode(judgments)


def battle_weights(judgments: "pd.DataFrame | Battles", weights: Mapping[str, float] | None = None, *,
                   reweight: bool = False, floor: float = 50.0) -> np.ndarray | None:
    """Per-battle weights: judge weights (Peer Rank) times, with ``reweight``, LMArena's pair reweighting.

    The judge part is :func:`row_weights`; the pair part :func:`pair_reweighting`.
    Returns None when both are off (every battle counts 1).
    """
    battles = as_battles(judgments)
    out = None
    if weights is not None:
        if isinstance(judgments, Battles):
            out = _judge_weights(battles, weights)
        else:
            out = row_weights(judgments, weights)
    if reweight:
        pair = pair_reweighting(battles.a, battles.b, battles.n_models, floor=floor)
        out = pair if out is None else out * pair
    return out


def pair_reweighting(a: np.ndarray, b: np.ndarray, n_models: int, *, floor: float = 50.0) -> np.ndarray:
    """LMArena's inverse-propensity weights: battle weight :math:`1 / \\max(n_{pair}, 50)`, scaled to mean 1.

    :math:`n_{pair}` counts the battles of the battle's unordered pair (both orders), so
    pairs that were sampled very often do not dominate the fit (``arena-rank``
    ``reweighted=True``, ``min_pair_count=50``). The mean-one scale leaves Bradley-Terry
    ratings unchanged up to the tiny ridge and keeps a prior's strength meaningful.
    """
    if not floor > 0:
        raise ValueError(f"floor must be > 0, got {floor!r}")
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if len(a) == 0:
        return np.zeros(0)
    key = np.minimum(a, b) * n_models + np.maximum(a, b)
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    weight = 1.0 / np.maximum(counts[inverse].astype(float), floor)
    return weight / weight.mean()


def _judge_weights(battles: Battles, weights: Mapping[str, float]) -> np.ndarray:
    present = np.unique(battles.judge)
    names = [battles.judges[k] for k in present]
    missing = [j for j in names if j not in weights]
    if missing:
        raise ValueError(f"weights has no entry for judge(s) {sorted(missing)}")
    values = np.array([float(weights[j]) for j in names])
    if not np.all(np.isfinite(values)) or (values < 0).any():
        raise ValueError(f"weights must be finite and non-negative, got {dict(zip(names, values))}")
    if values.mean() == 0:
        raise ValueError("weights are all zero for the judges present; nothing would count")
    per_judge = np.zeros(len(battles.judges))
    per_judge[present] = values / values.mean()
    return per_judge[battles.judge]


def row_weights(
    judgments: pd.DataFrame, weights: Mapping[str, float] | None
) -> np.ndarray | None:
    """Per-row multiplier w_judge / mean(w) (PRD Peer Rank weighting), or None.

    The mean is over the weights of the judges that appear in ``judgments``, so a
    weights mapping with extra judges does not change the result.

    Raises
    ------
    ValueError
        If a judge in ``judgments`` has no weight, a weight is negative or not finite,
        or every weight is zero.
    """
    if weights is None:
        return None
    judges = pd.unique(judgments["judge"].to_numpy(dtype=object))
    missing = [j for j in judges if j not in weights]
    if missing:
        raise ValueError(f"weights has no entry for judge(s) {sorted(missing)}")
    values = np.array([float(weights[j]) for j in judges])
    if not np.all(np.isfinite(values)) or (values < 0).any():
        raise ValueError(f"weights must be finite and non-negative, got {dict(zip(judges, values))}")
    mean = values.mean()
    if mean == 0:
        raise ValueError("weights are all zero for the judges present; nothing would count")
    per_judge = pd.Series(values / mean, index=judges)
    return judgments["judge"].map(per_judge).to_numpy(dtype=float)


def as_series(values: np.ndarray, models: tuple[str, ...], name: str) -> pd.Series:
    """A model-indexed Series named ``name`` (index named "model")."""
    return pd.Series(values, index=pd.Index(models, name="model"), name=name)


__all__ = [
    "Battles", "encode", "as_battles", "battle_weights", "pair_reweighting", "row_weights", "as_series", "unique_rows",
    "resample_chunks", "draw_multinomial", "draw_counts", "rounds_at_once", "run_chunks", "MULTINOMIAL_MAX",
]

# Distinct battles up to which a bootstrap round is numpy's multinomial over them (one binomial
# draw each, as Chatbot Arena draws it); see draw_counts.
MULTINOMIAL_MAX = 50_000
# Memory one thread of a bootstrap may hold for the rounds it resamples at once (rounds_at_once).
ROUNDS_MEMORY = 64 * 2 ** 20


@dataclass(frozen=True)
class UniqueRows:
    """Distinct (model_a, model_b, outcome, weight) battles and how often each occurs."""

    a: np.ndarray
    b: np.ndarray
    score_a: np.ndarray
    weight: np.ndarray
    count: np.ndarray


def unique_rows(battles: Battles, weight: np.ndarray | None = None) -> UniqueRows:
    """Collapse battles to distinct rows with counts (what a bootstrap resamples)."""
    weight = np.ones(len(battles)) if weight is None else np.asarray(weight, dtype=float)
    weight_codes, weight_values = pd.factorize(weight)
    weight_values = np.asarray(weight_values, dtype=float)
    n, w = battles.n_models, max(len(weight_values), 1)
    outcome = np.rint(battles.score_a * 2).astype(np.int64)
    key = ((battles.a.astype(np.int64) * n + battles.b) * 3 + outcome) * w + weight_codes
    keys, count = counted_unique(key, n * n * 3 * w)
    return UniqueRows(
        a=(keys // (w * 3 * n)).astype(np.intp),
        b=((keys // (w * 3)) % n).astype(np.intp),
        score_a=((keys // w) % 3) / 2.0,
        weight=weight_values[keys % w] if len(weight_values) else np.ones(len(keys)),
        count=count,
    )


def resample_chunks(rounds: int, *, seed: int, chunk: int = 50) -> list[tuple[int, int, np.random.SeedSequence]]:
    """Split ``rounds`` bootstrap rounds into chunks, each with its own child seed.

    Draws made chunk by chunk from these seeds are the same whatever the number of
    threads, and whichever thread does which chunk.
    """
    starts = list(range(0, rounds, chunk))
    seeds = np.random.SeedSequence(seed).spawn(len(starts))
    return [(start, min(start + chunk, rounds), s) for start, s in zip(starts, seeds)]


def draw_multinomial(counts: np.ndarray, size: int, seed: np.random.SeedSequence) -> np.ndarray:
    """``size`` draws of Multinomial(sum(counts), counts / sum(counts)), int64."""
    counts = np.asarray(counts)
    total = int(counts.sum())
    return np.random.default_rng(seed).multinomial(total, counts / total, size=size)


def draw_counts(counts: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` bootstrap rounds: how often each distinct battle is drawn, (size, len(counts)) int64.

    Each round is Multinomial(N, counts / N), N = sum(counts): N battles drawn with
    replacement, counted per distinct battle. Up to :data:`MULTINOMIAL_MAX` distinct
    battles, or when they are fewer than N / 8, it is numpy's multinomial (what
    :func:`draw_multinomial` draws; one binomial per distinct battle and round). With
    more (many models: nearly every battle is a pair of its own) the same distribution
    is drawn as N battle indices uniform with replacement, counted: N integers per
    round instead of C binomials, 10-20x faster at a million battles. Successive calls
    on one ``rng`` continue one stream, so drawing a chunk of rounds in parts gives
    the same rounds.
    """
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if len(counts) <= MULTINOMIAL_MAX or 8 * len(counts) <= total:
        return rng.multinomial(total, counts / total, size=size)
    owner = np.repeat(np.arange(len(counts)), counts)
    out = np.empty((size, len(counts)), dtype=np.int64)
    for r in range(size):
        out[r] = np.bincount(owner[rng.integers(0, total, total)], minlength=len(counts))
    return out


def rounds_at_once(per_round: int, chunk: int) -> int:
    """How many of a chunk's bootstrap rounds to hold at once: ``per_round`` float64 values each, in ROUNDS_MEMORY."""
    return int(max(1, min(chunk, ROUNDS_MEMORY // max(8 * per_round, 1))))


def run_chunks(work, chunks, *, workers: int | None = None) -> None:
    """Call ``work(start, stop, seed)`` for every chunk, in ``workers`` threads.

    While the threads run, BLAS is limited to one thread each: threads already use
    every core, and nested BLAS threads would oversubscribe them (measured 3x slower).
    """
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(chunks) <= 1:
        for chunk in chunks:
            work(*chunk)
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(max_workers=min(workers, len(chunks))) as pool:
        list(pool.map(lambda chunk: work(*chunk), chunks))
