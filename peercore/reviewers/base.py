"""The one small protocol every LLM backend implements, and the call it makes.

A *backend* sends one chat request to one model and returns one completion: that is
the unit the runner caches, retries, rate-limits and pays for. Judging logic (prompts,
verdict parsing, probabilities from logprobs, logits or samples) is built on top of
:meth:`Backend.complete`, so every paid call goes through the runner's cache.

Backends: ``openai`` (Chat Completions), ``anthropic`` (Messages), ``openai-compatible``
(any server by base URL: llama.cpp server, Ollama, vLLM) and ``local`` (llama.cpp on a
GGUF file). Their SDKs are imported lazily, inside the backend.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field

__all__ = ["ChatRequest", "Completion", "Backend", "BackendError", "RetryableError", "MissingCredentials",
           "Capabilities"]


class BackendError(RuntimeError):
    """A call failed and retrying will not help (bad request, refused, unparseable reply)."""


class RetryableError(BackendError):
    """A call failed in a way worth retrying: 429, 5xx, timeout, dropped connection.

    ``retry_after`` is the server's Retry-After in seconds, when it sent one.
    """

    def __init__(self, message: str, *, retry_after: float | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


class MissingCredentials(BackendError):
    """No API key: the message names exactly which environment variable to set."""


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do beyond plain generation (judging picks its method from this).

    Attributes
    ----------
    logprobs : returns ``top_logprobs`` of the first generated token when asked
        (OpenAI Chat Completions, most OpenAI-compatible servers, the local backend).
    logits : reads next-token logits directly after a prefill, for every token (the
        local backend: the prompt-based classifier of Liusie et al. 2024, eq. 3).
    prefill : honours :attr:`ChatRequest.prefill` (Anthropic, local, most local servers).
    seed : honours :attr:`ChatRequest.seed`.
    """

    logprobs: bool = False
    logits: bool = False
    prefill: bool = False
    seed: bool = False


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion request (no credentials in here, ever).

    Attributes
    ----------
    messages : ``({"role": "system"|"user"|"assistant", "content": str}, ...)``.
    temperature, max_tokens : sampling settings.
    top_logprobs : ask for the top-k log-probabilities of the first generated token
        (OpenAI ``logprobs``/``top_logprobs``; local models read logits), or None.
    prefill : text the assistant's reply must start with (Anthropic prefill, or the
        prompt-based classifier of Liusie et al. eq. 3 on a local model), or None.
    sample_index : which of K independent samples this is (part of the cache key, so K
        samples are K calls, and re-running asks for the same K again).
    seed : provider seed where supported.
    stop : stop sequences.
    """

    messages: tuple[dict, ...]
    temperature: float = 0.0
    max_tokens: int = 512
    top_logprobs: int | None = None
    prefill: str | None = None
    sample_index: int = 0
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def cache_key(self, backend: str, model: str, *, base_url: str | None = None) -> str:
        """SHA-256 over (backend, model, base URL, every request field): identical requests share a key."""
        payload = {"backend": backend, "model": model, "base_url": base_url or "", **asdict(self)}
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=list)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def to_json(self) -> dict:
        return json.loads(json.dumps(asdict(self), default=list))


@dataclass(frozen=True)
class Completion:
    """What one call returned.

    Attributes
    ----------
    text : the generated text (without the prefill).
    prompt_tokens, completion_tokens : usage as reported (or counted locally).
    top_logprobs : log-probabilities of candidate first tokens, ``{token: logprob}``,
        when the request asked for them.
    finish_reason : provider's stop reason.
    raw : JSON-able provider response, for the cache and for audit.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    top_logprobs: dict[str, float] | None = None
    finish_reason: str | None = None
    raw: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Completion":
        return cls(**data)


class Backend(ABC):
    """One provider + one model. Subclasses implement :meth:`complete` and nothing else is required.

    Attributes
    ----------
    backend : ``"openai"``, ``"anthropic"``, ``"openai-compatible"`` or ``"local"``.
    model : the provider's model name (or the GGUF's name for ``local``).
    base_url : for servers addressed by URL, else None.
    capabilities : what the backend supports beyond generation (:class:`Capabilities`).
    name : the judge name used in judgments, ``"<backend>:<model>"`` by default.
    """

    backend: str
    model: str
    base_url: str | None = None
    capabilities: Capabilities = Capabilities()

    @property
    def name(self) -> str:
        return f"{self.backend}:{self.model}"

    @abstractmethod
    async def complete(self, request: ChatRequest) -> Completion:
        """Make one call. Raise :class:`RetryableError` for transient failures,
        :class:`BackendError` for permanent ones, :class:`MissingCredentials` when no key."""

    def cache_key(self, request: ChatRequest) -> str:
        return request.cache_key(self.backend, self.model, base_url=self.base_url)

    def secret_values(self) -> tuple[str, ...]:
        """The credentials this backend has sent (to scrub from replies and errors).

        SDK backends keep the key they built their client with in ``_secret`` (a
        :class:`~peercore.reviewers.credentials.Secret`); placeholders such as ``EMPTY``
        (keyless local servers) and values shorter than 8 characters are not secrets.
        """
        secret = getattr(self, "_secret", None)
        value = secret.reveal() if secret is not None else ""
        return (value,) if len(value) >= 8 else ()

    def redact(self, text: str) -> str:
        """``text`` with every credential of :meth:`secret_values` replaced by ``***``."""
        for value in self.secret_values():
            text = text.replace(value, "***")
        return text

    def redact_completion(self, completion: "Completion") -> "Completion":
        """The completion with any echoed credential replaced by ``***`` (text, raw reply, logprobs).

        A model (or a proxy) can echo the key it was called with; the reply then goes to
        the cache, the verdict's raw text and exports. The runner scrubs it first.
        """
        values = self.secret_values()
        if not values:
            return completion
        blob = json.dumps(completion.to_json(), ensure_ascii=False)
        if not any(v in blob for v in values):
            return completion
        return Completion.from_json(json.loads(self.redact(blob)))

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release clients (HTTP pools, model memory)."""
