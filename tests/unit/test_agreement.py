"""Unit tests for peercore.agreement: hand-computed examples and edge cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from peercore.agreement import (
    AgreementResult,
    agreement,
    agreement_by_judge,
    agreement_of_pairs,
    cohen_kappa,
    example_level_agreement,
    fleiss_kappa,
    majority_vote,
    match_reference,
    rank_correlation,
    scaleeval_agreement,
    system_level_agreement,
    verdict_mode,
)
from peercore.judgments import judgments_from_frame, mirror


def table(rows, **extra) -> pd.DataFrame:
    """Canonical table from (question_id, model_a, model_b, judge, winner) tuples."""
    frame = pd.DataFrame(rows, columns=["question_id", "model_a", "model_b", "judge", "winner"])
    for column, values in extra.items():
        frame[column] = values
    return judgments_from_frame(frame)


def pairs(verdicts, references) -> pd.DataFrame:
    return pd.DataFrame({"verdict": verdicts, "reference_verdict": references})


# ------------------------------------------------------------------------ majority_vote


def test_majority_of_plus_zero_minus_is_a_tie():
    votes = table([("q1", "a", "b", "h1", "model_a"), ("q1", "a", "b", "h2", "tie"), ("q1", "a", "b", "h3", "model_b")])
    out = majority_vote(votes)
    assert len(out) == 1
    assert out.loc[0, "winner"] == "tie"
    assert out.loc[0, "judge"] == "majority"
    assert out.loc[0, "p_a"] == pytest.approx(0.5)


def test_majority_is_the_sign_of_the_mean():
    votes = table(
        [
            ("q1", "a", "b", "h1", "model_a"),
            ("q1", "a", "b", "h2", "model_a"),
            ("q1", "a", "b", "h3", "model_b"),
            ("q2", "a", "b", "h1", "tie"),
            ("q2", "a", "b", "h2", "model_b"),
        ]
    )
    out = majority_vote(votes, judge_name="human")
    assert out["winner"].tolist() == ["model_a", "model_b"]
    assert out["judge"].tolist() == ["human", "human"]
    # p_a = (1 + s) / 2 with s = 1/3 and -1/2
    assert out["p_a"].tolist() == pytest.approx([2 / 3, 0.25])


def test_majority_keeps_orientations_apart():
    votes = table([("q1", "a", "b", "h1", "model_a"), ("q1", "b", "a", "h2", "model_a")])
    out = majority_vote(votes)
    assert list(zip(out["model_a"], out["model_b"], out["winner"])) == [("a", "b", "model_a"), ("b", "a", "model_a")]


def test_majority_groups_by_turn_and_criterion_with_missing_as_own_value():
    votes = table(
        [("q1", "a", "b", "h1", "model_a"), ("q1", "a", "b", "h2", "model_b"), ("q1", "a", "b", "h3", "model_b")],
        turn=[1, 2, None],
    )
    out = majority_vote(votes)
    assert len(out) == 3
    by_turn = dict(zip(out["turn"].astype(object).where(out["turn"].notna(), None), out["winner"]))
    assert by_turn == {1: "model_a", 2: "model_b", None: "model_b"}
    crit = table([("q1", "a", "b", "h1", "model_a"), ("q1", "a", "b", "h2", "model_b")], criterion=["x", None])
    assert len(majority_vote(crit)) == 2


def test_weighted_majority_with_tie_margin():
    # weights sum to 1: s = 0.6 * 1 + 0.4 * (-1) = 0.2
    votes = table([("q1", "a", "b", "r1", "model_a"), ("q1", "a", "b", "r2", "model_b")])
    assert majority_vote(votes, weights={"r1": 0.6, "r2": 0.4})["winner"].tolist() == ["model_a"]
    assert majority_vote(votes, weights={"r1": 0.6, "r2": 0.4}, tie_margin=0.2)["winner"].tolist() == ["tie"]
    assert majority_vote(votes, weights={"r1": 0.6, "r2": 0.4}, tie_margin=0.19)["winner"].tolist() == ["model_a"]
    assert majority_vote(votes, weights={"r1": 0.4, "r2": 0.6})["winner"].tolist() == ["model_b"]
    # the score is normalised: scaling every weight does not change it
    assert majority_vote(votes, weights={"r1": 6, "r2": 4}, tie_margin=0.19)["p_a"].tolist() == pytest.approx([0.6])


def test_weighted_majority_with_zero_total_weight_is_a_tie():
    votes = table([("q1", "a", "b", "r1", "model_a"), ("q2", "a", "b", "r2", "model_b")])
    out = majority_vote(votes, weights={"r1": 1.0, "r2": 0.0})
    assert out["winner"].tolist() == ["model_a", "tie"]


def test_majority_errors_name_the_parameter():
    votes = table([("q1", "a", "b", "r1", "model_a")])
    with pytest.raises(ValueError, match=r"tie_margin must be a finite number >= 0, got -0.1"):
        majority_vote(votes, tie_margin=-0.1)
    with pytest.raises(ValueError, match=r"weights has no entry for judge\(s\) \['r1'\]"):
        majority_vote(votes, weights={"other": 1.0})
    with pytest.raises(ValueError, match=r"judgments.*winner 'first'"):
        majority_vote(votes.assign(winner="first"))
    with pytest.raises(ValueError, match="judgments must be a pandas DataFrame, got list"):
        majority_vote([1, 2])


def test_majority_of_nothing_is_empty():
    out = majority_vote(table([]))
    assert len(out) == 0
    assert "winner" in out.columns


# ---------------------------------------------------------------------- match_reference


def test_reference_only_in_reversed_orientation_is_mirrored():
    judge = table([("q1", "a", "b", "gpt", "model_a"), ("q2", "a", "b", "gpt", "model_b")])
    # humans saw (b, a): on q1 b won (model_a), on q2 a won (model_b)
    human = table([("q1", "b", "a", "human", "model_a"), ("q2", "b", "a", "human", "model_b")])
    out = match_reference(judge, human)
    assert out["reference_verdict"].tolist() == ["model_b", "model_a"]
    assert out["verdict"].tolist() == ["model_a", "model_b"]
    assert agreement(judge, human).agreement == 0.0
    assert out.columns.tolist() == [
        "question_id", "model_a", "model_b", "turn", "criterion", "judge", "verdict", "reference_verdict"
    ]


def test_majority_reference_uses_own_orientation_before_its_mirror():
    judge = table([("q1", "a", "b", "gpt", "model_a"), ("q1", "b", "a", "gpt", "model_a")])
    # the reference judged both orientations and (inconsistently) chose the first both times
    human = table([("q1", "a", "b", "h", "model_a"), ("q1", "b", "a", "h", "model_a")])
    out = match_reference(judge, human)
    assert out["reference_verdict"].tolist() == ["model_a", "model_a"]  # not doubled over itself
    assert agreement(judge, human).agreement == 1.0


def test_doubling_reproduces_prd_rule():
    # 3 human votes on (a, b) with majority model_b -> the mirror (b, a) gets model_a
    human = table([("q1", "a", "b", f"h{i}", w) for i, w in enumerate(["model_b", "model_b", "model_a"])])
    judge = table([("q1", "a", "b", "gpt", "model_b"), ("q1", "b", "a", "gpt", "model_b")])
    out = match_reference(judge, human)
    assert out["reference_verdict"].tolist() == ["model_b", "model_a"]
    result = agreement(judge, human)
    assert (result.n, result.agreement) == (2, 0.5)


def test_votes_mode_compares_with_every_vote_in_either_orientation():
    judge = table([("q1", "a", "b", "gpt", "model_a")])
    human = table(
        [
            ("q1", "a", "b", "h1", "model_a"),  # agrees
            ("q1", "b", "a", "h2", "model_b"),  # a won, mirrored: agrees
            ("q1", "b", "a", "h3", "model_a"),  # b won: disagrees
            ("q2", "a", "b", "h1", "model_a"),  # other question: not matched
        ]
    )
    out = match_reference(judge, human, reference_mode="votes")
    assert out["reference_verdict"].tolist() == ["model_a", "model_a", "model_b"]
    result = agreement(judge, human, reference_mode="votes")
    assert result.n == 3
    assert result.agreement == pytest.approx(2 / 3)
    # the majority of the same votes: (a, b) -> model_a by h1; (b, a) -> tie (+1, -1)
    majority = match_reference(judge, human, reference_mode="majority")
    assert majority["reference_verdict"].tolist() == ["model_a"]


def test_turn_and_criterion_are_part_of_the_key():
    judge = table([("q1", "a", "b", "gpt", "model_a"), ("q1", "a", "b", "gpt", "model_b")], turn=[1, 2])
    human = table([("q1", "a", "b", "h", "model_a")], turn=[2])
    out = match_reference(judge, human)
    assert out["turn"].tolist() == [2]
    assert out["reference_verdict"].tolist() == ["model_a"]
    # a missing criterion matches only a missing criterion
    judge = table([("q1", "a", "b", "gpt", "model_a"), ("q1", "a", "b", "gpt", "model_a")], criterion=["x", None])
    human = table([("q1", "a", "b", "h", "model_b")], criterion=[None])
    out = match_reference(judge, human)
    assert len(out) == 1 and pd.isna(out["criterion"].iloc[0])


def test_unmatched_judge_rows_are_left_out():
    judge = table([("q1", "a", "b", "gpt", "model_a"), ("q9", "a", "b", "gpt", "model_a")])
    human = table([("q1", "a", "b", "h", "model_a")])
    assert match_reference(judge, human)["question_id"].tolist() == ["q1"]


def test_match_reference_errors():
    judge = table([("q1", "a", "b", "gpt", "model_a")])
    with pytest.raises(ValueError, match=r"reference_mode must be one of \('majority', 'votes'\), got 'mean'"):
        match_reference(judge, judge, reference_mode="mean")
    with pytest.raises(ValueError, match=r"reference.*missing required column\(s\) winner"):
        match_reference(judge, judge.drop(columns="winner"))


# --------------------------------------------------------------------------- agreement


def test_agreement_of_pairs_hand_computed():
    # po = 4/5; Cohen pe = (2*1 + 2*3 + 1*1) / 25 = 9/25 -> kappa = (0.8 - 0.36) / 0.64
    # Fleiss (two raters = Scott's pi): pooled p = (3, 5, 2) / 10 -> pe = 0.38
    result = agreement_of_pairs(
        pairs(["model_a", "model_a", "model_b", "model_b", "tie"], ["model_a", "model_b", "model_b", "model_b", "tie"])
    )
    assert result.n == 5
    assert result.agreement == pytest.approx(0.8)
    assert result.cohen_kappa == pytest.approx(0.44 / 0.64)
    assert result.fleiss_kappa == pytest.approx(0.42 / 0.62)


def test_agreement_without_ties_drops_pairs_with_a_tie_on_either_side():
    p = pairs(["model_a", "tie", "model_b", "model_a", "model_b"], ["model_a", "model_a", "tie", "model_b", "model_b"])
    assert agreement_of_pairs(p, ties="include").agreement == pytest.approx(2 / 5)
    result = agreement_of_pairs(p, ties="exclude")
    assert result.n == 3
    assert result.agreement == pytest.approx(2 / 3)
    # 2x2 table [[1, 1], [0, 1]]: po = 2/3, pe = (2*1 + 1*2) / 9 = 4/9 -> kappa = 0.4
    assert result.cohen_kappa == pytest.approx(0.4)


def test_agreement_with_no_pairs_is_nan_not_an_error():
    result = agreement_of_pairs(pairs([], []))
    assert result.n == 0
    assert all(math.isnan(v) for v in (result.agreement, result.cohen_kappa, result.fleiss_kappa))
    only_ties = agreement_of_pairs(pairs(["tie"], ["model_a"]), ties="exclude")
    assert only_ties.n == 0 and math.isnan(only_ties.agreement)


def test_perfect_agreement_on_a_single_label_gives_nan_kappa():
    # statsmodels computes (1 - 1) / (1 - 1): chance agreement is already perfect
    result = agreement_of_pairs(pairs(["model_a"] * 4, ["model_a"] * 4))
    assert result.agreement == 1.0
    assert math.isnan(result.cohen_kappa) and math.isnan(result.fleiss_kappa)


def test_perfect_agreement_on_two_labels_gives_kappa_one():
    result = agreement_of_pairs(pairs(["model_a", "model_b"] * 2, ["model_a", "model_b"] * 2))
    assert (result.agreement, result.cohen_kappa, result.fleiss_kappa) == (1.0, pytest.approx(1.0), pytest.approx(1.0))


def test_agreement_of_pairs_errors():
    with pytest.raises(ValueError, match=r"ties must be one of \('include', 'exclude'\), got 'drop'"):
        agreement_of_pairs(pairs(["tie"], ["tie"]), ties="drop")
    with pytest.raises(ValueError, match=r"pairs is missing column\(s\) \['reference_verdict'\]"):
        agreement_of_pairs(pd.DataFrame({"verdict": ["tie"]}))


def test_agreement_pools_judges_and_agreement_by_judge_splits_them():
    human = table([("q1", "a", "b", "h", "model_a"), ("q2", "a", "b", "h", "model_b")])
    judges = table(
        [
            ("q1", "a", "b", "good", "model_a"),
            ("q2", "b", "a", "good", "model_a"),  # b won = human's model_b on (a, b)
            ("q1", "a", "b", "bad", "model_b"),
            ("q2", "a", "b", "bad", "model_b"),
            ("q7", "a", "b", "absent", "model_b"),
        ]
    )
    assert isinstance(agreement(judges, human), AgreementResult)
    assert agreement(judges, human).agreement == pytest.approx(3 / 4)
    by_judge = agreement_by_judge(judges, human)
    assert by_judge.index.tolist() == ["absent", "bad", "good"]
    assert by_judge.loc["good", "agreement"] == 1.0
    assert by_judge.loc["bad", "agreement"] == 0.5
    assert by_judge.loc["absent", "n"] == 0 and math.isnan(by_judge.loc["absent", "agreement"])


# ------------------------------------------------------------------------------- kappas


def test_cohen_kappa_wrapper():
    assert cohen_kappa([0, 1, 0, 1], [0, 1, 1, 0]) == pytest.approx(0.0)
    assert cohen_kappa(["x", "y"], ["y", "x"]) == pytest.approx(-1.0)
    assert math.isnan(cohen_kappa([], []))
    with pytest.raises(ValueError, match="labels_1 and labels_2 must have the same length, got 2 and 1"):
        cohen_kappa([1, 2], [1])
    with pytest.raises(ValueError, match="labels_2 holds a missing label"):
        cohen_kappa(["a"], [None])


def test_fleiss_kappa_wrapper_hand_computed():
    # 3 raters, 4 items, 2 categories. P_i = (1, 1/3, 1/3, 1/3) -> P = 1/2;
    # p = (7/12, 5/12) -> Pe = (49 + 25) / 144
    ratings = [["x", "x", "x"], ["x", "y", "y"], ["x", "x", "y"], ["x", "y", "y"]]
    pe = 74 / 144
    assert fleiss_kappa(ratings) == pytest.approx((1 / 2 - pe) / (1 - pe))
    # P_i = (1, 1/3, 1/3, 1), p = (1/2, 1/2) -> (2/3 - 1/2) / (1/2)
    assert fleiss_kappa([["x", "x", "x"], ["x", "y", "y"], ["x", "x", "y"], ["y", "y", "y"]]) == pytest.approx(1 / 3)
    assert math.isnan(fleiss_kappa(np.empty((0, 2))))
    with pytest.raises(ValueError, match=r"ratings needs at least 2 raters \(columns\), got 1"):
        fleiss_kappa([["x"], ["y"]])
    with pytest.raises(ValueError, match=r"ratings must be an items x raters array, got shape \(3,\)"):
        fleiss_kappa(["x", "y", "z"])


# ----------------------------------------------------------------------- rank correlation


def test_rank_correlation_uses_common_models():
    first = pd.Series({"a": 3.0, "b": 2.0, "c": 1.0, "only_here": 9.0})
    second = pd.Series({"a": 30.0, "b": 10.0, "c": 20.0, "d": 0.0})
    spearman = rank_correlation(first, second)
    assert spearman.n_models == 3
    assert float(spearman) == pytest.approx(0.5)  # 1 - 6 * 2 / (3 * 8)
    kendall = rank_correlation(first, second, method="kendall")
    assert kendall.statistic == pytest.approx(1 / 3)  # 2 concordant, 1 discordant
    assert rank_correlation(first, -first).statistic == pytest.approx(-1.0)


def test_rank_correlation_constant_side_is_nan():
    assert math.isnan(rank_correlation(pd.Series({"a": 1.0, "b": 1.0}), pd.Series({"a": 1.0, "b": 2.0})).statistic)


def test_rank_correlation_errors():
    with pytest.raises(ValueError, match=r"share 1 scored model\(s\) \(\['a'\]\); need at least 2"):
        rank_correlation(pd.Series({"a": 1.0, "b": 2.0}), pd.Series({"a": 1.0, "c": 2.0}))
    with pytest.raises(ValueError, match="method must be 'spearman' or 'kendall', got 'pearson'"):
        rank_correlation(pd.Series({"a": 1.0}), pd.Series({"a": 1.0}), method="pearson")
    with pytest.raises(ValueError, match=r"scores_2 lists model\(s\) \['a'\] more than once"):
        rank_correlation(pd.Series({"a": 1.0, "b": 2.0}), pd.Series([1.0, 2.0], index=["a", "a"]))


# ---------------------------------------------------------------------------- ScaleEval


def test_verdict_mode_breaks_ties_toward_tie():
    assert verdict_mode(["model_a", "model_a", "tie"]) == "model_a"
    assert verdict_mode(["model_a", "model_b"]) == "tie"
    assert verdict_mode(["model_a", "tie"]) == "tie"
    assert verdict_mode(["gpt", "claude", "claude", "gpt", "tie"]) == "tie"
    with pytest.raises(ValueError, match="verdicts is empty"):
        verdict_mode([])


def test_example_and_system_level_agreement():
    judge = ["model_a", "model_a", "model_b", "tie"]
    gold = ["model_a", "model_b", "model_b", "model_a"]
    assert example_level_agreement(judge, gold) == pytest.approx(0.5)
    assert system_level_agreement(judge, gold) is False  # model_a vs a 2-2 split -> tie
    assert system_level_agreement(["model_b", "model_b", "model_a"], ["model_b", "tie", "model_b"]) is True
    assert math.isnan(example_level_agreement([], []))
    with pytest.raises(ValueError, match="same length, got 2 and 1"):
        example_level_agreement(["tie", "tie"], ["tie"])


def test_example_level_agreement_aligns_series_on_their_index():
    judge = pd.Series(["model_a", "model_b"], index=["e1", "e2"])
    gold = pd.Series(["model_b", "model_a"], index=["e2", "e1"])
    assert example_level_agreement(judge, gold) == 1.0
    with pytest.raises(ValueError, match="different indexes"):
        example_level_agreement(judge, pd.Series(["model_a", "model_b"], index=["e1", "e3"]))


def test_scaleeval_agreement_per_judge_group_and_criterion():
    rows = [
        ("q1", "gpt", "claude", "j", "model_a"),
        ("q2", "claude", "gpt", "j", "model_b"),  # gpt wins again, other orientation
        ("q3", "gpt", "claude", "j", "model_b"),
        ("q1", "gpt", "claude", "k", "tie"),
    ]
    judgments = table(rows, criterion=["help", "help", "help", "help"])
    gold = table(
        [("q1", "gpt", "claude", "gold", "model_a"), ("q2", "gpt", "claude", "gold", "model_b"),
         ("q3", "claude", "gpt", "gold", "model_a")],
        criterion=["help"] * 3,
    )
    out = scaleeval_agreement(judgments, gold, group_of={"q1": "code", "q2": "code", "q3": "math"})
    assert out.columns.tolist() == [
        "judge", "group", "criterion", "system_1", "system_2", "n", "unparsed", "example_agreement",
        "judge_mode", "gold_mode", "system_agreement",
    ]
    j_code = out[(out["judge"] == "j") & (out["group"] == "code")].iloc[0]
    # q1: gpt / gpt agree; q2: judge says gpt, gold says claude
    assert (j_code["n"], j_code["example_agreement"]) == (2, 0.5)
    assert (j_code["system_1"], j_code["system_2"]) == ("claude", "gpt")
    assert j_code["judge_mode"] == "gpt" and j_code["gold_mode"] == "tie"
    assert not j_code["system_agreement"]
    j_math = out[(out["judge"] == "j") & (out["group"] == "math")].iloc[0]
    assert (j_math["example_agreement"], j_math["judge_mode"], bool(j_math["system_agreement"])) == (1.0, "claude", True)
    k = out[out["judge"] == "k"].iloc[0]
    assert (k["n"], k["example_agreement"], k["judge_mode"], k["gold_mode"]) == (1, 0.0, "tie", "gpt")
    assert set(out["criterion"]) == {"help"}


def test_scaleeval_agreement_without_groups_and_errors():
    judgments = table([("q1", "a", "b", "j", "model_a")])
    gold = table([("q1", "a", "b", "g", "model_a")])
    out = scaleeval_agreement(judgments, gold)
    assert "group" not in out.columns
    assert out["system_agreement"].tolist() == [True]
    assert pd.isna(out["criterion"].iloc[0])
    with pytest.raises(ValueError, match=r"group_of has no group for question_id\(s\) \['q1'\]"):
        scaleeval_agreement(judgments, gold, group_of={"q2": "code"})


# --------------------------------------------------------------- unparsed judge verdicts
# ScaleEval (Chern et al. 2024), section 3.3, eq. 2: example-level agreement is
# (1/n) sum_i 1[v_i = g_i] over ALL n examples; section 8 measures a judge that fails
# to answer. An unparsed verdict (winner missing, valid = 0, as
# Store.verdicts.table(include_invalid=True) returns it) is therefore a miss by default.


def with_invalid(rows) -> pd.DataFrame:
    """(question_id, model_a, model_b, judge, winner-or-None) rows in the store's include_invalid shape."""
    frame = pd.DataFrame(rows, columns=["question_id", "model_a", "model_b", "judge", "winner"])
    frame["valid"] = frame["winner"].notna().astype(int)
    frame["raw"] = [None if w else '{"score": null}' for w in frame["winner"]]
    return frame


