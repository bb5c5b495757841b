"""The store's core: errors, :class:`WriteCounts`, database paths, secret scrubbing, and
:class:`StoreCore` (connections, transactions, migrations, integrity) that the record mixins build on."""

from __future__ import annotations

import contextlib
import re
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from peercore.assignment import QUEUE_KINDS  # what the adjudication queue offers (with the queue's other rules)
from peercore import db as _db
from peercore.errors import JudgmentError, PeercoreError, StoreError
from peercore.locations import database_location, default_db_path, is_postgres_url, redact_url
from peercore.redaction import SECRET_WORDS as _SECRET_WORDS  # noqa: F401 (re-exported)
from peercore.redaction import is_secret_name as _is_secret_name
from peercore.store import schema
from peercore.store.legacy import LEGACY


VERDICTS = ("model_a", "model_b", "tie")
# An annotator's choices on a debate: a verdict, or "both bad" (stored as a tie, flagged).
DECISIONS = (*VERDICTS, "both_bad")
MAX_OVERLAP = 1000
JUDGE_KINDS = ("llm", "human", "debate", "adjudicator", "vote", "other")
RUN_STATUSES = ("pending", "running", "finished", "failed", "cancelled", "interrupted")
DEBATE_STATUSES = ("agreed", "unresolved", "adjudicated")
# Test hook: seconds to sleep inside a write transaction just before COMMIT, so that a
# test can kill the process while a large import is written but not committed; "stdin":
# wait there until a line can be read from standard input (the test decides when).
_ENV_PAUSE_BEFORE_COMMIT = "PEERBOARD_TEST_PAUSE_BEFORE_COMMIT"
# How long a connection waits for another writer's lock before SQLite says "locked", unless
# $PEERBOARD_BUSY_TIMEOUT says otherwise (peercore.db.busy_timeout_ms; the same on PostgreSQL).
_BUSY_TIMEOUT_MS = _db.BUSY_TIMEOUT_S * 1000


class ScoreConflict(JudgmentError):
    """A score's natural key is already stored with another value.

    Human scores are keyed on (study, question_id, model, attribute); judges' scores on
    (study, question_id, model, judge, attribute, vote). Writing the same value again is
    skipped; another value under the same key is refused (nothing is written).

    Attributes
    ----------
    key : dict of the key's fields.
    row : 0-based position of the offending row in the frame that was being written.
    stored, incoming : the stored and the incoming values.
    """

    def __init__(self, problem: str, *, key: dict, row: int, stored: dict, incoming: dict, column: str) -> None:
        self.key = dict(key)
        self.stored = dict(stored)
        self.incoming = dict(incoming)
        super().__init__(problem, row=row, column=column)


@dataclass(frozen=True)
class WriteCounts:
    """How many rows a write added, and how many it skipped as already present.

    For verdicts, ``repeated`` counts the rows added as a repeated vote of a judge on a
    comparison it had voted on already (in the same write or before), ``invalid`` the
    rows added with no readable verdict.
    """

    added: int
    skipped: int
    repeated: int = 0
    invalid: int = 0

    def __add__(self, other: "WriteCounts") -> "WriteCounts":
        return WriteCounts(self.added + other.added, self.skipped + other.skipped, self.repeated + other.repeated,
                           self.invalid + other.invalid)


def scrub_secrets(config: object) -> object:
    """A copy of ``config`` with every value under a secret-looking key replaced by ``"***"``.

    A key counts as secret when its last word is key, api key, token, secret, password,
    auth(orization), bearer or credential(s) (``api_key``, ``OPENAI_API_KEY``,
    ``accessToken``), at any depth; ``max_tokens`` or ``prompt_tokens`` do not. Used
    before a run configuration reaches the database or a log.
    """
    if isinstance(config, Mapping):
        return {
            k: ("***" if _is_secret_key(k) and v not in (None, "") else scrub_secrets(v))
            for k, v in config.items()
        }
    if isinstance(config, (list, tuple)):
        return [scrub_secrets(v) for v in config]
    return config


