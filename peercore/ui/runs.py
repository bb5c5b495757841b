"""Reviewers & runs: reviewer configurations, jobs, estimates, live runs (glue for the page).

Secrets: reviewer configurations in session state hold provider, model, base URL,
temperature, a name and, for an OpenAI-compatible server, the *name* of the environment
variable holding its key (``api_key_env``), never a key. A base URL that carries a
credential (``?api_key=...``, ``user:password@``) is refused without repeating it, and so
is a field holding what looks like a key (a key typed where its variable's name goes):
the field is cleared and nothing is kept. Keys are looked up only at launch, from the
environment or ``st.secrets``, and handed to the backend object of that run; the page
only ever shows whether a key is set.

Kept in the study: the reviewer list is the study's (:meth:`peercore.store.Store.studies.settings`),
read once per session and study (:func:`load_reviewers`: a reload, another study) and
written whole on every addition, edit or removal through :func:`peercore.app.access.configure_reviewers`
(editor only; the store refuses values shaped like keys).

Who may: configuring reviewers, launching, resuming and cancelling runs need the editor
role in the study (:mod:`peercore.app.access`); each callback goes through the checked
action (:func:`peercore.app.access.launch_run` ...), whatever the page showed, and a
refusal lands in ``rv_error`` / ``run_error`` with nothing started or changed.

Defaults are the command line's: a review's method is each backend's default
(:func:`peercore.reviewers.judging.default_method`) unless the page picks one.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from peercore.app import access as rules
from peercore.app.access import Action, AccessDenied
from peercore.app.health import health_facts
from peercore.redaction import looks_like_key
from peercore.prompts import list_rubrics, list_templates, load_template
from peercore.reviewers import METHODS
from peercore.ui import access, data, safe, state
from peercore.jobs.base import Judge, accounting_line, progress_line
from peercore.jobs.specs import ENV_NAME, make_backend, refuse_credentials
from peercore.jobs.answers import AnswerJob
from peercore.jobs.discussion import DebateJob, DiscussionJob
from peercore.jobs.review import ONE_ORDER_STRATEGIES, ReviewJob
from peercore.jobs.estimate import estimate as estimate_job, items_and_calls
from peercore.jobs.pricing import load_prices
from peercore.jobs.resume import job_from_config
from peercore.run_inspection import DISPLAY_LIMIT, filter_verdicts as keep, run_verdicts as verdicts_of, verdict_summary

PROVIDERS: dict[str, str] = {
    "openai": "OpenAI",
    "anthropic": "Anthropic",
    "compatible": "OpenAI-compatible server (llama.cpp, Ollama, vLLM)",
    "local": "Local model (offline, llama.cpp)",
}
KEY_VARS: dict[str, str] = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
JOBS: dict[str, str] = {"review": "Peer review", "answers": "Answers", "discussion": "Discussion (PRD)",
                        "debate": "Debate (ScaleEval)"}
LOCAL_PRESET = {"name": "", "provider": "local", "model": "qwen2.5-coder-1.5b", "base_url": "", "temperature": 0.0,
                "api_key_env": ""}
DEFAULT_METHOD = "default"  # the review method option meaning "each backend's default"

# widget keys of the "Add a reviewer" form
F_PROVIDER, F_MODEL, F_URL, F_TEMPERATURE, F_NAME = "rv_provider", "rv_model", "rv_url", "rv_temperature", "rv_name"
F_KEY_ENV = "rv_key_env"
#: The form's text fields and how a message names them.
TEXT_FIELDS = {F_MODEL: "Model", F_URL: "Base URL", F_KEY_ENV: "Key variable", F_NAME: "Name"}
#: Session key: the study whose reviewers the session's list is (:func:`load_reviewers`).
LOADED_FOR = "rv_loaded_for"
#: Session key: the index of the reviewer the form edits (:func:`edit_reviewer`); None: the form adds one.
EDITING = "rv_editing"


# ------------------------------------------------------------------------------ keys


def _secret(name: str) -> str | None:
    try:
        value = st.secrets.get(name)
    except Exception:  # no secrets.toml: st.secrets raises on access
        return None
    return value or None


def key_status() -> list[tuple[str, str]]:
    """(variable, where it is set: "environment", "secrets.toml" or "not set") — never the value."""
    import os

    out = []
    for var in KEY_VARS.values():
        where = "environment" if os.environ.get(var) else "secrets.toml" if _secret(var) else "not set"
        out.append((var, where))
    return out


def _key_for(provider: str) -> str | None:
    """The key of ``provider`` from st.secrets, at launch (the environment is read by the backend itself)."""
    import os

    var = KEY_VARS.get(provider)
    if var is None or os.environ.get(var):
        return None
    return _secret(var)


# ------------------------------------------------------------------------- reviewers


def spec(reviewer: dict) -> str:
    """``provider:model`` (``compatible:model@base_url``) of a reviewer configuration."""
    if reviewer["provider"] == "compatible":
        return f"compatible:{reviewer['model']}@{reviewer['base_url']}"
    return f"{reviewer['provider']}:{reviewer['model']}"


def label(reviewer: dict) -> str:
    return reviewer.get("name") or spec(reviewer)


def _may(action: Action, study: str | None, key: str = "run_error") -> bool:
    """Whether the current actor may do ``action`` in ``study`` (:func:`peercore.app.access.require`).

    A refusal is kept in session state under ``key`` for the page to show.
    """
    try:
        rules.require(data.store(), access.current_actor(), action, study)
    except AccessDenied as exc:
        st.session_state[key] = f"Not allowed: {exc}"
        return False
    return True


def _may_configure() -> bool:
    """Whether the current actor may configure reviewers in the open study (a refusal in ``rv_error``)."""
    return _may(Action.CONFIGURE_REVIEWERS, st.session_state.get(state.STUDY), key="rv_error")


def load_reviewers(study: str) -> list[dict]:
    """The reviewers configured for ``study``: the study's kept list, read once per session and
    study (a new session, or another study opened), then the session's copy, which every
    change writes back (:func:`_keep`). Reads only."""
    if st.session_state.get(LOADED_FOR) != study:
        st.session_state[state.REVIEWERS] = usable_reviewers(data.store().studies.settings(study)["reviewers"])
        st.session_state[LOADED_FOR] = study
        st.session_state[EDITING] = None
    return st.session_state[state.REVIEWERS]


def usable_reviewers(stored: list) -> list[dict]:
    """The stored reviewer configurations the page can use: each an object naming a known provider
    (:data:`PROVIDERS`) and a model, with the settings it leaves out at their defaults
    (:data:`LOCAL_PRESET`'s keys); anything else (written by another tool) is left out."""
    defaults = {key: "" for key in LOCAL_PRESET} | {"temperature": 0.0}
    return [defaults | reviewer for reviewer in stored
            if isinstance(reviewer, dict) and reviewer.get("provider") in PROVIDERS
            and isinstance(reviewer.get("model"), str) and reviewer["model"]]


def _keep(reviewers: list[dict]) -> bool:
    """Write ``reviewers`` as the open study's list (:func:`peercore.app.access.configure_reviewers`)
    and make the stored list the session's; False (the reason in ``rv_error``) when refused."""
    study = st.session_state.get(state.STUDY)
    try:
        kept = rules.configure_reviewers(data.store(), access.current_actor(), study, reviewers)
    except AccessDenied as exc:
        st.session_state["rv_error"] = f"Not allowed: {exc}"
        return False
    except ValueError as exc:  # the store's message never repeats the value
        st.session_state["rv_error"] = f"Not kept: {exc}"
        return False
    st.session_state[state.REVIEWERS] = usable_reviewers(kept)
    st.session_state[LOADED_FOR] = study
    return True


def typed_key_fields(values: dict[str, str]) -> list[str]:
    """The names of the form's fields (:data:`TEXT_FIELDS`) whose text is shaped like an API key
    (:func:`peercore.redaction.looks_like_key`, the store's own test)."""
    return [TEXT_FIELDS[key] for key, value in values.items()
            if key in TEXT_FIELDS and looks_like_key((value or "").strip())]


def _refuse_typed_key() -> bool:
    """Refuse the form when a field holds what looks like a key: the field is cleared, nothing is kept.

    A key must not reach the session's list nor the study; the message says so without repeating it.
    """
    fields = typed_key_fields({key: st.session_state.get(key) or "" for key in TEXT_FIELDS})
    if not fields:
        return False
    for key, name in TEXT_FIELDS.items():
        if name in fields:
            st.session_state[key] = ""
    st.session_state["rv_error"] = (
        f"Not kept: the {' and '.join(fields)} field{'s' if len(fields) > 1 else ''} held what looks like an API key, "
        "which is never stored; the field was cleared. Put the key in an environment variable (or "
        "`.streamlit/secrets.toml`) and type the variable's name in Key variable: the name is kept with the "
        "reviewer, the key is read at launch.")
    return True


def add_reviewer() -> None:
    """Form callback: validate the reviewer, append it and keep the list in the study (no network, no key
    needed; needs the editor role). A field holding a key is refused (:func:`_refuse_typed_key`)."""
    if not _may_configure():
        return
    st.session_state["rv_error"] = ""
    if _refuse_typed_key():
        return
    key_env = (st.session_state.get(F_KEY_ENV) or "").strip()
    if key_env and not ENV_NAME.match(key_env):
        st.session_state["rv_error"] = ("Cannot add this reviewer: Key variable takes the name of an environment "
                                        "variable (letters, digits, _), e.g. MY_SERVER_KEY.")
        return
    reviewer = {
        "name": (st.session_state.get(F_NAME) or "").strip(),
        "provider": st.session_state.get(F_PROVIDER) or "openai",
        "model": (st.session_state.get(F_MODEL) or "").strip(),
        "base_url": (st.session_state.get(F_URL) or "").strip(),
        "temperature": float(st.session_state.get(F_TEMPERATURE) or 0.0),
        "api_key_env": key_env,
    }
    editing = st.session_state.get(EDITING)
    _append(reviewer, replace=editing if editing is not None and editing < len(st.session_state[state.REVIEWERS])
            else None)


def add_local_preset() -> None:
    if _may_configure():
        _append(dict(LOCAL_PRESET))


def _append(reviewer: dict, *, replace: int | None = None) -> None:
    """Validate ``reviewer`` and keep the list with it appended (or in place of the one at ``replace``)."""
    st.session_state["rv_error"] = ""
    try:
        if not reviewer["model"]:
            raise ValueError("give the model's name")
        _judge(reviewer, with_key=False)
    except Exception as error:  # noqa: BLE001 - shown to the user as is
        st.session_state["rv_error"] = f"Cannot {'add' if replace is None else 'save'} this reviewer: {error}"
        return
    reviewers = list(st.session_state[state.REVIEWERS])
    names = [label(r) for index, r in enumerate(reviewers) if index != replace]
    if label(reviewer) in names:
        st.session_state["rv_error"] = f"A reviewer named {label(reviewer)!r} is already configured; give it another name."
        return
    if replace is None:
        reviewers.append(reviewer)
    else:
        reviewers[replace] = reviewer
    if _keep(reviewers):
        stop_editing()


def edit_reviewer(index: int) -> None:
    """Button callback: load the reviewer at ``index`` into the form, whose submission then replaces it
    (needs the editor role)."""
    if not _may_configure():
        return
    reviewer = st.session_state[state.REVIEWERS][index]
    st.session_state[F_PROVIDER] = reviewer["provider"]
    st.session_state[F_MODEL] = reviewer["model"]
    st.session_state[F_URL] = reviewer.get("base_url") or ""
    st.session_state[F_TEMPERATURE] = float(reviewer.get("temperature") or 0.0)
    st.session_state[F_KEY_ENV] = reviewer.get("api_key_env") or ""
    st.session_state[F_NAME] = reviewer.get("name") or ""
    st.session_state[EDITING] = index
    st.session_state["rv_error"] = ""


def stop_editing() -> None:
    """Button callback (and after a save): the form adds a reviewer again, its text fields empty."""
    st.session_state[EDITING] = None
    for key in TEXT_FIELDS:
        st.session_state[key] = ""


def remove_reviewer(index: int) -> None:
    """Button callback: remove the reviewer at ``index`` from the list and from the study (needs the editor role)."""
    if not _may_configure():
        return
    reviewers = list(st.session_state[state.REVIEWERS])
    del reviewers[index]
    if _keep(reviewers) and st.session_state.get(EDITING) is not None:
        stop_editing()  # the index it edited may be gone


def reviewers_table(reviewers: list[dict]) -> pd.DataFrame:
    return pd.DataFrame({
        "name": [label(r) for r in reviewers], "provider": [PROVIDERS[r["provider"]] for r in reviewers],
        "model": [r["model"] for r in reviewers], "base URL": [r["base_url"] or "" for r in reviewers],
        "key variable": [r.get("api_key_env") or "" for r in reviewers],
        "temperature": [r["temperature"] for r in reviewers],
    })


def _judge(reviewer: dict, *, with_key: bool):

    refuse_credentials(reviewer.get("base_url") or "", what="the base URL")
    key = _key_for(reviewer["provider"]) if with_key else None
    backend = make_backend(spec(reviewer), api_key=key or None, api_key_env=reviewer.get("api_key_env") or None)
    return Judge(backend, name=reviewer.get("name") or None, temperature=reviewer.get("temperature"))


# ------------------------------------------------------------------------------ jobs

DEFAULT_DEBATE_LAYOUT = "ScaleEval (verdict last)"
#: The debate prompt layouts the launch form offers: name -> DebateJob template options.
DEBATE_LAYOUTS = {
    DEFAULT_DEBATE_LAYOUT: {"initial_template": "scaleeval_initial", "discussion_template": "scaleeval_discussion"},
    "Compact (verdict first, small models)": {"initial_template": "scaleeval_compact_initial",
                                              "discussion_template": "scaleeval_compact_discussion"},
}


def build_job(study: str, kind: str, reviewers: list[dict], options: dict, *, with_keys: bool = False):
    """The :mod:`peercore.jobs` job the page describes.

    Raises
    ------
    ValueError
        With the job's own message when an option is out of range.
    """

    judges = [_judge(r, with_key=with_keys) for r in reviewers]
    pairs = {"contestants": options.get("contestants") or None, "strategy": options["strategy"],
             "comparisons": options.get("comparisons") if options["strategy"] != "all" else None,
             "budget": options.get("budget") or None, "seed": int(options.get("seed", 0)),
             "max_questions": options.get("max_questions") or None}
    if kind == "answers":
        return AnswerJob(study, judges)
    if kind == "review":
        method = options.get("method")
        return ReviewJob(study, judges, **pairs, template=options.get("template") or None,
                         criterion=options.get("criterion") or None,
                         method=None if method in (None, "", DEFAULT_METHOD) else method,
                         samples=int(options.get("samples", 1)) if method == "samples" else 1)
    if kind == "discussion":
        return DiscussionJob(study, judges, turns=int(options.get("turns", 4)), both_orders=bool(options.get("both_orders", True)),
                             **pairs)
    if kind == "debate":
        return DebateJob(study, judges, criteria=options.get("criteria") or ["helpfulness"],
                         max_rounds=int(options.get("max_rounds", 3)), name=options.get("panel") or None, **pairs,
                         **DEBATE_LAYOUTS[options.get("layout") or DEFAULT_DEBATE_LAYOUT])
    raise ValueError(f"unknown job kind {kind!r}; choose from {list(JOBS)}")


@st.cache_data(show_spinner=False, max_entries=32)
def estimate(db: str, study: str, rev: int, kind: str, reviewers: tuple, options: tuple) -> dict:
    """Calls, tokens and dollars of the described job (cached per study revision and settings)."""

    job = build_job(study, kind, [dict(r) for r in reviewers], dict(options))
    est = estimate_job(job, data.store())
    return {"estimate": est, "run_id": job.run_id(), "items_and_calls": items_and_calls(kind)}


def frozen(reviewers: list[dict], options: dict) -> tuple[tuple, tuple]:
    """Hashable forms of the reviewer list and the options (cache keys)."""
    def freeze(value):
        return tuple(value) if isinstance(value, list) else value
    return (tuple(tuple(sorted(r.items())) for r in reviewers), tuple(sorted((k, freeze(v)) for k, v in options.items())))


def cost_text(est) -> str:
    """The estimate's cost in words (:meth:`peercore.jobs.estimate.Estimate.cost_text`): "local, free" for local models."""
    return est.cost_text().replace(" .. ", " – ")


def range_text(low: int, high: int) -> str:
    return f"{low:,}" if low == high else f"{low:,} – {high:,}"


# ------------------------------------------------------------------------- live runs


def method_label(method: str) -> str:
    return "default (per backend, as the CLI)" if method == DEFAULT_METHOD else method


def accounting_text(accounting: dict) -> str:
    """Where every paid call of the run ended (:func:`peercore.jobs.base.accounting_line`)."""

    return accounting_line(accounting)


@dataclass
class LiveRun:
    """A run started from this session: the runner's handle plus a log the run's thread appends to."""

    handle: object
    kind: str
    log: collections.deque = field(default_factory=lambda: collections.deque(maxlen=200))
    lock: threading.Lock = field(default_factory=threading.Lock)
    job: object = None
    actor: object = None       # who launched it (peercore.app.access.Actor): the audit log names them
    recorded: bool = False     # whether its end (status, final cost) was recorded (finish_run)
    inspected: bool = False    # whether "Inspect verdicts" was opened on it (once, when it ended)

    def on_progress(self, event) -> None:  # called in the run's thread: no streamlit here

        line = progress_line(event, self.kind)
        with self.lock:
            self.log.append(line)

    def lines(self) -> list[str]:
        with self.lock:
            return list(self.log)


def launch(study: str, kind: str, reviewers: list[dict], options: dict, *, run_id: str | None = None) -> None:
    """Button callback: build the job with keys, start it in the background, keep the handle."""

    st.session_state["run_error"] = ""
    if not _may(Action.LAUNCH_RUN if run_id is None else Action.RESUME_RUN, study):
        return  # refused before any key is read
    try:
        job = build_job(study, kind, reviewers, options, with_keys=True)
        for backend in job.backends():  # fail before any work when a key is missing
            check = getattr(backend, "check_credentials", None)
            if check is not None:
                check()
    except Exception as error:  # noqa: BLE001 - MissingCredentials names the variable to set
        st.session_state["run_error"] = str(error)
        return
    _start(job, kind, run_id=run_id, prices=load_prices())


def _start(job, kind: str, *, run_id: str | None, prices) -> None:
    """Start (or resume) ``job`` through :func:`peercore.app.access.launch_run`: checked, then recorded.

    The record holds the estimated cost (the estimate's upper bound, what the page showed
    before the launch); a refusal is kept in ``run_error`` and nothing starts.
    """
    actor = access.current_actor()
    live = LiveRun(handle=None, kind=kind, job=job, actor=actor)
    try:
        rules.require(data.store(), actor, Action.LAUNCH_RUN if run_id is None else Action.RESUME_RUN, job.study)
        est = estimate_job(job, data.store())
        live.handle = rules.launch_run(data.store(), actor, job, run_id=run_id, on_progress=live.on_progress,
                                       prices=prices, estimated_cost_usd=est.cost_usd_high)
    except AccessDenied as exc:
        st.session_state["run_error"] = f"Not allowed: {exc}"
        return
    st.session_state[state.RUN_HANDLE] = live


def record_end(live: LiveRun, result) -> None:
    """Record once how the run ended, with its final cost (:func:`peercore.app.access.finish_run`)."""
    if live.recorded or result is None or live.actor is None:
        return
    rules.finish_run(data.store(), live.actor, result, study=live.job.study)
    live.recorded = True


def renamed_judges(live: LiveRun) -> dict[str, str]:
    """label -> stored name, for the run's judges stored under another (variant) name."""
    names = live.job.judge_names() if live.job is not None and hasattr(live.job, "judge_names") else {}
    return {label: name for label, name in names.items() if label != name}


def run_judges(live: LiveRun) -> list[str]:
    """The judge names the run's verdicts are stored under."""
    names = live.job.judge_names() if live.job is not None and hasattr(live.job, "judge_names") else {}
    return sorted(set(names.values()))


def cancel() -> None:
    """Button callback: ask the live run to stop (:func:`peercore.app.access.cancel_run`: needs editor)."""
    live = st.session_state.get(state.RUN_HANDLE)
    if live is None:
        return
    try:
        rules.cancel_run(data.store(), access.current_actor(), live.handle, study=live.job.study)
    except AccessDenied as exc:
        st.session_state["run_error"] = f"Not allowed: {exc}"


def clear() -> None:
    st.session_state[state.RUN_HANDLE] = None


def result_of(live: LiveRun):
    """The finished run's result, or the exception it raised (as text)."""
    try:
        return live.handle.wait(timeout=0), None
    except Exception as error:  # noqa: BLE001
        return None, str(error)


RESUMABLE = ("interrupted", "cancelled", "failed", "pending", "running")


def resumable_runs(db: str, study: str, rev: int) -> pd.DataFrame:
    """Runs that did not finish, newest first (a run still marked running with no live handle was interrupted)."""
    frame = data.runs(db, study, rev)
    return frame[frame["status"].isin(RESUMABLE) & (frame["n_done"] < frame["n_items"])].reset_index(drop=True)


#: How a run's status reads in the runs table: words only (an emoji such as U+23F9 or U+23F8 is a
#: missing-glyph box in many fonts), and only a finished run reads as done.
STATUS_WORDS = {"finished": "finished", "cancelled": "cancelled", "failed": "failed",
                "interrupted": "interrupted", "running": "running", "pending": "pending"}


def status_text(status: str) -> str:
    """A run status as the runs table shows it (:data:`STATUS_WORDS`)."""
    return STATUS_WORDS.get(status, status)


CANCELLING_TEXT = "cancelling (waiting for calls in flight)"


def cancelling_text(in_flight: int | None) -> str:
    """What a cancelled run still waits for: :data:`CANCELLING_TEXT` with how many calls are in flight
    (:attr:`peercore.runner.RunHandle.calls_in_flight`; None: not known)."""
    if in_flight is None:
        return CANCELLING_TEXT
    if in_flight == 0:
        return f"{CANCELLING_TEXT}: none left, storing the finished items"
    return f"{CANCELLING_TEXT}: {in_flight:,} call{'' if in_flight == 1 else 's'} left"


def uses_local_model(job) -> bool:
    """Whether one of ``job``'s backends is an offline local model (loaded on its first call)."""
    return job is not None and any(getattr(b, "backend", "") == "local" for b in job.backends())


def phase_text(phase: str, status: str, *, local: bool, in_flight: int | None = None) -> str:
    """What a live run is doing, in words (:attr:`peercore.runner.RunHandle.phase`).

    Parameters
    ----------
    phase : the handle's phase (``starting``, ``first-item``, ``running``, ``cancelling``, ``ended``).
    status : the latest progress event's status (``running`` ...), said when no phase word fits.
    local : whether the job uses a local model, whose loading holds back its first item.
    in_flight : how many calls are in flight (said while cancelling; None: not known).
    """
    if phase == "cancelling":
        return cancelling_text(in_flight)
    if phase == "starting":
        return "preparing the run…"
    if phase == "first-item":
        return ("loading the local model… (the first item starts once it is in memory)" if local
                else "waiting for the first replies…")
    return status


def progress_text(live: LiveRun) -> str:
    """The live run's progress line: items done and what the run is doing (:func:`phase_text`)."""
    handle, progress = live.handle, live.handle.progress
    doing = phase_text(handle.phase, "starting" if progress is None else progress.status,
                       local=uses_local_model(live.job), in_flight=getattr(handle, "calls_in_flight", None))
    return doing if progress is None else f"{progress.done:,} of {progress.total:,} items — {doing}"


def health_lines(table: pd.DataFrame, judges: list[str]) -> list[str]:
    """One line per healthy judge of ``judges`` in ``table`` (:func:`peercore.app.health.health`), and
    one per judge the table lacks; flagged judges are left to :func:`peercore.ui.data.show_flags`."""
    lines = []
    for judge in judges:
        if judge not in table.index:
            lines.append(f"Judge health of {safe.code(judge)}: no verdict of it to check yet.")
            continue
        row = table.loc[judge]
        if row["flagged"]:
            continue
        lines.append(f"Judge health of {safe.code(judge)}: ok, its verdicts carry information — "
                     f"{health_facts(row)}.")
    return lines


def show_health(db: str, study: str, judges: list[str]) -> None:
    """The health verdict of a finished run's judges: a line for each healthy one, a warning for each flagged one."""
    rev = data.revision(study)
    for line in health_lines(data.health(db, study, rev), judges):
        st.info(line, icon=":material/health_and_safety:")
    data.show_flags(db, study, rev, judges)


def inspect_run(live: LiveRun, db: str, study: str) -> None:
    """Once per live run that stored verdicts: open "Inspect verdicts" on it, every judge of it."""
    if live.inspected or live.kind not in INSPECT_KINDS:
        return
    live.inspected = True
    if live.handle.run_id in inspectable_runs(db, study, data.revision(study)):
        st.session_state["rv_inspect_run"] = live.handle.run_id
        st.session_state["rv_inspect_judges"] = []
        st.session_state.pop("rv_inspect_row", None)


def result_message(result, error: str | None) -> tuple[str, str]:
    """(level, text) of a run that ended: ``success`` only when every item finished.

    ``error`` is what the run raised; a cancelled, interrupted or failed run is a
    warning (never a green success), with how far it got.
    """
    if error:
        return "error", f"The run stopped: {error}"
    done = f"{result.done:,} of {result.total:,} items done"
    if result.status == "finished":
        return "success", f"Run finished: {done}."
    if result.status == "cancelled":
        return "warning", f"Run cancelled: {done}; launch it again (or resume it below) to go on."
    reason = f" {result.error}" if result.error else (f" {result.message}" if result.message else "")
    return "warning", f"Run {result.status}: {done}.{reason}"


def runs_display(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "run": frame["id"].str.slice(0, 12), "kind": frame["kind"], "status": frame["status"].map(status_text),
        "done": [f"{d:,} / {n:,}" for d, n in zip(frame["n_done"], frame["n_items"])],
        "paid calls → stored, failed": [runs_accounting(run_id) for run_id in frame["id"]],
        "tokens": (frame["prompt_tokens"] + frame["completion_tokens"]).astype(int),
        "cost (USD)": frame["cost_usd"].round(4), "error": frame["error"].fillna(""),
        "updated (UTC)": frame["updated_at"].str.slice(0, 19).str.replace("T", " "),
    })


