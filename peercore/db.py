"""The thin dialect layer: the store's SQLite SQL, run on SQLite or on PostgreSQL (psycopg 3).

The store (:mod:`peercore.store`) is written in SQLite's SQL and talks to a
``sqlite3.Connection``. On PostgreSQL it gets a :class:`PgConnection` instead: the same
few methods the store uses (``execute``, ``executemany``, ``cursor``, ``total_changes``,
cursors with ``fetchone`` / ``fetchall`` / iteration / ``rowcount`` / ``lastrowid``, rows
readable by position and by name), with each statement translated once (cached):

=================================  ===================================================
SQLite                             PostgreSQL
=================================  ===================================================
``?`` and ``?N`` placeholders      ``%s`` (``?N`` reorders the parameters); ``%`` -> ``%%``
``INSERT OR IGNORE INTO ...``      ``INSERT INTO ... ON CONFLICT DO NOTHING``
``a IS b`` / ``a IS NOT b``        ``IS NOT DISTINCT FROM`` / ``IS DISTINCT FROM``
``BEGIN IMMEDIATE``                ``BEGIN`` + ``pg_advisory_xact_lock``: one writer at a
                                   time per database, the isolation SQLite gives
``cursor.lastrowid``               ``RETURNING id`` on tables with an identity ``id``
``executemany`` of an INSERT       ``COPY`` (through a staging table when the INSERT
                                   ignores conflicts or has literal columns)
``REAL`` in ``CREATE`` (temp       ``DOUBLE PRECISION`` (SQLite's REAL is 8 bytes)
tables)
``PRAGMA busy_timeout = N``        ``SET lock_timeout``; other PRAGMAs answer no rows
``ORDER BY rowid``                 a ``rowid`` identity column in the PostgreSQL schema
                                   (:mod:`peercore.store.schema`), hidden from ``dict(row)``
=================================  ===================================================

Only text outside string literals and quoted names is rewritten. The SQLite path does not
go through this module at all (the store keeps its ``sqlite3.Connection``), so SQLite's
behaviour and speed are unchanged.

Every connection has limits, so that neither a silent server nor a dead client holds the
team's store: a connect timeout (``$PEERBOARD_CONNECT_TIMEOUT`` seconds, default 10, at least
2, unless the URL sets ``connect_timeout``), a statement timeout (``$PEERBOARD_STATEMENT_TIMEOUT``
seconds, default 300, 0 for none; a statement still running then is cancelled and its
transaction rolled back) and, on PostgreSQL 14 and later, ``client_connection_check_interval``
(the server checks every 5 s that the client is still there while a statement runs, and
stops the statement of a killed client instead of finishing it).

A writer waits for another's write lock at most the busy timeout, on both engines: SQLite's
``busy_timeout``, PostgreSQL's ``lock_timeout`` (``$PEERBOARD_BUSY_TIMEOUT`` seconds, default
120: longer than a long import holds it). A wait that may last 2 s or more is said on stderr
first (:func:`say_lock_wait`, a warning of the ``peercore.db`` logger); when the time is up the
statement fails with the engine's lock error (:func:`is_lock_error`), and the command line
turns that, like a lost connection (:func:`is_connection_lost`), into one line
(:func:`database_trouble`).

A URL is shown only through :func:`redact_url`, which finds the password where libpq does
(:func:`url_problem` refuses a URL libpq would misread, e.g. a password with an unencoded
``/``, without repeating it).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from peercore.errors import PeercoreError
from peercore.locations import is_postgres_url, redact_text, redact_url, url_problem

__all__ = ["is_postgres_url", "redact_url", "url_problem", "redact_text", "connect_postgres", "PgConnection",
           "read_sql_query", "translate", "postgres_error", "describe_error", "StatementTimeout", "is_postgres",
           "read_arrow", "is_lock_error", "integrity_errors", "ENV_CONNECT_TIMEOUT", "ENV_STATEMENT_TIMEOUT",
           "ENV_BUSY_TIMEOUT", "busy_timeout_ms", "say_lock_wait", "is_connection_lost", "database_trouble"]

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import pandas as pd

# The key of the one advisory lock a write transaction takes (BEGIN IMMEDIATE's equivalent).
WRITE_LOCK_KEY = 0x5045_4552  # "PEER"
# How long a writer waits for another's lock (the write lock, a row) before failing: SQLite's
# busy_timeout, PostgreSQL's lock_timeout (Store.runs.busy_timeout changes it with PRAGMA busy_timeout).
# Seconds; $PEERBOARD_BUSY_TIMEOUT changes it (busy_timeout_ms).
ENV_BUSY_TIMEOUT = "PEERBOARD_BUSY_TIMEOUT"
BUSY_TIMEOUT_S = 120
# A wait for the write lock that may last this long or more is said first (say_lock_wait).
SAY_WAIT_FROM_MS = 2_000
# How long connecting may take before giving up (a host that accepts the connection and never
# answers hung every command before), and how long one statement may run (a killed client's
# import went on holding the write lock). Seconds; the environment variables change them.
ENV_CONNECT_TIMEOUT = "PEERBOARD_CONNECT_TIMEOUT"
ENV_STATEMENT_TIMEOUT = "PEERBOARD_STATEMENT_TIMEOUT"
CONNECT_TIMEOUT_S = 10
STATEMENT_TIMEOUT_S = 300
# How often the server checks, while a statement runs, that the client is still connected.
CLIENT_CHECK_INTERVAL_MS = 5_000
# Tables whose ``id`` is an identity column: an INSERT into them returns it (lastrowid).
_IDENTITY_TABLES = frozenset({"studies", "imports", "debates", "adjudications", "verdicts", "judge_scores"})


# ------------------------------------------------------------------- translation


@dataclass(frozen=True)
class Translated:
    """One statement in PostgreSQL's form."""

    sql: str
    order: tuple[int, ...] | None  # parameter indices for ?N placeholders; None: as given
    kind: str                      # "sql", "begin", "pragma", "noop"
    dml: bool                      # INSERT / UPDATE / DELETE (counted in total_changes)
    returning_id: bool             # RETURNING id was appended (lastrowid)
    insert: tuple | None = None    # (ignore, table, columns, values) of INSERT ... VALUES (...)


