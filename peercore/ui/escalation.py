"""Reviewers & runs: an escalation cascade as a job (issue 24 section 1; glue for the page).

The page calls the functions ``peercore escalate`` calls: "Show plan" is
:func:`peercore.ui.guarantees.plan` (:func:`peercore.app.guarantees.escalation_plan`, the
``--dry-run``), "Run cascade" is :func:`peercore.app.escalation.run_cascade`, started in a
background thread (:class:`CascadeRun`). A stage that is a judge spec is reviewed through
:func:`peercore.app.access.launch_run` (checked and recorded as any run the page launches,
its progress in the cascade's log); a stage that is a judge of the study uses its stored
verdicts. ``run_cascade``'s ``on_stage`` callback tells the page which stage it is on.

Who may: running a cascade spends the deployment's keys and queues label requests, so it
needs the editor role (:data:`peercore.app.access.Action.LAUNCH_RUN`), checked in the
button's callback whatever the page showed; a refusal lands in ``run_error`` and nothing
starts or is stored.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from peercore.app import access as rules
from peercore.app.access import Action
from peercore.app.escalation import EscalationRun, StageSource, run_cascade
from peercore.jobs.base import progress_line
from peercore.jobs.estimate import estimate as estimate_job
from peercore.jobs.pricing import load_prices
from peercore.ui import access, data, runs
from peercore.ui.guarantees import llm_judges

__all__ = ["CASCADE", "DEFAULT_TARGET", "DEFAULT_RISK", "CascadeRun", "stage_choices", "default_reference",
           "launch_cascade", "clear_cascade", "stage_text", "report_display", "report_sentence", "REPORT_LABELS"]

CASCADE = "rv_cascade"  # session state: the CascadeRun started from this session
DEFAULT_TARGET, DEFAULT_RISK = 0.85, 0.1  # the CLI's --target-agreement and --risk defaults (issue 24)


def stage_choices(db: str, study: str, rev: int, reviewers: list[dict]) -> list[str]:
    """What a stage can be: the study's LLM judges, then the page's reviewers as judge specs (``--cascade`` entries).

    A reviewer is offered as the spec ``peercore escalate --cascade`` takes
    (:func:`peercore.ui.runs.spec`); one whose spec is already a judge name is listed once.
    """

    judges = llm_judges(db, study, rev)
    specs = [runs.spec(r) for r in reviewers]
    return judges + [s for s in dict.fromkeys(specs) if s not in judges]


def default_reference(references: list[str]) -> str | None:
    """The reference the picker starts on: every human judge (``human:``) or the only one; None without humans."""
    return references[0] if references else None


@dataclass
class CascadeRun:
    """A cascade started from this session: its settings, the stage it is on, its log, and how it ended.

    ``done`` is set when the thread ends (the page polls it; tests wait on it).
    """

    study: str
    cascade: tuple[str, ...]
    reference: str
    target_agreement: float
    risk: float
    actor: object = None
    stage: int = -1            # the stage being run (0-based), -1 before the first
    stage_judge: str = ""
    stage_runs: bool = False   # whether the stage is a spec being reviewed now
    handle: object = None      # the RunHandle of the stage being reviewed, if any
    result: EscalationRun | None = None
    error: str = ""
    done: threading.Event = field(default_factory=threading.Event)
    log: collections.deque = field(default_factory=lambda: collections.deque(maxlen=200))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def lines(self) -> list[str]:
        with self.lock:
            return list(self.log)

    def _say(self, line: str) -> None:
        with self.lock:
            self.log.append(line)

    def on_stage(self, index: int, source: StageSource) -> None:  # the cascade's thread: no streamlit here
        self.stage, self.stage_judge, self.stage_runs = index, source.judge, source.reviewer is not None
        how = f"reviews with {source.entry}" if self.stage_runs else "uses its stored verdicts"
        self._say(f"stage {index + 1} of {len(self.cascade)}: {source.judge} {how}")

    def on_progress(self, event) -> None:
        self._say(progress_line(event, "review"))

    def review(self, job):
        """``run_cascade``'s ``run``: the stage's review through the checked launch, waited for, its end recorded."""
        store = data.store()
        est = estimate_job(job, store)
        self.handle = rules.launch_run(store, self.actor, job, on_progress=self.on_progress, prices=load_prices(),
                                       estimated_cost_usd=est.cost_usd_high)
        try:
            result = self.handle.wait()
        finally:
            self.handle = None
        rules.finish_run(store, self.actor, result, study=self.study)
        return result

    def work(self) -> None:
        """The thread's body: :func:`peercore.app.escalation.run_cascade`, as ``peercore escalate`` runs it."""
        try:
            self.result = run_cascade(data.store(), self.study, cascade=list(self.cascade), reference=self.reference,
                                      target_agreement=self.target_agreement, risk=self.risk, run=self.review,
                                      on_stage=self.on_stage)
        except Exception as error:  # noqa: BLE001 - a ValueError names the option; shown on the page
            self.error = str(error)
        finally:
            self.done.set()


