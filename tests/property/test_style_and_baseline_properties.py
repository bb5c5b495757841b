"""Invariants of the estimators of issue 11 (hypothesis): style control, sandwich intervals, baseline win rates,
the judge-bias model and Krippendorff's alpha.

* relabelling the models permutes every output;
* swapping the two sides of every battle (``mirror`` plus negated style features) changes no rating, no
  interval and no style coefficient;
* all-zero style features give plain Bradley-Terry exactly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from peercore.agreement import krippendorff_alpha
from peercore.bias import judge_bias_model
from peercore.judgments import judgments_from_frame, mirror
from peercore.ranking.alpacaeval import baseline_win_rates
from peercore.ranking.bradley_terry import bradley_terry_intervals
from peercore.ranking.contextual import contextual_bradley_terry

MODELS = ["m0", "m1", "m2", "m3"]
RENAME = st.permutations(["zz", "yy", "xx", "ww"]).map(lambda names: dict(zip(MODELS, names)))


@st.composite
def battles(draw, min_rows=12, max_rows=40):
    """A judgment table among 3-4 models where every model won and lost something (finite MLE), with 2 features."""
    n_models = draw(st.integers(3, len(MODELS)))
    rows, features = [], []
    for k in range(draw(st.integers(min_rows, max_rows))):
        a = draw(st.integers(0, n_models - 1))
        b = draw(st.integers(0, n_models - 2))
        b = b + 1 if b >= a else b
        rows.append({"question_id": str(k), "model_a": MODELS[a], "model_b": MODELS[b],
                     "judge": draw(st.sampled_from(["j1", "j2"])),
                     "winner": draw(st.sampled_from(["model_a", "model_b", "model_a", "model_b", "tie"]))})
        features.append([draw(st.floats(-1, 1)), draw(st.floats(-1, 1))])
    frame = judgments_from_frame(pd.DataFrame(rows))
    # every model both wins and loses once against each neighbour, so ratings stay finite
    extra = []
    for i in range(n_models):
        j = (i + 1) % n_models
        extra += [(MODELS[i], MODELS[j], "model_a"), (MODELS[i], MODELS[j], "model_b")]
    frame = judgments_from_frame(pd.concat([frame, pd.DataFrame(
        [{"question_id": f"x{k}", "model_a": a, "model_b": b, "judge": "j1", "winner": w}
         for k, (a, b, w) in enumerate(extra)])], ignore_index=True))
    features += [[0.5, -0.5], [-0.5, 0.5]] * n_models
    return frame, np.array(features)


def _relabel(table: pd.DataFrame, mapping: dict) -> pd.DataFrame:
    return judgments_from_frame(table.assign(model_a=table["model_a"].map(mapping), model_b=table["model_b"].map(mapping)))


@settings(max_examples=15, deadline=None)
@given(data=battles(), mapping=RENAME)
def test_relabelling_permutes_style_controlled_ratings_and_intervals(data, mapping):
    table, x = data
    before = contextual_bradley_terry(table, x, names=["f", "g"]).table.rename(index=mapping).sort_index()
    after = contextual_bradley_terry(_relabel(table, mapping), x, names=["f", "g"]).table.sort_index()
    pd.testing.assert_frame_equal(before[["rating", "sandwich_low", "sandwich_high"]],
                                  after[["rating", "sandwich_low", "sandwich_high"]], atol=1e-6, check_names=False)


@settings(max_examples=15, deadline=None)
@given(data=battles())
def test_swapping_sides_mirrors_style_control(data):
    table, x = data
    fit = contextual_bradley_terry(table, x, names=["f", "g"])
    swapped = contextual_bradley_terry(mirror(table), -x, names=["f", "g"])
    pd.testing.assert_frame_equal(fit.table[["rating", "sandwich_low", "sandwich_high"]].sort_index(),
                                  swapped.table[["rating", "sandwich_low", "sandwich_high"]].sort_index(), atol=1e-6)
    assert np.allclose(fit.coefficients["coefficient"], swapped.coefficients["coefficient"], atol=1e-6)


@settings(max_examples=15, deadline=None)
@given(data=battles(), reweight=st.booleans())
def test_zero_features_give_plain_bradley_terry(data, reweight):
    table, x = data
    fit = contextual_bradley_terry(table, np.zeros_like(x), names=["f", "g"], reweight=reweight)
    plain = bradley_terry_intervals(table, rounds=0, reweight=reweight)
    columns = ["rating", "sandwich_low", "sandwich_high"]
    pd.testing.assert_frame_equal(fit.table[columns].sort_index(), plain[columns].sort_index(), atol=1e-6)
    assert (fit.coefficients["coefficient"] == 0).all()


@settings(max_examples=15, deadline=None)
@given(data=battles(), mapping=RENAME)
def test_plain_sandwich_permutes_and_ignores_presentation_order(data, mapping):
    table, _ = data
    base = bradley_terry_intervals(table, rounds=0, intervals="sandwich")
    renamed = bradley_terry_intervals(_relabel(table, mapping), rounds=0, intervals="sandwich")
    pd.testing.assert_frame_equal(base.rename(index=mapping).sort_index()[["rating", "ci_low", "ci_high"]],
                                  renamed.sort_index()[["rating", "ci_low", "ci_high"]], atol=1e-6, check_names=False)
    mirrored = bradley_terry_intervals(mirror(table), rounds=0, intervals="sandwich")
    pd.testing.assert_frame_equal(base.sort_index()[["rating", "ci_low", "ci_high"]],
                                  mirrored.sort_index()[["rating", "ci_low", "ci_high"]], atol=1e-6)


@st.composite
def baseline_battles(draw):
    """Battles of m1..m3 against the baseline m0 on 10 questions; one answer (length) per question and model."""
    rows, lengths = [], []
    length = {(q, m): draw(st.integers(1, 500)) for q in range(10) for m in MODELS}
    for k in range(draw(st.integers(8, 30))):
        model = draw(st.sampled_from(["m1", "m2", "m3"]))
        first = draw(st.booleans())
        p = draw(st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0]))
        rows.append({"question_id": f"q{k % 10}", "model_a": model if first else "m0",
                     "model_b": "m0" if first else model, "judge": "j",
                     "winner": "tie" if p == 0.5 else ("model_a" if (p > 0.5) == first else "model_b"),
                     "p_a": p if first else 1 - p})
        own, base = length[(k % 10, model)], length[(k % 10, "m0")]
        lengths.append((own, base) if first else (base, own))
    frame = judgments_from_frame(pd.DataFrame(rows))
    return frame, pd.DataFrame(lengths, columns=["length_a", "length_b"], index=frame.index)


@settings(max_examples=25, deadline=None)
@given(data=baseline_battles(), mapping=RENAME)
def test_baseline_win_rates_permute_and_ignore_which_side_the_baseline_was_on(data, mapping):
    table, lengths = data
    assume(table["model_a"].ne("m0").any() or table["model_b"].ne("m0").any())
    columns = ["win_rate", "standard_error", "discrete_win_rate", "n_wins", "n_wins_base", "n_draws", "avg_length"]
    base = baseline_win_rates(table, baseline="m0", lengths=lengths, lc_rounds=0).table.set_index("model")
    renamed = baseline_win_rates(_relabel(table, mapping), baseline=mapping["m0"], lengths=lengths,
                                 lc_rounds=0).table.set_index("model")
    pd.testing.assert_frame_equal(base.rename(index=mapping)[columns].sort_index(), renamed[columns].sort_index(),
                                  check_names=False)
    swapped = baseline_win_rates(mirror(table), baseline="m0", lengths=lengths.rename(
        columns={"length_a": "length_b", "length_b": "length_a"}), lc_rounds=0).table.set_index("model")
    pd.testing.assert_frame_equal(base[columns].sort_index(), swapped[columns].sort_index())


@st.composite
def panel(draw):
    """Two judges, each judging every ordered pair of the 4 models twice, with random verdicts."""
    rows = []
    for judge in ("j1", "j2"):
        for a in MODELS:
            for b in MODELS:
                if a != b:
                    for k in range(2):
                        rows.append({"question_id": f"{a}{b}{k}", "model_a": a, "model_b": b, "judge": judge,
                                     "winner": draw(st.sampled_from(["model_a", "model_b", "tie"]))})
    return judgments_from_frame(pd.DataFrame(rows))


@settings(max_examples=10, deadline=None)
@given(table=panel(), mapping=RENAME)
def test_judge_bias_model_permutes_with_the_models(table, mapping):
    aliases = {"j1": "m0", "j2": "m1"}
    before = judge_bias_model(table, aliases=aliases).table
    after = judge_bias_model(_relabel(table, mapping), aliases={j: mapping[m] for j, m in aliases.items()}).table
    pd.testing.assert_frame_equal(before[["coefficient", "ci_low", "ci_high"]], after[["coefficient", "ci_low",
                                                                                         "ci_high"]], atol=1e-5)


@settings(max_examples=15, deadline=None)
@given(data=battles(min_rows=20, max_rows=40), mapping=RENAME)
def test_krippendorff_alpha_ignores_model_names_and_presentation(data, mapping):
    table, _ = data
    duplicated = judgments_from_frame(pd.concat([table, table.assign(judge="j3")], ignore_index=True))
    base = krippendorff_alpha(duplicated, rounds=0)
    renamed = krippendorff_alpha(_relabel(duplicated, mapping), rounds=0)
    mirrored = krippendorff_alpha(mirror(duplicated), rounds=0)
    assert (base.alpha == renamed.alpha or (np.isnan(base.alpha) and np.isnan(renamed.alpha)))
    assert np.isclose(base.alpha, mirrored.alpha, equal_nan=True)
