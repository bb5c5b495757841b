"""Judging runs through the providers' batch APIs: OpenAI's Batch API and Anthropic's Message Batches.

A batch run (``peercore review ... --batch``) pays for the same calls a live run would
make, at the providers' batch rate (half the list price, :meth:`PriceTable.at_batch_rate`),
and stores the same verdicts: the calls go to the same call cache
(:meth:`peercore.store.Store.runs.store_call`, keyed as a live call), then the ordinary runner
judges every item from that cache (:class:`peercore.runner.Runner` with ``offline``: it
makes no call), so a batch run and a live run of the same items store the same rows
through the same path.

How a run goes (:func:`run_batch_sync`):

1. **Collect.** Each pending item is run against the cache: the calls it needs that are
   not there are collected (a debate's later rounds and a discussion's later turns are
   only known once the earlier ones are in the cache, so collecting repeats: one step
   per round).
2. **Plan** (one transaction): one batch per judge and step (a batch holds one model) of at most
   ``max_requests`` lines, recorded in the store (``batches``, ``batch_requests``,
   migration 7) under a deterministic token *before* anything is sent: the custom_id
   of each line, the call's cache key and the item that pays for it.
3. **Upload** (OpenAI): the JSONL file is named ``peercore-<token>.jsonl``; a resumed run
   (or an upload whose reply was lost) first looks for that file (``files.list``) and
   uploads only when it is missing.
4. **Create**: the intent is recorded (status ``creating`` and the time), then the batch
   is created (OpenAI: with ``metadata.peercore_token``). A run killed between the
   create and saving the id finds its batch on resume before creating one: OpenAI by
   the token in the metadata (or the input file), Anthropic (no metadata) by the first
   batch created after the intent with the same number of requests that no other batch
   of the run holds; the custom_ids of its results (``<token>-<n>``) are checked when
   they are read. A create (or upload) whose reply is lost is looked for the same way
   before it is sent again.
5. **Poll**: every batch of a step is submitted first, then ``retrieve`` reads each one
   every ``poll_s`` seconds until all have ended (status saved), so they run side by side.
6. **Fetch**: the output (and error) file, or Anthropic's results, in chunks of
   :data:`RESULT_CHUNK` lines; each chunk's paid responses go to the call cache together
   with the lines' outcomes, in one transaction. A resumed fetch reads the results again
   (free) and keeps what is stored. Each line is read on its own: a line that is not
   JSON, or whose reply cannot be read (an OpenAI body without ``choices``, an Anthropic
   message without ``content``), fails its own request with the line named (its
   custom_id read from the broken text when it can be); a line with a custom_id the
   batch never sent is reported and ignored; every other line is stored. Only a batch
   none of whose lines is this run's is refused (it is someone else's batch).
7. **Judge** every item from the cache with the runner. A line without a result
   (errored, expired, cancelled, missing) fails its item with the reason; running the
   same command again resubmits those calls in a new batch. Lines answered are never
   sent again, and a live attempt of a run whose batches are in flight is refused (it
   would pay twice).

Every step that could be lost is written down before it is taken, so ``kill -9`` at
any point resumes without a batch created twice and without a result lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from peercore.errors import PeercoreError
from peercore.reviewers._sdk import catchable, import_sdk, map_error, response_json, should_retry
from peercore.reviewers.base import Backend, BackendError, ChatRequest, Completion
from peercore.runner import RetryPolicy, RunResult, Runner, RunnerError, _refuse_other_job, _shallow
from peercore.store import scrub_secrets
from peercore.reviewers.openai_backend import _to_completion
from peercore.jobs.pricing import load_prices

if TYPE_CHECKING:  # pragma: no cover
    from peercore.jobs.pricing import PriceTable
    from peercore.runner import Job, ProgressEvent
    from peercore.store import Store

__all__ = ["BATCH_BACKENDS", "BatchError", "RESULT_CHUNK", "check_batchable", "run_batch", "run_batch_sync"]

log = logging.getLogger(__name__)

BATCH_BACKENDS = ("openai", "anthropic")
# Lines of results stored per transaction.
RESULT_CHUNK = 100
# Most lines per batch (OpenAI allows 50,000 per file, Anthropic 100,000 per batch).
MAX_REQUESTS = {"openai": 50_000, "anthropic": 100_000}
# Most bytes of request lines per batch (OpenAI: a 200 MB input file; Anthropic: 256 MB per
# batch), with a margin for the JSON the SDK adds around each line.
MAX_BYTES = {"openai": 180_000_000, "anthropic": 230_000_000}
# Test hook: SIGKILL this process at a stage: "uploaded" (after the upload, before its
# id is saved), "creating" (the intent saved, the create not sent), "created" (after the
# create, before the batch id is saved), "polled"
# (after a poll saw the batch still running), "fetching" (after the first chunk of
# results was stored); "STAGE:N" kills the N-th time the stage is reached (a later round).
ENV_KILL = "PEERBOARD_TEST_BATCH_KILL"
# How far before the recorded intent a batch found on resume may have been created (clock skew).
_INTENT_SLACK_S = 300.0
_ENDED_OPENAI = ("completed", "failed", "expired", "cancelled")


class BatchError(PeercoreError):
    """A batch could not be submitted or read (after retries); the run can be resumed.

    ``retryable`` is True for transient failures (429, 5xx, timeouts, dropped connections:
    :func:`~peercore.reviewers._sdk.should_retry` of the provider's error, which reads
    this attribute back); ``retry_after`` is the server's ``Retry-After`` in seconds, if any.
    """

    def __init__(self, message: str, *, retryable: bool = False, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


def check_batchable(job: "Job") -> None:
    """Refuse a batch run whose judges are not on a batch API, before anything happens.

    Raises
    ------
    ValueError
        Naming each judge whose backend has no batch API (local models, OpenAI-compatible
        servers): only ``openai:`` and ``anthropic:`` judges can run with ``--batch``.
    """
    others = [b.name for b in job.backends() if b.backend not in BATCH_BACKENDS]
    if others:
        raise ValueError(f"--batch is for the OpenAI and Anthropic batch APIs; judge(s) {others} have none (a local "
                         "model or an OpenAI-compatible server answers live: run without --batch)")


_REACHED: dict[str, int] = {}


def _checkpoint(stage: str) -> None:
    wanted, _, nth = (os.environ.get(ENV_KILL) or "").partition(":")
    if wanted != stage:
        return
    _REACHED[stage] = _REACHED.get(stage, 0) + 1
    if _REACHED[stage] == int(nth or 1):
        print(f"peercore: test hook: killing this process at batch stage {stage!r}", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _epoch(value) -> float:
    """Seconds since the epoch of an int timestamp, a datetime or an ISO string."""
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, datetime):
        return value.timestamp()
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


# ------------------------------------------------------------------------------ results

# A custom_id in a line too broken to decode (ours are ``<token>-<n>``: no escapes).
_CUSTOM_ID = re.compile(r'"custom_id"\s*:\s*"([^"\\]*)"')
# Exceptions a reply's reading can raise on a malformed body: they fail that line only.
_UNREADABLE_REPLY = (BackendError, ValueError, TypeError, AttributeError, KeyError)


class _BadLine(ValueError):
    """A result line that decodes but does not say what a result line says."""


@dataclasses.dataclass(frozen=True)
class _Result:
    """One line of a batch's results.

    Attributes
    ----------
    where : the line, for messages (``line 6 of the output file of batch batch_abc``).
    custom_id : the request it answers, or None when the line is too broken to tell.
    body : the reply (a decoded JSON object) of a ``succeeded`` line.
    outcome : ``succeeded``, ``errored``, ``expired``, ``canceled``, or ``unreadable``
        (the line itself is malformed; ``error`` says how).
    error : why a line has no usable reply.
    """

    where: str
    custom_id: str | None
    body: dict | None
    outcome: str
    error: str | None = None


def _result(text: str, where: str, read: Callable[[dict], tuple[dict | None, str, str | None]]) -> _Result:
    """A result line decoded, then read by the provider's ``read`` into ``(body, outcome, error)``.

    Never raises: a line that is not JSON, or not a result line, is ``unreadable``.
    """
    try:
        line = json.loads(text)
    except ValueError as exc:
        found = _CUSTOM_ID.search(text)
        reason = f"{where} is not JSON ({getattr(exc, 'msg', exc)} at column {getattr(exc, 'colno', '?')})"
        return _Result(where, found.group(1) if found else None, None, "unreadable", reason)
    if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
        return _Result(where, None, None, "unreadable", f"{where} has no custom_id")
    try:
        body, outcome, error = read(line)
    except _BadLine as exc:
        return _Result(where, line["custom_id"], None, "unreadable", f"{where}: {exc}")
    return _Result(where, line["custom_id"], body, outcome, error)


def _openai_line(line: dict) -> tuple[dict | None, str, str | None]:
    """``(reply body, outcome, error)`` of a line of an OpenAI batch's output or error file."""
    response, error = line.get("response") or {}, line.get("error")
    if not isinstance(response, dict) or not isinstance(error, (dict, type(None))):
        raise _BadLine("its response or error is not a JSON object")
    if response.get("status_code") == 200:
        if not isinstance(response.get("body"), dict):
            raise _BadLine("its response (status 200) has no body object")
        return response["body"], "succeeded", None
    if error and str(error.get("code", "")).endswith("expired"):
        return None, "expired", str(error.get("message") or error.get("code"))
    body = response.get("body") or {}
    message = (body.get("error") or {}).get("message") if isinstance(body, dict) else None
    return None, "errored", str(message or (error or {}).get("message") or f"HTTP {response.get('status_code')}")


