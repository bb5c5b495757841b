"""Vectorised tallies for million-row studies: the same tables as their row-by-row references.

:func:`peercore.bias.swap_consistency` pairs verdicts in a Python loop, about 3 s per
million verdicts; :func:`swap_consistency` here counts the same pairs with integer codes
and ``bincount`` (a fraction of a second) and returns the same frame.
``tests/unit/test_aggregates.py`` checks them against the references on random tables.
The references stay the definitions; these are used where a page must open on an
Arena-sized study (:func:`peercore.ui.data.bias_tables`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["swap_consistency", "swap_consistency_from_codes"]


def _codes(values: pd.Series) -> np.ndarray:
    """Integer codes, missing values one code of their own (equal only to each other)."""
    return pd.factorize(values, use_na_sentinel=True)[0].astype(np.int64) + 1


def _ranked_codes(first: pd.Series, second: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes of two name columns in one numbering that follows the names' sort order."""
    codes_1, names_1 = pd.factorize(first)
    codes_2, names_2 = pd.factorize(second)
    names = sorted(set(map(str, names_1)) | set(map(str, names_2)))
    rank = {name: k for k, name in enumerate(names)}
    map_1 = np.array([rank[str(n)] for n in names_1], dtype=np.int64)
    map_2 = np.array([rank[str(n)] for n in names_2], dtype=np.int64)
    return map_1[codes_1], map_2[codes_2]


def swap_consistency(judgments: pd.DataFrame) -> pd.DataFrame:
    """:func:`peercore.bias.swap_consistency` (MT-Bench Table 2), counted with codes instead of a Python loop.

    Two verdicts pair when one judge judged the same question, turn and criterion in both
    orders; every verdict in one order pairs with every verdict in the other. For a key
    with :math:`F_v` verdicts ``v`` (+1 first, 0 tie, -1 second) in the order whose
    first model sorts first and :math:`B_w` in the other, the pairs are
    :math:`\\sum_{v, w} F_v B_w`, consistent when :math:`v + w = 0`, else leaning to the
    sign of :math:`v + w`.

    Returns
    -------
    DataFrame
        As the reference: indexed by judge (sorted), ``n_pairs, consistent,
        inconsistent_first, inconsistent_second``.
    """
    from peercore import bias
    from peercore.agreement import _canonical

    frame = _canonical(judgments, "judgments")
    if frame["winner"].isna().any():  # no defined vote: the reference decides what that means
        return bias.swap_consistency(judgments)
    code_a, code_b = _ranked_codes(frame["model_a"], frame["model_b"])  # code order is name order
    forward = code_a < code_b
    judge_codes, judges = pd.factorize(frame["judge"].astype(str))
    from peercore.study import _row_groups

    # Question and pair first: they tell most verdicts apart, and settled rows skip the other columns.
    key = _row_groups(pd.DataFrame({
        "question": _codes(frame["question_id"].astype(str)), "low": np.minimum(code_a, code_b),
        "high": np.maximum(code_a, code_b), "judge": judge_codes, "turn": _codes(frame["turn"]),
        "criterion": _codes(frame["criterion"])}), ["question", "low", "high", "judge", "turn", "criterion"])
    winner_codes, winners = pd.factorize(frame["winner"])
    position = {"model_a": 0, "tie": 1, "model_b": 2}  # +1, 0, -1
    vote = np.array([position[w] for w in winners], dtype=np.int64)[winner_codes]
    return _swap_table(key, forward, vote, judge_codes.astype(np.int64), [str(j) for j in judges])


def swap_consistency_from_codes(question: np.ndarray, code_a: np.ndarray, code_b: np.ndarray, judge: np.ndarray,
                                judges, turn: np.ndarray, criterion: np.ndarray, winner: np.ndarray) -> pd.DataFrame:
    """:func:`swap_consistency` from integer columns (the store's codes): the same table, no names per row.

    Parameters
    ----------
    question : one integer per question (any numbering).
    code_a, code_b : the contestants, numbered in the order of their names.
    judge : index into ``judges`` (names) of each verdict's judge.
    turn, criterion : integers (one value for "not given").
    winner : 0 ``model_a``, 1 ``model_b``, 2 ``tie`` (the store's codes).
    """
    from peercore.study import _row_groups

    forward = code_a < code_b
    columns = {"question": question, "low": np.minimum(code_a, code_b), "high": np.maximum(code_a, code_b),
               "judge": judge, "turn": turn, "criterion": criterion}
    sizes = [int(v.max(initial=0)) + 1 for v in columns.values()]
    if all(int(v.min(initial=0)) >= 0 for v in columns.values()) and np.prod(np.array(sizes, dtype=float)) < 2.0 ** 62:
        packed = np.zeros(len(question), dtype=np.int64)  # one integer per key: a single factorize
        for values, size in zip(columns.values(), sizes):
            packed = packed * size + values
        key = pd.factorize(packed)[0].astype(np.int64)
    else:
        key = _row_groups(pd.DataFrame(columns), list(columns))
    vote = np.array([0, 2, 1], dtype=np.int64)[winner]  # model_a -> +1 (0), model_b -> -1 (2), tie -> 0 (1)
    used = np.unique(judge)
    remap = np.full(len(judges), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    return _swap_table(key, forward, vote, remap[judge], [str(judges[k]) for k in used])


def _swap_table(key, forward, vote, judge_codes, judges) -> pd.DataFrame:
    """The swap-consistency table from each verdict's key, order (forward), vote code and judge."""
    from peercore import bias

    n_keys = int(key.max(initial=-1)) + 1
    fwd = np.bincount(key[forward] * 3 + vote[forward], minlength=3 * n_keys).reshape(n_keys, 3)
    bwd = np.bincount(key[~forward] * 3 + vote[~forward], minlength=3 * n_keys).reshape(n_keys, 3)
    plus, tie, minus = 0, 1, 2
    consistent = fwd[:, plus] * bwd[:, minus] + fwd[:, tie] * bwd[:, tie] + fwd[:, minus] * bwd[:, plus]
    first = fwd[:, plus] * bwd[:, plus] + fwd[:, plus] * bwd[:, tie] + fwd[:, tie] * bwd[:, plus]
    second = fwd[:, minus] * bwd[:, minus] + fwd[:, minus] * bwd[:, tie] + fwd[:, tie] * bwd[:, minus]
    owner = np.zeros(n_keys, dtype=np.int64)
    owner[key] = judge_codes
    per_judge = [np.bincount(owner, weights, minlength=len(judges)).astype(np.int64)
                 for weights in (consistent, first, second)]
    counts = {str(judge): [int(c[k]) for c in per_judge] for k, judge in enumerate(judges)}
    # What the reference does with its counts, verbatim.
    tally = pd.DataFrame.from_dict(
        counts, orient="index", columns=["consistent", "inconsistent_first", "inconsistent_second"], dtype=float
    ).reindex(sorted(counts))
    n_pairs = tally.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = tally.div(n_pairs.where(n_pairs > 0), axis=0)
    out = pd.concat([n_pairs.rename("n_pairs").astype("int64"), shares.astype(float)], axis=1)
    return bias._judge_indexed(out)
