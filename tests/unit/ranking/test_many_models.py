"""The many-models paths of the ranking code (issue 17, item 5) agree with the dense ones.

Above ``core.DENSE_MAX`` ratings the solver keeps the rating block sparse and solves by
conjugate gradients, the bootstrap takes batched Newton steps with each round's own
Hessian, and rank spreads are counted by sorting. Each test forces the sparse path on a
small problem (``DENSE_MAX = 0``) and checks it against the dense one.
"""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from peerboard_testing import arena_judgments
from peercore.ranking import _battles, core
from peercore.ranking.winrate import win_rate_intervals

bt = importlib.import_module("peercore.ranking.bradley_terry")  # the package attribute is the function


@pytest.fixture
def sparse(monkeypatch):
    """Every design counts as many models: the sparse rating block, conjugate gradients, Newton rounds."""
    monkeypatch.setattr(core, "DENSE_MAX", 0)


def _design(seed: int, *, n: int = 30, rows: int = 3000, k: int = 0, soft: bool = False) -> core.Design:
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, rows)
    j = (i + rng.integers(1, n, rows)) % n
    x = rng.normal(size=(rows, k)) if k else None
    eta = rng.normal(size=n)[i] - rng.normal(size=n)[j] + (x @ rng.normal(size=k) * 0.5 if k else 0.0)
    y = expit(eta) if soft else (rng.random(rows) < expit(eta)).astype(float)
    return core.Design(n, i, j, y, np.ones(rows), x=x)


@pytest.mark.parametrize("k", [0, 2])
def test_sparse_newton_equals_the_dense_solve(k, monkeypatch):
    dense = core.fit(_design(1, k=k), l2_features=0.5)
    monkeypatch.setattr(core, "DENSE_MAX", 0)
    design = _design(1, k=k)
    assert isinstance(core._outer_blocks(design, np.ones(design.rows)), core._Blocks)
    solved = core.fit(design, l2_features=0.5)
    assert np.allclose(solved.params, dense.params, atol=1e-9, rtol=0)


@pytest.mark.parametrize("k", [0, 2])
def test_a_sandwich_block_of_many_ratings_is_the_dense_sandwichs_block(k, monkeypatch):
    design = _design(2, k=k)
    solution = core.fit(design, l2_features=0.5)
    full = core.sandwich(design, solution)
    params = np.arange(design.n, design.n + k) if k else np.array([0, 3, 7])
    monkeypatch.setattr(core, "DENSE_MAX", 0)
    block = core.sandwich(_design(2, k=k), solution, params=params)
    assert np.allclose(block, full[np.ix_(params, params)], atol=1e-10, rtol=1e-7)
    # asked for the whole matrix, it is the dense one
    assert np.allclose(core.sandwich(_design(2, k=k), solution), full, atol=1e-14, rtol=1e-9)


def test_newton_rounds_equal_one_fit_per_round_even_when_a_resample_separates_models(sparse):
    design = _design(4, n=12, rows=600, soft=True)
    start = core.fit(design)
    rng = np.random.default_rng(0)
    w = rng.poisson(1.0, (6, design.rows)).astype(float)
    wins = w * design.y
    # round 0: model 0 wins every battle it plays; round 1: models 1 and 2 win every battle against the others
    wins[0] = np.where(design.i == 0, w[0], np.where(design.j == 0, 0.0, wins[0]))
    group = np.isin(design.i, [1, 2]) & ~np.isin(design.j, [1, 2])
    against = np.isin(design.j, [1, 2]) & ~np.isin(design.i, [1, 2])
    wins[1] = np.where(group, w[1], np.where(against, 0.0, wins[1]))
    together = core.fit_rounds(design, wins, w, start, tol=1e-10)
    for r in range(6):
        with np.errstate(invalid="ignore", divide="ignore"):
            y = np.where(w[r] > 0, wins[r] / np.where(w[r] > 0, w[r], 1.0), 0.5)
        alone = core.fit(core.Design(design.n, design.i, design.j, y, w[r]), tol=1e-10).theta
        assert np.allclose(together[r], alone, atol=1e-6), r
    assert together[0, 0] > 10 and together[1, 1] > 8  # the l2 = 1e-6 estimates are large, and reached