GOLD_4 = [("q1", "a", "b", "gold", "model_a"), ("q2", "a", "b", "gold", "model_a"),
          ("q3", "a", "b", "gold", "model_b"), ("q4", "a", "b", "gold", "model_b")]
JUDGE_4 = [("q1", "a", "b", "j", "model_a"), ("q2", "a", "b", "j", "model_b"),
           ("q3", "a", "b", "j", None), ("q4", "a", "b", "j", "model_b")]


def test_unparsed_verdict_counts_as_a_miss_by_default():
    # By hand: q1 hit, q2 miss, q3 unparsed -> miss, q4 hit: 2 / 4 over n = 4.
    # Cohen: judge labels (a, b, U, b) vs gold (a, a, b, b): po = 1/2,
    # pe = 1/4 * 2/4 + 2/4 * 2/4 + 1/4 * 0 = 3/8 -> kappa = (1/2 - 3/8) / (5/8) = 0.2.
    result = agreement(with_invalid(JUDGE_4), table(GOLD_4))
    assert (result.n, result.unparsed) == (4, 1)
    assert result.agreement == pytest.approx(0.5)
    assert result.cohen_kappa == pytest.approx(0.2)


def test_unparsed_verdict_excluded_on_request():
    # Without q3: 2 / 3; judge (a, b, b) vs gold (a, a, b): pe = 1/3*2/3 + 2/3*1/3 = 4/9,
    # kappa = (2/3 - 4/9) / (5/9) = 0.4. The unparsed verdict is still reported.
    result = agreement(with_invalid(JUDGE_4), table(GOLD_4), unparsed="exclude")
    assert (result.n, result.unparsed) == (3, 1)
    assert result.agreement == pytest.approx(2 / 3)
    assert result.cohen_kappa == pytest.approx(0.4)


