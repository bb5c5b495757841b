"""Invariants of peercore.agreement and peercore.bias (hypothesis)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peercore.agreement import agreement, cohen_kappa, fleiss_kappa
from peercore.bias import position_bias, swap_consistency
from peercore.judgments import judgments_from_frame, mirror

MODELS = ["m0", "m1", "m2"]
LABELS = st.sampled_from(["model_a", "model_b", "tie"])
SETTINGS = settings(max_examples=50, deadline=None)


ORDERED_PAIRS = [(a, b) for a in MODELS for b in MODELS if a != b]


def rows(judges=("j0", "j1"), min_size=0, max_size=15):
    """Rows (question_id, model_a, model_b, judge, winner, turn) over a small universe."""
    row = st.tuples(
        st.sampled_from(["q0", "q1", "q2"]),
        st.sampled_from(ORDERED_PAIRS),
        st.sampled_from(judges),
        LABELS,
        st.sampled_from([None, 1, 2]),
    ).map(lambda r: (r[0], *r[1], *r[2:]))
    return st.lists(row, min_size=min_size, max_size=max_size)


def table(records) -> pd.DataFrame:
    frame = pd.DataFrame(records, columns=["question_id", "model_a", "model_b", "judge", "winner", "turn"])
    return judgments_from_frame(frame)


def same(x: float, y: float) -> bool:
    return (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, abs=1e-12)


def same_result(first, second) -> bool:
    return first.n == second.n and all(
        same(getattr(first, f), getattr(second, f)) for f in ("agreement", "cohen_kappa", "fleiss_kappa")
    )


def relabel(frame: pd.DataFrame, permutation: dict[str, str]) -> pd.DataFrame:
    return frame.assign(model_a=frame["model_a"].map(permutation), model_b=frame["model_b"].map(permutation))


# ------------------------------------------------------------------------------- kappas


@SETTINGS
@given(st.lists(st.tuples(LABELS, LABELS), max_size=30))
def test_kappas_are_symmetric_and_bounded(pairs):
    first = [p[0] for p in pairs]
    second = [p[1] for p in pairs]
    for kappa in (
        (cohen_kappa(first, second), cohen_kappa(second, first)),
        (fleiss_kappa(np.column_stack([first, second]) if pairs else np.empty((0, 2))),
         fleiss_kappa(np.column_stack([second, first]) if pairs else np.empty((0, 2)))),
    ):
        assert same(*kappa)
        assert math.isnan(kappa[0]) or -1.0 - 1e-12 <= kappa[0] <= 1.0 + 1e-12


# ---------------------------------------------------------------------------- agreement


@SETTINGS
@given(rows(judges=("j0",), min_size=1))
def test_agreement_of_a_table_with_itself_is_one(records):
    judgments = table(records).drop_duplicates(["question_id", "model_a", "model_b", "turn"])
    result = agreement(judgments, judgments)
    assert result.n == len(judgments)
    assert result.agreement == 1.0


@SETTINGS
@given(rows(), rows(judges=("h0", "h1", "h2")), st.sampled_from(["majority", "votes"]), st.sampled_from(["include", "exclude"]))
def test_mirroring_both_tables_leaves_agreement_unchanged(judge_rows, reference_rows, mode, ties):
    judgments, reference = table(judge_rows), table(reference_rows)
    before = agreement(judgments, reference, reference_mode=mode, ties=ties)
    after = agreement(mirror(judgments), mirror(reference), reference_mode=mode, ties=ties)
    assert same_result(before, after)


@SETTINGS
@given(rows(), rows(judges=("h0", "h1")), st.permutations(MODELS), st.sampled_from(["majority", "votes"]))
def test_relabelling_models_leaves_agreement_unchanged(judge_rows, reference_rows, permuted, mode):
    judgments, reference = table(judge_rows), table(reference_rows)
    permutation = dict(zip(MODELS, permuted))
    before = agreement(judgments, reference, reference_mode=mode)
    after = agreement(relabel(judgments, permutation), relabel(reference, permutation), reference_mode=mode)
    assert same_result(before, after)


# ------------------------------------------------------------------------ position bias


@SETTINGS
@given(rows(min_size=1))
def test_mirroring_all_rows_mirrors_position_bias(records):
    judgments = table(records).assign(p_a=lambda f: np.linspace(0.0, 1.0, len(f)))
    before, after = position_bias(judgments), position_bias(mirror(judgments))
    assert (before["n_decisive"] == after["n_decisive"]).all()
    np.testing.assert_allclose(after["p_first"], 1.0 - before["p_first"], atol=1e-12)
    np.testing.assert_allclose(after["ci_low"], 1.0 - before["ci_high"], atol=1e-12)
    np.testing.assert_allclose(after["ci_high"], 1.0 - before["ci_low"], atol=1e-12)
    np.testing.assert_allclose(after["tie_rate"], before["tie_rate"], atol=1e-12)
    np.testing.assert_allclose(after["mean_p_a"], 1.0 - before["mean_p_a"], atol=1e-12)


@SETTINGS
@given(rows(), st.permutations(MODELS))
def test_relabelling_models_leaves_position_bias_and_swap_consistency_unchanged(records, permuted):
    judgments = table(records)
    relabelled = relabel(judgments, dict(zip(MODELS, permuted)))
    pd.testing.assert_frame_equal(position_bias(judgments), position_bias(relabelled))
    pd.testing.assert_frame_equal(swap_consistency(judgments), swap_consistency(relabelled))


@SETTINGS
@given(rows())
def test_swap_consistency_shares_partition_the_pairs(records):
    judgments = table(records)
    out = swap_consistency(judgments)
    with_pairs = out[out["n_pairs"] > 0]
    total = with_pairs[["consistent", "inconsistent_first", "inconsistent_second"]].sum(axis=1)
    np.testing.assert_allclose(total, 1.0, atol=1e-12)
    # mirroring every row swaps the two kinds of inconsistency
    mirrored = swap_consistency(mirror(judgments))
    np.testing.assert_allclose(mirrored["inconsistent_first"], out["inconsistent_second"], atol=1e-12)