def _anthropic_line(line: dict) -> tuple[dict | None, str, str | None]:
    """``(message, outcome, error)`` of a line of an Anthropic message batch's results."""
    result = line.get("result")
    kind = result.get("type") if isinstance(result, dict) else None
    if kind == "succeeded":
        if not isinstance(result.get("message"), dict):
            raise _BadLine("its succeeded result has no message object")
        return result["message"], "succeeded", None
    if kind == "errored":
        error = result.get("error")
        inner = error.get("error") if isinstance(error, dict) else None
        return None, "errored", str((inner.get("message") if isinstance(inner, dict) else None) or kind)
    if kind in ("expired", "canceled"):
        return None, kind, kind
    raise _BadLine(f"its result type {kind!r} is none of succeeded, errored, expired, canceled")


# ----------------------------------------------------------------------------- providers


class _Provider:
    """One judge's batch endpoints through its SDK client (the live backend's own client and key)."""

    provider = ""

    def __init__(self, backend: Backend, retry: RetryPolicy | None = None) -> None:
        self.backend = backend
        self.retry = retry or RetryPolicy()
        self.sdk = import_sdk(self.provider, self.provider)

    @property
    def client(self):
        return self.backend._clients.get(self.backend._make_client)

    async def call(self, what: str, make, *, idempotent: bool = True):
        """``await make()`` with the backend's error mapping; failures raised as :class:`BatchError`.

        An idempotent request (a read) is retried by the run's :class:`RetryPolicy` when
        :func:`should_retry` says so. A create or an upload is made once here: one whose
        reply was lost may have been carried out, so the driver looks for what it made
        before trying again (:meth:`_Driver._once`, the same policy).
        """
        try:
            if not idempotent:
                return await self._mapped(make)
            async for attempt in self.retry.retrying():
                with attempt:
                    return await self._mapped(make)
        except BackendError as error:
            raise BatchError(f"{what}: {error}", retryable=should_retry(error),
                             retry_after=getattr(error, "retry_after", None)) from None

    async def _mapped(self, make):
        try:
            return await make()
        except catchable(self.sdk) as exc:
            secret = self.backend._secret.reveal() if getattr(self.backend, "_secret", None) else None
            raise map_error(exc, self.sdk, provider=self.backend.name, env_var=self.backend.env_var,
                            secret=secret) from None

    def completion(self, body: dict) -> Completion:
        raise NotImplementedError


