"""Online Elo (PRD section 3.1; Chatbot Arena)."""

from __future__ import annotations

import numpy as np
import pytest

from peerboard_testing import make_judgments
from peercore.ranking.elo import elo_intervals, elo_ratings, elo_trajectory, elo_update


def test_single_update_by_hand():
    # equal ratings: expected 0.5, a win moves each by K/2
    assert elo_update(1000, 1000, 1.0) == (1016.0, 984.0)
    a, b = elo_update(1200, 1000, 0.0, k=32)
    expected_a = 1 / (1 + 10 ** (-200 / 400))
    assert a == pytest.approx(1200 - 32 * expected_a)
    assert a + b == pytest.approx(2200)


def test_given_order_matches_hand_computation():
    table = make_judgments([("a", "b", "model_a"), ("b", "a", "tie")])
    got = elo_ratings(table)
    a, b = elo_update(1000, 1000, 1.0)
    b, a = elo_update(b, a, 0.5)
    assert got["a"] == pytest.approx(a) and got["b"] == pytest.approx(b)


def test_weight_multiplies_update():
    table = make_judgments([("a", "b", "model_a")])
    assert elo_ratings(table, row_weights=np.array([0.5]))["a"] == pytest.approx(1008.0)
    assert elo_ratings(table, k=4)["a"] == pytest.approx(1002.0)


def test_total_rating_is_conserved_with_shuffles(small_judgments):
    got = elo_ratings(small_judgments, shuffles=50, seed=3)
    assert got.sum() == pytest.approx(1000 * 3)


def test_shuffles_are_seeded_and_differ_from_given_order(small_judgments):
    one = elo_ratings(small_judgments, shuffles=20, seed=1)
    assert one.equals(elo_ratings(small_judgments, shuffles=20, seed=1))
    assert not one.equals(elo_ratings(small_judgments, shuffles=20, seed=2))


def test_shuffled_mean_equals_mean_of_single_orders(small_judgments):
    rng = np.random.default_rng(7)
    orders = [np.argsort(rng.random(len(small_judgments))) for _ in range(5)]
    manual = np.mean([elo_ratings(small_judgments.iloc[o].reset_index(drop=True)).to_numpy() for o in orders], axis=0)
    got = elo_ratings(small_judgments, shuffles=5, seed=7)
    assert np.allclose(got.to_numpy(), manual)


def test_trajectory_checkpoints_and_final_row(small_judgments):
    traj = elo_trajectory(small_judgments, every=4)
    assert list(traj.index) == [4, 6]
    assert np.allclose(traj.iloc[-1].to_numpy(), elo_ratings(small_judgments).to_numpy())
    assert np.allclose(traj.sum(axis=1), 3000)


def test_parameter_errors(small_judgments):
    with pytest.raises(ValueError, match="every must be a positive number"):
        elo_trajectory(small_judgments, every=0)
    with pytest.raises(ValueError, match="shuffles must be >= 0"):
        elo_ratings(small_judgments, shuffles=-1)
    with pytest.raises(ValueError, match="base > 1"):
        elo_ratings(small_judgments, base=1)
    with pytest.raises(ValueError, match="one value per judgment"):
        elo_ratings(small_judgments, row_weights=np.ones(2))


def test_strong_model_ranks_first_with_intervals():
    table = make_judgments([("a", "b", "model_a")] * 40 + [("b", "a", "model_b")] * 40 + [("a", "b", "model_b")] * 10)
    got = elo_intervals(table, rounds=200, shuffles=20, seed=0)
    assert got.loc["a", "elo"] > got.loc["b", "elo"]
    assert got.loc["a", "ci_low"] > got.loc["b", "ci_high"]
    assert (got["battles"] == 90).all()


# ---------------------------------------------------- weighted Elo (PRD Appendix E)
# Each review's update is multiplied by its reviewer's weight. "sum": w_r / sum(w)
# (weights summing to 1, what PRD's Table 2 used); "mean": w_r / mean(w) (Algorithm 1).


