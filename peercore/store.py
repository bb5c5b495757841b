"""SQLite, the embedded default store: studies, answers, judgments, runs, cache, debates.

One database file holds many studies. Properties:

- **Schema migrations** are recorded in ``schema_migrations``; opening an older file
  upgrades it in place, inside a transaction (a failed upgrade leaves the file as it was).
- **WAL** journal, foreign keys on, a busy timeout; one connection per thread (SQLite
  connections are never shared across threads).
- **Atomic writes**: every public write is one transaction (all of it lands or none of
  it does); callers can group several in :meth:`Store.transaction`. A process killed in
  the middle of a write leaves the file as it was before that write (WAL rollback).
- **Natural keys**: writing the same judgment, answer, question or adjudication twice
  never makes two rows; writes report how many rows were added and how many skipped.
  A *different* verdict under a stored verdict's key is refused (:class:`VerdictConflict`),
  never dropped.
- **Judge identities**: a run's judge is its whole configuration (:mod:`peercore.judges`,
  :meth:`Store.resolve_judge`); another configuration of the same model gets its own
  (variant) name, and imports never write under a run judge's name.
- **Provenance**: every import is recorded in ``imports`` (file, format, checksum, counts,
  time) and merged into the study's ``source``.
- **PostgreSQL** too: ``Store("postgresql://...")`` runs the same code through a thin
  dialect layer (:mod:`peercore.db`: psycopg 3, COPY for bulk writes) on the schema of
  :mod:`peercore.pg_schema` (same versions; later migrations carry both forms).
  ``$PEERBOARD_DB`` (the CLI's and the dashboard's database) takes files only, for now.
- **No secrets**: nothing here stores API keys; run configurations are scrubbed of
  keys named like secrets before they are written (:func:`scrub_secrets`).

The database location is ``$PEERBOARD_DB`` if set, else
``$XDG_DATA_HOME/peerboard/peerboard.sqlite`` (``~/.local/share/...``); the CLI's
``--db PATH`` overrides both.

Schema (version 8)
------------------
=================  ==========================================================  =============================
table              one row per                                                 natural key
=================  ==========================================================  =============================
studies            study; its adjudication rubric and overlap (migration 5)    name
questions          question (text, category, reference, metadata JSON)         (study, question_id)
answers            model's answer to a question turn                           (study, question_id, model, turn)
judges             judge: kind, model alias, origin (import / run), base name,   (study, name); a run judge's
                   a run judge's configuration and its fingerprint             fingerprint is unique too
labels             model / judge / criterion name, integer-coded per study      (study, text); id is the code
verdicts           verdict in the canonical shape (names as label codes)       (study, question_id, model_a,
                                                                               model_b, judge, criterion, turn,
                                                                               round, vote)
judgments (view)   the verdicts with names and winners decoded (for SQL users; inserts through it work too)
imports            import of a file or folder (source, format, sha256, counts)  id
runs, run_items    review / debate run and its work items                      id; (run, item_key)
llm_calls          paid LLM call (the cache)                                   cache_key
debates            debate or discussion (status, panel = consensus judge)      (study, debate_key)
debate_turns       speaker's verdict in a round (0 = initial)                  (debate, round, speaker)
adjudications      human decision on an unresolved debate (both-bad and blind  (debate, annotator)
                   flags, migration 5)
adjudication_skips debate an annotator put aside                               (debate, annotator)
adjudication_leases debate an annotator holds until it expires (migration 6)  (debate, annotator)
human_scores       human rating of one candidate on one attribute (NLG          (study, question_id, model,
                   assessment: context = question_id, candidate = model)        attribute)
judge_scores       a judge's absolute score of one candidate (prompt scoring)   (study, question_id, model, judge,
                   with its expected value, distribution and raw reply          attribute, vote)
batches            provider batch of a run: file, batch id, status (mig. 7)    token (the client's, deterministic)
batch_requests     request line of a batch: custom_id -> call and run item     (token, custom_id)
=================  ==========================================================  =============================

Scores are not verdicts (migration 4): a human rating or an absolute score belongs to
one candidate, not to a pair, so it has tables of its own (:meth:`Store.add_human_scores`,
:meth:`Store.add_judge_scores`); the NLG assessment (:mod:`peercore.nlg`) compares
rankings built from verdicts or scores with them, per context.

Optional key fields use ``''`` / ``0`` for "not given" so that natural keys stay unique
(SQLite treats NULLs as distinct in UNIQUE constraints). ``vote`` numbers repeated
verdicts by one judge on one key (e.g. three anonymous crowd votes).

Why verdicts are integer-coded (migration 2)
--------------------------------------------
Measured on 1,000,000 Arena battles (``benchmarks/io.py``): with names stored as text the
store took 25 s to insert and 7 s to read back. Names repeat (100 models, a few thousand
judges), so ``model_a``, ``model_b``, ``judge`` and ``criterion`` are stored as per-study
integer codes (``labels``) and ``winner`` as 0 / 1 / 2 (model_a / model_b / tie): rows
and the unique index are smaller, SQLite compares integers, and Python builds no string
object per cell when reading (CPython caches small ints). Names are decoded with one
Arrow ``take`` per column. The cost is one join for readers who use SQL directly, which
the ``judgments`` view does for them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import os
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from peercore import db as _db
from peercore.errors import JudgeConflict, JudgmentError, PeercoreError, VerdictConflict
from peercore.judges import base_name, canonical_identity, describe_differences, variant_name
from peercore.judges import differences as judge_differences
from peercore.judges import fingerprint as judge_fingerprint
from peercore.judgments import COLUMNS, WINNERS, judgments_from_frame

__all__ = ["Store", "WriteCounts", "StoreError", "ScoreConflict", "default_db_path", "scrub_secrets", "SCHEMA_VERSION"]

ENV_DB = "PEERBOARD_DB"
VERDICTS = ("model_a", "model_b", "tie")
# An annotator's choices on a debate: a verdict, or "both bad" (stored as a tie, flagged).
DECISIONS = (*VERDICTS, "both_bad")
MAX_OVERLAP = 1000
JUDGE_KINDS = ("llm", "human", "debate", "adjudicator", "vote", "other")
RUN_STATUSES = ("pending", "running", "finished", "failed", "cancelled", "interrupted")
DEBATE_STATUSES = ("agreed", "unresolved", "adjudicated")
# A key is secret when its last word (split on _ - . and camelCase) is one of these:
# "api_key", "apiKey", "token", "access_token", "password" are; "max_tokens",
# "prompt_tokens", "keyboard" are not.
_SECRET_WORDS = frozenset({"key", "apikey", "token", "secret", "password", "passwd", "authorization", "auth", "bearer", "credential", "credentials"})
# Test hook: seconds to sleep inside a write transaction just before COMMIT, so that a
# test can kill the process while a large import is written but not committed.
_ENV_PAUSE_BEFORE_COMMIT = "PEERBOARD_TEST_PAUSE_BEFORE_COMMIT"
# How long a connection waits for another writer's lock before SQLite says "locked".
_BUSY_TIMEOUT_MS = 30_000


class StoreError(PeercoreError):
    """The store was asked for something that is not there, or the file is not ours."""


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
    """How many rows a write added, and how many it skipped as already present."""

    added: int
    skipped: int

    def __add__(self, other: "WriteCounts") -> "WriteCounts":
        return WriteCounts(self.added + other.added, self.skipped + other.skipped)


def default_db_path() -> Path:
    """``$PEERBOARD_DB``, else the per-user data folder (XDG) ``peerboard/peerboard.sqlite``.

    Raises
    ------
    StoreError
        If ``$PEERBOARD_DB`` is a database URL (``postgresql://...``): only SQLite files
        are supported, and a URL must not become a folder named ``postgresql:``.
    """
    if os.environ.get(ENV_DB):
        return database_file_path(os.environ[ENV_DB], what=f"${ENV_DB}")
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "peerboard" / "peerboard.sqlite"


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def database_file_path(value: str | os.PathLike[str], *, what: str) -> Path:
    """A database file path given by a user (``--db``, ``$PEERBOARD_DB``); a URL is refused
    without repeating it (its credentials), until the whole product runs on PostgreSQL."""
    text = os.fspath(value)
    if _URL.match(text):
        scheme = text.split("://", 1)[0]
        raise StoreError(f"{what} is a database URL ({scheme}://...); this version of PeerBoard stores studies in a "
                         f"SQLite file only (the PostgreSQL store is being built), so set {what} to a file path "
                         "(e.g. ~/peerboard.sqlite)")
    return Path(text).expanduser()


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


@functools.lru_cache(maxsize=4096)  # the same few config keys, once per paid call: 0.3 ms -> 0.02 ms a call
def _is_secret_name(key: str) -> bool:
    words = re.split(r"[_\-.\s]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).lower())
    words = [w for w in words if w]
    if not words:
        return False
    return words[-1] in _SECRET_WORDS or (len(words) >= 2 and words[-2] + words[-1] in _SECRET_WORDS)


# ------------------------------------------------------------------------- migrations
# Each migration is (version, name, SQL). Never edit a released one: add a new one.
# PostgreSQL databases start from peercore.pg_schema.BASELINE (version 8): every migration
# after version 8 also needs its PostgreSQL form in peercore.pg_schema.MIGRATIONS under the
# same version (tests/unit/store/test_postgres_store.py fails until it has one).

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
    (2, "integer-coded verdicts, labels, import provenance, question metadata", """
CREATE TABLE labels (
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    id       INTEGER NOT NULL CHECK (id > 0),
    text     TEXT NOT NULL,
    PRIMARY KEY (study_id, id),
    UNIQUE (study_id, text)
);
CREATE TABLE imports (
    id         INTEGER PRIMARY KEY,
    study_id   INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    source     TEXT NOT NULL,                      -- the file or folder, as given
    format     TEXT NOT NULL,
    sha256     TEXT,                               -- of the file (of the sorted files, for a folder)
    counts     TEXT NOT NULL DEFAULT '{}',         -- JSON: added / skipped per table, notes
    created_at TEXT NOT NULL
);
-- winner: 0 = model_a, 1 = model_b, 2 = tie, NULL = no verdict (valid = 0).
-- model_a, model_b, judge: labels.id; criterion: labels.id or 0 (not given).
CREATE TABLE verdicts (
    id          INTEGER PRIMARY KEY,               -- insertion order
    study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    question_id TEXT NOT NULL,
    model_a     INTEGER NOT NULL,
    model_b     INTEGER NOT NULL CHECK (model_b <> model_a),
    judge       INTEGER NOT NULL,
    criterion   INTEGER NOT NULL DEFAULT 0,
    turn        INTEGER NOT NULL DEFAULT 0,
    round       INTEGER NOT NULL DEFAULT 0,
    vote        INTEGER NOT NULL DEFAULT 0,
    -- OR chains, not "IN (0, 1, 2)": SQLite rebuilds an IN list's lookup table every
    -- time a statement is re-run, which tripled the cost of a bulk insert.
    winner      INTEGER CHECK (winner = 0 OR winner = 1 OR winner = 2),
    p_a         REAL CHECK (p_a IS NULL OR (p_a >= 0 AND p_a <= 1)),
    rationale   TEXT,
    valid       INTEGER NOT NULL DEFAULT 1 CHECK (valid = 0 OR valid = 1),
    raw         TEXT,
    run_id      TEXT,
    import_id   INTEGER REFERENCES imports(id) ON DELETE SET NULL,
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    CHECK (valid = 0 OR winner IS NOT NULL),
    -- model_a / model_b / judge / criterion are labels(study_id, id), but not declared
    -- as foreign keys: the four parent lookups per row were 40% of a bulk insert.
    -- Codes are only ever assigned by the store in the transaction that uses them, and
    -- labels are deleted only with their study (cascading to these rows too);
    -- Store.integrity_problems() checks it.
    UNIQUE (study_id, question_id, model_a, model_b, judge, criterion, turn, round, vote)
);
INSERT INTO labels (study_id, id, text)
SELECT study_id, ROW_NUMBER() OVER (PARTITION BY study_id ORDER BY text), text FROM (
    SELECT study_id, model_a AS text FROM judgments UNION SELECT study_id, model_b FROM judgments
    UNION SELECT study_id, judge FROM judgments UNION SELECT study_id, criterion FROM judgments WHERE criterion <> ''
);
INSERT INTO verdicts (id, study_id, question_id, model_a, model_b, judge, criterion, turn, round, vote, winner,
                      p_a, rationale, valid, raw, run_id, created_at)
SELECT j.id, j.study_id, j.question_id, la.id, lb.id, lj.id, COALESCE(lc.id, 0), j.turn, j.round, j.vote,
       CASE j.winner WHEN 'model_a' THEN 0 WHEN 'model_b' THEN 1 WHEN 'tie' THEN 2 END,
       j.p_a, j.rationale, j.valid, j.raw, j.run_id, j.created_at
FROM judgments j
JOIN labels la ON la.study_id = j.study_id AND la.text = j.model_a
JOIN labels lb ON lb.study_id = j.study_id AND lb.text = j.model_b
JOIN labels lj ON lj.study_id = j.study_id AND lj.text = j.judge
LEFT JOIN labels lc ON lc.study_id = j.study_id AND lc.text = j.criterion AND j.criterion <> ''
ORDER BY j.id;
-- Which optional columns a study has ever filled (a superset is fine): readers fetch
-- only those, without scanning a million rows to find out.
CREATE TABLE verdict_columns (
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    name     TEXT NOT NULL CHECK (name IN ('p_a', 'criterion', 'turn', 'round', 'rationale', 'vote', 'raw')),
    PRIMARY KEY (study_id, name)
);
INSERT OR IGNORE INTO verdict_columns (study_id, name)
SELECT study_id, 'p_a' FROM verdicts WHERE p_a IS NOT NULL
UNION SELECT study_id, 'criterion' FROM verdicts WHERE criterion <> 0
UNION SELECT study_id, 'turn' FROM verdicts WHERE turn <> 0
UNION SELECT study_id, 'round' FROM verdicts WHERE round <> 0
UNION SELECT study_id, 'rationale' FROM verdicts WHERE rationale IS NOT NULL
UNION SELECT study_id, 'vote' FROM verdicts WHERE vote <> 0
UNION SELECT study_id, 'raw' FROM verdicts WHERE raw IS NOT NULL;
DROP INDEX judgments_by_judge;
DROP TABLE judgments;
-- (study_id, id) grows at its end on every insert (ids only increase), so it costs
-- little to maintain, and it gives each study's id range and count. An index on
-- (study_id, judge), as version 1 had, was dropped: random inserts into it cost 15% of
-- a million-row import, and it made SQLite read a study through the index and then
-- sort the rows back into insertion order. No index on import_id either (another 10%)
-- until something needs to find an import's rows quickly.
CREATE INDEX verdicts_by_study ON verdicts (study_id, id);
CREATE INDEX debates_by_status ON debates (study_id, status);
CREATE VIEW judgments AS
SELECT v.id, v.study_id, v.question_id, la.text AS model_a, lb.text AS model_b, lj.text AS judge,
       COALESCE(lc.text, '') AS criterion, v.turn, v.round, v.vote,
       CASE v.winner WHEN 0 THEN 'model_a' WHEN 1 THEN 'model_b' WHEN 2 THEN 'tie' END AS winner,
       v.p_a, v.rationale, v.valid, v.raw, v.run_id, v.import_id, v.created_at
FROM verdicts v
JOIN labels la ON la.study_id = v.study_id AND la.id = v.model_a
JOIN labels lb ON lb.study_id = v.study_id AND lb.id = v.model_b
JOIN labels lj ON lj.study_id = v.study_id AND lj.id = v.judge
LEFT JOIN labels lc ON lc.study_id = v.study_id AND lc.id = v.criterion;
CREATE TRIGGER judgments_insert INSTEAD OF INSERT ON judgments
BEGIN
    INSERT INTO labels (study_id, id, text)
    SELECT NEW.study_id, (SELECT COALESCE(MAX(id), 0) + 1 FROM labels WHERE study_id = NEW.study_id), NEW.model_a
    WHERE NOT EXISTS (SELECT 1 FROM labels WHERE study_id = NEW.study_id AND text = NEW.model_a);
    INSERT INTO labels (study_id, id, text)
    SELECT NEW.study_id, (SELECT COALESCE(MAX(id), 0) + 1 FROM labels WHERE study_id = NEW.study_id), NEW.model_b
    WHERE NOT EXISTS (SELECT 1 FROM labels WHERE study_id = NEW.study_id AND text = NEW.model_b);
    INSERT INTO labels (study_id, id, text)
    SELECT NEW.study_id, (SELECT COALESCE(MAX(id), 0) + 1 FROM labels WHERE study_id = NEW.study_id), NEW.judge
    WHERE NOT EXISTS (SELECT 1 FROM labels WHERE study_id = NEW.study_id AND text = NEW.judge);
    INSERT INTO labels (study_id, id, text)
    SELECT NEW.study_id, (SELECT COALESCE(MAX(id), 0) + 1 FROM labels WHERE study_id = NEW.study_id), NEW.criterion
    WHERE COALESCE(NEW.criterion, '') <> ''
      AND NOT EXISTS (SELECT 1 FROM labels WHERE study_id = NEW.study_id AND text = NEW.criterion);
    INSERT INTO verdicts (study_id, question_id, model_a, model_b, judge, criterion, turn, round, vote, winner,
                          p_a, rationale, valid, raw, run_id, import_id)
    VALUES (NEW.study_id, NEW.question_id,
            (SELECT id FROM labels WHERE study_id = NEW.study_id AND text = NEW.model_a),
            (SELECT id FROM labels WHERE study_id = NEW.study_id AND text = NEW.model_b),
            (SELECT id FROM labels WHERE study_id = NEW.study_id AND text = NEW.judge),
            COALESCE((SELECT id FROM labels WHERE study_id = NEW.study_id AND text = NEW.criterion), 0),
            COALESCE(NEW.turn, 0), COALESCE(NEW.round, 0), COALESCE(NEW.vote, 0),
            CASE NEW.winner WHEN 'model_a' THEN 0 WHEN 'model_b' THEN 1 WHEN 'tie' THEN 2 END,
            NEW.p_a, NEW.rationale, COALESCE(NEW.valid, 1), NEW.raw, NEW.run_id, NEW.import_id);
    INSERT OR IGNORE INTO verdict_columns (study_id, name)
    SELECT NEW.study_id, 'p_a' WHERE NEW.p_a IS NOT NULL
    UNION ALL SELECT NEW.study_id, 'criterion' WHERE COALESCE(NEW.criterion, '') <> ''
    UNION ALL SELECT NEW.study_id, 'turn' WHERE COALESCE(NEW.turn, 0) <> 0
    UNION ALL SELECT NEW.study_id, 'round' WHERE COALESCE(NEW.round, 0) <> 0
    UNION ALL SELECT NEW.study_id, 'rationale' WHERE NEW.rationale IS NOT NULL
    UNION ALL SELECT NEW.study_id, 'vote' WHERE COALESCE(NEW.vote, 0) <> 0
    UNION ALL SELECT NEW.study_id, 'raw' WHERE NEW.raw IS NOT NULL;
END;
ALTER TABLE questions ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE debate_turns ADD COLUMN raw TEXT;
"""),
    (3, "judge identities, debate panels, paid calls per item, decision tokens", """
-- A judge is its whole configuration (peercore.judges): runs register the identity they
-- ran with and its fingerprint; imports register names only (origin 'import').
ALTER TABLE judges ADD COLUMN origin TEXT NOT NULL DEFAULT 'import'
    CHECK (origin IN ('import', 'run', 'derived'));
ALTER TABLE judges ADD COLUMN fingerprint TEXT;
ALTER TABLE judges ADD COLUMN base TEXT;
ALTER TABLE judges ADD COLUMN created_at TEXT;
UPDATE judges SET origin = 'run' WHERE json_extract(settings, '$.backend') IS NOT NULL;
UPDATE judges SET base = name;
CREATE UNIQUE INDEX judges_by_fingerprint ON judges (study_id, fingerprint) WHERE fingerprint IS NOT NULL;
-- The panel of a debate is its consensus judge (debate:<name>); gold is per panel.
ALTER TABLE debates ADD COLUMN panel TEXT NOT NULL DEFAULT '';
UPDATE debates SET panel = 'debate:' || json_extract(metadata, '$.name')
    WHERE kind = 'debate' AND json_extract(metadata, '$.name') IS NOT NULL;
-- Which run item paid for a call (accounting: every paid call ends stored or failed).
ALTER TABLE llm_calls ADD COLUMN item_key TEXT;
CREATE INDEX llm_calls_by_run ON llm_calls (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX verdicts_by_run ON verdicts (run_id) WHERE run_id IS NOT NULL;
-- A decision's token: undo removes a decision only where the same tab made it.
ALTER TABLE adjudications ADD COLUMN token TEXT;
"""),
    (4, "human scores and judges' absolute scores (NLG assessment)", """
-- A human rating of one candidate (model) on one attribute in one context (question_id),
-- on the attribute's own scale (TopicalChat USR: coherence 1-3, understandability 0-1).
CREATE TABLE human_scores (
    study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    question_id TEXT NOT NULL,                     -- the context
    model       TEXT NOT NULL,                     -- the candidate (system)
    attribute   TEXT NOT NULL CHECK (attribute <> ''),
    value       REAL NOT NULL CHECK (value >= -1e12 AND value <= 1e12),
    import_id   INTEGER REFERENCES imports(id) ON DELETE SET NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (study_id, question_id, model, attribute)
);
-- A judge's absolute score of one candidate (prompt scoring, one call per candidate):
-- score = the number read from the reply's text, expected = the expected score over the
-- score tokens' probabilities (NULL without probabilities), distribution = JSON
-- {label: probability}. An unreadable reply is kept with valid = 0 and its raw text.
CREATE TABLE judge_scores (
    id           INTEGER PRIMARY KEY,
    study_id     INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    question_id  TEXT NOT NULL,
    model        TEXT NOT NULL,
    judge        TEXT NOT NULL,
    attribute    TEXT NOT NULL DEFAULT '',
    vote         INTEGER NOT NULL DEFAULT 0 CHECK (vote >= 0 AND vote <= 1000000),
    score        REAL CHECK (score IS NULL OR (score >= -1e12 AND score <= 1e12)),
    expected     REAL CHECK (expected IS NULL OR (expected >= -1e12 AND expected <= 1e12)),
    distribution TEXT,
    valid        INTEGER NOT NULL DEFAULT 1 CHECK (valid = 0 OR valid = 1),
    rationale    TEXT,
    raw          TEXT,
    run_id       TEXT,
    import_id    INTEGER REFERENCES imports(id) ON DELETE SET NULL,
    created_at   TEXT NOT NULL,
    CHECK (valid = 0 OR score IS NOT NULL OR expected IS NOT NULL),
    UNIQUE (study_id, question_id, model, judge, attribute, vote)
);
CREATE INDEX judge_scores_by_run ON judge_scores (run_id) WHERE run_id IS NOT NULL;
"""),
    (5, "adjudication guidelines: study rubric and overlap, both-bad decisions, blind flag, skips per annotator", """
-- "Both bad" (Arena's "tie (bothbad)", a label of its own in Argilla / Label Studio
-- queues) is stored as verdict 'tie' with both_bad = 1: every reader of verdicts (the
-- gold set, agreement) sees a tie, and the annotator's exact choice is kept.
ALTER TABLE adjudications ADD COLUMN both_bad INTEGER NOT NULL DEFAULT 0
    CHECK (both_bad = 0 OR (both_bad = 1 AND verdict = 'tie'));
-- 1: decided before seeing the agents' verdicts and reasons (blind mode), 0: after,
-- NULL: not recorded (decisions made before version 5, imports).
ALTER TABLE adjudications ADD COLUMN blind INTEGER CHECK (blind IS NULL OR blind = 0 OR blind = 1);
-- A skip belongs to its annotator (in any browser, on any day) until they clear it.
CREATE TABLE adjudication_skips (
    debate_id  INTEGER NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    annotator  TEXT NOT NULL CHECK (annotator <> ''),
    created_at TEXT NOT NULL,
    PRIMARY KEY (debate_id, annotator)
);
-- The study's adjudication guidelines (plain text shown beside every item) and how many
-- annotators each debate needs (0 = every annotator decides every debate).
ALTER TABLE studies ADD COLUMN rubric TEXT NOT NULL DEFAULT '';
ALTER TABLE studies ADD COLUMN overlap INTEGER NOT NULL DEFAULT 0 CHECK (overlap >= 0 AND overlap <= 1000);
"""),
    (6, "adjudication leases: item assignment to annotators (issue 13)", """
-- An annotator holds a debate until expires_at (peercore.assignment): with an overlap N,
-- a debate is offered while its decisions plus the live leases of others are fewer than N.
-- Times are fixed-width ISO-8601 UTC text (as every created_at here), so they compare as
-- text; PostgreSQL would use TIMESTAMPTZ and the server's now().
CREATE TABLE adjudication_leases (
    debate_id  INTEGER NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    annotator  TEXT NOT NULL CHECK (annotator <> ''),
    expires_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (debate_id, annotator)
);
CREATE INDEX adjudication_leases_by_annotator ON adjudication_leases (annotator, debate_id);
"""),
    (7, "provider batches: batch ids, uploaded files and each request's custom_id (issue 13)", """
-- A judging run sent through a provider's batch API (peercore.jobs.batch): one row per
-- batch, written BEFORE each step that could be lost (the upload, the create, the poll),
-- so a killed run resumes the same batch instead of paying for it twice. token is the
-- client's deterministic name for the batch (the uploaded file's name, OpenAI metadata).
CREATE TABLE batches (
    token           TEXT PRIMARY KEY,
    run_id          TEXT NOT NULL,
    provider        TEXT NOT NULL CHECK (provider IN ('openai', 'anthropic')),
    judge           TEXT NOT NULL,                 -- backend:model
    base_url        TEXT,
    status          TEXT NOT NULL DEFAULT 'planned'
        CHECK (status IN ('planned', 'uploaded', 'creating', 'submitted', 'ended', 'fetched')),
    input_file_id   TEXT,
    batch_id        TEXT UNIQUE,
    provider_status TEXT,
    output_file_id  TEXT,
    error_file_id   TEXT,
    n_requests      INTEGER NOT NULL CHECK (n_requests >= 1),
    n_succeeded     INTEGER NOT NULL DEFAULT 0,
    n_failed        INTEGER NOT NULL DEFAULT 0,
    intent_at       TEXT,                          -- just before create: resume looks for batches made after it
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX batches_by_run ON batches (run_id);
-- Each request line of a batch: custom_id -> the call (cache key) and the run item that pays for it.
CREATE TABLE batch_requests (
    token     TEXT NOT NULL REFERENCES batches(token) ON DELETE CASCADE,
    custom_id TEXT NOT NULL,
    cache_key TEXT NOT NULL,
    item_key  TEXT NOT NULL,
    request   TEXT NOT NULL,                       -- the ChatRequest as JSON (never a credential)
    status    TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'succeeded', 'errored', 'expired', 'canceled')),
    error     TEXT,
    PRIMARY KEY (token, custom_id)
);
CREATE INDEX batch_requests_by_key ON batch_requests (cache_key);
"""),
    (8, "verdict tally index: counts per judge, pair, validity and winner by a covering index scan (issue 12)", """
