"""Judgments, verdicts and labels, and their encoding: :class:`Verdicts`, the repository
``store.verdicts`` of :class:`peercore.store.Store`."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from peercore.domain.verdicts import infer_order
from peercore.errors import JudgmentError, VerdictConflict
from peercore.judgments import COLUMNS, WINNERS, judgments_from_frame
from peercore.store.core import Repository, VERDICTS, WriteCounts, _now


class Verdicts(Repository):
    """Judgments (verdicts) and the study's labels."""

    # --------------------------------------------------------------------- judgments

    def add(self, study: str, judgments: pd.DataFrame, *, run_id: str | None = None,
            import_id: int | None = None, order: str = "auto") -> WriteCounts:
        """Insert verdicts in the canonical shape: new votes added, votes already stored skipped.

        A comparison is (question_id, model_a, model_b, judge, criterion, turn, round); a
        judge may vote on it more than once (anonymous crowd votes, PRD's three human
        votes per pair), each vote numbered (``vote``). One rule decides what a row is,
        however the rows are split into writes (a file, a folder, one file after
        another): per comparison, the rows and the stored votes are matched verdict by
        verdict (winner, p_a, validity, rationale, raw text); a row whose verdict is
        stored as often as it has appeared so far is that stored vote again (skipped:
        importing a file twice, or a grown file, adds only what is new), any other row is
        a new vote, numbered after the comparison's stored votes. ``WriteCounts.repeated``
        says how many rows were added as a second or later vote on a comparison.

        With a ``vote`` column the numbers are the file's own: a row whose comparison and
        vote are stored with another verdict is refused (:class:`VerdictConflict`).
        Optional columns ``valid`` (default 1) and ``raw`` keep an unparseable verdict
        (``winner`` empty) with its raw text; ``order_known`` (booleans) says whether
        ``model_a`` is the answer the judge saw first, else ``order`` does for every row
        (``known``, ``unknown``, or ``auto``: known for the pairs a judge judged in both
        orientations here, :func:`peercore.domain.verdicts.infer_order`).

        A frame already in canonical dtypes (as :func:`~peercore.judgments.judgments_from_frame`
        returns) is checked with a few vectorised tests on its distinct values instead
        of being validated row by row again; anything else goes through full validation.

        Raises
        ------
        JudgmentError
            If a valid row is not a canonical judgment (named row, column and value), or
            an import (``import_id`` given) names a judge that PeerBoard's runs produced.
        VerdictConflict
            If a row's natural key is stored (or repeated in ``judgments``) with another
            verdict (winner, p_a, validity, rationale or raw text); nothing is written.
        """
        sid = self._study_id(study)
        encoded = _encode_judgments(judgments, order=order)
        with self._store.transaction() as tx:
            if import_id is not None:
                self._refuse_run_judges(tx, sid, study, encoded)
            codes = self._label_codes(tx, sid, encoded.labels)
            counts = _insert_encoded(tx, sid, encoded, codes, run_id=run_id, import_id=import_id)
            if counts.added:
                self._store.studies.bump_revision(tx, sid)
        return counts

    def table(self, study: str, *, judges: Iterable[str] | None = None, include_invalid: bool = False,
              with_vote: bool = False) -> pd.DataFrame:
        """The study's verdicts as a canonical judgment table (see :mod:`peercore.judgments`).

        Rows are in insertion order. They are trusted (they were validated when written),
        so the canonical frame is built directly from the stored codes: names are decoded
        with one Arrow ``take`` per column, and optional columns that the study never
        filled are not fetched at all.

        Parameters
        ----------
        judges : only these judges (exact names); default all.
        include_invalid : also return unparseable verdicts (``winner`` missing) and add
            the ``valid`` and ``raw`` columns; the result is then not a valid canonical table.
        with_vote : add the ``vote`` column (index of repeated verdicts on one key).
        """
        with self._store.snapshot():  # the labels and the verdicts that use them, as of one moment
            return self._judgments(study, judges=judges, include_invalid=include_invalid, with_vote=with_vote)

    def _judgments(self, study: str, *, judges, include_invalid: bool, with_vote: bool) -> pd.DataFrame:
        sid = self._study_id(study)
        connection = self._store.connect()
        labels = self._labels(sid)
        cursor = connection.cursor()
        cursor.row_factory = None  # plain tuples: sqlite3.Row costs a second object per row
        # Two queries: MIN or MAX alone is one index look-up, both at once scan the study's range.
        low = cursor.execute("SELECT MIN(id) FROM verdicts WHERE study_id = ?", (sid,)).fetchone()[0]
        high = cursor.execute("SELECT MAX(id) FROM verdicts WHERE study_id = ?", (sid,)).fetchone()[0]
        # A rowid range scan in insertion order; "+study_id" keeps SQLite from reading
        # through an index and sorting the rows back into order.
        where, params = "id BETWEEN ? AND ? AND +study_id = ?", [low or 0, high or -1, sid]
        if not include_invalid:
            where += " AND valid = 1"
        if judges is not None:
            codes = [labels.code[j] for j in judges if j in labels.code]
            where += f" AND judge IN ({','.join('?' * len(codes))})"
            params += codes
        filled = {r[0] for r in cursor.execute("SELECT name FROM verdict_columns WHERE study_id = ?", (sid,))}
        optional = [c for c in ("p_a", "criterion", "turn", "round", "rationale", "vote") if c in filled]
        extra = ["valid", "raw"] if include_invalid else []
        columns = ["question_id", "model_a", "model_b", "judge", "winner", *optional, *extra]
        rows = cursor.execute(f"SELECT {', '.join(columns)} FROM verdicts WHERE {where} ORDER BY id", params).fetchall()
        # One 2-D object array, then whole columns: 3x cheaper than zip(*rows).
        table = np.array(rows, dtype=object) if rows else np.empty((0, len(columns)), dtype=object)
        values = {name: table[:, k] for k, name in enumerate(columns)}
        out = _decode(values, labels, len(rows))
        if include_invalid:
            out["valid"] = values["valid"].astype(np.int64)
            out["raw"] = pd.array(pa.array(values["raw"], pa.large_string(), from_pandas=True), dtype="str")
        if with_vote:
            out["vote"] = (values["vote"].astype(np.int64) if "vote" in values else np.zeros(len(rows), dtype=np.int64))
        return out

    def _refuse_run_judges(self, tx: sqlite3.Connection, study_id: int, study: str, encoded: "_Encoded") -> None:
        """An import may not add verdicts under the name of a judge PeerBoard's runs produced."""
        runs = {r[0] for r in tx.execute("SELECT name FROM judges WHERE study_id = ? AND origin = 'run'", (study_id,))}
        if not runs:
            return
        judges = {encoded.labels[k] for k in np.unique(encoded.judge).tolist() if k >= 0}
        clash = sorted(judges & runs)
        if clash:
            row = int(np.flatnonzero(np.isin(encoded.judge, [encoded.labels.index(clash[0])]))[0])
            raise JudgmentError(
                f"judge {clash[0]!r} is a judge that PeerBoard's runs produced in study {study!r}; an import cannot "
                f"add verdicts under its name. Rename the judge in the file (e.g. '{clash[0]}@import') or import into "
                "another study", row=row, column="judge", value=clash[0])

    def labels(self, study: str) -> dict[str, int]:
        """name -> integer code of every model, judge and criterion name in the study."""
        return dict(self._labels(self._study_id(study)).code)

    def _labels(self, study_id: int) -> "_Labels":
        rows = self._store.connect().execute("SELECT id, text FROM labels WHERE study_id = ?", (study_id,)).fetchall()
        return _Labels.from_rows(rows)

    def _label_codes(self, tx: sqlite3.Connection, study_id: int, names: list[str]) -> np.ndarray:
        """Codes for ``names`` (registering new ones), as an array aligned with ``names``."""
        existing = dict(tx.execute("SELECT text, id FROM labels WHERE study_id = ?", (study_id,)).fetchall())
        next_id = max(existing.values(), default=0) + 1
        new = []
        for name in names:
            if name not in existing:
                existing[name] = next_id
                new.append((study_id, next_id, name))
                next_id += 1
        tx.executemany("INSERT INTO labels (study_id, id, text) VALUES (?, ?, ?)", new)
        return np.array([existing[name] for name in names], dtype=np.int64)


