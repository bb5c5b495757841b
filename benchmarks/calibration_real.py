"""Prediction-powered leaderboards on real judges and real human votes (issue 23 acceptance).

PRD Vicuna80 (``../shared/data/prd_vicuna80``, read with the project's importer): five
LLM reviewers (gpt4, gpt35, claude, bard, vicuna-13b) each judged every ordered pair of
the five PRD models on 80 questions (1,600 verdicts each); people cast 1,760 votes on
the same questions and pairs. The population is the human votes: each vote is matched to
the reviewer's two verdicts on its question and unordered pair, re-oriented to the vote's
order and averaged (0, 1/4, 1/2, 3/4, 1; the two orders' disagreement is the judge's
uncertainty). Truth: every vote's win rate (``win_rates`` of the human rows, each vote
counted, as ``peercore rank --judge human:prd --each-vote``) and Bradley-Terry ratings
(``bradley_terry`` of the same rows). Each repetition labels a random subset of n votes
(100, 300, 1,000) and estimates from them and the judge's verdicts on the others.

The truth here is the finite population of 1,760 votes while the intervals are for the
superpopulation, so they are conservative, more so as n approaches 1,760.

LFQA expert preferences (``../shared/data/lfqa_expert_pairwise``): 260 expert votes, no
LLM judge in the data, so the judge is a stated heuristic: p_a = sigma(2 log(len_a /
len_b)) (the longer answer, softly). Contestants are the answers' kinds (human-written
vs machine); the 145 human-vs-machine votes are the population (the 115 human-vs-human
votes have no contestant pair); n = 50 and 100 (300 and 1,000 exceed the data).

Run: ``.venv/bin/python benchmarks/calibration_real.py [--reps 500]``; writes
``benchmarks/results/calibration_real.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import machine, markdown_table, publish  # noqa: E402

from peercore import calibration as C  # noqa: E402
from peercore.io.importer import read_path  # noqa: E402
from peercore.ranking.bradley_terry import bradley_terry  # noqa: E402
from peercore.ranking.winrate import win_rates  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PRD_MODELS = ("bard", "claude", "gpt35", "gpt4", "vicuna-13b")
REVIEWERS = ("gpt4", "gpt35", "claude", "bard", "vicuna-13b")
RESULTS = Path(__file__).resolve().parent / "results" / "calibration_real.md"
SCORE = {"model_a": 1.0, "tie": 0.5, "model_b": 0.0}


def prd_population():
    """Human votes among the five PRD models and, per reviewer, its two verdicts on each vote's comparison."""
    judgments = read_path(DATA / "prd_vicuna80").judgments
    human = judgments[(judgments["judge"] == "human:prd") & judgments["model_a"].isin(PRD_MODELS)
                      & judgments["model_b"].isin(PRD_MODELS)].reset_index(drop=True)
    code = {m: i for i, m in enumerate(PRD_MODELS)}
    a = human["model_a"].map(code).to_numpy(np.intp)
    b = human["model_b"].map(code).to_numpy(np.intp)
    y = human["winner"].map(SCORE).to_numpy(float)
    judges = {}
    for reviewer in REVIEWERS:
        rows = judgments[judgments["judge"] == reviewer]
        verdict = dict(zip(zip(rows["question_id"], rows["model_a"], rows["model_b"]), rows["winner"].map(SCORE)))
        same = np.array([verdict[(q, ma, mb)] for q, ma, mb in zip(human["question_id"], human["model_a"],
                                                                     human["model_b"])])
        swapped = np.array([1.0 - verdict[(q, mb, ma)] for q, ma, mb in zip(human["question_id"], human["model_a"],
                                                                            human["model_b"])])
        judges[reviewer] = np.c_[same, swapped]
    truth_wr = win_rates(human).reindex(list(PRD_MODELS)).to_numpy()
    truth_bt = bradley_terry(human).reindex(list(PRD_MODELS)).to_numpy()
    return human, a, b, y, judges, truth_wr, truth_bt


def lfqa_population():
    rows = [json.loads(line) for line in (DATA / "lfqa_expert_pairwise" / "experts_pairwise_human_preferences.jsonl")
            .read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["answer_a_type"] != r["answer_b_type"]]
    code = {"human": 0, "machine": 1}
    a = np.array([code[r["answer_a_type"]] for r in rows], dtype=np.intp)
    b = 1 - a
    y = np.array([1.0 if r["overall_preference"] == -1 else 0.0 for r in rows])
    ratio = np.array([len(r["answer_a"]) / max(len(r["answer_b"]), 1) for r in rows])
    f = 1.0 / (1.0 + np.exp(-2.0 * np.log(ratio)))
    truth = np.array([np.mean(np.where(a == m, y, 1 - y)) for m in (0, 1)])
    return a, b, y, f, truth


