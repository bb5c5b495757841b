"""Neither a silent server nor a dead client holds a PostgreSQL store (issue 17, items 2 and 4).

- **Connect timeout** (item 4): a host that accepts the TCP connection and never answers
  hung every command forever. Now ``$PEERBOARD_CONNECT_TIMEOUT`` seconds (default 10) are
  waited and the command exits 2 with one line. The silent host is a local socket started
  here, which accepts and then reads nothing.
- **Statement timeout** (item 2): every session has ``statement_timeout``
  (``$PEERBOARD_STATEMENT_TIMEOUT``, default 300 s) and, on PostgreSQL 14+,
  ``client_connection_check_interval``. An import that waits past the timeout (here behind
  the store's write lock, held by the test) is cancelled by the server and the command
  exits 2 with one line; and the server ends the work of a client killed mid-import at
  once, instead of waiting on (before: until the 30 s lock timeout, or to the end of a
  long statement). Synchronised with the server's own state (pg_stat_activity: the
  import's backend waiting on the lock, then gone), never with sleeps; which of the two
  ended it is read from the server's log.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import psycopg
import pytest

from peercore import db
from peercore.store import Store

REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 120  # how long a wait on the server's state may take before the test gives up
CONNECT_TIMEOUT = "PEERBOARD_CONNECT_TIMEOUT"  # peercore.db.ENV_CONNECT_TIMEOUT, the documented name
STATEMENT_TIMEOUT = "PEERBOARD_STATEMENT_TIMEOUT"  # peercore.db.ENV_STATEMENT_TIMEOUT


def peercore(*argv: str, env: dict, timeout: float = DEADLINE_S) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "peercore", *argv], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, **env}, timeout=timeout)


def judgments_file(path: Path) -> Path:
    pd.DataFrame({"question_id": ["q1", "q2"], "model_a": ["a", "b"], "model_b": ["b", "a"], "judge": ["j", "j"],
                  "winner": ["model_a", "tie"]}).to_csv(path, index=False)
    return path


def wait_for(condition, what: str):
    """Poll ``condition()`` (a query of the server's state) until it is truthy; fail after DEADLINE_S."""
    end = time.monotonic() + DEADLINE_S
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


# ------------------------------------------------------------------ a host that never answers


@pytest.fixture
def silent_host():
    """``127.0.0.1:PORT`` of a socket that accepts every connection and never sends a byte."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held, stop = [], threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        server.close()


@pytest.mark.parametrize("argv", [["import", "{file}", "--study", "s"], ["rank", "--study", "s"],
                                  ["runs", "--study", "s"]], ids=["import", "rank", "runs"])
def test_a_host_that_never_answers_ends_the_command_with_one_line(argv, silent_host, tmp_path):
    url = f"postgresql://peerboard:pw-LEFT%23x@{silent_host}/peerboard"
    argv = [a.replace("{file}", str(judgments_file(tmp_path / "j.csv"))) for a in argv]
    try:
        child = peercore(*argv, "--db", url, env={CONNECT_TIMEOUT: "2"})
    except subprocess.TimeoutExpired:
        pytest.fail(f"peercore {argv[0]} still waiting for the silent host after {DEADLINE_S} s")
    assert child.returncode == 2, (child.stdout, child.stderr)
    lines = child.stderr.strip().splitlines()
    assert len(lines) == 1, child.stderr
    assert "did not answer within 2 s" in lines[0] and CONNECT_TIMEOUT in lines[0], lines[0]
    assert f"postgresql://peerboard:***@{silent_host}/peerboard" in lines[0] and "LEFT" not in child.stderr


def test_a_connect_timeout_that_is_not_a_number_is_refused_naming_the_variable(silent_host, tmp_path):
    try:
        child = peercore("rank", "--study", "s", "--db", f"postgresql://peerboard@{silent_host}/peerboard",
                         env={CONNECT_TIMEOUT: "ten"})
    except subprocess.TimeoutExpired:
        pytest.fail(f"peercore rank still waiting for the silent host after {DEADLINE_S} s")
    assert child.returncode == 2 and len(child.stderr.strip().splitlines()) == 1, child.stderr
    assert f"${CONNECT_TIMEOUT} must be a number of seconds" in child.stderr and "'ten'" in child.stderr


# ------------------------------------------------------------------ statement timeout


def test_every_session_has_a_statement_timeout_and_watches_its_client(pg_url, monkeypatch):
    monkeypatch.delenv(STATEMENT_TIMEOUT, raising=False)
    with Store(pg_url) as store:
        assert store.connect().execute("SHOW statement_timeout").fetchone()[0] == "5min"
        assert store.connect().execute("SHOW client_connection_check_interval").fetchone()[0] == "5s"
    monkeypatch.setenv(STATEMENT_TIMEOUT, "0.25")
    with Store(pg_url) as store:
        assert store.connect().execute("SHOW statement_timeout").fetchone()[0] == "250ms"


def hold_write_lock(url: str) -> psycopg.Connection:
    """A connection holding the store's write lock (what a long import holds) until closed."""
    holder = psycopg.connect(url, autocommit=True)
    holder.execute("SELECT pg_advisory_lock(%s)", [db.WRITE_LOCK_KEY])
    return holder


def waiting_backend(admin: psycopg.Connection, holder: psycopg.Connection) -> int | None:
    """The pid of a backend waiting for the store's write lock, other than the holder's."""
    row = admin.execute("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' "
                        "AND pid <> %s", [holder.info.backend_pid]).fetchone()
    return None if row is None else row[0]


def test_an_import_past_the_statement_timeout_exits_2_with_one_line(pg_url, tmp_path):
    Store(pg_url).close()  # the schema exists; the import then waits only for the write lock
    holder = hold_write_lock(pg_url)
    try:
        # 1 s: the server cancels the wait long before the store's 30 s lock timeout would.
        child = peercore("import", str(judgments_file(tmp_path / "j.csv")), "--study", "s", "--db", pg_url,
                         env={STATEMENT_TIMEOUT: "1"})
    finally:
        holder.close()
    assert child.returncode == 2, (child.stdout, child.stderr)
    lines = child.stderr.strip().splitlines()
    assert len(lines) == 1, child.stderr
    assert "statement timeout (1 s" in lines[0] and STATEMENT_TIMEOUT in lines[0], lines[0]
    with Store(pg_url) as store:
        assert not store.studies.exists("s")


def test_the_server_ends_the_work_of_a_client_killed_mid_import(pg_cluster, pg_url, tmp_path):
    Store(pg_url).close()
    log = pg_cluster.folder / "server.log"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        holder = hold_write_lock(pg_url)
        try:
            child = subprocess.Popen(
                [sys.executable, "-m", "peercore", "import", str(judgments_file(tmp_path / "j.csv")), "--study", "s",
                 "--db", pg_url], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env={k: v for k, v in os.environ.items() if k != STATEMENT_TIMEOUT})
            try:
                pid = wait_for(lambda: waiting_backend(admin, holder), "the import to wait for the write lock")
                child.send_signal(signal.SIGKILL)
                child.wait(timeout=DEADLINE_S)
                wait_for(lambda: admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                                               [pid]).fetchone()[0] == 0, "the killed client's backend to go")
                # The lock is still held: the backend left because its client was gone, not
                # because it got the lock or gave up waiting for it (30 s lock timeout).
                assert holder.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND "
                                      "pid = pg_backend_pid()").fetchone()[0] == 1
            finally:
                if child.poll() is None:
                    child.kill()
                    child.wait()
        finally:
            holder.close()
    said = [line for line in log.read_text(errors="replace").splitlines() if f"[{pid}]" in line]
    assert any("connection to client lost" in line for line in said), said
    assert not any("lock timeout" in line for line in said), said