def runs_accounting(run_id: str) -> str:
    """``"120 → 118 verdicts, 2 failed"`` for the runs table (:meth:`peercore.store.Store.runs.accounting`)."""
    acc = data.store().runs.accounting(run_id)
    stored = [f"{acc['verdicts']:,} verdicts"] + ([f"{acc['debates']:,} debates"] if acc["debates"] else []) + (
        [f"{acc['answers']:,} answers"] if acc["answers"] else [])
    return f"{acc['calls_paid']:,} → {', '.join(stored)}, {acc['items_failed']:,} failed"


def job_from_run(study: str, run: dict):
    """Rebuild the job of a stored run from its configuration (to resume it), keys from secrets.

    Raises
    ------
    ValueError
        If the run was not made by a peercore job, or the rebuilt job would not continue
        this very run (its configuration no longer maps to the run's id).
    """

    if "job" not in run["config"]:
        raise ValueError("this run was not made by a peercore job")
    keys = {provider: key for provider in KEY_VARS if (key := _key_for(provider))}
    job = job_from_config(run["kind"], study, run["config"]["job"], api_keys=keys)
    if job.run_id() != run["id"]:
        raise ValueError("this run's settings can no longer be rebuilt exactly; launch the job again instead")
    return job, run["kind"]


def resume(study: str, run_id: str) -> None:
    """Button callback: continue a stored run where it stopped (only its pending items)."""

    st.session_state["run_error"] = ""
    if not _may(Action.RESUME_RUN, study):
        return  # refused before any key is read
    try:
        job, kind = job_from_run(study, data.store().runs.get(run_id))
    except Exception as error:  # noqa: BLE001
        st.session_state["run_error"] = f"Cannot resume run {run_id[:12]}: {error}"
        return
    _start(job, kind, run_id=run_id, prices=load_prices())