def test_unparsed_rows_are_matched_in_either_orientation_and_by_valid_flag():
    judge = with_invalid([("q1", "b", "a", "j", None), ("q2", "a", "b", "j", "model_a")])
    judge.loc[1, "valid"] = 0  # a verdict flagged invalid is unparsed even with a winner
    pairs_ = match_reference(judge, table(GOLD_4))
    assert pairs_["question_id"].tolist() == ["q1", "q2"]
    assert pairs_["verdict"].isna().tolist() == [True, True]
    assert pairs_["reference_verdict"].tolist() == ["model_b", "model_a"]  # q1 mirrored to (b, a)
    assert agreement_of_pairs(pairs_).n == 2 and agreement_of_pairs(pairs_).agreement == 0.0


def test_unparsed_rows_without_a_reference_are_not_counted():
    judge = with_invalid([*JUDGE_4, ("q9", "a", "b", "j", None)])
    assert agreement(judge, table(GOLD_4)).unparsed == 1


def test_unparsed_reference_rows_are_left_out():
    gold = with_invalid([("q1", "a", "b", "gold", "model_a"), ("q2", "a", "b", "gold", None)])
    judge = table([("q1", "a", "b", "j", "model_a"), ("q2", "a", "b", "j", "model_a")])
    assert (agreement(judge, gold).n, agreement(judge, gold).agreement) == (1, 1.0)


