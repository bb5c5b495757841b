"""The NLG assessment page (and the Data and Efficiency pages' scores) under AppTest."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from app_studies import REPO, app_test, build_synthetic_study, open_page, problems
from peercore.judgments import judgments_from_frame
from peercore.store import Store
from peercore.ui import safe

CONTEXTS = [f"dlg-{k}" for k in range(5)]
SYSTEMS = ["sys-a", "sys-b", "sys-c", "sys-d"]
JUDGE = "local:judge~coherence"
SCORER = "local:judge~score,coherence"


def build_nlg_study(store: Store, name: str = "nlg") -> dict:
    """Contexts with human scores on two attributes, a biased comparative judge and an absolute scorer."""
    rng = np.random.default_rng(4)
    store.studies.create(name)
    store.questions.add(name, pd.DataFrame({"question_id": CONTEXTS, "text": [f"Conversation {c}" for c in CONTEXTS]}))
    store.questions.add_answers(name, pd.DataFrame([{"question_id": c, "model": m, "answer": f"{m} says hi in {c}"}
                                                    for c in CONTEXTS for m in SYSTEMS]))
    quality = {(c, m): float(v) for c in CONTEXTS for m, v in zip(SYSTEMS, rng.permutation(4) + 1)}
    human = [{"question_id": c, "model": m, "attribute": "coherence", "value": quality[(c, m)]} for c, m in quality]
    human += [{"question_id": c, "model": m, "attribute": "engagingness", "value": float(rng.integers(1, 4))}
              for c, m in quality]
    store.scores.add_human_scores(name, pd.DataFrame(human))
    rows = []
    for c in CONTEXTS:
        for a, b in itertools.permutations(SYSTEMS, 2):
            p = float(np.clip(0.5 + 0.12 * (quality[(c, a)] - quality[(c, b)]) + 0.2, 0.02, 0.98))
            rows.append({"question_id": c, "model_a": a, "model_b": b, "judge": JUDGE, "p_a": p,
                         "winner": "model_a" if p > 0.5 else "model_b", "criterion": "coherence"})
    store.verdicts.add(name, judgments_from_frame(pd.DataFrame(rows)))
    store.scores.add_judge_scores(name, pd.DataFrame([
        {"question_id": c, "model": m, "judge": SCORER, "attribute": "coherence", "score": quality[(c, m)] + 4,
         "expected": quality[(c, m)] + 4.2} for c, m in quality]))
    return {"comparisons": len(rows), "scores": len(quality)}


@pytest.fixture
def nlg(db_file) -> dict:
    store = Store(db_file)
    info = build_nlg_study(store)
    store.close()
    return info


def test_the_page_shows_the_papers_table_accuracy_bias_and_curves(nlg):
    at = open_page(app_test(), "nlg")
    assert problems(at) == []
    assert [t.value for t in at.title] == ["NLG assessment"]
    assert at.selectbox(key="nlg_attribute").value == "coherence"  # the attribute a judge has
    assert at.selectbox(key="nlg_judge").value == f"{JUDGE}\x1fcoherence"
    assert at.selectbox(key="nlg_score_judge").value == SCORER
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Contexts"] == "5" and metrics["Comparisons"] == "60" and metrics["Absolute scores"] == "20"
    assert float(metrics["P(first)"]) > 0.5
    table = next(d.value for d in at.dataframe if "Spearman" in d.value.columns)
    assert table["scorer"].tolist()[:3] == ["absolute: absolute score", "absolute: absolute score (text)",
                                            "comparative: win ratio"]
    assert "comparative: PoE-Gaussian (debiased)" in table["scorer"].tolist()
    assert table.loc[table["scorer"] == "absolute: absolute score", "Spearman"].iloc[0].startswith("1.000")
    accuracy = next(d.value for d in at.dataframe if "reading" in d.value.columns)
    assert accuracy["reading"].tolist() == ["raw", "debiased", "both orders", "absolute"]
    curves = next(d.value for d in at.dataframe if {"strategy", "debiased", "median"} <= set(d.value.columns))
    assert set(curves["strategy"]) == {"random", "greedy"} and set(curves["debiased"]) == {False, True}
    assert len(at.get("plotly_chart")) == 2
    systems = next(d.value for d in at.dataframe if {"model", "human", "absolute", "win_ratio"} <= set(d.value.columns))
    assert sorted(systems["model"]) == SYSTEMS and systems["contexts"].eq(5).all()
    one = next(d.value for d in at.dataframe if {"answer", "human", "poe_gaussian"} <= set(d.value.columns))
    assert one["answer"].str.endswith("says hi in dlg-0").all() and one["human"].is_monotonic_decreasing


def test_choices_change_what_is_evaluated(nlg):
    at = open_page(app_test(), "nlg")
    at.selectbox(key="nlg_score_judge").set_value("__none__").run()
    assert problems(at) == []
    table = next(d.value for d in at.dataframe if "Spearman" in d.value.columns)
    assert not table["scorer"].str.startswith("absolute").any()
    at.segmented_control(key="nlg_measure").set_value("pearson").run()
    at.multiselect(key="nlg_curve_methods").set_value(["poe_bt"]).run()
    assert problems(at) == []
    # engagingness: no judge on it by default (the coherence judge can still be chosen by hand)
    at.selectbox(key="nlg_attribute").set_value("engagingness").run()
    assert problems(at) == []
    assert at.selectbox(key="nlg_judge").value == "__none__" and at.selectbox(key="nlg_score_judge").value == "__none__"
    assert any("No judge has compared or scored" in i.value for i in at.info)
    at.selectbox(key="nlg_judge").set_value(f"{JUDGE}\x1fcoherence").run()
    assert problems(at) == [] and {m.label: m.value for m in at.metric}["Comparisons"] == "60"


def test_a_study_without_human_scores_says_what_to_import(synthetic):
    at = open_page(app_test(), "nlg")
    assert problems(at) == []
    assert any("no human scores" in i.value for i in at.info)


def test_data_page_shows_and_exports_the_scores(nlg):
    at = open_page(app_test(), "data")
    assert problems(at) == []
    human = next(d.value for d in at.dataframe if "engagingness" in d.value.columns)
    # Headers in plain words on the page (the one display rule); the export keeps the file's names.
    assert list(human.columns) == ["question", "model", "coherence", "engagingness"] and len(human) == 20
    labels = [b.proto.label for b in at.get("download_button")]
    assert any("human scores" in label for label in labels) and any("absolute scores" in label for label in labels)
    assert {m.label: m.value for m in at.metric}["Human scores"] == "40"


def test_efficiency_page_measures_against_the_human_scores(nlg):
    at = open_page(app_test(), "efficiency")
    assert problems(at) == []
    assert at.selectbox(key="eff_reference").value == "human:coherence"  # the judge's criterion
    table = next(d.value for d in at.dataframe if {"strategy", "k"} <= set(d.value.columns))
    assert set(table["strategy"]) == {"random", "greedy"}
    at.selectbox(key="eff_reference").set_value("self").run()
    assert problems(at) == []


def test_the_app_seeds_the_bundled_topicalchat_study(db_file):
    if not (REPO / "sample_data" / "topicalchat" / "judgments.csv").is_file():
        pytest.skip("the bundled TopicalChat study is not in the repository")
    at = app_test()
    assert problems(at) == [] and at.session_state["study"] == "sample"  # the sample still opens first
    at.selectbox(key="study").set_value("topicalchat-usr").run()
    open_page(at, "nlg")
    assert problems(at) == []
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Contexts"]) >= 1 and int(metrics["Comparisons"].replace(",", "")) >= 30
    assert at.selectbox(key="nlg_attribute").value == "coherence"


def test_hostile_names_stay_text(db_file):
    store = Store(db_file)
    build_synthetic_study(store)  # another study first, so the NLG one is picked explicitly
    name = "nlg"
    build_nlg_study(store, name)
    store.scores.add_human_scores(name, pd.DataFrame({"question_id": ["dlg-0"], "model": ["sys-a"],
                                                      "attribute": ["**bold** [x](http://evil.invalid)"], "value": [1.0]}))
    store.close()
    at = app_test()
    at.selectbox(key="study").set_value(name).run()
    open_page(at, "nlg")
    at.selectbox(key="nlg_attribute").set_value("**bold** [x](http://evil.invalid)").run()
    assert problems(at) == []
    shown = "\n".join(i.value for i in at.info)
    attribute = "**bold** [x](http://evil.invalid)"
    assert safe.md(attribute) in shown and attribute not in shown  # escaped: reads as its plain text
