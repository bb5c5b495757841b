"""Win rates and pairwise matrices (PRD eq. 1)."""

from __future__ import annotations

import numpy as np
import pytest

from peerboard_testing import make_judgments
from peercore.ranking.winrate import battle_counts, pairwise_win_fraction, win_rate_intervals, win_rates


def test_ties_count_half(small_judgments):
    # a: W(b) W(b) T(c) W(c) -> 3.5/4 ; b: L L L W -> 1/4 ; c: T L W L... see table
    got = win_rates(small_judgments)
    assert got["a"] == pytest.approx(3.5 / 4)
    assert got["b"] == pytest.approx(1 / 4)
    assert got["c"] == pytest.approx(1.5 / 4)
    assert got.name == "win_rate" and list(got.index) == ["a", "b", "c"]


def test_judge_weights_scale_wins_not_battles(small_judgments):
    # j1 weight 3, j2 weight 1 -> multipliers 1.5 and 0.5 (w / mean w)
    got = win_rates(small_judgments, weights={"j1": 3.0, "j2": 1.0})
    assert got["a"] == pytest.approx((1.5 + 1.5 + 0.75 + 0.5) / 4)
    assert got["b"] == pytest.approx(0.5 / 4)


def test_equal_weights_change_nothing(small_judgments):
    assert np.allclose(win_rates(small_judgments, weights={"j1": 2, "j2": 2}), win_rates(small_judgments))


def test_weight_errors(small_judgments):
    with pytest.raises(ValueError, match=r"no entry for judge\(s\) \['j2'\]"):
        win_rates(small_judgments, weights={"j1": 1.0})
    with pytest.raises(ValueError, match="non-negative"):
        win_rates(small_judgments, weights={"j1": -1.0, "j2": 1.0})
    with pytest.raises(ValueError, match="all zero"):
        win_rates(small_judgments, weights={"j1": 0.0, "j2": 0.0})


def test_pairwise_fraction_is_complementary_and_counts_symmetric(small_judgments):
    frac = pairwise_win_fraction(small_judgments)
    counts = battle_counts(small_judgments)
    assert frac.loc["a", "b"] == 1.0 and frac.loc["b", "a"] == 0.0
    assert frac.loc["a", "c"] == pytest.approx(0.75) and frac.loc["c", "a"] == pytest.approx(0.25)
    assert np.isnan(frac.loc["a", "a"])
    met = counts.to_numpy() > 0
    assert np.allclose((frac.to_numpy() + frac.to_numpy().T)[met], 1.0)
    assert (counts.to_numpy() == counts.to_numpy().T).all()
    assert counts.loc["b", "c"] == 2 and counts.to_numpy().sum() == 2 * len(small_judgments)


def test_pair_that_never_met_is_nan():
    table = make_judgments([("a", "b", "model_a"), ("c", "d", "tie")])
    assert np.isnan(pairwise_win_fraction(table).loc["a", "c"])
    assert battle_counts(table).loc["a", "c"] == 0


def test_empty_input_gives_empty_series(small_judgments):
    assert win_rates(small_judgments.iloc[:0]).empty


def test_bootstrap_interval_brackets_point_and_is_seeded(small_judgments):
    table = make_judgments([("a", "b", "model_a")] * 30 + [("a", "b", "model_b")] * 10)
    one = win_rate_intervals(table, rounds=500, seed=1)
    two = win_rate_intervals(table, rounds=500, seed=1)
    assert one.equals(two)
    assert (one["ci_low"] <= one["win_rate"]).all() and (one["win_rate"] <= one["ci_high"]).all()
    # binomial sd of 0.75 over 40 battles is 0.068; the 95% interval is about +-0.13
    width = one.loc["a", "ci_high"] - one.loc["a", "ci_low"]
    assert 0.18 < width < 0.36
    assert win_rate_intervals(table, rounds=0)["ci_low"].isna().all()
