"""What counts as a credential, and how it is kept out of names, messages and the database.

A leaf module (standard library only) shared by the store (run configurations are
scrubbed before they are written), the reviewers (an OpenAI-compatible server's URL
becomes part of a judge's name) and the judge specs of the CLI and the dashboard.

- :func:`is_secret_name`: a setting or parameter name that holds a secret (``api_key``,
  ``OPENAI_API_KEY``, ``accessToken``, ``password``; not ``max_tokens``).
- :func:`url_credentials` / :func:`masked_url`: credentials written into an ``http(s)``
  URL, wherever they are: user info, a query parameter with a secret name (percent-encoded
  names decoded first), a ``#fragment`` (never sent to a server, so nothing belongs
  there), a ``name=value`` path parameter with a secret name, or a path segment shaped
  like a key (a provider's key prefix such as ``sk-``, or a long random token). The
  descriptions never hold the value; the masked URL shows ``***`` in its place.

PostgreSQL URLs follow libpq's rules instead (:func:`peercore.db.redact_url`).
"""

from __future__ import annotations

import functools
import re
from urllib.parse import unquote_plus, urlsplit, urlunsplit

__all__ = ["SECRET_WORDS", "is_secret_name", "looks_like_key", "url_credentials", "masked_url", "mask_urls"]

# A name is secret when its last word (split on _ - . and camelCase) is one of these:
# "api_key", "apiKey", "token", "access_token", "password" are; "max_tokens",
# "prompt_tokens", "keyboard" are not.
SECRET_WORDS = frozenset({"key", "apikey", "token", "secret", "password", "passwd", "authorization", "auth", "bearer",
                          "credential", "credentials"})
# Prefixes of the keys providers issue (OpenAI/Anthropic/DeepSeek sk-, Groq gsk_, Hugging Face hf_,
# xAI xai-, GitHub ghp_/github_pat_, GitLab glpat-, Replicate r8_, Perplexity pplx-, NVIDIA nvapi-,
# Cerebras csk-, Fireworks fw_, Google AIza).
_KEY_PREFIX = re.compile(r"^(?:(?:sk|rk|gsk|hf|xai|ghp|gho|ghu|ghs|github_pat|glpat|r8|pplx|nvapi|csk|fw)[-_]|AIza)")
# A long random token: 32 or more letters and digits with no word separator, mixing upper
# case, lower case and digits (model names have - or .; hexadecimal ids have no upper case).
_TOKEN = re.compile(r"^(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{32,}$")


@functools.lru_cache(maxsize=4096)  # the same few config keys, once per paid call: 0.3 ms -> 0.02 ms a call
def is_secret_name(key: str) -> bool:
    """Whether a setting named ``key`` holds a secret: its last word (or last two) is key, api key,
    token, secret, password, auth(orization), bearer or credential(s)."""
    words = re.split(r"[_\-.\s]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).lower())
    words = [w for w in words if w]
    if not words:
        return False
    return words[-1] in SECRET_WORDS or (len(words) >= 2 and words[-2] + words[-1] in SECRET_WORDS)


def looks_like_key(text: str) -> bool:
    """Whether ``text`` (a path segment, a parameter name) is shaped like an API key."""
    return bool(_KEY_PREFIX.match(text) or _TOKEN.match(text))


def _pairs(text: str) -> list[tuple[str, str, str]]:
    """``(raw item, decoded name, value)`` of a query or path-parameter string split on & and ;."""
    out = []
    for item in re.split(r"[&;]", text):
        if item:
            name, _, value = item.partition("=")
            out.append((item, unquote_plus(name), value))
    return out


def url_credentials(url: str) -> list[str]:
    """What in the ``http(s)`` URL ``url`` looks like a credential, described without its value."""
    parts = urlsplit(str(url))
    found = []
    if "@" in parts.netloc:
        found.append("a user name or password before '@'")
    for raw, name, value in _pairs(parts.query):
        if is_secret_name(name) or looks_like_key(name):
            found.append(f"{_shown_name(name)}=***" if value or "=" in raw else "a key-like parameter")
    for segment in re.split(r"[/;]", parts.path):
        name, eq, _ = unquote_plus(segment).partition("=")
        if eq and is_secret_name(name):
            found.append(f"{_shown_name(name)}=*** in the path")
        elif looks_like_key(unquote_plus(segment)):
            found.append("a key-like path segment")
    if parts.fragment:
        found.append("a #fragment")
    return found


def masked_url(url: str) -> str:
    """``url`` with every part :func:`url_credentials` finds replaced by ``***``."""
    parts = urlsplit(str(url))
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = "&".join(raw if not (is_secret_name(name) or looks_like_key(name)) else
                     (f"{_shown_name(name)}=***" if "=" in raw else "***") for raw, name, _ in _pairs(parts.query))

    def segment(text: str) -> str:
        name, eq, _ = unquote_plus(text).partition("=")
        if eq and is_secret_name(name):
            return f"{_shown_name(name)}=***"
        return "***" if looks_like_key(unquote_plus(text)) else text

    path = re.sub(r"[^/;]+", lambda m: segment(m.group(0)), parts.path)
    return urlunsplit((parts.scheme, netloc, path, query, "***" if parts.fragment else ""))


_HTTP_URL = re.compile(r"https?://\S*", re.IGNORECASE)


def mask_urls(text: str) -> str:
    """``text`` (a judge spec, a message) with every ``http(s)`` URL in it passed through :func:`masked_url`."""
    return _HTTP_URL.sub(lambda m: masked_url(m.group(0)), str(text))


def _shown_name(name: str) -> str:
    """A parameter's name as a message may show it: itself when it reads as a name, else ``***``."""
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]{0,39}", name) and not looks_like_key(name) else "***"
