"""The read model: every verdict of a study as integer codes, with the tables of names.

A study's judgments are encoded once (per database revision, or once per file) into a
:class:`Verdicts`: one integer or float array per column, names kept in small tables
beside them, in the spirit of arena-rank's ``PairDataset``. Every number PeerBoard shows
is computed from it, by one implementation each:

* :func:`select` -- which verdicts a :class:`peercore.domain.selection.Selection` picks
  (judges by name, prefix or kind; contestants; categories; criteria; turns), with
  :func:`final_only` (each judge's last-round verdict on a comparison) and
  :func:`majority` (repeated votes of one judge on one comparison reduced to their
  majority), each saying how many rows it touched (:class:`SelectionNotes`);
* :func:`from_frame` encodes a canonical judgment table (a file's), the store's reader
  (:mod:`peercore.store.verdict_reader`) builds the same object from the database, and
  :func:`to_frame` decodes one back into the canonical table.

What a verdict's order means
----------------------------
``model_a`` is the answer the judge saw first only where the source recorded the
order: ``order_known`` says so per verdict. PeerBoard's own runs, PRD, ScaleEval and
Arena battles know it; AlpacaEval randomises the order its judge saw and keeps the
baseline as ``generator_1``; a canonical file either declares it or, by default, has a
known order for the pairs a judge saw in both orientations (:func:`infer_order`).
Position statistics use only verdicts whose order is known.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace

import numpy as np
import pandas as pd
import pyarrow as pa

from peercore.domain.options import KindChoice, OrderPolicy, RepeatedVotes, parse
from peercore.domain.selection import Selection
from peercore.judges import judge_kind, model_of

__all__ = [
    "Verdicts", "SelectionNotes", "Selected", "WINNER_A", "WINNER_B", "TIE", "UNPARSED", "WINNER_NAMES",
    "NO_CATEGORY", "from_frame", "from_columns", "to_frame", "take", "concat", "compact", "select", "final_only",
    "majority", "infer_order", "group_ids", "empty", "judge_codes", "contestants_by_judge", "score_a",
    "candidates_per_question", "distinct", "first_rows", "questions_with", "counted_unique", "comparison_ids",
]

WINNER_A, WINNER_B, TIE, UNPARSED = 0, 1, 2, -1  # the store's winner codes; -1: a reply with no readable verdict
WINNER_NAMES = ("model_a", "model_b", "tie")
NO_CATEGORY = "(none)"
_WINNER_CODE = {"model_a": WINNER_A, "model_b": WINNER_B, "tie": TIE, "tie (bothbad)": TIE}
_TEXT = "str"  # pandas >= 3: Arrow-backed strings


@dataclass(frozen=True, eq=False)
class Verdicts:
    """Every verdict of a study (or a file) as integer codes.

    Per-verdict arrays (one entry per verdict, in insertion or file order):

    question : int64, index into ``questions``.
    a, b : intp, index into ``models``: ``a`` is the verdict's ``model_a``.
    judge : intp, index into ``judges``.
    winner : int8, 0 ``model_a``, 1 ``model_b``, 2 tie, -1 no readable verdict.
    p_a : float64, the judge's probability that ``model_a`` is better (NaN: not given).
    order_known : bool, whether ``model_a`` is the answer the judge saw first.
    turn, round, vote : int64, 0 when not given (``vote``: the number of an earlier
        vote of the same judge on the same comparison, 0 for the first).
    criterion : int64, index into ``criteria`` (0 is "no criterion", ``""``).
    row : int64, where the verdict came from: the store's id, or the file's row (0-based);
        -1 for a gold verdict derived from debates and adjudications.

    Name tables:

    models, judges : sorted names.
    questions : object array of question ids (in order of first appearance).
    criteria : ``""`` first, then the criteria.
    judge_kinds : the kind of each judge (:func:`peercore.judges.judge_kind`).
    judge_models : the contestant each judge is (:func:`peercore.judges.model_of`), or None.
    categories : category names; ``question_category`` gives each question's index
        into it (:data:`NO_CATEGORY` when unknown).
    """

    question: np.ndarray
    a: np.ndarray
    b: np.ndarray
    judge: np.ndarray
    winner: np.ndarray
    p_a: np.ndarray
    order_known: np.ndarray
    turn: np.ndarray
    criterion: np.ndarray
    round: np.ndarray
    vote: np.ndarray
    row: np.ndarray
    models: tuple[str, ...]
    judges: tuple[str, ...]
    questions: np.ndarray
    criteria: tuple[str, ...] = ("",)
    judge_kinds: tuple[str, ...] = ()
    judge_models: tuple[str | None, ...] = ()
    categories: tuple[str, ...] = (NO_CATEGORY,)
    question_category: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.question)

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def valid(self) -> np.ndarray:
        """Verdicts with a readable winner."""
        return self.winner >= 0

    def kinds(self) -> dict[str, str]:
        """judge -> kind."""
        return dict(zip(self.judges, self.judge_kinds))

    def aliases(self) -> dict[str, str]:
        """judge -> the contestant it is, for the judges that are contestants."""
        return {j: m for j, m in zip(self.judges, self.judge_models) if m is not None}

    def judges_present(self, rows: np.ndarray | None = None) -> list[str]:
        """The judges with at least one verdict here, or among ``rows`` (a mask) (sorted)."""
        judge = self.judge if rows is None else self.judge[rows]
        return [self.judges[k] for k in np.flatnonzero(np.bincount(judge, minlength=len(self.judges)))]

    def models_present(self) -> list[str]:
        """The contestants of at least one verdict here (sorted)."""
        seen = np.bincount(self.a, minlength=self.n_models) + np.bincount(self.b, minlength=self.n_models)
        return [self.models[k] for k in np.flatnonzero(seen)]

    def category_of(self) -> np.ndarray:
        """Each verdict's category index (into ``categories``)."""
        return self.question_category[self.question]


