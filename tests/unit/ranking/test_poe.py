"""Unit tests for peercore.ranking.poe (Product-of-Experts scores)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import logit

from peercore.errors import ConvergenceError
from peercore.judgments import judgments_from_frame
from peercore.ranking.bradley_terry import bradley_terry
from peercore.ranking.poe import (
    METHODS,
    Comparisons,
    GaussianPoE,
    average_probability,
    bradley_terry_hard,
    comparisons_from_judgments,
    poe_bradley_terry,
    poe_gaussian,
    poe_scores,
    win_ratio,
)


def comps(n: int, rows) -> Comparisons:
    """Comparisons among candidates 'a', 'b', ... from (i, j, p) rows."""
    rows = list(rows)
    i = [r[0] for r in rows]
    j = [r[1] for r in rows]
    p = [r[2] for r in rows]
    return Comparisons(tuple("abcdefghij"[:n]), i, j, p)


def tilde_w(c: Comparisons, beta: float = 0.5):
    """The paper's W~ and mu~ built explicitly, with the anchoring row 1'/N, target 0."""
    k = len(c)
    w = np.zeros((k + 1, c.n))
    w[np.arange(k), c.i] = 1.0
    w[np.arange(k), c.j] = -1.0
    w[k] = 1.0 / c.n
    mu = np.append(c.p - beta, 0.0)
    return w, mu


def table(rows, *, p_a=None) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["model_a", "model_b", "winner"])
    frame["question_id"] = "q1"
    frame["judge"] = "j1"
    if p_a is not None:
        frame["p_a"] = p_a
    return judgments_from_frame(frame)


# ------------------------------------------------------------------------- Comparisons


class TestComparisons:
    def test_arrays_are_converted_and_read_only(self):
        c = comps(3, [(0, 1, 0.7), (2, 0, 0.1)])
        assert c.candidates == ("a", "b", "c")
        assert c.n == 3 and len(c) == 2
        assert c.i.dtype == np.intp and c.p.dtype == float
        with pytest.raises(ValueError):
            c.p[0] = 0.2

    def test_empty(self):
        c = Comparisons(("a", "b"), [], [], [])
        assert len(c) == 0 and c.i.shape == (0,)

    def test_p_outside_unit_interval_is_quoted(self):
        with pytest.raises(ValueError, match=r"p\[1\] = 1\.5 is outside \[0, 1\]"):
            comps(3, [(0, 1, 0.7), (1, 2, 1.5)])
        with pytest.raises(ValueError, match=r"p\[0\] = -0\.25 is outside"):
            comps(2, [(0, 1, -0.25)])

    def test_nan_p_is_rejected(self):
        with pytest.raises(ValueError, match=r"p\[0\] = nan"):
            comps(2, [(0, 1, float("nan"))])

    def test_index_out_of_range(self):
        with pytest.raises(ValueError, match=r"j\[0\] = 3 is not a candidate index \(there are 3 candidates\)"):
            comps(3, [(0, 3, 0.5)])
        with pytest.raises(ValueError, match=r"i\[0\] = -1"):
            comps(3, [(-1, 0, 0.5)])

    def test_self_comparison(self):
        with pytest.raises(ValueError, match=r"comparison 1 compares candidate 2 with itself"):
            comps(3, [(0, 1, 0.5), (2, 2, 0.5)])

    def test_lengths_must_agree(self):
        with pytest.raises(ValueError, match=r"same length, got 2, 1 and 1"):
            Comparisons(("a", "b"), [0, 1], [1], [0.5])

    def test_candidates_must_be_distinct(self):
        with pytest.raises(ValueError, match=r"'a' appears more than once"):
            Comparisons(("a", "b", "a"), [0], [1], [0.5])

    def test_fractional_index_is_rejected(self):
        with pytest.raises(ValueError, match=r"i\[0\] = 0\.5 is not a whole-number"):
            Comparisons(("a", "b"), [0.5], [1], [0.5])


class TestComparisonsFromJudgments:
    def test_p_a_where_given_winner_otherwise(self):
        judgments = table(
            [("x", "y", "model_a"), ("y", "z", "tie"), ("z", "x", "model_b"), ("x", "z", "model_b")],
            p_a=[0.8, None, None, 0.3],
        )
        c = comparisons_from_judgments(judgments)
        assert c.candidates == ("x", "y", "z")
        np.testing.assert_array_equal(c.i, [0, 1, 2, 0])
        np.testing.assert_array_equal(c.j, [1, 2, 0, 2])
        np.testing.assert_allclose(c.p, [0.8, 0.5, 0.0, 0.3])

    def test_without_p_a_column(self):
        frame = pd.DataFrame(
            {"model_a": ["x", "y"], "model_b": ["y", "x"], "winner": ["model_a", "model_b"], "judge": "j"}
        )
        np.testing.assert_allclose(comparisons_from_judgments(frame).p, [1.0, 0.0])

    def test_extra_candidates_are_kept(self):
        c = comparisons_from_judgments(table([("x", "y", "model_a")]), candidates=["w", "x", "y"])
        assert c.candidates == ("w", "x", "y")
        np.testing.assert_array_equal(c.i, [1])

    def test_unknown_contestant(self):
        with pytest.raises(ValueError, match=r"\['y'\] are not in the models list"):
            comparisons_from_judgments(table([("x", "y", "model_a")]), candidates=["x"])

    def test_p_a_outside_range_in_a_raw_frame(self):
        frame = pd.DataFrame(
            {"model_a": ["x"], "model_b": ["y"], "winner": ["model_a"], "judge": ["j"], "p_a": [1.2]}
        )
        with pytest.raises(ValueError, match=r"p\[0\] = 1\.2 is outside"):
            comparisons_from_judgments(frame)

    def test_empty_table(self):
        c = comparisons_from_judgments(table([]))
        assert c.n == 0 and len(c) == 0


# ------------------------------------------------------------------- win ratio, avg prob


class TestWinRatioAndAverageProbability:
    def test_hand_computed(self):
        # a-b: 0.9 (a wins), b-a: 0.5 (tie), c-a: 0.4 (a wins), b-c: 0.7 (b wins)
        c = comps(4, [(0, 1, 0.9), (1, 0, 0.5), (2, 0, 0.4), (1, 2, 0.7)])
        np.testing.assert_allclose(win_ratio(c)[:3], [2.5 / 3, 1.5 / 3, 0.0])
        np.testing.assert_allclose(average_probability(c)[:3], [(0.9 + 0.5 + 0.6) / 3, (0.1 + 0.5 + 0.7) / 3, (0.4 + 0.3) / 2])

    def test_uncompared_candidate_is_nan(self):
        c = comps(4, [(0, 1, 0.9)])
        assert np.isnan(win_ratio(c)[2:]).all()
        assert np.isnan(average_probability(c)[2:]).all()

    def test_no_comparisons(self):
        c = comps(3, [])
        assert np.isnan(win_ratio(c)).all() and np.isnan(average_probability(c)).all()

    def test_exact_half_is_a_tie_and_just_above_is_a_win(self):
        c = comps(2, [(0, 1, 0.5), (0, 1, np.nextafter(0.5, 1.0))])
        np.testing.assert_allclose(win_ratio(c), [0.75, 0.25])


# -------------------------------------------------------------------- Bradley-Terry fits


class TestBradleyTerryHard:
    def test_two_candidates_closed_form(self):
        # a beats b 3 times out of 4: the MLE difference is log(3).
        c = comps(2, [(0, 1, 0.9), (0, 1, 0.6), (1, 0, 0.2), (1, 0, 0.7)])
        s = bradley_terry_hard(c)
        assert s[0] - s[1] == pytest.approx(math.log(3.0), abs=1e-5)
        assert s.sum() == pytest.approx(0.0, abs=1e-12)

    def test_matches_the_arena_bradley_terry_on_the_elo_scale(self):
        rows = [("x", "y", "model_a")] * 5 + [("y", "x", "model_a")] * 2 + [("y", "z", "tie")] * 3
        rows += [("z", "y", "model_a"), ("x", "z", "model_a"), ("z", "x", "model_a"), ("x", "z", "model_b")]
        judgments = table(rows)
        ours = bradley_terry_hard(comparisons_from_judgments(judgments))
        elo = bradley_terry(judgments).to_numpy()
        natural = (elo - elo.mean()) * math.log(10.0) / 400.0
        np.testing.assert_allclose(ours, natural, atol=1e-7)

    def test_equals_soft_bt_on_rounded_probabilities(self):
        c = comps(3, [(0, 1, 0.9), (1, 2, 0.3), (2, 0, 0.5), (0, 2, 0.6)])
        rounded = Comparisons(c.candidates, c.i, c.j, [1.0, 0.0, 0.5, 1.0])
        np.testing.assert_allclose(bradley_terry_hard(c), poe_bradley_terry(rounded), atol=1e-10)

    def test_candidate_that_won_everything_is_finite_and_controlled_by_l2(self):
        c = comps(3, [(0, 1, 1.0), (2, 0, 0.0), (1, 2, 0.8)])
        s = bradley_terry_hard(c)
        assert np.isfinite(s).all()
        assert s[0] > s[1] > s[2]
        assert s[0] - s[1] > 5.0  # about log(1/l2) / 2 for the default l2 = 1e-6
        looser = bradley_terry_hard(c, l2=1e-2)
        assert looser[0] - looser[1] < s[0] - s[1]

    @pytest.mark.parametrize("l2", [0, -1.0, float("inf"), float("nan"), "x"])
    def test_l2_must_be_positive(self, l2):
        with pytest.raises(ValueError, match=r"l2 must be a positive finite number, got"):
            bradley_terry_hard(comps(2, [(0, 1, 1.0)]), l2=l2)

    def test_non_convergence_reports_iterations(self):
        c = comps(3, [(0, 1, 1.0), (1, 2, 1.0), (0, 2, 0.9)])
        with pytest.raises(ConvergenceError, match=r"did not converge in 1 iterations"):
            bradley_terry_hard(c, max_iter=1)


class TestPoEBradleyTerry:
    def test_one_soft_comparison_gives_its_logit(self):
        s = poe_bradley_terry(comps(2, [(0, 1, 0.75)]))
        assert s[0] - s[1] == pytest.approx(logit(0.75), abs=1e-5)

    def test_probabilities_are_fractional_wins(self):
        # 0.9 and 0.6 on the same pair act like 1.5 wins out of 2.
        s = poe_bradley_terry(comps(2, [(0, 1, 0.9), (0, 1, 0.6)]))
        assert s[0] - s[1] == pytest.approx(logit(0.75), abs=1e-5)

    def test_soft_differs_from_hard(self):
        c = comps(2, [(0, 1, 0.6), (0, 1, 0.6)])
        assert poe_bradley_terry(c)[0] < bradley_terry_hard(c)[0]

    def test_debias_makes_a_constant_judge_neutral(self):
        # A judge that always says 0.6 for the first-shown candidate, on a chain where
        # each candidate is shown first against the next: no information, only bias.
        c = comps(4, [(0, 1, 0.6), (1, 2, 0.6), (2, 3, 0.6)])
        np.testing.assert_allclose(poe_bradley_terry(c, debias=True), 0.0, atol=1e-9)
        biased = poe_bradley_terry(c)
        assert biased[0] > biased[1] > biased[2] > biased[3]

    def test_debias_sign(self):
        # gamma = -logit(mean p): the first-shown candidate's modelled win probability
        # for equal scores is mean p. Here mean p = 0.7; a comparison at 0.9 beats that,
        # one at 0.5 falls short of it.
        c = comps(3, [(0, 1, 0.9), (1, 2, 0.5), (0, 2, 0.7)])
        s = poe_bradley_terry(c, debias=True)
        assert s[0] - s[1] == pytest.approx(logit(0.9) - logit(0.7), abs=0.5)
        assert s[0] > s[1] and s[2] > s[1]

    def test_debias_with_every_p_equal_to_one_is_an_error(self):
        with pytest.raises(ValueError, match=r"debias needs the mean of p strictly inside \(0, 1\), got 1\.0"):
            poe_bradley_terry(comps(2, [(0, 1, 1.0)]), debias=True)

    def test_uncompared_candidate_scores_zero(self):
        s = poe_bradley_terry(comps(4, [(0, 1, 0.8), (1, 2, 0.3)]))
        assert s[3] == 0.0
        assert s[:3].sum() == pytest.approx(0.0, abs=1e-12)

    def test_no_comparisons(self):
        np.testing.assert_array_equal(poe_bradley_terry(comps(3, []), debias=True), np.zeros(3))
        assert poe_bradley_terry(Comparisons((), [], [], [])).shape == (0,)


# ----------------------------------------------------------------------- Gaussian PoE


class TestPoEGaussian:
    def test_matches_the_explicit_closed_form(self):
        c = comps(4, [(0, 1, 0.9), (1, 2, 0.3), (2, 0, 0.45), (3, 1, 0.8), (0, 3, 0.5), (0, 1, 0.7)])
        w, mu = tilde_w(c)
        expected = np.linalg.lstsq(w, mu, rcond=None)[0]
        result = poe_gaussian(c, sigma2=2.5)
        assert isinstance(result, GaussianPoE)
        np.testing.assert_allclose(result.scores, expected, atol=1e-12)
        np.testing.assert_allclose(result.covariance, 2.5 * np.linalg.inv(w.T @ w), atol=1e-12)
        np.testing.assert_allclose(result.std, np.sqrt(np.diag(result.covariance)))
        assert result.scores.sum() == pytest.approx(0.0, abs=1e-12)
        np.testing.assert_array_equal(result.components, 0)

    def test_sigma2_scales_only_the_covariance(self):
        c = comps(3, [(0, 1, 0.9), (1, 2, 0.3)])
        one, four = poe_gaussian(c), poe_gaussian(c, sigma2=4.0)
        np.testing.assert_allclose(one.scores, four.scores)
        np.testing.assert_allclose(4.0 * one.covariance, four.covariance)

    def test_covariance_is_pseudo_inverse_plus_anchor_term(self):
        # Connected graph: sigma^2 (W~'W~)^-1 = sigma^2 (L^+ + 11'), so Var(s_i - s_j)
        # depends on the comparisons only.
        c = comps(4, [(0, 1, 0.9), (1, 2, 0.3), (2, 3, 0.6), (3, 0, 0.2), (0, 2, 0.5)])
        w, _ = tilde_w(c)
        laplacian = w[:-1].T @ w[:-1]
        np.testing.assert_allclose(poe_gaussian(c).covariance, np.linalg.pinv(laplacian) + 1.0, atol=1e-12)

    def test_two_candidates(self):
        # One comparison at p: s_a - s_b = p - 1/2, split symmetrically around 0.
        result = poe_gaussian(comps(2, [(0, 1, 0.8)]))
        np.testing.assert_allclose(result.scores, [0.15, -0.15])

    def test_debias_uses_mean_probability(self):
        c = comps(4, [(0, 1, 0.6), (1, 2, 0.6), (2, 3, 0.6)])
        np.testing.assert_allclose(poe_gaussian(c, debias=True).scores, 0.0, atol=1e-12)
        np.testing.assert_allclose(poe_gaussian(c).scores, [0.15, 0.05, -0.05, -0.15], atol=1e-12)
        c = comps(3, [(0, 1, 0.9), (1, 2, 0.3), (0, 2, 0.75)])
        w, mu = tilde_w(c, beta=0.65)
        np.testing.assert_allclose(poe_gaussian(c, debias=True).scores, np.linalg.lstsq(w, mu, rcond=None)[0], atol=1e-12)

    def test_disconnected_graph_anchors_each_component(self):
        # {a, b} and {c, d} never meet; e is never compared.
        c = comps(5, [(0, 1, 0.8), (2, 3, 0.3), (3, 2, 0.6)])
        result = poe_gaussian(c, sigma2=2.0)
        # c - d: -0.2 from the first comparison, -0.1 from the second; mean -0.15.
        np.testing.assert_allclose(result.scores, [0.15, -0.15, -0.075, 0.075, 0.0], atol=1e-12)
        labels = result.components
        assert labels[0] == labels[1] != labels[2] == labels[3] != labels[4]
        assert result.covariance[4, 4] == pytest.approx(2.0)  # the anchor: nothing learned
        assert result.covariance[0, 2] == 0.0 and result.covariance[0, 4] == 0.0
        # Within a component, the single-component formula holds.
        np.testing.assert_allclose(result.covariance[:2, :2], poe_gaussian(comps(2, [(0, 1, 0.8)]), sigma2=2.0).covariance)

    def test_no_comparisons(self):
        result = poe_gaussian(comps(3, []), sigma2=3.0, debias=True)
        np.testing.assert_array_equal(result.scores, np.zeros(3))
        np.testing.assert_allclose(result.covariance, 3.0 * np.eye(3))
        empty = poe_gaussian(Comparisons((), [], [], []))
        assert empty.scores.shape == (0,) and empty.covariance.shape == (0, 0)

    def test_full_symmetric_set_is_affine_in_average_probability(self):
        rng = np.random.default_rng(3)
        n = 6
        i, j = np.nonzero(~np.eye(n, dtype=bool))
        c = Comparisons(tuple("abcdef"), i, j, rng.uniform(size=len(i)))
        expected = (n - 1) / n * (average_probability(c) - 0.5)
        np.testing.assert_allclose(poe_gaussian(c).scores, expected, atol=1e-12)
        np.testing.assert_allclose(poe_gaussian(c, debias=True).scores, expected, atol=1e-12)

    @pytest.mark.parametrize("sigma2", [0.0, -1.0, float("nan"), None])
    def test_sigma2_must_be_positive(self, sigma2):
        with pytest.raises(ValueError, match=r"sigma2 must be a positive finite number, got"):
            poe_gaussian(comps(2, [(0, 1, 0.5)]), sigma2=sigma2)


# ------------------------------------------------------------------------- poe_scores


class TestPoEScores:
    @pytest.fixture
    def judgments(self):
        rows = [("x", "y", "model_a"), ("y", "z", "model_a"), ("x", "z", "model_a"), ("z", "x", "model_b")]
        rows += [("y", "x", "model_b"), ("z", "y", "tie")]
        return table(rows, p_a=[0.9, 0.7, 0.8, 0.2, 0.4, 0.5])

    @pytest.mark.parametrize("method", METHODS)
    def test_every_method_orders_x_y_z(self, judgments, method):
        scores = poe_scores(judgments, method=method)
        assert isinstance(scores, pd.Series)
        assert scores.name == "score" and scores.index.name == "model"
        assert list(scores.index) == ["x", "y", "z"]
        assert scores["x"] > scores["y"] > scores["z"]

    def test_methods_route_to_the_array_functions(self, judgments):
        c = comparisons_from_judgments(judgments)
        np.testing.assert_allclose(poe_scores(judgments, method="win_ratio"), win_ratio(c))
        np.testing.assert_allclose(poe_scores(judgments, method="avg_prob"), average_probability(c))
        np.testing.assert_allclose(poe_scores(judgments, method="bt"), bradley_terry_hard(c))
        np.testing.assert_allclose(poe_scores(judgments, method="poe_bt", debias=True), poe_bradley_terry(c, debias=True))
        np.testing.assert_allclose(poe_scores(judgments), poe_gaussian(c).scores)
        np.testing.assert_allclose(poe_scores(judgments, method="poe_gaussian", debias=True), poe_gaussian(c, debias=True).scores)

    def test_uncompared_candidate(self, judgments):
        assert np.isnan(poe_scores(judgments, method="win_ratio", candidates=["w", "x", "y", "z"])["w"])
        assert poe_scores(judgments, method="poe_gaussian", candidates=["w", "x", "y", "z"])["w"] == 0.0
        assert poe_scores(judgments, method="poe_bt", candidates=["w", "x", "y", "z"])["w"] == 0.0

    def test_winner_is_used_without_p_a(self):
        scores = poe_scores(table([("x", "y", "model_b"), ("y", "z", "model_a")]), method="win_ratio")
        np.testing.assert_allclose(scores, [0.0, 1.0, 0.0])

    def test_unknown_method(self, judgments):
        with pytest.raises(ValueError, match=r"method must be one of .* got 'elo'"):
            poe_scores(judgments, method="elo")

    @pytest.mark.parametrize("method", ["win_ratio", "avg_prob", "bt"])
    def test_debias_only_for_poe_methods(self, judgments, method):
        with pytest.raises(ValueError, match=rf"debias applies to .* got method='{method}'"):
            poe_scores(judgments, method=method, debias=True)

    def test_empty_table(self):
        scores = poe_scores(table([]), method="poe_bt")
        assert scores.empty and scores.name == "score"
