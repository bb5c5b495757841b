"""Unit tests for peercore.ranking.selection (which comparisons to make)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.csgraph

from peercore.ranking.selection import (
    ORDERS,
    GreedySelector,
    select_greedy,
    select_no_repeat,
    select_random,
    select_symmetric,
)

SELECTORS = [select_random, select_no_repeat, select_symmetric, select_greedy]


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def fresh_inverse(pairs: np.ndarray, n: int, ridge: float) -> np.ndarray:
    """(W~'W~ + eps I)^-1 from scratch: anchoring row 1'/n, one row e_i - e_j per pair."""
    w = np.zeros((len(pairs) + 1, n))
    rows = np.arange(len(pairs))
    w[rows, pairs[:, 0]] = 1.0
    w[rows, pairs[:, 1]] = -1.0
    w[-1] = 1.0 / n
    return np.linalg.inv(w.T @ w + ridge * np.eye(n))


def n_components(pairs: np.ndarray, n: int) -> int:
    graph = scipy.sparse.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    return scipy.sparse.csgraph.connected_components(graph, directed=False)[0]


def unordered(pairs: np.ndarray) -> set[tuple[int, int]]:
    return {(min(i, j), max(i, j)) for i, j in pairs.tolist()}


# ------------------------------------------------------------------------ shared checks


@pytest.mark.parametrize("select", SELECTORS)
def test_shape_dtype_and_valid_pairs(select):
    pairs = select(7, 12, rng=rng())
    assert pairs.shape == (12, 2) and pairs.dtype == np.intp
    assert ((pairs >= 0) & (pairs < 7)).all()
    assert (pairs[:, 0] != pairs[:, 1]).all()


@pytest.mark.parametrize("select", SELECTORS)
def test_deterministic_for_a_seed(select):
    np.testing.assert_array_equal(select(9, 20, rng=rng(5)), select(9, 20, rng=rng(5)))
    assert not np.array_equal(select(9, 20, rng=rng(5)), select(9, 20, rng=rng(6)))


@pytest.mark.parametrize("select", SELECTORS)
def test_zero_budget(select):
    assert select(5, 0, rng=rng()).shape == (0, 2)
    assert select(0, 0, rng=rng()).shape == (0, 2)
    assert select(1, 0, rng=rng()).shape == (0, 2)


@pytest.mark.parametrize("select", SELECTORS)
def test_one_candidate_cannot_be_compared(select):
    with pytest.raises(ValueError, match=r"need at least 2 candidates to compare, got n=1"):
        select(1, 1, rng=rng())


@pytest.mark.parametrize("select", SELECTORS)
@pytest.mark.parametrize(("n", "k", "bad"), [(5, -1, "k"), (-2, 3, "n"), (5, 2.5, "k"), (5.0, 2, "n"), (True, 1, "n")])
def test_sizes_must_be_non_negative_integers(select, n, k, bad):
    value = {"n": n, "k": k}[bad]
    with pytest.raises(ValueError, match=rf"{bad} must be a non-negative integer, got {value!r}"):
        select(n, k, rng=rng())


@pytest.mark.parametrize("select", SELECTORS)
def test_rng_must_be_a_generator(select):
    with pytest.raises(ValueError, match=r"rng must be a numpy.random.Generator .* got RandomState"):
        select(5, 3, rng=np.random.RandomState(0))
    with pytest.raises(ValueError, match=r"got int"):
        select(5, 3, rng=0)


def test_numpy_integers_are_accepted():
    assert select_no_repeat(np.int64(5), np.int32(4), rng=rng()).shape == (4, 2)
    assert select_random(np.int64(5), np.int32(4), rng=rng()).shape == (4, 2)


# ------------------------------------------------------------------------------ random
# Liusie, Manakul & Gales (2024), "LLM Comparative Assessment", section 3.4, random
# selection: K of the N(N-1) ordered comparisons (x_i, x_j), drawn without replacement.


class TestSelectRandom:
    def test_k_distinct_ordered_pairs(self):
        # Today's bug: drawn with replacement, so a caller de-duplicating got fewer than K.
        for seed in range(50):
            pairs = select_random(5, 10, rng=rng(seed))
            assert len({tuple(p) for p in pairs.tolist()}) == 10, seed

    def test_full_budget_gives_every_ordered_pair_once(self):
        # By hand: N = 3 has the N(N-1) = 6 ordered pairs 01 02 10 12 20 21.
        pairs = select_random(3, 6, rng=rng())
        assert sorted(map(tuple, pairs.tolist())) == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]

    def test_budget_above_n_n_minus_1_is_refused(self):
        with pytest.raises(ValueError, match=r"k=7 exceeds the n\(n-1\)=6 distinct ordered pairs of n=3"):
            select_random(3, 7, rng=rng())
        with pytest.raises(ValueError, match=r"k=21 exceeds the n\(n-1\)=20 distinct ordered pairs of n=5"):
            select_random(5, 21, rng=rng())

    def test_both_orders_of_a_pair_may_be_drawn(self):
        # Random selection does not forbid (x_j, x_i) after (x_i, x_j) (that is no-repeat).
        both = 0
        for seed in range(200):
            pairs = select_random(4, 6, rng=rng(seed))
            both += len(unordered(pairs)) < 6
        assert both > 100  # P(6 of 12 ordered pairs hit 6 distinct unordered ones) = 2^6 / C(12, 6) = 0.07

    def test_uniform_over_ordered_pairs(self):
        # Each ordered pair is in a K-subset of the N(N-1) with probability K / (N(N-1)).
        n, k, seeds = 4, 3, 1200
        counts = np.zeros((n, n))
        for seed in range(seeds):
            pairs = select_random(n, k, rng=rng(seed))
            np.add.at(counts, (pairs[:, 0], pairs[:, 1]), 1)
        assert np.trace(counts) == 0
        off = counts[~np.eye(n, dtype=bool)]
        expected = seeds * k / (n * (n - 1))  # 300 each; sd ~16
        assert np.abs(off - expected).max() < 70


# --------------------------------------------------------------------------- no repeat
# Liusie, Manakul & Gales (2024), section 3.4, no-repeat selection: "If (x_i, x_j) is
# selected then (x_j, x_i) will not be selected." At most one order per unordered pair,
# so at most N(N-1)/2 comparisons; the order shown is a fair coin.


class TestSelectNoRepeat:
    def test_one_order_per_unordered_pair(self):
        # Today's bug: select_no_repeat(3, 6) returned all six ordered pairs.
        for seed in range(50):
            pairs = select_no_repeat(10, 45, rng=rng(seed))
            assert len(unordered(pairs)) == 45, seed

    def test_full_budget_by_hand(self):
        # N = 3: the N(N-1)/2 = 3 unordered pairs {0,1} {0,2} {1,2}, each once, in one order.
        pairs = select_no_repeat(3, 3, rng=rng())
        assert unordered(pairs) == {(0, 1), (0, 2), (1, 2)}
        assert len(pairs) == 3

    @pytest.mark.parametrize(("n", "k", "cap"), [(3, 4, 3), (3, 6, 3), (5, 11, 10), (2, 2, 1)])
    def test_budget_above_n_n_minus_1_over_2_is_refused(self, n, k, cap):
        with pytest.raises(ValueError, match=rf"k={k} exceeds the n\(n-1\)/2={cap} unordered pairs of n={n}"):
            select_no_repeat(n, k, rng=rng())

    def test_orientation_is_a_fair_coin(self):
        # Each of the 3 pairs of N = 3, over 400 seeds: lower index first ~ half the time.
        lower_first = np.zeros((3, 3))
        for seed in range(400):
            for i, j in select_no_repeat(3, 3, rng=rng(seed)).tolist():
                lower_first[min(i, j), max(i, j)] += i < j
        shares = lower_first[np.triu_indices(3, 1)] / 400  # sd 0.025
        assert np.all(np.abs(shares - 0.5) < 0.1), shares

    def test_uniform_over_unordered_pairs(self):
        # Each unordered pair is chosen with probability K / (N(N-1)/2), each order with half that.
        n, k, seeds = 4, 2, 1200
        counts = np.zeros((n, n))
        for seed in range(seeds):
            pairs = select_no_repeat(n, k, rng=rng(seed))
            np.add.at(counts, (pairs[:, 0], pairs[:, 1]), 1)
        pair_counts = (counts + counts.T)[np.triu_indices(n, 1)]
        assert np.abs(pair_counts - seeds * k / 6).max() < 70  # 400 each; sd ~16
        assert np.abs(counts[~np.eye(n, dtype=bool)] - seeds * k / 12).max() < 60  # 200 each; sd ~13


# --------------------------------------------------------------------------- symmetric


class TestSelectSymmetric:
    def test_each_pair_in_both_orders(self):
        pairs = select_symmetric(8, 20, rng=rng())
        np.testing.assert_array_equal(pairs[1::2], pairs[0::2, ::-1])
        assert (pairs[0::2, 0] < pairs[0::2, 1]).all()
        assert len(unordered(pairs)) == 10

    def test_odd_budget_is_rounded_down(self):
        assert select_symmetric(8, 7, rng=rng()).shape == (6, 2)
        assert select_symmetric(8, 1, rng=rng()).shape == (0, 2)

    def test_full_budget(self):
        pairs = select_symmetric(5, 20, rng=rng())
        assert sorted(map(tuple, pairs.tolist())) == [(i, j) for i in range(5) for j in range(5) if i != j]

    def test_budget_above_cap(self):
        with pytest.raises(ValueError, match=r"k=22 exceeds the n\(n-1\)=20 ordered pairs of n=5"):
            select_symmetric(5, 22, rng=rng())


# ------------------------------------------------------------------------------ greedy


class TestGreedySelector:
    def test_initial_matrix_is_the_inverse_of_anchor_plus_ridge(self):
        for n in (1, 2, 7):
            selector = GreedySelector(n, rng=rng(), ridge=1e-3)
            np.testing.assert_allclose(selector.A, fresh_inverse(np.zeros((0, 2), int), n, 1e-3), rtol=1e-12)

    @pytest.mark.parametrize("ridge", [1e-6, 1e-2])
    def test_sherman_morrison_matches_a_fresh_inverse(self, ridge):
        n = 12
        selector = GreedySelector(n, rng=rng(2), ridge=ridge)
        for step in range(n * (n - 1) // 2):
            selector.add(*selector.next_pair())
            if step % 7 == 0 or step < n:
                fresh = fresh_inverse(selector.pairs, n, ridge)
                assert np.abs(selector.A - fresh).max() <= 1e-8 * np.abs(fresh).max(), step

    def test_sherman_morrison_with_repeated_and_reversed_pairs(self):
        n = 5
        selector = GreedySelector(n, rng=rng())
        for i, j in [(0, 1), (1, 0), (0, 1), (3, 4), (2, 4), (4, 2), (1, 3)]:
            selector.add(i, j)
        fresh = fresh_inverse(selector.pairs, n, selector.ridge)
        assert np.abs(selector.A - fresh).max() <= 1e-8 * np.abs(fresh).max()
        # Connected now: A is O(1), no trace of the 1/ridge = 1e6 it started from.
        assert np.abs(selector.A).max() < 10

    def test_each_choice_maximises_the_criterion_of_a_fresh_inverse(self):
        n = 9
        selector = GreedySelector(n, rng=rng(4))
        chosen: set[tuple[int, int]] = set()
        for _ in range(25):
            a = fresh_inverse(selector.pairs, n, selector.ridge)
            value = {(i, j): a[i, i] + a[j, j] - 2 * a[i, j] for i in range(n) for j in range(i + 1, n) if (i, j) not in chosen}
            i, j = selector.next_pair()
            assert i < j and (i, j) not in chosen
            assert value[(i, j)] >= max(value.values()) * (1 - 1e-8)
            np.testing.assert_allclose(selector.criterion()[i, j], value[(i, j)], rtol=1e-8)
            selector.add(i, j)
            chosen.add((i, j))

    def test_ridge_start_connects_the_graph_in_n_minus_1_steps(self):
        for n in (2, 6, 13):
            pairs = select_greedy(n, n - 1, rng=rng(n))
            assert n_components(pairs, n) == 1

    def test_first_picks_form_a_matching(self):
        # All pairs start tied; a pair touching an already-compared candidate is less
        # informative than one between two fresh candidates.
        pairs = select_greedy(10, 5, rng=rng(1))
        assert sorted(pairs.ravel().tolist()) == list(range(10))

    def test_degrees_are_balanced(self):
        n, k = 20, 76
        pairs = select_greedy(n, k, rng=rng(3))
        degree = np.bincount(pairs.ravel(), minlength=n)
        assert degree.max() - degree.min() <= 1  # 2k/n = 7.6: every degree is 7 or 8

    def test_no_pair_is_chosen_twice_and_the_budget_is_capped(self):
        n = 6
        selector = GreedySelector(n, rng=rng())
        pairs = selector.select(15)
        assert len(unordered(pairs)) == 15 and selector.remaining == 0
        with pytest.raises(ValueError, match=r"all n\(n-1\)/2=15 unordered pairs have been chosen"):
            selector.next_pair()
        with pytest.raises(ValueError, match=r"k=1 needs 1 new unordered pairs but only 0"):
            selector.select(1)

    def test_added_pairs_are_not_offered_again(self):
        selector = GreedySelector(3, rng=rng())
        selector.add(2, 0)
        selector.add(1, 2)
        assert selector.next_pair() == (0, 1)
        np.testing.assert_array_equal(selector.pairs, [[2, 0], [1, 2]])

    def test_select_continues_from_added_comparisons(self):
        selector = GreedySelector(4, rng=rng())
        selector.add(0, 1)
        assert unordered(selector.select(1)) == {(2, 3)}

    def test_bad_pair(self):
        selector = GreedySelector(3, rng=rng())
        with pytest.raises(ValueError, match=r"\(1, 1\) is not a pair of distinct candidates in 0..2"):
            selector.add(1, 1)
        with pytest.raises(ValueError, match=r"\(0, 3\) is not a pair"):
            selector.add(0, 3)

    @pytest.mark.parametrize("ridge", [0, -1e-3, float("inf"), "small", True])
    def test_ridge_must_be_positive(self, ridge):
        with pytest.raises(ValueError, match=r"ridge must be a positive finite number, got"):
            GreedySelector(4, rng=rng(), ridge=ridge)

    def test_a_is_read_only(self):
        selector = GreedySelector(3, rng=rng())
        with pytest.raises(ValueError):
            selector.A[0, 0] = 1.0


class TestSelectGreedy:
    def test_orders_share_the_unordered_choice(self):
        sorted_pairs = select_greedy(8, 14, rng=rng(9), order="sorted")
        random_pairs = select_greedy(8, 14, rng=rng(9), order="random")
        both = select_greedy(8, 28, rng=rng(9), order="both")
        assert (sorted_pairs[:, 0] < sorted_pairs[:, 1]).all()
        np.testing.assert_array_equal(np.sort(random_pairs, axis=1), sorted_pairs)
        np.testing.assert_array_equal(both[0::2], sorted_pairs)
        np.testing.assert_array_equal(both[1::2], sorted_pairs[:, ::-1])

    def test_random_order_uses_both_orientations(self):
        pairs = select_greedy(20, 150, rng=rng())
        first_lower = (pairs[:, 0] < pairs[:, 1]).mean()
        assert 0.35 < first_lower < 0.65

    def test_both_rounds_an_odd_budget_down(self):
        assert select_greedy(6, 7, rng=rng(), order="both").shape == (6, 2)

    def test_full_budget(self):
        pairs = select_greedy(6, 15, rng=rng())
        assert len(unordered(pairs)) == 15
        pairs = select_greedy(6, 30, rng=rng(), order="both")
        assert len({tuple(p) for p in pairs.tolist()}) == 30

    def test_budget_above_cap(self):
        with pytest.raises(ValueError, match=r"k=16 exceeds the 15 unordered pairs of n=6 candidates \(order='random'\)"):
            select_greedy(6, 16, rng=rng())
        with pytest.raises(ValueError, match=r"k=31 exceeds the 30 ordered pairs of n=6 candidates \(order='both'\)"):
            select_greedy(6, 31, rng=rng(), order="both")

    def test_unknown_order(self):
        assert ORDERS == ("random", "sorted", "both")
        with pytest.raises(ValueError, match=r"order must be one of .* got 'alternate'"):
            select_greedy(6, 3, rng=rng(), order="alternate")

    def test_ties_are_broken_by_the_generator(self):
        # With 10 candidates the first pick is a 45-way tie: different seeds differ.
        firsts = {tuple(select_greedy(10, 1, rng=rng(seed), order="sorted")[0]) for seed in range(20)}
        assert len(firsts) > 5
