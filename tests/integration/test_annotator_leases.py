"""Several annotators at once on one store (issue 13): leases, overlap, decisions stored once.

The five-annotator and overlap tests run on a SQLite file and on PostgreSQL (a schema in the
suite's throwaway cluster, ``db`` fixture in tests/conftest.py); the kill-inside-the-claim
test is about SQLite's file lock.

Each annotator is its own process (``lease_worker.py``, through :mod:`peercore.assignment`,
the layer under ``peercore adjudicate`` and the Adjudication page). One of them is killed
with SIGKILL while it holds a lease: its debate must come back when the lease runs out and
be decided by another annotator, and every decision any process reported as stored must
be in the file, exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path

import pytest

from peercore.store import Store

WORKER = Path(__file__).with_name("lease_worker.py")
LEASE = 3.0  # seconds: long enough for a decision under load, short enough to wait for once


def make_queue(path: Path, *, debates: int, overlap: int) -> None:
    store = Store(path)
    store.studies.create("team")
    store.debates.add_many("team", [({"debate_key": f"d{k:04d}", "question_id": f"q{k:04d}", "model_a": "a",
                                      "model_b": "b", "status": "unresolved"},
                                [{"round": 0, "position": 0, "speaker": "judge-x", "verdict": "model_a"},
                                 {"round": 0, "position": 1, "speaker": "judge-y", "verdict": "model_b"}])
                               for k in range(debates)])
    store.studies.update_settings("team", overlap=overlap)
    store.close()


def start(path: Path, annotator: str, log: Path, *extra: str, env: dict | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})}
    return subprocess.Popen([sys.executable, str(WORKER), str(path), "team", annotator, "--lease", str(LEASE),
                             "--seed", str(abs(hash(annotator)) % 1000), *extra],
                            stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)


def events(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines() if line.strip()]


def wait_for(log: Path, word: str, *, timeout: float) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for event in events(log):
            if event[0] == word:
                return event
        time.sleep(0.02)
    raise AssertionError(f"{log.name}: no '{word}' line within {timeout} s:\n{log.read_text()[-2000:]}")


def finish(processes: dict[str, subprocess.Popen], *, timeout: float) -> None:
    for name, process in processes.items():
        assert process.wait(timeout=timeout) == 0, f"annotator {name} exited with {process.returncode}"


def stored(path: Path) -> list[tuple[int, str, str]]:
    store = Store(path)
    rows = store.connect().execute("SELECT debate_id, annotator, verdict, both_bad FROM adjudications").fetchall()
    store.close()
    return [(int(r[0]), r[1], "both_bad" if r[3] else r[2]) for r in rows]


@pytest.mark.slow
def test_five_annotators_one_killed_every_decision_stored_once(tmp_path, db):
    path = db  # a SQLite file or a PostgreSQL URL
    n_debates, names = 1000, ["ann", "ben", "cat", "dan", "eve"]  # 5 annotators, ~200 decisions each
    make_queue(path, debates=n_debates, overlap=1)
    logs = {name: tmp_path / f"{name}.log" for name in names}
    started = time.monotonic()
    processes = {name: start(path, name, logs[name], *(["--hold-after", "60"] if name == "eve" else []))
                 for name in names}
    # eve decides 60 debates, takes a 61st and stops there: kill -9 while it holds the lease.
    held = int(wait_for(logs["eve"], "holding", timeout=60)[1])
    processes["eve"].send_signal(signal.SIGKILL)
    assert processes.pop("eve").wait(timeout=10) == -signal.SIGKILL
    killed_at = time.time()
    finish(processes, timeout=120)
    elapsed = time.monotonic() - started

    rows = stored(path)
    reported = [(int(e[1]), name, e[2]) for name in names for e in events(logs[name]) if e[0] == "decided"]
    claims = defaultdict(list)  # debate -> [(annotator, time, lease expiry)]
    for name in names:
        for e in events(logs[name]):
            if e[0] == "claim":
                claims[int(e[1])].append((name, float(e[2]), datetime.fromisoformat(e[3]).timestamp()))
    refused = sum(e[0] == "refused" for name in names for e in events(logs[name]))
    per_annotator = Counter(name for _, name, _ in rows)
    per_debate = Counter(debate for debate, _, _ in rows)
    print(f"\n{n_debates} debates, 5 annotators, overlap 1, eve killed holding debate #{held}: "
          f"{len(rows)} decisions stored, {len(reported)} reported by the processes, {refused} refused, "
          f"per annotator {dict(sorted(per_annotator.items()))}, {elapsed:.1f} s")

    assert sorted(rows) == sorted(reported)  # none lost, none made up, none twice
    assert len(rows) == n_debates and set(per_debate.values()) == {1}  # every debate decided exactly once
    assert per_annotator["eve"] == 60 and sum(per_annotator.values()) == n_debates
    assert refused == 0
    # Nobody was ever offered a debate someone else held, except eve's after her lease ran out.
    shared = {debate: holders for debate, holders in claims.items() if len({h[0] for h in holders}) > 1}
    assert list(shared) == [held], shared
    eve_claim = next(h for h in claims[held] if h[0] == "eve")
    successors = [h for h in claims[held] if h[0] != "eve"]
    assert len(successors) == 1 and successors[0][1] >= eve_claim[2] > killed_at - LEASE - 5
    assert [(debate, name) for debate, name, _ in rows if debate == held] == [(held, successors[0][0])]
    leases = Store(path).debates.leases("team")
    assert leases.empty or not leases["live"].any(), leases  # eve's lease is gone, nobody holds anything


@pytest.mark.slow
def test_an_annotator_killed_inside_its_claim_transaction_leaves_nothing_behind(tmp_path):
    """SIGKILL while the claim's write transaction holds SQLite's write lock (paused just before
    COMMIT by the store's test hook): the lock goes with the process, the others carry on, and
    neither the lease nor anything else of the killed annotator is in the file."""
    path = tmp_path / "locked.sqlite"
    make_queue(path, debates=300, overlap=1)
    logs = {name: tmp_path / f"{name}.log" for name in ("ann", "ben", "zed")}
    victim = start(path, "zed", logs["zed"], env={"PEERBOARD_TEST_PAUSE_BEFORE_COMMIT": "60"})
    wait_for(logs["zed"], "peercore:", timeout=60)  # "peercore: test hook: pausing 60 s before COMMIT"
    others = {name: start(path, name, logs[name]) for name in ("ann", "ben")}
    for name in others:
        wait_for(logs[name], "ready", timeout=60)
    time.sleep(0.5)  # the others now wait for the write lock zed holds
    killed_at = time.time()
    victim.send_signal(signal.SIGKILL)
    assert victim.wait(timeout=10) == -signal.SIGKILL
    finish(others, timeout=120)
    rows = stored(path)
    reported = [(int(e[1]), name, e[2]) for name in ("ann", "ben") for e in events(logs[name]) if e[0] == "decided"]
    print(f"\n300 debates, zed killed inside its claim transaction: {len(rows)} decisions stored, "
          f"{len(reported)} reported, zed's: {sum(name == 'zed' for _, name, _ in rows)}")
    assert sorted(rows) == sorted(reported) and len(rows) == 300
    assert Counter(debate for debate, _, _ in rows) == Counter(range(1, 301))
    assert not any(e[0] == "claim" for e in events(logs["zed"]))  # zed never got a debate
    first = min(float(e[2]) for name in ("ann", "ben") for e in events(logs[name]) if e[0] == "claim")
    assert first >= killed_at  # nobody got a debate while zed held the lock
    leases = Store(path).debates.leases("team")
    assert "zed" not in set(leases["annotator"]) and Store(path).integrity_problems() == []


@pytest.mark.slow
def test_overlap_two_gets_exactly_two_distinct_annotators_per_debate(tmp_path, db):
    path = db
    make_queue(path, debates=150, overlap=2)
    names = ["ann", "ben", "cat", "dan"]
    logs = {name: tmp_path / f"{name}.log" for name in names}
    processes = {name: start(path, name, logs[name]) for name in names}
    finish(processes, timeout=120)
    rows = stored(path)
    reported = [(int(e[1]), name, e[2]) for name in names for e in events(logs[name]) if e[0] == "decided"]
    holders = defaultdict(set)
    for name in names:
        for e in events(logs[name]):
            if e[0] == "claim":
                holders[int(e[1])].add(name)
    per_debate = Counter(debate for debate, _, _ in rows)
    print(f"\n150 debates, 4 annotators, overlap 2: {len(rows)} decisions stored, "
          f"{len(reported)} reported, per annotator {dict(sorted(Counter(n for _, n, _ in rows).items()))}")
    assert sorted(rows) == sorted(reported)
    assert len(per_debate) == 150 and set(per_debate.values()) == {2}  # exactly two decisions each ...
    assert len(set((d, n) for d, n, _ in rows)) == 300  # ... by two distinct annotators
    assert max(len(h) for h in holders.values()) == 2  # never offered to a third


def test_the_command_line_takes_renews_and_decides(tmp_path):
    """``peercore adjudicate`` (the real CLI in subprocesses) on the same rules."""
    path = tmp_path / "cli.sqlite"
    make_queue(path, debates=2, overlap=1)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "peercore", "adjudicate", "--study", "team", "--db", str(path),
                               *args], capture_output=True, text=True, timeout=60)

    first = cli("--annotator", "ann", "--next")
    assert first.returncode == 0, first.stderr
    item = json.loads(first.stdout)
    assert (item["debate_id"], item["renewed"], item["decisions"]) == (1, False, 0)
    assert json.loads(cli("--annotator", "ann", "--next").stdout)["renewed"] is True
    assert json.loads(cli("--annotator", "ben", "--next").stdout)["debate_id"] == 2  # 1 is ann's
    nothing = cli("--annotator", "cat", "--next")
    assert nothing.returncode == 0 and json.loads(nothing.stdout) is None and "held by others" in nothing.stderr
    done = cli("--annotator", "ann", "--decide", "1", "both_bad", "--note", "neither is right")
    assert json.loads(done.stdout) == {"debate_id": 1, "annotator": "ann", "decision": "both_bad", "stored": "new"}
    late = cli("--annotator", "cat", "--decide", "1", "model_a")
    assert late.returncode == 2 and "debate #1 already has the 1 decision(s) it needs (by ann)" in late.stderr
    assert json.loads(cli("--annotator", "ben", "--release").stdout) == {"released": 1}
    assert json.loads(cli("--annotator", "cat", "--next").stdout)["debate_id"] == 2
    bad = cli("--annotator", "cat", "--decide", "two", "tie")
    assert bad.returncode == 2 and "DEBATE_ID must be an integer, got 'two'" in bad.stderr
    elsewhere = cli("--annotator", "cat", "--decide", "99", "tie")
    assert elsewhere.returncode == 2 and "study 'team' has no debate #99" in elsewhere.stderr
    wrong = cli("--annotator", "cat", "--decide", "2", "first")
    assert wrong.returncode == 2 and "verdict must be one of" in wrong.stderr and "'first'" in wrong.stderr
    assert stored(path) == [(1, "ann", "both_bad")]
