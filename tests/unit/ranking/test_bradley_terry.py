"""Bradley-Terry on the Elo scale, bootstrap intervals and the Arena rank rule."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from peerboard_testing import make_judgments
from peercore.errors import ConvergenceError
from peercore.judgments import judgments_from_frame
from peercore.ranking.bradley_terry import arena_ranks, bradley_terry, bradley_terry_intervals, pair_table


def _two_models(wins_a, wins_b, ties=0):
    return make_judgments([("a", "b", "model_a")] * wins_a + [("a", "b", "model_b")] * wins_b + [("b", "a", "tie")] * ties)


def test_two_models_closed_form():
    # MLE: P(a beats b) = share of points = 0.75 -> R_a - R_b = 400 log10(3)
    got = bradley_terry(_two_models(30, 10), l2=0)
    assert got["a"] - got["b"] == pytest.approx(400 * math.log10(3), abs=1e-6)
    assert got.mean() == pytest.approx(1000)


def test_ties_are_half_wins():
    # 20 wins, 0 losses, 20 ties -> 30 of 40 points, same as 30-10
    assert np.allclose(bradley_terry(_two_models(20, 0, ties=20), l2=0), bradley_terry(_two_models(30, 10), l2=0))


def test_anchor_model_and_custom_scale():
    got = bradley_terry(_two_models(30, 10), anchor_model="b", anchor_rating=1114, l2=0)
    assert got["b"] == pytest.approx(1114)
    natural = bradley_terry(_two_models(30, 10), scale=1, base=math.e, anchor_rating=0, l2=0)
    assert natural["a"] - natural["b"] == pytest.approx(math.log(3))
    with pytest.raises(ValueError, match="anchor_model 'zzz' is not a contestant"):
        bradley_terry(_two_models(3, 1), anchor_model="zzz")


def test_matches_scipy_lbfgs_on_random_data():
    rng = np.random.default_rng(0)
    n, m = 6, 3000
    strength = rng.normal(size=n)
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    u = rng.random(m)
    p = expit(strength[a] - strength[b])
    winner = np.where(u < 0.1, "tie", np.where(rng.random(m) < p, "model_a", "model_b"))
    names = np.array(list("abcdef"))
    table = judgments_from_frame(pd.DataFrame({"question_id": np.arange(m), "model_a": names[a], "model_b": names[b], "judge": "j", "winner": winner}))
    outcome = np.where(winner == "model_a", 1.0, np.where(winner == "tie", 0.5, 0.0))

    def loss(theta):
        d = math.log(10) / 400 * (theta[a] - theta[b])
        pr = expit(d)
        value = -np.sum(outcome * np.log(pr) + (1 - outcome) * np.log(1 - pr))
        g = -(outcome - pr) * math.log(10) / 400
        grad = np.bincount(a, g, minlength=n) - np.bincount(b, g, minlength=n)
        return value, grad

    ref = minimize(loss, np.zeros(n), jac=True, method="L-BFGS-B", options={"gtol": 1e-10, "maxiter": 10_000}).x
    ref = ref - ref.mean() + 1000
    got = bradley_terry(table, l2=0)
    assert np.allclose(got.to_numpy(), ref, atol=1e-3)


def test_model_that_won_everything_stays_finite_with_default_l2():
    table = make_judgments([("a", "b", "model_a")] * 10 + [("b", "c", "model_a")] * 10 + [("c", "b", "model_a")] * 5)
    got = bradley_terry(table)
    assert np.isfinite(got).all()
    assert got["a"] > got["b"] + 1000  # "very large finite", as documented
    with pytest.raises(ConvergenceError, match="did not converge in 5 iterations"):
        bradley_terry(table, l2=0, max_iter=5)


def test_pair_table_pools_orders_and_weights(small_judgments):
    table = pair_table(small_judgments)
    assert table.models == ("a", "b", "c")
    lookup = {(table.models[i], table.models[j]): (w, g) for i, j, w, g in zip(table.i, table.j, table.wins, table.games)}
    assert lookup[("a", "b")] == (2.0, 2.0)
    assert lookup[("a", "c")] == (1.5, 2.0)
    assert lookup[("b", "c")] == (1.0, 2.0)


def test_intervals_bracket_estimate_and_are_reproducible():
    table = _two_models(60, 30, ties=10)
    one = bradley_terry_intervals(table, rounds=300, seed=4)
    assert one.equals(bradley_terry_intervals(table, rounds=300, seed=4, workers=1))
    assert list(one.columns) == ["rating", "ci_low", "ci_high", "rank", "battles", "sandwich_low", "sandwich_high",
                                 "rank_worst"]
    assert (one["ci_low"] < one["rating"]).all() and (one["rating"] < one["ci_high"]).all()
    assert list(one.index) == ["a", "b"]
    assert (one["battles"] == 100).all()


def test_bootstrap_matches_a_slow_reference_bootstrap():
    """Our batched chord-Newton bootstrap equals refitting each round from scratch."""
    bt = importlib.import_module("peercore.ranking.bradley_terry")  # the package attribute is the function
    from peercore.ranking import core
    from peercore.ranking._battles import draw_multinomial, resample_chunks

    rng = np.random.default_rng(1)
    names = np.array(list("abcd"))
    a = rng.integers(0, 4, 400)
    b = (a + rng.integers(1, 4, 400)) % 4
    winner = rng.choice(["model_a", "model_b", "tie"], size=400, p=[0.5, 0.4, 0.1])
    table = judgments_from_frame(pd.DataFrame({"question_id": np.arange(400), "model_a": names[a], "model_b": names[b], "judge": "j", "winner": winner}))
    prepared = bt._prepare(table, None)
    solution = core.fit(prepared.table.design(), l2=1e-6, tol=1e-12, max_iter=100)
    fast = bt._bootstrap(prepared, solution, rounds=20, seed=3, tol=1e-12, max_iter=100, workers=1)
    pair, outcome, weight, count = bt._categories(prepared, decimals=3)
    assert count.sum() == 400 and set(outcome) == {0.0, 0.5, 1.0}
    (start, stop, chunk_seed), = resample_chunks(20, seed=3)
    draws = draw_multinomial(count, 20, chunk_seed)
    assert (draws.sum(axis=1) == 400).all()
    for r in range(20):
        wins = np.bincount(pair, draws[r] * outcome, minlength=len(prepared.table.i))
        games = np.bincount(pair, draws[r], minlength=len(prepared.table.i))
        slow = bt._fit(bt.PairTable(prepared.table.models, prepared.table.i, prepared.table.j, wins, games), l2=1e-6, tol=1e-12, max_iter=100)
        assert np.allclose(fast[r], slow, atol=1e-8)


def test_arena_rank_rule():
    low = pd.Series([1200, 1190, 1100, 1050], index=list("abcd"))
    high = pd.Series([1250, 1230, 1195, 1105], index=list("abcd"))
    ranks = arena_ranks(low, high)
    # c: a's and... only a's lower bound 1200 > c's upper 1195 -> 2 ; d: a, b, c exceed 1105? c low 1100 < 1105 -> 3
    assert ranks.to_dict() == {"a": 1, "b": 1, "c": 2, "d": 3}


def test_bad_parameters():
    table = _two_models(3, 1)
    with pytest.raises(ValueError, match="rounds must be >= 0"):
        bradley_terry_intervals(table, rounds=-1)
    with pytest.raises(ValueError, match=r"level must be in \(0, 1\)"):
        bradley_terry_intervals(table, level=1.5)
    with pytest.raises(ValueError, match="l2 must be"):
        bradley_terry(table, l2=-1)