def test_unparsed_with_ties_excluded():
    # A pair whose reference is a tie goes under ties="exclude", unparsed or not.
    p = pairs(["model_a", None, None], ["model_a", "tie", "model_b"])
    result = agreement_of_pairs(p, ties="exclude")
    assert (result.n, result.unparsed, result.agreement) == (2, 1, 0.5)
    result = agreement_of_pairs(p, ties="include", unparsed="exclude")
    assert (result.n, result.unparsed, result.agreement) == (1, 2, 1.0)


def test_agreement_by_judge_reports_unparsed():
    judges = pd.concat([with_invalid(JUDGE_4), with_invalid([("q1", "a", "b", "k", "model_a")])], ignore_index=True)
    out = agreement_by_judge(judges, table(GOLD_4))
    assert out.loc["j", ["n", "unparsed"]].tolist() == [4, 1] and out.loc["j", "agreement"] == 0.5
    assert out.loc["k", ["n", "unparsed"]].tolist() == [1, 0]
    out = agreement_by_judge(judges, table(GOLD_4), unparsed="exclude")
    assert out.loc["j", ["n", "unparsed"]].tolist() == [3, 1]


def test_example_level_agreement_over_all_n_examples():
    # eq. 2 by hand: (1 + 0 + 0) / 3 with the unparsed second verdict a miss; 1 / 2 without it.
    judge, gold = ["model_a", None, "model_b"], ["model_a", "model_a", "model_a"]
    assert example_level_agreement(judge, gold) == pytest.approx(1 / 3)
    assert example_level_agreement(judge, gold, unparsed="exclude") == pytest.approx(1 / 2)
    assert math.isnan(example_level_agreement([None], ["tie"], unparsed="exclude"))
    with pytest.raises(ValueError, match="gold holds a missing verdict"):
        example_level_agreement(["tie"], [None])


