"""A real HTTP server on 127.0.0.1 that speaks the OpenAI and Anthropic wire formats.

Tests point the real ``openai`` and ``anthropic`` SDKs (or any HTTP client) at it to
exercise backends, the runner's retries and its fault handling without a network.

Endpoints
---------
``POST /v1/chat/completions``
    OpenAI Chat Completions (non-streaming). Reply shape: ``{"id", "object":
    "chat.completion", "created", "model", "choices": [{"index": 0, "message":
    {"role": "assistant", "content"}, "logprobs", "finish_reason": "stop"}],
    "usage": {"prompt_tokens", "completion_tokens", "total_tokens"}}``.
``POST /v1/messages``
    Anthropic Messages (non-streaming). Reply shape: ``{"id", "type": "message",
    "role": "assistant", "model", "content": [{"type": "text", "text"}],
    "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens",
    "output_tokens"}}``.
``GET /v1/models``
    A one-model list (some clients probe it). Anything else is a provider-shaped 404.

Batch endpoints
---------------
The OpenAI Batch API and Anthropic Message Batches, answering every request line with
the reply its live endpoint would give (the same :meth:`FakeLLMServer._answer`):

``POST /v1/files`` (multipart, ``purpose=batch``), ``GET /v1/files`` (list, newest first,
``?purpose=``), ``GET /v1/files/{id}``, ``GET /v1/files/{id}/content``
    Uploaded files (a JSONL of ``{"custom_id", "method": "POST", "url":
    "/v1/chat/completions", "body"}`` lines) and the output / error files of batches.
``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/batches`` (list, newest first,
``?limit=&after=``)
    OpenAI batches: ``validating`` -> ``in_progress`` -> ``completed`` (or ``expired``)
    once ``batch_delay_s`` have passed since creation, evaluated when the batch is read.
    The output file holds ``{"id", "custom_id", "response": {"status_code": 200,
    "request_id", "body"}, "error": null}`` lines; the error file holds failed lines
    (``response.status_code`` 400 with an error body) and expired ones
    (``"response": null, "error": {"code": "batch_expired"}``).
``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``,
``GET /v1/messages/batches`` (list, newest first, ``?limit=&after_id=``),
``GET /v1/messages/batches/{id}/results``
    Anthropic batches: ``in_progress`` -> ``ended`` after ``batch_delay_s``; the results
    are JSONL lines ``{"custom_id", "result": {"type": "succeeded", "message"}}`` (or
    ``"errored"`` with an error, ``"expired"``); ``results_url`` is set once ended.

A batch is answered as ``batch_mode`` says, or by the next mode queued with
:meth:`inject_batch`: ``"ok"`` (every line answered), ``"partial"`` (every
``batch_error_every``-th line fails with a per-request 400 error, the rest answered),
``"expired"`` (only the first half of the lines answered, the rest expired; OpenAI
status ``expired``). Batch endpoints draw no faults and never sleep ``latency_s``; errors
are queued per endpoint with :meth:`inject_batch_error`: a status (``500``, ``401`` ...)
answers the next request to that endpoint with that error and does nothing, ``"lost"``
carries the request out and then answers 500 (a reply lost after the batch or file was made).
An error may carry a wait: ``(429, 1.5)`` answers 429 with ``Retry-After: 1.5``.
``endpoint_log`` lists ``(endpoint, time.monotonic())`` of every batch request as it arrives.
``endpoint_counts`` counts requests per endpoint (``"POST /v1/batches"``,
``"GET /v1/batches/{id}"``, ...; chat calls as ``"POST /v1/chat/completions"`` and
``"POST /v1/messages"``) and ``batch_log`` lists every answered batch line
(``{"api", "batch", "custom_id", "body", "outcome"}``, outcome ``succeeded`` /
``errored`` / ``expired``).

Malformed results are queued with :meth:`inject_batch_output` for the next batch created
(OpenAI's output file, Anthropic's results): ``unknown_id=k`` adds, after line k (0-based), a
copy of it under a custom_id the batch never held; ``not_json=k`` cuts line k to its first
half (not JSON; its custom_id is still legible); ``no_reply=k`` answers line k with a reply
body without ``choices`` (OpenAI) or a ``succeeded`` message without ``content`` (Anthropic).
The lines are logged in ``batch_log`` as answered (the provider would bill them).

:meth:`wait_until` blocks until a predicate over the server's counters holds (it is
re-checked whenever a request arrives), so a test can act when the N-th request is in,
without sleeping. :meth:`hold_after` answers N more chat requests and then holds every
later one (counted in ``held``) until :meth:`release`: a run that cannot end by itself
while the test acts on it.

Default reply
-------------
Without ``reply=``, the reply is derived from the SHA-256 of the request's messages (and
system prompt), so the same request always gets the same text::

    Fake review 1a2b3c4d: both answers address the question; the first is clearer.
    Verdict: Answer 1

The last line is always ``Verdict: Answer 1`` or ``Verdict: Answer 2`` (never a tie).
The verdict follows ``p1``, a "probability that answer 1 is better" drawn from the hash
in [0.1, 0.9]: at temperature 0 the verdict is ``Answer 1`` iff ``p1 >= 0.5``; at a
temperature above 0 it is sampled from Bernoulli(``p1``) with the server's seeded RNG,
so K samples of one prompt give a verdict fraction near ``p1`` (deterministic given the
request order). When the last message is an assistant prefill (Anthropic), the reply
is the continuation only: ``"1"`` or ``"2"``.

When an OpenAI request sets ``logprobs: true`` with ``top_logprobs: k``, the choice
carries ``logprobs.content``: one entry per whitespace token of the reply; the first
entry's ``top_logprobs`` lists ``"1"`` (log 0.95*p1), ``"2"`` (log 0.95*(1-p1)) and
filler tokens, truncated to k (at least the two digits are always kept).

Usage counts are whitespace words: prompt words across all messages, reply words.

Faults
------
Each request draws a fault with probability ``fault_rate`` from a seeded RNG (choice
uniform over ``faults``), or takes the next fault queued with :meth:`inject`:

``"429"``
    Status 429, header ``Retry-After: <retry_after_s>`` (seconds, may be fractional)
    and a provider-shaped ``rate_limit_error`` body.
``"500"``
    Status 500 with a provider-shaped server error body.
``"timeout"``
    Sleeps ``timeout_hang_s`` before answering normally. Clients in tests must use a
    timeout well below ``timeout_hang_s`` (e.g. 0.5 s against the default 5 s) so
    their timeout fires first. :meth:`stop` wakes hung handlers at once.
``"malformed"``
    Status 200, ``Content-Type: application/json``, a body that is not valid JSON.
``"reset"``
    Closes the socket with SO_LINGER 0 (a TCP RST) without sending any response.
``"400"``, ``"401"``, ``"403"``, ``"404"`` (:data:`HTTP_ERROR_KINDS`, opt-in only)
    That status with a provider-shaped error body: permanent errors a client must not retry.

:meth:`inject_rate_limit` queues ``times`` refusals with a wait of the test's choosing:
status 429 (or 503) and ``Retry-After: <seconds>`` or ``retry-after-ms: <milliseconds>``
(logged as fault ``"429"`` / ``"503"``). Every entry of ``request_log`` carries ``t``, the
server's ``time.monotonic()`` when the request arrived, so a test can check that a client
waited at least as long as it was told (a lower bound, never a race).

Latency ``latency_s`` is slept in every request's own thread before it is answered
(faulted or not), so concurrent requests overlap: 32 concurrent requests at 0.2 s
latency complete in about 0.2 s.

Counters ``requests_total``, ``faults_injected``, ``successes`` and ``max_in_flight``
(the peak number of POSTs being handled at once) and the list
``request_log`` (one ``{"api", "fault", "body", "path", "has_key", "key_sha256", "t"}`` dict
per request; ``has_key`` says whether an API key header arrived and ``key_sha256`` is the
SHA-256 of the key sent (``Authorization: Bearer`` or ``x-api-key``) so tests can tell
which key was used -- the key itself is never kept) are updated under a lock.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import socket
import struct
import threading
import time
import uuid
from collections import Counter, deque
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

__all__ = ["FakeLLMServer", "FAULT_KINDS", "HTTP_ERROR_KINDS", "BATCH_MODES", "BATCH_OUTPUT_EDITS", "default_reply",
           "default_p1"]

FAULT_KINDS = ("429", "500", "timeout", "malformed", "reset")
# permanent client errors, never drawn by default; usable in ``faults=`` and :meth:`inject`
HTTP_ERROR_KINDS = ("400", "401", "403", "404")
_ALL_KINDS = FAULT_KINDS + HTTP_ERROR_KINDS
BATCH_MODES = ("ok", "partial", "expired")
BATCH_OUTPUT_EDITS = ("unknown_id", "not_json", "no_reply")
_ROUTE_NAMES = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}

ReplyFn = Callable[[dict, str], str]


def _messages_digest(body: dict) -> str:
    payload = {"system": body.get("system"), "messages": body.get("messages")}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def default_p1(body: dict) -> float:
    """The fake's "probability that answer 1 is better" for a request, in [0.1, 0.9]."""
    digest = _messages_digest(body)
    return 0.1 + 0.8 * (int(digest[8:16], 16) / 0xFFFFFFFF)


