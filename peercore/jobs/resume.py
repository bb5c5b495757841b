"""Rebuild a job from a stored run, to resume it (e.g. a run the dashboard lists as interrupted).

A run's configuration (``Store.runs.get(run_id)["config"]["job"]``) names every judge by
backend, model, base URL, judge name, temperature and seed, and every option of the job, so
the job can be rebuilt exactly; credentials come from the environment as usual.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from peercore.jobs.base import Judge
from peercore.jobs.specs import make_backend
from peercore.runner import Job
from peercore.jobs.answers import AnswerJob
from peercore.jobs.discussion import DebateJob, DiscussionJob
from peercore.jobs.review import ReviewJob

if TYPE_CHECKING:  # pragma: no cover
    from peercore.store import Store

__all__ = ["job_from_config", "resume_job"]

_PAIRS = ("contestants", "questions", "strategy", "comparisons", "budget", "seed", "max_questions")


def _judge(entry: dict, *, timeout: float | None, api_keys: Mapping[str, str]) -> Judge:
    spec = f"{entry['backend']}:{entry['model']}"
    if entry.get("base_url") and entry["backend"] in ("openai-compatible", "compatible"):
        spec += f"@{entry['base_url']}"
    backend = make_backend(spec, timeout=timeout, api_key=api_keys.get(entry["backend"]),
                           api_key_env=entry.get("api_key_env"))
    if entry.get("base_url") and entry["backend"] in ("openai", "anthropic"):
        backend.base_url = entry["base_url"]
    name = entry.get("name")
    return Judge(backend, name=None if name == backend.name else name, temperature=entry.get("temperature"),
                 seed=entry.get("seed"))


def job_from_config(kind: str, study: str, config: dict, *, timeout: float | None = None,
                    api_keys: Mapping[str, str] | None = None) -> Job:
    """The job of ``kind`` on ``study`` described by ``config`` (a run's ``config["job"]``).

    ``api_keys`` maps a backend (``"openai"``, ``"anthropic"``) to the key its judges use
    instead of the environment variable (the dashboard passes Streamlit secrets).

    Raises
    ------
    ValueError
        If ``kind`` is not one of answers, review, discussion, debate.
    """

    pairs = {k: config.get(k) for k in _PAIRS if k in config}

    def judges(entries: list[dict]) -> list[Judge]:
        return [_judge(e, timeout=timeout, api_keys=api_keys or {}) for e in entries]

    if kind == "answers":
        return AnswerJob(study, judges(config["contestants"]),
                         questions=config.get("questions"), system_prompt=config.get("system_prompt"),
                         temperature=config["temperature"], max_tokens=config["max_output"])
    if kind == "review":
        return ReviewJob(study, judges(config["reviewers"]), **pairs,
                         method=config["method"], template=config.get("template"), criterion=config.get("criterion"),
                         samples=config["samples"], temperature=config["temperature"], max_tokens=config["max_output"])
    if kind == "discussion":
        return DiscussionJob(study, judges(config["reviewers"]), turns=config["turns"],
                             both_orders=config["both_orders"], **pairs, temperature=config["temperature"],
                             max_tokens=config["max_output"],
                             review_template=config.get("review_template", "prd_review"))
    if kind == "debate":
        return DebateJob(study, judges(config["agents"]), criteria=config["criteria"],
                         max_rounds=config["max_rounds"], name=config["name"], **pairs,
                         temperature=config["temperature"], max_tokens=config["max_output"],
                         **{k: config[k] for k in ("initial_template", "discussion_template") if k in config})
    raise ValueError(f"kind must be one of ('answers', 'review', 'discussion', 'debate'), got {kind!r}")


def resume_job(store: "Store", run_id: str, *, timeout: float | None = None) -> Job:
    """The job of a stored run, ready for ``start_run(job, store, run_id=run_id)``.

    Raises
    ------
    StoreError
        If there is no such run.
    ValueError
        If the run was made by something other than a peercore job.
    """
    run = store.runs.get(run_id)
    if "job" not in run["config"]:
        raise ValueError(f"run {run_id!r} was not made by a peercore job (its config has no 'job')")
    return job_from_config(run["kind"], run["study"], run["config"]["job"], timeout=timeout)

