"""Killing the process in the middle of a large import leaves the database as it was.

The import runs in a subprocess (``peercore import``) and gets SIGKILL while its write
transaction is open; reopening the file must show exactly the state before the import:
same logical dump (``iterdump``) and, after a checkpoint, the same bytes.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from peercore.store import Store
from peercore.app import Study

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")

N_BATTLES = 150_000


def arena_log(path: Path, n: int) -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 30, n)
    b = (a + rng.integers(1, 30, n)) % 30
    pd.DataFrame({
        "question_id": [f"{x:016x}" for x in rng.integers(0, 2**63, n)],
        "model_a": [f"m{k}" for k in a], "model_b": [f"m{k}" for k in b],
        "winner": rng.choice(["model_a", "model_b", "tie", "tie (bothbad)"], n),
        "judge": [f"u{k}" for k in rng.integers(0, 500, n)], "tstamp": np.arange(n, dtype=float),
    }).to_json(path, orient="records", lines=True)


@pytest.fixture(scope="module")
def big_log(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("log") / "battles.jsonl"
    arena_log(path, N_BATTLES)
    return path


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "pb.sqlite"
    store = Store(path)
    store.studies.create("existing")
    store.verdicts.add("existing", pd.DataFrame({"question_id": ["q"], "model_a": ["a"], "model_b": ["b"],
                                                 "judge": ["j"], "winner": ["tie"]}))
    store.checkpoint()
    store.close()
    return path


def state(path: Path) -> tuple[list[str], str]:
    connection = sqlite3.connect(path)
    dump = list(connection.iterdump())
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return dump, hashlib.sha256(path.read_bytes()).hexdigest()


def start_import(log: Path, db: Path, **env) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "peercore.cli", "import", str(log), "--study", "existing", "--db", str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env})


def test_kill_inside_the_write_transaction(big_log, db):
    # SQLite-only: kills `peercore import`, whose database comes from --db / $PEERBOARD_DB (files only for now).
    before = state(db)
    process = start_import(big_log, db, PEERBOARD_TEST_PAUSE_BEFORE_COMMIT="120")
    try:
        line = process.stderr.readline()  # printed once every row is written, just before COMMIT
        assert "pausing 120 s before COMMIT" in line, line
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL
    assert state(db) == before
    store = Store(db)
    assert Study(store, "existing").counts()["judgments"] == 1 and store.integrity_problems() == []


def test_kill_while_the_commit_is_being_written(big_log, db):
    # SQLite-only: the same, and it compares the file's bytes after a WAL checkpoint.
    """No hook: kill as soon as the write-ahead log starts growing. All or nothing."""
    before = state(db)
    wal = Path(str(db) + "-wal")
    process = start_import(big_log, db)
    deadline = time.monotonic() + 120
    try:
        while process.poll() is None and time.monotonic() < deadline:
            if wal.exists() and wal.stat().st_size > 256 * 1024:
                os.kill(process.pid, signal.SIGKILL)
                break
            time.sleep(0.002)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    store = Store(db)
    n = Study(store, "existing").counts()["judgments"]
    assert n in (1, 1 + N_BATTLES), n  # never a part of the import
    assert store.integrity_problems() == []
    if process.returncode == -signal.SIGKILL and n == 1:
        store.close()
        assert state(db) == before
