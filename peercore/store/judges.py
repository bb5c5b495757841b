"""Judges (names, kinds, identities): :class:`Judges`, the repository ``store.judges`` of :class:`peercore.store.Store`."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable, Mapping

import pandas as pd

from peercore import db as _db
from peercore.errors import JudgeConflict
from peercore.judges import base_name, canonical_identity, describe_differences, variant_name
from peercore.judges import differences as judge_differences
from peercore.judges import fingerprint as judge_fingerprint
from peercore.store.core import JUDGE_KINDS, Repository, scrub_secrets, WriteCounts, _now


class Judges(Repository):
    """Judges."""

    # ------------------------------------------------------------------------ judges

    def add(self, study: str, judges: Iterable[Mapping]) -> WriteCounts:
        """Register judges by name (``name`` [, ``kind``, ``model_alias``, ``settings``]), as imports do.

        A name not yet registered is added with origin ``import``; for a registered name,
        a given ``kind`` or ``model_alias`` is updated and the settings are left as they
        are (a run judge's recorded configuration is never rewritten). Runs register
        their judges with :meth:`resolve`.
        """
        sid = self._study_id(study)
        rows = []
        for judge in judges:
            kind = judge.get("kind", "other")
            if kind not in JUDGE_KINDS:
                raise ValueError(f"judge kind must be one of {JUDGE_KINDS}, got {kind!r}")
            rows.append((sid, judge["name"], kind, judge.get("model_alias"),
                         json.dumps(scrub_secrets(dict(judge.get("settings") or {}))), base_name(judge["name"]), _now()))
        with self._store.transaction() as tx:
            existing = self.registered(study)
            tx.executemany(
                "INSERT INTO judges (study_id, name, kind, model_alias, settings, origin, base, created_at) "
                "VALUES (?, ?, ?, ?, ?, 'import', ?, ?) "
                "ON CONFLICT (study_id, name) DO UPDATE SET kind = excluded.kind, "
                "model_alias = COALESCE(excluded.model_alias, judges.model_alias)", rows)
            self._store.studies.bump_revision(tx, sid)
        names = {r[1] for r in rows}
        return WriteCounts(len(names - existing), len(names & existing))

    def set(self, study: str, name: str, *, kind: str, model_alias: str | None) -> None:
        """Set a judge's kind and contestant alias (None: not a contestant); nothing else changes."""
        if kind not in JUDGE_KINDS:
            raise ValueError(f"judge kind must be one of {JUDGE_KINDS}, got {kind!r}")
        sid = self._study_id(study)
        with self._store.transaction() as tx:
            tx.execute(
                "INSERT INTO judges (study_id, name, kind, model_alias, origin, base, created_at) "
                "VALUES (?, ?, ?, ?, 'import', ?, ?) ON CONFLICT (study_id, name) DO UPDATE SET kind = excluded.kind, "
                "model_alias = excluded.model_alias", (sid, name, kind, model_alias or None, base_name(name), _now()))
            self._store.studies.bump_revision(tx, sid)

    def resolve(self, study: str, requested: str, identity: Mapping, *, explicit: bool = False,
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
        sid = self._study_id(study)
        print_ = judge_fingerprint(identity)
        # Looking needs no write lock (estimates run while another process writes).
        with (self._store.transaction() if register else contextlib.nullcontext(self._store.connect())) as tx:
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
                self._store.studies.bump_revision(tx, sid)
            return name

    def _judge_names(self, tx: sqlite3.Connection, study_id: int) -> set[str]:
        """Every judge name of a study: registered or used in a verdict."""
        names = {r[0] for r in tx.execute("SELECT name FROM judges WHERE study_id = ?", (study_id,))}
        names |= {r[0] for r in tx.execute(
            "SELECT text FROM labels WHERE study_id = ?1 AND id IN (SELECT DISTINCT judge FROM verdicts "
            "WHERE study_id = ?1)", (study_id,))}
        return names

    def registered(self, study: str) -> set[str]:
        """Names of the judges registered in the study (with :meth:`add`)."""
        rows = self._store.connect().execute("SELECT name FROM judges WHERE study_id = ?", (self._study_id(study),))
        return {r[0] for r in rows}

    def run_judges(self, study: str) -> set[str]:
        """Names of the judges PeerBoard's runs registered (origin ``run``)."""
        rows = self._store.connect().execute("SELECT name FROM judges WHERE study_id = ? AND origin = 'run'",
                                             (self._study_id(study),))
        return {r[0] for r in rows}

    def table(self, study: str) -> pd.DataFrame:
        """Every judge that has verdicts or is registered.

        Columns: ``name, kind, model_alias, n_judgments`` (valid verdicts), ``n_invalid``,
        ``origin`` (``import``, ``run`` or ``derived``), ``base`` (the name without a
        variant suffix), ``settings`` (dict: a run judge's configuration).
        """
        sid = self._study_id(study)
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
            self._store.connect(), params=(sid,),
        )
        frame["n_judgments"] = frame["n_judgments"].fillna(0).astype(int)
        frame["n_invalid"] = frame["n_invalid"].fillna(0).astype(int)
        frame["base"] = frame["name"].map(base_name)
        frame["settings"] = frame["settings"].map(json.loads)
        return frame

    def registry(self, study: str) -> pd.DataFrame:
        """The judges registered in the study: ``name, kind, model_alias, origin, settings`` (dict), by name.

        Only the registry (a small table): what judges *did* is counted from the verdicts
        by :meth:`peercore.app.study.Study.judges`.
        """
        rows = self._store.connect().execute(
            "SELECT name, kind, model_alias, origin, settings FROM judges WHERE study_id = ? ORDER BY name",
            (self._study_id(study),)).fetchall()
        frame = pd.DataFrame([tuple(r) for r in rows], columns=["name", "kind", "model_alias", "origin", "settings"])
        frame["settings"] = [json.loads(s or "{}") for s in frame["settings"]]
        return frame

    def aliases(self, study: str) -> dict[str, str]:
        """judge -> contestant, for judges registered with a ``model_alias``."""
        rows = self._store.connect().execute(
            "SELECT name, model_alias FROM judges WHERE study_id = ? AND model_alias IS NOT NULL",
            (self._study_id(study),)
        )
        return {r[0]: r[1] for r in rows}