def launch_cascade(study: str, cascade: list[str], reference: str | None, target_agreement: float,
                   risk: float) -> None:
    """Button callback: check the actor may launch a run, then start the cascade in a background thread."""
    st.session_state["run_error"] = ""
    if not runs._may(Action.LAUNCH_RUN, study):
        return  # refused: nothing starts, nothing is stored
    current = st.session_state.get(CASCADE)
    if current is not None and not current.done.is_set():
        st.session_state["run_error"] = "A cascade is already running; wait for it to end."
        return
    if not cascade or not reference:
        st.session_state["run_error"] = "Choose at least one stage and a human reference."
        return
    actor = access.current_actor()  # each stage's review is checked again by rules.launch_run
    live = CascadeRun(study=study, cascade=tuple(cascade), reference=reference,
                      target_agreement=float(target_agreement), risk=float(risk), actor=actor)
    st.session_state[CASCADE] = live
    threading.Thread(target=live.work, name="peerboard-cascade", daemon=True).start()


def clear_cascade() -> None:
    st.session_state[CASCADE] = None


def stage_text(live: CascadeRun) -> str:
    """Where the cascade is, in words: "stage 2 of 3: gpt-4o (reviewing; 12 of 90 items)"."""
    if live.stage < 0:
        return "Starting: reading the human labels"
    text = f"Stage {live.stage + 1} of {len(live.cascade)}: {live.stage_judge}"
    handle = live.handle
    progress = getattr(handle, "progress", None) if handle is not None else None
    if live.stage_runs and progress is not None:
        return f"{text} (reviewing; {progress.done:,} of {progress.total:,} items)"
    return f"{text} ({'reviewing' if live.stage_runs else 'its stored verdicts'})"


REPORT_LABELS = {
    "stage": "Stage", "threshold": "Confidence threshold", "judged": "Judged", "kept": "Kept",
    "reviewed": "Reviewed now",
    "calls": "Paid calls", "cached": "From the cache", "cost_usd": "Cost (USD)", "failed": "Failed items",
    "agreement": "Agreement on calibration", "upper_bound_disagreement": "Disagreement bound",
    "guarantee": "Promised agreement",
}


def report_display(result: EscalationRun) -> pd.DataFrame:
    """One row per stage: the columns ``peercore escalate`` prints (:func:`peercore.cli.guarantees.escalation_text`)."""
    frame = pd.DataFrame(result.stages)
    frame = frame[[c for c in REPORT_LABELS if c in frame.columns]].reset_index(drop=True)
    numbers = [c for c in frame.columns if c != "stage"]  # None (no price, no run) as a missing number
    return frame.assign(**{c: pd.to_numeric(frame[c], errors="coerce") for c in numbers})


def report_sentence(result: EscalationRun) -> str:
    """What was escalated and queued, in one sentence (numbers as the CLI's last line)."""
    return (f"Escalated to humans: {result.escalated:,} of {result.comparisons:,} comparisons "
            f"({result.labelled:,} already labelled); {result.queued:,} label requests queued now, "
            f"{result.already_requested:,} queued before.")
