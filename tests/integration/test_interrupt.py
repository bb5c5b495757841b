"""Ctrl-C on ``peercore review`` (live and ``--batch``): one line naming the resume command, exit 130.

The runs are the real command line in a subprocess against the local wire-format server.
The test waits on the server's own hook (:meth:`FakeLLMServer.wait_until`: N chat requests
in, or the batch read twice while it runs) and sends SIGINT; then it runs the command the
line names and counts on the server that nothing was paid twice.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from collections import Counter

import pytest

from fakes.llm_server import FakeLLMServer
from integration.helpers import make_review_study, messages_of
from peercore.cli.runs import EXIT_INTERRUPTED
from peercore.jobs.review import ReviewJob
from peercore.jobs.specs import parse_judge_spec
from peercore.store import Store

SPECS = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-3-5-haiku"}
KEYS = {"OPENAI_API_KEY": "sk-test-interrupt-0000", "ANTHROPIC_API_KEY": "sk-ant-test-interrupt-0000"}
POLLED = {"openai": "GET /v1/batches/{id}", "anthropic": "GET /v1/messages/batches/{id}"}
CREATED = {"openai": "POST /v1/batches", "anthropic": "POST /v1/messages/batches"}


def _env(server: FakeLLMServer) -> dict:
    return {**os.environ, **KEYS, "OPENAI_BASE_URL": server.openai_base_url,
            "ANTHROPIC_BASE_URL": server.anthropic_base_url, "PYTHONPATH": os.pathsep.join(sys.path)}


def _as_from_a_terminal() -> None:
    """In the child before it runs: Ctrl-C's default disposition, as a terminal gives a command.

    A test run started in the background of a shell without job control (``pytest ... &`` in a
    script) ignores SIGINT, and a child inherits that: Python then installs no KeyboardInterrupt
    handler and the batch run, which relies on it, never sees the signal (the three batch cases
    hung for 120 s each in such a run).
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(command: list[str], server: FakeLLMServer, ready) -> tuple[int, list[str], str]:
    """Start ``command``, send SIGINT once ``ready(server)`` holds; its exit status, stderr lines and stdout."""
    child = subprocess.Popen([sys.executable, "-m", "peercore", *command], env=_env(server), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=_as_from_a_terminal)
    try:
        assert server.wait_until(ready, timeout=120), "the run never got there"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    print(f"exit {child.returncode}\nstderr:\n{err}")
    return child.returncode, err.splitlines(), out


def _resume(line: str, server: FakeLLMServer, run_id: str) -> subprocess.CompletedProcess:
    """Run the command the interruption line names."""
    head, sep, command = line.partition(". Resume with: ")
    assert sep and command.startswith("peercore review ") and command.endswith(f" --run-id {run_id}"), line
    words = shlex.split(command)
    return subprocess.run([sys.executable, "-m", "peercore", *words[1:]], env=_env(server), capture_output=True,
                          text=True, timeout=120)


def _study(location, *, questions: int, models: int) -> Store:
    store = Store(location)
    make_review_study(store, name="b", questions=questions, models=models)
    return store


@pytest.mark.slow
def test_ctrl_c_on_a_live_run_prints_one_line_and_the_resume_pays_nothing_twice(tmp_path):
    db = tmp_path / "live.sqlite"
    store = _study(db, questions=10, models=4)  # 10 x 12 = 120 reviews
    run_id = ReviewJob("b", [parse_judge_spec(SPECS["openai"])]).run_id()
    command = ["review", "--study", "b", "--db", str(db), "--reviewer", SPECS["openai"], "--concurrency", "4",
               "--no-progress"]
    with FakeLLMServer(latency_s=0.2) as server:
        code, lines, out = _interrupt(command, server, lambda s: s.requests_total >= 10)
        assert code == EXIT_INTERRUPTED == 130
        assert len(lines) == 1 and out == ""  # one line, no traceback, no summary
        assert lines[0].startswith("peercore: interrupted; nothing paid is lost (")
        run = store.runs.get(run_id)
        assert 0 < run["n_done"] < 120 and run["status"] == "cancelled"

        resumed = _resume(lines[0], server, run_id)
        assert resumed.returncode == 0, resumed.stderr
        asked = Counter(messages_of(r["body"], r["api"]) for r in server.request_log)
    assert len(asked) == 120 and set(asked.values()) == {1}  # nothing paid twice, nothing left out
    accounting = store.runs.accounting(run_id)
    assert (accounting["calls_paid"], accounting["verdicts"], accounting["items_done"]) == (120, 120, 120)
    assert store.runs.get(run_id)["status"] == "finished"


@pytest.mark.slow
@pytest.mark.parametrize("provider, backend", [("openai", "sqlite"), ("anthropic", "sqlite"),
                                               ("openai", "postgresql")])
def test_ctrl_c_on_a_batch_run_prints_one_line_and_the_resume_reads_the_same_batch(tmp_path, provider, backend,
                                                                                  request):
    if backend == "postgresql":  # a password in the URL stays out of the line (trust auth ignores it on resume)
        location = request.getfixturevalue("pg_url").replace("postgresql://peerboard@",
                                                             "postgresql://peerboard:s3cret-pw@")
    else:
        location = str(tmp_path / "batch.sqlite")
    store = _study(location, questions=3, models=3)  # 3 x 6 = 18 reviews, one batch
    run_id = ReviewJob("b", [parse_judge_spec(SPECS[provider])]).run_id()
    command = ["review", "--study", "b", "--db", location, "--reviewer", SPECS[provider], "--batch",
               "--poll-seconds", "0.05", "--no-progress"]
    with FakeLLMServer(batch_delay_s=3600) as server:  # the batch runs until the test lets it end
        code, lines, out = _interrupt(command, server, lambda s: s.endpoint_counts[POLLED[provider]] >= 2)
        assert code == EXIT_INTERRUPTED and out == ""
        said = [line for line in lines if not line.startswith("batch ")]  # the steps it had reported
        assert len(said) == 1 and said[0] == lines[-1], lines
        assert said[0].startswith("peercore: interrupted; nothing paid is lost (0/18 items stored)")
        assert "s3cret-pw" not in said[0]
        assert store.runs.get(run_id)["status"] == "interrupted"
        assert [b["status"] for b in store.runs.batches(run_id)] == ["submitted"]

        server.batch_delay_s = 0.0
        resumed = _resume(said[0], server, run_id)
        assert resumed.returncode == 0, resumed.stderr
        counts = dict(server.endpoint_counts)
        answered = Counter(json.dumps(e["body"], sort_keys=True) for e in server.batch_log
                           if e["outcome"] == "succeeded")
    assert counts[CREATED[provider]] == 1  # the resume read the batch sent before Ctrl-C
    assert len(answered) == 18 and set(answered.values()) == {1}
    accounting = store.runs.accounting(run_id)
    assert (accounting["calls_paid"], accounting["verdicts"], accounting["items_done"]) == (18, 18, 18)
    assert store.runs.get(run_id)["status"] == "finished"
