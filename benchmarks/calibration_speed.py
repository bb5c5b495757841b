"""Speed of the prediction-powered estimates at Arena scale (issue 23: the maths part of ``peercore calibrate``).

1,000,000 judge verdicts (soft, p_a) among 100 models, 10,000 human labels; the
Bradley-Terry PPI estimate with tuned lambda and intervals (``ppi_bradley_terry``, which
also fits the classical and judge-only ratings), the win rates (``ppi_win_rates``) and the
misclassification correction. Budget: the whole ``peercore calibrate`` process under
5 s, so the maths should take well under that.

Run: ``.venv/bin/python benchmarks/calibration_speed.py``; writes
``benchmarks/results/calibration_speed.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import machine, markdown_table, median_time, publish  # noqa: E402

from peercore import calibration as C  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "calibration_speed.md"


def data(n_models: int, n_verdicts: int, n_labels: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1, n_models)
    a = rng.integers(0, n_models, n_verdicts)
    b = (a + rng.integers(1, n_models, n_verdicts)) % n_models
    d = strength[a] - strength[b] + 1.5 * rng.standard_normal(n_verdicts)
    f = expit(0.8 * d + 0.3 + 0.7 * rng.standard_normal(n_verdicts))
    labelled = rng.choice(n_verdicts, n_labels, replace=False)
    y = (rng.random(n_labels) < expit(d[labelled])).astype(float)
    return a, b, f, labelled, y


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rows = []
    for n_models, n_verdicts, n_labels in ((100, 1_000_000, 10_000), (20, 1_000_000, 10_000), (100, 100_000, 1_000)):
        a, b, f, lab, y = data(n_models, n_verdicts, n_labels)
        t_bt, bt = median_time(lambda: C.ppi_bradley_terry(a, b, f, lab, y, n_models=n_models), repeats=args.repeats)
        t_wr, _ = median_time(lambda: C.ppi_win_rates(a, b, f, lab, y, n_models=n_models), repeats=args.repeats)
        t_rg, _ = median_time(lambda: C.corrected_win_rates(a, b, f, lab, y, n_models=n_models), repeats=1)
        rows.append([f"{n_verdicts:,}", f"{n_labels:,}", n_models, f"{t_bt:.3f}", f"{t_wr:.3f}", f"{t_rg:.2f}",
                     f"{bt.lam:.2f}", bt.iterations, f"{np.median(bt.effective_labels):,.0f}"])
        print(rows[-1], file=sys.stderr, flush=True)
    lines = [
        "# Calibration speed (the maths of `peercore calibrate`)", "",
        f"`.venv/bin/python benchmarks/calibration_speed.py` on {machine()}; load average at start "
        f"{os.getloadavg()[0]:.1f}. Median of {args.repeats} runs (1 for the correction), seconds, in process, "
        "input arrays already encoded.", "",
        markdown_table(["verdicts", "labels", "models", "ppi_bradley_terry (PPI + classical + judge-only, intervals)",
                        "ppi_win_rates", "corrected_win_rates", "lambda bt", "Newton iterations",
                        "eff. labels bt (median)"], rows), "",
        "Budget: the whole `peercore calibrate` process under 5 s at 1,000,000 verdicts and 10,000 labels; the "
        "maths takes the first row's seconds of it (the rest is start-up and reading the store).", ""]
    return publish(RESULTS, lines)


if __name__ == "__main__":
    raise SystemExit(main())