# ------------------------------------------------------------- encoding judgments
# Writing: canonical frame -> Arrow dictionary codes -> int arrays -> one executemany of
# tuples built from lists (``ndarray.tolist`` makes the Python ints in C). Checks and
# name lookups work on the distinct values of each column, never row by row. Only the
# columns a frame actually fills are bound; constant columns (study, import, created_at,
# a single criterion ...) are SQL literals, so a plain Arena battle binds 5 values.

_TEXT = "str"
_WINNER_CODE = {"model_a": 0, "model_b": 1, "tie": 2}
_WINNER_TEXT = pa.array(list(WINNERS), pa.large_string())
_OPTIONAL = ("p_a", "criterion", "turn", "round", "rationale", "vote", "raw")


@dataclass
class _Encoded:
    """A judgment table ready to insert: names as indices into ``labels``."""

    n: int
    labels: list[str]
    question_id: list[str]
    model_a: np.ndarray
    model_b: np.ndarray
    judge: np.ndarray
    criterion: np.ndarray        # index into labels, -1 = not given
    winner: np.ndarray           # 0 / 1 / 2, -1 = none (invalid rows)
    turn: np.ndarray
    round: np.ndarray
    vote: np.ndarray
    valid: np.ndarray
    p_a: np.ndarray              # float, NaN = not given
    rationale: list | None       # None when no row has one
    raw: list | None
    order_known: np.ndarray      # 1: model_a was shown first; 0: not recorded
    explicit_vote: bool = False  # the frame numbered its votes itself (column 'vote')


