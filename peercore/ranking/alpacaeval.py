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
"Length-Controlled AlpacaEval", section 3, eq. 2-3; ``alpaca_eval.metrics.glm_winrate``).
AlpacaEval fits per model m a logistic GLM

.. math:: \\operatorname{logit} p_{mq} = \\theta_m + \\phi_m \\tanh\\!\\Big(\\frac{\\ell^{base}_q - \\ell^{m}_q}
          {\\mathrm{sd}_q(\\ell^{base} - \\ell^{m})}\\Big) + \\psi_m\\, d_q

to the soft preferences and reports
:math:`\\mathrm{LC}_m = 100 \\cdot \\frac1n \\sum_q \\sigma(\\theta_m + \\psi_m d_q)`, the predicted
win rate with the length term at zero. Its instruction difficulties :math:`d_q` and the
"gamed" baselines its length slope is regularised toward (the baseline's own verbose
and concise answers, eq. 3) are files on a data hub that PeerBoard does not fetch.
Without them a model's own slope is poorly identified -- an answer much shorter than
the baseline's sits near :math:`\\tanh = 1` for every instruction, so slope and
intercept trade off -- and PeerBoard's earlier per-model fit put ``gpt4_gamed`` 16.7
points and ``gpt4_0613_concise`` 6.6 points above their published LC.

PeerBoard fits the same GLM **jointly over the study's models** (every model against
the baseline), with the gamed baselines' role taken by a hierarchical prior on the
slopes and the difficulty estimated from all models at once:

.. math:: \\phi_m \\sim N(\\bar\\phi, \\tau^2), \\quad \\bar\\phi \\sim N(\\phi_0, \\sigma_0^2), \\quad
          \\psi_m \\sim N(1, \\omega^2), \\quad d_q \\sim N(0, \\delta^2)

maximising the penalised cross-entropy of all models' preferences (L-BFGS, analytic
gradient); :math:`\\mathrm{LC}_m` is then AlpacaEval's formula with these estimates.
Every model's slope is shrunk toward the study's pooled slope, which is itself held
near :math:`\\phi_0` unless many models say otherwise, so a length-gamed variant gets
the length effect the study's other models show, not the one its own (collinear) data
suggest. A study of a handful of models gives nearly the LC the full study gives (82 of
83 small studies within 3 points), except when it mixes a model that wins half its
comparisons with answers as long as the baseline's with weak, short-answer models (16 of
29): the instruction difficulty then comes mostly from the strong model's verdicts.
The prior constants (:data:`LC_PRIORS`) were chosen on a tuning set of 13 of AlpacaEval
2's published models and validated on the 43 others that can be loaded, the gamed pairs
and ``NullModel`` among them (``benchmarks/alpacaeval_lc.py``,
``benchmarks/results/alpacaeval_lc.md``: Spearman 0.995 with the published LC, every
model within 2.82 points; before, 0.975 and up to 16.7). :math:`\\phi_0` is the length slope of AlpacaEval 2's GPT-4 Turbo
annotator; for another judge it is a prior guess, which a study of many models
overrides. The LC is therefore comparable with AlpacaEval's published one only for its
annotator and baseline and a study of two models or more (``lc_comparable`` and
``lc_note`` say so).

Its standard error (``lc_standard_error``) is a **bootstrap over instructions**: each
model's instructions are resampled with replacement, its coefficients refitted (the
difficulties and the pooled slope held at the joint fit), and the standard deviation
of the resampled LC taken. AlpacaEval's own ``lc_standard_error`` is the standard error
of the mean of the predicted probabilities, which ignores the uncertainty of the fitted
coefficients.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit, log_expit

from peercore.errors import ConvergenceError

__all__ = ["BaselineTable", "LengthControl", "LCPriors", "baseline_win_rates", "length_controlled", "BASELINE_COLUMNS",
           "LC_PRIORS", "OTHER_JUDGE_LC_PRIORS", "ALPACAEVAL_JUDGE", "ALPACAEVAL_BASELINE", "preference_for_model"]


