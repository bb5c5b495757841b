"""ScaleEval Table 5 end to end: each variation's rubric reaches the wire and the table shows its agreement.

ScaleEval (Chern et al. 2024, section 8, Table 5) reruns judges with altered criteria
prompts (shortened, gibberish, shuffled, flipped, masked) and reports each judge's
example-level agreement (section 3.3, eq. 2) with the gold set per variation. On main,
``review --criterion helpfulness/gibberish`` ran with a template that has no rubric (the
Meta-evaluation then reported a "gibberish" result for a prompt that never saw the
varied rubric), and the debate job and the rubric templates refused the name.

Here the local wire-format server answers *from the rubric text it receives*: it finds
which variation's rendered rubric is in the prompt and answers well (picks the better
submission), by position (always "1"), with a tie, or badly, accordingly. So the values
in the table can only come out when every varied rubric reached the server.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from app_studies import app_test, open_page
from fakes.llm_server import FakeLLMServer
from peercore.cli import main
from peercore.prompts import VARIATIONS, load_rubric
from peercore.store import Store

# How the fake judge behaves under each rubric, and the agreement with the gold that follows
# (the gold says the GOOD answer wins; every pair is judged in both orders).
BEHAVIOUR = {"general": "good", "shortened": "good", "masked": "good", "gibberish": "first", "shuffled": "tie",
             "flipped": "bad"}
EXPECTED = {"good": 1.0, "first": 0.5, "tie": 0.0, "bad": 0.0}
RUBRICS = {v: load_rubric(f"helpfulness/{v}").render() for v in VARIATIONS}


def reply(body: dict, api: str) -> str:
    prompt = "\n".join(str(m.get("content")) for m in body["messages"])
    found = [v for v, text in RUBRICS.items() if text in prompt]
    assert len(found) == 1, f"the prompt holds {found} of the rubrics"
    submissions = re.search(r"\[Submission 1\]\n(.*?)\n\n\[Submission 2\]\n(.*?)\n", prompt, re.S)
    first_good = "GOOD" in submissions.group(1)
    verdict = {"good": "1" if first_good else "2", "bad": "2" if first_good else "1", "first": "1",
               "tie": "0"}[BEHAVIOUR[found[0]]]
    return f"I read the score levels given.\n{verdict}"


@pytest.fixture
def study(tmp_path, monkeypatch):
    db = tmp_path / "table5.sqlite"
    monkeypatch.setenv("PEERBOARD_DB", str(db))
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", "")
    store = Store(db)
    store.studies.create("t5")
    questions = [f"q{i}" for i in range(6)]
    store.questions.add("t5", pd.DataFrame({"question_id": questions, "text": [f"Question {q}?" for q in questions]}))
    store.questions.add_answers("t5", pd.DataFrame(
        [{"question_id": q, "model": m, "answer": f"{'GOOD' if m == 'strong' else 'BAD'} answer to {q}"}
         for q in questions for m in ("strong", "weak")]))
    for q in questions:  # the gold: the panel agreed that the strong answer is better on helpfulness
        store.debates.add("t5", {"debate_key": q, "question_id": q, "model_a": "strong", "model_b": "weak",
                                 "criterion": "helpfulness", "status": "agreed", "consensus": "model_a",
                                 "panel": "debate:gold"}, [])
    return db


def test_every_variation_reaches_the_judge_and_table_5_shows_its_agreement(study, capsys):
    with FakeLLMServer(reply=reply) as server:
        spec = f"compatible:judge@{server.openai_base_url}"
        for variation in VARIATIONS:
            criterion = "helpfulness" if variation == "general" else f"helpfulness/{variation}"
            code = main(["review", "--study", "t5", "--db", str(study), "--reviewer", spec, "--method", "verdict",
                         "--template", "scaleeval_initial", "--criterion", criterion, "--no-progress", "--json"])
            assert code == 0, capsys.readouterr()
            payload = json.loads(capsys.readouterr().out)
            assert payload["calls"] == 12 and payload["status"] == "finished"
        assert server.requests_total == 12 * len(VARIATIONS)
    at = open_page(app_test(), "meta_evaluation")
    tables = [e.value for e in at.dataframe if set(VARIATIONS) <= set(e.value.columns)]
    assert tables, [list(e.value.columns) for e in at.dataframe]
    table = tables[0]
    assert list(table.index) == [spec]  # one judge, read under six rubrics (ScaleEval Table 5's rows)
    assert table.loc[spec].to_dict() == {v: EXPECTED[BEHAVIOUR[v]] for v in table.columns}


def test_a_variation_with_a_template_without_rubric_is_refused_before_any_call(study, capsys):
    with FakeLLMServer(reply=reply) as server:
        spec = f"compatible:judge@{server.openai_base_url}"
        code = main(["review", "--study", "t5", "--db", str(study), "--reviewer", spec, "--method", "verdict",
                     "--criterion", "helpfulness/gibberish", "--no-progress"])
        assert code == 2 and server.requests_total == 0
    # One rule for every criterion, a variation included (issue 17, item 7): a template with no place for
    # a criterion is refused before any call, naming a template that shows the (varied) rubric.
    err = capsys.readouterr().err
    assert "template 'prd_review' has no place for a criterion" in err and "scaleeval_initial" in err
    assert "nothing was run" in err


def test_a_debate_runs_a_varied_rubric(study, capsys):
    with FakeLLMServer(reply=reply) as server:
        spec = f"compatible:judge@{server.openai_base_url}"
        code = main(["debate", "--study", "t5", "--db", str(study), "--agent", f"a={spec}", "--agent",
                     f"b={spec}?temperature=0.5", "--criterion", "helpfulness/flipped", "--max-rounds", "1",
                     "--no-progress"])
        assert code == 0, capsys.readouterr()
        assert server.requests_total == 2 * 6  # two agents, one round, six debates (the server checked the rubric)
    debates = Store(study).debates.table("t5")
    assert set(debates.loc[debates["panel"] != "debate:gold", "criterion"]) == {"helpfulness/flipped"}