def evaluate(a, b, y, f, truth_wr, truth_bt, n_labels, reps, rng, *, n_models, both=None, bt=True):
    cover = {k: [] for k in ("ppi", "classical", "rg", "bt", "bt_classical", "active")}
    width = {k: [] for k in ("ppi", "classical", "rg", "bt", "bt_classical", "active")}
    lam, lam_bt, eff, eff_bt = [], [], [], []
    for _ in range(reps):
        lab = rng.choice(len(a), n_labels, replace=False)
        wr = C.ppi_win_rates(a, b, f, lab, y[lab], n_models=n_models)
        cover["ppi"].append(((wr.ci_low <= truth_wr) & (truth_wr <= wr.ci_high)).to_numpy())
        cover["classical"].append(((wr.classical_low <= truth_wr) & (truth_wr <= wr.classical_high)).to_numpy())
        width["ppi"].append((wr.ci_high - wr.ci_low).to_numpy())
        width["classical"].append((wr.classical_high - wr.classical_low).to_numpy())
        lam.append(wr.lam.mean())
        eff.append(np.median(wr.effective_labels))
        rg = C.corrected_win_rates(a, b, f, lab, y[lab], n_models=n_models)
        cover["rg"].append(((rg.ci_low <= truth_wr) & (truth_wr <= rg.ci_high)).to_numpy())
        width["rg"].append((rg.ci_high - rg.ci_low).to_numpy())
        if bt:
            est = C.ppi_bradley_terry(a, b, f, lab, y[lab], n_models=n_models)
            cover["bt"].append((est.ci_low <= truth_bt) & (truth_bt <= est.ci_high))
            cover["bt_classical"].append((est.classical_low <= truth_bt) & (truth_bt <= est.classical_high))
            width["bt"].append(est.ci_high - est.ci_low)
            width["bt_classical"].append(est.classical_high - est.classical_low)
            lam_bt.append(est.lam)
            eff_bt.append(np.median(est.effective_labels))
        if both is not None:
            pi = C.active_probabilities(C.uncertainty(both_orders=both), n_labels)
            chosen = np.flatnonzero(C.draw_labels(pi, rng=rng))
            act = C.ppi_win_rates(a, b, f, chosen, y[chosen], n_models=n_models, label_weight=1 / pi[chosen])
            cover["active"].append(((act.ci_low <= truth_wr) & (truth_wr <= act.ci_high)).to_numpy())
            width["active"].append((act.ci_high - act.ci_low).to_numpy())

    def mean(key, what):
        values = (cover if what == "cover" else width)[key]
        return float(np.nanmean(np.array(values, dtype=float))) if values else math.nan

    return {"cover": {k: mean(k, "cover") for k in cover}, "width": {k: mean(k, "width") for k in width},
            "lam": float(np.nanmean(lam)), "lam_bt": float(np.nanmean(lam_bt)) if lam_bt else math.nan,
            "eff": float(np.nanmedian(eff)), "eff_bt": float(np.nanmedian(eff_bt)) if eff_bt else math.nan}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=2403)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    human, a, b, y, judges, truth_wr, truth_bt = prd_population()
    # Every label: the classical estimate on all 1,760 votes is the truth (one definition of the number).
    everything = C.ppi_win_rates(a, b, judges["gpt4"].mean(axis=1), np.arange(len(a)), y, n_models=len(PRD_MODELS))
    assert np.allclose(everything.classical.to_numpy(), truth_wr), "classical on all votes != win_rates"
    rows, judge_rows = [], []
    for reviewer in REVIEWERS:
        both = judges[reviewer]
        f = both.mean(axis=1)
        judge_wr = C.ppi_win_rates(a, b, f, [], [], n_models=len(PRD_MODELS)).judge_only.to_numpy()
        judge_rows.append([reviewer, f"{np.mean(np.abs(judge_wr - truth_wr)):.3f}",
                           f"{np.max(np.abs(judge_wr - truth_wr)):.3f}",
                           f"{np.corrcoef(f, y)[0, 1]:.2f}", f"{np.mean(both[:, 0] != both[:, 1]):.2f}"])
        for n_labels in (100, 300, 1000):
            rng = np.random.default_rng(np.random.SeedSequence([args.seed, REVIEWERS.index(reviewer), n_labels]))
            r = evaluate(a, b, y, f, truth_wr, truth_bt, n_labels, args.reps, rng, n_models=len(PRD_MODELS),
                         both=both)
            c, w = r["cover"], r["width"]
            rows.append([reviewer, n_labels, f"{c['ppi']:.3f}", f"{c['classical']:.3f}", f"{w['ppi']:.3f}",
                         f"{w['classical']:.3f}", f"{w['ppi'] / w['classical']:.3f}", f"{r['lam']:.2f}",
                         f"{r['eff']:.0f}", f"{c['bt']:.3f}", f"{c['bt_classical']:.3f}",
                         f"{w['bt'] / w['bt_classical']:.3f}", f"{r['lam_bt']:.2f}", f"{r['eff_bt']:.0f}",
                         f"{c['rg']:.3f}", f"{w['rg'] / w['classical']:.2f}", f"{c['active']:.3f}",
                         f"{w['active'] / w['ppi']:.3f}"])
        print(f"{reviewer}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    a2, b2, y2, f2, truth2 = lfqa_population()
    lfqa_rows = []
    for n_labels in (50, 100):
        rng = np.random.default_rng(np.random.SeedSequence([args.seed, 99, n_labels]))
        r = evaluate(a2, b2, y2, f2, truth2, None, n_labels, args.reps, rng, n_models=2, bt=False)
        c, w = r["cover"], r["width"]
        lfqa_rows.append([n_labels, f"{c['ppi']:.3f}", f"{c['classical']:.3f}", f"{w['ppi']:.3f}",
                          f"{w['classical']:.3f}", f"{w['ppi'] / w['classical']:.3f}", f"{r['lam']:.2f}",
                          f"{r['eff']:.0f}", f"{c['rg']:.3f}", f"{w['rg'] / w['classical']:.2f}"])
    lfqa_judge = C.ppi_win_rates(a2, b2, f2, [], [], n_models=2).judge_only.to_numpy()
    lines = [
        "# Calibration on real judges and human votes", "",
        f"`.venv/bin/python benchmarks/calibration_real.py --reps {args.reps}` (seed {args.seed}; "
        f"{time.perf_counter() - start:.0f} s on {machine()}). Each row: {args.reps} random label subsets; "
        "coverage and width are means over the repetitions and the models.", "",
        "## PRD Vicuna80: 1,760 human votes, five LLM reviewers", "",
        "Truth (every vote, `win_rates`): " + ", ".join(f"{m} {v:.4f}" for m, v in zip(PRD_MODELS, truth_wr))
        + "; BT Elo " + ", ".join(f"{m} {v:.1f}" for m, v in zip(PRD_MODELS, truth_bt)) + ".", "",
        "The judges alone (both orders averaged, every vote's comparison):", "",
        markdown_table(["reviewer", "mean abs win-rate error", "max abs error", "corr(judge, vote)",
                        "orders disagree"], judge_rows), "",
        "Estimates from n labels (wr = win rate, bt = Bradley-Terry; width ratio = PPI++ / classical on the same "
        "labels; eff. = effective labels, median over models; RG = the 3x3 misclassification correction, "
        "`corrected_win_rates`; active = labels drawn with pi from the orders' disagreement "
        "(`active_probabilities`, mix 0.5) at the same expected budget, weighted estimator, width against "
        "PPI++ with n uniform labels):", "",
        markdown_table(["reviewer", "n", "cover wr PPI++", "cover wr classical", "width wr PPI++",
                        "width wr classical", "ratio wr", "lambda wr", "eff. wr", "cover bt PPI++",
                        "cover bt classical", "ratio bt", "lambda bt", "eff. bt", "cover RG", "width RG / classical",
                        "cover active", "width active / PPI++"], rows), "",
        "## LFQA expert preferences: 145 human-vs-machine votes, a length heuristic as the judge", "",
        f"Truth: human-written answer wins {truth2[0]:.4f}, machine {truth2[1]:.4f}; the heuristic judge alone "
        f"says {lfqa_judge[0]:.4f} / {lfqa_judge[1]:.4f}.", "",
        markdown_table(["n", "cover PPI++", "cover classical", "width PPI++", "width classical", "ratio",
                        "lambda", "eff. labels", "cover RG", "width RG / classical"], lfqa_rows), ""]
    return publish(RESULTS, lines)


if __name__ == "__main__":
    raise SystemExit(main())
