"""Human and judge scores: :class:`Scores`, the repository ``store.scores`` of :class:`peercore.store.Store`."""

from __future__ import annotations

import json
from collections.abc import Iterable

import numpy as np
import pandas as pd

from peercore import db as _db
from peercore.errors import JudgmentError
from peercore.store.core import Repository, ScoreConflict, WriteCounts, _now, _require, _text_or


class Scores(Repository):
    """Human ratings and judges' scores."""

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
        sid = self._study_id(study)
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
        with self._store.transaction() as tx:
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
                self._store.studies.bump_revision(tx, sid)
        return WriteCounts(len(rows), len(keys) - len(rows))

    def human_scores(self, study: str, *, attribute: str | None = None) -> pd.DataFrame:
        """``question_id, model, attribute, value`` in insertion order (one attribute when given)."""
        where, params = "study_id = ?", [self._study_id(study)]
        if attribute is not None:
            where += " AND attribute = ?"
            params.append(attribute)
        frame = _db.read_sql_query(f"SELECT question_id, model, attribute, value FROM human_scores WHERE {where} "
                                  "ORDER BY rowid", self._store.connect(), params=params)
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
        sid = self._study_id(study)
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
        with self._store.transaction() as tx:
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
                self._store.studies.bump_revision(tx, sid)
        return WriteCounts(len(rows), n - len(rows))

    def judge_scores(self, study: str, *, judges: Iterable[str] | None = None, attribute: str | None = None,
                     include_invalid: bool = False) -> pd.DataFrame:
        """Judges' absolute scores in insertion order.

        Columns: ``question_id, model, judge, attribute, vote, score, expected, value``
        (``expected`` when given, else ``score``: what rankings use),
        ``distribution`` (dict or None), ``valid``, ``rationale``, ``raw``, ``run_id``.
        Unreadable replies (``valid = 0``) only with ``include_invalid``.
        """
        where, params = "study_id = ?", [self._study_id(study)]
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
            self._store.connect(), params=params)
        frame["distribution"] = frame["distribution"].map(lambda d: json.loads(d) if isinstance(d, str) else None)
        return frame.astype({"question_id": "str", "model": "str", "judge": "str", "attribute": "str",
                             "score": float, "expected": float, "value": float})

    def score_judges(self, study: str) -> pd.DataFrame:
        """One row per (judge, attribute) with scores: ``judge, attribute, n_scores, n_invalid``."""
        return _db.read_sql_query(
            "SELECT judge, attribute, SUM(valid) AS n_scores, SUM(1 - valid) AS n_invalid FROM judge_scores "
            "WHERE study_id = ? GROUP BY judge, attribute ORDER BY judge, attribute", self._store.connect(),
            params=(self._study_id(study),))


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
