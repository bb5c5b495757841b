"""Unit tests for peercore.bias: hand-computed examples and edge cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from peercore.bias import (
    BIASES,
    judge_bias_model,
    SelfEnhancement,
    apply_threshold,
    debias_threshold,
    debias_thresholds,
    length_bias,
    position_bias,
    self_enhancement,
    swap_consistency,
)
from peercore.judgments import judgments_from_frame, mirror


def table(rows, **extra) -> pd.DataFrame:
    """Canonical table from (question_id, model_a, model_b, judge, winner) tuples."""
    frame = pd.DataFrame(rows, columns=["question_id", "model_a", "model_b", "judge", "winner"])
    for column, values in extra.items():
        frame[column] = values
    return judgments_from_frame(frame)


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval written out (Wilson 1927), independent of statsmodels."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


# ------------------------------------------------------------------------ position bias


def test_position_bias_hand_computed():
    """P(first) over decisive verdicts with a Wilson interval, and eq. 8's share of all (Liusie et al. 2024,
    section 6, Table 4, eq. 8), on the pairs a judge saw both ways round (issue 18, item 2)."""
    judgments = table(
        [
            ("q1", "a", "b", "g", "model_a"),
            ("q1", "b", "a", "g", "model_a"),
            ("q2", "a", "b", "g", "model_a"),
            ("q2", "b", "a", "g", "model_b"),
            ("q3", "a", "b", "g", "tie"),
            ("q1", "a", "b", "h", "tie"),
            ("q1", "b", "a", "h", "tie"),
            ("q1", "a", "c", "k", "model_a"),  # one orientation only: k's order effect is unknown
        ],
        p_a=[0.9, 0.8, 0.7, 0.2, None, 0.5, 0.5, 0.9],
    )
    out = position_bias(judgments)
    assert out.index.tolist() == ["g", "h", "k"]
    g = out.loc["g"]
    assert (g["n"], g["n_decisive"]) == (5, 4)
    assert g["p_first"] == pytest.approx(0.75)
    assert (g["ci_low"], g["ci_high"]) == pytest.approx(wilson(3, 4))
    assert g["tie_rate"] == pytest.approx(0.2)
    assert g["mean_p_a"] == pytest.approx(0.65)  # the missing p_a is ignored
    assert g["p_first_all"] == pytest.approx(3 / 5)  # eq. 8: first chosen over all N
    h = out.loc["h"]
    assert h["n_decisive"] == 0 and h["tie_rate"] == 1.0
    assert all(math.isnan(h[c]) for c in ("p_first", "ci_low", "ci_high"))
    k = out.loc["k"]
    assert k["n"] == 0 and k["order_unknown"] == 1 and math.isnan(k["p_first"]) and "unknown" in k["position_note"]


def test_position_bias_level_and_mirror():
    """Liusie et al. 2024, section 6: mirroring every verdict turns P(first) into 1 - P(first)."""
    judgments = table([("q1", "a", "b", "g", "model_a"), ("q1", "b", "a", "g", "model_a"),
                       ("q2", "a", "b", "g", "model_a"), ("q2", "b", "a", "g", "model_b")])
    narrow = position_bias(judgments, level=0.5).loc["g"]
    assert (narrow["ci_low"], narrow["ci_high"]) == pytest.approx(wilson(3, 4, z=0.6744897501960817))
    mirrored = position_bias(mirror(judgments)).loc["g"]
    original = position_bias(judgments).loc["g"]
    assert mirrored["p_first"] == pytest.approx(1 - original["p_first"])
    assert mirrored["ci_low"] == pytest.approx(1 - original["ci_high"])
    assert math.isnan(original["mean_p_a"])


def test_position_bias_errors():
    judgments = table([("q1", "a", "b", "g", "model_a")])
    with pytest.raises(ValueError, match=r"level must be a number in \(0, 1\), got 95"):
        position_bias(judgments, level=95)
    with pytest.raises(ValueError, match=r"judgments.*winner 'A'"):
        position_bias(judgments.assign(winner="A"))
    assert len(position_bias(table([]))) == 0


# --------------------------------------------------------------------- swap consistency


def test_swap_consistency_hand_computed():
    judgments = table(
        [
            # q1: a wins both times -> consistent
            ("q1", "a", "b", "g", "model_a"),
            ("q1", "b", "a", "g", "model_b"),
            # q2: first position wins both times -> inconsistent toward first
            ("q2", "a", "b", "g", "model_a"),
            ("q2", "b", "a", "g", "model_a"),
            # q3: second position then tie -> leans toward second
            ("q3", "a", "b", "g", "model_b"),
            ("q3", "b", "a", "g", "tie"),
            # q4: tie both -> consistent
            ("q4", "b", "a", "g", "tie"),
            ("q4", "a", "b", "g", "tie"),
            # q5: only one order -> not a pair
            ("q5", "a", "b", "g", "model_a"),
            # another judge's opposite order does not pair with g
            ("q5", "b", "a", "h", "model_a"),
        ]
    )
    out = swap_consistency(judgments)
    assert out.index.tolist() == ["g", "h"]
    g = out.loc["g"]
    assert g["n_pairs"] == 4
    assert (g["consistent"], g["inconsistent_first"], g["inconsistent_second"]) == (0.5, 0.25, 0.25)
    h = out.loc["h"]
    assert h["n_pairs"] == 0 and math.isnan(h["consistent"])


def test_swap_consistency_pairs_within_turn_and_criterion():
    judgments = table(
        [("q1", "a", "b", "g", "model_a"), ("q1", "b", "a", "g", "model_a"), ("q1", "b", "a", "g", "model_b")],
        turn=[1, 1, 2],
    )
    out = swap_consistency(judgments).loc["g"]
    assert out["n_pairs"] == 1 and out["inconsistent_first"] == 1.0


def test_swap_consistency_repeated_verdicts_pair_every_combination():
    judgments = table(
        [("q1", "a", "b", "g", "model_a"), ("q1", "b", "a", "g", "model_b"), ("q1", "b", "a", "g", "model_a")]
    )
    out = swap_consistency(judgments).loc["g"]
    assert (out["n_pairs"], out["consistent"], out["inconsistent_first"]) == (2, 0.5, 0.5)


# ------------------------------------------------------------------ threshold debiasing


def test_debias_threshold_is_the_median():
    assert debias_threshold([0.9, 0.8, 0.7, 0.2]) == pytest.approx(0.75)
    assert debias_threshold(np.array([0.6, np.nan, 0.7, 0.9])) == pytest.approx(0.7)
    p = np.array([0.95, 0.9, 0.8, 0.6, 0.55, 0.3])
    tau = debias_threshold(p)
    assert (p > tau).mean() == 0.5  # P(A) = P(B) = 0.5 after thresholding


def test_debias_threshold_errors():
    with pytest.raises(ValueError, match="p_a holds no probabilities"):
        debias_threshold([np.nan])
    with pytest.raises(ValueError, match=r"p_a must be in \[0, 1\], got 1.5"):
        debias_threshold([0.2, 1.5])


def test_apply_threshold_redecides_from_p_a():
    judgments = table(
        [("q1", "a", "b", "g", "model_a"), ("q2", "a", "b", "g", "model_a"), ("q3", "a", "b", "g", "model_b"),
         ("q4", "a", "b", "g", "tie")],
        p_a=[0.9, 0.6, 0.3, None],
    )
    out = apply_threshold(judgments, 0.6)
    assert out["winner"].tolist() == ["model_a", "tie", "model_b", "tie"]  # row without p_a unchanged
    assert out["p_a"].tolist()[:3] == [0.9, 0.6, 0.3]
    assert apply_threshold(judgments, 0.5)["winner"].tolist() == ["model_a", "model_a", "model_b", "tie"]


def test_per_judge_thresholds():
    judgments = table(
        [("q1", "a", "b", "g", "model_a"), ("q2", "a", "b", "g", "model_a"), ("q1", "a", "b", "h", "model_b"),
         ("q2", "a", "b", "h", "model_a"), ("q3", "a", "b", "human", "tie")],
        p_a=[0.9, 0.7, 0.2, 0.4, None],
    )
    tau = debias_thresholds(judgments)
    assert tau.to_dict() == pytest.approx({"g": 0.8, "h": 0.3})  # human gave no p_a
    out = apply_threshold(judgments, tau)
    assert out["winner"].tolist() == ["model_a", "model_b", "model_b", "model_a", "tie"]
    with pytest.raises(ValueError, match=r"tau has no threshold for judge\(s\) \['h'\]"):
        apply_threshold(judgments, {"g": 0.5})
    with pytest.raises(ValueError, match=r"tau\['g'\] must be a number in \[0, 1\], got 2"):
        apply_threshold(judgments, {"g": 2, "h": 0.5})
    with pytest.raises(ValueError, match=r"tau must be a number in \[0, 1\], got -0.1"):
        apply_threshold(judgments, -0.1)


# --------------------------------------------------------------------- self-enhancement


def test_self_enhancement_hand_computed():
    judgments = table(
        [
            ("q1", "gpt", "claude", "openai:gpt", "model_a"),
            ("q2", "claude", "gpt", "openai:gpt", "tie"),
            ("q1", "gpt", "claude", "anthropic:claude", "model_b"),
            ("q2", "claude", "gpt", "anthropic:claude", "model_a"),
            ("q1", "gpt", "claude", "human", "model_a"),
            ("q2", "gpt", "claude", "human", "model_b"),
        ]
    )
    result = self_enhancement(judgments, aliases={"openai:gpt": "gpt", "anthropic:claude": "claude", "other": "x"})
    assert isinstance(result, SelfEnhancement)
    rates, summary = result
    assert rates.loc["openai:gpt", "gpt"] == pytest.approx(0.75)
    assert rates.loc["anthropic:claude", "gpt"] == pytest.approx(0.0)
    assert rates.loc["human", "claude"] == pytest.approx(0.5)
    assert summary.index.tolist() == ["anthropic:claude", "openai:gpt"]  # human has no alias
    gpt = summary.loc["openai:gpt"]
    assert gpt["model"] == "gpt"
    assert gpt["own_win_rate"] == pytest.approx(0.75)
    assert gpt["others_win_rate"] == pytest.approx((0.0 + 0.5) / 2)
    assert gpt["self_enhancement"] == pytest.approx(0.5)
    claude = summary.loc["anthropic:claude"]
    assert (claude["own_win_rate"], claude["others_win_rate"]) == pytest.approx((1.0, (0.25 + 0.5) / 2))


def test_self_enhancement_unknown_contestant():
    judgments = table([("q1", "gpt", "claude", "openai:gpt", "model_a")])
    with pytest.raises(ValueError, match=r"aliases name contestant\(s\) that never appear.*'openai:gpt': 'gpt-4'"):
        self_enhancement(judgments, aliases={"openai:gpt": "gpt-4"})


def test_self_enhancement_without_other_judges_is_nan():
    judgments = table([("q1", "gpt", "claude", "openai:gpt", "model_a")])
    summary = self_enhancement(judgments, aliases={"openai:gpt": "gpt"}).summary
    assert summary.loc["openai:gpt", "own_win_rate"] == 1.0
    assert math.isnan(summary.loc["openai:gpt", "self_enhancement"])


# -------------------------------------------------------------------------- length bias


ANSWERS = pd.DataFrame(
    {"question_id": [1, 1, 2, 2, 3, 3], "model": ["x", "y"] * 3, "answer": ["long", "s", "s", "long", "same", "same"]}
)


def test_length_bias_hand_computed():
    judgments = table(
        [
            ("1", "x", "y", "g", "model_a"),  # longer won
            ("1", "y", "x", "g", "model_a"),  # shorter won
            ("2", "x", "y", "g", "model_b"),  # longer won
            ("2", "y", "x", "g", "tie"),  # tie: dropped
            ("3", "x", "y", "g", "model_a"),  # equal length: dropped
            ("3", "x", "y", "h", "model_b"),  # equal length: dropped
        ]
    )
    out = length_bias(judgments, ANSWERS)
    assert out.index.tolist() == ["g", "h"]
    g = out.loc["g"]
    assert (g["n"], g["n_longer_won"]) == (3, 2)
    assert g["longer_win_rate"] == pytest.approx(2 / 3)
    assert (g["ci_low"], g["ci_high"]) == pytest.approx(wilson(2, 3))
    assert out.loc["h", "n"] == 0 and math.isnan(out.loc["h", "longer_win_rate"])


def test_length_bias_uses_turn_when_answers_have_it():
    answers = pd.DataFrame(
        {"question_id": ["1"] * 4, "model": ["x", "y", "x", "y"], "turn": [1, 1, 2, 2], "answer": ["aa", "a", "a", "aa"]}
    )
    judgments = table([("1", "x", "y", "g", "model_a"), ("1", "x", "y", "g", "model_a")], turn=[1, 2])
    assert length_bias(judgments, answers).loc["g", "n_longer_won"] == 1


def test_length_bias_errors():
    judgments = table([("1", "x", "y", "g", "model_a"), ("4", "x", "z", "g", "model_a")])
    with pytest.raises(ValueError, match=r"answers has no answer for \(question_id, model\) \('4', 'x'\)"):
        length_bias(judgments, ANSWERS)
    with pytest.raises(ValueError, match=r"answers is missing column\(s\) \['answer'\]"):
        length_bias(judgments, ANSWERS.drop(columns="answer"))
    with pytest.raises(ValueError, match="answers holds more than one answer for"):
        length_bias(judgments, pd.concat([ANSWERS, ANSWERS.iloc[:1]]))
    missing_text = ANSWERS.assign(answer=[None, "s", "s", "l", "a", "b"])
    with pytest.raises(ValueError, match=r"no answer for \(question_id, model\) \('1', 'x'\)"):
        length_bias(judgments.iloc[:1], missing_text)


# ------------------------------------------------------------------ judge bias as a model

BIAS_MODELS = ["m0", "m1", "m2", "m3", "m4", "m5"]
# judge -> (its own model, true position, self and length effects in logit units; length per sd of the ratio)
INJECTED = {"j0": ("m0", 0.4, 0.6, 0.5), "j1": ("m1", 0.0, 0.0, 0.0), "j2": ("m2", -0.3, 0.0, 0.3),
            "j3": ("m3", 0.0, 0.8, 0.0)}


def _biased_judges(seed: int, questions: int = 25):
    """Every judge judges every ordered pair of 6 models on each question, with the biases of INJECTED."""
    from scipy.special import expit

    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 0.7, len(BIAS_MODELS))
    verbose = rng.normal(0, 0.4, len(BIAS_MODELS))
    n = len(BIAS_MODELS)
    pairs = [(q, a, b) for q in range(questions) for a in range(n) for b in range(n) if a != b]
    length = np.exp(6 + verbose + rng.normal(0, 0.5, (questions, n)))
    la = np.array([length[q, a] for q, a, b in pairs])
    lb = np.array([length[q, b] for q, a, b in pairs])
    unit = (la - lb) / (la + lb)
    unit = unit / unit.std()  # the model's length covariate: the ratio in standard deviations
    q_, a_, b_ = (np.array(v) for v in zip(*pairs))
    frames = []
    for judge, (own, position, self_, length_effect) in INJECTED.items():
        o = BIAS_MODELS.index(own)
        logit = strength[a_] - strength[b_] + position + self_ * ((a_ == o).astype(float) - (b_ == o)) \
            + length_effect * unit
        first = rng.random(len(pairs)) < expit(logit)
        frames.append(pd.DataFrame({"question_id": q_.astype(str), "model_a": np.array(BIAS_MODELS)[a_],
                                    "model_b": np.array(BIAS_MODELS)[b_], "judge": judge,
                                    "winner": np.where(first, "model_a", "model_b"), "length_a": la,
                                    "length_b": lb}))
    frame = pd.concat(frames, ignore_index=True)
    judgments = judgments_from_frame(frame[["question_id", "model_a", "model_b", "judge", "winner"]])
    return judgments, frame[["length_a", "length_b"]]


def test_judge_bias_model_recovers_injected_biases_over_50_seeds():
    """Coverage of the 95% intervals >= 90%, power >= 80%, null detections <= 10% (issue 11)."""
    records = []
    aliases = {judge: spec[0] for judge, spec in INJECTED.items()}
    for seed in range(50):
        judgments, lengths = _biased_judges(seed)
        table = judge_bias_model(judgments, aliases=aliases, lengths=lengths).table
        for (judge, bias), row in table.iterrows():
            truth = dict(zip(BIASES, INJECTED[judge][1:]))[bias]
            records.append((truth, row["coefficient"], row["ci_low"], row["ci_high"], bool(row["significant"])))
    frame = pd.DataFrame(records, columns=["truth", "coefficient", "low", "high", "significant"])
    elo = 400 / math.log(10)
    covered = ((frame["low"] <= frame["truth"] * elo) & (frame["truth"] * elo <= frame["high"])).mean()
    power = frame.loc[frame["truth"] != 0, "significant"].mean()
    null = frame.loc[frame["truth"] == 0, "significant"].mean()
    assert len(frame) == 50 * 12
    assert covered >= 0.90, covered
    assert power >= 0.80, power
    assert null <= 0.10, null


def test_judge_bias_model_units_and_edge_cases():
    judgments, lengths = _biased_judges(0, questions=10)
    aliases = {judge: spec[0] for judge, spec in INJECTED.items()}
    result = judge_bias_model(judgments, aliases=aliases, lengths=lengths)
    row = result.table.loc[("j3", "self")]
    assert row["elo"] == pytest.approx(row["coefficient"] * 400 / math.log(10))
    assert row["probability_shift"] == pytest.approx(1 / (1 + math.exp(-row["coefficient"])) - 0.5)
    assert row["n"] == 300 and row["n_informative"] == 100      # m3 plays in 10 of the 30 ordered pairs
    assert result.ratings.mean() == pytest.approx(1000)
    # Without lengths, no length term; a judge without an alias has no self term.
    no_length = judge_bias_model(judgments, aliases={"j0": "m0"}).table
    assert set(no_length.index.get_level_values("bias")) == {"position", "self"}
    assert ("j1", "self") not in no_length.index
    # Families: m0 and m1 one family -> j0's self term now also covers m1's battles.
    family = judge_bias_model(judgments, aliases={"j0": "m0"}, families={"m0": "lab", "m1": "lab"}).table
    assert family.loc[("j0", "self"), "n_informative"] > no_length.loc[("j0", "self"), "n_informative"]
    # A judge whose family never plays against another family has a NaN term rather than a made-up one.
    lab = judgments["model_a"].isin(["m0", "m1"]) == judgments["model_b"].isin(["m0", "m1"])
    absent = judge_bias_model(judgments[lab.to_numpy()], aliases={"j0": "m0"},
                              families={"m0": "lab", "m1": "lab"}).table
    assert math.isnan(absent.loc[("j0", "self"), "coefficient"]) and absent.loc[("j0", "self"), "n_informative"] == 0
    with pytest.raises(ValueError, match="never appear"):
        judge_bias_model(judgments, aliases={"j0": "nobody"})


def test_judge_bias_model_mirroring_flips_position_only():
    judgments, lengths = _biased_judges(1, questions=8)
    aliases = {judge: spec[0] for judge, spec in INJECTED.items()}
    before = judge_bias_model(judgments, aliases=aliases, lengths=lengths).table
    swapped = judge_bias_model(mirror(judgments), aliases=aliases,
                               lengths=lengths.rename(columns={"length_a": "length_b", "length_b": "length_a"})).table
    assert np.allclose(swapped.xs("position", level="bias")["coefficient"],
                       -before.xs("position", level="bias")["coefficient"], atol=1e-6)
    for bias in ("self", "length"):
        assert np.allclose(swapped.xs(bias, level="bias")["coefficient"],
                           before.xs(bias, level="bias")["coefficient"], atol=1e-6)


def test_the_wilson_interval_equals_statsmodels():
    """The written-out Wilson interval (Wilson 1927) equals statsmodels' ``proportion_confint``
    (``method="wilson"``) at several levels, including 0 and n successes; NaN for no trials."""
    from statsmodels.stats.proportion import proportion_confint

    from peercore.bias import _wilson

    rng = np.random.default_rng(7)
    nobs = rng.integers(1, 5000, 200).astype(float)
    count = np.floor(rng.random(200) * (nobs + 1))
    count[:3], nobs[:3] = [0, 5, 7], [4, 5, 7]
    for level in (0.8, 0.95, 0.99):
        low, high = _wilson(count, nobs, level)
        theirs = proportion_confint(count, nobs, alpha=1 - level, method="wilson")
        assert np.allclose(low, theirs[0], atol=1e-12, rtol=0) and np.allclose(high, theirs[1], atol=1e-12, rtol=0)
    low, high = _wilson(np.array([0.0, 3.0]), np.array([0.0, 10.0]), 0.95)
    assert np.isnan(low[0]) and np.isnan(high[0]) and 0 < low[1] < 0.3 < high[1] < 1


def test_judge_bias_model_has_no_position_term_where_the_order_is_unknown():
    """Liusie et al. 2024's position bias needs to know which answer was shown first. AlpacaEval stores the
    baseline as generator_1 whatever its judge saw: imported with order_known = 0, the model's position term is
    not fitted (NaN, no informative verdict) instead of reading the baseline's strength as a pull to "first".
    A judge whose order is known keeps its term."""
    rng = np.random.default_rng(3)
    rows = []
    for q in range(300):
        for model in ("m1", "m2", "m3"):  # AlpacaEval's shape: the baseline always model_a, order unknown
            rows.append({"question_id": f"q{q}", "model_a": "base", "model_b": model, "judge": "annotator",
                         "winner": "model_a" if rng.random() < 0.7 else "model_b", "order_known": 0})
        a, b = ("m1", "m2") if q % 2 else ("m2", "m1")  # a judge shown both orders, recorded
        rows.append({"question_id": f"q{q}", "model_a": a, "model_b": b, "judge": "known",
                     "winner": "model_a" if rng.random() < 0.6 else "model_b", "order_known": 1})
    frame = pd.DataFrame(rows)
    table = judge_bias_model(frame).table
    assert math.isnan(table.loc[("annotator", "position"), "coefficient"])
    assert table.loc[("annotator", "position"), "n_informative"] == 0
    assert table.loc[("known", "position"), "n_informative"] == 300
    assert table.loc[("known", "position"), "probability_shift"] == pytest.approx(0.1, abs=0.08)


def _random_battles(rng: np.random.Generator, n: int, *, n_models: int, per_question: int) -> pd.DataFrame:
    """About ``n`` battles of judges ``gpt`` and ``m3`` (a contestant) between random pairs, one verdict each."""
    models = np.array([f"m{k}" for k in range(n_models)])
    a = rng.integers(0, n_models, n)
    b = (a + rng.integers(1, n_models, n)) % n_models
    frame = pd.DataFrame({"question_id": [f"q{k // per_question}" for k in range(n)], "model_a": models[a],
                          "model_b": models[b], "judge": np.where(rng.random(n) < 0.5, "gpt", "m3"),
                          "winner": rng.choice(["model_a", "model_b", "tie"], n, p=[0.5, 0.4, 0.1])})
    return frame.drop_duplicates(["question_id", "model_a", "model_b", "judge"]).reset_index(drop=True)


def test_judge_bias_model_on_collapsed_rows_equals_the_fit_on_every_battle(monkeypatch):
    """The judge-bias model (contextual Bradley-Terry, logit P(a > b | j) = xi_a - xi_b + beta_pos_j
    + beta_self_j s_j(a, b); MT-Bench section 3.3's self-enhancement as a parameter, Liusie et al. 2024's
    position bias) fitted on one row per distinct judge, pair, known order and outcome, each with its count,
    has the estimate and the sandwich intervals of the fit on every battle."""
    import peercore.bias as bias_module

    frame = _random_battles(np.random.default_rng(3), 30_000, n_models=8, per_question=4)
    collapsed = judge_bias_model(frame, aliases={"m3": "m3"})
    monkeypatch.setattr(bias_module, "_collapsed",
                        lambda battles, known: (battles, known, np.ones(len(battles), dtype=np.int64)))
    every = judge_bias_model(frame, aliases={"m3": "m3"})
    columns = ["coefficient", "ci_low", "ci_high", "probability_shift"]
    np.testing.assert_allclose(collapsed.table[columns].to_numpy(), every.table[columns].to_numpy(), rtol=0, atol=1e-9)
    assert collapsed.table[["n", "n_informative"]].equals(every.table[["n", "n_informative"]])
    np.testing.assert_allclose(collapsed.ratings.to_numpy(), every.ratings.to_numpy(), rtol=0, atol=1e-9)


def test_the_bias_model_of_a_study_fits_its_read_model_as_the_table_would_be_fitted():
    """The Bias page and ``peercore bias --model`` fit the read model's battles (issue 18: no decoding to a table
    and encoding again, 0.5 s of the page at a million verdicts); the contextual Bradley-Terry fit (MT-Bench
    section 3.3's self-enhancement as a parameter, Liusie et al. 2024 section 6's position bias) is the one the
    decoded table gives, order known or not, intervals included."""
    from peercore.app import Study
    from peercore.app.bias import judge_bias

    rng = np.random.default_rng(5)
    frame = _random_battles(rng, 4_000, n_models=5, per_question=3)
    frame["order_known"] = rng.random(len(frame)) < 0.8
    study = Study.from_frame(frame)
    got = judge_bias(study, families={"m3": "lab", "m4": "lab"})
    expected = judge_bias_model(frame, aliases={"m3": "m3"}, families={"m3": "lab", "m4": "lab"})
    columns = ["coefficient", "ci_low", "ci_high", "probability_shift", "n", "n_informative"]
    np.testing.assert_allclose(got.table[columns].to_numpy(float), expected.table[columns].to_numpy(float),
                               rtol=0, atol=1e-9)
    assert list(got.table.index) == list(expected.table.index)
    np.testing.assert_allclose(got.ratings.to_numpy(), expected.ratings.to_numpy(), rtol=0, atol=1e-9)
