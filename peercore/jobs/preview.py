"""The exact prompts a job would send, before it sends anything (``--show-prompts N``).

A job's calls are planned per item (:meth:`peercore.runner.Job.plan`); the first calls
of an item are fixed by the study's texts (a review, the two initial reviews of a PRD
discussion, every agent's initial verdict in a ScaleEval debate), the later ones carry
the replies before them (discussion turns, debate rounds) and cannot be known before the
run. :func:`job_prompts` returns the fixed ones, in the job's item order, as the chat
messages the backend receives (system, user, and an assistant prefill where the
template has one), with the request's settings. Nothing is called and nothing stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from peercore.jobs.base import describe_item
from peercore.runner import Job

if TYPE_CHECKING:  # pragma: no cover
    from peercore.store import Store

__all__ = ["job_prompts", "prompts_text", "FIXED_CALLS"]

#: How many of an item's planned calls are fixed before the run, per job kind (None: all).
#: A discussion's first two calls are the reviews; its turns quote the replies. A debate's
#: later rounds are the planned calls marked optional.
FIXED_CALLS = {"discussion": 2}


def job_prompts(job: Job, store: "Store", n: int) -> list[dict]:
    """The first ``n`` prompts of ``job`` that are fixed before the run.

    Parameters
    ----------
    job : any :class:`peercore.runner.Job` (review, discussion, debate, answers).
    store : where its inputs are (:meth:`~peercore.runner.Job.prepare` reads them).
    n : how many prompts (>= 1).

    Returns
    -------
    list of dict
        ``item`` (the item in words), ``judge`` (``backend:model``), ``messages``
        (``[{"role", "content"}, ...]`` exactly as sent; a prefill is the last,
        ``assistant`` message), ``temperature``, ``max_tokens``, and ``later_calls``:
        the item's calls that depend on earlier replies and are not shown (0 for a
        review).

    Raises
    ------
    ValueError
        If ``n`` is not a whole number >= 1.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a whole number >= 1, got {n!r}")
    out: list[dict] = []
    for item in job.prepare(store):
        calls = job.plan(item)
        fixed = [call for call in calls[:FIXED_CALLS.get(job.kind, len(calls))] if not call.optional]
        for call in fixed:
            request = call.request
            messages = [dict(m) for m in request.messages]
            if request.prefill:
                messages.append({"role": "assistant", "content": request.prefill})
            out.append({"item": describe_item(item, job.kind), "judge": f"{call.backend.backend}:{call.backend.model}",
                        "messages": messages, "temperature": request.temperature, "max_tokens": request.max_tokens,
                        "later_calls": len(calls) - len(fixed)})
            if len(out) == n:
                return out
    return out


def prompts_text(prompts: list[dict]) -> str:
    """The prompts as plain text: a header line per prompt, then each message under its role."""
    blocks = []
    for k, prompt in enumerate(prompts, 1):
        later = f"; {prompt['later_calls']} later call(s) of this item quote earlier replies and are not shown" \
            if prompt["later_calls"] else ""
        lines = [f"=== prompt {k} of {len(prompts)}: {prompt['item']} -> {prompt['judge']} "
                 f"(temperature {prompt['temperature']}, max_tokens {prompt['max_tokens']}{later})"]
        for message in prompt["messages"]:
            lines += [f"--- {message['role']}", message["content"]]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
