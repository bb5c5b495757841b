"""THE fast reader of a study's verdicts into the read model (:class:`peercore.domain.verdicts.Verdicts`).

One scan of the study's rows, columns only, no Python object per verdict:

* **SQLite**: the study's rowid range is scanned once in insertion order and SQLite
  concatenates each column into one string (``group_concat``); numpy parses the
  numbers, pyarrow takes the question ids straight from their bytes and lengths
  (a million verdicts in about a second). Judge, contestants, validity, winner and
  order travel packed into one integer per verdict; a probability travels as the integer
  ``p_a * 2**62`` wherever that is exact (see :func:`_probability_sql`).
* **PostgreSQL**: the same columns come from one ``COPY ... TO STDOUT`` ordered by ``id``
  and parsed by pyarrow (:func:`peercore.db.read_arrow`).

Every page, command and export reads verdicts through :func:`read_verdicts`; texts
(rationales, raw replies) are read only where shown, by :func:`read_texts`.
"""

from __future__ import annotations

import logging
import sqlite3
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pyarrow as pa

from peercore import db as _db
from peercore.domain import verdicts as _verdicts

__all__ = ["read_verdicts", "read_texts", "filled_columns", "study_span"]

_OPTIONAL = ("turn", "criterion", "round", "vote")
log = logging.getLogger(__name__)


def study_span(store, study_id: int) -> tuple[int, int]:
    """``(lowest id, highest id)`` of the study's verdicts; ``(0, -1)`` when it has none."""
    # Two queries: SQLite answers MIN or MAX alone from the index end, both at once by scanning the range.
    connection = store.connect()
    low = connection.execute("SELECT MIN(id) FROM verdicts WHERE study_id = ?", (study_id,)).fetchone()[0]
    high = connection.execute("SELECT MAX(id) FROM verdicts WHERE study_id = ?", (study_id,)).fetchone()[0]
    return (int(low), int(high)) if low is not None else (0, -1)


def filled_columns(store, study_id: int) -> set[str]:
    """The optional verdict columns the study has ever filled (a superset is possible)."""
    rows = store.connect().execute("SELECT name FROM verdict_columns WHERE study_id = ?", (study_id,))
    return {r[0] for r in rows}


def _packed_sql(width: int) -> str:
    """One integer per verdict: judge, model_a, model_b, winner (3: unparsed) and whether the order is known."""
    winner = "(CASE WHEN valid = 1 THEN winner ELSE 3 END)"
    return f"((((judge * {width} + model_a) * {width} + model_b) * 4 + {winner}) * 2 + order_known)"


# 2**62: p_a * 2**62 is an integer (exactly, and below 2**63) for every p_a in [0, 1] whose
# last bit is worth at least 2**-62, i.e. every p_a >= 2**-10.
_SCALE = "4611686018427387904.0"
_EXACT = f"(p_a >= 0 AND p_a <= 1 AND p_a * {_SCALE} = CAST(p_a * {_SCALE} AS INTEGER))"


def _probability_sql() -> tuple[str, str]:
    """Two aggregates that carry ``p_a`` exactly: scaled integers, and the few others as text.

    SQLite writes a REAL as text with 15 significant digits (``quote``; 25 of a million
    probabilities came back one unit in the last place off) and formatting a million of them
    was half the read. ``p_a * 2**62`` is exact in binary and, where it is an integer, carries
    every bit as a plain integer: -2 stands for NULL, -1 for a value that is not (a p_a below
    2**-10, or outside [0, 1]); those few follow, in order, as ``printf('%!.17g')`` texts (17
    significant digits: every double exactly), which ``group_concat`` gathers skipping NULLs.
    """
    scaled = f"(CASE WHEN p_a IS NULL THEN -2 WHEN {_EXACT} THEN CAST(p_a * {_SCALE} AS INTEGER) ELSE -1 END)"
    others = f"(CASE WHEN p_a IS NOT NULL AND NOT {_EXACT} THEN printf('%!.17g', p_a) END)"
    return f"group_concat({scaled})", f"group_concat({others})"


