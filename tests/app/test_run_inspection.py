"""Runs you can inspect: a run's verdicts with both answers, filters, readable logs, honest run status.

The Reviewers & runs page lists each verdict of a run (or of the whole study) with the
judge's verdict, p_a, rationale and validity; filters by judge, by invalid reply and by
disagreement between the two presentation orders; texts are shown as text. A cancelled
run is never a green success and the run log names items in words, not raw lists.
"""

from __future__ import annotations

import sys

import pandas as pd
import pytest

from app_studies import REPO, app_test, open_page, problems
from peercore.run_inspection import filter_verdicts, order_agreement, run_verdicts, verdict_summary
from peercore.store import Store

sys.path.insert(0, str(REPO / "tests"))
from fakes.llm_server import FakeLLMServer  # noqa: E402

HOSTILE = "**bold** <b>html</b> [link](http://x)"


def _study(store: Store, name: str = "inspect") -> str:
    """Two questions, two models; one run whose judge disagrees with itself across orders on q1."""
    store.studies.create(name)
    store.questions.add(name, pd.DataFrame({"question_id": ["q1", "q2"], "text": ["Why is the sky blue?", HOSTILE]}))
    store.questions.add_answers(name, pd.DataFrame({"question_id": ["q1", "q1", "q2", "q2"], "model": ["a", "b", "a", "b"],
                                                    "answer": ["Rayleigh scattering.", "Because.", HOSTILE, "Plain b."]}))
    run_id = store.runs.create(name, "review", {"job": {}}, items=["i1", "i2", "i3", "i4", "i5"])
    store.verdicts.add(name, pd.DataFrame({
        "question_id": ["q1", "q1", "q2", "q2"], "model_a": ["a", "b", "a", "b"], "model_b": ["b", "a", "b", "a"],
        "judge": ["j1", "j1", "j1", "j1"], "winner": ["model_a", "model_a", "model_a", "model_b"],
        "p_a": [0.91234, 0.8, 0.7, 0.2], "rationale": ["first is better", "first is better", HOSTILE, "a wins"],
    }), run_id=run_id)
    store.verdicts.add(name, pd.DataFrame({
        "question_id": ["q1"], "model_a": ["a"], "model_b": ["b"], "judge": ["j2"], "winner": [None],
        "valid": [0], "raw": ["I cannot decide."]}), run_id=run_id)
    store.verdicts.add(name, pd.DataFrame({  # an import: not part of the run
        "question_id": ["q2"], "model_a": ["a"], "model_b": ["b"], "judge": ["human:zoe"], "winner": ["tie"]}))
    return run_id


@pytest.fixture
def inspect_db(db_file):
    store = Store(db_file)
    run_id = _study(store)
    store.close()
    return db_file, run_id


# ---------------------------------------------------------------------- the table


def test_a_runs_verdicts_carry_both_answers_and_whether_the_orders_agree(inspect_db):
    db, run_id = inspect_db
    store = Store(db)
    verdicts = run_verdicts(store, "inspect", run_id=run_id)
    assert len(verdicts) == 5 and "human:zoe" not in set(verdicts["judge"])  # only the run's verdicts
    row = verdicts[(verdicts["question_id"] == "q1") & (verdicts["model_a"] == "a") & (verdicts["judge"] == "j1")].iloc[0]
    assert row["answer_a"] == "Rayleigh scattering." and row["answer_b"] == "Because."
    assert row["verdict"] == "a" and row["question"] == "Why is the sky blue?"
    # q1: a first -> a wins; b first -> b wins: the judge followed the position, the orders disagree
    # q2: a first -> a wins; b first -> a wins (model_b of the swapped pair): they agree
    agree = dict(zip(zip(verdicts["question_id"], verdicts["model_a"], verdicts["judge"]), verdicts["orders_agree"]))
    assert [agree[k] for k in [("q1", "a", "j1"), ("q1", "b", "j1"), ("q2", "a", "j1"), ("q2", "b", "j1")]] == [
        False, False, True, True]
    invalid = verdicts[~verdicts["valid"]].iloc[0]
    assert invalid["judge"] == "j2" and invalid["verdict"] == "(no verdict)"
    assert invalid["rationale"] == "I cannot decide."  # the raw reply, kept
    assert pd.isna(agree[("q1", "a", "j2")])  # no valid verdict in the other order
    assert verdict_summary(verdicts) == {"verdicts": 5, "invalid": 1, "both_orders": 4, "disagreeing": 2}
    everything = run_verdicts(store, "inspect")
    assert "human:zoe" in set(everything["judge"]) and len(everything) == 6


