"""The Leaderboard's "Anchor to human labels" (issue 23), through the page as users reach it.

With one LLM judge chosen, the table is that judge's leaderboard anchored to people's
votes by prediction-powered inference: PPI++ (Angelopoulos, Duchi & Zrnic 2023, "PPI++",
arXiv 2311.01453, eq. (2) with the power-tuned lambda of Example 6.1) for win rates, the
PPI M-estimator with one scalar lambda (PPI++ eqs. (4), (7); Boyeau et al. 2024, "AutoEval
Done Right", arXiv 2403.07008, section 3) for Bradley-Terry, beside the judge alone and
the humans alone (PPI++ at lambda = 0, the classical interval on the same labels). The
numbers are :func:`peercore.app.calibration.calibrated_leaderboard`'s, the function
``peercore calibrate`` prints: the page computes none of them. A study without human
labels gets a sentence, never an error; a label request decided on Adjudication (a vote
``adjudicator:<name>``) is one more label at once.
"""

from __future__ import annotations

import pandas as pd
import pytest

from app_studies import build_one_judge_study, app_test, open_page, problems
from peercore.app import Study
from peercore.app.calibration import calibrated_leaderboard
from peercore.store import Store


def anchored_frame(at) -> pd.DataFrame:
    found = [d.value for d in at.dataframe if {"reference_score", "effective_labels"} <= set(d.value.columns)]
    assert found, f"no anchored table; tables: {[list(d.value.columns) for d in at.dataframe]}"
    return found[0].set_index("model")


def interval(low: float, high: float, decimals: int) -> str:
    """An interval as every table of the dashboard writes it (the one display rule)."""
    return f"{low:.{decimals}f} – {high:.{decimals}f}"


def assert_shows(at, board, *, decimals: int) -> None:
    """The page's anchored table is ``board``'s: anchored score and interval, judge alone, humans alone, labels."""
    shown = anchored_frame(at)
    expected = board.table.set_index("model")
    assert set(shown.index) == set(expected.index)
    for model in shown.index:
        row, want = shown.loc[model], expected.loc[model]
        assert row["score"] == pytest.approx(want["score"])
        assert row["interval"] == interval(want["ci_low"], want["ci_high"], decimals)
        assert row["judge_score"] == pytest.approx(want["judge_score"])
        # The humans-only column is calibrate's reference columns (PPI++ at lambda = 0).
        assert row["reference_score"] == pytest.approx(want["reference_score"])
        assert row["reference_interval"] == interval(want["reference_ci_low"], want["reference_ci_high"], decimals)
        assert row["effective_labels"] == pytest.approx(want["effective_labels"])
    said = " ".join(m.value for m in at.markdown)
    assert f"Anchored on {board.labels:,} human labels" in said
    assert f"on {board.labelled_comparisons:,} of judge `{board.judge}`'s {board.comparisons:,} comparisons" in said


def leaderboard_of(study: str, *, judges: list[str], method: str):
    at = app_test()
    at.sidebar.selectbox(key="study").set_value(study).run()
    open_page(at, "leaderboard")
    at.selectbox(key="lb_method").set_value(method).run()
    at.multiselect(key="lb_judges").set_value(judges).run()
    assert problems(at) == []
    return at


def test_prd_anchored_to_the_human_votes_equals_calibrated_leaderboard(prd):
    at = leaderboard_of(prd["name"], judges=["gpt35"], method="Win rate")
    assert not [d for d in at.dataframe if "effective_labels" in d.value.columns]  # off by default
    at.toggle(key="lb_anchor").set_value(True).run()
    assert problems(at) == []
    assert at.selectbox(key="lb_anchor_reference").value == "human:"  # the human judges by default
    study = Study(Store(prd["db"]), prd["name"])
    winrate = calibrated_leaderboard(study, judge="gpt35", reference="human:", method="winrate")
    assert winrate.labels == 1_760  # PRD's human votes, each a label
    assert_shows(at, winrate, decimals=3)
    params = {k: [v] if isinstance(v, str) else list(v) for k, v in at.query_params.items()}
    assert params["anchor"] == ["1"] and params["reference"] == ["human:"] and params["method"] == ["winrate"]

    at.selectbox(key="lb_method").set_value("Bradley-Terry").run()
    assert problems(at) == [] and at.toggle(key="lb_anchor").value is True
    assert_shows(at, calibrated_leaderboard(study, judge="gpt35", reference="human:", method="bt"), decimals=1)

    at.selectbox(key="lb_method").set_value("Versus a baseline").run()
    baseline = "gpt35"  # PRD has no model in every comparison: the page asks, as AlpacaEval's table needs one
    at.selectbox(key="lb_baseline").set_value(baseline).run()
    assert problems(at) == []
    assert_shows(at, calibrated_leaderboard(study, judge="gpt35", reference="human:", method="winrate",
                                            baseline=baseline), decimals=3)

    at.selectbox(key="lb_method").set_value("Elo").run()  # no anchored counterpart: said, the table not faked
    assert problems(at) == []
    assert any("Anchored scores are win rates or Bradley-Terry ratings" in i.value for i in at.info)
    assert not [d for d in at.dataframe if "effective_labels" in d.value.columns]


