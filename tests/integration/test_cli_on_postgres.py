"""The whole command line on PostgreSQL (issue 13, "Teams and scale"), beside a SQLite file.

``--db postgresql://user:password@host/db`` and ``$PEERBOARD_DB`` run every command a user
types: ``peercore import``, ``rank``, ``export``, ``review``, ``runs``, ``adjudicate`` and
``app``. Each test drives :func:`peercore.cli.main` in-process (what ``python -m peercore``
calls), and the imports of the bundled sample run as real ``python -m peercore``
subprocesses with only ``$PEERBOARD_DB`` set. Both backends get the same commands; the
numbers they print must be identical, and the URL's password (trust authentication: the
throwaway cluster accepts it and ignores it) and the LLM API key must never reach an
output, an exported file or a table.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

import pandas as pd
import pytest

from fakes.llm_server import FakeLLMServer, default_reply
from integration.helpers import make_review_study
from peerboard_testing import shared_data_dir
from pg_cluster import closing_pg_connections
from peercore.cli import main
from peercore.store import Store
from peercore.app import Study

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_data"
PRD = SAMPLE / "prd_vicuna80"
CORPUS = REPO / "tests" / "corpus"
EXPECTED_PRD = shared_data_dir() / "prd_vicuna80" / "expected_results.json"  # PRD notebook outputs
PASSWORD = "s3cret-pw-Q7x9"
API_KEY = "sk-test-cli-on-pg-4242-not-a-secret"
BACKENDS = ("sqlite", "postgresql")
PRD_NAMES = {"gpt4": "gpt-4", "gpt35": "gpt-3.5", "bard": "bard", "claude": "claude", "vicuna-13b": "vicuna"}


# ------------------------------------------------------------------------- helpers


def with_password(url: str) -> str:
    """``url`` (``postgresql://peerboard@host:port/db?...``) with :data:`PASSWORD` in it."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{parts.username}:{PASSWORD}@{parts.hostname}:{parts.port}"))


def schema_of(url: str) -> str:
    """The schema of a ``new_pg_url`` URL (``?options=-csearch_path=<schema>``)."""
    return parse_qs(urlsplit(url).query)["options"][0].split("=", 1)[1]


@pytest.fixture(autouse=True)
def _pg_connections_closed():
    with closing_pg_connections():
        yield


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """``peercore ARGS`` in-process: exit status, stdout, stderr."""
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def peercore(*args: str, db: str | None, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m peercore ARGS`` in a child process, the database given only by ``$PEERBOARD_DB``."""
    env = {k: v for k, v in os.environ.items() if k != "PEERBOARD_DB"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    env["XDG_DATA_HOME"] = str(cwd / "xdg")  # never the user's own default database
    if db is not None:
        env["PEERBOARD_DB"] = db
    return subprocess.run([sys.executable, "-m", "peercore", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def dump(location: str) -> str:
    """Every row of every table of a database as text: the SQLite file's SQL dump, or each row of the schema."""
    if not location.startswith("postgresql://"):
        with contextlib.closing(sqlite3.connect(location)) as connection:
            return "\n".join(connection.iterdump())
    import psycopg

    schema = schema_of(location)
    lines = []
    with psycopg.connect(location.split("?", 1)[0], autocommit=True) as connection:
        tables = [r[0] for r in connection.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY table_name",
            (schema,)).fetchall()]
        assert len(tables) > 10, tables
        for table in tables:
            lines += [f"{table}: {row[0]}" for row in connection.execute(
                f'SELECT t::text FROM "{schema}"."{table}" t ORDER BY 1').fetchall()]
    return "\n".join(lines)


def fingerprint(url: str) -> dict[str, tuple[int, str]]:
    """Each table of a PostgreSQL schema: (rows, MD5 of all its rows as text), computed by the server."""
    import psycopg

    schema = schema_of(url)
    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as connection:
        tables = [r[0] for r in connection.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)).fetchall()]
        return {table: tuple(connection.execute(
            f"SELECT COUNT(*), md5(COALESCE(string_agg(t::text, E'\\n' ORDER BY t::text), '')) "
            f'FROM "{schema}"."{table}" t').fetchone()) for table in tables}


