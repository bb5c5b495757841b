"""Issue 21: "Judges evaluated 66" on Meta-evaluation when one judge is scored: the count is of the judges an accuracy table scores."""

from __future__ import annotations

import pandas as pd

from app_studies import app_test, open_page, problems
from peercore.judgments import judgments_from_frame
from peercore.store import Store


def test_judges_evaluated_counts_the_judges_scored_not_every_judge_with_verdicts(db_file, monkeypatch):
    # One LLM judge shares its comparisons with the human; two others judged a pair no human saw.
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", "")
    rows = [dict(question_id=q, model_a="m1", model_b="m2", judge=judge, winner="model_a")
            for q in ("q1", "q2", "q3") for judge in ("human:ann", "openai:scored")]
    rows += [dict(question_id="q9", model_a="m3", model_b="m4", judge=judge, winner="model_b")
             for judge in ("openai:unscored-1", "openai:unscored-2")]
    store = Store(db_file)
    store.studies.create("one-scored")
    store.verdicts.add("one-scored", judgments_from_frame(pd.DataFrame(rows)))
    at = open_page(app_test(), "meta_evaluation")
    assert problems(at) == []
    assert [m.value for m in at.metric if m.label == "Judges evaluated"] == ["1"]
