"""Who may do what, and who changed what (issue 20): :class:`Access`, the repository ``store.access`` of :class:`peercore.store.Store`.

Two tables (schema version 11, :mod:`peercore.store.schema`):

``roles``
    One row per (study, who): ``who`` is a lower-case e-mail address or a whole domain
    written ``@example.com``; ``role`` is viewer, annotator, editor or owner; a row with
    no study is a global role. :meth:`Access.role_of` resolves one person's role in
    one study: a role in the study overrides a global one, and within each an address
    beats its domain (the most specific rule wins).
``audit_log``
    Append-only: one row per change (who, when, what, in which study, details as JSON).
    The store offers no way to change or remove a row; deleting a study keeps its record
    (the study is named, not referenced).

The rules of who may do what live one layer up (:mod:`peercore.app.access`); this module
only stores and reads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import pandas as pd

from peercore import db as _db
from peercore.store.core import Repository, scrub_secrets, StoreError, _now

__all__ = ["Access", "ROLE_NAMES", "normalise_who"]

#: The roles, weakest first (the order :class:`peercore.app.access.Role` follows).
ROLE_NAMES = ("viewer", "annotator", "editor", "owner")


def normalise_who(who: object) -> str:
    """``who`` as stored: an e-mail address or ``@domain``, stripped and lower-cased.

    Raises
    ------
    ValueError
        If ``who`` is not text, is empty, or is neither ``name@domain`` nor ``@domain``
        (the value is quoted).
    """
    if not isinstance(who, str):
        raise ValueError(f"who must be an e-mail address or '@domain', got {who!r}")
    text = who.strip().lower()
    local, at, domain = text.partition("@")
    if not at or not domain or "@" in domain or "." not in domain or any(c.isspace() for c in text):
        raise ValueError(f"who must be an e-mail address or '@domain' (e.g. '@example.com'), got {who!r}")
    return text


class Access(Repository):
    """Roles and the audit log."""

    # ------------------------------------------------------------------------ roles

    def grant_role(self, who: str, role: str, *, study: str | None = None, granted_by: str) -> None:
        """Give ``who`` (an address or ``@domain``) ``role`` globally or in ``study``, replacing what they had there.

        Parameters
        ----------
        who : ``ann@example.com`` or ``@example.com`` (case and spaces do not matter).
        role : one of :data:`ROLE_NAMES`.
        study : the study, or None for a global role.
        granted_by : who granted it (an address, or e.g. ``configuration``).

        Raises
        ------
        ValueError
            If ``role`` or ``who`` is not valid (the value is quoted).
        StoreError
            If ``study`` does not exist.
        """
        who = normalise_who(who)
        if role not in ROLE_NAMES:
            raise ValueError(f"role must be one of {ROLE_NAMES}, got {role!r}")
        if not isinstance(granted_by, str) or not granted_by.strip():
            raise ValueError(f"granted_by must name who granted the role, got {granted_by!r}")
        with self._store.transaction() as tx:
            if study is None:
                tx.execute("DELETE FROM roles WHERE study_id IS NULL AND who = ?", (who,))
                tx.execute("INSERT INTO roles (who, role, study_id, granted_by, created_at) VALUES (?, ?, NULL, ?, ?)",
                           (who, role, granted_by, _now()))
            else:
                sid = self._study_id(study)
                tx.execute("DELETE FROM roles WHERE study_id = ? AND who = ?", (sid, who))
                tx.execute("INSERT INTO roles (who, role, study_id, granted_by, created_at) VALUES (?, ?, ?, ?, ?)",
                           (who, role, sid, granted_by, _now()))

    def revoke_role(self, who: str, *, study: str | None = None) -> bool:
        """Remove ``who``'s role globally or in ``study``; True if there was one."""
        who = normalise_who(who)
        with self._store.transaction() as tx:
            if study is None:
                cursor = tx.execute("DELETE FROM roles WHERE study_id IS NULL AND who = ?", (who,))
            else:
                cursor = tx.execute("DELETE FROM roles WHERE study_id = ? AND who = ?", (self._study_id(study), who))
            return cursor.rowcount == 1

    def roles(self, study: str | None = None) -> pd.DataFrame:
        """The roles: who, role, study (None for a global role), granted_by, created_at.

        With ``study``, the global roles and that study's; without, every role.
        """
        sql = ("SELECT r.who, r.role, s.name AS study, r.granted_by, r.created_at FROM roles r "
               "LEFT JOIN studies s ON s.id = r.study_id")
        params: list = []
        if study is not None:
            sql += " WHERE r.study_id IS NULL OR r.study_id = ?"
            params.append(self._study_id(study))
        frame = _db.read_sql_query(sql + " ORDER BY r.study_id IS NOT NULL, s.name, r.who", self._store.connect(),
                                   params)
        frame["study"] = frame["study"].astype(object).where(frame["study"].notna(), None)
        return frame

    def role_of(self, who: str, study: str | None = None) -> str | None:
        """``who``'s role in ``study`` (or globally, without one), or None when no rule names them.

        Rules, most specific first: the address in the study, the domain in the study, the
        address globally, the domain globally. A role in the study overrides a global one
        whether it is higher or lower (an owner of everything can be a viewer of one study).
        A study that does not exist has only the global roles.
        """
        try:
            address = normalise_who(who)
        except ValueError:
            return None
        domain = "@" + address.partition("@")[2]
        candidates = [address, domain] if not address.startswith("@") else [address]
        connection = self._store.connect()
        sid = None
        if study is not None:
            row = connection.execute("SELECT id FROM studies WHERE name = ?", (study,)).fetchone()
            sid = None if row is None else int(row[0])
        rows = connection.execute(
            f"SELECT who, role, study_id FROM roles WHERE who IN ({', '.join('?' * len(candidates))}) "
            "AND (study_id IS NULL OR study_id = ?)", (*candidates, sid if sid is not None else -1)).fetchall()
        found = {(r[0], r[2] is not None): r[1] for r in rows}
        for key in [(c, True) for c in candidates] + [(c, False) for c in candidates]:
            if key in found:
                return found[key]
        return None

    # -------------------------------------------------------------------- audit log

    def record_action(self, actor: str, action: str, *, study: str | None = None,
                      details: Mapping | None = None) -> int:
        """Append one record to the audit log (in the caller's transaction, if any); returns its id.

        ``details`` is stored as JSON with secret-looking keys scrubbed
        (:func:`peercore.store.scrub_secrets`). There is no method to change or remove a record.
        """
        if not isinstance(actor, str) or not actor.strip():
            raise ValueError(f"actor must name who acted, got {actor!r}")
        if not isinstance(action, str) or not action.strip():
            raise ValueError(f"action must name what was done, got {action!r}")
        text = json.dumps(scrub_secrets(dict(details or {})), sort_keys=True, default=str)
        with self._store.transaction() as tx:
            # RETURNING, not lastrowid: peercore.db returns ids only for the tables it lists.
            return int(tx.execute("INSERT INTO audit_log (at, actor, action, study, details) VALUES (?, ?, ?, ?, ?) "
                                  "RETURNING id", (_now(), actor, action, study, text)).fetchone()[0])

    def audit_log(self, study: str | None = None) -> pd.DataFrame:
        """The audit records, oldest first: id, at, actor, action, study, details (a dict).

        With ``study``, that study's records only (they outlive the study itself).
        """
        sql, params = "SELECT id, at, actor, action, study, details FROM audit_log", []
        if study is not None:
            sql, params = sql + " WHERE study = ?", [study]
        frame = _db.read_sql_query(sql + " ORDER BY id", self._store.connect(), params)
        frame["details"] = [json.loads(text) for text in frame["details"]]
        frame["study"] = frame["study"].astype(object).where(frame["study"].notna(), None)
        return frame