def summaries(location: str) -> dict:
    with contextlib.closing(Store(location, create=False)) as store:
        return {name: Study(store, name).counts() for name in store.studies.table()["name"]}


# ------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def imported(tmp_path_factory, new_pg_url):
    """The bundled sample (``peercore import sample_data``, a subprocess with ``$PEERBOARD_DB`` only) and
    PRD Vicuna80 (``peercore import sample_data/prd_vicuna80 --db ...``, in-process) on each backend.

    A folder import reads its subfolders too, so study "sample" also holds the PRD and TopicalChat
    bundles (11,815 judgments, 12 debates). Returns ``(locations, outputs)``: backend -> database (a file path, a URL with a password),
    backend -> (sample import's stdout + stderr, PRD import's stdout + stderr).
    """
    folder = tmp_path_factory.mktemp("cli_on_pg")
    locations = {"sqlite": str(folder / "pb.sqlite"), "postgresql": with_password(new_pg_url())}
    outputs = {}
    with closing_pg_connections(), pytest.MonkeyPatch.context() as patch:
        patch.delenv("PEERBOARD_DB", raising=False)
        for backend, location in locations.items():
            child = peercore("import", str(SAMPLE), "--study", "sample", db=location, cwd=folder)
            assert child.returncode == 0, child.stderr
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(["import", str(PRD), "--study", "prd", "--db", location])
            assert code == 0, err.getvalue()
            outputs[backend] = (child.stdout + child.stderr, out.getvalue() + err.getvalue())
    return locations, outputs


# ------------------------------------------------------- 1. import, then rank: same numbers


@pytest.mark.parametrize("backend", BACKENDS)
def test_import_prints_the_database_without_its_password(imported, backend):
    # `peercore import` (subprocess, $PEERBOARD_DB only; and in-process with --db) says where it wrote:
    # the file, or the URL with *** for its password; never the password itself.
    locations, outputs = imported
    for text in outputs[backend]:
        assert PASSWORD not in text
        assert "judgments" in text and "added" in text
        line = [ln for ln in text.splitlines() if ln.strip().startswith("database:")]
        assert len(line) == 1, text
        if backend == "postgresql":
            assert line[0].strip().startswith("database: postgresql://peerboard:***@127.0.0.1:")
            assert "search_path" in line[0]
        else:
            assert line[0].strip() == f"database: {locations['sqlite']}"
    prd = outputs[backend][1]
    assert "9,760 added" in prd and "400 added" in prd  # PRD: 8,000 reviews + 1,760 human votes; 80 x 5 answers


def test_both_backends_hold_the_same_studies_after_the_cli_imports(imported):
    # What the two imports stored, counted by the store: identical on both backends.
    locations, _ = imported
    here, there = summaries(locations["sqlite"]), summaries(locations["postgresql"])
    assert set(here) == {"sample", "prd"} and here == there
    assert there["prd"]["judgments"] == 9760 and there["prd"]["human_votes"] == 1760
    assert there["sample"]["debates"] == 12


