"""Adjudication for a team (issue 13): the page holds a lease on the debate it shows, refuses late
decisions clearly, and takes the annotator from Streamlit's built-in login when it is configured.

AppTest cannot sign in through OIDC, so the login tests replace the page's identity source
(:func:`peercore.ui.adjudication.user_info`, which reads ``st.user``) with what ``st.user``
holds when a user is signed in, signed out, or login is not configured.
"""

from __future__ import annotations

import time

import pytest
from streamlit.testing.v1.errors import AppTestError

from app_studies import app_test, open_page, problems
from peercore.assignment import stamp
from peercore.store import Store


def sign_in(at, name: str):
    at.text_input(key="annotator").input(name).run()
    assert problems(at) == []
    return at


def head(at) -> str:
    return at.subheader[0].value


def held(store) -> dict[str, int]:
    leases = store.debates.leases("synthetic")
    return dict(zip(leases.loc[leases["live"], "annotator"], leases.loc[leases["live"], "debate_id"]))


@pytest.fixture
def store(synthetic):
    s = Store(synthetic["db"])
    yield s
    s.close()


def test_the_page_holds_the_debate_it_shows_and_renews_it(synthetic, store):
    store.studies.update_settings("synthetic", overlap=1)
    before = time.time()
    ann = sign_in(open_page(app_test(), "adjudication"), "ann")
    assert head(ann).startswith("Debate #1") and held(store) == {"ann": 1}
    expiry = store.debates.leases("synthetic")["expires_at"].iloc[0]
    assert stamp(before + 600) <= expiry <= stamp(time.time() + 600)  # 10 minutes by default
    assert any("You hold this debate until" in c.value for c in ann.caption)
    ben = sign_in(open_page(app_test(), "adjudication"), "ben")
    assert head(ben).startswith("Debate #2")  # overlap 1: ann's debate is not offered to ben
    time.sleep(0.01)
    ann.run()  # a redraw renews the same debate
    assert head(ann).startswith("Debate #1") and store.debates.leases("synthetic").set_index("annotator").loc[
        "ann", "expires_at"] > expiry
    ann.button(key="adj_one").click().run()
    assert head(ann).startswith("Debate #3") and held(store) == {"ann": 3, "ben": 2}  # ben still holds 2
    ann.button(key="adj_skip").click().run()
    assert head(ann).startswith("Debate #4") and held(store) == {"ann": 4, "ben": 2}


def test_a_lease_length_from_the_environment(synthetic, store, monkeypatch):
    monkeypatch.setenv("PEERBOARD_LEASE_SECONDS", "30")
    before = time.time()
    sign_in(open_page(app_test(), "adjudication"), "ann")
    assert stamp(before + 30) <= store.debates.leases("synthetic")["expires_at"].iloc[0] <= stamp(time.time() + 30)


def test_a_late_decision_is_refused_once_others_filled_the_overlap(synthetic, store):
    store.studies.update_settings("synthetic", overlap=1)
    ann = sign_in(open_page(app_test(), "adjudication"), "ann")
    assert head(ann).startswith("Debate #1")
    # ann's lease runs out while she reads; zed takes debate 1 and decides it.
    store.debates.release_leases("synthetic", "ann")
    store.debates.adjudicate(1, "zed", "tie")
    ann.text_input(key="adj_note_0").input("took my time")
    ann.button(key="adj_one").click().run()
    errors = [e.value for e in ann.error]
    assert len(errors) == 1 and "Not saved: debate #1 already has the 1 decision(s) it needs (by zed)" in errors[0]
    assert store.debates.adjudications("synthetic")[["debate_id", "annotator"]].values.tolist() == [[1, "zed"]]
    assert head(ann).startswith("Debate #2") and held(store) == {"ann": 2}
    assert ann.text_input(key="adj_note_0").value == "took my time"  # the note is kept for the next debate
    ann.run()
    assert all("Not saved" not in e.value for e in ann.error)  # shown once