def test_scaleeval_agreement_counts_unparsed_examples():
    judge = with_invalid([("q1", "gpt", "claude", "j", "model_a"), ("q2", "gpt", "claude", "j", None),
                          ("q3", "gpt", "claude", "j", None)])
    gold = table([("q1", "gpt", "claude", "g", "model_a"), ("q2", "gpt", "claude", "g", "model_a"),
                  ("q3", "gpt", "claude", "g", "model_b")])
    row = scaleeval_agreement(judge, gold).iloc[0]
    # n = 3 examples, one hit: 1/3; the judge's most frequent "verdict" is no verdict.
    assert (row["n"], row["unparsed"], row["example_agreement"]) == (3, 2, pytest.approx(1 / 3))
    assert (row["judge_mode"], row["gold_mode"], bool(row["system_agreement"])) == ("unparsed", "gpt", False)
    row = scaleeval_agreement(judge, gold, unparsed="exclude").iloc[0]
    assert (row["n"], row["unparsed"], row["example_agreement"], row["judge_mode"]) == (1, 2, 1.0, "gpt")


@pytest.mark.parametrize("call", [
    lambda: agreement(table(GOLD_4), table(GOLD_4), unparsed="skip"),
    lambda: agreement_of_pairs(pairs(["tie"], ["tie"]), unparsed="skip"),
    lambda: agreement_by_judge(table(GOLD_4), table(GOLD_4), unparsed="skip"),
    lambda: example_level_agreement(["tie"], ["tie"], unparsed="skip"),
    lambda: scaleeval_agreement(table(GOLD_4), table(GOLD_4), unparsed="skip"),
])
def test_unknown_unparsed_mode(call):
    with pytest.raises(ValueError, match=r"unparsed must be one of \('miss', 'exclude'\), got 'skip'"):
        call()