_LITERAL = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*")
_PLACEHOLDER = re.compile(r"\?(\d*)")
_INSERT_VALUES = re.compile(r"^\s*INSERT\s+(OR\s+IGNORE\s+)?INTO\s+(\w+)\s*(?:\(([^)]*)\))?\s*VALUES\s*\((.*)\)\s*;?\s*$",
                            re.IGNORECASE | re.DOTALL)


@functools.lru_cache(maxsize=1024)
def translate(sql: str) -> Translated:
    """``sql`` (SQLite) in PostgreSQL's form; see the module's table."""
    literals: list[str] = []

    def mask(match: re.Match) -> str:
        text = match.group(0)
        if text.startswith("--"):
            return " "
        literals.append(text)
        return f"\x00{len(literals) - 1}\x00"

    masked = _LITERAL.sub(mask, sql)
    head = masked.lstrip().upper()
    if re.match(r"BEGIN\s+IMMEDIATE\b", head):
        return Translated("BEGIN", None, "begin", False, False)
    if head.startswith("PRAGMA"):
        found = re.match(r"PRAGMA\s+busy_timeout\s*=\s*(\d+)", masked.strip(), re.IGNORECASE)
        if found:
            return Translated(f"SET lock_timeout = {int(found.group(1))}", None, "pragma", False, False)
        return Translated("", None, "noop", False, False)
    ignore = re.match(r"\s*INSERT\s+OR\s+IGNORE\s+INTO\b", masked, re.IGNORECASE) is not None
    if ignore:
        masked = re.sub(r"INSERT\s+OR\s+IGNORE\s+INTO\b", "INSERT INTO", masked, count=1, flags=re.IGNORECASE)
        masked = masked.rstrip().rstrip(";") + " ON CONFLICT DO NOTHING"
    if head.startswith("CREATE"):
        masked = re.sub(r"\bREAL\b", "DOUBLE PRECISION", masked, flags=re.IGNORECASE)
        masked = re.sub(r"\bINTEGER\s+PRIMARY\s+KEY\b", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", masked,
                        flags=re.IGNORECASE)
    masked = re.sub(r"\bIS\s+NOT\s+(?!NULL\b|DISTINCT\b|TRUE\b|FALSE\b)", "IS DISTINCT FROM ", masked,
                    flags=re.IGNORECASE)
    masked = re.sub(r"\bIS\s+(?!NOT\b|NULL\b|DISTINCT\b|TRUE\b|FALSE\b)", "IS NOT DISTINCT FROM ", masked,
                    flags=re.IGNORECASE)
    masked = _alias_subqueries(masked)
    # "x IN ()" (an empty list, as SQLite allows) is false; "IN (NULL)" is never true either.
    masked = re.sub(r"\bIN\s*\(\s*\)", "IN (NULL)", masked, flags=re.IGNORECASE)
    kind_word = head.split(None, 1)[0] if head else ""
    dml = kind_word in ("INSERT", "UPDATE", "DELETE")
    table = re.match(r"\s*INSERT\s+INTO\s+(\w+)", masked, re.IGNORECASE)
    returning = bool(table and table.group(1).lower() in _IDENTITY_TABLES and "RETURNING" not in masked.upper())
    if returning:
        masked = masked.rstrip().rstrip(";") + " RETURNING id"
    masked = masked.replace("%", "%%")
    numbered: list[int] = []
    sequential = False

    def placeholder(match: re.Match) -> str:
        nonlocal sequential
        if match.group(1):
            numbered.append(int(match.group(1)) - 1)
        else:
            sequential = True
        return "%s"

    masked = _PLACEHOLDER.sub(placeholder, masked)
    if numbered and sequential:
        raise ValueError(f"statement mixes ? and ?N placeholders: {sql!r}")
    text = re.sub("\x00(\\d+)\x00", lambda m: literals[int(m.group(1))].replace("%", "%%"), masked)
    insert = None
    found = _INSERT_VALUES.match(sql)
    split = _split_values(found.group(4)) if found and "SELECT" not in found.group(4).upper() else None
    if split is not None:  # a plain VALUES (...) and nothing after it (no ON CONFLICT ... DO UPDATE)
        values = [v.strip() for v in split]
        columns = [c.strip() for c in found.group(3).split(",")] if found.group(3) else None
        if columns is None and all(v == "?" for v in values):  # every column, in order
            insert = (bool(found.group(1)), found.group(2), None, tuple(values))
        elif columns is not None and len(values) == len(columns):
            insert = (bool(found.group(1)), found.group(2), tuple(columns), tuple(values))
    return Translated(text, tuple(numbered) if numbered else None, "sql", dml, returning, insert)


