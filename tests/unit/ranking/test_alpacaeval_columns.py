"""AlpacaEval's win rates against a baseline and the length-controlled win rate (unit level)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from peercore.judgments import judgments_from_frame
from peercore.ranking.alpacaeval import baseline_win_rates, preference_for_model


def _annotations(seed=0, *, models=("short", "plain", "long", "longer", "concise"), instructions=400,
                 length_effect=-1.5, soft=True):
    """A judge that prefers longer answers, with known length-free win rates.

    AlpacaEval's parameterisation: logit p = theta_m + phi tanh((len_base - len_model) / sd) + d_q, so a
    negative phi favours the longer model answer. The length-free win rate is mean_q sigma(theta_m + d_q).
    """
    rng = np.random.default_rng(seed)
    verbosity = dict(zip(models, (-0.6, 0.0, 0.6, 1.0, -1.0)))
    theta = dict(zip(models, (-0.5, 0.0, -0.2, -0.8, 0.3)))
    difficulty = rng.normal(0, 1.0, instructions)
    base_length = np.exp(7 + rng.normal(0, 0.4, instructions))
    rows, lengths, truth = [], [], {}
    for model in models:
        length = np.exp(7 + verbosity[model] + rng.normal(0, 0.4, instructions))
        delta = base_length - length
        p = expit(theta[model] + length_effect * np.tanh(delta / np.std(delta, ddof=1)) + difficulty)
        if not soft:
            p = (rng.random(instructions) < p).astype(float)
        truth[model] = 100 * expit(theta[model] + difficulty).mean()
        rows.append(pd.DataFrame({"question_id": [f"q{k}" for k in range(instructions)], "model_a": "base",
                                  "model_b": model, "judge": "alpacaeval:weighted",
                                  "winner": np.where(p < 0.5, "model_a", np.where(p > 0.5, "model_b", "tie")),
                                  "p_a": 1 - p}))
        lengths.append(pd.DataFrame({"length_a": base_length, "length_b": length}))
    judgments = judgments_from_frame(pd.concat(rows, ignore_index=True))
    return judgments, pd.concat(lengths, ignore_index=True).set_axis(judgments.index), truth


def test_length_controlled_win_rate_recovers_the_length_free_win_rate():
    judgments, lengths, truth = _annotations()
    result = baseline_win_rates(judgments, baseline="base", lengths=lengths, lc_rounds=50)
    table = result.table.set_index("model")
    assert result.difficulty == "joint fit of 5 models"
    for model, value in truth.items():
        raw_error = abs(table.loc[model, "win_rate"] - value)
        lc_error = abs(table.loc[model, "lc_win_rate"] - value)
        assert lc_error < 2.5, (model, lc_error)
        if model in ("longer", "concise"):  # length moved these raw win rates a lot; LC undoes it
            assert raw_error > 8 and lc_error < raw_error / 3, (model, raw_error, lc_error)
    assert (result.coefficients["length"] < 0).all()  # the judge favours the longer answer
    assert (table.drop(index="base")["lc_standard_error"] > 0).all()


def test_few_models_and_another_judge_are_said_to_be_not_comparable_with_the_published_lc():
    # Dubois et al. 2024 section 3: the published LC is the GPT-4 Turbo annotator's against gpt4_1106_preview.
    judgments, lengths, truth = _annotations(models=("short", "long"))
    result = baseline_win_rates(judgments, baseline="base", lengths=lengths, lc_rounds=0)
    assert result.difficulty == "joint fit of 2 models" and result.lc_standard_error == "none"
    table = result.table.set_index("model")
    assert table["lc_win_rate"].notna().all()  # every row has an LC, the baseline's 50
    assert not result.lc_comparable
    assert "judged by alpacaeval:weighted, not AlpacaEval 2's annotator" in result.lc_note
    assert "baseline base, where the published LC is against gpt4_1106_preview" in result.lc_note
    one = baseline_win_rates(judgments[judgments["model_b"] == "long"], baseline="base",
                             lengths=lengths[judgments["model_b"] == "long"], lc_rounds=0)
    assert one.difficulty == "joint fit of 1 model" and one.table["lc_win_rate"].notna().all()
    assert "one model against the baseline: its length slope cannot be told apart" in one.lc_note
    assert one.describe()["lc_comparable"] is False and one.describe()["lc_note"] == one.lc_note


def test_counts_discrete_rate_and_hard_verdicts():
    judgments = judgments_from_frame(pd.DataFrame({
        "question_id": ["1", "2", "3", "4", "1"], "model_a": ["base", "base", "m", "base", "base"],
        "model_b": ["m", "m", "base", "m", "x"], "judge": "j",
        "winner": ["model_b", "tie", "model_a", "model_a", "model_a"], "p_a": [0.2, 0.5, None, 0.9, None]}))
    table = baseline_win_rates(judgments, baseline="base", lc_rounds=0).table.set_index("model")
    # m's preferences: 0.8, 0.5, 1.0 (hard win, shown first), 0.1
    assert table.loc["m", "win_rate"] == pytest.approx(100 * (0.8 + 0.5 + 1.0 + 0.1) / 4)
    assert table.loc["m", "standard_error"] == pytest.approx(100 * pd.Series([0.8, 0.5, 1.0, 0.1]).sem())
    assert (table.loc["m", "n_wins"], table.loc["m", "n_wins_base"], table.loc["m", "n_draws"]) == (2, 1, 1)
    assert table.loc["m", "discrete_win_rate"] == pytest.approx(100 * 2.5 / 4)
    assert table.loc["base", "win_rate"] == 50 and table.loc["base", "n_draws"] == 4
    assert np.isnan(table.loc["m", "avg_length"]) and np.isnan(table.loc["m", "lc_win_rate"])
    prefs = preference_for_model(judgments, "m", "base")
    assert prefs["model_first"].tolist() == [False, False, True, False]
    with pytest.raises(ValueError, match="baseline 'nobody' met no other model"):
        baseline_win_rates(judgments, baseline="nobody")
    with pytest.raises(ValueError, match="lc_rounds must be >= 0"):
        baseline_win_rates(judgments, baseline="base", lc_rounds=-1)
