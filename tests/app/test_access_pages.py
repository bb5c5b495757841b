"""Who may do what, through the pages (issue 20): sign-in for the whole dashboard, roles, refusals, audit.

AppTest cannot sign in through OIDC, so, as in ``test_adjudication_team.py``, the tests
replace the dashboard's identity source (:func:`peercore.ui.adjudication.user_info`, which
reads ``st.user``) with what ``st.user`` holds for a visitor who has not signed in or for a
signed-in address. Roles: a global viewer, annotator, editor and owner, and an address no
rule names.

A refused action must change nothing even when it reaches the action (a crafted request):
those tests also make the page believe everything is allowed (:func:`peercore.ui.access.can`
answers yes, so every control is shown and enabled) and check that the application layer
refuses, that the database file is byte-identical afterwards and that nothing is recorded.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from app_studies import PAGE_TITLES, REPO, app_test, open_page, problems
from peercore.app.exports import audit_table
from peercore.store import Store
from peercore.ui import state

sys.path.insert(0, str(REPO / "tests"))
from fakes.llm_server import FakeLLMServer  # noqa: E402
from test_data_and_runs import GOOD, rerun_until  # noqa: E402

OWNER, EDITOR, ANNOTATOR, VIEWER, STRANGER = ("olga@example.org", "ed@example.org", "ann@example.org",
                                              "vic@example.org", "nobody@example.org")
ROLES = {OWNER: "owner", EDITOR: "editor", ANNOTATOR: "annotator", VIEWER: "viewer"}
STUDY = "synthetic"


def snapshot(path: Path) -> tuple:
    """The database file and a full SQL dump, the write-ahead log first copied into the file.

    Without the checkpoint the bytes would depend on which connection happened to close last
    (the last one to close a WAL database checkpoints it): the page's script threads close
    theirs when they end, which on a loaded machine can fall on either side of a snapshot.
    After ``wal_checkpoint(TRUNCATE)`` the file holds everything and the log is empty, so equal
    bytes mean nothing was written in between.
    """
    connection = sqlite3.connect(path)
    busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    assert busy == 0, "a reader kept the checkpoint from finishing"
    dump = list(connection.iterdump())
    connection.close()
    wal = Path(f"{path}-wal")
    return path.read_bytes(), wal.read_bytes() if wal.exists() else b"", dump


def texts(elements) -> str:
    """The elements' text as read on screen (Markdown escapes and code-span marks dropped)."""
    return "\n".join(str(e.value) for e in elements).replace("\\", "").replace("`", "")


def sign_in(monkeypatch, who: str | None) -> None:
    """What ``st.user`` holds from now on: ``who`` signed in, or (None) login configured and nobody signed in."""
    user = {"is_logged_in": False} if who is None else {"is_logged_in": True, "email": who, "name": who.split("@")[0]}
    monkeypatch.setattr("peercore.ui.adjudication.user_info", lambda: dict(user))


def everything_shown(monkeypatch) -> None:
    """The page shows and enables every control (a crafted request): only the application layer decides."""
    monkeypatch.setattr("peercore.ui.access.can", lambda *args, **kwargs: True)


@pytest.fixture
def team(synthetic):
    """The synthetic study with the four global roles granted (by the configuration)."""
    store = Store(synthetic["db"])
    for who, role in ROLES.items():
        store.access.grant_role(who, role, granted_by="configuration")
    store.close()
    return synthetic


def button(at, key: str):
    return next(b for b in at.button if b.key == key)


def has_button(at, key: str) -> bool:
    return any(b.key == key for b in at.button)


def audit(db) -> list[tuple[str, str]]:
    store = Store(db)
    try:
        log = store.access.audit_log()
        return list(zip(log["actor"], log["action"]))
    finally:
        store.close()


# ------------------------------------------------------------------------ reading