@dataclass(frozen=True)
class LCPriors:
    """The length-controlled GLM's priors (see the module docstring), as precisions of penalties ``lam * x^2``.

    Attributes
    ----------
    slope_anchor : :math:`\\phi_0`, the prior mean of the study's pooled length slope.
    anchor_l2 : :math:`1 / (2\\sigma_0^2)` on :math:`\\bar\\phi - \\phi_0`.
    slope_l2 : :math:`1 / (2\\tau^2)` on each :math:`\\phi_m - \\bar\\phi`.
    loading_l2 : :math:`1 / (2\\omega^2)` on each :math:`\\psi_m - 1`.
    difficulty_l2 : :math:`1 / (2\\delta^2)` on each :math:`d_q`.
    intercept_l2 : a negligible ridge on each :math:`\\theta_m`.
    """

    slope_anchor: float = -1.7
    anchor_l2: float = 100.0
    slope_l2: float = 5.0
    loading_l2: float = 10.0
    difficulty_l2: float = 0.25
    intercept_l2: float = 1e-4


#: For AlpacaEval 2's annotator: chosen on the tuning set of ``benchmarks/alpacaeval_lc.py`` (13 of
#: AlpacaEval 2's models), the grid's best worst-case error there, full study and 4-model studies alike.
LC_PRIORS = LCPriors()
#: For any other judge: the same, but the pooled slope's anchor is only a weak guess (sd 0.71 instead of
#: 0.07): another judge's length slope is its own, and the study's models say what it is.
OTHER_JUDGE_LC_PRIORS = LCPriors(anchor_l2=1.0)
#: The judge and baseline of AlpacaEval 2's published LC (``weighted_alpaca_eval_gpt4_turbo``).
ALPACAEVAL_JUDGE = "alpacaeval:weighted_alpaca_eval_gpt4_turbo"
ALPACAEVAL_BASELINE = "gpt4_1106_preview"
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
    difficulty : how the instruction difficulty was had (``"joint fit of N models"``),
        or ``"no lengths"`` (no answer lengths: no LC).
    lc_standard_error : how ``lc_standard_error`` was computed.
    coefficients : per model the GLM's ``intercept``, ``length`` (on tanh of the
        standardised length difference, baseline minus model) and ``difficulty`` (the
        loading :math:`\\psi_m`).
    length_slope : the study's pooled length slope :math:`\\bar\\phi` (NaN without lengths).
    lc_comparable : whether the LC can be set beside AlpacaEval's published one
        (its annotator, its baseline, two models or more).
    lc_note : why not, in words ('' when comparable).
    """

    table: pd.DataFrame
    baseline: str
    difficulty: str
    lc_standard_error: str
    coefficients: pd.DataFrame
    length_slope: float = float("nan")
    lc_comparable: bool = False
    lc_note: str = ""

    def describe(self) -> dict:
        return {"baseline": self.baseline, "difficulty": self.difficulty,
                "lc_standard_error": self.lc_standard_error,
                "lc_method": "joint GLM over the study's models, slopes shrunk toward a pooled slope "
                             "(PeerBoard; AlpacaEval's gamed baselines are not used)",
                "length_slope": None if np.isnan(self.length_slope) else float(self.length_slope),
                "lc_comparable": bool(self.lc_comparable), "lc_note": self.lc_note}


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
    priors: LCPriors | None = None,
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
    priors : the length-controlled GLM's priors; default :data:`LC_PRIORS` when every
        verdict is by AlpacaEval 2's annotator (:data:`ALPACAEVAL_JUDGE`), else
        :data:`OTHER_JUDGE_LC_PRIORS` (the same with a weak slope anchor).

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
    fitted = {m: frame[frame["delta"].notna()].reset_index(drop=True) for m, frame in per_model.items()}
    fitted = {m: frame for m, frame in fitted.items() if len(frame)}
    coefficients = pd.DataFrame(columns=["intercept", "length", "difficulty"], dtype=float)
    difficulty_kind, se_kind, slope = "no lengths", "none", float("nan")
    comparable, note = False, "no answer lengths: no length-controlled win rate"
    judges = sorted(set(judgments.loc[(judgments["model_a"] == baseline) | (judgments["model_b"] == baseline),
                                      "judge"].astype(str)))
    if priors is None:
        priors = LC_PRIORS if judges == [ALPACAEVAL_JUDGE] else OTHER_JUDGE_LC_PRIORS
    if fitted:
        control = length_controlled(fitted, priors=priors, rounds=lc_rounds, seed=seed)
        difficulty_kind = f"joint fit of {len(fitted)} model{'s' if len(fitted) != 1 else ''}"
        se_kind = f"bootstrap over instructions ({lc_rounds} rounds)" if lc_rounds else "none"
        for row in rows:
            row["lc_win_rate"] = control.lc.get(row["model"], np.nan)
            row["lc_standard_error"] = control.standard_error.get(row["model"], np.nan)
        coefficients = control.coefficients
        slope = control.pooled_slope
        comparable, note = _comparability(judges, baseline, len(fitted), len(models))
    # The baseline against itself, as AlpacaEval lists it: every instruction a draw.
    instructions = len(set().union(*(set(frame["question_id"]) for frame in per_model.values())))
    base = {"model": baseline, "win_rate": 50.0, "standard_error": 0.0, "discrete_win_rate": 50.0, "n_wins": 0,
            "n_wins_base": 0, "n_draws": instructions, "n_total": instructions,
            "avg_length": _baseline_length(per_model),
            "lc_win_rate": 50.0 if fitted else np.nan, "lc_standard_error": 0.0 if fitted else np.nan}
    table = pd.DataFrame(rows + [base])
    for column in BASELINE_COLUMNS:
        if column not in table.columns:
            table[column] = np.nan
    table = table[list(BASELINE_COLUMNS)].sort_values(["win_rate", "model"], ascending=[False, True], kind="stable")
    table = table.astype({"n_wins": int, "n_wins_base": int, "n_draws": int, "n_total": int})
    return BaselineTable(table.reset_index(drop=True), baseline, difficulty_kind, se_kind, coefficients,
                         length_slope=slope, lc_comparable=comparable, lc_note=note)


@dataclass(frozen=True)
class LengthControl:
    """What :func:`length_controlled` returns (rates in percent).

    Attributes
    ----------
    lc : model -> length-controlled win rate.
    standard_error : model -> its bootstrap standard error (NaN without rounds).
    coefficients : per model ``intercept`` (:math:`\\theta_m`), ``length``
        (:math:`\\phi_m`), ``difficulty`` (:math:`\\psi_m`).
    difficulty : instruction -> :math:`d_q`.
    pooled_slope : :math:`\\bar\\phi`.
    """

    lc: pd.Series
    standard_error: pd.Series
    coefficients: pd.DataFrame
    difficulty: pd.Series
    pooled_slope: float


def length_controlled(per_model: dict[str, pd.DataFrame], *, priors: LCPriors = LC_PRIORS, rounds: int = 0,
                      seed: int = 0) -> LengthControl:
    """The joint length-controlled GLM of the module docstring, for every model at once.

    Parameters
    ----------
    per_model : model -> its rows against the baseline: ``question_id``, ``p`` (the
        preference for the model, in [0, 1]) and ``delta`` (baseline's answer length
        minus the model's, in characters).
    priors : :data:`LC_PRIORS`.
    rounds : bootstrap rounds over each model's instructions for the standard error.
    seed : the bootstrap's seed.

    Returns
    -------
    LengthControl

    Raises
    ------
    ConvergenceError
        If the optimiser stops without converging.
    """
    models = list(per_model)
    frames = [per_model[m] for m in models]
    questions, qi = np.unique(np.concatenate([f["question_id"].astype(str).to_numpy() for f in frames]),
                              return_inverse=True)
    mi = np.repeat(np.arange(len(models)), [len(f) for f in frames])
    t = np.concatenate([_tanh_length(f) for f in frames])
    y = np.clip(np.concatenate([f["p"].to_numpy(dtype=float) for f in frames]), 0.0, 1.0)
    theta, phi, pooled, psi, d = _fit_joint(mi, qi, t, y, len(models), len(questions), priors)
    count = np.bincount(mi, minlength=len(models))
    lc = np.bincount(mi, expit(theta[mi] + psi[mi] * d[qi]), len(models)) / count
    se = np.full(len(models), np.nan)
    if rounds > 1:
        rng = np.random.default_rng(seed)
        for k in range(len(models)):
            rows = mi == k
            se[k] = _bootstrap_se(t[rows], y[rows], d[qi[rows]], np.array([theta[k], phi[k], psi[k]]), pooled, priors,
                                  rounds=rounds, rng=rng)
    index = pd.Index(models, name="model")
    return LengthControl(lc=pd.Series(100 * lc, index=index), standard_error=pd.Series(100 * se, index=index),
                         coefficients=pd.DataFrame({"intercept": theta, "length": phi, "difficulty": psi}, index=index),
                         difficulty=pd.Series(d, index=pd.Index(questions, name="question_id"), name="difficulty"),
                         pooled_slope=float(pooled))


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


def _fit_joint(mi, qi, t, y, n_models: int, n_questions: int, priors: LCPriors):
    """Maximise the joint penalised cross-entropy; returns theta, phi, pooled phi, psi, d."""
    m = n_models
    lam = priors

    def unpack(x):
        return x[:m], x[m:2 * m], x[2 * m], x[2 * m + 1:3 * m + 1], x[3 * m + 1:]

    def objective(x):
        theta, u, pooled, psi, d = unpack(x)
        eta = theta[mi] + (pooled + u[mi]) * t + psi[mi] * d[qi]
        residual = expit(eta) - y
        value = -(y * log_expit(eta) + (1.0 - y) * log_expit(-eta)).sum() \
            + lam.slope_l2 * (u @ u) + lam.anchor_l2 * (pooled - lam.slope_anchor) ** 2 \
            + lam.loading_l2 * ((psi - 1.0) @ (psi - 1.0)) + lam.difficulty_l2 * (d @ d) + lam.intercept_l2 * (theta @ theta)
        by_slope = np.bincount(mi, residual * t, m)
        gradient = np.concatenate([
            np.bincount(mi, residual, m) + 2 * lam.intercept_l2 * theta,
            by_slope + 2 * lam.slope_l2 * u,
            [by_slope.sum() + 2 * lam.anchor_l2 * (pooled - lam.slope_anchor)],
            np.bincount(mi, residual * d[qi], m) + 2 * lam.loading_l2 * (psi - 1.0),
            np.bincount(qi, residual * psi[mi], n_questions) + 2 * lam.difficulty_l2 * d,
        ])
        return value, gradient

    start = np.zeros(3 * m + 1 + n_questions)
    start[2 * m] = lam.slope_anchor
    start[2 * m + 1:3 * m + 1] = 1.0
    from scipy.optimize import minimize  # on use (about 0.5 s): every page imports peercore.ranking

    result = minimize(objective, start, jac=True, method="L-BFGS-B",
                      options={"maxiter": 20_000, "maxcor": 20, "gtol": 1e-7, "ftol": 1e-13})
    gradient = np.max(np.abs(result.jac))
    if not result.success and gradient > 1e-3:
        raise ConvergenceError("length-controlled GLM (L-BFGS)", iterations=int(result.nit), change=float(gradient),
                               tol=1e-3)
    theta, u, pooled, psi, d = unpack(result.x)
    return theta, pooled + u, float(pooled), psi, d


def _bootstrap_se(t, y, d, start, pooled: float, priors: LCPriors, *, rounds: int, rng: np.random.Generator) -> float:
    """Standard deviation of one model's LC over instruction resamples, (theta, phi, psi) refitted by Newton."""
    n = len(y)
    if n < 2:
        return float("nan")
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=rounds).astype(float)       # (R, n)
    x = np.column_stack([np.ones(n), t, d])
    mean = np.array([0.0, pooled, 1.0])
    precision = 2 * np.array([priors.intercept_l2, priors.slope_l2, priors.loading_l2])
    beta = np.tile(start, (rounds, 1))
    for _ in range(50):
        eta = beta @ x.T
        prob = expit(eta)
        gradient = (weights * (prob - y)) @ x + precision * (beta - mean)
        hessian = np.einsum("rn,nf,ng->rfg", weights * prob * (1 - prob), x, x) + np.diag(precision)
        step = np.linalg.solve(hessian, gradient[..., None])[..., 0]
        beta = beta - step
        if np.max(np.abs(step)) < 1e-10:
            break
    lc = (weights * expit(beta[:, [0]] + beta[:, [2]] * d[None, :])).sum(axis=1) / weights.sum(axis=1)
    return float(np.std(lc, ddof=1))


def _comparability(judges: list[str], baseline: str, fitted: int, models: int) -> tuple[bool, str]:
    """Whether the LC can be set beside AlpacaEval 2's published one, and why not."""
    reasons = []
    if judges != [ALPACAEVAL_JUDGE]:
        reasons.append(f"judged by {', '.join(judges[:3])}{' ...' if len(judges) > 3 else ''}, not AlpacaEval 2's "
                       f"annotator {ALPACAEVAL_JUDGE} (the length slope's prior is that annotator's)")
    if baseline != ALPACAEVAL_BASELINE:
        reasons.append(f"baseline {baseline}, where the published LC is against {ALPACAEVAL_BASELINE}")
    if fitted < 2:
        reasons.append("one model against the baseline: its length slope cannot be told apart from its quality "
                       "in the study, so the LC leans on the prior slope alone")
    if fitted < models:
        reasons.append(f"{models - fitted} model(s) without answer lengths have no LC")
    return (not reasons), ("not comparable with AlpacaEval's published LC: " + "; ".join(reasons)) if reasons else ""
