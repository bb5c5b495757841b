"""Concurrent, cached, resumable execution of LLM jobs (answers, reviews, discussions, debates).

A *job* (:class:`Job`, concrete ones in :mod:`peercore.jobs`) is a list of *items*
(one review, one answer, one debate ...). The runner executes the items that are not
done yet, each by one or more :meth:`Backend.complete` calls, and stores every item's
results **in the same transaction as its done mark**. Every paid call goes through
one path, :meth:`ItemContext.complete`, which gives:

- **a persistent cache** keyed on ``backend.cache_key(request)`` = SHA-256 of (backend,
  model, base URL, parameters, messages, sample index). A call whose key is in the
  store is never made again; a successful call is written to the cache *before* the
  item's results are committed, so a crash between the two loses nothing that was
  paid for. Identical calls in flight at the same time are made once.
- **retries** (tenacity, :class:`RetryPolicy`) of what the providers' shared
  :func:`~peercore.reviewers._sdk.should_retry` accepts (429, 5xx, timeouts, dropped
  connections, malformed replies) with exponential backoff and full jitter
  (``delay = U(0, min(cap, base * 2**attempt))``, the AWS "full jitter" scheme),
  never shorter than the server's ``Retry-After`` / ``retry-after-ms``; a 429 also
  pauses the whole provider for that long.
- **limits**: a global concurrency limit, and per provider (or per judge name) an
  optional concurrency limit and leaky buckets (aiolimiter) for requests/minute and
  tokens/minute (tokens are estimated before the call, ``chars / 4 + max_tokens``, and
  corrected with the reported usage after it).
- **accounting**: prompt/completion tokens and dollars (from a
  :class:`peercore.jobs.pricing.PriceTable`) per item, summed per run in the store.

**Resuming.** A run's id is deterministic: :meth:`Job.run_id` hashes the study, the
job kind and the job's configuration, so running the same job again (after a crash,
``kill -9``, a cancel, or failed items) continues the same run: only its pending
items are executed, and the calls they already paid for come from the cache. A run
whose items are all done does nothing and makes no request.

**Commits.** Finished items are committed in batches (``commit_batch`` items or every
``commit_interval_s``), one transaction per batch holding the items' results and their
done marks; progress events follow each commit, so ``done`` is always what is durable.

**Entry points.**

- ``await Runner(store, ...).run(job, on_progress=..., cancel=event)`` inside a loop;
- :func:`run_job_sync` for scripts and the CLI (own event loop);
- :func:`start_run` for a GUI: runs in a background thread (a ``concurrent.futures``
  executor) with its own event loop and returns a :class:`RunHandle` with ``progress``,
  ``cancel()``, ``wait()``.

From a dashboard page (no event loop of its own)::

    from peercore.jobs import ReviewJob, estimate, make_backend
    job = ReviewJob(study, [make_backend("openai:gpt-4o")], strategy="greedy", budget=500)
    print(estimate(job, store).to_text())        # calls, tokens, dollars; spends nothing
    handle = start_run(job, store, concurrency=8)  # returns at once
    handle.progress                               # latest ProgressEvent: poll it on reruns
    handle.cancel(); handle.wait()                # stop; the finished items stay stored
    start_run(job_with_same_config, store)        # resumes the same run (same run id)

References: Li et al. (PRD), Chern et al. (ScaleEval) for the jobs; the retry scheme
follows Brooker, "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015).
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import hashlib
import json
import logging
import math
import random
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiolimiter
import pandas as pd
import tenacity

from peercore import db as _db
from peercore.errors import PeercoreError
from peercore.reviewers._sdk import should_retry
from peercore.reviewers.base import Backend, BackendError, ChatRequest, Completion, MissingCredentials
from peercore.store import StoreError, scrub_secrets
from peercore.jobs.pricing import load_prices

if TYPE_CHECKING:  # pragma: no cover
    from peercore.jobs.pricing import PriceTable
    from peercore.store import Store

__all__ = [
    "Job",
    "ItemOutcome",
    "ItemContext",
    "PlannedCall",
    "RetryPolicy",
    "ProviderLimits",
    "ProgressEvent",
    "RunResult",
    "Runner",
    "RunHandle",
    "RunnerError",
    "CallFailed",
    "run_job_sync",
    "start_run",
    "estimate_tokens",
]

log = logging.getLogger(__name__)


class RunnerError(PeercoreError):
    """A run could not start or was aborted (bad configuration, missing credentials)."""


class CallFailed(BackendError):
    """A call failed for good: a permanent error, or retries exhausted.

    Attributes
    ----------
    attempts : how many attempts were made.
    """

    def __init__(self, message: str, *, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


# ----------------------------------------------------------------------------- policy


@dataclass(frozen=True)
class RetryPolicy:
    """When to try a failed call again and how long to wait first: one policy on tenacity.

    Every retried request of peercore goes through :meth:`retrying` (a
    :class:`tenacity.AsyncRetrying`): the runner's live calls and the batch driver's
    requests (:mod:`peercore.jobs.batch`). What is retried is the providers' shared
    decision, :func:`peercore.reviewers._sdk.should_retry`. The wait before retry ``k``
    (k = 0, 1, ...) is :meth:`delay`: ``U(0, min(cap_s, base_s * 2**k))`` (full jitter)
    and never less than the server's ``Retry-After`` / ``retry-after-ms`` (itself capped
    at ``max_retry_after_s``).

    Parameters
    ----------
    max_attempts : attempts per call in total (first try included), >= 1.
    base_s, cap_s : backoff base and cap, in seconds.
    max_retry_after_s : longest ``Retry-After`` honoured (a server asking for hours is
        capped, then the call is retried or fails as usual).
    """

    max_attempts: int = 6
    base_s: float = 0.5
    cap_s: float = 30.0
    max_retry_after_s: float = 120.0

    def __post_init__(self) -> None:
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ValueError(f"max_attempts must be an integer >= 1, got {self.max_attempts!r}")
        for name in ("base_s", "cap_s", "max_retry_after_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")

    def delay(self, attempt: int, *, retry_after: float | None = None, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (0-based).

        The jitter is drawn from ``rng`` (the runner's, seeded by ``Runner(seed=)``):
        tenacity's ``wait_random_exponential`` draws the same ``U(0, min(cap, base * 2**k))``
        from the global :mod:`random` module, which nothing could seed per run.
        """
        backoff = rng.uniform(0.0, min(self.cap_s, self.base_s * (2.0 ** attempt)))
        if retry_after is not None and retry_after > 0:
            return max(min(float(retry_after), self.max_retry_after_s), backoff)
        return backoff

    def retrying(self, *, rng: random.Random | None = None, sleep: Callable[[float], Any] | None = None,
                 before_sleep: Callable[[tenacity.RetryCallState], Any] | None = None) -> tenacity.AsyncRetrying:
        """A fresh :class:`tenacity.AsyncRetrying` for one call (it keeps that call's state).

        Use as ``async for attempt in policy.retrying(): with attempt: ...``. An error
        :func:`~peercore.reviewers._sdk.should_retry` refuses is raised at once; after
        ``max_attempts`` the last error is raised (``reraise``).

        Parameters
        ----------
        rng : draws the jitter (default: a fresh unseeded one).
        sleep : awaited with each wait in seconds (the runner's wakes on a cancel);
            default :func:`asyncio.sleep`.
        before_sleep : called with tenacity's ``RetryCallState`` before each wait.
        """
        rng = rng or random.Random()

        def wait(retry_state: tenacity.RetryCallState) -> float:  # the failed attempt's delay, its error's Retry-After
            error = retry_state.outcome.exception()
            return self.delay(retry_state.attempt_number - 1, retry_after=getattr(error, "retry_after", None), rng=rng)

        options = {} if sleep is None else {"sleep": sleep}
        return tenacity.AsyncRetrying(stop=tenacity.stop_after_attempt(self.max_attempts), wait=wait,
                                      retry=tenacity.retry_if_exception(should_retry), before_sleep=before_sleep,
                                      reraise=True, **options)