def test_prd_peer_rank_win_rates_are_identical_on_both_backends(imported, capsys):
    # PRD (Li, Patel & Du 2023) Table 2 / Section 3 "Peer Rank": the reviewers' weights and the
    # weighted win rates, from `peercore rank --study prd --method winrate --peer-weights prd
    # --format json`: the same JSON text on SQLite and on PostgreSQL, and (when the shared data
    # is there) the PRD notebook's numbers.
    locations, _ = imported
    printed = {}
    for backend, location in locations.items():
        code, out, err = cli(capsys, "rank", "--study", "prd", "--db", location, "--kind", "llm", "--method",
                             "winrate", "--peer-weights", "prd", "--bootstrap", "0", "--format", "json")
        assert code == 0, err
        printed[backend] = out
    assert printed["sqlite"] == printed["postgresql"]
    payload = json.loads(printed["postgresql"])
    scores = {PRD_NAMES[r["model"]]: r["score"] for r in payload["leaderboard"]}
    weights = {PRD_NAMES[k]: v for k, v in payload["weights"].items()}
    assert sorted(scores, key=scores.get, reverse=True) == ["gpt-4", "claude", "vicuna", "gpt-3.5", "bard"]
    if EXPECTED_PRD.is_file():
        expected = json.loads(EXPECTED_PRD.read_text())
        assert scores == pytest.approx(expected["winrate_all_weighted"], abs=1e-5)
        assert weights == pytest.approx(expected["pr_reviewer_weights_winrate_5iter"], abs=1e-5)


def test_bradley_terry_with_a_seeded_bootstrap_is_identical_on_both_backends(imported, capsys):
    # Bradley-Terry on the Elo scale (Chatbot Arena) with a 30-round bootstrap at a fixed seed,
    # over the sample study and over PRD with Peer Rank weights (PRD Section 3): byte-identical JSON.
    locations, _ = imported
    for args in (["--study", "sample", "--method", "bt", "--bootstrap", "30", "--seed", "11"],
                 ["--study", "prd", "--method", "bt", "--bootstrap", "30", "--seed", "5", "--peer-weights", "prd",
                  "--weights-from", "bt"]):
        printed = {}
        for backend, location in locations.items():
            code, out, err = cli(capsys, "rank", *args, "--db", location, "--format", "json")
            assert code == 0, err
            printed[backend] = out
        assert printed["sqlite"] == printed["postgresql"], args
        board = json.loads(printed["postgresql"])["leaderboard"]
        assert len(board) >= 3 and all(r["ci_low"] is not None and r["ci_low"] <= r["ci_high"] for r in board)


# ------------------------------------------------------------------------- 2. export


@pytest.mark.parametrize("what, fmt, extra", [
    ("judgments", "csv", []),
    ("judgments", "jsonl", ["--judge", "human:"]),
    ("leaderboard", "csv", ["--method", "winrate", "--peer-weights", "prd"]),
])
def test_export_writes_the_same_bytes_on_both_backends(imported, tmp_path, capsys, what, fmt, extra):
    # `peercore export`: the same file from SQLite and from PostgreSQL, and no password in it.
    locations, _ = imported
    files = {}
    for backend, location in locations.items():
        path = tmp_path / f"{backend}.{fmt}"
        code, out, err = cli(capsys, "export", "--study", "prd", "--what", what, "--format", fmt, "--output",
                             str(path), "--db", location, *extra)
        assert code == 0, err
        assert PASSWORD not in out + err
        files[backend] = path.read_bytes()
    assert PASSWORD.encode() not in files["postgresql"]
    assert files["sqlite"] == files["postgresql"]
    if fmt == "csv":
        rows = len(pd.read_csv(io.BytesIO(files["postgresql"]), keep_default_na=False))
    else:
        rows = len(files["postgresql"].splitlines())
    assert rows == {"judgments": 9760 if not extra else 1760, "leaderboard": 5}[what]  # PRD: 8,000 + 1,760 human


# ------------------------------------------------------------------------- 3. bad input


