"""Exports: what a study's export holds (the CLI's ``peercore export``, the Data page's downloads).

Judgments are the stored records of the judges a :class:`~peercore.domain.selection.Selection`
names (the read model's rule); a leaderboard is :func:`peercore.app.leaderboard`'s table,
so an export holds what ``peercore rank --study`` and the Leaderboard page show. Writing
the table (CSV with formulas neutralised, JSONL, Parquet) is :mod:`peercore.io.export`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace

import pandas as pd

from peercore.app.leaderboard import leaderboard
from peercore.app.study import Study
from peercore.domain.selection import Selection
from peercore.io.export import table_bytes, write_table
from peercore.io.formats import EXPORT_WHAT

__all__ = ["study_table", "export_study", "audit_table", "audit_bytes", "AUDIT"]

#: ``what`` of the study's audit log (who changed what: :meth:`peercore.store.Store.access.audit_log`).
AUDIT = "audit"
AUDIT_COLUMNS = ["id", "at", "actor", "action", "study", "details"]


def audit_table(store, study: str) -> pd.DataFrame:
    """The study's audit log as an export writes it: ``id, at, actor, action, study, details``.

    One row per recorded change, oldest first (it outlives a deleted study); ``details`` is
    the record's JSON text (secret-looking keys were scrubbed when it was recorded).
    """
    log = store.access.audit_log(study)
    return pd.DataFrame({
        "id": log["id"].astype(int), "at": log["at"].astype(str), "actor": log["actor"], "action": log["action"],
        "study": log["study"], "details": [json.dumps(d, sort_keys=True, ensure_ascii=False) for d in log["details"]],
    }, columns=AUDIT_COLUMNS)


def audit_bytes(store, study: str, format: str) -> bytes:
    """:func:`audit_table` in ``format`` (CSV cells a spreadsheet would run as formulas neutralised)."""
    return table_bytes(audit_table(store, study), format=format)


def study_table(store, study: str, *, what: str, judges: Iterable[str] | None = None, method: str = "bt",
                peer_weights: str = "none", bootstrap: int = 0, seed: int = 0, selection=None,
                **leaderboard_options) -> pd.DataFrame:
    """The table an export writes: the study's judgments, or its leaderboard.

    Both go through the application layer (:func:`peercore.app.leaderboard`), so an export
    holds what ``peercore rank --study`` and the Leaderboard page show.

    Parameters
    ----------
    what : ``judgments`` (canonical columns, stored order), ``audit`` (:func:`audit_table`:
        who changed what in the study) or ``leaderboard`` (``model,
        score, rank, ci_low, ci_high, battles, preliminary``, and the columns the options
        add: ``rank_worst`` with intervals, ``sandwich_low, sandwich_high`` for
        Bradley-Terry, ``plain_score, plain_rank, rank_change`` with style control,
        AlpacaEval's ``win_rate ... lc_win_rate, lc_standard_error`` against a baseline; see
        :func:`peercore.app.leaderboard`).
    judges : names or prefixes ending in ``:``; default all (a shortcut for
        ``selection=Selection(judges=...)``).
    method, peer_weights, bootstrap, seed, **leaderboard_options : leaderboard options, every
        one :func:`peercore.app.leaderboard` takes (``baseline``, ``controls``,
        ``intervals``, ``reweight``, ``prior``, ``min_battles`` ...), so an export holds
        exactly what ``peercore rank --study`` prints with the same options.
    selection : a :class:`peercore.domain.selection.Selection` (default: every judge, final verdicts).
    """
    if what == AUDIT:
        return audit_table(store, study)
    if what not in EXPORT_WHAT:
        raise ValueError(f"what must be one of {', '.join((*EXPORT_WHAT, AUDIT))}; got {what!r}")
    chosen = selection if selection is not None else Selection(judges=tuple(judges) if judges is not None else None)
    handle = Study(store, study)
    if what == "judgments":
        stored = store.verdicts.table(study)
        if chosen.judges is None and chosen.kinds is None:
            return stored
        # Which judges the selection names is the read model's rule (names, prefixes, kinds).
        picked = handle.select(replace(chosen, final_only=False, repeated_votes="each")).verdicts
        return stored[stored["judge"].isin(set(picked.judges_present())).to_numpy()].reset_index(drop=True)
    board = leaderboard(handle, chosen, method=method, peer_weights=peer_weights, bootstrap=bootstrap, seed=seed,
                        **leaderboard_options)
    return board.table.reset_index(drop=True)


def export_study(store, study: str, destination, *, what: str, format: str, **options) -> int:
    """Write :func:`study_table` to ``destination``; returns the number of rows written."""
    table = study_table(store, study, what=what, **options)
    write_table(table, destination, format=format)
    return len(table)

