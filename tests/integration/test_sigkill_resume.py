"""A run killed with SIGKILL halfway resumes with no repeated request for finished items.

The run is the real command line (``peercore review``, the openai SDK through the
OpenAI-compatible backend) in a subprocess, against the local wire-format server. The
test kills it with ``kill -9`` once about half the items are committed, then resumes the
same job in-process and checks the server's request log.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from fakes.llm_server import FakeLLMServer
from integration.helpers import make_review_study, messages_of, request_messages
from peercore.jobs.review import ReviewJob
from peercore.jobs.specs import parse_judge_spec
from peercore.runner import RetryPolicy, run_job_sync
from peercore.store import Store

CONCURRENCY = 4


def _done_items(store: Store, run_id: str) -> set[str]:
    rows = store.connect().execute("SELECT item_key FROM run_items WHERE run_id = ? AND status = 'done'", (run_id,))
    return {r[0] for r in rows}


@pytest.mark.slow
def test_sigkill_halfway_then_resume_repeats_no_finished_item(tmp_path):
    db = tmp_path / "kill.sqlite"
    store = Store(db)
    study = make_review_study(store, name="kill", questions=10, models=4)  # 10 x 12 = 120 reviews
    with FakeLLMServer(latency_s=0.15, seed=2) as server:
        spec = f"compatible:judge@{server.openai_base_url}"
        job = ReviewJob(study, [parse_judge_spec(spec)])
        items = job.prepare(store)
        run_id = job.run_id()
        item_of = {request_messages(job.plan(item)[0].request): item for item in items}
        assert len(item_of) == 120

        command = [sys.executable, "-c", "import sys; from peercore.cli import main; sys.exit(main())",
                   "review", "--study", study, "--db", str(db), "--reviewer", spec,
                   "--concurrency", str(CONCURRENCY), "--no-progress"]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        try:
            while time.monotonic() < deadline:
                if child.poll() is not None:
                    pytest.fail(f"the run ended before it was killed: {child.communicate()}")
                try:
                    done = len(_done_items(store, run_id))
                except Exception:  # the child has not created the run yet
                    done = 0
                if done >= 60:
                    break
                time.sleep(0.02)
            os.kill(child.pid, signal.SIGKILL)
            child.wait(10)
        finally:
            if child.poll() is None:
                child.kill()
        assert child.returncode == -signal.SIGKILL
        time.sleep(0.2)  # let requests the child had in flight reach the server's log
        finished_before = _done_items(store, run_id)
        log_at_kill = len(server.request_log)
        assert 60 <= len(finished_before) < 120
        assert store.runs.get(run_id)["status"] == "running"  # killed: no chance to record anything

        result = run_job_sync(ReviewJob(study, [parse_judge_spec(spec)]), store, concurrency=CONCURRENCY,
                              retry=RetryPolicy(max_attempts=4, base_s=0.01))
        assert result.run_id == run_id and result.status == "finished"
        # the resumed run touched only the unfinished items (calls paid before the kill but not yet
        # committed come from the cache)
        assert result.calls + result.cached == 120 - len(finished_before)

        # a request the child was still sending when it died arrives truncated: count it apart
        complete = [isinstance(r["body"], dict) and "messages" in r["body"] for r in server.request_log]
        assert complete[log_at_kill:] == [True] * (len(complete) - log_at_kill)
        assert complete.count(False) <= CONCURRENCY
        log = [r for r, ok in zip(server.request_log, complete) if ok]
        log_at_kill -= complete[:log_at_kill].count(False)
        after = [item_of[messages_of(r["body"], r["api"])] for r in log[log_at_kill:]]
        assert not set(after) & finished_before  # no request for an item finished before the kill
        assert len(after) == len(set(after)) <= 120 - len(finished_before)
        # items asked twice overall: only those whose call was in flight at the kill
        asked = Counter(item_of[messages_of(r["body"], r["api"])] for r in log)
        repeated = [item for item, n in asked.items() if n > 1]
        print(f"killed with {len(finished_before)}/120 committed; {log_at_kill} requests before the kill, "
              f"{len(after)} after; {result.calls} paid and {result.cached} cached calls on resume; "
              f"{len(repeated)} item(s) asked twice (in flight at the kill)")
        assert len(repeated) <= CONCURRENCY and all(asked[item] == 2 for item in repeated)

    judgments = store.verdicts.table(study)
    assert len(judgments) == 120
    assert not judgments.duplicated(["question_id", "model_a", "model_b", "judge"]).any()
    row = store.runs.get(run_id)
    assert (row["n_done"], row["n_items"], row["status"]) == (120, 120, "finished")
    assert len(_done_items(store, run_id)) == 120