class _OpenAIBatches(_Provider):
    provider = "openai"

    def line(self, custom_id: str, request: ChatRequest) -> dict:
        return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
                "body": self.backend._payload(request)}

    async def find_file(self, filename: str) -> str | None:
        async def scan():
            async for file in self.client.files.list(purpose="batch"):
                if file.filename == filename:
                    return file.id
            return None
        return await self.call("listing uploaded files", scan)

    async def upload(self, filename: str, data: bytes) -> str:
        file = await self.call("uploading the batch file", lambda: self.client.files.create(
            file=(filename, data, "application/jsonl"), purpose="batch"), idempotent=False)
        return file.id

    async def find_batch(self, row: dict, claimed: set[str]) -> str | None:
        since = _epoch(row["intent_at"]) - _INTENT_SLACK_S

        async def scan():
            async for batch in self.client.batches.list(limit=100):
                if (batch.metadata or {}).get("peercore_token") == row["token"] or (
                        row["input_file_id"] and batch.input_file_id == row["input_file_id"]):
                    return batch.id
                if batch.created_at < since:  # newest first: older ones cannot be ours
                    return None
            return None
        return await self.call("listing batches", scan)

    async def create(self, row: dict, lines: list[dict]) -> str:
        batch = await self.call("creating the batch", lambda: self.client.batches.create(
            input_file_id=row["input_file_id"], endpoint="/v1/chat/completions", completion_window="24h",
            metadata={"peercore_token": row["token"], "peercore_run": row["run_id"][:500]}), idempotent=False)
        return batch.id

    async def retrieve(self, batch_id: str) -> tuple[str, bool, dict]:
        batch = await self.call("reading the batch", lambda: self.client.batches.retrieve(batch_id))
        return batch.status, batch.status in _ENDED_OPENAI, {"output_file_id": batch.output_file_id,
                                                            "error_file_id": batch.error_file_id}

    async def results(self, row: dict) -> AsyncIterator[_Result]:
        """Every line of the output and error files, each read on its own (:func:`_result`)."""
        for file_id, name in ((row["output_file_id"], "output file"), (row["error_file_id"], "error file")):
            if not file_id:
                continue
            content = await self.call("downloading batch results", lambda f=file_id: self.client.files.content(f))
            for number, text in enumerate(content.text.splitlines(), 1):
                if text.strip():
                    yield _result(text, f"line {number} of the {name} of batch {row['batch_id']}", _openai_line)

    def completion(self, body: dict) -> Completion:
        """The reply body read as the live backend reads a reply (the SDK's lenient construction).

        Raises
        ------
        BackendError
            If the body holds no ``choices[0].message``.
        """
        from openai.types.chat import ChatCompletion


        return _to_completion(ChatCompletion.construct(**body), provider=self.backend.name)


