"""Store-side aggregates on SQLite and on PostgreSQL (issue 13, the application layer's reads).

Builds one synthetic Arena study (``benchmarks/app.py``'s shape, plus ``p_a`` on 30% of
the verdicts and a rationale with commas, quotes and a new line on half) of each size in
a SQLite file and in a throwaway PostgreSQL cluster (``tests/pg_cluster.py``, fsync off),
then times every function of :mod:`peercore.aggregates` the Study reads with (median of
``--repeats`` warm calls):

- SQLite with ``peercore/aggregates.py`` of ``--before`` (a git ref) and of the work tree:
  the SQLite path must not change;
- PostgreSQL with the work tree.

For :func:`peercore.aggregates.read_verdicts` it also times the two ways of reading the
columns on PostgreSQL that were not chosen: a plain ``SELECT`` through psycopg's binary
cursor turned into columns, and one ``string_agg`` per column parsed by numpy (the
SQLite approach).

Usage: ``python benchmarks/aggregates_backends.py [--rows 100000 1000000] [--repeats 3] [--before REF]``
Results: ``benchmarks/results/aggregates_backends.md``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import machine, markdown_table, median_time  # noqa: E402
from pg_cluster import PostgresCluster  # noqa: E402

FUNCTIONS = ("read_verdicts", "verdict_codes", "verdict_tally", "questions_with_three_candidates", "repeated_votes",
             "summary")


def build(store, name: str, n: int) -> float:
    import numpy as np

    from app import arena_judgments

    frame = arena_judgments(n)
    rng = np.random.default_rng(1)
    p = rng.random(n)
    p[rng.random(n) < 0.7] = np.nan
    frame["p_a"] = p
    frame["rationale"] = np.where(rng.random(n) < 0.5, 'because, "it" said\nso', None)
    start = time.perf_counter()
    store.create_study(name)
    store.add_judgments(name, frame)
    return time.perf_counter() - start


def module_at(ref: str, folder: Path):
    """``peercore/aggregates.py`` as it was at ``ref``, loaded as a module of its own."""
    text = subprocess.run(["git", "show", f"{ref}:peercore/aggregates.py"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout
    path = folder / "aggregates_before.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("aggregates_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pg_alternatives(store, name: str, repeats: int) -> dict[str, float]:
    """The two column reads not chosen for read_verdicts, on the same columns."""
    import numpy as np
    import pyarrow as pa

    from peercore import aggregates

    sid, low, high = aggregates._range(store, name)
    raw = store.connect().raw
    columns = "id, question_id, model_a, model_b, judge, COALESCE(winner, -1), p_a, rationale"

    def select():
        cursor = raw.cursor(binary=True)
        cursor.execute(f"SELECT {columns} FROM verdicts WHERE id BETWEEN %s AND %s AND study_id = %s AND valid = 1 "
                       "ORDER BY id", [low, high, sid])
        values = list(zip(*cursor.fetchall()))
        ints = [np.array(values[k], dtype=np.int64) for k in (0, 2, 3, 4, 5)]
        return ints, np.array(values[6], dtype=float), pa.array(values[1], pa.large_string()), \
            pa.array(values[7], pa.large_string())

    def string_agg():
        parts = [f"string_agg({c}::text, ',' ORDER BY id)" for c in ("id", "model_a", "model_b", "judge")]
        parts += ["string_agg(COALESCE(winner, -1)::text, ',' ORDER BY id)",
                  "string_agg(COALESCE(p_a::text, 'nan'), ',' ORDER BY id)"]
        for c in ("question_id", "rationale"):
            parts += [f"string_agg(COALESCE(octet_length({c}), -1)::text, ',' ORDER BY id)",
                      f"string_agg({c}, '' ORDER BY id)"]
        row = raw.execute(f"SELECT {', '.join(parts)} FROM verdicts WHERE id BETWEEN %s AND %s AND study_id = %s "
                          "AND valid = 1", [low, high, sid]).fetchone()
        return [np.fromstring(row[k], dtype=np.int64 if k < 5 else float, sep=",") for k in range(6)]

    return {"SELECT, binary cursor, into columns": median_time(select, repeats=repeats)[0],
            "string_agg per column, numpy": median_time(string_agg, repeats=repeats)[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", default="c8cc9e2", help="git ref of the SQLite-only aggregates")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    from peercore import aggregates
    from peercore.store import Store

    rows, builds, extra = [], [], []
    with tempfile.TemporaryDirectory() as tmp, PostgresCluster() as cluster:
        before = module_at(args.before, Path(tmp))
        sqlite_store, pg_store = Store(Path(tmp) / "agg.sqlite"), Store(cluster.url)
        for n in args.rows:
            name = f"arena{n}"
            builds.append([f"{n:,}", build(sqlite_store, name, n), build(pg_store, name, n)])
            pg_store.connect().execute("VACUUM ANALYZE verdicts")  # as autovacuum leaves a loaded table
            for function in FUNCTIONS:
                old = median_time(lambda: getattr(before, function)(sqlite_store, name), repeats=args.repeats)[0]
                new = median_time(lambda: getattr(aggregates, function)(sqlite_store, name), repeats=args.repeats)[0]
                pg = median_time(lambda: getattr(aggregates, function)(pg_store, name), repeats=args.repeats)[0]
                rows.append([f"{n:,}", function, old, new, pg])
                print(rows[-1], flush=True)
            for label, seconds in pg_alternatives(pg_store, name, args.repeats).items():
                extra.append([f"{n:,}", label, seconds])
        sqlite_store.close()
        pg_store.close()
    load = os.getloadavg()[0]
    text = "\n\n".join([
        "# Store-side aggregates: SQLite vs PostgreSQL",
        f"Machine: {machine()}; load average at the end {load:.1f}. Produced by `benchmarks/aggregates_backends.py "
        f"--repeats {args.repeats}` (median of warm calls, seconds). PostgreSQL 15 as a throwaway cluster (fsync off), "
        "after `VACUUM ANALYZE` (what autovacuum leaves); SQLite in WAL as the store runs it. `before`: "
        f"`peercore/aggregates.py` at {args.before} (SQLite only).",
        markdown_table(["verdicts", "function", "SQLite before", "SQLite now", "PostgreSQL"], rows),
        "read_verdicts on PostgreSQL, the column reads not chosen (the chosen one: `COPY (SELECT ... ORDER BY id) "
        "TO STDOUT` in CSV parsed by pyarrow, `peercore.db.read_arrow`):",
        markdown_table(["verdicts", "PostgreSQL read", "seconds"], extra),
        "Building the study (`Store.add_judgments`):",
        markdown_table(["verdicts", "SQLite (s)", "PostgreSQL (s)"], builds),
    ]) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
