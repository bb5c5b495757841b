"""Win rates against a baseline, as AlpacaEval reports them, and the length-controlled win rate.

AlpacaEval (Dubois et al. 2023; ``alpaca_eval.metrics``) compares every model with one
baseline model on the same instructions. With :math:`p_q` the judge's probability that
the model's answer to instruction q beats the baseline's (``preference - 1``; a hard
verdict counts 1, 1/2 or 0):

* ``win_rate`` = :math:`100 \\cdot \\bar p` (the "soft" win rate of the weighted
  annotators), ``standard_error`` = :math:`100 \\cdot s_p / \\sqrt{n}` (``pandas.Series.sem``,
  ddof = 1);
* ``discrete_win_rate`` = :math:`100 \\cdot (n_{wins} + n_{draws}/2) / n`, with a win
  :math:`p > 1/2`, a loss :math:`p < 1/2`, a draw :math:`p = 1/2`
  (``ZeroOneScoringRule``); ``n_wins``, ``n_wins_base``, ``n_draws``, ``n_total``;
* ``avg_length``: the model's mean answer length in characters, truncated to an integer.

**Length-controlled win rate** (Dubois, Galambosi, Liang, Hashimoto 2024,
"Length-Controlled AlpacaEval", eq. 2-3; ``alpaca_eval.metrics.glm_winrate``): per
model m a logistic GLM on its instructions

.. math:: \\operatorname{logit} p_{q} = \\theta_m + \\phi_m \\tanh\\!\\Big(\\frac{\\ell^{base}_q - \\ell^{m}_q}
          {\\mathrm{sd}(\\ell^{base} - \\ell^{m})}\\Big) + \\psi_m\\, d_q

fitted to the soft preferences (cross-entropy), and
:math:`\\mathrm{LC}_m = 100 \\cdot \\frac1n \\sum_q \\sigma(\\theta_m + \\psi_m d_q)`, the
predicted win rate with the length term set to zero. AlpacaEval downloads the
instruction difficulties :math:`d_q` (fitted once on its whole leaderboard) and
regularises towards "gamed" baselines; here :math:`d_q` is estimated from the study's
own models by a **joint fit**

.. math:: \\operatorname{logit} p_{m,q} = \\theta_m + \\phi_m \\tanh(\\cdot) - d_q, \\qquad
          d_q \\sim N(0, 1)

when the study has at least :data:`MIN_MODELS_FOR_DIFFICULTY` models against the
baseline; with fewer, the GLM drops the difficulty term (``difficulty = "none"``) and
:math:`\\mathrm{LC}_m = 100\\,\\sigma(\\theta_m)`. Which was used is reported.

Its standard error (``lc_standard_error``) is a **bootstrap over instructions**: the
model's instructions are resampled with replacement, the GLM refitted (difficulties
held at the joint fit), and the standard deviation of the resampled LC taken.
AlpacaEval's own ``lc_standard_error`` is the standard error of the mean of the
predicted probabilities, which ignores the uncertainty of the fitted coefficients.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

from peercore.ranking import core

__all__ = ["BaselineTable", "baseline_win_rates", "MIN_MODELS_FOR_DIFFICULTY", "BASELINE_COLUMNS",
           "preference_for_model"]

MIN_MODELS_FOR_DIFFICULTY = 3
DIFFICULTY_L2 = 1.0          # the N(0, 1) prior on each instruction's difficulty (logit scale)
GLM_L2 = 1e-3                # a negligible ridge on the per-model GLM's coefficients
BASELINE_COLUMNS = ("model", "win_rate", "standard_error", "discrete_win_rate", "n_wins", "n_wins_base", "n_draws",
                    "n_total", "avg_length", "lc_win_rate", "lc_standard_error")


@dataclass(frozen=True)
class BaselineTable:
    """What :func:`baseline_win_rates` returns.

    Attributes
    ----------
    table : one row per model (the baseline included, at 50 with every instruction a
        draw, as AlpacaEval lists it), best ``win_rate`` first,
        columns :data:`BASELINE_COLUMNS` (rates and standard errors in percent, as
        AlpacaEval's leaderboard CSV writes them).
    baseline : the baseline model.
    difficulty : ``"joint"`` (instruction difficulty fitted jointly over ``n_models``
        models), ``"none"`` (too few models: the GLM without it) or ``"no lengths"`` (no
        answer lengths: no LC).
    lc_standard_error : how ``lc_standard_error`` was computed.
    coefficients : per model the GLM's ``intercept``, ``length`` (on tanh of the
        standardised length difference, baseline minus model) and ``difficulty``.
    """

    table: pd.DataFrame
    baseline: str
    difficulty: str
    lc_standard_error: str
    coefficients: pd.DataFrame

    def describe(self) -> dict:
        return {"baseline": self.baseline, "difficulty": self.difficulty,
                "lc_standard_error": self.lc_standard_error}


def preference_for_model(judgments: pd.DataFrame, model: str, baseline: str) -> pd.DataFrame:
    """The verdicts between ``model`` and ``baseline`` as AlpacaEval's preference for the model.

    Returns
    -------
    DataFrame with the original index and columns ``question_id``, ``p`` (probability
    the model's answer is better: ``p_a`` or ``1 - p_a`` where given, else 1 / 0.5 / 0
    from the winner) and ``model_first`` (the model was shown first).
    """
    first = (judgments["model_a"] == model) & (judgments["model_b"] == baseline)
    second = (judgments["model_a"] == baseline) & (judgments["model_b"] == model)
    rows = judgments[(first | second).to_numpy()]
    hard = rows["winner"].map({"model_a": 1.0, "tie": 0.5, "model_b": 0.0}).to_numpy(dtype=float)
    p_a = pd.to_numeric(rows["p_a"], errors="coerce").to_numpy(dtype=float) if "p_a" in rows.columns \
        else np.full(len(rows), np.nan)
    p_a = np.where(np.isnan(p_a), hard, p_a)
    model_first = (rows["model_a"] == model).to_numpy(dtype=bool)
    return pd.DataFrame({"question_id": rows["question_id"].astype(str).to_numpy(),
                         "p": np.where(model_first, p_a, 1.0 - p_a), "model_first": model_first}, index=rows.index)


def baseline_win_rates(
    judgments: pd.DataFrame,
    *,
    baseline: str,
    lengths: pd.DataFrame | None = None,
    lc_rounds: int = 200,
    seed: int = 0,
    min_models: int = MIN_MODELS_FOR_DIFFICULTY,
) -> BaselineTable:
    """AlpacaEval's leaderboard columns for every model judged against ``baseline``.

    Parameters
    ----------
    judgments : canonical judgment table; rows between a model and ``baseline`` (either
        order) count, the rest are ignored. ``p_a`` is used where given (soft win rate).
    baseline : the baseline model.
    lengths : optional, aligned with ``judgments``: ``length_a``, ``length_b`` (answer
        lengths in characters, NaN where unknown). Needed for ``avg_length`` and the
        length-controlled win rate.
    lc_rounds : bootstrap rounds over instructions for ``lc_standard_error`` (0: NaN).
    seed : seed of that bootstrap.
    min_models : fewest models against the baseline for the joint difficulty fit.

    Returns
    -------
    BaselineTable

    Raises
    ------
    ValueError
        If ``baseline`` met no model, or ``lc_rounds`` is negative.
    """
    if lc_rounds < 0:
        raise ValueError(f"lc_rounds must be >= 0, got {lc_rounds!r}")
    models = sorted((set(judgments.loc[judgments["model_b"] == baseline, "model_a"].astype(str))
                     | set(judgments.loc[judgments["model_a"] == baseline, "model_b"].astype(str))) - {baseline})
    if not models:
        present = sorted(set(judgments["model_a"].astype(str)) | set(judgments["model_b"].astype(str)))
        raise ValueError(f"baseline {baseline!r} met no other model; contestants are {present}")
    per_model = {m: _model_rows(judgments, m, baseline, lengths) for m in models}
    rows = [_describe(m, per_model[m]) for m in models]
    has_lengths = lengths is not None and all(frame["delta"].notna().any() for frame in per_model.values())
    coefficients = pd.DataFrame(columns=["intercept", "length", "difficulty"], dtype=float)
    difficulty_kind, se_kind = "no lengths", "none"
    if has_lengths:
        fitted = {m: frame[frame["delta"].notna()] for m, frame in per_model.items()}
        difficulty = None
        if len(models) >= min_models:
            difficulty = _joint_difficulty(fitted)
            difficulty_kind = f"joint fit of {len(models)} models"
        else:
            difficulty_kind = f"none (fewer than {min_models} models against the baseline)"
        se_kind = f"bootstrap over instructions ({lc_rounds} rounds)" if lc_rounds else "none"
        rng = np.random.default_rng(seed)
        coef_rows = {}
        for row in rows:
            frame = fitted[row["model"]]
            lc, se, coef = _length_controlled(frame, difficulty, rounds=lc_rounds, rng=rng)
            row["lc_win_rate"], row["lc_standard_error"] = lc, se
            coef_rows[row["model"]] = coef
        coefficients = pd.DataFrame.from_dict(coef_rows, orient="index", columns=["intercept", "length", "difficulty"])
        coefficients.index.name = "model"
    # The baseline against itself, as AlpacaEval lists it: every instruction a draw.
    instructions = len(set().union(*(set(frame["question_id"]) for frame in per_model.values())))
    base = {"model": baseline, "win_rate": 50.0, "standard_error": 0.0, "discrete_win_rate": 50.0, "n_wins": 0,
            "n_wins_base": 0, "n_draws": instructions, "n_total": instructions,
            "avg_length": _baseline_length(per_model),
            "lc_win_rate": 50.0 if has_lengths else np.nan, "lc_standard_error": 0.0 if has_lengths else np.nan}
    table = pd.DataFrame(rows + [base])
    for column in BASELINE_COLUMNS:
        if column not in table.columns:
            table[column] = np.nan
    table = table[list(BASELINE_COLUMNS)].sort_values(["win_rate", "model"], ascending=[False, True], kind="stable")
    table = table.astype({"n_wins": int, "n_wins_base": int, "n_draws": int, "n_total": int})
    return BaselineTable(table.reset_index(drop=True), baseline, difficulty_kind, se_kind, coefficients)


# ---------------------------------------------------------------------------- helpers


def _model_rows(judgments, model, baseline, lengths) -> pd.DataFrame:
    prefs = preference_for_model(judgments, model, baseline)
    out = prefs.reset_index(drop=True)
    if lengths is None:
        out["length_model"] = np.nan
        out["delta"] = np.nan
        return out
    la = lengths.loc[prefs.index, "length_a"].to_numpy(dtype=float)
    lb = lengths.loc[prefs.index, "length_b"].to_numpy(dtype=float)
    first = prefs["model_first"].to_numpy()
    out["length_model"] = np.where(first, la, lb)
    out["length_base"] = np.where(first, lb, la)
    out["delta"] = out["length_base"] - out["length_model"]   # AlpacaEval: len(output_1) - len(output_2)
    return out


def _describe(model: str, frame: pd.DataFrame) -> dict:
    p = frame["p"]
    wins, losses, draws = int((p > 0.5).sum()), int((p < 0.5).sum()), int((p == 0.5).sum())
    n = len(p)
    lengths = frame["length_model"].dropna()
    return {"model": model, "win_rate": float(p.mean() * 100) if n else np.nan,
            "standard_error": float(p.sem() * 100) if n > 1 else np.nan,
            "discrete_win_rate": (wins + draws / 2) / n * 100 if n else np.nan,
            "n_wins": wins, "n_wins_base": losses, "n_draws": draws, "n_total": n,
            "avg_length": float(int(lengths.mean())) if len(lengths) else np.nan}


def _baseline_length(per_model: dict) -> float:
    frames = [f[["question_id", "length_base"]] for f in per_model.values() if "length_base" in f.columns]
    if not frames:
        return np.nan
    lengths = pd.concat(frames).dropna().drop_duplicates("question_id")["length_base"]
    return float(int(lengths.mean())) if len(lengths) else np.nan


def _tanh_length(frame: pd.DataFrame) -> np.ndarray:
    delta = frame["delta"].to_numpy(dtype=float)
    sd = np.std(delta, ddof=1) if len(delta) > 1 else 0.0
    return np.tanh(delta / sd) if sd > 0 else np.zeros(len(delta))


def _joint_difficulty(fitted: dict[str, pd.DataFrame]) -> pd.Series:
    """Instruction difficulty :math:`d_q` from one fit over every model (see the module docstring)."""
    models = list(fitted)
    questions = pd.Index(sorted(set().union(*(set(f["question_id"]) for f in fitted.values()))))
    m_count, q_count = len(models), len(questions)
    i, j, y, columns = [], [], [], []
    for k, model in enumerate(models):
        frame = fitted[model]
        i.append(np.full(len(frame), k))
        j.append(m_count + questions.get_indexer(frame["question_id"]))
        y.append(frame["p"].to_numpy(dtype=float))
        columns.append(_tanh_length(frame))
    sizes = [len(c) for c in columns]
    x = np.zeros((sum(sizes), m_count))
    start = 0
    for k, column in enumerate(columns):
        x[start:start + sizes[k], k] = column
        start += sizes[k]
    y_all = np.clip(np.concatenate(y), 0.0, 1.0)
    design = core.Design(m_count + q_count, np.concatenate(i), np.concatenate(j), y_all, np.ones(len(y_all)), x=x)
    penalty = np.concatenate([np.full(m_count, core.DEFAULT_L2), np.full(q_count, DIFFICULTY_L2)])
    solution = core.fit(design, l2=penalty, l2_features=GLM_L2, what="instruction-difficulty")
    return pd.Series(solution.theta[m_count:], index=questions, name="difficulty")


def _length_controlled(frame: pd.DataFrame, difficulty: pd.Series | None, *, rounds: int,
                       rng: np.random.Generator) -> tuple[float, float, tuple[float, float, float]]:
    y = np.clip(frame["p"].to_numpy(dtype=float), 0.0, 1.0)
    tanh = _tanh_length(frame)
    if difficulty is not None:
        d = difficulty.reindex(frame["question_id"]).fillna(0.0).to_numpy()
        x = np.column_stack([np.ones(len(y)), tanh, d])
        zero_length = np.column_stack([np.ones(len(y)), np.zeros(len(y)), d])
    else:
        x = np.column_stack([np.ones(len(y)), tanh])
        zero_length = np.column_stack([np.ones(len(y)), np.zeros(len(y))])
    weights = np.ones((1, len(y)))
    if rounds:
        weights = np.vstack([weights, rng.multinomial(len(y), np.full(len(y), 1.0 / len(y)), size=rounds)])
    beta = core.fit_glm_batch(x, y, weights, l2_features=GLM_L2)
    lc = expit(beta @ zero_length.T)                   # (1 + rounds, n) predicted win probabilities
    # A resampled round's LC is the mean over *its* instructions (each as often as drawn).
    per_round = (weights * lc).sum(axis=1) / weights.sum(axis=1)
    se = float(np.std(per_round[1:], ddof=1) * 100) if rounds > 1 else np.nan
    coef = beta[0]
    return float(per_round[0] * 100), se, (float(coef[0]), float(coef[1]),
                                           float(coef[2]) if difficulty is not None else 0.0)
