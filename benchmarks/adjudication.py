"""Adjudication throughput: decisions per second with 1 and 5 concurrent annotator processes on SQLite (and PostgreSQL).

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
  up front and only calls ``Store.debates.adjudicate``; what the claim transaction costs is the
  difference;
- **deep queue**: one annotator's claim and decision latency when the study already holds
  many decided debates (the claim walks the study's unresolved debates in id order).

Every process says it is ready (imported, connected), then all start at one common
instant, so process start-up and imports are not counted; throughput = all decisions /
(last process done - start). Medians of ``--repeats`` runs, each on a fresh database.
Per-call latencies (claim, decide) are the median and 95th percentile over every call of
the middle run, lock waits included.

Backends (``--backend``): ``sqlite`` (the default: one SQLite file per run, WAL,
``synchronous = NORMAL``), ``postgresql`` (a fresh database per run in a throwaway cluster
from ``tests/pg_cluster.py``, started as the test suite starts it: fsync off; ``BEGIN
IMMEDIATE`` is ``BEGIN`` + a transaction advisory lock there, one writer at a time as on
SQLite, see :mod:`peercore.db`) or ``both`` (each scenario on SQLite, then on PostgreSQL,
in one run, so machine load hits both alike). PostgreSQL runs twice: once right after the
study is written (*no ANALYZE*: no planner statistics yet), once after an ``ANALYZE`` of the
freshly written study (*ANALYZE first*: the statistics then say that no decision and no
lease exists, until autovacuum analyzes again; both are states a team's database passes
through in its first minutes). Deep queue: PostgreSQL after ``ANALYZE`` with the decided
debates in place (the steady state autovacuum reaches).

After every run the stored decisions are checked: as many rows as the processes reported,
and every debate decided exactly ``overlap`` times (once for overlap 1 and decide-only).

Run: ``.venv/bin/python benchmarks/adjudication.py [--debates 2000] [--repeats 3]
[--backend sqlite|postgresql|both]``; writes ``benchmarks/results/adjudication.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, markdown_table  # noqa: E402

from peercore import assignment  # noqa: E402
from peercore.store import Store  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "adjudication.md"
DECISIONS = ("model_a", "model_b", "tie", "both_bad")
BACKENDS = {"sqlite": "SQLite", "postgresql": "PostgreSQL, ANALYZE first", "postgresql-fresh": "PostgreSQL, no ANALYZE"}


@contextlib.contextmanager
def fresh_database(name: str, *, cluster=None) -> Iterator[str]:
    """A new, empty database for one run: a SQLite file in a temporary folder, or a new
    database in ``cluster`` (a ``tests/pg_cluster.py`` PostgresCluster), dropped afterwards."""
    if cluster is None:
        with tempfile.TemporaryDirectory() as folder:
            yield str(Path(folder) / f"{name}.sqlite")
        return
    import psycopg

    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield cluster.url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(cluster.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def make_study(path: Path | str, *, debates: int, overlap: int) -> None:
    store = Store(path)
    store.studies.create("bench")
    store.debates.add_many("bench", [({"debate_key": f"d{k:06d}", "question_id": f"q{k:06d}", "model_a": "a",
                                       "model_b": "b", "status": "unresolved"},
                                 [{"round": 0, "position": 0, "speaker": "x", "verdict": "model_a"},
                                  {"round": 0, "position": 1, "speaker": "y", "verdict": "model_b"}])
                                for k in range(debates)])
    store.studies.update_settings("bench", overlap=overlap)
    store.close()


# ------------------------------------------------------------------ one annotator


def worker(db: str, name: str, mode: str, ids: list[int]) -> dict:
    """One annotator process: returns its decisions, its finish time and per-call latencies.

    It says ``ready`` once imported and connected, then reads the common start time.
    """
    store = Store(db, create=False)
    overlap = store.studies.settings("bench")["overlap"]
    claims, decides, decided = [], [], 0
    print("ready", flush=True)
    go = float(sys.stdin.readline())
    while time.time() < go:
        time.sleep(0.0005)
    if mode == "decide-only":
        for k, debate_id in enumerate(ids):
            t = time.perf_counter()
            store.debates.adjudicate(debate_id, name, DECISIONS[k % 4])
            decides.append(time.perf_counter() - t)
            decided += 1
    else:
        while True:
            t = time.perf_counter()
            item = assignment.next_item(store, "bench", name, lease=60)
            claims.append(time.perf_counter() - t)
            if item is None:
                if store.debates.queue("bench", annotator=name, overlap=overlap).empty:
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


def run(db: Path | str, *, annotators: int, mode: str, debates: int, overlap: int = 1) -> dict:
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
    connection = store.connect()
    stored = connection.execute("SELECT COUNT(*) FROM adjudications").fetchone()[0]
    per_debate = max(overlap, 1)  # decide-only (overlap 0): each debate once, by the process it was handed to
    wrong = connection.execute("SELECT COUNT(*) FROM (SELECT debate_id FROM adjudications GROUP BY debate_id "
                               "HAVING COUNT(*) <> ?) AS t", (per_debate,)).fetchone()[0]
    store.close()
    total = sum(r["decided"] for r in reports)
    assert total == stored, (total, stored)  # every decision a process made is in the database, once
    assert stored == debates * per_debate and wrong == 0, (stored, debates, per_debate, wrong)
    wall = max(r["done"] for r in reports) - go
    return {"wall": wall, "decisions": total, "rate": total / wall,
            "claims": [c for r in reports for c in r["claims"]], "decides": [d for r in reports for d in r["decides"]]}


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def analyze(db: str) -> None:
    """PostgreSQL's ``ANALYZE`` of the database (what autovacuum does within a minute of a large write)."""
    import psycopg

    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("ANALYZE")