@dataclass(frozen=True)
class ProviderLimits:
    """Limits for one provider (``"openai"``) or one judge (``"openai:gpt-4o"``).

    Parameters
    ----------
    requests_per_minute, tokens_per_minute : token-bucket rates, or None for no limit.
        Buckets hold ``burst_s`` seconds' worth (at least one request): providers
        enforce per-minute limits over shorter windows, so bursts are kept short.
    concurrency : calls in flight at once for this provider, or None (the runner's
        global limit only). Local models default to 1.
    burst_s : bucket size in seconds of rate.
    """

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    concurrency: int | None = None
    burst_s: float = 1.0

    def __post_init__(self) -> None:
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number or None, got {value!r}")
        if self.concurrency is not None and (not isinstance(self.concurrency, int) or self.concurrency < 1):
            raise ValueError(f"concurrency must be an integer >= 1 or None, got {self.concurrency!r}")
        if not (isinstance(self.burst_s, (int, float)) and self.burst_s > 0):
            raise ValueError(f"burst_s must be > 0, got {self.burst_s!r}")


class _TokenBucket(aiolimiter.AsyncLimiter):
    """aiolimiter's leaky bucket of ``burst_s`` seconds' worth of ``per_minute``, with debt and refunds.

    aiolimiter does the waiting (a timer to the moment the level allows the request,
    no polling). It refuses an amount larger than the bucket and has no way to give
    capacity back; a tokens-per-minute limit needs both, so :meth:`take` and
    :meth:`adjust` set the bucket's level (``_level``: aiolimiter 1.3's, pinned; the
    bucket tests in ``tests/unit/runner`` fail if it changes):

    - **debt**: a request larger than the bucket waits for a full bucket, then leaves it
      below empty, so the long-run rate is exact. At 30,000 tokens/minute (OpenAI's
      tier-1 gpt-4o) the bucket holds 500 tokens and a review (a ~500-token prompt +
      ``max_tokens`` 512) asks ~1,000: every call would be refused.
    - **refunds**: a call is charged ``prompt + max_tokens`` before it is made and
      corrected with the usage it reports. Without the refund a TPM limit runs at
      used/estimated of its rate: at 30,000 tokens/minute, 30.5 calls/minute instead of
      55.3 / 47.0 / 38.3 for 50 / 150 / 300-token replies to a 500-token prompt with
      ``max_tokens`` 512 (``benchmarks/results/rate_limit_refund.md``).

    A lock keeps requests first come, first served (aiolimiter wakes the smallest
    waiting amount first, which could hold a big request back behind small ones).
    """

    def __init__(self, per_minute: float, *, burst_s: float, minimum: float = 1.0) -> None:
        rate = per_minute / 60.0
        capacity = max(minimum, rate * burst_s)
        super().__init__(capacity, capacity / rate)
        self._turn = asyncio.Lock()

    async def take(self, amount: float) -> None:
        """Wait until ``amount`` may go (a full bucket at most), then charge all of it."""
        async with self._turn:
            part = min(amount, self.max_rate)
            await self.acquire(part)
            self._level += amount - part

    def adjust(self, delta: float) -> None:
        """Take ``delta`` more (or give back ``-delta``) once the real usage is known."""
        self._leak()
        self._level = max(0.0, self._level + delta)
        self._wake_next()


class _Provider:
    def __init__(self, limits: ProviderLimits) -> None:
        self.limits = limits
        self.semaphore = asyncio.Semaphore(limits.concurrency) if limits.concurrency else None
        self.requests = (_TokenBucket(limits.requests_per_minute, burst_s=limits.burst_s)
                         if limits.requests_per_minute else None)
        self.tokens = (_TokenBucket(limits.tokens_per_minute, burst_s=limits.burst_s, minimum=0.0)
                       if limits.tokens_per_minute else None)
        self.paused_until = 0.0


def estimate_tokens(request: ChatRequest) -> int:
    """Rough prompt-token count of a request: characters / 4, rounded up (+4 per message).

    OpenAI's rule of thumb for English text; used for rate limiting and estimates
    before a call, corrected by the provider's reported usage after it.
    """
    chars = sum(len(str(m.get("content", ""))) for m in request.messages) + len(request.prefill or "")
    return math.ceil(chars / 4) + 4 * len(request.messages)


# --------------------------------------------------------------------------- progress