def test_an_anchored_link_restores_the_anchored_view(prd):
    at = app_test()
    at.query_params.update({"study": prd["name"], "method": "bt", "judge": ["gpt4", "human:prd"], "anchor": "1",
                            "reference": "human:"})
    open_page(at, "leaderboard")
    assert problems(at) == []
    assert at.toggle(key="lb_anchor").value is True
    # Humans beside the one LLM judge: still one judge to anchor (gpt4), the humans are the labels.
    assert_shows(at, calibrated_leaderboard(Study(Store(prd["db"]), prd["name"]), judge="gpt4", reference="human:",
                                            method="bt"), decimals=1)


def test_the_switch_is_offered_for_one_llm_judge_only(prd):
    at = leaderboard_of(prd["name"], judges=["gpt35", "gpt4"], method="Win rate")
    assert not [t for t in at.toggle if t.key == "lb_anchor"]  # PPI corrects one judge: which of the two?
    at.multiselect(key="lb_judges").set_value(["gpt4"]).run()
    assert problems(at) == [] and [t.value for t in at.toggle if t.key == "lb_anchor"] == [False]


def test_a_study_without_human_labels_is_told_so_not_failed(db_file, monkeypatch):
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", "")
    build_one_judge_study(db_file)
    at = open_page(app_test(), "leaderboard")
    at.selectbox(key="lb_method").set_value("Win rate").run()
    at.toggle(key="lb_anchor").set_value(True).run()
    assert problems(at) == []
    assert any("no human labels to anchor to" in i.value for i in at.info)
    assert not [d for d in at.dataframe if "effective_labels" in d.value.columns]


def _request_and_decide(store: Store, study: str, judged: pd.DataFrame, k: int, annotator: str) -> None:
    """Queue a label request on the judge's ``k``-th comparison and decide it, as the Adjudication page does."""
    row = judged.iloc[k]
    counts = store.debates.add_label_requests(study, [{"question_id": row["question_id"], "model_a": row["model_a"],
                                                       "model_b": row["model_b"], "criterion": row["criterion"]}],
                                      requested_by="test", reason="anchored leaderboard test")
    assert counts.added == 1
    requests = store.debates.table(study, kind="label_request")
    request = requests[(requests["question_id"] == row["question_id"]) & (requests["status"] == "unresolved")]
    assert store.debates.adjudicate(int(request["id"].iloc[0]), annotator, "model_a") is True


def test_a_decided_label_request_is_one_more_label_at_once(synthetic):
    name, judge = synthetic["name"], "openai:alpha"
    at = leaderboard_of(name, judges=[judge], method="Win rate")
    at.toggle(key="lb_anchor").set_value(True).run()
    assert problems(at) == []
    store = Store(synthetic["db"])
    before = calibrated_leaderboard(Study(store, name), judge=judge, reference="human:", method="winrate")
    assert_shows(at, before, decimals=3)
    assert "human:,adjudicator:" not in at.selectbox(key="lb_anchor_reference").options  # nobody decided yet

    frame = store.verdicts.table(name)
    # Comparisons no human labelled yet: a decision there is a new labelled comparison, not one more vote on one.
    unit = frame["question_id"] + "|" + [" vs ".join(sorted(p)) for p in zip(frame["model_a"], frame["model_b"])]
    labelled = set(unit[frame["judge"].str.startswith("human:")])
    judged = frame[(frame["judge"] == judge) & ~unit.isin(labelled)].drop_duplicates(["question_id"])
    judged = judged.reset_index(drop=True)
    _request_and_decide(store, name, judged, 0, "alice")
    at.run()
    assert problems(at) == []
    assert at.selectbox(key="lb_anchor_reference").value == "human:"  # the default stays the human judges
    at.selectbox(key="lb_anchor_reference").set_value("human:,adjudicator:").run()
    assert problems(at) == []
    people = calibrated_leaderboard(Study(store, name), judge=judge, reference="human:,adjudicator:",
                                    method="winrate")
    assert people.labels == before.labels + 1
    assert_shows(at, people, decimals=3)
    old_scores = before.table.set_index("model")["score"]
    assert any(abs(score - old_scores[model]) > 1e-9 for model, score in anchored_frame(at)["score"].items())

    _request_and_decide(store, name, judged, 1, "bob")  # a second decision flows in without touching the page
    at.run()
    assert problems(at) == []
    after = calibrated_leaderboard(Study(store, name), judge=judge, reference="human:,adjudicator:", method="winrate")
    assert after.labels == before.labels + 2
    assert_shows(at, after, decimals=3)


def test_which_judge_and_which_labels_a_selection_anchors(synthetic):
    """The application layer's rules behind the switch and the picker (``peercore.app.leaderboard``)."""
    from peercore.app.leaderboard import anchor_judge, anchored_method, label_references

    store = Store(synthetic["db"])
    study = Study(store, synthetic["name"])
    assert anchor_judge(study, ["openai:alpha", "human:ann", "debate:consensus"]) == "openai:alpha"
    assert anchor_judge(study, ["openai:alpha", "local:charlie"]) is None
    assert anchor_judge(study, ["human:ann"]) is None
    assert label_references(study) == ["human:", "human:ann", "human:ben"]
    frame = store.verdicts.table(synthetic["name"])
    _request_and_decide(store, synthetic["name"], frame[frame["judge"] == "openai:alpha"].reset_index(drop=True), 0,
                        "alice")
    study = Study(store, synthetic["name"])
    assert label_references(study) == ["human:", "human:,adjudicator:", "human:ann", "human:ben", "adjudicator:"]
    assert [anchored_method(m, p) for m, p in (("winrate", "none"), ("bt", "none"), ("elo", "none"),
                                                ("winrate", "prd"), ("poe-gaussian", "none"))] == \
        ["winrate", "bt", None, None, None]
