"""Adjudication throughput: decisions per second with 1 and 5 concurrent annotator processes on SQLite.

Each annotator is its own process doing what ``peercore adjudicate`` and the Adjudication
page do (:mod:`peercore.assignment`): take the next debate (a read finds the first
offerable debates, then one ``BEGIN IMMEDIATE`` transaction expires old leases, re-checks
a candidate and writes the lease), then store the decision (a second transaction: check
the overlap, write the decision, end the lease).
No think time: this is the store's ceiling, not a person's pace.

Rows:

- **leases**: ``next_item`` + ``decide`` per decision, overlap 1 (every debate decided
  once) and overlap 2 (twice, by two distinct annotators);
- **decide only** (the pre-lease path, for scale): each process is handed its own debates
  up front and only calls ``Store.adjudicate``; what the claim transaction costs is the
  difference;
- **deep queue**: one annotator's claim and decision latency when the study already holds
  many decided debates (the claim walks the study's unresolved debates in id order).

Every process says it is ready (imported, connected), then all start at one common
instant, so process start-up and imports are not counted; throughput = all decisions /
(last process done - start). Medians of ``--repeats`` runs, each on a fresh database.
Per-call latencies (claim, decide) are the median and 95th percentile over every call of
the middle run, lock waits included.

Run: ``.venv/bin/python benchmarks/adjudication.py [--debates 2000] [--repeats 3]``; writes
``benchmarks/results/adjudication.md``.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, markdown_table  # noqa: E402

from peercore import assignment  # noqa: E402
from peercore.store import Store  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "adjudication.md"
DECISIONS = ("model_a", "model_b", "tie", "both_bad")


def make_study(path: Path, *, debates: int, overlap: int) -> None:
    store = Store(path)
    store.create_study("bench")
    store.add_debates("bench", [({"debate_key": f"d{k:06d}", "question_id": f"q{k:06d}", "model_a": "a",
                                  "model_b": "b", "status": "unresolved"},
                                 [{"round": 0, "position": 0, "speaker": "x", "verdict": "model_a"},
                                  {"round": 0, "position": 1, "speaker": "y", "verdict": "model_b"}])
                                for k in range(debates)])
    store.update_study_settings("bench", overlap=overlap)
    store.close()


# ------------------------------------------------------------------ one annotator


def worker(db: str, name: str, mode: str, ids: list[int]) -> dict:
    """One annotator process: returns its decisions, its finish time and per-call latencies.

    It says ``ready`` once imported and connected, then reads the common start time.
    """
    store = Store(db, create=False)
    overlap = store.study_settings("bench")["overlap"]
    claims, decides, decided = [], [], 0
    print("ready", flush=True)
    go = float(sys.stdin.readline())
    while time.time() < go:
        time.sleep(0.0005)
    if mode == "decide-only":
        for k, debate_id in enumerate(ids):
            t = time.perf_counter()
            store.adjudicate(debate_id, name, DECISIONS[k % 4])
            decides.append(time.perf_counter() - t)
            decided += 1
    else:
        while True:
            t = time.perf_counter()
            item = assignment.next_item(store, "bench", name, lease=60)
            claims.append(time.perf_counter() - t)
            if item is None:
                if store.adjudication_queue("bench", annotator=name, overlap=overlap).empty:
                    break
                time.sleep(0.005)
                continue
            t = time.perf_counter()
            assignment.decide(store, item.debate_id, name, DECISIONS[item.debate_id % 4])
            decides.append(time.perf_counter() - t)
            decided += 1
    done = time.time()
    store.close()
    return {"decided": decided, "done": done, "claims": claims, "decides": decides}


def run(db: Path, *, annotators: int, mode: str, debates: int) -> dict:
    """Start ``annotators`` processes on ``db`` at one common instant; gather what they report."""
    ids = list(range(1, debates + 1))
    processes = []
    for k in range(annotators):
        share = ids[k::annotators] if mode == "decide-only" else []
        processes.append(subprocess.Popen(
            [sys.executable, __file__, "--worker", str(db), f"annotator-{k}", mode, json.dumps(share)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    for process in processes:  # every process imported and connected before the clock starts
        if process.stdout.readline().strip() != "ready":
            raise SystemExit("an annotator process did not start")
    go = time.time() + 0.05
    for process in processes:
        process.stdin.write(f"{go!r}\n")
        process.stdin.flush()
    reports = []
    for process in processes:
        out, _ = process.communicate(timeout=600)
        if process.returncode:
            raise SystemExit(f"an annotator process failed ({process.returncode})")
        reports.append(json.loads(out))
    store = Store(db, create=False)
    stored = store.connect().execute("SELECT COUNT(*) FROM adjudications").fetchone()[0]
    store.close()
    total = sum(r["decided"] for r in reports)
    assert total == stored, (total, stored)  # every decision a process made is in the file, once
    wall = max(r["done"] for r in reports) - go
    return {"wall": wall, "decisions": total, "rate": total / wall,
            "claims": [c for r in reports for c in r["claims"]], "decides": [d for r in reports for d in r["decides"]]}


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def scenario(*, annotators: int, mode: str, overlap: int, debates: int, repeats: int) -> dict:
    results = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            db = Path(folder) / "bench.sqlite"
            make_study(db, debates=debates, overlap=overlap)
            results.append(run(db, annotators=annotators, mode=mode, debates=debates))
    results.sort(key=lambda r: r["rate"])
    middle = results[len(results) // 2]
    return {"rates": [r["rate"] for r in results], "decisions": middle["decisions"], "wall": middle["wall"],
            "claim_ms": (1e3 * pct(middle["claims"], 0.5), 1e3 * pct(middle["claims"], 0.95)),
            "decide_ms": (1e3 * pct(middle["decides"], 0.5), 1e3 * pct(middle["decides"], 0.95))}


def deep_queue(*, decided: int, samples: int = 200) -> dict:
    """One annotator's claim + decide latency with ``decided`` debates already decided ahead of the queue."""
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "deep.sqlite"
        make_study(db, debates=decided + samples, overlap=1)
        store = Store(db)
        with store.transaction() as tx:
            tx.executemany("INSERT INTO adjudications (debate_id, annotator, verdict, created_at) "
                           "VALUES (?, 'earlier', 'tie', '2026-01-01')", [(k,) for k in range(1, decided + 1)])
        claims, decides = [], []
        for _ in range(samples):
            t = time.perf_counter()
            item = assignment.next_item(store, "bench", "late", lease=60)
            claims.append(time.perf_counter() - t)
            t = time.perf_counter()
            assignment.decide(store, item.debate_id, "late", "tie")
            decides.append(time.perf_counter() - t)
        store.close()
    return {"claim_ms": 1e3 * statistics.median(claims), "decide_ms": 1e3 * statistics.median(decides)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--debates", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--no-write", action="store_true", help="print the table, do not write results/")
    args = parser.parse_args()
    if args.worker:
        db, name, mode, ids = args.worker
        print(json.dumps(worker(db, name, mode, json.loads(ids))))
        return 0

    load_before = os.getloadavg()
    rows = []
    plan = [(1, "leases", 1), (5, "leases", 1), (5, "leases", 2), (1, "decide-only", 0), (5, "decide-only", 0)]
    for annotators, mode, overlap in plan:
        r = scenario(annotators=annotators, mode=mode, overlap=overlap, debates=args.debates, repeats=args.repeats)
        label = f"{mode}, overlap {overlap}" if mode == "leases" else "decide only (no claim), overlap 0"
        rows.append([annotators, label, r["decisions"], f"{statistics.median(r['rates']):.0f}",
                     f"{min(r['rates']):.0f}-{max(r['rates']):.0f}", f"{r['wall']:.2f}",
                     "-" if mode != "leases" else f"{r['claim_ms'][0]:.2f} / {r['claim_ms'][1]:.2f}",
                     f"{r['decide_ms'][0]:.2f} / {r['decide_ms'][1]:.2f}"])
        print(rows[-1], flush=True)
    deep = [(n, deep_queue(decided=n)) for n in (0, 10_000, 50_000)]
    load_after = os.getloadavg()

    table = markdown_table(["annotator processes", "path", "decisions", "decisions/s (median)", "min-max",
                            "wall s (median run)", "claim ms p50 / p95", "decide ms p50 / p95"], rows)
    deep_table = markdown_table(["debates decided ahead", "claim ms (median of 200)", "decide ms (median of 200)"],
                                [[f"{n:,}", f"{d['claim_ms']:.2f}", f"{d['decide_ms']:.2f}"] for n, d in deep])
    text = f"""# Adjudication benchmark

Machine: {machine()}. SQLite in WAL mode, `synchronous = NORMAL`; each annotator is its own
process; a claim is a read (find offerable debates) and one `BEGIN IMMEDIATE` transaction (expire,
re-check, lease); a decision is one transaction (check the overlap, store, end the lease). {args.debates:,} unresolved debates per run, no
think time; medians of {args.repeats} runs, each on a fresh database; latencies from the median run,
lock waits included. Load average before / after: {', '.join(f'{x:.2f}' for x in load_before)} /
{', '.join(f'{x:.2f}' for x in load_after)}.

{table}

Deep queue: one annotator, 200 claims and decisions after many debates were decided ahead of it
(the claim walks the study's unresolved debates in id order and skips the decided ones).

{deep_table}

Reproduce: `.venv/bin/python benchmarks/adjudication.py`.
"""
    print(text)
    if not args.no_write:
        RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
