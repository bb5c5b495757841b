"""Reviewers & runs (issue 21, "Runs"): the reviewers configured on the page are kept in the study, a key
typed on the page is never kept, only an editor changes the list; a cancelled run says how many calls it
still waits for.

A reload is a new AppTest on the same database (a new session). Runs go to the fake LLM server
(tests/fakes), held with ``hold_after`` / ``wait_until`` and let go with ``release``: no clock.
"""

from __future__ import annotations

import sys

from app_studies import REPO, app_test, build_synthetic_study, open_page, problems
from peercore.store import Store
from peercore.ui import state

sys.path.insert(0, str(REPO / "tests"))
from fakes.llm_server import FakeLLMServer  # noqa: E402
from test_access_pages import ROLES, audit, everything_shown, sign_in, snapshot, texts  # noqa: E402

EDITOR, VIEWER = "ed@example.org", "vic@example.org"
STUDY = "synthetic"
URL = "http://127.0.0.1:9/v1"  # no request is made: configuring a reviewer calls nobody
#: What a user pastes where the key's variable name goes (shaped like an OpenAI project key).
TYPED_KEY = "sk-proj-TypedOnThePage0123456789abcdefXYZ"
SUBMIT = "FormSubmitter:add_reviewer-Add reviewer"


def fill(at, *, model: str = "fake-judge", url: str = URL, name: str = "", key_env: str = "") -> None:
    """Fill the "Add a reviewer" form for an OpenAI-compatible server and submit it."""
    at.selectbox(key="rv_provider").set_value("compatible")
    at.text_input(key="rv_model").input(model)
    at.text_input(key="rv_url").input(url)
    at.text_input(key="rv_key_env").input(key_env)
    at.text_input(key="rv_name").input(name)
    at.button(key=SUBMIT).click().run()


def shown_reviewers(at) -> list[str]:
    """The reviewers the page lists, read from their Remove buttons."""
    return [b.label.removeprefix("Remove ") for b in at.button if (b.key or "").startswith("rv_remove_")]


def kept(db, study: str = STUDY) -> list[dict]:
    store = Store(db)
    try:
        return store.studies.settings(study)["reviewers"]
    finally:
        store.close()


def database_bytes(db) -> bytes:
    """The database file and its write-ahead log, as on disk."""
    return b"".join(path.read_bytes() for path in (db, db.with_name(db.name + "-wal")) if path.exists())


def test_a_reviewer_configured_on_the_page_is_there_after_a_reload(synthetic):
    at = open_page(app_test(), "reviewers")
    fill(at, name="kept", key_env="KEPT_SERVER_KEY")
    at.button(key="rv_local").click().run()  # the offline judge too
    assert problems(at) == []
    assert shown_reviewers(at) == ["kept", "local:qwen2.5-coder-1.5b"]

    again = open_page(app_test(), "reviewers")  # a reload: a new session on the same database
    assert problems(again) == []
    assert shown_reviewers(again) == ["kept", "local:qwen2.5-coder-1.5b"]
    first = again.session_state[state.REVIEWERS][0]
    assert (first["provider"], first["model"], first["base_url"], first["api_key_env"]) == (
        "compatible", "fake-judge", URL, "KEPT_SERVER_KEY")
    assert any(m.label == "Paid calls" for m in again.metric)  # the job can be estimated with them at once

    again.button(key="rv_remove_0").click().run()  # removing one removes it from the study
    assert shown_reviewers(open_page(app_test(), "reviewers")) == ["local:qwen2.5-coder-1.5b"]
    assert [r["provider"] for r in kept(synthetic["db"])] == ["local"]


def test_a_reviewer_edited_on_the_page_is_kept_as_edited(synthetic):
    at = open_page(app_test(), "reviewers")
    fill(at, name="kept")
    fill(at, name="second", model="other-judge")
    at.button(key="rv_edit_0").click().run()
    assert at.text_input(key="rv_model").value == "fake-judge" and at.text_input(key="rv_name").value == "kept"
    at.number_input(key="rv_temperature").set_value(0.7)
    at.text_input(key="rv_key_env").input("KEPT_SERVER_KEY")
    at.text_input(key="rv_name").input("second")  # a name another reviewer has: refused, nothing changes
    at.button(key="FormSubmitter:add_reviewer-Save changes").click().run()
    assert "already configured" in texts(at.error) and [r["temperature"] for r in kept(synthetic["db"])] == [0.0, 0.0]
    at.text_input(key="rv_name").input("edited")
    at.button(key="FormSubmitter:add_reviewer-Save changes").click().run()
    assert problems(at) == [] and shown_reviewers(at) == ["edited", "second"]

    again = open_page(app_test(), "reviewers")  # a reload
    assert shown_reviewers(again) == ["edited", "second"]
    edited = again.session_state[state.REVIEWERS][0]
    assert (edited["model"], edited["temperature"], edited["api_key_env"]) == ("fake-judge", 0.7, "KEPT_SERVER_KEY")
    assert any(b.key == SUBMIT for b in again.button)  # a new session's form adds again


