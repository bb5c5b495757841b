"""Does the selective-judging guarantee hold? 1,000 calibration draws from judges with known accuracy curves.

Trust or Escalate (Jung, Brahman & Choi 2025), section 2.1: with probability at least
1 - delta over the calibration draw, agreement with humans on the verdicts kept is at
least 1 - alpha. Each synthetic judge has a confidence c ~ Uniform(0.5, 1) and agrees
with the human label with probability g(c), a curve we choose; the *population*
agreement of a threshold t is then known exactly,

    A(t) = E[g(C) | C >= t] = (1 / (1 - t)) * integral_t^1 g(c) dc      (for 0.5 <= t <= 1),

computed here by quadrature on 200,001 points. For each of 1,000 draws of n calibration
comparisons, :func:`peercore.selective.calibrate` (or :func:`~peercore.selective.plan_cascade`)
picks thresholds; the draw *fails* when A(t) < 1 - alpha. The guarantee says failures
happen in at most delta of the draws; with 1,000 draws the binomial tolerance is
delta * 1000 + 3 * sqrt(1000 delta (1 - delta)) (28 more at delta = 0.1).

Cascades: two judges with independent confidences; the population agreement of all kept
verdicts is the mixture of the two stages' kept agreements. Also shown: the reference
code's cascade, which calibrates every stage at delta instead of delta / stages.

Run: ``.venv/bin/python benchmarks/selective_simulation.py [--draws 1000]``; writes
``results/selective_simulation.md``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, markdown_table, publish  # noqa: E402

from peercore.selective import calibrate, plan_cascade  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "selective_simulation.md"
GRID = np.linspace(0.5, 1.0, 200_001)

# accuracy-by-confidence curves g(c), c in [0.5, 1]
CURVES = {
    "calibrated: g(c) = c": lambda c: c,
    "overconfident: g(c) = 0.5 + 0.6 (c - 0.5)": lambda c: 0.5 + 0.6 * (c - 0.5),
    "flat then sure: g = 0.62, 0.97 above c = 0.9": lambda c: np.where(c >= 0.9, 0.97, 0.62),
    "unreliable top: g(c) = c, 0.55 above c = 0.97": lambda c: np.where(c >= 0.97, 0.55, c),
}

LOAD = os.getloadavg()[0]  # at import: the machine's load when the benchmark started


def population_agreement(curve, threshold: float) -> tuple[float, float]:
    """(A(t), P(C >= t)) for C ~ U(0.5, 1): the kept share and the agreement on it."""
    if not math.isfinite(threshold):
        return math.nan, 0.0
    t = max(threshold, 0.5)
    mask = GRID >= t
    if not mask.any():
        return math.nan, 0.0
    return float(curve(GRID[mask]).mean()), float(mask.mean())


def draw(curve, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    c = rng.uniform(0.5, 1.0, n)
    return c, (rng.random(n) < curve(c)).astype(float)


def single(curve, *, n, alpha, delta, draws, rng):
    failures = nothing = 0
    kept, agreement = [], []
    for _ in range(draws):
        plan = calibrate(*draw(curve, n, rng), alpha=alpha, delta=delta)
        a, share = population_agreement(curve, plan.threshold)
        if share == 0:
            nothing += 1
            continue
        kept.append(share)
        agreement.append(a)
        failures += a < 1 - alpha
    return failures, nothing, kept, agreement


def cascade(first, second, *, n, alpha, delta, draws, rng, split=True):
    failures = nothing = 0
    kept, agreement = [], []
    for _ in range(draws):
        c1, a1 = draw(first, n, rng)
        c2, a2 = draw(second, n, rng)
        if split:
            plan = plan_cascade([(c1, a1), (c2, a2)], alpha=alpha, delta=delta)
            t1, t2 = plan.stages[0].threshold, plan.stages[1].threshold
        else:  # the reference code: every stage at delta, stage 2 on what stage 1 left
            p1 = calibrate(c1, a1, alpha=alpha, delta=delta)
            left = ~p1.keeps(c1)
            t1, t2 = p1.threshold, calibrate(c2[left], a2[left], alpha=alpha, delta=delta).threshold
        g1, s1 = population_agreement(first, t1)
        g2, s2 = population_agreement(second, t2)
        reach2 = 1.0 - s1
        total = s1 + reach2 * s2
        if total == 0:
            nothing += 1
            continue
        pooled = (np.nan_to_num(g1) * s1 + np.nan_to_num(g2) * reach2 * s2) / total
        kept.append(total)
        agreement.append(pooled)
        failures += pooled < 1 - alpha
    return failures, nothing, kept, agreement


def tolerance(delta: float, draws: int) -> float:
    return delta * draws + 3 * math.sqrt(draws * delta * (1 - delta))


def row(name, n, alpha, delta, draws, result):
    failures, nothing, kept, agreement = result
    limit = tolerance(delta, draws)
    return [name, n, f"{1 - alpha:.2f}", f"{delta:.2f}", failures, f"{failures / draws:.3f}", f"{limit:.0f}",
            "yes" if failures <= limit else "**NO**", nothing,
            f"{np.mean(kept):.3f}" if kept else "-", f"{np.mean(agreement):.3f}" if agreement else "-",
            f"{np.min(agreement):.3f}" if agreement else "-"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    header = ["judge", "n calibration", "target 1 - alpha", "delta", "failed draws", "failure rate",
              "tolerance (failures)", "within", "draws keeping nothing", "mean kept share (population)",
              "mean agreement kept (population)", "worst agreement kept"]
    rows, started = [], time.perf_counter()
    settings = [("calibrated: g(c) = c", 500, 0.10), ("calibrated: g(c) = c", 200, 0.15),
                ("overconfident: g(c) = 0.5 + 0.6 (c - 0.5)", 500, 0.25),
                ("flat then sure: g = 0.62, 0.97 above c = 0.9", 500, 0.10),
                ("unreliable top: g(c) = c, 0.55 above c = 0.97", 1000, 0.12)]
    for name, n, alpha in settings:
        for delta in (0.1, 0.05):
            rows.append(row(name, n, alpha, delta, args.draws,
                            single(CURVES[name], n=n, alpha=alpha, delta=delta, draws=args.draws, rng=rng)))
    cascade_rows = []
    weak, strong = CURVES["overconfident: g(c) = 0.5 + 0.6 (c - 0.5)"], CURVES["calibrated: g(c) = c"]
    for split in (True, False):
        for alpha in (0.15, 0.2):
            label = ("delta / 2 per stage (ours)" if split else "delta per stage (reference code)")
            cascade_rows.append(row(f"overconfident -> calibrated, {label}", 500, alpha, 0.1, args.draws,
                                    cascade(weak, strong, n=500, alpha=alpha, delta=0.1, draws=args.draws, rng=rng,
                                            split=split)))
    seconds = time.perf_counter() - started
    return publish(OUT, [
        "# Selective judging: coverage of the guarantee over calibration draws",
        "",
        f"Machine: {machine()}; load average at start {LOAD:.1f}. {args.draws} calibration draws per row "
        f"(seed {args.seed}); {seconds:.1f} s in all.",
        "",
        "Command: `.venv/bin/python benchmarks/selective_simulation.py --draws 1000`",
        "",
        "Each judge's confidence c ~ U(0.5, 1) agrees with the human label with probability g(c). A draw "
        "fails when the population agreement on the verdicts its threshold keeps is below the target "
        "(Trust or Escalate, section 2.1: P(failure) <= delta). Thresholds from `peercore.selective.calibrate` "
        "(grid 1.000, 0.999, ..., at least 30 kept, Clopper-Pearson bound).",
        "",
        "## One judge",
        "",
        markdown_table(header, rows),
        "",
        "## Cascade of two judges (stage 2 calibrated on what stage 1 left)",
        "",
        markdown_table(header, cascade_rows),
        "",
        "Tolerance: delta x draws + 3 binomial standard deviations. A draw 'keeping nothing' escalates every "
        "comparison (no failure: the guarantee is about kept verdicts).",
        "",
    ])


if __name__ == "__main__":
    sys.exit(main())
