"""Issue 17, item 8: a judge whose comparisons all went one way, on the NLG page and ``peercore nlg evaluate``.

Before this change the page died with a ValueError traceback ("the mean of p is 1.0: every
comparison went the same way ... debiasing is undefined") and the command printed that one
line and exited 2. Debiasing is undefined for such a judge, but its raw scores, accuracy and
position bias are not: both now show them, with a note saying why the debiased ones are missing.
"""

from __future__ import annotations

import itertools
import json

import pandas as pd
import pytest

from app_studies import app_test, open_page, problems
from peercore.cli import main
from peercore.judgments import judgments_from_frame
from peercore.store import Store
from test_nlg_page import CONTEXTS, SYSTEMS, build_nlg_study

ONE_WAY = "local:always-first"


@pytest.fixture
def one_way(db_file) -> str:
    """The NLG study plus a judge that picked the response shown first in every comparison."""
    store = Store(db_file)
    build_nlg_study(store)
    store.verdicts.add("nlg", judgments_from_frame(pd.DataFrame([
        {"question_id": c, "model_a": a, "model_b": b, "judge": ONE_WAY, "winner": "model_a", "criterion": "coherence"}
        for c in CONTEXTS for a, b in itertools.permutations(SYSTEMS, 2)])))
    store.close()
    return str(db_file)


def test_the_page_shows_the_raw_numbers_and_says_why_the_debiased_ones_are_missing(one_way):
    at = open_page(app_test(), "nlg")
    at.selectbox(key="nlg_judge").set_value(f"{ONE_WAY}\x1fcoherence").run()
    assert problems(at) == []  # before: ValueError: the mean of p is 1.0 ... debiasing is undefined
    (warning,) = [w.value for w in at.warning]
    assert "chose the response shown first" in warning and "only raw scores are shown" in warning
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Comparisons"] == "60" and metrics["P(first)"] == "1.00"
    table = next(d.value for d in at.dataframe if "Spearman" in d.value.columns)
    comparative = table[table["scorer"].str.startswith("comparative")]
    assert len(comparative) == 5 and not comparative["scorer"].str.contains("debiased").any()
    assert comparative["Spearman"].str.startswith("0.000").all()  # a constant prediction counts as 0
    accuracy = next(d.value for d in at.dataframe if "reading" in d.value.columns)
    assert accuracy["reading"].tolist()[:2] == ["raw", "both orders"] and accuracy["accuracy"].iloc[0] == 0.5
    assert any("debiasing undefined" in m.value for m in at.markdown)
    curves = next(d.value for d in at.dataframe if {"strategy", "debiased", "median"} <= set(d.value.columns))
    assert set(curves["debiased"]) == {False}  # the raw curves only
    one = next(d.value for d in at.dataframe if {"answer", "human"} <= set(d.value.columns))
    assert {"win_ratio (raw)", "poe_gaussian (raw)"} <= set(one.columns)


def test_the_command_prints_the_same_numbers_and_the_note(one_way, capsys):
    assert main(["nlg", "evaluate", "--study", "nlg", "--attribute", "coherence", "--judge", ONE_WAY,
                 "--db", one_way, "--format", "json"]) == 0  # before: exit 2, "the mean of p is 1.0"
    result = json.loads(capsys.readouterr().out)
    assert [row["debiased"] for row in result["table"]] == [False] * 5
    assert result["position_bias"]["p_first"] == 1.0 and result["position_bias"]["tau"] is None
    assert len(result["notes"]) == 1 and "chose the response shown first" in result["notes"][0]
    assert main(["nlg", "evaluate", "--study", "nlg", "--attribute", "coherence", "--judge", ONE_WAY,
                 "--db", one_way]) == 0
    out = capsys.readouterr().out
    assert "debiasing undefined" in out and out.rstrip().splitlines()[-1].startswith("note: every comparison")
