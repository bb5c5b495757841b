"""Score imports: the TopicalChat USR file and generic score tables, checked by the reading rules."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from peercore.errors import JudgmentError
from peercore.io.detect import detect_format
from peercore.io.importer import import_path, read_path
from peercore.io.scores import USR_SCALES, human_scores_wide, judge_scores_table
from peercore.store import Store
from peerboard_testing import require_dataset


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "pb.sqlite")
    yield s
    s.close()


def _usr_path():
    return require_dataset("topicalchat_usr") / "topical_chat.json"


def _snapshot(store: Store) -> tuple:
    """Everything an import writes, to assert a refused import left the store as it was."""
    connection = store.connect()
    return tuple(connection.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                 for t in ("studies", "questions", "answers", "human_scores", "judge_scores", "imports", "verdicts"))


# ----------------------------------------------------------------------------- USR


def test_usr_file_imports_360_rows_6_attributes_range_checked(store):
    path = _usr_path()
    assert detect_format(path) == "usr"
    report = import_path(path, store=store, study="tc")
    records = json.loads(path.read_text())
    assert len(records) == 360
    scores = store.scores.human_scores("tc")
    assert len(scores) == 360 * 6 and report.counts["human_scores"].added == 2160
    assert list(dict.fromkeys(scores["attribute"])) == list(USR_SCALES)
    for attribute, (low, high) in USR_SCALES.items():
        values = scores.loc[scores["attribute"] == attribute, "value"]
        assert len(values) == 360 and values.between(low, high).all()
    # contexts by position: 60 of them although only 50 context strings are distinct
    questions = store.questions.table("tc")
    assert len(questions) == 60 and questions["question_id"].iloc[0] == "topical_chat-00"
    assert len({r["context"] for r in records}) == 50
    assert scores.groupby("question_id")["model"].nunique().eq(6).all()
    assert len(store.questions.answers("tc")) == 360
    # the first record's coherence, as in the file
    first = scores[(scores["question_id"] == "topical_chat-00") & (scores["model"] == records[0]["system_id"])]
    assert first.set_index("attribute")["value"]["coherence"] == pytest.approx(records[0]["scores"]["coherence"])
    # the judge sees the fact, then the conversation (UniEval's "source" is the dialogue history)
    text = questions["text"].iloc[0]
    assert text.startswith("Fact: " + records[0]["context"].strip()[:40])
    assert "\n\nConversation:\n" + records[0]["source"].strip().split("\n")[0].strip() in text
    again = import_path(path, store=store, study="tc")  # identical re-import: nothing added
    assert again.counts["human_scores"].added == 0 and again.counts["human_scores"].skipped == 2160


def _usr_copy(tmp_path, edit):
    records = json.loads(_usr_path().read_text())
    edit(records)
    path = tmp_path / "topical_chat.json"
    path.write_text(json.dumps(records, indent=1))
    return path, records


@pytest.mark.parametrize(("edit", "column", "words"), [
    (lambda r: r[7]["scores"].__setitem__("coherence", 3.5), "scores.coherence", "outside USR's coherence scale"),
    (lambda r: r[7]["scores"].__setitem__("overall", "high"), "scores.overall", "not a number"),
    (lambda r: r[7]["scores"].__setitem__("overall", True), "scores.overall", "not a number"),
    (lambda r: r[7]["scores"].pop("groundedness"), "scores.groundedness", "has no groundedness"),
    (lambda r: r[7]["scores"].__setitem__("fluency", 2), "scores.fluency", "USR does not rate"),
    (lambda r: r[7].__setitem__("source", "another dialogue"), "source", "another source"),
    (lambda r: r[7].__setitem__("system_output", ["a", "list"]), "system_output", "one value is expected"),
    (lambda r: r[7].pop("system_id"), "system_id", "no field"),
])
def test_usr_bad_records_are_refused_naming_line_and_field(tmp_path, store, edit, column, words):
    path, records = _usr_copy(tmp_path, edit)
    store.studies.create("tc")
    before = _snapshot(store)
    with pytest.raises(JudgmentError) as caught:
        import_path(path, store=store, study="tc", format="usr")
    error = caught.value
    assert error.column == column and words in str(error)
    starts = [number for number, line in enumerate(path.read_text().splitlines(), start=1) if line == " {"]
    assert error.source == "topical_chat.json" and error.line == starts[7]  # the 8th record, where it starts
    assert _snapshot(store) == before


# ---------------------------------------------------------------- generic score table

GOOD = ("question_id,model,coherence,engagingness\n"
        "d1,sys-a,2.67,3\n"
        "d1,sys-b,1.33,\n"
        "d2,sys-a,3,2.5\n")


def test_generic_score_table_reads_attribute_columns(tmp_path, store):
    path = tmp_path / "scores.csv"
    path.write_text(GOOD)
    assert detect_format(path) == "human-scores"
    bundle = read_path(path)
    assert bundle.notes["not_rated"] == 1 and bundle.notes["human_scores"] == 5
    report = import_path(path, store=store, study="s")
    assert report.counts["human_scores"].added == 5
    scores = store.scores.human_scores("s")
    assert scores.values.tolist() == [["d1", "sys-a", "coherence", 2.67], ["d1", "sys-b", "coherence", 1.33],
                                      ["d2", "sys-a", "coherence", 3.0], ["d1", "sys-a", "engagingness", 3.0],
                                      ["d2", "sys-a", "engagingness", 2.5]]
    wide = human_scores_wide(scores)  # the export is the same table again
    assert list(wide.columns) == ["question_id", "model", "coherence", "engagingness"]
    assert wide["engagingness"].isna().tolist() == [False, True, False]


@pytest.mark.parametrize(("text", "line", "column", "words"), [
    (GOOD + "d2,sys-b,high,2\n", 5, "coherence", "'high' is not a number"),
    (GOOD + "d2,sys-b,nan,2\n", 5, "coherence", "not a finite number"),
    (GOOD + "d2,sys-b,1e13,2\n", 5, "coherence", "not a finite number within"),
    (GOOD + "d1,sys-b,2,2\n", 5, "model", "given twice (first on line 3)"),
    (GOOD + ",sys-b,2,2\n", 5, "question_id", "question_id is empty"),
    (GOOD + "d3,=cmd|' /C calc'!A0,2,2\n", 5, "model", "spreadsheet formula"),
    ("question_id,model\nd1,a\n", 1, None, "has no attribute column"),
    ("question_id,model,=evil\nd1,a,2\n", 1, "=evil", "not a usable name"),
])
def test_generic_score_table_bad_rows_are_refused_naming_line_and_field(tmp_path, store, text, line, column, words):
    path = tmp_path / "scores.csv"
    path.write_text(text)
    store.studies.create("s")
    before = _snapshot(store)
    with pytest.raises(JudgmentError) as caught:
        import_path(path, store=store, study="s", format="human-scores")
    assert words in str(caught.value)
    assert caught.value.line == line and caught.value.column == column
    assert _snapshot(store) == before


def test_generic_score_table_in_jsonl_refuses_a_boolean(tmp_path, store):
    path = tmp_path / "scores.jsonl"
    path.write_text('{"question_id": "d1", "model": "a", "coherence": 2}\n'
                    '{"question_id": "d1", "model": "b", "coherence": true}\n')
    with pytest.raises(JudgmentError, match="coherence True is a boolean") as caught:
        read_path(path, format="human-scores")
    assert caught.value.line == 2 and caught.value.column == "coherence"


def test_another_value_for_a_stored_score_is_refused_at_its_line(tmp_path, store):
    path = tmp_path / "scores.csv"
    path.write_text(GOOD)
    import_path(path, store=store, study="s")
    before = _snapshot(store)
    changed = tmp_path / "changed.csv"
    changed.write_text(GOOD.replace("d2,sys-a,3,2.5", "d2,sys-a,2,2.5"))
    with pytest.raises(JudgmentError, match="already stored in study 's' with value 3.0, not 2.0") as caught:
        import_path(changed, store=store, study="s")
    assert caught.value.source == "changed.csv" and caught.value.line == 4
    assert _snapshot(store) == before


# ------------------------------------------------------------------ judges' scores


def test_judge_scores_round_trip_and_refuse_bad_rows(tmp_path, store):
    store.studies.create("s")
    store.scores.add_judge_scores("s", pd.DataFrame([
        {"question_id": "d1", "model": "a", "judge": "local:x", "attribute": "coherence", "score": 7.0,
         "expected": 6.5, "distribution": {"7": 0.5}},
        {"question_id": "d1", "model": "b", "judge": "local:x", "attribute": "coherence", "valid": 0,
         "raw": "Score: seven"},
    ]))
    path = tmp_path / "judge_scores.csv"
    judge_scores_table(store.scores.judge_scores("s", include_invalid=True)).to_csv(path, index=False)
    assert detect_format(path) == "judge-scores"
    import_path(path, store=store, study="copy")
    copied = store.scores.judge_scores("copy", include_invalid=True)
    assert copied[["model", "score", "expected", "valid", "raw"]].astype(object).where(copied.notna(), None)[
        ["model", "valid", "raw"]].values.tolist() == [["a", 1, None], ["b", 0, "Score: seven"]]
    assert copied["expected"].iloc[0] == 6.5 and copied["value"].iloc[0] == 6.5
    bad = tmp_path / "bad.csv"
    bad.write_text("question_id,model,judge,score\nd1,a,j,7\nd1,b,j,\n")
    with pytest.raises(JudgmentError, match="needs 'score' or 'expected'") as caught:
        read_path(bad)
    assert caught.value.line == 3


def test_an_import_cannot_write_scores_under_a_run_judge(tmp_path, store):
    store.studies.create("s")
    store.judges.resolve("s", "local:x", {"backend": "local", "model": "x", "role": "score"}, register=True)
    path = tmp_path / "scores.csv"
    path.write_text("question_id,model,judge,score\nd1,a,local:x,7\n")
    before = _snapshot(store)
    with pytest.raises(JudgmentError, match="runs produced") as caught:
        import_path(path, store=store, study="s")
    assert caught.value.line == 2 and caught.value.column == "judge"
    assert _snapshot(store) == before


def test_a_folder_of_usr_and_scores_imports_each_part(tmp_path, store):
    folder = tmp_path / "bundle"
    folder.mkdir()
    shutil.copy(_usr_path(), folder / "topical_chat.json")
    (folder / "extra.csv").write_text("question_id,model,fluency\ntopical_chat-00,Argmax Decoding,2\n")
    report = import_path(folder, store=store, study="tc")
    assert report.counts["human_scores"].added == 2161
    assert store.scores.human_scores("tc", attribute="fluency")["value"].tolist() == [2.0]
