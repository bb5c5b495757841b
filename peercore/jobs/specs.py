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

Keys never go in a spec: a spec whose URL carries a credential (``?api_key=...`` with the
name written plainly or percent-encoded, ``?token=...``, ``http://user:password@host``, a
key-shaped path segment such as ``/v1/sk-...``, a ``#fragment``; see
:func:`peercore.redaction.url_credentials`) is refused, and no message repeats a value it
does not know to be harmless: ``api_key=***``, and an unknown option's value (or a name
that does not read as a name) is masked too, so a key cannot reach a terminal, a log, a
judge's name or the database.
"""

from __future__ import annotations

import inspect
import re
from urllib.parse import parse_qsl, unquote_plus

from peercore.jobs.base import Judge
from peercore.redaction import is_secret_name, looks_like_key, mask_urls, url_credentials
from peercore.reviewers.base import Backend
from peercore.reviewers.registry import BACKENDS as classes, make_backend as build, parse_spec

__all__ = ["make_backend", "parse_judge_spec", "masked_spec", "refuse_credentials", "ENV_NAME"]
_OPTIONS = ("temperature", "seed", "timeout", "api_key_env")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_URL = re.compile(r"https?://\S*", re.IGNORECASE)


def masked_spec(text: str) -> str:
    """``text`` with every credential replaced by ``***``: the URL's (user info, secret-named or
    key-like path parts, fragment) and every option value except those of the known options."""
    head, sep, query = str(text).partition("?")
    head = mask_urls(head)
    return head + sep + "&".join(_masked_option(item) for item in re.split(r"[&;]", query) if item)


def _masked_option(item: str) -> str:
    name, eq, value = item.partition("=")
    decoded = unquote_plus(name)
    if decoded in _OPTIONS:
        return f"{decoded}{eq}{value}"
    shown = decoded if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]{0,39}", decoded) and not looks_like_key(decoded) else "***"
    return f"{shown}=***" if eq else shown


def refuse_credentials(text: str, *, what: str = "judge spec") -> None:
    """Refuse a spec or URL that carries a credential, without repeating it.

    Raises
    ------
    ValueError
        If a query parameter's name (percent-encoding decoded) is secret-looking
        (``api_key``, ``key``, ``token``, ``password`` ...) or shaped like a key, or the
        URL has a user name or password, a secret-named or key-shaped path part, or a
        fragment; the message quotes the spec with the values masked and says how to
        give a key instead.
    """
    head, _, query = str(text).partition("?")
    found = [f for url in _URL.findall(head) for f in url_credentials(url)]
    found += [f"{n if re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', n) else '***'}=***"
              for n, _ in parse_qsl(query, keep_blank_values=True) if is_secret_name(n) or looks_like_key(n)]
    if found:
        raise ValueError(f"{what} {masked_spec(text)!r} carries a credential ({', '.join(found)}); keys are never "
                         "written in a spec or URL (they would reach logs, judge names and the database). Put the key "
                         "in an environment variable and name it: ...?api_key_env=MY_SERVER_KEY")


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
    unknown = [_masked_option(k) for k in options if k not in _OPTIONS]
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} in judge spec {masked_spec(text)!r} (values not shown); "
                         f"known: {list(_OPTIONS)}")
    values: dict = {}
    for key, value in options.items():
        if key == "api_key_env":
            if not ENV_NAME.match(value):
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
