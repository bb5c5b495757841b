"""The PRD ratings-folder reader on small hand-made folders (the real one is golden)."""

from __future__ import annotations

import json

import pytest

from peercore.errors import JudgmentError
from peercore.io.prd import PRD_HUMAN_JUDGE, read_prd_judgments


def _write(folder, reviewer, name, records):
    directory = folder / f"ratings-{reviewer}"
    directory.mkdir(exist_ok=True)
    (directory / name).write_text("".join(json.dumps(r) + "\n" for r in records))


def test_scores_map_to_canonical_winners_and_names_with_dashes(tmp_path):
    _write(tmp_path, "vicuna-13b", "answer_gpt4-vs-answer_vicuna-13b-vicuna-13b-reviewer.jsonl",
           [{"question_id": 1, "score": 1, "text": "A"}, {"question_id": 2, "score": 2, "text": "B"},
            {"question_id": 3, "score": 3, "text": "T"}, {"question_id": 4, "score": -1, "text": "?"}])
    _write(tmp_path, "human", "answer_bard-vs-answer_gpt4-human-reviewer_threeclass.jsonl",
           [{"question_id": 1, "score": 2, "text": "the question"}])
    _write(tmp_path, "gpt35", "answer-gpt35-vs-answer-gpt4-gpt35-reviewer-threeclass.jsonl",
           [{"question_id": 1, "score": 1}])
    out = read_prd_judgments(tmp_path)
    llm = out[out["judge"] == "vicuna-13b"]
    assert list(llm["model_a"].unique()) == ["gpt4"] and list(llm["model_b"].unique()) == ["vicuna-13b"]
    assert list(llm["winner"]) == ["model_a", "model_b", "tie", "tie"]
    assert list(llm["rationale"]) == ["A", "B", "T", "?"]
    human = out[out["judge"] == PRD_HUMAN_JUDGE]
    assert len(human) == 1 and human["rationale"].isna().all()
    assert len(out) == 5  # the hyphen-named second GPT-3.5 run is skipped


def test_bad_score_names_file_and_line(tmp_path):
    _write(tmp_path, "gpt4", "answer_a-vs-answer_b-gpt4-reviewer_threeclass.jsonl",
           [{"question_id": 1, "score": 1}, {"question_id": 2, "score": 7}])
    with pytest.raises(JudgmentError, match=r"answer_a-vs-answer_b-gpt4-reviewer_threeclass.jsonl, line 2, column 'score': score 7"):
        read_prd_judgments(tmp_path)


def test_not_a_prd_folder(tmp_path):
    with pytest.raises(JudgmentError, match="no ratings-"):
        read_prd_judgments(tmp_path)


def test_whole_folder_bundle_with_questions_answers_and_judges(tmp_path):
    from peercore.io.prd import read_prd_folder

    _write(tmp_path, "gpt4", "answer_gpt4-vs-answer_claude-gpt4-reviewer_threeclass.jsonl",
           [{"question_id": 1, "score": 1, "text": "A"}, {"question_id": 2, "score": 3, "text": "T"}])
    _write(tmp_path, "human", "answer_gpt4-vs-answer_guanaco-33b-human-reviewer_threeclass.jsonl",
           [{"question_id": 1, "score": 2, "text": "q"}, {"question_id": 1, "score": 2, "text": "q"}])
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "vicuna_questions.jsonl").write_text(
        json.dumps({"question_id": 1, "text": "Q1?", "category": "generic"}) + "\n"
        + json.dumps({"question_id": 2, "text": "Q2?", "category": "math"}) + "\n")
    (tmp_path / "generations").mkdir()
    (tmp_path / "generations" / "answer_gpt4.jsonl").write_text(
        json.dumps({"answer_id": "x", "question_id": 1, "model_id": "gpt-4:2023", "text": "A1"}) + "\n")
    (tmp_path / "generations_qlora").mkdir()
    (tmp_path / "generations_qlora" / "30b-guanaco-vicuna-generations-topp0.9-temp0.7.jsonl").write_text(
        json.dumps({"question_id": 1, "prompt": "...", "generation": "G1"}) + "\n")
    bundle = read_prd_folder(tmp_path)
    assert bundle.questions["question_id"].tolist() == ["1", "2"] and bundle.questions["category"].tolist() == [
        "generic", "math"]
    assert bundle.answers[["model", "answer"]].values.tolist() == [["gpt4", "A1"], ["guanaco-33b", "G1"]]
    assert bundle.notes == {"llm_reviews": 2, "human_votes": 2}
    assert {j["name"]: (j["kind"], j["model_alias"]) for j in bundle.judges} == {
        "gpt4": ("llm", "gpt4"), PRD_HUMAN_JUDGE: ("human", None)}