_ROW_FIELDS = ("question", "a", "b", "judge", "winner", "p_a", "order_known", "turn", "criterion", "round", "vote",
               "row")


def empty() -> Verdicts:
    """A read model with no verdict."""
    return Verdicts(question=np.zeros(0, np.int64), a=np.zeros(0, np.intp), b=np.zeros(0, np.intp),
                    judge=np.zeros(0, np.intp), winner=np.zeros(0, np.int8), p_a=np.zeros(0), order_known=np.zeros(0, bool),
                    turn=np.zeros(0, np.int64), criterion=np.zeros(0, np.int64), round=np.zeros(0, np.int64),
                    vote=np.zeros(0, np.int64), row=np.zeros(0, np.int64), models=(), judges=(),
                    questions=np.zeros(0, dtype=object))


def score_a(verdicts: Verdicts, *, soft: bool = False) -> np.ndarray:
    """Each verdict's outcome for ``model_a``: 1 won, 0.5 tie, 0 lost (PRD eq. 1's counting).

    With ``soft``, a verdict that carries ``p_a`` counts it as a fractional win instead
    (Liusie et al.'s soft verdicts). Unparsed verdicts give NaN.
    """
    out = np.array([1.0, 0.0, 0.5, np.nan])[verdicts.winner]
    if soft:
        out = np.where(np.isnan(verdicts.p_a), out, verdicts.p_a)
    return out


# ------------------------------------------------------------------------------ building


def _name_codes(columns: Sequence[pd.Series]) -> tuple[list[np.ndarray], list[str]]:
    """Codes of several name columns in one sorted numbering (each column factorised on its own)."""
    parts = [pd.factorize(column, use_na_sentinel=True) for column in columns]
    names = sorted({str(n) for _, uniques in parts for n in uniques})
    index = {name: k for k, name in enumerate(names)}
    codes = []
    for raw, uniques in parts:
        lookup = np.array([index[str(n)] for n in uniques] + [-1], dtype=np.intp)
        codes.append(lookup[raw])
    return codes, names


def distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of an integer array: ``np.unique(values)``, by sorting.

    numpy 2.3+ finds the distinct values of ``np.unique`` with a hash table, which is
    20-50x slower than sorting on the arrays here (numpy 2.4.6, 2,000,000 int64s: 1.78 s
    against 0.036 s with a million distinct values, 0.15 s against 0.034 s with 100,000);
    the Efficiency page spent 2 s of its cold open in one call at a million verdicts.
    """
    ordered = np.sort(np.asarray(values).reshape(-1))
    if len(ordered) == 0:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


#: Integer keys in a range at most this much wider than four times their number are counted (``np.bincount``,
#: an array of the range's size) rather than sorted or hashed (1 judge, 100 models, both orders: 20,000 cells).
COUNTED_COMBINATIONS = 100_000


def counted_unique(keys: np.ndarray, size: int, *, return_inverse: bool = False):
    """``np.unique(keys, return_counts=True)`` (and ``return_inverse``) of integer keys in ``[0, size)``.

    Keys of battles or verdicts (pairs of models, outcomes, comparisons) often lie in a
    range of a few thousand cells: counted with ``np.bincount`` in one pass instead of
    sorted (a million battles of 100 models: 0.01 s instead of 0.1 s). A range far wider
    than the keys are many (:data:`COUNTED_COMBINATIONS`) falls back to ``np.unique``.
    """
    keys = np.asarray(keys, dtype=np.int64)
    if size > 4 * len(keys) + COUNTED_COMBINATIONS:
        return np.unique(keys, return_counts=True, return_inverse=return_inverse)
    counts = np.bincount(keys, minlength=size)
    uniques = np.flatnonzero(counts)
    if not return_inverse:
        return uniques, counts[uniques]
    code = np.zeros(size, dtype=np.intp)
    code[uniques] = np.arange(len(uniques))
    return uniques, code[keys], counts[uniques]


def group_ids(columns: Sequence[np.ndarray], *, sorted_ids: bool = False) -> np.ndarray:
    """One integer per distinct combination of the (non-negative integer) ``columns``.

    Ids lie in ``[0, number of combinations)``, numbered in order of first appearance,
    or with ``sorted_ids`` in the order of the combinations (:func:`counted_unique`:
    counting or sorting, 2-4x faster than hashing on a million mostly distinct keys, for
    callers that only count per group).
    """
    if not columns or len(columns[0]) == 0:
        return np.zeros(0 if not columns else len(columns[0]), dtype=np.int64)
    packed = np.zeros(len(columns[0]), dtype=np.int64)
    width = 1
    for column in columns:
        column = np.asarray(column, dtype=np.int64)
        size = int(column.max(initial=0)) + 1
        if width * size >= 2 ** 62:  # renumber what is packed so far before it overflows
            packed = pd.factorize(packed)[0].astype(np.int64)
            width = int(packed.max(initial=0)) + 1
        packed = packed * size + column
        width *= size
    if sorted_ids:
        return counted_unique(packed, width, return_inverse=True)[1].astype(np.int64, copy=False)
    if width <= 4 * len(packed) + COUNTED_COMBINATIONS:  # few combinations possible: mark them, no hash
        first = np.full(width, -1, dtype=np.int64)
        first[packed[::-1]] = np.arange(len(packed) - 1, -1, -1)
        used = np.flatnonzero(first >= 0)
        code = np.empty(width, dtype=np.int64)
        code[used[np.argsort(first[used], kind="stable")]] = np.arange(len(used))
        return code[packed]
    return pd.factorize(packed)[0].astype(np.int64)


def first_rows(ids: np.ndarray) -> np.ndarray:
    """The index of each group's first row, for the ids of :func:`group_ids` (``0 .. max``)."""
    first = np.zeros(int(ids.max(initial=-1)) + 1, dtype=np.int64)
    first[ids[::-1]] = np.arange(len(ids))[::-1]
    return first


