"""Coverage and width of the prediction-powered estimates on synthetic judges (issue 23 acceptance).

A synthetic world with known truth. Six models with logit strengths ``STRENGTH``; each
comparison draws an ordered pair uniformly and an item effect delta ~ N(0, 1.5^2) (some
questions are clear wins, some close calls). The reference's label: with probability 0.1 a
random vote (label noise, uniform over win/tie/loss), else a tie with probability 0.1,
else a win for a with probability sigma(s_a - s_b + delta). Judges (scenarios):

* ``calibrated``: p_a = E[label | the comparison], the reference's own expected outcome
  (the best a judge can do; its uncertainty is as informative as it gets);
* ``soft``: p_a = sigma(0.8 (s_a - s_b + delta) + 0.4 + eta), eta ~ N(0, 0.7^2): a soft
  verdict, informative, biased towards the first position (+0.4 logit);
* ``hard``: the same judge's verdict made hard (tie when |logit| < 0.2), then flipped with
  probability 0.15 (error rate), and biased towards model 0 (+0.8 logit: self-preference);
* ``both_orders``: the ``hard`` judge asked in both orders, its two outcomes averaged
  (0, 1/4, 1/2, 3/4, 1); disagreement of the orders is its uncertainty;
* ``useless``: p_a uniform on [0, 1], independent of everything (lambda should be ~0).

Truth: the superpopulation values (each repetition draws a fresh population of N
comparisons): win rate of m = E[score of m] over its comparisons (Gauss-Hermite
quadrature over delta); Bradley-Terry = the minimiser of the expected logistic loss with
pairs equally frequent (``peercore.ranking.core.fit`` on the exact pair probabilities).

Checks: 95% intervals cover within the 99% binomial band around 0.95; PPI++ never wider
than the classical interval on the same labels beyond Monte Carlo error; active selection
(pi proportional to uncertainty, ``active_probabilities``) against uniform selection at
the same expected budget.

Run: ``.venv/bin/python benchmarks/calibration_simulation.py [--reps 1000]``; writes
``benchmarks/results/calibration.md`` unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import expit
from scipy.stats import binom

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import machine, markdown_table  # noqa: E402

from peercore import calibration as C  # noqa: E402
from peercore.ranking import core  # noqa: E402

STRENGTH = np.array([0.8, 0.4, 0.1, -0.1, -0.4, -0.8])
K = len(STRENGTH)
# World parameters (item-effect sd, share of random votes, share of ties): "noisy" for every
# judge, and "clean" (no label noise, no ties, items mostly clear-cut) where a calibrated
# judge's uncertainty is as informative as it can be.
WORLDS = {"noisy": (1.5, 0.1, 0.1), "clean": (3.0, 0.0, 0.0)}
SCENARIOS = ("calibrated", "soft", "hard", "both_orders", "useless", "clean_calibrated")


def world(scenario: str) -> tuple[float, float, float]:
    return WORLDS["clean" if scenario.startswith("clean") else "noisy"]
RESULTS = Path(__file__).resolve().parent / "results" / "calibration.md"


# ----------------------------------------------------------------------------- the world


def label_mean(logit: np.ndarray, scenario: str = "noisy") -> np.ndarray:
    """E[label | logit of the reference's preference]: noise, ties, then a coin."""
    _, noise, tie = world(scenario)
    return noise * 0.5 + (1 - noise) * (tie * 0.5 + (1 - tie) * expit(logit))


def truth(scenario: str = "noisy") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Win rates, pair probabilities and BT Elo ratings of the superpopulation."""
    tau = world(scenario)[0]
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    weights = weights / weights.sum()
    pair = np.zeros((K, K))
    for i in range(K):
        for j in range(K):
            if i != j:
                pair[i, j] = weights @ label_mean(STRENGTH[i] - STRENGTH[j] + tau * nodes, scenario)
    win = pair.sum(axis=1) / (K - 1)
    i, j = np.triu_indices(K, 1)
    sol = core.fit(core.Design(K, i, j, pair[i, j], np.ones(len(i))), l2=0.0, tol=1e-12)
    c = 400 / math.log(10)
    return win, pair, 1000 + (sol.theta - sol.theta.mean()) * c


def population(n_comparisons: int, scenario: str, rng: np.random.Generator):
    """One population: (a, b, judge outcome f, reference label y for every comparison, p for uncertainty)."""
    tau, noise, tie = world(scenario)
    a = rng.integers(0, K, n_comparisons)
    b = (a + rng.integers(1, K, n_comparisons)) % K
    d = STRENGTH[a] - STRENGTH[b] + tau * rng.standard_normal(n_comparisons)
    coin = (rng.random(n_comparisons) < expit(d)).astype(float)
    y = np.where(rng.random(n_comparisons) < tie, 0.5, coin)
    y = np.where(rng.random(n_comparisons) < noise, rng.choice([0.0, 0.5, 1.0], n_comparisons), y)
    if scenario == "useless":
        f = rng.random(n_comparisons)
        return a, b, f, y, f
    if scenario in ("calibrated", "clean_calibrated"):
        f = label_mean(d, scenario)
        return a, b, f, y, f
    eta = 0.7 * rng.standard_normal(n_comparisons)
    if scenario == "soft":
        f = expit(0.8 * d + 0.4 + eta)
        return a, b, f, y, f

    def hard(logit):
        v = np.where(logit > 0.2, 1.0, np.where(logit < -0.2, 0.0, 0.5))
        flip = rng.random(n_comparisons) < 0.15
        return np.where(flip, 1.0 - v, v)

    self_pref = 0.8 * ((a == 0).astype(float) - (b == 0).astype(float))
    first = hard(0.8 * d + 0.4 + eta + self_pref)
    if scenario == "hard":
        return a, b, first, y, first
    # The same judge with the answers swapped: position bias now favours b; re-oriented to a.
    second = 1.0 - hard(-(0.8 * d + eta + self_pref) + 0.4 + 0.5 * rng.standard_normal(n_comparisons))
    f = 0.5 * (first + second)
    return a, b, f, y, np.c_[first, second]


# ----------------------------------------------------------------------------- one repetition


def one_rep(scenario: str, n_comparisons: int, n_labels: int, rng: np.random.Generator, win, elo) -> dict:
    a, b, f, y_all, extra = population(n_comparisons, scenario, rng)
    lab = rng.choice(n_comparisons, n_labels, replace=False)
    out = {}
    wr = C.ppi_win_rates(a, b, f, lab, y_all[lab], n_models=K)
    out["wr_cover"] = ((wr.ci_low <= win) & (win <= wr.ci_high)).to_numpy()
    out["wr_cover_classical"] = ((wr.classical_low <= win) & (win <= wr.classical_high)).to_numpy()
    z = 1.959963984540054
    out["wr_cover_judge"] = (np.abs(wr.judge_only - win) <= z * wr.judge_only_se).to_numpy()
    out["wr_width"] = (wr.ci_high - wr.ci_low).to_numpy()
    out["wr_width_classical"] = (wr.classical_high - wr.classical_low).to_numpy()
    out["wr_lam"] = wr.lam.to_numpy()
    out["wr_eff"] = float(np.median(wr.effective_labels))
    bt = C.ppi_bradley_terry(a, b, f, lab, y_all[lab], n_models=K)
    out["bt_cover"] = (bt.ci_low <= elo) & (elo <= bt.ci_high)
    out["bt_cover_classical"] = (bt.classical_low <= elo) & (elo <= bt.classical_high)
    out["bt_width"] = bt.ci_high - bt.ci_low
    out["bt_width_classical"] = bt.classical_high - bt.classical_low
    out["bt_lam"] = bt.lam
    out["bt_eff"] = float(np.median(bt.effective_labels))
    rg = C.corrected_win_rates(a, b, f, lab, y_all[lab], n_models=K)
    out["rg_cover"] = ((rg.ci_low <= win) & (win <= rg.ci_high)).to_numpy()
    out["rg_width"] = (rg.ci_high - rg.ci_low).to_numpy()
    # Active vs uniform at the same expected budget (Zrnic & Candes), weighted estimator.
    if scenario in ("calibrated", "soft", "useless", "clean_calibrated"):
        u = C.uncertainty(p_a=extra)
    elif scenario == "both_orders":
        u = C.uncertainty(both_orders=extra)
    else:
        u = np.ones(n_comparisons)  # one hard verdict: nothing to read, uniform
    for name, pi in (("active", C.active_probabilities(u, n_labels, mix=0.5)),
                     ("active_mix02", C.active_probabilities(u, n_labels, mix=0.2)),
                     ("uniform_ipw", np.full(n_comparisons, n_labels / n_comparisons))):
        chosen = np.flatnonzero(C.draw_labels(pi, rng=rng))
        est = C.ppi_win_rates(a, b, f, chosen, y_all[chosen], n_models=K, label_weight=1.0 / pi[chosen])
        out[f"{name}_cover"] = ((est.ci_low <= win) & (win <= est.ci_high)).to_numpy()
        out[f"{name}_width"] = (est.ci_high - est.ci_low).to_numpy()
        out[f"{name}_n"] = len(chosen)
    return out


def run(scenario: str, reps: int, n_comparisons: int, n_labels: int, seed: int) -> dict:
    win, _, elo = truth(scenario)
    rng = np.random.default_rng(np.random.SeedSequence([seed, SCENARIOS.index(scenario), n_labels]))
    rows = [one_rep(scenario, n_comparisons, n_labels, rng, win, elo) for _ in range(reps)]
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


# ----------------------------------------------------------------------------- report


def band(reps: int, level: float = 0.95, confidence: float = 0.99) -> tuple[float, float]:
    """The central ``confidence`` binomial band of a coverage estimated from ``reps`` repetitions."""
    lo = binom.ppf((1 - confidence) / 2, reps, level) / reps
    hi = binom.ppf(1 - (1 - confidence) / 2, reps, level) / reps
    return float(lo), float(hi)


def summarise(results: dict, reps: int) -> list[str]:
    lo, hi = band(reps)
    lines = []
    cov_rows, width_rows, active_rows = [], [], []
    for (scenario, n_labels), r in results.items():
        def per_model(key):
            c = r[key].mean(axis=0)
            return f"{c.mean():.3f} [{c.min():.3f}, {c.max():.3f}]"

        ok = all(lo <= c <= hi for key in ("wr_cover", "bt_cover") for c in r[key].mean(axis=0))
        cov_rows.append([scenario, n_labels, per_model("wr_cover"), per_model("wr_cover_classical"),
                         per_model("wr_cover_judge"), per_model("bt_cover"), per_model("bt_cover_classical"),
                         per_model("rg_cover"), "yes" if ok else "NO"])
        ratio_wr = r["wr_width"] / r["wr_width_classical"]
        ratio_bt = r["bt_width"] / r["bt_width_classical"]
        width_rows.append([scenario, n_labels, f"{np.nanmean(r['wr_lam']):.2f}", f"{ratio_wr.mean():.3f}",
                           f"{(ratio_wr > 1.0 + 1e-9).mean():.3f}", f"{ratio_wr.max():.3f}",
                           f"{np.median(r['wr_eff']):.0f}", f"{np.nanmean(r['bt_lam']):.2f}",
                           f"{np.nanmean(ratio_bt):.3f}", f"{np.nanmean(ratio_bt > 1.01):.3f}",
                           f"{np.nanmax(ratio_bt):.3f}",
                           f"{np.nanmedian(r['bt_eff']):.0f}",
                           f"{np.nanmean(r['rg_width'] / r['wr_width_classical']):.3f}"])
        aw, uw = r["active_width"].mean(), r["uniform_ipw_width"].mean()
        a2 = r["active_mix02_width"].mean()
        active_rows.append([scenario, n_labels, f"{r['active_n'].mean():.1f}", per_model("active_cover"),
                            per_model("active_mix02_cover"), per_model("uniform_ipw_cover"), f"{aw:.4f}", f"{a2:.4f}",
                            f"{uw:.4f}", f"{r['wr_width'].mean():.4f}", f"{aw / uw:.3f}",
                            f"{(1 - (aw / uw) ** 2) * 100:.0f}%", f"{a2 / uw:.3f}"])
    lines += [f"99% binomial band for a 95% coverage over {reps} repetitions: [{lo:.3f}, {hi:.3f}] "
              "(per model; each cell: mean over the 6 models [min, max]).", ""]
    lines.append(markdown_table(
        ["judge", "labels", "PPI++ win rate", "classical win rate", "judge only win rate", "PPI++ BT",
         "classical BT", "Rogan-Gladen 3x3", "PPI++ and BT in band"], cov_rows))
    lines += ["", "Widths: ratio PPI++ / classical interval on the same labels, per model and repetition "
              "(wr = win rate, bt = Bradley-Terry); 'wider' = share of (repetition, model) where PPI++ was "
              "wider at all (for BT: by more than 1%; one scalar lambda minimises the trace of the covariance, "
              "not each model's variance); effective labels = n x Var(classical) / Var(PPI++) (median over models, then "
              "over repetitions; n = all labels).", ""]
    lines.append(markdown_table(
        ["judge", "labels", "mean lambda wr", "width ratio wr", "wider wr", "max ratio wr", "eff. labels wr",
         "lambda bt", "width ratio bt", "wider bt by > 1%", "max ratio bt", "eff. labels bt",
         "RG width / classical"], width_rows))
    lines += ["", "Active (pi proportional to the judge's uncertainty, mixed 50% (default) or 20% with uniform) against uniform "
              "selection at the same expected budget, both with the weighted (Zrnic-Candes, self-normalised) "
              "estimator; win rates. Saving = 1 - (width ratio)^2, the share of labels uniform selection "
              "would need to spend less for the same width (asymptotically).", ""]
    lines.append(markdown_table(
        ["judge", "budget", "mean labels drawn", "coverage active (mix 0.5)", "coverage active (mix 0.2)",
         "coverage uniform", "mean width active (0.5)", "mean width active (0.2)", "mean width uniform (weighted)",
         "mean width PPI++ (exactly n uniform)", "width ratio active (0.5) / uniform", "label saving (0.5)",
         "width ratio active (0.2) / uniform"], active_rows))
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--comparisons", type=int, default=5000)
    parser.add_argument("--labels", type=int, action="append")
    parser.add_argument("--seed", type=int, default=2311)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    labels = args.labels or [300]
    start = time.perf_counter()
    results = {}
    for scenario in SCENARIOS:
        for n_labels in labels:
            results[(scenario, n_labels)] = run(scenario, args.reps, args.comparisons, n_labels, args.seed)
            print(f"{scenario} n={n_labels}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    lines = ["## 1. Simulation: coverage and width on synthetic judges", "",
             f"`.venv/bin/python benchmarks/calibration_simulation.py --reps {args.reps}` "
             f"(seed {args.seed}; {args.comparisons} comparisons per population, a fresh population per "
             f"repetition; {time.perf_counter() - start:.0f} s on {machine()}).", "",
             *[f"Truth ({name} world, superpopulation): win rates " + ", ".join(f"{w:.4f}" for w in truth(name)[0])
               + "; BT Elo " + ", ".join(f"{e:.1f}" for e in truth(name)[2]) + "." for name in WORLDS], ""]
    lines += summarise(results, args.reps)
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text("# Calibration (prediction-powered inference): simulation\n\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
