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

EXPECTED = {"prd_review", "prd_review_coding", "prd_review_math", "prd_review_discussion", "prd_discussion",
            "liusie_classifier",
            "liusie_classifier_numeric", "liusie_generative", "scaleeval_initial", "scaleeval_discussion",
            "scaleeval_compact_initial", "scaleeval_compact_discussion"}


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


def test_prd_discussion_turn_is_laid_out_as_prd_ran_it():
    # PRD (Li et al. 2023) section 3.2, Table 1; bcdnlp/PRD prompt_discuss_generation_lfqa and
    # add_prompt_each_turn_lfqa: a chat, every turn followed by a reminder to the reviewer who speaks next.
    from peercore.jobs._judging import discussion_request

    request = discussion_request("Q", "x", "y", speaker=1, reviews=["R1\n1", "R2\n2"],
                                 turns=[(1, "I keep 1.\n\n1"), (2, "I keep 2.\n\n2")])
    roles = [m["role"] for m in request.messages]
    assert roles == ["system", "user", "assistant", "user"]
    system, first, mine, theirs = (m["content"] for m in request.messages)
    assert system == "You are reviewer 1, discussing with reviewer 2 about your reviews of the following answers."
    assert "[The Start of Reviewer 2's Evaluation]\nR2\n2\n\n[The End of Reviewer 2's Evaluation]" in first
    assert first.endswith("Do not output anything else other than the number in this last line.")
    assert mine.startswith("I keep 1.\n\n1\n\n[System]\nYou are reviewer 2, discussing with reviewer 1")
    assert theirs.startswith("I keep 2.\n\n2\n\n[System]\nYou are reviewer 1, discussing with reviewer 2")
    assert "Remember we focus on unsupported information, core information and coherence\n" in theirs
    # the follower's view of turn 1: the task and the leader's turn as one user message
    follower = discussion_request("Q", "x", "y", speaker=2, reviews=["R1\n1", "R2\n2"], turns=[(1, "I keep 1.\n\n1")])
    assert [m["role"] for m in follower.messages] == ["system", "user"]
    assert follower.messages[1]["content"].endswith("[System]\nYou are reviewer 2, discussing with reviewer 1 about your "
                                                    "reviews of the following answers.\nRead the reviews and discussions "
                                                    "above, and make a decision if to change your preference, and explain. "
                                                    "Remember we focus on unsupported information, core information and "
                                                    "coherence\nIn a new line, choose between answer 1 and answer 2 by "
                                                    "outputting the number 1 or 2 respectively. Do not output anything "
                                                    "else other than the number in this last line.")


def test_prd_review_before_a_discussion_is_table_8():
    # PRD Table 8 (bcdnlp/PRD prompt_review_generation_lfqa, explicit mode): a verdict of 1 or 2, no tie.
    template = load_template("prd_review_discussion")
    user = template.render(question="Q", answer_1="x", answer_2="y")[1]["content"]
    assert "unsupported infomation, core information, and coherence" in user
    assert "by outputting the number 1 or 2 respectively. Do not output anything else" in user
    assert "choose 3" not in user


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
    ("scaleeval_compact_initial", "Verdict: 2\nReason: Submission 1 is not better, it is wrong.", "model_b"),
    ("scaleeval_compact_discussion", "Verdict: 0\nReason: I keep my view: both are equally go", "tie"),
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
    with pytest.raises(TemplateError, match=r"'scaleeval_initial'.*\['criterion_header', 'rubric'\]"):
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


@pytest.mark.parametrize("name", ["scaleeval_compact_initial", "scaleeval_compact_discussion"])
def test_compact_debate_templates_ask_for_the_verdict_first(name):
    from peercore.prompts import load_rubric

    template = load_template(name)
    full = load_template(name.replace("_compact", ""))
    assert (template.kind, template.scheme) == (full.kind, full.scheme)  # the same ScaleEval protocol
    assert set(template.fields) == set(full.fields)
    rubric = load_rubric("helpfulness")
    values = {"question": "Q?", "answer_1": "S1", "answer_2": "S2", "criterion_header": rubric.header,
              "rubric": rubric.render(),
              "speaker": 2, "round": 1, "own_evaluation": "Verdict: 1\nReason: mine",
              "other_evaluations": format_turns([("Speaker 1", "Verdict: 2\nReason: theirs")])}
    system, user = (m["content"] for m in template.render(**values))
    assert user.index("[Submission 1]\nS1") < user.index("[Submission 2]\nS2") < user.index("[Criterion: Helpfulness]")
    assert "5: Very Helpful" in user
    assert user.endswith("Reply with exactly two lines:\n"
                         "Verdict: 1 if Submission 1 is better, 2 if Submission 2 is better, 0 if they are equally good "
                         "(the digit only)\n" + user.rsplit("\n", 1)[1])
    assert user.rsplit("\n", 1)[1].startswith("Reason: one or two short sentences")
    if template.kind == "debate_discussion":
        assert system.startswith("You are Speaker 2,")
        assert "[Your previous evaluation]\nVerdict: 1\nReason: mine" in user
        assert "[Speaker 1]\nVerdict: 2\nReason: theirs" in user and "discussion round 1" in user
    # replies in the asked layout are read, including one cut off by max_tokens mid-reason
    for reply, expected in (("Verdict: 1\nReason: Submission 1 is correct.", "model_a"),
                            ("Verdict: 2\nReason: Submission 2 gives the right time while Submission 1 is bet",
                             "model_b"),
                            ("Verdict: 0\nReason: Both say the same thing.", "tie")):
        assert parse_verdict(reply, scheme=template.scheme).verdict == expected
    # a rubric score in the verdict line is not a verdict (not guessed)
    assert not parse_verdict("Verdict: 4\nReason: Submission 1 is helpful.", scheme=template.scheme).valid
