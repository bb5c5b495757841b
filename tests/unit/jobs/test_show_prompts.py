"""What a judge is sent: ``--show-prompts N`` and the criterion's name under a criteria variation (issue 22, item 4).

ScaleEval (Chern et al. 2024), Table 6: the judge agent's prompt carries the criteria text
only, ``[Criteria]: {criteria}``; the criteria variations of section 5 / Table 5 (gibberish,
masked, ...) are meant to be all the judge learns of the criterion. A header naming the
criterion beside a masked rubric undoes the variation.
"""

from __future__ import annotations

import json
from contextlib import closing

import pytest

from peercore.cli import main
from peercore.jobs._judging import debate_request, review_request
from peercore.prompts import VARIATIONS, load_rubric
from peercore.store import Store
from runner.fakes import make_study

NAMED = "[Criterion: Helpfulness]"


@pytest.fixture
def db(tmp_path, monkeypatch):
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # never sent: nothing is called
        monkeypatch.setenv(variable, "test-key-not-used")
    with closing(Store(tmp_path / "prompts.sqlite")) as store:
        make_study(store)
        return str(store.path)


def _user(request) -> str:
    return next(m["content"] for m in request.messages if m["role"] == "user")


@pytest.mark.parametrize("variation", [v for v in VARIATIONS if v != "general"])
def test_a_varied_rubric_reaches_the_judge_without_the_criterions_name(variation):
    # Table 6's [Criteria] header instead of "[Criterion: Helpfulness]" (before: the name on every variation)
    criterion = f"helpfulness/{variation}"
    for request in (debate_request("Q?", "one", "two", criterion=criterion, speaker=1),
                    debate_request("Q?", "one", "two", criterion=criterion, speaker=1, round=1, own="mine",
                                   others=[(2, "theirs")]),
                    debate_request("Q?", "one", "two", criterion=criterion, speaker=1,
                                   templates=("scaleeval_compact_initial", "scaleeval_compact_discussion")),
                    review_request("Q?", "one", "two", template="scaleeval_initial", criterion=criterion)):
        user = _user(request)
        assert NAMED not in user and "[Criterion:" not in user and "Helpfulness" not in user
        assert "[Criteria]\nScore levels for this criterion:\n" + load_rubric(criterion).render() in user


def test_the_general_rubric_keeps_its_named_header_word_for_word():
    user = _user(debate_request("Q?", "one", "two", criterion="helpfulness", speaker=1))
    assert f"{NAMED}\nScore levels for this criterion:\n{load_rubric('helpfulness').render()}" in user


def test_show_prompts_prints_the_exact_debate_prompts_and_spends_nothing(db, capsys):
    args = ["debate", "--study", "demo", "--db", db, "--agent", "a=openai:gpt-4o", "--agent",
            "b=anthropic:claude-3-5-haiku", "--criterion", "helpfulness/masked", "--show-prompts", "3"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.count("=== prompt ") == 3 and "=== prompt 1 of 3:" in out
    assert "[Criteria]" in out and NAMED not in out
    assert load_rubric("helpfulness/masked").render() in out  # the masked rubric itself, as sent
    assert "later call(s) of this item quote earlier replies" in out  # rounds after the first are not fixed
    assert len(Store(db).runs.table("demo")) == 0  # nothing run, nothing stored
    assert main([*args, "--json"]) == 0
    prompts = json.loads(capsys.readouterr().out)
    assert [p["judge"] for p in prompts][:2] in (["openai:gpt-4o", "anthropic:claude-3-5-haiku"],
                                                 ["anthropic:claude-3-5-haiku", "openai:gpt-4o"])
    assert prompts[0]["messages"][0]["role"] == "system" and prompts[0]["messages"][1]["role"] == "user"


def test_show_prompts_for_review_and_discuss(db, capsys):
    assert main(["review", "--study", "demo", "--db", db, "--reviewer", "openai:gpt-4o", "--show-prompts", "2",
                 "--json"]) == 0
    prompts = json.loads(capsys.readouterr().out)
    assert len(prompts) == 2 and all(p["later_calls"] == 0 for p in prompts)
    assert "Question number" in prompts[0]["messages"][-1]["content"]
    assert main(["discuss", "--study", "demo", "--db", db, "--reviewer", "openai:gpt-4o", "--reviewer",
                 "anthropic:claude-3-5-haiku", "--turns", "2", "--show-prompts", "5", "--json"]) == 0
    prompts = json.loads(capsys.readouterr().out)
    # each discussion: the two initial reviews are fixed, its 2 turns quote them
    assert len(prompts) == 5 and {p["later_calls"] for p in prompts} == {2}
    assert len(Store(db).runs.table("demo")) == 0
