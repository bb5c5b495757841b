"""Data page: PRD's own files one at a time, banners that never outlive their upload, JSON errors as sentences.

Issue 12 ("First five minutes"): a single PRD ratings file uploaded from ``ratings-gpt4/``
arrives without its folder, so the reviewer must come from its name (before: "a PRD
rating file ... sits in its ratings-<reviewer>/ folder"); ``generations/answer_<model>.jsonl``
was read as 80 *questions* (its records have ``question_id`` and ``text``); a success
banner stayed above the error of the next file; errors showed Python values (``True``,
``{'name': 'alpha'}``, ``(nan)``).
"""

from __future__ import annotations

import json

import pytest

from app_studies import app_test, open_page, problems
from peercore.store import Store

REVIEW_NAME = "answer_gpt4-vs-answer_vicuna-13b-gpt4-reviewer-threeclass.jsonl"  # as in PRD's ratings-gpt4/


def jsonl(*records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


REVIEWS = jsonl({"review_id": "r1", "question_id": 1, "answer1_id": "a", "answer2_id": "b", "reviewer_id": 1,
                 "metadata": {}, "text": "Assistant 1 is clearer.\n\n8 6", "score": 1},
                {"review_id": "r2", "question_id": 2, "answer1_id": "c", "answer2_id": "d", "reviewer_id": 1,
                 "metadata": {}, "text": "Assistant 2 is right.\n\n5 9", "score": 2},
                {"review_id": "r3", "question_id": 3, "answer1_id": "e", "answer2_id": "f", "reviewer_id": 1,
                 "metadata": {}, "text": "Both fine.\n\n7 7", "score": 3})
QUESTIONS = jsonl({"question_id": 1, "text": "How can I improve my time management skills?", "category": "generic"},
                  {"question_id": 2, "text": "What are the most effective ways to deal with stress?",
                   "category": "generic"})
ANSWERS = jsonl({"answer_id": "x1", "question_id": 1, "model_id": "gpt-4:20230520", "text": "Plan your day."},
                {"answer_id": "x2", "question_id": 2, "model_id": "gpt-4:20230520", "text": "Exercise."})


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def upload(at, name: str, payload: bytes, *, version: int = 0):
    at.file_uploader(key=f"data_upload_{version}").set_value((name, payload, "application/json")).run()
    return at


def preview(at) -> dict[str, str]:
    """The preview's counts (the first metric of each label; the study's own counts come later)."""
    out = {}
    for m in at.metric:
        out.setdefault(m.label, m.value)
    return out


def judgments_of(db, study: str):
    return Store(db).verdicts.table(study)


@pytest.fixture
def fresh(db_file, monkeypatch):
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", "")
    Store(db_file).studies.create("prd-upload")
    return db_file


def test_a_single_prd_ratings_file_uploads_with_its_reviewer_from_the_name(fresh):
    at = upload(open_page(app_test(), "data"), REVIEW_NAME, REVIEWS)
    assert problems(at) == []
    assert preview(at)["Judgments"] == "3"
    assert "reviewer: gpt4" in texts(at.caption) and "pair: gpt4 vs vicuna-13b" in texts(at.caption)
    at.button(key="data_import").click().run()
    assert problems(at) == []
    assert "Imported into" in texts(at.success)
    stored = judgments_of(fresh, "prd-upload")
    assert stored[["model_a", "model_b", "judge", "winner"]].values.tolist() == [
        ["gpt4", "vicuna-13b", "gpt4", "model_a"], ["gpt4", "vicuna-13b", "gpt4", "model_b"],
        ["gpt4", "vicuna-13b", "gpt4", "tie"]]
    assert stored["rationale"].iloc[0].startswith("Assistant 1 is clearer")


def test_a_human_ratings_file_is_a_human_judge(fresh):
    name = "answer_claude-vs-answer_gpt35-human-reviewer_threeclass.jsonl"
    votes = jsonl({"question_id": 1, "text": "Q?", "score": 2}, {"question_id": 1, "text": "Q?", "score": 2})
    at = upload(open_page(app_test(), "data"), name, votes)
    at.button(key="data_import").click().run()
    assert problems(at) == []
    assert Store(fresh).judges.table("prd-upload").set_index("name").loc["human:prd", "kind"] == "human"
    assert len(judgments_of(fresh, "prd-upload")) == 2  # two votes on one pair, both kept


def test_a_renamed_prd_review_says_how_its_name_must_read(fresh):
    at = upload(open_page(app_test(), "data"), "gpt4_reviews.jsonl", REVIEWS)
    error = texts(at.error)
    assert "cannot tell the two models and the reviewer from the file name" in error
    assert "answer_gpt4-vs-answer_claude-gpt4-reviewer_threeclass.jsonl" in error  # an example name
    assert all(b.key != "data_import" for b in at.button)


def test_prd_answers_are_answers_not_questions(fresh):
    at = upload(open_page(app_test(), "data"), "vicuna_questions.jsonl", QUESTIONS)
    at.button(key="data_import").click().run()
    at = upload(at, "answer_gpt4.jsonl", ANSWERS, version=1)
    assert problems(at) == []
    metrics = preview(at)
    assert (metrics["Questions"], metrics["Answers"]) == ("0", "2")  # before: read as 2 questions
    assert "model: gpt4" in texts(at.caption)
    assert "Imported into" not in texts(at.success)  # the questions' banner went with the new file
    at.button(key="data_import").click().run()
    assert problems(at) == []
    answers = Store(fresh).questions.answers("prd-upload")
    assert answers[["question_id", "model", "answer"]].values.tolist() == [["1", "gpt4", "Plan your day."],
                                                                            ["2", "gpt4", "Exercise."]]


def test_answers_to_questions_the_study_lacks_are_refused_naming_line_and_field(fresh):
    at = upload(open_page(app_test(), "data"), "answer_gpt4.jsonl", ANSWERS)
    at.button(key="data_import").click().run()
    error = texts(at.error)
    assert "Nothing was imported" in error and "line 1" in error and "field ‘question_id’" in error
    assert len(Store(fresh).questions.answers("prd-upload")) == 0


def test_an_old_success_banner_never_stays_above_a_new_error(fresh):
    at = upload(open_page(app_test(), "data"), REVIEW_NAME, REVIEWS)
    at.button(key="data_import").click().run()
    assert "Imported into" in texts(at.success) and not at.error
    bad = jsonl({"question_id": 4, "answer1_id": "a", "answer2_id": "b", "text": "?", "score": 7})
    at = upload(at, REVIEW_NAME.replace("vicuna-13b", "bard"), bad, version=1)
    assert not at.success and not any("added" in e.value.columns for e in at.dataframe)
    assert "line 1" in texts(at.error) and "score 7" in texts(at.error)
    assert len(judgments_of(fresh, "prd-upload")) == 3  # the store holds only the first import


BAD_JSON = {
    "boolean.jsonl": (jsonl({"question_id": "q1", "model_a": "a", "model_b": "b", "judge": "j", "winner": "tie",
                             "turn": True}), "line 1", "turn", "turn true is not a whole number"),
    "object.jsonl": (jsonl({"question_id": {"name": "alpha"}, "model_a": "a", "model_b": "b", "judge": "j",
                            "winner": "tie"}), "line 1", "question_id", '"name": "alpha"'),
    "empty_judge.jsonl": (jsonl({"question_id": "q1", "model_a": "a", "model_b": "b", "judge": "j", "winner": "tie"},
                                {"question_id": "q2", "model_a": "a", "model_b": "b", "judge": None,
                                 "winner": "tie"}), "line 2", "judge", "judge is empty; every judgment needs one"),
    "truncated.jsonl": (b'{"question_id": "q1", "model_a": "a", "model_b": "b", "judge": "j", "winner": "tie"}\n'
                        b'{"question_id": "q2", "model_a": "a", "model_b": "b", "judge": "j", "winner": "ti\n',
                        "line 2", None, "Unterminated string starting at column"),
    "scalar.json": (b"42\n", "line 1", None, "got a number"),
}


@pytest.mark.parametrize("name", list(BAD_JSON))
def test_json_errors_read_as_sentences_naming_line_and_field(fresh, name):
    payload, line, field, problem = BAD_JSON[name]
    at = upload(open_page(app_test(), "data"), name, payload)
    assert not at.exception
    error = texts(at.error)
    assert line in error and problem in error, error
    if field:
        assert f"field ‘{field}’" in error
    for python in ("True", "None", "{'", "(nan)", "Traceback", "got int", "at at"):
        assert python not in error, (python, error)
    assert len(judgments_of(fresh, "prd-upload")) == 0


@pytest.mark.parametrize("fmt, name, payload, counts", [
    ("prd-file", REVIEW_NAME, REVIEWS, {"Judgments": "3", "Answers": "0"}),
    ("prd-answers", "my_gpt4_answers.jsonl", ANSWERS, {"Judgments": "0", "Answers": "2"}),
])
def test_the_prd_formats_can_be_chosen_by_hand(fresh, fmt, name, payload, counts):
    at = open_page(app_test(), "data")
    from peercore.ui.imports import format_label

    assert "PRD" in format_label(fmt) and format_label(fmt) in at.selectbox(key="data_format").options
    at.selectbox(key="data_format").set_value(fmt).run()
    at = upload(at, name, payload)
    assert problems(at) == []
    assert {label: preview(at)[label] for label in counts} == counts