@dataclass(frozen=True)
class ProgressEvent:
    """A snapshot of a run, sent to ``on_progress`` after every item (and at start/end).

    Attributes
    ----------
    run_id : the run.
    status : ``"running"``, then ``"finished"``, ``"failed"`` (items failed or the run
        aborted), ``"cancelled"`` or ``"interrupted"``.
    done : items finished so far (including those finished by earlier attempts of this
        run and items stored as invalid).
    total : items in the run.
    failed : items that failed in this attempt (retried by the next attempt).
    invalid : items whose output could not be parsed (stored with ``valid=0``).
    cached : calls answered from the cache in this attempt (free).
    calls : calls paid in this attempt (successful requests).
    retries : retries in this attempt: attempts of a call after its first, each made
        because the one before failed (a 429, 5xx, timeout, dropped connection or
        malformed reply). A call that fails for good is a failed item, not a retry: a
        permanent error is not retried, and the last of ``max_attempts`` is followed by
        none. The server saw ``calls + retries`` requests, plus one per call that failed.
    prompt_tokens, completion_tokens : tokens paid in this attempt.
    cost_usd : dollars paid in this attempt, or None when a model's price is unknown.
    elapsed_s : seconds since this attempt started.
    message : a human line (last item, or why the run stopped).
    """

    run_id: str
    status: str
    done: int
    total: int
    failed: int = 0
    invalid: int = 0
    cached: int = 0
    calls: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    elapsed_s: float = 0.0
    message: str = ""

    @property
    def fraction(self) -> float:
        """done / total (1.0 for an empty run)."""
        return 1.0 if self.total == 0 else self.done / self.total


@dataclass(frozen=True)
class RunResult(ProgressEvent):
    """The last :class:`ProgressEvent` of a run, plus what failed.

    Attributes
    ----------
    error : why the run stopped early (missing credentials, an exception), or None.
    failed_items : ``[(item_key, reason), ...]`` for items that failed in this attempt.
    """

    error: str | None = None
    failed_items: tuple[tuple[str, str], ...] = ()
    accounting: dict = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "finished"


# ------------------------------------------------------------------------------- jobs


@dataclass(frozen=True)
class PlannedCall:
    """A call an item will (or may) make, for estimates before a run.

    Attributes
    ----------
    backend, request : the call.
    optional : True for calls that happen only in some cases (later debate rounds).
    typical_output_tokens : expected completion length (``request.max_tokens`` bounds it).
    """

    backend: Backend
    request: ChatRequest
    optional: bool = False
    typical_output_tokens: int | None = None


@dataclass(frozen=True)
class ItemOutcome:
    """What an item produced, stored by the runner together with the item's done mark.

    Results are declared as rows so that the runner can commit many finished items in
    one transaction (one ``add_judgments`` for the whole batch); each item's results
    still land in the same transaction as its done mark, never without it.

    Attributes
    ----------
    write : optional ``write(store, run_id)`` for anything else, called inside that
        transaction with public Store methods.
    status : ``"done"``, or ``"invalid"`` when the model's output could not be parsed
        (the invalid verdict is still stored, with ``valid=0`` and the raw text).
    detail : a short note kept with the item.
    judgments : canonical judgment rows (+ ``valid``, ``raw``, ``vote``), for
        :meth:`Store.verdicts.add`.
    answers : ``{"question_id", "model", "answer"}`` rows for :meth:`Store.questions.add_answers`.
    debates : ``(debate, turns)`` pairs for :meth:`Store.debates.add`.
    """

    write: Callable[["Store", str], None] | None = None
    status: str = "done"
    detail: str | None = None
    judgments: tuple[dict, ...] = ()
    answers: tuple[dict, ...] = ()
    debates: tuple[tuple[dict, tuple[dict, ...]], ...] = ()


@dataclass
class _Commit:
    item: str
    status: str
    detail: str | None
    ctx: "ItemContext"
    outcome: ItemOutcome | None = None


class Job(ABC):
    """A unit of LLM work over a study: a deterministic list of items.

    Subclasses set ``kind`` and implement :meth:`config`, :meth:`prepare`,
    :meth:`plan` and :meth:`run_item`. ``prepare`` reads the inputs from the store
    (questions, answers) and returns the item keys; it is called once per run, in the
    thread that runs the job.
    """

    kind: str = "job"
    study: str

    @abstractmethod
    def config(self) -> dict:
        """A JSON-able description of everything that determines the job's items and calls."""

    @abstractmethod
    def backends(self) -> list[Backend]:
        """The backends the job calls (closed by the runner when it owns the event loop)."""

    @abstractmethod
    def prepare(self, store: "Store") -> list[str]:
        """Load inputs from ``store``; return the item keys (unique, deterministic order)."""

    @abstractmethod
    def plan(self, item: str) -> list[PlannedCall]:
        """The calls ``item`` will make (certain ones first), for estimates. Needs prepare()."""

    @abstractmethod
    async def run_item(self, item: str, ctx: "ItemContext") -> ItemOutcome:
        """Do one item: make calls with ``ctx.complete`` and return what to store."""

    def on_start(self, store: "Store") -> None:  # noqa: B027 - optional hook
        """Called once the run is registered, before any item (e.g. to register judges)."""

    def run_id(self) -> str:
        """``<kind>-<16 hex>``: SHA-256 of (study, kind, config), so the same job resumes the same run."""
        blob = json.dumps({"study": self.study, "kind": self.kind, "config": self.config()},
                          sort_keys=True, ensure_ascii=False, default=str)
        return f"{self.kind}-{hashlib.sha256(blob.encode('utf-8')).hexdigest()[:16]}"


class ItemContext:
    """What an item sees of the runner: :meth:`complete`, the item's key and its tallies."""

    def __init__(self, runner: "Runner", run_id: str, item: str) -> None:
        self._runner = runner
        self.run_id = run_id
        self.item = item
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost_usd: float | None = 0.0

    async def complete(self, backend: Backend, request: ChatRequest) -> Completion:
        """One call through the cache, limits and retries. Raises :class:`CallFailed`."""
        return await self._runner._complete(self, backend, request)

    def _charge(self, prompt_tokens: int, completion_tokens: int, cost: float | None) -> None:
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.cost_usd = None if (cost is None or self.cost_usd is None) else self.cost_usd + cost


# ----------------------------------------------------------------------------- runner


class _Cancelled(Exception):
    pass