def _arrow(series: pd.Series) -> pa.Array:
    """The Arrow array behind a "str" column (no copy), as large_string."""
    array = pa.array(series)
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return array if array.type == pa.large_string() else array.cast(pa.large_string())


def _dictionary(array: pa.Array) -> tuple[np.ndarray, list[str]]:
    """(codes with -1 for missing, distinct values) of a string array, in C."""
    encoded = pc.dictionary_encode(array)
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, encoded.dictionary.to_pylist()


def _is_canonical_dtypes(frame: pd.DataFrame) -> bool:
    if not all(c in frame.columns for c in COLUMNS):
        return False
    text = ("question_id", "model_a", "model_b", "judge", "winner", "criterion", "rationale")
    return (all(frame[c].dtype == _TEXT for c in text) and frame["p_a"].dtype == np.float64
            and all(frame[c].dtype == "Int64" for c in ("turn", "round")))


def _trusted_canonical(frame: pd.DataFrame) -> bool:
    """Cheap checks that a frame in canonical dtypes also holds canonical values.

    Arrow compute kernels over whole columns (a million rows in milliseconds). Anything
    doubtful returns False and the caller falls back to full validation, which names
    the row.
    """
    if not _is_canonical_dtypes(frame):
        return False
    keys = {}
    for column in ("question_id", "model_a", "model_b", "judge"):
        array = _arrow(frame[column])
        if array.null_count or not pc.all(pc.equal(pc.utf8_trim_whitespace(array), array)).as_py() \
                or pc.any(pc.equal(array, "")).as_py():
            return False
        keys[column] = array
    winner = _arrow(frame["winner"])
    if winner.null_count or not pc.all(pc.is_in(winner, value_set=_WINNER_TEXT)).as_py():
        return False
    if len(frame) and pc.any(pc.equal(keys["model_a"], keys["model_b"])).as_py():
        return False
    p_a = frame["p_a"].to_numpy()
    with np.errstate(invalid="ignore"):
        if (~np.isnan(p_a) & ~((p_a >= 0) & (p_a <= 1))).any():
            return False
    return True


