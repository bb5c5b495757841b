"""Any adjudication decision can be changed with a reason (issue 21), on SQLite and PostgreSQL.

The decision row is updated in place, so the gold set (and alpha, agreement) read the latest
decision; every change is appended to ``adjudication_history`` (who, when, before, after,
reason), which schema version 12 adds, seeded from the decisions a version-11 database held.
"""

from __future__ import annotations

import pandas as pd
import pytest

from peercore.app import Study
from peercore.app.access import Actor, adjudicate, edit_decision
from peercore.errors import AccessDenied
from peercore.store import Store, StoreError, schema
from peercore.store.copy import database_tables


@pytest.fixture(params=["sqlite", "postgresql"])
def make_store(request, tmp_path):
    """A function opening the test's database: a SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        location = tmp_path / "history.sqlite"
    else:
        location = request.getfixturevalue("pg_url")
    opened = []

    def make() -> Store:
        opened.append(Store(location))
        return opened[-1]

    yield make
    for store in opened:
        store.close()


def three_debates(store: Store) -> list[int]:
    """Study ``s``: three questions, each with one unresolved debate of ``alpha`` and ``bravo``."""
    store.studies.create("s")
    store.questions.add("s", pd.DataFrame({"question_id": [f"q{k}" for k in range(3)],
                                           "text": [f"question {k}" for k in range(3)]}))
    for k in range(3):
        store.debates.add("s", {"debate_key": f"d{k}", "question_id": f"q{k}", "model_a": "alpha", "model_b": "bravo",
                                "criterion": "helpfulness", "status": "unresolved", "n_rounds": 1},
                         [{"round": 0, "position": 0, "speaker": "judge", "verdict": "model_a", "rationale": "x"}])
    return [int(i) for i in store.debates.table("s")["id"]]


def gold(store: Store) -> dict:
    """The gold set's verdict per question (what Meta-evaluation scores judges against)."""
    frame = Study(store, "s").gold()
    return dict(zip(frame["question_id"], frame["winner"]))


def test_an_edit_appends_history_and_the_gold_set_uses_the_latest_decision(make_store):
    store = make_store()
    first, second, third = three_debates(store)
    eve = Actor("eve", signed_in=False, local=True)
    for debate_id, verdict in ((first, "model_a"), (second, "model_b"), (third, "tie")):
        adjudicate(store, eve, debate_id, verdict)
    assert gold(store) == {"q0": "model_a", "q1": "model_b", "q2": "tie"}
    revision = store.studies.revision("s")

    assert edit_decision(store, eve, first, "both_bad", reason="neither is right")  # not the last decision
    assert edit_decision(store, eve, first, "model_b", reason="re-checked: 2 is right")
    assert not edit_decision(store, eve, first, "model_b", reason="again")  # unchanged: nothing written
    assert store.studies.revision("s") > revision  # caches keyed on the revision recompute
    assert gold(store) == {"q0": "model_b", "q1": "model_b", "q2": "tie"}
    decided = store.debates.adjudications("s")
    assert len(decided) == 3 and decided.set_index("debate_id").loc[first, "decision"] == "model_b"

    history = store.debates.decision_history("s")
    assert history[["debate_id", "annotator", "changed_by", "before", "after", "reason"]].values.tolist() == [
        [first, "eve", "eve", None, "model_a", ""],
        [second, "eve", "eve", None, "model_b", ""],
        [third, "eve", "eve", None, "tie", ""],
        [first, "eve", "eve", "model_a", "both_bad", "neither is right"],
        [first, "eve", "eve", "both_bad", "model_b", "re-checked: 2 is right"],
    ]
    assert history["at"].is_monotonic_increasing and history["at"].str.match(r"\d{4}-\d\d-\d\dT").all()
    assert len(store.debates.decision_history("s", annotator="nobody")) == 0
    audit = store.access.audit_log("s")
    edits = audit[audit["action"] == "edit_decision"]
    assert len(edits) == 2 and (edits["actor"] == "eve").all()

    store.debates.undo_adjudication(first, "eve")  # an undo is history too
    assert store.debates.decision_history("s").iloc[-1][["before", "after", "reason"]].tolist() == [
        "model_b", None, "undone"]
    assert gold(store) == {"q1": "model_b", "q2": "tie"}


