"""The evaluator leaderboard's columns on a small study, each against a hand computation.

The study: questions q1-q3, contestants A, B, C; judge ``j1`` saw pairs in both orders,
``j2`` voted three times on one comparison and twice on another (repeated samples) and
once gave an unreadable reply; one human label per comparison. AlpacaEval's annotator
leaderboard (Dubois et al. 2023) reports these columns; PRD Table 2 the rank correlation;
MT-Bench (Zheng et al. 2023, section 3.3) position consistency and verbosity; Liusie et al.
2024 (section 6) P(first).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from peercore import evaluators as E
from peercore.agreement import agreement_by_judge
from peercore.domain import verdicts as V
from peercore.domain.selection import Selection
from peercore.position import judge_health, position_bias, swap_consistency

ROWS = [  # question, model_a, model_b, judge, winner, vote
    ("q1", "A", "B", "j1", "model_a", 0),
    ("q1", "B", "A", "j1", "model_b", 0),  # consistent with the row above: A both times
    ("q2", "A", "B", "j1", "model_a", 0),
    ("q2", "B", "A", "j1", "model_a", 0),  # the first answer both times
    ("q1", "A", "C", "j1", "tie", 0),
    ("q1", "C", "A", "j1", "model_b", 0),  # tie one way, A the other
    ("q1", "A", "B", "j2", "model_a", 0),
    ("q1", "A", "B", "j2", "model_a", 1),
    ("q1", "A", "B", "j2", "model_b", 2),  # three samples: a, a, b
    ("q2", "A", "B", "j2", "tie", 0),
    ("q2", "A", "B", "j2", "tie", 1),      # two samples: tie, tie
    ("q3", "B", "C", "j2", "model_b", 0),
    ("q3", "A", "C", "j2", None, 0),       # an unreadable reply
]
HUMANS = [("q1", "A", "B", "model_a"), ("q2", "A", "B", "model_b"), ("q1", "A", "C", "model_a"), ("q3", "B", "C", "tie")]
ANSWERS = {("q1", "A"): "Yes.", ("q1", "B"): "- one\n- two\nthree", ("q1", "C"): "A medium answer",
           ("q2", "A"): "1. step\n2. step", ("q2", "B"): "no",
           ("q3", "A"): "aaaaa", ("q3", "B"): "bbbbbbbbbb", ("q3", "C"): "ccc"}


@pytest.fixture()
def study():
    frame = pd.DataFrame(ROWS, columns=["question_id", "model_a", "model_b", "judge", "winner", "vote"])
    frame["valid"] = frame["winner"].notna().astype(int)
    return frame


def test_agreement_with_humans_with_and_without_ties(study):
    # j1 vs the (doubled) human labels: q1 AB a=a, BA b=b, q2 AB a!=b, BA a=a, q1 AC tie!=a, CA b=b -> 4/6;
    # without ties (row q1 AC dropped) 4/5.
    # j2: q1 AB a, a, b vs a -> 2 of 3; q2 AB tie, tie vs b -> 0 of 2; q3 BC b vs tie -> 0 -> 2/6; without ties 2/3.
    valid = study[study["winner"].notna()].drop(columns=["vote", "valid"])
    humans = pd.DataFrame(HUMANS, columns=["question_id", "model_a", "model_b", "winner"]).assign(judge="human:h")
    with_ties = agreement_by_judge(valid, humans)
    without = agreement_by_judge(valid, humans, ties="exclude")
    assert with_ties.loc["j1", "agreement"] == pytest.approx(4 / 6) and without.loc["j1", "agreement"] == pytest.approx(4 / 5)
    assert with_ties.loc["j2", "agreement"] == pytest.approx(2 / 6) and without.loc["j2", "agreement"] == pytest.approx(2 / 3)


def test_rank_agreement_over_the_contestants_both_ranked():
    # shared: A, B, C. Judge ranks A > B > C, humans B > A > C: d = (1, -1, 0), Spearman = 1 - 6*2/(3*8) = 0.5;
    # Kendall: (A,B) discordant, (A,C) and (B,C) concordant: (2 - 1)/3.
    judge = pd.Series({"A": 3.0, "B": 2.0, "C": 1.0, "D": 0.0})
    humans = pd.Series({"A": 2.0, "B": 3.0, "C": 1.0, "E": 5.0})
    got = E.rank_agreement(judge, humans)
    assert got["spearman"] == pytest.approx(0.5) and got["kendall"] == pytest.approx(1 / 3) and got["n_models"] == 3
    lonely = E.rank_agreement(judge, pd.Series({"A": 1.0, "Z": 2.0}))
    assert math.isnan(lonely["spearman"]) and lonely["n_models"] == 1


def test_stability_is_the_share_of_votes_equal_to_their_majority(study):
    # j2: q1 AB (a, a, b): majority a, 2 of 3; q2 AB (tie, tie): majority tie, 2 of 2; q3 BC one vote: not counted.
    # (2 + 2) / (3 + 2) = 0.8. j1 never repeated itself.
    verdicts = V.from_frame(study)
    comparison = V.group_ids([verdicts.question, verdicts.a, verdicts.b, verdicts.judge, verdicts.criterion,
                              verdicts.turn])
    judge = np.array(verdicts.judges, dtype=object)[verdicts.judge]
    got = E.stability(comparison, judge, verdicts.winner)
    assert got.loc["j2", "stability"] == pytest.approx(0.8) and got.loc["j2", "votes"] == 5
    assert got.loc["j2", "comparisons"] == 2
    assert math.isnan(got.loc["j1", "stability"]) and got.loc["j1", "comparisons"] == 0
    # a coin between two answers at K = 2 splits half the time: majority "tie", neither vote equals it
    split = E.stability([0, 0, 1, 1], ["x"] * 4, [0, 1, 0, 0])
    assert split.loc["x", "stability"] == pytest.approx(0.5)


def test_position_consistency_and_first_preference_from_the_read_model(study):
    # j1's three comparisons seen both ways: (q1 AB) consistent, (q2 AB) first both times, (q1 AC) tie vs "A
    # second" leans second. P(first) over decisive verdicts: rows 1, 3, 4 chose the first of 5 decisive = 0.6.
    # j2 saw every pair one way round only: silent, with a note.
    verdicts = V.from_frame(study)
    consistency = swap_consistency(verdicts)
    assert consistency.loc["j1", ["consistent", "inconsistent_first", "inconsistent_second"]].tolist() == \
        pytest.approx([1 / 3, 1 / 3, 1 / 3])
    assert consistency.loc["j2", "n_pairs"] == 0 and consistency.loc["j2", "position_note"]
    first = position_bias(verdicts)
    assert first.loc["j1", "p_first"] == pytest.approx(0.6) and first.loc["j1", "n_decisive"] == 5
    assert math.isnan(first.loc["j2", "p_first"])


def test_prefers_longer_and_lists(study):
    # j1, lengths: q1 A 4, B 17, C 15; q2 A 15, B 2. Decisive: (q1 AB) A won: shorter; (q1 BA) A: shorter;
    # (q2 AB) A: longer; (q2 BA) B won: shorter; (q1 CA) A: shorter -> 1 of 5.
    # Lists: q1 B has one, A not: A won twice (list lost twice); q2 A has one: won once, lost once;
    # q1 A-C: neither -> 1 of 4.
    rows = study[study["judge"] == "j1"]
    text_a = [ANSWERS[(q, m)] for q, m in zip(rows["question_id"], rows["model_a"])]
    text_b = [ANSWERS[(q, m)] for q, m in zip(rows["question_id"], rows["model_b"])]
    winner = V.from_frame(rows).winner
    longer = E.prefers_longer(rows["judge"], winner, [len(t) for t in text_a], [len(t) for t in text_b])
    assert longer.loc["j1", ["n", "n_longer_won"]].tolist() == [5, 1] and longer.loc["j1", "p_longer"] == 0.2
    lists = E.prefers_lists(rows["judge"], winner, text_a, text_b)
    assert lists.loc["j1", ["n", "n_list_won"]].tolist() == [4, 1] and lists.loc["j1", "p_lists"] == 0.25
    assert E.has_markdown_list(["- a", "1. b", "no list", "```\n- code\n```", None]).tolist()[:4] == [1, 1, 0, 0]


def test_unparsed_share(study):
    # j2 gave 7 replies, one unreadable: 1/7; j1 none.
    health = judge_health(V.from_frame(study))
    assert health.loc["j2", "invalid_share"] == pytest.approx(1 / 7) and health.loc["j1", "invalid_share"] == 0


def test_price_and_seconds_per_thousand_comparisons():
    # j1: $0.012 over 6 comparisons -> $2 per 1,000; j2: 3.5 s over 7 -> 500 s per 1,000; no comparison -> NaN.
    cost = E.per_thousand(pd.Series({"j1": 0.012, "j2": 0.0}), pd.Series({"j1": 6, "j2": 7}))
    assert cost["j1"] == pytest.approx(2.0) and cost["j2"] == 0.0
    assert E.per_thousand(3.5, 7) == pytest.approx(500.0) and math.isnan(E.per_thousand(1.0, 0))
    with pytest.raises(ValueError, match="must be >= 0"):
        E.per_thousand(-1.0, 3)


def test_stability_of_no_vote_is_an_empty_table():
    got = E.stability([], [], [], judges=["j"])
    assert got.loc["j", "comparisons"] == 0 and math.isnan(got.loc["j", "stability"])


def test_the_leaderboard_groups_only_the_questions_where_a_vote_repeats(study):
    """The evaluator leaderboard's stability (issue 18: at Arena scale it groups only the questions holding a
    vote numbered above 0 or a later round) equals the stability of the same selection's readable votes
    grouped whole (final verdicts: j1's round-0 verdict on q2 gives way to its round-1 one)."""
    from peercore.app import Study
    from peercore.app.guarantees import evaluator_leaderboard

    rounds = pd.DataFrame([("q2", "A", "B", "j1", "model_b", 0, 1)],
                          columns=["question_id", "model_a", "model_b", "judge", "winner", "vote", "round"])
    frame = pd.concat([study.assign(round=0), rounds.assign(valid=1)], ignore_index=True)
    verdicts = V.select(V.from_frame(frame), Selection(kinds=("llm",), repeated_votes="each")).verdicts
    readable = V.take(verdicts, verdicts.winner >= 0)
    comparison = V.group_ids([readable.question, readable.a, readable.b, readable.judge, readable.criterion,
                              readable.turn])
    whole = E.stability(comparison, np.array(readable.judges, dtype=object)[readable.judge], readable.winner)
    table = evaluator_leaderboard(Study.from_frame(frame)).table.set_index("judge")
    assert whole.loc["j2", "stability"] == pytest.approx(0.8)  # as computed by hand above
    assert table["stability"].tolist() == pytest.approx(whole["stability"].reindex(table.index).tolist(), nan_ok=True)
    assert math.isnan(table.loc["j1", "stability"])  # one verdict per comparison once final