def _cumcount(group: np.ndarray) -> np.ndarray:
    """For each row, how many earlier rows share its group."""
    if len(group) == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(group, kind="stable")
    sorted_group = group[order]
    starts = np.r_[0, np.flatnonzero(sorted_group[1:] != sorted_group[:-1]) + 1]
    run_start = np.repeat(starts, np.diff(np.r_[starts, len(group)]))
    out = np.empty(len(group), dtype=np.int64)
    out[order] = np.arange(len(group)) - run_start
    return out


def comparison_ids(verdicts: Verdicts, *, with_round: bool = True, sorted_ids: bool = False) -> np.ndarray:
    """Group ids of comparisons: (question, model_a, model_b, judge, criterion, turn[, round])."""
    columns = [verdicts.question, verdicts.a, verdicts.b, verdicts.judge, verdicts.criterion, verdicts.turn]
    if with_round:
        columns.append(verdicts.round)
    return group_ids(columns, sorted_ids=sorted_ids)


def infer_order(a: np.ndarray, b: np.ndarray, judge: np.ndarray, n_models: int) -> np.ndarray:
    """Whether each verdict's order is known when the source does not say (a canonical file's default).

    A judge that saw a pair of models in both orientations (``x`` first somewhere,
    ``y`` first elsewhere) was shown answers in a recorded order: its verdicts on that
    pair have a known order. A pair seen in one orientation only (a fixed or sorted
    orientation, as MT-Bench's and many exported files have) has an unknown order effect.
    """
    if len(a) == 0:
        return np.zeros(0, dtype=bool)
    n = max(int(n_models), 1)
    low, high = np.minimum(a, b).astype(np.int64), np.maximum(a, b).astype(np.int64)
    pair = (judge.astype(np.int64) * n + low) * n + high
    forward = a < b
    codes, uniques = pd.factorize(pair)
    has_forward = np.bincount(codes[forward], minlength=len(uniques)) > 0
    has_backward = np.bincount(codes[~forward], minlength=len(uniques)) > 0
    return (has_forward & has_backward)[codes]


