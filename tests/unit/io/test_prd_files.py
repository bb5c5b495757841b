"""PRD's files one at a time: a rating file without its folder, answer files, and how each is detected.

Before issue 12, a rating file outside its ``ratings-<reviewer>/`` folder (a browser upload)
was refused, PRD's ``generations/answer_<model>.jsonl`` and QLoRA's Guanaco answers were
detected as *questions* (their records hold ``question_id`` and ``text`` / ``prompt``), and
a renamed review file was read as questions too.
"""

from __future__ import annotations

import json

import pytest

from peercore.errors import JudgmentError
from peercore.io.detect import detect_format
from peercore.io.importer import import_path, read_path
from peercore.io.prd import PRD_HUMAN_JUDGE, prd_answers_model, prd_file_parts, read_prd_file
from peercore.store import Store
from peercore.app import Study


def write(path, *records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


@pytest.mark.parametrize("name, folder, parts", [
    ("answer_gpt4-vs-answer_claude-gpt4-reviewer_threeclass.jsonl", None, ("gpt4", "claude", "gpt4")),
    ("answer_bard-vs-answer_gpt35-gpt4-reviewer-threeclass.jsonl", None, ("bard", "gpt35", "gpt4")),
    ("answer_gpt4-vs-answer_vicuna-13b-vicuna-13b-reviewer.jsonl", None, ("gpt4", "vicuna-13b", "vicuna-13b")),
    ("answer_vicuna-13b-vs-answer_gpt4-claude-reviewer_threeclass.jsonl", None, ("vicuna-13b", "gpt4", "claude")),
    ("answer_bard-vs-answer_guanaco-13b-human-reviewer_threeclass.jsonl", None, ("bard", "guanaco-13b", "human")),
    ("answer-gpt35-vs-answer-gpt4-gpt35-reviewer-threeclass.jsonl", None, ("gpt35", "gpt4", "gpt35")),
    ("answer_a-vs-answer_b-llama-reviewer.jsonl", None, ("a", "b", "llama")),  # a reviewer PRD did not have
    ("answer_a-vs-answer_b-c-llama-2-reviewer.jsonl", "ratings-llama-2", ("a", "b-c", "llama-2")),  # its folder
    ("answer_a-vs-answer_b-c-llama-2-reviewer.jsonl", None, None),  # ambiguous without the folder
    ("answer_a-vs-answer_b-gpt4-reviewer.jsonl", "ratings-claude", None),  # the folder's reviewer is not in the name
    ("answer_gpt4.jsonl", None, None),
    ("review_gpt4.jsonl", None, None),
])
def test_models_and_reviewer_from_the_file_name(name, folder, parts):
    assert prd_file_parts(name, folder) == parts


def test_a_rating_file_on_its_own_reads_its_reviewer_from_the_name(tmp_path):
    path = tmp_path / "answer_gpt35-vs-answer_vicuna-13b-gpt4-reviewer-threeclass.jsonl"  # outside ratings-gpt4/
    write(path, {"question_id": 1, "text": "A is better", "score": 1}, {"question_id": 2, "text": "?", "score": -1})
    assert detect_format(path) == "prd-file"
    bundle = read_path(path)
    assert bundle.judgments[["model_a", "model_b", "judge", "winner"]].values.tolist() == [
        ["gpt35", "vicuna-13b", "gpt4", "model_a"], ["gpt35", "vicuna-13b", "gpt4", "tie"]]
    assert bundle.judges == [{"name": "gpt4", "kind": "llm"}]


def test_a_human_rating_file_is_the_prd_human_judge(tmp_path):
    path = tmp_path / "answer_claude-vs-answer_gpt4-human-reviewer_threeclass.jsonl"
    write(path, {"question_id": 1, "text": "Q?", "score": 2}, {"question_id": 1, "text": "Q?", "score": 3})
    bundle = read_prd_file(path)
    assert set(bundle.judgments["judge"]) == {PRD_HUMAN_JUDGE} and bundle.judgments["rationale"].isna().all()
    assert bundle.judges == [{"name": PRD_HUMAN_JUDGE, "kind": "human"}]


def test_a_name_that_does_not_tell_is_refused_saying_how_it_must_read(tmp_path):
    path = tmp_path / "answer_a-vs-answer_b-c-llama-2-reviewer.jsonl"
    write(path, {"question_id": 1, "score": 1})
    with pytest.raises(JudgmentError, match=r"cannot tell the two models and the reviewer from the file name; "
                                            r"a PRD rating file is named answer_<A>-vs-answer_<B>-<reviewer>"):
        read_path(path)


def test_a_renamed_review_file_is_a_prd_file_not_questions(tmp_path):
    path = tmp_path / "gpt4_reviews.jsonl"
    write(path, {"review_id": "r", "question_id": 1, "answer1_id": "a", "answer2_id": "b", "text": "…", "score": 1})
    assert detect_format(path) == "prd-file"  # before: "questions" (question_id + text)
    with pytest.raises(JudgmentError, match="cannot tell the two models"):
        read_path(path)


def test_bad_records_still_name_line_and_field(tmp_path):
    path = tmp_path / "answer_a-vs-answer_b-gpt4-reviewer_threeclass.jsonl"
    write(path, {"question_id": 1, "score": 1}, {"question_id": 2, "score": 7})
    with pytest.raises(JudgmentError, match=r"line 2, column 'score': score 7 is not one of"):
        read_path(path)
    write(path, {"question_id": 1, "score": 1}, {"score": 2})
    with pytest.raises(JudgmentError, match=r"line 2, column 'question_id': missing field"):
        read_path(path)


def test_prd_answer_files_are_answers_with_the_model_from_the_name(tmp_path):
    path = tmp_path / "answer_vicuna-13b.jsonl"
    write(path, {"answer_id": "x", "question_id": 1, "model_id": "vicuna-13b:20230322", "text": "A1"},
          {"answer_id": "y", "question_id": 2, "model_id": "vicuna-13b:20230322", "text": "A2"})
    assert detect_format(path) == "prd-answers"  # before: "questions"
    bundle = read_path(path)
    assert len(bundle.questions) == 0
    assert bundle.answers[["question_id", "model", "turn", "answer"]].values.tolist() == [
        ["1", "vicuna-13b", 1, "A1"], ["2", "vicuna-13b", 1, "A2"]]


def test_qlora_answers_and_other_names(tmp_path):
    path = tmp_path / "30b-guanaco-vicuna-generations-topp0.9-temp0.7.jsonl"
    write(path, {"question_id": 1, "prompt": "### Human: Q?", "generation": "G1"})
    assert detect_format(path) == "prd-answers"
    assert read_path(path).answers[["model", "answer"]].values.tolist() == [["guanaco-33b", "G1"]]
    other = tmp_path / "my_answers.jsonl"  # not named by the model: each record's model_id
    write(other, {"answer_id": "x", "question_id": 1, "model_id": "gpt-4:20230520", "text": "A"})
    assert read_path(other).answers["model"].tolist() == ["gpt-4:20230520"]
    assert prd_answers_model("answer_gpt35.jsonl") == "gpt35" and prd_answers_model("answers.jsonl") is None


def test_bad_answers_name_line_and_field(tmp_path):
    path = tmp_path / "answer_gpt4.jsonl"
    write(path, {"answer_id": "x", "question_id": 1, "model_id": "m", "text": "A"},
          {"answer_id": "y", "question_id": 2, "model_id": "m", "text": ["not", "text"]})
    with pytest.raises(JudgmentError, match=r"answer_gpt4\.jsonl, line 2, column 'text': text is a list"):
        read_path(path)
    write(path, {"answer_id": "x", "question_id": 1, "model_id": "m", "text": "A"},
          {"answer_id": "y", "question_id": 1, "model_id": "m", "text": "B"})
    with pytest.raises(JudgmentError, match=r"line 2, column 'question_id': a second answer of model 'gpt4'"):
        read_path(path)


def test_answers_import_only_beside_their_questions_and_leave_the_store_unchanged(tmp_path):
    store = Store(tmp_path / "db.sqlite")
    answers = tmp_path / "answer_gpt4.jsonl"
    write(answers, {"answer_id": "x", "question_id": 1, "model_id": "m", "text": "A"})
    store.studies.create("s")
    with pytest.raises(JudgmentError, match=r"line 1, column 'question_id': answer to question '1'"):
        import_path(answers, store=store, study="s")
    assert Study(store, "s").counts()["answers"] == 0
    questions = tmp_path / "vicuna_questions.jsonl"
    write(questions, {"question_id": 1, "text": "Q?", "category": "generic"})
    import_path(questions, store=store, study="s")
    import_path(answers, store=store, study="s")
    assert store.questions.answers("s")[["model", "answer"]].values.tolist() == [["gpt4", "A"]]


GOOD_ANSWER = '{"answer_id": "x", "question_id": 1, "model_id": "m", "text": "A"}'


@pytest.mark.parametrize("line, field, problem", [
    ('{"answer_id": "y", "question_id": 2, "model_id": "m", "text": NaN}', "text", "NaN is not valid JSON"),
    ('{"answer_id": "y", "question_id": 2, "model_id": "m", "text": "B", "text": "C"}', "text", "appears twice"),
    ('{"answer_id": "y", "question_id": "q\\n2", "model_id": "m", "text": "B"}', "question_id", "line break"),
    ('{"answer_id": "y", "question_id": {"a": 1}, "model_id": "m", "text": "B"}', "question_id", "an object"),
    ('{"answer_id": "y", "question_id": 2, "model_id": "m", "text": "\\ud800"}', "text", "lone surrogate"),
    ('{"answer_id": "y", "question_id": 2, "model_id": "m", "text": ' + "[" * 100 + "]" * 100 + "}", "text",
     "nested more than"),
    ('{"answer_id": "y", "question_id": "=cmd|calc", "model_id": "m", "text": "B"}', "question_id", "formula"),
    ('{"answer_id": "y", "question_id": 2, "model_id": "m", "text": 7}', "text", "a number, not the answer's text"),
])
def test_hostile_answer_records_are_refused_naming_line_and_field(tmp_path, line, field, problem):
    # The prd-answers read path keeps the budgets and checks of peercore.io.rules (every read path does).
    path = tmp_path / "answer_gpt4.jsonl"
    path.write_text(GOOD_ANSWER + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(JudgmentError) as caught:
        read_path(path)
    assert caught.value.line == 2 and caught.value.column == field, str(caught.value)
    assert problem in str(caught.value)
