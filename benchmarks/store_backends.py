"""Which database layer for PostgreSQL: the raw drivers or SQLAlchemy Core (issue 13, item 1).

The teams issue asks to run the store on PostgreSQL as well as SQLite, either through
SQLAlchemy Core (+ Alembic) or through psycopg 3 with a thin dialect layer, measured on the
import benchmark. This times the part of an import that the choice decides: writing N
verdict rows (the store's integer-coded ``verdicts`` table, same columns, same UNIQUE key)
in one transaction, and reading them back, through each layer on each engine:

- SQLite: ``sqlite3.executemany`` (what the store does today), SQLAlchemy Core ``insert()``;
- PostgreSQL (a throwaway cluster from ``tests/pg_cluster.py``, fsync off on both sides'
  terms: SQLite runs with ``synchronous=NORMAL`` in WAL as the store does): psycopg 3
  ``executemany`` (pipelined), psycopg 3 ``COPY ... FROM STDIN``, SQLAlchemy Core
  ``insert()`` (psycopg driver, "insertmanyvalues" batches).

Rows are built once before timing; each variant writes into a fresh table. Read-back is
``SELECT`` of every row into Python (and ``COPY ... TO STDOUT`` for psycopg).

Needs ``psycopg[binary]`` and ``sqlalchemy`` (``pip install 'psycopg[binary]' sqlalchemy``)
and Debian's ``postgresql`` (server programs). Results: ``benchmarks/results/store_backends.md``.

Usage: ``python benchmarks/store_backends.py [--rows 1000000] [--repeats 1] [--out FILE]``
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from pg_cluster import PostgresCluster  # noqa: E402

COLUMNS = ("study_id", "question_id", "model_a", "model_b", "judge", "criterion", "turn", "round", "vote",
           "winner", "p_a", "valid", "created_at")
KEY = "study_id, question_id, model_a, model_b, judge, criterion, turn, round, vote"


def ddl(dialect: str) -> str:
    """The verdicts table as the store declares it (migration 2), in each dialect."""
    identity = "INTEGER PRIMARY KEY" if dialect == "sqlite" else "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
    real = "REAL" if dialect == "sqlite" else "DOUBLE PRECISION"
    return f"""
