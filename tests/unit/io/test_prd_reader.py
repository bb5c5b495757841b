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