# --------------------------------------------------------------------- Krippendorff's alpha


def _raters(seed: int, *, units: int = 60, raters: int = 5, accuracy: float = 0.7, missing: float = 0.2):
    from peercore.judgments import judgments_from_frame

    rng = np.random.default_rng(seed)
    rows = []
    for q in range(units):
        truth = rng.choice(["model_a", "model_b", "tie"], p=[0.45, 0.45, 0.1])
        for r in range(raters):
            if rng.random() < missing:
                continue
            verdict = truth if rng.random() < accuracy else rng.choice(["model_a", "model_b", "tie"])
            rows.append({"question_id": str(q), "model_a": f"a{q % 7}", "model_b": f"b{q % 5}",
                         "judge": f"human:{r}", "winner": verdict})
    return judgments_from_frame(pd.DataFrame(rows))


@pytest.mark.parametrize("seed", range(5))
def test_krippendorff_alpha_equals_evalica(seed):
    import evalica

    from peercore.agreement import alpha_units, krippendorff_alpha

    judgments = _raters(seed, accuracy=0.4 + 0.1 * seed)
    ours = krippendorff_alpha(judgments, rounds=0)
    theirs = evalica.alpha(alpha_units(judgments))
    assert ours.alpha == pytest.approx(theirs.alpha, abs=1e-12)
    assert 50 < ours.units <= 60 and ours.raters == tuple(f"human:{r}" for r in range(5))