def from_frame(frame: pd.DataFrame, *, kinds: Mapping[str, str] | None = None,
               aliases: Mapping[str, str] | None = None, categories: Mapping[str, str] | None = None,
               contestants: Iterable[str] = (), order: "OrderPolicy | str | np.ndarray" = OrderPolicy.AUTO) -> Verdicts:
    """Encode a canonical judgment table (what :func:`peercore.judgments.judgments_from_frame` returns).

    Parameters
    ----------
    frame : canonical judgments; optional columns used when present: ``valid`` (0: an
        unparsed reply, its ``winner`` missing), ``vote`` (else numbered here: the
        n-th verdict of a judge on a comparison gets vote n - 1), ``order_known``
        (booleans; overrides ``order``), ``row`` (else the position in the table),
        ``category`` (a file's question categories, when ``categories`` is None).
    kinds : judge -> registered kind (the store's); others take their name's prefix.
    aliases : judge -> the contestant it is, as stored; see :func:`peercore.judges.model_of`.
    categories : question_id -> category.
    contestants : contestants beyond those in a verdict (models with stored answers).
    order : :class:`OrderPolicy` for the whole table (``auto``: :func:`infer_order`),
        or one boolean per row.
    """
    n = len(frame)
    if n == 0 and "model_a" not in frame.columns:
        return empty()
    (a, b), models = _name_codes([frame["model_a"], frame["model_b"]])
    (judge,), judges = _name_codes([frame["judge"]])
    question_codes, question_names = pd.factorize(frame["question_id"].astype(str), use_na_sentinel=True)
    winner_raw = frame["winner"]
    winner_codes, winner_values = pd.factorize(winner_raw, use_na_sentinel=True)
    lookup = np.array([_WINNER_CODE.get(str(v), -2) for v in winner_values] + [UNPARSED], dtype=np.int8)
    if (lookup == -2).any():
        bad = [str(v) for v, c in zip(winner_values, lookup) if c == -2][0]
        raise ValueError(f"winner {bad!r} is not one of model_a, model_b, tie")
    winner = lookup[winner_codes] if n else np.zeros(0, np.int8)
    if "valid" in frame.columns:
        winner = np.where(pd.to_numeric(frame["valid"], errors="coerce").fillna(1).to_numpy() == 0, UNPARSED, winner)
        winner = winner.astype(np.int8)
    p_a = pd.to_numeric(frame["p_a"], errors="coerce").to_numpy(dtype=float) if "p_a" in frame.columns \
        else np.full(n, np.nan)
    criterion_text = frame["criterion"].astype(object).where(frame["criterion"].notna(), "") \
        if "criterion" in frame.columns else pd.Series([""] * n, dtype=object)
    criterion_codes, criterion_values = pd.factorize(criterion_text.astype(str))
    criteria = ("",) + tuple(sorted({str(c) for c in criterion_values} - {""}))
    criterion_index = {c: k for k, c in enumerate(criteria)}
    criterion = np.array([criterion_index[str(c)] for c in criterion_values], dtype=np.int64)[criterion_codes] \
        if n else np.zeros(0, np.int64)

    def whole(column: str) -> np.ndarray:
        if column not in frame.columns:
            return np.zeros(n, dtype=np.int64)
        return pd.to_numeric(frame[column], errors="coerce").fillna(0).to_numpy(dtype=np.int64)

    turn, round_ = whole("turn"), whole("round")
    row = whole("row") if "row" in frame.columns else np.arange(n, dtype=np.int64)
    model_names = tuple(models)
    if isinstance(order, np.ndarray):
        order_known = order.astype(bool)
    elif "order_known" in frame.columns:
        order_known = frame["order_known"].astype(object).map(_as_bool).to_numpy(dtype=bool)
    else:
        policy = parse(OrderPolicy, order, "order")
        if policy is OrderPolicy.KNOWN:
            order_known = np.ones(n, dtype=bool)
        elif policy is OrderPolicy.UNKNOWN:
            order_known = np.zeros(n, dtype=bool)
        else:
            order_known = infer_order(a, b, judge, len(model_names))
    if categories is None and "category" in frame.columns:
        categories = {str(q): str(c) for q, c in zip(frame["question_id"], frame["category"]) if isinstance(c, str) and c}
    table = Verdicts(
        question=question_codes.astype(np.int64), a=a, b=b, judge=judge, winner=winner, p_a=p_a,
        order_known=order_known, turn=turn, criterion=criterion, round=round_, vote=np.zeros(n, dtype=np.int64),
        row=row, models=model_names, judges=tuple(judges), questions=np.asarray(question_names, dtype=object),
        criteria=criteria)
    table = _with_registry(table, kinds=kinds, aliases=aliases, categories=categories, contestants=contestants)
    vote = whole("vote") if "vote" in frame.columns else _cumcount(comparison_ids(table))
    return replace(table, vote=vote)


def _as_bool(value) -> bool:
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "1", "yes", "known"):
            return True
        if text in ("false", "0", "no", "unknown", ""):
            return False
        raise ValueError(f"order_known must be true or false, got {value!r}")
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return False
    return bool(value)