def _encode_judgments(judgments: pd.DataFrame, *, order: str = "auto") -> _Encoded:
    """Validate (see :meth:`Store.verdicts.add`) and encode a judgment table."""
    if not isinstance(judgments, pd.DataFrame):
        raise TypeError(f"judgments must be a pandas DataFrame, got {type(judgments).__name__}")
    judgments = judgments.reset_index(drop=True)
    n = len(judgments)
    valid = (pd.to_numeric(judgments["valid"]).fillna(1).astype(int).to_numpy()
             if "valid" in judgments.columns else np.ones(n, dtype=np.int64))
    if not np.isin(valid, (0, 1)).all():
        raise ValueError(f"valid must be 0 or 1, got {sorted(set(valid.tolist()) - {0, 1})}")
    good = valid == 1
    if good.all():
        frame = judgments if _trusted_canonical(judgments) else judgments_from_frame(judgments)
    else:
        # An unparseable verdict keeps its key and raw text: validate every row with a
        # stand-in winner (so row numbers in errors are the caller's), then blank it.
        stand_in = judgments["winner"].astype(object).where(good, "tie") if "winner" in judgments.columns else "tie"
        frame = judgments_from_frame(judgments.assign(winner=stand_in))
        frame["winner"] = frame["winner"].where(good)

    labels: dict[str, int] = {}
    coded = {}
    for column in ("model_a", "model_b", "judge", "criterion"):
        codes, names = _dictionary(_arrow(frame[column]))
        lookup = np.array([labels.setdefault(name, len(labels)) for name in names] + [-1], dtype=np.int64)
        coded[column] = lookup[codes]  # code -1 (missing) picks the trailing -1
    winner_codes, winner_names = _dictionary(_arrow(frame["winner"]))
    winner = np.array([_WINNER_CODE[w] for w in winner_names] + [-1], dtype=np.int64)[winner_codes]
    turn = frame["turn"].fillna(0).to_numpy(dtype=np.int64)
    round_ = frame["round"].fillna(0).to_numpy(dtype=np.int64)
    question = _arrow(frame["question_id"])
    explicit_vote = "vote" in judgments.columns
    if explicit_vote:
        numbers = pd.to_numeric(judgments["vote"], errors="coerce").fillna(0).to_numpy(dtype=float)
        bad = ~np.isfinite(numbers) | (numbers < 0) | (numbers > _MAX_VOTE) | (numbers % 1 != 0)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            value = judgments["vote"].iloc[row]
            value = value.item() if hasattr(value, "item") else value
            raise JudgmentError(f"vote {value!r} is not a whole number from 0 to {_MAX_VOTE:,}", row=row,
                                column="vote", value=value)
        vote = numbers.astype(np.int64)
    else:
        vote = _vote_numbers(question, coded["model_a"], coded["model_b"], coded["judge"], coded["criterion"],
                             turn, round_)
    if "order_known" in judgments.columns:
        order_known = judgments["order_known"].astype(object).map(_order_flag).to_numpy(dtype=np.int64)
    elif order == "known":
        order_known = np.ones(n, dtype=np.int64)
    elif order == "unknown":
        order_known = np.zeros(n, dtype=np.int64)
    elif order == "auto":
        order_known = infer_order(coded["model_a"], coded["model_b"], coded["judge"],
                                  len(labels)).astype(np.int64)
    else:
        raise ValueError(f"order must be auto, known or unknown, got {order!r}")
    rationale = frame["rationale"]
    raw = judgments["raw"] if "raw" in judgments.columns else None
    if raw is not None:
        odd = raw.notna() & ~raw.map(lambda v: isinstance(v, str))
        if odd.any():
            row = int(np.flatnonzero(odd.to_numpy())[0])
            raise JudgmentError(f"raw must be text (the unparsed reply), got {type(raw.iloc[row]).__name__}",
                                row=row, column="raw")
    return _Encoded(
        n=n, labels=list(labels), question_id=question.to_pylist(), model_a=coded["model_a"],
        model_b=coded["model_b"], judge=coded["judge"], criterion=coded["criterion"], winner=winner, turn=turn,
        round=round_, vote=vote, valid=valid.astype(np.int64), p_a=frame["p_a"].to_numpy(dtype=float),
        rationale=_nullable_list(rationale) if rationale.notna().any() else None,
        raw=_nullable_list(raw) if raw is not None and raw.notna().any() else None,
        order_known=order_known, explicit_vote=explicit_vote,
    )