@pytest.mark.parametrize("bad, row, field", [
    ("p_a_out_of_range.csv", "line 3", "'p_a'"),
    ("unknown_winner.csv", "line 3", "'winner'"),
    ("conflict", "line 3", "'winner'"),
])
def test_bad_input_exits_2_naming_row_and_field_and_leaves_postgresql_unchanged(imported, tmp_path, capsys,
                                                                              bad, row, field):
    # Non-negotiable "bad input -> exit 2, a message naming row and field, store unchanged", on
    # PostgreSQL: two files rejected by the reader (tests/corpus), and one whose first row is new and
    # whose second contradicts a stored verdict, rejected inside the write transaction (rolled back).
    locations, _ = imported
    url = locations["postgresql"]
    if bad == "conflict":
        path = tmp_path / "conflict.csv"
        # Its own vote numbers (column 'vote'): another verdict under a stored vote is refused (a row without
        # them would be a repeated vote, issue 18).
        path.write_text("question_id,model_a,model_b,judge,winner,vote\n"
                        "new-q,x,y,newjudge,model_a,0\n"
                        "reason-1,local:qwen2.5-coder-1.5b,local:smollm2-135m,local:qwen2.5-coder-1.5b,model_b,0\n")
    else:
        path = CORPUS / bad
    before = fingerprint(url)
    assert before["verdicts"][0] > 20_000
    # the reader's rejections, into a stored study and into a new one; the conflict only exists in "sample"
    for study in ("sample",) if bad == "conflict" else ("sample", "brand-new"):
        code, out, err = cli(capsys, "import", str(path), "--study", study, "--db", url)
        assert code == 2, (out, err)
        message = err.strip()
        assert message.startswith("peercore: error: ") and len(message.splitlines()) == 1
        assert path.name in message and row in message and f"column {field}" in message
        assert PASSWORD not in out + err
    assert fingerprint(url) == before
    assert "brand-new" not in summaries(url)


@pytest.mark.parametrize("args", [
    ("rank", "--study", "no-such-study", "--format", "json"),
    ("export", "--study", "no-such-study", "--what", "judgments", "--format", "csv"),
    ("runs", "--study", "no-such-study"),
    ("adjudicate", "--study", "no-such-study", "--annotator", "alice", "--next"),
    ("review", "--study", "no-such-study", "--reviewer", "openai:gpt-4o", "--dry-run"),
], ids=lambda args: args[0])
def test_a_missing_study_on_postgresql_is_one_error_line_without_the_password(imported, capsys, args):
    # Every command's refusal of a study that is not in the PostgreSQL store: exit 2 (a usage error,
    # not a traceback), one line that names the study, and never the URL's password.
    locations, _ = imported
    code, out, err = cli(capsys, *args, "--db", locations["postgresql"])
    assert (code, out) == (2, ""), (code, out, err)
    assert err.startswith("peercore: error: ") and len(err.strip().splitlines()) == 1 and "no-such-study" in err
    assert PASSWORD not in err


# ------------------------------------------------------------- 4. review runs and their record


def _reply_some_unreadable(body: dict, api: str) -> str:
    """The fake's default review, except roughly one request in four gets a reply with no verdict."""
    tag = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()
    if tag[0] in "0123":
        return "I would rather not choose between these two answers."
    return default_reply(body, api)


