"""Invariants of the PoE scores and of greedy selection (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from peercore.ranking.poe import (
    Comparisons,
    average_probability,
    bradley_terry_hard,
    poe_bradley_terry,
    poe_gaussian,
    win_ratio,
)
from peercore.ranking.selection import GreedySelector

SETTINGS = settings(max_examples=50, deadline=None)

# p on a grid of 1/1000: 1 - p is then exact enough that (i, j, p) -> (j, i, 1 - p)
# keeps every hard decision. (For arbitrary doubles it need not: p = 0.5 - 2**-54 is
# "second wins", but 1 - p rounds to exactly 0.5, "tie".)
PROBABILITY = st.integers(0, 1000).map(lambda k: k / 1000)

SCORERS = {
    "win_ratio": win_ratio,
    "avg_prob": average_probability,
    "bt_hard": bradley_terry_hard,
    "poe_bt": poe_bradley_terry,
    "poe_bt_debiased": lambda c: poe_bradley_terry(c, debias=True),
    "poe_gaussian": lambda c: poe_gaussian(c).scores,
    "poe_gaussian_debiased": lambda c: poe_gaussian(c, debias=True).scores,
}
ORIENTATION_FREE = ("win_ratio", "avg_prob", "bt_hard", "poe_bt", "poe_gaussian")


@st.composite
def comparisons(draw, min_n: int = 2, max_n: int = 7, max_k: int = 30) -> Comparisons:
    n = draw(st.integers(min_n, max_n))
    k = draw(st.integers(0, max_k))
    i = draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k))
    offset = draw(st.lists(st.integers(1, n - 1), min_size=k, max_size=k))
    j = [(a + o) % n for a, o in zip(i, offset)]
    p = draw(st.lists(PROBABILITY, min_size=k, max_size=k))
    mean = np.mean(p) if p else 0.5
    if k and not 0 < mean < 1:  # debiased PoE-BT is undefined there (tested in unit tests)
        p[0] = 0.5
    return Comparisons(tuple(f"m{x}" for x in range(n)), np.array(i, dtype=int), np.array(j, dtype=int), p)


def assert_same(a: np.ndarray, b: np.ndarray, atol: float) -> None:
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_allclose(a[~np.isnan(a)], b[~np.isnan(b)], atol=atol, rtol=0)


@SETTINGS
@given(comparisons(), st.randoms(use_true_random=False))
def test_relabelling_candidates_permutes_every_score(c, random):
    perm = np.arange(c.n)
    random.shuffle(perm)  # candidate x becomes candidate perm[x]
    names = [""] * c.n
    for old, new in enumerate(perm):
        names[new] = c.candidates[old]
    relabelled = Comparisons(tuple(names), perm[c.i], perm[c.j], c.p)
    for name, score in SCORERS.items():
        atol = 1e-6 if "bt" in name else 1e-12
        assert_same(score(relabelled)[perm], score(c), atol)
    np.testing.assert_allclose(poe_gaussian(relabelled).covariance[np.ix_(perm, perm)], poe_gaussian(c).covariance, atol=1e-10)


@SETTINGS
@given(comparisons(), st.data())
def test_swapping_presentation_order_changes_nothing(c, data):
    flip = np.array(data.draw(st.lists(st.booleans(), min_size=len(c), max_size=len(c))), dtype=bool)
    swapped = Comparisons(
        c.candidates,
        np.where(flip, c.j, c.i),
        np.where(flip, c.i, c.j),
        np.where(flip, 1.0 - c.p, c.p),
    )
    for name in ORIENTATION_FREE:
        score = SCORERS[name]
        assert_same(score(swapped), score(c), 1e-6 if "bt" in name else 1e-12)
    np.testing.assert_allclose(poe_gaussian(swapped).covariance, poe_gaussian(c).covariance, atol=1e-12)


@SETTINGS
@given(st.integers(2, 9), st.data(), st.booleans(), st.floats(0.1, 10))
def test_gaussian_on_the_full_symmetric_set_is_affine_in_average_probability(n, data, debias, sigma2):
    # Every ordered pair once: W'W = 2(nI - 11'), W'mu = 2(n-1)(avg - 1/2) (beta cancels),
    # and the anchor makes sum(s) = 0, so s = (n-1)/n (avg - 1/2) exactly.
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    p = data.draw(st.lists(st.floats(0, 1), min_size=len(i), max_size=len(i)))
    c = Comparisons(tuple(str(x) for x in range(n)), i, j, p)
    expected = (n - 1) / n * (average_probability(c) - 0.5)
    np.testing.assert_allclose(poe_gaussian(c, debias=debias, sigma2=sigma2).scores, expected, atol=1e-9, rtol=0)


@SETTINGS
@given(st.integers(2, 10), st.data(), st.sampled_from([1e-6, 1e-3, 1.0]))
def test_sherman_morrison_updates_equal_the_direct_inverse(n, data, ridge):
    pair = st.tuples(st.integers(0, n - 1), st.integers(1, n - 1)).map(lambda t: (t[0], (t[0] + t[1]) % n))
    added = data.draw(st.lists(pair, max_size=3 * n))
    selector = GreedySelector(n, rng=np.random.default_rng(0), ridge=ridge)
    for i, j in added:
        selector.add(i, j)
    greedy_steps = data.draw(st.integers(0, selector.remaining))
    selector.select(greedy_steps)
    pairs = selector.pairs
    w = np.zeros((len(pairs) + 1, n))
    w[np.arange(len(pairs)), pairs[:, 0]] = 1.0
    w[np.arange(len(pairs)), pairs[:, 1]] = -1.0
    w[-1] = 1.0 / n
    direct = np.linalg.inv(w.T @ w + ridge * np.eye(n))
    assert np.abs(selector.A - direct).max() <= 1e-8 * np.abs(direct).max()