def _order_flag(value) -> int:
    """An ``order_known`` cell as 0 / 1 (booleans, 0 / 1, true / false, known / unknown)."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "1", "yes", "known"):
            return 1
        if text in ("false", "0", "no", "unknown", ""):
            return 0
        raise ValueError(f"order_known must be true or false, got {value!r}")
    if value is None or (isinstance(value, float) and value != value):
        return 0
    return int(bool(value))


def _vote_numbers(question_id: pa.Array, *codes: np.ndarray) -> np.ndarray:
    """0, 1, 2 ... for repeats of one key, in row order (zeros when no key repeats).

    When every question id is distinct (Arena logs: one battle per id) no key can
    repeat, which one Arrow pass tells without grouping a million rows.
    """
    n = len(question_id)
    if n == 0 or pc.count_distinct(question_id).as_py() == n:
        return np.zeros(n, dtype=np.int64)
    q_codes, _ = _dictionary(question_id)
    keys = pd.DataFrame({"q": q_codes, **{f"k{i}": c for i, c in enumerate(codes)}})
    if not keys.duplicated().any():
        return np.zeros(n, dtype=np.int64)
    return keys.groupby(list(keys.columns), sort=False).cumcount().to_numpy(dtype=np.int64)


def _nullable_list(series: pd.Series) -> list:
    """Python list with None for every missing value (SQL NULL)."""
    values = series.astype(object)
    return values.where(series.notna(), None).tolist()


def _insert_encoded(tx: sqlite3.Connection, study_id: int, encoded: _Encoded, codes: np.ndarray, *,
                    run_id: str | None, import_id: int | None) -> WriteCounts:
    n = encoded.n
    if n == 0:
        return WriteCounts(0, 0)
    lookup = np.append(codes, 0)  # index -1 (no criterion) -> code 0
    if encoded.explicit_vote:
        new = np.ones(n, dtype=bool)
    else:
        encoded.vote, new = _place_votes(tx, study_id, encoded, lookup)
    rows = np.flatnonzero(new)
    if len(rows) == 0:
        return WriteCounts(0, n)
    columns: dict[str, list] = {
        "question_id": [encoded.question_id[k] for k in rows] if len(rows) < n else encoded.question_id,
        "model_a": lookup[encoded.model_a[rows]].tolist(),
        "model_b": lookup[encoded.model_b[rows]].tolist(),
        "judge": lookup[encoded.judge[rows]].tolist(),
    }
    # Constants are SQL literals: bound once per statement, not once per row. They are
    # integers we computed and a timestamp we formatted, never user text.
    literals: dict[str, str] = {"study_id": str(int(study_id)), "created_at": f"'{_now()}'"}
    if import_id is not None:
        literals["import_id"] = str(int(import_id))
    filled = set()
    for name, values in (("criterion", lookup[encoded.criterion[rows]]), ("turn", encoded.turn[rows]),
                         ("round", encoded.round[rows]), ("vote", encoded.vote[rows]), ("valid", encoded.valid[rows]),
                         ("order_known", encoded.order_known[rows])):
        if name not in ("valid", "order_known") and (values != 0).any():
            filled.add(name)
        if (values == values[0]).all():
            if values[0] != 0 or name in ("valid", "order_known"):
                literals[name] = str(int(values[0]))
        else:
            columns[name] = values.tolist()
    winner = encoded.winner[rows]
    if (winner == winner[0]).all() and winner[0] >= 0:
        literals["winner"] = str(int(winner[0]))
    elif (winner >= 0).all():
        columns["winner"] = winner.tolist()
    else:
        columns["winner"] = [None if w < 0 else w for w in winner.tolist()]
    p_a = encoded.p_a[rows]
    if not np.isnan(p_a).all():
        columns["p_a"] = [None if p != p else p for p in p_a.tolist()]
        filled.add("p_a")
    for name in ("rationale", "raw"):
        values = getattr(encoded, name)
        if values is not None:
            columns[name] = [values[k] for k in rows] if len(rows) < n else values
            filled.add(name)
    if run_id is not None:
        columns["run_id"] = [run_id] * len(rows)
    names = list(literals) + list(columns)
    sql = (f"INSERT OR IGNORE INTO verdicts ({', '.join(names)}) "
           f"VALUES ({', '.join(list(literals.values()) + ['?'] * len(columns))})")
    before = tx.total_changes
    tx.executemany(sql, zip(*columns.values()))
    added = tx.total_changes - before
    if added < len(rows):  # only with the file's own vote numbers: identical verdicts are fine, others refused
        _refuse_conflicts(tx, study_id, encoded, lookup)
    if added and filled:
        tx.executemany("INSERT OR IGNORE INTO verdict_columns (study_id, name) VALUES (?, ?)",
                       [(study_id, name) for name in sorted(filled)])
    return WriteCounts(added, n - added, repeated=int((encoded.vote[rows] > 0).sum()),
                       invalid=int((encoded.valid[rows] == 0).sum()))


def _place_votes(tx: sqlite3.Connection, study_id: int, encoded: _Encoded,
                 lookup: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's vote number and whether it is a new vote (see :meth:`Store.verdicts.add`).

    Without stored verdicts of these judges, every row is new and the n-th row of a
    comparison is its vote n - 1. Otherwise the rows and the stored votes of the same
    judges (and questions, when few) are sorted together in one query (``UNION ALL``,
    window functions partitioned by comparison and by comparison and verdict): a row is
    the stored vote again when its verdict appeared at most as often in the rows so far
    as it is stored; a new vote is numbered after the comparison's highest stored vote.
    Every plan the server may choose is a sort (no join on the key; see
    :func:`_refuse_conflicts` for why that matters on PostgreSQL).
    """
    n = encoded.n
    judges = sorted(set(lookup[np.unique(encoded.judge)].tolist()))
    listed = judges if len(judges) <= _MAX_LISTED else []
    of = f" AND judge IN ({', '.join('?' * len(listed))})" if listed else ""
    stored = tx.execute(f"SELECT 1 FROM verdicts WHERE study_id = ?{of} LIMIT 1", (study_id, *listed)).fetchone()
    if stored is None:
        return encoded.vote, np.ones(n, dtype=bool)
    _fill_incoming(tx, encoded, lookup)
    questions = sorted(set(encoded.question_id))
    questions = questions if len(questions) <= _MAX_LISTED else []
    of = (f" AND s.judge IN ({', '.join('?' * len(listed))})" if listed else "") + \
         (f" AND s.question_id IN ({', '.join('?' * len(questions))})" if questions else "")
    comparison = "k.question_id, k.model_a, k.model_b, k.judge, k.criterion, k.turn, k.round"
    verdict = f"{comparison}, k.winner, k.p_a, k.valid, k.rationale, k.raw"
    rows = tx.execute(
        "SELECT m.row, m.stored_same, m.occurrence, m.top FROM ("
        f"SELECT k.row, SUM(k.stored) OVER (PARTITION BY {verdict}) AS stored_same, "
        f"SUM(1 - k.stored) OVER (PARTITION BY {verdict} ORDER BY k.row ROWS UNBOUNDED PRECEDING) AS occurrence, "
        f"MAX(k.vote) OVER (PARTITION BY {comparison}) AS top FROM ("
        "SELECT i.row, 0 AS stored, NULL AS vote, i.question_id, i.model_a, i.model_b, i.judge, i.criterion, i.turn, "
        "i.round, i.winner, i.p_a, i.valid, i.rationale, i.raw FROM _incoming i "
        "UNION ALL SELECT NULL, 1, s.vote, s.question_id, s.model_a, s.model_b, s.judge, s.criterion, s.turn, "
        "s.round, s.winner, s.p_a, s.valid, s.rationale, s.raw FROM verdicts s WHERE s.study_id = ?" + of +
        ") AS k) AS m WHERE m.row IS NOT NULL ORDER BY m.row",
        (study_id, *listed, *questions)).fetchall()
    tx.execute("DELETE FROM _incoming")
    table = np.array([[r[0], r[1], r[2], -1 if r[3] is None else r[3]] for r in rows], dtype=np.int64)
    new = table[:, 2] > table[:, 1]
    top = table[:, 3]
    key = pd.DataFrame({"q": pd.factorize(pd.Series(encoded.question_id))[0], "a": encoded.model_a,
                        "b": encoded.model_b, "j": encoded.judge, "c": encoded.criterion, "t": encoded.turn,
                        "r": encoded.round})
    rank = key[new].groupby(list(key.columns), sort=False).cumcount().to_numpy(dtype=np.int64)
    vote = np.zeros(n, dtype=np.int64)
    vote[new] = top[new] + 1 + rank
    return vote, new