@pytest.mark.parametrize("page", sorted(PAGE_TITLES))
def test_a_visitor_who_has_not_signed_in_sees_no_study_on_any_page(team, monkeypatch, page):
    """The page is asked for (its address) by a session that has not signed in: only the sign-in is shown."""
    sign_in(monkeypatch, VIEWER)
    at = open_page(app_test(page=None), page)  # a viewer's session knows every page's address
    assert [e.value for e in at.exception] == [] and STUDY in str(at._tree)
    sign_in(monkeypatch, None)  # the same address, asked for by a visitor (signed out)
    at.run()
    assert [e.value for e in at.exception] == []
    assert button(at, "access_login").label == "Sign in"
    tree = str(at._tree)
    assert STUDY not in tree and "alpha" not in tree  # neither the study nor a contestant
    assert not any(b.key == "FormSubmitter:create_study-Create study" for b in at.button)


def test_someone_signed_in_with_no_role_is_told_to_ask_an_owner(team, monkeypatch):
    sign_in(monkeypatch, VIEWER)
    at = open_page(app_test(page=None), "leaderboard")
    sign_in(monkeypatch, STRANGER)
    at.run()
    assert [e.value for e in at.exception] == []
    assert "you have no role in this dashboard: ask an owner" in texts(at.warning)
    assert STUDY not in str(at._tree) and not has_button(at, "access_login")


@pytest.mark.parametrize("page", ["studies", "leaderboard", "data", "reviewers", "debates"])
def test_a_viewer_reads_the_study_on_every_page(team, monkeypatch, page):
    sign_in(monkeypatch, VIEWER)
    at = open_page(app_test(page=None), page)
    assert problems(at) == [] and STUDY in str(at._tree)


def test_a_role_in_one_study_shows_that_study_only(team, monkeypatch):
    store = Store(team["db"])
    store.studies.create("other")
    store.access.grant_role("pia@example.org", "viewer", study="other", granted_by="configuration")
    store.close()
    sign_in(monkeypatch, "pia@example.org")
    at = open_page(app_test(page=None), "studies")
    assert problems(at) == []
    assert at.selectbox(key=state.STUDY).options == ["other"]
    assert at.radio(key="studies_pick").options == ["other"] and STUDY not in texts(at.dataframe)


# ------------------------------------------------------------------ the Studies page


@pytest.mark.parametrize("who, create, guidelines, grant, delete", [
    (VIEWER, False, False, False, False), (ANNOTATOR, False, False, False, False),
    (EDITOR, True, True, False, False), (OWNER, True, True, True, True)])
def test_the_studies_page_offers_each_role_its_controls(team, monkeypatch, who, create, guidelines, grant, delete):
    sign_in(monkeypatch, who)
    at = app_test()
    assert problems(at) == []
    assert not button(at, "FormSubmitter:create_study-Create study").disabled is create
    assert not button(at, "FormSubmitter:studies_guidelines-Save guidelines").disabled is guidelines
    assert has_button(at, "FormSubmitter:studies_grant-Grant role") is grant
    assert any(e.label == "Delete this study" for e in at.expander) is delete
    assert f"Signed in as {who}" in texts(at.caption)


def test_an_editor_creates_a_study_and_edits_guidelines_and_overlap_on_the_record(team, monkeypatch):
    sign_in(monkeypatch, EDITOR)
    at = app_test()
    at.text_input(key="studies_new_name").input("fresh")
    button(at, "FormSubmitter:create_study-Create study").click().run()
    assert problems(at) == []
    at.text_area(key=f"studies_rubric::fresh").input("Correct beats fluent.")
    at.number_input(key=f"studies_overlap::fresh").set_value(2)
    button(at, "FormSubmitter:studies_guidelines-Save guidelines").click().run()
    assert problems(at) == []
    store = Store(team["db"])
    assert store.studies.settings("fresh") == {"rubric": "Correct beats fluent.", "overlap": 2} | {
        k: v for k, v in store.studies.settings("fresh").items() if k not in ("rubric", "overlap")}
    store.close()
    assert audit(team["db"])[-3:] == [(EDITOR, "create_study"), (EDITOR, "edit_guidelines"), (EDITOR, "set_overlap")]
    log = next(d.value for d in at.dataframe if "action" in d.value.columns)
    assert log["who"].tolist() == [EDITOR] * 3 and log["action"].tolist()[0] == "set overlap"  # newest first


