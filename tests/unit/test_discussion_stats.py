"""Opinion holding / altering and the leader effect (PRD, Li, Patel & Du 2023, section 5, Fig. 6).

The rule, as PRD section 5 counts it: a reviewer's verdict in a discussion turn is
*held* or *altered* only when the other reviewer disagrees with that reviewer's
opinion at that point (its own previous verdict); a change while both agreed is
counted apart ("changed after agreement"), and repeating an agreed verdict is neither.
PRD Fig. 6 splits the counts by role: the model as leader (speaks first) and as
follower. Every expected value below is worked out by hand from that rule.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from peercore.discussion import (
    EVENTS,
    discussion_outcomes,
    discussions_from_prd_examples,
    leader_adoption,
    leader_effect,
    opinion_altering_holding,
    opinion_changes,
    opinion_events,
    verdict_changes,
)

A, B, TIE = "model_a", "model_b", "tie"


def transcript(*verdicts, leader="L", follower="F", debate_id=1):
    """A PRD discussion: the two initial reviews (leader, follower), then turns alternating L, F, L, ...

    Store shapes: turn rows ``debate_id, round, position, speaker, verdict, rationale, raw``
    (round 0 = initial reviews at positions 0 and 1; turn t = round t, position 0) and
    a debates row with ``metadata`` leader / follower.
    """
    rows = [(debate_id, 0, 0, leader, verdicts[0]), (debate_id, 0, 1, follower, verdicts[1])]
    for t, verdict in enumerate(verdicts[2:], start=1):
        rows.append((debate_id, t, 0, leader if t % 2 == 1 else follower, verdict))
    turns = pd.DataFrame(rows, columns=["debate_id", "round", "position", "speaker", "verdict"])
    turns["rationale"], turns["raw"] = "", None
    debates = pd.DataFrame({"id": [debate_id], "kind": ["discussion"],
                            "metadata": [{"leader": leader, "follower": follower}]})
    return debates, turns


def counts(debates, turns) -> dict:
    table = opinion_altering_holding(debates, turns).set_index(["speaker", "role"])
    return {key: tuple(int(table.loc[key, c]) for c in ("held", "altered", "changed_after_agreement"))
            for key in table.index}


def stack(*pairs):
    return (pd.concat([p[0] for p in pairs], ignore_index=True), pd.concat([p[1] for p in pairs], ignore_index=True))


# ------------------------------------------------------------------- one rule at a time


def test_agreeing_throughout_holds_nothing():
    # L: a | F: a, then a, a, a, a. Nobody is ever challenged: 0 held (the old count said 2 each).
    debates, turns = transcript(A, A, A, A, A, A)
    assert counts(debates, turns) == {("F", "follower"): (0, 0, 0), ("L", "leader"): (0, 0, 0)}
    assert opinion_events(debates, turns)["event"].tolist() == ["kept_agreement"] * 4
    old = verdict_changes(turns)
    assert (~old["altered"]).sum() == 4  # the old measure: every repeat "held"


def test_one_disagreement_then_the_follower_changes():
    # L: a | F: b. Turn 1, L says a facing F's b: held. Turn 2, F says a facing L's a
    # with its own b: altered. Then L a / F a: both agree, nothing.
    debates, turns = transcript(A, B, A, A, A, A)
    assert counts(debates, turns) == {("F", "follower"): (0, 1, 0), ("L", "leader"): (1, 0, 0)}
    assert opinion_events(debates, turns)["event"].tolist() == ["held", "altered", "kept_agreement", "kept_agreement"]


def test_the_leader_gives_in_at_once():
    # L: a | F: b. Turn 1, L says b facing F's b with its own a: altered. Turn 2: agreed.
    debates, turns = transcript(A, B, B, B)
    assert counts(debates, turns) == {("F", "follower"): (0, 0, 0), ("L", "leader"): (0, 1, 0)}


def test_both_hold_through_four_turns():
    debates, turns = transcript(A, B, A, B, A, B)
    assert counts(debates, turns) == {("F", "follower"): (2, 0, 0), ("L", "leader"): (2, 0, 0)}


def test_a_change_after_agreement_is_counted_apart():
    # L: a | F: a. Turn 1, L says b although F agreed with its a: changed after agreement.
    # Turn 2, F (own a) faces L's b and says a: held. Turn 3, L (own b) faces F's a, says a: altered.
    debates, turns = transcript(A, A, B, A, A)
    assert counts(debates, turns) == {("F", "follower"): (1, 0, 0), ("L", "leader"): (0, 1, 1)}
    assert opinion_events(debates, turns)["event"].tolist() == ["changed_after_agreement", "held", "altered"]


def test_the_other_reviewers_latest_turn_is_what_counts():
    # L: a | F: b. Turn 1 L: b (altered). Turn 2 F: a (F's own b now AGREES with L's b,
    # so this is a change after agreement, not altering). Turn 3 L: b facing F's a: held.
    debates, turns = transcript(A, B, B, A, B)
    events = opinion_events(debates, turns)
    assert events["event"].tolist() == ["altered", "changed_after_agreement", "held"]
    assert events["others"].tolist() == [(B,), (B,), (A,)]
    assert events["previous"].tolist() == [A, B, B]


def test_a_tie_is_an_opinion_like_any_other():
    debates, turns = transcript(TIE, A, TIE, TIE)
    assert counts(debates, turns) == {("F", "follower"): (0, 1, 0), ("L", "leader"): (1, 0, 0)}


def test_unreadable_verdicts_are_not_counted():
    # L: a | F: b. Turn 1 L: unreadable. Turn 2 F: b, facing L's last readable a: held.
    debates, turns = transcript(A, B, None, B)
    assert opinion_events(debates, turns)["event"].tolist() == ["unreadable", "held"]
    assert counts(debates, turns) == {("F", "follower"): (1, 0, 0), ("L", "leader"): (0, 0, 0)}
    # An unreadable initial review leaves the speaker without an opinion to hold.
    debates, turns = transcript(None, B, A, A)
    assert opinion_events(debates, turns)["event"].tolist() == ["unreadable", "altered"]


def test_roles_come_from_the_metadata_else_from_speaking_order():
    debates, turns = transcript(A, B, A, A, leader="x", follower="y")
    assert counts(debates, turns) == {("x", "leader"): (1, 0, 0), ("y", "follower"): (0, 1, 0)}
    assert counts(debates[["id"]], turns) == counts(debates, turns)  # first speaker of round 0 leads


def test_simultaneous_rounds_of_a_debate_see_the_previous_round():
    # ScaleEval-style round: three agents speak at once and each sees the others' previous round.
    # Round 0: P a, Q b, R a. Round 1: P a (Q disagrees: held), Q a (P and R disagree: altered),
    # R a (Q's round-0 b disagrees: held) - Q's change in the same round is not seen yet.
    turns = pd.DataFrame([(9, 0, 0, "P", A), (9, 0, 1, "Q", B), (9, 0, 2, "R", A),
                          (9, 1, 0, "P", A), (9, 1, 1, "Q", A), (9, 1, 2, "R", A)],
                         columns=["debate_id", "round", "position", "speaker", "verdict"])
    events = opinion_events(pd.DataFrame({"id": [9]}), turns)
    assert events["event"].tolist() == ["held", "altered", "held"]
    assert events["role"].tolist() == ["leader", "follower", "follower"]


# ------------------------------------------------------------- per role and per model


def test_leader_effect_lays_the_counts_out_per_model_and_role():
    # x leads the first discussion (x holds once, y alters once) and follows in the
    # second (y leads and holds twice, x holds twice).
    first = transcript(A, B, A, A, leader="x", follower="y", debate_id=1)
    second = transcript(B, A, B, A, B, A, leader="y", follower="x", debate_id=2)
    debates, turns = stack(first, second)
    effect = leader_effect(debates, turns)
    assert effect.loc["x", ["leader_held", "leader_altered", "follower_held", "follower_altered"]].tolist() == [1, 0, 2, 0]
    assert effect.loc["y", ["leader_held", "leader_altered", "follower_held", "follower_altered"]].tolist() == [2, 0, 0, 1]
    assert effect.loc["y", "follower_altering_rate"] == 1.0 and effect.loc["x", "leader_altering_rate"] == 0.0
    table = opinion_altering_holding(debates, turns).set_index(["speaker", "role"])
    assert table.loc[("x", "follower"), "discussions"] == 1 and table.loc[("x", "follower"), "turns"] == 2


def test_never_challenged_has_no_altering_rate():
    debates, turns = transcript(A, A, A, A)
    table = opinion_altering_holding(debates, turns)
    assert table["turns"].tolist() == [0, 0] and table["altering_rate"].isna().all()
    assert math.isnan(leader_effect(debates, turns).loc["L", "leader_altering_rate"])


def test_empty_input():
    empty = pd.DataFrame(columns=["debate_id", "round", "position", "speaker", "verdict"])
    assert len(opinion_altering_holding(pd.DataFrame({"id": []}), empty)) == 0
    assert len(leader_effect(pd.DataFrame({"id": []}), empty)) == 0
    assert set(opinion_events(pd.DataFrame({"id": []}), empty).columns) >= {"event", "role"}


def test_missing_columns_are_named():
    debates, turns = transcript(A, B)
    with pytest.raises(ValueError, match=r"turns is missing column\(s\) \['verdict'\]"):
        opinion_events(debates, turns.drop(columns="verdict"))
    with pytest.raises(ValueError, match=r"debates is missing column\(s\) \['id'\]"):
        opinion_events(debates.drop(columns="id"), turns)


def test_events_are_the_documented_ones():
    assert EVENTS == ("held", "altered", "changed_after_agreement", "kept_agreement", "unreadable")


# -------------------------------------------------------------- the measures kept apart


def test_leader_adoption_is_the_old_measure_under_its_own_name():
    # Split then agreed on the leader's view (1), on the follower's (2), agreed from the start (3).
    debates, turns = stack(transcript(A, B, A, A, debate_id=1), transcript(A, B, B, B, debate_id=2),
                           transcript(A, A, A, A, debate_id=3))
    table = leader_adoption(debates, turns)
    assert table.to_dict("index") == {"L": {"debates": 2, "ended_on_leader_verdict": 1, "share": 0.5}}


def test_discussion_outcomes_carry_the_paper_counts():
    debates, turns = stack(transcript(A, A, A, A, debate_id=1), transcript(A, A, B, A, A, debate_id=2))
    out = discussion_outcomes(debates, turns).set_index("debate_id")
    assert out.loc[1, ["held", "altered", "changed_after_agreement"]].tolist() == [0, 0, 0]
    assert out.loc[2, ["held", "altered", "changed_after_agreement"]].tolist() == [1, 1, 1]


def test_opinion_changes_is_the_old_name_of_verdict_changes():
    debates, turns = transcript(A, B, A, A)
    pd.testing.assert_frame_equal(opinion_changes(turns), verdict_changes(turns))


# --------------------------------------------------------------------- data.json parser


def test_prd_examples_become_one_discussion_per_leader_order():
    record = {
        "question": "q?", "answer_a_type": "human", "answer_b_type": "gpt3",
        "reviewer_1_model": "gpt4", "reviewer_2_model": "claude",
        "initial_justification_gpt4": {"justification": "1 is better\n1", "preference": 1},
        "initial_justification_claude": {"justification": "2 is better\n2", "preference": 2},
        "gpt4_claude_discussion": [{"system": "..."}, {"background": "..."},
                                   {"gpt4": {"content": "still 1", "preference": 1}},
                                   {"claude": {"content": "fine, 1", "preference": 1}}],
        "claude_gpt4_discussion": [{"system": "..."}, {"background": "..."},
                                   {"claude": {"content": "2", "preference": 2}},
                                   {"gpt4": {"content": "??", "preference": None}}],
    }
    debates, turns = discussions_from_prd_examples([record])
    assert debates["id"].tolist() == [1, 2]
    assert [m["leader"] for m in debates["metadata"]] == ["gpt4", "claude"]
    assert debates["status"].tolist() == ["agreed", "unresolved"] and debates["consensus"].tolist()[0] == A
    first = turns[turns["debate_id"] == 1]
    assert first[["round", "position", "speaker", "verdict"]].values.tolist() == [
        [0, 0, "gpt4", A], [0, 1, "claude", B], [1, 0, "gpt4", A], [2, 0, "claude", A]]
    second = turns[turns["debate_id"] == 2]
    assert second["speaker"].tolist() == ["claude", "gpt4", "claude", "gpt4"]
    assert pd.isna(second["verdict"].tolist()[-1]) and pd.isna(second["raw"].tolist()[-1])
    assert counts(debates, turns) == {("claude", "follower"): (0, 1, 0), ("claude", "leader"): (1, 0, 0),
                                      ("gpt4", "follower"): (0, 0, 0), ("gpt4", "leader"): (1, 0, 0)}


def test_prd_examples_errors_name_the_record():
    with pytest.raises(ValueError, match=r"records\[0\] has no list 'a_b_discussion'"):
        discussions_from_prd_examples([{"reviewer_1_model": "a", "reviewer_2_model": "b"}])
