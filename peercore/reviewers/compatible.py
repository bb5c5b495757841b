"""Any OpenAI-compatible server by base URL: llama.cpp server, Ollama, vLLM, LM Studio, ...

Uses the ``openai`` SDK's Chat Completions with ``base_url``. Local servers usually need
no key: the default sends the placeholder ``"EMPTY"``. If the server wants one, name the
environment variable with ``api_key_env`` (it is then required, and a missing value
raises :class:`~peercore.reviewers.base.MissingCredentials` naming it) or pass
``api_key``. Unlike OpenAI itself, ``max_tokens`` is sent (older servers ignore
``max_completion_tokens``), and a prefill is sent as a final assistant message, which
llama.cpp's server continues.
"""

from __future__ import annotations

from .base import Capabilities
from .credentials import Secret, checked_base_url, resolve_api_key
from .openai_backend import OpenAIBackend

__all__ = ["CompatibleBackend"]


class CompatibleBackend(OpenAIBackend):
    """One model on an OpenAI-compatible server (``compatible:<model>@<base_url>``).

    Parameters
    ----------
    model : the server's model name (e.g. ``"llama3.1:8b"`` for Ollama).
    base_url : e.g. ``"http://127.0.0.1:8080/v1"`` (llama.cpp) or
        ``"http://127.0.0.1:11434/v1"`` (Ollama). It is part of the judge's name, so one
        carrying a key (user info, a key-shaped path segment, a fragment ...) is refused.
    api_key_env : name of the environment variable holding the key, if the server needs one.
    api_key : the key itself (takes precedence).
    logprobs : whether the server returns ``top_logprobs`` (llama.cpp server and vLLM do;
        set False for servers that do not, so judging samples instead).
    prefill : whether the server continues a final assistant message.
    timeout : seconds per request.
    name : the judge name; default ``"compatible:<model>@<base_url>"``.
    """

    backend = "openai-compatible"
    _max_tokens_param = "max_tokens"

    def __init__(self, model: str, *, base_url: str, api_key_env: str | None = None, api_key: str | None = None,
                 logprobs: bool = True, prefill: bool = True, timeout: float = 60.0, name: str | None = None) -> None:
        super().__init__(model, api_key=api_key, base_url=checked_base_url(base_url), timeout=timeout, name=name)
        self.api_key_env = api_key_env
        self.capabilities = Capabilities(logprobs=bool(logprobs), logits=False, prefill=bool(prefill), seed=True)

    @property
    def env_var(self) -> str | None:  # type: ignore[override]
        return self.api_key_env

    @property
    def name(self) -> str:
        return self._name or f"compatible:{self.model}@{self.base_url}"

    def _api_key(self) -> Secret:
        if self._explicit_key is not None:
            return self._explicit_key
        if self.api_key_env:
            return resolve_api_key(self.api_key_env)
        return Secret("EMPTY")

    def __repr__(self) -> str:
        return (f"CompatibleBackend(model={self.model!r}, base_url={self.base_url!r}, "
                f"api_key_env={self.api_key_env!r}, timeout={self.timeout!r})")
