"""PostgreSQL beside SQLite through the product's own entry points (issue 13, item 5).

``store_backends.py`` and ``aggregates_backends.py`` compare the layers under the store;
this times what a user does, on each backend, in one run (so machine load hits both):

- **import**: ``python -m peercore import FILE --study s --db <SQLite path | postgresql URL>``
  as a subprocess on a generated canonical judgments file (Parquet, shaped as ``io.py``'s
  Arena log: 100 models, uniformly random pairs, Bradley-Terry outcomes, 10% ties, 5,000
  voters as judges, random question ids), 1,000,000 rows by default, each into a fresh
  database. Wall time of the subprocess, its CPU time and peak resident set (``os.wait4``;
  the PostgreSQL server's own processes are not in them), the size of the database after, and the
  rows stored, checked equal to the file's (``Study.counts``);
- **Leaderboard page**: a study of 100,000 judgments imported through the same CLI into a
  fresh database on each backend, then the page through ``streamlit.testing.v1.AppTest``
  with ``PEERBOARD_DB`` set to that database, exactly as ``app.py`` times a page
  (:func:`app.run_page`): cold = the first run in a new process, warm = the next run in
  that process, intervals = seconds after the cold run until the bootstrap's background
  thread has drawn them. ``--cold-runs`` new processes per backend, alternating backends;
  medians.

Adjudication throughput with 5 annotators on each backend is ``adjudication.py --backend
both``.

PostgreSQL: a throwaway cluster from ``tests/pg_cluster.py`` as the test suite starts it
(``PostgresCluster()``: fsync off, synchronous_commit off, full_page_writes off; SQLite runs
as the store runs it: WAL, synchronous=NORMAL). The page's database gets ``VACUUM ANALYZE``
after the import (the statistics autovacuum would have gathered a minute later).

Run: ``.venv/bin/python benchmarks/backends_product.py [--import-rows 1000000]
[--page-rows 100000] [--cold-runs 5]``; writes ``benchmarks/results/backends_product.md``.
Needs Debian's ``postgresql`` server programs and ``psycopg``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))
from _common import machine, markdown_table  # noqa: E402
from pg_cluster import PostgresCluster  # noqa: E402

STUDY = "arena"


def bench_app():
    """``benchmarks/app.py`` as a module (its name would collide with the dashboard's ``app.py``)."""
    spec = importlib.util.spec_from_file_location("bench_app", HERE / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------ inputs


def write_arena_log(path: Path, n: int, *, models: int = 100, voters: int = 5_000, seed: int = 0) -> None:
    """``n`` canonical judgments shaped as ``io.py``'s Arena log, as Parquet: 100 models, uniformly
    random pairs, Bradley-Terry outcomes, 10% ties, 5,000 voters as judges, random 16-hex
    question ids, turn 1-3 (question_id, model_a, model_b, judge, winner, turn)."""
    import numpy as np
    import pandas as pd
    from scipy.special import expit

    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, models)
    a = rng.integers(0, models, n)
    b = (a + rng.integers(1, models, n)) % models
    tie = rng.random(n) < 0.10
    a_wins = rng.random(n) < expit(strength[a] - strength[b])
    names = np.array([f"model-{k:03d}" for k in range(models)], dtype=object)
    pd.DataFrame({
        "question_id": [f"{x:016x}" for x in rng.integers(0, 2**63, n)],
        "model_a": names[a], "model_b": names[b],
        "judge": np.array([f"arena_user_{k}" for k in range(voters)], dtype=object)[rng.integers(0, voters, n)],
        "winner": np.where(tie, "tie", np.where(a_wins, "model_a", "model_b")),
        "turn": rng.integers(1, 4, n),
    }).to_parquet(path, index=False)


def write_page_study(path: Path, n: int) -> None:
    """``n`` canonical judgments in ``app.py``'s study shape (one judge, 10 battles per prompt), as Parquet."""
    frame = bench_app().arena_judgments(n)
    frame[["question_id", "model_a", "model_b", "judge", "winner"]].to_parquet(path, index=False)


def write_file(kind: str, path: Path, n: int) -> None:
    """:func:`write_arena_log` or :func:`write_page_study` in a child process.

    A child's ``ru_maxrss`` starts from its parent's resident set (fork copies the address
    space, exec keeps the high-water mark), so this process never holds a million-row frame:
    its own peak is a floor under every peak reported, stated in the results.
    """
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--write", kind, str(path), str(n)], check=True,
                   cwd=ROOT)


def new_pg_database(cluster: PostgresCluster, name: str) -> str:
    """A fresh database in ``cluster``; its URL."""
    import psycopg

    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return cluster.url.rsplit("/", 1)[0] + f"/{name}"


def versions(cluster: PostgresCluster) -> str:
    import psycopg

    with psycopg.connect(cluster.url) as conn:
        server = conn.execute("SHOW server_version").fetchone()[0].split()[0]
    return f"PostgreSQL {server}, SQLite {sqlite3.sqlite_version}, psycopg {psycopg.__version__}"