class Runner:
    """Executes jobs against a store; one Runner per event loop.

    Parameters
    ----------
    store : the :class:`peercore.store.Store` (its connection for this thread is used
        from the event loop's thread only).
    concurrency : calls in flight at once, over all providers (also the number of items
        worked on at once).
    retry : the :class:`RetryPolicy`.
    limits : provider (``"openai"``) or judge name (``"openai:gpt-4o"``) -> :class:`ProviderLimits`;
        a judge name takes precedence. ``"local"`` defaults to ``concurrency=1``.
    prices : :class:`peercore.jobs.pricing.PriceTable` for cost accounting; default the
        bundled table (:func:`peercore.jobs.pricing.load_prices`).
    call_timeout_s : an overall timeout per attempt enforced by the runner (backends
        have their own HTTP timeouts; this is a safety net), or None.
    cancel_grace_s : after a cancel, how long calls already in flight may finish so
        their (paid) responses reach the cache.
    commit_batch, commit_interval_s : finished items are committed (results + done
        marks, one transaction) when ``commit_batch`` are waiting or ``commit_interval_s``
        has passed since the last commit, and at the end. A crash loses at most the
        uncommitted items' bookkeeping, never a paid call (those are cached at once).
    seed : seeds the jitter.
    offline : when set, no call is made: a call missing from the cache fails its item
        with the reason ``offline(backend, request, cache_key)`` returns (batch runs,
        :mod:`peercore.jobs.batch`, whose calls were paid through a provider's batch API).
    """

    def __init__(self, store: "Store", *, concurrency: int = 8, retry: RetryPolicy | None = None,
                 limits: Mapping[str, ProviderLimits] | None = None, prices: "PriceTable | None" = None,
                 call_timeout_s: float | None = None, cancel_grace_s: float = 10.0, commit_batch: int = 256,
                 commit_interval_s: float = 1.0, seed: int | None = None,
                 offline: Callable[[Backend, ChatRequest, str], str] | None = None) -> None:
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
            raise ValueError(f"concurrency must be an integer >= 1, got {concurrency!r}")
        if call_timeout_s is not None and not call_timeout_s > 0:
            raise ValueError(f"call_timeout_s must be > 0 or None, got {call_timeout_s!r}")
        if not isinstance(commit_batch, int) or commit_batch < 1:
            raise ValueError(f"commit_batch must be an integer >= 1, got {commit_batch!r}")
        if not commit_interval_s >= 0:
            raise ValueError(f"commit_interval_s must be >= 0, got {commit_interval_s!r}")
        if prices is None:

            prices = load_prices()
        self.store = store
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy()
        self.limits = {"local": ProviderLimits(concurrency=1), **dict(limits or {})}
        self.prices = prices
        self.call_timeout_s = call_timeout_s
        self.cancel_grace_s = float(cancel_grace_s)
        self.commit_batch = commit_batch
        self.commit_interval_s = float(commit_interval_s)
        self._rng = random.Random(seed)
        self.offline = offline
        self._providers: dict[str, _Provider] = {}
        self._inflight: dict[str, asyncio.Task] = {}
        self._calls_tasks: set[asyncio.Task] = set()
        self._holding: set[str] = set()  # cache keys of paid responses being written

    @property
    def calls_in_flight(self) -> int:
        """How many paid calls are out now: sent (or waiting to be retried) and not yet answered or given up.

        Read-only; safe to read from another thread (a dashboard polling a :class:`RunHandle`
        while a cancelled run waits for these calls to land in the cache). Calls answered
        from the cache are never in flight.
        """
        return len(self._calls_tasks)

    # ------------------------------------------------------------------ public API

    async def run(self, job: Job, *, run_id: str | None = None,
                  on_progress: Callable[[ProgressEvent], None] | None = None,
                  cancel: asyncio.Event | None = None, close_backends: bool = False) -> RunResult:
        """Run (or resume) ``job`` until its items are done, it is cancelled, or it fails.

        Parameters
        ----------
        job : the job.
        run_id : resume this run instead of the job's deterministic one (the run's items
            are the job's items: a run created by a different job is refused).
        on_progress : called with a :class:`ProgressEvent` at start, after every item,
            and at the end (exceptions it raises are logged, never fatal).
        cancel : set it to stop: no new item starts, in-flight items are abandoned
            (their finished calls stay cached), the run is marked ``cancelled``.
        close_backends : call ``aclose()`` on the job's backends at the end.

        Returns
        -------
        RunResult
            ``status`` is ``finished`` when every item is done or invalid, ``failed``
            when items failed after retries (run again to retry them) or the run
            aborted (``error`` says why: e.g. missing credentials), ``cancelled``.
        """
        state = _RunState(self, job, run_id, on_progress, cancel)
        try:
            return await state.execute()
        finally:
            if close_backends:
                for backend in job.backends():
                    try:
                        await backend.aclose()
                    except Exception:  # pragma: no cover - closing must not mask the result
                        log.warning("closing backend %s failed", backend.name, exc_info=True)

    # ------------------------------------------------------------------- internals

    def _provider(self, backend: Backend) -> _Provider:
        key = backend.name if backend.name in self.limits else backend.backend
        provider = self._providers.get(key)
        if provider is None:
            provider = self._providers[key] = _Provider(self.limits.get(key, ProviderLimits()))
        return provider

    async def _complete(self, ctx: ItemContext, backend: Backend, request: ChatRequest) -> Completion:
        state: _RunState = self._state
        key = backend.cache_key(request)
        hit = self.store.runs.cached_call(key)
        if hit is not None:
            state.cached += 1
            if hit.get("run_id") == ctx.run_id and key not in state.charged:
                # Paid by this run before a crash, not yet counted in a finished item.
                state.charged.add(key)
                cost = self.prices.cost(backend.backend, backend.model, hit["prompt_tokens"], hit["completion_tokens"])
                ctx._charge(hit["prompt_tokens"], hit["completion_tokens"], cost)
            return Completion.from_json(hit["response"])
        if self.offline is not None:
            raise CallFailed(self.offline(backend, request, key), attempts=0)
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.get_running_loop().create_task(
                self._paid_call(backend, request, key, ctx.run_id, ctx.item))
            self._inflight[key] = task
            self._calls_tasks.add(task)
            task.add_done_callback(lambda t, k=key: (self._inflight.pop(k, None), self._calls_tasks.discard(t)))
            owner = True
        else:
            owner = False
            state.cached += 1
        completion = await asyncio.shield(task)
        if owner:
            state.charged.add(key)
            cost = self.prices.cost(backend.backend, backend.model, completion.prompt_tokens, completion.completion_tokens)
            ctx._charge(completion.prompt_tokens, completion.completion_tokens, cost)
        return completion

    async def _paid_call(self, backend: Backend, request: ChatRequest, key: str, run_id: str,
                         item: str | None = None) -> Completion:
        state: _RunState = self._state
        provider = self._provider(backend)
        estimate = estimate_tokens(request) + request.max_tokens

        def before_sleep(retry_state: tenacity.RetryCallState) -> None:
            error = retry_state.outcome.exception()
            retry_after = getattr(error, "retry_after", None)
            if getattr(error, "status", None) == 429 and retry_after:  # the whole provider waits, not just this call
                provider.paused_until = max(provider.paused_until,
                                            time.monotonic() + min(retry_after, self.retry.max_retry_after_s))
            log.debug("%s: attempt %d failed (%s); retrying in %.3fs", backend.name, retry_state.attempt_number,
                      error, retry_state.upcoming_sleep)

        attempts, answered = 0, False
        try:
            async for attempt in self.retry.retrying(rng=self._rng, sleep=state.sleep, before_sleep=before_sleep):
                wait = provider.paused_until - time.monotonic()
                if wait > 0:
                    await state.sleep(wait)
                if provider.requests is not None:
                    await provider.requests.take(1)
                if provider.tokens is not None:
                    await provider.tokens.take(estimate)
                async with (provider.semaphore or _NULL), self._semaphore:
                    state.check_cancel_for_new_attempt()
                    attempts = attempt.retry_state.attempt_number
                    if attempts > 1:  # an attempt after the call's first, made now
                        state.retries += 1
                    started = time.monotonic()
                    with attempt:  # only the call itself is retried; tenacity decides, waits, or raises
                        if self.call_timeout_s is not None:
                            completion = await asyncio.wait_for(backend.complete(request), self.call_timeout_s)
                        else:
                            completion = await backend.complete(request)
                    if attempt.retry_state.outcome.failed:
                        continue
                    latency, answered = time.monotonic() - started, True
                    return await self._paid(backend, request, completion, key=key, run_id=run_id, item=item,
                                            provider=provider, estimate=estimate, latency=latency)
        except MissingCredentials:
            raise
        except (BackendError, TimeoutError, ConnectionError) as exc:  # a permanent error, or the last attempt's
            if answered:  # storing the answer failed: not the call's failure
                raise
            why = f"gave up after {self.retry.max_attempts} attempts: {exc}" if should_retry(exc) else str(exc)
            raise CallFailed(backend.redact(f"{backend.name}: {why}"), attempts=attempts) from None
        raise AssertionError("tenacity ended the attempts without a result or an error")  # pragma: no cover

    async def _paid(self, backend: Backend, request: ChatRequest, completion: Completion, *, key: str, run_id: str,
                    item: str | None, provider: _Provider, estimate: int, latency: float) -> Completion:
        """A call answered: its response in the cache at once, then counted (still inside the limits)."""
        state: _RunState = self._state
        used = completion.prompt_tokens + completion.completion_tokens
        if provider.tokens is not None and used:
            provider.tokens.adjust(used - estimate)
        completion = backend.redact_completion(completion)  # a reply may echo the key
        self._holding.add(key)  # paid and in hand: a cancel waits for it to be written
        try:
            await self._keep(lambda: self.store.runs.store_call(
                key, backend=backend.backend, model=backend.model, request=_shallow(request),
                response=_shallow(completion), prompt_tokens=completion.prompt_tokens,
                completion_tokens=completion.completion_tokens, latency_s=latency, run_id=run_id,
                item_key=item,
            ), what="a paid response")
        finally:
            self._holding.discard(key)
        state.calls += 1
        state.prompt_tokens += completion.prompt_tokens
        state.completion_tokens += completion.completion_tokens
        cost = self.prices.cost(backend.backend, backend.model, completion.prompt_tokens, completion.completion_tokens)
        state.cost_usd = None if (cost is None or state.cost_usd is None) else state.cost_usd + cost
        return completion

    async def _keep(self, write: Callable[[], Any], *, what: str) -> Any:
        """Run a store write; while another process holds the store's write lock, wait and retry.

        The data to write (a paid response, a batch of results) stays in memory until it
        is written: a long lock delays the run, it never loses what was paid for. Each
        attempt waits at most 0.25 s inside SQLite so the event loop stays free; between
        attempts the run sleeps with exponential backoff (0.05 s doubling, up to 2 s; no
        limit on attempts) and says why.
        """
        def before_sleep(retry_state: tenacity.RetryCallState) -> None:
            state = getattr(self, "_state", None)
            if state is not None and retry_state.attempt_number == 1:
                state.message = f"the database is locked by another process; keeping {what} and retrying"
                state.emit()
            log.info("database locked while writing %s; retrying in %.2fs (%.1fs so far)", what,
                     retry_state.upcoming_sleep, retry_state.idle_for - retry_state.upcoming_sleep)

        # SQLite's "locked" / "busy", PostgreSQL's lock timeout (peercore.db)
        async for attempt in tenacity.AsyncRetrying(retry=tenacity.retry_if_exception(_is_locked),
                                                    wait=tenacity.wait_exponential(multiplier=0.05, max=2.0),
                                                    before_sleep=before_sleep, reraise=True):
            with attempt, self.store.runs.busy_timeout(250):
                return write()
        raise AssertionError("tenacity ended the attempts without a result or an error")  # pragma: no cover