def test_the_refusal_shows_other_annotators_names_as_text(synthetic, store):
    store.studies.update_settings("synthetic", overlap=1)
    ann = sign_in(open_page(app_test(), "adjudication"), "ann")
    store.debates.release_leases("synthetic", "ann")
    hostile = "**zed** ![x](http://tracker.invalid/x.png)"
    store.debates.adjudicate(1, hostile, "tie")
    ann.button(key="adj_one").click().run()
    (error,) = [e.value for e in ann.error]
    assert "Not saved: debate #1" in error and "zed" in error
    # Shown as typed: the stars escaped (no bold), the image syntax inside a code span (no image, nothing fetched).
    assert "**zed**" not in error and "\\*\\*zed\\*\\*" in error
    assert "![x](" not in error.replace("`![x](http://tracker.invalid/x.png)`", "")


def test_a_late_decision_is_stored_while_the_overlap_is_not_full(synthetic, store):
    store.studies.update_settings("synthetic", overlap=2)
    ann = sign_in(open_page(app_test(), "adjudication"), "ann")
    store.debates.release_leases("synthetic", "ann")
    store.debates.adjudicate(1, "zed", "tie")
    ann.button(key="adj_two").click().run()
    assert problems(ann) == [] and any("Saved: debate #1" in s.value for s in ann.success)
    assert sorted(store.debates.adjudications("synthetic")["annotator"]) == ["ann", "zed"]


def test_signed_in_user_is_the_annotator_and_cannot_be_typed(synthetic, store, monkeypatch):
    monkeypatch.setattr("peercore.ui.adjudication.user_info",
                        lambda: {"is_logged_in": True, "name": "Ann Lee", "email": "ann@example.org"})
    store.access.grant_role("ann@example.org", "annotator", granted_by="configuration")  # issue 20: roles decide who may
    at = open_page(app_test(), "adjudication")
    field = at.text_input(key="annotator")
    assert field.disabled and field.value == "ann@example.org"
    assert head(at).startswith("Debate #1") and held(store) == {"ann@example.org": 1}
    with pytest.raises(AppTestError, match="disabled"):  # a browser user cannot type into it
        field.set_value("mallory")
    at.session_state["annotator"] = "mallory"  # a value forced into the state is overwritten on the next run
    at.run()
    assert at.text_input(key="annotator").value == "ann@example.org"
    at.button(key="adj_tie").click().run()
    assert problems(at) == []
    assert store.debates.adjudications("synthetic")["annotator"].tolist() == ["ann@example.org"]
    assert all(b.key != "adj_login" for b in at.button)


def test_signed_out_the_page_asks_to_sign_in(synthetic, store, monkeypatch):
    """With login configured, a visitor who has not signed in is asked to, on every page (issue 20)."""
    monkeypatch.setattr("peercore.ui.adjudication.user_info", lambda: {"is_logged_in": False})
    at = app_test(page=None)
    assert problems(at) == []
    assert [b.key for b in at.button] == ["access_login"]
    assert [t for t in at.text_input if t.key == "annotator"] == []  # no name to type
    with pytest.raises(ValueError, match="Could not find a navigation page"):  # Adjudication cannot be reached
        open_page(at, "adjudication")
    assert not any(s.value.startswith("Debate #") for s in at.subheader) and store.debates.leases("synthetic").empty


def test_a_signed_in_viewer_reads_but_takes_no_debate(synthetic, store, monkeypatch):
    """A viewer may read every page, and the Adjudication page takes no lease for them (issue 20)."""
    monkeypatch.setattr("peercore.ui.adjudication.user_info",
                        lambda: {"is_logged_in": True, "name": "Vic", "email": "vic@example.org"})
    store.access.grant_role("vic@example.org", "viewer", granted_by="configuration")
    at = open_page(app_test(), "adjudication")
    assert problems(at) == []
    assert any("needs the annotator role" in i.value for i in at.info)
    assert not any(s.value.startswith("Debate #") for s in at.subheader) and store.debates.leases("synthetic").empty


def test_without_login_configured_the_name_is_typed(synthetic, store):
    at = open_page(app_test(), "adjudication")  # the real st.user: no [auth] in secrets here
    assert not at.text_input(key="annotator").disabled
    assert any("Type your name above to start." in i.value for i in at.info)
    sign_in(at, "tom")
    assert head(at).startswith("Debate #1") and held(store) == {"tom": 1}
