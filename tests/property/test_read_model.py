"""The read model against row-by-row oracles (tests/oracles.py) on random studies.

Selection, final verdicts, the majority of repeated votes (PRD section 4: the human
majority is the sign of the summed votes), position bias (Liusie et al. 2024, section 6,
Table 4 and eq. 8) and swap consistency (MT-Bench, Zheng et al. 2023, section 3.3,
Table 2) are each implemented once, on integer codes; these tests check them against
plain loops that say what each number means.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oracles
from peercore import position
from peercore.domain import verdicts as V
from peercore.domain.selection import Selection
from peercore.judges import judge_kind

MODELS = ["m0", "m1", "m2", "m3"]
JUDGES = ["gpt", "Human:ann", "human:bob", "debate:panel"]


@st.composite
def studies(draw):
    n = draw(st.integers(0, 60))
    rows = []
    for _ in range(n):
        a, b = draw(st.lists(st.sampled_from(MODELS), min_size=2, max_size=2, unique=True))
        rows.append({
            "question_id": draw(st.sampled_from(["q1", "q2", "q3"])), "model_a": a, "model_b": b,
            "judge": draw(st.sampled_from(JUDGES)),
            "winner": draw(st.sampled_from(["model_a", "model_b", "tie", None])),
            "p_a": draw(st.sampled_from([math.nan, 0.2, 0.7])),
            "criterion": draw(st.sampled_from([None, "helpfulness"])),
            "turn": draw(st.sampled_from([0, 1, 2])), "round": draw(st.sampled_from([0, 0, 1])),
            "order_known": draw(st.booleans()),
        })
    return rows


def _frame(rows):
    frame = pd.DataFrame(rows, columns=["question_id", "model_a", "model_b", "judge", "winner", "p_a", "criterion",
                                        "turn", "round", "order_known"])
    return frame.assign(valid=frame["winner"].notna().astype(int))


def _decoded(table: V.Verdicts) -> list[tuple]:
    frame = V.to_frame(table)
    return sorted(zip(frame["question_id"], frame["model_a"], frame["model_b"], frame["judge"], frame["winner"],
                      frame["criterion"].fillna(""), frame["turn"].fillna(0).astype(int),
                      frame["round"].fillna(0).astype(int)))


def _rows(rows):
    return sorted((r["question_id"], r["model_a"], r["model_b"], r["judge"], r["winner"], r["criterion"] or "",
                   int(r["turn"]), int(r["round"])) for r in rows)


@settings(max_examples=150, deadline=None)
@given(studies(), st.booleans(), st.booleans(), st.sampled_from([None, ("gpt",), ("human:",), ("gpt", "debate:")]),
       st.sampled_from([None, ("human",), ("llm", "gold")]), st.sampled_from([None, ("m0", "m1", "m2")]),
       st.sampled_from([None, ("helpfulness",)]), st.sampled_from([None, (1,), (2,)]))
def test_select_equals_the_row_by_row_selection(rows, final, each, judges, kinds, contestants, criteria, turns):
    table = V.from_frame(_frame(rows)) if rows else V.empty()
    present = {r["judge"] for r in rows}
    if judges and any(not any(p.startswith(j) if j.endswith(":") else p == j for p in present) for j in judges):
        with pytest.raises(ValueError, match="matches no judge"):
            V.select(table, Selection(judges=judges))
        return
    selection = Selection(judges=judges, kinds=kinds, contestants=contestants, criteria=criteria, turns=turns,
                          final_only=final, repeated_votes="each" if each else "majority")
    got = V.select(table, selection)
    wanted_kinds = None if kinds is None else {k for c in kinds for k in (("debate", "adjudicator") if c == "gold" else (c,))}
    expected = oracles.select(rows, judges=judges, kinds=wanted_kinds, kind_of=judge_kind, contestants=contestants,
                              criteria=criteria, turns=turns, final=final, each_vote=each)
    assert _decoded(got.verdicts) == _rows(expected)


@settings(max_examples=100, deadline=None)
@given(studies())
def test_majority_counts_what_it_merged(rows):
    readable = [r for r in rows if r["winner"] is not None]
    table = V.from_frame(_frame(readable)) if readable else V.empty()
    merged, votes, comparisons = V.majority(table)
    assert len(table) - len(merged) == votes - comparisons
    expected = oracles.majority(readable)
    assert len(merged) == len(expected)
    p = {(r["question_id"], r["model_a"], r["model_b"], r["judge"], r["criterion"] or "", int(r["turn"]), int(r["round"])):
         r["p_a"] for r in expected}
    frame = V.to_frame(merged)
    for row in frame.itertuples():
        key = (row.question_id, row.model_a, row.model_b, row.judge, row.criterion if isinstance(row.criterion, str)
               else "", int(0 if pd.isna(row.turn) else row.turn), int(0 if pd.isna(row.round) else row.round))
        assert (math.isnan(row.p_a) and math.isnan(p[key])) or row.p_a == pytest.approx(p[key])


class _Hashed:
    """group_ids numbering combinations by hashing or sorting, as it does with many judges and models."""

    def __enter__(self):
        self.saved, V.COUNTED_COMBINATIONS = V.COUNTED_COMBINATIONS, -10 ** 9

    def __exit__(self, *exc):
        V.COUNTED_COMBINATIONS = self.saved


@settings(max_examples=150, deadline=None)
@given(studies())
def test_position_bias_uses_known_orders_on_pairs_seen_both_ways(rows):
    table = V.from_frame(_frame(rows)) if rows else V.empty()
    got = position.position_bias(table)
    with _Hashed():  # both ways of finding the pairs seen both ways round pick the same verdicts
        assert np.array_equal(position.position_rows(table), _direct_rows(table))
        pd.testing.assert_frame_equal(position.position_bias(table), got)
    expected = oracles.position_counts(rows)
    readable = {r["judge"] for r in rows if r["winner"] is not None}
    assert set(got.index) == readable
    for judge, row in got.iterrows():
        n, first, ties = expected.get(judge, (0, 0, 0))
        assert (row["n"], row["n_decisive"]) == (n, n - ties)
        if n - ties:
            assert row["p_first"] == pytest.approx(first / (n - ties))
            assert row["p_first_all"] == pytest.approx(first / n)  # Liusie eq. 8: over all comparisons
            assert row["position_note"] == ""
        if n == 0:
            assert math.isnan(row["p_first"]) and row["position_note"]


def _direct_rows(table):
    saved, V.COUNTED_COMBINATIONS = V.COUNTED_COMBINATIONS, 10 ** 9
    try:
        return position.position_rows(table)
    finally:
        V.COUNTED_COMBINATIONS = saved


@settings(max_examples=150, deadline=None)
@given(studies())
def test_swap_consistency_counts_every_pair_of_orders(rows):
    table = V.from_frame(_frame(rows)) if rows else V.empty()
    got = position.swap_consistency(table)
    expected = oracles.swap_counts(rows)
    for judge, row in got.iterrows():
        counts = expected.get(judge, (0, 0, 0))
        assert row["n_pairs"] == sum(counts)
        if sum(counts):
            shares = np.array(counts) / sum(counts)
            assert [row["consistent"], row["inconsistent_first"], row["inconsistent_second"]] == pytest.approx(shares)


def test_mirroring_every_verdict_turns_p_first_into_one_minus_p_first():
    """Liusie et al. section 6: swapping the positions of every comparison reflects the bias around 0.5."""
    rng = np.random.default_rng(3)
    rows = [{"question_id": f"q{q}", "model_a": a, "model_b": b, "judge": "j", "winner": w}
            for q in range(30) for a, b in (("x", "y"), ("y", "x"))
            for w in [rng.choice(["model_a", "model_b", "tie"], p=[0.6, 0.3, 0.1])]]
    frame = pd.DataFrame(rows)
    mirrored = frame.assign(model_a=frame["model_b"], model_b=frame["model_a"],
                            winner=frame["winner"].map({"model_a": "model_b", "model_b": "model_a", "tie": "tie"}))
    one = position.position_bias(V.from_frame(frame)).loc["j"]
    two = position.position_bias(V.from_frame(mirrored)).loc["j"]
    assert one["p_first"] == pytest.approx(1 - two["p_first"])
    assert one["ci_low"] == pytest.approx(1 - two["ci_high"])


def test_a_pair_seen_in_one_orientation_has_an_unknown_order_by_default():
    frame = pd.DataFrame({"question_id": ["q1", "q2", "q1", "q1"], "model_a": ["x", "x", "x", "y"],
                          "model_b": ["y", "y", "z", "z"], "judge": ["j"] * 4,
                          "winner": ["model_a", "model_b", "model_a", "tie"]})
    assert not V.from_frame(frame).order_known.any()
    both = pd.concat([frame, frame.assign(model_a=frame["model_b"], model_b=frame["model_a"])], ignore_index=True)
    assert V.from_frame(both).order_known.all()
    assert V.from_frame(frame, order="known").order_known.all()


@given(st.lists(st.integers(min_value=-2**62, max_value=2**62), max_size=300), st.integers(1, 3))
@settings(max_examples=200, deadline=None)
def test_distinct_is_numpy_unique(values, columns):
    """``V.distinct`` (sorting; numpy's hash-based ``np.unique`` was 20-50x slower at a million values)
    equals ``np.unique`` on any integer array, empty and 2-D included."""
    array = np.asarray(values, dtype=np.int64)
    array = array[: len(array) // columns * columns].reshape(-1, columns) if len(array) >= columns else array
    got = V.distinct(array)
    assert got.dtype == np.int64 and np.array_equal(got, np.unique(array))


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 5)), max_size=200))
@settings(max_examples=200, deadline=None)
def test_sorted_group_ids_are_the_groups_numbered_in_key_order(rows):
    """``group_ids(..., sorted_ids=True)`` forms the groups first-appearance ids form, numbered as ``np.unique``'s
    inverse numbers the packed keys; counting (few combinations) and hashing or sorting (many) agree."""
    columns = [np.array([r[k] for r in rows], dtype=np.int64) for k in range(3)]
    first = V.group_ids(columns)
    ordered = V.group_ids(columns, sorted_ids=True)
    with _Hashed():  # by hashing and sorting, as at Arena scale
        assert np.array_equal(V.group_ids(columns), first)
        assert np.array_equal(V.group_ids(columns, sorted_ids=True), ordered)
    assert len(ordered) == len(rows)
    if rows:
        pairs = set(zip(first.tolist(), ordered.tolist()))
        assert len(pairs) == len(set(first.tolist())) == len(set(ordered.tolist()))  # one group, one id each way
        packed = (columns[0] * 3 + columns[1]) * 6 + columns[2]
        assert np.array_equal(ordered, np.unique(packed, return_inverse=True)[1])
        assert np.array_equal(first, pd.factorize(packed)[0])  # numbered in order of first appearance
