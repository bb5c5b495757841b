"""AlpacaEval 2's published leaderboard reproduced from its own annotation files (issue 11).

Data: 13 models' ``weighted_alpaca_eval_gpt4_turbo`` annotations from tatsu-lab/alpaca_eval
at commit cd543a149df89434d8a54582c0151c0b945c3d20, trimmed to preference and answer
lengths (tests/data/alpacaeval/README.md says how). Expected values: the published
``src/alpaca_eval/leaderboards/data_AlpacaEval_2/weighted_alpaca_eval_gpt4_turbo_leaderboard.csv``
at the same commit, columns win_rate, discrete_win_rate, standard_error, n_wins,
n_wins_base, n_draws, n_total, avg_length, length_controlled_winrate.

Everything goes through ``peercore rank FILE --method winrate --baseline gpt4_1106_preview
--format json`` on a canonical judgment file (p_a = 2 - preference, the importer's
mapping; answer lengths as ``length_a`` / ``length_b`` columns).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from peercore.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "alpacaeval" / "weighted_alpaca_eval_gpt4_turbo.csv"
BASELINE = "gpt4_1106_preview"

# model: (win_rate, discrete_win_rate, standard_error, n_wins, n_wins_base, n_draws, n_total, avg_length,
#         length_controlled_winrate) -- copied from the published CSV named in the module docstring.
PUBLISHED = {
    "alpaca-7b": (2.591450540223603, 2.298136645962733, 0.4870855382635108, 17, 785, 3, 805, 396, 5.875487163278986),
    "alpaca-7b_concise": (1.9911763835447769, 1.9900497512437807, 0.4437510223659489, 15, 787, 2, 804, 351,
                          4.467251679930348),
    "claude-2.1": (15.733506736409938, 14.409937888198757, 1.120315865445773, 115, 688, 2, 805, 1096,
                   25.251943886133027),
    "claude-2.1_concise": (9.22712524063354, 9.130434782608695, 0.8921752289142333, 72, 730, 3, 805, 573,
                           18.2084579084493),
    "falcon-7b-instruct": (2.146617553167702, 2.111801242236025, 0.454225792894195, 16, 787, 2, 805, 478,
                           4.036937566812824),
    "FuseChat-Llama-3.2-3B-Instruct": (51.29667710101864, 52.85714285714286, 1.482579367297701, 424, 378, 3, 805,
                                       1976, 53.99883748344241),
    "gemma-7b-it": (6.937294379677018, 6.273291925465839, 0.7869665731853178, 50, 754, 1, 805, 1115,
                    10.425760403690134),
    "gpt-3.5-turbo-1106": (9.177964561962735, 8.198757763975156, 0.8904117511864436, 64, 737, 4, 805, 796,
                           19.30058903498905),
    "gpt-3.5-turbo-1106_concise": (7.41586497762733, 7.329192546583851, 0.8374438113826953, 57, 744, 4, 805, 431,
                                   15.769520983894386),
    "gpt-3.5-turbo-1106_verbose": (12.76316981026087, 11.801242236024844, 1.044246819212278, 94, 709, 2, 805, 1058,
                                   22.00093702171442),
    "OpenHermes-2.5-Mistral-7B": (10.340415705751552, 9.503105590062113, 0.935655389929366, 75, 727, 3, 805, 1107,
                                  16.248577696674843),
    "Qwen-14B-Chat": (7.502333484720497, 7.453416149068323, 0.8147265702205473, 57, 742, 6, 805, 1013,
                      12.378741790737235),
    "vicuna-13b": (5.831103184496894, 5.590062111801243, 0.7422829864105622, 44, 759, 2, 805, 1037,
                   9.222060023704104),
    # the baseline against itself: 50, every instruction a draw
    BASELINE: (50.0, 50.0, 0.0, 0, 0, 805, 805, 2049, 50.0),
}


def canonical_file(tmp_path: Path) -> Path:
    """The trimmed annotations as a canonical judgment CSV (model_a = generator_1 = the baseline)."""
    wide = pd.read_csv(DATA, dtype={"question_id": str})
    rows = []
    for column in [c for c in wide.columns if c.startswith("preference:")]:
        model = column.split(":", 1)[1]
        part = wide[wide[column].notna()]
        p_a = 2.0 - part[column].astype(float)
        rows.append(pd.DataFrame({
            "question_id": part["question_id"], "model_a": BASELINE, "model_b": model,
            "judge": "alpacaeval:weighted_alpaca_eval_gpt4_turbo",
            "winner": np.where(p_a > 0.5, "model_a", np.where(p_a < 0.5, "model_b", "tie")),
            "p_a": [repr(float(v)) for v in p_a],
            "length_a": part["length_1"].astype(int), "length_b": part[f"length:{model}"].astype(int),
        }))
    path = tmp_path / "alpacaeval.csv"
    pd.concat(rows, ignore_index=True).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def leaderboard(tmp_path_factory):
    path = canonical_file(tmp_path_factory.mktemp("alpacaeval"))
    capture = tmp_path_factory.mktemp("out") / "out.json"
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["rank", str(path), "--method", "winrate", "--baseline", BASELINE, "--format", "json"])
    assert code == 0
    capture.write_text(buffer.getvalue())
    return json.loads(buffer.getvalue())


@pytest.mark.golden
def test_win_rates_standard_errors_and_counts_reproduce_the_published_csv(leaderboard):
    rows = {row["model"]: row for row in leaderboard["leaderboard"]}
    assert set(rows) == set(PUBLISHED)
    for model, (win, discrete, se, wins, losses, draws, total, length, _lc) in PUBLISHED.items():
        row = rows[model]
        assert row["win_rate"] == pytest.approx(win, abs=1e-6), model
        assert row["discrete_win_rate"] == pytest.approx(discrete, abs=1e-6), model
        assert row["standard_error"] == pytest.approx(se, abs=1e-6), model
        assert (row["n_wins"], row["n_wins_base"], row["n_draws"], row["n_total"]) == (wins, losses, draws, total), model
        assert row["avg_length"] == length, model  # every model here has an annotation for each of its outputs but one
    assert leaderboard["baseline"]["baseline"] == BASELINE


@pytest.mark.golden
def test_length_controlled_win_rate_ranks_like_the_published_one(leaderboard):
    rows = {row["model"]: row for row in leaderboard["leaderboard"] if row["model"] != BASELINE}
    ours = [rows[m]["lc_win_rate"] for m in rows]
    published = [PUBLISHED[m][8] for m in rows]
    rho = spearmanr(ours, published).statistic
    assert len(rows) >= 8
    assert rho >= 0.9, rho
    # The difficulty came from the study's own 13 models, and the standard error from a bootstrap.
    assert leaderboard["baseline"]["difficulty"] == "joint fit of 13 models"
    assert leaderboard["baseline"]["lc_standard_error"].startswith("bootstrap over instructions")
    assert all(0 < rows[m]["lc_standard_error"] < 10 for m in rows)
    # Length control narrows the ratio between a verbose and a concise prompting of one model (the
    # paper's point; published: 12.76 / 7.42 = 1.72 raw, 22.00 / 15.77 = 1.40 length-controlled).
    for stem in ("gpt-3.5-turbo-1106", "claude-2.1"):
        verbose, concise = (f"{stem}_verbose", f"{stem}_concise") if stem.startswith("gpt") else (stem, f"{stem}_concise")
        raw = rows[verbose]["win_rate"] / rows[concise]["win_rate"]
        controlled = rows[verbose]["lc_win_rate"] / rows[concise]["lc_win_rate"]
        assert controlled < raw, (stem, raw, controlled)