def test_bradley_terry_of_many_models_equals_the_dense_path(monkeypatch):
    table = arena_judgments(40, 2500, seed=3)
    dense = bt.bradley_terry_intervals(table, rounds=60, seed=1)
    monkeypatch.setattr(core, "DENSE_MAX", 0)
    left_out = bt.bradley_terry_intervals(table, rounds=60, seed=1)
    assert np.allclose(left_out["rating"], dense["rating"], atol=1e-7)
    # the bootstrap rounds stop within 1e-5 natural units (0.0017 Elo points) of their optimum
    assert np.allclose(left_out[["ci_low", "ci_high"]], dense[["ci_low", "ci_high"]], atol=0.01)
    assert left_out["sandwich_low"].isna().all()  # 40 > DENSE_MAX = 0 models: not computed unless asked
    assert bt.sandwich_left_out(40).startswith("sandwich intervals were not computed for 40 models")
    asked = bt.bradley_terry_intervals(table, rounds=0, intervals="sandwich", anchor_model="model-0005")
    monkeypatch.setattr(core, "DENSE_MAX", 1000)
    dense_asked = bt.bradley_terry_intervals(table, rounds=0, intervals="sandwich", anchor_model="model-0005")
    assert np.allclose(asked[["sandwich_low", "sandwich_high"]], dense_asked[["sandwich_low", "sandwich_high"]],
                       atol=1e-7, equal_nan=True)


def test_rank_spread_counts_by_sorting_as_the_pairwise_rule_does():
    rng = np.random.default_rng(9)
    low = np.round(rng.normal(1000, 50, 300), 0)
    high = low + np.round(rng.uniform(0, 80, 300), 0)
    low[:5] = np.nan
    high[3:8] = np.nan
    frame = bt.rank_spread(pd.Series(low), pd.Series(high))
    with np.errstate(invalid="ignore"):
        rank = 1 + (low[None, :] > high[:, None]).sum(axis=1)
        worst = len(low) - (high[None, :] < low[:, None]).sum(axis=1)
    assert (frame["rank"].to_numpy() == rank).all() and (frame["rank_worst"].to_numpy() == worst).all()


def test_draw_counts_resample_every_battle_in_either_way(monkeypatch):
    counts = np.r_[np.ones(300, dtype=np.int64), np.full(20, 5)]
    rng = np.random.default_rng(np.random.SeedSequence(4))
    monkeypatch.setattr(_battles, "MULTINOMIAL_MAX", 10)  # many distinct battles: battle indices, counted
    draws = _battles.draw_counts(counts, 2000, rng)
    assert draws.shape == (2000, 320) and (draws.sum(axis=1) == counts.sum()).all()
    assert np.allclose(draws.mean(axis=0), counts, atol=0.2)  # E = N * counts / N
    # one stream per chunk: drawn in parts, the same rounds
    whole = _battles.draw_counts(counts, 7, np.random.default_rng(np.random.SeedSequence(5)))
    parts = np.random.default_rng(np.random.SeedSequence(5))
    assert (np.vstack([_battles.draw_counts(counts, 3, parts), _battles.draw_counts(counts, 4, parts)]) == whole).all()
    # up to MULTINOMIAL_MAX distinct battles: what draw_multinomial always drew
    monkeypatch.setattr(_battles, "MULTINOMIAL_MAX", 50_000)
    assert (_battles.draw_counts(counts, 7, np.random.default_rng(np.random.SeedSequence(5)))
            == _battles.draw_multinomial(counts, 7, np.random.SeedSequence(5))).all()


def test_bootstraps_do_not_depend_on_how_many_rounds_are_held_at_once(monkeypatch):
    table = arena_judgments(25, 1500, seed=6)
    win_rates = win_rate_intervals(table, rounds=70, seed=2)
    ratings = bt.bradley_terry_intervals(table, rounds=70, seed=2)
    monkeypatch.setattr(_battles, "ROUNDS_MEMORY", 1)  # one round at a time
    assert _battles.rounds_at_once(10_000, 50) == 1
    pd.testing.assert_frame_equal(win_rate_intervals(table, rounds=70, seed=2), win_rates, rtol=1e-12)
    pd.testing.assert_frame_equal(bt.bradley_terry_intervals(table, rounds=70, seed=2), ratings, rtol=1e-9)