class _AnthropicBatches(_Provider):
    provider = "anthropic"

    def line(self, custom_id: str, request: ChatRequest) -> dict:
        params = self.backend._payload(request)
        params.update(params.pop("extra_body", {}))
        return {"custom_id": custom_id, "params": params}

    async def find_file(self, filename: str) -> str | None:
        return None

    async def find_batch(self, row: dict, claimed: set[str]) -> str | None:
        since = _epoch(row["intent_at"]) - _INTENT_SLACK_S
        found = []

        async def scan():
            async for batch in self.client.messages.batches.list(limit=100):
                created = _epoch(batch.created_at)
                if created < since:
                    break
                counts = batch.request_counts
                total = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
                if total == row["n_requests"] and batch.id not in claimed:
                    found.append((created, batch.id))
            return None
        await self.call("listing message batches", scan)
        return min(found)[1] if found else None

    async def create(self, row: dict, lines: list[dict]) -> str:
        batch = await self.call("creating the message batch",
                                lambda: self.client.messages.batches.create(requests=lines), idempotent=False)
        return batch.id

    async def retrieve(self, batch_id: str) -> tuple[str, bool, dict]:
        batch = await self.call("reading the message batch", lambda: self.client.messages.batches.retrieve(batch_id))
        return batch.processing_status, batch.processing_status == "ended", {}

    async def results(self, row: dict) -> AsyncIterator[_Result]:
        """Every line of the batch's results, each read on its own (:func:`_result`).

        The lines are read from the response the SDK opened (its decoder would stop at
        the first line that is not JSON, and lose every line after it).
        """
        decoder = await self.call("reading batch results",
                                  lambda: self.client.messages.batches.results(row["batch_id"]))
        response = decoder.http_response
        try:
            number = 0
            async for text in response.aiter_lines():
                number += 1
                if text.strip():
                    yield _result(text, f"line {number} of the results of batch {row['batch_id']}", _anthropic_line)
        finally:
            await response.aclose()

    def completion(self, body: dict) -> Completion:
        """The message read as :meth:`AnthropicBackend.complete` reads a live reply.

        Raises
        ------
        BackendError
            If the message has no list of content blocks.
        """
        from anthropic.types import Message

        message = Message.construct(**body)  # the SDK's lenient construction, as for a live reply
        try:
            text = "".join(block.text for block in message.content if getattr(block, "type", None) == "text")
        except (AttributeError, TypeError) as exc:
            raise BackendError(f"{self.backend.name}: response has no text content ({type(exc).__name__})") from None
        usage = getattr(message, "usage", None)
        return Completion(text=text, prompt_tokens=int(getattr(usage, "input_tokens", 0) or 0),
                          completion_tokens=int(getattr(usage, "output_tokens", 0) or 0), top_logprobs=None,
                          finish_reason=getattr(message, "stop_reason", None), raw=response_json(message))


_PROVIDERS = {"openai": _OpenAIBatches, "anthropic": _AnthropicBatches}


# ------------------------------------------------------------------------------ collect


class _Unanswered(Exception):
    """A call the cache does not hold (collected for a batch, or waiting on one)."""


class _Collector:
    """Stands in for :class:`peercore.runner.ItemContext`: answers from the cache, collects the misses."""

    def __init__(self, store: "Store", run_id: str, item: str, needed: dict, waiting: set[str]) -> None:
        self._store, self.run_id, self.item = store, run_id, item
        self._needed, self._waiting = needed, waiting
        self.prompt_tokens = self.completion_tokens = 0
        self.cost_usd = 0.0

    async def complete(self, backend: Backend, request: ChatRequest) -> Completion:
        key = backend.cache_key(request)
        hit = self._store.runs.cached_call(key)
        if hit is not None:
            return Completion.from_json(hit["response"])
        if key not in self._waiting:
            self._needed.setdefault(key, (backend, request, self.item))
        raise _Unanswered(key)


