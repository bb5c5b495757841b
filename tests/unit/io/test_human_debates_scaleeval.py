"""Human votes (majority and agreement derived, never stored), debate tables, ScaleEval folders."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from peercore.errors import JudgmentError
from peercore.io.debates import read_debate_table
from peercore.io.human import annotator_agreement, majority_labels, read_human_annotations
from peercore.io.importer import import_path
from peercore.io.scaleeval import parse_score, read_scaleeval
from peercore.store import Store


# ------------------------------------------------------------------------ humans


@pytest.fixture
def votes_file(tmp_path):
    path = tmp_path / "votes.csv"
    path.write_text(
        "question_id,model_a,model_b,annotator,winner,criterion,note\n"
        "q1,a,b,ann,model_a,help,clear\n"
        "q1,a,b,bob,model_a,help,\n"
        "q1,b,a,cid,model_b,help,saw b first\n"   # the same verdict from the other order
        "q2,a,b,ann,model_b,help,\n"
        "q2,a,b,bob,tie,help,\n"
        "q2,a,b,cid,model_a,help,\n"
        "q3,a,b,ann,tie,help,\n")
    return path


def test_one_row_per_vote_named_human_annotator(votes_file):
    bundle = read_human_annotations(votes_file)
    votes = bundle.judgments
    assert len(votes) == 7 and set(votes["judge"]) == {"human:ann", "human:bob", "human:cid"}
    assert votes["rationale"].iloc[0] == "clear" and votes["criterion"].eq("help").all()
    assert {j["name"]: j["kind"] for j in bundle.judges} == {"human:ann": "human", "human:bob": "human",
                                                             "human:cid": "human"}


def test_majority_and_agreement_are_derived_from_stored_votes(votes_file, tmp_path):
    store = Store(tmp_path / "pb.sqlite")
    import_path(votes_file, store=store, study="s")
    stored = store.verdicts.table("s")
    assert len(stored) == 7  # the votes, not a majority in their place
    assert set(stored["judge"]) == {"human:ann", "human:bob", "human:cid"}
    majority = majority_labels(stored)
    by_key = {(r.question_id, r.model_a, r.model_b): r.winner for r in majority.itertuples()}
    assert by_key == {("q1", "a", "b"): "model_a", ("q1", "b", "a"): "model_b", ("q2", "a", "b"): "tie",
                      ("q3", "a", "b"): "tie"}
    assert (majority["judge"] == "vote:human-majority").all()
    agreement = annotator_agreement(stored)
    # q1: 3 votes for a (one mirrored); q2: a / tie / b. q3 has one vote and is skipped.
    assert (agreement.n_items, agreement.raters_per_item, agreement.n_items_skipped) == (2, 3, 1)
    assert agreement.percent_agreement == pytest.approx((1.0 + 0.0) / 2)
    # Fleiss (1971): P-bar = 0.5; category shares a 4/6, b 1/6, tie 1/6 -> P_e = 1/2; kappa = 0.
    assert agreement.fleiss_kappa == pytest.approx(0.0)
    assert store.connect().execute("SELECT COUNT(*) FROM verdicts").fetchone()[0] == 7


def test_agreement_with_no_shared_items():
    frame = pd.DataFrame({"question_id": ["1"], "model_a": ["a"], "model_b": ["b"], "judge": ["human:x"],
                          "winner": ["tie"]})
    result = annotator_agreement(frame)
    assert result.n_items == 0 and math.isnan(result.fleiss_kappa)


def test_annotator_column_and_judge_column_together_is_refused(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("question_id,model_a,model_b,annotator,judge,winner\nq,a,b,x,y,tie\n")
    with pytest.raises(JudgmentError, match="has both 'annotator' and 'judge'"):
        read_human_annotations(path)


# ----------------------------------------------------------------------- debates


def test_debate_table_status_consensus_and_unparsed_turns(tmp_path):
    path = tmp_path / "panel.csv"
    path.write_text("debate_id,question_id,model_a,model_b,round,speaker,verdict,rationale\n"
                    "d1,q1,a,b,0,x,model_a,r\nd1,q1,a,b,0,y,model_b,r\nd1,q1,a,b,1,x,model_b,r\nd1,q1,a,b,1,y,model_b,r\n"
                    "d2,q2,a,b,0,x,model_a,r\nd2,q2,a,b,0,y,,garbled\n")
    bundle = read_debate_table(path)
    (d1, t1), (d2, t2) = bundle.debates
    assert (d1["status"], d1["consensus"], d1["n_rounds"]) == ("agreed", "model_b", 1)
    assert (d2["status"], d2["consensus"]) == ("unresolved", None)
    assert t2[1]["verdict"] is None and t2[1]["raw"] is not None
    assert d1["metadata"]["initial"] == {"x": "model_a", "y": "model_b"}
    assert bundle.judgments[["question_id", "judge", "winner"]].values.tolist() == [["q1", "debate:panel", "model_b"]]
    assert bundle.notes == {"debates": 2, "agreed_debates": 1, "unresolved_debates": 1}


def test_debate_table_refuses_a_missing_speaker(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("debate_id,question_id,model_a,model_b,round,speaker,verdict\n"
                    "d1,q1,a,b,0,x,model_a\nd1,q1,a,b,0,y,model_b\nd1,q1,a,b,1,x,model_a\n")
    with pytest.raises(JudgmentError, match=r"d\.csv, line 4, column 'speaker': round 1 of debate 'd1' has speakers \['x'\]"):
        read_debate_table(path)


# --------------------------------------------------------------------- ScaleEval


@pytest.mark.parametrize("score, winner", [("1", "model_a"), (2, "model_b"), (" 0 ", "tie"), (0, "tie"),
                                           ("4", None), (None, None), ("150", None), (True, None), (1.5, None)])
def test_scaleeval_scores(score, winner):
    assert parse_score(score) == winner


def make_scaleeval(root):
    """Two examples, pair x_vs_y; example 2 shows y first; one unparsed score; one debate per example."""
    (root / "responses" / "x-large").mkdir(parents=True)
    (root / "responses" / "y").mkdir(parents=True)
    (root / "responses" / "x-large" / "code.jsonl").write_text(
        "".join(json.dumps({"prompt": p, "category": "code", "response": r}) + "\n"
                for p, r in (("Sort a list", "use sorted()"), ("Reverse a string", "s[::-1]"))))
    (root / "responses" / "y" / "code.jsonl").write_text(
        "".join(json.dumps({"prompt": p, "category": "code", "response": r}) + "\n"
                for p, r in (("Sort a list", "bubble sort"), ("Reverse a string", "reversed(s)"))))
    base = root / "results" / "x_vs_y" / "helpfulness"
    singles = {"judge_a": [{"ID": 1, "Score": "1", "Reasoning": "A1"}, {"ID": 2, "Score": "2", "Reasoning": "A2"}],
               "judge_b": [{"ID": 1, "Score": "1", "Reasoning": "B1"}, {"ID": 2, "Score": "7", "Reasoning": "B2"}]}
    for judge, records in singles.items():
        (base / f"{judge}_score").mkdir(parents=True)
        (base / f"{judge}_score" / "code.jsonl").write_text(json.dumps(records))
    (base / "multiagent_score").mkdir(parents=True)
    debates = [
        {"id": 1, "Question": "Sort a list", "Submission 1": "use sorted()", "Submission 2": "bubble sort",
         "Speaker 1 - Initial Evaluation": {"reasoning": "B1", "score": "1"},
         "Speaker 2 - Initial Evaluation": {"reasoning": "A1", "score": "1"}},
        {"id": 2, "Question": "Reverse a string", "Submission 1": "reversed(s)", "Submission 2": "s[::-1]",
         "Speaker 1 - Initial Evaluation": {"reasoning": "A2", "score": "2"},
         "Speaker 2 - Initial Evaluation": {"reasoning": "B2", "score": "7"},
         "Speaker 1 - Discussion Round 1": {"reasoning": "still 2", "score": "2"},
         "Speaker 2 - Discussion Round 1": {"reasoning": "now 1", "score": "1"}},
    ]
    (base / "multiagent_score" / "code.jsonl").write_text(json.dumps(debates))


def test_scaleeval_folder(tmp_path):
    make_scaleeval(tmp_path)
    bundle = read_scaleeval(tmp_path)
    singles = bundle.judgments[bundle.judgments["judge"].str.startswith("scaleeval:")]
    # Example 2 showed y's answer first: model_a is y there, and score 2 means x-large won.
    assert singles[["question_id", "judge", "model_a", "model_b"]].values.tolist() == [
        ["code:1", "scaleeval:judge_a", "x-large", "y"], ["code:2", "scaleeval:judge_a", "y", "x-large"],
        ["code:1", "scaleeval:judge_b", "x-large", "y"], ["code:2", "scaleeval:judge_b", "y", "x-large"]]
    assert singles["winner"].tolist()[:3] == ["model_a", "model_b", "model_a"] and pd.isna(singles["winner"].iloc[3])
    assert singles["valid"].tolist() == [1, 1, 1, 0] and json.loads(singles["raw"].iloc[3]) == {"score": "7"}
    assert singles["criterion"].eq("helpfulness").all()
    (d1, turns1), (d2, turns2) = bundle.debates
    assert d1["status"] == "agreed" and d1["consensus"] == "model_a" and d1["n_rounds"] == 0
    assert [t["speaker"] for t in turns1] == ["scaleeval:judge_b", "scaleeval:judge_a"]
    assert d2["status"] == "unresolved" and d2["n_rounds"] == 1 and (d2["model_a"], d2["model_b"]) == ("y", "x-large")
    assert [(t["round"], t["verdict"]) for t in turns2] == [(0, "model_b"), (0, None), (1, "model_b"), (1, "model_a")]
    assert d2["scenario"] == "code" and d2["debate_key"] == "x_vs_y/helpfulness/code/2"
    assert bundle.notes["unresolved_debates"] == 1 and bundle.notes["debate_turns_unparsed"] == 1
    assert bundle.questions["category"].tolist() == ["code", "code"]
    consensus = bundle.judgments[bundle.judgments["judge"] == "debate:scaleeval"]
    assert consensus[["question_id", "winner"]].values.tolist() == [["code:1", "model_a"]]


def test_scaleeval_single_verdict_without_a_debate_keeps_its_verdict_invalid(tmp_path):
    make_scaleeval(tmp_path)
    base = tmp_path / "results" / "x_vs_y" / "helpfulness"
    debates = json.loads((base / "multiagent_score" / "code.jsonl").read_text())
    (base / "multiagent_score" / "code.jsonl").write_text(json.dumps(debates[:1]))
    bundle = read_scaleeval(tmp_path)
    row = bundle.judgments[(bundle.judgments["question_id"] == "code:2")
                           & (bundle.judgments["judge"] == "scaleeval:judge_a")].iloc[0]
    assert row["valid"] == 0 and pd.isna(row["winner"]) and "Submission 1 is unknown" in row["raw"]
    assert bundle.notes["single_verdicts_order_unknown"] == 2


def test_scaleeval_submission_matching_neither_answer_is_an_error(tmp_path):
    make_scaleeval(tmp_path)
    path = tmp_path / "results" / "x_vs_y" / "helpfulness" / "multiagent_score" / "code.jsonl"
    debates = json.loads(path.read_text())
    debates[1]["Submission 1"] = "something else"
    path.write_text(json.dumps(debates, indent=1))
    with pytest.raises(JudgmentError, match=r"code\.jsonl, line \d+, column 'Submission 1': Submission 1 / 2 match neither"):
        read_scaleeval(tmp_path)