def test_an_owner_grants_a_role_and_deletes_the_study_on_the_record(team, monkeypatch):
    sign_in(monkeypatch, OWNER)
    at = app_test()
    at.text_input(key="studies_grant_who").input("pia@example.org")
    at.selectbox(key="studies_grant_role").set_value("editor")
    button(at, "FormSubmitter:studies_grant-Grant role").click().run()
    assert problems(at) == []
    store = Store(team["db"])
    assert store.access.role_of("pia@example.org", STUDY) == "editor" and store.access.role_of("pia@example.org") is None
    at.text_input(key="studies_delete_confirm").input(STUDY).run()
    next(b for b in at.button if b.label == "Delete study").click().run()
    assert STUDY not in set(store.studies.table()["name"])
    store.close()
    assert audit(team["db"])[-2:] == [(OWNER, "grant_role"), (OWNER, "delete_study")]


@pytest.mark.parametrize("who", [VIEWER, ANNOTATOR, EDITOR])
def test_a_crafted_studies_action_is_refused_and_changes_nothing(team, monkeypatch, who):
    """Every control shown and enabled: create (viewer, annotator), guidelines and overlap, grant, delete, judges."""
    sign_in(monkeypatch, who)
    everything_shown(monkeypatch)
    at = app_test()
    before = snapshot(team["db"])
    steps = []
    if who != EDITOR:
        steps.append(("create", lambda: (at.text_input(key="studies_new_name").input("fresh"),
                                         button(at, "FormSubmitter:create_study-Create study").click().run())))
        steps.append(("guidelines", lambda: (at.text_area(key=f"studies_rubric::{STUDY}").input("mine now"),
                                             at.number_input(key=f"studies_overlap::{STUDY}").set_value(3),
                                             button(at, "FormSubmitter:studies_guidelines-Save guidelines")
                                             .click().run())))
        steps.append(("judges", lambda: next(b for b in at.button if b.label == "Save judges").click().run()))
    steps.append(("grant", lambda: (at.text_input(key="studies_grant_who").input(who),
                                    at.selectbox(key="studies_grant_role").set_value("owner"),
                                    button(at, "FormSubmitter:studies_grant-Grant role").click().run())))
    steps.append(("delete", lambda: (at.text_input(key="studies_delete_confirm").input(STUDY).run(),
                                     next(b for b in at.button if b.label == "Delete study").click().run())))
    for name, step in steps:
        step()
        assert [e.value for e in at.exception] == [], name
        assert "Not allowed:" in texts(at.error) and f"{who} is a" in texts(at.error), name
        assert snapshot(team["db"]) == before, name  # byte-identical, nothing recorded
    assert audit(team["db"]) == []


# ---------------------------------------------------------------------- the Data page


def upload(at):
    at.file_uploader(key="data_upload_0").set_value(("votes.csv", GOOD, "text/csv")).run()


@pytest.mark.parametrize("who, may", [(VIEWER, False), (ANNOTATOR, False), (EDITOR, True), (OWNER, True)])
def test_import_and_export_need_the_editor_role(team, monkeypatch, who, may):
    sign_in(monkeypatch, who)
    at = open_page(app_test(), "data")
    assert problems(at) == []
    assert any(d.key == "data_export" for d in at.get("download_button")) is may
    upload(at)
    assert button(at, "data_import").disabled is not may
    if may:
        before = len(Store(team["db"]).verdicts.table(STUDY))
        button(at, "data_import").click().run()
        assert problems(at) == [] and len(Store(team["db"]).verdicts.table(STUDY)) == before + 2
        assert audit(team["db"])[-1] == (who, "import")


