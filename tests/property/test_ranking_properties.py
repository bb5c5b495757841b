"""Invariants of the ranking estimators (hypothesis)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from peercore.judgments import judgments_from_frame, mirror
from peercore.ranking.bradley_terry import bradley_terry
from peercore.ranking.elo import _run_replicas, elo_ratings
from peercore.ranking._battles import encode
from peercore.ranking.winrate import pairwise_win_fraction, win_rates

MODELS = ["m0", "m1", "m2", "m3", "m4"]


@st.composite
def judgment_tables(draw, min_rows=1, max_rows=40):
    n_models = draw(st.integers(2, len(MODELS)))
    n = draw(st.integers(min_rows, max_rows))
    rows = []
    for k in range(n):
        a = draw(st.integers(0, n_models - 1))
        b = draw(st.integers(0, n_models - 2))
        b = b + 1 if b >= a else b
        rows.append({
            "question_id": str(k),
            "model_a": MODELS[a],
            "model_b": MODELS[b],
            "judge": draw(st.sampled_from(["j1", "j2"])),
            "winner": draw(st.sampled_from(["model_a", "model_b", "tie"])),
        })
    return judgments_from_frame(pd.DataFrame(rows))


def _relabel(table, mapping):
    out = table.copy()
    out["model_a"] = table["model_a"].map(mapping)
    out["model_b"] = table["model_b"].map(mapping)
    return judgments_from_frame(out)


relabel = st.permutations(["z", "y", "x", "w", "v"]).map(lambda names: dict(zip(MODELS, names)))


@settings(max_examples=60, deadline=None)
@given(table=judgment_tables(), mapping=relabel)
def test_relabelling_models_permutes_scores(table, mapping):
    for score in (win_rates, lambda t: bradley_terry(t), lambda t: elo_ratings(t)):
        before = score(table).rename(index=mapping)
        after = score(_relabel(table, mapping))
        pd.testing.assert_series_equal(before.sort_index(), after.sort_index(), check_names=False, atol=1e-6, rtol=0)


@settings(max_examples=60, deadline=None)
@given(table=judgment_tables())
def test_swapping_positions_with_the_verdict_changes_no_win_rate_or_bt(table):
    swapped = mirror(table)
    pd.testing.assert_series_equal(win_rates(table), win_rates(swapped))
    pd.testing.assert_frame_equal(pairwise_win_fraction(table), pairwise_win_fraction(swapped))
    pd.testing.assert_series_equal(bradley_terry(table), bradley_terry(swapped), atol=1e-6, rtol=0)


@settings(max_examples=60, deadline=None)
@given(table=judgment_tables(), k=st.floats(1, 64), seed=st.integers(0, 2**16))
def test_elo_updates_are_zero_sum(table, k, seed):
    battles = encode(table)
    orders = np.random.default_rng(seed).integers(0, len(battles), size=(3, len(battles)))
    final = _run_replicas(battles, np.ones(len(battles)), orders, np.array([len(battles)]),
                          k=k, scale=400.0, base=10.0, initial=1000.0)
    assert np.allclose(final.sum(axis=1), 1000.0 * battles.n_models)
    assert elo_ratings(table, k=k).sum() == __import__("pytest").approx(1000.0 * battles.n_models)


@settings(max_examples=40, deadline=None)
@given(table=judgment_tables(min_rows=2))
def test_win_rates_bounded_and_average_half(table):
    rates = win_rates(table)
    assert ((rates >= 0) & (rates <= 1)).all()
    played = pd.concat([table["model_a"], table["model_b"]]).value_counts()
    # every battle hands out exactly one point
    assert (rates * played.reindex(rates.index)).sum() == __import__("pytest").approx(len(table))


@settings(max_examples=60, deadline=None)
@given(table=judgment_tables(), w1=st.floats(0.01, 10), w2=st.floats(0.01, 10), k=st.floats(1, 64))
def test_weighted_elo_sum_normalisation_is_mean_normalisation_with_k_over_j(table, w1, w2, k):
    # PRD Appendix E: w / sum(w) = (w / mean(w)) / J, so "sum" with K is "mean" with K / J;
    # either way the updates stay zero-sum.
    import pytest

    weights = {"j1": w1, "j2": w2}
    n_judges = table["judge"].nunique()
    by_sum = elo_ratings(table, k=k, weights=weights, weight_normalisation="sum")
    by_mean = elo_ratings(table, k=k / n_judges, weights=weights, weight_normalisation="mean")
    pd.testing.assert_series_equal(by_sum, by_mean, atol=1e-9, rtol=0)
    assert by_sum.sum() == pytest.approx(1000.0 * len(by_sum))


@settings(max_examples=80, deadline=None)
@given(n=st.integers(2, 12), fraction=st.floats(0, 1), seed=st.integers(0, 2**16))
def test_selections_give_exactly_k_comparisons_without_repeats(n, fraction, seed):
    # Liusie et al. 2024, section 3.4: random = K distinct ordered pairs (K <= N(N-1));
    # no-repeat = at most one order of each unordered pair (K <= N(N-1)/2).
    from peercore.ranking.selection import select_no_repeat, select_random

    k_random = int(round(fraction * n * (n - 1)))
    pairs = select_random(n, k_random, rng=np.random.default_rng(seed))
    assert len(pairs) == k_random == len({tuple(p) for p in pairs.tolist()})
    k_no_repeat = int(round(fraction * n * (n - 1) // 2))
    pairs = select_no_repeat(n, k_no_repeat, rng=np.random.default_rng(seed))
    assert len(pairs) == k_no_repeat == len({frozenset(p) for p in pairs.tolist()})
    assert (pairs[:, 0] != pairs[:, 1]).all()


@given(st.lists(st.integers(0, 40), max_size=300), st.sampled_from([41, 10 ** 9]), st.booleans())
@settings(max_examples=200, deadline=None)
def test_counted_unique_is_numpy_unique(values, size, inverse):
    """``counted_unique`` (bincount over a small range, sorting over a wide one; issue 18's Leaderboard spent
    0.15 s sorting a million pair keys) returns what ``np.unique`` returns, counts and inverse included."""
    from peercore.domain.verdicts import counted_unique

    keys = np.asarray(values, dtype=np.int64)
    got = counted_unique(keys, size, return_inverse=inverse)
    expected = np.unique(keys, return_counts=True, return_inverse=inverse)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert np.array_equal(np.asarray(g).reshape(-1), np.asarray(e).reshape(-1))
