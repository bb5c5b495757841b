"""Bradley-Terry + bootstrap at Chatbot Arena scale, against the methods peers use.

Synthetic log: 100 models, 1,000,000 battles between uniformly random pairs, 10% ties,
outcomes drawn from a Bradley-Terry model with known strengths. Sections:

1. In process, fit + 1000-round bootstrap: peercore vs Arena's per-round L-BFGS vs evalica.
2. As processes, reading the same Parquet file: ``peercore rank FILE --method bt
   --bootstrap 1000 --format json`` vs a process that reads the file with pandas and runs
   Arena's per-round method (target: peercore at least 5x faster).
3. LMArena's ``arena-rank`` 0.1.1 (JAX): plain BT with sandwich intervals and the
   contextual (style-controlled) BT on the same battles and features, beside peercore's;
   run in the virtualenv of ``scripts/arena_rank_goldens.py`` (``--arena-python``,
   default /work/arena-venv/bin/python) and skipped, saying so, where it does not exist.
4. Style control: contextual BT with sandwich intervals on 1,000,000 battles with 4
   synthetic style features (target < 10 s); and 100 bootstrap rounds, each refitted to
   convergence, on 100,000 battles whose style features are computed from answer texts
   (target < 60 s, texts included).

Section 1's three ways to get the Elo-scale BT ratings with 1000-round bootstrap 95% intervals:

- peercore: ``bradley_terry_intervals`` (pair sufficient statistics, Newton fit,
  multinomial resampling, all rounds solved together by chord-Newton).
- (a) the per-round method Chatbot Arena (FastChat ``rating_systems.py``) uses: unique
  (model_a, model_b, outcome) rows with counts, scipy L-BFGS on the weighted rows,
  multinomial bootstrap weights, one L-BFGS refit per round in a process pool.
  Re-implemented here from its description, with the same settings (gtol 1e-6,
  maxiter 100, base 10, scale 400).
- (b) ``evalica`` 0.4.2 from PyPI (Rust core): ``bradley_terry`` for the point estimate
  and ``evalica.bootstrap`` (percentile) for intervals.

Also: Peer Rank fixed point on 100,000 peer reviews.

Run: ``make bench`` or ``.venv/bin/python benchmarks/ranking.py [--repeats N]``.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, markdown_table, median_time  # noqa: E402

from peercore.judgments import judgments_from_frame  # noqa: E402
from peercore.ranking.bradley_terry import bradley_terry, bradley_terry_intervals  # noqa: E402
from peercore.ranking.peer_rank import fixed_point_weights  # noqa: E402
from peercore.ranking.contextual import contextual_bradley_terry  # noqa: E402
from peercore.ranking._battles import encode  # noqa: E402
from peercore.ranking.style import style_features  # noqa: E402

ARENA_PYTHON = "/work/arena-venv/bin/python"
ROOT = Path(__file__).resolve().parents[1]

N_MODELS, N_BATTLES, TIE_RATE, ROUNDS = 100, 1_000_000, 0.10, 1000


def synthetic_arena_log(*, n_models=N_MODELS, n_battles=N_BATTLES, tie_rate=TIE_RATE, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, n_models)
    a = rng.integers(0, n_models, n_battles)
    b = (a + rng.integers(1, n_models, n_battles)) % n_models
    tie = rng.random(n_battles) < tie_rate
    a_wins = rng.random(n_battles) < expit(strength[a] - strength[b])
    winner = np.where(tie, "tie", np.where(a_wins, "model_a", "model_b"))
    names = np.array([f"model-{k:03d}" for k in range(n_models)])
    return judgments_from_frame(pd.DataFrame({
        "question_id": np.arange(n_battles).astype(str), "model_a": names[a], "model_b": names[b],
        "judge": "arena", "winner": winner,
    }))


# ------------------------------------------------------------- (a) Arena's per-round fit


def _arena_unique_rows(judgments):
    codes, models = pd.factorize(pd.concat([judgments["model_a"], judgments["model_b"]]))
    n = len(judgments)
    outcome = np.select([judgments["winner"] == "model_a", judgments["winner"] == "tie"], [2, 1], 0)
    schedule = np.column_stack([codes[:n], codes[n:], outcome]).astype(np.int32)
    rows, counts = np.unique(schedule, return_counts=True, axis=0)
    return rows[:, :2], rows[:, 2] / 2.0, counts.astype(float), list(models)


def _arena_loss(ratings, matchups, outcomes, weights, alpha):
    r = ratings[matchups]
    p = expit(alpha * (r[:, 0] - r[:, 1]))
    loss = -np.sum((np.log(p) * outcomes + np.log(1.0 - p) * (1.0 - outcomes)) * weights)
    g = -alpha * (outcomes - p) * weights
    grad = np.bincount(matchups[:, 0], g, minlength=len(ratings)) - np.bincount(matchups[:, 1], g, minlength=len(ratings))
    return loss, grad


_ARENA = {}


def _arena_fit(weights):
    matchups, outcomes, n_models = _ARENA["matchups"], _ARENA["outcomes"], _ARENA["n_models"]
    result = minimize(_arena_loss, np.zeros(n_models), args=(matchups, outcomes, weights, math.log(10.0)),
                      jac=True, method="L-BFGS-B", options={"maxiter": 100, "gtol": 1e-6})
    return result.x


def arena_per_round(judgments, *, rounds=ROUNDS, seed=0):
    matchups, outcomes, counts, models = _arena_unique_rows(judgments)
    _ARENA.update(matchups=matchups, outcomes=outcomes, n_models=len(models))
    total = counts.sum()
    point = _arena_fit(counts / total)
    boot_weights = np.random.default_rng(seed).multinomial(int(total), counts / total, size=rounds) / total
    with mp.get_context("fork").Pool(os.cpu_count()) as pool:
        boot = np.array(pool.map(_arena_fit, boot_weights))
    to_elo = lambda x: 400.0 * (x - x.mean(axis=-1, keepdims=True)) + 1000.0  # noqa: E731
    point, boot = to_elo(point), to_elo(boot)
    low, high = np.percentile(boot, [2.5, 97.5], axis=0)
    return pd.DataFrame({"rating": point, "ci_low": low, "ci_high": high}, index=models).sort_index()


# ------------------------------------------------------------------------ (b) evalica


def evalica_bt(judgments, *, rounds=ROUNDS, seed=0, tolerance=1e-6, limit=100):
    """evalica's Bradley-Terry; bootstrap by refitting on multinomial weights of the unique rows.

    ``evalica.bootstrap`` (scipy.stats.bootstrap over the 1,000,000 battles) was killed
    by the kernel's OOM killer at 24 GB on this machine, so the rounds reuse evalica's
    weighted fit on the unique (model_a, model_b, winner) rows, as (a) does.
    """
    import evalica

    matchups, outcomes, counts, models = _arena_unique_rows(judgments)
    names = np.array(models, dtype=object)
    code = {1.0: evalica.Winner.X, 0.5: evalica.Winner.Draw, 0.0: evalica.Winner.Y}
    xs, ys = names[matchups[:, 0]].tolist(), names[matchups[:, 1]].tolist()
    winners = [code[o] for o in outcomes]
    index = pd.Index(sorted(models))

    def fit(weights, tol=tolerance, lim=limit):
        scores = evalica.bradley_terry(xs, ys, winners, weights=weights.tolist(),
                                       tolerance=tol, limit=lim).scores
        elo = 400.0 * np.log10(scores.reindex(index).to_numpy())
        return elo - elo.mean() + 1000.0

    point = fit(counts, tol=1e-10, lim=10_000)
    out = pd.DataFrame({"rating": point}, index=index)
    if rounds:
        draws = np.random.default_rng(seed).multinomial(int(counts.sum()), counts / counts.sum(), size=rounds)
        boot = np.array([fit(d.astype(float)) for d in draws])
        out["ci_low"], out["ci_high"] = np.percentile(boot, [2.5, 97.5], axis=0)
    return out


# ------------------------------------------------------------------------- Peer Rank


def synthetic_peer_reviews(*, n_reviews=100_000, n_models=10, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    strength = np.linspace(-1, 1, n_models)
    a = rng.integers(0, n_models, n_reviews)
    b = (a + rng.integers(1, n_models, n_reviews)) % n_models
    judge = rng.integers(0, n_models, n_reviews)
    noise = rng.normal(0, 1.0 - 0.4 * (strength[judge] + 1) / 2, n_reviews)
    diff = strength[a] - strength[b] + noise
    winner = np.where(np.abs(diff) < 0.1, "tie", np.where(diff > 0, "model_a", "model_b"))
    names = np.array([f"m{k}" for k in range(n_models)])
    return judgments_from_frame(pd.DataFrame({
        "question_id": (np.arange(n_reviews) // 100).astype(str), "model_a": names[a], "model_b": names[b],
        "judge": names[judge], "winner": winner,
    }))


# ------------------------------------------------------------ (2) whole processes


def per_round_process(path: str, rounds: int) -> int:
    """The per-round L-BFGS method as a process of its own: read the file, fit, bootstrap, print JSON."""
    import json

    frame = pd.read_parquet(path, columns=["model_a", "model_b", "winner"])
    result = arena_per_round(frame, rounds=rounds)
    print(json.dumps({m: [float(v) for v in row] for m, row in zip(result.index, result.to_numpy())}))
    return 0


def _process_seconds(command: list[str], repeats: int) -> float:
    import subprocess

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


# ----------------------------------------------------------------------- (3) arena-rank

_ARENA_SNIPPET = r"""
import json, sys, time
import numpy as np, pandas as pd
frame = pd.read_parquet(sys.argv[1])
features = [c for c in ("length", "header", "list", "bold") if c in frame.columns]
from arena_rank.models.bradley_terry import BradleyTerry
from arena_rank.models.contextual_bradley_terry import ContextualBradleyTerry
from arena_rank.utils.data_utils import ContextualPairDataset, PairDataset
out = {}
start = time.perf_counter()
dataset = PairDataset.from_pandas(frame)
result = BradleyTerry(len(dataset.competitors)).compute_ratings_and_cis(dataset, ci_method="sandwich")
out["bt_sandwich_seconds"] = time.perf_counter() - start
out["bt"] = {c: [float(r), float(l), float(u)] for c, r, l, u in zip(result["competitors"], result["ratings"],
                                                                      result["rating_lower"], result["rating_upper"])}