async def _collect(job: "Job", store: "Store", run_id: str, items: Sequence[str], waiting: set[str]) -> dict:
    """cache key -> (backend, request, item) of the calls the pending items need next."""
    needed: dict = {}
    for item in items:
        try:
            await job.run_item(item, _Collector(store, run_id, item, needed, waiting))
        except _Unanswered:
            pass
    return needed


# --------------------------------------------------------------------------------- drive


@dataclasses.dataclass
class _Tally:
    created: int = 0
    results: int = 0
    failed_lines: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0


class _Driver:
    def __init__(self, job: "Job", store: "Store", run_id: str, *, prices: "PriceTable", poll_s: float,
                 max_requests: int | None, say: Callable[[str], None], retry: RetryPolicy) -> None:
        self.job, self.store, self.run_id, self.retry = job, store, run_id, retry
        self.prices, self.poll_s, self.max_requests, self.say = prices, poll_s, max_requests, say
        self.backends = {(b.name, b.base_url): b for b in job.backends()}
        self.providers: dict = {}
        self.failed_now: set[str] = set()  # calls whose batch line failed in this invocation: not resent now
        self.planned_now: set[str] = set()  # batches planned by this invocation: nothing of theirs was sent before
        self.tally = _Tally()

    def _provider(self, row: dict) -> _Provider:
        key = (row["judge"], row["base_url"])
        if key not in self.providers:
            backend = self.backends.get(key)
            if backend is None:
                raise BatchError(f"batch {row['token']} belongs to judge {row['judge']!r}, which this job does not "
                                 "have; resume it with the job that made it")
            self.providers[key] = _PROVIDERS[row["provider"]](backend, self.retry)
        return self.providers[key]

    async def run(self, items: Sequence[str]) -> None:
        wanted = set(items)
        while True:
            rows = [row for row in self.store.runs.batches(self.run_id) if row["status"] != "fetched"]
            for row in rows:  # every batch goes out before any is waited for: they run side by side
                await self._submit(row)
            await self._wait([row for row in rows if row["status"] == "submitted"])
            for row in rows:
                await self._fetch(self._provider(row), row)
            waiting = self.failed_now | {key for key, line in self.store.runs.batched_calls(self.run_id).items()
                                         if line["status"] == "pending"}
            pending = [item for item in self.store.runs.pending_items(self.run_id) if item in wanted]
            needed = await _collect(self.job, self.store, self.run_id, pending, waiting)
            if not needed:
                return
            self._plan(needed)

    def _plan(self, needed: dict) -> None:
        """Record the batches for ``needed`` calls: one per judge, cut at the provider's size limits."""
        groups: dict = {}
        for key, (backend, request, item) in needed.items():
            groups.setdefault((backend.name, backend.base_url), []).append((key, backend, request, item))
        ordinal = len(self.store.runs.batches(self.run_id))
        for (name, base_url), calls in groups.items():
            backend = calls[0][1]
            for chunk in _chunks(calls, self.max_requests or MAX_REQUESTS[backend.backend], MAX_BYTES[backend.backend]):
                blob = json.dumps([self.run_id, name, base_url or "", ordinal, [c[0] for c in chunk]])
                token = "pc" + hashlib.sha256(blob.encode("utf-8")).hexdigest()[:22]
                ordinal += 1
                self.planned_now.add(token)
                self.store.runs.add_batch(token, run_id=self.run_id, provider=backend.backend, judge=name,
                                          base_url=base_url,
                                          requests=[{"custom_id": f"{token}-{n}", "cache_key": key, "item_key": item,
                                                     "request": request.to_json()}
                                                    for n, (key, _, request, item) in enumerate(chunk)])
                self.say(f"batch {token}: {len(chunk)} requests to {name} planned")

    async def _submit(self, row: dict) -> None:
        """Take a batch from planned to submitted (its id saved), whatever step was interrupted."""
        provider = self._provider(row)
        token = row["token"]
        lines = None
        if row["status"] == "planned" and provider.provider == "openai":
            lines = self._lines(provider, token)
            filename = f"peercore-{token}.jsonl"
            file_id = None if token in self.planned_now else await provider.find_file(filename)
            if file_id is None:
                data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode("utf-8")
                file_id = await self._once(lambda: provider.upload(filename, data),
                                           lambda: provider.find_file(filename))
                _checkpoint("uploaded")
            else:
                self.say(f"batch {token}: the file uploaded before the interruption is used ({file_id})")
            self.store.runs.update_batch(token, status="uploaded", input_file_id=file_id)
            row.update(status="uploaded", input_file_id=file_id)
        elif row["status"] == "planned":
            self.store.runs.update_batch(token, status="uploaded")
            row["status"] = "uploaded"
        if row["status"] == "creating":  # interrupted between the create and saving its id
            claimed = {r["batch_id"] for r in self.store.runs.batches(self.run_id) if r["batch_id"]}
            batch_id = await provider.find_batch(row, claimed)
            if batch_id is not None:
                self.say(f"batch {token}: found the batch created before the interruption ({batch_id})")
                self.store.runs.update_batch(token, status="submitted", batch_id=batch_id)
                row.update(status="submitted", batch_id=batch_id)
            else:
                row["status"] = "uploaded"
        if row["status"] == "uploaded":
            lines = lines or self._lines(provider, token)
            intent = _now()
            self.store.runs.update_batch(token, status="creating", intent_at=intent)
            _checkpoint("creating")
            mine = {**row, "intent_at": intent}
            batch_id = await self._once(lambda: provider.create(mine, lines), lambda: provider.find_batch(
                mine, {r["batch_id"] for r in self.store.runs.batches(self.run_id) if r["batch_id"]}))
            self.tally.created += 1
            _checkpoint("created")
            self.store.runs.update_batch(token, status="submitted", batch_id=batch_id)
            row.update(status="submitted", batch_id=batch_id)
            self.say(f"batch {token}: created {batch_id} ({row['n_requests']} requests)")

    async def _once(self, make, find):
        """``make()`` (an upload or a create) without making it twice.

        After a transient failure the request may still have been carried out (the reply
        was lost): after the wait the run's :class:`RetryPolicy` gives it, ``find()`` looks
        for its result first, and only when there is none is the request sent again.
        """
        def looking(retry_state) -> None:
            self.say(f"{retry_state.outcome.exception()}; looking for what it made before trying again")

        async for attempt in self.retry.retrying(before_sleep=looking):
            if attempt.retry_state.attempt_number > 1:
                found = await find()  # outside the attempt: a failed look-up is not a failed request
                if found is not None:
                    return found
            with attempt:
                return await make()

    def _lines(self, provider: _Provider, token: str) -> list[dict]:
        return [provider.line(r["custom_id"], _request(r["request"])) for r in self.store.runs.batch_requests(token)]

    async def _wait(self, rows: list[dict]) -> None:
        """Read the submitted batches every ``poll_s`` seconds until each has ended (status saved)."""
        while rows:
            for row in list(rows):
                status, ended, files = await self._provider(row).retrieve(row["batch_id"])
                if ended:
                    self.store.runs.update_batch(row["token"], status="ended", provider_status=status, **files)
                    row.update(status="ended", provider_status=status, **files)
                    self.say(f"batch {row['token']}: {status}")
                    rows.remove(row)
                elif status != row.get("provider_status"):
                    self.store.runs.update_batch(row["token"], provider_status=status)
                    row["provider_status"] = status
                    self.say(f"batch {row['token']}: {status}")
            if rows:
                _checkpoint("polled")
                await asyncio.sleep(self.poll_s)

    async def _fetch(self, provider: _Provider, row: dict) -> None:
        """Store an ended batch's results (chunks of :data:`RESULT_CHUNK` lines, one transaction each).

        Each line stands alone: a malformed line fails its own request (named by its line),
        a line for a custom_id the batch never sent is reported and ignored, every other
        line is stored. A batch of which no line is this run's is refused before anything
        of it is stored (:class:`BatchError`): it is another batch than the one sent.
        """
        if row["status"] != "ended":
            return
        token = row["token"]
        lines = {r["custom_id"]: r for r in self.store.runs.batch_requests(token)}
        seen: set[str] = set()
        results, calls, strangers = [], [], []
        first = True

        def flush() -> None:
            nonlocal first
            if results:
                self.store.runs.store_batch_results(token, list(results), list(calls))
                results.clear()
                calls.clear()
                if first:
                    first = False
                    _checkpoint("fetching")

        async with contextlib.aclosing(provider.results(row)) as stream:  # closed even when the fetch stops early
            async for result in stream:
                line = lines.get(result.custom_id)
                if line is None:
                    strangers.append(result)
                    continue
                if result.custom_id in seen:
                    continue
                seen.add(result.custom_id)
                outcome, error = result.outcome, result.error
                if outcome == "succeeded":
                    try:
                        # a reply may echo the key: scrubbed as the runner scrubs live replies
                        completion = provider.backend.redact_completion(provider.completion(result.body))
                    except _UNREADABLE_REPLY as exc:  # the failed item's reason names the judge once
                        reason = str(exc).removeprefix(f"{provider.backend.name}: ")
                        outcome, error = "unreadable", f"{result.where}: {reason}"
                if outcome == "unreadable":
                    self.say(f"batch {token}: {error}; its request fails (the same command resubmits it)")
                    outcome = "errored"
                if outcome == "succeeded":
                    request = _request(line["request"])
                    if line["status"] != "succeeded" and self.store.runs.cached_call(line["cache_key"]) is None:
                        calls.append({"cache_key": line["cache_key"], "backend": provider.backend.backend,
                                      "model": provider.backend.model, "request": _shallow(request),
                                      "response": _shallow(completion), "prompt_tokens": completion.prompt_tokens,
                                      "completion_tokens": completion.completion_tokens, "latency_s": None,
                                      "run_id": self.run_id, "item_key": line["item_key"]})
                        self._count(provider.backend, completion)
                    results.append({"custom_id": result.custom_id, "status": "succeeded", "error": None})
                else:
                    results.append({"custom_id": result.custom_id, "status": outcome,
                                    "error": (error or outcome)[:2000]})
                if len(results) >= RESULT_CHUNK:
                    flush()
        foreign = [s for s in strangers if s.custom_id is not None]
        if foreign and not seen:  # lines with custom_ids, none of them ours: another batch than the one sent
            raise BatchError(f"batch {row['batch_id']} returned {len(foreign)} line(s), none of them for a request "
                             f"batch {token} sent (custom_id {foreign[0].custom_id!r} in {foreign[0].where}): it is "
                             "not this run's batch")
        for stranger in strangers:
            self.say(f"batch {token}: " + (f"{stranger.error}, and no custom_id of this batch can be read in it; "
                                           "line ignored" if stranger.custom_id is None else
                                           f"{stranger.where} has custom_id {stranger.custom_id!r}, which this batch "
                                           "never sent; line ignored"))
        unread = sum(s.custom_id is None for s in strangers)
        results.extend({"custom_id": c, "status": "expired",
                        "error": f"no result for this request in batch {row['batch_id']} ({row['provider_status']})"
                                 + (f"; {unread} line(s) of its results could not be read" if unread else "")}
                       for c in lines if c not in seen)
        flush()
        stored = {r["custom_id"]: r["status"] for r in self.store.runs.batch_requests(token)}
        failed = [lines[c]["cache_key"] for c, status in stored.items() if status != "succeeded"]
        self.failed_now.update(failed)
        self.tally.failed_lines += len(failed)
        self.store.runs.update_batch(token, status="fetched", n_succeeded=len(stored) - len(failed),
                                     n_failed=len(failed))
        row["status"] = "fetched"
        ignored = f", {len(strangers)} line(s) ignored" if strangers else ""
        self.say(f"batch {token}: {len(stored) - len(failed)} results stored, {len(failed)} without a result{ignored}")

    def _count(self, backend: Backend, completion: Completion) -> None:
        self.tally.results += 1
        self.tally.prompt_tokens += completion.prompt_tokens
        self.tally.completion_tokens += completion.completion_tokens
        cost = self.prices.cost(backend.backend, backend.model, completion.prompt_tokens, completion.completion_tokens)
        self.tally.cost_usd = None if (cost is None or self.tally.cost_usd is None) else self.tally.cost_usd + cost


