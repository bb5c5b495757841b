"""Validate PeerBoard's length-controlled win rate on AlpacaEval 2's published annotations (issue 22, item 1).

Usage::

    .venv/bin/python benchmarks/alpacaeval_lc.py ALPACA_EVAL_CHECKOUT_OR_GIT_DIR [--out results/alpacaeval_lc.md]
        [--tune]

Reads every ``results/<model>/weighted_alpaca_eval_gpt4_turbo/annotations.json`` of a checkout (or
bare git directory, e.g. the ``fetch`` mirror of tatsu-lab/alpaca_eval) that is present and not a
Git LFS pointer, for every model of the published leaderboard
``src/alpaca_eval/leaderboards/data_AlpacaEval_2/weighted_alpaca_eval_gpt4_turbo_leaderboard.csv``
(baseline ``gpt4_1106_preview``), trims them with ``scripts/trim_alpacaeval.py`` and computes:

1. every loaded model's LC in one study of all of them, through
   :func:`peercore.ranking.alpacaeval.baseline_win_rates` (what ``peercore rank --baseline``
   computes), against the published ``length_controlled_winrate``: error per model; Spearman,
   largest error and models off by more than 3 points, separately on the tuning set
   (:data:`TUNING_SET`, the models the priors were chosen on) and on every other model;
2. small studies (1 to 4 models plus the baseline; seeded random draws, and draws built around
   each length-gamed variant and ``NullModel``): each model's LC against its LC in the full study;
3. with ``--tune``: the grid the priors were chosen from, scored on the tuning set only (the full
   study's errors on the tuning models, and 4-model studies drawn from them).

The Markdown report goes to ``--out`` (default ``benchmarks/results/alpacaeval_lc.md``).
"""

from __future__ import annotations

import argparse
import io
import importlib.util
import itertools
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import machine, markdown_table  # noqa: E402

from peercore.judgments import judgments_from_frame  # noqa: E402
from peercore.ranking.alpacaeval import LC_PRIORS, baseline_win_rates, length_controlled  # noqa: E402

BASELINE = "gpt4_1106_preview"
JUDGE = "alpacaeval:weighted_alpaca_eval_gpt4_turbo"
LEADERBOARD = "src/alpaca_eval/leaderboards/data_AlpacaEval_2/weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"
ANNOTATIONS = "results/{model}/weighted_alpaca_eval_gpt4_turbo/annotations.json"
#: The models the priors were tuned on: every third (sorted, case-insensitive) of the 38 published models that are
#: neither a length-gamed variant (``_concise``, ``_verbose``, ``gpt4_gamed``), a base model of one, ``NullModel``,
#: nor one of the golden test's 13 (tests/data/alpacaeval). Every other model is held out.
TUNING_SET = ("alpaca-farm-ppo-human", "chatglm2-6b", "claude-instant-1.2", "FuseChat-Llama-3.1-8B-Instruct",
              "gemma-2b-it", "humpback-llama2-70b", "minotaur-13b", "oasst-sft-llama-33b", "openbuddy-llama-30b-v7.1",
              "phi-2", "text_davinci_001", "vicuna-13b-v1.5-togetherai", "vicuna-7b-v1.5")
