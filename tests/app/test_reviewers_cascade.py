"""Reviewers & runs offers an escalation cascade as a job (issue 24 section 1, "the Reviewers & runs page offers a
cascade as a job").

Jung, Brahman & Choi, "Trust or Escalate" (ICLR 2025, arXiv 2407.18370): the page's "Show plan" is the dry
run's plan (:func:`peercore.app.guarantees.escalation_plan`), its "Run cascade" the command's run
(:func:`peercore.app.escalation.run_cascade`): both compared here with what ``peercore escalate`` gives on a
twin database. The study (tests/integration/test_escalate_run.py's ``build_study``): 40 questions, three
contestants, 90 of the 120 comparisons labelled by humans, and two stored LLM judges:

* ``cheap``: right and sure (p_a 0.95) on the "easy" comparisons, wrong and unsure (0.4) on the others;
* ``big``: right on every comparison except the hard ones of questions divisible by 3, where it is wrong at 0.45;
  right ones at 0.9.

Runs of stored judges make no call; the cascade runs in a thread, and the test waits on its ``done`` event
(no clock).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd
import pytest

from app_studies import REPO, app_test, open_page, problems
from peercore.app.guarantees import escalation_plan
from peercore.app.study import Study
from peercore.cli import main
from peercore.store import Store
from peercore.ui.guarantees import plan_display
from peercore.ui import escalation, state

sys.path.insert(0, str(REPO / "tests"))
from integration.test_escalate_run import PAIRS, QUESTIONS, _big_right, _easy, build_study  # noqa: E402
from test_access_pages import ROLES, everything_shown, sign_in, snapshot  # noqa: E402

EDITOR, VIEWER = "ed@example.org", "vic@example.org"
CASCADE = ["cheap", "big"]


def _stored_judges() -> list[dict]:
    rows = []
    for q in range(QUESTIONS):
        for p, (a, b) in enumerate(PAIRS):
            sure = _easy(q, p)
            rows.append({"question_id": f"q{q:02d}", "model_a": a, "model_b": b, "judge": "cheap",
                         "winner": "model_a" if sure else "model_b", "p_a": 0.95 if sure else 0.4})
            right = _big_right(q, p)
            rows.append({"question_id": f"q{q:02d}", "model_a": a, "model_b": b, "judge": "big",
                         "winner": "model_a" if right else "model_b", "p_a": 0.9 if right else 0.45})
    return rows


@pytest.fixture
def study(tmp_path, monkeypatch) -> str:
    """The study in the database the app opens ($PEERBOARD_DB)."""
    (tmp_path / "page").mkdir()
    db = build_study(tmp_path / "page", extra=_stored_judges())
    monkeypatch.setenv("PEERBOARD_DB", db)
    return db


def _queued(db: str) -> set[tuple]:
    store = Store(db, create=False)
    try:
        frame = store.debates.table("s", kind="label_request")
        return {(q, *sorted((a, b))) for q, a, b in zip(frame["question_id"], frame["model_a"], frame["model_b"])}
    finally:
        store.close()


def _choose(at) -> None:
    """Stages cheap then big, every human judge as the reference, the defaults otherwise."""
    for judge in CASCADE:
        at.multiselect(key="rv_cascade_stages").select(judge)
    at.run()


def _cascade_page():
    at = open_page(app_test(), "reviewers")
    assert at.session_state[state.STUDY] == "s"
    _choose(at)
    return at


def _run_cascade(at) -> escalation.CascadeRun:
    at.button(key="rv_cascade_run").click().run()
    live = at.session_state[escalation.CASCADE]
    assert live.done.wait(120), "the cascade did not end"
    at.run()
    return live


def test_the_plan_on_the_page_is_the_dry_runs_plan(study):
    at = _cascade_page()
    assert at.multiselect(key="rv_cascade_stages").value == CASCADE
    assert at.selectbox(key="rv_cascade_reference").value == "human:"
    assert (at.number_input(key="rv_cascade_target").value, at.number_input(key="rv_cascade_risk").value) == (0.85, 0.1)
    at.button(key="rv_cascade_plan").click().run()
    assert problems(at) == []
    shown = next(frame.value for frame in at.dataframe if "threshold" in frame.value.columns)

    store = Store(study, create=False)
    try:
        want = escalation_plan(Study(store, "s"), cascade=CASCADE, reference="human:", target_agreement=0.85, risk=0.1)
    finally:
        store.close()
    assert list(shown["stage"]) == [s["stage"] for s in want.stages] == ["cheap", "big", "humans"]
    pd.testing.assert_frame_equal(shown.reset_index(drop=True), plan_display(want).reset_index(drop=True))
    for cell, stage in zip(shown["threshold"][:2], want.stages[:2]):  # both stages keep verdicts: a number each
        assert math.isfinite(stage["threshold"]) and float(cell) == pytest.approx(stage["threshold"], abs=5e-4)
    assert list(shown["guarantee"]) == pytest.approx([s["guarantee"] for s in want.stages], nan_ok=True)


def test_a_cascade_run_from_the_page_queues_what_the_command_queues_and_a_second_run_nothing(study, tmp_path,
                                                                                             capsys):
    twin = build_study(tmp_path, extra=_stored_judges())  # the same study, for `peercore escalate`
    argv = ["escalate", "--study", "s", "--db", twin, "--reference", "human:", "--target-agreement", "0.85",
            "--risk", "0.1", "--no-progress", "--format", "json", "--cascade", "cheap", "--cascade", "big"]
    capsys.readouterr()
    assert main(argv) == 0
    command = json.loads(capsys.readouterr().out)
    expected = _queued(twin)
    assert expected and command["queued"] == len(expected)

    at = _cascade_page()
    assert _queued(study) == set()
    live = _run_cascade(at)
    assert live.error == "" and problems(at) == []
    assert [s["stage"] for s in live.result.stages] == CASCADE
    assert live.lines()[:2] == ["stage 1 of 2: cheap uses its stored verdicts", "stage 2 of 2: big uses its stored "
                                                                                   "verdicts"]
    assert _queued(study) == expected
    assert live.result.queued == command["queued"]
    assert [s["threshold"] for s in live.result.stages] == [s["threshold"] for s in command["stages"]]
    report = next(frame.value for frame in at.dataframe if "reviewed" in frame.value.columns)
    assert list(report["kept"]) == [s["kept"] for s in command["stages"]]
    said = " ".join(str(s.value) for s in at.success)
    assert f"{command['queued']:,} label requests queued now" in said
    assert any("Adjudication" in str(link.label) for link in at.get("page_link"))

    at.button(key="rv_cascade_clear").click().run()
    second = _run_cascade(at)  # again: everything is requested already
    assert second.result.queued == 0 and second.result.already_requested == len(expected)
    assert _queued(study) == expected
    assert "0 label requests queued now" in " ".join(str(s.value) for s in at.success)


def test_a_viewer_sees_no_run_button_and_a_forced_click_stores_nothing(study, monkeypatch):
    store = Store(study)
    for who, role in ROLES.items():
        store.access.grant_role(who, role, granted_by="configuration")
    store.close()
    sign_in(monkeypatch, VIEWER)
    at = _cascade_page()
    assert not any(b.key == "rv_cascade_run" for b in at.button)
    at.button(key="rv_cascade_plan").click().run()  # reading the plan is allowed
    assert any("threshold" in frame.value.columns for frame in at.dataframe)

    everything_shown(monkeypatch)  # a crafted request: the button is there, only the application layer decides
    at = _cascade_page()
    before = snapshot(Path(study))
    at.button(key="rv_cascade_run").click().run()
    assert escalation.CASCADE not in at.session_state or at.session_state[escalation.CASCADE] is None
    assert "Not allowed" in " ".join(str(e.value) for e in at.error)
    assert snapshot(Path(study))[2] == before[2] and _queued(study) == set()


@pytest.fixture
def llm_server(monkeypatch):
    """The fake OpenAI wire-format server with test_escalate_run's scripted judges (gpt-4o-mini, gpt-4o)."""
    from fakes.llm_server import FakeLLMServer
    from integration.test_escalate_run import scripted_reply

    with FakeLLMServer(reply=scripted_reply) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret-0000")
        yield fake