_CLAUSE_WORDS = frozenset({"WHERE", "GROUP", "ORDER", "JOIN", "LEFT", "INNER", "CROSS", "UNION", "LIMIT", "ON",
                           "HAVING", "EXCEPT", "INTERSECT", "WINDOW", "OFFSET", "RETURNING"})


def _alias_subqueries(sql: str) -> str:
    """Give every ``FROM (SELECT ...)`` without an alias one (PostgreSQL before 16 requires it)."""
    out, k, n = [], 0, 0
    for match in re.finditer(r"\bFROM\s*\(\s*SELECT\b", sql, re.IGNORECASE):
        start = sql.index("(", match.start())
        if start < k:
            continue
        depth = 0
        for end in range(start, len(sql)):
            depth += {"(": 1, ")": -1}.get(sql[end], 0)
            if depth == 0:
                break
        rest = sql[end + 1:].lstrip()
        word = re.match(r"\w+", rest)
        if word is None or word.group(0).upper() in _CLAUSE_WORDS:
            out.append(sql[k:end + 1] + f" AS _sub{n}")
            n += 1
            k = end + 1
    out.append(sql[k:])
    return "".join(out)


def _split_values(text: str) -> list[str] | None:
    """Split a VALUES list on commas outside quotes and parentheses; None if it is not one list."""
    out, depth, quote, start = [], 0, False, 0
    for k, ch in enumerate(text):
        if ch == "'":
            quote = not quote
        elif not quote and ch == "(":
            depth += 1
        elif not quote and ch == ")":
            depth -= 1
            if depth < 0:  # "VALUES (...) ON CONFLICT (...) ...": more than the list
                return None
        elif not quote and depth == 0 and ch == ",":
            out.append(text[start:k])
            start = k + 1
    out.append(text[start:])
    return out


