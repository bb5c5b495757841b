"""Anthropic Messages through the ``anthropic`` SDK (imported lazily).

The Messages API gives no token probabilities, so a soft probability comes from K
samples (``ChatRequest.sample_index`` 0..K-1, each its own cached call; see
:func:`peercore.reviewers.judging.compare`). The current SDK (anthropic 2.x) has no
``temperature`` parameter: replies are sampled at the model's default, which is what K
samples need. For older models that still accept it, ``send_temperature=True`` passes
``ChatRequest.temperature`` in the request body.

A prefill (``ChatRequest.prefill``) is sent as a final assistant message, which the API
continues; the API rejects a final assistant message ending in whitespace, so trailing
whitespace of the prefill is dropped (the reply then usually starts with a space).
Newer models refuse prefill with a 400, so judging only relies on it when the backend
is built with ``prefill=True``. System messages go to the ``system`` parameter.
SDK retries are disabled (``max_retries=0``): the runner retries, as for every provider
(:class:`peercore.runner.RetryPolicy`, :func:`~peercore.reviewers._sdk.should_retry`),
waiting the reply's ``Retry-After`` / ``retry-after-ms``. The key comes from ``api_key=``,
``ANTHROPIC_API_KEY`` or ``.streamlit/secrets.toml``.
"""

from __future__ import annotations

from ._sdk import LoopClients, catchable, import_sdk, map_error, response_json
from .base import Backend, BackendError, Capabilities, ChatRequest, Completion
from .credentials import Secret, resolve_api_key

__all__ = ["AnthropicBackend"]


class AnthropicBackend(Backend):
    """One Anthropic model (``anthropic:<model>``).

    Parameters
    ----------
    model : e.g. ``"claude-sonnet-4-5"``.
    api_key : the key; default ``ANTHROPIC_API_KEY``, then ``.streamlit/secrets.toml``.
    base_url : another endpoint speaking the same API (default: Anthropic's).
    timeout : seconds per request.
    prefill : the model accepts an assistant prefill (judging may then use the
        prompt-based classifier template with K samples of one short continuation).
    send_temperature : send ``temperature`` in the body (older models only).
    name : the judge name; default ``"anthropic:<model>"``.
    """

    backend = "anthropic"
    env_var = "ANTHROPIC_API_KEY"
    capabilities = Capabilities(logprobs=False, logits=False, prefill=False, seed=False)

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 timeout: float = 60.0, prefill: bool = False, send_temperature: bool = False,
                 name: str | None = None) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be a non-empty string, got {model!r}")
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.model = model
        self.base_url = base_url
        self.timeout = float(timeout)
        self._explicit_key = Secret(api_key) if api_key else None
        self._name = name
        self._clients = LoopClients()
        self._secret: Secret | None = None
        self.send_temperature = bool(send_temperature)
        self.capabilities = Capabilities(logprobs=False, logits=False, prefill=bool(prefill), seed=False)

    @property
    def name(self) -> str:
        return self._name or f"{self.backend}:{self.model}"

    def __repr__(self) -> str:
        return (f"AnthropicBackend(model={self.model!r}, base_url={self.base_url!r}, timeout={self.timeout!r}, "
                f"prefill={self.capabilities.prefill!r})")

    def check_credentials(self) -> None:
        """Raise :class:`~peercore.reviewers.base.MissingCredentials` now if there is no key."""
        resolve_api_key(self.env_var, api_key=self._explicit_key)

    def _make_client(self):
        anthropic = import_sdk("anthropic", "anthropic")
        secret = resolve_api_key(self.env_var, api_key=self._explicit_key)
        self._secret = secret
        kwargs = dict(api_key=secret.reveal(), max_retries=0, timeout=self.timeout)
        if self.base_url:
            kwargs["base_url"] = self.base_url
        return anthropic.AsyncAnthropic(**kwargs)

    def _payload(self, request: ChatRequest) -> dict:
        system = "\n\n".join(m["content"] for m in request.messages if m.get("role") == "system")
        messages = [{"role": m["role"], "content": m["content"]} for m in request.messages if m.get("role") != "system"]
        if request.prefill and request.prefill.rstrip():
            messages.append({"role": "assistant", "content": request.prefill.rstrip()})
        payload: dict = {"model": self.model, "messages": messages, "max_tokens": request.max_tokens}
        if self.send_temperature:
            payload["extra_body"] = {"temperature": request.temperature}
        if system:
            payload["system"] = system
        if request.stop:
            payload["stop_sequences"] = list(request.stop)
        return payload

    async def complete(self, request: ChatRequest) -> Completion:
        """One Messages call (see :func:`peercore.reviewers._sdk.map_error` for errors)."""
        anthropic = import_sdk("anthropic", "anthropic")
        client = self._clients.get(self._make_client)
        try:
            response = await client.messages.create(**self._payload(request))
        except catchable(anthropic) as exc:
            raise map_error(exc, anthropic, provider=self.name, env_var=self.env_var,
                            secret=self._secret.reveal() if self._secret else None) from exc
        try:
            text = "".join(block.text for block in response.content if getattr(block, "type", None) == "text")
        except (AttributeError, TypeError) as exc:
            raise BackendError(f"{self.name}: response has no text content ({type(exc).__name__})") from exc
        usage = getattr(response, "usage", None)
        return Completion(
            text=text,
            prompt_tokens=int(getattr(usage, "input_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "output_tokens", 0) or 0),
            top_logprobs=None,
            finish_reason=getattr(response, "stop_reason", None),
            raw=response_json(response),
        )

    async def aclose(self) -> None:
        await self._clients.close_current()
