"""The adjudication flow without traps (issue 21): the name is set in its own step, the bundled
sample ships guidelines, and any decision (not only the last) can be changed with a reason,
which Meta-evaluation uses at once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from app_studies import app_test, open_page, problems
from peercore.store import Store

REPO = Path(__file__).resolve().parents[2]


def sign_in(at, name: str):
    at.text_input(key="annotator").input(name).run()
    assert problems(at) == []
    return at


def name_boxes(at) -> list:
    return [t for t in at.text_input if t.key == "annotator"]


def accuracy(at) -> pd.DataFrame:
    """Meta-evaluation's table of each judge against the gold set (the adjudicated debates count)."""
    found = [e.value for e in at.dataframe if {"matched", "accuracy w/o ties"} <= set(e.value.columns)]
    assert found, [list(e.value.columns) for e in at.dataframe]
    return found[0].copy()


@pytest.fixture
def store(synthetic):
    s = Store(synthetic["db"])
    yield s
    s.close()


def test_the_name_box_gives_way_once_the_name_is_entered(synthetic, store):
    # Before: the box kept the cursor after Enter and the next key ("1") went into the name.
    at = sign_in(open_page(app_test(), "adjudication"), "ux-bob")
    assert name_boxes(at) == []  # no text box left to type a decision key into
    assert any(m.value == "Adjudicating as **ux-bob**" for m in at.markdown)
    assert at.subheader[0].value.startswith("Debate #1")
    assert store.debates.leases("synthetic")["annotator"].tolist() == ["ux-bob"]
    at.button(key="adj_one").click().run()
    assert store.debates.adjudications("synthetic")[["debate_id", "annotator", "decision"]].values.tolist() == [
        [1, "ux-bob", "model_a"]]

    at.button(key="adj_change_name").click().run()  # another name: the box is back, empty, the debate given back
    assert problems(at) == [] and [t.value for t in name_boxes(at)] == [""]
    assert not any(s.value.startswith("Debate #") for s in at.subheader)
    assert store.debates.leases("synthetic").empty
    sign_in(at, "ux-ann")
    assert any(m.value == "Adjudicating as **ux-ann**" for m in at.markdown)
    assert store.debates.leases("synthetic")["annotator"].tolist() == ["ux-ann"]


def test_a_fresh_database_shows_the_bundled_samples_guidelines(db_file, tmp_path, monkeypatch):
    folder = tmp_path / "sample"
    folder.mkdir()
    for path in (REPO / "sample_data").iterdir():
        if path.is_file():
            shutil.copy(path, folder / path.name)
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", str(folder))
    at = sign_in(open_page(app_test(page=None), "adjudication"), "reader")
    rubric = Store(db_file).studies.settings("sample")["rubric"]
    assert rubric.startswith("Adjudication guidelines for the sample study") and "17:25" in rubric
    assert rubric in [t.value for t in at.text]  # shown beside the debate, as plain text
    assert not any("no guidelines yet" in c.value for c in at.caption)


def test_changing_an_earlier_decision_with_a_reason_moves_meta_evaluation_at_once(synthetic, store):
    at = sign_in(open_page(app_test(), "adjudication"), "eve")
    for key in ("adj_one", "adj_two", "adj_tie"):  # debates 1, 2, 3
        at.button(key=key).click().run()
    open_page(at, "meta_evaluation")
    before = accuracy(at)

    open_page(at, "adjudication")
    made = [e.value for e in at.dataframe if "times changed" in e.value.columns][0]
    assert sorted(made["debate"].tolist()) == [1, 2, 3] and set(made["annotator"]) == {"eve"}
    at.selectbox(key="adj_edit_choice").set_value(1)  # the first decision, two decisions ago
    at.selectbox(key="adj_edit_decision").set_value("model_b")
    at.button(key="adj_edit").click().run()  # no reason: refused, nothing written
    assert any("say why the decision changes" in e.value for e in at.error)
    assert store.debates.adjudications("synthetic").set_index("debate_id").loc[1, "decision"] == "model_a"

    at.text_input(key="adj_edit_reason").input("misread the arithmetic")
    at.button(key="adj_edit").click().run()
    assert problems(at) == []
    assert any("debate #1 → Submission 2" in s.value for s in at.success)
    current = store.debates.adjudications("synthetic").set_index("debate_id")["decision"].to_dict()
    assert current == {1: "model_b", 2: "model_b", 3: "tie"}
    history = store.debates.decision_history("synthetic")
    assert history[["debate_id", "before", "after", "reason"]].values.tolist()[-1] == [
        1, "model_a", "model_b", "misread the arithmetic"]
    shown = [e.value for e in at.dataframe if "reason" in e.value.columns][0]
    assert shown.iloc[0][["debate", "changed by", "before", "after", "reason"]].tolist() == [
        1, "eve", "Submission 1", "Submission 2", "misread the arithmetic"]
    made = [e.value for e in at.dataframe if "times changed" in e.value.columns][0]
    assert made.set_index("debate").loc[1, ["decision", "times changed"]].tolist() == ["Submission 2", 1]

    open_page(at, "meta_evaluation")
    after = accuracy(at)
    assert not after.equals(before)  # the gold set uses the changed decision at once

    open_page(at, "adjudication")  # changed back: Meta-evaluation is as it was
    at.selectbox(key="adj_edit_choice").set_value(1)
    at.selectbox(key="adj_edit_decision").set_value("model_a")
    at.text_input(key="adj_edit_reason").input("no: it was right the first time")
    at.button(key="adj_edit").click().run()
    open_page(at, "meta_evaluation")
    pd.testing.assert_frame_equal(accuracy(at), before)
    actions = store.access.audit_log("synthetic")["action"].tolist()
    assert actions.count("edit_decision") == 2


def test_guidelines_beside_a_debates_file_are_imported_but_never_replace_a_studys_own(tmp_path):
    from peercore.io.importer import import_path

    store = Store(tmp_path / "guides.sqlite")
    for name in ("fresh", "kept"):
        store.studies.create(name)
    store.studies.update_settings("kept", rubric="Our own rules.")
    for name in ("questions.jsonl", "answers.jsonl"):  # what the debates refer to, questions first
        for study in ("fresh", "kept"):
            import_path(REPO / "sample_data" / name, store=store, study=study)
    for study in ("fresh", "kept"):
        import_path(REPO / "sample_data" / "sample-panel.jsonl", store=store, study=study, format="debates")
    shipped = (REPO / "sample_data" / "sample-panel.guidelines.md").read_text(encoding="utf-8").strip()
    assert store.studies.settings("fresh")["rubric"] == shipped
    assert store.studies.settings("kept")["rubric"] == "Our own rules."
    store.close()
