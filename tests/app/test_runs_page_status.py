"""Reviewers & runs (issue 21, "Runs"): a live run says what it is doing, the result panel gives the judges'
health and opens the inspection on the run just made, the runs table uses glyphs every font has.

Runs go to the fake LLM server (tests/fakes); a run is held in a phase with the server's
``hold_after`` / ``wait_until`` and ended with ``handle.wait``: no clock.
"""

from __future__ import annotations

import sys

from app_studies import REPO, app_test, open_page, problems
from peercore.app import Study
from peercore.app.health import health
from peercore.store import Store
from peercore.ui import state

sys.path.insert(0, str(REPO / "tests"))
from fakes.llm_server import FakeLLMServer  # noqa: E402


def _add_reviewer(at, url: str, name: str = "fake") -> None:
    at.selectbox(key="rv_provider").set_value("compatible")
    at.text_input(key="rv_model").input("fake-judge")
    at.text_input(key="rv_url").input(url)
    at.text_input(key="rv_name").input(name)
    at.button(key="FormSubmitter:add_reviewer-Add reviewer").click().run()


def _launch(at, server: FakeLLMServer) -> None:
    """Configure the fake judge and launch an all-pairs review of alpha and bravo (18 reviews)."""
    _add_reviewer(at, server.openai_base_url)
    at.multiselect(key="rv_contestants").set_value(["alpha", "bravo"]).run()
    at.button(key="rv_launch").click().run()


def _progress_text(at) -> str:
    return "\n".join(p.proto.text for p in at.get("progress"))


def _finish(at) -> str:
    """Wait for the live run's end (not a clock), rerun the page; the run's id."""
    live = at.session_state[state.RUN_HANDLE]
    live.handle.wait(timeout=120)
    at.run()
    return live.handle.run_id


def _finished_run(at) -> str:
    with FakeLLMServer() as server:
        _launch(at, server)
        run_id = _finish(at)
    assert any("Run finished: 18 of 18" in s.value for s in at.success), problems(at)
    return run_id


def test_a_run_waiting_for_its_first_item_says_so_instead_of_running(synthetic):
    with FakeLLMServer() as server:
        server.hold_after(0)  # every call held: the run sits before its first item ends
        at = open_page(app_test(), "reviewers")
        _launch(at, server)
        assert server.wait_until(lambda s: s.held >= 1)
        at.run()
        text = _progress_text(at)
        assert "0 of 18 items — waiting for the first replies…" in text, text
        assert "running" not in text, text
        server.release()
        _finish(at)


def test_a_local_models_first_item_reads_as_loading_the_model():
    from peercore.ui.runs import phase_text

    assert phase_text("first-item", "running", local=True).startswith("loading the local model…")
    assert phase_text("running", "running", local=True) == "running"


def test_cancel_says_cancelling_until_the_run_ends(synthetic):
    with FakeLLMServer() as server:
        server.hold_after(2)  # two reviews answered, every later call held: the calls in flight stay in flight
        at = open_page(app_test(), "reviewers")
        _launch(at, server)
        assert server.wait_until(lambda s: s.successes >= 2 and s.held >= 1)
        at.button(key="rv_cancel").click().run()
        text = _progress_text(at)
        assert "cancelling (waiting for calls in flight)" in text, text
        assert "running" not in text, text
        assert at.button(key="rv_cancel").disabled  # pressed once is enough
        at.run()  # still cancelling on the next poll, while the calls are held
        assert "cancelling (waiting for calls in flight)" in _progress_text(at)
        server.release()
        _finish(at)
    assert any("Run cancelled:" in w.value for w in at.warning), [w.value for w in at.warning]
    assert "cancelling" not in _progress_text(at)


def test_the_result_panel_gives_the_run_judges_health_verdict(synthetic):
    at = open_page(app_test(), "reviewers")
    _finished_run(at)
    table = health(Study(Store(synthetic["db"]), "synthetic"), judges=["fake"])
    assert list(table.index) == ["fake"]
    shown = [e.value for e in [*at.info, *at.warning] if "fake" in e.value]
    if table.loc["fake", "flagged"]:
        assert any("carries no information" in v for v in shown), shown
    else:
        line = [v for v in shown if v.startswith("Judge health of")]
        assert line and "ok, its verdicts carry information" in line[0], shown
        assert f"{int(table.loc['fake', 'n']):,} replies" in line[0], line


def test_inspect_verdicts_opens_on_the_run_just_made(synthetic):
    at = open_page(app_test(), "reviewers")
    before = at.selectbox(key="rv_inspect_run").value
    run_id = _finished_run(at)
    assert before != run_id  # the page opened on another run (or every verdict) before this one
    assert at.selectbox(key="rv_inspect_run").value == run_id
    table = next(d.value for d in at.dataframe if "orders agree" in d.value.columns)
    assert len(table) == 18 and set(table["judge"]) == {"fake"}, table["judge"].value_counts()


def test_the_runs_table_uses_no_glyph_a_font_may_lack(synthetic):
    at = open_page(app_test(), "reviewers")
    _finished_run(at)
    status = [d.value for d in at.dataframe if "paid calls → stored, failed" in d.value.columns][0]["status"].tolist()
    assert "finished" in status, status
    assert all(cell.isascii() for cell in status), status
    labels = at.selectbox(key="rv_inspect_run").options  # as shown: "run … (review, finished, …)"
    assert all(label.isascii() for label in labels), labels
