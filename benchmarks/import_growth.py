"""Re-importing a grown file: ``peercore import`` time against the file's rows, SQLite and PostgreSQL (issue 17, item 2).

The file repeats one judge and one model pair (one verdict per question id, winners
cycling), and its first half is already stored: the import a user runs again after the
file grew. For each size (1k, 4k, 8k, 12k, 40k, 100k rows) and each backend, a fresh
database gets the first half through ``python -m peercore import``, then the whole file is
imported and timed (wall time of that subprocess). PostgreSQL's ``verdicts`` gets no
statistics (autovacuum off for it), as in the minutes after an import before autovacuum
analyses it; with statistics the planner probes the UNIQUE index and the old code was
linear too. PostgreSQL is measured twice: with the server's default planner settings, and
with nested loops preferred (``enable_hashjoin`` and ``enable_mergejoin`` off through the
URL): the plan the team's server chose for the old conflict check (a nested loop probing
``verdicts_tally``, which reads every stored verdict of the judge and pair for each row);
the new check has no join on the key for a plan to go wrong on.

``--code DIR`` runs the imports in another checkout's folder, so that its ``peercore`` is the
one imported (e.g. ``git archive <commit> peercore | tar -x -C DIR``), to measure the code
before a change (the tables are created by this checkout, whose schema must be the same); ``--label`` names that run in the table. An import still running after
``--cap`` seconds is stopped (its server backend terminated) and reported as such.

PostgreSQL: a throwaway cluster from ``tests/pg_cluster.py`` (fsync off, as the test suite
runs it); SQLite as the store runs it (WAL, synchronous=NORMAL).

Run: ``.venv/bin/python benchmarks/import_growth.py [--sizes 1000,4000,...] [--code DIR
--label before]``; appends its table to ``benchmarks/results/import_growth.md`` (``--output``).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import psycopg

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))
from _common import machine, markdown_table  # noqa: E402
from pg_cluster import PostgresCluster  # noqa: E402
from peercore.store import Store  # noqa: E402

SIZES = (1_000, 4_000, 8_000, 12_000, 40_000, 100_000)
NESTED_LOOPS = "%20-cenable_hashjoin%3Doff%20-cenable_mergejoin%3Doff"
APPLICATION = "peerboard-import-growth"


def grown_file(path: Path, n: int) -> Path:
    """``n`` verdicts of one judge on one ordered pair, one per question id (winners cycling)."""
    pd.DataFrame({"question_id": [f"q{i:06d}" for i in range(n)], "model_a": "alpha", "model_b": "beta",
                  "judge": "gpt-judge", "winner": (["model_a", "model_b", "tie"] * n)[:n]}).to_csv(path, index=False)
    return path


def cli_import(path: Path, db: str, *, code: str | None, cap: float) -> tuple[float | None, str]:
    """Wall seconds of ``python -m peercore import path --db db`` (None if stopped at ``cap``), and its output."""
    env = {k: v for k, v in os.environ.items() if k not in ("PEERBOARD_DB", "PEERBOARD_STATEMENT_TIMEOUT")}
    # ``python -m`` puts its working folder first on sys.path: run in the checkout to measure.
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "peercore", "import", str(path), "--study", "grown", "--db", db],
                              cwd=code or ROOT, env=env, capture_output=True, text=True, timeout=cap)
    except subprocess.TimeoutExpired:
        return None, ""
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"import failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return wall, done.stdout


def new_schema(cluster: PostgresCluster, name: str, *, nested: bool) -> str:
    """A fresh schema (tables created by this checkout's Store) whose ``verdicts`` autovacuum leaves alone."""
    with psycopg.connect(cluster.url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {name}")
    url = f"{cluster.url}?options=-csearch_path%3D{name}"
    Store(url).close()
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("ALTER TABLE verdicts SET (autovacuum_enabled = false)")
    return url + (NESTED_LOOPS if nested else "") + f"&application_name={APPLICATION}"


def stop_server_work(cluster: PostgresCluster) -> None:
    """Terminate what a stopped import left running on the server (the old code had no statement timeout)."""
    with psycopg.connect(cluster.url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                      [APPLICATION])


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the throwaway cluster on kill too
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--code", help="a checkout whose peercore the imports use (default: this one)")
    parser.add_argument("--label", default="this commit")
    parser.add_argument("--cap", type=float, default=300.0, help="seconds before an import is stopped")
    parser.add_argument("--backends", default="sqlite,postgresql,postgresql-nested-loops")
    parser.add_argument("--output", default=str(HERE / "results" / "import_growth.md"))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    backends = args.backends.split(",")
    rows, load = [], [os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp, PostgresCluster() as cluster:
        folder = Path(tmp)
        version = psycopg.connect(cluster.url).info.server_version
        for n in sizes:
            first, grown = grown_file(folder / f"first-{n}.csv", n // 2), grown_file(folder / f"grown-{n}.csv", n)
            for backend in backends:
                if backend == "sqlite":
                    db = str(folder / f"{n}.sqlite")
                else:
                    db = new_schema(cluster, f"g{n}_{backend.replace('-', '_')}", nested=backend.endswith("loops"))
                cli_import(first, db, code=args.code, cap=args.cap)
                wall, out = cli_import(grown, db, code=args.code, cap=args.cap)
                if wall is None:
                    stop_server_work(cluster)
                    rows.append([args.label, backend, f"{n:,}", f"{n // 2:,}", f"> {args.cap:.0f} (stopped)", "-"])
                else:
                    assert f"{n // 2:,} added, {n // 2:,} skipped" in " ".join(out.split()), out
                    rows.append([args.label, backend, f"{n:,}", f"{n // 2:,}", f"{wall:.2f}", f"{wall / n * 1000:.3f}"])
                print(rows[-1], flush=True)
    load.append(os.getloadavg())
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    table = markdown_table(["code", "backend", "rows in file", "already stored", "import s", "s per 1,000 rows"], rows)
    text = (f"\n## {args.label}: run {when}\n\nMachine: {machine()}. PostgreSQL {version // 10000}, SQLite as the store "
            f"runs it. Load average before / after: {', '.join(f'{x:.2f}' for x in load[0])} / "
            f"{', '.join(f'{x:.2f}' for x in load[1])}. Wall time of `python -m peercore import grown.csv` (the whole "
            "file; its first half imported before), one run per cell.\n\n" + table + "\n")
    output = Path(args.output)
    if not output.exists():
        output.write_text("# Re-importing a grown file (issue 17, item 2)\n\nWritten by `benchmarks/import_growth.py`; "
                          "see its docstring for what is measured.\n", encoding="utf-8")
    with output.open("a", encoding="utf-8") as handle:
        handle.write(text)
    print(text)


if __name__ == "__main__":
    main()
