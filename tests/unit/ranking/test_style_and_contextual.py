"""Style features (Chatbot Arena's style control) and the contextual Bradley-Terry model."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from peercore.judgments import judgments_from_frame
from peercore.ranking.bradley_terry import bradley_terry_intervals
from peercore.ranking.contextual import contextual_bradley_terry, standardise
from peercore.ranking.style import answer_style, battle_features, battle_lengths, features_for_controls, style_features

MARKDOWN = """# Title
Some **bold** text and __more bold__.

## Section
- one
* two
1. three

```python
# not a header
- not a list
**not bold**
```
"""


def test_answer_style_counts_markdown_outside_code_blocks():
    style = answer_style([MARKDOWN, "plain", None])
    assert style.loc[0, ["header", "list", "bold"]].tolist() == [2, 3, 2]
    assert style.loc[0, "length"] == len(MARKDOWN)
    assert style.loc[1].tolist() == [5, 0, 0, 0]
    assert style.loc[2].isna().all()


def test_battle_features_ratio_and_zero_when_both_zero():
    got = battle_features(np.array([[30, 0, 2]]), np.array([[10, 0, 0]]))
    assert got.tolist() == [[0.5, 0.0, 1.0]]


def test_controls_map_to_features_in_a_fixed_order():
    assert features_for_controls(["markdown", "length"]) == ("length", "header", "list", "bold")
    assert features_for_controls(["length", "length"]) == ("length",)
    with pytest.raises(ValueError, match="control must be one of"):
        features_for_controls(["emoji"])


def test_style_features_from_stored_answers_and_from_file_columns():
    judgments = judgments_from_frame(pd.DataFrame({"question_id": ["1", "1", "2"], "model_a": ["x", "y", "x"],
                                                   "model_b": ["y", "x", "y"], "judge": "j",
                                                   "winner": ["model_a", "tie", "model_b"]}))
    answers = pd.DataFrame({"question_id": ["1", "1", "2"], "model": ["x", "y", "x"],
                            "answer": ["aaaa", "**b**", "cc"]})
    features = style_features(judgments, answers)
    assert features.loc[0, "length"] == pytest.approx((4 - 5) / 9)
    assert features.loc[1, "bold"] == pytest.approx(1.0)          # y (first here) has the only bold span
    assert features.loc[2].isna().all()                           # y's answer to question 2 is missing
    lengths = battle_lengths(judgments, answers)
    assert lengths.loc[0].tolist() == [4, 5] and math.isnan(lengths.loc[2, "length_b"])
    with_texts = judgments.assign(answer_a=["aaaa", "**b**", "cc"], answer_b=["**b**", "aaaa", None])
    assert np.allclose(style_features(with_texts).to_numpy()[:2], features.to_numpy()[:2])
    with_lengths = judgments.assign(length_a=[4, 5, 2], length_b=[5, 4, 7])
    assert style_features(with_lengths, features=["length"])["length"].tolist()[:2] == pytest.approx(
        features["length"].tolist()[:2])
    with pytest.raises(ValueError, match="need the answers' texts"):
        style_features(judgments)


def _styled_battles(seed=0, n_models=6, n_battles=6000, length_effect=1.0):
    """Verdicts that prefer the longer answer; model 0 writes much longer answers than the others."""
    rng = np.random.default_rng(seed)
    strength = np.linspace(-0.6, 0.6, n_models)
    verbosity = np.zeros(n_models)
    verbosity[0] = 1.0
    a = rng.integers(0, n_models, n_battles)
    b = (a + rng.integers(1, n_models, n_battles)) % n_models
    la = np.exp(6 + verbosity[a] + rng.normal(0, 0.3, n_battles))
    lb = np.exp(6 + verbosity[b] + rng.normal(0, 0.3, n_battles))
    ratio = (la - lb) / (la + lb)
    first = rng.random(n_battles) < expit(strength[a] - strength[b] + length_effect * ratio / ratio.std())
    names = np.array([f"m{k}" for k in range(n_models)])
    judgments = judgments_from_frame(pd.DataFrame({"question_id": np.arange(n_battles).astype(str),
                                                   "model_a": names[a], "model_b": names[b], "judge": "j",
                                                   "winner": np.where(first, "model_a", "model_b")}))
    return judgments, pd.DataFrame({"length": ratio}), strength


def test_style_control_recovers_strengths_that_length_inflated():
    judgments, features, strength = _styled_battles()
    plain = bradley_terry_intervals(judgments, rounds=0)["rating"]
    fit = contextual_bradley_terry(judgments, features)
    controlled = fit.table["rating"]
    truth = pd.Series((strength - strength.mean()) * 400 / math.log(10) + 1000, index=[f"m{k}" for k in range(6)])
    # the verbose, weakest model m0 is flattered by plain BT and put back by style control
    assert plain["m0"] - truth["m0"] > 100
    assert abs(controlled["m0"] - truth["m0"]) < 40
    coefficient = fit.coefficients.loc["length"]
    # the true effect: 1 logit per sd of the ratio, i.e. 173.7 Elo points (features standardised the same way)
    assert coefficient["ci_low"] < 400 / math.log(10) < coefficient["ci_high"]
    assert coefficient["probability_shift"] == pytest.approx(expit(coefficient["coefficient"] * math.log(10) / 400)
                                                             - 0.5)


def test_contextual_bootstrap_intervals_agree_with_the_sandwich_and_are_seeded():
    judgments, features, _ = _styled_battles(1, n_battles=3000)
    boot = contextual_bradley_terry(judgments, features, rounds=200, intervals="bootstrap", seed=3)
    again = contextual_bradley_terry(judgments, features, rounds=200, intervals="bootstrap", seed=3, workers=1)
    pd.testing.assert_frame_equal(boot.table, again.table)
    width = boot.table["ci_high"] - boot.table["ci_low"]
    robust = boot.table["sandwich_high"] - boot.table["sandwich_low"]
    assert ((width / robust - 1).abs() < 0.25).all()
    assert (boot.table["rank"] <= boot.table["rank_worst"]).all()


def test_standardise_and_input_checks():
    x, mean, sd = standardise(np.array([[1.0, 5.0], [3.0, 5.0]]))
    assert x[:, 0].tolist() == [-1.0, 1.0] and x[:, 1].tolist() == [0.0, 0.0] and sd.tolist() == [1.0, 1.0]
    judgments, features, _ = _styled_battles(2, n_battles=200)
    with pytest.raises(ValueError, match="one row per battle"):
        contextual_bradley_terry(judgments, features.iloc[:10])
    with pytest.raises(ValueError, match="must be finite"):
        contextual_bradley_terry(judgments, features.assign(length=np.nan))
    with pytest.raises(ValueError, match="sandwich must be one of"):
        contextual_bradley_terry(judgments, features, sandwich="club")
    with pytest.raises(ValueError, match="reg must be"):
        contextual_bradley_terry(judgments, features, reg=-1)
