"""peercore.efficiency: batched scorers equal the one-problem ones; the curve behaves as defined."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from peercore.efficiency import (
    METHODS, _orders, batch_scores, efficiency_curve, problems_from_judgments, spearman_rows, summarise,
)
from peercore.judgments import judgments_from_frame
from peercore.ranking.poe import (
    Comparisons, average_probability, bradley_terry_hard, poe_bradley_terry, poe_gaussian, win_ratio,
)

REFERENCE = {
    "win_ratio": win_ratio,
    "avg_prob": average_probability,
    "bt": bradley_terry_hard,
    "poe_bt": poe_bradley_terry,
    "poe_gaussian": lambda c: poe_gaussian(c).scores,
}


def random_problems(rng, b=60, k=9, n=5):
    i = rng.integers(0, n, (b, k))
    j = (i + rng.integers(1, n, (b, k))) % n
    p = np.round(rng.random((b, k)), 1)  # includes exact 0.5 (ties) and 0 / 1
    used = rng.random((b, k)) < 0.5     # sparse: many disconnected graphs and uncompared candidates
    return i, j, p, used


@pytest.mark.parametrize("method", METHODS)
def test_batched_scores_equal_the_one_problem_functions(method):
    rng = np.random.default_rng(7)
    i, j, p, used = random_problems(rng)
    got = batch_scores(i, j, p, used, 5, method)
    for b in range(len(i)):
        keep = used[b]
        expected = REFERENCE[method](Comparisons(tuple("abcde"), i[b][keep], j[b][keep], p[b][keep]))
        np.testing.assert_allclose(got[b], expected, atol=1e-7, equal_nan=True, err_msg=f"problem {b}")


def test_batch_scores_validates_its_input():
    with pytest.raises(ValueError, match="method must be one of"):
        batch_scores(np.zeros((1, 1)), np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1), bool), 2, "elo")
    with pytest.raises(ValueError, match="one shape"):
        batch_scores(np.zeros((1, 2)), np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1), bool), 2, "bt")


def test_spearman_rows_matches_scipy_and_defines_constant_rows():
    rng = np.random.default_rng(3)
    predicted, reference = rng.integers(0, 4, (50, 6)).astype(float), rng.random((50, 6))
    got = spearman_rows(predicted, reference)
    for row in range(50):
        if np.ptp(predicted[row]) > 0:
            assert got[row] == pytest.approx(scipy.stats.spearmanr(predicted[row], reference[row]).statistic)
    assert spearman_rows(np.ones((1, 3)), np.array([[1.0, 2.0, 3.0]]))[0] == 0.0
    assert np.isnan(spearman_rows(np.array([[1.0, 2.0, 3.0]]), np.ones((1, 3)))[0])


def study_judgments(p_noise=0.15, questions=8, seed=0) -> pd.DataFrame:
    """Five contestants with clear strengths, every ordered pair judged once per question."""
    rng = np.random.default_rng(seed)
    strength = {"a": 2.0, "b": 1.0, "c": 0.0, "d": -1.0, "e": -2.0}
    rows = []
    for q, (x, y) in itertools.product(range(questions), itertools.permutations(strength, 2)):
        p = float(np.clip(1 / (1 + np.exp(-(strength[x] - strength[y]))) + rng.normal(0, p_noise), 0, 1))
        rows.append({"question_id": f"q{q}", "model_a": x, "model_b": y, "judge": "j", "p_a": round(p, 3),
                     "winner": "model_a" if p > 0.5 else "model_b" if p < 0.5 else "tie"})
    return judgments_from_frame(pd.DataFrame(rows))


def test_full_budget_recovers_the_full_data_ranking():
    judgments = study_judgments()
    curve = efficiency_curve(judgments, strategies=("random",), sizes=[20], repeats=3)
    assert set(curve["k"]) == {20}
    np.testing.assert_allclose(curve["spearman"], 1.0)
    assert (curve["questions"] == 8).all()


def test_more_comparisons_rank_better():
    curve = summarise(efficiency_curve(study_judgments(p_noise=0.3), sizes=[2, 8], repeats=8, seed=1))
    for (strategy, method), part in curve.groupby(["strategy", "method"]):
        by_k = part.set_index("k")["median"]
        assert by_k[8] > by_k[2], (strategy, method)


def test_greedy_takes_each_pair_once_and_its_curve_ends_there():
    judgments = study_judgments()
    (problem, *_) = problems_from_judgments(judgments)
    order = _orders(problem, "greedy", np.random.default_rng(0))
    pairs = {tuple(sorted((problem.i[r], problem.j[r]))) for r in order}
    assert len(order) == len(pairs) == 10  # 5 candidates: 10 unordered pairs
    curve = efficiency_curve(judgments, sizes=[5, 10, 20], repeats=2)
    assert sorted(set(curve.loc[curve["strategy"] == "greedy", "k"])) == [5, 10]
    assert sorted(set(curve.loc[curve["strategy"] == "random", "k"])) == [5, 10, 20]


def test_random_order_takes_each_comparison_once():
    # Random selection (Liusie et al. 2024, section 3.4): the first k of a random order
    # are k distinct comparisons drawn without replacement, for every k.
    (problem, *_) = problems_from_judgments(study_judgments())
    for seed in range(5):
        order = _orders(problem, "random", np.random.default_rng(seed))
        assert sorted(order.tolist()) == list(range(len(problem.p)))


def test_greedy_first_picks_connect_the_candidates():
    (problem, *_) = problems_from_judgments(study_judgments())
    order = _orders(problem, "greedy", np.random.default_rng(5))[:4]
    touched = set(problem.i[order]) | set(problem.j[order])
    assert len(touched) >= 4  # a balanced start, not one candidate compared four times


def test_same_seed_same_curve_and_other_seed_other_curve():
    judgments = study_judgments()
    first = efficiency_curve(judgments, sizes=[3], repeats=3, seed=11)
    again = efficiency_curve(judgments, sizes=[3], repeats=3, seed=11)
    other = efficiency_curve(judgments, sizes=[3], repeats=3, seed=12)
    pd.testing.assert_frame_equal(first, again)
    assert not np.allclose(first["spearman"], other["spearman"])


def test_a_shared_reference_ranking():
    judgments = study_judgments()
    curve = efficiency_curve(judgments, strategies=("random",), sizes=[20], repeats=1, reference="win_ratio")
    by_method = curve.set_index("method")["spearman"]
    assert by_method["win_ratio"] == pytest.approx(1.0)
    assert by_method["poe_gaussian"] <= 1.0


def test_bad_options_are_refused():
    judgments = study_judgments()
    with pytest.raises(ValueError, match="unknown method"):
        efficiency_curve(judgments, methods=("elo",))
    with pytest.raises(ValueError, match="reference must be"):
        efficiency_curve(judgments, reference="human")
    with pytest.raises(ValueError, match="repeats"):
        efficiency_curve(judgments, repeats=0)
    two = judgments[judgments["model_a"].isin(["a", "b"]) & judgments["model_b"].isin(["a", "b"])]
    with pytest.raises(ValueError, match="three or more"):
        efficiency_curve(two)


def test_summarise_takes_median_and_band_over_repeats():
    curve = pd.DataFrame({"strategy": "random", "method": "bt", "k": 1, "repeat": range(5),
                          "spearman": [0.1, 0.2, 0.3, 0.4, 0.5], "questions": 3})
    (row,) = summarise(curve, band=(0.25, 0.75)).to_dict("records")
    assert (row["median"], row["low"], row["high"]) == pytest.approx((0.3, 0.2, 0.4))
    with pytest.raises(ValueError, match="band"):
        summarise(curve, band=(0.9, 0.1))