def _has_prefill(body: dict) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and isinstance(messages[-1], dict) and messages[-1].get("role") == "assistant"


def default_reply(body: dict, api: str, *, first: bool | None = None) -> str:
    """The deterministic default reply (see the module docstring for the format).

    ``first`` forces the verdict (True = Answer 1); None takes the argmax of :func:`default_p1`.
    """
    if first is None:
        first = default_p1(body) >= 0.5
    digit = "1" if first else "2"
    if api == "anthropic" and _has_prefill(body):
        return digit
    tag = _messages_digest(body)[:8]
    which = "first" if first else "second"
    return (
        f"Fake review {tag}: both answers address the question; the {which} is clearer.\n"
        f"Verdict: Answer {digit}"
    )


def _count_words(value) -> int:
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(_count_words(v) for v in value)
    if isinstance(value, dict):
        return sum(_count_words(v) for k, v in value.items() if k in ("content", "text"))
    return 0


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256
    allow_reuse_address = True

    fake: "FakeLLMServer"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # TCP_NODELAY, as real API servers set: headers and body are two writes, and
    # Nagle + the client's delayed ACK would otherwise add ~40 ms to every keep-alive reply
    server: _Server

    def log_message(self, format, *args):  # noqa: A002 - silence stderr logging
        pass

    # -- plumbing --------------------------------------------------------------------
    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, payload, *, headers: dict | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _send_routed(self, status: int, payload, content_type: str, headers: dict | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _reset(self) -> None:
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass
        self.close_connection = True

    # -- verbs -----------------------------------------------------------------------
    def do_GET(self):  # noqa: N802
        routed = self.server.fake._batches.route("GET", self.path, b"", self.headers)
        if routed is not None:
            self._send_routed(*routed)
            return
        if self.path.rstrip("/").endswith("/v1/models"):
            self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "fake"}]})
        else:
            self._send(404, {"error": {"message": f"no route GET {self.path}", "type": "not_found"}})

    def do_POST(self):  # noqa: N802
        fake = self.server.fake
        if fake._batches.handles("POST", self.path):
            routed = fake._batches.route("POST", self.path, self._read_body(), self.headers)
            self._send_routed(*routed)
            return
        fake._handler_started()
        try:
            self._post(fake)
        finally:
            fake._handler_done()

    def _post(self, fake: "FakeLLMServer") -> None:
        raw = self._read_body()
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/chat/completions"):
            api = "openai"
        elif path.endswith("/messages"):
            api = "anthropic"
        else:
            api = "unknown"
        try:
            body = json.loads(raw.decode("utf-8")) if raw else {}
        except (UnicodeDecodeError, json.JSONDecodeError):
            body = None
        key = self.headers.get("x-api-key") or ""
        auth = self.headers.get("Authorization") or ""
        if not key and auth.lower().startswith("bearer "):
            key = auth[7:].strip()
        key_digest = hashlib.sha256(key.encode("utf-8")).hexdigest() if key else None
        with fake._lock:
            fake.endpoint_counts[f"POST {_ROUTE_NAMES.get(api, path)}"] += 1
            fake._lock.notify_all()
        fault, wait_headers, hold = fake._begin(api, body, path, bool(key), key_digest)
        if hold:
            fake._released.wait()
        if fake.latency_s > 0:
            fake._stop_event.wait(fake.latency_s)
        if fault == "reset":
            self._reset()
            return
        if wait_headers is not None:  # inject_rate_limit: 429 or 503 with the wait the test chose
            status = int(fault)
            self._send(status, _error_body(api, status, f"refused with a wait (fake {status})"), headers=wait_headers)
            return
        if fault == "429":
            self._send(429, _error_body(api, 429, "rate limit exceeded (fake)"),
                       headers={"Retry-After": _fmt_seconds(fake.retry_after_s)})
            return
        if fault == "500":
            self._send(500, _error_body(api, 500, "internal server error (fake)"))
            return
        if fault in HTTP_ERROR_KINDS:
            status = int(fault)
            self._send(status, _error_body(api if api != "unknown" else "openai", status, f"client error {status} (fake)"))
            return
        if fault == "malformed":
            self._send(200, b'{"id": "chatcmpl-broken", "choices": [ {"message": ')
            return
        if fault == "timeout":
            fake._stop_event.wait(fake.timeout_hang_s)
        if api == "unknown":
            self._send(404, _error_body("openai", 404, f"no route POST {self.path}"))
            return
        if body is None or not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._send(400, _error_body(api, 400, "request body must be JSON with a 'messages' list"))
            return
        if body.get("stream"):
            self._send(400, _error_body(api, 400, "streaming is not supported by the fake server"))
            return
        try:
            payload = fake._answer(api, body)
        except Exception as exc:  # a user reply callable failed: report it as a 500
            self._send(500, _error_body(api, 500, f"reply callable raised {type(exc).__name__}: {exc}"))
            return
        self._send(200, payload)
        if fault is None:
            fake._count_success()


