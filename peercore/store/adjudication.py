"""Debates, turns, adjudication, leases and skips: :class:`Debates`, the repository
``store.debates`` of :class:`peercore.store.Store`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from peercore import db as _db
from peercore.store.core import (DEBATE_STATUSES, DECISIONS, MAX_OVERLAP, QUEUE_KINDS, Repository, StoreError,
                                 VERDICTS, WriteCounts, _now)
from peercore.assignment import DecisionRefused, stamp


class Debates(Repository):
    """Debates and their adjudication."""

    # ----------------------------------------------------------------------- debates

    def add(self, study: str, debate: Mapping, turns: Iterable[Mapping], *, run_id: str | None = None) -> bool:
        """Insert one debate (or PRD discussion) with its turns; False if its key exists.

        ``debate`` needs ``debate_key, question_id, model_a, model_b, status`` and may
        give ``kind, criterion, scenario, consensus, n_rounds, metadata``. Each turn needs
        ``round, position, speaker`` and may give ``verdict`` (None when unparsed),
        ``rationale`` and ``raw`` (the unparsed verdict as the source gave it).
        """
        return self.add_many(study, [(debate, turns)], run_id=run_id).added == 1

    def add_many(self, study: str, debates: Iterable[tuple[Mapping, Iterable[Mapping]]], *,
                 run_id: str | None = None) -> WriteCounts:
        """Insert many ``(debate, turns)`` in one transaction (see :meth:`add`)."""
        sid = self._study_id(study)
        added = skipped = 0
        now = _now()
        with self._store.transaction() as tx:
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
                self._store.studies.bump_revision(tx, sid)
        return WriteCounts(added, skipped)

    def study_of(self, debate_id: int) -> str:
        """The name of the study debate ``debate_id`` belongs to (whose roles decide who may adjudicate it).

        Raises
        ------
        StoreError
            If there is no such debate.
        """
        row = self._store.connect().execute("SELECT s.name FROM debates d JOIN studies s ON s.id = d.study_id "
                                            "WHERE d.id = ?", (int(debate_id),)).fetchone()
        if row is None:
            raise StoreError(f"no debate with id {debate_id}")
        return row[0]

    def table(self, study: str, *, status: str | None = None, kind: str | None = None,
              label_requests: bool = True) -> pd.DataFrame:
        """One row per debate: id, debate_key, kind, question_id, model_a, model_b, criterion, scenario, status,
        consensus, n_rounds, metadata (dict), panel (the consensus judge, ``debate:<name>``; '' when unknown).

        ``label_requests=False`` leaves out the label requests (kind ``label_request``: queue items,
        not debates; what the debate tables and statistics read)."""
        sql = ("SELECT id, debate_key, kind, question_id, model_a, model_b, criterion, scenario, status, consensus, "
               "n_rounds, metadata, panel FROM debates WHERE study_id = ?")
        if not label_requests:
            sql += " AND kind <> 'label_request'"
        params: list = [self._study_id(study)]
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        frame = _db.read_sql_query(sql + " ORDER BY id", self._store.connect(), params=params)
        frame["metadata"] = frame["metadata"].map(json.loads)
        return frame

    def turns(self, debate_ids: Iterable[int]) -> pd.DataFrame:
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
                self._store.connect(), params=chunk,
            ))
        return pd.concat(frames, ignore_index=True)

    def add_label_requests(self, study: str, requests: Iterable[Mapping], *, requested_by: str,
                           reason: str) -> WriteCounts:
        """Queue comparisons for people to label: label requests in the adjudication queue.

        A label request is decided like an unresolved debate (same queue, leases, overlap,
        skips and history; :meth:`adjudicate`), shows the two answers without a transcript,
        and each decision is a vote ``adjudicator:<annotator>`` on the comparison (the gold
        rows of :func:`peercore.app.study.gold_judgments`), a label for
        :func:`peercore.app.calibration.calibrated_leaderboard`.

        Parameters
        ----------
        requests : mappings with ``question_id``, ``model_a``, ``model_b`` (the answer shown
            as submission 1 and 2), and optional ``turn`` (default 1), ``criterion`` ('' for
            none) and ``metadata`` (a JSON object kept with the request: e.g. the judge, the
            inclusion probability of active inference).
        requested_by : who or what asked (``peercore calibrate --request``, a user's name).
        reason : one sentence people read on the Adjudication page.

        Returns
        -------
        WriteCounts
            ``added``; ``skipped``: requests for a comparison already requested (in either
            order), which are left as they are.

        Raises
        ------
        ValueError
            If a request names a question the study does not have, the same model twice,
            a model with no answer to the question, or a turn that is not a positive
            integer (nothing is written).
        """
        sid = self._study_id(study)
        connection = self._store.connect()
        rows = []
        for index, request in enumerate(requests):
            question, a, b = str(request["question_id"]), str(request["model_a"]), str(request["model_b"])
            turn, criterion = request.get("turn", 1), str(request.get("criterion") or "")
            if isinstance(turn, bool) or not isinstance(turn, (int, np.integer)) or int(turn) < 1:
                raise ValueError(f"label request {index}: turn must be a positive integer, got {turn!r}")
            if a == b:
                raise ValueError(f"label request {index}: model_a and model_b are both {a!r}")
            if connection.execute("SELECT 1 FROM questions WHERE study_id = ? AND question_id = ?",
                                  (sid, question)).fetchone() is None:
                raise ValueError(f"label request {index}: question_id {question!r} is not in study {study!r}")
            for model in (a, b):
                if connection.execute("SELECT 1 FROM answers WHERE study_id = ? AND question_id = ? AND model = ?",
                                      (sid, question, model)).fetchone() is None:
                    raise ValueError(f"label request {index}: {model!r} has no answer to question {question!r}")
            first, second = sorted((a, b))
            metadata = {**dict(request.get("metadata") or {}), "turn": int(turn), "requested_by": requested_by,
                        "reason": reason}
            rows.append(({"debate_key": f"label:{question}|{int(turn)}|{criterion}|{first}|{second}",
                          "kind": "label_request", "question_id": question, "model_a": a, "model_b": b,
                          "criterion": criterion, "status": "unresolved", "n_rounds": 0, "metadata": metadata,
                          "panel": ""}, []))
        return self.add_many(study, rows)

    def queue(self, study: str, *, annotator: str | None = None, overlap: int = 0) -> pd.DataFrame:
        """Unresolved debates and label requests (kinds :data:`QUEUE_KINDS`; never PRD discussions)
        still waiting for a decision.

        Parameters
        ----------
        annotator : only debates this annotator has not decided; None: only debates nobody
            decided (what ``overlap`` then means is ignored).
        overlap : with ``annotator``, only debates with fewer than ``overlap`` decisions by
            anyone (the study's :meth:`Store.studies.table.settings` ``overlap``); 0: no limit.

        Returns
        -------
        DataFrame ``id, debate_key, kind, question_id, model_a, model_b, criterion, scenario,
        n_rounds, decisions`` (how many annotators decided it so far), ``leased`` (live
        leases on it by annotators other than ``annotator``, see :meth:`claim`), in
        debate order.
        """

        sid = self._study_id(study)
        overlap = _overlap(overlap)
        count = "(SELECT COUNT(*) FROM adjudications a WHERE a.debate_id = d.id)"
        leased = ("(SELECT COUNT(*) FROM adjudication_leases l WHERE l.debate_id = d.id AND l.annotator <> ? "
                  "AND l.expires_at > ?)")
        params: list = [annotator or "", stamp(self._store.clock()), sid]
        if annotator is None:
            where = f"{count} = 0"
        else:
            where = "NOT EXISTS (SELECT 1 FROM adjudications a WHERE a.debate_id = d.id AND a.annotator = ?)"
            params.append(annotator)
            if overlap:
                where += f" AND {count} < ?"
                params.append(overlap)
        return _db.read_sql_query(
            "SELECT d.id, d.debate_key, d.kind, d.question_id, d.model_a, d.model_b, d.criterion, d.scenario, "
            f"d.n_rounds, {count} AS decisions, {leased} AS leased "
            f"FROM debates d WHERE d.study_id = ? AND {_IN_QUEUE} "
            f"AND d.status = 'unresolved' AND {where} "
            "ORDER BY d.id",
            self._store.connect(), params=params,
        )

    def claim(self, study: str, annotator: str, *, lease_seconds: float, scenario: str | None = None,
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
        now : seconds since the epoch (default: the database's clock, :meth:`clock`).

        Returns
        -------
        dict or None
            ``debate_id, debate_key, question_id, model_a, model_b, criterion, scenario,
            n_rounds, decisions, expires_at, renewed, kind`` (``debate`` or ``label_request``),
            ``metadata`` (dict); None when no debate is offerable
            (the annotator's leases in the study are then given up).
        """

        sid = self._study_id(study)
        now = self._store.clock() if now is None else float(now)
        at, until = stamp(now), stamp(now + float(lease_seconds))
        select = ("SELECT d.id, d.debate_key, d.question_id, d.model_a, d.model_b, d.criterion, d.scenario, "
                  "d.n_rounds, (SELECT COUNT(*) FROM adjudications a WHERE a.debate_id = d.id) AS decisions, "
                  "d.kind, d.metadata FROM debates d WHERE ")
        # Optimistic: the walk over the study's debates (it grows with the debates decided
        # ahead) is a plain read, which WAL lets run beside any writer; the lease is then
        # taken in one short write transaction (BEGIN IMMEDIATE: SQLite's single writer)
        # that re-checks the chosen debate with the same predicate, so two claims never both
        # get the last place on a debate. (PostgreSQL: BEGIN IMMEDIATE is BEGIN plus the
        # database's one advisory write lock, peercore.db, so the same re-check holds there;
        # row locks with SKIP LOCKED would let claims run side by side, a later refinement.)
        connection = self._store.connect()
        overlap = int(connection.execute("SELECT overlap FROM studies WHERE id = ?", (sid,)).fetchone()[0])
        where, params = _offerable_sql(sid, annotator, overlap=overlap, at=at, scenario=scenario, criterion=criterion)
        candidates = [int(r[0]) for r in connection.execute(
            f"SELECT d.id FROM debates d WHERE {where} ORDER BY d.id LIMIT {_CLAIM_CANDIDATES}", params)]
        of_study = _of_study("adjudication_leases")
        with self._store.transaction() as tx:
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
                "decisions": int(row[8]), "expires_at": until, "renewed": renewed, "kind": row[9],
                "metadata": json.loads(row[10])}

    def leases(self, study: str, *, now: float | None = None) -> pd.DataFrame:
        """The study's leases: debate_id, annotator, expires_at, created_at, live (False once expired)."""

        frame = _db.read_sql_query(
            "SELECT l.debate_id, l.annotator, l.expires_at, l.created_at FROM adjudication_leases l "
            "JOIN debates d ON d.id = l.debate_id WHERE d.study_id = ? ORDER BY l.debate_id, l.annotator",
            self._store.connect(), params=(self._study_id(study),))
        return frame.assign(live=frame["expires_at"] > stamp(self._store.clock() if now is None else float(now)))

    def release_leases(self, study: str, annotator: str, *, debate_id: int | None = None) -> int:
        """Give up ``annotator``'s leases in ``study`` (or only on ``debate_id``); returns how many."""
        return self._delete_annotator_rows("adjudication_leases", study, annotator, debate_id=debate_id)

    def adjudicate(self, debate_id: int, annotator: str, verdict: str, *, note: str = "",
                   token: str | None = None, blind: bool | None = None, now: float | None = None) -> bool:
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
        annotator's skip of that debate and ends their lease on it (:meth:`claim`).

        The rule is the page's, for every caller (:func:`peercore.assignment.offerable`):
        the debate must be an unresolved debate or a label request (:data:`QUEUE_KINDS`) and, unless the annotator
        decided it already (then this replaces their decision), with the study's overlap
        N > 0 its decisions plus the live leases of *other* annotators at ``now`` (default
        :meth:`clock`) must be fewer than N.

        Raises
        ------
        peercore.assignment.DecisionRefused
            If the debate is agreed, imported adjudicated or a PRD discussion (nothing is
            written), or its overlap is filled by others' decisions and live leases (a
            decision made after the annotator's lease ran out and others took it, or on a
            debate they never took); the annotator's lease on it ends, nothing else changes.
        """
        if verdict not in DECISIONS:
            raise ValueError(f"verdict must be one of {DECISIONS}, got {verdict!r}")
        if not annotator or not annotator.strip():
            raise ValueError("annotator name is empty")

        both_bad = int(verdict == "both_bad")
        stored = "tie" if both_bad else verdict
        blind_flag = None if blind is None else int(bool(blind))
        at = stamp(self._store.clock() if now is None else float(now))
        refused = None
        with self._store.transaction() as tx:
            row = tx.execute("SELECT d.study_id, s.overlap, d.kind, d.status, d.consensus FROM debates d "
                             "JOIN studies s ON s.id = d.study_id WHERE d.id = ?", (int(debate_id),)).fetchone()
            if row is None:
                raise StoreError(f"no debate with id {debate_id}")
            overlap, kind, status = int(row[1]), row[2], row[3]
            if kind not in QUEUE_KINDS or status != "unresolved":  # never offered: nothing to write
                raise DecisionRefused(int(debate_id), annotator, overlap=overlap, deciders=[], status=status,
                                      kind=kind, consensus=row[4])
            existed = tx.execute(
                "SELECT verdict, both_bad FROM adjudications WHERE debate_id = ? AND annotator = ?",
                (int(debate_id), annotator)).fetchone()
            # The annotator's lease on the debate ends with their decision (stored or refused).
            tx.execute("DELETE FROM adjudication_leases WHERE debate_id = ? AND annotator = ?",
                       (int(debate_id), annotator))
            if existed is None and overlap:
                deciders = [r[0] for r in tx.execute(
                    "SELECT annotator FROM adjudications WHERE debate_id = ? ORDER BY id", (int(debate_id),))]
                holders = [r[0] for r in tx.execute(
                    "SELECT annotator FROM adjudication_leases WHERE debate_id = ? AND annotator <> ? "
                    "AND expires_at > ? ORDER BY expires_at, annotator", (int(debate_id), annotator, at))]
                if len(deciders) + len(holders) >= overlap:  # full: others decided or hold every place
                    refused = DecisionRefused(int(debate_id), annotator, overlap=overlap, deciders=deciders,
                                              holders=holders)
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
                before = None if existed is None else _decision(existed[0], existed[1])
                if before != verdict:  # a first decision, or a changed one (a repeated click is no change)
                    _append_history(tx, int(debate_id), annotator, changed_by=annotator, before=before,
                                    after=verdict, note=note)
                self._store.studies.bump_revision(tx, row[0])
        if refused is not None:  # raised after COMMIT: the lease is given up, nothing else changed
            raise refused
        return existed is None

    def undo_adjudication(self, debate_id: int, annotator: str, *, token: str | None = None) -> bool:
        """Remove ``annotator``'s decision on a debate; True if there was one.

        With ``token``, only the decision made with that token is removed: if the same
        annotator decided the debate again elsewhere (another tab), that later decision
        stays and False is returned.
        """
        with self._store.transaction() as tx:
            row = tx.execute("SELECT study_id FROM debates WHERE id = ?", (int(debate_id),)).fetchone()
            where, params = "debate_id = ? AND annotator = ?", [int(debate_id), annotator]
            if token is not None:
                where, params = where + " AND token = ?", params + [token]
            current = tx.execute(f"SELECT verdict, both_bad FROM adjudications WHERE {where}", params).fetchone()
            cursor = tx.execute(f"DELETE FROM adjudications WHERE {where}", params)
            if current is not None and cursor.rowcount == 1:
                _append_history(tx, int(debate_id), annotator, changed_by=annotator,
                                before=_decision(current[0], current[1]), after=None, reason="undone")
            if row is not None:
                self._store.studies.bump_revision(tx, row[0])
            return cursor.rowcount == 1

    def edit_adjudication(self, debate_id: int, annotator: str, decision: str, *, reason: str,
                          changed_by: str | None = None, note: str | None = None) -> bool:
        """Change ``annotator``'s stored decision on a debate, any one of theirs, with a reason.

        The decision row is updated in place (so the gold set, alpha and the agreement,
        which read :meth:`adjudications`, use the new decision at once) and the change is
        appended to the history (:meth:`decision_history`): who changed it, when, the
        decision before and after, the reason. A decision may be changed whatever came
        after it; the debate's overlap is not checked again (the decision already counts).

        Parameters
        ----------
        decision : one of :data:`DECISIONS` (``both_bad`` is stored as a flagged tie).
        reason : why it changes (required: the history says why each decision moved).
        changed_by : who made the change (default ``annotator``).
        note : the decision's new note (None keeps the note it had).

        Returns
        -------
        bool
            True if the decision changed; False when it already was ``decision`` (nothing written).

        Raises
        ------
        ValueError
            If ``decision`` is not one of :data:`DECISIONS` or ``reason`` is empty.
        StoreError
            If ``annotator`` has no decision on the debate.
        """
        if decision not in DECISIONS:
            raise ValueError(f"decision must be one of {DECISIONS}, got {decision!r}")
        reason = (reason or "").strip()
        if not reason:
            raise ValueError("a changed decision needs a reason")
        with self._store.transaction() as tx:
            current = tx.execute(
                "SELECT a.verdict, a.both_bad, a.note, d.study_id FROM adjudications a JOIN debates d "
                "ON d.id = a.debate_id WHERE a.debate_id = ? AND a.annotator = ?",
                (int(debate_id), annotator)).fetchone()
            if current is None:
                raise StoreError(f"{annotator} has no decision on debate #{int(debate_id)} to change")
            before = _decision(current[0], current[1])
            if before == decision:
                return False
            both_bad = int(decision == "both_bad")
            new_note = current[2] if note is None else note
            tx.execute("UPDATE adjudications SET verdict = ?, both_bad = ?, note = ?, created_at = ?, token = NULL "
                       "WHERE debate_id = ? AND annotator = ?",
                       ("tie" if both_bad else decision, both_bad, new_note, _now(), int(debate_id), annotator))
            _append_history(tx, int(debate_id), annotator, changed_by=changed_by or annotator, before=before,
                            after=decision, reason=reason, note=new_note)
            self._store.studies.bump_revision(tx, current[3])
        return True

    def decision_history(self, study: str, *, annotator: str | None = None) -> pd.DataFrame:
        """Every change of a decision in ``study`` (of ``annotator``'s decisions only, if given), oldest first.

        Returns
        -------
        DataFrame ``id, debate_id, question_id, annotator, changed_by, at, before, after,
        reason, note``: ``before`` is None for a first decision, ``after`` None for an undone
        one; decisions are ``model_a``, ``model_b``, ``tie``, ``both_bad``.
        """
        sql = ("SELECT h.id, h.debate_id, d.question_id, h.annotator, h.changed_by, h.at, "
               "h.decision_before AS before, h.decision_after AS after, h.reason, h.note "
               "FROM adjudication_history h JOIN debates d ON d.id = h.debate_id WHERE d.study_id = ?")
        params: list = [self._study_id(study)]
        if annotator is not None:
            sql, params = sql + " AND h.annotator = ?", params + [annotator]
        frame = _db.read_sql_query(sql + " ORDER BY h.id", self._store.connect(), params=params)
        for column in ("before", "after"):
            values = [None if pd.isna(v) else v for v in frame[column]]
            frame[column] = pd.Series(values, index=frame.index, dtype=object)
        return frame

    def adjudications(self, study: str) -> pd.DataFrame:
        """Every decision: debate_id, question_id, model_a, model_b, criterion, scenario, annotator, verdict, note,
        created_at, both_bad (bool; its verdict is ``tie``), blind (True / False / None when not recorded),
        kind (``debate`` or ``label_request``), turn (a label request's turn; <NA> for a debate), decision
        (``verdict``, or ``both_bad``)."""
        frame = _db.read_sql_query(
            "SELECT a.debate_id, d.question_id, d.model_a, d.model_b, d.criterion, d.scenario, a.annotator, a.verdict, "
            "a.note, a.created_at, a.both_bad, a.blind, d.kind, d.metadata FROM adjudications a "
            "JOIN debates d ON d.id = a.debate_id "
            "WHERE d.study_id = ? ORDER BY a.id",
            self._store.connect(), params=(self._study_id(study),),
        )
        frame["both_bad"] = frame["both_bad"].astype(bool)
        frame["decision"] = frame["verdict"].where(~frame["both_bad"], "both_bad")
        frame["blind"] = pd.array([None if pd.isna(v) else bool(v) for v in frame["blind"]], dtype="boolean")
        frame["turn"] = pd.array([json.loads(m).get("turn") for m in frame.pop("metadata")], dtype="Int64")
        return frame

    # ------------------------------------------------------- adjudication settings

    def skip(self, debate_id: int, annotator: str) -> bool:
        """Put a debate aside for ``annotator`` (kept in the store, not in a browser); True if new.

        Skips are no data: they do not change the study's revision.
        """
        if not annotator or not annotator.strip():
            raise ValueError("annotator name is empty")
        with self._store.transaction() as tx:
            if tx.execute("SELECT 1 FROM debates WHERE id = ?", (int(debate_id),)).fetchone() is None:
                raise StoreError(f"no debate with id {debate_id}")
            cursor = tx.execute("INSERT OR IGNORE INTO adjudication_skips (debate_id, annotator, created_at) "
                                "VALUES (?, ?, ?)", (int(debate_id), annotator, _now()))
            return cursor.rowcount == 1

    def skipped(self, study: str, annotator: str) -> list[int]:
        """Ids of the debates of ``study`` that ``annotator`` skipped, oldest skip first."""
        rows = self._store.connect().execute(
            "SELECT s.debate_id FROM adjudication_skips s JOIN debates d ON d.id = s.debate_id "
            "WHERE d.study_id = ? AND s.annotator = ? ORDER BY s.created_at, s.debate_id",
            (self._study_id(study), annotator)).fetchall()
        return [int(r[0]) for r in rows]

    def clear_skips(self, study: str, annotator: str, *, debate_id: int | None = None) -> int:
        """Bring ``annotator``'s skipped debates of ``study`` (or just ``debate_id``) back; returns how many."""
        return self._delete_annotator_rows("adjudication_skips", study, annotator, debate_id=debate_id)

    def _delete_annotator_rows(self, table: str, study: str, annotator: str, *, debate_id: int | None) -> int:
        """Delete ``annotator``'s rows of a per-debate ``table`` in ``study`` (or only on ``debate_id``)."""
        sql = f"DELETE FROM {table} WHERE annotator = ? AND {_of_study(table)}"
        params = [annotator, self._study_id(study)]
        if debate_id is not None:
            sql, params = sql + " AND debate_id = ?", params + [int(debate_id)]
        with self._store.transaction() as tx:
            return tx.execute(sql, params).rowcount


def _decision(verdict: str, both_bad) -> str:
    """A stored decision's name: its ``verdict``, or ``both_bad`` for a tie flagged so."""
    return "both_bad" if int(both_bad) else verdict


def _append_history(tx, debate_id: int, annotator: str, *, changed_by: str, before: str | None,
                    after: str | None, reason: str = "", note: str = "") -> None:
    """Append one change of ``annotator``'s decision on ``debate_id`` to ``adjudication_history``."""
    tx.execute("INSERT INTO adjudication_history (debate_id, annotator, changed_by, at, decision_before, "
               "decision_after, reason, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               (debate_id, annotator, changed_by, _now(), before, after, reason, note or ""))


def _of_study(table: str) -> str:
    """``table``'s rows whose debate belongs to the study given as the next parameter.

    EXISTS on each row of ``table`` (leases and skips are few), never an IN-list of the
    study's debates (built on every claim: 3 ms at 20,000 debates).
    """
    return f"EXISTS (SELECT 1 FROM debates x WHERE x.id = {table}.debate_id AND x.study_id = ?)"


# The queue's kinds as SQL over ``debates d`` (constants, not data).
_IN_QUEUE = "d.kind IN ({})".format(", ".join(f"'{kind}'" for kind in QUEUE_KINDS))


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

    Unresolved debates and label requests (:data:`QUEUE_KINDS`) that the annotator neither decided nor skipped
    and, with an overlap N > 0, whose decisions plus live leases of others are fewer than
    N (:func:`peercore.assignment.offerable`). Terms come in the order that drops most
    debates soonest (SQLite tests them as written): with an overlap, the full ones first
    (half the time of a 20,000-debate walk).
    """
    where, params = f"d.study_id = ? AND {_IN_QUEUE} AND d.status = 'unresolved'", [study_id]
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
