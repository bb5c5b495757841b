"""API keys: from an explicit argument, the environment, or Streamlit's secrets file.

peercore never imports streamlit. Under the dashboard, ``peercore.ui`` may pass
``st.secrets[...]`` as ``api_key=``; otherwise this module reads the same
``secrets.toml`` files Streamlit reads, with :mod:`tomllib`:

1. the explicit ``api_key`` argument (e.g. injected by ``peercore.ui``);
2. the environment variable (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY`` or the one named);
3. a top-level entry of that name in ``$PEERBOARD_SECRETS`` (a path) if set, else in
   ``./.streamlit/secrets.toml`` then ``~/.streamlit/secrets.toml``.

An empty value counts as missing. A missing key raises
:class:`~peercore.reviewers.base.MissingCredentials` whose message names exactly the
variable to set. Keys are held in :class:`Secret`, whose ``repr``/``str`` never show the
value; they are never logged, cached, stored or exported. A server's base URL (part of a
judge's name) carries none: :func:`checked_base_url` refuses one that does.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from peercore.redaction import masked_url, url_credentials

from .base import MissingCredentials

__all__ = ["Secret", "resolve_api_key", "secrets_files", "checked_base_url"]


class Secret:
    """A string that does not print itself. Call :meth:`reveal` to get the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self):
        raise TypeError("a Secret cannot be pickled (keys must not be stored)")


def secrets_files() -> list[Path]:
    """The Streamlit secrets files consulted, in order."""
    override = os.environ.get("PEERBOARD_SECRETS")
    if override:
        return [Path(override).expanduser()]
    return [Path.cwd() / ".streamlit" / "secrets.toml", Path.home() / ".streamlit" / "secrets.toml"]


def resolve_api_key(env_var: str, *, api_key: str | Secret | None = None) -> Secret:
    """The key for ``env_var`` from the argument, the environment or secrets.toml.

    Raises
    ------
    MissingCredentials
        ``"set OPENAI_API_KEY (environment or .streamlit/secrets.toml)"`` (with the
        variable's name) when no non-empty value is found.
    """
    if isinstance(api_key, Secret):
        if api_key.reveal():
            return api_key
    elif api_key:
        return Secret(str(api_key))
    value = os.environ.get(env_var, "")
    if value.strip():
        return Secret(value.strip())
    for path in secrets_files():
        value = _from_secrets_file(path, env_var)
        if value:
            return Secret(value)
    raise MissingCredentials(f"set {env_var} (environment or .streamlit/secrets.toml)")


def _from_secrets_file(path: Path, name: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return None
    value = data.get(name)
    return value.strip() if isinstance(value, str) and value.strip() else None


def checked_base_url(base_url: object) -> str:
    """``base_url`` without a trailing ``/``, after checking it is an ``http(s)`` URL that carries no key.

    Raises
    ------
    ValueError
        If it is not an ``http(s)://`` URL, or holds a credential anywhere
        (:func:`peercore.redaction.url_credentials`: user info, a secret-named query or path
        parameter, a key-shaped path segment, a fragment). The message shows the URL masked.
    """
    if not isinstance(base_url, str) or not base_url.lower().startswith(("http://", "https://")):
        shown = masked_url(base_url) if isinstance(base_url, str) else type(base_url).__name__
        raise ValueError(f"base_url must be an http(s) URL, got {shown!r}")
    found = url_credentials(base_url)
    if found:
        raise ValueError(f"base_url {masked_url(base_url)!r} carries a credential ({', '.join(found)}); a server's URL "
                         "becomes part of the judge's name, so it holds no key: put the key in an environment variable "
                         "and name it (api_key_env)")
    return base_url.rstrip("/")