def run_label(frame: pd.DataFrame):
    labels = {rid: f"{rid[:12]} ({kind}, {status}, {done:,} of {total:,} done)"
              for rid, kind, status, done, total in zip(frame["id"], frame["kind"], frame["status"], frame["n_done"], frame["n_items"])}
    return lambda run_id: labels.get(run_id, run_id)


# ---------------------------------------------------------------------- inspection

ALL_VERDICTS = ""  # the "Verdicts of" option meaning every stored verdict of the study (imports included)
INSPECT_KINDS = ("review", "discussion", "debate")  # runs that store verdicts


def inspectable_runs(db: str, study: str, rev: int) -> list[str]:
    """Run ids that stored verdicts, newest first, then :data:`ALL_VERDICTS`."""
    frame = data.runs(db, study, rev)
    ids = frame.loc[frame["kind"].isin(INSPECT_KINDS), "id"].tolist()
    return [*[rid for rid in ids if data.store().runs.accounting(rid)["verdicts"]], ALL_VERDICTS]


def inspect_label(db: str, study: str, rev: int):
    frame = data.runs(db, study, rev)
    labels = {rid: f"run {rid[:12]} ({kind}, {status_text(status)}, {done:,} of {total:,} items)"
              for rid, kind, status, done, total in zip(frame["id"], frame["kind"], frame["status"], frame["n_done"],
                                                        frame["n_items"])}
    return lambda run_id: labels.get(run_id, "every stored verdict of the study (imports included)")