def test_filters_by_judge_invalid_and_disagreement(inspect_db):
    db, run_id = inspect_db
    verdicts = run_verdicts(Store(db), "inspect", run_id=run_id)
    assert set(filter_verdicts(verdicts, judges=["j2"])["judge"]) == {"j2"}
    assert filter_verdicts(verdicts, invalid_only=True)["judge"].tolist() == ["j2"]
    disagreeing = filter_verdicts(verdicts, disagreeing_only=True)
    assert sorted(disagreeing["question_id"]) == ["q1", "q1"] and set(disagreeing["judge"]) == {"j1"}


def test_repeated_votes_that_split_do_not_count_as_agreeing():
    frame = pd.DataFrame({"question_id": ["q"] * 3, "judge": ["j"] * 3, "model_a": ["a", "b", "b"],
                          "model_b": ["b", "a", "a"], "verdict": ["a", "a", "b"], "valid": [True] * 3})
    assert order_agreement(frame).tolist() == [False, True, False]


# ------------------------------------------------------------------------ the page


def _table(at) -> pd.DataFrame:
    """The verdicts table on the page (the data grid with a "shown first" column)."""
    tables = [d.value for d in at.dataframe if "shown first" in d.value.columns]
    assert len(tables) == 1, [list(d.value.columns) for d in at.dataframe]
    return tables[0]


def test_the_page_lists_a_runs_verdicts_and_filters_them(inspect_db):
    db, run_id = inspect_db
    at = open_page(app_test(), "reviewers")
    assert problems(at) == []
    assert at.selectbox(key="rv_inspect_run").value == run_id  # the newest run with verdicts
    table = _table(at)
    assert len(table) == 5 and list(table.columns[:5]) == ["question", "judge", "shown first", "shown second", "verdict"]
    assert table["p_a"].dropna().round(3).tolist() == table["p_a"].dropna().tolist()  # 3 decimals
    at.toggle(key="rv_inspect_invalid").set_value(True).run()
    table = _table(at)
    assert table["judge"].tolist() == ["j2"] and not table["valid"].any()
    at.toggle(key="rv_inspect_invalid").set_value(False).run()
    at.toggle(key="rv_inspect_disagree").set_value(True).run()
    table = _table(at)
    assert table["question"].tolist() == ["q1", "q1"] and set(table["orders agree"]) == {"no"}
    at.toggle(key="rv_inspect_disagree").set_value(False).run()
    at.multiselect(key="rv_inspect_judges").set_value(["j2"]).run()
    assert _table(at)["judge"].tolist() == ["j2"]
    at.multiselect(key="rv_inspect_judges").set_value([]).run()
    at.selectbox(key="rv_inspect_run").set_value("").run()  # every stored verdict, the import included
    assert "human:zoe" in set(_table(at)["judge"])
    assert problems(at) == []


def test_an_opened_verdict_shows_question_answers_and_reasoning_as_text(inspect_db):
    db, run_id = inspect_db
    at = open_page(app_test(), "reviewers")
    options = at.selectbox(key="rv_inspect_row").options
    hostile = [k for k, label in enumerate(options) if label.startswith("q2 · a vs b · j1")]
    at.selectbox(key="rv_inspect_row").select_index(hostile[0]).run()
    assert problems(at) == []
    shown = [t.value for t in at.text]
    assert shown.count(HOSTILE) >= 3  # question, first answer and rationale: plain text, never Markdown or HTML
    assert not any("<b>html</b>" in m.value for m in at.markdown)


# ------------------------------------------------------------------ runs from the page


def _add_reviewer(at, url: str) -> None:
    at.selectbox(key="rv_provider").set_value("compatible")
    at.text_input(key="rv_model").input("fake-judge")
    at.text_input(key="rv_url").input(url)
    at.text_input(key="rv_name").input("fake")
    at.button(key="FormSubmitter:add_reviewer-Add reviewer").click().run()