def _fill_incoming(tx: sqlite3.Connection, encoded: _Encoded, lookup: np.ndarray) -> None:
    """The rows to write, in a temporary table ``_incoming`` (keys as label codes, verdicts as stored)."""
    n = encoded.n
    tx.execute("CREATE TEMP TABLE IF NOT EXISTS _incoming (row INTEGER, question_id TEXT, model_a INTEGER, "
               "model_b INTEGER, judge INTEGER, criterion INTEGER, turn INTEGER, round INTEGER, vote INTEGER, "
               "winner INTEGER, p_a REAL, valid INTEGER, rationale TEXT, raw TEXT)")
    tx.execute("DELETE FROM _incoming")
    winner = [None if w < 0 else w for w in encoded.winner.tolist()]
    p_a = [None if p != p else p for p in encoded.p_a.tolist()]
    rationale = encoded.rationale if encoded.rationale is not None else [None] * n
    raw = encoded.raw if encoded.raw is not None else [None] * n
    tx.executemany(
        "INSERT INTO _incoming VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        zip(range(n), encoded.question_id, lookup[encoded.model_a].tolist(), lookup[encoded.model_b].tolist(),
            lookup[encoded.judge].tolist(), lookup[encoded.criterion].tolist(), encoded.turn.tolist(),
            encoded.round.tolist(), encoded.vote.tolist(), winner, p_a, encoded.valid.tolist(), rationale, raw))