def test_krippendorff_alpha_textbook_example():
    """Krippendorff (2011), 'Computing Krippendorff's alpha-reliability', section C: 3 coders, nominal data.

    Two units where the coders agree, one where they split 2-1: o = [[4, 1], [1, 0]] ... computed by hand:
    values a,a,a | b,b | a,a,b -> coincidences o_aa = 3 + 0 + 1 = 4... alpha = 1 - D_o / D_e.
    """
    from peercore.agreement import krippendorff_alpha

    rows = [("1", "human:x", "model_a"), ("1", "human:y", "model_a"), ("1", "human:z", "model_a"),
            ("2", "human:x", "model_b"), ("2", "human:y", "model_b"),
            ("3", "human:x", "model_a"), ("3", "human:y", "model_a"), ("3", "human:z", "model_b")]
    judgments = judgments_from_frame(pd.DataFrame([{"question_id": q, "model_a": "m", "model_b": "n", "judge": j,
                                                    "winner": w} for q, j, w in rows]))
    # o_aa = 3*2/2 + 2*1/2 = 4; o_bb = 2*1/1 = 2; o_ab = o_ba = 2*1/2 = 1; n = 8; n_a = 5, n_b = 3
    # D_o = 1 - 6/8 = 0.25; D_e = 1 - (5*4 + 3*2)/(8*7) = 30/56; alpha = 1 - 0.25 * 56 / 30
    result = krippendorff_alpha(judgments, rounds=0)
    assert result.alpha == pytest.approx(1 - 0.25 * 56 / 30)
    assert (result.units, result.values) == (3, 8)


