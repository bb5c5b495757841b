"""Per-context evaluation against human scores: scipy's correlations per context, the PoE scorers
raw and debiased, pairwise accuracy, and the efficiency curves measured against humans."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from peercore.bias import apply_threshold, debias_threshold
from peercore.efficiency import batch_scores, efficiency_curve, position_offsets
from peercore.judgments import judgments_from_frame
from peercore.nlg.evaluation import (
    Offsets, average_correlation, comparative_scores, evaluation_table, judge_offsets, pairwise_accuracy,
    per_context_correlations, score_pairwise_accuracy,
)
from peercore.ranking.poe import Comparisons, poe_bradley_terry, poe_gaussian, win_ratio

# Fixed data: 3 contexts x 5 candidates, human scores with ties, predictions with ties.
HUMAN = pd.DataFrame(
    [("c1", m, v) for m, v in zip("abcde", (3.0, 2.33, 2.33, 1.0, 1.67))]
    + [("c2", m, v) for m, v in zip("abcde", (1.0, 3.0, 2.0, 2.67, 1.33))]
    + [("c3", m, v) for m, v in zip("abcde", (2.0, 2.0, 3.0, 1.0, 2.67))],
    columns=["question_id", "model", "value"])
PREDICTED = pd.DataFrame(
    [("c1", m, v) for m, v in zip("abcde", (0.9, 0.4, 0.5, 0.1, 0.4))]
    + [("c2", m, v) for m, v in zip("abcde", (0.2, 0.7, 0.8, 0.6, 0.1))]
    + [("c3", m, v) for m, v in zip("abcde", (6.0, 5.0, 7.5, 2.0, 5.0))],
    columns=["question_id", "model", "score"])


def test_per_context_correlation_equals_scipy_per_context():
    table = per_context_correlations(PREDICTED, HUMAN)
    assert table["question_id"].tolist() == ["c1", "c2", "c3"]
    for context, row in table.set_index("question_id").iterrows():
        x = PREDICTED[PREDICTED["question_id"] == context]["score"].to_numpy()
        y = HUMAN[HUMAN["question_id"] == context]["value"].to_numpy()
        assert row["spearman"] == pytest.approx(scipy.stats.spearmanr(x, y).statistic, abs=1e-12)
        assert row["pearson"] == pytest.approx(scipy.stats.pearsonr(x, y).statistic, abs=1e-12)
    # and the averaged value is their plain mean over contexts (the papers' number)
    mean = average_correlation(table["spearman"])
    assert mean["mean"] == pytest.approx(table["spearman"].mean()) and mean["contexts"] == 3
    assert mean["ci_low"] <= mean["mean"] <= mean["ci_high"]
    assert average_correlation(table["spearman"]) == mean  # seeded


def test_per_context_correlation_defines_the_edge_cases():
    # candidates are matched by name, whatever the row order
    shuffled = PREDICTED.sample(frac=1.0, random_state=3)
    pd.testing.assert_frame_equal(per_context_correlations(shuffled, HUMAN).sort_values("question_id")
                                  .reset_index(drop=True), per_context_correlations(PREDICTED, HUMAN))
    flat_human = HUMAN.assign(value=np.where(HUMAN["question_id"] == "c2", 2.0, HUMAN["value"]))
    flat_prediction = PREDICTED.assign(score=np.where(PREDICTED["question_id"] == "c3", 1.0, PREDICTED["score"]))
    table = per_context_correlations(flat_prediction, flat_human).set_index("question_id")
    assert np.isnan(table.loc["c2", "spearman"]) and table.loc["c2", "constant_human"]  # no order to recover
    assert table.loc["c3", "spearman"] == 0.0  # a constant prediction says nothing about the order
    assert average_correlation(table["spearman"])["contexts"] == 2
    few = per_context_correlations(PREDICTED[PREDICTED["model"].isin(["a", "b"])], HUMAN)
    assert len(few) == 0  # fewer than three candidates: left out
    with pytest.raises(ValueError, match="gives 'a' in context 'c1' twice"):
        per_context_correlations(pd.concat([PREDICTED, PREDICTED.iloc[:1]]), HUMAN)


def _symmetric(p_of, models="abcde", context="c1", judge="j") -> pd.DataFrame:
    rows = [{"question_id": context, "model_a": a, "model_b": b, "judge": judge, "p_a": p_of(a, b),
             "winner": "model_a" if p_of(a, b) > 0.5 else "model_b" if p_of(a, b) < 0.5 else "tie"}
            for a, b in itertools.permutations(models, 2)]
    return judgments_from_frame(pd.DataFrame(rows))


def _biased_judge(quality: dict[str, float], bias: float = 0.25):
    # prefers the first position by `bias` on top of the quality difference
    return lambda a, b: float(np.clip(0.5 + 0.15 * (quality[a] - quality[b]) + bias, 0.01, 0.99))


def test_comparative_scores_are_the_poe_scorers_raw_and_debiased():
    quality = dict(zip("abcde", (3.0, 1.0, 2.5, -1.0, 0.0)))
    judgments = _symmetric(_biased_judge(quality))
    p = judgments["p_a"].to_numpy()
    c = Comparisons(tuple("abcde"), [ord(x) - 97 for x in judgments["model_a"]],
                    [ord(x) - 97 for x in judgments["model_b"]], p)
    raw = comparative_scores(judgments, method="poe_bt").set_index("model")["score"]
    np.testing.assert_allclose(raw.to_numpy(), poe_bradley_terry(c), atol=1e-7)
    offsets = judge_offsets(judgments)
    assert offsets == Offsets(float(np.median(p)), float(np.mean(p)))
    debiased = comparative_scores(judgments, method="poe_bt", offsets=offsets).set_index("model")["score"]
    np.testing.assert_allclose(debiased.to_numpy(), poe_bradley_terry(c, debias=True), atol=1e-6)
    gaussian = comparative_scores(judgments, method="poe_gaussian", offsets=offsets).set_index("model")["score"]
    np.testing.assert_allclose(gaussian.to_numpy(), poe_gaussian(c, debias=True).scores, atol=1e-9)
    # debiased win ratio = win ratio of the verdicts re-decided at tau (Liusie eq. 9-10)
    tau = debias_threshold(p)
    redecided = apply_threshold(judgments, tau)
    hard = redecided["winner"].map({"model_a": 1.0, "model_b": 0.0, "tie": 0.5}).to_numpy()
    expected = win_ratio(Comparisons(tuple("abcde"), c.i, c.j, hard))
    got = comparative_scores(judgments, method="win_ratio", offsets=offsets).set_index("model")["score"]
    np.testing.assert_allclose(got.to_numpy(), expected)
    # the raw hard decisions call a close pair (a, c) a 1-1 tie; the debiased ones recover the whole order
    assert (judgments.query("model_a in ['a', 'c'] and model_b in ['a', 'c']")["winner"] == "model_a").all()
    human = pd.DataFrame({"question_id": "c1", "model": list(quality), "value": list(quality.values())})
    rho = per_context_correlations(got.reset_index().assign(question_id="c1"), human)["spearman"].iloc[0]
    assert rho == pytest.approx(1.0)


def test_batched_debiased_scores_equal_the_one_problem_functions():
    rng = np.random.default_rng(5)
    for _ in range(20):
        n, k = 5, 12
        i = rng.integers(0, n, k)
        j = (i + rng.integers(1, n, k)) % n
        p = rng.uniform(0.05, 0.95, k)
        c = Comparisons(tuple("abcde"), i, j, p)
        beta = float(p.mean())
        got = batch_scores(i[None], j[None], p[None], np.ones((1, k), bool), n, "poe_bt", beta=beta)[0]
        np.testing.assert_allclose(got, poe_bradley_terry(c, debias=True), atol=1e-6)
        got = batch_scores(i[None], j[None], p[None], np.ones((1, k), bool), n, "poe_gaussian", beta=beta)[0]
        np.testing.assert_allclose(got, poe_gaussian(c, debias=True).scores, atol=1e-9)
    with pytest.raises(ValueError, match="beta"):
        batch_scores(i[None], j[None], p[None], np.ones((1, k), bool), n, "poe_bt", beta=1.0)
    with pytest.raises(ValueError, match="every comparison went the same way"):
        position_offsets([1.0, 1.0])


def test_pairwise_accuracy_raw_debiased_and_both_orders():
    human = pd.DataFrame({"question_id": "c1", "model": ["a", "b", "c"], "value": [3.0, 2.0, 2.0]})
    # a judge that always prefers the first position (p = 0.8) except when a comes second (0.3)
    judgments = _symmetric(lambda x, y: 0.3 if y == "a" else 0.8, models="abc")
    table = pairwise_accuracy(judgments, human, offsets=judge_offsets(judgments)).set_index("reading")
    # pairs with different human scores: (a,b), (b,a), (a,c), (c,a): right, right, right, right at 0.5
    assert table.loc["raw", "n"] == 4 and table.loc["raw", "accuracy"] == 1.0
    # tau = median p = 0.8: (a,b) and (a,c) sit at the threshold (half each), (b,a), (c,a) are right
    assert table.loc["debiased", "accuracy"] == pytest.approx(0.75)
    # both orders: (0.8 + 1 - 0.3) / 2 = 0.75 > 0.5 for a over b and a over c
    assert table.loc["both orders", "n"] == 2 and table.loc["both orders", "accuracy"] == 1.0
    assert table.loc["raw", "ci_low"] < 1.0 == table.loc["raw", "ci_high"]
    scored = score_pairwise_accuracy(pd.DataFrame({"question_id": "c1", "model": ["a", "b", "c"],
                                                   "score": [1.0, 2.0, 2.0]}), human)
    assert scored["n"] == 2 and scored["accuracy"] == 0.0


def test_evaluation_table_rows_and_contexts():
    quality = {"c1": dict(zip("abcde", (3.0, 1.0, 2.5, -1.0, 0.0))), "c2": dict(zip("abcde", (0.0, 2.0, 1.0, 3.0, -2.0)))}
    judgments = pd.concat([_symmetric(_biased_judge(q), context=c) for c, q in quality.items()], ignore_index=True)
    human = pd.DataFrame([(c, m, v) for c, q in quality.items() for m, v in q.items()],
                         columns=["question_id", "model", "value"])
    scores = human.rename(columns={"value": "expected"}).assign(value=lambda f: f["expected"] * 2, score=None)
    table = evaluation_table(human, judgments=judgments, scores=scores, rounds=200)
    assert table[["approach", "scorer", "debiased"]].values.tolist()[:3] == [
        ["absolute", "absolute", False], ["comparative", "win_ratio", False], ["comparative", "win_ratio", True]]
    assert len(table) == 11 and table["contexts"].eq(2).all()
    assert table.iloc[0]["spearman"] == pytest.approx(1.0)  # scores proportional to the human ones
    only = evaluation_table(human, scores=scores, contexts=["c2"], rounds=50)
    assert only["contexts"].tolist() == [1]
    with pytest.raises(ValueError, match="give judgments"):
        evaluation_table(human)


def test_efficiency_curve_against_human_scores():
    quality = {f"c{k}": dict(zip("abcdef", np.random.default_rng(k).permutation(6).astype(float))) for k in range(6)}
    judgments = pd.concat([_symmetric(lambda a, b, q=q: 0.5 + 0.08 * (q[a] - q[b]), models="abcdef", context=c)
                           for c, q in quality.items()], ignore_index=True)
    human = pd.DataFrame([(c, m, v) for c, q in quality.items() for m, v in q.items()],
                         columns=["question_id", "model", "value"])
    curve = efficiency_curve(judgments, methods=("poe_gaussian", "win_ratio"), repeats=3, reference="human",
                             human=human, sizes=[1, 5, 30])
    full = curve[(curve["strategy"] == "random") & (curve["k"] == 30)]
    assert np.allclose(full["spearman"], 1.0) and full["questions"].eq(6).all()
    one = curve[(curve["strategy"] == "random") & (curve["k"] == 1)]
    assert (one["spearman"] < 1.0).all()
    greedy = curve[curve["strategy"] == "greedy"]
    assert greedy["k"].max() == 15  # one order per pair
    # a context without human scores for every candidate is left out; none at all is refused
    partial = human[~((human["question_id"] == "c0") & (human["model"] == "a"))]
    assert efficiency_curve(judgments, methods=("bt",), repeats=1, reference="human", human=partial,
                            sizes=[30])["questions"].max() == 5
    with pytest.raises(ValueError, match="with a human score for each"):
        efficiency_curve(judgments, methods=("bt",), reference="human", human=human.iloc[:0])
    debiased = efficiency_curve(judgments, methods=("poe_bt",), repeats=2, reference="human", human=human,
                                sizes=[30], debias=True)
    assert np.allclose(debiased.loc[debiased["strategy"] == "random", "spearman"], 1.0)
