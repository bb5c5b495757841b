"""``peercore app`` on an address others can reach with nobody signed in warns (issue 20), and reads no secret.

The server is not started: ``subprocess.call`` (which would run ``streamlit run``) is
replaced, and the command's stderr is read.
"""

from __future__ import annotations

import pytest

from peercore.cli import dashboard
from peercore.cli import main

MARKER = "MARKER-cookie-secret-b41d"
AUTH = f"""
[auth]
redirect_uri = "http://peerboard.example.org/oauth2callback"
cookie_secret = "{MARKER}"
client_id = "peerboard"
client_secret = "MARKER-client-secret-9e3a"
server_metadata_url = "https://accounts.example.org/.well-known/openid-configuration"
"""


@pytest.fixture
def started(monkeypatch):
    """The command lines ``peercore app`` would have run (nothing is started)."""
    calls = []
    monkeypatch.setattr(dashboard.subprocess, "call", lambda cmd, **kwargs: calls.append(cmd) or 0)
    return calls


def secrets_at(monkeypatch, tmp_path, text: str | None) -> None:
    """Streamlit's secrets files for the app: one at ``tmp_path`` holding ``text`` (None: no file)."""
    path = tmp_path / ".streamlit" / "secrets.toml"
    if text is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(dashboard, "secrets_files", lambda folder: [tmp_path / "missing.toml", path])


@pytest.mark.parametrize("address", ["0.0.0.0", "192.168.1.20", "::"])
def test_an_open_address_without_login_warns_that_anyone_may_do_everything(monkeypatch, tmp_path, capsys, started,
                                                                          address):
    secrets_at(monkeypatch, tmp_path, None)
    assert main(["app", "--address", address, "--headless"]) == 0
    err = capsys.readouterr().err
    assert f"listens on {address}" in err and "nobody is signed in" in err
    assert "anyone who can reach the port may do everything" in err
    assert started and address in started[0]  # the server is still started


@pytest.mark.parametrize("address", ["127.0.0.1", "localhost"])
def test_this_machine_only_says_nothing(monkeypatch, tmp_path, capsys, started, address):
    secrets_at(monkeypatch, tmp_path, None)
    assert main(["app", "--address", address, "--headless"]) == 0
    assert "warning" not in capsys.readouterr().err and started


def test_with_login_configured_there_is_no_warning_and_no_secret_is_printed(monkeypatch, tmp_path, capsys, started):
    secrets_at(monkeypatch, tmp_path, AUTH + '\n[peerboard.roles]\nowner = ["ada@example.org"]\n')
    assert main(["app", "--address", "0.0.0.0", "--headless"]) == 0
    out = capsys.readouterr()
    assert "warning" not in out.err and MARKER not in out.err + out.out
    assert all(MARKER not in part for part in started[0])


def test_secrets_without_an_auth_table_count_as_no_login(tmp_path):
    plain = tmp_path / "plain.toml"
    plain.write_text('OPENAI_API_KEY = "sk-x"\n[peerboard.roles]\nowner = ["ada@example.org"]\n', encoding="utf-8")
    broken = tmp_path / "broken.toml"
    broken.write_text("[auth\n", encoding="utf-8")
    auth = tmp_path / "auth.toml"
    auth.write_text(AUTH, encoding="utf-8")
    assert dashboard.login_configured([plain, broken, tmp_path / "missing.toml"]) is False
    assert dashboard.login_configured([plain, auth]) is True


def test_the_warning_is_decided_by_address_and_login():
    assert dashboard.exposure_warning("0.0.0.0", login=False) is not None
    assert dashboard.exposure_warning("0.0.0.0", login=True) is None
    assert dashboard.exposure_warning(" LocalHost ", login=False) is None
    assert dashboard.exposure_warning("::1", login=False) is None


# ------------------------------------------- the page's checked writes (peercore.app.access additions)

VOTES = "question_id,model_a,model_b,judge,winner\nq1,alpha,bravo,human:zoe,model_a\nq2,bravo,alpha,human:zoe,tie\n"