def from_columns(columns: Mapping[str, np.ndarray], *, labels: Mapping[int, str], questions, criteria_labels=None,
                 kinds: Mapping[str, str] | None = None, aliases: Mapping[str, str] | None = None,
                 categories: Mapping[str, str] | None = None, contestants: Iterable[str] = ()) -> Verdicts:
    """Build the read model from a store's integer columns (what :mod:`peercore.store.verdict_reader` reads).

    Parameters
    ----------
    columns : ``question`` (0.. per distinct question, in order of first appearance),
        ``judge``, ``model_a``, ``model_b``, ``criterion`` (the store's label ids; 0 = no
        criterion), ``winner`` (-1 unparsed), ``p_a``, ``order_known``, ``turn``,
        ``round``, ``vote``, ``id``.
    labels : label id -> text.
    questions : the question ids, indexed by ``question``.
    """
    label_ids = np.array(sorted(labels), dtype=np.int64)
    width = int(label_ids.max(initial=0)) + 1

    def present(*arrays: np.ndarray) -> np.ndarray:
        """Which label ids the arrays use (by marking: label ids are small, the arrays a million long)."""
        seen = np.zeros(width, dtype=bool)
        for values in arrays:
            seen[values] = True
        return seen

    def lookup_of(used: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
        names = sorted((labels[int(k)], int(k)) for k in np.flatnonzero(used))
        lookup = np.full(width, -1, dtype=np.intp)
        for code, (_, label_id) in enumerate(names):
            lookup[label_id] = code
        return lookup, tuple(name for name, _ in names)

    model_a, model_b = columns["model_a"], columns["model_b"]
    model_lookup, model_names = lookup_of(present(model_a, model_b))
    a, b = model_lookup[model_a], model_lookup[model_b]
    judge_lookup, judges = lookup_of(present(columns["judge"]))
    judge = judge_lookup[columns["judge"]]
    crit = columns["criterion"]
    used_criteria = np.flatnonzero(present(crit))
    used_criteria = used_criteria[used_criteria > 0]
    criterion_names = sorted((labels[int(k)], int(k)) for k in used_criteria)
    crit_lookup = np.zeros(width, dtype=np.int64)
    for code, (_, label_id) in enumerate(criterion_names, start=1):
        crit_lookup[label_id] = code
    table = Verdicts(
        question=np.asarray(columns["question"], dtype=np.int64), a=a, b=b, judge=judge,
        winner=np.asarray(columns["winner"], dtype=np.int8), p_a=np.asarray(columns["p_a"], dtype=float),
        order_known=np.asarray(columns["order_known"], dtype=bool), turn=np.asarray(columns["turn"], np.int64),
        criterion=crit_lookup[crit] if len(crit) else np.zeros(0, np.int64),
        round=np.asarray(columns["round"], np.int64), vote=np.asarray(columns["vote"], np.int64),
        row=np.asarray(columns["id"], np.int64), models=model_names, judges=judges,
        questions=np.asarray(questions, dtype=object), criteria=("",) + tuple(n for n, _ in criterion_names))
    return _with_registry(table, kinds=kinds, aliases=aliases, categories=categories, contestants=contestants)


def _with_registry(table: Verdicts, *, kinds, aliases, categories, contestants) -> Verdicts:
    """The judges' kinds and contestants (the one rule each) and the questions' categories."""
    kinds = kinds or {}
    everyone = set(table.models) | {str(c) for c in contestants}
    judge_kinds = tuple(judge_kind(j, kinds.get(j)) for j in table.judges)
    judge_models = tuple(model_of(j, everyone, aliases or {}) if k == "llm" else None
                         for j, k in zip(table.judges, judge_kinds))
    names = [categories.get(str(q), NO_CATEGORY) if categories else NO_CATEGORY for q in table.questions]
    category_names = tuple(sorted(set(names) | {NO_CATEGORY}))
    index = {c: k for k, c in enumerate(category_names)}
    question_category = np.array([index[c] for c in names], dtype=np.int64)
    return replace(table, judge_kinds=judge_kinds, judge_models=judge_models, categories=category_names,
                   question_category=question_category)


# ------------------------------------------------------------------------ reshaping


def take(verdicts: Verdicts, rows: np.ndarray) -> Verdicts:
    """The verdicts at ``rows`` (a boolean mask or positions), name tables unchanged."""
    if rows.dtype == bool:
        if rows.all():
            return verdicts
        rows = np.flatnonzero(rows)  # once: a mask would be searched again for each of the 12 columns
    return replace(verdicts, **{name: getattr(verdicts, name)[rows] for name in _ROW_FIELDS})


def compact(verdicts: Verdicts) -> Verdicts:
    """The same verdicts with only the models and judges they use in the name tables (order kept)."""
    seen = np.bincount(verdicts.a, minlength=verdicts.n_models) + np.bincount(verdicts.b, minlength=verdicts.n_models)
    used_models = np.flatnonzero(seen)
    used_judges = np.flatnonzero(np.bincount(verdicts.judge, minlength=len(verdicts.judges)))
    if len(used_models) == verdicts.n_models and len(used_judges) == len(verdicts.judges):
        return verdicts
    model_map = np.full(verdicts.n_models, -1, dtype=np.intp)
    model_map[used_models] = np.arange(len(used_models))
    judge_map = np.full(len(verdicts.judges), -1, dtype=np.intp)
    judge_map[used_judges] = np.arange(len(used_judges))
    return replace(verdicts, a=model_map[verdicts.a], b=model_map[verdicts.b], judge=judge_map[verdicts.judge],
                   models=tuple(verdicts.models[k] for k in used_models),
                   judges=tuple(verdicts.judges[k] for k in used_judges),
                   judge_kinds=tuple(verdicts.judge_kinds[k] for k in used_judges),
                   judge_models=tuple(verdicts.judge_models[k] for k in used_judges))


def concat(first: Verdicts, second: Verdicts) -> Verdicts:
    """Both tables' verdicts (``first``'s, then ``second``'s) in one numbering of names."""
    if len(second) == 0 and len(second.judges) == 0:
        return first
    if len(first) == 0 and len(first.judges) == 0:
        return second
    models = tuple(sorted(set(first.models) | set(second.models)))
    judges = tuple(sorted(set(first.judges) | set(second.judges)))
    criteria = ("",) + tuple(sorted((set(first.criteria) | set(second.criteria)) - {""}))
    question_index = {q: k for k, q in enumerate(first.questions)}
    extra = [q for q in second.questions if q not in question_index]
    for q in extra:
        question_index[q] = len(question_index)
    questions = np.asarray(list(first.questions) + extra, dtype=object)
    categories = tuple(sorted(set(first.categories) | set(second.categories)))

    def mapping(old: Sequence[str], new: Sequence[str]) -> np.ndarray:
        index = {name: k for k, name in enumerate(new)}
        return np.array([index[name] for name in old], dtype=np.intp) if len(old) else np.zeros(0, np.intp)

    def moved(table: Verdicts) -> dict:
        models_map = mapping(table.models, models)
        return dict(a=models_map[table.a] if len(table) else table.a, b=models_map[table.b] if len(table) else table.b,
                    judge=mapping(table.judges, judges)[table.judge] if len(table) else table.judge,
                    criterion=mapping(table.criteria, criteria)[table.criterion] if len(table) else table.criterion,
                    question=np.array([question_index[q] for q in table.questions], dtype=np.int64)[table.question]
                    if len(table) else table.question)

    parts = [moved(first), moved(second)]
    kind_of = {**second.kinds(), **first.kinds()}
    model_of_judge = {**dict(zip(second.judges, second.judge_models)), **dict(zip(first.judges, first.judge_models))}
    category_of = {}
    for table in (second, first):
        for q, c in zip(table.questions, table.question_category):
            category_of[q] = table.categories[c]
    category_index = {c: k for k, c in enumerate(categories)}
    rows = {name: np.concatenate([getattr(first, name), getattr(second, name)]) for name in _ROW_FIELDS}
    for name in ("a", "b", "judge", "criterion", "question"):
        rows[name] = np.concatenate([parts[0][name], parts[1][name]])
    return Verdicts(**rows, models=models, judges=judges, questions=questions, criteria=criteria,
                    judge_kinds=tuple(kind_of[j] for j in judges), judge_models=tuple(model_of_judge[j] for j in judges),
                    categories=categories,
                    question_category=np.array([category_index[category_of.get(q, NO_CATEGORY)] for q in questions],
                                               dtype=np.int64))


def to_frame(verdicts: Verdicts, *, include_invalid: bool = False, extras: Sequence[str] = ()) -> pd.DataFrame:
    """The canonical judgment table of these verdicts (the columns of :data:`peercore.judgments.COLUMNS`).

    ``rationale`` is empty (texts are not part of the read model). ``extras`` adds
    columns beside the canonical ones: ``valid``, ``vote``, ``order_known``, ``row``.
    Unparsed verdicts are left out unless ``include_invalid`` (their ``winner`` missing).
    """
    table = verdicts if include_invalid else take(verdicts, verdicts.winner >= 0)
    n = len(table)

    def names(values: Sequence[str], codes: np.ndarray):
        return pd.array(pa.array(list(values) or [""], type=pa.large_string()).take(pa.array(codes)), dtype=_TEXT) \
            if n else pd.array([], dtype=_TEXT)

    criterion = pd.array(pa.array([None] + list(table.criteria[1:]), type=pa.large_string()).take(pa.array(table.criterion))
                         if n else [], dtype=_TEXT)
    winner = pa.array(list(WINNER_NAMES), type=pa.large_string()).take(
        pa.array(np.where(table.winner < 0, 0, table.winner), mask=table.winner < 0)) if n else []
    out = pd.DataFrame({
        "question_id": pd.array(pa.array(table.questions.tolist() or [""], type=pa.large_string()).take(
            pa.array(table.question)) if n else [], dtype=_TEXT),
        "model_a": names(table.models, table.a),
        "model_b": names(table.models, table.b),
        "judge": names(table.judges, table.judge),
        "winner": pd.array(winner, dtype=_TEXT),
        "p_a": table.p_a.astype(float),
        "criterion": criterion,
        "turn": pd.arrays.IntegerArray(table.turn.astype(np.int64), table.turn == 0),
        "round": pd.arrays.IntegerArray(table.round.astype(np.int64), table.round == 0),
        "rationale": pd.array(pa.nulls(n, pa.large_string()), dtype=_TEXT),
    })
    for column in extras:
        if column == "valid":
            out["valid"] = (table.winner >= 0).astype(np.int64)
        elif column in ("vote", "order_known", "row"):
            out[column] = getattr(table, column)
        else:
            raise ValueError(f"extras must be among valid, vote, order_known, row, got {column!r}")
    return out


# ------------------------------------------------------------------------- selection


@dataclass(frozen=True)
class SelectionNotes:
    """What a selection merged or left out, with the option that turns it off.

    Attributes
    ----------
    unparsed : replies of the chosen judges with no readable verdict, left out.
    earlier_rounds : verdicts of earlier rounds (a debate agent's or discussion
        reviewer's initial verdict) left out because a later one exists.
    merged_votes, merged_comparisons : repeated votes of one judge on one comparison
        merged into the majority of each of ``merged_comparisons`` comparisons.
    """

    unparsed: int = 0
    earlier_rounds: int = 0
    merged_votes: int = 0
    merged_comparisons: int = 0

    def messages(self, *, options: Mapping[str, str] | None = None) -> list[str]:
        """One sentence per thing done, naming the option that turns it off (CLI spellings by default)."""
        options = {"each_vote": "--each-vote", "all_rounds": "--all-rounds", **(options or {})}
        out = []
        if self.merged_votes:
            out.append(f"{self.merged_votes:,} repeated votes of one judge on {self.merged_comparisons:,} comparisons "
                       f"were merged into the majority of each ({options['each_vote']} counts every vote)")
        if self.earlier_rounds:
            out.append(f"{self.earlier_rounds:,} verdicts of earlier rounds (initial verdicts of debate agents or "
                       f"discussion reviewers) were left out, each judge's final verdict counted "
                       f"({options['all_rounds']} counts them)")
        if self.unparsed:
            out.append(f"{self.unparsed:,} replies with no readable verdict were left out (the judges' health counts "
                       "them)")
        return out

    def __add__(self, other: "SelectionNotes") -> "SelectionNotes":
        return SelectionNotes(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})