_KEY_FIELDS = ("question_id", "model_a", "model_b", "judge", "criterion", "turn", "round", "vote")
_VERDICT_FIELDS = ("winner", "p_a", "valid", "rationale", "raw")
_MAX_VOTE = 1_000_000  # the importers' bound (peercore.io.rules), for frames written directly too
# The conflict check reads the stored verdicts of the incoming rows' judges and questions, each
# named in a list up to this long (past it, an Arena log's voters or a large file's questions,
# that restriction is left out rather than bind a longer list).
_MAX_LISTED = 1000


def _refuse_conflicts(tx: sqlite3.Connection, study_id: int, encoded: _Encoded, lookup: np.ndarray) -> None:
    """Raise :class:`VerdictConflict` for the first row whose key holds another verdict.

    Runs only when an insert skipped rows (so a first import of a million new rows pays
    nothing). After the insert every incoming key is stored once (the UNIQUE index), so
    each incoming row is compared with the stored verdict of its key: a row matches when
    winner, p_a (to 1e-12), validity, rationale and raw text are the same. A key repeated
    within the incoming rows is thus compared with its first occurrence, the stored one.

    The incoming rows go to a temporary table. Which stored verdict is each row's is found
    by sorting, not by a join: the incoming keys and the keys of the stored verdicts of the
    same judges (and questions, when there are few), one ``UNION ALL``, partitioned by key (``MAX(id) OVER (PARTITION BY key)``);
    only then is each row joined with its stored verdict, by primary key. Every plan the
    server may choose for that is linear in the rows (up to the sort's log). A join on the
    key itself was not: PostgreSQL may run it as a nested loop probing ``verdicts_tally``
    (study, judge, model_a, model_b), and with one judge and one pair every probe read every
    stored verdict of the pair (a grown file of 12,000 rows: 29.9 s; 40,000: over 13 minutes,
    holding the write lock; benchmarks/results/import_growth.md).
    """
    _fill_incoming(tx, encoded, lookup)
    n = encoded.n
    winner = [None if w < 0 else w for w in encoded.winner.tolist()]
    p_a = [None if p != p else p for p in encoded.p_a.tolist()]
    rationale = encoded.rationale if encoded.rationale is not None else [None] * n
    raw = encoded.raw if encoded.raw is not None else [None] * n
    # The stored side: the verdicts of the incoming judges (and questions, when few), named by value.
    judges = sorted(set(lookup[np.unique(encoded.judge)].tolist()))
    questions = sorted(set(encoded.question_id))
    judges = judges if len(judges) <= _MAX_LISTED else []
    questions = questions if len(questions) <= _MAX_LISTED else []
    of = (f" AND s.judge IN ({', '.join('?' * len(judges))})" if judges else "") + \
         (f" AND s.question_id IN ({', '.join('?' * len(questions))})" if questions else "")
    found = tx.execute(
        "SELECT m.row, v.winner, v.p_a, v.valid, v.rationale, v.raw FROM ("
        "SELECT k.row, k.winner, k.p_a, k.valid, k.rationale, k.raw, MAX(k.id) OVER (PARTITION BY k.question_id, "
        "k.model_a, k.model_b, k.judge, k.criterion, k.turn, k.round, k.vote) AS stored FROM ("
        "SELECT i.row, NULL AS id, i.question_id, i.model_a, i.model_b, i.judge, i.criterion, i.turn, i.round, "
        "i.vote, i.winner, i.p_a, i.valid, i.rationale, i.raw FROM _incoming i "
        "UNION ALL SELECT NULL, s.id, s.question_id, s.model_a, s.model_b, s.judge, s.criterion, s.turn, s.round, "
        "s.vote, NULL, NULL, NULL, NULL, NULL FROM verdicts s WHERE s.study_id = ?" + of + ") AS k) AS m "
        "JOIN verdicts v ON v.id = m.stored "
        "WHERE m.row IS NOT NULL AND NOT (v.winner IS m.winner AND v.valid = m.valid AND v.rationale IS m.rationale "
        "AND v.raw IS m.raw AND (v.p_a IS m.p_a OR ABS(v.p_a - m.p_a) <= 1e-12)) ORDER BY m.row LIMIT 1",
        (study_id, *judges, *questions)).fetchone()
    tx.execute("DELETE FROM _incoming")
    if found is None:
        return
    row = int(found[0])
    names = dict(tx.execute("SELECT id, text FROM labels WHERE study_id = ?", (study_id,)).fetchall())
    key = {"question_id": encoded.question_id[row], "model_a": names.get(int(lookup[encoded.model_a[row]])),
           "model_b": names.get(int(lookup[encoded.model_b[row]])), "judge": names.get(int(lookup[encoded.judge[row]])),
           "criterion": names.get(int(lookup[encoded.criterion[row]])) if lookup[encoded.criterion[row]] else None,
           "turn": int(encoded.turn[row]) or None, "round": int(encoded.round[row]) or None,
           "vote": int(encoded.vote[row])}
    stored = {"winner": None if found[1] is None else VERDICTS[int(found[1])], "p_a": found[2], "valid": found[3],
              "rationale": found[4], "raw": found[5]}
    incoming = {"winner": None if winner[row] is None else VERDICTS[winner[row]], "p_a": p_a[row],
                "valid": int(encoded.valid[row]), "rationale": rationale[row], "raw": raw[row]}
    differs = [f for f in _VERDICT_FIELDS if not _same(stored[f], incoming[f])]
    what = "; ".join(f"{f} {_brief(stored[f])} stored, {_brief(incoming[f])} in this row" for f in differs)
    where = ", ".join(f"{f} {key[f]!r}" for f in _KEY_FIELDS if key[f] is not None)
    raise VerdictConflict(
        f"another verdict is already stored for ({where}): {what}; a judge's second verdict on the same key "
        "needs its own vote index (column 'vote') or question id", key=key, row=row, stored=stored, incoming=incoming)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-12
    return a == b


