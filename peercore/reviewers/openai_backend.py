"""OpenAI Chat Completions through the ``openai`` SDK (imported lazily).

Soft probabilities come from ``logprobs=True, top_logprobs=k`` on the first generated
token, where the model allows it (Liusie et al. 2024: p = P(A) / (P(A) + P(B))).
SDK retries are disabled (``max_retries=0``): retrying, backoff and rate limiting are
the runner's job, one policy for every provider (:class:`peercore.runner.RetryPolicy` on
tenacity, deciding with :func:`~peercore.reviewers._sdk.should_retry`), driven by
:class:`~peercore.reviewers.base.RetryableError` and its ``retry_after`` (the reply's
``retry-after-ms`` or ``Retry-After``, OpenAI-compatible servers' included). The key comes from ``api_key=``, ``OPENAI_API_KEY`` or
``.streamlit/secrets.toml`` (:mod:`peercore.reviewers.credentials`) and never appears in
``repr``, errors or logs.
"""

from __future__ import annotations

import numpy as np

from ._sdk import LoopClients, catchable, import_sdk, map_error, response_json
from .base import Backend, BackendError, Capabilities, ChatRequest, Completion
from .credentials import Secret, resolve_api_key

__all__ = ["OpenAIBackend"]

_MAX_TOP_LOGPROBS = 20


class OpenAIBackend(Backend):
    """One OpenAI chat model (``openai:<model>``).

    Parameters
    ----------
    model : e.g. ``"gpt-4o"``.
    api_key : the key (e.g. from ``st.secrets`` via ``peercore.ui``); default: the
        environment variable ``OPENAI_API_KEY``, then ``.streamlit/secrets.toml``.
    base_url : another endpoint speaking the same API (default: OpenAI's).
    timeout : seconds per request (connect + read); keep it short in tests.
    organization : optional OpenAI organisation id.
    name : the judge name; default ``"openai:<model>"``.

    Notes
    -----
    A :attr:`ChatRequest.prefill` is sent as a final assistant message; OpenAI models
    do not reliably continue it, so judging does not rely on prefill here
    (``capabilities.prefill`` is False) and uses ``logprobs`` instead.
    """

    backend = "openai"
    env_var = "OPENAI_API_KEY"
    capabilities = Capabilities(logprobs=True, logits=False, prefill=False, seed=True)
    _max_tokens_param = "max_completion_tokens"

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 timeout: float = 60.0, organization: str | None = None, name: str | None = None) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be a non-empty string, got {model!r}")
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.model = model
        self.base_url = base_url
        self.timeout = float(timeout)
        self.organization = organization
        self._explicit_key = Secret(api_key) if api_key else None
        self._name = name
        self._clients = LoopClients()
        self._secret: Secret | None = None

    @property
    def name(self) -> str:
        return self._name or f"{self.backend}:{self.model}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, timeout={self.timeout!r})"

    # -- credentials and client ------------------------------------------------------
    def _api_key(self) -> Secret:
        return resolve_api_key(self.env_var, api_key=self._explicit_key)

    def check_credentials(self) -> None:
        """Raise :class:`~peercore.reviewers.base.MissingCredentials` now if there is no key."""
        self._api_key()

    def _make_client(self):
        openai = import_sdk("openai", "openai")
        secret = self._api_key()
        self._secret = secret
        kwargs = dict(api_key=secret.reveal(), max_retries=0, timeout=self.timeout)
        if self.base_url:
            kwargs["base_url"] = self.base_url
        if self.organization:
            kwargs["organization"] = self.organization
        return openai.AsyncOpenAI(**kwargs)

    # -- the call --------------------------------------------------------------------
    def _payload(self, request: ChatRequest) -> dict:
        messages = [dict(m) for m in request.messages]
        if request.prefill:
            messages.append({"role": "assistant", "content": request.prefill})
        payload: dict = {"model": self.model, "messages": messages, "temperature": request.temperature,
                         self._max_tokens_param: request.max_tokens}
        if request.seed is not None:
            payload["seed"] = request.seed
        if request.stop:
            payload["stop"] = list(request.stop)
        if request.top_logprobs:
            payload["logprobs"] = True
            payload["top_logprobs"] = min(int(request.top_logprobs), _MAX_TOP_LOGPROBS)
        return payload

    async def complete(self, request: ChatRequest) -> Completion:
        """One Chat Completions call (see :func:`peercore.reviewers._sdk.map_error` for errors)."""
        openai = import_sdk("openai", "openai")
        from openai.types.chat import ChatCompletion

        client = self._clients.get(self._make_client)
        try:
            # The SDK's own request path (auth, errors, retries off, typed ChatCompletion), without
            # ``chat.completions.create``'s parameter transform: our payload is plain JSON with no
            # aliases to rewrite, and the transform's typing introspection cost 1.4 ms of CPU per
            # call (-30% client CPU, benchmarks/runner.py), which bounds throughput on 2 cores.
            response = await client.post("/chat/completions", body=self._payload(request), cast_to=ChatCompletion)
        except catchable(openai) as exc:
            raise map_error(exc, openai, provider=self.name, env_var=self.env_var,
                            secret=self._secret.reveal() if self._secret else None) from exc
        return _to_completion(response, provider=self.name)

    async def aclose(self) -> None:
        await self._clients.close_current()


def _to_completion(response, *, provider: str) -> Completion:
    try:
        choice = response.choices[0]
        text = choice.message.content or ""
    except (AttributeError, IndexError, TypeError) as exc:
        raise BackendError(f"{provider}: response has no choices[0].message ({type(exc).__name__})") from exc
    usage = getattr(response, "usage", None)
    top = None
    logprobs = getattr(choice, "logprobs", None)
    content = getattr(logprobs, "content", None) if logprobs is not None else None
    if content:
        top = {}
        for candidate in content[0].top_logprobs or []:
            lp = float(candidate.logprob)
            top[candidate.token] = lp if candidate.token not in top else float(np.logaddexp(top[candidate.token], lp))
    return Completion(
        text=text,
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        top_logprobs=top,
        finish_reason=getattr(choice, "finish_reason", None),
        raw=response_json(response),
    )