def _newest_first_page(batches: dict, *, after: str | None, limit: int) -> tuple[list[dict], bool]:
    """One page of a provider's batch list, newest (largest id) first, after the id ``after``;
    and whether more follow (both APIs page this way: OpenAI's ``after``, Anthropic's ``after_id``)."""
    ordered = sorted(batches.values(), key=lambda b: b["id"], reverse=True)
    if after:
        ids = [b["id"] for b in ordered]
        ordered = ordered[ids.index(after) + 1:] if after in ids else []
    return ordered[:limit], len(ordered) > limit


def _fmt_seconds(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))


def _error_body(api: str, status: int, message: str) -> dict:
    kind = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
            429: "rate_limit_error", 500: "api_error"}.get(status, "api_error")
    if api == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    openai_kind = {429: "rate_limit_error", 500: "server_error", 401: "invalid_api_key"}.get(status, "invalid_request_error")
    return {"error": {"message": message, "type": openai_kind, "param": None, "code": None}}


class FakeLLMServer:
    """Real HTTP server on 127.0.0.1 (ephemeral port) in a background thread, speaking
    OpenAI Chat Completions (POST /v1/chat/completions) and Anthropic Messages (POST /v1/messages),
    and both providers' batch APIs (files, batches, message batches).

    Parameters
    ----------
    reply : callable ``(body: dict, api: str) -> str`` giving the reply text (``api`` is
        ``"openai"`` or ``"anthropic"``); default :func:`default_reply`.
    latency_s : seconds slept (in the request's own thread) before every answer.
    fault_rate : probability that a request gets a fault, drawn from ``random.Random(seed)``.
    faults : the fault kinds to choose from, a subset of ``FAULT_KINDS`` (plus, opt-in,
        ``HTTP_ERROR_KINDS``).
    retry_after_s : the ``Retry-After`` header value sent with a 429.
    timeout_hang_s : how long a ``"timeout"`` fault hangs before answering; clients must
        use a shorter timeout.
    seed : seeds the fault RNG and the temperature > 0 verdict sampling.
    batch_delay_s : seconds a batch stays in progress after its creation (see "Batch
        endpoints" in the module docstring).
    batch_mode : how batches are answered when no mode is queued with
        :meth:`inject_batch`: ``"ok"``, ``"partial"`` or ``"expired"``.
    batch_error_every : in a ``"partial"`` batch, every n-th line fails.

    Examples
    --------
    >>> with FakeLLMServer(fault_rate=0.3) as server:      # doctest: +SKIP
    ...     client = openai.OpenAI(base_url=server.openai_base_url, api_key="x", max_retries=0, timeout=0.5)
    """

    def __init__(self, *, reply: ReplyFn | None = None, latency_s: float = 0.0, fault_rate: float = 0.0,
                 faults=FAULT_KINDS, retry_after_s: float = 0.05,
                 timeout_hang_s: float = 5.0, seed: int = 0, batch_delay_s: float = 0.0,
                 batch_mode: str = "ok", batch_error_every: int = 3) -> None:
        faults = tuple(faults)
        unknown = [f for f in faults if f not in _ALL_KINDS]
        if unknown:
            raise ValueError(f"faults: unknown fault kind(s) {unknown!r}; choose from {_ALL_KINDS}")
        if not 0.0 <= fault_rate <= 1.0:
            raise ValueError(f"fault_rate must be in [0, 1], got {fault_rate!r}")
        if fault_rate > 0 and not faults:
            raise ValueError("faults must not be empty when fault_rate > 0")
        for name, value in (("latency_s", latency_s), ("retry_after_s", retry_after_s),
                            ("timeout_hang_s", timeout_hang_s)):
            if value < 0:
                raise ValueError(f"{name} must be >= 0, got {value!r}")
        if batch_mode not in BATCH_MODES:
            raise ValueError(f"batch_mode must be one of {BATCH_MODES}, got {batch_mode!r}")
        if batch_delay_s < 0:
            raise ValueError(f"batch_delay_s must be >= 0, got {batch_delay_s!r}")
        if not isinstance(batch_error_every, int) or batch_error_every < 1:
            raise ValueError(f"batch_error_every must be an integer >= 1, got {batch_error_every!r}")
        self.batch_delay_s = float(batch_delay_s)
        self.batch_mode = batch_mode
        self.batch_error_every = batch_error_every
        self._batch_modes: deque[str] = deque()
        self._batch_edits: deque[dict] = deque()
        self._batch_errors: dict[str, deque] = {}
        self.endpoint_counts: Counter[str] = Counter()
        self.endpoint_log: list[tuple[str, float]] = []
        self.batch_log: list[dict] = []
        self._batches = _Batches(self)
        self.reply = reply
        self.latency_s = float(latency_s)
        self.fault_rate = float(fault_rate)
        self.faults = faults
        self.retry_after_s = float(retry_after_s)
        self.timeout_hang_s = float(timeout_hang_s)
        self.seed = seed
        self._rng = random.Random(seed)
        self._sample_rng = random.Random(seed + 1)
        # a Condition, so that wait_until() wakes when a counter changes (``with self._lock`` as a lock)
        self._lock = threading.Condition()
        self._queued: deque = deque()  # fault kinds, or (kind, wait headers) from inject_rate_limit
        self._stop_event = threading.Event()
        self._released = threading.Event()  # hold_after: held requests go on once it is set
        self._hold_budget: int | None = None
        self.held = 0
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self.requests_total = 0
        self.faults_injected = 0
        self.successes = 0
        self.request_log: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> "FakeLLMServer":
        """Bind 127.0.0.1 on an ephemeral port and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        self._stop_event.clear()
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"FakeLLMServer:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake hung handlers and close the socket."""
        if self._httpd is None:
            return
        self._stop_event.set()
        self._released.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> "FakeLLMServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- addresses -------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeLLMServer is not started (use start() or a with block)")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    # -- control ---------------------------------------------------------------------
    def inject(self, *faults: str) -> None:
        """Queue faults for the next requests, in order (they take precedence over fault_rate)."""
        unknown = [f for f in faults if f not in _ALL_KINDS]
        if unknown:
            raise ValueError(f"faults: unknown fault kind(s) {unknown!r}; choose from {_ALL_KINDS}")
        with self._lock:
            self._queued.extend(faults)

    def hold_after(self, answered: int) -> None:
        """Answer the next ``answered`` chat requests as usual, then hold every later one until :meth:`release`.

        ``held`` counts the requests held (:meth:`wait_until` can wait for it); :meth:`stop`
        releases them too.
        """
        if not isinstance(answered, int) or answered < 0:
            raise ValueError(f"answered must be an integer >= 0, got {answered!r}")
        with self._lock:
            self._released.clear()
            self._hold_budget = answered

    def release(self) -> None:
        """Let the held requests (and every later one) be answered."""
        with self._lock:
            self._hold_budget = None
            self._released.set()

    def inject_rate_limit(self, times: int = 1, *, retry_after_s: float = 1.0, header: str = "Retry-After",
                          status: int = 429) -> None:
        """Queue ``times`` refusals (after the faults already queued): ``status`` with a wait header.

        ``header`` is ``"Retry-After"`` (seconds, as given) or ``"retry-after-ms"``
        (milliseconds, as OpenAI sends it); ``status`` is 429 or 503.
        """
        if not isinstance(times, int) or times < 1:
            raise ValueError(f"times must be an integer >= 1, got {times!r}")
        if not retry_after_s >= 0:
            raise ValueError(f"retry_after_s must be >= 0, got {retry_after_s!r}")
        if status not in (429, 503):
            raise ValueError(f"status must be 429 or 503, got {status!r}")
        if header.lower() == "retry-after":
            value = _fmt_seconds(retry_after_s)
        elif header.lower() == "retry-after-ms":
            value = _fmt_seconds(retry_after_s * 1000.0)
        else:
            raise ValueError(f"header must be 'Retry-After' or 'retry-after-ms', got {header!r}")
        with self._lock:
            self._queued.extend([(str(status), {header: value})] * times)

    def inject_batch(self, *modes: str) -> None:
        """Queue batch modes (``"ok"``, ``"partial"``, ``"expired"``) for the next batches created, in order."""
        unknown = [m for m in modes if m not in BATCH_MODES]
        if unknown:
            raise ValueError(f"batch modes: unknown {unknown!r}; choose from {BATCH_MODES}")
        with self._lock:
            self._batch_modes.extend(modes)

    def inject_batch_output(self, **edits: int) -> None:
        """Malform the results of the next batch created: ``unknown_id=k``, ``not_json=k``, ``no_reply=k``.

        ``k`` is a 0-based line of the answered lines (see "Malformed results" in the module docstring).
        """
        unknown = sorted(set(edits) - set(BATCH_OUTPUT_EDITS))
        if unknown or not edits:
            raise ValueError(f"edits must be some of {BATCH_OUTPUT_EDITS}, got {sorted(edits)}")
        for kind, line in edits.items():
            if not isinstance(line, int) or line < 0:
                raise ValueError(f"{kind} must be a line number >= 0, got {line!r}")
        with self._lock:
            self._batch_edits.append(dict(edits))

    def wait_until(self, predicate: Callable[["FakeLLMServer"], bool], *, timeout: float = 60.0) -> bool:
        """Block until ``predicate(server)`` holds (checked on every request); False after ``timeout`` s.

        ``predicate`` reads the counters (``requests_total``, ``endpoint_counts`` ...) under the
        server's lock: it must not call methods that take another lock.
        """
        with self._lock:
            return self._lock.wait_for(lambda: predicate(self), timeout)

    def inject_batch_error(self, endpoint: str, *errors) -> None:
        """Queue errors for the next requests to a batch ``endpoint`` (e.g. ``"POST /v1/batches"``).

        Each error is an HTTP status (the request is refused and nothing happens), a
        ``(status, seconds)`` pair (refused with ``Retry-After: <seconds>``) or ``"lost"``
        (the request is carried out, then answered with a 500).
        """
        names = {name for _, _, name in _ROUTES}
        if endpoint not in names:
            raise ValueError(f"endpoint must be one of {sorted(names)}, got {endpoint!r}")
        for error in errors:
            status = error[0] if isinstance(error, tuple) and len(error) == 2 and error[1] >= 0 else error
            if error != "lost" and not (isinstance(status, int) and 400 <= status <= 599):
                raise ValueError(f"errors must be HTTP statuses (400-599), (status, seconds) or 'lost', got {error!r}")
        with self._lock:
            self._batch_errors.setdefault(endpoint, deque()).extend(errors)

    def batches_created(self) -> int:
        """Batches the server holds, both APIs (a refused create made none; a lost reply made one)."""
        with self._batches.lock:
            return len(self._batches.openai) + len(self._batches.anthropic)

    def files_uploaded(self) -> int:
        """Files uploaded with purpose ``batch`` (batch output files not counted)."""
        with self._batches.lock:
            return sum(f["purpose"] == "batch" for f in self._batches.files.values())

    def reset_counts(self) -> None:
        """Zero the counters and clear the request log (queued faults are kept)."""
        with self._lock:
            self.endpoint_counts = Counter()
            self.endpoint_log = []
            self.batch_log = []
            self.requests_total = 0
            self.faults_injected = 0
            self.successes = 0
            self.request_log = []
            self.max_in_flight = self.in_flight

    # -- used by the handler ---------------------------------------------------------
    def _begin(self, api: str, body, path: str, has_key: bool,
               key_digest: str | None = None) -> tuple[str | None, dict | None, bool]:
        """``(fault, headers, hold)``: the fault drawn or queued, the wait headers of an
        :meth:`inject_rate_limit`, and whether to hold the request until :meth:`release`."""
        arrived = time.monotonic()
        headers = None
        hold = False
        with self._lock:
            self.requests_total += 1
            if self._hold_budget is not None:
                if self._hold_budget > 0:
                    self._hold_budget -= 1
                else:
                    hold = True
                    self.held += 1
            if self._queued:
                fault = self._queued.popleft()
                if isinstance(fault, tuple):
                    fault, headers = fault
            elif self.fault_rate > 0 and self._rng.random() < self.fault_rate:
                fault = self._rng.choice(self.faults)
            else:
                fault = None
            if fault is not None:
                self.faults_injected += 1
            self.request_log.append({"api": api, "fault": fault, "body": body, "path": path, "has_key": has_key,
                                     "key_sha256": key_digest, "t": arrived})
            self._lock.notify_all()
        return fault, headers, hold

    def _handler_started(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _handler_done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _count_success(self) -> None:
        with self._lock:
            self.successes += 1
            self._lock.notify_all()

    def _answer(self, api: str, body: dict) -> dict:
        p1 = default_p1(body)
        if self.reply is not None:
            text = self.reply(body, api)
            if not isinstance(text, str):
                raise TypeError(f"reply must return str, got {type(text).__name__}")
        else:
            temperature = float(body.get("temperature") or 0.0)
            if temperature > 0:
                with self._lock:
                    first = self._sample_rng.random() < p1
            else:
                first = p1 >= 0.5
            text = default_reply(body, api, first=first)
        model = str(body.get("model", "fake-model"))
        prompt_tokens = _count_words(body.get("messages")) + _count_words(body.get("system") or "")
        completion_tokens = len(text.split())
        if api == "anthropic":
            return {
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": prompt_tokens, "output_tokens": completion_tokens},
            }
        logprobs = None
        if body.get("logprobs"):
            logprobs = {"content": _logprob_content(text, p1, int(body.get("top_logprobs") or 0)), "refusal": None}
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": logprobs,
                "finish_reason": "stop",
            }],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }


