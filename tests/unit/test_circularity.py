"""Circular gold and leave-one-agent-out gold (peercore.circularity) on a hand-made panel."""

from __future__ import annotations

import pandas as pd

from peercore.circularity import circular_gold, final_agent_verdicts, leave_one_agent_out_gold
from peercore.app.study import gold_judgments

# Three agents x, y, z on four debates of one panel:
#   1 agreed on model_a (all three end on model_a),
#   2 unresolved, x the lone dissent (x: model_a, y and z: model_b), nobody decided it,
#   3 unresolved, split three ways, a person decided model_b,
#   4 unresolved, x: model_a, y: model_b, z: no readable verdict.
DEBATES = pd.DataFrame({
    "id": [1, 2, 3, 4], "kind": "debate", "question_id": ["q1", "q2", "q3", "q4"], "model_a": "m1", "model_b": "m2",
    "criterion": "help", "scenario": "", "status": ["agreed", "unresolved", "unresolved", "unresolved"],
    "consensus": ["model_a", None, None, None], "panel": "debate:p",
})
FINAL = {1: ("model_a", "model_a", "model_a"), 2: ("model_a", "model_b", "model_b"),
         3: ("model_a", "model_b", "tie"), 4: ("model_a", "model_b", None)}
TURNS = pd.DataFrame(
    [{"debate_id": d, "round": 0, "position": p, "speaker": s, "verdict": "tie"} for d in FINAL for p, s in enumerate("xyz")]
    + [{"debate_id": d, "round": 1, "position": p, "speaker": s, "verdict": v}
       for d, verdicts in FINAL.items() for p, (s, v) in enumerate(zip("xyz", verdicts))])
DECISIONS = pd.DataFrame({"debate_id": [3], "question_id": ["q3"], "model_a": ["m1"], "model_b": ["m2"],
                          "criterion": ["help"], "annotator": ["ann"], "verdict": ["model_b"]})
GOLD = gold_judgments(DEBATES, DECISIONS)


def test_final_verdicts_are_each_agents_last_turn():
    finals = final_agent_verdicts(TURNS).set_index(["debate_id", "speaker"])["verdict"]
    assert finals[(2, "x")] == "model_a" and finals[(2, "y")] == "model_b" and pd.isna(finals[(4, "z")])
    assert len(finals) == 12


def test_circular_gold_counts_the_consensus_each_agent_formed():
    table = circular_gold(GOLD, TURNS, ["x", "y", "outsider"])
    assert table.to_dict("index") == {"x": {"debates": 4, "gold_formed": 1, "gold": 1},
                                      "y": {"debates": 4, "gold_formed": 1, "gold": 1}}


def test_leave_one_agent_out_gold():
    def verdicts(agent):
        gold = leave_one_agent_out_gold(GOLD, DEBATES, TURNS, agent)
        return sorted(zip(gold["debate_id"], gold["judge"], gold["winner"]))

    # x: its lone dissent on 2 becomes gold (what y and z agreed on); 3 keeps the person's decision; 4 has no gold.
    assert verdicts("x") == [(1, "debate:p without x", "model_a"), (2, "debate:p without x", "model_b"),
                             (3, "adjudicator:ann", "model_b")]
    # y: x and z split on 2; on 4, z has no readable verdict.
    assert verdicts("y") == [(1, "debate:p without y", "model_a"), (3, "adjudicator:ann", "model_b")]
    # A judge that argued in no debate keeps the panel's gold as it is.
    assert verdicts("outsider") == [(1, "debate:p", "model_a"), (3, "adjudicator:ann", "model_b")]
    gold = leave_one_agent_out_gold(GOLD, DEBATES, TURNS, "x")
    assert gold.loc[gold["debate_id"] == 2, "criterion"].tolist() == ["help"]