def test_krippendorff_alpha_bootstrap_interval_and_rater_choice():
    import evalica

    from peercore.agreement import alpha_units, krippendorff_alpha

    judgments = _raters(0)
    result = krippendorff_alpha(judgments, rounds=2000, seed=1)
    assert result.ci_low < result.alpha < result.ci_high
    kalpha = evalica.alpha_bootstrap(alpha_units(judgments), n_resamples=2000, random_state=0)
    # Resampling units (ours) and resampling pairs of values (KALPHA) give intervals of one size
    assert 0.7 < (result.ci_high - result.ci_low) / (kalpha.high - kalpha.low) < 1.6
    assert krippendorff_alpha(judgments, rounds=2000, seed=1) == result        # seeded
    two = krippendorff_alpha(judgments, raters=["human:0", "human:1"], rounds=0)
    assert two.raters == ("human:0", "human:1")
    # Mirroring every verdict relabels the categories consistently: alpha does not move
    assert krippendorff_alpha(mirror(judgments), rounds=0).alpha == pytest.approx(result.alpha)
    with pytest.raises(ValueError, match="matches no judge"):
        krippendorff_alpha(judgments, raters=["gpt:"])
    with pytest.raises(ValueError, match="at least two raters"):
        krippendorff_alpha(judgments, raters=["human:0"])
