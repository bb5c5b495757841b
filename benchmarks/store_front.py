"""The store as a front and repositories (issue 19): the same speed as the mixin class it replaced?

Two trees side by side, each as ``git archive`` made it and byte-compiled: *before* (a commit
with ``Store`` built from eight mixins) and *after* (``HEAD``). Each measure alternates the
trees, a new process per measurement, so load on the shared machine falls on both alike:

- **start-up**: ``python -m peercore --help``, wall seconds (goal < 0.3 s);
- **import**: ``python -m peercore import FILE --study arena --db DB`` of 1,000,000 canonical
  judgments (``backends_product.write_arena_log``'s Arena log, Parquet) into a fresh SQLite file
  and a fresh PostgreSQL database (a throwaway cluster from ``tests/pg_cluster.py``);
- **adjudication**: 5 annotator processes on one SQLite file, leases at overlap 1, 2,000
  debates: decisions per second (each tree's own ``benchmarks/adjudication.py`` scenario, which
  checks every decision is stored once).

Run: ``.venv/bin/python benchmarks/store_front.py [--before REV] [--repeats 3]``; writes
``benchmarks/results/store_front.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from statistics import median

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))
from _common import compile_tree, machine, markdown_table  # noqa: E402
from pg_cluster import PostgresCluster  # noqa: E402

RESULTS = HERE / "results" / "store_front.md"
BEFORE = "333f746"  # the last commit with Store built from mixins


def archive(revision: str, into: Path) -> Path:
    """The tree of ``revision`` as ``git archive`` gives it, byte-compiled."""
    into.mkdir(parents=True)
    tar = subprocess.run(["git", "archive", revision], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    compile_tree(into)
    return into


def environment(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PEERBOARD_DB", "PYTHONPATH")}
    env["PYTHONPATH"] = str(tree)
    return env


def timed(argv: list[str], tree: Path) -> float:
    start = time.perf_counter()
    process = subprocess.run(argv, cwd=tree, env=environment(tree), capture_output=True, text=True)
    wall = time.perf_counter() - start
    if process.returncode:
        raise SystemExit(f"{' '.join(argv)} failed in {tree} ({process.returncode}):\n{process.stdout[-1500:]}"
                         f"{process.stderr[-1500:]}")
    return wall


def start_up(tree: Path) -> float:
    return timed([sys.executable, "-m", "peercore", "--help"], tree)


def cli_import(tree: Path, path: Path, db: str) -> float:
    return timed([sys.executable, "-m", "peercore", "import", str(path), "--study", "arena", "--db", db], tree)


def adjudication_rate(tree: Path) -> float:
    code = ("import json, sys; sys.argv = ['adjudication.py']; sys.path.insert(0, 'benchmarks'); "
            "import adjudication as a; "
            "r = a.scenario(annotators=5, mode='leases', overlap=1, debates=2000, repeats=1); "
            "print(json.dumps(r['rates'][0]))")
    process = subprocess.run([sys.executable, "-c", code], cwd=tree, env=environment(tree), capture_output=True,
                             text=True)
    if process.returncode:
        raise SystemExit(f"adjudication failed in {tree}:\n{process.stderr[-2000:]}")
    return float(process.stdout.strip().splitlines()[-1])


def new_pg_database(cluster: PostgresCluster, name: str) -> str:
    import psycopg

    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return cluster.url.rsplit("/", 1)[0] + f"/{name}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", default=BEFORE, help="the commit to compare HEAD with")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    after_rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True, capture_output=True,
                               text=True).stdout.strip()
    times: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp, PostgresCluster() as cluster:
        tmp = Path(tmp)
        trees = {"before": archive(args.before, tmp / "before"), "after": archive("HEAD", tmp / "after")}
        data = tmp / "arena.parquet"
        subprocess.run([sys.executable, str(HERE / "backends_product.py"), "--write", "arena", str(data),
                        str(args.rows)], check=True, cwd=ROOT)
        for k in range(args.repeats):
            order = ("before", "after") if k % 2 == 0 else ("after", "before")
            for side in order:
                tree, record = trees[side], times[side]
                for _ in range(5):
                    record.setdefault("help", []).append(start_up(tree))
                record.setdefault("sqlite", []).append(cli_import(tree, data, str(tmp / f"{side}{k}.sqlite")))
                (tmp / f"{side}{k}.sqlite").unlink()
                record.setdefault("postgresql", []).append(
                    cli_import(tree, data, new_pg_database(cluster, f"{side}{k}")))
                new_pg_database(cluster, f"{side}{k}")  # emptied: the cluster holds one study at a time
                record.setdefault("adjudication", []).append(adjudication_rate(tree))
                print(side, {name: round(values[-1], 3) for name, values in record.items()}, flush=True)
    load_after = os.getloadavg()
    rows = []
    for name, label, unit in (("help", "`peercore --help` start-up", "s"),
                              ("sqlite", f"`peercore import` {args.rows:,} judgments, SQLite", "s"),
                              ("postgresql", f"`peercore import` {args.rows:,} judgments, PostgreSQL", "s"),
                              ("adjudication", "adjudication, 5 annotator processes, overlap 1 (SQLite)",
                               "decisions/s")):
        before, after = median(times["before"][name]), median(times["after"][name])
        ratio = before / after if unit == "s" else after / before
        rows.append([label, unit, before, after, ratio,
                     ", ".join(f"{v:.3g}" for v in times["before"][name]),
                     ", ".join(f"{v:.3g}" for v in times["after"][name])])
    table = markdown_table(["measure", "unit", f"before ({args.before}) median", f"after ({after_rev}) median",
                            "speed after / before", "before, each", "after, each"], rows)
    lines = ["# The store as a front and repositories: speed before and after (issue 19)", "",
             f"Run {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. Machine: {machine()}. "
             f"Load average before / after: {', '.join(f'{x:.2f}' for x in load_before)} / "
             f"{', '.join(f'{x:.2f}' for x in load_after)}. {args.repeats} rounds, the trees alternating; "
             "start-up 5 runs per round. A ratio above 1 means after is faster.", "", table, ""]
    print("\n".join(lines))
    if not args.no_write:
        RESULTS.write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
