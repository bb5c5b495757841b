"""Bias measures on a study's tables as the store returns them (issue 8, "Numbers that mislead")."""

from __future__ import annotations

import pandas as pd

from peercore.bias import judge_health, length_bias
from peercore.store import Store


def test_length_bias_takes_the_stores_judgments_and_answers(tmp_path):
    # On main: length_bias(store.verdicts.table(s), store.questions.answers(s)) failed (turn NaN in the verdicts, 1 in the answers).
    store = Store(tmp_path / "b.sqlite")
    store.studies.create("s")
    store.questions.add("s", pd.DataFrame({"question_id": ["q1", "q2"], "text": ["?", "?"]}))
    store.questions.add_answers("s", pd.DataFrame({"question_id": ["q1", "q1", "q2", "q2"], "model": ["a", "b", "a", "b"],
                                                   "answer": ["short", "a much longer answer", "x", "yy"]}))
    store.verdicts.add("s", pd.DataFrame({"question_id": ["q1", "q2"], "model_a": ["a", "a"], "model_b": ["b", "b"],
                                          "judge": ["j", "j"], "winner": ["model_b", "model_b"]}))
    table = length_bias(store.verdicts.table("s"), store.questions.answers("s"))
    assert table.loc["j", "n"] == 2 and table.loc["j", "longer_win_rate"] == 1.0


def test_judge_health_flags_a_judge_that_always_picks_one_position():
    # Liusie et al. 2024, Table 4: P(first) over a symmetric set; the 1.5B offline judge through the verdict
    # prompt said "second" 40 times out of 40.
    rows = []
    for q in range(20):
        for a, b in (("x", "y"), ("y", "x")):
            rows.append((f"q{q}", a, b, "always-second", "model_b", 1))
            rows.append((f"q{q}", a, b, "fair", "model_a" if a == "x" else "model_b", 1))
            rows.append((f"q{q}", a, b, "mute", None if q % 2 else "model_a", 0 if q % 2 else 1))
    frame = pd.DataFrame(rows, columns=["question_id", "model_a", "model_b", "judge", "winner", "valid"])
    health = judge_health(frame)
    assert health.loc["always-second", "flagged"] and "second answer won 100% of its 40" in health.loc[
        "always-second", "reasons"]
    assert not health.loc["fair", "flagged"] and health.loc["fair", "p_first"] == 0.5
    assert health.loc["mute", "flagged"] and "50% of its 40 replies held no readable verdict" in health.loc[
        "mute", "reasons"]