@pytest.mark.parametrize("who", [VIEWER, ANNOTATOR])
def test_a_crafted_import_or_export_is_refused_and_changes_nothing(team, monkeypatch, who):
    sign_in(monkeypatch, who)
    everything_shown(monkeypatch)
    at = open_page(app_test(), "data")
    assert "Not allowed: Exporting study" in texts(at.error)
    assert not any(d.key.startswith("data_export") for d in at.get("download_button"))  # no bytes handed out
    before = snapshot(team["db"])
    upload(at)
    button(at, "data_import").click().run()
    assert "Nothing was imported: Importing into study 'synthetic' needs the editor role" in texts(at.error)
    at.text_input(key="data_target").input("brand-new").run()
    button(at, "data_import").click().run()
    assert "Nothing was imported: Creating a study needs the editor role" in texts(at.error)
    assert snapshot(team["db"]) == before and audit(team["db"]) == []


# ------------------------------------------------------------- the Reviewers page


def fake_reviewer(url: str) -> dict:
    return {"name": "fake", "provider": "compatible", "model": "fake-judge", "base_url": url, "temperature": 0.0,
            "api_key_env": ""}


@pytest.mark.parametrize("who", [VIEWER, ANNOTATOR])
def test_reviewers_and_runs_are_refused_below_editor(team, monkeypatch, who):
    sign_in(monkeypatch, who)
    at = open_page(app_test(), "reviewers")
    assert problems(at) == []
    assert button(at, "rv_local").disabled and button(at, "FormSubmitter:add_reviewer-Add reviewer").disabled
    everything_shown(monkeypatch)  # now the crafted requests
    at.run()
    before = snapshot(team["db"])
    button(at, "rv_local").click().run()
    assert "Not allowed: Configuring reviewers for study 'synthetic' needs the editor role" in texts(at.error)
    assert at.session_state[state.REVIEWERS] == []
    with FakeLLMServer() as server:
        at.session_state[state.REVIEWERS] = [fake_reviewer(server.openai_base_url)]
        at.run()
        button(at, "rv_launch").click().run()
        assert "Not allowed: Launching a run in study 'synthetic' needs the editor role" in texts(at.error)
        assert at.session_state[state.RUN_HANDLE] is None and server.requests_total == 0
    assert snapshot(team["db"]) == before and audit(team["db"]) == []


def test_launch_cancel_and_resume_are_editors_and_recorded_with_their_cost(team, monkeypatch):
    with FakeLLMServer(latency_s=0.3) as server:
        sign_in(monkeypatch, EDITOR)
        at = open_page(app_test(), "reviewers")
        at.session_state[state.REVIEWERS] = [fake_reviewer(server.openai_base_url)]
        at.run()
        at.multiselect(key="rv_contestants").set_value(["alpha", "bravo"]).run()
        button(at, "rv_launch").click().run()
        assert problems(at) == []
        # A viewer in the same session (a crafted click): the cancel is refused, the run goes on.
        sign_in(monkeypatch, VIEWER)
        everything_shown(monkeypatch)
        button(at, "rv_cancel").click().run()
        assert "Not allowed: Cancelling a run in study 'synthetic' needs the editor role" in texts(at.error)
        assert [action for _, action in audit(team["db"])] == ["launch_run"]  # the refusal recorded nothing
        sign_in(monkeypatch, EDITOR)
        button(at, "rv_cancel").click().run()
        rerun_until(at, "cancelled", where=("warning", "success", "info"))
        store = Store(team["db"])
        stopped = store.runs.table(STUDY).query("status == 'cancelled'")
        assert len(stopped) == 1
        button(at, "rv_clear").click().run()
        # The viewer's crafted resume: refused, nothing written.
        sign_in(monkeypatch, VIEWER)
        store.close()
        before = snapshot(team["db"])
        button(at, "rv_resume").click().run()
        assert "Not allowed: Resuming a run in study 'synthetic' needs the editor role" in texts(at.error)
        assert snapshot(team["db"]) == before and at.session_state[state.RUN_HANDLE] is None
        sign_in(monkeypatch, EDITOR)
        button(at, "rv_resume").click().run()
        rerun_until(at, "Run finished", seconds=30)
        assert any("Run finished: 18 of 18" in s.value for s in at.success), texts(at.error) + texts(at.warning)
    log = Store(team["db"]).access.audit_log(STUDY)
    assert log["action"].tolist() == ["launch_run", "cancel_run", "finish_run", "resume_run", "finish_run"]
    assert log["details"].iloc[2]["status"] == "cancelled"  # how each launch ended, once
    assert set(log["actor"]) == {EDITOR}
    launched = log["details"].iloc[0]
    assert launched["run_id"] == stopped["id"].iloc[0] and "estimated_cost_usd" in launched
    assert log["details"].iloc[-1]["status"] == "finished" and "final_cost_usd" in log["details"].iloc[-1]


