"""Shared plumbing for the SDK backends: lazy imports, per-event-loop clients, error mapping, the retry decision.

:func:`should_retry` is the one decision every provider shares (inspect_ai's
``ModelAPI.should_retry``): the runner's live calls and the batch driver's requests both
retry exactly the errors it accepts, waiting as :class:`peercore.runner.RetryPolicy` says
(Retry-After first). It lives here rather than in :mod:`.base` beside the error classes
it reads, which another change owns; it needs nothing but them."""

from __future__ import annotations

import asyncio
import email.utils
import importlib
import json
import time
import weakref

from .base import BackendError, MissingCredentials, RetryableError

_RETRYABLE_STATUS = {408, 409, 425, 429}

__all__ = ["import_sdk", "LoopClients", "response_json", "retry_after_seconds", "map_error", "catchable",
           "should_retry"]


def import_sdk(module: str, package: str):
    """Import an SDK lazily, or say exactly what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise BackendError(f"the {module!r} SDK is not installed: pip install {package}") from exc


class LoopClients:
    """One SDK client per running event loop (an httpx pool must not cross loops)."""

    def __init__(self) -> None:
        self._clients: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def get(self, factory):
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = factory()
            self._clients[loop] = client
        return client

    async def close_current(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        client = self._clients.pop(loop, None)
        if client is not None:
            await client.close()


def response_json(response) -> dict:
    """The SDK response as JSON-ready data (kept as ``Completion.raw``); ``{}`` if it cannot dump."""
    try:
        return response.model_dump(mode="json")
    except Exception:  # noqa: BLE001 - non-pydantic stand-ins
        return {}


def retry_after_seconds(headers) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def map_error(exc: BaseException, sdk, *, provider: str, env_var: str | None, secret: str | None) -> BackendError:
    """Translate an SDK exception into the backend protocol's errors.

    =========================================  ==========================================
    SDK / transport failure                    raised as
    =========================================  ==========================================
    429 (``RateLimitError``)                   ``RetryableError(status=429, retry_after=``
                                               from ``retry-after-ms``/``retry-after``)
    5xx, 408, 409, 425                         ``RetryableError(status=...)``
    timeout (``APITimeoutError``)              ``RetryableError(status=None)``
    connection reset/refused                   ``RetryableError(status=None)``
    (``APIConnectionError``)
    200 with a body that is not JSON           ``RetryableError``: a truncated body or a
    (``json.JSONDecodeError``), or a body the  proxy glitch, not a property of the request;
    SDK cannot validate                        the runner caps retries, so a persistent
                                               fault still ends as a failure
    401, 403                                   ``BackendError`` naming the key variable
    other 4xx (400, 404, 422, ...)             ``BackendError`` with the provider message
    =========================================  ==========================================

    The key (``secret``) is scrubbed from every message.
    """

    def scrub(text: str) -> str:
        return text.replace(secret, "***") if secret else text

    status_error = getattr(sdk, "APIStatusError", ())
    if isinstance(exc, getattr(sdk, "APITimeoutError", ())):
        return RetryableError(f"{provider}: request timed out")
    if isinstance(exc, getattr(sdk, "APIConnectionError", ())):
        cause = exc.__cause__ or exc.__context__
        detail = f" ({type(cause).__name__})" if cause is not None else ""
        return RetryableError(scrub(f"{provider}: connection failed{detail}: {exc}"))
    if isinstance(exc, status_error):
        status = int(getattr(exc, "status_code", 0) or 0)
        message = scrub(f"{provider}: HTTP {status}: {getattr(exc, 'message', exc)}")
        if status == 429 or status in _RETRYABLE_STATUS or status >= 500:
            headers = getattr(getattr(exc, "response", None), "headers", None)
            return RetryableError(message, status=status, retry_after=retry_after_seconds(headers))
        if status in (401, 403) and env_var:
            return BackendError(scrub(f"{provider}: HTTP {status}: the key was refused; "
                                      f"set a valid {env_var} (environment or .streamlit/secrets.toml)"))
        return BackendError(message)
    if isinstance(exc, (json.JSONDecodeError, getattr(sdk, "APIResponseValidationError", ()))):
        return RetryableError(scrub(f"{provider}: malformed response body ({type(exc).__name__}: {exc})"))
    if isinstance(exc, (BackendError, MissingCredentials)):
        return exc
    return BackendError(scrub(f"{provider}: unexpected {type(exc).__name__}: {exc}"))


def catchable(sdk) -> tuple[type[BaseException], ...]:
    """The exception types :func:`map_error` understands."""
    names = ("APIError", "APIStatusError", "APIConnectionError", "APITimeoutError", "APIResponseValidationError")
    return tuple(getattr(sdk, n) for n in names if hasattr(sdk, n)) + (json.JSONDecodeError,)


def should_retry(error: BaseException) -> bool:
    """Whether a failed attempt is worth another: the retry decision every provider shares.

    Yes for :class:`~.base.RetryableError` (429, 5xx, 408/409/425, timeouts, dropped
    connections and malformed bodies, as :func:`map_error` maps the OpenAI and Anthropic
    SDKs' exceptions, OpenAI-compatible servers' included) and for a bare
    :class:`TimeoutError` or :class:`ConnectionError` (the runner's own per-attempt
    timeout, a local server going away); an error that says for itself (a ``retryable``
    attribute, as :class:`peercore.jobs.batch.BatchError` does) is taken at its word.
    No for everything else: a missing or refused key, a bad request, a bug.
    """
    if isinstance(error, MissingCredentials):
        return False
    if isinstance(error, RetryableError):
        return True
    says = getattr(error, "retryable", None)
    if isinstance(says, bool):
        return says
    return isinstance(error, (TimeoutError, ConnectionError))
