"""SQLite, the embedded default store: studies, answers, judgments, runs, cache, debates.

One database file holds many studies. Properties:

- **Schema migrations** are recorded in ``schema_migrations``; opening an older file
  upgrades it in place, inside a transaction.
- **WAL** journal, foreign keys on, a busy timeout; one connection per thread (SQLite
  connections are never shared across threads).
- **Atomic writes**: every public write is one transaction (all of it lands or none of
  it does); callers can group several in :meth:`Store.transaction`.
- **Natural keys**: writing the same judgment, answer, question or adjudication twice
  never makes two rows; writes report how many rows were added and how many skipped.
- **No secrets**: nothing here stores API keys; run configurations are scrubbed of
  keys named like secrets before they are written (:func:`scrub_secrets`).

The database location is ``$PEERBOARD_DB`` if set, else
``$XDG_DATA_HOME/peerboard/peerboard.sqlite`` (``~/.local/share/...``).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from peercore.errors import PeercoreError
from peercore.judgments import COLUMNS, judgments_from_frame

__all__ = ["Store", "WriteCounts", "StoreError", "default_db_path", "scrub_secrets", "SCHEMA_VERSION"]

ENV_DB = "PEERBOARD_DB"
VERDICTS = ("model_a", "model_b", "tie")
JUDGE_KINDS = ("llm", "human", "debate", "adjudicator", "vote", "other")
RUN_STATUSES = ("pending", "running", "finished", "failed", "cancelled", "interrupted")
DEBATE_STATUSES = ("agreed", "unresolved", "adjudicated")
_SECRET_WORDS = ("key", "token", "secret", "password", "authorization", "auth")


class StoreError(PeercoreError):
    """The store was asked for something that is not there, or the file is not ours."""


@dataclass(frozen=True)
class WriteCounts:
    """How many rows a write added, and how many it skipped as already present."""

    added: int
    skipped: int

    def __add__(self, other: "WriteCounts") -> "WriteCounts":
        return WriteCounts(self.added + other.added, self.skipped + other.skipped)


def default_db_path() -> Path:
    """``$PEERBOARD_DB``, else the per-user data folder (XDG) ``peerboard/peerboard.sqlite``."""
    if os.environ.get(ENV_DB):
        return Path(os.environ[ENV_DB]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "peerboard" / "peerboard.sqlite"


def scrub_secrets(config: object) -> object:
    """A copy of ``config`` with every value under a secret-looking key replaced by ``"***"``.

    Keys containing key, token, secret, password or auth (case-insensitive) count as
    secret, at any depth. Used before a run configuration reaches the database or a log.
    """
    if isinstance(config, Mapping):
        return {
            k: ("***" if any(word in str(k).lower() for word in _SECRET_WORDS) and v not in (None, "") else scrub_secrets(v))
            for k, v in config.items()
        }
    if isinstance(config, (list, tuple)):
        return [scrub_secrets(v) for v in config]
    return config


# ------------------------------------------------------------------------- migrations
# Each migration is (version, name, SQL). Never edit a released one: add a new one.

_MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "initial schema", """
CREATE TABLE studies (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    source      TEXT NOT NULL DEFAULT '{}',       -- JSON: where the data came from
    revision    INTEGER NOT NULL DEFAULT 0,       -- bumped by every write (cache stamp)
    created_at  TEXT NOT NULL
);
CREATE TABLE questions (
    study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    question_id TEXT NOT NULL,
    text        TEXT NOT NULL,
    category    TEXT NOT NULL DEFAULT '',
    reference   TEXT,
    PRIMARY KEY (study_id, question_id)
);
CREATE TABLE answers (
    study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    question_id TEXT NOT NULL,
    model       TEXT NOT NULL,
    turn        INTEGER NOT NULL DEFAULT 1,
    text        TEXT NOT NULL,
    run_id      TEXT,
    PRIMARY KEY (study_id, question_id, model, turn)
);
CREATE TABLE judges (
    study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    kind        TEXT NOT NULL DEFAULT 'other'
                CHECK (kind IN ('llm', 'human', 'debate', 'adjudicator', 'vote', 'other')),
    model_alias TEXT,                              -- the contestant this judge is, if any
    settings    TEXT NOT NULL DEFAULT '{}',        -- JSON, secrets scrubbed
    PRIMARY KEY (study_id, name)
);
-- Optional canonical fields use '' / 0 for "not given" so natural keys stay unique
-- (SQLite treats NULLs as distinct in UNIQUE constraints).
CREATE TABLE judgments (
    id          INTEGER PRIMARY KEY,
    study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    question_id TEXT NOT NULL,
    model_a     TEXT NOT NULL,
    model_b     TEXT NOT NULL CHECK (model_b <> model_a),
    judge       TEXT NOT NULL,
    criterion   TEXT NOT NULL DEFAULT '',
    turn        INTEGER NOT NULL DEFAULT 0,
    round       INTEGER NOT NULL DEFAULT 0,
    vote        INTEGER NOT NULL DEFAULT 0,        -- k-th verdict by this judge on this key
    winner      TEXT CHECK (winner IN ('model_a', 'model_b', 'tie')),
    p_a         REAL CHECK (p_a IS NULL OR (p_a >= 0 AND p_a <= 1)),
    rationale   TEXT,
    valid       INTEGER NOT NULL DEFAULT 1 CHECK (valid IN (0, 1)),
    raw         TEXT,                              -- unparsed model output, kept when invalid
    run_id      TEXT,
    created_at  TEXT NOT NULL,
    CHECK (valid = 0 OR winner IS NOT NULL),
    UNIQUE (study_id, question_id, model_a, model_b, judge, criterion, turn, round, vote)
);
CREATE INDEX judgments_by_judge ON judgments (study_id, judge);
CREATE TABLE runs (
    id                TEXT PRIMARY KEY,
    study_id          INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    kind              TEXT NOT NULL,               -- answers, review, discussion, debate
    config            TEXT NOT NULL DEFAULT '{}',  -- JSON, secrets scrubbed
    status            TEXT NOT NULL DEFAULT 'pending'
                      CHECK (status IN ('pending', 'running', 'finished', 'failed', 'cancelled', 'interrupted')),
    n_items           INTEGER NOT NULL DEFAULT 0,
    n_done            INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd          REAL NOT NULL DEFAULT 0,
    error             TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL
);
CREATE TABLE run_items (
    run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    item_key   TEXT NOT NULL,
    status     TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed', 'invalid')),
    detail     TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (run_id, item_key)
);
-- Every paid LLM call, keyed on (backend, model, parameters, messages, sample index).
CREATE TABLE llm_calls (
    cache_key         TEXT PRIMARY KEY,
    backend           TEXT NOT NULL,
    model             TEXT NOT NULL,
    request           TEXT NOT NULL,               -- JSON, no credentials
    response          TEXT NOT NULL,               -- JSON
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    latency_s         REAL,
    run_id            TEXT,
    created_at        TEXT NOT NULL
);
CREATE TABLE debates (
    id          INTEGER PRIMARY KEY,
    study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    debate_key  TEXT NOT NULL,                     -- natural key from the source or the run
    kind        TEXT NOT NULL DEFAULT 'debate' CHECK (kind IN ('debate', 'discussion')),
    question_id TEXT NOT NULL,
    model_a     TEXT NOT NULL,                     -- submission shown as 1
    model_b     TEXT NOT NULL,                     -- submission shown as 2
    criterion   TEXT NOT NULL DEFAULT '',
    scenario    TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL CHECK (status IN ('agreed', 'unresolved', 'adjudicated')),
    consensus   TEXT CHECK (consensus IN ('model_a', 'model_b', 'tie')),
    n_rounds    INTEGER NOT NULL DEFAULT 0,
    metadata    TEXT NOT NULL DEFAULT '{}',
    run_id      TEXT,
    created_at  TEXT NOT NULL,
    UNIQUE (study_id, debate_key)
);
CREATE TABLE debate_turns (
    debate_id INTEGER NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    round     INTEGER NOT NULL,                    -- 0 = initial verdicts
    position  INTEGER NOT NULL,                    -- speaking order within the round
    speaker   TEXT NOT NULL,
    verdict   TEXT CHECK (verdict IN ('model_a', 'model_b', 'tie')),
    rationale TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (debate_id, round, speaker)
);
CREATE TABLE adjudications (
    id         INTEGER PRIMARY KEY,
    debate_id  INTEGER NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    annotator  TEXT NOT NULL,
    verdict    TEXT NOT NULL CHECK (verdict IN ('model_a', 'model_b', 'tie')),
    note       TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    UNIQUE (debate_id, annotator)
);
"""),
]

SCHEMA_VERSION = _MIGRATIONS[-1][0]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class Store:
    """A PeerBoard database.

    Parameters
    ----------
    path : the SQLite file (created if missing), or None for :func:`default_db_path`.
        ``":memory:"`` is refused: every thread needs to see the same database.

    Examples
    --------
    >>> store = Store(tmp_path / "pb.sqlite")            # doctest: +SKIP
    >>> store.create_study("demo")                        # doctest: +SKIP
    >>> store.add_judgments("demo", judgments)            # doctest: +SKIP
    WriteCounts(added=120, skipped=0)
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        path = default_db_path() if path is None else Path(path)
        if str(path) == ":memory:":
            raise ValueError("path ':memory:' is not supported; give a file (threads share it)")
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._migrate()

    # ------------------------------------------------------------------ connections

    def connect(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use)."""
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA foreign_keys = ON")
            connection.execute("PRAGMA busy_timeout = 30000")
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":  # pragma: no cover - e.g. a network file system
                raise StoreError(f"{self.path}: SQLite refused WAL mode (got {mode!r})")
            connection.execute("PRAGMA synchronous = NORMAL")
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

        Everything inside lands together or, on any exception, not at all.
        """
        connection = self.connect()
        if self._local.depth:
            self._local.depth += 1
            try:
                yield connection
            finally:
                self._local.depth -= 1
            return
        connection.execute("BEGIN IMMEDIATE")
        self._local.depth = 1
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        else:
            connection.execute("COMMIT")
        finally:
            self._local.depth = 0

    def _migrate(self) -> None:
        connection = self.connect()
        connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        applied = {row[0] for row in connection.execute("SELECT version FROM schema_migrations")}
        if applied and max(applied) > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {max(applied)}, newer than this peercore "
                f"({SCHEMA_VERSION}); upgrade peercore"
            )
        for version, name, sql in _MIGRATIONS:
            if version in applied:
                continue
            with self.transaction() as tx:
                for statement in _statements(sql):
                    tx.execute(statement)
                tx.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", (version, name, _now()))

    def schema_version(self) -> int:
        """The highest migration applied to this file."""
        return int(self.connect().execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0])

    # ---------------------------------------------------------------------- studies

    def create_study(self, name: str, *, description: str = "", source: Mapping | None = None,
                     exist_ok: bool = False) -> int:
        """Create a study and return its id.

        Raises
        ------
        StoreError
            If the study exists and ``exist_ok`` is false, or the name is empty.
        """
        if not name or not name.strip():
            raise StoreError("study name is empty")
        with self.transaction() as tx:
            row = tx.execute("SELECT id FROM studies WHERE name = ?", (name,)).fetchone()
            if row is not None:
                if exist_ok:
                    return int(row[0])
                raise StoreError(f"study {name!r} already exists")
            cursor = tx.execute(
                "INSERT INTO studies (name, description, source, created_at) VALUES (?, ?, ?, ?)",
                (name, description, json.dumps(scrub_secrets(dict(source or {}))), _now()),
            )
            return int(cursor.lastrowid)

    def study_id(self, name: str) -> int:
        """The id of study ``name``; StoreError naming the studies there are if missing."""
        row = self.connect().execute("SELECT id FROM studies WHERE name = ?", (name,)).fetchone()
        if row is None:
            names = [r[0] for r in self.connect().execute("SELECT name FROM studies ORDER BY name")]
            raise StoreError(f"no study named {name!r}; studies are {names}")
        return int(row[0])

    def studies(self) -> pd.DataFrame:
        """One row per study: name, description, created_at, revision, source (dict)."""
        frame = pd.read_sql_query(
            "SELECT name, description, created_at, revision, source FROM studies ORDER BY name", self.connect()
        )
        frame["source"] = frame["source"].map(json.loads)
        return frame

    def study_source(self, study: str) -> dict:
        row = self.connect().execute("SELECT source FROM studies WHERE id = ?", (self.study_id(study),)).fetchone()
        return json.loads(row[0])

    def update_study_source(self, study: str, source: Mapping) -> None:
        """Merge ``source`` into the study's provenance record."""
        with self.transaction() as tx:
            merged = {**self.study_source(study), **scrub_secrets(dict(source))}
            tx.execute("UPDATE studies SET source = ? WHERE id = ?", (json.dumps(merged), self.study_id(study)))
            self._bump(tx, self.study_id(study))

    def delete_study(self, study: str) -> None:
        with self.transaction() as tx:
            tx.execute("DELETE FROM studies WHERE id = ?", (self.study_id(study),))

    def revision(self, study: str) -> int:
        """A number that changes whenever the study's data changes (a cache stamp)."""
        row = self.connect().execute("SELECT revision FROM studies WHERE name = ?", (study,)).fetchone()
        if row is None:
            self.study_id(study)  # raises with the list of studies
        return int(row[0])

    def summary(self, study: str) -> dict[str, int]:
        """Counts of what the study holds (the Studies page header)."""
        sid = self.study_id(study)
        q = lambda sql: int(self.connect().execute(sql, (sid,)).fetchone()[0])  # noqa: E731
        return {
            "questions": q("SELECT COUNT(*) FROM questions WHERE study_id = ?"),
            "answers": q("SELECT COUNT(*) FROM answers WHERE study_id = ?"),
            "contestants": q("SELECT COUNT(*) FROM (SELECT model_a FROM judgments WHERE study_id = ?1 "
                             "UNION SELECT model_b FROM judgments WHERE study_id = ?1 "
                             "UNION SELECT model FROM answers WHERE study_id = ?1)"),
            "judges": q("SELECT COUNT(DISTINCT judge) FROM judgments WHERE study_id = ?"),
            "judgments": q("SELECT COUNT(*) FROM judgments WHERE study_id = ? AND valid = 1"),
            "invalid_judgments": q("SELECT COUNT(*) FROM judgments WHERE study_id = ? AND valid = 0"),
            "human_votes": q("SELECT COUNT(*) FROM judgments WHERE study_id = ? AND valid = 1 AND judge LIKE 'human:%'"),
            "debates": q("SELECT COUNT(*) FROM debates WHERE study_id = ?"),
            "open_adjudications": q("SELECT COUNT(*) FROM debates d WHERE study_id = ? AND status = 'unresolved' "
                                    "AND NOT EXISTS (SELECT 1 FROM adjudications a WHERE a.debate_id = d.id)"),
            "runs": q("SELECT COUNT(*) FROM runs WHERE study_id = ?"),
        }

    def _bump(self, tx: sqlite3.Connection, study_id: int) -> None:
        tx.execute("UPDATE studies SET revision = revision + 1 WHERE id = ?", (study_id,))

    # ---------------------------------------------------------- questions & answers

    def add_questions(self, study: str, questions: pd.DataFrame) -> WriteCounts:
        """Insert questions (``question_id, text`` [, ``category``, ``reference``]); existing ids are skipped."""
        _require(questions, ("question_id", "text"), "questions")
        sid = self.study_id(study)
        rows = [
            (sid, str(r.question_id), str(r.text), _text_or(getattr(r, "category", ""), ""), _text_or(getattr(r, "reference", None), None))
            for r in questions.itertuples(index=False)
        ]
        return self._insert_many(
            sid, "INSERT OR IGNORE INTO questions (study_id, question_id, text, category, reference) VALUES (?, ?, ?, ?, ?)", rows
        )

    def add_answers(self, study: str, answers: pd.DataFrame, *, run_id: str | None = None) -> WriteCounts:
        """Insert answers (``question_id, model, answer`` [, ``turn``]); an existing (question, model, turn) is skipped."""
        _require(answers, ("question_id", "model", "answer"), "answers")
        sid = self.study_id(study)
        turns = answers["turn"] if "turn" in answers.columns else pd.Series(1, index=answers.index)
        rows = [
            (sid, str(q), str(m), int(t) if pd.notna(t) else 1, str(a), run_id)
            for q, m, t, a in zip(answers["question_id"], answers["model"], turns, answers["answer"])
        ]
        return self._insert_many(
            sid, "INSERT OR IGNORE INTO answers (study_id, question_id, model, turn, text, run_id) VALUES (?, ?, ?, ?, ?, ?)", rows
        )

    def questions(self, study: str) -> pd.DataFrame:
        return pd.read_sql_query(
            "SELECT question_id, text, category, reference FROM questions WHERE study_id = ? ORDER BY rowid",
            self.connect(), params=(self.study_id(study),),
        ).astype({"question_id": "str", "text": "str", "category": "str"})

    def answers(self, study: str) -> pd.DataFrame:
        """``question_id, model, turn, answer``."""
        return pd.read_sql_query(
            "SELECT question_id, model, turn, text AS answer FROM answers WHERE study_id = ? ORDER BY rowid",
            self.connect(), params=(self.study_id(study),),
        ).astype({"question_id": "str", "model": "str", "answer": "str"})

    # ------------------------------------------------------------------------ judges

    def add_judges(self, study: str, judges: Iterable[Mapping]) -> WriteCounts:
        """Register judges (``name`` [, ``kind``, ``model_alias``, ``settings``]); existing names are updated."""
        sid = self.study_id(study)
        added = skipped = 0
        with self.transaction() as tx:
            for judge in judges:
                kind = judge.get("kind", "other")
                if kind not in JUDGE_KINDS:
                    raise ValueError(f"judge kind must be one of {JUDGE_KINDS}, got {kind!r}")
                exists = tx.execute("SELECT 1 FROM judges WHERE study_id = ? AND name = ?", (sid, judge["name"])).fetchone()
                tx.execute(
                    "INSERT INTO judges (study_id, name, kind, model_alias, settings) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (study_id, name) DO UPDATE SET kind = excluded.kind, "
                    "model_alias = excluded.model_alias, settings = excluded.settings",
                    (sid, judge["name"], kind, judge.get("model_alias"), json.dumps(scrub_secrets(dict(judge.get("settings") or {})))),
                )
                added, skipped = (added, skipped + 1) if exists else (added + 1, skipped)
            self._bump(tx, sid)
        return WriteCounts(added, skipped)

    def judges(self, study: str) -> pd.DataFrame:
        """Every judge that has judgments or is registered: name, kind, model_alias, n_judgments."""
        sid = self.study_id(study)
        frame = pd.read_sql_query(
            "SELECT j.name, COALESCE(r.kind, CASE WHEN j.name LIKE 'human:%' THEN 'human' "
            "WHEN j.name LIKE 'debate:%' THEN 'debate' ELSE 'llm' END) AS kind, r.model_alias, j.n AS n_judgments "
            "FROM (SELECT judge AS name, COUNT(*) AS n FROM judgments WHERE study_id = ?1 AND valid = 1 GROUP BY judge "
            "      UNION SELECT name, 0 FROM judges WHERE study_id = ?1 AND name NOT IN "
            "      (SELECT judge FROM judgments WHERE study_id = ?1)) j "
            "LEFT JOIN judges r ON r.study_id = ?1 AND r.name = j.name ORDER BY j.name",
            self.connect(), params=(sid,),
        )
        return frame

    def judge_aliases(self, study: str) -> dict[str, str]:
        """judge -> contestant, for judges registered with a ``model_alias``."""
        rows = self.connect().execute(
            "SELECT name, model_alias FROM judges WHERE study_id = ? AND model_alias IS NOT NULL", (self.study_id(study),)
        )
        return {r[0]: r[1] for r in rows}

    # --------------------------------------------------------------------- judgments

    def add_judgments(self, study: str, judgments: pd.DataFrame, *, run_id: str | None = None) -> WriteCounts:
        """Insert verdicts in the canonical shape; an existing natural key is skipped.

        The natural key is (question_id, model_a, model_b, judge, criterion, turn, round,
        vote). ``vote`` (optional column) numbers repeated verdicts by one judge on one
        key, e.g. anonymous crowd votes; when absent, repeats within ``judgments`` are
        numbered 0, 1, 2 ... in row order, so importing the same file twice adds nothing.
        Optional columns ``valid`` (default 1) and ``raw`` keep an unparseable verdict
        (``winner`` empty) with its raw text.
        """
        frame = _judgment_rows(judgments)
        sid = self.study_id(study)
        now = _now()
        rows = list(zip(
            [sid] * len(frame), frame["question_id"], frame["model_a"], frame["model_b"], frame["judge"],
            frame["criterion"], frame["turn"], frame["round"], frame["vote"], frame["winner"], frame["p_a"],
            frame["rationale"], frame["valid"], frame["raw"], [run_id] * len(frame), [now] * len(frame),
        ))
        return self._insert_many(
            sid,
            "INSERT OR IGNORE INTO judgments (study_id, question_id, model_a, model_b, judge, criterion, turn, round, "
            "vote, winner, p_a, rationale, valid, raw, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )

    def judgments(self, study: str, *, judges: Iterable[str] | None = None, include_invalid: bool = False,
                  with_vote: bool = False) -> pd.DataFrame:
        """The study's verdicts as a canonical judgment table (see :mod:`peercore.judgments`).

        Parameters
        ----------
        judges : only these judges (exact names); default all.
        include_invalid : also return unparseable verdicts (``winner`` missing); the
            result is then not a valid canonical table.
        with_vote : add the ``vote`` column (index of repeated verdicts on one key).
        """
        sid = self.study_id(study)
        sql = ("SELECT question_id, model_a, model_b, judge, winner, p_a, criterion, turn, round, rationale, vote "
               "FROM judgments WHERE study_id = ?")
        params: list = [sid]
        if not include_invalid:
            sql += " AND valid = 1"
        if judges is not None:
            judges = list(judges)
            sql += f" AND judge IN ({','.join('?' * len(judges))})"
            params += judges
        sql += " ORDER BY id"
        frame = pd.read_sql_query(sql, self.connect(), params=params)
        frame["criterion"] = frame["criterion"].replace("", np.nan)
        for column in ("turn", "round"):
            frame[column] = frame[column].where(frame[column] != 0)
        vote = frame.pop("vote")
        if include_invalid:
            out = frame
        else:
            out = judgments_from_frame(frame) if len(frame) else judgments_from_frame(frame.astype(object))
        if with_vote:
            out = out.assign(vote=vote.to_numpy())
        return out

    # -------------------------------------------------------------------------- runs

    def create_run(self, study: str, kind: str, config: Mapping, *, items: Iterable[str] = (),
                   run_id: str | None = None) -> str:
        """Register a run and its work items (idempotent for an existing ``run_id``)."""
        sid = self.study_id(study)
        run_id = run_id or uuid.uuid4().hex
        items = list(items)
        now = _now()
        with self.transaction() as tx:
            tx.execute(
                "INSERT OR IGNORE INTO runs (id, study_id, kind, config, n_items, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run_id, sid, kind, json.dumps(scrub_secrets(dict(config)), sort_keys=True), len(items), now, now),
            )
            tx.executemany(
                "INSERT OR IGNORE INTO run_items (run_id, item_key, updated_at) VALUES (?, ?, ?)",
                [(run_id, key, now) for key in items],
            )
            tx.execute("UPDATE runs SET n_items = (SELECT COUNT(*) FROM run_items WHERE run_id = ?1) WHERE id = ?1", (run_id,))
        return run_id

    def run(self, run_id: str) -> dict:
        row = self.connect().execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id!r}")
        out = dict(row)
        out["config"] = json.loads(out["config"])
        return out

    def runs(self, study: str) -> pd.DataFrame:
        return pd.read_sql_query(
            "SELECT id, kind, status, n_items, n_done, prompt_tokens, completion_tokens, cost_usd, error, "
            "created_at, updated_at FROM runs WHERE study_id = ? ORDER BY created_at DESC",
            self.connect(), params=(self.study_id(study),),
        )

    def set_run_status(self, run_id: str, status: str, *, error: str | None = None) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"status must be one of {RUN_STATUSES}, got {status!r}")
        with self.transaction() as tx:
            tx.execute("UPDATE runs SET status = ?, error = ?, updated_at = ? WHERE id = ?", (status, error, _now(), run_id))

    def pending_items(self, run_id: str) -> list[str]:
        """Items of a run not yet done (what a resumed run still has to do)."""
        rows = self.connect().execute(
            "SELECT item_key FROM run_items WHERE run_id = ? AND status NOT IN ('done', 'invalid') ORDER BY rowid", (run_id,)
        )
        return [r[0] for r in rows]

    def finish_item(self, run_id: str, item_key: str, *, status: str = "done", detail: str | None = None,
                    prompt_tokens: int = 0, completion_tokens: int = 0, cost_usd: float = 0.0,
                    write=None) -> None:
        """Mark one item finished, in the same transaction as ``write(tx)`` (its results).

        So a result is either stored together with its "done" mark or not at all: a
        killed run never loses a finished item nor marks an unfinished one done.
        """
        with self.transaction() as tx:
            if write is not None:
                write(tx)
            tx.execute(
                "UPDATE run_items SET status = ?, detail = ?, updated_at = ? WHERE run_id = ? AND item_key = ?",
                (status, detail, _now(), run_id, item_key),
            )
            tx.execute(
                "UPDATE runs SET n_done = (SELECT COUNT(*) FROM run_items WHERE run_id = ?1 AND status IN ('done', 'invalid')), "
                "prompt_tokens = prompt_tokens + ?2, completion_tokens = completion_tokens + ?3, "
                "cost_usd = cost_usd + ?4, updated_at = ?5 WHERE id = ?1",
                (run_id, prompt_tokens, completion_tokens, cost_usd, _now()),
            )

    # ------------------------------------------------------------------------- cache

    def cached_call(self, cache_key: str) -> dict | None:
        """The stored response of an identical earlier LLM call, or None."""
        row = self.connect().execute("SELECT * FROM llm_calls WHERE cache_key = ?", (cache_key,)).fetchone()
        if row is None:
            return None
        out = dict(row)
        out["request"] = json.loads(out["request"])
        out["response"] = json.loads(out["response"])
        return out

    def store_call(self, cache_key: str, *, backend: str, model: str, request: Mapping, response: Mapping,
                   prompt_tokens: int = 0, completion_tokens: int = 0, latency_s: float | None = None,
                   run_id: str | None = None) -> bool:
        """Record a paid call's response; returns False if the key was already there."""
        with self.transaction() as tx:
            cursor = tx.execute(
                "INSERT OR IGNORE INTO llm_calls (cache_key, backend, model, request, response, prompt_tokens, "
                "completion_tokens, latency_s, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (cache_key, backend, model, json.dumps(scrub_secrets(dict(request)), sort_keys=True),
                 json.dumps(dict(response)), prompt_tokens, completion_tokens, latency_s, run_id, _now()),
            )
            return cursor.rowcount == 1

    # ----------------------------------------------------------------------- debates

    def add_debate(self, study: str, debate: Mapping, turns: Iterable[Mapping], *, run_id: str | None = None) -> bool:
        """Insert one debate (or PRD discussion) with its turns; False if its key exists.

        ``debate`` needs ``debate_key, question_id, model_a, model_b, status`` and may
        give ``kind, criterion, scenario, consensus, n_rounds, metadata``. Each turn needs
        ``round, position, speaker`` and may give ``verdict, rationale``.
        """
        sid = self.study_id(study)
        status = debate["status"]
        if status not in DEBATE_STATUSES:
            raise ValueError(f"debate status must be one of {DEBATE_STATUSES}, got {status!r}")
        with self.transaction() as tx:
            cursor = tx.execute(
                "INSERT OR IGNORE INTO debates (study_id, debate_key, kind, question_id, model_a, model_b, criterion, "
                "scenario, status, consensus, n_rounds, metadata, run_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (sid, str(debate["debate_key"]), debate.get("kind", "debate"), str(debate["question_id"]),
                 debate["model_a"], debate["model_b"], debate.get("criterion") or "", debate.get("scenario") or "",
                 status, debate.get("consensus"), int(debate.get("n_rounds", 0)),
                 json.dumps(dict(debate.get("metadata") or {})), run_id, _now()),
            )
            if cursor.rowcount == 0:
                return False
            debate_id = cursor.lastrowid
            tx.executemany(
                "INSERT INTO debate_turns (debate_id, round, position, speaker, verdict, rationale) VALUES (?, ?, ?, ?, ?, ?)",
                [(debate_id, int(t["round"]), int(t["position"]), t["speaker"], t.get("verdict"), t.get("rationale") or "")
                 for t in turns],
            )
            self._bump(tx, sid)
            return True

    def debates(self, study: str, *, status: str | None = None, kind: str | None = None) -> pd.DataFrame:
        """One row per debate: id, debate_key, kind, question_id, model_a, model_b, criterion, scenario, status, consensus, n_rounds."""
        sql = ("SELECT id, debate_key, kind, question_id, model_a, model_b, criterion, scenario, status, consensus, "
               "n_rounds, metadata FROM debates WHERE study_id = ?")
        params: list = [self.study_id(study)]
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        frame = pd.read_sql_query(sql + " ORDER BY id", self.connect(), params=params)
        frame["metadata"] = frame["metadata"].map(json.loads)
        return frame

    def debate_turns(self, debate_ids: Iterable[int]) -> pd.DataFrame:
        """Turns of the given debates: debate_id, round, position, speaker, verdict, rationale."""
        ids = [int(i) for i in debate_ids]
        if not ids:
            return pd.DataFrame(columns=["debate_id", "round", "position", "speaker", "verdict", "rationale"])
        return pd.read_sql_query(
            f"SELECT debate_id, round, position, speaker, verdict, rationale FROM debate_turns "
            f"WHERE debate_id IN ({','.join('?' * len(ids))}) ORDER BY debate_id, round, position",
            self.connect(), params=ids,
        )

    def adjudication_queue(self, study: str, *, annotator: str | None = None) -> pd.DataFrame:
        """Unresolved debates not yet decided (by ``annotator``, or by anyone when None)."""
        sid = self.study_id(study)
        if annotator is None:
            where, params = "NOT EXISTS (SELECT 1 FROM adjudications a WHERE a.debate_id = d.id)", [sid]
        else:
            where, params = "NOT EXISTS (SELECT 1 FROM adjudications a WHERE a.debate_id = d.id AND a.annotator = ?)", [sid, annotator]
        return pd.read_sql_query(
            "SELECT d.id, d.debate_key, d.question_id, d.model_a, d.model_b, d.criterion, d.scenario, d.n_rounds "
            f"FROM debates d WHERE d.study_id = ? AND d.status = 'unresolved' AND {where} ORDER BY d.id",
            self.connect(), params=params,
        )

    def adjudicate(self, debate_id: int, annotator: str, verdict: str, *, note: str = "") -> bool:
        """Record ``annotator``'s decision on a debate; True if new, False if it replaced theirs.

        One decision per (debate, annotator): concurrent annotators each keep theirs, and
        a repeated click by the same annotator cannot make a second row.
        """
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
        if not annotator or not annotator.strip():
            raise ValueError("annotator name is empty")
        with self.transaction() as tx:
            row = tx.execute("SELECT study_id FROM debates WHERE id = ?", (int(debate_id),)).fetchone()
            if row is None:
                raise StoreError(f"no debate with id {debate_id}")
            existed = tx.execute(
                "SELECT 1 FROM adjudications WHERE debate_id = ? AND annotator = ?", (int(debate_id), annotator)
            ).fetchone()
            tx.execute(
                "INSERT INTO adjudications (debate_id, annotator, verdict, note, created_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (debate_id, annotator) DO UPDATE SET verdict = excluded.verdict, note = excluded.note, "
                "created_at = excluded.created_at",
                (int(debate_id), annotator, verdict, note, _now()),
            )
            self._bump(tx, row[0])
            return existed is None

    def undo_adjudication(self, debate_id: int, annotator: str) -> bool:
        """Remove ``annotator``'s decision on a debate; True if there was one."""
        with self.transaction() as tx:
            row = tx.execute("SELECT study_id FROM debates WHERE id = ?", (int(debate_id),)).fetchone()
            cursor = tx.execute("DELETE FROM adjudications WHERE debate_id = ? AND annotator = ?", (int(debate_id), annotator))
            if row is not None:
                self._bump(tx, row[0])
            return cursor.rowcount == 1

    def adjudications(self, study: str) -> pd.DataFrame:
        """Every decision: debate_id, question_id, model_a, model_b, criterion, scenario, annotator, verdict, note, created_at."""
        return pd.read_sql_query(
            "SELECT a.debate_id, d.question_id, d.model_a, d.model_b, d.criterion, d.scenario, a.annotator, a.verdict, "
            "a.note, a.created_at FROM adjudications a JOIN debates d ON d.id = a.debate_id WHERE d.study_id = ? "
            "ORDER BY a.id",
            self.connect(), params=(self.study_id(study),),
        )

    # ---------------------------------------------------------------------- helpers

    def _insert_many(self, study_id: int, sql: str, rows: list[tuple]) -> WriteCounts:
        with self.transaction() as tx:
            before = tx.total_changes
            tx.executemany(sql, rows)
            added = tx.total_changes - before
            if added:
                self._bump(tx, study_id)
        return WriteCounts(added, len(rows) - added)