def scenario(*, annotators: int, mode: str, overlap: int, debates: int, repeats: int, cluster=None,
             statistics_first: bool = True) -> dict:
    results = []
    for _ in range(repeats):
        with fresh_database("bench", cluster=cluster) as db:
            make_study(db, debates=debates, overlap=overlap)
            if cluster is not None and statistics_first:
                analyze(db)
            results.append(run(db, annotators=annotators, mode=mode, debates=debates, overlap=overlap))
    results.sort(key=lambda r: r["rate"])
    middle = results[len(results) // 2]
    return {"rates": [r["rate"] for r in results], "decisions": middle["decisions"], "wall": middle["wall"],
            "claim_ms": (1e3 * pct(middle["claims"], 0.5), 1e3 * pct(middle["claims"], 0.95)),
            "decide_ms": (1e3 * pct(middle["decides"], 0.5), 1e3 * pct(middle["decides"], 0.95))}


def deep_queue(*, decided: int, samples: int = 200, cluster=None) -> dict:
    """One annotator's claim + decide latency with ``decided`` debates already decided ahead of the queue."""
    with fresh_database("deep", cluster=cluster) as db:
        make_study(db, debates=decided + samples, overlap=1)
        store = Store(db)
        with store.transaction() as tx:
            tx.executemany("INSERT INTO adjudications (debate_id, annotator, verdict, created_at) "
                           "VALUES (?, 'earlier', 'tie', '2026-01-01')", [(k,) for k in range(1, decided + 1)])
        if cluster is not None:
            analyze(db)
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
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="sqlite",
                        help="SQLite files, databases in a throwaway PostgreSQL cluster, or both side by side "
                             "(default: %(default)s)")
    args = parser.parse_args()
    if args.worker:
        db, name, mode, ids = args.worker
        print(json.dumps(worker(db, name, mode, json.loads(ids))))
        return 0

    backends = {"sqlite": ["sqlite"], "postgresql": ["postgresql-fresh", "postgresql"],
                "both": ["sqlite", "postgresql-fresh", "postgresql"]}[args.backend]
    with contextlib.ExitStack() as stack:
        clusters = {"sqlite": None}
        if "postgresql" in backends:  # one cluster, a new database per run
            sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
            from pg_cluster import PostgresCluster

            clusters["postgresql"] = clusters["postgresql-fresh"] = stack.enter_context(PostgresCluster())
        return report(args, backends, clusters)


def versions(cluster) -> str:
    """The engines' versions (and the driver's when PostgreSQL is measured)."""
    import sqlite3

    text = f"SQLite {sqlite3.sqlite_version}"
    if cluster is not None:
        import psycopg

        with psycopg.connect(cluster.url) as conn:
            server = conn.execute("SHOW server_version").fetchone()[0].split()[0]
        text += f", PostgreSQL {server} (fsync {'on' if cluster.fsync else 'off'}), psycopg {psycopg.__version__}"
    return text


