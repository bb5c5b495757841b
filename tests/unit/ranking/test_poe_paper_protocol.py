"""The PoE paper's protocol for random comparisons and its hard Bradley-Terry baseline (issue 22, item 5).

Liusie, Raina, Fathullah, Gales (2024), "Efficient LLM Comparative Assessment: a Product of
Experts Framework for Pairwise Comparisons" (EMNLP 2024), experiments with random comparison
subsets and the Bradley-Terry baseline; the authors' released code
(adianliusie/PoE-LLM-comparative, ``PoE_analysis/utils.py``):

* ``generate_random_mask``: K of the N(N-1) ordered comparisons at random, redrawn until no row
  and no column of the mask is empty (every candidate shown first and second at least once);
  ``generate_symmetric_random_mask``: K/2 unordered pairs in both orders, redrawn until every
  candidate is in one.
* ``get_zermelo_solution``: Zermelo's iterations on the win matrix plus ``(1 - I) / (N - 1)``
  prior wins; re-implemented below from that function as the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

from peercore.ranking.poe import Comparisons, bradley_terry_hard, poe_scores
from peercore.ranking.selection import select_random, select_symmetric


def _zermelo_with_prior_wins(i, j, won_by_first, n, max_iter=100_000, tol=1e-13):
    """The authors' get_zermelo_solution: W = wins + (1 - I)/(N - 1); Zermelo's MM updates; log ratings."""
    wins = np.zeros((n, n))
    np.add.at(wins, (i, j), won_by_first)
    np.add.at(wins, (j, i), 1.0 - won_by_first)
    wins = wins + (1 - np.eye(n)) / (n - 1)
    ratings = np.exp(np.ones(n))
    for _ in range(max_iter):
        old = ratings.copy()
        denom = (wins + wins.T) / (old[None, :] + old[:, None])
        ratings = wins.sum(1) / denom.sum(1)
        ratings = ratings / np.exp(np.log(ratings).mean())
        if np.max(np.abs(ratings - old)) < tol:
            break
    return np.log(ratings)


def test_every_candidate_is_compared_first_and_second_with_cover():
    # Without the protocol, K = 2N random comparisons of N = 30 leave some candidate out of a position
    # in almost every draw (P(candidate never first) = (1 - 1/30)^60 ~ 13%, for 60 candidate-positions).
    n, k = 30, 60
    plain = [select_random(n, k, rng=np.random.default_rng(seed)) for seed in range(20)]
    assert sum(np.bincount(p[:, 0], minlength=n).min() == 0 or np.bincount(p[:, 1], minlength=n).min() == 0
               for p in plain) >= 15
    for seed in range(20):
        pairs = select_random(n, k, rng=np.random.default_rng(seed), cover=True)
        assert len(pairs) == k and len({tuple(p) for p in pairs.tolist()}) == k
        assert np.bincount(pairs[:, 0], minlength=n).min() >= 1 and np.bincount(pairs[:, 1], minlength=n).min() >= 1
    sym = select_symmetric(9, 10, rng=np.random.default_rng(0), cover=True)
    assert set(sym.ravel().tolist()) == set(range(9))
    with pytest.raises(ValueError, match=r"k=5 comparisons cannot compare every one of n=6 candidates .*k >= 6"):
        select_random(6, 5, rng=np.random.default_rng(0), cover=True)


def test_hard_bradley_terry_with_the_papers_prior_wins_equals_the_authors_zermelo():
    rng = np.random.default_rng(3)
    n = 8
    pairs = select_random(n, 14, rng=rng, cover=True)
    p = rng.random(len(pairs))
    p[0] = 0.5  # a tie: half a win each
    comparisons = Comparisons([f"c{k}" for k in range(n)], pairs[:, 0], pairs[:, 1], p)
    hard = np.where(p > 0.5, 1.0, np.where(p < 0.5, 0.0, 0.5))
    want = _zermelo_with_prior_wins(pairs[:, 0], pairs[:, 1], hard, n)
    got = bradley_terry_hard(comparisons, prior="wins", l2=1e-12, tol=1e-12)
    assert got - got.mean() == pytest.approx(want - want.mean(), abs=1e-6)
    # the default ridge is not the paper's baseline: with 14 comparisons of 8 the scores differ by up to 0.69
    ridge = bradley_terry_hard(comparisons)
    assert np.max(np.abs((ridge - ridge.mean()) - (want - want.mean()))) > 0.5
    scores = poe_scores(comparisons_frame(comparisons), method="bt", bt_prior="wins")
    assert scores.to_numpy() - scores.mean() == pytest.approx(got - got.mean(), abs=1e-5)
    with pytest.raises(ValueError, match=r"prior must be one of \('ridge', 'wins'\), got 'flat'"):
        bradley_terry_hard(comparisons, prior="flat")


def comparisons_frame(c: Comparisons):
    import pandas as pd

    from peercore.judgments import judgments_from_frame

    names = np.asarray(c.candidates, dtype=object)
    return judgments_from_frame(pd.DataFrame({
        "question_id": "q", "model_a": names[c.i], "model_b": names[c.j], "judge": "j",
        "winner": np.where(c.p > 0.5, "model_a", np.where(c.p < 0.5, "model_b", "tie")), "p_a": c.p}))