def _probabilities(scaled: str, others: str | None) -> np.ndarray:
    """``p_a`` from the two texts of :func:`_probability_sql` (NaN for NULL)."""
    codes = np.fromstring(scaled, dtype=np.int64, sep=",")
    p_a = np.ldexp(codes.astype(float), -62)  # exact: each code is a double's value times 2**62
    p_a[codes == -2] = np.nan
    rest = codes == -1
    listed = np.fromstring(others or "", dtype=float, sep=",")
    if len(listed) != rest.sum():
        raise RuntimeError("the store's probabilities could not be read")  # a corrupt database
    p_a[rest] = listed
    return p_a


def read_verdicts(store, study: str, *, kinds=None, aliases=None, categories=None, contestants=()):
    """Every verdict of ``study`` (readable or not) as a :class:`peercore.domain.verdicts.Verdicts`.

    ``kinds``, ``aliases``, ``categories`` and ``contestants`` are the registry the read
    model carries (see :func:`peercore.domain.verdicts.from_columns`).

    A study of at least :data:`SNAPSHOT_FROM` verdicts is read from its snapshot (table
    ``verdict_snapshots``) when that was made at the study's current revision, else scanned
    and its snapshot made anew (when the write lock is free at once; a reader never waits
    for it). The snapshot holds exactly the columns the scan gives, so both ways give one
    read model.
    """
    with store.snapshot():  # the labels and the verdicts (or their snapshot) as of one moment
        sid = store.studies.study_id(study)
        labels = dict(store.connect().execute("SELECT id, text FROM labels WHERE study_id = ?", (sid,)).fetchall())
        revision, columns, questions = _from_snapshot(store, sid)
        scanned = columns is None
        if scanned:
            columns, questions = _scan(store, sid, labels)
    if scanned and len(columns["id"]) >= SNAPSHOT_FROM:
        _save_snapshot(store, sid, revision, columns, questions)
    return _verdicts.from_columns(columns, labels=labels, questions=questions, kinds=kinds, aliases=aliases,
                                  categories=categories, contestants=contestants)


# ------------------------------------------------------------------------------ snapshots

#: Studies with at least this many verdicts keep a snapshot of their read model per revision
#: (a million verdicts: read in about 0.3 s instead of a 1-1.4 s scan; smaller studies scan fast).
SNAPSHOT_FROM = 100_000
_SNAPSHOT_FORMAT = "arrow-ipc-stream-v1"  # the schema of :func:`_snapshot_table`; another one is ignored
_INTEGER_COLUMNS = ("question", "judge", "model_a", "model_b", "id", *_OPTIONAL)


def _from_snapshot(store, sid: int) -> tuple[int, dict | None, np.ndarray | None]:
    """(the study's revision, the snapshot's columns and question ids), columns None when none is current."""
    connection = store.connect()
    revision = int(connection.execute("SELECT revision FROM studies WHERE id = ?", (sid,)).fetchone()[0])
    row = connection.execute("SELECT data FROM verdict_snapshots WHERE study_id = ? AND revision = ?",
                             (sid, revision)).fetchone()
    if row is None:
        return revision, None, None
    with pa.ipc.open_stream(pa.py_buffer(bytes(row[0]))) as reader:
        if reader.schema.metadata.get(b"format") != _SNAPSHOT_FORMAT.encode():
            return revision, None, None
        table = reader.read_all()
    columns = {name: table.column(name).to_numpy().astype(np.int64, copy=False) for name in _INTEGER_COLUMNS
               if name != "question"}
    question = table.column("question").combine_chunks()
    columns["question"] = question.indices.to_numpy().astype(np.int64)
    columns["winner"] = table.column("winner").to_numpy().astype(np.int8, copy=False)
    columns["order_known"] = table.column("order_known").to_numpy(zero_copy_only=False).astype(bool)
    columns["p_a"] = table.column("p_a").to_numpy().astype(float, copy=False)
    return revision, columns, np.asarray(question.dictionary.to_pylist(), dtype=object)