# ------------------------------------------------------------------ no sign-in configured


def test_without_login_the_studies_page_says_it_is_open_to_anyone(synthetic):
    at = app_test()  # the real st.user: no [auth] here
    assert problems(at) == []
    assert "Open to anyone who can reach this port: no sign-in is configured (see docs/TEAM.md)." in texts(at.caption)
    at.text_input(key="studies_new_name").input("fresh")
    button(at, "FormSubmitter:create_study-Create study").click().run()
    assert problems(at) == [] and audit(synthetic["db"]) == [("local", "create_study")]


# ------------------------------------------------------------------------- secrets


CLIENT_SECRET = "MARKER-client-secret-4f1c9a"
COOKIE_SECRET = "MARKER-cookie-secret-77d0e2"


def test_the_login_secrets_appear_nowhere(synthetic, monkeypatch):
    """[auth]'s client and cookie secrets never reach the store, the audit log, an export or the page;
    the first owner comes from [peerboard.roles] in the same secrets."""
    from streamlit.testing.v1 import AppTest

    from app_studies import APP

    sign_in(monkeypatch, OWNER)
    at = AppTest.from_file(APP, default_timeout=60)
    at.secrets["auth"] = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": COOKIE_SECRET,
                          "client_id": "peerboard", "client_secret": CLIENT_SECRET,
                          "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration"}
    at.secrets["peerboard"] = {"roles": {"owner": [OWNER], "viewer": ["@example.org"]}}
    at.run()
    open_page(at, "studies")
    assert problems(at) == []
    at.text_area(key=f"studies_rubric::{STUDY}").input("Correct beats fluent.")
    button(at, "FormSubmitter:studies_guidelines-Save guidelines").click().run()
    open_page(at, "data")
    assert problems(at) == []
    store = Store(synthetic["db"])
    assert store.access.role_of(OWNER) == "owner" and store.access.role_of(VIEWER) == "viewer"  # seeded from the secrets
    log = audit_table(store, STUDY)
    assert log["action"].tolist() == ["edit_guidelines"]
    store.close()
    raw = b"".join(part if isinstance(part, bytes) else "\n".join(part).encode() for part in snapshot(synthetic["db"]))
    for marker in (CLIENT_SECRET, COOKIE_SECRET):
        assert marker.encode() not in raw
        assert marker not in str(at._tree) and marker not in log.to_csv()
        assert all(marker not in str(v) for v in at.session_state.to_dict().values())
    from peercore.app.exports import audit_bytes

    store = Store(synthetic["db"])
    for fmt in ("csv", "jsonl"):
        assert COOKIE_SECRET.encode() not in audit_bytes(store, STUDY, fmt)
        assert b"edit_guidelines" in audit_bytes(store, STUDY, fmt)
    store.close()


def test_a_roles_configuration_without_an_owner_is_shown_and_grants_nothing(team, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from app_studies import APP

    sign_in(monkeypatch, VIEWER)
    at = AppTest.from_file(APP, default_timeout=60)
    at.secrets["peerboard"] = {"roles": {"editor": ["mallory@example.org"]}}  # no owner: refused whole
    at.run()
    assert "names no owner" in texts(at.error) and [e.value for e in at.exception] == []
    store = Store(team["db"])
    assert store.access.role_of("mallory@example.org") is None and store.access.role_of(VIEWER) == "viewer"
    store.close()
