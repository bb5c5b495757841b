"""``peercore calibrate`` as a whole process at Arena scale (issue 23's speed target).

A SQLite study with 1,000,000 judge verdicts (one judge ``llm``, soft: ``p_a``) among 100
models, 10 battles per prompt, and 10,000 human votes (``human:crowd``) on 10,000 of the
judge's comparisons drawn at random. Timed: ``python -m peercore calibrate --study arena
--db DB --judge llm --reference human: --method bt --format json`` as a new process
(interpreter start, imports, reading the study from SQLite, matching, the PPI
Bradley-Terry fit with its intervals, the JSON), the median of ``--repeats`` runs; the
same with ``--method winrate`` beside it. Target (issue 23): under 5 s.

Run: ``.venv/bin/python benchmarks/calibrate_cli.py [--verdicts 1000000] [--labels 10000] [--repeats 3]``;
writes ``benchmarks/results/calibrate_cli.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import compile_tree, machine, markdown_table, publish  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results" / "calibrate_cli.md"


def study_frame(n: int, labels: int, *, soft: bool = True, models: int = 100, per_prompt: int = 10,
                seed: int = 0) -> pd.DataFrame:
    """``n`` judge verdicts (soft: with ``p_a``), ``labels`` human votes on some of its comparisons (canonical)."""
    from peercore.judgments import judgments_from_frame

    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, models)
    a = rng.integers(0, models, n)
    b = (a + rng.integers(1, models, n)) % models
    d = strength[a] - strength[b] + 1.5 * rng.standard_normal(n)  # each comparison's own margin
    truth = rng.random(n) < expit(d)
    p_a = expit(0.8 * d + 0.3 + 0.7 * rng.standard_normal(n))  # sees the margin, with a position bias and noise
    names = np.array([f"model-{k:03d}" for k in range(models)])
    question = pd.Series(np.arange(n) // per_prompt).map("p{:07d}".format)
    judge = pd.DataFrame({"question_id": question, "model_a": names[a], "model_b": names[b], "judge": "llm",
                          "winner": np.where(p_a > 0.5, "model_a", "model_b"), "p_a": p_a if soft else np.nan})
    chosen = np.sort(rng.choice(n, labels, replace=False))
    human = pd.DataFrame({"question_id": question.to_numpy()[chosen], "model_a": names[a[chosen]],
                          "model_b": names[b[chosen]], "judge": "human:crowd",
                          "winner": np.where(truth[chosen], "model_a", "model_b"), "p_a": np.nan})
    return judgments_from_frame(pd.concat([judge, human], ignore_index=True))


def build(path: Path, n: int, labels: int, *, soft: bool = True) -> float:
    from peercore.store import Store

    start = time.perf_counter()
    store = Store(path)
    store.studies.create("arena", description=f"{n:,} judge verdicts, {labels:,} human votes (calibrate_cli.py)")
    store.verdicts.add("arena", study_frame(n, labels, soft=soft))
    store.close()
    return time.perf_counter() - start


def timed(db: Path, method: str) -> tuple[float, dict]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "peercore", "calibrate", "--study", "arena", "--db", str(db),
                           "--judge", "llm", "--reference", "human:", "--method", method, "--format", "json"],
                          capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"peercore calibrate failed: {done.stderr.strip()}")
    return seconds, json.loads(done.stdout)


_BREAKDOWN = """
import json, sys, time
t0 = time.perf_counter()
import peercore.cli, peercore.cli.calibrate
from peercore.app.calibration import calibrated_leaderboard
from peercore.app.study import Study
from peercore.store import Store
t1 = time.perf_counter()
study = Study(Store(sys.argv[1], create=False), "arena")
study.verdicts()
t2 = time.perf_counter()
board = calibrated_leaderboard(study, judge="llm", reference="human:", method=sys.argv[2])
t3 = time.perf_counter()
json.dumps(board.to_json())
t4 = time.perf_counter()
print(json.dumps([t1 - t0, t2 - t1, t3 - t2, t4 - t3]))
"""


def breakdown(db: Path, method: str, *, repeats: int) -> list[list[object]]:
    """Where a run's time goes, measured inside new processes (the same work as the command, in stages).

    Each part is the median over ``repeats`` processes; "the rest" is the median whole process
    less the parts' medians.
    """
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _BREAKDOWN, str(db), method], capture_output=True, text=True,
                              cwd=ROOT, check=True)
        runs.append([*json.loads(done.stdout), time.perf_counter() - start])
    imports, read, use_case, dump, total = (statistics.median(part) for part in zip(*runs))
    return [["imports (peercore.cli, peercore.cli.calibrate)", imports],
            ["reading the study (Study.verdicts: SQLite -> read model)", read],
            [f"calibrated_leaderboard(method={method!r}) on the read model", use_case],
            ["JSON", dump],
            ["the rest (interpreter start and exit, freeing a million-row read model)",
             total - imports - read - use_case - dump],
            ["whole process", total]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verdicts", type=int, default=1_000_000)
    parser.add_argument("--labels", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--db", type=Path, default=None,
                        help="keep the study in this SQLite file: built there if it does not exist, reused (not "
                             "rebuilt) if it does, so that runs before and after a change time the same study")
    parser.add_argument("--build-only", action="store_true", help="build the study (--db) and stop")
    args = parser.parse_args()
    if args.build_only and args.db is None:
        parser.error("--build-only needs --db")
    rows, payloads = [], {}
    with tempfile.TemporaryDirectory() as folder:
        db = args.db or Path(folder) / "calibrate.sqlite"
        built = build(db, args.verdicts, args.labels) if not db.exists() else None
        if args.build_only:
            print(f"built {db} in {built:.1f} s" if built is not None else f"{db} exists (not rebuilt)")
            return 0
        compile_tree(ROOT)  # as installed: bytecode cached
        load = os.getloadavg()[0]
        for method in ("bt", "winrate"):
            times = []
            for _ in range(args.repeats):
                seconds, payloads[method] = timed(db, method)
                times.append(seconds)
            rows.append([f"--method {method}", statistics.median(times), min(times), max(times),
                         "yes" if statistics.median(times) < 5.0 else "NO"])
        parts = breakdown(db, "bt", repeats=args.repeats)
        end_load = os.getloadavg()[0]
    bt = payloads["bt"]
    lines = [
        "# `peercore calibrate` as a whole process (issue 23)",
        "",
        f"Machine: {machine()}. Study: {args.verdicts:,} soft judge verdicts (100 models, 10 battles per prompt) and "
        f"{args.labels:,} human votes on the judge's comparisons, in SQLite "
        + (f"(built in {built:.1f} s, not timed)." if built is not None else f"(reused from {args.db}, not timed)."),
        f"Command: `python -m peercore calibrate --study arena --db DB --judge llm --reference human: --method M "
        f"--format json`, a new process each run, median of {args.repeats}. Load average (1 min) at start "
        f"{load:.1f}, at end {end_load:.1f} (2 shared cores).",
        "",
        markdown_table(["command", "median s", "min s", "max s", "under 5 s"], rows),
        "",
        f"Where the Bradley-Terry run's time goes ({args.repeats} more processes, timed in stages, medians):",
        "",
        markdown_table(["part", "s"], parts),
        "",
        f"Bradley-Terry run: {bt['comparisons']:,} comparisons, {bt['labels']:,} labels, median effective labels "
        f"{bt['effective_labels']:,.0f}; warnings: {bt['warnings']}.",
        "",
        "Reading: the use case itself (matching the votes to the judge's comparisons, the PPI fit with its intervals)",
        "is the smallest part. The imports are mostly pandas, pyarrow and the SciPy modules the fit uses. The read",
        "is `peercore.store.verdict_reader`: one scan of the study's rows in SQLite, each column gathered by",
        "`group_concat` and parsed by numpy; a probability travels as the integer p_a * 2**62 (exact), not as",
        "text (formatting a million REALs was half the read, and 15 digits lost the last bit of some). Here the",
        "judge's and the reference's verdicts are the whole study, so reading only those two judges would read",
        "the same rows.",
        "",
        "Made by `.venv/bin/python benchmarks/calibrate_cli.py` (`--db FILE` keeps the study for runs before and "
        "after a change).",
    ]
    return publish(RESULTS, lines)


if __name__ == "__main__":
    sys.exit(main())
