"""The small exception hierarchy every part of peercore raises.

All of them subclass :class:`ValueError`, so callers that only know the standard
library can still catch bad input the usual way.
"""

from __future__ import annotations

import sys

__all__ = ["PeercoreError", "JudgmentError", "VerdictConflict", "JudgeConflict", "ConvergenceError", "StoreError",
           "AccessDenied", "read_only_refusal"]


class PeercoreError(ValueError):
    """Base class for errors raised by peercore on bad input or failed estimation."""


class StoreError(PeercoreError):
    """The store was asked for something that is not there, or the file is not ours."""


class JudgmentError(PeercoreError):
    """A judgment table (file or DataFrame) is malformed.

    Attributes
    ----------
    source : str or None
        The file name, or ``None`` for an in-memory DataFrame.
    line : int or None
        1-based line of the file holding the offending record (CSV counts the header as
        line 1), when known.
    row : int or None
        0-based position of the offending record among the data rows.
    column : str or None
        The offending column, when one is to blame.
    value : object
        The offending value, quoted in the message.
    """

    def __init__(
        self,
        problem: str,
        *,
        source: str | None = None,
        line: int | None = None,
        row: int | None = None,
        column: str | None = None,
        value: object = None,
    ) -> None:
        self.problem = problem
        self.source = source
        self.line = line
        self.row = row
        self.column = column
        self.value = value
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.source is not None:
            where.append(str(self.source))
        if self.line is not None:
            where.append(f"line {self.line}")
        elif self.row is not None:
            where.append(f"row {self.row}")
        if self.column is not None:
            where.append(f"column '{self.column}'")
        prefix = ", ".join(where)
        return f"{prefix}: {self.problem}" if prefix else self.problem


class VerdictConflict(JudgmentError):
    """A verdict's natural key is already stored with a different verdict.

    The natural key is (study, question_id, model_a, model_b, judge, criterion, turn,
    round, vote). Writing the same verdict again is harmless (it is skipped as already
    stored); writing another verdict under the same key would silently drop one of the
    two, so it is refused.

    Attributes
    ----------
    key : dict
        The key's fields (``question_id``, ``model_a``, ``model_b``, ``judge``,
        ``criterion``, ``turn``, ``round``, ``vote``).
    row : int
        0-based position of the offending row in the frame that was being written.
    stored, incoming : dict
        The stored and the incoming verdict (``winner``, ``p_a``, ``valid``, ``rationale``).
    """

    def __init__(self, problem: str, *, key: dict, row: int, stored: dict, incoming: dict,
                 source: str | None = None, line: int | None = None) -> None:
        self.key = dict(key)
        self.stored = dict(stored)
        self.incoming = dict(incoming)
        super().__init__(problem, source=source, line=line, row=row if line is None else None,
                         column="winner")
        self.row = row


class JudgeConflict(PeercoreError):
    """A judge name is already taken by another configuration (or another origin).

    A judge is its whole configuration (backend, model, base URL, method, template and
    its version, criterion, temperature, samples, max tokens). Raised before any call
    when a run forces a name that a different configuration already holds, and when an
    import would add verdicts under the name of a judge that PeerBoard's runs produced.

    Attributes
    ----------
    name : str
        The judge name asked for.
    differences : dict
        field -> (stored value, requested value), for configurations that differ.
    """

    def __init__(self, message: str, *, name: str, differences: dict | None = None) -> None:
        self.name = name
        self.differences = dict(differences or {})
        super().__init__(message)


class ConvergenceError(PeercoreError):
    """An iterative estimator stopped at its iteration cap without converging.

    Attributes
    ----------
    iterations : int
        How many iterations were run.
    change : float
        The size of the last update, to compare with the tolerance.
    """

    def __init__(self, what: str, *, iterations: int, change: float, tol: float) -> None:
        self.iterations = iterations
        self.change = change
        self.tol = tol
        super().__init__(
            f"{what} did not converge in {iterations} iterations "
            f"(last change {change:.3g} > tol {tol:.3g})"
        )


class AccessDenied(PeercoreError):
    """An action was refused because the person asking lacks the role it needs (issue 20).

    Raised by :func:`peercore.app.access.require` before anything is written: a refused
    action changes nothing and leaves no record.

    Attributes
    ----------
    who : str or None
        The person asking (None for a visitor who has not signed in).
    action : str
        The action's value (e.g. ``import``).
    needed : str
        The role it needs (e.g. ``editor``).
    held : str or None
        The role they have there (None: none).
    study : str or None
        The study (None for a global action such as creating a study).
    """

    def __init__(self, message: str, *, who: str | None, action: str, needed: str, held: str | None,
                 study: str | None) -> None:
        self.who = who
        self.action = action
        self.needed = needed
        self.held = held
        self.study = study
        super().__init__(message)


# SQLSTATE 42501 (insufficient_privilege) and 25006 (read_only_sql_transaction: a standby,
# or default_transaction_read_only = on).
_READ_ONLY_STATES = ("42501", "25006")


def read_only_refusal(exc: BaseException, shown: str) -> str | None:
    """One line saying that the database ``shown`` refused a write for lack of privileges, else None (issue 20).

    For a command run with a PostgreSQL role that may only read (an analyst's): the
    server refuses the first INSERT, UPDATE, DELETE or CREATE with SQLSTATE 42501
    (insufficient privilege) or 25006 (read-only transaction), and the transaction it
    was in rolls back, so nothing was written. ``shown`` must carry no password
    (:func:`peercore.locations.redact_url`); the server's own words are not repeated.
    psycopg is looked at only if it is already imported (a PostgreSQL store opened it).
    """
    psycopg = sys.modules.get("psycopg")
    if psycopg is None:
        return None
    for _ in range(6):  # the exception, or what it was raised from (e.g. a StoreError wrapping the refusal)
        if exc is None:
            return None
        if isinstance(exc, psycopg.Error) and getattr(exc, "sqlstate", None) in _READ_ONLY_STATES:
            break
        exc = exc.__cause__ or exc.__context__
    else:
        return None
    return (f"{shown}: this database role may only read (the server refused a write: insufficient privilege); "
            "nothing was written. Run the command with a role allowed to write (see docs/TEAM.md, "
            "\"PostgreSQL privileges\")")