@pytest.mark.parametrize("backend", BACKENDS)
def test_review_runs_account_for_every_paid_call_and_keep_secrets_out(backend, tmp_path, new_pg_url, capsys,
                                                                      monkeypatch):
    # `peercore review` through the real openai SDK against the local fake server: every request
    # the server answered is a stored verdict (valid or unreadable), an identical second run pays
    # nothing, `peercore runs` reports the counts, and neither the API key nor the URL's password is
    # printed or stored in any table.
    location = str(tmp_path / "review.sqlite") if backend == "sqlite" else with_password(new_pg_url())
    with contextlib.closing(Store(location)) as store:
        make_review_study(store, name="s", questions=3, models=3)  # 3 questions x 6 ordered pairs = 18 reviews
    with FakeLLMServer(seed=3, reply=_reply_some_unreadable) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        review = ("review", "--study", "s", "--reviewer", "openai:gpt-4o", "--method", "verdict", "--db", location,
                  "--no-progress")
        code, out, err = cli(capsys, *review)
        assert code == 0, (out, err)
        paid = server.requests_total
        # the key did reach the provider (so the checks below look for something that was there)
        assert {e["key_sha256"] for e in server.request_log} == {hashlib.sha256(API_KEY.encode()).hexdigest()}
        with contextlib.closing(Store(location, create=False)) as store:
            stored = store.verdicts.table("s", include_invalid=True)
        valid, invalid = int(stored["valid"].sum()), int((~stored["valid"].astype(bool)).sum())
        assert paid == 18 == len(stored) == valid + invalid and valid > 0 and invalid > 0
        assert f"paid calls: 18 calls paid by this run -> 18 verdicts stored ({valid} valid + {invalid} invalid)" in out
        texts = out + err
        code, out, err = cli(capsys, *review)
        assert code == 0 and server.requests_total == paid, (out, err)  # the second run pays nothing
        texts += out + err
    code, out, err = cli(capsys, "runs", "--study", "s", "--db", location)
    assert code == 0, err
    assert "18/18 items" in out and f"18 verdicts stored ({valid} valid + {invalid} invalid), 0 failed items" in out
    texts += out + err
    code, out, err = cli(capsys, "runs", "--study", "s", "--db", location, "--json")
    runs = json.loads(out)
    assert len(runs) == 1 and runs[0]["status"] == "finished"
    accounting = runs[0]["accounting"]
    assert (accounting["calls_paid"], accounting["verdicts"], accounting["invalid"]) == (18, 18, invalid)
    assert accounting["unaccounted"] == 0 and accounting["items_failed"] == 0
    texts += out + err
    stored_text = dump(location)
    assert "gpt-4o" in stored_text and "I would rather not choose" in stored_text  # the dump is not empty
    for secret in (API_KEY, PASSWORD):
        assert secret not in texts and secret not in stored_text


# ------------------------------------------------------------------- 5. adjudication


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_annotators_adjudicate_at_overlap_one_without_sharing_a_debate(backend, tmp_path, new_pg_url, capsys):
    # `peercore adjudicate --next / --decide / --release` (issue 13's leases): ScaleEval debates still
    # split after the last round go to people; at overlap 1 two annotators are never offered the same
    # debate, a released debate goes to the other, and each debate's decision is stored once.
    location = str(tmp_path / "adj.sqlite") if backend == "sqlite" else with_password(new_pg_url())
    code, out, err = cli(capsys, "import", str(SAMPLE / "sample-panel.jsonl"), "--study", "panel", "--db", location)
    assert code == 0, err
    with contextlib.closing(Store(location)) as store:
        store.studies.update_settings("panel", overlap=1)
        unresolved = set(store.debates.table("panel", kind="debate").query("status == 'unresolved'")["id"])
    assert len(unresolved) == 9

    def adjudicate(who: str, *action: str) -> tuple[int, object, str]:
        code, out, err = cli(capsys, "adjudicate", "--study", "panel", "--annotator", who, "--db", location, *action)
        assert PASSWORD not in out + err
        return code, (json.loads(out) if out.strip() else None), err

    # alice takes one and gives it back: bob is then offered that very debate
    _, first, _ = adjudicate("alice", "--next")
    assert first["debate_id"] in unresolved and first["decisions"] == 0
    assert adjudicate("alice", "--release")[1] == {"released": 1}
    _, taken, _ = adjudicate("bob", "--next")
    assert taken["debate_id"] == first["debate_id"]
    decided: dict[int, str] = {}
    holding = {"bob": taken}
    decisions = {"alice": "model_a", "bob": "both_bad"}
    while True:
        _, offer, _ = adjudicate("alice", "--next")
        if offer is not None:
            holding["alice"] = offer
        if len(holding) == 2:
            assert holding["alice"]["debate_id"] != holding["bob"]["debate_id"]  # never the same debate
        if not holding:
            break
        for who, item in list(holding.items()):
            assert item["debate_id"] not in decided
            code, result, err = adjudicate(who, "--decide", str(item["debate_id"]), decisions[who])
            assert code == 0 and result["stored"] == "new", err
            decided[item["debate_id"]] = who
            del holding[who]
        _, offer, _ = adjudicate("bob", "--next")
        if offer is not None:
            holding["bob"] = offer
    assert set(decided) == unresolved and set(decided.values()) == {"alice", "bob"}
    # a second decision of alice on her own debate replaces it; bob's on hers is refused (overlap 1 is full)
    mine = next(d for d, who in decided.items() if who == "alice")
    code, result, _ = adjudicate("alice", "--decide", str(mine), "tie")
    assert code == 0 and result["stored"] == "replaced"
    code, result, err = adjudicate("bob", "--decide", str(mine), "model_b")
    assert code == 2 and "alice" in err and result is None
    assert adjudicate("alice", "--next")[1] is None and adjudicate("bob", "--next")[1] is None
    with contextlib.closing(Store(location)) as store:
        rows = store.connect().execute("SELECT debate_id, annotator, verdict, both_bad FROM adjudications").fetchall()
    assert sorted(int(r[0]) for r in rows) == sorted(unresolved)  # each once
    assert {int(r[0]): r[1] for r in rows} == decided
    by_debate = {int(r[0]): ("both_bad" if r[3] else r[2]) for r in rows}
    assert by_debate[mine] == "tie"
    assert all(by_debate[d] == ("both_bad" if who == "bob" else "model_a") for d, who in decided.items() if d != mine)