CREATE TABLE verdicts (
    id {identity},
    study_id INTEGER NOT NULL, question_id TEXT NOT NULL,
    model_a INTEGER NOT NULL, model_b INTEGER NOT NULL CHECK (model_b <> model_a),
    judge INTEGER NOT NULL, criterion INTEGER NOT NULL DEFAULT 0, turn INTEGER NOT NULL DEFAULT 0,
    round INTEGER NOT NULL DEFAULT 0, vote INTEGER NOT NULL DEFAULT 0,
    winner INTEGER CHECK (winner = 0 OR winner = 1 OR winner = 2),
    p_a {real} CHECK (p_a IS NULL OR (p_a >= 0 AND p_a <= 1)),
    valid INTEGER NOT NULL DEFAULT 1 CHECK (valid = 0 OR valid = 1),
    created_at TEXT NOT NULL,
    UNIQUE ({KEY})
)"""


def make_rows(n: int, *, seed: int = 0) -> list[tuple]:
    """An Arena-shaped log: 100 models, one judge, 10 battles per prompt, 10% ties."""
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 101, n)
    b = (a + rng.integers(1, 100, n) - 1) % 100 + 1
    winner = rng.choice([0, 1, 2], size=n, p=[0.45, 0.45, 0.10])
    stamp = "2026-11-25T00:00:00.000Z"
    return [(1, f"q{i // 10}", int(x), int(y), 101, 0, 0, 0, i % 10, int(w), None, 1, stamp)
            for i, (x, y, w) in enumerate(zip(a, b, winner))]


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# ----------------------------------------------------------------------------- SQLite

def sqlite_connect(folder: Path) -> sqlite3.Connection:
    path = folder / "bench.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(ddl("sqlite"))
    return conn


def sqlite_executemany(folder: Path, rows: list[tuple]) -> tuple[float, float]:
    conn = sqlite_connect(folder)
    sql = f"INSERT INTO verdicts ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"

    def write():
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(sql, rows)
        conn.execute("COMMIT")

    write_s = timed(write)
    read_s = timed(lambda: conn.execute(f"SELECT id, {', '.join(COLUMNS)} FROM verdicts").fetchall())
    conn.close()
    return write_s, read_s


def sqlalchemy_run(url: str, rows: list[tuple], *, dialect: str, prepare) -> tuple[float, float]:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    prepare()
    metadata = sa.MetaData()
    table = sa.Table("verdicts", metadata, autoload_with=engine)
    records = [dict(zip(COLUMNS, row)) for row in rows]  # Core's executemany takes mappings

    def write():
        with engine.begin() as conn:
            conn.execute(table.insert(), records)

    write_s = timed(write)
    with engine.connect() as conn:
        read_s = timed(lambda: conn.execute(sa.select(table)).fetchall())
    engine.dispose()
    return write_s, read_s


# ------------------------------------------------------------------------- PostgreSQL

def pg_prepare(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS verdicts")
        conn.execute(ddl("postgresql"))


def pg_executemany(url: str, rows: list[tuple]) -> tuple[float, float]:
    import psycopg

    pg_prepare(url)
    sql = f"INSERT INTO verdicts ({', '.join(COLUMNS)}) VALUES ({', '.join(['%s'] * len(COLUMNS))})"
    with psycopg.connect(url) as conn:
        def write():
            with conn.cursor() as cur:
                cur.executemany(sql, rows)
            conn.commit()

        write_s = timed(write)
        read_s = timed(lambda: conn.execute(f"SELECT id, {', '.join(COLUMNS)} FROM verdicts").fetchall())
    return write_s, read_s


def pg_copy(url: str, rows: list[tuple]) -> tuple[float, float]:
    import psycopg

    pg_prepare(url)
    with psycopg.connect(url) as conn:
        def write():
            with conn.cursor() as cur, cur.copy(f"COPY verdicts ({', '.join(COLUMNS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            conn.commit()

        write_s = timed(write)

        def read():
            with conn.cursor() as cur, cur.copy(f"COPY (SELECT id, {', '.join(COLUMNS)} FROM verdicts) TO STDOUT") as copy:
                return list(copy.rows())

        read_s = timed(read)
    return write_s, read_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "store_backends.md")
    args = parser.parse_args(argv)

    rows = make_rows(args.rows)
    results: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp, PostgresCluster() as cluster:
        folder = Path(tmp)
        pg_url = cluster.url.replace("postgresql://", "postgresql+psycopg://")
        sqlite_url = f"sqlite:///{folder / 'bench.sqlite'}"
        variants = {
            ("SQLite", "sqlite3 executemany (the store today)"): lambda: sqlite_executemany(folder, rows),
            ("SQLite", "SQLAlchemy Core insert()"): lambda: sqlalchemy_run(
                sqlite_url, rows, dialect="sqlite", prepare=lambda: sqlite_connect(folder).close()),
            ("PostgreSQL", "psycopg 3 executemany (pipelined)"): lambda: pg_executemany(cluster.url, rows),
            ("PostgreSQL", "psycopg 3 COPY"): lambda: pg_copy(cluster.url, rows),
            ("PostgreSQL", "SQLAlchemy Core insert() (psycopg driver)"): lambda: sqlalchemy_run(
                pg_url, rows, dialect="postgresql", prepare=lambda: pg_prepare(cluster.url)),
        }
        for _ in range(args.repeats):
            for name, run in variants.items():
                results.setdefault(name, []).append(run())
                print(name, results[name][-1], flush=True)

    medians = {name: (statistics.median(w for w, _ in runs), statistics.median(r for _, r in runs))
               for name, runs in results.items()}
    base_write, base_read = medians[("SQLite", "sqlite3 executemany (the store today)")]
    lines = [
        "# Store backends: raw drivers vs SQLAlchemy Core, SQLite vs PostgreSQL",
        "",
        f"Machine: CPython {platform.python_version()}, {os.cpu_count()} CPUs; load average at start "
        f"{os.getloadavg()[0]:.1f}. Produced by `benchmarks/store_backends.py --rows {args.rows} --repeats {args.repeats}` "
        "(medians). PostgreSQL 15 (Debian) as a throwaway cluster on 127.0.0.1 (fsync off), SQLite in WAL "
        "with synchronous=NORMAL, as the store runs it.",
        "",
        f"Writing {args.rows:,} rows of the store's `verdicts` table (same columns, CHECKs and UNIQUE key) in one "
        "transaction, then reading them all back into Python. Ratios are to the store's current path "
        "(sqlite3 executemany).",
        "",
        "| engine | layer | write (s) | write ratio | read (s) | read ratio |",
        "|---|---|---|---|---|---|",
    ]
    for (engine, layer), (write_s, read_s) in medians.items():
        lines.append(f"| {engine} | {layer} | {write_s:.2f} | {write_s / base_write:.2f} | {read_s:.2f} | "
                     f"{read_s / base_read:.2f} |")
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