def snapshot(path) -> tuple:
    """The database file, its write-ahead log and a full SQL dump."""
    import sqlite3
    from pathlib import Path

    wal = Path(f"{path}-wal")
    connection = sqlite3.connect(path)
    dump = list(connection.iterdump())
    connection.close()
    return path.read_bytes(), wal.read_bytes() if wal.exists() else b"", dump


@pytest.fixture
def team(tmp_path):
    from peercore.store import Store

    path = tmp_path / "team.sqlite"
    store = Store(path)
    store.studies.create("s")
    store.access.grant_role("ed@example.org", "editor", granted_by="configuration")
    store.access.grant_role("vic@example.org", "viewer", granted_by="configuration")
    (tmp_path / "votes.csv").write_text(VOTES, encoding="utf-8")
    yield store, path, tmp_path / "votes.csv"
    store.close()


def test_a_parsed_upload_is_imported_by_an_editor_and_refused_to_a_viewer(team):
    from peercore.app.access import AccessDenied, Actor, import_bundle
    from peercore.app.exports import audit_table
    from peercore.io.importer import read_path

    store, path, votes = team
    bundle = read_path(votes, format="auto")
    before = snapshot(path)
    for study in ("s", "new-study"):  # into a study, and creating one
        with pytest.raises(AccessDenied, match="needs the editor role; vic@example.org is a viewer"):
            import_bundle(store, Actor.signed_in_as("vic@example.org"), bundle, study=study, file_name="votes.csv")
    assert snapshot(path) == before and audit_table(store, "s").empty
    import_bundle(store, Actor.signed_in_as("ed@example.org"), bundle, study="s", file_name="/tmp/x/votes.csv")
    assert len(store.verdicts.table("s")) == 2
    log = audit_table(store, "s")
    assert log[["actor", "action"]].values.tolist() == [["ed@example.org", "import"]]
    assert '"file": "votes.csv"' in log["details"].iloc[0]  # the name, not the server's temporary path


def test_judges_are_configured_by_an_editor_and_only_changes_are_recorded(team):
    from peercore.app.access import AccessDenied, Actor, configure_judges, import_file

    store, path, votes = team
    import_file(store, Actor.local_user(), votes, study="s")
    rows = [{"name": "human:zoe", "kind": "human", "model_alias": ""}]
    before = snapshot(path)
    with pytest.raises(AccessDenied, match="Configuring reviewers"):
        configure_judges(store, Actor.signed_in_as("vic@example.org"), "s", [{**rows[0], "kind": "llm"}])
    assert snapshot(path) == before
    editor = Actor.signed_in_as("ed@example.org")
    assert configure_judges(store, editor, "s", rows) == 0  # as stored: nothing written
    assert configure_judges(store, editor, "s", [{**rows[0], "kind": "llm"}]) == 1
    assert store.judges.table("s").set_index("name").loc["human:zoe", "kind"] == "llm"
    log = store.access.audit_log("s")
    assert log["action"].tolist() == ["import", "configure_judge"]
    assert log["details"].iloc[-1] == {"judge": "human:zoe", "before": {"kind": "human", "model_alias": None},
                                       "after": {"kind": "llm", "model_alias": None}}


def test_peercore_export_what_audit_writes_the_studys_audit_log(tmp_path, capsys):
    """Issue 20 item 4: the record of who changed what is exported with the study, from the CLI as from the page."""
    import json

    from peercore.app.access import Actor, edit_guidelines, grant
    from peercore.store import Store

    path = tmp_path / "pb.sqlite"
    with Store(path) as store:
        store.studies.create("s")
        owner = Actor.signed_in_as("ada@example.org")
        store.access.grant_role("ada@example.org", "owner", granted_by="configuration")
        edit_guidelines(store, owner, "s", "Prefer the correct answer.")
        grant(store, owner, "bob@example.org", "annotator", study="s")
    capsys.readouterr()
    assert main(["export", "--study", "s", "--what", "audit", "--format", "jsonl", "--db", str(path)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert [r["action"] for r in rows][-2:] in (["edit_guidelines", "grant_role"], ["grant_role", "edit_guidelines"])
    assert {r["actor"] for r in rows} == {"ada@example.org"}