def test_an_edit_needs_a_reason_a_decision_and_the_annotator_role(make_store):
    store = make_store()
    first, *_ = three_debates(store)
    store.debates.adjudicate(first, "ann@example.org", "model_a")
    before = (store.debates.adjudications("s").to_dict("records"), store.debates.decision_history("s").to_dict("records"))
    ann = Actor.signed_in_as("ann@example.org")
    with pytest.raises(AccessDenied, match="needs the annotator role"):
        edit_decision(store, ann, first, "tie", reason="changed my mind")  # no role in this study
    store.access.grant_role("ann@example.org", "annotator", study="s", granted_by="test")
    with pytest.raises(ValueError, match="needs a reason"):
        edit_decision(store, ann, first, "tie", reason="  ")
    with pytest.raises(StoreError, match="no decision on debate"):
        edit_decision(store, Actor("bob", signed_in=False, local=True), first, "tie", reason="r")
    assert (store.debates.adjudications("s").to_dict("records"), store.debates.decision_history("s").to_dict("records")) == before
    assert edit_decision(store, ann, first, "tie", reason="changed my mind")
    assert store.debates.adjudications("s")["decision"].tolist() == ["tie"]


def _rows(store: Store) -> dict[str, list]:
    """Every table's rows (but the migration record), in insertion order."""
    out = {}
    for name, table in database_tables(store).items():
        order = f" ORDER BY {table['ordered_by']}" if table["ordered_by"] else ""
        columns = ", ".join(table["columns"])
        out[name] = [tuple(r) for r in store.connect().execute(f"SELECT {columns} FROM {name}{order}").fetchall()]
    return out


def test_a_version_11_database_upgrades_with_identical_data(make_store, monkeypatch):
    """Migrations 12 (the decision history), 13 (label requests, kept reviewers) and 14 (verdict snapshots, a
    cache: empty after the upgrade) on a version-11 database."""
    with monkeypatch.context() as patch:  # the code as it was at version 11
        patch.setattr(schema, "MIGRATIONS", [])
        patch.setattr(schema, "SCHEMA_VERSION", 11)
        patch.setattr("peercore.store.adjudication._append_history", lambda *args, **kwargs: None)
        old = make_store()
        assert old.schema_version() == 11
        first, second, _ = three_debates(old)
        old.debates.adjudicate(first, "ann", "model_a", note="clear")
        old.debates.adjudicate(first, "ben", "both_bad")
        old.debates.adjudicate(second, "ann", "tie", blind=True)
        old.access.grant_role("ada@example.com", "owner", granted_by="configuration")
        held = _rows(old)
        old.close()
    assert "adjudication_history" not in held

    new = make_store()  # opening it runs migrations 12, 13 and 14
    assert new.schema_version() == schema.SCHEMA_VERSION == 14
    assert new.migrations()["version"].tolist() == list(range(1, 15))
    assert new.connect().execute("SELECT COUNT(*) FROM verdict_snapshots").fetchone()[0] == 0
    now = _rows(new)
    history = now.pop("adjudication_history")
    assert {row[-1] for row in now["studies"]} == {"[]"}  # migration 13's column: no reviewers configured yet
    now["studies"] = [row[:-1] for row in now["studies"]]
    assert now == held  # every row of every table as it was
    frame = new.debates.decision_history("s")
    assert frame[["debate_id", "annotator", "before", "after", "note"]].values.tolist() == [
        [first, "ann", None, "model_a", "clear"], [first, "ben", None, "both_bad", ""],
        [second, "ann", None, "tie", ""]]
    assert frame["at"].tolist() == new.debates.adjudications("s")["created_at"].tolist() and len(history) == 3
    assert new.debates.edit_adjudication(first, "ben", "model_b", reason="after the upgrade")
    pd.testing.assert_series_equal(new.debates.adjudications("s")["decision"],
                                   pd.Series(["model_a", "model_b", "tie"], name="decision"))