def _token(token: str, logprob: float) -> dict:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}


def _logprob_content(text: str, p1: float, k: int) -> list[dict]:
    words = text.split() or [""]
    top = [_token("1", math.log(0.95 * p1)), _token("2", math.log(0.95 * (1.0 - p1))),
           _token("Answer", math.log(0.03)), _token(" ", math.log(0.01)), _token("3", math.log(0.005))]
    top = top[: max(k, 2)]
    content = []
    for i, word in enumerate(words):
        entry = _token(word if i == 0 else " " + word, -0.01)
        entry["top_logprobs"] = top if i == 0 else [_token(entry["token"], -0.01)][:max(k, 1)]
        content.append(entry)
    return content


# ----------------------------------------------------------------------------- batches

_ROUTES = (  # (verb, pattern parts, endpoint name); "*" matches one path segment
    ("POST", ("v1", "files"), "POST /v1/files"),
    ("GET", ("v1", "files"), "GET /v1/files"),
    ("GET", ("v1", "files", "*"), "GET /v1/files/{id}"),
    ("GET", ("v1", "files", "*", "content"), "GET /v1/files/{id}/content"),
    ("POST", ("v1", "batches"), "POST /v1/batches"),
    ("GET", ("v1", "batches"), "GET /v1/batches"),
    ("GET", ("v1", "batches", "*"), "GET /v1/batches/{id}"),
    ("POST", ("v1", "messages", "batches"), "POST /v1/messages/batches"),
    ("GET", ("v1", "messages", "batches"), "GET /v1/messages/batches"),
    ("GET", ("v1", "messages", "batches", "*"), "GET /v1/messages/batches/{id}"),
    ("GET", ("v1", "messages", "batches", "*", "results"), "GET /v1/messages/batches/{id}/results"),
)