# ------------------------------------------------------------------------------ import


def cli_import(path: Path, db: str, *, study: str = STUDY) -> dict:
    """``python -m peercore import`` as a subprocess: wall seconds, peak RSS (MB), output."""
    env = {k: v for k, v in os.environ.items() if k != "PEERBOARD_DB"}
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "peercore", "import", str(path), "--study", study, "--db", db],
                               cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)  # this child's own rusage, not the maximum over all children
    wall = time.perf_counter() - start
    cpu = usage.ru_utime + usage.ru_stime
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"peercore import failed ({process.returncode}):\n{output[-2000:]}")
    return {"wall": wall, "cpu": cpu, "peak_mb": usage.ru_maxrss / 1024, "output": output}


def server_cpu_seconds(url: str) -> float:
    """CPU seconds (user + system) the PostgreSQL server's processes have used so far: the
    postmaster, its exited children (reaped: ``cutime``, ``cstime``) and the live ones."""
    import psycopg

    with psycopg.connect(url) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    postmaster = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == postmaster:
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        elif int(fields[1]) == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / tick


def stored_judgments(db: str, *, study: str = STUDY) -> int:
    from peercore.app.study import Study
    from peercore.store import Store

    store = Store(db, create=False)
    try:
        return Study(store, study).counts()["judgments"]
    finally:
        store.close()


def database_mb(db: str) -> float:
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as conn:
            return conn.execute("SELECT pg_database_size(current_database())").fetchone()[0] / 2**20
    return sum(Path(db + suffix).stat().st_size for suffix in ("", "-wal") if Path(db + suffix).exists()) / 2**20


def vacuum_analyze(db: str) -> None:
    import psycopg

    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


# -------------------------------------------------------------------------------- page


