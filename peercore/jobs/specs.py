"""Judge specs on the command line and in the dashboard: ``[NAME=]backend:model[?option=value&...]``.

Examples::

    openai:gpt-4o
    anthropic:claude-3-5-haiku-20241022
    local:qwen2.5-coder-1.5b
    compatible:llama3@http://127.0.0.1:8080/v1
    cold=local:qwen2.5-coder-1.5b?temperature=0
    warm=local:qwen2.5-coder-1.5b?temperature=0.7
    warm2=local:qwen2.5-coder-1.5b?temperature=0.7&seed=2

``NAME=`` gives the judge its own name (needed when one model plays several roles,
e.g. three debate agents); ``temperature`` sets that judge's sampling temperature;
``seed`` (an integer) its sampling seed (two judges of one model at one temperature
need distinct seeds); ``timeout`` (seconds) is passed to the backend.
"""

from __future__ import annotations

import inspect
from urllib.parse import parse_qsl

from peercore.jobs.base import Judge
from peercore.reviewers.base import Backend

__all__ = ["make_backend", "parse_judge_spec"]
_OPTIONS = ("temperature", "seed", "timeout")


def make_backend(spec: str, *, timeout: float | None = None, api_key: str | None = None) -> Backend:
    """A backend from ``backend:model`` (see :func:`peercore.reviewers.make_backend`).

    ``timeout`` (seconds per HTTP request) and ``api_key`` (instead of the environment
    variable, e.g. from Streamlit secrets) are passed to backends that take them.

    Raises
    ------
    ValueError
        If the spec is malformed or names an unknown backend (the accepted forms are listed).
    """
    from peercore.reviewers.registry import BACKENDS as classes
    from peercore.reviewers.registry import make_backend as build
    from peercore.reviewers.registry import parse_spec

    kind, _, _ = parse_spec(spec)
    accepts = inspect.signature(classes[kind].__init__).parameters
    settings = {"timeout": timeout, "api_key": api_key}
    return build(spec, **{k: v for k, v in settings.items() if v is not None and k in accepts})


def parse_judge_spec(text: str, *, timeout: float | None = None) -> Judge:
    """A :class:`~peercore.jobs.base.Judge` from ``[NAME=]backend:model[?temperature=T&seed=N&timeout=S]``.

    Raises
    ------
    ValueError
        If an option is unknown or not a number, or ``seed`` is not an integer (the
        option and value are quoted).
    """
    spec, _, query = text.partition("?")
    name = None
    head, eq, rest = spec.partition("=")
    if eq and ":" not in head:
        name, spec = head.strip() or None, rest
    options = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=False)) if query else {}
    unknown = [k for k in options if k not in _OPTIONS]
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} in judge spec {text!r}; known: {list(_OPTIONS)}")
    values = {}
    for key, value in options.items():
        try:
            values[key] = int(value) if key == "seed" else float(value)
        except ValueError:
            kind = "an integer" if key == "seed" else "a number"
            raise ValueError(f"option {key} in judge spec {text!r} must be {kind}, got {value!r}") from None
    backend = make_backend(spec.strip(), timeout=values.get("timeout", timeout))
    return Judge(backend, name=name, temperature=values.get("temperature"), seed=values.get("seed"))
