"""Build a backend from a judge spec string: ``make_backend("openai:gpt-4o")``.

Spec forms
----------
``openai:<model>``                       OpenAI Chat Completions (``OPENAI_API_KEY``)
``anthropic:<model>``                    Anthropic Messages (``ANTHROPIC_API_KEY``)
``compatible:<model>@<base_url>``        any OpenAI-compatible server
                                         (``openai-compatible:`` is accepted too)
``local:qwen2.5-coder-1.5b``             the bundled offline judge (llama.cpp)
``local:smollm2-135m``                   the bundled weak contestant
``local:/path/to/model.gguf``            any GGUF file

Keyword settings are passed to the backend's constructor (``timeout=``, ``api_key=``,
``base_url=``, ``api_key_env=``, ``n_ctx=``, ``seed=``, ``name=`` ...). SDKs and
llama.cpp are imported only when a call is made.
"""

from __future__ import annotations

import inspect

from peercore.redaction import mask_urls

from .anthropic_backend import AnthropicBackend
from .base import Backend
from .compatible import CompatibleBackend
from .local import LocalBackend
from .openai_backend import OpenAIBackend

__all__ = ["make_backend", "parse_spec", "BACKENDS"]

BACKENDS = {
    "openai": OpenAIBackend,
    "anthropic": AnthropicBackend,
    "compatible": CompatibleBackend,
    "openai-compatible": CompatibleBackend,
    "local": LocalBackend,
}
_FORMS = ("openai:<model>", "anthropic:<model>", "compatible:<model>@<base_url>", "local:<name or path.gguf>")


def parse_spec(spec: str) -> tuple[str, str, str | None]:
    """``(kind, model, base_url)`` from a spec string (see the module docstring).

    Raises
    ------
    ValueError
        If the spec has no known prefix, no model, or a compatible spec has no URL;
        the spec is quoted and the accepted forms listed.
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"spec must look like one of {_FORMS}, got {mask_urls(spec) if isinstance(spec, str) else spec!r}")
    shown = mask_urls(spec)  # a URL in the spec is quoted with any credential in it masked
    kind, _, rest = spec.partition(":")
    kind = kind.strip().lower()
    rest = rest.strip()
    if kind not in BACKENDS:
        raise ValueError(f"spec prefix must be one of {sorted(BACKENDS)}, got {kind!r} in {shown!r}")
    if not rest:
        raise ValueError(f"spec {shown!r} names no model; expected one of {_FORMS}")
    base_url = None
    if BACKENDS[kind] is CompatibleBackend:
        kind = "compatible"
        model, sep, base_url = rest.rpartition("@")
        if not sep or not model or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"spec {shown!r}: a compatible backend is written compatible:<model>@<http(s) base_url>")
    else:
        model = rest
    return kind, model, base_url


def make_backend(spec: str, **settings) -> Backend:
    """A backend for a judge spec, e.g. ``make_backend("local:qwen2.5-coder-1.5b")``.

    Parameters
    ----------
    spec : see the module docstring.
    **settings : constructor options of the chosen backend.

    Raises
    ------
    ValueError
        If the spec is malformed, or a setting is not an option of that backend (the
        setting and the accepted ones are named).
    """
    kind, model, base_url = parse_spec(spec)
    cls = BACKENDS[kind]
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "model")]
    unknown = sorted(set(settings) - set(accepted))
    if unknown:
        raise ValueError(f"setting(s) {unknown} are not options of {cls.__name__}; accepted: {accepted}")
    if base_url is not None:
        settings.setdefault("base_url", base_url)
    return cls(model, **settings)