# -------------------------------------------------------- 6. $PEERBOARD_DB and `peercore app`


def test_peerboard_db_in_the_environment_runs_rank_with_no_db_flag(imported, tmp_path, capsys):
    # `PEERBOARD_DB=postgresql://user:password@... python -m peercore rank --study prd` (no --db): the
    # same JSON as `--db URL` in-process (PRD Section 3 Peer Rank win rates), and nothing about the password.
    locations, _ = imported
    url = locations["postgresql"]
    args = ("rank", "--study", "prd", "--kind", "llm", "--method", "winrate", "--peer-weights", "prd",
            "--bootstrap", "0", "--format", "json")
    child = peercore(*args, db=url, cwd=tmp_path)
    assert child.returncode == 0, child.stderr
    code, out, err = cli(capsys, *args, "--db", url)
    assert code == 0 and child.stdout == out
    assert PASSWORD not in child.stdout + child.stderr
    # and an unreachable server is said with the URL's password masked
    dead = with_password(url).replace(f":{urlsplit(url).port}/", ":1/")
    child = peercore("rank", "--study", "prd", "--format", "json", db=dead, cwd=tmp_path)
    assert child.returncode == 2 and "peercore: error:" in child.stderr and ":***@" in child.stderr
    assert PASSWORD not in child.stdout + child.stderr


@pytest.mark.parametrize("given", ["flag", "environment"])
def test_peercore_app_hands_the_dashboard_the_url_unchanged(imported, monkeypatch, given):
    # `peercore app --db URL` (and `$PEERBOARD_DB=URL peercore app`) starts `streamlit run app.py` with
    # PEERBOARD_DB set to the URL exactly as given (password included: the dashboard must connect),
    # and nothing of it on the command line (visible to every user in `ps`).
    from peercore.cli import dashboard as commands

    locations, _ = imported
    url = locations["postgresql"]
    calls = []
    monkeypatch.setattr(commands.subprocess, "call", lambda cmd, **kw: calls.append((cmd, kw)) or 0)
    monkeypatch.delenv("PEERBOARD_DB", raising=False)
    if given == "flag":
        assert main(["app", "--db", url, "--headless", "--port", "8599"]) == 0
    else:
        monkeypatch.setenv("PEERBOARD_DB", url)
        assert main(["app", "--headless", "--port", "8599"]) == 0
    (cmd, kwargs), = calls
    assert kwargs["env"]["PEERBOARD_DB"] == url
    assert cmd[1:4] == ["-m", "streamlit", "run"] and "8599" in cmd
    assert not any(PASSWORD in part for part in cmd)