@dataclass(frozen=True)
class Selected:
    """The verdicts a selection picked (name tables compacted) and what it merged or left out."""

    verdicts: Verdicts
    notes: SelectionNotes


def judge_codes(verdicts: Verdicts, names: Iterable[str]) -> np.ndarray:
    """Which judges (a boolean per judge) ``names`` name: a name, or a prefix ending in ``:``.

    Raises
    ------
    ValueError
        If a name or prefix matches no judge (the judges are listed).
    """
    chosen = np.zeros(len(verdicts.judges), dtype=bool)
    for name in names:
        name = str(name)
        if name.endswith(":"):
            match = np.array([j.startswith(name) for j in verdicts.judges], dtype=bool)
        else:
            match = np.array([j == name for j in verdicts.judges], dtype=bool)
        if not match.any():
            raise ValueError(f"judge {name!r} matches no judge; judges are {list(verdicts.judges)}")
        chosen |= match
    return chosen


def contestants_by_judge(verdicts: Verdicts) -> dict[str, set[str]]:
    """judge -> the contestants its verdicts here involve."""
    n = max(verdicts.n_models, 1)
    pairs = distinct(np.concatenate([verdicts.judge.astype(np.int64) * n + verdicts.a,
                                      verdicts.judge.astype(np.int64) * n + verdicts.b]))
    out: dict[str, set[str]] = {}
    for judge, model in zip(pairs // n, pairs % n):
        out.setdefault(verdicts.judges[judge], set()).add(verdicts.models[model])
    return out


def final_only(verdicts: Verdicts) -> tuple[Verdicts, int]:
    """Each judge's last-round verdicts on each comparison, and how many earlier ones were left out.

    A debate agent gives an initial verdict (round 0) and, after the debate, a final one;
    a PRD reviewer likewise before and after a discussion. Counting both counts one
    judge twice on one pair. Verdicts are grouped by (question, model_a, model_b, judge,
    criterion, turn) and only those of the highest round are kept.
    """
    if len(verdicts) == 0 or not (verdicts.round != 0).any():
        return verdicts, 0
    maybe = questions_with(verdicts, verdicts.round != 0)  # only where a later round exists can one be left out
    part = take(verdicts, maybe)
    group = comparison_ids(part, with_round=False, sorted_ids=True)
    top = np.full(int(group.max()) + 1, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(top, group, part.round)
    keep = np.ones(len(verdicts), dtype=bool)
    keep[maybe] = part.round == top[group]
    return take(verdicts, keep), int((~keep).sum())


def questions_with(verdicts: Verdicts, rows: np.ndarray) -> np.ndarray:
    """The verdicts (a mask) on the questions of ``rows`` (a mask): where a repeated vote can be, say."""
    marked = np.zeros(len(verdicts.questions), dtype=bool)
    marked[verdicts.question[rows]] = True
    return marked[verdicts.question]


def majority(verdicts: Verdicts) -> tuple[Verdicts, int, int]:
    """One verdict per judge and comparison: the majority of its repeated votes (PRD's human majority).

    Votes of one judge on the same (question, model_a, model_b, criterion, turn, round)
    are combined: +1 for model_a, -1 for model_b, 0 for a tie; the sign of their sum
    wins (a tie when split evenly); ``p_a`` is their mean where given. The combined
    verdict takes the first vote's place. Only comparisons that hold a vote numbered
    above 0 can repeat (:func:`from_frame` and the store number every repeat).

    Returns
    -------
    (verdicts, votes merged, comparisons they formed)
    """
    if len(verdicts) == 0 or not (verdicts.vote != 0).any():
        return verdicts, 0, 0
    candidates = np.flatnonzero(questions_with(verdicts, verdicts.vote != 0))
    part = take(verdicts, candidates)
    group = comparison_ids(part, sorted_ids=True)
    sizes = np.bincount(group)
    repeated = sizes[group] > 1
    if not repeated.any():
        return verdicts, 0, 0
    score = np.array([1, -1, 0, 0], dtype=np.int64)[part.winner]
    total = np.bincount(group, score, minlength=len(sizes))
    given = ~np.isnan(part.p_a)
    p_sum = np.bincount(group[given], part.p_a[given], minlength=len(sizes))
    p_count = np.bincount(group[given], minlength=len(sizes))
    first = np.zeros(len(part), dtype=bool)
    first[first_rows(group)] = True
    drop = candidates[repeated & ~first]
    lead = repeated & first
    lead_group = group[lead]
    winner = verdicts.winner.copy()
    p_a = verdicts.p_a.copy()
    votes = total[lead_group]
    winner[candidates[lead]] = np.where(votes > 0, WINNER_A, np.where(votes < 0, WINNER_B, TIE)).astype(np.int8)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_a[candidates[lead]] = np.where(p_count[lead_group] > 0, p_sum[lead_group] / np.maximum(p_count[lead_group], 1),
                                         np.nan)
    vote = verdicts.vote.copy()
    vote[candidates[lead]] = 0
    keep = np.ones(len(verdicts), dtype=bool)
    keep[drop] = False
    merged = replace(verdicts, winner=winner, p_a=p_a, vote=vote)
    return take(merged, keep), int(repeated.sum()), int(lead.sum())


def select(verdicts: Verdicts, selection=None, *, include_invalid: bool = False) -> Selected:
    """The verdicts a :class:`peercore.domain.selection.Selection` picks, and what it merged or left out.

    In order: judges (names, prefixes ending in ``:``, kinds), contestants, question
    categories, criteria and turns filter the verdicts; unparsed replies are left out
    (kept with ``include_invalid``, for agreement's "miss" counting and the health
    check); with ``final_only``, only each judge's last-round verdict on a comparison;
    with ``repeated_votes="majority"``, each comparison's repeated votes become their
    majority; with ``common_contestants``, only contestants every chosen judge judged.

    Raises
    ------
    ValueError
        If a judge name or prefix matches no judge (the judges are listed).
    """
    selection = selection or Selection()
    keep = np.ones(len(verdicts), dtype=bool)
    chosen = np.ones(len(verdicts.judges), dtype=bool)
    if selection.judges is not None:
        chosen &= judge_codes(verdicts, selection.judges)
    if selection.kinds is not None:
        wanted = {str(k) for choice in selection.kinds for k in parse(KindChoice, choice, "kinds").kinds()}
        chosen &= np.array([k in wanted for k in verdicts.judge_kinds], dtype=bool)
    if not chosen.all():
        keep &= chosen[verdicts.judge]
    if selection.contestants is not None:
        allowed = np.array([m in set(selection.contestants) for m in verdicts.models], dtype=bool)
        keep &= allowed[verdicts.a] & allowed[verdicts.b]
    if selection.categories is not None:
        allowed = np.array([c in set(selection.categories) for c in verdicts.categories], dtype=bool)
        keep &= allowed[verdicts.question_category[verdicts.question]]
    if selection.criteria is not None:
        allowed = np.array([c in set(selection.criteria) for c in verdicts.criteria], dtype=bool)
        keep &= allowed[verdicts.criterion]
    if selection.turns is not None:
        turn = np.where(verdicts.turn == 0, 1, verdicts.turn)
        keep &= np.isin(turn, np.asarray(selection.turns, dtype=np.int64))
    unparsed = 0
    if not include_invalid:
        invalid = keep & (verdicts.winner < 0)
        unparsed = int(invalid.sum())
        keep &= ~invalid
    out = take(verdicts, keep)
    earlier = merged_votes = merged_comparisons = 0
    if selection.final_only:
        out, earlier = final_only(out)
    if parse(RepeatedVotes, selection.repeated_votes, "repeated_votes") is RepeatedVotes.MAJORITY:
        out, merged_votes, merged_comparisons = majority(out)
    if selection.common_contestants:
        out = _common_contestants(out)
    return Selected(compact(out), SelectionNotes(unparsed=unparsed, earlier_rounds=earlier, merged_votes=merged_votes,
                                                 merged_comparisons=merged_comparisons))


def _common_contestants(verdicts: Verdicts) -> Verdicts:
    by_judge = contestants_by_judge(take(verdicts, verdicts.winner >= 0))
    if len(by_judge) < 2:
        return verdicts
    common = set.intersection(*by_judge.values())
    allowed = np.array([m in common for m in verdicts.models], dtype=bool)
    return take(verdicts, allowed[verdicts.a] & allowed[verdicts.b])


def candidates_per_question(verdicts: Verdicts) -> pd.DataFrame:
    """How many distinct contestants each judge compared on each question (readable verdicts).

    Returns
    -------
    DataFrame ``judge, question_id, candidates``: one row per judge and question with a
    readable verdict (what the Efficiency and NLG pages sub-sample: questions with three
    candidates or more).
    """
    readable = take(verdicts, verdicts.winner >= 0)
    if len(readable) == 0:
        return pd.DataFrame({"judge": pd.Series([], dtype=object), "question_id": pd.Series([], dtype=object),
                             "candidates": pd.Series([], dtype=np.int64)})
    owner = group_ids([readable.judge, readable.question])
    pairs = distinct(np.concatenate([owner * readable.n_models + readable.a, owner * readable.n_models + readable.b]))
    groups, sizes = np.unique(pairs // readable.n_models, return_counts=True)
    rows = first_rows(owner)[groups]
    return pd.DataFrame({"judge": np.asarray(readable.judges, dtype=object)[readable.judge[rows]],
                         "question_id": readable.questions[readable.question[rows]],
                         "candidates": sizes.astype(np.int64)})
