"""Where a user's database is, and how its location is shown: light enough for the command line's parser.

A location is a SQLite file's path or a ``postgresql://`` URL (the team store). URLs are
split as libpq splits them, so that a password is found (and masked) wherever libpq
would read one. Nothing here imports pandas, numpy or psycopg at import time.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote

from peercore.errors import StoreError

__all__ = ["ENV_DB", "default_db_path", "database_location", "is_postgres_url", "url_problem", "redact_url",
           "redact_text"]

ENV_DB = "PEERBOARD_DB"
_POSTGRES_SCHEMES = ("postgresql", "postgres")
_SECRET_PARAMETERS = ("password", "sslpassword")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_postgres_url(value: object) -> bool:
    """Whether ``value`` is a ``postgresql://`` (or ``postgres://``) URL."""
    if not isinstance(value, str):
        return False
    return value.split("://", 1)[0].lower() in _POSTGRES_SCHEMES and "://" in value


def _libpq_split(url: str) -> tuple[str, str | None, str]:
    """``(scheme, user info or None, rest)`` of a URL, split where libpq splits it.

    libpq (``conninfo_uri_parse_options`` in fe-connect.c) takes the text before the first
    ``@`` as user info when no ``/`` comes before it, and knows no fragment: ``#`` and ``?``
    inside a password are part of it (``postgresql://u:a#b?c@host/db`` has password
    ``a#b?c``), so splitting the URL as a web URL (``urlsplit``) cut the password at them.
    """
    scheme, _, rest = url.partition("://")
    end = re.search(r"[@/]", rest)
    if end is None or end.group(0) != "@":
        return scheme, None, rest
    return scheme, rest[:end.start()], rest[end.start() + 1:]


def _query_items(query: str) -> list[tuple[str, str, str]]:
    """``(raw item, decoded name, raw value)`` of a URL query, split on ``&`` as libpq does."""
    out = []
    for item in query.split("&"):
        name, _, value = item.partition("=")
        try:
            decoded = unquote(name, errors="strict")
        except UnicodeDecodeError:
            decoded = name
        out.append((item, decoded, value))
    return out


_SECRET_PARAMETERS = ("password", "sslpassword")


def url_problem(url: str) -> str | None:
    """Why libpq would misread ``url`` (a sentence that quotes nothing of it), or None.

    libpq parses the URL (``PQconninfoParse``, through psycopg); it is refused when that
    fails, or when what libpq read is not what the URL says: an ``@`` left in the host or
    the database name, or a port that is not a number. A password with an unencoded ``/``,
    ``@`` or ``%`` does that (``postgresql://u:pa/ss@host/db`` is host ``u``, port ``pa``,
    database ``ss@host/db``), and libpq's own message would then quote pieces of it.
    """
    hint = ("characters such as / @ % & in the user name or password must be percent-encoded "
            "(/ as %2F, @ as %40, % as %25, & as %26)")
    try:
        from psycopg.conninfo import conninfo_to_dict

        parsed = conninfo_to_dict(url)
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return None
    except Exception as exc:  # psycopg.ProgrammingError: libpq could not parse it
        reason = re.sub(r':?\s*"[^"]*"', "", str(exc).strip().splitlines()[0] if str(exc).strip() else "")
        return f"libpq cannot read this URL ({reason.strip() or 'malformed'}); {hint}"
    _, userinfo, rest = _libpq_split(url)
    misread = (userinfo is None and "@" in rest.partition("?")[0]) \
        or any("@" in str(parsed.get(key) or "") for key in ("host", "hostaddr", "port")) \
        or not re.fullmatch(r"[0-9,]*", str(parsed.get("port") or ""))
    return f"libpq would read another host, port or database than this URL names; {hint}" if misread else None


def redact_url(url: str) -> str:
    """``url`` without its password (for messages, ``Store.path`` and the dashboard's cache keys).

    The password is found as libpq finds it (:func:`_libpq_split`): in the user info
    (``user:***@host``, however many ``#``, ``?`` or percent-encoded characters it holds)
    and in the ``password=`` or ``sslpassword=`` query parameter (also when the name is
    percent-encoded). A URL that libpq would misread (:func:`url_problem`) is shown as
    ``scheme://***@host`` (the host after its last ``@``), nothing more.
    """
    scheme, userinfo, rest = _libpq_split(url)
    if url_problem(url) is not None:
        host = re.split(r"[/?]", rest.rsplit("@", 1)[-1] if "@" in url else rest, maxsplit=1)[0]
        return f"{scheme}://***@{host}" if "@" in url else f"{scheme}://{host}"
    shown = "" if userinfo is None else (userinfo.split(":", 1)[0] + (":***" if ":" in userinfo else "") + "@")
    where, mark, query = rest.partition("?")
    items = [f"{raw.partition('=')[0]}=***" if name in _SECRET_PARAMETERS and value else raw
             for raw, name, value in _query_items(query)] if mark else []
    return f"{scheme}://{shown}{where}{mark}{'&'.join(items)}"


def redact_text(text: str, url: str) -> str:
    """``text`` (an error message) with the password of ``url`` replaced by ``***``, as written in
    the URL and as decoded, wherever it appears."""
    _, userinfo, rest = _libpq_split(url)
    values = []
    if userinfo is not None and ":" in userinfo:
        values.append(userinfo.split(":", 1)[1])
    values += [value for _, name, value in _query_items(rest.partition("?")[2]) if name in _SECRET_PARAMETERS]
    values += [unquote(v) for v in values]
    for value in sorted({v for v in values if v}, key=len, reverse=True):
        text = text.replace(value, "***")
    return text


def default_db_path() -> Path | str:
    """``$PEERBOARD_DB``, else the per-user data folder (XDG) ``peerboard/peerboard.sqlite``.

    ``$PEERBOARD_DB`` is a SQLite file path or a ``postgresql://`` URL (returned as the
    string, see :func:`database_location`).

    Raises
    ------
    StoreError
        If ``$PEERBOARD_DB`` is a URL of another kind (``mysql://...``): it must not become
        a folder named ``mysql:``.
    """
    if os.environ.get(ENV_DB):
        return database_location(os.environ[ENV_DB], what=f"${ENV_DB}")
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "peerboard" / "peerboard.sqlite"




def database_location(value: str | os.PathLike[str], *, what: str) -> Path | str:
    """Where a user's database is (``--db``, ``$PEERBOARD_DB``): a SQLite file's path, or a
    ``postgresql://`` URL kept as given (the team store, :mod:`peercore.db`).

    Any other URL is refused without repeating it (it may carry a password): a URL is
    never taken for a file path. So is a ``postgresql://`` URL that libpq would misread
    (:func:`peercore.db.url_problem`: e.g. a password with an unencoded ``/``).
    """
    text = os.fspath(value)
    if is_postgres_url(text):
        problem = url_problem(text)
        if problem is not None:  # libpq would misread it, and its message would quote pieces of the password
            raise StoreError(f"{what} {redact_url(text)}: {problem}")
        return text
    if _URL.match(text):
        scheme = text.split("://", 1)[0]
        raise StoreError(f"{what} is a {scheme}:// URL; PeerBoard stores studies in a SQLite file (give its path, "
                         f"e.g. ~/peerboard.sqlite) or in PostgreSQL (postgresql://user@host/database)")
    return Path(text).expanduser()