def _refuse_other_job(store: "Store", run_id: str, kind: str, config: dict) -> None:
    """Refuse to resume ``run_id`` with another job's configuration, before touching the run.

    Raises
    ------
    RunnerError
        Naming the options that differ; the stored run (its status, items) is unchanged.
    """

    try:
        existing = store.runs.get(run_id)
    except StoreError:
        return
    stored = existing["config"].get("job")
    if existing["kind"] == kind and stored == config:
        return
    if existing["kind"] != kind:
        what = f"it is a {existing['kind']!r} run, this is a {kind!r} job"
    else:
        keys = sorted(k for k in set(stored or {}) | set(config) if (stored or {}).get(k) != config.get(k))
        what = "its options differ in " + ", ".join(keys)
    raise RunnerError(f"run {run_id!r} was made by another job ({what}); it was left as it was and nothing was "
                      "spent. Run without --run-id to start (or resume) this job's own run")


def _is_locked(exc: BaseException) -> bool:
    """Another writer holds the lock, on either engine (:func:`peercore.db.is_lock_error`)."""
    return _db.is_lock_error(exc)


def _shallow(obj) -> dict:
    """A dataclass's fields as a dict without deep copies (it is serialised at once)."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


class _NullContext:
    async def __aenter__(self):
        return None

    async def __aexit__(self, *exc):
        return False


_NULL = _NullContext()


class _RunState:
    """Counters and control of one run attempt (lives on the runner while it runs)."""

    def __init__(self, runner: Runner, job: Job, run_id: str | None, on_progress, cancel: asyncio.Event | None) -> None:
        self.runner = runner
        self.job = job
        self.requested_run_id = run_id
        self.on_progress = on_progress
        self.cancel = cancel or asyncio.Event()
        self.done = self.total = self.failed = self.invalid = 0
        self.cached = self.calls = self.retries = 0
        self.prompt_tokens = self.completion_tokens = 0
        self.cost_usd: float | None = 0.0
        self.charged: set[str] = set()
        self.accounting: dict = {}
        self.failed_items: list[tuple[str, str]] = []
        self.commits: list[_Commit] = []
        self.last_commit = time.monotonic()
        self.started = time.monotonic()
        self.run_id = ""
        self.status = "running"
        self.message = ""

    # -------------------------------------------------------------- cancellation

    def check_cancel_for_new_attempt(self) -> None:
        if self.cancel.is_set():
            raise _Cancelled()

    async def sleep(self, seconds: float) -> None:
        """Sleep, but wake up (and stop) at once when the run is cancelled."""
        if seconds <= 0:
            return
        try:
            await asyncio.wait_for(self.cancel.wait(), seconds)
        except (TimeoutError, asyncio.TimeoutError):
            return
        raise _Cancelled()

    # ------------------------------------------------------------------ progress

    def event(self, cls=ProgressEvent, **extra) -> ProgressEvent:
        return cls(
            run_id=self.run_id, status=self.status, done=self.done, total=self.total, failed=self.failed,
            invalid=self.invalid, cached=self.cached, calls=self.calls, retries=self.retries,
            prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens, cost_usd=self.cost_usd,
            elapsed_s=time.monotonic() - self.started, message=self.message, **extra,
        )

    def emit(self) -> None:
        if self.on_progress is None:
            return
        try:
            self.on_progress(self.event())
        except Exception:
            log.warning("progress callback raised; ignoring", exc_info=True)

    # ------------------------------------------------------------------- execute

    async def execute(self) -> RunResult:
        runner, job, store = self.runner, self.job, self.runner.store
        if getattr(runner, "_state", None) is not None:
            raise RunnerError("this Runner is already running a job; use one Runner per concurrent run")
        runner._state = self
        runner._semaphore = asyncio.Semaphore(runner.concurrency)
        runner._providers = {}
        try:
            items = job.prepare(store)
            if len(set(items)) != len(items):
                raise RunnerError(f"job {job.kind!r} produced duplicate item keys")
            run_id = self.requested_run_id or job.run_id()
            config = {"job": json.loads(json.dumps(job.config(), default=str))}
            _refuse_other_job(store, run_id, job.kind, scrub_secrets(config["job"]))  # the stored run stays as it was
            flying = sum(b["status"] != "fetched" for b in store.runs.batches(run_id)) if runner.offline is None else 0
            if flying:  # a live attempt would pay again for the calls those batches are answering
                raise RunnerError(f"run {run_id!r} has {flying} batch(es) submitted and not yet read; resume them "
                                  "with --batch (the same command, or peercore.jobs.batch.run_batch); nothing was spent")

            def start() -> None:  # one transaction: the run, its items, its status and the judges' registration
                with store.transaction():
                    store.runs.create(job.study, job.kind, config, items=items, run_id=run_id)
                    store.runs.set_status(run_id, "running")
                    job.on_start(store)

            await runner._keep(start, what="the run's start")
            self.run_id = run_id
            existing = store.runs.get(self.run_id)
            wanted = set(items)
            pending = [key for key in store.runs.pending_items(self.run_id) if key in wanted]
            self.total = int(existing["n_items"])
            if any(runner.prices.price(b.backend, b.model) is None for b in job.backends()):
                self.cost_usd = None  # say "unknown" from the start, not $0
            self.done = int(existing["n_done"])
            self.message = f"{len(pending)} of {self.total} items to do"
            self.emit()
            await self._work(pending)
        except BaseException as exc:  # record why, then let it propagate (or report it)
            if self.run_id:
                if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt)):
                    self.status, self.message = "interrupted", "interrupted"
                else:
                    self.status, self.message = "failed", f"{type(exc).__name__}: {exc}"
                try:
                    store.runs.set_status(self.run_id, self.status, error=self.message)
                except Exception:  # pragma: no cover
                    log.warning("could not record the run's status", exc_info=True)
            if isinstance(exc, (MissingCredentials, RunnerError)) and self.run_id:
                self.emit()
                return self.event(RunResult, error=str(exc), failed_items=tuple(self.failed_items))
            raise
        finally:
            runner._state = None
        self.accounting = store.runs.accounting(self.run_id)
        if self.accounting["unaccounted"] and not self.cancel.is_set():
            self.failed_items.append(("(run)", f"{self.accounting['unaccounted']} item(s) paid for calls whose results "
                                               "were not stored; run the same job again to store them from the cache"))
            self.failed += self.accounting["unaccounted"]
        if self.cancel.is_set() and self.done < self.total:
            self.status, self.message = "cancelled", f"cancelled with {self.total - self.done} items left"
            store.runs.set_status(self.run_id, "cancelled", error=None)
        elif self.failed:
            self.status = "failed"
            self.message = f"{self.failed} item(s) failed; run the same job again to retry them"
            store.runs.set_status(self.run_id, "failed", error=self.message)
        else:
            self.status, self.message = "finished", f"{self.done} of {self.total} items done"
            store.runs.set_status(self.run_id, "finished")
        self.emit()
        return self.event(RunResult, error=None if self.status != "failed" else self.message,
                          failed_items=tuple(self.failed_items), accounting=dict(self.accounting))

    async def _work(self, pending: Sequence[str]) -> None:
        queue = list(reversed(pending))
        abort: list[BaseException] = []
        tasks: set[asyncio.Task] = set()

        async def worker() -> None:
            while queue and not self.cancel.is_set() and not abort:
                item = queue.pop()
                task = asyncio.current_task()
                try:
                    await self._one(item)
                except (MissingCredentials, RunnerError) as exc:
                    abort.append(exc)
                    self.cancel.set()
                except _Cancelled:
                    return
                except asyncio.CancelledError:
                    if task is not None and task.cancelling():
                        raise
                    return

        n = min(self.runner.concurrency, len(queue)) or 0
        for _ in range(n):
            tasks.add(asyncio.get_running_loop().create_task(worker()))
        cancel_waiter = asyncio.get_running_loop().create_task(self.cancel.wait())
        try:
            pending_tasks = set(tasks)
            while pending_tasks:
                finished, pending_tasks = await asyncio.wait(pending_tasks | {cancel_waiter},
                                                             return_when=asyncio.FIRST_COMPLETED)
                for task in finished:
                    if task is cancel_waiter:
                        continue
                    if task.exception() is not None:
                        abort.append(task.exception())
                        self.cancel.set()
                pending_tasks.discard(cancel_waiter)
                if self.cancel.is_set():
                    await self._stop(pending_tasks)
                    break
        finally:
            cancel_waiter.cancel()
            for task in tasks:
                if not task.done():
                    task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            try:
                await self.flush()  # finished items are stored even when the run stops early
            except Exception:
                if not abort:
                    raise
                log.warning("could not store the last finished items", exc_info=True)
        if abort:
            raise abort[0]

    async def _stop(self, workers: set[asyncio.Task]) -> None:
        """After a cancel: let paid calls in flight land in the cache, then stop the items."""
        calls = [t for t in self.runner._calls_tasks if not t.done()]
        if calls:
            await asyncio.wait(calls, timeout=self.runner.cancel_grace_s)
        # A response already paid for is written whatever the wait (e.g. a locked database).
        holding = [t for k, t in list(self.runner._inflight.items()) if k in self.runner._holding and not t.done()]
        if holding:
            await asyncio.wait(holding)
        calls = [t for t in calls if not t.done()]
        # Workers may already have finished the items whose calls landed; give them a tick.
        await asyncio.sleep(0)
        for task in workers:
            task.cancel()
        for task in calls:
            task.cancel()
        await asyncio.gather(*workers, *calls, return_exceptions=True)

    async def _one(self, item: str) -> None:
        ctx = ItemContext(self.runner, self.run_id, item)
        try:
            outcome = await self.job.run_item(item, ctx)
        except CallFailed as exc:
            self.failed_items.append((item, str(exc)))
            self.commits.append(_Commit(item, "failed", str(exc)[:2000], ctx))
        else:
            if outcome.status not in ("done", "invalid"):
                raise RunnerError(f"item outcome status must be 'done' or 'invalid', got {outcome.status!r}")
            self.commits.append(_Commit(item, outcome.status, outcome.detail, ctx, outcome))
        if (len(self.commits) >= self.runner.commit_batch
                or time.monotonic() - self.last_commit >= self.runner.commit_interval_s):
            await self.flush()

    async def flush(self) -> None:
        """Commit the finished items waiting: their results and done marks, one transaction.

        While another process holds the write lock the batch waits in memory
        (:meth:`Runner._keep`). If the batch cannot be stored (e.g. a verdict that
        conflicts with a stored one), each item is committed alone and the ones that
        still fail are recorded as failed items with the reason, so every paid call ends
        as a stored result or a failed item.
        """
        batch, self.commits = self.commits, []
        self.last_commit = time.monotonic()
        if not batch:
            return
        try:
            await self.runner._keep(lambda: self._commit(batch), what=f"the results of {len(batch)} item(s)")
        except (*_db.integrity_errors(), ValueError) as exc:
            log.info("a batch of %d items could not be stored together (%s); storing them one by one", len(batch), exc)
            for k, commit in enumerate(batch):
                try:
                    await self.runner._keep(lambda c=commit: self._commit([c]), what="an item's results")
                except (*_db.integrity_errors(), ValueError) as item_exc:
                    reason = f"its result could not be stored: {item_exc}"[:2000]
                    failed = _Commit(commit.item, "failed", reason, commit.ctx)
                    await self.runner._keep(lambda c=failed: self._commit([c]), what="a failed item")
                    batch[k] = failed
                    self.failed_items.append((commit.item, reason))
        self._count(batch)

    def _commit(self, batch: list[_Commit]) -> None:
        store, study, run_id = self.runner.store, self.job.study, self.run_id
        with store.transaction():
            rows = [row for c in batch if c.outcome for row in c.outcome.judgments]
            for columns, group in _by_columns(rows).items():
                store.verdicts.add(study, pd.DataFrame(group, columns=list(columns)), run_id=run_id, order="known")
            answers = [row for c in batch if c.outcome for row in c.outcome.answers]
            if answers:
                store.questions.add_answers(study, pd.DataFrame(answers), run_id=run_id)
            for c in batch:
                if c.outcome is not None:
                    for debate, turns in c.outcome.debates:
                        store.debates.add(study, debate, turns, run_id=run_id)
                    if c.outcome.write is not None:
                        c.outcome.write(store, run_id)
                store.runs.finish_item(run_id, c.item, status=c.status, detail=c.detail,
                                       prompt_tokens=c.ctx.prompt_tokens, completion_tokens=c.ctx.completion_tokens,
                                       cost_usd=c.ctx.cost_usd or 0.0)

    def _count(self, batch: list[_Commit]) -> None:
        for c in batch:
            if c.status == "failed":
                self.failed += 1
            else:
                self.done += 1
                self.invalid += c.status == "invalid"
        last = batch[-1]
        self.message = f"{last.status} {last.item}" + (f": {last.detail}" if last.status == "failed" else "")
        self.emit()


def _by_columns(rows: list[dict]) -> dict[tuple[str, ...], list[dict]]:
    groups: dict[tuple[str, ...], list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(row), []).append(row)
    return groups


# ------------------------------------------------------------------ sync entry points


def run_job_sync(job: Job, store: "Store", *, run_id: str | None = None,
                 on_progress: Callable[[ProgressEvent], None] | None = None,
                 cancel: threading.Event | None = None, on_runner: Callable[["Runner"], None] | None = None,
                 **runner_options: Any) -> RunResult:
    """Run ``job`` to the end in a fresh event loop (scripts, the CLI, tests).

    Parameters
    ----------
    job, store : as :meth:`Runner.run`.
    run_id : resume this run instead of the job's deterministic one.
    on_progress : progress callback (called in this thread).
    cancel : a :class:`threading.Event`; setting it (from any thread) cancels the run.
    on_runner : called (in this thread) with the :class:`Runner` before the run starts, e.g. to
        read its :attr:`Runner.calls_in_flight` from another thread.
    **runner_options : keyword options of :class:`Runner` (concurrency, retry, limits,
        prices, call_timeout_s, ...).

    The job's backends are closed at the end (their HTTP clients belong to the loop
    that ends here): build fresh backends for each call.
    """
    async def main() -> RunResult:
        event = asyncio.Event()
        watcher = None
        if cancel is not None:
            # Polled every 50 ms: a threading.Event has no callback, and waiting on it in a
            # thread (asyncio.to_thread) would park that thread until someone sets the
            # caller's event; asyncio.run then waits for it at the end.
            async def watch() -> None:
                while not cancel.is_set():
                    await asyncio.sleep(0.05)
                event.set()
            watcher = asyncio.get_running_loop().create_task(watch())
        try:
            runner = Runner(store, **runner_options)
            if on_runner is not None:
                on_runner(runner)
            return await runner.run(job, run_id=run_id, on_progress=on_progress, cancel=event, close_backends=True)
        finally:
            if watcher is not None:
                watcher.cancel()

    return asyncio.run(main())


class RunHandle:
    """A run going on in a background thread (for the dashboard).

    Use :func:`start_run` to get one. Thread-safe: read :attr:`progress` from any
    thread (e.g. a Streamlit rerun polling every second), call :meth:`cancel` and
    :meth:`wait` from any thread. The run is a :class:`concurrent.futures.Future` of a
    one-thread executor; :meth:`wait` is its ``result``.

    Attributes
    ----------
    run_id : the run's id (known before it starts; use it to resume later).
    progress : the latest :class:`ProgressEvent` (None until the run has started).
    phase : what the run is doing now, in one word (:attr:`phase`).
    """

    #: The values of :attr:`phase`.
    PHASES = ("starting", "first-item", "running", "cancelling", "ended")

    def __init__(self, job: Job, store: "Store", *, run_id: str | None, on_progress, runner_options: dict) -> None:
        self.run_id = run_id or job.run_id()
        self.progress: ProgressEvent | None = None
        self._job = job
        self._store = store
        self._on_progress = on_progress
        self._runner_options = runner_options
        self._cancel = threading.Event()
        self._future: Future | None = None
        self._done_at_start: int | None = None  # items done when this attempt started (its first event)
        self._runner: Runner | None = None  # the run's Runner, once its thread has made it (calls_in_flight)

    def _start(self) -> None:
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"peercore-run-{self.run_id}")
        self._future = executor.submit(self._main)
        executor.shutdown(wait=False)  # its one thread ends with the run
        _LIVE_RUNS.add(self)

    def _main(self) -> RunResult:
        def progress(event: ProgressEvent) -> None:
            if self._done_at_start is None and event.run_id:  # the start event (a run id is known from then)
                self._done_at_start = event.done
            self.progress = event
            if self._on_progress is not None:
                self._on_progress(event)

        try:
            result = run_job_sync(self._job, self._store, run_id=self.run_id, on_progress=progress,
                                  cancel=self._cancel, on_runner=self._keep_runner, **self._runner_options)
            self.progress = result
            return result
        finally:
            self._store.close()  # this thread's connection

    def _keep_runner(self, runner: "Runner") -> None:
        self._runner = runner

    @property
    def calls_in_flight(self) -> int:
        """How many paid calls of the run are out now (:attr:`Runner.calls_in_flight`); 0 before it
        starts and once it has ended. While :attr:`phase` is ``cancelling``, the calls it waits for."""
        runner = self._runner
        return 0 if runner is None or self.done() else runner.calls_in_flight

    def cancel(self) -> None:
        """Ask the run to stop (returns at once; :meth:`wait` for the end)."""
        self._cancel.set()

    def done(self) -> bool:
        """True once the run has ended (finished, failed or cancelled)."""
        return self._future is not None and self._future.done()

    @property
    def cancel_requested(self) -> bool:
        """True once :meth:`cancel` was called (the run may still be waiting for its calls in flight)."""
        return self._cancel.is_set()

    @property
    def phase(self) -> str:
        """What the run is doing now (one of :attr:`PHASES`).

        ``starting`` until the run is created and its items counted; ``first-item`` until
        the first item of this attempt ends (the time a local model takes to load, or a
        server its first replies); ``running`` after; ``cancelling`` from :meth:`cancel`
        until the run ends (calls in flight land in the cache); ``ended`` once :meth:`done`.
        """
        if self.done():
            return "ended"
        if self._cancel.is_set():
            return "cancelling"
        progress = self.progress
        if self._done_at_start is None or progress is None:
            return "starting"
        first = progress.done == self._done_at_start and progress.failed == 0
        return "first-item" if first else "running"

    def wait(self, timeout: float | None = None) -> RunResult:
        """Block until the run ends; return its :class:`RunResult` (re-raises its exception).

        Raises
        ------
        TimeoutError
            If ``timeout`` seconds pass first (the run goes on).
        """
        assert self._future is not None, "start the run with start_run()"
        try:
            return self._future.result(timeout)
        except TimeoutError:
            if self._future.done():  # the run itself raised it
                raise
            raise TimeoutError(f"run {self.run_id} still running after {timeout} s") from None


# Runs still going when the interpreter exits are cancelled as the dashboard's Cancel does
# (calls in flight land in the cache, finished items are stored), so that the exit, which
# waits for the executors' threads, waits at most about ``cancel_grace_s``. The hook is
# threading's, which concurrent.futures itself uses to join its threads at exit: atexit's
# come after those joins, too late. Registered after concurrent.futures', it runs first.
_LIVE_RUNS: "weakref.WeakSet[RunHandle]" = weakref.WeakSet()


def _cancel_live_runs() -> None:
    for handle in list(_LIVE_RUNS):
        handle.cancel()


getattr(threading, "_register_atexit", atexit.register)(_cancel_live_runs)


def start_run(job: Job, store: "Store", *, run_id: str | None = None,
              on_progress: Callable[[ProgressEvent], None] | None = None, **runner_options: Any) -> RunHandle:
    """Start (or resume) ``job`` in a background thread with its own event loop.

    Parameters
    ----------
    job : e.g. :class:`peercore.jobs.ReviewJob`; its backends must be fresh (they are
        closed at the end of the run).
    store : the :class:`peercore.store.Store`; the thread opens its own connection.
    run_id : resume this run (default: the job's deterministic id, so starting the
        same job again resumes it).
    on_progress : called *in the run's thread* with every :class:`ProgressEvent`
        (pages should rather poll ``handle.progress``).
    **runner_options : :class:`Runner` options.

    Returns
    -------
    RunHandle
        ``handle.progress``, ``handle.cancel()``, ``handle.wait()``, ``handle.run_id``.

    Examples
    --------
    >>> handle = start_run(ReviewJob("demo", [backend]), store, concurrency=16)  # doctest: +SKIP
    >>> handle.progress.done, handle.progress.total                            # doctest: +SKIP
    >>> handle.cancel(); handle.wait().status                                   # doctest: +SKIP
    'cancelled'
    """
    handle = RunHandle(job, store, run_id=run_id, on_progress=on_progress, runner_options=runner_options)
    handle._start()
    return handle
