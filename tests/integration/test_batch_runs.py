"""Batch runs end to end: ``peercore review --batch`` on both providers, kill -9 at every stage, failures.

The runs are the real command line in a subprocess (the openai and anthropic SDKs against
the local wire-format server's batch endpoints). Kill tests land the SIGKILL at a stage
with the test hook ``PEERBOARD_TEST_BATCH_KILL`` (after the upload, between the create
and saving the batch id, while polling, while fetching results), then resume and count
requests on the server: no batch created twice, no request answered twice, no result lost.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from collections import Counter

import pytest

from fakes.llm_server import FakeLLMServer, default_reply
from integration.helpers import make_review_study
from peercore.cli import main
from peercore.jobs.batch import ENV_KILL, RESULT_CHUNK, run_batch_sync
from peercore.jobs.review import ReviewJob
from peercore.jobs.specs import parse_judge_spec
from peercore.runner import run_job_sync
from peercore.store import Store

SPECS = {"openai": "openai:gpt-4o-mini", "anthropic": "anthropic:claude-3-5-haiku"}
KEYS = {"OPENAI_API_KEY": "sk-test-batch-openai-0000", "ANTHROPIC_API_KEY": "sk-ant-test-batch-0000"}


def _env(server: FakeLLMServer, **extra) -> dict:
    return {**os.environ, **KEYS, "OPENAI_BASE_URL": server.openai_base_url,
            "ANTHROPIC_BASE_URL": server.anthropic_base_url, "PYTHONPATH": os.pathsep.join(sys.path), **extra}


def _cli(db, spec: str, env: dict, *extra: str, study: str = "b") -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "peercore", "review", "--study", study, "--db", str(db), "--reviewer", spec,
               "--batch", "--poll-seconds", "0.05", "--no-progress", *extra]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def keys(monkeypatch):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


def _study(tmp_path, name: str, *, questions: int = 3, models: int = 3, location: str | None = None):
    """A review study in a new SQLite file (or at ``location``, a PostgreSQL URL); its location and store."""
    db = location or tmp_path / f"{name}.sqlite"
    store = Store(db)
    make_review_study(store, name="b", questions=questions, models=models)
    return db, store


def _answered(server: FakeLLMServer, batches=None) -> Counter:
    """How often the server answered each distinct request line in a batch (of ``batches`` ids, default all)."""
    return Counter(json.dumps(e["body"], sort_keys=True) for e in server.batch_log
                   if e["outcome"] == "succeeded" and (batches is None or e["batch"] in batches))


def _live_run(tmp_path, server, monkeypatch, provider: str, *, questions: int = 3, models: int = 3):
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    db, store = _study(tmp_path, "live", questions=questions, models=models)
    result = run_job_sync(ReviewJob("b", [parse_judge_spec(SPECS[provider])]), store)
    assert result.status == "finished"
    return store, result


def _sorted(frame):
    return frame.sort_values(["question_id", "model_a", "model_b"]).reset_index(drop=True)


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_cli_batch_run_stores_the_live_verdicts_at_half_the_price(tmp_path, provider, keys, monkeypatch):
    db, store = _study(tmp_path, "batch")
    with FakeLLMServer(batch_delay_s=0.2) as server:
        done = _cli(db, SPECS[provider], _env(server))
        assert done.returncode == 0, done.stderr
        assert "batches: 1 (1 created now), 18 requests: 18 answered, 0 without a result" in done.stdout
        counts = dict(server.endpoint_counts)
        live_store, live = _live_run(tmp_path, server, monkeypatch, provider)
    created = "POST /v1/batches" if provider == "openai" else "POST /v1/messages/batches"
    assert counts[created] == 1
    assert counts.get("POST /v1/chat/completions", 0) == counts.get("POST /v1/messages", 0) == 0  # nothing live
    if provider == "openai":  # a fresh run looks for nothing: upload, create, poll, download
        assert set(counts) == {"POST /v1/files", "POST /v1/batches", "GET /v1/batches/{id}",
                               "GET /v1/files/{id}/content"}
    run = store.runs.table("b").iloc[0]
    assert (run["status"], run["n_done"], run["n_items"]) == ("finished", 18, 18)
    batch, reference = store.runs.judgments(run["id"]), live_store.runs.judgments(live.run_id)
    assert len(batch) == 18 and _sorted(batch).equals(_sorted(reference))  # same verdicts, rationales, raw
    accounting = store.runs.accounting(run["id"])
    assert (accounting["calls_paid"], accounting["verdicts"], accounting["unaccounted"]) == (18, 18, 0)
    store.checkpoint()
    assert not any(key.encode() in db.read_bytes() for key in KEYS.values())  # keys never reach the database
    live_cost = live_store.runs.table("b").iloc[0]["cost_usd"]
    assert live_cost > 0 and run["cost_usd"] == pytest.approx(live_cost / 2, rel=1e-9)


def test_batch_refused_for_a_local_model_with_exit_2(tmp_path, capsys):
    db, store = _study(tmp_path, "local")
    code = main(["review", "--study", "b", "--db", str(db), "--reviewer", "local:smollm2-135m", "--batch"])
    err = capsys.readouterr().err
    assert code == 2
    assert "--batch is for the OpenAI and Anthropic batch APIs" in err and "local:smollm2-135m" in err
    assert store.runs.table("b").empty  # nothing stored


def test_dry_run_prices_at_the_batch_rate(tmp_path, keys, capsys):
    db, _ = _study(tmp_path, "dry")
    command = ["review", "--study", "b", "--db", str(db), "--reviewer", SPECS["openai"], "--dry-run", "--json"]
    with FakeLLMServer() as server:
        assert main(command) == 0
        live = json.loads(capsys.readouterr().out)
        assert main([*command, "--batch"]) == 0
        batch = json.loads(capsys.readouterr().out)
        assert server.requests_total == 0 and not server.endpoint_counts
    assert (live["tier"], batch["tier"]) == ("live", "batch")
    assert batch["cost_usd_high"] == pytest.approx(live["cost_usd_high"] / 2)
    assert batch["cost_usd_low"] == pytest.approx(live["cost_usd_low"] / 2)


# ----------------------------------------------------------------------------- kill -9

KILLS = [("openai", "uploaded"), ("openai", "created"), ("openai", "polled"), ("openai", "fetching"),
         ("anthropic", "creating"), ("anthropic", "created"), ("anthropic", "polled"), ("anthropic", "fetching")]
# On the team store too (issue 13): a kill between creating a batch and saving its id, mid-fetch, and while polling.
KILLS_ON_POSTGRESQL = [("openai", "created"), ("openai", "fetching"), ("anthropic", "polled")]


@pytest.mark.slow
@pytest.mark.parametrize("provider, stage, backend", [(*kill, "sqlite") for kill in KILLS] +
                         [(*kill, "postgresql") for kill in KILLS_ON_POSTGRESQL])
def test_sigkill_at_each_stage_then_resume(tmp_path, provider, stage, backend, keys, monkeypatch, request):
    # fetching is killed after the first chunk of results is stored: the batch needs more than one chunk
    questions, models = (6, 5) if stage == "fetching" else (3, 3)
    n = questions * models * (models - 1)
    assert stage != "fetching" or n > RESULT_CHUNK
    location = request.getfixturevalue("pg_url") if backend == "postgresql" else None
    db, store = _study(tmp_path, "kill", questions=questions, models=models, location=location)
    with FakeLLMServer(batch_delay_s=0.4 if stage == "polled" else 0.0) as server:
        killed = _cli(db, SPECS[provider], _env(server, **{ENV_KILL: stage}))
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert f"killing this process at batch stage {stage!r}" in killed.stderr
        run_id = ReviewJob("b", [parse_judge_spec(SPECS[provider])]).run_id()
        row = store.runs.batches(run_id)[0]
        before = {"uploaded": "planned", "creating": "creating", "created": "creating", "polled": "submitted",
                  "fetching": "ended"}[stage]
        assert row["status"] == before  # the kill landed where it was meant to
        if stage == "fetching":
            stored = store.runs.accounting(run_id)["calls_paid"]
            assert 0 < stored < n  # part of the results were stored before the kill

        if (provider, stage) == ("openai", "polled"):  # a live run would pay again for the calls in flight: refused
            live = subprocess.run([sys.executable, "-m", "peercore", "review", "--study", "b", "--db", str(db),
                                   "--reviewer", SPECS[provider], "--no-progress"], env=_env(server),
                                  capture_output=True, text=True, timeout=60)
            assert live.returncode == 2 and "1 batch(es) submitted and not yet read" in live.stderr
            assert "resume them with --batch" in live.stderr
            runs = subprocess.run([sys.executable, "-m", "peercore", "runs", "--study", "b", "--db", str(db)],
                                  env=_env(server), capture_output=True, text=True, timeout=60)
            assert f"batches: 1 (1 submitted), {n:,} requests, 0 answered" in runs.stdout
            listed = subprocess.run([sys.executable, "-m", "peercore", "runs", "--study", "b", "--db", str(db), "--json"],
                                    env=_env(server), capture_output=True, text=True, timeout=60)
            [batch_row] = json.loads(listed.stdout)[0]["batches"]
            assert batch_row["batch_id"].startswith("batch_") and batch_row["status"] == "submitted"
        # resume without the hook: once by the same command with --run-id, the other stages in
        # this process (a second subprocess per stage costs seconds of imports, the anthropic SDK's most)
        if (provider, stage) == ("openai", "uploaded"):
            resumed = _cli(db, SPECS[provider], _env(server), "--run-id", run_id)
            assert resumed.returncode == 0, resumed.stderr
            said = resumed.stderr
        else:
            monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
            monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
            if (provider, stage) == ("anthropic", "created"):
                # someone else's batch of the same size, made after ours: the resume must not take it
                import anthropic

                other = anthropic.Anthropic(api_key="sk-ant-someone-else", base_url=server.anthropic_base_url)
                other.messages.batches.create(requests=[
                    {"custom_id": f"x{i}", "params": {"model": "claude-3-5-haiku", "max_tokens": 8,
                                                     "messages": [{"role": "user", "content": f"other {i}"}]}}
                    for i in range(n)])
            lines = []
            result = run_batch_sync(ReviewJob("b", [parse_judge_spec(SPECS[provider])]), store, run_id=run_id,
                                    poll_s=0.05, on_status=lines.append)
            assert result.status == "finished" and result.run_id == run_id
            said = "\n".join(lines)
        counts = server.endpoint_counts
        answered = _answered(server, {b["batch_id"] for b in store.runs.batches(run_id)})

    created = "POST /v1/batches" if provider == "openai" else "POST /v1/messages/batches"
    assert counts[created] == 1 + ((provider, stage) == ("anthropic", "created"))  # ours once (+ the other's)
    if provider == "openai":
        assert counts["POST /v1/files"] == 1  # the uploaded file was found again, not uploaded twice
    assert counts.get("POST /v1/chat/completions", 0) == counts.get("POST /v1/messages", 0) == 0
    assert len(answered) == n and max(answered.values()) == 1  # every request answered once: 0 repeated
    accounting = store.runs.accounting(run_id)
    assert (accounting["items_done"], accounting["verdicts"], accounting["calls_paid"]) == (n, n, n)  # 0 lost
    assert accounting["unaccounted"] == accounting["items_failed"] == 0
    assert store.runs.get(run_id)["status"] == "finished"
    if stage in ("created", "uploaded"):
        assert "before the interruption" in said
    if stage == "creating":  # nothing was created before the kill: the resume created it, once
        assert "before the interruption" not in said


# ------------------------------------------------------------------- expired and partial


@pytest.mark.parametrize("provider, mode", [("openai", "expired"), ("anthropic", "partial"),
                                            ("openai", "partial"), ("anthropic", "expired")])
def test_lines_without_a_result_fail_their_items_then_a_resume_resubmits_only_them(tmp_path, provider, mode, keys,
                                                                                   monkeypatch):
    db, store = _study(tmp_path, "fail")
    n = 18
    with FakeLLMServer(batch_mode=mode, batch_error_every=3) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        job = lambda: ReviewJob("b", [parse_judge_spec(SPECS[provider])])  # noqa: E731
        first = run_batch_sync(job(), store, poll_s=0.05)
        missing = n // 2 if mode == "expired" else n // 3
        assert first.status == "failed" and first.failed == missing and first.done == n - missing
        assert first.accounting["batch_failed"] == missing and first.accounting["items_failed"] == missing
        assert first.accounting["calls_paid"] == first.accounting["verdicts"] == n - missing
        assert first.accounting["unaccounted"] == 0  # every paid result is a stored verdict
        reasons = dict(first.failed_items)
        assert len(reasons) == missing and all("no result for this call" in text for text in reasons.values())
        said = "invalid request (fake batch error)" if mode == "partial" else "expired"
        assert all(said in text for text in reasons.values())  # the provider's own reason, per line
        assert len(store.runs.judgments(first.run_id)) == n - missing

        server.batch_mode = "ok"
        second = run_batch_sync(job(), store, poll_s=0.05)
        answered = _answered(server)
        created = server.batches_created()
        requests = sum(server.endpoint_counts.values())
        third = run_batch_sync(job(), store, poll_s=0.05)  # all done: no batch, no request
        assert third.status == "finished" and third.calls == 0 and sum(server.endpoint_counts.values()) == requests
    assert second.status == "finished" and second.done == n and second.calls == missing
    assert created == 2 and second.accounting["batches"] == 2
    assert store.runs.batches(second.run_id)[1]["n_requests"] == missing  # only the lines without a result were resent
    assert len(answered) == n and max(answered.values()) == 1
    assert len(store.runs.judgments(second.run_id)) == n


# ------------------------------------------------------------------------------ debates

AGENTS = ["a1=openai:gpt-4o-mini", "a2=openai:gpt-4o", "a3=openai:gpt-4.1-mini"]


def _by_model(body: dict, api: str) -> str:
    """A deterministic reply that depends on the model too, so that agents disagree and debates go on."""
    digest = hashlib.sha256(json.dumps([body.get("model"), body.get("messages")], sort_keys=True).encode()).digest()
    return default_reply(body, api, first=digest[0] % 2 == 0)


@pytest.mark.slow
def test_cli_debate_batch_sends_one_batch_per_round_and_stores_the_live_debates(tmp_path, keys, monkeypatch):
    from peercore.jobs.discussion import DebateJob

    db, store = _study(tmp_path, "debate")
    with FakeLLMServer(reply=_by_model) as server:
        command = [sys.executable, "-m", "peercore", "debate", "--study", "b", "--db", str(db), "--max-rounds", "3",
                   "--batch", "--poll-seconds", "0.05", "--no-progress"]
        for agent in AGENTS:
            command += ["--agent", agent]
        done = subprocess.run(command, env=_env(server), capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        created = server.endpoint_counts["POST /v1/batches"]
        live_calls_during_batch = server.endpoint_counts["POST /v1/chat/completions"]
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        live_db, live_store = _study(tmp_path, "debate-live")
        live = run_job_sync(DebateJob("b", [parse_judge_spec(a) for a in AGENTS], max_rounds=3), live_store)
    run = store.runs.table("b").iloc[0]
    batch = store.runs.judgments(run["id"])
    reference = live_store.runs.judgments(live.run_id)
    key = ["question_id", "model_a", "model_b", "judge", "round"]
    assert live_calls_during_batch == 0 and live.status == "finished"
    assert batch.sort_values(key).reset_index(drop=True).equals(reference.sort_values(key).reset_index(drop=True))
    debates = ["question_id", "model_a", "model_b", "status", "consensus", "n_rounds"]
    ordered = lambda frame: frame[debates].sort_values(debates[:3]).reset_index(drop=True)  # noqa: E731
    assert ordered(store.debates.table("b")).equals(ordered(live_store.debates.table("b")))
    turns = live_store.debates.turns(live_store.debates.table("b")["id"])
    rounds = int(turns["round"].max()) + 1  # round 0 holds the initial verdicts
    assert rounds == 3
    assert created == rounds * len(AGENTS)  # one batch per round for each agent's model
    assert store.runs.accounting(run["id"])["calls_paid"] == live.calls
    assert run["cost_usd"] == pytest.approx(live_store.runs.table("b").iloc[0]["cost_usd"] / 2, rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_debate_killed_between_rounds_resumes_without_a_second_batch(tmp_path, backend, keys, monkeypatch, request):
    from peercore.jobs.discussion import DebateJob

    location = request.getfixturevalue("pg_url") if backend == "postgresql" else None
    db, store = _study(tmp_path, "debate-kill", location=location)
    job = lambda: DebateJob("b", [parse_judge_spec(a) for a in AGENTS], max_rounds=3)  # noqa: E731
    with FakeLLMServer(reply=_by_model) as server:
        command = [sys.executable, "-m", "peercore", "debate", "--study", "b", "--db", str(db), "--max-rounds", "3",
                   "--batch", "--poll-seconds", "0.05", "--no-progress"]
        for agent in AGENTS:
            command += ["--agent", agent]
        # killed after creating the 5th batch (round 1, the second agent's model), before saving its id
        killed = subprocess.run(command, env=_env(server, **{ENV_KILL: "created:5"}), capture_output=True, text=True,
                                timeout=60)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        run_id = job().run_id()
        # round 0 done; in round 1 the first batch submitted, the second being created
        assert [b["status"] for b in store.runs.batches(run_id)] == ["fetched"] * 3 + ["submitted", "creating", "planned"]
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        resumed = run_batch_sync(job(), store, run_id=run_id, poll_s=0.05)
        created, answered = server.batches_created(), _answered(server)
        live_db, live_store = _study(tmp_path, "debate-kill-live")
        live = run_job_sync(job(), live_store)
    assert resumed.status == "finished" and live.status == "finished"
    assert created == 9 and len(store.runs.batches(run_id)) == 9  # 3 rounds x 3 models, none twice
    assert len(answered) == live.calls and max(answered.values()) == 1  # 0 repeated, 0 lost
    key = ["question_id", "model_a", "model_b", "judge", "round"]
    assert store.runs.judgments(run_id).sort_values(key).reset_index(drop=True).equals(
        live_store.runs.judgments(live.run_id).sort_values(key).reset_index(drop=True))


@pytest.mark.slow
def test_cli_discussion_batch_sends_one_batch_per_turn_and_stores_the_live_discussions(tmp_path, keys, monkeypatch):
    from peercore.jobs.discussion import DiscussionJob

    job = lambda: DiscussionJob("b", [parse_judge_spec(a) for a in AGENTS[:2]], turns=2)  # noqa: E731
    db, store = _study(tmp_path, "discuss")
    live_db, live_store = _study(tmp_path, "discuss-live")
    with FakeLLMServer(reply=_by_model) as server:
        command = [sys.executable, "-m", "peercore", "discuss", "--study", "b", "--db", str(db), "--turns", "2",
                   "--batch", "--poll-seconds", "0.05", "--no-progress", "--json"]
        for agent in AGENTS[:2]:
            command += ["--reviewer", agent]
        done = subprocess.run(command, env=_env(server), capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        batch = json.loads(done.stdout)
        created, live_calls = server.batches_created(), server.endpoint_counts["POST /v1/chat/completions"]
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        live = run_job_sync(job(), live_store)
    assert batch["status"] == live.status == "finished" and live_calls == 0
    assert batch["calls"] == live.calls and batch["cost_usd"] == pytest.approx(live.cost_usd / 2, rel=1e-9)
    # one batch per model and step: the initial reviews, then each of the 2 turns (with both
    # orders each reviewer leads half the discussions, so both models speak in every turn)
    assert created == 3 * 2

    def rows(frame):  # a discussion's reviewers give several verdicts on one key, numbered in commit order
        return frame.drop(columns="vote").astype(str).sort_values(list(frame.columns.drop("vote")))

    assert rows(store.runs.judgments(batch["run_id"])).reset_index(drop=True).equals(
        rows(live_store.runs.judgments(live.run_id)).reset_index(drop=True))


# -------------------------------------------------------------------- transient errors


def test_lost_replies_and_server_errors_never_make_a_second_file_or_batch(tmp_path, keys, monkeypatch):
    db, store = _study(tmp_path, "errors")
    with FakeLLMServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        server.inject_batch_error("POST /v1/files", "lost")  # uploaded, but the reply is a 500
        server.inject_batch_error("POST /v1/batches", 503, "lost")  # refused once, then created with a lost reply
        server.inject_batch_error("GET /v1/batches/{id}", 500, 429)
        server.inject_batch_error("GET /v1/files/{id}/content", 502)
        lines = []
        result = run_batch_sync(ReviewJob("b", [parse_judge_spec(SPECS["openai"])]), store, poll_s=0.05,
                                on_status=lines.append)
        counts, files, batches = dict(server.endpoint_counts), server.files_uploaded(), server.batches_created()
        answered = _answered(server)
    assert result.status == "finished" and result.done == 18 and result.calls == 18
    assert (files, batches) == (1, 1)  # one file and one batch, whatever the replies said
    assert counts["POST /v1/files"] == 1 and counts["POST /v1/batches"] == 2  # the lost create was found, not resent
    assert len(answered) == 18 and max(answered.values()) == 1
    assert sum("looking for what it made" in line for line in lines) == 3


def test_a_refused_key_stops_the_batch_run_with_the_variable_named(tmp_path, keys, monkeypatch):
    db, store = _study(tmp_path, "refused")
    with FakeLLMServer() as server:
        server.inject_batch_error("POST /v1/batches", 401)
        refused = _cli(db, SPECS["openai"], _env(server))
        assert server.batches_created() == 0
        again = _cli(db, SPECS["openai"], _env(server))  # the key works now: the batch goes out once
        batches, files = server.batches_created(), server.files_uploaded()
    assert refused.returncode == 2
    assert "OPENAI_API_KEY" in refused.stderr and KEYS["OPENAI_API_KEY"] not in refused.stderr
    assert again.returncode == 0, again.stderr
    assert (batches, files) == (1, 1) and len(store.verdicts.table("b")) == 18


def test_a_large_run_is_cut_into_batches_within_the_limits(tmp_path, keys, monkeypatch):
    db, store = _study(tmp_path, "split")
    with FakeLLMServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        result = run_batch_sync(ReviewJob("b", [parse_judge_spec(SPECS["anthropic"])]), store, poll_s=0.05,
                                max_requests=7)
        answered, created = _answered(server), server.batches_created()
    assert result.status == "finished" and result.done == 18 and result.calls == 18
    assert created == 3 and [b["n_requests"] for b in store.runs.batches(result.run_id)] == [7, 7, 4]
    assert len(answered) == 18 and max(answered.values()) == 1


# ------------------------------------------------------------------- malformed result lines

BAD_LINE = 5  # 0-based: the 6th line of the results
FILE = {"openai": "output file", "anthropic": "results"}


def _cli_in_process(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _review(db, provider: str, *extra: str) -> list[str]:
    return ["review", "--study", "b", "--db", str(db), "--reviewer", SPECS[provider], "--batch", "--poll-seconds",
            "0.05", "--no-progress", *extra]


@pytest.mark.parametrize("provider, edit, backend", [
    ("openai", "not_json", "sqlite"), ("openai", "no_reply", "sqlite"), ("anthropic", "not_json", "sqlite"),
    ("anthropic", "no_reply", "sqlite"), ("openai", "no_reply", "postgresql")])
def test_a_bad_result_line_fails_its_own_item_and_every_good_line_is_stored(tmp_path, provider, edit, backend, keys,
                                                                            monkeypatch, capsys, request):
    location = request.getfixturevalue("pg_url") if backend == "postgresql" else None
    db, store = _study(tmp_path, "bad-line", location=location)
    n = 18
    with FakeLLMServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        server.inject_batch_output(**{edit: BAD_LINE})
        code, out, err = _cli_in_process(capsys, *_review(db, provider))
        print(f"first run: exit {code}\nstdout: {out}\nstderr: {err}")
        run_id = ReviewJob("b", [parse_judge_spec(SPECS[provider])]).run_id()
        [batch] = store.runs.batches(run_id)
        where = f"line {BAD_LINE + 1} of the {FILE[provider]} of batch {batch['batch_id']}"
        # the bad line fails its own item, named by its line; the 17 others are stored
        assert code == 1, err
        assert "Traceback" not in err and where in err
        assert f"first failure: " in out and where in out
        accounting = store.runs.accounting(run_id)
        assert (accounting["verdicts"], accounting["calls_paid"], accounting["items_failed"]) == (n - 1, n - 1, 1)
        assert accounting["unaccounted"] == 0
        assert (batch["n_succeeded"], batch["n_failed"]) == (n - 1, 1)
        code, listed, _ = _cli_in_process(capsys, "runs", "--study", "b", "--db", str(db))
        assert code == 0 and f"{n - 1} answered, 1 without a result" in listed
        assert f"{n - 1:,} verdicts stored" in listed and "1 failed items" in listed

        # the same command with --run-id resubmits the bad line alone, and the run finishes
        code, out, err = _cli_in_process(capsys, *_review(db, provider, "--run-id", run_id))
        print(f"resume: exit {code}\nstdout: {out}\nstderr: {err}")
        assert code == 0, err
        batches = store.runs.batches(run_id)
        answered = _answered(server, {b["batch_id"] for b in batches[1:]})
    assert [b["n_requests"] for b in batches] == [n, 1]
    assert sum(answered.values()) == 1  # only the bad line was sent again
    accounting = store.runs.accounting(run_id)
    assert (accounting["verdicts"], accounting["calls_paid"], accounting["items_failed"]) == (n, n, 0)
    assert store.runs.get(run_id)["status"] == "finished"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_result_line_with_an_unknown_custom_id_is_reported_and_ignored(tmp_path, provider, keys, monkeypatch,
                                                                        capsys):
    db, store = _study(tmp_path, "unknown-id")
    n = 18
    with FakeLLMServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        server.inject_batch_output(unknown_id=BAD_LINE)
        code, out, err = _cli_in_process(capsys, *_review(db, provider))
        print(f"exit {code}\nstdout: {out}\nstderr: {err}")
        run_id = ReviewJob("b", [parse_judge_spec(SPECS[provider])]).run_id()
        [batch] = store.runs.batches(run_id)
    assert code == 0, err
    line = f"line {BAD_LINE + 2} of the {FILE[provider]} of batch {batch['batch_id']}"
    assert line in err and f"'unknown-{BAD_LINE}'" in err and "ignored" in err
    accounting = store.runs.accounting(run_id)
    assert (accounting["verdicts"], accounting["calls_paid"], accounting["items_failed"]) == (n, n, 0)
    assert (batch["n_succeeded"], batch["n_failed"]) == (n, 0)
    assert store.runs.get(run_id)["status"] == "finished"