def _params(translated: Translated, params: Sequence | None) -> list:
    params = [] if params is None else list(params)
    if translated.order is None:
        return params
    return [params[k] for k in translated.order]


# -------------------------------------------------------------------- connections


class Row(tuple):
    """A row readable by position and by column name, like ``sqlite3.Row``; ``dict(row)`` works.

    A ``rowid`` column (PostgreSQL's stand-in for SQLite's hidden rowid) is left out of
    ``keys()``, so ``SELECT *`` gives the same dict on both engines.
    """

    __slots__ = ()
    _names: tuple[str, ...] = ()

    def __getitem__(self, key):
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return [n for n in self._names if n != "rowid"]


@functools.lru_cache(maxsize=256)
def _row_class(names: tuple[str, ...]) -> type:
    return type("Row", (Row,), {"__slots__": (), "_names": names, "_index": {n: k for k, n in enumerate(names)}})


def _row_factory(cursor):
    names = tuple(c.name for c in cursor.description or ())
    cls = _row_class(names)
    return lambda values: tuple.__new__(cls, values)


class PgCursor:
    """What the store uses of a ``sqlite3.Cursor``, over a psycopg cursor."""

    def __init__(self, connection: "PgConnection") -> None:
        self._connection = connection
        self._cursor = connection.raw.cursor()
        self.row_factory = "row"   # None: plain tuples (as ``cursor.row_factory = None`` in sqlite3)
        self.lastrowid: int | None = None
        self._rowcount = -1
        self._empty = False

    def _prepare(self) -> None:
        from psycopg.rows import tuple_row

        self._cursor.row_factory = tuple_row if self.row_factory is None else _row_factory

    def execute(self, sql: str, params: Sequence | None = None) -> "PgCursor":
        with _timeouts_said(self._connection):
            return self._execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence]) -> "PgCursor":
        with _timeouts_said(self._connection):
            return self._executemany(sql, rows)

    def _execute(self, sql: str, params: Sequence | None = None) -> "PgCursor":
        translated = translate(sql)
        self.lastrowid, self._empty = None, False
        if translated.kind == "noop":
            self._empty, self._rowcount = True, -1
            return self
        self._prepare()
        if translated.kind == "begin":
            self._cursor.execute("BEGIN")
            try:
                self._cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [WRITE_LOCK_KEY])
                if not self._cursor.fetchone()[0]:  # another writer holds it: wait, saying so when long
                    connection = self._connection
                    limits = [ms for ms in (connection.lock_ms, connection.statement_ms) if ms > 0]
                    say_lock_wait(connection.shown, min(limits) if limits else None)
                    self._cursor.execute("SELECT pg_advisory_xact_lock(%s)", [WRITE_LOCK_KEY])
            except BaseException:  # as a failed BEGIN IMMEDIATE: no transaction is left open
                with contextlib.suppress(Exception):  # (a lost connection has none left either)
                    self._connection.raw.execute("ROLLBACK")
                raise
            self._empty, self._rowcount = True, -1
            return self
        if translated.kind == "pragma":  # PRAGMA busy_timeout = N: SET lock_timeout = N
            self._connection.lock_ms = int(translated.sql.rsplit("=", 1)[1])
        self._cursor.execute(translated.sql, _params(translated, params))
        self._rowcount = self._cursor.rowcount
        if translated.returning_id:
            found = self._cursor.fetchone()
            self.lastrowid = None if found is None else int(found[0])
            self._empty = True
        if translated.dml and self._rowcount > 0:
            self._connection.total_changes += self._rowcount
        return self

    def _executemany(self, sql: str, rows: Iterable[Sequence]) -> "PgCursor":
        translated = translate(sql)
        if translated.insert is not None:
            added = self._connection._copy_insert(translated, rows)
        else:
            self._prepare()
            rows = [_params(translated, r) for r in rows]
            if not rows:
                added = 0
            else:
                self._cursor.executemany(translated.sql.replace(" RETURNING id", ""), rows)
                added = max(self._cursor.rowcount, 0)
        self._rowcount = added
        if translated.dml:
            self._connection.total_changes += added
        self._empty = True
        return self

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def description(self):
        return self._cursor.description

    def fetchone(self):
        return None if self._empty else self._cursor.fetchone()

    def fetchall(self) -> list:
        return [] if self._empty else self._cursor.fetchall()

    def __iter__(self):
        return iter(self.fetchall())

    def close(self) -> None:
        self._cursor.close()


