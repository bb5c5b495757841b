"""A database that stays busy or goes away mid-command (issue 19, item 5).

Every command waits for another process's write lock at most ``$PEERBOARD_BUSY_TIMEOUT``
seconds (default 120, longer than the 45 s hold the issue reports), saying so on stderr when
it starts waiting; when the time is up, or when the PostgreSQL server goes away, the command
ends with one line on stderr (the database without its password, what happened, that
nothing was half-written, the command to run again) and exit status 2, never a traceback.

Each command runs as a real ``python -m peercore`` child. Nothing here sleeps to let another
process "get there": the lock holder (a child process on SQLite, a session advisory lock on
PostgreSQL) says when it holds the lock, the command's own stderr says when it waits, the
fake LLM server holds requests (:meth:`FakeLLMServer.hold_after`) and the store's test hook
``PEERBOARD_TEST_PAUSE_BEFORE_COMMIT=stdin`` holds a write before its COMMIT until the test
writes a line: the server is stopped at those known points, then started again, and the
same command run again stores everything exactly once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pandas as pd
import pytest

from fakes.llm_server import FakeLLMServer
from integration.helpers import make_review_study
from peercore.store import Store

REPO = Path(__file__).resolve().parents[2]
PANEL = REPO / "sample_data" / "sample-panel.jsonl"
PASSWORD = "gone-pw-Zq81"
API_KEY = "sk-test-database-gone-not-a-secret"
BUSY = "PEERBOARD_BUSY_TIMEOUT"
PAUSE = "PEERBOARD_TEST_PAUSE_BEFORE_COMMIT"
SAFETY_S = 180  # a hung child fails the test instead of the suite; never a synchronisation
WAITING = "another process is writing to this database; waiting up to"

HOLDER = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.readline()
connection.execute("ROLLBACK")
print("released", flush=True)
"""


# ------------------------------------------------------------------------- helpers