def _two_judges():
    # j1 (weight 3) says a beats b, then j2 (weight 1) says b beats a.
    return make_judgments([("a", "b", "model_a", "j1"), ("a", "b", "model_b", "j2")])


def test_weighted_elo_sum_normalisation_by_hand():
    # w / sum(w) = 3/4 and 1/4. Battle 1: E_a = 1/2, delta = 32 * 3/4 * (1 - 1/2) = 12
    # -> a 1012, b 988. Battle 2: E_a = 1 / (1 + 10^(-24/400)); delta = 32 * 1/4 * (0 - E_a).
    e_a = 1 / (1 + 10 ** ((988 - 1012) / 400))
    a = 1012 + 32 * 0.25 * (0 - e_a)
    got = elo_ratings(_two_judges(), weights={"j1": 3.0, "j2": 1.0}, weight_normalisation="sum")
    assert got["a"] == pytest.approx(a) and got["b"] == pytest.approx(2000 - a)
    # The default is "sum" (what PRD Table 2 used).
    assert elo_ratings(_two_judges(), weights={"j1": 3.0, "j2": 1.0}).equals(got)


def test_weighted_elo_mean_normalisation_by_hand():
    # w / mean(w) = 3/2 and 1/2. Battle 1: delta = 32 * 3/2 * 1/2 = 24 -> a 1024, b 976.
    e_a = 1 / (1 + 10 ** ((976 - 1024) / 400))
    a = 1024 + 32 * 0.5 * (0 - e_a)
    got = elo_ratings(_two_judges(), weights={"j1": 3.0, "j2": 1.0}, weight_normalisation="mean")
    assert got["a"] == pytest.approx(a) and got["b"] == pytest.approx(2000 - a)


def test_weight_normalisations_differ_by_the_number_of_judges():
    # "sum" with K equals "mean" with K / J (J = 2 judges here), update by update.
    weights = {"j1": 3.0, "j2": 1.0}
    by_sum = elo_ratings(_two_judges(), weights=weights, weight_normalisation="sum", k=32)
    by_mean = elo_ratings(_two_judges(), weights=weights, weight_normalisation="mean", k=16)
    assert np.allclose(by_sum.to_numpy(), by_mean.to_numpy())


def test_weight_normalisation_reaches_trajectory_and_intervals():
    weights = {"j1": 3.0, "j2": 1.0}
    for normalisation in ("sum", "mean"):
        final = elo_ratings(_two_judges(), weights=weights, weight_normalisation=normalisation)
        traj = elo_trajectory(_two_judges(), weights=weights, weight_normalisation=normalisation)
        assert np.allclose(traj.iloc[-1].to_numpy(), final.to_numpy())
        point = elo_intervals(_two_judges(), rounds=0, shuffles=0, weights=weights, weight_normalisation=normalisation)
        assert np.allclose(point["elo"].to_numpy(), final.to_numpy())


def test_unknown_weight_normalisation():
    with pytest.raises(ValueError, match=r"weight_normalisation must be one of \('sum', 'mean'\), got 'max'"):
        elo_ratings(_two_judges(), weights={"j1": 1.0, "j2": 1.0}, weight_normalisation="max")


def test_zero_shuffles_is_one_pass_in_the_given_order(small_judgments):
    # shuffles=0 replays the stored order once (the CLI's --elo-shuffles 0).
    got = elo_intervals(small_judgments, rounds=0, shuffles=0)["elo"]
    ratings = {"a": 1000.0, "b": 1000.0, "c": 1000.0}
    score = {"model_a": 1.0, "tie": 0.5, "model_b": 0.0}
    for a, b, w in small_judgments[["model_a", "model_b", "winner"]].itertuples(index=False):
        ratings[a], ratings[b] = elo_update(ratings[a], ratings[b], score[w])
    assert got.to_dict() == pytest.approx(ratings)
