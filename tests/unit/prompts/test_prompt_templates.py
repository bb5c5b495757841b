"""Template data files: every shipped template loads, renders, and says where it comes from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peercore.prompts import (
    KINDS,
    PromptTemplate,
    TemplateError,
    format_turns,
    list_templates,
    load_template,
    parse_verdict,
    template_from_mapping,
)

EXPECTED = {"prd_review", "prd_review_coding", "prd_review_math", "prd_discussion", "liusie_classifier",
            "liusie_classifier_numeric", "liusie_generative", "scaleeval_initial", "scaleeval_discussion"}


def test_the_shipped_templates():
    assert set(list_templates()) == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_template_is_complete_and_cited(name):
    template = load_template(name)
    assert template.name == name
    assert template.kind in KINDS
    assert template.source and template.title
    assert {"question", "answer_1", "answer_2"} <= set(template.fields)
    values = {field: f"<{field}>" for field in template.required}
    messages = template.render(**values)
    assert [m["role"] for m in messages] == ["system", "user"]
    text = "\n".join(m["content"] for m in messages)
    assert "{" + "question" + "}" not in text
    assert text.index("<answer_1>") < text.index("<answer_2>")


def test_prd_review_is_the_papers_table_8_prompt():
    template = load_template("prd_review")
    messages = template.render(question="Q", answer_1="A1", answer_2="A2")
    assert messages[0]["content"] == "You are a helpful and precise assistant for checking the quality of the answer."
    user = messages[1]["content"]
    assert user.startswith("[Question]\nQ\n\n[The Start of Assistant 1's Answer]\nA1\n")
    assert "choose 3 if the two assistants are equivalent" in user
    assert template.scheme == "prd" and template.required == ("question", "answer_1", "answer_2")


def test_prd_review_matches_the_released_prompt_file():
    from peerboard_testing import shared_data_dir

    path = shared_data_dir() / "prd_vicuna80" / "prompts" / "vicuna_prompt_threeclass.jsonl"
    if not path.is_file():
        pytest.skip(f"real dataset {path} is not present")
    released = {row["prompt_id"]: row for row in map(json.loads, path.read_text().splitlines())}
    for prompt_id, name in ((1, "prd_review"), (2, "prd_review_coding"), (3, "prd_review_math")):
        template = load_template(name)
        assert template.system == released[prompt_id]["system_prompt"]
        assert template.defaults["prompt"] == released[prompt_id]["defaults"]["prompt"]
        assert template.user == released[prompt_id]["prompt_template"]


def test_prd_discussion_turn():
    template = load_template("prd_discussion")
    history = format_turns([("Reviewer 1", "I keep 1.\n\n1")])
    messages = template.render(reviewer=2, other=1, question="Q", answer_1="x", answer_2="y",
                               review_1="R1\n1", review_2="R2\n2", discussion=history)
    assert messages[0]["content"] == "You are reviewer 2, discussing with reviewer 1 about your reviews of the following answers."
    user = messages[1]["content"]
    assert "[Reviewer 1]\nI keep 1.\n\n1\n\n[System]" in user
    assert "Remember we focus on unsupported information, core information and coherence." in user
    assert template.required == ("reviewer", "other", "question", "answer_1", "answer_2", "review_1", "review_2")


def test_classifier_templates_have_prefills_and_labels():
    ab = load_template("liusie_classifier")
    assert ab.labels == ("A", "B") and ab.prefill == "The better response is Response"
    assert "Which response is better, Response A or Response B?" in ab.render(question="q", answer_1="a",
                                                                             answer_2="b")[1]["content"]
    numeric = load_template("liusie_classifier_numeric")
    assert numeric.labels == ("1", "2") and numeric.prefill == "The better answer is Answer "
    assert "more coherent" in numeric.render(question="q", answer_1="a", answer_2="b",
                                             aspect="more coherent")[1]["content"]


@pytest.mark.parametrize(("name", "reply", "expected"), [
    ("liusie_generative", "A is right.\nVerdict: Response A", "model_a"),
    ("scaleeval_initial", "Submission 2 is off topic.\n1", "model_a"),
    ("scaleeval_discussion", "I keep my view.\n0", "tie"),
    ("prd_review", "Assistant 2 is wrong.\n1", "model_a"),
])
def test_each_template_scheme_reads_replies_in_its_own_format(name, reply, expected):
    assert parse_verdict(reply, scheme=load_template(name).scheme).verdict == expected


def test_values_with_braces_are_inserted_verbatim():
    template = load_template("liusie_generative")
    code = "def f(x): return {'a': x}  # {question}"
    user = template.render(question="Q?", answer_1=code, answer_2="{answer_1}")[1]["content"]
    assert code in user and "Response B: {answer_1}" in user


def test_missing_fields_are_named():
    with pytest.raises(TemplateError, match=r"'scaleeval_initial'.*\['criterion', 'rubric'\]"):
        load_template("scaleeval_initial").render(question="q", answer_1="a", answer_2="b")


def test_unknown_template_lists_known_ones():
    with pytest.raises(TemplateError, match="'nope'") as err:
        load_template("nope")
    assert "prd_review" in str(err.value)


def test_user_templates_from_a_mapping_are_validated():
    good = template_from_mapping({"name": "mine", "kind": "review", "scheme": "ab", "labels": ["A", "B"],
                                  "user": "{question} {answer_1} {answer_2}"})
    assert isinstance(good, PromptTemplate) and load_template(good) is good
    assert [m["role"] for m in good.render(question="q", answer_1="a", answer_2="b")] == ["user"]
    with pytest.raises(TemplateError, match="kind"):
        template_from_mapping({"name": "x", "kind": "poem", "scheme": "ab", "labels": ["A", "B"], "user": ""})
    with pytest.raises(TemplateError, match="labels"):
        template_from_mapping({"name": "x", "kind": "review", "scheme": "ab", "labels": ["A", "A"], "user": ""})
    with pytest.raises(TemplateError, match="missing key 'user'"):
        template_from_mapping({"name": "x", "kind": "review", "scheme": "ab", "labels": ["A", "B"]})


def test_templates_ship_as_package_data():
    folder = Path(__import__("peercore.prompts", fromlist=["x"]).__file__).parent
    assert {p.stem for p in folder.glob("*.toml")} == EXPECTED | {"scaleeval_rubrics"}