def report(args, backends: list[str], clusters: dict) -> int:
    load_before = os.getloadavg()
    rows, rates = [], {}
    plan = [(1, "leases", 1), (5, "leases", 1), (5, "leases", 2), (1, "decide-only", 0), (5, "decide-only", 0)]
    for annotators, mode, overlap in plan:
        label = f"{mode}, overlap {overlap}" if mode == "leases" else "decide only (no claim), overlap 0"
        for backend in backends:  # side by side: each scenario on every backend before the next scenario
            r = scenario(annotators=annotators, mode=mode, overlap=overlap, debates=args.debates,
                         repeats=args.repeats, cluster=clusters[backend], statistics_first=backend == "postgresql")
            rates[(annotators, label, backend)] = statistics.median(r["rates"])
            rows.append([BACKENDS[backend], annotators, label, r["decisions"], f"{statistics.median(r['rates']):.0f}",
                         f"{min(r['rates']):.0f}-{max(r['rates']):.0f}", f"{r['wall']:.2f}",
                         "-" if mode != "leases" else f"{r['claim_ms'][0]:.2f} / {r['claim_ms'][1]:.2f}",
                         f"{r['decide_ms'][0]:.2f} / {r['decide_ms'][1]:.2f}"])
            print(rows[-1], flush=True)
    deep = [(backend, n, deep_queue(decided=n, cluster=clusters[backend]))
            for n in (0, 10_000, 50_000) for backend in backends if backend != "postgresql-fresh"]
    load_after = os.getloadavg()

    table = markdown_table(["backend", "annotator processes", "path", "decisions", "decisions/s (median)", "min-max",
                            "wall s (median run)", "claim ms p50 / p95", "decide ms p50 / p95"], rows)
    deep_table = markdown_table(["backend", "debates decided ahead", "claim ms (median of 200)",
                                 "decide ms (median of 200)"],
                                [[BACKENDS[b].split(",")[0], f"{n:,}", f"{d['claim_ms']:.2f}", f"{d['decide_ms']:.2f}"]
                                 for b, n, d in deep])
    ratio_table = ""
    if "sqlite" in backends and "postgresql" in backends:
        ratio_table = "PostgreSQL vs SQLite, decisions/s (medians above, same run):\n\n" + markdown_table(
            ["annotator processes", "path", "SQLite", "PostgreSQL, no ANALYZE", "PostgreSQL, ANALYZE first",
             "no ANALYZE / SQLite", "ANALYZE first / SQLite"],
            [[a, label, f"{rates[(a, label, 'sqlite')]:.0f}", f"{rates[(a, label, 'postgresql-fresh')]:.0f}",
              f"{rates[(a, label, 'postgresql')]:.0f}",
              f"{rates[(a, label, 'postgresql-fresh')] / rates[(a, label, 'sqlite')]:.2f}",
              f"{rates[(a, label, 'postgresql')] / rates[(a, label, 'sqlite')]:.2f}"]
             for a, label, backend in rates if backend == "sqlite"]) + "\n"
    engines = ("SQLite in WAL mode, `synchronous = NORMAL`" if "sqlite" in backends else "") + \
        (("; " if "sqlite" in backends else "") + "PostgreSQL: a fresh database per run in a throwaway cluster "
         "(`tests/pg_cluster.py`, as the test suite starts it), where `BEGIN IMMEDIATE` is `BEGIN` + a "
         "transaction advisory lock (one writer at a time, as SQLite); *no ANALYZE* = the annotators start right "
         "after the study is written (no planner statistics yet), *ANALYZE first* = after an `ANALYZE` of the "
         "freshly written study (statistics saying no decision or lease exists yet); deep queue on PostgreSQL "
         "after `ANALYZE` with the decided debates in place" if "postgresql" in backends else "")
    backend_flag = "" if args.backend == "sqlite" else f" --backend {args.backend}"
    text = f"""# Adjudication benchmark

Machine: {machine()}, `nproc` {os.cpu_count()}; {versions(clusters.get("postgresql"))}. {engines}; each annotator is its own
process; a claim is a read (find offerable debates) and one `BEGIN IMMEDIATE` transaction (expire,
re-check, lease); a decision is one transaction (check the overlap, store, end the lease). {args.debates:,} unresolved debates per run, no
think time; medians of {args.repeats} runs, each on a fresh database; latencies from the median run,
lock waits included. After every run: rows stored = decisions the processes reported = debates x overlap,
every debate decided exactly overlap times (once for decide only). Run {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())};
load average before / after: {', '.join(f'{x:.2f}' for x in load_before)} /
{', '.join(f'{x:.2f}' for x in load_after)}.

{table}

{ratio_table}
Deep queue: one annotator, 200 claims and decisions after many debates were decided ahead of it
(the claim walks the study's unresolved debates in id order and skips the decided ones).

{deep_table}

Reproduce: `.venv/bin/python benchmarks/adjudication.py{backend_flag}`.
"""
    print(text)
    if not args.no_write:
        RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
