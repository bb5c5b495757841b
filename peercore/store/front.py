"""The store's front: one database (a SQLite file or a PostgreSQL schema), its connections,
transactions, schema and clock, and one repository per kind of record.

:class:`Store` itself has ten public methods (``connect``, ``close``, ``transaction``,
``write_if_free``, ``snapshot``, ``clock``, ``checkpoint``, ``integrity_problems``,
``schema_version``, ``migrations``); everything about records goes through its
repositories, each a :class:`peercore.store.core.Repository` in a module of its own:

===================  ==============================================  ======================
attribute            records                                         module
===================  ==============================================  ======================
``store.studies``    studies, their revision, imports and settings   :mod:`.studies`
``store.questions``  questions and answers                           :mod:`.questions`
``store.judges``     judges: names, kinds, run identities            :mod:`.judges`
``store.verdicts``   verdicts (judgments)                            :mod:`.judgments`
``store.runs``       runs, their items, paid calls and batches       :mod:`.runs`
``store.debates``    debates, label requests and adjudication        :mod:`.adjudication`
``store.scores``     human and judge scores                          :mod:`.scores`
``store.access``     roles and the audit log                         :mod:`.access`
===================  ==============================================  ======================
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from peercore import db as _db
from peercore.errors import StoreError
from peercore.locations import database_location, default_db_path, is_postgres_url, redact_url
from peercore.store import schema
from peercore.store.core import _now
from peercore.store.access import Access
from peercore.store.adjudication import Debates
from peercore.store.judges import Judges
from peercore.store.judgments import Verdicts
from peercore.store.legacy import LEGACY
from peercore.store.questions import Questions
from peercore.store.runs import Runs
from peercore.store.scores import Scores
from peercore.store.studies import Studies

__all__ = ["Store"]

# Test hook: seconds to sleep inside a write transaction just before COMMIT, so that a
# test can kill the process while a large import is written but not committed; "stdin":
# wait there until a line can be read from standard input (the test decides when).
_ENV_PAUSE_BEFORE_COMMIT = "PEERBOARD_TEST_PAUSE_BEFORE_COMMIT"


class Store:
    """A PeerBoard database.

    Parameters
    ----------
    path : the SQLite file (created if missing), or None for :func:`peercore.locations.default_db_path`.
        ``":memory:"`` is refused: every thread needs to see the same database. A
        ``postgresql://`` URL opens PostgreSQL through :mod:`peercore.db` (its schema from
        :mod:`peercore.store.schema`), as does ``$PEERBOARD_DB`` holding one.
    create : when False, a missing file is an error instead of a new empty database
        (for commands that only read).

    Raises
    ------
    StoreError
        If the file is not a SQLite database, or was written by a newer peercore.

    Examples
    --------
    >>> store = Store(tmp_path / "pb.sqlite")            # doctest: +SKIP
    >>> store.studies.create("demo")                      # doctest: +SKIP
    >>> store.verdicts.add("demo", judgments)             # doctest: +SKIP
    WriteCounts(added=120, skipped=0)
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, create: bool = True) -> None:
        self.studies = Studies(self)
        self.questions = Questions(self)
        self.judges = Judges(self)
        self.verdicts = Verdicts(self)
        self.runs = Runs(self)
        self.debates = Debates(self)
        self.scores = Scores(self)
        self.access = Access(self)
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