def _statements(sql: str) -> list[str]:
    """Split a migration script into statements (``executescript`` would commit)."""
    statements, buffer = [], []
    for line in sql.splitlines():
        buffer.append(line)
        if sqlite3.complete_statement("\n".join(buffer)):
            statements.append("\n".join(buffer))
            buffer = []
    return [s for s in statements if s.strip()]


def _require(frame: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} is missing column(s) {missing} (found: {list(frame.columns)})")


def _text_or(value, default):
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return default
    return str(value)


def _judgment_rows(judgments: pd.DataFrame) -> pd.DataFrame:
    """Canonical columns + vote/valid/raw, with '' / 0 for "not given" and None for NULL.

    Rows with ``valid`` = 1 are validated as canonical judgments; rows with ``valid`` = 0
    (an unparseable LLM verdict) keep their key and raw text and have no winner.
    """
    n = len(judgments)
    valid = judgments["valid"].astype(int).to_numpy() if "valid" in judgments.columns else np.ones(n, int)
    good = valid == 1
    if good.all():
        frame = judgments_from_frame(judgments)
    else:
        frame = judgments.reindex(columns=list(COLUMNS)).astype(object).reset_index(drop=True)
        if good.any():
            frame.loc[good] = judgments_from_frame(judgments[good]).astype(object).to_numpy()
        frame.loc[~good, "winner"] = None
        for column in ("question_id", "model_a", "model_b", "judge"):
            frame[column] = frame[column].astype(str)
    out = pd.DataFrame({
        "question_id": frame["question_id"].astype(object),
        "model_a": frame["model_a"].astype(object),
        "model_b": frame["model_b"].astype(object),
        "judge": frame["judge"].astype(object),
        "criterion": frame["criterion"].astype(object).where(frame["criterion"].notna(), ""),
        "turn": pd.to_numeric(frame["turn"]).fillna(0).astype(int),
        "round": pd.to_numeric(frame["round"]).fillna(0).astype(int),
        "winner": _nullable(frame["winner"]),
        "p_a": _nullable(pd.to_numeric(frame["p_a"])),
        "rationale": _nullable(frame["rationale"]),
        "valid": valid,
        "raw": _nullable(judgments["raw"].reset_index(drop=True)) if "raw" in judgments.columns else None,
    })
    if "vote" in judgments.columns:
        out["vote"] = judgments["vote"].astype(int).to_numpy()
    else:
        key = ["question_id", "model_a", "model_b", "judge", "criterion", "turn", "round"]
        out["vote"] = out.groupby(key, sort=False).cumcount().to_numpy()
    return out


def _nullable(series: pd.Series) -> pd.Series:
    """Object series with None (SQL NULL) for every missing value."""
    values = series.astype(object)
    return values.where(series.notna(), None)


def _missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))