start = time.perf_counter()
dataset = ContextualPairDataset.from_pandas(frame, feature_cols=features, reweighted=False)
model = ContextualBradleyTerry(len(dataset.competitors), len(features), reg=float(sys.argv[2]))
result = model.compute_ratings_and_cis(dataset, ci_method="sandwich")
out["contextual_sandwich_seconds"] = time.perf_counter() - start
out["contextual"] = {c: [float(r), float(l), float(u)] for c, r, l, u in zip(result["competitors"], result["ratings"],
                                                                              result["rating_lower"], result["rating_upper"])}
out["coeffs"] = [float(v) for v in result["coeffs"]]
print(json.dumps(out))
"""


def arena_rank_run(python: str, path: str, reg: float) -> dict | None:
    import json
    import subprocess

    if not Path(python).exists():
        return None
    start = time.perf_counter()
    done = subprocess.run([python, "-c", _ARENA_SNIPPET, path, str(reg)], check=True, capture_output=True, text=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["process_seconds"] = time.perf_counter() - start
    return out


# ---------------------------------------------------------------- (4) style control


def synthetic_style_features(log: pd.DataFrame, *, seed: int = 1) -> pd.DataFrame:
    """Four style ratios per battle, correlated with the models (some models are verbose)."""
    rng = np.random.default_rng(seed)
    names = sorted(set(log["model_a"]) | set(log["model_b"]))
    verbosity = dict(zip(names, rng.normal(0, 0.5, len(names))))
    a = log["model_a"].map(verbosity).to_numpy()
    b = log["model_b"].map(verbosity).to_numpy()
    n = len(log)
    out = {}
    for k, name in enumerate(("length", "header", "list", "bold")):
        first = np.exp(a * (1 - 0.2 * k) + rng.normal(0, 0.5, n))
        second = np.exp(b * (1 - 0.2 * k) + rng.normal(0, 0.5, n))
        out[name] = (first - second) / (first + second)
    return pd.DataFrame(out, index=log.index)


def battles_with_texts(*, n_battles: int = 100_000, n_models: int = 20, questions: int = 2000, seed: int = 2):
    """A judgment table with answer_a / answer_b texts (Markdown of model-dependent length and markup)."""
    rng = np.random.default_rng(seed)
    names = np.array([f"model-{k:02d}" for k in range(n_models)])
    verbosity = rng.uniform(0.5, 3.0, n_models)
    markup = rng.uniform(0, 4, n_models)
    answers = {}
    for m in range(n_models):
        for q in range(questions):
            words = int(40 * verbosity[m] * rng.uniform(0.5, 1.5))
            parts = [f"## Answer {q}"] * int(markup[m] > 2) + [f"- point {k} **key**" for k in range(int(markup[m]))]
            answers[(m, q)] = " ".join(["word"] * words) + "\n" + "\n".join(parts)
    a = rng.integers(0, n_models, n_battles)
    b = (a + rng.integers(1, n_models, n_battles)) % n_models
    q = rng.integers(0, questions, n_battles)
    strength = rng.normal(0, 1, n_models)
    first = rng.random(n_battles) < expit(strength[a] - strength[b] + 0.5 * (verbosity[a] - verbosity[b]))
    return judgments_from_frame(pd.DataFrame({
        "question_id": q.astype(str), "model_a": names[a], "model_b": names[b], "judge": "arena",
        "winner": np.where(first, "model_a", "model_b"),
    })).assign(answer_a=[answers[(x, y)] for x, y in zip(a, q)], answer_b=[answers[(x, y)] for x, y in zip(b, q)])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per method (median reported)")
    parser.add_argument("--arena-repeats", type=int, default=1, help="timed runs of the slow per-round methods (a) and (b)")
    parser.add_argument("--battles", type=int, default=N_BATTLES)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--arena-python", default=ARENA_PYTHON, help="python of a virtualenv with arena-rank 0.1.1")
    parser.add_argument("--per-round-process", metavar="PARQUET", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.per_round_process:
        return per_round_process(args.per_round_process, args.rounds)

    print(f"# Ranking benchmark\n\nMachine: {machine()}; load average at start "
          f"{os.getloadavg()[0]:.1f}\n")
    log = synthetic_arena_log(n_battles=args.battles)
    print(f"Synthetic Arena log: {N_MODELS} models, {len(log):,} battles, {TIE_RATE:.0%} ties; "
          f"Bradley-Terry fit + {args.rounds} bootstrap rounds (95% percentile intervals).\n")
    print("## 1. In process: fit + bootstrap\n")

    ours_fit, ours_point = median_time(lambda: bradley_terry(log), repeats=args.repeats)
    ours_t, ours = median_time(lambda: bradley_terry_intervals(log, rounds=args.rounds, seed=0), repeats=args.repeats)
    evalica_fit, evalica_point = median_time(lambda: evalica_bt(log, rounds=0, tolerance=1e-10, limit=10_000), repeats=args.repeats)
    evalica_t, evalica = median_time(lambda: evalica_bt(log, rounds=args.rounds), repeats=args.arena_repeats)
    arena_t, arena = median_time(lambda: arena_per_round(log, rounds=args.rounds), repeats=args.arena_repeats)

    rows = [
        ["peercore `bradley_terry_intervals`", ours_t, 1.0],
        ["(a) Arena per-round L-BFGS, process pool", arena_t, arena_t / ours_t],
        ["(b) evalica 0.4.2 `bootstrap(bradley_terry)`", evalica_t, evalica_t / ours_t],
    ]
    print(markdown_table(["method", "median seconds (fit + bootstrap)", "ratio to peercore"], rows))
    print(f"\nPoint estimate alone: peercore {ours_fit:.3f} s, evalica (tolerance 1e-10) {evalica_fit:.3f} s.")

    ratings = pd.DataFrame({"peercore": ours_point, "arena": arena["rating"], "evalica": evalica_point["rating"]})
    spread = (ratings.max(axis=1) - ratings.min(axis=1)).max()
    print(f"\nLargest rating difference between the three point estimates: {spread:.4f} Elo points (must be < 0.5).")
    ci = pd.DataFrame({
        "peercore": ours["ci_high"] - ours["ci_low"], "arena": arena["ci_high"] - arena["ci_low"],
        "evalica": evalica["ci_high"] - evalica["ci_low"],
    })
    print(f"Median 95% interval width (Elo points): peercore {ci['peercore'].median():.2f}, "
          f"arena {ci['arena'].median():.2f}, evalica {ci['evalica'].median():.2f}.")

    # ------------------------------------------------------------------ 2. processes
    import tempfile

    features = synthetic_style_features(log)
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "arena.parquet")
        log[["question_id", "model_a", "model_b", "judge", "winner"]].join(features).to_parquet(path, index=False)
        ours_process = _process_seconds([sys.executable, "-m", "peercore.cli", "rank", path, "--method", "bt",
                                         "--bootstrap", str(args.rounds), "--format", "json"], args.repeats)
        their_process = _process_seconds([sys.executable, __file__, "--per-round-process", path, "--rounds",
                                          str(args.rounds)], args.arena_repeats)
        print("\n## 2. As processes, reading the same Parquet file\n")
        print(markdown_table(["process", "median seconds (start-up, read, fit, bootstrap, output)", "ratio to peercore"], [
            [f"`peercore rank FILE --method bt --bootstrap {args.rounds} --format json`", ours_process, 1.0],
            ["Arena's per-round L-BFGS (pandas read + process pool)", their_process, their_process / ours_process],
        ]))
        ratio = their_process / ours_process
        print(f"\nTarget: at least 5x faster than the per-round method as a process -> "
              f"{'met' if ratio >= 5 else 'NOT met'} ({ratio:.1f}x).")

        # -------------------------------------------------------------- 3. arena-rank
        print("\n## 3. LMArena's arena-rank 0.1.1 (JAX), sandwich intervals, on the same battles\n")
        battles = encode(log)
        plain_t, plain = median_time(lambda: bradley_terry_intervals(battles, rounds=0, intervals="sandwich"),
                                     repeats=args.repeats)
        styled_t, styled = median_time(lambda: contextual_bradley_terry(battles, features, reg=1e-3),
                                       repeats=args.repeats)
        theirs = arena_rank_run(args.arena_python, path, 1e-3)
        if theirs is None:
            print(f"arena-rank not run: no virtualenv at {args.arena_python} (see scripts/arena_rank_goldens.py).")
        else:
            def compare(name, ours_table, their_rows):
                frame = pd.DataFrame(their_rows, index=["rating", "low", "high"]).T.reindex(ours_table.index)
                diff = (ours_table["rating"] - frame["rating"]).abs().max()
                width = ((ours_table["sandwich_high"] - ours_table["sandwich_low"]) / (frame["high"] - frame["low"]) - 1)
                return f"{name}: largest rating difference {diff:.3f} Elo points, sandwich widths within " \
                       f"{100 * width.abs().max():.2f}%"
            print(markdown_table(["method", "peercore seconds", "arena-rank seconds", "ratio"], [
                ["BT + sandwich intervals", plain_t, theirs["bt_sandwich_seconds"],
                 theirs["bt_sandwich_seconds"] / plain_t],
                ["contextual BT (4 style features) + sandwich", styled_t, theirs["contextual_sandwich_seconds"],
                 theirs["contextual_sandwich_seconds"] / styled_t],
            ]))
            print(f"\n(arena-rank timings exclude its process start-up and JAX import; the whole arena-rank process "
                  f"took {theirs['process_seconds']:.1f} s.)")
            print(f"\n- {compare('plain BT', plain, theirs['bt'])}")
            print(f"- {compare('contextual BT, reg 1e-3', styled.table, theirs['contextual'])}")

    # ------------------------------------------------------------- 4. style control
    print("\n## 4. Style control\n")
    styled_1m_t, _ = median_time(lambda: contextual_bradley_terry(encode(log), features, intervals="sandwich"),
                                 repeats=args.repeats)
    texts = battles_with_texts()

    def hundred_rounds():
        feats = style_features(texts, features=["length", "header", "list", "bold"])
        return contextual_bradley_terry(encode(texts), feats, rounds=100, intervals="bootstrap", seed=0)

    boot_t, boot = median_time(hundred_rounds, repeats=1)
    print(markdown_table(["task", "seconds", "target"], [
        [f"contextual BT + sandwich, {len(log):,} battles, 4 synthetic features (encode included)", styled_1m_t,
         "< 10 s " + ("met" if styled_1m_t < 10 else "NOT met")],
        [f"style features from texts + contextual BT + 100 bootstrap rounds (each refitted to convergence), "
         f"{len(texts):,} battles", boot_t, "< 60 s " + ("met" if boot_t < 60 else "NOT met")],
    ]))

    reviews = synthetic_peer_reviews()
    pr_t, pr = median_time(lambda: fixed_point_weights(reviews, method="winrate"), repeats=max(args.repeats, 5))
    print(f"\nPeer Rank fixed point (win rate, softmax T=0.2) on {len(reviews):,} reviews by 10 reviewer-contestants: "
          f"median {pr_t:.3f} s, {pr.iterations} iterations (target < 0.5 s -> {'met' if pr_t < 0.5 else 'NOT met'}).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