class PgConnection:
    """A psycopg 3 connection dressed as the ``sqlite3.Connection`` the store uses.

    Autocommit: a statement outside :meth:`peercore.store.Store.transaction` is its own
    transaction (as in sqlite3 with ``isolation_level=None``); ``BEGIN IMMEDIATE`` opens a
    transaction holding the database's write lock (see the module's table).
    """

    dialect = "postgresql"

    def __init__(self, raw, *, shown: str = "postgresql", statement_ms: int = 0) -> None:
        self.raw = raw
        self.total_changes = 0
        self.shown = shown                # the URL without its password, for messages
        self.statement_ms = statement_ms  # the session's statement_timeout
        self.lock_ms = 0                  # the session's lock_timeout (0: the server's default)

    def cursor(self) -> PgCursor:
        return PgCursor(self)

    def execute(self, sql: str, params: Sequence | None = None) -> PgCursor:
        return PgCursor(self).execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence]) -> PgCursor:
        return PgCursor(self).executemany(sql, rows)

    def close(self) -> None:
        self.raw.close()

    def __del__(self) -> None:
        # The store keeps one connection per thread (threading.local): when a thread ends
        # (a Streamlit script run, a worker), its connection goes with it. Close it then,
        # rather than leave the server's slot to the garbage collector with a warning.
        raw = getattr(self, "raw", None)
        if raw is not None and not raw.closed:
            raw.close()

    def _copy_insert(self, translated: Translated, rows: Iterable[Sequence]) -> int:
        """An executemany of ``INSERT [OR IGNORE] INTO t [(cols)] VALUES (...)`` as COPY; returns the rows added.

        Rows go straight into the table with ``COPY`` (constant columns written into each
        row). ``INSERT OR IGNORE`` tries that too, under a savepoint: when a row's key is
        already stored it rolls back to the savepoint and copies into a staging table, then
        ``INSERT ... SELECT ... ORDER BY`` (insertion order kept) ``ON CONFLICT DO NOTHING``.
        A first import therefore pays no conflict handling (30% of the insert, measured).
        """
        import psycopg

        ignore, table, columns, values = translated.insert
        if any(v.startswith("?") and v != "?" for v in values):
            raise ValueError(f"numbered placeholders in a bulk insert are not supported: {translated.sql!r}")
        cursor = self.raw.cursor()
        target = table if columns is None else f"{table} ({', '.join(columns)})"
        template = [None if v == "?" else _literal_value(v) for v in values]
        positions = [k for k, v in enumerate(values) if v == "?"]
        direct = _UNKNOWN not in template  # every constant is a plain literal: COPY can write it

        def full(row):
            if len(positions) == len(values):
                return row
            out = list(template)
            for k, value in zip(positions, row):
                out[k] = value
            return out

        if direct and not ignore:
            n = 0
            with cursor.copy(f"COPY {target} FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(full(row))
                    n += 1
            return n
        if direct and self.raw.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS:
            rows = rows if isinstance(rows, list) else list(rows)  # kept for the fallback below
            cursor.execute("SAVEPOINT _pb_copy")
            try:
                with cursor.copy(f"COPY {target} FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(full(row))
            except psycopg.errors.UniqueViolation:
                cursor.execute("ROLLBACK TO SAVEPOINT _pb_copy")
            else:
                cursor.execute("RELEASE SAVEPOINT _pb_copy")
                return len(rows)
        if columns is None:
            raise ValueError(f"INSERT OR IGNORE without a column list is not supported in bulk: {translated.sql!r}")
        bound = [c for c, v in zip(columns, values) if v == "?"]
        constant = [(c, v) for c, v in zip(columns, values) if v != "?"]
        cursor.execute("DROP TABLE IF EXISTS _pb_stage")
        cursor.execute(f"CREATE TEMP TABLE _pb_stage AS SELECT 0::bigint AS _n, {', '.join(bound)} FROM {table} "
                       "WITH NO DATA")
        n = 0
        with cursor.copy(f"COPY _pb_stage (_n, {', '.join(bound)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row((n, *row))
                n += 1
        added = 0
        if n:
            select = ", ".join([v.replace("%", "%%") for _, v in constant] + bound)
            cursor.execute(
                f"INSERT INTO {table} ({', '.join([c for c, _ in constant] + bound)}) "
                f"SELECT {select} FROM _pb_stage ORDER BY _n" + (" ON CONFLICT DO NOTHING" if ignore else ""))
            added = max(cursor.rowcount, 0)
        cursor.execute("DROP TABLE _pb_stage")
        return added


_UNKNOWN = object()


def _literal_value(text: str):
    """The Python value of a SQL literal the store writes into a bulk INSERT (integer, 'text', NULL)."""
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if text.upper() == "NULL":
        return None
    return _UNKNOWN


def _seconds_setting(name: str, default: float) -> float:
    """The number of seconds in the environment variable ``name`` (``default`` when unset or empty).

    Raises
    ------
    PeercoreError
        If the value is not a number of seconds, 0 or more (the variable and value are named).
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return float(default)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise PeercoreError(f"${name} must be a number of seconds (0 or more), got {text[:40]!r}")
    return value


def busy_timeout_ms() -> int:
    """How long a writer waits for another's lock, in milliseconds (``$PEERBOARD_BUSY_TIMEOUT`` seconds,
    default :data:`BUSY_TIMEOUT_S`; at least 1 ms, since PostgreSQL reads a lock_timeout of 0 as "for ever").

    Raises
    ------
    PeercoreError
        If the variable is not a number of seconds, 0 or more (the variable and value are named).
    """
    return max(1, round(_seconds_setting(ENV_BUSY_TIMEOUT, BUSY_TIMEOUT_S) * 1000))


def say_lock_wait(shown: str, limit_ms: float | None) -> None:
    """Say (a warning of the ``peercore.db`` logger, on stderr unless logging is set up) that a write
    waits for another process's write lock on ``shown`` (a path, or a URL without its password), and
    for how long at most; a wait of less than :data:`SAY_WAIT_FROM_MS` is not worth a line.
    """
    if limit_ms is not None and limit_ms < SAY_WAIT_FROM_MS:
        return
    limit = "with no time limit" if limit_ms is None else f"up to {limit_ms / 1000:g} s"
    log.warning("%s: another process is writing to this database; waiting %s for its write lock "
                "($%s sets the limit in seconds)", shown, limit, ENV_BUSY_TIMEOUT)


def _connect_timeout_s() -> int:
    """The connect timeout in whole seconds, at least 2 (libpq's own floor; its 0, "wait forever", is
    what hung every command on a silent host, so it is not offered)."""
    return max(2, math.ceil(_seconds_setting(ENV_CONNECT_TIMEOUT, CONNECT_TIMEOUT_S)))


def connect_postgres(url: str) -> PgConnection:
    """Open ``url`` with psycopg 3 (autocommit; numpy numbers adapted as Python numbers).

    The connection gets the limits of the module's docstring: a connect timeout (unless the
    URL sets ``connect_timeout``), ``statement_timeout``, ``client_connection_check_interval``
    and the store's ``lock_timeout``.
    """
    import numpy as np
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    integer, floating = _numpy_dumpers()
    options = {} if "connect_timeout" in conninfo_to_dict(url) else {"connect_timeout": _connect_timeout_s()}
    statement_ms = round(_seconds_setting(ENV_STATEMENT_TIMEOUT, STATEMENT_TIMEOUT_S) * 1000)
    lock_ms = busy_timeout_ms()
    raw = psycopg.connect(url, autocommit=True, **options)
    try:
        raw.execute(f"SET lock_timeout = {lock_ms}")  # SQLite's busy timeout (peercore.store)
        raw.execute(f"SET statement_timeout = {statement_ms}")
        if raw.info.server_version >= 140000:
            raw.execute(f"SET client_connection_check_interval = {CLIENT_CHECK_INTERVAL_MS}")
    except BaseException:
        raw.close()
        raise
    # psycopg prepares a statement run 5 times; the server may then keep one generic plan for
    # it, chosen on the statistics of that moment. The adjudication claim, planned while its
    # tables were nearly empty, then scanned every decision on every claim (6 -> 52 ms per
    # claim over 1,200 decisions, until autovacuum re-analysed). Unprepared, each execution is
    # planned with the tables as they are: 5-8 ms flat (benchmarks/results/adjudication.md).
    # (Not the server's plan_cache_mode = force_custom_plan: that also re-plans the foreign-key
    # checks of every row a COPY inserts, and made a million-verdict import 17 s -> 27 s.)
    raw.prepare_threshold = None
    for kind in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32):
        raw.adapters.register_dumper(kind, integer)
    for kind in (np.float32, np.float64):
        raw.adapters.register_dumper(kind, floating)
    connection = PgConnection(raw, shown=redact_url(url), statement_ms=statement_ms)
    connection.lock_ms = lock_ms
    return connection


@functools.lru_cache(maxsize=1)
def _numpy_dumpers():
    from psycopg.types.numeric import FloatDumper, IntDumper

    class NumpyIntDumper(IntDumper):
        def dump(self, obj):
            return super().dump(int(obj))

    class NumpyFloatDumper(FloatDumper):
        def dump(self, obj):
            return super().dump(float(obj))

    return NumpyIntDumper, NumpyFloatDumper


def postgres_error() -> type[Exception]:
    """psycopg's base exception class (imported only when PostgreSQL is used)."""
    import psycopg

    return psycopg.Error


class StatementTimeout(PeercoreError):
    """A statement ran past the session's statement timeout and the server cancelled it
    (its transaction is rolled back: nothing of it was written)."""


def describe_error(exc: BaseException, url: str) -> str:
    """One line saying why connecting to (or using) ``url`` failed, without its password.

    libpq's messages run over several lines (``connection failed: ...`` then a hint);
    they are joined. A connect timeout says how long was waited and which variable sets it.
    """
    import psycopg

    if isinstance(exc, psycopg.errors.ConnectionTimeout):
        from psycopg.conninfo import conninfo_to_dict

        given = conninfo_to_dict(url).get("connect_timeout")
        limit = (f"{given} s (connect_timeout in the URL)" if given else
                 f"{_connect_timeout_s()} s (${ENV_CONNECT_TIMEOUT} sets it)")
        return f"the server did not answer within {limit}; is it a PostgreSQL server, and is it up?"
    text = " ".join(part.strip() for part in str(exc).splitlines() if part.strip()) or type(exc).__name__
    return redact_text(text, url)


@contextlib.contextmanager
def _timeouts_said(connection: "PgConnection"):
    """Turn psycopg's ``QueryCanceled`` by statement_timeout into a one-line :class:`StatementTimeout`."""
    try:
        yield
    except Exception as exc:
        import psycopg

        if not (isinstance(exc, psycopg.errors.QueryCanceled) and "statement timeout" in str(exc)):
            raise
        raise StatementTimeout(
            f"{connection.shown}: a statement ran longer than the statement timeout ({connection.statement_ms / 1000:g} "
            f"s; ${ENV_STATEMENT_TIMEOUT} sets it, 0 for none) and the server cancelled it; nothing of it was "
            "written") from exc


def read_sql_query(sql: str, connection, params: Sequence | None = None) -> pd.DataFrame:
    """``pandas.read_sql_query`` on either engine (pandas itself only knows sqlite3 among raw drivers)."""
    import pandas as pd  # heavy: the command line imports this module for its errors, before any query

    if not isinstance(connection, PgConnection):
        return pd.read_sql_query(sql, connection, params=params)
    cursor = connection.cursor()
    cursor.row_factory = None
    cursor.execute(sql, params)
    names = [c.name for c in cursor.description]
    return pd.DataFrame.from_records(cursor.fetchall(), columns=names, coerce_float=True)


def is_postgres(store_or_connection) -> bool:
    """Whether a :class:`peercore.store.Store` (its ``url``) or a connection is on PostgreSQL."""
    if isinstance(store_or_connection, PgConnection):
        return True
    return getattr(store_or_connection, "url", None) is not None


def read_arrow(connection: PgConnection, select: str, columns: Sequence[tuple[str, object]]):
    """The rows of ``select`` (PostgreSQL, no parameters) as a ``pyarrow.Table``, column by column.

    ``COPY (select) TO STDOUT`` in CSV, parsed by pyarrow's CSV reader into the given
    ``(name, pyarrow type)`` columns: a million verdicts in about 1.2 s, half the time of
    a ``SELECT`` fetched as Python tuples and turned into columns (2.35 s; measured in
    benchmarks/results/store_backends.md). Only an unquoted empty field is NULL (PostgreSQL
    writes an empty string as ``""``), so texts such as ``NA`` or ``null`` stay texts.
    Values are interpolated by the caller: pass integers only (COPY takes no parameters).
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    buffer = bytearray()
    with connection.raw.cursor() as cursor:
        with cursor.copy(f"COPY ({select}) TO STDOUT (FORMAT csv, ENCODING 'UTF8')") as copy:
            for data in copy:
                buffer += data
    names = [name for name, _ in columns]
    if not buffer:
        return pa.table({name: pa.array([], type=kind) for name, kind in columns})
    return pacsv.read_csv(
        pa.py_buffer(bytes(buffer)),
        read_options=pacsv.ReadOptions(column_names=names, use_threads=False),
        parse_options=pacsv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False),
        convert_options=pacsv.ConvertOptions(column_types=dict(columns), null_values=[""], strings_can_be_null=True,
                                             quoted_strings_can_be_null=False))


# ------------------------------------------------------------------ errors by engine
# The runner (peercore.runner) retries a write while another process holds the write
# lock, and stores items one by one when a batch breaks a constraint. SQLite says so with
# sqlite3.OperationalError ("database is locked" / "busy") and sqlite3.IntegrityError;
# PostgreSQL (psycopg) with LockNotAvailable (lock_timeout, the store's busy timeout),
# SerializationFailure or DeadlockDetected, and psycopg.IntegrityError. psycopg is only
# looked at when it is already imported (a PostgreSQL store opened it): SQLite-only
# processes never import it.


def _psycopg_errors():
    import sys

    return None if "psycopg" not in sys.modules else sys.modules["psycopg"]


def is_lock_error(exc: BaseException) -> bool:
    """Whether ``exc`` means "another writer holds the lock; try again" on either engine."""
    import sqlite3

    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        return "locked" in text or "busy" in text
    psycopg = _psycopg_errors()
    if psycopg is None:
        return False
    errors = psycopg.errors
    return isinstance(exc, (errors.LockNotAvailable, errors.SerializationFailure, errors.DeadlockDetected))


def is_connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` means the PostgreSQL server went away: the connection broke or was closed
    (psycopg's ``OperationalError`` without a server error code, or of class 08 "connection
    exception" or 57P "operator intervention": shutdown, terminated, crashed)."""
    psycopg = _psycopg_errors()
    if psycopg is None or not isinstance(exc, psycopg.OperationalError) or is_lock_error(exc):
        return False
    state = getattr(exc, "sqlstate", None)
    return state is None or state.startswith(("08", "57P"))


def database_trouble(exc: BaseException, shown: str) -> str | None:
    """What happened to the database ``shown`` and when to try again, in one line, when ``exc`` is a
    lock not released in time or a lost connection; else None.

    ``shown`` must carry no password (:func:`redact_url`); the driver's own words are not
    repeated (they may quote the server's address). Every write is one transaction, so the
    one under way was rolled back: nothing is half-written.
    """
    rolled_back = "nothing was half-written (the write under way was rolled back)"
    if is_lock_error(exc):
        return (f"{shown}: another process held the database's write lock longer than this command waits "
                f"({busy_timeout_ms() / 1000:g} s; ${ENV_BUSY_TIMEOUT} sets it); {rolled_back}. Run the command "
                "again when that process is done")
    if is_connection_lost(exc):
        return (f"{shown}: the connection to the database server was lost (the server stopped or ended the "
                f"session); {rolled_back}. Run the command again once the server is back")
    return None


def integrity_errors() -> tuple[type[BaseException], ...]:
    """The exception classes of a broken constraint on either engine (for ``except``)."""
    import sqlite3

    psycopg = _psycopg_errors()
    return (sqlite3.IntegrityError,) if psycopg is None else (sqlite3.IntegrityError, psycopg.IntegrityError)