GAMED = ("_concise", "_verbose", "gpt4_gamed", "NullModel")
# LC of the estimator before this change (commit b073a9e: each model's own GLM, slope free, difficulty from a joint
# fit), measured on the same 56-model study (lc_rounds=0); kept to show what changed. Spearman with the published LC
# 0.975, largest error 16.7 (gpt4_gamed), 5 models off by more than 3 points.
BEFORE = {
    "alpaca-7b": 7.6, "alpaca-7b_concise": 6.5, "alpaca-7b_verbose": 5.2, "alpaca-farm-ppo-human": 6.4,
    "alpaca-farm-ppo-sim-gpt4-20k": 7.7, "baize-v2-13b": 6.1, "chatglm2-6b": 4.9, "claude": 30.1,
    "claude-2": 31.4, "claude-2.1": 28.1, "claude-2.1_concise": 18.9, "claude-instant-1.2": 27.6,
    "falcon-40b-instruct": 5.6, "falcon-7b-instruct": 3.9, "FuseChat-Gemma-2-9B-Instruct": 70.0,
    "FuseChat-Llama-3.1-8B-Instruct": 65.0, "FuseChat-Llama-3.2-1B-Instruct": 25.2,
    "FuseChat-Llama-3.2-3B-Instruct": 53.3, "FuseChat-Qwen-2.5-7B-Instruct": 63.5, "gemma-2b-it": 5.3,
    "gemma-7b-it": 10.0, "gpt-3.5-turbo-0301": 18.8, "gpt-3.5-turbo-1106": 23.5,
    "gpt-3.5-turbo-1106_concise": 17.3, "gpt-3.5-turbo-1106_verbose": 24.7, "gpt35_turbo_instruct": 14.8,
    "gpt4_0613_concise": 28.2, "gpt4_gamed": 28.9, "humpback-llama2-70b": 17.7, "jina-chat": 19.9,
    "minichat-3b": 6.2, "minotaur-13b": 9.3, "Mixtral-8x7B-Instruct-v0.1_concise": 25.6,
    "nous-hermes-13b": 9.6, "NullModel": 84.5, "oasst-rlhf-llama-33b": 7.7, "oasst-sft-llama-33b": 10.6,
    "oasst-sft-pythia-12b": 3.2, "openbuddy-falcon-40b-v9": 9.1, "openbuddy-llama-30b-v7.1": 10.6,
    "openbuddy-llama2-13b-v11.1": 9.2, "openbuddy-llama2-70b-v10.1": 11.5, "OpenHermes-2.5-Mistral-7B":
    15.6, "phi-2": 3.3, "phi-2-sft": 5.1, "pythia-12b-mix-sft": 3.7, "Qwen-14B-Chat": 12.5,
    "text_davinci_001": 7.1, "ultralm-13b": 6.8, "vicuna-13b": 8.9, "vicuna-13b-v1.5": 10.1,
    "vicuna-13b-v1.5-togetherai": 11.8, "vicuna-7b": 6.0, "vicuna-7b-v1.3": 7.4, "vicuna-7b-v1.5": 7.4,
    "wizardlm-13b": 9.9}


# ------------------------------------------------------------------------------ data