def test_a_cancelled_run_is_a_warning_never_a_green_success_and_its_log_reads_in_words(synthetic):
    from peercore.ui import state

    with FakeLLMServer() as server:
        server.hold_after(2)  # two reviews answered, every later call held: the run cannot end before the cancel
        at = open_page(app_test(), "reviewers")
        _add_reviewer(at, server.openai_base_url)
        at.multiselect(key="rv_contestants").set_value(["alpha", "bravo"]).run()
        at.button(key="rv_launch").click().run()  # 18 reviews, 8 at a time
        assert server.wait_until(lambda s: s.successes >= 2 and s.held >= 1)  # under way, and held
        at.button(key="rv_cancel").click().run()
        server.release()  # the calls in flight land in the cache, as a cancel lets them
        at.session_state[state.RUN_HANDLE].handle.wait(timeout=120)  # the run's end, not a clock
        at.run()
        assert any("Run cancelled:" in w.value for w in at.warning), [w.value for w in at.warning]
        assert not at.success, [s.value for s in at.success]
        log = "\n".join(c.value for c in at.code)
        assert "judged by fake" in log and '["' not in log and "['" not in log, log
        status = [d.value for d in at.dataframe if "paid calls → stored, failed" in d.value.columns][0]["status"].tolist()
        assert "cancelled" in status, status  # words only: no glyph a font may lack (issue 21)


def test_result_message_is_a_success_only_for_a_finished_run():
    from peercore.runner import RunResult
    from peercore.ui.runs import result_message

    def result(status, **kw):
        return RunResult(**{"run_id": "r", "status": status, "done": 3, "total": 9, **kw})

    assert result_message(result("finished", done=9), None)[0] == "success"
    assert result_message(result("cancelled"), None) == ("warning", "Run cancelled: 3 of 9 items done; launch it "
                                                                    "again (or resume it below) to go on.")
    assert result_message(result("failed", message="2 item(s) failed"), None)[0] == "warning"
    assert result_message(result("interrupted"), None)[0] == "warning"
    assert result_message(None, "boom")[0] == "error"


# ------------------------------------------------------------------ budget on the page


def test_the_page_caps_a_job_to_its_budget_and_question_limit_and_says_so(synthetic):
    at = open_page(app_test(), "reviewers")
    at.button(key="rv_local").click().run()  # the offline judge: no key, no network
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Items to do"] == "108 of 108" and metrics["Cost"] == "local, free"
    assert any("an item is one comparison of two answers by one reviewer" in c.value for c in at.caption)
    at.number_input(key="rv_budget").set_value(30).run()  # used to be refused: "budget is less than ..."
    assert problems(at) == []
    metrics = {m.label: m.value for m in at.metric}
    low, _, high = metrics["Paid calls"].partition(" – ")
    assert int(high or low) <= 30 and metrics["Items to do"] != "108 of 108"
    assert any("Cut to fit: call budget 30:" in i.value for i in at.info), [i.value for i in at.info]
    at.number_input(key="rv_budget").set_value(0).run()
    at.number_input(key="rv_max_questions").set_value(2).run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Items to do"] == "24 of 24"  # 2 of 9 questions x 12 ordered pairs
    assert any("question limit 2: 2 of 9 questions" in i.value for i in at.info)
    assert not at.button(key="rv_launch").disabled


def test_the_inspection_table_fits_its_widths_and_says_p_a_in_words():
    """The Inspect verdicts table had fixed widths that cut judges' and models' names at 1366 px and a `p_a`
    header (issue 21, seen in the screenshots): now widths come from tables.with_widths (names told apart)."""
    from peercore.ui import runs, tables

    config = runs.verdicts_columns()
    assert config["p_a"]["label"] == "P(first better)"
    assert all(column.get("width") is None for column in config.values())  # no fixed width left to cut a name
    judges = ["local:qwen2.5-coder-1.5b-instruct@t0.7", "local:qwen2.5-coder-1.5b-instruct@t1.0"]
    frame = pd.DataFrame({"question": ["q1", "q2"], "judge": judges, "shown first": ["a", "b"],
                          "shown second": ["b", "a"], "verdict": ["model_a", "tie"], "p_a": [0.9, float("nan")],
                          "valid": [True, True], "orders agree": ["yes", "—"], "rationale": ["why " * 80] * 2})
    widths = tables.with_widths(frame, config)
    assert widths["judge"]["width"] >= tables.telling_width(judges)
    assert sum(column["width"] for column in widths.values()) <= tables.FULL_WIDTH
