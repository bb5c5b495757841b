"""Selective judging with a guaranteed agreement (Jung, Brahman & Choi 2025, "Trust or Escalate").

Sections cited are the paper's (arXiv 2407.18370): 2.1 the human-agreement guarantee and
fixed-sequence testing (eqs. 1-4), 2.2 confidence (Simulated Annotators), 2.3 the cascade.
The coverage of the guarantee over 1,000 calibration draws is measured in
``benchmarks/selective_simulation.py`` (too slow for a unit test).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq
from scipy.stats import beta, binom
from statsmodels.stats.proportion import proportion_confint

from peercore import selective as S


# ------------------------------------------------------------------------------ the bound


@pytest.mark.parametrize("k, n, delta", [(0, 30, 0.1), (3, 40, 0.1), (12, 57, 0.05), (99, 100, 0.01), (5, 5, 0.1)])
def test_clopper_pearson_upper_is_the_exact_binomial_bound(k, n, delta):
    # Section 2.1: R+ = sup{r : P(Bin(n, r) <= k) >= delta}, the reference code's brentq of binom.cdf.
    got = float(S.clopper_pearson_upper(k, n, delta))
    if k == n:
        assert got == 1.0
        return
    assert got == pytest.approx(beta.ppf(1 - delta, k + 1, n - k), abs=1e-12)
    assert got == pytest.approx(brentq(lambda r: binom.cdf(k, n, r) - delta, 0, 0.99999), abs=1e-9)
    # statsmodels' two-sided Clopper-Pearson at level 1 - 2 delta has this upper end
    assert got == pytest.approx(proportion_confint(k, n, alpha=2 * delta, method="beta")[1], abs=1e-12)


def test_clopper_pearson_upper_vectorised_and_checked():
    got = S.clopper_pearson_upper(np.array([0, 1, 0]), np.array([10, 10, 0]), 0.1)
    assert got[0] < got[1] and math.isnan(got[2])
    with pytest.raises(ValueError, match="delta must be a number in \\(0, 1\\), got 1.5"):
        S.clopper_pearson_upper(1, 10, 1.5)
    with pytest.raises(ValueError, match="need 0 <= k <= n"):
        S.clopper_pearson_upper(11, 10, 0.1)


# -------------------------------------------------------------------------- confidences


def test_confidence_from_probability_is_the_larger_side():
    # Section 2.2: c = max(p, 1 - p) for a judge that gives a label probability.
    got = S.confidence_from_probability([0.9, 0.2, 0.5, np.nan])
    assert np.allclose(got[:3], [0.9, 0.8, 0.5]) and math.isnan(got[3])
    assert S.verdict_from_probability([0.9, 0.2, 0.5, np.nan]).tolist() == [0, 1, 2, -1]
    with pytest.raises(ValueError, match="p_a must lie in \\[0, 1\\], got 1.2"):
        S.confidence_from_probability([0.5, 1.2])


def test_confidence_from_samples_is_the_share_siding_with_the_majority():
    votes = np.array([[0, 0, 1], [1, 1, 1], [0, 1, -1], [0, 2, 2], [-1, -1, -1]])
    got = S.confidence_from_samples(votes)
    assert np.allclose(got[:4], [2 / 3, 1.0, 0.5, 2 / 3]) and math.isnan(got[4])
    # the samples method stores p_a = mean vote; its confidence is the same number
    assert np.allclose(S.confidence_from_probability(S.probability_from_votes(votes))[:4], got[:4])


def test_confidence_from_orders_mirrors_the_second_order():
    # forward (a first) says a; backward (b first) says its model_b, i.e. a: they agree.
    got = S.confidence_from_orders([0, 0, 2, 0], [1, 0, 2, 2])
    assert got.tolist() == [1.0, 0.5, 0.5, 0.75]  # two ties express no preference


def test_confidence_from_annotators_averages_then_takes_the_larger_side():
    # Section 2.2 (Simulated Annotators): mean of N annotators x 2 orders, then max(p, 1 - p).
    p = np.array([[0.9, 0.7, 0.8, np.nan], [0.4, 0.6, 0.5, 0.3]])
    assert np.allclose(S.confidence_from_annotators(p), [0.8, 0.55])


def test_agrees_with_reference_says_how_ties_count():
    verdict = [0, 1, 2, 0, -1, 0]
    human = [0, 0, 0, 2, 1, -1]
    excluded = S.agrees_with_reference(verdict, human)
    assert excluded[:3].tolist() == [1.0, 0.0, 0.0] and math.isnan(excluded[3]) and excluded[4] == 0.0
    assert math.isnan(excluded[5])
    disagree = S.agrees_with_reference(verdict, human, ties="disagree")
    assert disagree[3] == 0.0
    assert S.agrees_with_reference([2], [2], ties="disagree").tolist() == [0.0]
    with pytest.raises(ValueError, match="ties must be one of \\('exclude', 'disagree'\\), got 'half'"):
        S.agrees_with_reference(verdict, human, ties="half")


# --------------------------------------------------------------------------- calibrate


def _reference_walk(confidence, agrees, *, alpha, delta, min_kept, grid):
    """Section 2.1 written out as the reference code does it (binomial tail by brentq), plus our
    departure: a first tested threshold that fails keeps nothing."""
    last = None
    for lam in grid:
        kept = confidence >= lam
        n = int(kept.sum())
        if n < min_kept:
            continue
        k = int((agrees[kept] == 0).sum())
        bound = 1.0 if k == n else brentq(lambda r: binom.cdf(k, n, r) - delta, 0, 0.999999999)
        if bound > alpha:
            break
        last = lam
    return math.inf if last is None else last


@pytest.mark.parametrize("seed", range(6))
def test_calibrate_walks_the_grid_like_the_paper(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(60, 400))
    confidence = np.round(rng.uniform(0.5, 1.0, n), 3)
    agrees = (rng.random(n) < 0.3 + 0.7 * (confidence - 0.5) * 2).astype(float)
    alpha = float(rng.choice([0.1, 0.2, 0.3]))
    grid = S.DEFAULT_GRID if seed < 2 else np.round(np.linspace(1.0, 0.5, 201), 4)  # the default and a coarser one
    plan = S.calibrate(confidence, agrees, alpha=alpha, delta=0.1, grid=None if seed < 2 else grid)
    expected = _reference_walk(confidence, agrees, alpha=alpha, delta=0.1, min_kept=30, grid=grid)
    assert plan.threshold == expected
    if math.isfinite(expected):
        kept = confidence >= expected
        assert plan.n_kept == kept.sum() and plan.kept_share == kept.mean()
        assert plan.agreement == pytest.approx(agrees[kept].mean())
        assert plan.upper_bound_disagreement <= alpha and plan.guarantee == pytest.approx(1 - alpha)
        assert plan.walk["passed"].iloc[:-1].all()


def test_calibrate_by_hand():
    # 40 sure verdicts (c = 0.9), all right; 40 at c = 0.6 with 20 wrong. alpha = 0.1, delta = 0.1:
    # at 0.9: 0 of 40 wrong, bound 1 - 0.1^(1/40) = 0.0559 <= 0.1, passes; at 0.6: 20 of 80 wrong, fails.
    confidence = np.r_[np.full(40, 0.9), np.full(40, 0.6)]
    agrees = np.r_[np.ones(40), np.tile([1.0, 0.0], 20)]
    plan = S.calibrate(confidence, agrees, alpha=0.1, delta=0.1)
    assert plan.threshold == pytest.approx(0.601)  # the lowest grid value above 0.6 keeps the same 40
    assert plan.n_kept == 40 and plan.agreement == 1.0
    assert plan.upper_bound_disagreement == pytest.approx(1 - 0.1 ** (1 / 40))
    assert plan.walk["threshold"].iloc[-1] == pytest.approx(0.6) and not plan.walk["passed"].iloc[-1]
    # the thresholds above 0.9 keep nothing and are skipped, not failed
    assert plan.walk["threshold"].iloc[0] == pytest.approx(0.9)


def test_calibrate_needs_min_kept_and_keeps_nothing_when_the_first_test_fails():
    assert math.isinf(S.calibrate(np.full(29, 0.99), np.ones(29), alpha=0.2, delta=0.1).threshold)
    every = S.calibrate(np.full(30, 0.99), np.ones(30), alpha=0.2, delta=0.1)
    assert every.n_kept == 30 and every.threshold == 0.0  # every threshold passes: the walk reaches the grid's end
    # the reference code would return its top threshold here, without a guarantee; we keep nothing
    bad = S.calibrate(np.full(50, 0.95), np.r_[np.ones(25), np.zeros(25)], alpha=0.2, delta=0.1)
    assert math.isinf(bad.threshold) and bad.n_kept == 0 and math.isnan(bad.guarantee)
    assert not bad.keeps([0.99, 1.0]).any()


def test_calibrate_leaves_out_nan_labels_and_never_keeps_nan_confidence():
    confidence = np.r_[np.full(40, 0.9), [np.nan] * 5, np.full(5, 0.95)]
    agrees = np.r_[np.ones(40), np.zeros(5), [np.nan] * 5]
    plan = S.calibrate(confidence, agrees, alpha=0.2, delta=0.1)
    assert plan.n_calibration == 45 and plan.n_kept == 40 and plan.kept_share == pytest.approx(40 / 45)


@pytest.mark.parametrize("kwargs, message", [
    ({"alpha": 0}, "alpha must be a number in \\(0, 1\\), got 0"),
    ({"delta": 1.0}, "delta must be a number in \\(0, 1\\), got 1.0"),
    ({"min_kept": 0}, "min_kept must be an integer >= 1, got 0"),
    ({"grid": [0.9, 0.95]}, "grid must be strictly decreasing .* got 0.9 then 0.95"),
])
def test_calibrate_refuses_bad_options(kwargs, message):
    options = {"alpha": 0.1, "delta": 0.1, **kwargs}
    with pytest.raises(ValueError, match=message):
        S.calibrate(np.full(40, 0.9), np.ones(40), **options)


def test_calibrate_refuses_bad_arrays():
    with pytest.raises(ValueError, match="agrees must hold 1, 0 or NaN, got 2.0"):
        S.calibrate([0.9, 0.8], [1, 2], alpha=0.1, delta=0.1)
    with pytest.raises(ValueError, match="one length, got 2 and 1"):
        S.calibrate([0.9, 0.8], [1], alpha=0.1, delta=0.1)


# ----------------------------------------------------------------------------- cascade


def _two_judges(seed, n=600):
    rng = np.random.default_rng(seed)
    c1, c2 = rng.uniform(0.5, 1, n), rng.uniform(0.5, 1, n)
    a1 = (rng.random(n) < c1).astype(float)
    a2 = (rng.random(n) < 0.2 + 0.8 * c2).astype(float)
    return c1, a1, c2, a2


def test_cascade_calibrates_each_stage_on_what_earlier_ones_left_at_delta_over_stages():
    # Section 2.3: stage s sees only what stages < s did not keep; each at delta / S.
    c1, a1, c2, a2 = _two_judges(0)
    plan = S.plan_cascade([(c1, a1), (c2, a2)], alpha=0.15, delta=0.1, costs=[1.0, 10.0], human_cost=100.0)
    first = S.calibrate(c1, a1, alpha=0.15, delta=0.05)
    assert plan.stages[0].threshold == first.threshold and plan.stages[0].delta == 0.05
    left = ~(c1 >= first.threshold)
    second = S.calibrate(c2[left], a2[left], alpha=0.15, delta=0.05)
    assert plan.stages[1].threshold == second.threshold
    keep2 = left & (c2 >= second.threshold)
    assert plan.reach.tolist() == pytest.approx([1.0, left.mean()])
    assert plan.kept.tolist() == pytest.approx([(~left).mean(), keep2.mean()])
    assert plan.escalated == pytest.approx((left & ~keep2).mean())
    kept = ~left | keep2
    pooled = np.where(~left, a1, a2)[kept].mean()
    assert plan.agreement == pytest.approx(pooled)
    # cost per 1,000 comparisons: every comparison pays stage 1, those reaching stage 2 pay it, escalated pay humans
    assert plan.cost_per_1000.tolist() == pytest.approx([1000.0, 10_000.0 * left.mean()])
    assert plan.human_cost_per_1000 == pytest.approx(100_000.0 * plan.escalated)
    assert plan.total_cost_per_1000 == pytest.approx(1000 + 10_000 * left.mean() + 100_000 * plan.escalated)
    table = plan.table(["small", "large"])
    assert table.index.tolist() == ["small", "large", "humans"] and table.loc["large", "level"] == pytest.approx(0.95)


def test_apply_plan_sends_each_comparison_to_the_first_stage_that_keeps_it():
    c1, a1, c2, a2 = _two_judges(1)
    plan = S.plan_cascade([(c1, a1), (c2, a2)], alpha=0.15, delta=0.1)
    t1, t2 = plan.stages[0].threshold, plan.stages[1].threshold
    new1 = np.array([t1, t1 - 0.01, t1 - 0.01, np.nan, 0.5])
    new2 = np.array([1.0, t2, t2 - 0.01, t2, np.nan])
    assert S.apply_plan(plan, [new1, new2]).tolist() == [0, 1, -1, 1, -1]
    single = S.calibrate(c1, a1, alpha=0.15, delta=0.1)
    assert S.apply_plan(single, np.array([single.threshold, 0.0])).tolist() == [0, -1]
    with pytest.raises(ValueError, match="one array per stage \\(2\\), got 1"):
        S.apply_plan(plan, [new1])


def test_assess_reports_the_realised_agreement_on_held_out_comparisons():
    c1, a1, c2, a2 = _two_judges(2)
    plan = S.plan_cascade([(c1[:300], a1[:300]), (c2[:300], a2[:300])], alpha=0.2, delta=0.1)
    got = S.assess(plan, [c1[300:], c2[300:]], [a1[300:], a2[300:]])
    stage = S.apply_plan(plan, [c1[300:], c2[300:]])
    assert got.loc[0, "n"] == (stage == 0).sum() and got.loc[-1, "n"] == (stage == -1).sum()
    assert got.loc[0, "agreement"] == pytest.approx(a1[300:][stage == 0].mean())
    both = np.where(stage == 0, a1[300:], a2[300:])[stage >= 0]
    assert got.loc["all", "agreement"] == pytest.approx(both.mean()) and got["target"].iloc[0] == pytest.approx(0.8)


def test_cascade_checks_its_input():
    with pytest.raises(ValueError, match="stages is empty"):
        S.plan_cascade([], alpha=0.1, delta=0.1)
    with pytest.raises(ValueError, match="same calibration comparisons, got lengths \\[3, 4\\]"):
        S.plan_cascade([(np.ones(3), np.ones(3)), (np.ones(4), np.ones(4))], alpha=0.1, delta=0.1)
    with pytest.raises(ValueError, match="costs must give one non-negative number per stage \\(1\\)"):
        S.plan_cascade([(np.ones(3), np.ones(3))], alpha=0.1, delta=0.1, costs=[1, 2])


def test_a_stage_that_keeps_nothing_passes_everything_on():
    c1, a1, c2, a2 = _two_judges(3)
    useless = np.full(len(c1), 0.99), np.r_[np.zeros(len(c1) // 2), np.ones(len(c1) - len(c1) // 2)]
    plan = S.plan_cascade([useless, (c2, a2)], alpha=0.15, delta=0.1)
    assert math.isinf(plan.stages[0].threshold) and plan.reach[1] == 1.0
    assert isinstance(plan.table(), pd.DataFrame)