def _match(verb: str, path: str):
    parts = tuple(p for p in path.split("?")[0].split("/") if p)
    for route_verb, pattern, name in _ROUTES:
        if route_verb == verb and len(parts) == len(pattern) and all(
                want == "*" or want == got for want, got in zip(pattern, parts)):
            return name, [got for want, got in zip(pattern, parts) if want == "*"]
    return None, []


def _query(path: str) -> dict:
    from urllib.parse import parse_qs, urlsplit

    return {k: v[-1] for k, v in parse_qs(urlsplit(path).query).items()}


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat().replace("+00:00", "Z")


def _multipart(body: bytes, content_type: str) -> dict:
    """The fields of a multipart/form-data body: name -> (filename or None, bytes)."""
    boundary = None
    for part in content_type.split(";"):
        key, _, value = part.strip().partition("=")
        if key.lower() == "boundary":
            boundary = value.strip('"')
    if not boundary:
        raise ValueError("multipart body without a boundary")
    fields = {}
    for chunk in body.split(b"--" + boundary.encode()):
        if not chunk.strip() or chunk.strip() == b"--":
            continue
        head, _, data = chunk.lstrip(b"\r\n").partition(b"\r\n\r\n")
        if data.endswith(b"\r\n"):
            data = data[:-2]
        disposition = next((line for line in head.decode("utf-8", "replace").split("\r\n")
                            if line.lower().startswith("content-disposition")), "")
        name = filename = None
        for item in disposition.split(";"):
            key, _, value = item.strip().partition("=")
            if key == "name":
                name = value.strip('"')
            elif key == "filename":
                filename = value.strip('"')
        if name:
            fields[name] = (filename, data)
    return fields