def _brief(value) -> str:
    text = "empty" if value is None else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ------------------------------------------------------------- decoding judgments


@dataclass
class _Labels:
    """A study's label table: code -> name (Arrow array indexed by code), name -> code."""

    texts: pa.Array
    code: dict[str, int]

    @classmethod
    def from_rows(cls, rows: list[tuple[int, str]]) -> "_Labels":
        size = max((r[0] for r in rows), default=0) + 1
        texts: list[str | None] = [None] * size
        for code, text in rows:
            texts[code] = text
        return cls(pa.array(texts, pa.large_string()), {text: code for code, text in rows})


def _decode(values: dict[str, np.ndarray], labels: _Labels, n: int) -> pd.DataFrame:
    """Canonical judgment frame from fetched object columns (no re-validation: our own rows)."""

    def names(column: str):
        return pd.array(labels.texts.take(pa.array(values[column].astype(np.int64))), dtype=_TEXT)

    def text(column: str):
        if column not in values:
            return pd.array(pa.nulls(n, pa.large_string()), dtype=_TEXT)
        return pd.array(pa.array(values[column], pa.large_string(), from_pandas=True), dtype=_TEXT)

    def whole(column: str) -> pd.arrays.IntegerArray:
        if column not in values:
            return pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))
        numbers = values[column].astype(np.int64)
        return pd.arrays.IntegerArray(numbers, numbers == 0)  # 0 is "not given" in the store

    stored = values["winner"]
    missing = pd.isna(stored)
    codes = pa.array(np.where(missing, 0, stored).astype(np.int64), mask=missing if missing.any() else None)
    winner = pd.array(_WINNER_TEXT.take(codes), dtype=_TEXT)
    if "criterion" in values:
        criterion = pd.array(labels.texts.take(pa.array(values["criterion"].astype(np.int64))), dtype=_TEXT)
    else:
        criterion = text("criterion")
    p_a = pd.Series(values["p_a"], dtype=object).astype(float).to_numpy() if "p_a" in values else np.full(n, np.nan)
    return pd.DataFrame({
        "question_id": text("question_id"),
        "model_a": names("model_a"),
        "model_b": names("model_b"),
        "judge": names("judge"),
        "winner": winner,
        "p_a": p_a,
        "criterion": criterion,  # code 0 (not given) is a null label
        "turn": whole("turn"),
        "round": whole("round"),
        "rationale": text("rationale"),
    })
