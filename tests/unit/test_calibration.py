"""peercore.calibration: prediction-powered inference for human-anchored leaderboards (issue 23).

Oracles: hand computations of the equations cited in each test, ``ppi_py`` 0.2.3 (the
PPI++ authors' package: ``ppi_mean_ci``, ``ppi_logistic_ci``), and peercore's own
``win_rates`` / ``bradley_terry`` for the judge-only and classical estimates. The
1,000-repetition simulation is ``benchmarks/calibration_simulation.py``; a reduced one
(200 repetitions) is here.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pandas as pd
import pytest

# ppi_py compiles its logistic statistics with numba on first call: 50 s on a loaded 2-core
# machine, for a loop over 2,300 rows that runs in milliseconds as Python. njit reads the
# flag when ppi_py is imported, so it is set first.
numba.config.DISABLE_JIT = True
from ppi_py import ppi_logistic_ci, ppi_logistic_pointestimate, ppi_mean_ci, ppi_mean_pointestimate  # noqa: E402
from scipy.special import expit, ndtri  # noqa: E402

from peercore import calibration as C  # noqa: E402
from peercore.ranking.bradley_terry import bradley_terry  # noqa: E402
from peercore.ranking.winrate import win_rates  # noqa: E402

ELO = 400.0 / math.log(10.0)


def world(rng, n_models=4, n=2000, noise=0.1):
    """Comparisons with item effects, a soft informative judge and hard reference votes."""
    strength = np.linspace(0.6, -0.6, n_models)
    a = rng.integers(0, n_models, n)
    b = (a + rng.integers(1, n_models, n)) % n_models
    d = strength[a] - strength[b] + 1.5 * rng.standard_normal(n)
    y = (rng.random(n) < expit(d)).astype(float)
    f = np.clip(expit(0.8 * d + 0.3 + noise * rng.standard_normal(n)), 0, 1)
    return a, b, f, y


def frame(a, b, score, models):
    winner = np.where(score == 1, "model_a", np.where(score == 0, "model_b", "tie"))
    return pd.DataFrame({"question_id": [str(i) for i in range(len(a))], "model_a": np.asarray(models)[a],
                         "model_b": np.asarray(models)[b], "judge": "j", "winner": winner})


# ---------------------------------------------------------------------------------- ppi_mean


def test_ppi_mean_by_hand():
    # PPI++ eq. (2) and its variance at lam = 1/2, ddof 0 (PPI paper's sigma-hat):
    # theta = 0.5 * mean(fu) + mean(y - 0.5 fl); var = 0.25 var(fu)/N + var(y - 0.5 fl)/n.
    y, fl, fu = [1.0, 0.0, 1.0, 1.0], [1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    est = C.ppi_mean(y, fl, fu, lam=0.5)
    rect = np.array([0.5, 0.0, 1.0, 0.5])          # y - 0.5 fl
    assert est.estimate == pytest.approx(0.5 * 0.5 + 0.5)
    var = 0.25 * 0.25 / 6 + rect.var() / 4          # var(fu) = 1/4
    assert est.se == pytest.approx(math.sqrt(var))
    z = float(ndtri(0.975))
    assert (est.ci_low, est.ci_high) == pytest.approx((0.75 - z * math.sqrt(var), 0.75 + z * math.sqrt(var)))
    assert est.classical == pytest.approx(0.75) and est.classical_se == pytest.approx(math.sqrt(0.1875 / 4))
    assert est.judge_only == pytest.approx(5 / 10)
    assert est.effective_labels == pytest.approx(4 * (0.1875 / 4) / var)


@pytest.mark.parametrize("lam", ["tuned", 0.0, 0.3, 1.0])
def test_ppi_mean_equals_ppi_py(lam):
    # ppi_py.ppi_mean_ci (Angelopoulos, Duchi, Zrnic 2023, eq. (2), Example 6.1 for the tuned lam).
    rng = np.random.default_rng(3)
    a, b, f, y = world(rng, n=3000)
    y_l, f_l, f_u = y[:250], f[:250], f[250:]
    est = C.ppi_mean(y_l, f_l, f_u, lam=lam, level=0.9)
    ref_lam = None if lam == "tuned" else lam
    low, high = ppi_mean_ci(y_l, f_l, f_u, alpha=0.1, lam=ref_lam)
    assert (est.ci_low, est.ci_high) == pytest.approx((low[0], high[0]), abs=1e-12)
    point = ppi_mean_pointestimate(y_l, f_l, f_u, lam=ref_lam)
    assert est.estimate == pytest.approx(float(np.squeeze(point)), abs=1e-12)
    if lam == "tuned":
        assert 0.0 < est.lam <= 1.0


def test_lambda_zero_is_the_classical_interval():
    rng = np.random.default_rng(4)
    _, _, f, y = world(rng, n=1000)
    est = C.ppi_mean(y[:100], f[:100], f[100:], lam=0.0)
    assert (est.estimate, est.ci_low, est.ci_high) == (est.classical, est.classical_low, est.classical_high)
    assert est.effective_labels == pytest.approx(100)


def test_a_judge_that_carries_nothing_gets_lambda_near_zero():
    rng = np.random.default_rng(5)
    y = (rng.random(20_300) < 0.6).astype(float)
    noise = rng.random(20_300)
    est = C.ppi_mean(y[:300], noise[:300], noise[300:])
    assert est.lam < 0.1
    assert est.effective_labels == pytest.approx(300, rel=0.02)
    assert est.ci_high - est.ci_low <= est.classical_high - est.classical_low + 1e-12


def test_edge_cases_no_label_constant_judge_all_labelled_one_label():
    f = np.array([0.2, 0.9, 0.4])
    none = C.ppi_mean([], [], f)
    assert math.isnan(none.estimate) and math.isnan(none.lam) and none.effective_labels == 0
    assert none.judge_only == pytest.approx(0.5)
    constant = C.ppi_mean([1.0, 0.0, 1.0], [0.5, 0.5, 0.5], [0.5] * 10)
    assert constant.lam == 0.0 and constant.estimate == pytest.approx(2 / 3)
    everything = C.ppi_mean([1.0, 0.0, 1.0], [0.9, 0.1, 0.4], [])
    assert everything.lam == 0.0 and everything.estimate == pytest.approx(2 / 3)
    assert everything.se == pytest.approx(everything.classical_se)
    one = C.ppi_mean([1.0], [0.7], f)
    assert math.isnan(one.se) and math.isnan(one.ci_low)


def test_weighted_estimator_with_uniform_weights_is_ppi_over_all_comparisons():
    # Zrnic & Candes eq. (3), self-normalised: with pi = n/M for all, theta =
    # lam * mean_M(f) + mean_n(y - lam f), and the classical estimate is mean_n(y).
    rng = np.random.default_rng(6)
    _, _, f, y = world(rng, n=1200)
    n, m = 200, 1200
    est = C.ppi_mean(y[:n], f[:n], f[n:], lam=0.6, weights=np.full(n, m / n))
    assert est.estimate == pytest.approx(0.6 * f.mean() + np.mean(y[:n] - 0.6 * f[:n]))
    assert est.classical == pytest.approx(y[:n].mean())
    # Its variance is the linearisation's: sum of (lam (f - fbar) + xi w e)^2 / M^2.
    e = y[:n] - 0.6 * f[:n] - (est.estimate - 0.6 * f.mean())
    phi = 0.6 * (f - f.mean())
    phi[:n] += (m / n) * e
    assert est.se == pytest.approx(math.sqrt((phi ** 2).sum()) / m)


def test_ppi_mean_rejects_bad_input_naming_it():
    with pytest.raises(ValueError, match="y must be scores in \\[0, 1\\], got 1.5"):
        C.ppi_mean([1.5], [0.5], [0.5])
    with pytest.raises(ValueError, match="lam must be 'tuned' or a number in \\[0, 1\\], got 2"):
        C.ppi_mean([1.0], [0.5], [0.5], lam=2)
    with pytest.raises(ValueError, match="level must be a number in \\(0, 1\\), got 95"):
        C.ppi_mean([1.0], [0.5], [0.5], level=95)
    with pytest.raises(ValueError, match="weights must be 1/pi >= 1, got 0.5"):
        C.ppi_mean([1.0], [0.5], [0.5], weights=[0.5])
    with pytest.raises(ValueError, match="y and yhat_labelled must have one length, got 2 and 1"):
        C.ppi_mean([1.0, 0.0], [0.5], [0.5])


# ----------------------------------------------------------------------------- win rates


def test_win_rates_judge_only_and_classical_are_peercores_win_rates():
    # PRD eq. 1: a model's share of points over its battles, ties half.
    rng = np.random.default_rng(7)
    a, b, f, y = world(rng, n_models=5, n=1500)
    hard = np.round(f * 2) / 2
    models = [f"m{i}" for i in range(5)]
    table = C.ppi_win_rates(a, b, hard, np.arange(1500), y, n_models=5)
    assert table.judge_only.to_numpy() == pytest.approx(win_rates(frame(a, b, hard, models)).to_numpy())
    assert table.classical.to_numpy() == pytest.approx(win_rates(frame(a, b, y, models)).to_numpy())
    assert (table.lam == 0).all() and table.estimate.to_numpy() == pytest.approx(table.classical.to_numpy())


def test_each_models_win_rate_is_ppi_mean_on_its_battles():
    rng = np.random.default_rng(8)
    a, b, f, y = world(rng, n_models=4, n=2000)
    lab = rng.choice(2000, 300, replace=False)
    table = C.ppi_win_rates(a, b, f, lab, y[lab], n_models=4)
    labelled = np.zeros(2000, dtype=bool)
    labelled[lab] = True
    m = 2
    score_f = np.where(a == m, f, 1 - f)
    score_y = np.where(a == m, y, 1 - y)
    mine = (a == m) | (b == m)
    ref = C.ppi_mean(score_y[mine & labelled], score_f[mine & labelled], score_f[mine & ~labelled])
    row = table.loc[m]
    assert (row.estimate, row.ci_low, row.ci_high, row.lam) == pytest.approx(
        (ref.estimate, ref.ci_low, ref.ci_high, ref.lam))
    # Effective labels count all 300 labels, the model's share of them being what it used.
    assert row.effective_labels == pytest.approx(300 * ref.effective_labels / ref.n_labelled)
    assert row.battles == mine.sum() and row.labelled == (mine & labelled).sum()


def test_several_labels_on_one_comparison_count_as_their_mean():
    a, b = np.array([0, 1, 0, 2]), np.array([1, 2, 2, 0])
    f = np.array([0.8, 0.3, 0.6, 0.5])
    twice = C.ppi_win_rates(a, b, f, [0, 0, 0, 1], [1.0, 1.0, 0.0, 0.0], n_models=3, lam=0.0)
    once = C.ppi_win_rates(a, b, f, [0, 1], [2 / 3, 0.0], n_models=3, lam=0.0)
    pd.testing.assert_frame_equal(twice, once)


def test_win_rates_vs_baseline_use_only_games_against_it():
    rng = np.random.default_rng(9)
    a, b, f, y = world(rng, n_models=4, n=3000)
    lab = rng.choice(3000, 600, replace=False)
    table = C.ppi_win_rates_vs_baseline(a, b, f, lab, y[lab], baseline=0, n_models=4)
    assert table.loc[0].battles == 0 and math.isnan(table.loc[0].estimate)
    keep = (a == 0) | (b == 0)
    index = np.flatnonzero(keep)
    where = np.full(3000, -1)
    where[index] = np.arange(len(index))
    sub_lab = lab[keep[lab]]
    sub = C.ppi_win_rates(a[keep], b[keep], f[keep], where[sub_lab], y[sub_lab], n_models=4)
    cols = ["estimate", "se", "lam", "classical", "judge_only", "battles", "labelled"]
    pd.testing.assert_frame_equal(table.loc[1:, cols], sub.loc[1:, cols])


def test_win_rates_reject_bad_codes_and_self_battles():
    with pytest.raises(ValueError, match="a must be model codes in \\[0, 3\\), got 3 at position 1"):
        C.ppi_win_rates([0, 3], [1, 1], [0.5, 0.5], [], [], n_models=3)
    with pytest.raises(ValueError, match="a == b == 1 at position 0"):
        C.ppi_win_rates([1], [1], [0.5], [], [], n_models=3)
    with pytest.raises(ValueError, match="labelled_index must index the 1 comparisons, got 4"):
        C.ppi_win_rates([0], [1], [0.5], [4], [1.0], n_models=3)
    with pytest.raises(ValueError, match="label_weight must be the same for every label of one comparison"):
        C.ppi_win_rates([0], [1], [0.5], [0, 0], [1.0, 0.0], n_models=2, label_weight=[2.0, 3.0])


# ------------------------------------------------------------------------- Bradley-Terry


def bt_world(seed=1, n_models=4, n=2300, n_labels=300):
    rng = np.random.default_rng(seed)
    a, b, f, y = world(rng, n_models=n_models, n=n)
    lab = rng.choice(n, n_labels, replace=False)
    return a, b, f, y, lab


@pytest.mark.parametrize("lam", [0.4, 1.0])
def test_bradley_terry_equals_ppi_py_logistic(lam):
    # PPI++ eq. (4) with the logistic loss on x = e_a - e_b (Boyeau et al. 2024, section 3);
    # ppi_py needs an identified model: model 0's column is dropped (theta_0 = 0), so the
    # comparison is on the contrasts theta_m - theta_0 and their standard errors.
    a, b, f, y, lab = bt_world()
    K = 4
    mask = np.zeros(len(a), dtype=bool)
    mask[lab] = True
    x = np.zeros((len(a), K))
    x[np.arange(len(a)), a] += 1
    x[np.arange(len(a)), b] -= 1
    x = x[:, 1:]
    est = C.ppi_bradley_terry(a, b, f, lab, y[lab], n_models=K, lam=lam, level=0.9)
    order = np.argsort(lab)  # ppi_py sees labelled rows in index order, as the mask gives them
    assert np.array_equal(np.flatnonzero(mask), lab[order])
    point = ppi_logistic_pointestimate(x[mask], y[mask], f[mask], x[~mask], f[~mask], lam=lam)
    low, high = ppi_logistic_ci(x[mask], y[mask], f[mask], x[~mask], f[~mask], lam=lam, alpha=0.1)
    contrast = (est.rating[1:] - est.rating[0]) / ELO
    assert contrast == pytest.approx(point, abs=1e-6)
    A = np.c_[-np.ones(K - 1), np.eye(K - 1)]
    se = np.sqrt(np.diag(A @ est.covariance @ A.T)) / ELO
    assert se == pytest.approx((high - low) / 2 / float(ndtri(0.95)), rel=1e-6)
    assert est.rating.mean() == pytest.approx(1000.0)


def test_bradley_terry_judge_only_and_classical_are_peercores_bradley_terry():
    # The judge's ratings are `bradley_terry` of its verdicts (same ridge, same Elo anchor);
    # the classical ratings are `bradley_terry` of the labels alone.
    a, b, f, y, lab = bt_world(seed=2)
    hard = np.round(f * 2) / 2
    models = [f"m{i}" for i in range(4)]
    est = C.ppi_bradley_terry(a, b, hard, lab, y[lab], n_models=4)
    assert est.judge == pytest.approx(bradley_terry(frame(a, b, hard, models)).to_numpy(), abs=1e-6)
    assert est.classical == pytest.approx(bradley_terry(frame(a[lab], b[lab], y[lab], models)).to_numpy(), abs=1e-6)
    at_zero = C.ppi_bradley_terry(a, b, hard, lab, y[lab], n_models=4, lam=0.0)
    assert at_zero.rating == pytest.approx(est.classical, abs=1e-6)
    assert at_zero.se == pytest.approx(est.classical_se, rel=1e-9)


def test_bradley_terry_tuned_lambda_minimises_the_trace():
    # PPI++ eq. (7): the scalar lam minimising tr(Sigma_lam), computed at the lam = 1 fit.
    a, b, f, y, lab = bt_world(seed=3)
    est = C.ppi_bradley_terry(a, b, f, lab, y[lab], n_models=4)
    assert 0.0 < est.lam < 1.0
    grid = np.linspace(0.0, 1.0, 21)
    traces = [np.trace(C.ppi_bradley_terry(a, b, f, lab, y[lab], n_models=4, lam=g).covariance) for g in grid]
    assert abs(grid[int(np.argmin(traces))] - est.lam) <= 0.1
    assert np.trace(est.covariance) <= min(traces) * 1.002


def test_bradley_terry_edge_cases():
    a, b, f, y, lab = bt_world(seed=4)
    none = C.ppi_bradley_terry(a, b, f, [], [], n_models=4)
    assert np.isnan(none.rating).all() and math.isnan(none.lam) and np.isfinite(none.judge).all()
    everything = C.ppi_bradley_terry(a, b, f, np.arange(len(a)), y, n_models=4)
    assert everything.lam == 0.0 and everything.rating == pytest.approx(everything.classical)
    sparse = C.ppi_bradley_terry(a, b, f, lab[:2], y[lab[:2]], n_models=4)
    assert np.isnan(sparse.classical).all() and np.isfinite(sparse.rating).all()
    with pytest.raises(ValueError, match="must connect all 5 models"):
        C.ppi_bradley_terry(a, b, f, lab, y[lab], n_models=5)


# ------------------------------------------------------------------ misclassification correction


def test_rogan_gladen_two_classes_is_lee_et_al():
    # Lee et al. 2025 (arXiv 2511.21140) section 3: theta = (p + q0 - 1) / (q0 + q1 - 1),
    # var = [p(1-p)/N + (1-theta)^2 q0(1-q0)/m0 + theta^2 q1(1-q1)/m1] / (q0 + q1 - 1)^2.
    judge = np.r_[np.ones(70), np.zeros(30), np.ones(8), np.zeros(32), np.ones(45), np.zeros(15)]
    labelled = np.arange(100, 200)
    labels = np.r_[np.zeros(40), np.ones(60)]   # 40 negatives (8 judged positive), 60 positives (45)
    est = C.rogan_gladen(judge, labelled, labels)
    p, q0, q1 = 0.7, 32 / 40, 45 / 60
    theta = (p + q0 - 1) / (q0 + q1 - 1)
    var = (p * (1 - p) / 100 + (1 - theta) ** 2 * q0 * (1 - q0) / 40 + theta ** 2 * q1 * (1 - q1) / 60) \
        / (q0 + q1 - 1) ** 2
    assert est.estimate == pytest.approx(theta)
    assert est.se == pytest.approx(math.sqrt(var))
    assert est.judge_score == pytest.approx(0.7) and est.classes == (0.0, 1.0)


def test_rogan_gladen_with_ties_and_a_perfect_judge_returns_the_judges_share():
    judge = np.array([1.0, 0.5, 0.0, 1.0, 1.0, 0.5, 0.0, 0.0, 1.0, 0.5])
    est = C.rogan_gladen(judge, [0, 1, 2], [1.0, 0.5, 0.0])
    assert est.estimate == pytest.approx(judge[3:].mean())
    assert est.confusion == pytest.approx(np.eye(3))


def test_rogan_gladen_says_nothing_when_the_judge_cannot_separate_classes():
    judge = np.ones(50)
    est = C.rogan_gladen(judge, [0, 1, 2, 3], [1.0, 0.0, 1.0, 0.0])
    assert math.isnan(est.estimate)


def test_corrected_win_rates_orient_to_each_model():
    rng = np.random.default_rng(10)
    a, b, f, y = world(rng, n_models=3, n=3000)
    hard = (f > 0.5).astype(float)
    lab = rng.choice(3000, 600, replace=False)
    table = C.corrected_win_rates(a, b, hard, lab, y[lab], n_models=3)
    m = 1
    score_f = np.where(a == m, hard, 1 - hard)
    score_y = np.where(a == m, y, 1 - y)
    mine = np.flatnonzero((a == m) | (b == m))
    where = np.full(3000, -1)
    where[mine] = np.arange(len(mine))
    keep = where[lab] >= 0
    ref = C.rogan_gladen(score_f[mine], where[lab[keep]], score_y[lab[keep]])
    assert table.loc[m, "estimate"] == pytest.approx(ref.estimate)
    assert table.loc[m, "se"] == pytest.approx(ref.se)


# ---------------------------------------------------------------------------- active selection


def test_uncertainty_from_soft_verdicts_orders_and_samples():
    assert C.uncertainty(p_a=[0.5, 0.9, 1.0]) == pytest.approx([0.5, 0.3, 0.0])
    assert C.uncertainty(both_orders=[[1, 1], [1, 0], [1, 0.5]]) == pytest.approx([0, 0.5, math.sqrt(0.75 * 0.25)])
    assert C.uncertainty(samples=[[1, 1, 0, 0], [1, 1, 1, 1]]) == pytest.approx([0.5, 0.0])
    with pytest.raises(ValueError, match="give exactly one of p_a, both_orders, samples"):
        C.uncertainty(p_a=[0.5], samples=[[1]])
    with pytest.raises(ValueError, match="both_orders must be an \\(N, 2\\) array, got shape \\(2, 3\\)"):
        C.uncertainty(both_orders=[[1, 1, 1], [0, 0, 0]])


def test_active_probabilities_sum_to_the_budget_and_cap_at_one():
    u = np.r_[np.zeros(90), np.full(10, 0.5)]
    pi = C.active_probabilities(u, 20, mix=0.2)
    assert pi.sum() == pytest.approx(20) and pi.max() <= 1.0 and pi.min() > 0
    assert (pi[90:] == 1.0).all()                       # capped, the rest rescaled
    assert pi[:90] == pytest.approx(np.full(90, 10 / 90))
    uniform = C.active_probabilities(np.ones(50), 5)
    assert uniform == pytest.approx(np.full(50, 0.1))
    proportional = C.active_probabilities([1.0, 3.0], 1.0, mix=1e-9)
    assert proportional == pytest.approx([0.25, 0.75])
    with pytest.raises(ValueError, match="budget must be in \\(0, 2\\]"):
        C.active_probabilities([1.0, 3.0], 3)
    with pytest.raises(ValueError, match="mix must be in \\(0, 1\\], got 0"):
        C.active_probabilities([1.0, 3.0], 1, mix=0)


def test_draw_labels_is_bernoulli_pi():
    rng = np.random.default_rng(11)
    pi = C.active_probabilities(rng.random(20_000), 2_000)
    drawn = C.draw_labels(pi, rng=rng)
    assert abs(drawn.sum() - 2_000) < 5 * math.sqrt(2_000)
    with pytest.raises(ValueError, match="pi must be probabilities in \\(0, 1\\], got 0.0"):
        C.draw_labels([0.0, 0.5], rng=rng)


# --------------------------------------------------------------------------- reduced simulation


def test_coverage_of_win_rates_over_200_repetitions():
    # The 1,000-repetition version is benchmarks/calibration_simulation.py. Here 200 fresh
    # populations of 1,000 comparisons (4 models, soft judge with position bias), 120
    # uniform labels; truth = the superpopulation win rates. A 95% interval's coverage over
    # 200 repetitions lies in [0.90, 0.99] with probability > 0.999 per model.
    strength = np.linspace(0.6, -0.6, 4)
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights /= weights.sum()
    truth = np.array([np.mean([weights @ expit(strength[m] - strength[o] + 1.5 * nodes)
                               for o in range(4) if o != m]) for m in range(4)])
    rng = np.random.default_rng(12)
    covered = np.zeros(4)
    active_covered = np.zeros(4)
    narrower = 0
    for _ in range(200):
        a, b, f, y = world(rng, n_models=4, n=1000, noise=0.7)
        lab = rng.choice(1000, 120, replace=False)
        table = C.ppi_win_rates(a, b, f, lab, y[lab], n_models=4)
        covered += (table.ci_low <= truth) & (truth <= table.ci_high)
        narrower += ((table.ci_high - table.ci_low) <= (table.classical_high - table.classical_low) + 1e-12).all()
        pi = C.active_probabilities(C.uncertainty(p_a=f), 120)
        chosen = np.flatnonzero(C.draw_labels(pi, rng=rng))
        active = C.ppi_win_rates(a, b, f, chosen, y[chosen], n_models=4, label_weight=1 / pi[chosen])
        active_covered += (active.ci_low <= truth) & (truth <= active.ci_high)
    assert ((covered / 200 >= 0.90) & (covered / 200 <= 0.99)).all(), covered / 200
    assert ((active_covered / 200 >= 0.90) & (active_covered / 200 <= 0.99)).all(), active_covered / 200
    assert narrower == 200


def test_bradley_terry_clips_pairs_whose_rectified_outcome_leaves_0_1():
    # A judge that always favours model 0 against model 1, where most of that pair's
    # comparisons are labelled and people favour model 1: at lam = 1 the pair's rectified
    # outcome (sum(f_U)/N + sum(y - f)_L/n) / W is negative, the loss is unbounded below and
    # Newton ran to its iteration cap (ConvergenceError before the change). The pair's
    # outcome is now clipped to [0, 1]: finite ratings, the pair counted.
    rng = np.random.default_rng(13)
    pair01 = np.tile([[0, 1], [1, 0]], (28, 1))[:55]
    others = np.array([[0, 2], [2, 1], [1, 2], [2, 0]] * 50)
    a, b = np.r_[pair01[:, 0], others[:, 0]], np.r_[pair01[:, 1], others[:, 1]]
    f = np.where(a == 0, 1.0, np.where(b == 0, 0.0, rng.random(len(a))))
    y = np.where(a == 1, 1.0, np.where(b == 1, 0.0, rng.random(len(a)).round()))
    lab = np.r_[np.arange(50), 55 + rng.choice(200, 20, replace=False)]
    est = C.ppi_bradley_terry(a, b, f, lab, y[lab], n_models=3, lam=1.0)
    assert est.lam == 1.0 and est.clipped_pairs == 1
    assert np.all(np.abs(est.rating - 1000.0) < 1500) and np.isfinite(est.se).all()
    tuned = C.ppi_bradley_terry(a, b, f, lab, y[lab], n_models=3)
    assert np.isfinite(tuned.rating).all()
    clean = C.ppi_bradley_terry(*bt_world()[:3], bt_world()[4], bt_world()[3][bt_world()[4]], n_models=4)
    assert clean.clipped_pairs == 0


def test_draw_exactly_takes_the_budget_with_each_inclusion_probability():
    """Active inference (Zrnic and Candès 2024, eq. (3)) weights a label by 1/pi_i: the fixed-size draw
    (Madow's systematic sampling) must include comparison i with probability pi_i, and draw exactly K."""
    from peercore.calibration import active_probabilities, draw_exactly

    rng = np.random.default_rng(7)
    pi = active_probabilities(rng.random(40) ** 2, 9)
    assert pi.sum() == pytest.approx(9)
    hits = np.zeros(40)
    for _ in range(20_000):
        drawn = draw_exactly(pi, rng=rng)
        assert len(drawn) == 9 and len(set(drawn.tolist())) == 9
        hits[drawn] += 1
    # 20,000 draws: a binomial standard error of at most 0.0036 per comparison; 5 of them.
    assert np.abs(hits / 20_000 - pi).max() < 0.018
    with pytest.raises(ValueError, match="probabilities in"):
        draw_exactly([0.5, 1.5], rng=rng)