def test_a_key_typed_on_the_page_is_never_kept(synthetic):
    at = open_page(app_test(), "reviewers")
    fill(at, name="typed", key_env=TYPED_KEY)  # the key itself, where its variable's name goes
    said = texts(at.error)
    assert "looks like an API key" in said and "Key variable" in said and TYPED_KEY not in said
    assert at.session_state[state.REVIEWERS] == [] and kept(synthetic["db"]) == []
    assert at.text_input(key="rv_key_env").value == ""  # cleared: not even the session keeps it
    assert all(TYPED_KEY not in str(value) for value in at.session_state.to_dict().values())

    fill(at, name=TYPED_KEY)  # in another field: refused as well
    assert "looks like an API key" in texts(at.error) and kept(synthetic["db"]) == []

    fill(at, name="typed", key_env="TYPED_SERVER_KEY")  # its variable's name: kept
    assert problems(at) == []
    assert [(r["name"], r["api_key_env"]) for r in kept(synthetic["db"])] == [("typed", "TYPED_SERVER_KEY")]
    again = open_page(app_test(), "reviewers")
    assert shown_reviewers(again) == ["typed"]
    assert TYPED_KEY not in str(again._tree) and TYPED_KEY.encode() not in database_bytes(synthetic["db"])
    assert TYPED_KEY not in str(kept(synthetic["db"]))


def test_another_study_keeps_its_own_reviewers(synthetic):
    store = Store(synthetic["db"])
    build_synthetic_study(store, "other", seed=1)
    store.close()
    at = open_page(app_test(), "reviewers")
    at.selectbox(key=state.STUDY).set_value(STUDY).run()  # "other" sorts first
    fill(at, name="synthetic-judge")
    at.selectbox(key=state.STUDY).set_value("other").run()
    assert problems(at) == [] and shown_reviewers(at) == []
    fill(at, name="other-judge")
    assert shown_reviewers(at) == ["other-judge"]
    at.selectbox(key=state.STUDY).set_value(STUDY).run()
    assert shown_reviewers(at) == ["synthetic-judge"]
    assert [r["name"] for r in kept(synthetic["db"])] == ["synthetic-judge"]
    assert [r["name"] for r in kept(synthetic["db"], "other")] == ["other-judge"]


def test_a_viewer_cannot_change_the_kept_reviewers(synthetic, monkeypatch):
    store = Store(synthetic["db"])
    for who, role in ROLES.items():
        store.access.grant_role(who, role, granted_by="configuration")
    store.close()
    sign_in(monkeypatch, EDITOR)
    fill(open_page(app_test(), "reviewers"), name="editors")
    assert [r["name"] for r in kept(synthetic["db"])] == ["editors"]
    records = audit(synthetic["db"])
    assert records == [(EDITOR, "configure_reviewers")]

    sign_in(monkeypatch, VIEWER)
    at = open_page(app_test(), "reviewers")
    assert problems(at) == [] and shown_reviewers(at) == ["editors"]  # a viewer reads the list
    assert next(b for b in at.button if b.key == SUBMIT).disabled
    everything_shown(monkeypatch)  # now the crafted requests: every control enabled
    at.run()
    before = snapshot(synthetic["db"])
    fill(at, name="viewers")
    assert "Not allowed: Configuring reviewers for study 'synthetic' needs the editor role" in texts(at.error)
    at.button(key="rv_remove_0").click().run()
    assert "Not allowed: Configuring reviewers" in texts(at.error)
    assert snapshot(synthetic["db"]) == before and audit(synthetic["db"]) == records
    assert shown_reviewers(open_page(app_test(), "reviewers")) == ["editors"]


def test_a_cancelled_run_says_how_many_calls_it_waits_for(synthetic):
    with FakeLLMServer() as server:
        server.hold_after(2)  # two reviews answered, every later call held: the calls in flight stay in flight
        at = open_page(app_test(), "reviewers")
        fill(at, url=server.openai_base_url, name="fake")
        at.multiselect(key="rv_contestants").set_value(["alpha", "bravo"]).run()
        at.button(key="rv_launch").click().run()
        assert server.wait_until(lambda s: s.successes >= 2 and s.held >= 1)
        at.button(key="rv_cancel").click().run()
        handle = at.session_state[state.RUN_HANDLE].handle
        assert server.wait_until(lambda s: s.held == handle.calls_in_flight)  # every call out has reached the server
        at.run()
        held = server.held
        text = "\n".join(p.proto.text for p in at.get("progress"))
        assert f"cancelling (waiting for calls in flight): {held} call{'' if held == 1 else 's'} left" in text, text
        server.release()
        handle.wait(timeout=120)
        at.run()
    assert any("Run cancelled:" in w.value for w in at.warning), [w.value for w in at.warning]