def leaderboard(db: str, *, timeout: float = 900.0) -> dict:
    """The Leaderboard page's cold and warm AppTest runs in a new process (``app.run_page``)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--page-child", db]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        raise SystemExit(f"the Leaderboard page failed ({done.returncode}):\n{done.stderr[-2000:]}")
    result = json.loads(lines[-1])
    if result["errors"] or not result["dataframes"]:  # the ranking table must be on the page
        raise SystemExit(f"the Leaderboard page showed no table: {result['errors'] or result['info']}")
    return result


def page_child(db: str) -> None:
    result = bench_app().run_page(ROOT, db, STUDY, "leaderboard")
    result["peak_mb"] = vm_hwm_mb()  # this process's own peak (ru_maxrss may start from the parent's)
    print(json.dumps(result))


def vm_hwm_mb() -> float:
    """Peak resident set of this process's address space (``VmHWM``), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# ------------------------------------------------------------------------------ report


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--page-child":
        page_child(sys.argv[2])
        return 0
    if len(sys.argv) > 4 and sys.argv[1] == "--write":
        kind, path, n = sys.argv[2:5]
        (write_arena_log if kind == "arena" else write_page_study)(Path(path), int(n))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--import-rows", type=int, default=1_000_000, help="0 skips the import benchmark")
    parser.add_argument("--page-rows", type=int, default=100_000, help="0 skips the page benchmark")
    parser.add_argument("--cold-runs", type=int, default=5, help="new processes per backend for the page")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "backends_product.md")
    args = parser.parse_args()

    sections = []
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with tempfile.TemporaryDirectory() as tmp, PostgresCluster() as cluster:
        folder = Path(tmp)
        engines = versions(cluster)
        fsync = "on" if cluster.fsync else "off"

        if args.import_rows:
            load_before = _load()
            source = folder / f"judgments-{args.import_rows}.parquet"
            write_file("arena", source, args.import_rows)
            rows, results = [], {}
            for backend, db in (("SQLite", str(folder / "import.sqlite")),
                                ("PostgreSQL", new_pg_database(cluster, "import"))):
                server_before = server_cpu_seconds(db) if backend == "PostgreSQL" else None
                r = cli_import(source, db)
                r["server_cpu"] = None if server_before is None else server_cpu_seconds(db) - server_before
                stored = stored_judgments(db)
                assert stored == args.import_rows, (backend, stored, args.import_rows)
                r["stored"], r["mb"] = stored, database_mb(db)
                results[backend] = r
                print(f"import {backend}: {r['wall']:.1f} s, peak {r['peak_mb']:.0f} MB, {stored:,} rows, "
                      f"{r['mb']:.0f} MB", flush=True)
            base = results["SQLite"]
            for backend, r in results.items():
                rows.append([backend, f"{r['wall']:.1f}", f"{r['wall'] / base['wall']:.2f}", f"{r['cpu']:.1f}",
                             "-" if r["server_cpu"] is None else f"{r['server_cpu']:.1f}", f"{r['peak_mb']:.0f}",
                             f"{r['peak_mb'] / base['peak_mb']:.2f}", f"{r['stored']:,}", f"{r['mb']:.0f}"])
            sections.append(
                f"## Import of {args.import_rows:,} judgments (`peercore import`)\n\n"
                f"`python -m peercore import judgments.parquet --study {STUDY} --db <SQLite file | postgresql:// URL>` "
                f"as a subprocess, once per backend, each into a fresh database; the file is {source.stat().st_size / 2**20:.1f} MB "
                "of canonical judgments shaped as `io.py`'s Arena log (100 models, 5,000 voters as judges, random "
                "16-hex question ids, 10% ties; columns question_id, model_a, model_b, judge, winner, turn). CPU s and "
                "peak RSS are the CLI process's (`os.wait4`'s rusage: user + system, `ru_maxrss`); the PostgreSQL "
                "server's own CPU is the next column (its processes' user + system time from `/proc`, exited "
                "backends included), its memory is not counted. A child's "
                f"`ru_maxrss` cannot be below this benchmark process's own peak ({resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB, "
                "which is why the files are written by a child process). Rows stored = "
                "`Study(store, study).counts()['judgments']`, checked equal to the file's rows. Load average before / after: "
                f"{load_before} / {_load()}.\n\n"
                + markdown_table(["backend", "wall s", "x SQLite", "CPU s of the CLI", "CPU s of the server", "peak RSS MB", "x SQLite",
                                  "rows stored",
                                  "database MB"], rows))

        if args.page_rows:
            load_before = _load()
            source = folder / f"judgments-{args.page_rows}.parquet"
            write_file("page", source, args.page_rows)
            dbs = {"SQLite": str(folder / "page.sqlite"), "PostgreSQL": new_pg_database(cluster, "page")}
            seeded = {}
            for backend, db in dbs.items():
                seeded[backend] = cli_import(source, db)["wall"]
                assert stored_judgments(db) == args.page_rows, backend
                if backend == "PostgreSQL":
                    vacuum_analyze(db)
            runs = {backend: [] for backend in dbs}
            for k in range(args.cold_runs):
                for backend, db in dbs.items():
                    runs[backend].append(leaderboard(db))
                    r = runs[backend][-1]
                    print(f"leaderboard {backend} #{k + 1}: cold {r['cold']:.2f} s, warm {r['warm']:.3f} s, "
                          f"intervals after {r.get('complete_after')}, peak {r['peak_mb']:.0f} MB", flush=True)
            medians = {backend: {key: median(r[key] for r in rs if r.get(key) is not None)
                                 for key in ("cold", "warm", "complete_after", "peak_mb")}
                       for backend, rs in runs.items()}
            base = medians["SQLite"]
            rows = [[backend, f"{m['cold']:.2f}", f"{m['cold'] / base['cold']:.2f}",
                     ", ".join(f"{r['cold']:.2f}" for r in runs[backend]), f"{m['warm']:.3f}",
                     f"{m['warm'] / base['warm']:.2f}", f"{m['complete_after']:.1f}", f"{m['peak_mb']:.0f}",
                     f"{seeded[backend]:.1f}"] for backend, m in medians.items()]
            sections.append(
                f"## Leaderboard page on {args.page_rows:,} judgments (AppTest)\n\n"
                f"The study (`app.py`'s shape: 100 contestants, one judge, 10 battles per prompt) imported through `peercore import` into a fresh database per backend (the PostgreSQL one "
                "then `VACUUM ANALYZE`d); `PEERBOARD_DB` set to it; the Leaderboard page through "
                "`streamlit.testing.v1.AppTest` as `benchmarks/app.py` runs a page (`run_page`): cold = the first run "
                "in a new process (empty caches, PeerBoard, pandas, plotly imported by that run), warm = the next run in "
                "that process, intervals = seconds after the cold run returned until the bootstrap's background thread "
                f"had drawn them. Medians of {args.cold_runs} new processes per backend, backends alternating. Load "
                f"average before / after: {load_before} / {_load()}.\n\n"
                + markdown_table(["backend", "cold s (median)", "x SQLite", "cold s (each)", "warm s (median)",
                                  "x SQLite", "intervals after s", "peak RSS MB", "import s (seeding)"], rows))

    text = "\n".join([
        "# PostgreSQL beside SQLite through the product: import, Leaderboard page",
        "",
        f"Run {started}. Machine: {machine()}, `nproc` {os.cpu_count()}, shared with a CI run and two other "
        f"sessions' work while measured. {engines}. PostgreSQL: a throwaway cluster from `tests/pg_cluster.py` as "
        f"the test suite starts it (fsync {fsync}, synchronous_commit {fsync}, full_page_writes off) on 127.0.0.1; "
        "SQLite as the store runs it (WAL, synchronous=NORMAL). Both backends measured in the same run; ratios are "
        "PostgreSQL / SQLite.",
        "",
        *[s + "\n" for s in sections],
        "Adjudication with 5 annotator processes on both backends: `benchmarks/adjudication.py --backend both`, "
        "[adjudication.md](adjudication.md).",
        "",
        "Reproduce: `.venv/bin/python benchmarks/backends_product.py`.",
        "",
    ])
    print(text)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
