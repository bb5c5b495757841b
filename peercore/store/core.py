"""What every part of the store shares: errors, :class:`WriteCounts`, secret scrubbing, the
timestamp format, and :class:`Repository`, the base of each kind of record's repository."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
import pandas as pd

from peercore.assignment import QUEUE_KINDS  # noqa: F401 (what the adjudication queue offers, with the queue's rules)
from peercore.errors import JudgmentError, StoreError  # noqa: F401 (StoreError: re-exported)
from peercore.redaction import is_secret_name as _is_secret_name


VERDICTS = ("model_a", "model_b", "tie")
# An annotator's choices on a debate: a verdict, or "both bad" (stored as a tie, flagged).
DECISIONS = (*VERDICTS, "both_bad")
MAX_OVERLAP = 1000
JUDGE_KINDS = ("llm", "human", "debate", "adjudicator", "vote", "other")
RUN_STATUSES = ("pending", "running", "finished", "failed", "cancelled", "interrupted")
DEBATE_STATUSES = ("agreed", "unresolved", "adjudicated")


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


class Repository:
    """One kind of record of a :class:`peercore.store.Store`: its reads and writes.

    A repository holds only the store it belongs to; it reaches the database through the
    store's public front (``connect``, ``transaction``, ``snapshot``, ``clock``) and other
    kinds of record through their repositories' public methods (``store.studies.study_id``).
    """

    def __init__(self, store) -> None:
        self._store = store

    def _study_id(self, study: str) -> int:
        """The id of study ``study`` (:meth:`Studies.study_id`: a missing study is an error naming the others)."""
        return self._store.studies.study_id(study)


def insert_many(store, study_id: int, sql: str, rows: list[tuple]) -> WriteCounts:
    """Run ``sql`` over ``rows`` in one write transaction; how many rows it added and skipped.

    The study's revision moves on when anything was added (:meth:`Studies.bump_revision`).
    """
    with store.transaction() as tx:
        before = tx.total_changes
        tx.executemany(sql, rows)
        added = tx.total_changes - before
        if added:
            store.studies.bump_revision(tx, study_id)
    return WriteCounts(added, len(rows) - added)


def _require(frame: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} is missing column(s) {missing} (found: {list(frame.columns)})")


def _text_or(value, default):
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return default
    return str(value)
