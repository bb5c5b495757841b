"""Runs, their items, the call cache and provider batches: :class:`Runs`, the repository
``store.runs`` of :class:`peercore.store.Store`."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping

import pandas as pd

from peercore import db as _db
from peercore.store.core import Repository, RUN_STATUSES, scrub_secrets, StoreError, _now


class Runs(Repository):
    """Runs, items, the LLM call cache and batches."""

    # -------------------------------------------------------------------------- runs

    def create(self, study: str, kind: str, config: Mapping, *, items: Iterable[str] = (),
               run_id: str | None = None) -> str:
        """Register a run and its work items (idempotent for an existing ``run_id``)."""
        sid = self._study_id(study)
        run_id = run_id or uuid.uuid4().hex
        items = list(items)
        now = _now()
        with self._store.transaction() as tx:
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

    def get(self, run_id: str) -> dict:
        """One run's row, its ``config`` decoded, with its study's name as ``study``."""
        row = self._store.connect().execute(
            "SELECT r.*, s.name AS study FROM runs r JOIN studies s ON s.id = r.study_id WHERE r.id = ?", (run_id,),
        ).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id!r}")
        out = dict(row)
        out["config"] = json.loads(out["config"])
        return out

    def table(self, study: str) -> pd.DataFrame:
        return _db.read_sql_query(
            "SELECT id, kind, status, n_items, n_done, prompt_tokens, completion_tokens, cost_usd, error, "
            "created_at, updated_at FROM runs WHERE study_id = ? ORDER BY created_at DESC",
            self._store.connect(), params=(self._study_id(study),),
        )

    def set_status(self, run_id: str, status: str, *, error: str | None = None) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"status must be one of {RUN_STATUSES}, got {status!r}")
        with self._store.transaction() as tx:
            tx.execute("UPDATE runs SET status = ?, error = ?, updated_at = ? WHERE id = ?", (status, error, _now(), run_id))

    def pending_items(self, run_id: str) -> list[str]:
        """Items of a run not yet done (what a resumed run still has to do)."""
        rows = self._store.connect().execute(
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
        with self._store.transaction() as tx:
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
        row = self._store.connect().execute("SELECT * FROM llm_calls WHERE cache_key = ?", (cache_key,)).fetchone()
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

        ``run_id`` and ``item_key`` say which run item paid for it (see :meth:`accounting`).
        """
        with self._store.transaction() as tx:
            cursor = tx.execute(
                "INSERT OR IGNORE INTO llm_calls (cache_key, backend, model, request, response, prompt_tokens, "
                "completion_tokens, latency_s, run_id, created_at, item_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (cache_key, backend, model, json.dumps(scrub_secrets(dict(request)), sort_keys=True),
                 json.dumps(dict(response)), prompt_tokens, completion_tokens, latency_s, run_id, _now(), item_key),
            )
            return cursor.rowcount == 1

    def accounting(self, run_id: str) -> dict:
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
        connection = self._store.connect()
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
        with self._store.transaction() as tx:
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
        rows = self._store.connect().execute("SELECT * FROM batches WHERE run_id = ? ORDER BY rowid", (run_id,))
        return [dict(r) for r in rows]

    def update_batch(self, token: str, **fields) -> None:
        """Set some of a batch's fields (status, file and batch ids, provider status, counts, intent time)."""
        unknown = sorted(set(fields) - set(self._BATCH_FIELDS))
        if unknown:
            raise ValueError(f"update_batch: unknown field(s) {unknown}; allowed {self._BATCH_FIELDS}")
        columns = ", ".join(f"{name} = ?" for name in fields)
        with self._store.transaction() as tx:
            cursor = tx.execute(f"UPDATE batches SET {columns}, updated_at = ? WHERE token = ?",
                                (*fields.values(), _now(), token))
            if cursor.rowcount != 1:
                raise StoreError(f"no batch {token!r}")

    def batch_requests(self, token: str) -> list[dict]:
        """A batch's request lines in upload order, ``request`` decoded."""
        rows = self._store.connect().execute("SELECT * FROM batch_requests WHERE token = ? ORDER BY rowid", (token,))
        return [{**dict(r), "request": json.loads(r["request"])} for r in rows]

    def batched_calls(self, run_id: str) -> dict[str, dict]:
        """cache_key -> ``{"status", "error"}`` of the latest batch line of each call a run sent in a batch."""
        rows = self._store.connect().execute(
            "SELECT r.cache_key, r.status, r.error FROM batch_requests r JOIN batches b ON b.token = r.token "
            "WHERE b.run_id = ? ORDER BY b.rowid, r.rowid", (run_id,))
        return {key: {"status": status, "error": error} for key, status, error in rows}

    def store_batch_results(self, token: str, results: Iterable[Mapping], calls: Iterable[Mapping] = ()) -> None:
        """Store a batch's results in one transaction: the paid responses in the call cache
        (``calls``: keyword arguments of :meth:`store_call` plus ``cache_key``) and each
        line's outcome (``results``: ``custom_id, status, error``)."""
        with self._store.transaction() as tx:
            for call in calls:
                call = dict(call)
                self.store_call(call.pop("cache_key"), **call)
            tx.executemany("UPDATE batch_requests SET status = ?, error = ? WHERE token = ? AND custom_id = ?",
                           [(r["status"], r.get("error"), token, r["custom_id"]) for r in results])

    def judgments(self, run_id: str) -> pd.DataFrame:
        """The verdicts one run stored, valid and invalid, in insertion order.

        Columns: ``question_id, model_a, model_b, judge, winner`` (missing when the
        reply held no verdict), ``p_a, criterion, round, rationale, valid, raw, vote``;
        names decoded. Empty (same columns) for a run that stored no verdict.
        """
        frame = _db.read_sql_query(
            "SELECT question_id, model_a, model_b, judge, winner, p_a, NULLIF(criterion, '') AS criterion, "
            "round, rationale, valid, raw, vote FROM judgments WHERE run_id = ? ORDER BY id",
            self._store.connect(), params=(run_id,))
        return frame.astype({"question_id": "str", "model_a": "str", "model_b": "str", "judge": "str",
                             "valid": "int64", "vote": "int64", "p_a": "float64"})

    @contextlib.contextmanager
    def busy_timeout(self, milliseconds: int) -> Iterator[None]:
        """Within the block, this thread's connection waits at most ``milliseconds`` for a lock.

        The runner writes paid responses with a short wait and retries itself (with the
        response kept in memory), instead of blocking its event loop for 30 s.
        """
        connection = self._store.connect()
        connection.execute(f"PRAGMA busy_timeout = {int(milliseconds)}")
        try:
            yield
        finally:
            connection.execute(f"PRAGMA busy_timeout = {_db.busy_timeout_ms()}")