@st.cache_data(show_spinner=False, max_entries=16)
def run_verdicts(db: str, study: str, rev: int, run_id: str, judges: tuple[str, ...] | None) -> pd.DataFrame:
    """:func:`peercore.run_inspection.run_verdicts`, cached per study revision."""

    return verdicts_of(data.store(), study, run_id=run_id or None, judges=judges)


def verdicts_display(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The compact table (texts open below it): one row per verdict, p_a with 3 decimals."""
    return pd.DataFrame({
        "question": verdicts["question_id"], "judge": verdicts["judge"], "shown first": verdicts["model_a"],
        "shown second": verdicts["model_b"], "verdict": verdicts["verdict"], "p_a": verdicts["p_a"].round(3),
        "valid": verdicts["valid"].astype(bool),
        "orders agree": verdicts["orders_agree"].map({True: "yes", False: "no"}).fillna("—"),
        "rationale": verdicts["rationale"].fillna("").astype(str).str.slice(0, 300),
    })


def verdicts_columns() -> dict:
    """Headers in plain words and their help; widths are fitted to a 1366 px screen by the page
    (:func:`peercore.ui.tables.with_widths`: names told apart, the rationale read below the table)."""
    return {
        "question": st.column_config.TextColumn("question"),
        "judge": st.column_config.TextColumn("judge"),
        "shown first": st.column_config.TextColumn("shown first"),
        "shown second": st.column_config.TextColumn("shown second"),
        "verdict": st.column_config.TextColumn("verdict"),
        "p_a": st.column_config.NumberColumn("P(first better)", format="%.3f",
                                             help="Probability that the answer shown first is better"),
        "valid": st.column_config.CheckboxColumn("valid", help="False: the reply held no readable verdict"),
        "orders agree": st.column_config.TextColumn("orders agree",
                                                    help="The same judge on the same pair in the other order: same "
                                                         "winner? — = not judged in both orders"),
        "rationale": st.column_config.TextColumn("rationale"),
    }


def verdict_label(verdicts: pd.DataFrame):
    labels = {k: f"{q} · {a} vs {b} · {j} → {v}" for k, q, a, b, j, v in zip(
        verdicts.index, verdicts["question_id"], verdicts["model_a"], verdicts["model_b"], verdicts["judge"],
        verdicts["verdict"])}
    return lambda k: labels.get(k, str(k))


def verdict_counts(verdicts: pd.DataFrame) -> dict[str, int]:

    return verdict_summary(verdicts)


def filter_verdicts(verdicts: pd.DataFrame, *, invalid_only: bool, disagreeing_only: bool) -> pd.DataFrame:

    return keep(verdicts, invalid_only=invalid_only, disagreeing_only=disagreeing_only)




def judges_of(verdicts: pd.DataFrame) -> list[str]:
    return sorted(verdicts["judge"].unique().tolist())


# ----------------------------------------------------------------- prompts (cached)


@st.cache_data(show_spinner=False)
def review_templates() -> list[str]:
    """Names of the bundled review templates (peercore.prompts)."""
    return [name for name in list_templates() if load_template(name).kind in ("review", "generative", "classifier")]


@st.cache_data(show_spinner=False)
def review_methods() -> list[str]:
    """How a review's verdict can be read: each backend's default first (as the CLI), then peercore.reviewers.METHODS."""
    return [DEFAULT_METHOD, *METHODS]


@st.cache_data(show_spinner=False)
def rubrics() -> list[str]:
    return list_rubrics()