def _is_secret_key(key: object) -> bool:
    return _is_secret_name(str(key))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class StoreCore:
    """Connections, transactions and the schema of a :class:`peercore.store.Store`."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, create: bool = True) -> None:
        path = default_db_path() if path is None else database_location(path, what="the database")
        self.url = path if is_postgres_url(path) else None
        if self.url is not None:  # PostgreSQL (peercore.db)
            self.path = redact_url(self.url)
            self._local = threading.local()
            try:
                if not create and self.connect().execute(
                        "SELECT to_regclass('schema_migrations') IS NULL").fetchone()[0]:
                    self.close()
                    raise StoreError(f"no PeerBoard database at {self.path}; import a study first "
                                     "(peercore import PATH --db ...)")
                self._migrate()
            except _db.postgres_error() as exc:
                self.close()
                raise StoreError(f"{self.path}: {_db.describe_error(exc, self.url)}") from exc
            return
        if str(path) == ":memory:":
            raise ValueError("path ':memory:' is not supported; give a file (threads share it)")
        self.path = Path(path).expanduser()
        if not create and not self.path.is_file():
            raise StoreError(f"no PeerBoard database at {self.path}; import a study first (peercore import PATH --db ...)")
        if self.path.is_dir():
            raise StoreError(f"{self.path} is a folder; give a database file (e.g. {self.path / 'peerboard.sqlite'})")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        try:
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self.close()
            if type(exc) is sqlite3.DatabaseError:  # "file is not a database", "malformed"
                raise StoreError(f"{self.path} is not a PeerBoard database ({exc})") from None
            raise StoreError(f"{self.path}: upgrading the schema failed ({exc}); the file is unchanged") from exc

    # ------------------------------------------------------------------ connections

    def connect(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use)."""
        connection = getattr(self._local, "connection", None)
        if connection is None and self.url is not None:
            try:
                connection = self._local.connection = _db.connect_postgres(self.url)
            except _db.postgres_error() as exc:  # one line, without the password (a new thread connects here)
                raise StoreError(f"{self.path}: {_db.describe_error(exc, self.url)}") from exc
            self._local.depth = 0
        if connection is None:
            busy_ms = _db.busy_timeout_ms()
            connection = sqlite3.connect(self.path, timeout=busy_ms / 1000, isolation_level=None)
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA foreign_keys = ON")
            connection.execute(f"PRAGMA busy_timeout = {busy_ms}")
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":  # pragma: no cover - e.g. a network file system
                raise StoreError(f"{self.path}: SQLite refused WAL mode (got {mode!r})")
            connection.execute("PRAGMA synchronous = NORMAL")
            # 64 MiB page cache (the default is 2 MiB): a million-row import keeps the
            # unique index in memory instead of re-reading pages. Memory is only used
            # when pages are touched.
            connection.execute("PRAGMA cache_size = -65536")
            self._local.connection = connection
            self._local.depth = 0
        return connection

    def close(self) -> None:
        """Close this thread's connection."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``); nested calls join the outer one.

        Everything inside lands together or, on any exception (or a killed process, or a
        lost connection to the server), not at all. While another process holds the write
        lock, it waits at most the busy timeout (:func:`peercore.db.busy_timeout_ms`), saying
        so when that may be long (:func:`peercore.db.say_lock_wait`), then fails with the
        engine's lock error.
        """
        connection = self.connect()
        if self._local.depth:
            self._local.depth += 1
            try:
                yield connection
            finally:
                self._local.depth -= 1
            return
        self._begin(connection)
        with self._until_commit(connection):
            yield connection
            pause = os.environ.get(_ENV_PAUSE_BEFORE_COMMIT)
            if pause:  # test hook (see _ENV_PAUSE_BEFORE_COMMIT)
                print(f"peercore: test hook: pausing {pause}{'' if pause == 'stdin' else ' s'} before COMMIT",
                      file=sys.stderr, flush=True)
                if pause == "stdin":
                    sys.stdin.readline()
                else:
                    time.sleep(float(pause))

    @contextlib.contextmanager
    def _until_commit(self, connection) -> Iterator:
        """The body of a write transaction this thread has begun: COMMIT after it, ROLLBACK on any exception."""
        self._local.depth = 1
        try:
            yield connection
        except BaseException:
            try:
                connection.execute("ROLLBACK")
            except Exception as exc:  # the server went away: it rolled the transaction back itself
                if not _db.is_connection_lost(exc):
                    raise
            raise
        else:
            connection.execute("COMMIT")
        finally:
            self._local.depth = 0

    @contextlib.contextmanager
    def write_if_free(self) -> Iterator:
        """A write transaction for a cache, or ``None`` when that would mean waiting.

        Yields this thread's connection in a new write transaction when the write lock is
        free at once (SQLite: ``BEGIN IMMEDIATE`` with no busy wait; PostgreSQL: a plain
        ``BEGIN``, since a cache row needs no writer's lock), else ``None``: inside this
        thread's own transaction or snapshot, or while another writer holds the lock.
        Commits on success, rolls back on an exception. For data, use :meth:`transaction`.
        """
        connection = self.connect()
        if self._local.depth:
            yield None
            return
        if self.url is not None:
            connection.raw.execute("BEGIN")
        elif not self._begin_at_once(connection):
            yield None
            return
        with self._until_commit(connection):
            yield connection

    @contextlib.contextmanager
    def snapshot(self) -> Iterator:
        """A read transaction: every query inside sees the database at one moment.

        A reader that reads several tables (labels, then the verdicts that use them) must
        not see a writer's commit land between two of its queries. SQLite: a deferred
        ``BEGIN`` (WAL pins the snapshot at the first read; writers go on); PostgreSQL:
        ``REPEATABLE READ READ ONLY``. Inside a write transaction of this thread it joins
        that transaction (which already sees one consistent state).
        """
        connection = self.connect()
        if self._local.depth:
            yield connection
            return
        self._local.depth = 1
        try:
            if self.url is None:
                connection.execute("BEGIN")
            else:
                connection.raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield connection
            finally:
                (connection.execute if self.url is None else connection.raw.execute)("COMMIT")
        finally:
            self._local.depth = 0

    def _begin(self, connection) -> None:
        """``BEGIN IMMEDIATE``; on SQLite, first without waiting, so that a long wait is said before it starts.

        (On PostgreSQL :mod:`peercore.db` does the same with ``pg_try_advisory_xact_lock``.)
        """
        if self.url is not None:
            connection.execute("BEGIN IMMEDIATE")
            return
        limit_ms = connection.execute("PRAGMA busy_timeout").fetchone()[0]
        if limit_ms < _db.SAY_WAIT_FROM_MS:  # e.g. the runner's short waits (it retries and says so itself)
            connection.execute("BEGIN IMMEDIATE")
            return
        if self._begin_at_once(connection):
            return
        _db.say_lock_wait(str(self.path), limit_ms)
        connection.execute("BEGIN IMMEDIATE")

    @staticmethod
    def _begin_at_once(connection: sqlite3.Connection) -> bool:
        """SQLite's ``BEGIN IMMEDIATE`` without a busy wait; False (no transaction) while another writer holds it."""
        limit_ms = connection.execute("PRAGMA busy_timeout").fetchone()[0]
        connection.execute("PRAGMA busy_timeout = 0")
        try:
            connection.execute("BEGIN IMMEDIATE")
            return True
        except sqlite3.OperationalError as exc:
            if not _db.is_lock_error(exc):
                raise
            return False
        finally:
            connection.execute(f"PRAGMA busy_timeout = {limit_ms}")

    def clock(self) -> float:
        """Seconds since the epoch by the database's clock.

        For PostgreSQL the server's (``clock_timestamp()``), so that annotators on machines
        whose clocks disagree still agree on when a lease expires; for a SQLite file, this
        machine's (every process using the file runs here).
        """
        if self.url is None:
            return time.time()
        return float(self.connect().execute("SELECT EXTRACT(EPOCH FROM clock_timestamp())").fetchone()[0])

    def checkpoint(self) -> None:
        """Copy the write-ahead log into the main file and truncate it.

        After this the main file alone holds the whole database (e.g. to copy or hash it).
        """
        self.connect().execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _migrate(self) -> None:
        schema.upgrade(self, legacy=LEGACY, now=_now())

    def integrity_problems(self) -> list[str]:
        """What is wrong with the file, as sentences (empty when all is well).

        SQLite's own ``integrity_check`` and ``foreign_key_check``, plus the label codes
        of verdicts, which are not declared as foreign keys (see the schema).
        """
        connection = self.connect()
        problems = [r[0] for r in connection.execute("PRAGMA integrity_check") if r[0] != "ok"]
        problems += [f"foreign key violation in {r[0]} row {r[1]} (parent {r[2]})"
                     for r in connection.execute("PRAGMA foreign_key_check")]
        for column in ("model_a", "model_b", "judge", "criterion"):
            orphans = connection.execute(
                f"SELECT COUNT(*) FROM verdicts v WHERE NOT EXISTS (SELECT 1 FROM labels l WHERE l.study_id = v.study_id "
                f"AND l.id = v.{column})" + (" AND v.criterion <> 0" if column == "criterion" else "")).fetchone()[0]
            if orphans:
                problems.append(f"{orphans} verdict(s) with a {column} code missing from labels")
        return problems

    def schema_version(self) -> int:
        """The highest migration applied to this file."""
        return int(self.connect().execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0])

    def migrations(self) -> pd.DataFrame:
        """The applied migrations: version, name, applied_at."""
        return _db.read_sql_query("SELECT version, name, applied_at FROM schema_migrations ORDER BY version", self.connect())

    def _insert_many(self, study_id: int, sql: str, rows: list[tuple]) -> WriteCounts:
        with self.transaction() as tx:
            before = tx.total_changes
            tx.executemany(sql, rows)
            added = tx.total_changes - before
            if added:
                self._bump(tx, study_id)
        return WriteCounts(added, len(rows) - added)


def _require(frame: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} is missing column(s) {missing} (found: {list(frame.columns)})")


def _text_or(value, default):
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return default
    return str(value)
