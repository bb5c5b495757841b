"""Issue 8, "Paid results silently dropped": every paid call ends as a stored verdict or a failed item.

Each test drives the command line a user types (``peercore review|debate|import|export``)
against the local wire-format server (real ``openai`` SDK over HTTP on 127.0.0.1) and
counts requests on the server side. On main before this change, a second review of the
same pairs with another method paid for every call and stored none (INSERT OR IGNORE on
a key without the method), a review under an imported judge's name stored nothing, a
refused resume flipped the finished run to "failed", and ``?temperature=0.9`` with the
verdict method was sent at 0.0.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from fakes.llm_server import FakeLLMServer, default_reply
from integration.helpers import make_review_study
from peercore.cli import main
from peercore.store import Store

QUESTIONS, MODELS = 3, 3  # 3 questions x 6 ordered pairs = 18 reviews per configuration


@pytest.fixture
def setup(tmp_path, monkeypatch):
    db = tmp_path / "record.sqlite"
    store = Store(db)
    make_review_study(store, name="s", questions=QUESTIONS, models=MODELS)
    with FakeLLMServer(seed=3) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret-0000")
        yield store, server, str(db)


def _cli(db: str, *args: str) -> int:
    return main([*args, "--db", db, "--no-progress"] if args[0] in ("review", "debate", "discuss") else [*args, "--db", db])


def _stored(store: Store) -> pd.DataFrame:
    return store.verdicts.table("s", include_invalid=True)


@pytest.mark.parametrize("second", [
    ["--method", "logprobs"],
    ["--method", "auto"],
    ["--template", "prd_review_coding"],
    ["--max-tokens", "64"],
    ["--method", "samples", "--samples", "3"],
    ["--method", "samples", "--samples", "3", "--temperature", "0.7"],
])
def test_a_second_review_with_another_configuration_keeps_both_results(setup, capsys, second):
    store, server, db = setup
    assert _cli(db, "review", "--study", "s", "--reviewer", "openai:gpt-4o", "--method", "verdict") == 0
    first = server.requests_total
    assert first == 18 and len(_stored(store)) == 18
    assert _cli(db, "review", "--study", "s", "--reviewer", "openai:gpt-4o", "--method", "verdict", *second) == 0
    out = capsys.readouterr().out
    stored = _stored(store)
    # Server-side request count equals stored verdicts (K samples make one verdict).
    calls_per_verdict = 3 if "samples" in second else 1
    assert server.requests_total == first + 18 * calls_per_verdict
    assert len(stored) == 36
    names = sorted(stored["judge"].unique())
    assert names[0] == "openai:gpt-4o" and names[1].startswith("openai:gpt-4o~")
    assert f"stored as {names[1]!r}" in out
    assert f"paid calls: {18 * calls_per_verdict} calls paid by this run -> 18 verdicts stored" in out
    # The first judge's recorded configuration was not rewritten by the second run.
    assert main(["runs", "--study", "s", "--db", db, "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert sum(r["accounting"]["calls_paid"] for r in runs) == server.requests_total
    assert sum(r["accounting"]["verdicts"] for r in runs) == 36
    judges = store.judges.table("s").set_index("name")
    assert judges.loc["openai:gpt-4o", "settings"]["method"] == "verdict"
    assert judges.loc["openai:gpt-4o", "settings"]["template"] == "prd_review"
    assert judges.loc[names[1], "origin"] == "run"


def test_the_same_configuration_again_pays_nothing_and_finds_its_name(setup, capsys):
    store, server, db = setup
    _cli(db, "review", "--study", "s", "--reviewer", "openai:gpt-4o", "--method", "logprobs")
    _cli(db, "review", "--study", "s", "--reviewer", "openai:gpt-4o", "--method", "verdict")
    paid = server.requests_total
    assert _cli(db, "review", "--study", "s", "--reviewer", "openai:gpt-4o", "--method", "verdict") == 0
    assert server.requests_total == paid and len(_stored(store)) == 36
    assert sorted(store.judges.table("s")["name"]) == ["openai:gpt-4o", "openai:gpt-4o~verdict"]


def test_a_review_under_an_imported_judges_name_gets_its_own_name(setup, tmp_path, capsys):
    store, server, db = setup
    imported = pd.DataFrame({"question_id": ["q000", "q001"], "model_a": ["model-0", "model-1"],
                             "model_b": ["model-1", "model-2"], "judge": ["openai:gpt-4o"] * 2,
                             "winner": ["model_a", "tie"]})
    path = tmp_path / "imported.csv"
    imported.to_csv(path, index=False)
    assert main(["import", str(path), "--study", "s", "--db", db]) == 0
    assert _cli(db, "review", "--study", "s", "--reviewer", "openai:gpt-4o") == 0
    stored = _stored(store)
    assert server.requests_total == 18 == int((stored["judge"] != "openai:gpt-4o").sum())
    assert int((stored["judge"] == "openai:gpt-4o").sum()) == 2  # the imported verdicts, untouched
    # And an import can never write under a run judge's name.
    run_judge = sorted(set(stored["judge"]) - {"openai:gpt-4o"})[0]
    path2 = tmp_path / "under_run_name.csv"
    imported.assign(judge=run_judge, question_id=["q900", "q901"]).to_csv(path2, index=False)
    before = len(stored)
    assert main(["import", str(path2), "--study", "s", "--db", db]) == 2
    err = capsys.readouterr().err
    assert f"judge {run_judge!r} is a judge that PeerBoard's runs produced" in err
    assert len(_stored(store)) == before


def test_forcing_a_taken_name_is_refused_before_any_call(setup, capsys):
    store, server, db = setup
    _cli(db, "review", "--study", "s", "--reviewer", "mine=openai:gpt-4o", "--method", "verdict")
    paid = server.requests_total
    assert _cli(db, "review", "--study", "s", "--reviewer", "mine=openai:gpt-4o", "--method", "logprobs") == 2
    err = capsys.readouterr().err
    assert "judge 'mine' is already in study 's' with another configuration" in err
    assert "method 'verdict' -> 'logprobs'" in err and "Nothing was run" in err
    assert server.requests_total == paid  # refused before spending
    # --dry-run says so too, and spends nothing.
    assert _cli(db, "review", "--study", "s", "--reviewer", "mine=openai:gpt-4o", "--method", "logprobs",
                "--dry-run") == 2


def test_a_refused_resume_leaves_the_finished_run_as_it_was(setup, capsys):
    store, server, db = setup
    assert _cli(db, "review", "--study", "s", "--reviewer", "openai:gpt-4o", "--method", "verdict") == 0
    run_id = store.runs.table("s")["id"].iloc[0]
    paid = server.requests_total
    code = _cli(db, "review", "--study", "s", "--reviewer", "openai:gpt-4o", "--method", "logprobs", "--run-id", run_id)
    assert code == 2
    assert "left as it was and nothing was spent" in capsys.readouterr().err
    run = store.runs.get(run_id)
    assert run["status"] == "finished" and run["error"] is None and run["n_items"] == 18
    assert server.requests_total == paid


def test_a_reviewers_temperature_is_sent_with_the_verdict_method_and_recorded(setup):
    store, server, db = setup
    assert _cli(db, "review", "--study", "s", "--reviewer", "openai:gpt-4o?temperature=0.9", "--method", "verdict") == 0
    sent = {entry["body"]["temperature"] for entry in server.request_log}
    assert sent == {0.9}
    settings = store.judges.table("s").set_index("name").loc["openai:gpt-4o", "settings"]
    assert settings["temperature"] == 0.9 and settings["method"] == "verdict"


def test_a_verdict_that_would_contradict_a_stored_one_fails_its_item_not_silently(setup, capsys):
    # The cache gives the same reply to the same request; here the stored verdict was changed by
    # hand (as a conflicting import under the same key would have been) so the run's verdict
    # differs from it: the item fails with the reason, nothing is dropped silently.
    store, server, db = setup
    _cli(db, "review", "--study", "s", "--reviewer", "openai:gpt-4o", "--method", "verdict", "--question", "q000")
    store.connect().execute("UPDATE verdicts SET winner = 2, rationale = 'edited'")
    store.connect().execute("DELETE FROM run_items")
    store.connect().execute("UPDATE runs SET n_done = 0")
    capsys.readouterr()
    code = _cli(db, "review", "--study", "s", "--reviewer", "openai:gpt-4o", "--method", "verdict",
                "--question", "q000")
    out = capsys.readouterr().out
    assert code == 1 and "failed: 0/6 items" in out
    assert "another verdict is already stored" in out


@pytest.mark.slow
def test_a_write_lock_held_for_35_seconds_mid_run_delays_it_and_loses_nothing(tmp_path, monkeypatch):
    # On main, SQLite's 30 s busy timeout expired inside the runner: the run died with paid
    # responses in hand. Here another process takes the write lock for 35 s once the run has
    # stored its first verdicts; the calls go on being paid meanwhile.
    db = tmp_path / "locked.sqlite"
    store = Store(db)
    make_review_study(store, name="s", questions=QUESTIONS, models=MODELS)
    with FakeLLMServer(seed=3, latency_s=0.3) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret-0000")
        outcome: dict = {}
        runner = threading.Thread(target=lambda: outcome.update(code=main([
            "review", "--study", "s", "--db", str(db), "--reviewer", "openai:gpt-4o", "--method", "verdict",
            "--concurrency", "2", "--no-progress"])))
        runner.start()
        reader = Store(db)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(reader.verdicts.table("s")) == 0:
            time.sleep(0.05)
        holder = subprocess.Popen([sys.executable, "-c", (
            "import sqlite3, time\n"
            f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
            "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); time.sleep(35); c.execute('COMMIT')\n")],
            stdout=subprocess.PIPE, text=True)
        assert holder.stdout.readline().strip() == "locked"
        locked_at = time.monotonic()
        runner.join(120)
        holder.wait(60)
    assert outcome["code"] == 0
    assert time.monotonic() - locked_at > 30  # it waited for the lock instead of dying
    stored = store.verdicts.table("s", include_invalid=True)
    assert server.requests_total == 18 == len(stored)
    assert store.runs.accounting(store.runs.table("s")["id"].iloc[0])["unaccounted"] == 0


# ------------------------------------------------------------------------------ debates


def test_a_debate_rerun_with_another_configuration_is_a_new_panel_with_its_own_gold(setup, capsys):
    store, server, db = setup
    agents = ["--agent", "a=openai:gpt-4o", "--agent", "b=openai:gpt-4o-mini", "--agent", "c=openai:gpt-4.1"]
    assert _cli(db, "debate", "--study", "s", *agents, "--max-rounds", "2") == 0
    assert _cli(db, "debate", "--study", "s", *agents, "--max-rounds", "2", "--seed", "7") == 0
    debates = store.debates.table("s")
    panels = sorted(debates["panel"].unique())
    assert len(panels) == 2 and panels[0] == "debate:scaleeval" and panels[1].startswith("debate:scaleeval~")
    stored = _stored(store)
    for panel in panels:  # each panel's consensus verdicts are its own debates' consensus
        agreed = debates[(debates["panel"] == panel) & (debates["status"] == "agreed")]
        rows = stored[stored["judge"] == panel]
        assert len(rows) == len(agreed)
    # every call paid ended in a stored debate (the second panel reused 18 identical first-round calls)
    accounts = [store.runs.accounting(run_id) for run_id in store.runs.table("s")["id"]]
    assert server.requests_total == sum(a["calls_paid"] for a in accounts) == 36
    assert all(a["unaccounted"] == 0 and a["items_failed"] == 0 and a["debates"] == 9 for a in accounts)
    assert panels[1] == "debate:scaleeval~layout_seed=7"


def test_forcing_a_panel_name_another_configuration_holds_is_refused(setup, capsys):
    store, server, db = setup
    agents = ["--agent", "a=openai:gpt-4o", "--agent", "b=openai:gpt-4o-mini"]
    assert _cli(db, "debate", "--study", "s", *agents, "--max-rounds", "1", "--question", "q000") == 0
    paid = server.requests_total
    code = _cli(db, "debate", "--study", "s", *agents, "--max-rounds", "2", "--name", "scaleeval", "--question", "q000")
    assert code == 2 and server.requests_total == paid
    assert "judge 'debate:scaleeval' is already in study 's' with another configuration" in capsys.readouterr().err


# --------------------------------------------------------------------------------- keys


def test_a_servers_key_comes_from_a_named_variable_and_never_reaches_disk_or_output(tmp_path, monkeypatch, capsys,
                                                                                    caplog):
    marker = "sk-MARKER-" + hashlib.sha256(str(tmp_path).encode()).hexdigest()[:24]
    db = tmp_path / "keys.sqlite"
    store = Store(db)
    make_review_study(store, name="s", questions=2, models=2)

    def echo(body: dict, api: str) -> str:  # a reply that repeats the key it was called with
        return default_reply(body, api).replace("both answers", f"(called with key {marker}) both answers")

    log = tmp_path / "run.log"
    caplog.set_level("DEBUG")
    with FakeLLMServer(reply=echo) as server:
        server.inject("500", "429")  # retries are logged too
        monkeypatch.setenv("MY_SERVER_KEY", marker)
        spec = f"compatible:judge@{server.openai_base_url}?api_key_env=MY_SERVER_KEY"
        code = main(["review", "--study", "s", "--db", str(db), "--reviewer", spec, "--method", "verdict",
                     "--no-progress"])
        assert code == 0
        assert {e["key_sha256"] for e in server.request_log} == {hashlib.sha256(marker.encode()).hexdigest()}
        # a key written into the URL is refused without being repeated
        code = main(["review", "--study", "s", "--db", str(db), "--reviewer",
                     f"compatible:judge@{server.openai_base_url}?api_key={marker}", "--no-progress"])
        assert code == 2
    out = capsys.readouterr()
    export = tmp_path / "export.csv"
    assert main(["export", "--study", "s", "--what", "judgments", "--format", "csv", "--output", str(export),
                 "--db", str(db)]) == 0
    assert "***" in export.read_text()  # the echoed key was scrubbed, the reply kept
    log.write_text(out.out + out.err + "\n".join(r.getMessage() for r in caplog.records))
    assert any("attempt 1 failed" in r.getMessage() for r in caplog.records)  # the log was captured
    for path in [db, Path(f"{db}-wal"), export, log]:
        if path.exists():
            assert marker.encode() not in path.read_bytes(), path
    assert marker not in json.dumps(store.runs.table("s").to_dict())
