"""LLM jobs over a study: answers, peer review, PRD discussion, ScaleEval debate; estimates and prices.

Every job is run by :mod:`peercore.runner` (cached, retried, rate-limited, resumable).

========================  ==========================================================
:class:`AnswerJob`        each contestant answers each question (PRD step 1)
:class:`ReviewJob`        judges compare ordered pairs of answers (all, or a subset
                          chosen by a selection strategy under a call budget)
:class:`DiscussionJob`    PRD two-reviewer discussions, both leader orders
:class:`DebateJob`        ScaleEval m-agent debates; unresolved ones are queued for
                          human adjudication
:func:`estimate`          calls, tokens and dollars before a run (dry run)
:func:`make_backend`      a backend from a spec such as ``openai:gpt-4o``
:func:`resume_job`        the job of a stored run, to resume it
========================  ==========================================================

Names are imported lazily so that ``import peercore.jobs`` stays cheap.
"""

from __future__ import annotations

import importlib

__all__ = [
    "AnswerJob",
    "ReviewJob",
    "DiscussionJob",
    "DebateJob",
    "Judge",
    "Estimate",
    "estimate",
    "PriceTable",
    "load_prices",
    "make_backend",
    "parse_judge_spec",
    "select_pairs",
    "STRATEGIES",
    "resume_job",
    "job_from_config",
]

_WHERE = {
    "AnswerJob": "peercore.jobs.answers",
    "ReviewJob": "peercore.jobs.review",
    "select_pairs": "peercore.jobs.review",
    "STRATEGIES": "peercore.jobs.review",
    "DiscussionJob": "peercore.jobs.discussion",
    "DebateJob": "peercore.jobs.discussion",
    "Judge": "peercore.jobs.base",
    "Estimate": "peercore.jobs.estimate",
    "estimate": "peercore.jobs.estimate",
    "PriceTable": "peercore.jobs.pricing",
    "load_prices": "peercore.jobs.pricing",
    "make_backend": "peercore.jobs.specs",
    "parse_judge_spec": "peercore.jobs.specs",
    "resume_job": "peercore.jobs.resume",
    "job_from_config": "peercore.jobs.resume",
}


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'peercore.jobs' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
