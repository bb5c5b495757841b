"""Bradley-Terry + bootstrap at Chatbot Arena scale, against the methods peers use.

Synthetic log: 100 models, 1,000,000 battles between uniformly random pairs, 10% ties,
outcomes drawn from a Bradley-Terry model with known strengths. Three ways to get the
Elo-scale BT ratings with 1000-round bootstrap 95% intervals:

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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per method (median reported)")
    parser.add_argument("--arena-repeats", type=int, default=1, help="timed runs of the slow per-round methods (a) and (b)")
    parser.add_argument("--battles", type=int, default=N_BATTLES)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args(argv)

    print(f"# Ranking benchmark\n\nMachine: {machine()}\n")
    log = synthetic_arena_log(n_battles=args.battles)
    print(f"Synthetic Arena log: {N_MODELS} models, {len(log):,} battles, {TIE_RATE:.0%} ties; "
          f"Bradley-Terry fit + {args.rounds} bootstrap rounds (95% percentile intervals).\n")

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
    print(f"Target: fit + {args.rounds} rounds under 1 s -> {'met' if ours_t < 1 else 'NOT met'} ({ours_t:.2f} s); "
          f"at least 20x faster than (a) -> {'met' if arena_t / ours_t >= 20 else 'NOT met'} ({arena_t / ours_t:.1f}x).")

    reviews = synthetic_peer_reviews()
    pr_t, pr = median_time(lambda: fixed_point_weights(reviews, method="winrate"), repeats=max(args.repeats, 5))
    print(f"\nPeer Rank fixed point (win rate, softmax T=0.2) on {len(reviews):,} reviews by 10 reviewer-contestants: "
          f"median {pr_t:.3f} s, {pr.iterations} iterations (target < 0.5 s -> {'met' if pr_t < 0.5 else 'NOT met'}).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
