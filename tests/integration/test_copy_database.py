"""``peercore copy SOURCE TARGET``: a team moves its SQLite file into PostgreSQL, or back (issue 13).

A study's runs, the responses they paid for, its debates and the team's adjudications
live only in the store. The copy must carry every row across with the same ids (a resume
after the move pays nothing, a rank gives the same table), keep going afterwards (new
imports and runs add rows after the copied ids), and be all or nothing: a non-empty
target or a killed copy leaves the target as it was. Each test drives the command a user
types, against a SQLite file built with the commands too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakes.llm_server import FakeLLMServer
from integration.helpers import make_review_study
from peercore.cli import main
from peercore.store import Store
from peercore.store.copy import database_tables
from peercore.app import Study

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "c0py-s3cret-pw"
KEY = "sk-test-copy-key-0000"


def with_password(url: str) -> str:
    return url.replace("peerboard@", f"peerboard:{PASSWORD}@", 1)


def table_rows(location) -> dict[str, list]:
    """Every row of every table (PostgreSQL's hidden rowid left out), sorted: what a copy must carry."""
    store = Store(location, create=False)
    try:
        rows = {}
        for name, table in database_tables(store).items():
            listed = ", ".join(f'"{c}"' for c in sorted(table["columns"]))
            rows[name] = sorted((tuple(r) for r in store.connect().execute(f'SELECT {listed} FROM "{name}"')), key=repr)
        return rows
    finally:
        store.close()


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A SQLite file as a team has it: two imported studies, a paid review run, debates, decisions, a lease."""
    folder = tmp_path_factory.mktemp("copy")
    db = str(folder / "team.sqlite")
    assert main(["import", str(REPO / "sample_data" / "prd_vicuna80"), "--study", "prd", "--db", db]) == 0
    assert main(["import", str(REPO / "sample_data" / "sample-panel.jsonl"), "--study", "panel", "--db", db]) == 0
    make_review_study(Store(db), name="reviews", questions=3, models=3)
    with FakeLLMServer(seed=5) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": KEY}
        review = subprocess.run([sys.executable, "-m", "peercore", "review", "--study", "reviews", "--db", db,
                                 "--reviewer", "openai:gpt-4o-mini", "--no-progress"], env=env, capture_output=True,
                                text=True, timeout=120)
        assert review.returncode == 0, review.stderr
        paid = server.endpoint_counts["POST /v1/chat/completions"]
    assert paid == 18
    for annotator in ("alice", "bob"):
        assert main(["adjudicate", "--study", "panel", "--annotator", annotator, "--next", "--db", db]) == 0
    store = Store(db)
    debate = int(store.debates.leases("panel").set_index("annotator").loc["alice", "debate_id"])
    assert main(["adjudicate", "--study", "panel", "--annotator", "alice", "--decide", str(debate), "model_a",
                 "--note", "clearer", "--db", db]) == 0
    return {"db": db, "paid": paid}


def test_a_sqlite_file_copied_into_postgresql_keeps_every_row_and_every_number(source, pg_url, capsys):
    # Every table row for row; the same Peer Rank table (PRD Table 2, Section 3.1) and Bradley-Terry
    # (Chatbot Arena) from the copy; the password masked in what the command prints.
    target = with_password(pg_url)
    capsys.readouterr()
    assert main(["copy", source["db"], target]) == 0
    out = capsys.readouterr().out
    assert PASSWORD not in out and "peerboard:***@" in out and "copied 3 studies (panel, prd, reviews)" in out
    assert table_rows(source["db"]) == table_rows(target)
    copied = dict(line.split()[:2] for line in out.splitlines()[1:])
    assert copied["verdicts"] == "9,781" and copied["llm_calls"] == "18" and copied["adjudications"] == "1"
    for argv in (["--study", "prd", "--kind", "llm", "--method", "winrate", "--peer-weights", "prd"],
                 ["--study", "reviews", "--method", "bt", "--bootstrap", "20", "--seed", "2"]):
        payloads = []
        for db in (source["db"], target):
            assert main(["rank", *argv, "--db", db, "--format", "json"]) == 0
            payloads.append(json.loads(capsys.readouterr().out))
        assert payloads[0] == payloads[1]


def test_after_the_move_a_resume_pays_nothing_and_new_work_lands_after_the_copied_ids(source, pg_url, tmp_path,
                                                                                     monkeypatch, capsys):
    # The cached responses came across: the same review against the copy makes 0 requests. New rows
    # (an import, a new study, a decision) get ids after the copied ones (PostgreSQL identities moved on).
    target = with_password(pg_url)
    assert main(["copy", source["db"], target]) == 0
    with FakeLLMServer(seed=5) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        assert main(["review", "--study", "reviews", "--db", target, "--reviewer", "openai:gpt-4o-mini",
                     "--no-progress"]) == 0
        assert server.endpoint_counts.get("POST /v1/chat/completions", 0) == 0
    store = Store(target)
    before = {name: store.connect().execute(f"SELECT MAX(id) FROM {name}").fetchone()[0]
              for name in ("studies", "imports", "verdicts")}
    extra = tmp_path / "more.csv"
    extra.write_text("question_id,model_a,model_b,judge,winner\nq1,a,b,late-judge,model_a\nq2,b,a,late-judge,tie\n")
    assert main(["import", str(extra), "--study", "after-the-move", "--db", target]) == 0
    after = {name: store.connect().execute(f"SELECT MAX(id) FROM {name}").fetchone()[0]
             for name in ("studies", "imports", "verdicts")}
    assert all(after[name] > before[name] for name in before), (before, after)
    assert Study(store, "after-the-move").counts()["judgments"] == 2
    bob = int(store.debates.leases("panel").set_index("annotator").loc["bob", "debate_id"])
    assert main(["adjudicate", "--study", "panel", "--annotator", "bob", "--decide", str(bob), "tie",
                 "--db", target]) == 0
    assert sorted(store.debates.adjudications("panel")["annotator"]) == ["alice", "bob"]
    assert KEY not in json.dumps({k: [list(map(str, r)) for r in v] for k, v in table_rows(target).items()})


def test_postgresql_copied_back_into_a_file_is_the_same_database(source, pg_url, tmp_path, capsys):
    # The way back (a backup, or leaving the team store): PostgreSQL -> a new SQLite file, row for row.
    assert main(["copy", source["db"], pg_url]) == 0
    back = str(tmp_path / "back.sqlite")
    assert main(["copy", pg_url, back]) == 0
    assert table_rows(back) == table_rows(source["db"])
    assert Store(back).runs.table("reviews")["id"].tolist() == Store(source["db"]).runs.table("reviews")["id"].tolist()


def test_a_target_that_holds_data_is_refused_and_left_as_it_was(source, pg_url, tmp_path, capsys):
    target = with_password(pg_url)
    small = tmp_path / "one.csv"
    small.write_text("question_id,model_a,model_b,judge,winner\nq1,a,b,j,model_a\n")
    assert main(["import", str(small), "--study", "theirs", "--db", target]) == 0
    before = table_rows(target)
    capsys.readouterr()
    assert main(["copy", source["db"], target]) == 2
    err = capsys.readouterr().err
    assert "already holds data (tables studies," in err and "copy into an empty database" in err
    assert PASSWORD not in err and err.count("\n") == 1
    assert table_rows(target) == before
    assert main(["copy", source["db"], source["db"]]) == 2
    assert "the source and the target are the same database" in capsys.readouterr().err
    assert main(["copy", str(tmp_path / "missing.sqlite"), str(tmp_path / "new.sqlite")]) == 2
    assert "no PeerBoard database at" in capsys.readouterr().err and not (tmp_path / "new.sqlite").exists()


def test_a_copy_killed_before_its_commit_leaves_the_target_empty(source, pg_url, tmp_path):
    # All or nothing: SIGKILL while the one write transaction is open (test hook: pause before COMMIT),
    # then the target holds no row; the same command again copies everything.
    target = with_password(pg_url)
    Store(target).close()  # its tables made beforehand: the one transaction the child pauses in is the copy's
    env = {**os.environ, "PEERBOARD_TEST_PAUSE_BEFORE_COMMIT": "30", "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-m", "peercore", "copy", source["db"], target], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        said = ""
        while "pausing" not in said and time.monotonic() < deadline:
            said += child.stderr.readline()
        assert "pausing" in said, said
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
        child.stdout.close()
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    assert all(not rows for rows in table_rows(target).values())
    assert main(["copy", source["db"], target]) == 0
    assert table_rows(target) == table_rows(source["db"])
