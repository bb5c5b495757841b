"""The PeerBoard database: studies, answers, judgments, runs, cache, debates, scores, roles.

One database (a SQLite file, the embedded default, or a PostgreSQL schema) holds many
studies. :class:`Store` (:mod:`peercore.store.front`) is the front: it holds the
connections and has ten methods of its own (connections, transactions, snapshots, the
schema, the clock). Records are read and written through one repository per kind, each a
module of its own and testable alone: ``store.studies``, ``store.questions`` (and answers),
``store.judges``, ``store.verdicts``, ``store.runs`` (and paid calls, batches),
``store.debates`` (and adjudication, label requests), ``store.scores``, ``store.access``
(roles, audit log). A repository holds only its store and reaches other kinds of record
through their public methods (every write bumps the study's revision through
``store.studies.bump_revision``); no module outside this package opens a connection.

Properties:

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
  :meth:`Store.judges.resolve`); another configuration of the same model gets its own
  (variant) name, and imports never write under a run judge's name.
- **Provenance**: every import is recorded in ``imports`` (file, format, checksum, counts,
  time) and merged into the study's ``source``.
- **PostgreSQL** too: ``Store("postgresql://...")`` runs the same code through a thin
  dialect layer (:mod:`peercore.db`: psycopg 3, COPY for bulk writes) on the same schema,
  defined once for both engines (:mod:`peercore.store.schema`); ``$PEERBOARD_DB`` and
  ``--db`` take the URL as they take a file.
- **No secrets**: nothing here stores API keys; run configurations are scrubbed of
  keys named like secrets before they are written (:func:`scrub_secrets`).

The database location is ``$PEERBOARD_DB`` if set, else
``$XDG_DATA_HOME/peerboard/peerboard.sqlite`` (``~/.local/share/...``); the CLI's
``--db PATH`` overrides both.

Schema (version 14)
-------------------
=====================  ==========================================================  =============================
table                  one row per                                                 natural key
=====================  ==========================================================  =============================
studies                study; its adjudication rubric and overlap (migration 5),    name
                       the reviewers configured on the page (migration 13)
questions              question (text, category, reference, metadata JSON)         (study, question_id)
answers                model's answer to a question turn                           (study, question_id, model, turn)
judges                 judge: kind, model alias, origin (import / run), base name,   (study, name); a run judge's
                       a run judge's configuration and its fingerprint             fingerprint is unique too
labels                 model / judge / criterion name, integer-coded per study      (study, text); id is the code
verdicts               verdict in the canonical shape (names as label codes)       (study, question_id, model_a,
                                                                                   model_b, judge, criterion, turn,
                                                                                   round, vote)
judgments (view)       the verdicts with names and winners decoded (for SQL users; inserts through it work too)
imports                import of a file or folder (source, format, sha256, counts)  id
runs, run_items        review / debate run and its work items                      id; (run, item_key)
llm_calls              paid LLM call (the cache)                                   cache_key
debates                debate or discussion (status, panel = consensus judge), or   (study, debate_key)
                       a label request for people (kind label_request, mig. 13)
debate_turns           speaker's verdict in a round (0 = initial)                  (debate, round, speaker)
adjudications          human decision on an unresolved debate (both-bad and blind  (debate, annotator)
                       flags, migration 5)
adjudication_skips     debate an annotator put aside                               (debate, annotator)
adjudication_leases    debate an annotator holds until it expires (migration 6)   (debate, annotator)
human_scores           human rating of one candidate on one attribute (NLG          (study, question_id, model,
                       assessment: context = question_id, candidate = model)        attribute)
judge_scores           a judge's absolute score of one candidate (prompt scoring)   (study, question_id, model, judge,
                       with its expected value, distribution and raw reply          attribute, vote)
batches                provider batch of a run: file, batch id, status (mig. 7)    token (the client's, deterministic)
batch_requests         request line of a batch: custom_id -> call and run item     (token, custom_id)
roles                  who may do what: a role for an address or '@domain',       (study, who)
                       globally or in one study (migration 11)
audit_log              who changed what, append-only (migration 11)                id
adjudication_history   one change of an annotator's decision (who, when, before,   id
                       after, reason), append-only (migration 12)
verdict_snapshots      a large study's read model as of one revision, an Arrow IPC  study
                       stream (a cache, never copied; migration 14)
=====================  ==========================================================  =============================

Scores are not verdicts (migration 4): a human rating or an absolute score belongs to
one candidate, not to a pair, so it has tables of its own (:meth:`Store.scores.add_human_scores`,
:meth:`Store.scores.add_judge_scores`); the NLG assessment (:mod:`peercore.nlg`) compares
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

from peercore.store.core import QUEUE_KINDS, Repository, ScoreConflict, StoreError, WriteCounts, scrub_secrets
from peercore.store.front import Store
from peercore.store.schema import SCHEMA_VERSION

__all__ = ["Store", "Repository", "WriteCounts", "StoreError", "ScoreConflict", "scrub_secrets", "SCHEMA_VERSION",
           "QUEUE_KINDS"]