class _Batches:
    """The batch endpoints' state: files, OpenAI batches, Anthropic batches (under the server's lock)."""

    def __init__(self, fake: "FakeLLMServer") -> None:
        self.fake = fake
        self.files: dict[str, dict] = {}
        self.openai: dict[str, dict] = {}
        self.anthropic: dict[str, dict] = {}
        self.counter = 0
        self.lock = threading.RLock()

    def handles(self, verb: str, path: str) -> bool:
        return _match(verb, path)[0] is not None

    def _id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter:06d}{uuid.uuid4().hex[:10]}"

    def route(self, verb: str, path: str, body: bytes, headers):
        """``(status, payload, content type)`` for a batch endpoint, or None when it is not one."""
        name, args = _match(verb, path)
        if name is None:
            return None
        fake = self.fake
        arrived = time.monotonic()
        with fake._lock:
            fake.endpoint_counts[name] += 1
            fake.endpoint_log.append((name, arrived))
            queued = fake._batch_errors.get(name)
            error = queued.popleft() if queued else None
            fake._lock.notify_all()
        api = "anthropic" if "/messages/" in path else "openai"
        if isinstance(error, tuple):
            status, wait = error
            return status, _error_body(api, status, f"injected error {status} (fake)"), "application/json", {
                "Retry-After": _fmt_seconds(wait)}
        if isinstance(error, int):
            return error, _error_body(api, error, f"injected error {error} (fake)"), "application/json"
        with self.lock:  # one batch request at a time: a batch is answered once, by the first read after its delay
            try:
                answer = getattr(self, "_" + name.split(" ", 1)[1].replace("/v1/", "").replace("/{id}", "_id")
                                 .replace("/", "_"))(path, body, headers, *args)
                if error == "lost":
                    return 500, _error_body(api, 500, "the reply was lost (fake)"), "application/json"
                return answer
            except _NotFound as exc:
                return 404, _error_body(api, 404, str(exc)), "application/json"
            except ValueError as exc:
                return 400, _error_body(api, 400, str(exc)), "application/json"

    # -- files -----------------------------------------------------------------------
    def _file_object(self, file: dict) -> dict:
        return {"id": file["id"], "object": "file", "bytes": len(file["data"]), "created_at": int(file["created"]),
                "filename": file["filename"], "purpose": file["purpose"], "status": "processed",
                "status_details": None}

    def _add_file(self, filename: str, purpose: str, data: bytes) -> dict:
        file = {"id": self._id("file-"), "filename": filename, "purpose": purpose, "data": data,
                "created": time.time()}
        self.files[file["id"]] = file
        return file

    def _files(self, path, body, headers):
        if headers.get("Content-Type", "").lower().startswith("multipart/"):
            fields = _multipart(body, headers.get("Content-Type", ""))
            filename, data = fields.get("file", (None, None))
            purpose = (fields.get("purpose") or (None, b""))[1].decode()
            if data is None or purpose != "batch":
                raise ValueError("upload needs a 'file' and purpose 'batch'")
            return 200, self._file_object(self._add_file(filename or "upload.jsonl", purpose, data)), "application/json"
        query = _query(path)
        files = [f for f in self.files.values() if query.get("purpose") in (None, f["purpose"])]
        files.sort(key=lambda f: f["id"], reverse=True)
        return 200, {"object": "list", "data": [self._file_object(f) for f in files], "has_more": False}, \
            "application/json"

    def _file(self, file_id: str) -> dict:
        if file_id not in self.files:
            raise _NotFound(f"no file {file_id!r}")
        return self.files[file_id]

    def _files_id(self, path, body, headers, file_id):
        return 200, self._file_object(self._file(file_id)), "application/json"

    def _files_id_content(self, path, body, headers, file_id):
        return 200, self._file(file_id)["data"], "application/octet-stream"

    # -- answering -------------------------------------------------------------------
    def _mode(self) -> str:
        with self.fake._lock:
            return self.fake._batch_modes.popleft() if self.fake._batch_modes else self.fake.batch_mode

    def _edits(self) -> dict:
        with self.fake._lock:
            return self.fake._batch_edits.popleft() if self.fake._batch_edits else {}

    def _outcomes(self, mode: str, n: int) -> list[str]:
        if mode == "expired":
            return ["succeeded" if i < n // 2 else "expired" for i in range(n)]
        if mode == "partial":
            every = self.fake.batch_error_every
            return ["errored" if (i + 1) % every == 0 else "succeeded" for i in range(n)]
        return ["succeeded"] * n

    def _answer_line(self, api: str, batch_id: str, custom_id: str, body: dict, outcome: str):
        with self.fake._lock:
            self.fake.batch_log.append({"api": api, "batch": batch_id, "custom_id": custom_id, "body": body,
                                        "outcome": outcome})
        return self.fake._answer(api, body) if outcome == "succeeded" else None

    def _ready(self, batch: dict) -> bool:
        return time.time() >= batch["created"] + self.fake.batch_delay_s

    # -- OpenAI batches ----------------------------------------------------------------
    def _batches(self, path, body, headers):
        if body:
            request = json.loads(body.decode("utf-8"))
            file = self._file(str(request.get("input_file_id")))
            if request.get("endpoint") != "/v1/chat/completions":
                raise ValueError(f"endpoint must be /v1/chat/completions, got {request.get('endpoint')!r}")
            lines = [json.loads(line) for line in file["data"].decode("utf-8").splitlines() if line.strip()]
            ids = [line.get("custom_id") for line in lines]
            if len(set(ids)) != len(ids) or not all(isinstance(i, str) and i for i in ids):
                raise ValueError("every line needs a unique custom_id")
            for line in lines:
                if line.get("method") != "POST" or line.get("url") != "/v1/chat/completions" or \
                        not isinstance(line.get("body"), dict) or not isinstance(line["body"].get("messages"), list):
                    raise ValueError(f"line {line.get('custom_id')!r}: needs method POST, url /v1/chat/completions "
                                     "and a body with messages")
            now = time.time()
            batch = {"id": self._id("batch_"), "created": now, "lines": lines, "mode": self._mode(),
                     "edits": self._edits(),
                     "object": {"id": None, "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
                                "input_file_id": file["id"],
                                "completion_window": request.get("completion_window", "24h"),
                                "status": "in_progress", "output_file_id": None, "error_file_id": None,
                                "created_at": int(now), "in_progress_at": int(now), "expires_at": int(now) + 86400,
                                "finalizing_at": None, "completed_at": None, "failed_at": None, "expired_at": None,
                                "cancelling_at": None, "cancelled_at": None,
                                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                                "metadata": request.get("metadata")}}
            batch["object"]["id"] = batch["id"]
            self.openai[batch["id"]] = batch
            return 200, batch["object"], "application/json"
        query = _query(path)
        page, has_more = _newest_first_page(self.openai, after=query.get("after"), limit=int(query.get("limit", 20)))
        page = [self._openai_state(b) for b in page]
        return 200, {"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                     "last_id": page[-1]["id"] if page else None, "has_more": has_more}, "application/json"

    def _batches_id(self, path, body, headers, batch_id):
        if batch_id not in self.openai:
            raise _NotFound(f"no batch {batch_id!r}")
        return 200, self._openai_state(self.openai[batch_id]), "application/json"

    def _openai_state(self, batch: dict) -> dict:
        obj = batch["object"]
        if obj["status"] != "in_progress" or not self._ready(batch):
            return obj
        outcomes = self._outcomes(batch["mode"], len(batch["lines"]))
        output, errors = [], []
        for line, outcome in zip(batch["lines"], outcomes):
            reply = self._answer_line("openai", batch["id"], line["custom_id"], line["body"], outcome)
            rid = f"req_{uuid.uuid4().hex[:16]}"
            if outcome == "succeeded":
                output.append({"id": f"batch_req_{uuid.uuid4().hex[:16]}", "custom_id": line["custom_id"],
                               "response": {"status_code": 200, "request_id": rid, "body": reply}, "error": None})
            elif outcome == "errored":
                errors.append({"id": f"batch_req_{uuid.uuid4().hex[:16]}", "custom_id": line["custom_id"],
                               "response": {"status_code": 400, "request_id": rid,
                                            "body": _error_body("openai", 400, "invalid request (fake batch error)")},
                               "error": None})
            else:
                errors.append({"id": f"batch_req_{uuid.uuid4().hex[:16]}", "custom_id": line["custom_id"],
                               "response": None, "error": {"code": "batch_expired",
                                                           "message": "This request could not be executed before the "
                                                                      "completion window expired."}})
        jsonl = lambda rows: "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")  # noqa: E731
        now = int(time.time())
        if output:
            data = _malformed(output, batch["edits"], reply=lambda row: row["response"]["body"], drop="choices")
            obj["output_file_id"] = self._add_file(f"{batch['id']}_output.jsonl", "batch_output", data)["id"]
        if errors:
            obj["error_file_id"] = self._add_file(f"{batch['id']}_error.jsonl", "batch_output", jsonl(errors))["id"]
        obj["request_counts"] = {"total": len(outcomes), "completed": outcomes.count("succeeded"),
                                 "failed": len(outcomes) - outcomes.count("succeeded")}
        if batch["mode"] == "expired":
            obj.update(status="expired", expired_at=now)
        else:
            obj.update(status="completed", finalizing_at=now, completed_at=now)
        return obj

    # -- Anthropic batches -------------------------------------------------------------
    def _messages_batches(self, path, body, headers):
        if body:
            request = json.loads(body.decode("utf-8"))
            lines = request.get("requests")
            if not isinstance(lines, list) or not lines:
                raise ValueError("requests must be a non-empty list")
            ids = [line.get("custom_id") for line in lines]
            if len(set(ids)) != len(ids) or not all(isinstance(i, str) and i for i in ids):
                raise ValueError("every request needs a unique custom_id")
            for line in lines:
                if not isinstance(line.get("params"), dict) or not isinstance(line["params"].get("messages"), list):
                    raise ValueError(f"request {line.get('custom_id')!r}: params need messages")
            now = time.time()
            batch = {"id": self._id("msgbatch_"), "created": now, "lines": lines, "mode": self._mode(),
                     "edits": self._edits(), "results": None,
                     "object": {"id": None, "type": "message_batch", "processing_status": "in_progress",
                                "request_counts": {"processing": len(lines), "succeeded": 0, "errored": 0,
                                                   "canceled": 0, "expired": 0},
                                "ended_at": None, "created_at": _iso(now), "expires_at": _iso(now + 86400),
                                "archived_at": None, "cancel_initiated_at": None, "results_url": None}}
            batch["object"]["id"] = batch["id"]
            self.anthropic[batch["id"]] = batch
            return 200, batch["object"], "application/json"
        query = _query(path)
        page, has_more = _newest_first_page(self.anthropic, after=query.get("after_id"),
                                            limit=int(query.get("limit", 20)))
        page = [self._anthropic_state(b) for b in page]
        return 200, {"data": page, "has_more": has_more, "first_id": page[0]["id"] if page else None,
                     "last_id": page[-1]["id"] if page else None}, "application/json"

    def _anthropic_batch(self, batch_id: str) -> dict:
        if batch_id not in self.anthropic:
            raise _NotFound(f"no message batch {batch_id!r}")
        return self.anthropic[batch_id]

    def _messages_batches_id(self, path, body, headers, batch_id):
        return 200, self._anthropic_state(self._anthropic_batch(batch_id)), "application/json"

    def _messages_batches_id_results(self, path, body, headers, batch_id):
        batch = self._anthropic_batch(batch_id)
        self._anthropic_state(batch)
        if batch["results"] is None:
            raise ValueError(f"batch {batch_id!r} is still in progress; results are available once it has ended")
        return 200, batch["results"], "application/binary"

    def _anthropic_state(self, batch: dict) -> dict:
        obj = batch["object"]
        if obj["processing_status"] != "in_progress" or not self._ready(batch):
            return obj
        outcomes = self._outcomes(batch["mode"], len(batch["lines"]))
        rows = []
        for line, outcome in zip(batch["lines"], outcomes):
            reply = self._answer_line("anthropic", batch["id"], line["custom_id"], line["params"], outcome)
            if outcome == "succeeded":
                result = {"type": "succeeded", "message": reply}
            elif outcome == "errored":
                error = _error_body("anthropic", 400, "invalid request (fake batch error)")
                result = {"type": "errored", "error": error}
            else:
                result = {"type": "expired"}
            rows.append({"custom_id": line["custom_id"], "result": result})
        batch["results"] = _malformed(rows, batch["edits"], reply=lambda row: row["result"].get("message"),
                                      drop="content")
        obj["request_counts"] = {"processing": 0, "succeeded": outcomes.count("succeeded"),
                                 "errored": outcomes.count("errored"), "canceled": 0,
                                 "expired": outcomes.count("expired")}
        obj.update(processing_status="ended", ended_at=_iso(time.time()),
                   results_url=f"{self.fake.url}/v1/messages/batches/{batch['id']}/results")
        return obj


def _malformed(rows: list[dict], edits: dict, *, reply: Callable[[dict], dict | None], drop: str) -> bytes:
    """The JSONL of ``rows`` with the edits of :meth:`FakeLLMServer.inject_batch_output` applied."""
    rows = [json.loads(json.dumps(row)) for row in rows]  # deep copies: the batch log keeps the originals
    if "no_reply" in edits:
        body = reply(rows[edits["no_reply"]])
        if body is not None:
            body.pop(drop, None)
    lines = [json.dumps(row) for row in rows]
    if "not_json" in edits:
        text = lines[edits["not_json"]]
        lines[edits["not_json"]] = text[: len(text) // 2]
    if "unknown_id" in edits:
        k = edits["unknown_id"]
        stranger = {**rows[k], "custom_id": f"unknown-{k}"}
        lines.insert(k + 1, json.dumps(stranger))
    return "".join(line + "\n" for line in lines).encode("utf-8")


class _NotFound(Exception):
    pass
