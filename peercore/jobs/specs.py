"""Judge specs on the command line and in the dashboard: ``[NAME=]backend:model[?option=value&...]``.

Examples::

    openai:gpt-4o
    anthropic:claude-3-5-haiku-20241022
    local:qwen2.5-coder-1.5b
    compatible:llama3@http://127.0.0.1:8080/v1
    cold=local:qwen2.5-coder-1.5b?temperature=0
    warm=local:qwen2.5-coder-1.5b?temperature=0.7
    warm2=local:qwen2.5-coder-1.5b?temperature=0.7&seed=2

    compatible:llama3@http://127.0.0.1:8080/v1?api_key_env=LLAMA_SERVER_KEY

``NAME=`` gives the judge its own name (needed when one model plays several roles,
e.g. three debate agents); ``temperature`` sets that judge's sampling temperature;
``seed`` (an integer) its sampling seed (two judges of one model at one temperature
need distinct seeds); ``timeout`` (seconds) is passed to the backend; ``api_key_env``
names the environment variable holding an OpenAI-compatible server's key.

Keys never go in a spec: a spec whose URL carries a credential (``?api_key=...``,
``?token=...``, ``http://user:password@host``) is refused, and the refusal does not
repeat the value (``api_key=***``), so it cannot reach a terminal, a log or the database.
"""

from __future__ import annotations

import inspect
import re
from urllib.parse import parse_qsl, urlsplit

from peercore.jobs.base import Judge
from peercore.reviewers.base import Backend
from peercore.store import _is_secret_name

__all__ = ["make_backend", "parse_judge_spec", "masked_spec", "refuse_credentials"]
_OPTIONS = ("temperature", "seed", "timeout", "api_key_env")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_QUERY_PAIR = re.compile(r"([?&;])([^=&;#]*)=([^&;#]*)")
_USERINFO = re.compile(r"(://)([^/@\s]*)@")


def masked_spec(text: str) -> str:
    """``text`` with every credential replaced by ``***``: secret-named query values and URL userinfo."""
    text = _USERINFO.sub(lambda m: f"{m.group(1)}***@", str(text))
    return _QUERY_PAIR.sub(lambda m: f"{m.group(1)}{m.group(2)}={'***' if _is_secret_name(m.group(2)) else m.group(3)}",
                           text)


def refuse_credentials(text: str, *, what: str = "judge spec") -> None:
    """Refuse a spec or URL that carries a credential, without repeating it.

    Raises
    ------
    ValueError
        If a query parameter has a secret-looking name (``api_key``, ``key``,
        ``token``, ``password`` ...) or the URL has a user name or password; the message
        quotes the spec with the value masked and says how to give a key instead.
    """
    secrets = [m.group(2) for m in _QUERY_PAIR.finditer(str(text)) if _is_secret_name(m.group(2))]
    userinfo = _USERINFO.search(str(text)) is not None
    if secrets or userinfo:
        found = ", ".join(f"{k}=***" for k in secrets) or "a user name or password before '@'"
        raise ValueError(f"{what} {masked_spec(text)!r} carries a credential ({found}); keys are never written in a "
                         "spec or URL (they would reach logs and the database). Put the key in an environment "
                         "variable and name it: ...?api_key_env=MY_SERVER_KEY")


def make_backend(spec: str, *, timeout: float | None = None, api_key: str | None = None,
                 api_key_env: str | None = None) -> Backend:
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

    refuse_credentials(spec)
    kind, _, _ = parse_spec(spec)
    accepts = inspect.signature(classes[kind].__init__).parameters
    if api_key_env is not None and "api_key_env" not in accepts:
        raise ValueError(f"api_key_env is for OpenAI-compatible servers (compatible:<model>@<url>); {kind!r} reads "
                         f"its key from its own variable")
    settings = {"timeout": timeout, "api_key": api_key, "api_key_env": api_key_env}
    return build(spec, **{k: v for k, v in settings.items() if v is not None and k in accepts})


def parse_judge_spec(text: str, *, timeout: float | None = None) -> Judge:
    """A :class:`~peercore.jobs.base.Judge` from ``[NAME=]backend:model[?temperature=T&seed=N&timeout=S]``.

    Raises
    ------
    ValueError
        If an option is unknown or not a number, or ``seed`` is not an integer (the
        option and value are quoted).
    """
    refuse_credentials(text)
    spec, _, query = text.partition("?")
    name = None
    head, eq, rest = spec.partition("=")
    if eq and ":" not in head:
        name, spec = head.strip() or None, rest
    options = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=False)) if query else {}
    unknown = [k for k in options if k not in _OPTIONS]
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} in judge spec {masked_spec(text)!r}; known: {list(_OPTIONS)}")
    values: dict = {}
    for key, value in options.items():
        if key == "api_key_env":
            if not _ENV_NAME.match(value):
                raise ValueError(f"option api_key_env in judge spec {masked_spec(text)!r} must name an environment "
                                 f"variable (letters, digits, _), got {value[:40]!r}")
            values[key] = value
            continue
        try:
            values[key] = int(value) if key == "seed" else float(value)
        except ValueError:
            kind = "an integer" if key == "seed" else "a number"
            raise ValueError(f"option {key} in judge spec {masked_spec(text)!r} must be {kind}, got {value!r}") from None
    backend = make_backend(spec.strip(), timeout=values.get("timeout", timeout), api_key_env=values.get("api_key_env"))
    return Judge(backend, name=name, temperature=values.get("temperature"), seed=values.get("seed"))
