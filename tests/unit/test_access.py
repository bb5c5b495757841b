"""Who may do what (issue 20, items 2-4): every role x every action, through :mod:`peercore.app.access`.

Each action is called as the pages will call it (the real store writes: ``import_path``,
``Store.studies.delete``, ``update_study_settings``, ``Store.debates.adjudicate``, ``runner.start_run``
with an in-process fake backend). An allowed action changes the store and leaves exactly one
audit record; a refused one raises :class:`AccessDenied` naming the role it needs, and the
SQLite database (its file, its write-ahead log and a full dump) is byte-identical afterwards.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from peercore.app import access
from peercore.app.access import NEEDS, AccessDenied, Action, Actor, Role
from peercore.errors import PeercoreError
from peercore.jobs.pricing import Price, PriceTable
from peercore.jobs.review import ReviewJob
from peercore.store import Store
from runner.fakes import FakeBackend, make_study

CONFIG = {"peerboard": {"roles": {
    "owner": ["ada@example.com"],
    "editor": ["ed@example.com"],
    "annotator": ["an@example.com"],
    "viewer": ["vi@example.com"],
}}}
PRICES = PriceTable({"fake": {"judge": Price(input=2.0, output=10.0)}})  # dollars per million tokens

# The people of the table, and the role each holds (None: none).
ACTORS = {
    "visitor": (Actor.visitor(), None),
    "no role": (Actor.signed_in_as("stranger@elsewhere.org"), None),
    "viewer": (Actor.signed_in_as("vi@example.com"), Role.VIEWER),
    "annotator": (Actor.signed_in_as("an@example.com"), Role.ANNOTATOR),
    "editor": (Actor.signed_in_as("ed@example.com"), Role.EDITOR),
    "owner": (Actor.signed_in_as("ada@example.com"), Role.OWNER),
    "no login (one machine)": (Actor.local_user(), Role.OWNER),
}


class _Handle:
    """A live run's handle, for cancelling (RunHandle's cancel() and run_id)."""

    run_id = "run-live"

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


@pytest.fixture
def world(tmp_path):
    """A SQLite store with study 'alpha' (questions, answers, one unresolved debate) and the configured roles."""
    path = tmp_path / "pb.sqlite"
    store = Store(path)
    make_study(store, "alpha", questions=2, models=("m1", "m2"))
    store.debates.add("alpha", {"debate_key": "d1", "question_id": "q0", "model_a": "m1", "model_b": "m2",
                                "status": "unresolved"},
                     [{"round": 0, "position": 0, "speaker": "agent-1", "verdict": "model_a"}])
    assert access.seed_roles(store, CONFIG) == 4
    csv = tmp_path / "more.csv"
    pd.DataFrame({"question_id": ["q0"], "model_a": ["m1"], "model_b": ["m2"], "judge": ["human:zoe"],
                  "winner": ["model_b"]}).to_csv(csv, index=False)
    world = {"path": path, "store": store, "csv": csv,
             "debate": int(store.debates.table("alpha")["id"].iloc[0])}
    yield world
    store.close()


def _job(store):
    return ReviewJob("alpha", [FakeBackend()], questions=["q0"])


def _launch(store, actor, w):
    handle = access.launch_run(store, actor, _job(store), estimated_cost_usd=0.0123, prices=PRICES)
    result = handle.wait()  # the run ends on its own (in-process fake backend): no clock involved
    access.finish_run(store, actor, result, study="alpha")
    return result


# action -> (the Action it is, a call as a page makes it)
CALLS = {
    "read": (Action.READ, lambda s, a, w: access.require(s, a, Action.READ, "alpha")),
    "answer a label request": (Action.ANSWER_LABEL_REQUEST,
                               lambda s, a, w: access.require(s, a, Action.ANSWER_LABEL_REQUEST, "alpha")),
    "adjudicate": (Action.ADJUDICATE, lambda s, a, w: access.adjudicate(s, a, w["debate"], "model_a", note="n")),
    "edit a decision": (Action.ADJUDICATE, lambda s, a, w: access.undo_decision(s, a, w["debate"])),
    "create a study": (Action.CREATE_STUDY, lambda s, a, w: access.create_study(s, a, "gamma")),
    "import": (Action.IMPORT, lambda s, a, w: access.import_file(s, a, w["csv"], study="alpha")),
    "export": (Action.EXPORT, lambda s, a, w: access.require(s, a, Action.EXPORT, "alpha")),
    "configure reviewers": (Action.CONFIGURE_REVIEWERS,
                            lambda s, a, w: access.require(s, a, Action.CONFIGURE_REVIEWERS, "alpha")),
    "launch a run": (Action.LAUNCH_RUN, _launch),
    "cancel a run": (Action.CANCEL_RUN, lambda s, a, w: access.cancel_run(s, a, _Handle(), study="alpha")),
    "resume a run": (Action.RESUME_RUN, lambda s, a, w: access.launch_run(
        s, a, _job(s), estimated_cost_usd=None, run_id=_job(s).run_id()).wait()),
    "edit guidelines": (Action.EDIT_GUIDELINES, lambda s, a, w: access.edit_guidelines(s, a, "alpha", "Be fair.")),
    "set overlap": (Action.SET_OVERLAP, lambda s, a, w: access.set_overlap(s, a, "alpha", 2)),
    "delete the study": (Action.DELETE_STUDY, lambda s, a, w: access.delete_study(s, a, "alpha")),
    "grant a role": (Action.GRANT_ROLE, lambda s, a, w: access.grant(s, a, "new@example.com", "editor", study="alpha")),
    "grant a global role": (Action.GRANT_ROLE, lambda s, a, w: access.grant(s, a, "new@example.com", "viewer")),
}
# Calls that only check (the pages' reads and the controls of later rounds): nothing to write or record.
CHECK_ONLY = {"read", "answer a label request", "export", "configure reviewers"}


def snapshot(path: Path) -> tuple:
    """The database file, its write-ahead log, and a full SQL dump."""
    wal = Path(f"{path}-wal")
    connection = sqlite3.connect(path)
    dump = list(connection.iterdump())
    connection.close()
    return path.read_bytes(), wal.read_bytes() if wal.exists() else b"", dump


def test_the_action_table_is_the_issues():
    """viewer reads; annotator + adjudicate, label requests; editor + the rest but delete and grant; owner all."""
    by_role = {role: sorted(a.value for a, needed in NEEDS.items() if needed == role) for role in Role}
    assert by_role == {
        Role.VIEWER: ["read"],
        Role.ANNOTATOR: ["adjudicate", "answer_label_request"],
        Role.EDITOR: ["cancel_run", "configure_reviewers", "create_study", "edit_guidelines", "export", "import",
                      "launch_run", "resume_run", "set_overlap"],
        Role.OWNER: ["delete_study", "grant_role"],
    }
    assert set(NEEDS) == set(Action)
    assert Role.VIEWER < Role.ANNOTATOR < Role.EDITOR < Role.OWNER


@pytest.mark.parametrize("who", list(ACTORS))
@pytest.mark.parametrize("what", list(CALLS))
def test_every_role_and_every_action(world, who, what):
    store, path = world["store"], world["path"]
    actor, held = ACTORS[who]
    action, call = CALLS[what]
    if what == "edit a decision":  # the actor's own decision to edit, made as the store allows anyone
        store.debates.adjudicate(world["debate"], actor.name, "model_b")
    before_log = len(store.access.audit_log())
    if held is None or held < NEEDS[action]:
        before = snapshot(path)
        with pytest.raises(AccessDenied) as refused:
            call(store, actor, world)
        message = str(refused.value)
        assert f"needs the {NEEDS[action].label} role" in message and "\n" not in message
        assert refused.value.needed == NEEDS[action].label
        assert isinstance(refused.value, PeercoreError)
        assert snapshot(path) == before  # byte-identical, and nothing recorded
        return
    call(store, actor, world)
    log = store.access.audit_log()
    if what in CHECK_ONLY:
        assert len(log) == before_log
        return
    new = log.iloc[before_log:]
    assert set(new["actor"]) == {actor.name}
    if what == "launch a run":
        assert new["action"].tolist() == ["launch_run", "finish_run"]
        assert new["details"].iloc[0]["estimated_cost_usd"] == 0.0123
        finished = new["details"].iloc[1]
        assert finished["status"] == "finished" and finished["final_cost_usd"] > 0
        assert len(store.verdicts.table("alpha")) > 0
        return
    assert len(new) == 1
    record = new.iloc[0]
    expected = {"adjudicate": "adjudicate", "edit a decision": "undo_decision", "resume a run": "resume_run",
                "grant a global role": "grant_role", "grant a role": "grant_role"}.get(what, action.value)
    assert record["action"] == expected
    if what == "delete the study":
        assert not store.studies.exists("alpha") and record["study"] == "alpha"
        assert record["details"]["held"]["debates"] == 1
    if what == "import":
        assert record["details"]["file"] == "more.csv" and "human:zoe" in set(store.verdicts.table("alpha")["judge"])
    if what == "edit guidelines":
        assert store.studies.settings("alpha")["rubric"] == "Be fair." and record["details"]["after"] == "Be fair."
    if what == "set overlap":
        assert store.studies.settings("alpha")["overlap"] == 2 and record["details"] == {"before": 0, "after": 2}
    if what == "adjudicate":
        decided = store.debates.adjudications("alpha")
        assert decided["annotator"].tolist() == [actor.name]  # under their own name, never a typed one


def test_a_study_role_overrides_the_global_one_both_ways(world):
    store = world["store"]
    owner, viewer = ACTORS["owner"][0], ACTORS["viewer"][0]
    access.grant(store, owner, "vi@example.com", "editor", study="alpha")
    access.grant(store, owner, "ada@example.com", "viewer", study="alpha")
    access.set_overlap(store, viewer, "alpha", 3)  # an editor of alpha
    with pytest.raises(AccessDenied,
                       match="^Creating a study needs the editor role; vi@example.com is a viewer globally.$"):
        access.create_study(store, viewer, "gamma")
    with pytest.raises(AccessDenied, match="^Deleting study 'alpha' needs the owner role; "
                                           "ada@example.com is a viewer in study 'alpha'.$"):
        access.delete_study(store, owner, "alpha")
    access.create_study(store, owner, "gamma")  # still an owner everywhere else
    access.delete_study(store, owner, "gamma")
    assert [r["action"] for r in store.access.audit_log().to_dict("records")][-5:] == [
        "grant_role", "grant_role", "set_overlap", "create_study", "delete_study"]


def test_a_domain_rule_gives_everyone_of_the_domain_a_role(world):
    store = world["store"]
    access.grant(store, ACTORS["owner"][0], "@example.com", "annotator", study="alpha")
    newcomer = Actor.signed_in_as("New.Person@Example.com")
    assert access.adjudicate(store, newcomer, world["debate"], "tie") is True
    assert store.debates.adjudications("alpha")["annotator"].tolist() == ["new.person@example.com"]
    with pytest.raises(AccessDenied, match="needs the editor role"):
        access.edit_guidelines(store, newcomer, "alpha", "x")


def test_a_refusal_says_what_is_needed_in_one_sentence(world):
    store = world["store"]
    with pytest.raises(AccessDenied) as visitor:
        access.import_file(store, Actor.visitor(), world["csv"], study="alpha")
    assert str(visitor.value) == "Importing into study 'alpha' needs the editor role; sign in first."
    with pytest.raises(AccessDenied) as stranger:
        access.require(store, ACTORS["no role"][0], Action.READ, "alpha")
    assert str(stranger.value) == ("Reading study 'alpha' needs the viewer role; stranger@elsewhere.org has no "
                                   "role in study 'alpha'.")
    with pytest.raises(ValueError, match="action must be one of .*'fly'"):
        access.require(store, ACTORS["owner"][0], "fly", "alpha")


def test_importing_into_a_new_study_needs_the_right_to_create_one(world, tmp_path):
    store = world["store"]
    access.grant(store, ACTORS["owner"][0], "vi@example.com", "editor", study="alpha")
    viewer = ACTORS["viewer"][0]
    access.import_file(store, viewer, world["csv"], study="alpha")  # an editor of alpha
    with pytest.raises(AccessDenied, match="Creating a study needs the editor role"):
        access.import_file(store, viewer, world["csv"], study="brand new")
    assert not store.studies.exists("brand new")
    access.import_file(store, ACTORS["editor"][0], world["csv"], study="brand new")
    assert store.access.audit_log("brand new")["details"].iloc[0]["created_study"] is True


def test_a_failed_write_leaves_no_record(world):
    """The write and its record are one transaction: an import that fails records nothing."""
    bad = world["csv"].with_name("bad.csv")
    bad.write_text("question_id,model_a,model_b,judge,winner\nq0,m1,m1,j,model_a\n", encoding="utf-8")
    store = world["store"]
    before = len(store.access.audit_log())
    with pytest.raises(ValueError):
        access.import_file(store, ACTORS["editor"][0], bad, study="alpha")
    assert len(store.access.audit_log()) == before


def test_seed_roles_is_idempotent_and_the_first_owner_comes_from_the_configuration(world):
    store = world["store"]
    before = snapshot(world["path"])
    assert access.seed_roles(store, CONFIG) == 0  # every start seeds again: nothing is written
    assert snapshot(world["path"]) == before
    seeded = store.access.audit_log()
    assert set(seeded["actor"]) == {"configuration"} and len(seeded) == 4
    assert access.seed_roles(store, {"owner": ["ada@example.com"], "editor": ["vi@example.com"]}) == 1
    assert store.access.role_of("vi@example.com") == "editor"
    with pytest.raises(ValueError, match="names no owner"):
        access.seed_roles(store, {"editor": ["ed@example.com"]})
    with pytest.raises(ValueError, match="both editor and viewer"):
        access.seed_roles(store, {"owner": ["a@x.org"], "editor": ["b@x.org"], "viewer": ["B@x.org"]})
    with pytest.raises(ValueError, match="role must be one of .*'admin'"):
        access.seed_roles(store, {"owner": ["a@x.org"], "admin": ["b@x.org"]})


def test_signing_in_first_makes_nobody_an_owner(tmp_path):
    """Without configured roles, a signed-in person has no role at all, however early they come."""
    store = Store(tmp_path / "pb.sqlite")
    early = Actor.signed_in_as("first@example.com")
    with pytest.raises(AccessDenied, match="has no role"):
        access.create_study(store, early, "mine")
    with pytest.raises(AccessDenied, match="Granting global roles needs the owner role"):
        access.grant(store, early, "first@example.com", "owner")
    assert store.access.roles().empty and store.access.audit_log().empty
    store.close()


def test_a_decision_refused_by_the_overlap_is_recorded_nowhere(world):
    store = world["store"]
    owner, annotator = ACTORS["owner"][0], ACTORS["annotator"][0]
    access.set_overlap(store, owner, "alpha", 1)
    access.adjudicate(store, owner, world["debate"], "model_a")
    before = len(store.access.audit_log())
    from peercore.assignment import DecisionRefused

    with pytest.raises(DecisionRefused):
        access.adjudicate(store, annotator, world["debate"], "model_b")
    assert len(store.access.audit_log()) == before


@pytest.mark.parametrize("who", list(ACTORS))
def test_allowed_answers_as_require_does_and_reads_only(world, who):
    """What a page uses to show or hide a control agrees with the check the action makes."""
    store, path = world["store"], world["path"]
    actor, held = ACTORS[who]
    before = snapshot(path)
    for action in Action:
        expected = held is not None and held >= NEEDS[action]
        assert access.allowed(store, actor, action, "alpha") is expected
        assert access.role_for(store, actor, "alpha") == held
    assert snapshot(path) == before


def _rows(store) -> dict:
    """What a refused action must leave as it was, read through the store on either backend."""
    return {"studies": store.studies.table().to_dict("records"), "roles": store.access.roles().to_dict("records"),
            "audit": store.access.audit_log().to_dict("records"), "judgments": store.verdicts.table("alpha").to_dict("records"),
            "settings": store.studies.settings("alpha"), "decisions": store.debates.adjudications("alpha").to_dict("records")}


def test_the_actions_and_their_records_on_both_backends(db, tmp_path):
    """The same calls on SQLite and PostgreSQL (COPY imports inside the record's transaction there)."""
    store = Store(db)
    make_study(store, "alpha", questions=2, models=("m1", "m2"))
    store.debates.add("alpha", {"debate_key": "d1", "question_id": "q0", "model_a": "m1", "model_b": "m2",
                                "status": "unresolved"}, [{"round": 0, "position": 0, "speaker": "s", "verdict": "tie"}])
    access.seed_roles(store, CONFIG)
    csv = tmp_path / "more.csv"
    pd.DataFrame({"question_id": ["q0"], "model_a": ["m1"], "model_b": ["m2"], "judge": ["human:zoe"],
                  "winner": ["model_b"]}).to_csv(csv, index=False)
    owner, annotator, viewer = ACTORS["owner"][0], ACTORS["annotator"][0], ACTORS["viewer"][0]
    debate = int(store.debates.table("alpha")["id"].iloc[0])
    before = _rows(store)
    for refused in (lambda: access.import_file(store, annotator, csv, study="alpha"),
                    lambda: access.adjudicate(store, viewer, debate, "tie"),
                    lambda: access.delete_study(store, ACTORS["editor"][0], "alpha"),
                    lambda: access.grant(store, annotator, "x@example.com", "owner")):
        with pytest.raises(AccessDenied):
            refused()
    assert _rows(store) == before
    access.import_file(store, ACTORS["editor"][0], csv, study="alpha")
    access.edit_guidelines(store, owner, "alpha", "Prefer the correct answer.")
    access.adjudicate(store, annotator, debate, "both_bad")
    access.adjudicate(store, annotator, debate, "model_a")
    access.grant(store, owner, "vi@example.com", "annotator", study="alpha")
    access.delete_study(store, owner, "alpha")
    log = store.access.audit_log("alpha")
    assert log["action"].tolist() == ["import", "edit_guidelines", "adjudicate", "edit_decision", "grant_role",
                                      "delete_study"]
    assert log["actor"].tolist() == ["ed@example.com", "ada@example.com", "an@example.com", "an@example.com",
                                     "ada@example.com", "ada@example.com"]
    held = log["details"].iloc[-1]["held"]
    assert held["debates"] == 1 and held["imports"] == 1 and held["questions"] == 2
    assert store.access.roles()["study"].isna().all()  # the study's roles went with it
    store.close()