def _trim_module():
    spec = importlib.util.spec_from_file_location("trim_alpacaeval", ROOT / "scripts" / "trim_alpacaeval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def loadable_models(source: Path, published: list[str]) -> tuple[list[str], dict[str, str]]:
    """Published models whose annotation file is present and not an LFS pointer, and why the others are not."""
    trim = _trim_module()
    loaded, skipped = [], {}
    for model in published:
        try:
            head = trim.read_text(source, ANNOTATIONS.format(model=model))[:200]
        except (subprocess.CalledProcessError, FileNotFoundError, OSError):
            skipped[model] = "absent"
            continue
        if head.startswith("version https://git-lfs"):
            skipped[model] = "Git LFS pointer"
        else:
            loaded.append(model)
    return loaded, skipped


def long_frame(wide: pd.DataFrame) -> pd.DataFrame:
    """model, question_id, p (preference - 1), len_base, len_model from the trimmed wide CSV."""
    rows = []
    for column in [c for c in wide.columns if c.startswith("preference:")]:
        model = column.split(":", 1)[1]
        part = wide[wide[column].notna()]
        rows.append(pd.DataFrame({"model": model, "question_id": part["question_id"].astype(str),
                                  "p": part[column].astype(float) - 1.0, "len_base": part["length_1"].astype(float),
                                  "len_model": part[f"length:{model}"].astype(float)}))
    return pd.concat(rows, ignore_index=True)


def canonical(long: pd.DataFrame, models) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Canonical judgments (model_a = the baseline = output_1, p_a = 2 - preference) and their lengths."""
    part = long[long["model"].isin(list(models))]
    p_a = 1.0 - part["p"].to_numpy()
    judgments = judgments_from_frame(pd.DataFrame({
        "question_id": part["question_id"].to_numpy(), "model_a": BASELINE, "model_b": part["model"].to_numpy(),
        "judge": JUDGE, "winner": np.where(p_a > 0.5, "model_a", np.where(p_a < 0.5, "model_b", "tie")), "p_a": p_a}))
    lengths = pd.DataFrame({"length_a": part["len_base"].to_numpy(), "length_b": part["len_model"].to_numpy()},
                           index=judgments.index)
    return judgments, lengths


def study_lc(long: pd.DataFrame, models, priors=LC_PRIORS) -> pd.Series:
    """LC of ``models`` in one study, through baseline_win_rates (what peercore rank --baseline computes)."""
    judgments, lengths = canonical(long, models)
    table = baseline_win_rates(judgments, baseline=BASELINE, lengths=lengths, lc_rounds=0, priors=priors).table
    return table.set_index("model")["lc_win_rate"].drop(BASELINE)


def fast_lc(long: pd.DataFrame, models, priors=LC_PRIORS) -> pd.Series:
    """The same LC from length_controlled directly (for the tuning grid)."""
    per_model = {m: long.loc[long["model"] == m, ["question_id", "p"]].assign(
        delta=(long.loc[long["model"] == m, "len_base"] - long.loc[long["model"] == m, "len_model"]).to_numpy())
        .reset_index(drop=True) for m in models}
    return length_controlled(per_model, priors=priors).lc


# ------------------------------------------------------------------------------ report


def scores(ours: pd.Series, published: pd.Series) -> dict:
    error = ours - published.loc[ours.index]
    return {"models": len(ours), "spearman": float(spearmanr(ours, published.loc[ours.index]).statistic),
            "max_error": float(error.abs().max()), "mean_abs_error": float(error.abs().mean()),
            "over_3": int((error.abs() > 3).sum())}


def small_studies(models: list[str], rng: np.random.Generator) -> list[tuple[str, list[str]]]:
    """Studies of 1-4 models: random draws of each size and, for 4, one around every gamed model."""
    out = []
    for size, draws in ((1, 10), (2, 20), (3, 20), (4, 40)):
        out += [(f"random {size}", sorted(rng.choice(models, size, replace=False).tolist())) for _ in range(draws)]
    gamed = [m for m in models if any(g in m for g in GAMED)]
    for model in gamed:
        others = [m for m in models if m != model]
        out += [("4 around a gamed model", sorted([model, *rng.choice(others, 3, replace=False).tolist()]))
                for _ in range(2)]
    stems = sorted({m.split("_")[0] for m in gamed if m.split("_")[0] in models})
    for stem in stems:  # a gamed family together: the base model and its variants (+ fill up to 4)
        family = [m for m in models if m == stem or m.startswith(stem + "_")]
        fill = [m for m in models if m not in family]
        out.append(("gamed family", sorted(family + rng.choice(fill, max(0, 4 - len(family)), replace=False).tolist())))
    return out


def tune(long: pd.DataFrame, models: list[str], published: pd.Series) -> list[list]:
    """The grid the priors were chosen on, scored on the tuning set only."""
    rng = np.random.default_rng(7)
    subsets = [sorted(rng.choice(list(TUNING_SET), 4, replace=False).tolist()) for _ in range(15)]
    rows = []
    for slope_l2, anchor_l2, difficulty_l2, anchor in itertools.product((5.0, 10.0, 20.0), (100.0, 1000.0),
                                                                         (0.1, 0.25), (-1.6, -1.7, -1.8)):
        priors = replace(LC_PRIORS, slope_l2=slope_l2, anchor_l2=anchor_l2, difficulty_l2=difficulty_l2,
                         slope_anchor=anchor)
        full = fast_lc(long, models, priors)
        error = (full[list(TUNING_SET)] - published[list(TUNING_SET)]).abs()
        sub = max(float((fast_lc(long, s, priors) - full[s]).abs().max()) for s in subsets)
        rows.append([slope_l2, anchor_l2, difficulty_l2, anchor, float(error.max()), float(error.mean()), sub,
                     max(float(error.max()), sub)])
    return sorted(rows, key=lambda r: (r[-1], r[5]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="alpaca_eval checkout or bare git directory")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "alpacaeval_lc.md")
    parser.add_argument("--tune", action="store_true", help="also run the tuning grid (slow)")
    args = parser.parse_args(argv)

    trim = _trim_module()
    board = pd.read_csv(io.StringIO(trim.read_text(args.source, LEADERBOARD)), index_col=0)
    published = board["length_controlled_winrate"]
    candidates = [m for m in board.index if m != BASELINE]
    models, skipped = loadable_models(args.source, candidates)
    with tempfile.TemporaryDirectory() as folder:
        wide_path = Path(folder) / "wide.csv"
        trim.main([str(args.source), str(wide_path), *models])
        long = long_frame(pd.read_csv(wide_path, dtype={"question_id": str}))
    held_out = [m for m in models if m not in TUNING_SET]

    started = time.perf_counter()
    full = study_lc(long, models)
    seconds = time.perf_counter() - started
    raw = long.groupby("model")["p"].mean() * 100
    table = pd.DataFrame({"published LC": published.loc[models], "PeerBoard LC": full.loc[models],
                          "error": full.loc[models] - published.loc[models],
                          "before (b073a9e)": pd.Series(BEFORE).reindex(models),
                          "win rate": raw.loc[models], "avg length": board.loc[models, "avg_length"],
                          "set": ["tuning" if m in TUNING_SET else "held out" for m in models]})
    table = table.sort_values("published LC", ascending=False)
    metrics = {"tuning set": scores(full[list(TUNING_SET)], published),
               "held out": scores(full[held_out], published),
               "held out, gamed and NullModel": scores(full[[m for m in held_out if any(g in m for g in GAMED)]],
                                                       published),
               "all loaded": scores(full, published),
               "before (b073a9e), held out": scores(pd.Series(BEFORE)[held_out], published),
               "before (b073a9e), all loaded": scores(pd.Series(BEFORE)[models], published),
               "raw win rate, held out": scores(raw[held_out], published)}

    rng = np.random.default_rng(2024)
    small_rows, by_kind = [], {}
    strong = set(raw[raw >= 40].index)  # models winning 40% or more against the baseline (the FuseChat ones here)
    for kind, members in small_studies(models, rng):
        lc = study_lc(long, members)
        error = (lc - full[members]).abs()
        worst = error.idxmax()
        small_rows.append([kind, ", ".join(members), float(error.max()), worst])
        by_kind.setdefault(kind, []).append(float(error.max()))
        mixed = bool(strong & set(members)) and bool(set(members) - strong)
        by_kind.setdefault("all, mixing a model at >= 40% win rate with weaker ones" if mixed else
                           "all, the others", []).append(float(error.max()))

    lines = [f"# AlpacaEval 2 length-controlled win rate: PeerBoard vs published (issue 22, item 1)", "",
             f"Machine: {machine()}. Source: {args.source} ({len(models)} of {len(candidates)} published models "
             f"loaded; the full study's fit took {seconds:.1f} s). Baseline {BASELINE}, annotator "
             "weighted_alpaca_eval_gpt4_turbo. Priors: " + ", ".join(f"{k} {v}" for k, v in vars(LC_PRIORS).items())
             + ".", "",
             "Not loaded (the mirror lacks the file, or it is a Git LFS pointer): "
             + (", ".join(f"{m} ({why})" for m, why in sorted(skipped.items(), key=lambda kv: kv[0].lower())) or "none")
             + ".", "",
             f"Tuning set ({len(TUNING_SET)}): {', '.join(TUNING_SET)}. Every other loaded model is held out.", "",
             "## Against the published LC (one study of every loaded model)", "",
             markdown_table(["models", "n", "Spearman", "largest error", "mean abs error", "> 3 points"],
                            [[name, m["models"], round(m["spearman"], 4), round(m["max_error"], 2),
                             round(m["mean_abs_error"], 2), m["over_3"]] for name, m in metrics.items()]), "",
             markdown_table(["model", "set", "published LC", "PeerBoard LC", "error", "before", "win rate",
                             "avg length"],
                            [[m, r["set"], round(r["published LC"], 2), round(r["PeerBoard LC"], 2),
                              round(r["error"], 2), "" if pd.isna(r["before (b073a9e)"]) else r["before (b073a9e)"],
                              round(r["win rate"], 2), int(r["avg length"])] for m, r in table.iterrows()]), "",
             "## Small studies against the full study", "",
             "Each study: the models listed plus the baseline; the largest |LC(small study) - LC(full study)| of "
             "its models. The last two rows split every study above by whether it mixes a model that wins 40% or "
             f"more against the baseline ({', '.join(sorted(strong, key=str.lower))}) with weaker ones: the study's "
             "instruction difficulty then comes mostly from the strong model's verdicts (near 50%, the most "
             "informative), and a weak model's LC moves.", "",
             markdown_table(["studies", "n", "within 3 points", "largest error", "median"],
                            [[kind, len(v), sum(e <= 3 for e in v), round(max(v), 2), round(float(np.median(v)), 2)]
                             for kind, v in sorted(by_kind.items(), key=lambda kv: kv[0].startswith("all"))]), "",
             "Worst ten:", "",
             markdown_table(["kind", "models", "largest error", "model"],
                            [[k, m, round(e, 2), w] for k, m, e, w in sorted(small_rows, key=lambda r: -r[2])[:10]])]
    if args.tune:
        lines += ["", "## Tuning grid (scored on the tuning set only)", "",
                  markdown_table(["slope_l2", "anchor_l2", "difficulty_l2", "slope_anchor", "tuning max error",
                                  "tuning mean error", "4-model max error", "criterion"],
                                 [[*r[:4], round(r[4], 3), round(r[5], 3), round(r[6], 3), round(r[7], 3)]
                                  for r in tune(long, models, published)])]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
