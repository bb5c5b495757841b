"""Studies, imports and study settings: :class:`Studies`, the repository ``store.studies`` of :class:`peercore.store.Store`."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping

import numpy as np
import pandas as pd

from peercore import db as _db
from peercore.io.rules import describe_character, invisible_character, quote
from peercore.redaction import looks_like_key, mask_urls
from peercore.store.adjudication import _overlap
from peercore.store.core import Repository, scrub_secrets, StoreError, WriteCounts, _now

# A study's name is a title shown on every page and part of the file names of downloads and
# exports: one line, no invisible character, no path separator, at most this long.
MAX_STUDY_NAME = 200


def study_name_problem(name: object) -> str | None:
    """What is wrong with ``name`` as a new study's name (one sentence), or None.

    Refused: a name that is not text or is empty, spaces at its start or end (``' prd'``
    would be another study than ``'prd'``), more than :data:`MAX_STUDY_NAME` characters,
    a line break or another invisible character (:data:`peercore.io.rules.INVISIBLE`), and
    a name that reads as a path out of a folder: ``.``, ``..``, a ``..`` segment between
    ``/`` or ``\\`` (``../x``), or a leading ``/`` or ``\\``. Other slashes are kept (``a/b
    test``, ``</b>``): file names made from a study name go through
    :func:`peercore.io.formats.file_name_part`.
    """
    if not isinstance(name, str) or not name.strip():
        return f"study name {quote(name)} is empty; give the study a name"
    if len(name) > MAX_STUDY_NAME:
        return (f"study name {quote(name, 40)} is {len(name):,} characters long (limit {MAX_STUDY_NAME}); "
                "a study name is a short title")
    if name != name.strip():
        return f"study name {quote(name)} starts or ends with spaces; use {quote(name.strip())}"
    hidden = invisible_character(name)
    if hidden is not None:
        what = "a line break" if hidden[1] in "\n\r" else f"an invisible character, {describe_character(hidden[1])}"
        return f"study name {quote(name)} holds {what}; a study name is one line of visible text"
    segments = name.replace("\\", "/").split("/")
    if name in (".", "..") or ".." in (s.strip() for s in segments) or name[0] in "/\\":
        return (f"study name {quote(name)} reads as a path out of a folder; a study name may not be . or .., "
                "hold a .. between slashes, or start with / or \\")
    return None


class Studies(Repository):
    """Studies, their imports and settings."""

    # ---------------------------------------------------------------------- studies

    def create(self, name: str, *, description: str = "", source: Mapping | None = None,
               exist_ok: bool = False) -> int:
        """Create a study and return its id.

        Raises
        ------
        StoreError
            If the study exists and ``exist_ok`` is false, or a new study's name is not a
            valid one (:func:`study_name_problem`: empty, over 200 characters, a line break
            or another invisible character, a path).
        """
        if not isinstance(name, str) or not name.strip():
            raise StoreError(study_name_problem(name))
        with self._store.transaction() as tx:
            row = tx.execute("SELECT id FROM studies WHERE name = ?", (name,)).fetchone()
            if row is not None:
                if exist_ok:
                    return int(row[0])
                raise StoreError(f"study {quote(name)} already exists")
            problem = study_name_problem(name)  # only new names: a study made before these rules still opens
            if problem is not None:
                raise StoreError(problem)
            cursor = tx.execute(
                "INSERT INTO studies (name, description, source, created_at) VALUES (?, ?, ?, ?)",
                (name, description, json.dumps(scrub_secrets(dict(source or {}))), _now()),
            )
            return int(cursor.lastrowid)

    def exists(self, name: str) -> bool:
        """Whether study ``name`` exists."""
        return self._store.connect().execute("SELECT 1 FROM studies WHERE name = ?", (name,)).fetchone() is not None

    def study_id(self, name: str) -> int:
        """The id of study ``name``; StoreError naming the studies there are if missing."""
        row = self._store.connect().execute("SELECT id FROM studies WHERE name = ?", (name,)).fetchone()
        if row is None:
            names = [r[0] for r in self._store.connect().execute("SELECT name FROM studies ORDER BY name")]
            more = f", ... ({len(names) - 20} more)" if len(names) > 20 else ""
            shown = ", ".join(quote(n, 60) for n in names[:20]) + more
            raise StoreError(f"no study named {quote(name)} in {self._store.path}; studies are [{shown}]")
        return int(row[0])

    def names(self, study: str) -> set[str]:
        """Every name the study holds: contestants (of verdicts, answers, debates and scores), judges,
        criteria and score attributes, debate speakers (what an import's look-alike warning compares)."""
        sql = ("SELECT text FROM labels WHERE study_id = ?1 UNION SELECT name FROM judges WHERE study_id = ?1 "
               "UNION SELECT model FROM answers WHERE study_id = ?1 "
               "UNION SELECT model_a FROM debates WHERE study_id = ?1 "
               "UNION SELECT model_b FROM debates WHERE study_id = ?1 "
               "UNION SELECT criterion FROM debates WHERE study_id = ?1 "
               "UNION SELECT t.speaker FROM debate_turns t JOIN debates d ON d.id = t.debate_id WHERE d.study_id = ?1 "
               "UNION SELECT model FROM human_scores WHERE study_id = ?1 "
               "UNION SELECT attribute FROM human_scores WHERE study_id = ?1 "
               "UNION SELECT model FROM judge_scores WHERE study_id = ?1 "
               "UNION SELECT judge FROM judge_scores WHERE study_id = ?1 "
               "UNION SELECT attribute FROM judge_scores WHERE study_id = ?1")
        return {r[0] for r in self._store.connect().execute(sql, (self.study_id(study),)) if r[0]}

    def table(self) -> pd.DataFrame:
        """One row per study: name, description, created_at, revision, source (dict)."""
        frame = _db.read_sql_query(
            "SELECT name, description, created_at, revision, source FROM studies ORDER BY name", self._store.connect()
        )
        frame["source"] = frame["source"].map(json.loads)
        return frame

    def source(self, study: str) -> dict:
        row = self._store.connect().execute("SELECT source FROM studies WHERE id = ?",
                                            (self.study_id(study),)).fetchone()
        return json.loads(row[0])

    def update_source(self, study: str, source: Mapping) -> None:
        """Merge ``source`` into the study's provenance record."""
        with self._store.transaction() as tx:
            merged = {**self.source(study), **scrub_secrets(dict(source))}
            tx.execute("UPDATE studies SET source = ? WHERE id = ?", (json.dumps(merged), self.study_id(study)))
            self.bump_revision(tx, self.study_id(study))

    def delete(self, study: str) -> None:
        with self._store.transaction() as tx:
            tx.execute("DELETE FROM studies WHERE id = ?", (self.study_id(study),))

    def revision(self, study: str) -> int:
        """A number that changes whenever the study's data changes (a cache stamp)."""
        row = self._store.connect().execute("SELECT revision FROM studies WHERE name = ?", (study,)).fetchone()
        if row is None:
            self.study_id(study)  # raises with the list of studies
        return int(row[0])

    def record_counts(self, study: str) -> dict[str, int]:
        """How many questions, answers, debates (unresolved), label requests, queue items waiting for a person
        (``open_adjudications``: unresolved debates and label requests nobody decided), runs, imports and scores
        the study holds; its verdicts are counted from the read model (:meth:`peercore.app.study.Study.counts`)."""
        sid = self.study_id(study)
        q = lambda sql: int(self._store.connect().execute(sql, (sid,)).fetchone()[0])  # noqa: E731
        return {
            "questions": q("SELECT COUNT(*) FROM questions WHERE study_id = ?"),
            "answers": q("SELECT COUNT(*) FROM answers WHERE study_id = ?"),
            "debates": q("SELECT COUNT(*) FROM debates WHERE study_id = ? AND kind <> 'label_request'"),
            "unresolved_debates": q("SELECT COUNT(*) FROM debates WHERE study_id = ? AND status = 'unresolved' "
                                    "AND kind <> 'label_request'"),
            "label_requests": q("SELECT COUNT(*) FROM debates WHERE study_id = ? AND kind = 'label_request'"),
            "open_adjudications": q("SELECT COUNT(*) FROM debates d WHERE study_id = ? AND status = 'unresolved' "
                                    "AND NOT EXISTS (SELECT 1 FROM adjudications a WHERE a.debate_id = d.id)"),
            "runs": q("SELECT COUNT(*) FROM runs WHERE study_id = ?"),
            "imports": q("SELECT COUNT(*) FROM imports WHERE study_id = ?"),
            "human_scores": q("SELECT COUNT(*) FROM human_scores WHERE study_id = ?"),
            "judge_scores": q("SELECT COUNT(*) FROM judge_scores WHERE study_id = ? AND valid = 1"),
        }

    def bump_revision(self, tx: sqlite3.Connection, study_id: int) -> None:
        tx.execute("UPDATE studies SET revision = revision + 1 WHERE id = ?", (study_id,))

    # ----------------------------------------------------------------------- imports

    def record_import(self, study: str, *, source: str, format: str, sha256: str | None = None,
                      counts: Mapping | None = None) -> int:
        """Record one import (provenance) and return its id (verdicts point to it).

        With ``counts`` the record is complete at once; otherwise give them later with
        :meth:`set_import_counts` (in the same transaction), once the rows are written.
        """
        sid = self.study_id(study)
        with self._store.transaction() as tx:
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
        with self._store.transaction() as tx:
            row = tx.execute("SELECT i.study_id, s.name, i.source, i.format, i.sha256, i.created_at FROM imports i "
                             "JOIN studies s ON s.id = i.study_id WHERE i.id = ?", (int(import_id),)).fetchone()
            if row is None:
                raise StoreError(f"no import with id {import_id}")
            counts = json.loads(json.dumps(dict(counts), default=_json_default))
            tx.execute("UPDATE imports SET counts = ? WHERE id = ?", (json.dumps(counts, sort_keys=True), int(import_id)))
            record = {"id": int(import_id), "source": row[2], "format": row[3], "sha256": row[4], "counts": counts,
                      "at": row[5]}
            current = self.source(row[1])
            self.update_source(row[1], {"imports": [*current.get("imports", []), record]})

    def imports(self, study: str) -> pd.DataFrame:
        """Every import into the study: id, source, format, sha256, counts (dict), created_at."""
        frame = _db.read_sql_query(
            "SELECT id, source, format, sha256, counts, created_at FROM imports WHERE study_id = ? ORDER BY id",
            self._store.connect(), params=(self.study_id(study),),
        )
        frame["counts"] = frame["counts"].map(json.loads)
        return frame

    # ---------------------------------------------------------------- study settings

    def settings(self, study: str) -> dict:
        """The study's settings: ``rubric`` (the adjudication guidelines, plain text, '' when none),
        ``overlap`` (decisions each debate needs; 0 = every annotator decides every debate) and
        ``reviewers`` (the reviewers configured on the Reviewers & runs page: a list of JSON
        objects, secrets never among them)."""
        row = self._store.connect().execute("SELECT rubric, overlap, reviewers FROM studies WHERE id = ?",
                                            (self.study_id(study),)).fetchone()
        return {"rubric": row[0], "overlap": int(row[1]), "reviewers": json.loads(row[2])}

    def update_settings(self, study: str, *, rubric: str | None = None, overlap: int | None = None,
                        reviewers: list[Mapping] | None = None) -> None:
        """Change the study's ``rubric``, ``overlap`` and/or ``reviewers`` (see :meth:`settings`).

        Settings are no data: they do not change the study's revision.

        Raises
        ------
        ValueError
            If ``rubric`` is not text, ``overlap`` is not an integer in [0, 1000], or
            ``reviewers`` is not a list of JSON objects or has a value shaped like an API key
            (nothing is written); values under secret-looking keys are stored as ``***`` and
            passwords in URLs masked.
        """
        sid = self.study_id(study)
        if rubric is not None and not isinstance(rubric, str):
            raise ValueError(f"rubric must be text, got {type(rubric).__name__}")
        overlap = None if overlap is None else _overlap(overlap)
        stored = None if reviewers is None else _reviewers_json(reviewers)
        with self._store.transaction() as tx:
            if rubric is not None:
                tx.execute("UPDATE studies SET rubric = ? WHERE id = ?", (rubric, sid))
            if overlap is not None:
                tx.execute("UPDATE studies SET overlap = ? WHERE id = ?", (overlap, sid))
            if stored is not None:
                tx.execute("UPDATE studies SET reviewers = ? WHERE id = ?", (stored, sid))


def _reviewers_json(reviewers) -> str:
    """``reviewers`` as the JSON the studies table keeps (see :meth:`Studies.update_settings`):
    values under secret-looking keys replaced by ``***`` (:func:`peercore.store.core.scrub_secrets`, as
    a run's configuration is), passwords in URLs masked; a value shaped like an API key is refused."""
    if not isinstance(reviewers, (list, tuple)) or not all(isinstance(r, Mapping) for r in reviewers):
        raise ValueError(f"reviewers must be a list of JSON objects, got {type(reviewers).__name__}")

    def clean(value):
        if isinstance(value, Mapping):
            return {str(k): clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        if isinstance(value, str):
            if looks_like_key(value.strip()):
                raise ValueError("reviewers must not carry an API key; keep the name of the environment "
                                 "variable that holds it")
            return mask_urls(value)
        return value

    cleaned = clean(scrub_secrets(list(reviewers)))  # a key-shaped value is refused here, by its own message
    try:
        return json.dumps(cleaned, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"reviewers must be JSON: {exc}") from None


def _json_default(value):
    if isinstance(value, WriteCounts):
        return {"added": value.added, "skipped": value.skipped}
    if isinstance(value, np.generic):
        return value.item()
    return str(value)