def _snapshot_table(columns: dict, questions: np.ndarray) -> pa.Table:
    """The read model's columns as one Arrow table (question ids dictionary-encoded)."""
    arrays = {"question": pa.DictionaryArray.from_arrays(pa.array(columns["question"], pa.int32()),
                                                         pa.array(list(questions), pa.large_string()))}
    arrays.update({name: pa.array(columns[name], pa.int64()) for name in _INTEGER_COLUMNS if name != "question"})
    arrays.update(winner=pa.array(columns["winner"], pa.int8()), order_known=pa.array(columns["order_known"]),
                  p_a=pa.array(columns["p_a"], pa.float64()))
    return pa.table(arrays).replace_schema_metadata({"format": _SNAPSHOT_FORMAT})


def _save_snapshot(store, sid: int, revision: int, columns: dict, questions: np.ndarray) -> None:
    """Keep the scanned read model as the study's snapshot at ``revision``, if that is still the study's.

    Never waits for a writer and never fails the read: a database that is busy, read-only
    or refuses the write simply keeps no snapshot (the next reader scans, as this one did).
    """
    sink = pa.BufferOutputStream()
    table = _snapshot_table(columns, questions)
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
        writer.write_table(table)
    data = sink.getvalue().to_pybytes()
    made_at = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    errors = (sqlite3.Error,) if store.url is None else (_db.postgres_error(),)
    try:
        with store.write_if_free() as tx:
            if tx is None:
                return
            # Only at the study's revision as of now: a write that landed since the scan made it stale.
            tx.execute("DELETE FROM verdict_snapshots WHERE study_id = ?", (sid,))
            tx.execute("INSERT INTO verdict_snapshots (study_id, revision, verdicts, made_at, data) "
                       "SELECT id, revision, ?, ?, ? FROM studies WHERE id = ? AND revision = ?",
                       (len(columns["id"]), made_at, data, sid, revision))
    except errors as exc:
        if _db.is_connection_lost(exc):
            raise
        log.info("verdict snapshot of study %s not kept: %s", sid, exc)


# ------------------------------------------------------------------------------ the scan


def _scan(store, sid: int, labels: dict) -> tuple[dict, np.ndarray]:
    """The read model's columns and question ids, from one scan of the study's verdicts."""
    low, high = study_span(store, sid)
    width = max(labels, default=0) + 1
    extra = [c for c in _OPTIONAL if c in filled_columns(store, sid)]
    with_p = "p_a" in filled_columns(store, sid)
    if high < low:
        columns = {name: np.zeros(0, dtype=np.int64) for name in ("question", "judge", "model_a", "model_b", "id",
                                                                    *_OPTIONAL)}
        columns.update(winner=np.zeros(0, dtype=np.int8), p_a=np.zeros(0), order_known=np.zeros(0, dtype=bool))
        return columns, np.zeros(0, dtype=object)
    read = _read_postgres if _db.is_postgres(store) else _read_sqlite
    count, ids, question_ids, packed, p_a, values = read(store, sid, low, high, width, extra, with_p)
    question, names = pd.factorize(pd.array(question_ids, dtype=pd.ArrowDtype(pa.large_string())))
    order_known = (packed % 2).astype(bool)
    packed //= 2
    winner = packed % 4
    packed //= 4
    columns = {"question": question.astype(np.int64), "model_b": packed % width, "model_a": packed // width % width,
               "judge": packed // width // width, "winner": np.where(winner == 3, -1, winner).astype(np.int8),
               "order_known": order_known, "p_a": p_a, "id": ids}
    for column in _OPTIONAL:
        columns[column] = values[column] if column in values else np.zeros(count, dtype=np.int64)
    return columns, np.asarray(names, dtype=object)