def child_env(tmp_path: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PEERBOARD_DB", BUSY, PAUSE)}
    env.update(PYTHONPATH=os.pathsep.join(sys.path), XDG_DATA_HOME=str(tmp_path / "xdg"), **extra)
    return env


def start(tmp_path: Path, *argv: str, **env: str) -> subprocess.Popen:
    """``python -m peercore ARGV`` as a child, its stdin, stdout and stderr piped (text)."""
    return subprocess.Popen([sys.executable, "-m", "peercore", *argv], cwd=tmp_path, env=child_env(tmp_path, **env),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run(tmp_path: Path, *argv: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "peercore", *argv], cwd=tmp_path, env=child_env(tmp_path, **env),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=SAFETY_S)


def read_until(stream, marker: str) -> list[str]:
    """Lines of ``stream`` up to and including the first holding ``marker`` (fails at end of stream)."""
    lines = []
    while True:
        line = stream.readline()
        assert line, f"the stream ended before {marker!r}: {lines}"
        lines.append(line)
        if marker in line:
            return lines


def finish(child: subprocess.Popen, *, before: list[str] = ()) -> tuple[int, str, str]:
    out, err = child.communicate(timeout=SAFETY_S)
    return child.returncode, out, "".join(before) + err


def assert_one_line(code: int, err: str, *must: str) -> str:
    """Exit status 2 and exactly one line on stderr, a peercore error holding ``must`` and no traceback."""
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, (code, err)
    line = lines[0]
    assert line.startswith("peercore: error: ") and "Traceback" not in err, err
    for text in (*must, "nothing was half-written", "Run the command again"):
        assert text in line, (text, line)
    assert PASSWORD not in err
    return line


def with_password(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{parts.username}:{PASSWORD}@{parts.hostname}:{parts.port}"))


def shown(location: str) -> str:
    """How a message names ``location``: a file as given, a URL with ``***`` for its password."""
    return location.replace(PASSWORD, "***")


def judgments_file(path: Path, n: int = 40) -> Path:
    pd.DataFrame({"question_id": [f"q{k}" for k in range(n)], "model_a": ["a"] * n, "model_b": ["b"] * n,
                  "judge": ["j"] * n, "winner": ["model_a", "model_b", "tie", "model_a"] * (n // 4)}).to_csv(
        path, index=False)
    return path


def stored_judgments(location: str, study: str) -> int:
    with contextlib.closing(Store(location, create=False)) as store:
        return len(store.verdicts.table(study, include_invalid=True)) if store.studies.exists(study) else 0


def snapshot(location: str) -> str:
    """The database's bytes (a SQLite file and its write-ahead log) or rows (every table of a PostgreSQL schema)."""
    if not location.startswith("postgresql://"):
        return "".join(hashlib.sha256(Path(location + suffix).read_bytes()).hexdigest()
                       if Path(location + suffix).exists() else "-" for suffix in ("", "-wal"))
    with contextlib.closing(Store(location, create=False)) as store:
        connection = store.connect()
        tables = [r[0] for r in connection.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1")]
        rows = {t: sorted(map(repr, connection.execute(f"SELECT * FROM {t}").fetchall())) for t in tables}
    return hashlib.sha256(repr(rows).encode()).hexdigest()


@contextlib.contextmanager
def write_lock_held(location: str):
    """Another process holds the database's write lock until the block ends.

    SQLite: a child process in ``BEGIN IMMEDIATE``, which says "held" and releases when told
    (a line on its stdin). PostgreSQL: a session holding the store's advisory write lock.
    """
    if location.startswith("postgresql://"):
        import psycopg

        from peercore import db

        holder = psycopg.connect(location, autocommit=True)
        try:
            holder.execute("SELECT pg_advisory_lock(%s)", [db.WRITE_LOCK_KEY])
            yield
        finally:
            holder.close()
        return
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, location], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "released"
    finally:
        holder.kill()
        holder.wait()


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "pb.sqlite")
    return with_password(request.getfixturevalue("new_pg_url")())


def panel_study(tmp_path: Path, location: str) -> int:
    """The sample panel imported as study ``panel``; the id of a debate waiting for people."""
    done = run(tmp_path, "import", str(PANEL), "--study", "panel", "--db", location)
    assert done.returncode == 0, done.stderr
    with contextlib.closing(Store(location, create=False)) as store:
        return int(store.debates.table("panel", kind="debate").query("status == 'unresolved'")["id"].min())


def decisions(location: str, debate_id: int) -> list[tuple]:
    with contextlib.closing(Store(location, create=False)) as store:
        made = store.debates.adjudications("panel").query("debate_id == @debate_id")
    return list(zip(made["annotator"], made["decision"]))


# ------------------------------------------------------------- a held write lock


def test_an_import_waits_for_a_held_write_lock_says_so_and_succeeds_once_released(location, tmp_path):
    data = judgments_file(tmp_path / "j.csv")
    Store(location).close()  # the schema exists: the import waits only for the write lock
    with write_lock_held(location):
        child = start(tmp_path, "import", str(data), "--study", "s", "--db", location)
        waiting = read_until(child.stderr, WAITING)  # it is waiting now, and said so
        assert child.poll() is None
        assert shown(location) in waiting[-1] and "120 s" in waiting[-1] and BUSY in waiting[-1], waiting
    code, out, err = finish(child, before=waiting)
    assert code == 0 and len(err.strip().splitlines()) == 1, (out, err)  # only the waiting notice
    assert PASSWORD not in out + err
    assert stored_judgments(location, "s") == 40


def test_an_import_facing_a_lock_past_its_busy_timeout_ends_with_one_line_and_writes_nothing(location, tmp_path):
    data = judgments_file(tmp_path / "j.csv")
    done = run(tmp_path, "import", str(data), "--study", "before", "--db", location)
    assert done.returncode == 0, done.stderr
    with write_lock_held(location):
        before = snapshot(location)
        # 1 s: too short to be worth a waiting notice, so the error is the only line
        done = run(tmp_path, "import", str(data), "--study", "s", "--db", location, **{BUSY: "1"})
        assert snapshot(location) == before
    line = assert_one_line(done.returncode, done.stderr, shown(location), "write lock", f"1 s; ${BUSY} sets it")
    assert line.endswith(shlex.join(["peercore", "import", str(data), "--study", "s", "--db", shown(location)])), line
    assert stored_judgments(location, "s") == 0 and stored_judgments(location, "before") == 40


def test_an_adjudication_waits_for_a_held_write_lock_and_stores_its_decision_once(location, tmp_path):
    debate = panel_study(tmp_path, location)
    decide = ("adjudicate", "--study", "panel", "--annotator", "alice", "--decide", str(debate), "model_a",
              "--db", location)
    with write_lock_held(location):
        child = start(tmp_path, *decide)
        waiting = read_until(child.stderr, WAITING)
        assert child.poll() is None
    code, out, err = finish(child, before=waiting)
    assert code == 0 and '"stored": "new"' in out, (out, err)
    assert decisions(location, debate) == [("alice", "model_a")]
    with write_lock_held(location):
        done = run(tmp_path, *decide[:-3], "tie", "--db", location, **{BUSY: "0.5"})
    assert_one_line(done.returncode, done.stderr, shown(location), "write lock")
    assert decisions(location, debate) == [("alice", "model_a")]  # the refused change left nothing


def test_a_busy_timeout_that_is_not_a_number_is_named(tmp_path):
    done = run(tmp_path, "import", str(judgments_file(tmp_path / "j.csv")), "--db", str(tmp_path / "pb.sqlite"),
               **{BUSY: "soon"})
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        f"peercore: error: ${BUSY} must be a number of seconds (0 or more), got 'soon'"], done.stderr


# ------------------------------------------------------- the server goes away


class Server:
    """A private PostgreSQL server this module may stop and start again (the session's is shared)."""

    def __init__(self) -> None:
        from pg_cluster import PostgresCluster

        self.cluster = PostgresCluster().start()
        self.running = True
        self.options = (f"-p {self.cluster.port} -k {self.cluster.folder} -c listen_addresses=127.0.0.1 "
                        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")

    def _pg_ctl(self, *argv: str) -> None:
        self.cluster._run(str(self.cluster.bin_dir / "pg_ctl"), "-D", str(self.cluster.data_dir), *argv)

    def stop(self) -> None:
        """A fast shutdown: every session is ended (its open transaction rolled back), then the server stops."""
        self._pg_ctl("-m", "fast", "-w", "stop")
        self.running = False

    def start(self) -> None:
        if not self.running:
            self._pg_ctl("-o", self.options, "-l", str(self.cluster.folder / "server.log"), "-w", "-t", "60", "start")
            self.running = True

    def new_url(self, schema: str) -> str:
        import psycopg

        with psycopg.connect(self.cluster.url, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {schema}")
        return with_password(f"{self.cluster.url}?options=-csearch_path%3D{schema}")


@pytest.fixture(scope="module")
def server(pg_cluster):
    """Needs the session's cluster only to know PostgreSQL is there (else the same skip or failure)."""
    private = Server()
    try:
        yield private
    finally:
        private.cluster.stop()


@pytest.fixture
def restarted(server):
    """The server, started again after the test whatever happened in it."""
    try:
        yield server
    finally:
        server.start()


def test_an_import_whose_server_stops_before_commit_ends_with_one_line_and_commits_nothing(restarted, tmp_path):
    url = restarted.new_url("gone_import")
    data = judgments_file(tmp_path / "j.csv")
    Store(url).close()
    child = start(tmp_path, "import", str(data), "--study", "s", "--db", url, **{PAUSE: "stdin"})
    paused = read_until(child.stderr, "test hook: pausing stdin before COMMIT")  # every row written, not committed
    restarted.stop()
    child.stdin.write("\n")
    child.stdin.flush()
    code, out, err = finish(child)
    line = assert_one_line(code, err, shown(url), "connection to the database server was lost", "server is back")
    assert line.endswith(shlex.join(["peercore", "import", str(data), "--study", "s", "--db", shown(url)])), line
    assert len(paused) == 1
    restarted.start()
    assert stored_judgments(url, "s") == 0  # nothing half-written
    for _ in range(2):  # the same command again stores everything; once more adds nothing
        done = run(tmp_path, "import", str(data), "--study", "s", "--db", url)
        assert done.returncode == 0 and PASSWORD not in done.stdout + done.stderr, done.stderr
        assert stored_judgments(url, "s") == 40


def test_a_review_whose_server_stops_mid_run_ends_with_one_line_and_resumes_paying_nothing_twice(restarted, tmp_path):
    url = restarted.new_url("gone_review")
    with contextlib.closing(Store(url)) as store:
        make_review_study(store, name="s", questions=2, models=3)  # 2 questions x 6 ordered pairs = 12 reviews
    review = ("review", "--study", "s", "--reviewer", "openai:gpt-4o", "--method", "verdict", "--db", url,
              "--no-progress")
    with FakeLLMServer(seed=5) as llm:
        env = {"OPENAI_BASE_URL": llm.openai_base_url, "OPENAI_API_KEY": API_KEY}
        llm.hold_after(4)  # four answered, then every later request waits for the test
        child = start(tmp_path, *review, **env)
        assert llm.wait_until(lambda s: s.held >= 1, timeout=SAFETY_S)
        restarted.stop()  # the run is mid-way: responses paid, requests in flight
        llm.release()
        code, out, err = finish(child)
        assert_one_line(code, err, shown(url), "connection to the database server was lost")
        assert API_KEY not in out + err
        restarted.start()
        first_paid = llm.requests_total
        kept = paid_calls_stored(tmp_path, url)  # responses written before the server stopped
        assert kept < 12 and stored_judgments(url, "s") < 12
        done = run(tmp_path, *review, **env)
        assert done.returncode == 0, (done.stdout, done.stderr)
        # the second run paid only for the reviews whose response the first did not store
        assert llm.requests_total - first_paid == 12 - kept
    assert paid_calls_stored(tmp_path, url) == 12
    with contextlib.closing(Store(url, create=False)) as store:
        stored = store.verdicts.table("s", include_invalid=True)
    assert len(stored) == 12 and not stored.duplicated(["question_id", "model_a", "model_b"]).any()


def paid_calls_stored(tmp_path: Path, url: str) -> int:
    """How many paid responses the study's runs stored (``peercore runs --json``)."""
    done = run(tmp_path, "runs", "--study", "s", "--db", url, "--json")
    assert done.returncode == 0, done.stderr
    return sum(r["accounting"]["calls_paid"] for r in json.loads(done.stdout))


def test_an_adjudication_whose_server_stops_before_commit_ends_with_one_line_and_is_stored_once(restarted,
                                                                                                  tmp_path):
    url = restarted.new_url("gone_adjudicate")
    debate = panel_study(tmp_path, url)
    decide = ("adjudicate", "--study", "panel", "--annotator", "alice", "--decide", str(debate), "both_bad",
              "--db", url)
    child = start(tmp_path, *decide, **{PAUSE: "stdin"})
    read_until(child.stderr, "test hook: pausing stdin before COMMIT")
    restarted.stop()
    child.stdin.write("\n")
    child.stdin.flush()
    code, out, err = finish(child)
    assert_one_line(code, err, shown(url), "connection to the database server was lost")
    assert out == ""
    restarted.start()
    assert decisions(url, debate) == []
    for stored in ("new", "replaced"):  # the same command again stores it; once more replaces it by itself
        done = run(tmp_path, *decide)
        assert done.returncode == 0 and f'"stored": "{stored}"' in done.stdout, done.stderr
        assert decisions(url, debate) == [("alice", "both_bad")]