def _chunks(calls: list, max_requests: int, max_bytes: int) -> list[list]:
    """``calls`` cut into batches of at most ``max_requests`` lines and about ``max_bytes`` bytes."""
    out, chunk, size = [], [], 0
    for call in calls:
        request = call[2]
        weight = sum(len(str(m.get("content", ""))) for m in request.messages) * 2 + 512  # UTF-8 + JSON, generous
        if chunk and (len(chunk) >= max_requests or size + weight > max_bytes):
            out.append(chunk)
            chunk, size = [], 0
        chunk.append(call)
        size += weight
    if chunk:
        out.append(chunk)
    return out


def _request(data: dict) -> ChatRequest:
    data = dict(data)
    data["messages"] = tuple(dict(m) for m in data["messages"])
    data["stop"] = tuple(data.get("stop") or ())
    return ChatRequest(**data)


# ---------------------------------------------------------------------------- entry points


async def run_batch(job: "Job", store: "Store", *, run_id: str | None = None, prices: "PriceTable | None" = None,
                    poll_s: float = 30.0, max_requests: int | None = None,
                    on_status: Callable[[str], None] | None = None,
                    on_progress: Callable[["ProgressEvent"], None] | None = None, **runner_options) -> RunResult:
    """Run (or resume) ``job`` through the providers' batch APIs (see the module docstring).

    Parameters
    ----------
    job : a review, discussion or debate job whose judges are ``openai:`` / ``anthropic:``.
    store : the store (batches are recorded in it before they are sent).
    run_id : resume this run (default: the job's own id, as a live run).
    prices : the list-price table (default the bundled one); the run is priced with
        :meth:`~peercore.jobs.pricing.PriceTable.at_batch_rate`.
    poll_s : seconds between two reads of a running batch.
    max_requests : most lines per batch (default the provider's limit).
    on_status : called with a line for each step (planned, created, ended, stored).
    on_progress : the runner's progress callback while items are judged from the cache.
    **runner_options : :class:`peercore.runner.Runner` options (concurrency, ...); their
        ``retry`` (:class:`~peercore.runner.RetryPolicy`, default ``RetryPolicy()``) also
        retries the batch requests (reads, and creates or uploads after looking for what
        a lost reply made).

    Returns
    -------
    RunResult
        As a live run's; ``calls`` / tokens / ``cost_usd`` are the batch results stored
        by this invocation (at the batch rate), and ``accounting`` adds ``batches``,
        ``batch_requests``, ``batch_succeeded`` and ``batch_failed``.

    Raises
    ------
    ValueError
        If a judge has no batch API (:func:`check_batchable`), or ``poll_s`` is not > 0.
    """

    check_batchable(job)
    if not (isinstance(poll_s, (int, float)) and poll_s > 0):
        raise ValueError(f"poll_s must be a number of seconds > 0, got {poll_s!r}")
    if max_requests is not None and (not isinstance(max_requests, int) or max_requests < 1):
        raise ValueError(f"max_requests must be an integer >= 1 or None, got {max_requests!r}")
    batch_prices = (prices or load_prices()).at_batch_rate()
    say = on_status or (lambda line: log.info("%s", line))
    started = time.monotonic()
    items = job.prepare(store)
    run_id = run_id or job.run_id()
    _refuse_other_job(store, run_id, job.kind, scrub_secrets(json.loads(json.dumps(job.config(), default=str))))
    config = {"job": json.loads(json.dumps(job.config(), default=str))}
    with store.transaction():
        store.runs.create(job.study, job.kind, config, items=items, run_id=run_id)
        store.runs.set_status(run_id, "running")
        job.on_start(store)
    driver = _Driver(job, store, run_id, prices=batch_prices, poll_s=float(poll_s), max_requests=max_requests, say=say,
                     retry=runner_options.get("retry") or RetryPolicy())
    try:
        await driver.run(items)
    except (BatchError, RunnerError) as exc:
        store.runs.set_status(run_id, "failed", error=str(exc))
        raise
    except (asyncio.CancelledError, KeyboardInterrupt):  # Ctrl-C: every step was written down before it was taken
        store.runs.set_status(run_id, "interrupted")
        raise
    finally:
        for backend in job.backends():
            await backend.aclose()
    lines = store.runs.batched_calls(run_id)

    def offline(backend: Backend, request: ChatRequest, key: str) -> str:
        line = lines.get(key)
        if line is None:
            return f"{backend.name}: this call was in no batch; run the same command again to send it"
        return (f"{backend.name}: the batch returned no result for this call ({line['status']}: {line['error']}); "
                "run the same command again to resubmit it")

    runner = Runner(store, prices=batch_prices, offline=offline, **runner_options)
    result = await runner.run(job, run_id=run_id, on_progress=on_progress, close_backends=True)
    tally = driver.tally
    batches = store.runs.batches(run_id)
    accounting = {**result.accounting, "batches": len(batches), "batch_requests": sum(b["n_requests"] for b in batches),
                  "batch_succeeded": sum(b["n_succeeded"] for b in batches),
                  "batch_failed": sum(b["n_failed"] for b in batches), "batches_created_now": tally.created}
    return dataclasses.replace(result, calls=tally.results, cached=max(0, result.cached - tally.results),
                               prompt_tokens=tally.prompt_tokens, completion_tokens=tally.completion_tokens,
                               cost_usd=tally.cost_usd, elapsed_s=time.monotonic() - started, accounting=accounting)


def run_batch_sync(job: "Job", store: "Store", **options) -> RunResult:
    """:func:`run_batch` in a fresh event loop (scripts, the CLI, tests)."""
    async def quietly() -> RunResult:
        asyncio.get_running_loop().set_exception_handler(_late_data_is_no_error)
        return await run_batch(job, store, **options)
    return asyncio.run(quietly())


def _late_data_is_no_error(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """The loop's exception handler: a reply arriving on a connection whose read was just cancelled is no error.

    A Ctrl-C cancels the run while a poll's reply may be on its way; when it lands, anyio's
    stream protocol sets an event whose waiter was cancelled (``InvalidStateError`` in
    ``protocol.data_received``), and asyncio's default handler printed a traceback under the
    CLI's one line. The connection is being closed with the cancelled run; nothing is lost.
    Every other error goes to the default handler.
    """
    if isinstance(context.get("exception"), asyncio.InvalidStateError) and "protocol" in context:
        return
    loop.default_exception_handler(context)
