"""Leaderboard robustness audit at Arena scale: every adjacent pair of 100 models over 1,000,000 battles.

Huang, Shen, Wei & Broderick (2026), "Dropping Just a Handful of Preferences Can Change
Top Large Language Model Rankings": for each pair adjacent by point estimate, votes whose
removal swaps them. :func:`peercore.audit.audit_bradley_terry` ranks votes by AMIP
influence and refits exactly (aggregated pair tables, many candidate counts per
chord-Newton batch); :func:`peercore.audit.audit_win_rate` finds the exact minimum for
PRD's win rate. Target: all 99 adjacent pairs under 30 s.

Synthetic log: 100 models with N(0, 1) strengths, 1,000,000 battles between uniformly
random pairs, 10% ties, Bradley-Terry outcomes (the ``benchmarks/ranking.py`` log).

Peer for scale: one exact refit of the whole log through the public estimator
(``peercore.ranking.bradley_terry.bradley_terry`` on encoded battles), the step a
refit-per-candidate search without aggregation repeats for every count it tries.

Also: PRD's 1,760 human votes (``../shared/data/prd_vicuna80``), the audit of its four
adjacent pairs.

Run: ``.venv/bin/python benchmarks/audit_speed.py [--repeats 3]``; writes ``results/audit_speed.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, markdown_table, median_time, publish  # noqa: E402

from peercore.audit import audit_bradley_terry, audit_win_rate  # noqa: E402
from peercore.io.importer import read_path  # noqa: E402
from peercore.ranking._battles import Battles, encode  # noqa: E402
from peercore.ranking.bradley_terry import bradley_terry  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "audit_speed.md"
DATA = HERE.parents[1] / "shared" / "data" / "prd_vicuna80"

LOAD = os.getloadavg()[0]  # at import: the machine's load when the benchmark started


def synthetic(n_models=100, n_battles=1_000_000, seed=0):
    rng = np.random.default_rng(seed)
    strength = rng.normal(size=n_models)
    a = rng.integers(0, n_models, n_battles)
    b = (a + rng.integers(1, n_models, n_battles)) % n_models
    win = rng.random(n_battles) < 1 / (1 + np.exp(-(strength[a] - strength[b])))
    score = np.where(rng.random(n_battles) < 0.1, 0.5, win.astype(float))
    return a, b, score


def summary(pairs, n_battles):
    found = [p for p in pairs if p.drop is not None]
    drops = np.array([p.drop for p in found])
    close = [abs(p.amip_drop - p.drop) / p.drop for p in found if p.amip_drop is not None]
    return {
        "pairs": len(pairs), "verified": sum(p.verified for p in pairs),
        "median drop": float(np.median(drops)) if len(drops) else float("nan"),
        "min / max drop": f"{drops.min()} / {drops.max()}" if len(drops) else "-",
        "median share": f"{np.median(drops) / n_battles:.2e}" if len(drops) else "-",
        "AMIP within 10% of refit": f"{np.mean(np.array(close) <= 0.1):.2f}" if close else "-",
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    a, b, score = synthetic()
    n = 100
    rows = []
    for label, options in (("plain", {}), ("reweight (LMArena)", {"reweight": True}), ("prior 200", {"prior": 200.0})):
        repeats = args.repeats if not options else 1
        seconds, pairs = median_time(lambda: audit_bradley_terry(a, b, score, n_models=n, **options), repeats=repeats)
        s = summary(pairs, len(a))
        rows.append([f"Bradley-Terry, {label}", f"{seconds:.2f}", repeats, s["pairs"], s["verified"], s["median drop"],
                     s["min / max drop"], s["median share"], s["AMIP within 10% of refit"],
                     "yes" if seconds < 30 else "**NO**"])
    soft = np.clip(np.where(score == 1, 0.75, np.where(score == 0, 0.25, 0.5))
                   + np.random.default_rng(1).normal(0, 0.1, len(a)), 0.0, 1.0)
    seconds, pairs = median_time(lambda: audit_bradley_terry(a, b, soft, n_models=n), repeats=1)
    s = summary(pairs, len(a))
    rows.append(["Bradley-Terry, soft outcomes (p_a as fractional wins: one category per vote)", f"{seconds:.2f}", 1,
                 s["pairs"], s["verified"], s["median drop"], s["min / max drop"], s["median share"],
                 s["AMIP within 10% of refit"], "yes" if seconds < 30 else "**NO**"])
    seconds, pairs = median_time(lambda: audit_win_rate(a, b, score, n_models=n), repeats=args.repeats)
    s = summary(pairs, len(a))
    rows.append(["win rate (exact minimum)", f"{seconds:.2f}", args.repeats, s["pairs"], s["verified"],
                 s["median drop"], s["min / max drop"], s["median share"], "-", "yes" if seconds < 30 else "**NO**"])
    battles = Battles(tuple(f"m{k:03d}" for k in range(n)), a.astype(np.intp), b.astype(np.intp), score, ("j",),
                      np.zeros(len(a), dtype=np.intp))
    refit, _ = median_time(lambda: bradley_terry(battles), repeats=args.repeats)

    prd_rows = []
    if DATA.is_dir():
        judgments = read_path(DATA).judgments
        five = {"gpt4", "gpt35", "claude", "bard", "vicuna-13b"}
        human = judgments[(judgments["judge"] == "human:prd") & judgments["model_a"].isin(five)
                          & judgments["model_b"].isin(five)].reset_index(drop=True)
        coded = encode(human)
        for method, audit in (("Bradley-Terry", audit_bradley_terry), ("win rate", audit_win_rate)):
            for p in audit(coded.a, coded.b, coded.score_a, n_models=coded.n_models):
                prd_rows.append([method, coded.models[p.higher], coded.models[p.lower], f"{p.gap:.1f}"
                                 if method == "Bradley-Terry" else f"{p.gap:.3f}", p.drop,
                                 f"{p.share:.4f}" if p.share is not None else "-",
                                 f"{p.pair_share:.3f}" if p.pair_share is not None else "-", p.verified,
                                 p.amip_drop if method == "Bradley-Terry" else "-"])
    return publish(OUT, [
        "# Robustness audit: speed at 1,000,000 battles, 100 models",
        "",
        f"Machine: {machine()}; load average at start {LOAD:.1f}.",
        "",
        "Command: `.venv/bin/python benchmarks/audit_speed.py --repeats 3`",
        "",
        "Every adjacent pair (99) of 100 models, 1,000,000 synthetic Bradley-Terry battles (10% ties). "
        "`verified`: the exact refit without the listed votes ranks the lower model above the higher one. "
        "'AMIP within 10%': share of pairs whose linear (influence) prediction of the count is within 10% of "
        "the refitted count. Target: under 30 s.",
        "",
        markdown_table(["audit", "median seconds", "runs", "pairs", "verified", "median drop", "min / max drop",
                        "median share of votes", "AMIP within 10% of refit", "under 30 s"], rows),
        "",
        f"For scale: one exact refit of the whole log through `bradley_terry` (encoded battles, no bootstrap) takes "
        f"{refit:.2f} s; a search that refits the 1,000,000 battles for each candidate count (~20 per pair by "
        f"doubling and bisection) would need about {99 * 20 * refit:.0f} s for the 99 pairs.",
        "",
        "## PRD Vicuna80: the 1,760 human votes among the five models",
        "",
        "Each vote counted on its own (no majority); gap in Elo points (Bradley-Terry) or win-rate points. "
        "'share of the pair's votes' (dropped / the two models' battles with each other) exceeds 1 when the "
        "removal also takes their votes against other models.",
        "",
        markdown_table(["method", "higher", "lower", "gap", "drop", "share of votes", "share of the pair's votes",
                        "verified", "AMIP count"], prd_rows) if prd_rows else "Skipped: the data folder is absent.",
        "",
    ])


if __name__ == "__main__":
    sys.exit(main())
