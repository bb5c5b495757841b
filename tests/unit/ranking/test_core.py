"""The one solver (peercore.ranking.core): every Bradley-Terry-type estimator goes through it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from peercore.errors import ConvergenceError
from peercore.ranking import core


def _random_design(seed: int, *, n: int = 5, rows: int = 400, k: int = 2, soft: bool = False):
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, rows)
    j = (i + rng.integers(1, n, rows)) % n
    x = rng.normal(size=(rows, k))
    theta = rng.normal(size=n)
    gamma = rng.normal(size=k) * 0.5
    p = expit(theta[i] - theta[j] + x @ gamma)
    y = p if soft else (rng.random(rows) < p).astype(float)
    return core.Design(n, i, j, y, np.ones(rows), x=x)


def test_fit_maximises_the_penalised_likelihood_like_a_general_optimiser():
    design = _random_design(0)
    solution = core.fit(design, l2=1e-6, l2_features=0.5)

    def negative(params):
        return -core.objective(design, params[:5], params[5:], l2=1e-6, l2_features=0.5)

    reference = minimize(negative, np.zeros(7), method="BFGS", options={"gtol": 1e-9}).x
    reference[:5] -= reference[:5].mean()
    assert np.allclose(solution.params, reference, atol=1e-4)
    assert abs(solution.theta.mean()) < 1e-12  # one penalty for every rating: centred


def test_soft_outcomes_and_weights_are_fractional_and_repeated_battles():
    """Two identical battles with weight 1 each are one battle of weight 2; y=0.3 is 3 wins in 10."""
    i, j = np.array([0, 0, 1]), np.array([1, 2, 2])
    doubled = core.Design(3, np.r_[i, i], np.r_[j, j], np.r_[0.3, 0.6, 0.5, 0.3, 0.6, 0.5], np.ones(6))
    weighted = core.Design(3, i, j, np.array([0.3, 0.6, 0.5]), np.full(3, 2.0))
    assert np.allclose(core.fit(doubled).theta, core.fit(weighted).theta, atol=1e-9)


def test_no_ratings_is_a_plain_logistic_glm():
    rng = np.random.default_rng(3)
    x = np.column_stack([np.ones(500), rng.normal(size=500)])
    y = (rng.random(500) < expit(x @ [0.3, -1.2])).astype(float)
    solution = core.fit(core.Design(0, [], [], y, np.ones(500), x=x))
    batch = core.fit_glm_batch(x, y, np.ones((1, 500)))
    assert np.allclose(solution.gamma, batch[0], atol=1e-7)
    # maximum likelihood: the score equations hold
    assert np.allclose(x.T @ (y - expit(x @ solution.gamma)), 0, atol=1e-6)


def test_sandwich_equals_the_inverse_information_when_the_model_is_right_on_average():
    """For a well-specified model, E[meat] = information: the two covariances agree (large n)."""
    design = _random_design(1, rows=40_000, k=1, soft=False)
    solution = core.fit(design)
    robust = core.sandwich(design, solution)
    h = core.information(design, solution)
    h[:5, :5] += h[:5, :5].diagonal().mean() / 5  # the gauge, then centre
    model = np.linalg.inv(h)
    centre = np.eye(6)
    centre[:5, :5] -= 1 / 5
    model = centre @ model @ centre.T
    assert np.allclose(np.sqrt(np.diag(robust)), np.sqrt(np.diag(model)), rtol=0.05)


def test_sandwich_is_wider_than_the_model_when_verdicts_are_overdispersed():
    """A judge that gives the same verdict on ten copies of a battle: the sandwich sees the clumping."""
    rng = np.random.default_rng(2)
    i = rng.integers(0, 4, 300)
    j = (i + rng.integers(1, 4, 300)) % 4
    y = (rng.random(300) < 0.6).astype(float)
    clumped = core.Design(4, np.repeat(i, 10), np.repeat(j, 10), np.repeat(y, 10), np.ones(3000))
    aggregated = core.Design(4, i, j, y, np.full(300, 10.0), count=np.ones(300))  # one battle of weight 10
    robust_clumped = np.diag(core.sandwich(clumped, core.fit(clumped)))[:4]
    robust_weighted = np.diag(core.sandwich(aggregated, core.fit(aggregated)))[:4]
    assert (robust_weighted > 5 * robust_clumped).all()  # a row of weight 10 scores 10x: variance 10x larger


def test_fit_rounds_equals_one_fit_per_round():
    design = _random_design(4, k=0, soft=True)
    start = core.fit(design)
    rng = np.random.default_rng(0)
    w = rng.poisson(1.0, (6, design.rows)).astype(float)
    wins, games = w * design.y, w
    together = core.fit_rounds(design, wins, games, start, tol=1e-10)
    for r in range(6):
        alone = core.fit(core.Design(5, design.i, design.j, design.y, w[r]), tol=1e-10).theta
        assert np.allclose(together[r], alone, atol=1e-7)


def test_fit_batch_equals_fit_on_each_problem():
    rng = np.random.default_rng(5)
    b, k, n = 7, 12, 4
    i = rng.integers(0, n, (b, k))
    j = (i + rng.integers(1, n, (b, k))) % n
    y = rng.random((b, k))
    w = (rng.random((b, k)) < 0.8).astype(float)
    batch = core.fit_batch(i, j, y, w, n, l2=1e-3, offset=0.2)
    for p in range(b):
        alone = core.fit(core.Design(n, i[p], j[p], y[p], w[p], offset=0.2), l2=1e-3).theta
        assert np.allclose(batch[p], alone, atol=1e-7)
    with pytest.raises(ValueError, match="l2 must be a positive"):
        core.fit_batch(i, j, y, w, n, l2=0.0)


def test_fit_batch_matches_the_efficiency_modules_batched_poe_bt():
    """peercore.efficiency solves its batched PoE-BT (plain and debiased) through this solver."""
    from peercore.efficiency import batch_scores

    rng = np.random.default_rng(6)
    b, k, n = 5, 15, 5
    i = rng.integers(0, n, (b, k))
    j = (i + rng.integers(1, n, (b, k))) % n
    p = rng.random((b, k))
    used = rng.random((b, k)) < 0.7
    theirs = batch_scores(i, j, p, used, n, "poe_bt")
    ours = core.fit_batch(i, j, p, used.astype(float), n, l2=core.DEFAULT_L2)
    assert np.allclose(theirs, ours, atol=1e-6)
    # debiased (Liusie et al. 2024, PoE-BT with gamma = -logit(beta)): an offset of logit(beta) on every row
    beta = 0.7
    theirs = batch_scores(i, j, p, used, n, "poe_bt", beta=beta)
    ours = core.fit_batch(i, j, p, used.astype(float), n, l2=core.DEFAULT_L2, offset=float(np.log(beta / (1 - beta))))
    assert np.allclose(theirs, ours, atol=1e-6)


def test_components_and_unseen_ratings():
    # models 0-1 and 2-3 never meet; model 4 never plays: each component centred, 4 stays at 0
    design = core.Design(5, [0, 0, 1, 2, 3], [1, 1, 0, 3, 2], [1.0, 0.0, 0.0, 1.0, 1.0], np.ones(5))
    assert design.components.tolist()[:4] == [0, 0, 1, 1] and design.components[4] == 2
    theta = core.fit(design).theta
    assert theta[0] + theta[1] == pytest.approx(0, abs=1e-9) and theta[2] + theta[3] == pytest.approx(0, abs=1e-9)
    assert theta[4] == 0.0


def test_bad_input_is_refused_with_the_value():
    with pytest.raises(ValueError, match="outcomes y must lie in"):
        core.Design(2, [0], [1], [1.5], [1.0])
    with pytest.raises(ValueError, match="non-negative"):
        core.Design(2, [0], [1], [1.0], [-1.0])
    with pytest.raises(ValueError, match="l2 must be finite and >= 0"):
        core.fit(core.Design(2, [0], [1], [1.0], [1.0]), l2=-1)
    with pytest.raises(ConvergenceError, match="did not converge in 2 iterations"):
        core.fit(core.Design(2, [0, 0], [1, 1], [1.0, 1.0], [1.0, 1.0]), l2=0.0, max_iter=2)
    with pytest.raises(ValueError, match="bread must be"):
        design = _random_design(0)
        core.sandwich(design, core.fit(design), bread="crusty")
    assert math.isfinite(core.objective(_random_design(0), np.zeros(5), np.zeros(2)))