def test_reviewers_of_the_page_run_as_stages_each_review_a_recorded_run(tmp_path, monkeypatch, llm_server):
    """Two reviewers configured on the page (gpt-4o-mini, then gpt-4o) as the cascade's stages: each is reviewed
    through the page's checked launch (a run of the study, recorded as ``launch_run``), the cascade's log names the
    stage it is on, and the result is the command's (test_escalate_run: thresholds 0.501, 6 label requests)."""
    db = build_study(tmp_path)  # answers and human votes only: the judges are run
    monkeypatch.setenv("PEERBOARD_DB", db)
    at = open_page(app_test(), "reviewers")
    for model in ("gpt-4o-mini", "gpt-4o"):
        at.selectbox(key="rv_provider").set_value("openai")
        at.text_input(key="rv_model").input(model)
        at.button(key="FormSubmitter:add_reviewer-Add reviewer").click().run()
    stages = ["openai:gpt-4o-mini", "openai:gpt-4o"]
    assert at.multiselect(key="rv_cascade_stages").options == stages
    for stage in stages:
        at.multiselect(key="rv_cascade_stages").select(stage)
    at.run()
    live = _run_cascade(at)
    assert live.error == "" and problems(at) == [], (live.error, problems(at))
    report = live.result
    assert [s["stage"] for s in report.stages] == stages and all(s["ran"] for s in report.stages)
    assert [s["threshold"] for s in report.stages] == pytest.approx([0.501, 0.501])
    assert [s["calls"] for s in report.stages] == [240, 210]
    assert report.queued == 6 and len(_queued(db)) == 6
    log = live.lines()
    assert log[0] == "stage 1 of 2: openai:gpt-4o-mini reviews with openai:gpt-4o-mini"
    assert "stage 2 of 2: openai:gpt-4o reviews with openai:gpt-4o" in log
    store = Store(db, create=False)
    try:
        runs = store.runs.table("s")
        actions = store.access.audit_log()["action"].tolist()
    finally:
        store.close()
    assert sorted(runs["status"]) == ["finished", "finished"]
    assert actions.count("launch_run") == 2