def _read_sqlite(store, sid: int, low: int, high: int, width: int, extra: list[str], with_p: bool):
    parts = ["COUNT(*)", "group_concat(id)", "group_concat(length(CAST(question_id AS BLOB)))",
             "group_concat(question_id, '')", f"group_concat({_packed_sql(width)})"]
    parts += [f"group_concat({c})" for c in extra]
    parts += list(_probability_sql()) if with_p else []
    row = store.connect().execute(f"SELECT {', '.join(parts)} FROM verdicts WHERE id BETWEEN ? AND ? "
                                  "AND +study_id = ?", (low, high, sid)).fetchone()
    count = int(row[0])
    ids = np.fromstring(row[1], dtype=np.int64, sep=",")
    lengths = np.fromstring(row[2], dtype=np.int64, sep=",")
    data = row[3].encode("utf-8")
    packed = np.fromstring(row[4], dtype=np.int64, sep=",")
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if len(ids) != count or len(lengths) != count or len(packed) != count or offsets[-1] != len(data) or \
            (count > 1 and not (np.diff(ids) > 0).all()):
        raise RuntimeError("the store's verdicts could not be read in insertion order")  # a corrupt database
    questions = pa.LargeStringArray.from_buffers(count, pa.py_buffer(offsets), pa.py_buffer(data))
    values = {c: np.fromstring(row[5 + k], dtype=np.int64, sep=",") for k, c in enumerate(extra)}
    p_a = _probabilities(row[5 + len(extra)], row[6 + len(extra)]) if with_p else np.full(count, np.nan)
    return count, ids, questions, packed, p_a, values


def _read_postgres(store, sid: int, low: int, high: int, width: int, extra: list[str], with_p: bool):
    sid, low, high, width = int(sid), int(low), int(high), int(width)
    packed = _packed_sql(width).replace("judge *", "judge::bigint *")
    select = ["id", "question_id", packed] + extra + (["p_a"] if with_p else [])
    types = [("id", pa.int64()), ("question_id", pa.large_string()), ("packed", pa.int64())]
    types += [(c, pa.int64()) for c in extra] + ([("p_a", pa.float64())] if with_p else [])
    table = _db.read_arrow(store.connect(), f"SELECT {', '.join(select)} FROM verdicts WHERE id BETWEEN {low} AND "
                           f"{high} AND study_id = {sid} ORDER BY id", types)
    count = table.num_rows
    values = {c: table.column(c).to_numpy().astype(np.int64, copy=False) for c in extra}
    p_a = table.column("p_a").to_numpy(zero_copy_only=False).astype(float, copy=False) if with_p \
        else np.full(count, np.nan)
    return (count, table.column("id").to_numpy().astype(np.int64, copy=False),
            table.column("question_id").combine_chunks(),
            table.column("packed").to_numpy().astype(np.int64, copy=True), p_a, values)


def read_texts(store, study: str, column: str, ids: np.ndarray) -> pd.Series:
    """The ``rationale`` or ``raw`` text of the verdicts with these store ids (None where missing), in ``ids``' order."""
    if column not in ("rationale", "raw"):
        raise ValueError(f"column must be rationale or raw, got {column!r}")
    sid = store.studies.study_id(study)
    ids = np.asarray(ids, dtype=np.int64)
    out = pd.Series([None] * len(ids), dtype=object)
    if len(ids) == 0:
        return out.astype("str")
    low, high = int(ids.min()), int(ids.max())
    rows = store.connect().execute(f"SELECT id, {column} FROM verdicts WHERE id BETWEEN ? AND ? AND study_id = ?",
                                   (low, high, sid)).fetchall()
    lookup = dict(rows)
    return pd.Series([lookup.get(int(i)) for i in ids], dtype="str")