-- Every page of the dashboard starts from counts of a study's verdicts per judge, ordered
-- pair, validity and winner (peercore.aggregates.verdict_tally): the pair tally that
-- Bradley-Terry, the judges' health and the Studies page need. With this index SQLite
-- answers that GROUP BY as one ordered scan of the index (about 0.2 s for a million
-- verdicts) instead of sorting the rows into a temporary B-tree (about 1.5 s); p_a is in
-- it so that counting the verdicts with a probability reads nothing else.
CREATE INDEX verdicts_tally ON verdicts (study_id, judge, model_a, model_b, valid, winner, p_a);
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
        ``":memory:"`` is refused: every thread needs to see the same database. A
        ``postgresql://`` URL opens PostgreSQL through :mod:`peercore.db` (its schema from
        :mod:`peercore.pg_schema`); ``$PEERBOARD_DB`` does not take URLs yet.
    create : when False, a missing file is an error instead of a new empty database
        (for commands that only read).

    Raises
    ------
    StoreError
        If the file is not a SQLite database, or was written by a newer peercore.

    Examples
    --------
    >>> store = Store(tmp_path / "pb.sqlite")            # doctest: +SKIP
    >>> store.create_study("demo")                        # doctest: +SKIP
    >>> store.add_judgments("demo", judgments)            # doctest: +SKIP
    WriteCounts(added=120, skipped=0)
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, create: bool = True) -> None:
        self.url = path if _db.is_postgres_url(path) else None
        if self.url is not None:  # PostgreSQL (peercore.db): explicit URLs only, never from $PEERBOARD_DB yet
            self.path = _db.redact_url(self.url)
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
                raise StoreError(f"{self.path}: {str(exc).strip()}") from exc
            return
        path = default_db_path() if path is None else database_file_path(path, what="the database")
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
            connection = self._local.connection = _db.connect_postgres(self.url)
            self._local.depth = 0
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA foreign_keys = ON")
            connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
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

        Everything inside lands together or, on any exception (or a killed process),
        not at all.
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
            pause = os.environ.get(_ENV_PAUSE_BEFORE_COMMIT)
            if pause:  # test hook (see _ENV_PAUSE_BEFORE_COMMIT)
                print(f"peercore: test hook: pausing {pause} s before COMMIT", file=sys.stderr, flush=True)
                time.sleep(float(pause))
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        else:
            connection.execute("COMMIT")
        finally:
            self._local.depth = 0

    def checkpoint(self) -> None:
        """Copy the write-ahead log into the main file and truncate it.

        After this the main file alone holds the whole database (e.g. to copy or hash it).
        """
        self.connect().execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _migrate(self) -> None:
        if self.url is not None:  # PostgreSQL: the baseline, then later versions' PostgreSQL forms, under the lock
            from peercore import pg_schema

            pg_schema.upgrade(self, _MIGRATIONS, now=_now())
            return
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

    # ---------------------------------------------------------------------- studies

    def create_study(self, name: str, *, description: str = "", source: Mapping | None = None,
                     exist_ok: bool = False) -> int:
        """Create a study and return its id.

        Raises
        ------
        StoreError
            If the study exists and ``exist_ok`` is false, or the name is empty.
        """
        if not isinstance(name, str) or not name.strip():
            raise StoreError(f"study name is empty ({name!r})")
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

    def has_study(self, name: str) -> bool:
        """Whether study ``name`` exists."""
        return self.connect().execute("SELECT 1 FROM studies WHERE name = ?", (name,)).fetchone() is not None

    def study_id(self, name: str) -> int:
        """The id of study ``name``; StoreError naming the studies there are if missing."""
        row = self.connect().execute("SELECT id FROM studies WHERE name = ?", (name,)).fetchone()
        if row is None:
            names = [r[0] for r in self.connect().execute("SELECT name FROM studies ORDER BY name")]
            raise StoreError(f"no study named {name!r} in {self.path}; studies are {names}")
        return int(row[0])

    def studies(self) -> pd.DataFrame:
        """One row per study: name, description, created_at, revision, source (dict)."""
        frame = _db.read_sql_query(
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
            "contestants": q("SELECT COUNT(*) FROM (SELECT text FROM labels WHERE study_id = ?1 AND id IN "
                             "(SELECT DISTINCT model_a FROM verdicts WHERE study_id = ?1 "
                             " UNION SELECT DISTINCT model_b FROM verdicts WHERE study_id = ?1) "
                             "UNION SELECT model FROM answers WHERE study_id = ?1)"),
            "judges": q("SELECT COUNT(DISTINCT judge) FROM verdicts WHERE study_id = ?"),
            "judgments": q("SELECT COUNT(*) FROM verdicts WHERE study_id = ? AND valid = 1"),
            "invalid_judgments": q("SELECT COUNT(*) FROM verdicts WHERE study_id = ? AND valid = 0"),
            "human_votes": q("SELECT COUNT(*) FROM verdicts WHERE study_id = ?1 AND valid = 1 AND judge IN "
                             "(SELECT id FROM labels WHERE study_id = ?1 AND text LIKE 'human:%')"),
            "debates": q("SELECT COUNT(*) FROM debates WHERE study_id = ?"),
            "unresolved_debates": q("SELECT COUNT(*) FROM debates WHERE study_id = ? AND status = 'unresolved'"),
            "open_adjudications": q("SELECT COUNT(*) FROM debates d WHERE study_id = ? AND status = 'unresolved' "
                                    "AND NOT EXISTS (SELECT 1 FROM adjudications a WHERE a.debate_id = d.id)"),
            "runs": q("SELECT COUNT(*) FROM runs WHERE study_id = ?"),
            "imports": q("SELECT COUNT(*) FROM imports WHERE study_id = ?"),
            "human_scores": q("SELECT COUNT(*) FROM human_scores WHERE study_id = ?"),
            "judge_scores": q("SELECT COUNT(*) FROM judge_scores WHERE study_id = ? AND valid = 1"),
        }

    def _bump(self, tx: sqlite3.Connection, study_id: int) -> None:
        tx.execute("UPDATE studies SET revision = revision + 1 WHERE id = ?", (study_id,))

    # ----------------------------------------------------------------------- imports

    def record_import(self, study: str, *, source: str, format: str, sha256: str | None = None,
                      counts: Mapping | None = None) -> int:
        """Record one import (provenance) and return its id (verdicts point to it).

        With ``counts`` the record is complete at once; otherwise give them later with
        :meth:`set_import_counts` (in the same transaction), once the rows are written.
        """
        sid = self.study_id(study)
        with self.transaction() as tx:
            cursor = tx.execute(
                "INSERT INTO imports (study_id, source, format, sha256, counts, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (sid, str(source), format, sha256, "{}", _now()),
            )
            import_id = int(cursor.lastrowid)
            if counts is not None:
                self.set_import_counts(import_id, counts)
            return import_id

    def set_import_counts(self, import_id: int, counts: Mapping) -> None:
        """Store an import's counts and append it to the study's ``source["imports"]``.

        The study's provenance then lists every import: file, format, sha256, counts and
        time, oldest first.
        """
        with self.transaction() as tx:
            row = tx.execute("SELECT i.study_id, s.name, i.source, i.format, i.sha256, i.created_at FROM imports i "
                             "JOIN studies s ON s.id = i.study_id WHERE i.id = ?", (int(import_id),)).fetchone()
            if row is None:
                raise StoreError(f"no import with id {import_id}")
            counts = json.loads(json.dumps(dict(counts), default=_json_default))
            tx.execute("UPDATE imports SET counts = ? WHERE id = ?", (json.dumps(counts, sort_keys=True), int(import_id)))
            record = {"id": int(import_id), "source": row[2], "format": row[3], "sha256": row[4], "counts": counts,
                      "at": row[5]}
            current = self.study_source(row[1])
            self.update_study_source(row[1], {"imports": [*current.get("imports", []), record]})

    def imports(self, study: str) -> pd.DataFrame:
        """Every import into the study: id, source, format, sha256, counts (dict), created_at."""
        frame = _db.read_sql_query(
            "SELECT id, source, format, sha256, counts, created_at FROM imports WHERE study_id = ? ORDER BY id",
            self.connect(), params=(self.study_id(study),),
        )
        frame["counts"] = frame["counts"].map(json.loads)
        return frame

    # ---------------------------------------------------------- questions & answers

    def add_questions(self, study: str, questions: pd.DataFrame) -> WriteCounts:
        """Insert questions (``question_id, text`` [, ``category``, ``reference``, ``metadata``]).

        Existing ids are skipped (the stored text wins; :meth:`question_conflicts` finds
        ids whose text differs). ``metadata`` is a dict per row (e.g. MT-Bench's later
        turns), stored as JSON.
        """
        _require(questions, ("question_id", "text"), "questions")
        sid = self.study_id(study)
        n = len(questions)
        category = questions["category"] if "category" in questions.columns else [""] * n
        reference = questions["reference"] if "reference" in questions.columns else [None] * n
        metadata = questions["metadata"] if "metadata" in questions.columns else [None] * n
        rows = [
            (sid, str(q), str(t), _text_or(c, ""), _text_or(r, None), json.dumps(m or {}, ensure_ascii=False))
            for q, t, c, r, m in zip(questions["question_id"], questions["text"], category, reference, metadata)
        ]
        return self._insert_many(
            sid, "INSERT OR IGNORE INTO questions (study_id, question_id, text, category, reference, metadata) "
                 "VALUES (?, ?, ?, ?, ?, ?)", rows
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

    def questions(self, study: str, *, with_metadata: bool = False) -> pd.DataFrame:
        """``question_id, text, category, reference`` (+ ``metadata`` dicts when asked), in insertion order."""
        frame = _db.read_sql_query(
            "SELECT question_id, text, category, reference, metadata FROM questions WHERE study_id = ? ORDER BY rowid",
            self.connect(), params=(self.study_id(study),),
        ).astype({"question_id": "str", "text": "str", "category": "str"})
        if with_metadata:
            frame["metadata"] = frame["metadata"].map(json.loads)
            return frame
        return frame.drop(columns="metadata")

    def answers(self, study: str) -> pd.DataFrame:
        """``question_id, model, turn, answer``."""
        return _db.read_sql_query(
            "SELECT question_id, model, turn, text AS answer FROM answers WHERE study_id = ? ORDER BY rowid",
            self.connect(), params=(self.study_id(study),),
        ).astype({"question_id": "str", "model": "str", "answer": "str"})

    def question_conflicts(self, study: str, questions: pd.DataFrame) -> pd.DataFrame:
        """Rows of ``questions`` whose id is stored with a different text (columns + ``stored_text``)."""
        if not self.has_study(study) or len(questions) == 0:
            return questions.iloc[:0].assign(stored_text=pd.Series(dtype=object))
        stored = dict(self.connect().execute(
            "SELECT question_id, text FROM questions WHERE study_id = ?", (self.study_id(study),)))
        texts = [stored.get(str(q)) for q in questions["question_id"]]
        mask = np.array([t is not None and t != str(x) for t, x in zip(texts, questions["text"])], dtype=bool)
        return questions[mask].assign(stored_text=[t for t, m in zip(texts, mask) if m])

    def answer_conflicts(self, study: str, answers: pd.DataFrame) -> pd.DataFrame:
        """Rows of ``answers`` whose (question, model, turn) is stored with a different text."""
        if not self.has_study(study) or len(answers) == 0:
            return answers.iloc[:0].assign(stored_answer=pd.Series(dtype=object))
        stored = {(q, m, t): a for q, m, t, a in self.connect().execute(
            "SELECT question_id, model, turn, text FROM answers WHERE study_id = ?", (self.study_id(study),))}
        turns = answers["turn"] if "turn" in answers.columns else pd.Series(1, index=answers.index)
        texts = [stored.get((str(q), str(m), int(t) if pd.notna(t) else 1))
                 for q, m, t in zip(answers["question_id"], answers["model"], turns)]
        mask = np.array([t is not None and t != str(x) for t, x in zip(texts, answers["answer"])], dtype=bool)
        return answers[mask].assign(stored_answer=[t for t, m in zip(texts, mask) if m])

    # ------------------------------------------------------------------------ judges

    def add_judges(self, study: str, judges: Iterable[Mapping]) -> WriteCounts:
        """Register judges by name (``name`` [, ``kind``, ``model_alias``, ``settings``]), as imports do.

        A name not yet registered is added with origin ``import``; for a registered name,
        a given ``kind`` or ``model_alias`` is updated and the settings are left as they
        are (a run judge's recorded configuration is never rewritten). Runs register
        their judges with :meth:`resolve_judge`.
        """
        sid = self.study_id(study)
        rows = []
        for judge in judges:
            kind = judge.get("kind", "other")
            if kind not in JUDGE_KINDS:
                raise ValueError(f"judge kind must be one of {JUDGE_KINDS}, got {kind!r}")
            rows.append((sid, judge["name"], kind, judge.get("model_alias"),
                         json.dumps(scrub_secrets(dict(judge.get("settings") or {}))), base_name(judge["name"]), _now()))
        with self.transaction() as tx:
            existing = self.registered_judges(study)
            tx.executemany(
                "INSERT INTO judges (study_id, name, kind, model_alias, settings, origin, base, created_at) "
                "VALUES (?, ?, ?, ?, ?, 'import', ?, ?) "
                "ON CONFLICT (study_id, name) DO UPDATE SET kind = excluded.kind, "
                "model_alias = COALESCE(excluded.model_alias, judges.model_alias)", rows)
            self._bump(tx, sid)
        names = {r[1] for r in rows}
        return WriteCounts(len(names - existing), len(names & existing))

    def set_judge(self, study: str, name: str, *, kind: str, model_alias: str | None) -> None:
        """Set a judge's kind and contestant alias (None: not a contestant); nothing else changes."""
        if kind not in JUDGE_KINDS:
            raise ValueError(f"judge kind must be one of {JUDGE_KINDS}, got {kind!r}")
        sid = self.study_id(study)
        with self.transaction() as tx:
            tx.execute(
                "INSERT INTO judges (study_id, name, kind, model_alias, origin, base, created_at) "
                "VALUES (?, ?, ?, ?, 'import', ?, ?) ON CONFLICT (study_id, name) DO UPDATE SET kind = excluded.kind, "
                "model_alias = excluded.model_alias", (sid, name, kind, model_alias or None, base_name(name), _now()))
            self._bump(tx, sid)

    def resolve_judge(self, study: str, requested: str, identity: Mapping, *, explicit: bool = False,
                      kind: str = "llm", model_alias: str | None = None, register: bool = False) -> str:
        """The judge name a run with configuration ``identity`` writes its verdicts under.

        The rules are :mod:`peercore.judges`': a stored judge with the same fingerprint
        keeps its name; a free name is taken; an explicit name held by another
        configuration (or by imported verdicts) raises :class:`JudgeConflict` naming what
        differs; an automatic name held by another configuration becomes a variant
        (``openai:gpt-4o~logprobs``).

        Parameters
        ----------
        requested : the name asked for (``backend:model`` or the user's ``NAME=``).
        identity : the whole configuration (no credentials; see :mod:`peercore.judges`).
        explicit : True when the user chose the name.
        register : write the judge (origin ``run``, its identity as settings) in the
            same transaction; False only looks (estimates, dry runs).

        Raises
        ------
        JudgeConflict
            If ``explicit`` and the name belongs to another configuration.
        """
        sid = self.study_id(study)
        print_ = judge_fingerprint(identity)
        # Looking needs no write lock (estimates run while another process writes).
        with (self.transaction() if register else contextlib.nullcontext(self.connect())) as tx:
            row = tx.execute("SELECT name FROM judges WHERE study_id = ? AND fingerprint = ?", (sid, print_)).fetchone()
            if row is not None:
                return str(row[0])
            taken = self._judge_names(tx, sid)
            holder = tx.execute("SELECT origin, settings, fingerprint FROM judges WHERE study_id = ? AND name = ?",
                                (sid, requested)).fetchone()
            if requested not in taken:
                name = requested
            else:
                stored = json.loads(holder[1]) if holder is not None and holder[2] is not None else None
                if explicit:
                    diff = judge_differences(stored, identity)
                    what = (f"it differs in {describe_differences(diff)}" if stored is not None
                            else "that name holds verdicts imported from a file")
                    raise JudgeConflict(
                        f"judge {requested!r} is already in study {study!r} with another configuration: {what}. "
                        f"Nothing was run. Give this configuration another name (NAME=spec), or leave the name out "
                        f"to get a variant name", name=requested, differences=diff)
                name = variant_name(requested, identity, base_identity=stored, taken=taken)
            if register:
                tx.execute(
                    "INSERT INTO judges (study_id, name, kind, model_alias, settings, origin, fingerprint, base, created_at) "
                    "VALUES (?, ?, ?, ?, ?, 'run', ?, ?, ?)",
                    (sid, name, kind, model_alias, json.dumps(scrub_secrets(canonical_identity(identity))), print_,
                     base_name(requested), _now()))
                self._bump(tx, sid)
            return name

    def _judge_names(self, tx: sqlite3.Connection, study_id: int) -> set[str]:
        """Every judge name of a study: registered or used in a verdict."""
        names = {r[0] for r in tx.execute("SELECT name FROM judges WHERE study_id = ?", (study_id,))}
        names |= {r[0] for r in tx.execute(
            "SELECT text FROM labels WHERE study_id = ?1 AND id IN (SELECT DISTINCT judge FROM verdicts "
            "WHERE study_id = ?1)", (study_id,))}
        return names

    def registered_judges(self, study: str) -> set[str]:
        """Names of the judges registered in the study (with :meth:`add_judges`)."""
        rows = self.connect().execute("SELECT name FROM judges WHERE study_id = ?", (self.study_id(study),))
        return {r[0] for r in rows}

    def run_judges(self, study: str) -> set[str]:
        """Names of the judges PeerBoard's runs registered (origin ``run``)."""
        rows = self.connect().execute("SELECT name FROM judges WHERE study_id = ? AND origin = 'run'",
                                      (self.study_id(study),))
        return {r[0] for r in rows}

    def judges(self, study: str) -> pd.DataFrame:
        """Every judge that has verdicts or is registered.

        Columns: ``name, kind, model_alias, n_judgments`` (valid verdicts), ``n_invalid``,
        ``origin`` (``import``, ``run`` or ``derived``), ``base`` (the name without a
        variant suffix), ``settings`` (dict: a run judge's configuration).
        """
        sid = self.study_id(study)
        frame = _db.read_sql_query(
            "WITH counted AS (SELECT l.text AS name, c.n, c.bad FROM (SELECT judge, SUM(valid) AS n, "
            "                 SUM(1 - valid) AS bad FROM verdicts WHERE study_id = ?1 GROUP BY judge) c "
            "                 JOIN labels l ON l.study_id = ?1 AND l.id = c.judge), "
            "     everyone AS (SELECT name, n, bad FROM counted UNION ALL SELECT name, 0, 0 FROM judges "
            "                  WHERE study_id = ?1 AND name NOT IN (SELECT name FROM counted)) "
            "SELECT e.name, COALESCE(r.kind, CASE WHEN e.name LIKE 'human:%' THEN 'human' "
            "WHEN e.name LIKE 'debate:%' THEN 'debate' WHEN e.name LIKE 'adjudicator:%' THEN 'adjudicator' "
            "WHEN e.name LIKE 'vote:%' THEN 'vote' ELSE 'llm' END) AS kind, r.model_alias, "
            "e.n AS n_judgments, e.bad AS n_invalid, COALESCE(r.origin, 'import') AS origin, "
            "COALESCE(r.settings, '{}') AS settings "
            "FROM everyone e LEFT JOIN judges r ON r.study_id = ?1 AND r.name = e.name ORDER BY e.name",
            self.connect(), params=(sid,),
        )
        frame["n_judgments"] = frame["n_judgments"].fillna(0).astype(int)
        frame["n_invalid"] = frame["n_invalid"].fillna(0).astype(int)
        frame["base"] = frame["name"].map(base_name)
        frame["settings"] = frame["settings"].map(json.loads)
        return frame

    def judge_aliases(self, study: str) -> dict[str, str]:
        """judge -> contestant, for judges registered with a ``model_alias``."""
        rows = self.connect().execute(
            "SELECT name, model_alias FROM judges WHERE study_id = ? AND model_alias IS NOT NULL", (self.study_id(study),)
        )
        return {r[0]: r[1] for r in rows}

    # --------------------------------------------------------------------- judgments

    def add_judgments(self, study: str, judgments: pd.DataFrame, *, run_id: str | None = None,
                      import_id: int | None = None) -> WriteCounts:
        """Insert verdicts in the canonical shape; a stored identical verdict is skipped, another refused.

        The natural key is (question_id, model_a, model_b, judge, criterion, turn, round,
        vote). ``vote`` (optional column) numbers repeated verdicts by one judge on one
        key, e.g. anonymous crowd votes; when absent, repeats within ``judgments`` are
        numbered 0, 1, 2 ... in row order, so importing the same file twice adds nothing.
        Optional columns ``valid`` (default 1) and ``raw`` keep an unparseable verdict
        (``winner`` empty) with its raw text.

        A frame already in canonical dtypes (as :func:`~peercore.judgments.judgments_from_frame`
        returns) is checked with a few vectorised tests on its distinct values instead
        of being validated row by row again; anything else goes through full validation.

        Raises
        ------
        JudgmentError
            If a valid row is not a canonical judgment (named row, column and value), or
            an import (``import_id`` given) names a judge that PeerBoard's runs produced.
        VerdictConflict
            If a row's natural key is stored (or repeated in ``judgments``) with another
            verdict (winner, p_a, validity, rationale or raw text); nothing is written.
        """
        sid = self.study_id(study)
        encoded = _encode_judgments(judgments)
        with self.transaction() as tx:
            if import_id is not None:
                self._refuse_run_judges(tx, sid, study, encoded)
            codes = self._label_codes(tx, sid, encoded.labels)
            counts = _insert_encoded(tx, sid, encoded, codes, run_id=run_id, import_id=import_id)
            if counts.added:
                self._bump(tx, sid)
        return counts

    def judgments(self, study: str, *, judges: Iterable[str] | None = None, include_invalid: bool = False,
                  with_vote: bool = False) -> pd.DataFrame:
        """The study's verdicts as a canonical judgment table (see :mod:`peercore.judgments`).

        Rows are in insertion order. They are trusted (they were validated when written),
        so the canonical frame is built directly from the stored codes: names are decoded
        with one Arrow ``take`` per column, and optional columns that the study never
        filled are not fetched at all.

        Parameters
        ----------
        judges : only these judges (exact names); default all.
        include_invalid : also return unparseable verdicts (``winner`` missing) and add
            the ``valid`` and ``raw`` columns; the result is then not a valid canonical table.
        with_vote : add the ``vote`` column (index of repeated verdicts on one key).
        """
        sid = self.study_id(study)
        connection = self.connect()
        labels = self._labels(sid)
        cursor = connection.cursor()
        cursor.row_factory = None  # plain tuples: sqlite3.Row costs a second object per row
        # Two queries: MIN or MAX alone is one index look-up, both at once scan the study's range.
        low = cursor.execute("SELECT MIN(id) FROM verdicts WHERE study_id = ?", (sid,)).fetchone()[0]
        high = cursor.execute("SELECT MAX(id) FROM verdicts WHERE study_id = ?", (sid,)).fetchone()[0]
        # A rowid range scan in insertion order; "+study_id" keeps SQLite from reading
        # through an index and sorting the rows back into order.
        where, params = "id BETWEEN ? AND ? AND +study_id = ?", [low or 0, high or -1, sid]
        if not include_invalid:
            where += " AND valid = 1"
        if judges is not None:
            codes = [labels.code[j] for j in judges if j in labels.code]
            where += f" AND judge IN ({','.join('?' * len(codes))})"
            params += codes
        filled = {r[0] for r in cursor.execute("SELECT name FROM verdict_columns WHERE study_id = ?", (sid,))}
        optional = [c for c in ("p_a", "criterion", "turn", "round", "rationale", "vote") if c in filled]
        extra = ["valid", "raw"] if include_invalid else []
        columns = ["question_id", "model_a", "model_b", "judge", "winner", *optional, *extra]
        rows = cursor.execute(f"SELECT {', '.join(columns)} FROM verdicts WHERE {where} ORDER BY id", params).fetchall()
        # One 2-D object array, then whole columns: 3x cheaper than zip(*rows).
        table = np.array(rows, dtype=object) if rows else np.empty((0, len(columns)), dtype=object)
        values = {name: table[:, k] for k, name in enumerate(columns)}
        out = _decode(values, labels, len(rows))
        if include_invalid:
            out["valid"] = values["valid"].astype(np.int64)
            out["raw"] = pd.array(pa.array(values["raw"], pa.large_string(), from_pandas=True), dtype="str")
        if with_vote:
            out["vote"] = (values["vote"].astype(np.int64) if "vote" in values else np.zeros(len(rows), dtype=np.int64))
        return out

    def _refuse_run_judges(self, tx: sqlite3.Connection, study_id: int, study: str, encoded: "_Encoded") -> None:
        """An import may not add verdicts under the name of a judge PeerBoard's runs produced."""
        runs = {r[0] for r in tx.execute("SELECT name FROM judges WHERE study_id = ? AND origin = 'run'", (study_id,))}
        if not runs:
            return
        judges = {encoded.labels[k] for k in np.unique(encoded.judge).tolist() if k >= 0}
        clash = sorted(judges & runs)
        if clash:
            row = int(np.flatnonzero(np.isin(encoded.judge, [encoded.labels.index(clash[0])]))[0])
            raise JudgmentError(
                f"judge {clash[0]!r} is a judge that PeerBoard's runs produced in study {study!r}; an import cannot "
                f"add verdicts under its name. Rename the judge in the file (e.g. '{clash[0]}@import') or import into "
                "another study", row=row, column="judge", value=clash[0])

    def labels(self, study: str) -> dict[str, int]:
        """name -> integer code of every model, judge and criterion name in the study."""
        return dict(self._labels(self.study_id(study)).code)

    def _labels(self, study_id: int) -> "_Labels":
        rows = self.connect().execute("SELECT id, text FROM labels WHERE study_id = ?", (study_id,)).fetchall()
        return _Labels.from_rows(rows)

    def _label_codes(self, tx: sqlite3.Connection, study_id: int, names: list[str]) -> np.ndarray:
        """Codes for ``names`` (registering new ones), as an array aligned with ``names``."""
        existing = dict(tx.execute("SELECT text, id FROM labels WHERE study_id = ?", (study_id,)).fetchall())
        next_id = max(existing.values(), default=0) + 1
        new = []
        for name in names:
            if name not in existing:
                existing[name] = next_id
                new.append((study_id, next_id, name))
                next_id += 1
        tx.executemany("INSERT INTO labels (study_id, id, text) VALUES (?, ?, ?)", new)
        return np.array([existing[name] for name in names], dtype=np.int64)

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
        """One run's row, its ``config`` decoded, with its study's name as ``study``."""
        row = self.connect().execute(
            "SELECT r.*, s.name AS study FROM runs r JOIN studies s ON s.id = r.study_id WHERE r.id = ?", (run_id,),
        ).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id!r}")
        out = dict(row)
        out["config"] = json.loads(out["config"])
        return out

    def runs(self, study: str) -> pd.DataFrame:
        return _db.read_sql_query(
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
        finished = ("done", "invalid")
        with self.transaction() as tx:
            if write is not None:
                write(tx)
            row = tx.execute("SELECT status FROM run_items WHERE run_id = ? AND item_key = ?", (run_id, item_key)).fetchone()
            if row is None:
                raise StoreError(f"run {run_id!r} has no item {item_key!r}")
            tx.execute(
                "UPDATE run_items SET status = ?, detail = ?, updated_at = ? WHERE run_id = ? AND item_key = ?",
                (status, detail, _now(), run_id, item_key),
            )
            # Incremental count: a COUNT(*) per finished item made long runs quadratic.
            step = int(status in finished) - int(row[0] in finished)
            tx.execute(
                "UPDATE runs SET n_done = n_done + ?2, prompt_tokens = prompt_tokens + ?3, "
                "completion_tokens = completion_tokens + ?4, cost_usd = cost_usd + ?5, updated_at = ?6 WHERE id = ?1",
                (run_id, step, prompt_tokens, completion_tokens, cost_usd, _now()),
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
                   run_id: str | None = None, item_key: str | None = None) -> bool:
        """Record a paid call's response; returns False if the key was already there.

        ``run_id`` and ``item_key`` say which run item paid for it (see :meth:`run_accounting`).
        """
        with self.transaction() as tx:
            cursor = tx.execute(
                "INSERT OR IGNORE INTO llm_calls (cache_key, backend, model, request, response, prompt_tokens, "
                "completion_tokens, latency_s, run_id, created_at, item_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (cache_key, backend, model, json.dumps(scrub_secrets(dict(request)), sort_keys=True),
                 json.dumps(dict(response)), prompt_tokens, completion_tokens, latency_s, run_id, _now(), item_key),
            )
            return cursor.rowcount == 1

    def run_accounting(self, run_id: str) -> dict:
        """Where every call a run paid for ended up.

        Returns
        -------
        dict
            ``calls_paid`` (calls this run paid, from the cache table), ``verdicts``
            (stored by this run, valid + invalid), ``valid``, ``invalid``, ``debates``,
            ``answers``, ``items`` (run items), ``items_done``, ``items_invalid``,
            ``items_failed``, ``items_pending``, ``items_paid`` (items that paid at least
            one call), ``scores`` (judges' absolute scores stored by this run, valid +
            invalid) and ``unaccounted``: items that paid but are neither stored nor
            failed (0 unless the run is still going or was killed before its commit; a
            resume finishes them from the cache, free).
        """
        connection = self.connect()
        one = lambda sql: int(connection.execute(sql, (run_id,)).fetchone()[0] or 0)  # noqa: E731
        statuses = dict(connection.execute(
            "SELECT status, COUNT(*) FROM run_items WHERE run_id = ? GROUP BY status", (run_id,)).fetchall())
        return {
            "calls_paid": one("SELECT COUNT(*) FROM llm_calls WHERE run_id = ?"),
            "verdicts": one("SELECT COUNT(*) FROM verdicts WHERE run_id = ?"),
            "valid": one("SELECT COUNT(*) FROM verdicts WHERE run_id = ? AND valid = 1"),
            "invalid": one("SELECT COUNT(*) FROM verdicts WHERE run_id = ? AND valid = 0"),
            "debates": one("SELECT COUNT(*) FROM debates WHERE run_id = ?"),
            "answers": one("SELECT COUNT(*) FROM answers WHERE run_id = ?"),
            "scores": one("SELECT COUNT(*) FROM judge_scores WHERE run_id = ?"),
            "items": sum(statuses.values()),
            "items_done": int(statuses.get("done", 0)),
            "items_invalid": int(statuses.get("invalid", 0)),
            "items_failed": int(statuses.get("failed", 0)),
            "items_pending": int(statuses.get("pending", 0)),
            "items_paid": one("SELECT COUNT(DISTINCT item_key) FROM llm_calls WHERE run_id = ? AND item_key IS NOT NULL"),
            "unaccounted": one(
                "SELECT COUNT(DISTINCT c.item_key) FROM llm_calls c JOIN run_items i ON i.run_id = c.run_id "
                "AND i.item_key = c.item_key WHERE c.run_id = ? AND i.status = 'pending'"),
        }

    # ----------------------------------------------------------------------- batches

    _BATCH_FIELDS = ("status", "input_file_id", "batch_id", "provider_status", "output_file_id", "error_file_id",
                     "n_succeeded", "n_failed", "intent_at")

    def add_batch(self, token: str, *, run_id: str, provider: str, judge: str, base_url: str | None,
                  requests: Iterable[Mapping]) -> bool:
        """Record a planned provider batch and its request lines (one transaction); False if ``token`` exists.

        ``requests`` rows need ``custom_id, cache_key, item_key, request`` (the request as a dict).
        """
        requests = list(requests)
        now = _now()
        with self.transaction() as tx:
            cursor = tx.execute(
                "INSERT OR IGNORE INTO batches (token, run_id, provider, judge, base_url, n_requests, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (token, run_id, provider, judge, base_url, len(requests), now, now))
            if cursor.rowcount != 1:
                return False
            tx.executemany(
                "INSERT INTO batch_requests (token, custom_id, cache_key, item_key, request) VALUES (?, ?, ?, ?, ?)",
                [(token, r["custom_id"], r["cache_key"], r["item_key"],
                  json.dumps(scrub_secrets(dict(r["request"])), sort_keys=True)) for r in requests])
            return True

    def batches(self, run_id: str) -> list[dict]:
        """A run's provider batches, oldest first (see migration 7)."""
        rows = self.connect().execute("SELECT * FROM batches WHERE run_id = ? ORDER BY rowid", (run_id,))
        return [dict(r) for r in rows]

    def update_batch(self, token: str, **fields) -> None:
        """Set some of a batch's fields (status, file and batch ids, provider status, counts, intent time)."""
        unknown = sorted(set(fields) - set(self._BATCH_FIELDS))
        if unknown:
            raise ValueError(f"update_batch: unknown field(s) {unknown}; allowed {self._BATCH_FIELDS}")
        columns = ", ".join(f"{name} = ?" for name in fields)
        with self.transaction() as tx:
            cursor = tx.execute(f"UPDATE batches SET {columns}, updated_at = ? WHERE token = ?",
                                (*fields.values(), _now(), token))
            if cursor.rowcount != 1:
                raise StoreError(f"no batch {token!r}")

    def batch_requests(self, token: str) -> list[dict]:
        """A batch's request lines in upload order, ``request`` decoded."""
        rows = self.connect().execute("SELECT * FROM batch_requests WHERE token = ? ORDER BY rowid", (token,))
        return [{**dict(r), "request": json.loads(r["request"])} for r in rows]

    def batched_calls(self, run_id: str) -> dict[str, dict]:
        """cache_key -> ``{"status", "error"}`` of the latest batch line of each call a run sent in a batch."""
        rows = self.connect().execute(
            "SELECT r.cache_key, r.status, r.error FROM batch_requests r JOIN batches b ON b.token = r.token "
            "WHERE b.run_id = ? ORDER BY b.rowid, r.rowid", (run_id,))
        return {key: {"status": status, "error": error} for key, status, error in rows}

    def store_batch_results(self, token: str, results: Iterable[Mapping], calls: Iterable[Mapping] = ()) -> None:
        """Store a batch's results in one transaction: the paid responses in the call cache
        (``calls``: keyword arguments of :meth:`store_call` plus ``cache_key``) and each
        line's outcome (``results``: ``custom_id, status, error``)."""
        with self.transaction() as tx:
            for call in calls:
                call = dict(call)
                self.store_call(call.pop("cache_key"), **call)
            tx.executemany("UPDATE batch_requests SET status = ?, error = ? WHERE token = ? AND custom_id = ?",
                           [(r["status"], r.get("error"), token, r["custom_id"]) for r in results])

    def run_judgments(self, run_id: str) -> pd.DataFrame:
        """The verdicts one run stored, valid and invalid, in insertion order.

        Columns: ``question_id, model_a, model_b, judge, winner`` (missing when the
        reply held no verdict), ``p_a, criterion, round, rationale, valid, raw, vote``;
        names decoded. Empty (same columns) for a run that stored no verdict.
        """
        frame = _db.read_sql_query(
            "SELECT question_id, model_a, model_b, judge, winner, p_a, NULLIF(criterion, '') AS criterion, "
            "round, rationale, valid, raw, vote FROM judgments WHERE run_id = ? ORDER BY id",
            self.connect(), params=(run_id,))
        return frame.astype({"question_id": "str", "model_a": "str", "model_b": "str", "judge": "str",
                             "valid": "int64", "vote": "int64", "p_a": "float64"})

    @contextlib.contextmanager
    def busy_timeout(self, milliseconds: int) -> Iterator[None]:
        """Within the block, this thread's connection waits at most ``milliseconds`` for a lock.

        The runner writes paid responses with a short wait and retries itself (with the
        response kept in memory), instead of blocking its event loop for 30 s.
        """
        connection = self.connect()
        connection.execute(f"PRAGMA busy_timeout = {int(milliseconds)}")
        try:
            yield
        finally:
            connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")

    # ----------------------------------------------------------------------- debates

    def add_debate(self, study: str, debate: Mapping, turns: Iterable[Mapping], *, run_id: str | None = None) -> bool:
        """Insert one debate (or PRD discussion) with its turns; False if its key exists.

        ``debate`` needs ``debate_key, question_id, model_a, model_b, status`` and may
        give ``kind, criterion, scenario, consensus, n_rounds, metadata``. Each turn needs
        ``round, position, speaker`` and may give ``verdict`` (None when unparsed),
        ``rationale`` and ``raw`` (the unparsed verdict as the source gave it).
        """
        return self.add_debates(study, [(debate, turns)], run_id=run_id).added == 1

    def add_debates(self, study: str, debates: Iterable[tuple[Mapping, Iterable[Mapping]]], *,
                    run_id: str | None = None) -> WriteCounts:
        """Insert many ``(debate, turns)`` in one transaction (see :meth:`add_debate`)."""
        sid = self.study_id(study)
        added = skipped = 0
        now = _now()
        with self.transaction() as tx:
            for debate, turns in debates:
                status = debate["status"]
                if status not in DEBATE_STATUSES:
                    raise ValueError(f"debate status must be one of {DEBATE_STATUSES}, got {status!r}")
                consensus = debate.get("consensus")
                if consensus is not None and consensus not in VERDICTS:
                    raise ValueError(f"debate consensus must be one of {VERDICTS} or None, got {consensus!r}")
                metadata = dict(debate.get("metadata") or {})
                panel = debate.get("panel") or (f"debate:{metadata['name']}" if metadata.get("name") else "")
                cursor = tx.execute(
                    "INSERT OR IGNORE INTO debates (study_id, debate_key, kind, question_id, model_a, model_b, criterion, "
                    "scenario, status, consensus, n_rounds, metadata, run_id, created_at, panel) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (sid, str(debate["debate_key"]), debate.get("kind", "debate"), str(debate["question_id"]),
                     debate["model_a"], debate["model_b"], debate.get("criterion") or "", debate.get("scenario") or "",
                     status, consensus, int(debate.get("n_rounds", 0)),
                     json.dumps(metadata, ensure_ascii=False), run_id, now, panel),
                )
                if cursor.rowcount == 0:
                    skipped += 1
                    continue
                added += 1
                debate_id = cursor.lastrowid
                tx.executemany(
                    "INSERT INTO debate_turns (debate_id, round, position, speaker, verdict, rationale, raw) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(debate_id, int(t["round"]), int(t["position"]), t["speaker"], t.get("verdict"),
                      t.get("rationale") or "", t.get("raw")) for t in turns],
                )
            if added:
                self._bump(tx, sid)
        return WriteCounts(added, skipped)

    def debates(self, study: str, *, status: str | None = None, kind: str | None = None) -> pd.DataFrame:
        """One row per debate: id, debate_key, kind, question_id, model_a, model_b, criterion, scenario, status,
        consensus, n_rounds, metadata (dict), panel (the consensus judge, ``debate:<name>``; '' when unknown)."""
        sql = ("SELECT id, debate_key, kind, question_id, model_a, model_b, criterion, scenario, status, consensus, "
               "n_rounds, metadata, panel FROM debates WHERE study_id = ?")
        params: list = [self.study_id(study)]
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        frame = _db.read_sql_query(sql + " ORDER BY id", self.connect(), params=params)
        frame["metadata"] = frame["metadata"].map(json.loads)
        return frame

    def debate_turns(self, debate_ids: Iterable[int]) -> pd.DataFrame:
        """Turns of the given debates: debate_id, round, position, speaker, verdict, rationale, raw."""
        ids = [int(i) for i in debate_ids]
        columns = ["debate_id", "round", "position", "speaker", "verdict", "rationale", "raw"]
        if not ids:
            return pd.DataFrame(columns=columns)
        frames = []
        for start in range(0, len(ids), 900):  # SQLite's bound-parameter limit
            chunk = ids[start:start + 900]
            frames.append(_db.read_sql_query(
                f"SELECT {', '.join(columns)} FROM debate_turns "
                f"WHERE debate_id IN ({','.join('?' * len(chunk))}) ORDER BY debate_id, round, position",
                self.connect(), params=chunk,
            ))
        return pd.concat(frames, ignore_index=True)

    def adjudication_queue(self, study: str, *, annotator: str | None = None, overlap: int = 0) -> pd.DataFrame:
        """Unresolved debates (kind ``debate``, not PRD discussions) still waiting for a decision.

        Parameters
        ----------
        annotator : only debates this annotator has not decided; None: only debates nobody
            decided (what ``overlap`` then means is ignored).
        overlap : with ``annotator``, only debates with fewer than ``overlap`` decisions by
            anyone (the study's :meth:`study_settings` ``overlap``); 0: no limit.

        Returns
        -------
        DataFrame ``id, debate_key, question_id, model_a, model_b, criterion, scenario,
        n_rounds, decisions`` (how many annotators decided it so far), ``leased`` (live
        leases on it by annotators other than ``annotator``, see :meth:`claim_debate`), in
        debate order.
        """
        from peercore.assignment import stamp

        sid = self.study_id(study)
        overlap = _overlap(overlap)
        count = "(SELECT COUNT(*) FROM adjudications a WHERE a.debate_id = d.id)"
        leased = ("(SELECT COUNT(*) FROM adjudication_leases l WHERE l.debate_id = d.id AND l.annotator <> ? "
                  "AND l.expires_at > ?)")
        params: list = [annotator or "", stamp(time.time()), sid]
        if annotator is None:
            where = f"{count} = 0"
        else:
            where = "NOT EXISTS (SELECT 1 FROM adjudications a WHERE a.debate_id = d.id AND a.annotator = ?)"
            params.append(annotator)
            if overlap:
                where += f" AND {count} < ?"
                params.append(overlap)
        return _db.read_sql_query(
            "SELECT d.id, d.debate_key, d.question_id, d.model_a, d.model_b, d.criterion, d.scenario, d.n_rounds, "
            f"{count} AS decisions, {leased} AS leased "
            f"FROM debates d WHERE d.study_id = ? AND d.kind = 'debate' AND d.status = 'unresolved' AND {where} "
            "ORDER BY d.id",
            self.connect(), params=params,
        )

    def claim_debate(self, study: str, annotator: str, *, lease_seconds: float, scenario: str | None = None,
                     criterion: str | None = None, now: float | None = None) -> dict | None:
        """Take (or renew) a lease on the next debate ``annotator`` should decide (see :mod:`peercore.assignment`).

        The debate is the annotator's live lease if it still needs them, else the first
        debate (in id order) they have neither decided nor skipped that is offerable:
        with the study's overlap N > 0, its decisions plus the live leases of others are
        fewer than N (:func:`peercore.assignment.offerable`). Any other lease the annotator
        holds in the study is given up; expired leases of the study are removed.

        Parameters
        ----------
        lease_seconds : how long the lease lasts from ``now``.
        scenario, criterion : only debates of this scenario / criterion (None: any).
        now : seconds since the epoch (default: this machine's clock).

        Returns
        -------
        dict or None
            ``debate_id, debate_key, question_id, model_a, model_b, criterion, scenario,
            n_rounds, decisions, expires_at, renewed``; None when no debate is offerable
            (the annotator's leases in the study are then given up).
        """
        from peercore.assignment import stamp

        sid = self.study_id(study)
        now = time.time() if now is None else float(now)
        at, until = stamp(now), stamp(now + float(lease_seconds))
        select = ("SELECT d.id, d.debate_key, d.question_id, d.model_a, d.model_b, d.criterion, d.scenario, "
                  "d.n_rounds, (SELECT COUNT(*) FROM adjudications a WHERE a.debate_id = d.id) AS decisions "
                  "FROM debates d WHERE ")
        # Optimistic: the walk over the study's debates (it grows with the debates decided
        # ahead) is a plain read, which WAL lets run beside any writer; the lease is then
        # taken in one short write transaction (BEGIN IMMEDIATE: SQLite's single writer)
        # that re-checks the chosen debate with the same predicate, so two claims never both
        # get the last place on a debate. (PostgreSQL: BEGIN IMMEDIATE is BEGIN plus the
        # database's one advisory write lock, peercore.db, so the same re-check holds there;
        # row locks with SKIP LOCKED would let claims run side by side, a later refinement.)
        connection = self.connect()
        overlap = int(connection.execute("SELECT overlap FROM studies WHERE id = ?", (sid,)).fetchone()[0])
        where, params = _offerable_sql(sid, annotator, overlap=overlap, at=at, scenario=scenario, criterion=criterion)
        candidates = [int(r[0]) for r in connection.execute(
            f"SELECT d.id FROM debates d WHERE {where} ORDER BY d.id LIMIT {_CLAIM_CANDIDATES}", params)]
        # "the study's leases" as EXISTS on each lease row (there are few), never as an IN-list
        # of the study's debates (built on every claim: 3 ms at 20,000 debates).
        of_study = "EXISTS (SELECT 1 FROM debates x WHERE x.id = adjudication_leases.debate_id AND x.study_id = ?)"
        with self.transaction() as tx:
            now_overlap = int(tx.execute("SELECT overlap FROM studies WHERE id = ?", (sid,)).fetchone()[0])
            if now_overlap != overlap:  # changed since the read: check against the new setting
                where, params = _offerable_sql(sid, annotator, overlap=now_overlap, at=at, scenario=scenario,
                                               criterion=criterion)
            tx.execute(f"DELETE FROM adjudication_leases WHERE expires_at <= ? AND {of_study}", (at, sid))
            held = [int(r[0]) for r in tx.execute(
                f"SELECT debate_id FROM adjudication_leases WHERE annotator = ? AND expires_at > ? AND {of_study} "
                "ORDER BY debate_id", (annotator, at, sid))]
            row, renewed = None, False
            for k, debate_id in enumerate([*held, *candidates]):
                row = tx.execute(select + where + " AND d.id = ?", [*params, debate_id]).fetchone()
                if row is not None:
                    renewed = k < len(held)  # the annotator's own debate, still needing them: renew it
                    break
            if row is None and candidates:  # every candidate was taken since the read: walk again
                row = tx.execute(select + where + " ORDER BY d.id LIMIT 1", params).fetchone()
            keep = -1 if row is None else int(row[0])
            tx.execute(f"DELETE FROM adjudication_leases WHERE annotator = ? AND debate_id <> ? AND {of_study}",
                       (annotator, keep, sid))
            if row is None:
                return None
            tx.execute("INSERT INTO adjudication_leases (debate_id, annotator, expires_at, created_at) "
                       "VALUES (?, ?, ?, ?) ON CONFLICT (debate_id, annotator) DO UPDATE SET "
                       "expires_at = excluded.expires_at", (keep, annotator, until, at))
        return {"debate_id": keep, "debate_key": row[1], "question_id": row[2], "model_a": row[3],
                "model_b": row[4], "criterion": row[5], "scenario": row[6], "n_rounds": int(row[7]),
                "decisions": int(row[8]), "expires_at": until, "renewed": renewed}

    def leases(self, study: str, *, now: float | None = None) -> pd.DataFrame:
        """The study's leases: debate_id, annotator, expires_at, created_at, live (False once expired)."""
        from peercore.assignment import stamp

        frame = _db.read_sql_query(
            "SELECT l.debate_id, l.annotator, l.expires_at, l.created_at FROM adjudication_leases l "
            "JOIN debates d ON d.id = l.debate_id WHERE d.study_id = ? ORDER BY l.debate_id, l.annotator",
            self.connect(), params=(self.study_id(study),))
        return frame.assign(live=frame["expires_at"] > stamp(time.time() if now is None else float(now)))

    def release_leases(self, study: str, annotator: str, *, debate_id: int | None = None) -> int:
        """Give up ``annotator``'s leases in ``study`` (or only on ``debate_id``); returns how many."""
        sql = ("DELETE FROM adjudication_leases WHERE annotator = ? AND EXISTS (SELECT 1 FROM debates x "
               "WHERE x.id = adjudication_leases.debate_id AND x.study_id = ?)")
        params: list = [annotator, self.study_id(study)]
        if debate_id is not None:
            sql, params = sql + " AND debate_id = ?", params + [int(debate_id)]
        with self.transaction() as tx:
            return tx.execute(sql, params).rowcount

    def adjudicate(self, debate_id: int, annotator: str, verdict: str, *, note: str = "",
                   token: str | None = None, blind: bool | None = None) -> bool:
        """Record ``annotator``'s decision on a debate; True if new, False if it replaced theirs.

        One decision per (debate, annotator): concurrent annotators each keep theirs, and
        a repeated click by the same annotator cannot make a second row. ``token`` marks
        this decision (e.g. one per browser tab and click) so that :meth:`undo_adjudication`
        can remove exactly it and not a later decision made elsewhere.

        ``verdict`` is one of :data:`DECISIONS`: ``model_a``, ``model_b``, ``tie`` or
        ``both_bad`` (neither answer is acceptable), which is stored as a tie with
        ``both_bad = 1`` (the gold set and agreement count it as a tie, as Chatbot Arena
        counts "tie (bothbad)"). ``blind`` records whether the annotator decided without
        having seen the agents' verdicts (None: not known). A decision clears the
        annotator's skip of that debate and ends their lease on it (:meth:`claim_debate`).

        Raises
        ------
        peercore.assignment.DecisionRefused
            If the study has an overlap N and N other annotators decided the debate already
            (a decision made after its lease ran out and others took it); nothing is stored.
        """
        if verdict not in DECISIONS:
            raise ValueError(f"verdict must be one of {DECISIONS}, got {verdict!r}")
        if not annotator or not annotator.strip():
            raise ValueError("annotator name is empty")
        from peercore.assignment import DecisionRefused

        both_bad = int(verdict == "both_bad")
        stored = "tie" if both_bad else verdict
        blind_flag = None if blind is None else int(bool(blind))
        refused = None
        with self.transaction() as tx:
            row = tx.execute("SELECT d.study_id, s.overlap FROM debates d JOIN studies s ON s.id = d.study_id "
                             "WHERE d.id = ?", (int(debate_id),)).fetchone()
            if row is None:
                raise StoreError(f"no debate with id {debate_id}")
            existed = tx.execute(
                "SELECT 1 FROM adjudications WHERE debate_id = ? AND annotator = ?", (int(debate_id), annotator)
            ).fetchone()
            # The annotator's lease on the debate ends with their decision (stored or refused).
            tx.execute("DELETE FROM adjudication_leases WHERE debate_id = ? AND annotator = ?",
                       (int(debate_id), annotator))
            overlap = int(row[1])
            if existed is None and overlap:
                deciders = [r[0] for r in tx.execute(
                    "SELECT annotator FROM adjudications WHERE debate_id = ? ORDER BY id", (int(debate_id),))]
                if len(deciders) >= overlap:  # full: a late decision (its lease ran out) is refused
                    refused = DecisionRefused(int(debate_id), annotator, overlap=overlap, deciders=deciders)
            if refused is None:
                tx.execute(
                    "INSERT INTO adjudications (debate_id, annotator, verdict, note, created_at, token, both_bad, "
                    "blind) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (debate_id, annotator) DO UPDATE SET verdict = excluded.verdict, "
                    "note = excluded.note, created_at = excluded.created_at, token = excluded.token, "
                    "both_bad = excluded.both_bad, blind = excluded.blind",
                    (int(debate_id), annotator, stored, note, _now(), token, both_bad, blind_flag),
                )
                tx.execute("DELETE FROM adjudication_skips WHERE debate_id = ? AND annotator = ?",
                           (int(debate_id), annotator))
                self._bump(tx, row[0])
        if refused is not None:  # raised after COMMIT: the lease is given up, nothing else changed
            raise refused
        return existed is None

    def undo_adjudication(self, debate_id: int, annotator: str, *, token: str | None = None) -> bool:
        """Remove ``annotator``'s decision on a debate; True if there was one.

        With ``token``, only the decision made with that token is removed: if the same
        annotator decided the debate again elsewhere (another tab), that later decision
        stays and False is returned.
        """
        with self.transaction() as tx:
            row = tx.execute("SELECT study_id FROM debates WHERE id = ?", (int(debate_id),)).fetchone()
            sql, params = "DELETE FROM adjudications WHERE debate_id = ? AND annotator = ?", [int(debate_id), annotator]
            if token is not None:
                sql, params = sql + " AND token = ?", params + [token]
            cursor = tx.execute(sql, params)
            if row is not None:
                self._bump(tx, row[0])
            return cursor.rowcount == 1

    def adjudications(self, study: str) -> pd.DataFrame:
        """Every decision: debate_id, question_id, model_a, model_b, criterion, scenario, annotator, verdict, note,
        created_at, both_bad (bool; its verdict is ``tie``), decision (``verdict``, or ``both_bad``), blind
        (True / False / None when not recorded)."""
        frame = _db.read_sql_query(
            "SELECT a.debate_id, d.question_id, d.model_a, d.model_b, d.criterion, d.scenario, a.annotator, a.verdict, "
            "a.note, a.created_at, a.both_bad, a.blind FROM adjudications a JOIN debates d ON d.id = a.debate_id "
            "WHERE d.study_id = ? ORDER BY a.id",
            self.connect(), params=(self.study_id(study),),
        )
        frame["both_bad"] = frame["both_bad"].astype(bool)
        frame["decision"] = frame["verdict"].where(~frame["both_bad"], "both_bad")
        frame["blind"] = pd.array([None if pd.isna(v) else bool(v) for v in frame["blind"]], dtype="boolean")
        return frame

    # ------------------------------------------------------- adjudication settings

    def skip_debate(self, debate_id: int, annotator: str) -> bool:
        """Put a debate aside for ``annotator`` (kept in the store, not in a browser); True if new.

        Skips are no data: they do not change the study's revision.
        """
        if not annotator or not annotator.strip():
            raise ValueError("annotator name is empty")
        with self.transaction() as tx:
            if tx.execute("SELECT 1 FROM debates WHERE id = ?", (int(debate_id),)).fetchone() is None:
                raise StoreError(f"no debate with id {debate_id}")
            cursor = tx.execute("INSERT OR IGNORE INTO adjudication_skips (debate_id, annotator, created_at) "
                                "VALUES (?, ?, ?)", (int(debate_id), annotator, _now()))
            return cursor.rowcount == 1

    def skipped_debates(self, study: str, annotator: str) -> list[int]:
        """Ids of the debates of ``study`` that ``annotator`` skipped, oldest skip first."""
        rows = self.connect().execute(
            "SELECT s.debate_id FROM adjudication_skips s JOIN debates d ON d.id = s.debate_id "
            "WHERE d.study_id = ? AND s.annotator = ? ORDER BY s.created_at, s.debate_id",
            (self.study_id(study), annotator)).fetchall()
        return [int(r[0]) for r in rows]

    def clear_skips(self, study: str, annotator: str, *, debate_id: int | None = None) -> int:
        """Bring ``annotator``'s skipped debates of ``study`` (or just ``debate_id``) back; returns how many."""
        sql = ("DELETE FROM adjudication_skips WHERE annotator = ? AND debate_id IN "
               "(SELECT id FROM debates WHERE study_id = ?)")
        params: list = [annotator, self.study_id(study)]
        if debate_id is not None:
            sql, params = sql + " AND debate_id = ?", params + [int(debate_id)]
        with self.transaction() as tx:
            return tx.execute(sql, params).rowcount

    def study_settings(self, study: str) -> dict:
        """The study's adjudication settings: ``rubric`` (plain text, '' when none) and ``overlap``
        (decisions each debate needs; 0 = every annotator decides every debate)."""
        row = self.connect().execute("SELECT rubric, overlap FROM studies WHERE id = ?",
                                     (self.study_id(study),)).fetchone()
        return {"rubric": row[0], "overlap": int(row[1])}

    def update_study_settings(self, study: str, *, rubric: str | None = None, overlap: int | None = None) -> None:
        """Change the study's adjudication ``rubric`` and/or ``overlap`` (see :meth:`study_settings`).

        Settings are no data: they do not change the study's revision.

        Raises
        ------
        ValueError
            If ``rubric`` is not text or ``overlap`` is not an integer in [0, 1000].
        """
        sid = self.study_id(study)
        if rubric is not None and not isinstance(rubric, str):
            raise ValueError(f"rubric must be text, got {type(rubric).__name__}")
        overlap = None if overlap is None else _overlap(overlap)
        with self.transaction() as tx:
            if rubric is not None:
                tx.execute("UPDATE studies SET rubric = ? WHERE id = ?", (rubric, sid))
            if overlap is not None:
                tx.execute("UPDATE studies SET overlap = ? WHERE id = ?", (overlap, sid))

    # ---------------------------------------------------------------------- helpers

    # ------------------------------------------------------------------------ scores

    def add_human_scores(self, study: str, scores: pd.DataFrame, *, import_id: int | None = None) -> WriteCounts:
        """Insert human ratings: one row per (``question_id``, ``model``, ``attribute``) with its ``value``.

        ``question_id`` is the context, ``model`` the candidate (system). A stored
        identical value is skipped; another value under a stored (or repeated) key is
        refused with :class:`ScoreConflict` and nothing is written.

        Raises
        ------
        ValueError
            If a column is missing, a name is empty, or a value is not a finite number
            within +-1e12 (the row and value are named).
        ScoreConflict
            If a key is stored, or repeated in ``scores``, with another value.
        """
        _require(scores, ("question_id", "model", "attribute", "value"), "human scores")
        sid = self.study_id(study)
        keys = list(zip(*(_names(scores[c], c) for c in ("question_id", "model", "attribute"))))
        values = _finite(scores["value"], "value", required=True)
        incoming: dict[tuple, tuple[int, float]] = {}
        for row, (key, value) in enumerate(zip(keys, values)):
            first = incoming.setdefault(key, (row, value))
            if first[1] != value:
                raise ScoreConflict(f"human score of {key[1]!r} on {key[2]!r} in context {key[0]!r} is given twice "
                                    f"with different values ({first[1]!r} in row {first[0]}, {value!r} here)",
                                    key=dict(zip(("question_id", "model", "attribute"), key)), row=row,
                                    stored={"value": first[1]}, incoming={"value": value}, column="value")
        now = _now()
        with self.transaction() as tx:
            rows = []
            for key, (row, value) in incoming.items():
                found = tx.execute("SELECT value FROM human_scores WHERE study_id = ? AND question_id = ? AND model = ? "
                                   "AND attribute = ?", (sid, *key)).fetchone()
                if found is not None:
                    stored = {key: found[0]}
                    if stored[key] != value:
                        raise ScoreConflict(
                            f"human score of {key[1]!r} on {key[2]!r} in context {key[0]!r} is already stored in "
                            f"study {study!r} with value {stored[key]!r}, not {value!r}",
                            key=dict(zip(("question_id", "model", "attribute"), key)), row=row,
                            stored={"value": stored[key]}, incoming={"value": value}, column="value")
                    continue
                rows.append((sid, *key, value, import_id, now))
            tx.executemany("INSERT INTO human_scores (study_id, question_id, model, attribute, value, import_id, "
                           "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            if rows:
                self._bump(tx, sid)
        return WriteCounts(len(rows), len(keys) - len(rows))

    def human_scores(self, study: str, *, attribute: str | None = None) -> pd.DataFrame:
        """``question_id, model, attribute, value`` in insertion order (one attribute when given)."""
        where, params = "study_id = ?", [self.study_id(study)]
        if attribute is not None:
            where += " AND attribute = ?"
            params.append(attribute)
        frame = _db.read_sql_query(f"SELECT question_id, model, attribute, value FROM human_scores WHERE {where} "
                                  "ORDER BY rowid", self.connect(), params=params)
        return frame.astype({"question_id": "str", "model": "str", "attribute": "str", "value": float})

    def add_judge_scores(self, study: str, scores: pd.DataFrame, *, run_id: str | None = None,
                         import_id: int | None = None) -> WriteCounts:
        """Insert judges' absolute scores of single candidates (prompt scoring).

        Columns: ``question_id, model, judge`` and optional ``attribute`` (default ''),
        ``vote`` (0), ``score`` (the number read from the reply), ``expected`` (the
        expected score over the score tokens), ``distribution`` (dict label ->
        probability), ``valid`` (1; 0 keeps an unreadable reply), ``rationale``, ``raw``.
        A valid row needs ``score`` or ``expected``. A stored identical row is skipped;
        another score under a stored key is refused (:class:`ScoreConflict`). An import
        (``import_id``) may not write under the name of a judge that PeerBoard's runs
        produced.

        Raises
        ------
        ValueError
            On a missing column, an empty name, a non-finite number, or a valid row
            without a score (row and value named).
        ScoreConflict
            If a key is stored, or repeated in ``scores``, with another score.
        """
        _require(scores, ("question_id", "model", "judge"), "judge scores")
        sid = self.study_id(study)
        n = len(scores)
        column = lambda name, default: scores[name] if name in scores.columns else pd.Series([default] * n)  # noqa: E731
        question, model, judge = (_names(scores[c], c) for c in ("question_id", "model", "judge"))
        attribute = [_text_or(a, "") for a in column("attribute", "")]
        vote = [int(v) if v is not None and not pd.isna(v) else 0 for v in column("vote", 0)]
        score = _finite(column("score", None), "score", required=False)
        expected = _finite(column("expected", None), "expected", required=False)
        valid = [int(v) if v is not None and not pd.isna(v) else 1 for v in column("valid", 1)]
        rationale = [_text_or(v, None) for v in column("rationale", None)]
        raw = [_text_or(v, None) for v in column("raw", None)]
        distribution = [None if d is None or (isinstance(d, float) and np.isnan(d)) else
                        (d if isinstance(d, str) else json.dumps(dict(d), sort_keys=True))
                        for d in column("distribution", None)]
        for row in range(n):
            if valid[row] not in (0, 1):
                raise ValueError(f"judge scores row {row}: valid must be 0 or 1, got {valid[row]!r}")
            if not 0 <= vote[row] <= 1_000_000:
                raise ValueError(f"judge scores row {row}: vote must be 0..1,000,000, got {vote[row]!r}")
            if valid[row] and score[row] is None and expected[row] is None:
                raise ValueError(f"judge scores row {row}: a valid score needs 'score' or 'expected' (both are missing)")
        fields = ("score", "expected", "valid", "raw")
        incoming: dict[tuple, tuple[int, tuple]] = {}
        for row in range(n):
            key = (question[row], model[row], judge[row], attribute[row], vote[row])
            value = (score[row], expected[row], valid[row], raw[row])
            first = incoming.setdefault(key, (row, value))
            if first[1] != value:
                raise ScoreConflict(f"the score of {key[1]!r} by {key[2]!r} in context {key[0]!r} is given twice with "
                                    f"different values (rows {first[0]} and {row})", key=_score_key(key), row=row,
                                    stored=dict(zip(fields, first[1])), incoming=dict(zip(fields, value)),
                                    column="score")
        now = _now()
        with self.transaction() as tx:
            if import_id is not None:
                runs = {r[0] for r in tx.execute("SELECT name FROM judges WHERE study_id = ? AND origin = 'run'", (sid,))}
                clash = sorted(set(judge) & runs)
                if clash:
                    raise JudgmentError(
                        f"judge {clash[0]!r} is a judge that PeerBoard's runs produced in study {study!r}; an import "
                        f"cannot add scores under its name. Rename the judge in the file (e.g. '{clash[0]}@import')",
                        row=judge.index(clash[0]), column="judge", value=clash[0])
            rows = []
            for key, (row, value) in incoming.items():
                found = tx.execute("SELECT score, expected, valid, raw FROM judge_scores WHERE study_id = ? AND "
                                   "question_id = ? AND model = ? AND judge = ? AND attribute = ? AND vote = ?",
                                   (sid, *key)).fetchone()
                if found is not None:
                    stored = {key: tuple(found)}
                    if stored[key] != value:
                        raise ScoreConflict(
                            f"the score of {key[1]!r} by {key[2]!r} on {key[3]!r} in context {key[0]!r} is already "
                            f"stored in study {study!r} with another value", key=_score_key(key), row=row,
                            stored=dict(zip(fields, stored[key])), incoming=dict(zip(fields, value)), column="score")
                    continue
                rows.append((sid, *key, score[row], expected[row], distribution[row], valid[row], rationale[row],
                             raw[row], run_id, import_id, now))
            tx.executemany(
                "INSERT INTO judge_scores (study_id, question_id, model, judge, attribute, vote, score, expected, "
                "distribution, valid, rationale, raw, run_id, import_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            if rows:
                self._bump(tx, sid)
        return WriteCounts(len(rows), n - len(rows))

    def judge_scores(self, study: str, *, judges: Iterable[str] | None = None, attribute: str | None = None,
                     include_invalid: bool = False) -> pd.DataFrame:
        """Judges' absolute scores in insertion order.

        Columns: ``question_id, model, judge, attribute, vote, score, expected, value``
        (``expected`` when given, else ``score``: what rankings use),
        ``distribution`` (dict or None), ``valid``, ``rationale``, ``raw``, ``run_id``.
        Unreadable replies (``valid = 0``) only with ``include_invalid``.
        """
        where, params = "study_id = ?", [self.study_id(study)]
        if not include_invalid:
            where += " AND valid = 1"
        if attribute is not None:
            where += " AND attribute = ?"
            params.append(attribute)
        if judges is not None:
            names = list(judges)
            where += f" AND judge IN ({','.join('?' * len(names))})"
            params += names
        frame = _db.read_sql_query(
            "SELECT question_id, model, judge, attribute, vote, score, expected, COALESCE(expected, score) AS value, "
            f"distribution, valid, rationale, raw, run_id FROM judge_scores WHERE {where} ORDER BY id",
            self.connect(), params=params)
        frame["distribution"] = frame["distribution"].map(lambda d: json.loads(d) if isinstance(d, str) else None)
        return frame.astype({"question_id": "str", "model": "str", "judge": "str", "attribute": "str",
                             "score": float, "expected": float, "value": float})

    def score_judges(self, study: str) -> pd.DataFrame:
        """One row per (judge, attribute) with scores: ``judge, attribute, n_scores, n_invalid``."""
        return _db.read_sql_query(
            "SELECT judge, attribute, SUM(valid) AS n_scores, SUM(1 - valid) AS n_invalid FROM judge_scores "
            "WHERE study_id = ? GROUP BY judge, attribute ORDER BY judge, attribute", self.connect(),
            params=(self.study_id(study),))

    def _insert_many(self, study_id: int, sql: str, rows: list[tuple]) -> WriteCounts:
        with self.transaction() as tx:
            before = tx.total_changes
            tx.executemany(sql, rows)
            added = tx.total_changes - before
            if added:
                self._bump(tx, study_id)
        return WriteCounts(added, len(rows) - added)


def _overlap(value) -> int:
    """An overlap setting checked: an integer in [0, MAX_OVERLAP] (0 = no limit)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) <= MAX_OVERLAP:
        raise ValueError(f"overlap must be an integer from 0 (no limit) to {MAX_OVERLAP}, got {value!r}")
    return int(value)


# How many offerable debates a claim reads before taking one (more than the annotators who
# claim at the same instant, so the write transaction rarely has to walk again).
_CLAIM_CANDIDATES = 16


def _offerable_sql(study_id: int, annotator: str, *, overlap: int, at: str, scenario: str | None,
                   criterion: str | None) -> tuple[str, list]:
    """WHERE clause (over ``debates d``) of the debates that may be offered to ``annotator`` at time ``at``.

    Unresolved debates (kind ``debate``) that the annotator neither decided nor skipped
    and, with an overlap N > 0, whose decisions plus live leases of others are fewer than
    N (:func:`peercore.assignment.offerable`). Terms come in the order that drops most
    debates soonest (SQLite tests them as written): with an overlap, the full ones first
    (half the time of a 20,000-debate walk).
    """
    where, params = "d.study_id = ? AND d.kind = 'debate' AND d.status = 'unresolved'", [study_id]
    if overlap:
        where += (" AND (SELECT COUNT(*) FROM adjudications a WHERE a.debate_id = d.id) < ?"
                  " AND (SELECT COUNT(*) FROM adjudications a WHERE a.debate_id = d.id) + "
                  "(SELECT COUNT(*) FROM adjudication_leases l WHERE l.debate_id = d.id "
                  "AND l.annotator <> ? AND l.expires_at > ?) < ?")
        params += [overlap, annotator, at, overlap]
    where += (" AND NOT EXISTS (SELECT 1 FROM adjudications a WHERE a.debate_id = d.id AND a.annotator = ?)"
              " AND NOT EXISTS (SELECT 1 FROM adjudication_skips s WHERE s.debate_id = d.id AND s.annotator = ?)")
    params += [annotator, annotator]
    if scenario is not None:
        where, params = where + " AND d.scenario = ?", params + [scenario]
    if criterion is not None:
        where, params = where + " AND d.criterion = ?", params + [criterion]
    return where, params


def _json_default(value):
    if isinstance(value, WriteCounts):
        return {"added": value.added, "skipped": value.skipped}
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


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


def _names(values: pd.Series, column: str) -> list[str]:
    """A column of names as text; an empty or missing name is refused (row named)."""
    out = []
    for row, value in enumerate(values.tolist()):
        text = _text_or(value, "")
        if not text.strip():
            raise ValueError(f"row {row}: {column} is empty; every score needs one")
        out.append(text)
    return out


def _finite(values: pd.Series, column: str, *, required: bool) -> list[float | None]:
    """A column of numbers as floats (None where missing, unless required): finite, within +-1e12."""
    out: list[float | None] = []
    for row, value in enumerate(values.tolist()):
        if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
            if required:
                raise ValueError(f"row {row}: {column} is missing; every score needs one")
            out.append(None)
            continue
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(f"row {row}: {column} must be a number, got {value!r}")
        number = float(value)
        if not np.isfinite(number) or abs(number) > 1e12:
            raise ValueError(f"row {row}: {column} must be a finite number within +-1e12, got {value!r}")
        out.append(number)
    return out


def _score_key(key: tuple) -> dict:
    return dict(zip(("question_id", "model", "judge", "attribute", "vote"), key))


def _text_or(value, default):
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return default
    return str(value)


# ------------------------------------------------------------- encoding judgments
# Writing: canonical frame -> Arrow dictionary codes -> int arrays -> one executemany of
# tuples built from lists (``ndarray.tolist`` makes the Python ints in C). Checks and
# name lookups work on the distinct values of each column, never row by row. Only the
# columns a frame actually fills are bound; constant columns (study, import, created_at,
# a single criterion ...) are SQL literals, so a plain Arena battle binds 5 values.

_TEXT = "str"
_WINNER_CODE = {"model_a": 0, "model_b": 1, "tie": 2}
_WINNER_TEXT = pa.array(list(WINNERS), pa.large_string())
_OPTIONAL = ("p_a", "criterion", "turn", "round", "rationale", "vote", "raw")


@dataclass
class _Encoded:
    """A judgment table ready to insert: names as indices into ``labels``."""

    n: int
    labels: list[str]
    question_id: list[str]
    model_a: np.ndarray
    model_b: np.ndarray
    judge: np.ndarray
    criterion: np.ndarray        # index into labels, -1 = not given
    winner: np.ndarray           # 0 / 1 / 2, -1 = none (invalid rows)
    turn: np.ndarray
    round: np.ndarray
    vote: np.ndarray
    valid: np.ndarray
    p_a: np.ndarray              # float, NaN = not given
    rationale: list | None       # None when no row has one
    raw: list | None


def _arrow(series: pd.Series) -> pa.Array:
    """The Arrow array behind a "str" column (no copy), as large_string."""
    array = pa.array(series)
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return array if array.type == pa.large_string() else array.cast(pa.large_string())


def _dictionary(array: pa.Array) -> tuple[np.ndarray, list[str]]:
    """(codes with -1 for missing, distinct values) of a string array, in C."""
    encoded = pc.dictionary_encode(array)
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, encoded.dictionary.to_pylist()


def _is_canonical_dtypes(frame: pd.DataFrame) -> bool:
    if not all(c in frame.columns for c in COLUMNS):
        return False
    text = ("question_id", "model_a", "model_b", "judge", "winner", "criterion", "rationale")
    return (all(frame[c].dtype == _TEXT for c in text) and frame["p_a"].dtype == np.float64
            and all(frame[c].dtype == "Int64" for c in ("turn", "round")))


def _trusted_canonical(frame: pd.DataFrame) -> bool:
    """Cheap checks that a frame in canonical dtypes also holds canonical values.

    Arrow compute kernels over whole columns (a million rows in milliseconds). Anything
    doubtful returns False and the caller falls back to full validation, which names
    the row.
    """
    if not _is_canonical_dtypes(frame):
        return False
    keys = {}
    for column in ("question_id", "model_a", "model_b", "judge"):
        array = _arrow(frame[column])
        if array.null_count or not pc.all(pc.equal(pc.utf8_trim_whitespace(array), array)).as_py() \
                or pc.any(pc.equal(array, "")).as_py():
            return False
        keys[column] = array
    winner = _arrow(frame["winner"])
    if winner.null_count or not pc.all(pc.is_in(winner, value_set=_WINNER_TEXT)).as_py():
        return False
    if len(frame) and pc.any(pc.equal(keys["model_a"], keys["model_b"])).as_py():
        return False
    p_a = frame["p_a"].to_numpy()
    with np.errstate(invalid="ignore"):
        if (~np.isnan(p_a) & ~((p_a >= 0) & (p_a <= 1))).any():
            return False
    return True


def _encode_judgments(judgments: pd.DataFrame) -> _Encoded:
    """Validate (see :meth:`Store.add_judgments`) and encode a judgment table."""
    if not isinstance(judgments, pd.DataFrame):
        raise TypeError(f"judgments must be a pandas DataFrame, got {type(judgments).__name__}")
    judgments = judgments.reset_index(drop=True)
    n = len(judgments)
    valid = (pd.to_numeric(judgments["valid"]).fillna(1).astype(int).to_numpy()
             if "valid" in judgments.columns else np.ones(n, dtype=np.int64))
    if not np.isin(valid, (0, 1)).all():
        raise ValueError(f"valid must be 0 or 1, got {sorted(set(valid.tolist()) - {0, 1})}")
    good = valid == 1
    if good.all():
        frame = judgments if _trusted_canonical(judgments) else judgments_from_frame(judgments)
    else:
        # An unparseable verdict keeps its key and raw text: validate every row with a
        # stand-in winner (so row numbers in errors are the caller's), then blank it.
        stand_in = judgments["winner"].astype(object).where(good, "tie") if "winner" in judgments.columns else "tie"
        frame = judgments_from_frame(judgments.assign(winner=stand_in))
        frame["winner"] = frame["winner"].where(good)

    labels: dict[str, int] = {}
    coded = {}
    for column in ("model_a", "model_b", "judge", "criterion"):
        codes, names = _dictionary(_arrow(frame[column]))
        lookup = np.array([labels.setdefault(name, len(labels)) for name in names] + [-1], dtype=np.int64)
        coded[column] = lookup[codes]  # code -1 (missing) picks the trailing -1
    winner_codes, winner_names = _dictionary(_arrow(frame["winner"]))
    winner = np.array([_WINNER_CODE[w] for w in winner_names] + [-1], dtype=np.int64)[winner_codes]
    turn = frame["turn"].fillna(0).to_numpy(dtype=np.int64)
    round_ = frame["round"].fillna(0).to_numpy(dtype=np.int64)
    question = _arrow(frame["question_id"])
    if "vote" in judgments.columns:
        numbers = pd.to_numeric(judgments["vote"], errors="coerce").fillna(0).to_numpy(dtype=float)
        bad = ~np.isfinite(numbers) | (numbers < 0) | (numbers > _MAX_VOTE) | (numbers % 1 != 0)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            value = judgments["vote"].iloc[row]
            value = value.item() if hasattr(value, "item") else value
            raise JudgmentError(f"vote {value!r} is not a whole number from 0 to {_MAX_VOTE:,}", row=row,
                                column="vote", value=value)
        vote = numbers.astype(np.int64)
    else:
        vote = _vote_numbers(question, coded["model_a"], coded["model_b"], coded["judge"], coded["criterion"],
                             turn, round_)
    rationale = frame["rationale"]
    raw = judgments["raw"] if "raw" in judgments.columns else None
    if raw is not None:
        odd = raw.notna() & ~raw.map(lambda v: isinstance(v, str))
        if odd.any():
            row = int(np.flatnonzero(odd.to_numpy())[0])
            raise JudgmentError(f"raw must be text (the unparsed reply), got {type(raw.iloc[row]).__name__}",
                                row=row, column="raw")
    return _Encoded(
        n=n, labels=list(labels), question_id=question.to_pylist(), model_a=coded["model_a"],
        model_b=coded["model_b"], judge=coded["judge"], criterion=coded["criterion"], winner=winner, turn=turn,
        round=round_, vote=vote, valid=valid.astype(np.int64), p_a=frame["p_a"].to_numpy(dtype=float),
        rationale=_nullable_list(rationale) if rationale.notna().any() else None,
        raw=_nullable_list(raw) if raw is not None and raw.notna().any() else None,
    )


def _vote_numbers(question_id: pa.Array, *codes: np.ndarray) -> np.ndarray:
    """0, 1, 2 ... for repeats of one key, in row order (zeros when no key repeats).

    When every question id is distinct (Arena logs: one battle per id) no key can
    repeat, which one Arrow pass tells without grouping a million rows.
    """
    n = len(question_id)
    if n == 0 or pc.count_distinct(question_id).as_py() == n:
        return np.zeros(n, dtype=np.int64)
    q_codes, _ = _dictionary(question_id)
    keys = pd.DataFrame({"q": q_codes, **{f"k{i}": c for i, c in enumerate(codes)}})
    if not keys.duplicated().any():
        return np.zeros(n, dtype=np.int64)
    return keys.groupby(list(keys.columns), sort=False).cumcount().to_numpy(dtype=np.int64)


def _nullable_list(series: pd.Series) -> list:
    """Python list with None for every missing value (SQL NULL)."""
    values = series.astype(object)
    return values.where(series.notna(), None).tolist()


def _insert_encoded(tx: sqlite3.Connection, study_id: int, encoded: _Encoded, codes: np.ndarray, *,
                    run_id: str | None, import_id: int | None) -> WriteCounts:
    n = encoded.n
    if n == 0:
        return WriteCounts(0, 0)
    lookup = np.append(codes, 0)  # index -1 (no criterion) -> code 0
    columns: dict[str, list] = {
        "question_id": encoded.question_id,
        "model_a": lookup[encoded.model_a].tolist(),
        "model_b": lookup[encoded.model_b].tolist(),
        "judge": lookup[encoded.judge].tolist(),
    }
    # Constants are SQL literals: bound once per statement, not once per row. They are
    # integers we computed and a timestamp we formatted, never user text.
    literals: dict[str, str] = {"study_id": str(int(study_id)), "created_at": f"'{_now()}'"}
    if import_id is not None:
        literals["import_id"] = str(int(import_id))
    filled = set()
    for name, values in (("criterion", lookup[encoded.criterion]), ("turn", encoded.turn), ("round", encoded.round),
                         ("vote", encoded.vote), ("valid", encoded.valid)):
        if name != "valid" and (values != 0).any():
            filled.add(name)
        if (values == values[0]).all():
            if values[0] != 0 or name == "valid":
                literals[name] = str(int(values[0]))
        else:
            columns[name] = values.tolist()
    winner = encoded.winner
    if (winner == winner[0]).all() and winner[0] >= 0:
        literals["winner"] = str(int(winner[0]))
    elif (winner >= 0).all():
        columns["winner"] = winner.tolist()
    else:
        columns["winner"] = [None if w < 0 else w for w in winner.tolist()]
    if not np.isnan(encoded.p_a).all():
        columns["p_a"] = [None if p != p else p for p in encoded.p_a.tolist()]
        filled.add("p_a")
    if encoded.rationale is not None:
        columns["rationale"] = encoded.rationale
        filled.add("rationale")
    if encoded.raw is not None:
        columns["raw"] = encoded.raw
        filled.add("raw")
    if run_id is not None:
        columns["run_id"] = [run_id] * n
    names = list(literals) + list(columns)
    sql = (f"INSERT OR IGNORE INTO verdicts ({', '.join(names)}) "
           f"VALUES ({', '.join(list(literals.values()) + ['?'] * len(columns))})")
    before = tx.total_changes
    tx.executemany(sql, zip(*columns.values()))
    added = tx.total_changes - before
    if added < n:  # some keys were there already: identical verdicts are fine, others are refused
        _refuse_conflicts(tx, study_id, encoded, lookup)
    if added and filled:
        tx.executemany("INSERT OR IGNORE INTO verdict_columns (study_id, name) VALUES (?, ?)",
                       [(study_id, name) for name in sorted(filled)])
    return WriteCounts(added, n - added)


_KEY_FIELDS = ("question_id", "model_a", "model_b", "judge", "criterion", "turn", "round", "vote")
_VERDICT_FIELDS = ("winner", "p_a", "valid", "rationale", "raw")
_MAX_VOTE = 1_000_000  # the importers' bound (peercore.io.rules), for frames written directly too


def _refuse_conflicts(tx: sqlite3.Connection, study_id: int, encoded: _Encoded, lookup: np.ndarray) -> None:
    """Raise :class:`VerdictConflict` for the first row whose key holds another verdict.

    Runs only when an insert skipped rows (so a first import of a million new rows pays
    nothing). The incoming rows go to a temporary table and are joined with the stored
    ones on the natural key (the UNIQUE index); a row matches when winner, p_a (to
    1e-12), validity, rationale and raw text are the same. A key repeated within the
    incoming rows is compared with its first occurrence, which is the stored one.
    """
    n = encoded.n
    tx.execute("CREATE TEMP TABLE IF NOT EXISTS _incoming (row INTEGER, question_id TEXT, model_a INTEGER, "
               "model_b INTEGER, judge INTEGER, criterion INTEGER, turn INTEGER, round INTEGER, vote INTEGER, "
               "winner INTEGER, p_a REAL, valid INTEGER, rationale TEXT, raw TEXT)")
    tx.execute("DELETE FROM _incoming")
    winner = [None if w < 0 else w for w in encoded.winner.tolist()]
    p_a = [None if p != p else p for p in encoded.p_a.tolist()]
    rationale = encoded.rationale if encoded.rationale is not None else [None] * n
    raw = encoded.raw if encoded.raw is not None else [None] * n
    tx.executemany(
        "INSERT INTO _incoming VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        zip(range(n), encoded.question_id, lookup[encoded.model_a].tolist(), lookup[encoded.model_b].tolist(),
            lookup[encoded.judge].tolist(), lookup[encoded.criterion].tolist(), encoded.turn.tolist(),
            encoded.round.tolist(), encoded.vote.tolist(), winner, p_a, encoded.valid.tolist(), rationale, raw))
    found = tx.execute(
        "SELECT i.row, v.winner, v.p_a, v.valid, v.rationale, v.raw FROM _incoming i JOIN verdicts v "
        "ON v.study_id = ? AND v.question_id = i.question_id AND v.model_a = i.model_a AND v.model_b = i.model_b "
        "AND v.judge = i.judge AND v.criterion = i.criterion AND v.turn = i.turn AND v.round = i.round "
        "AND v.vote = i.vote "
        "WHERE NOT (v.winner IS i.winner AND v.valid = i.valid AND v.rationale IS i.rationale AND v.raw IS i.raw "
        "AND (v.p_a IS i.p_a OR ABS(v.p_a - i.p_a) <= 1e-12)) ORDER BY i.row LIMIT 1", (study_id,)).fetchone()
    tx.execute("DELETE FROM _incoming")
    if found is None:
        return
    row = int(found[0])
    names = dict(tx.execute("SELECT id, text FROM labels WHERE study_id = ?", (study_id,)).fetchall())
    key = {"question_id": encoded.question_id[row], "model_a": names.get(int(lookup[encoded.model_a[row]])),
           "model_b": names.get(int(lookup[encoded.model_b[row]])), "judge": names.get(int(lookup[encoded.judge[row]])),
           "criterion": names.get(int(lookup[encoded.criterion[row]])) if lookup[encoded.criterion[row]] else None,
           "turn": int(encoded.turn[row]) or None, "round": int(encoded.round[row]) or None,
           "vote": int(encoded.vote[row])}
    stored = {"winner": None if found[1] is None else VERDICTS[int(found[1])], "p_a": found[2], "valid": found[3],
              "rationale": found[4], "raw": found[5]}
    incoming = {"winner": None if winner[row] is None else VERDICTS[winner[row]], "p_a": p_a[row],
                "valid": int(encoded.valid[row]), "rationale": rationale[row], "raw": raw[row]}
    differs = [f for f in _VERDICT_FIELDS if not _same(stored[f], incoming[f])]
    what = "; ".join(f"{f} {_brief(stored[f])} stored, {_brief(incoming[f])} in this row" for f in differs)
    where = ", ".join(f"{f} {key[f]!r}" for f in _KEY_FIELDS if key[f] is not None)
    raise VerdictConflict(
        f"another verdict is already stored for ({where}): {what}; a judge's second verdict on the same key "
        "needs its own vote index (column 'vote') or question id", key=key, row=row, stored=stored, incoming=incoming)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-12
    return a == b


def _brief(value) -> str:
    text = "empty" if value is None else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ------------------------------------------------------------- decoding judgments


@dataclass
class _Labels:
    """A study's label table: code -> name (Arrow array indexed by code), name -> code."""

    texts: pa.Array
    code: dict[str, int]

    @classmethod
    def from_rows(cls, rows: list[tuple[int, str]]) -> "_Labels":
        size = max((r[0] for r in rows), default=0) + 1
        texts: list[str | None] = [None] * size
        for code, text in rows:
            texts[code] = text
        return cls(pa.array(texts, pa.large_string()), {text: code for code, text in rows})


def _decode(values: dict[str, np.ndarray], labels: _Labels, n: int) -> pd.DataFrame:
    """Canonical judgment frame from fetched object columns (no re-validation: our own rows)."""

    def names(column: str):
        return pd.array(labels.texts.take(pa.array(values[column].astype(np.int64))), dtype=_TEXT)

    def text(column: str):
        if column not in values:
            return pd.array(pa.nulls(n, pa.large_string()), dtype=_TEXT)
        return pd.array(pa.array(values[column], pa.large_string(), from_pandas=True), dtype=_TEXT)

    def whole(column: str) -> pd.arrays.IntegerArray:
        if column not in values:
            return pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))
        numbers = values[column].astype(np.int64)
        return pd.arrays.IntegerArray(numbers, numbers == 0)  # 0 is "not given" in the store

    stored = values["winner"]
    missing = pd.isna(stored)
    codes = pa.array(np.where(missing, 0, stored).astype(np.int64), mask=missing if missing.any() else None)
    winner = pd.array(_WINNER_TEXT.take(codes), dtype=_TEXT)
    if "criterion" in values:
        criterion = pd.array(labels.texts.take(pa.array(values["criterion"].astype(np.int64))), dtype=_TEXT)
    else:
        criterion = text("criterion")
    p_a = pd.Series(values["p_a"], dtype=object).astype(float).to_numpy() if "p_a" in values else np.full(n, np.nan)
    return pd.DataFrame({
        "question_id": text("question_id"),
        "model_a": names("model_a"),
        "model_b": names("model_b"),
        "judge": names("judge"),
        "winner": winner,
        "p_a": p_a,
        "criterion": criterion,  # code 0 (not given) is a null label
        "turn": whole("turn"),
        "round": whole("round"),
        "rationale": text("rationale"),
    })
