"""An in-process fake Backend for runner and job tests (no HTTP)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable

import pandas as pd

from peercore.store import Store
from peercore.runner import ItemOutcome, Job, PlannedCall
from peercore.reviewers.base import Backend, BackendError, Capabilities, ChatRequest, Completion, RetryableError


def digest(request: ChatRequest) -> str:
    return hashlib.sha256(json.dumps(request.to_json(), sort_keys=True).encode()).hexdigest()


def verdict_reply(request: ChatRequest) -> str:
    """Deterministic review: 'Verdict: Answer 1' or '2' from the request hash."""
    digit = "1" if int(digest(request)[:8], 16) % 2 == 0 else "2"
    return f"Reasoning {digest(request)[:6]}.\nVerdict: Answer {digit}"


class FakeBackend(Backend):
    """Counts calls; ``faults`` is a list of exceptions raised by the first calls, in order.

    ``reply(request) -> str | Completion``; default :func:`verdict_reply`.
    """

    def __init__(self, model: str = "judge", *, backend: str = "fake", reply: Callable | None = None,
                 latency_s: float = 0.0, faults=(), fault_every: int | None = None,
                 prompt_tokens: int = 10, completion_tokens: int = 5, capabilities: Capabilities | None = None) -> None:
        self.backend = backend
        if capabilities is not None:
            self.capabilities = capabilities
        self.model = model
        self.reply = reply or verdict_reply
        self.latency_s = latency_s
        self.faults = list(faults)
        self.fault_every = fault_every
        self.requests: list[ChatRequest] = []
        self.failures = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.closed = 0

    async def complete(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency_s:
                await asyncio.sleep(self.latency_s)
            if self.faults:
                fault = self.faults.pop(0)
                if fault is not None:
                    self.failures += 1
                    raise fault
            if self.fault_every and len(self.requests) % self.fault_every == 0:
                self.failures += 1
                raise RetryableError("fake 500", status=500)
            out = self.reply(request)
            if isinstance(out, Completion):
                return out
            return Completion(text=out, prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens)
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        self.closed += 1


def make_study(store: Store, name: str = "demo", *, questions: int = 3, models=("m1", "m2", "m3"),
               answers: bool = True) -> str:
    store.studies.create(name)
    store.questions.add(name, pd.DataFrame({
        "question_id": [f"q{i}" for i in range(questions)],
        "text": [f"Question number {i}?" for i in range(questions)],
        "category": ["cat"] * questions,
    }))
    if answers:
        store.questions.add_answers(name, pd.DataFrame([
            {"question_id": f"q{i}", "model": m, "answer": f"{m} answers question {i}."}
            for i in range(questions) for m in models
        ]))
    return name




class EchoJob(Job):
    """Items "i0".."i{n-1}": one call each (prompt = the item, or ``prompts[item]``), answer stored as model "echo".

    ``fail_write`` holds items whose write raises once (a crash between the call and the commit).
    """

    kind = "echo"

    def __init__(self, study: str, backend: Backend, n: int = 10, *, prompts: dict | None = None,
                 fail_write=(), invalid=()) -> None:
        self.study = study
        self.backend = backend
        self.n = n
        self.prompts = prompts or {}
        self.fail_write = set(fail_write)
        self.invalid = set(invalid)

    def config(self) -> dict:
        return {"n": self.n, "backend": self.backend.name, "prompts": self.prompts}

    def backends(self):
        return [self.backend]

    def prepare(self, store):
        return [f"i{k}" for k in range(self.n)]

    def request(self, item: str) -> ChatRequest:
        return ChatRequest(messages=({"role": "user", "content": self.prompts.get(item, item)},), max_tokens=8)

    def plan(self, item):
        return [PlannedCall(self.backend, self.request(item), typical_output_tokens=4)]

    async def run_item(self, item, ctx):
        completion = await ctx.complete(self.backend, self.request(item))

        def write(store, run_id):
            store.questions.add_answers(self.study, pd.DataFrame({"question_id": [item], "model": ["echo"],
                                                                  "answer": [completion.text]}), run_id=run_id)
            if item in self.fail_write:
                self.fail_write.discard(item)
                raise RuntimeError(f"simulated crash while committing {item}")

        return ItemOutcome(write, status="invalid" if item in self.invalid else "done")


__all__ = ["FakeBackend", "verdict_reply", "digest", "make_study", "EchoJob", "BackendError", "RetryableError"]
