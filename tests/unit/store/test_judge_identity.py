"""The store's part of issue 8: judge identities, refused conflicts, decision tokens, URLs."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

from peercore.errors import JudgeConflict, JudgmentError, VerdictConflict
from peercore.judges import fingerprint, variant_name
from peercore.store import Store, StoreError

REVIEW = {"role": "review", "backend": "openai", "model": "gpt-4o", "method": "verdict", "template": "prd_review",
          "temperature": 0.0, "max_tokens": 512}


@pytest.fixture
def store(db):  # both backends (tests/conftest.py)
    store = Store(db)
    store.studies.create("s")
    return store


def _verdicts(judge: str, winners, **extra) -> pd.DataFrame:
    return pd.DataFrame({"question_id": [f"q{i}" for i in range(len(winners))], "model_a": "a", "model_b": "b",
                         "judge": judge, "winner": list(winners), **extra})


def test_identical_verdicts_are_skipped_and_a_different_one_is_a_repeated_vote(store):
    """One rule for a comparison seen again with another verdict (issue 18, item 3): a new vote, numbered after
    the stored ones, however the rows are split into writes; the same verdict again is the stored vote."""
    assert store.verdicts.add("s", _verdicts("j", ["model_a", "tie"])).added == 2
    assert store.verdicts.add("s", _verdicts("j", ["model_a", "tie"])).skipped == 2
    counts = store.verdicts.add("s", _verdicts("j", ["model_a", "model_b"]))
    assert (counts.added, counts.skipped, counts.repeated) == (1, 1, 1)
    stored = store.verdicts.table("s", with_vote=True)
    assert list(zip(stored["question_id"], stored["winner"], stored["vote"])) == [
        ("q0", "model_a", 0), ("q1", "tie", 0), ("q1", "model_b", 1)]
    assert store.verdicts.add("s", _verdicts("j", ["model_a", "model_b"])).skipped == 2  # again: nothing new


def test_the_same_rows_give_the_same_votes_however_they_are_split_into_writes(tmp_path):
    """Two writes one after the other, or the same rows in one write: the same stored votes (issue 18, item 3)."""
    rows = _verdicts("j", ["model_a", "tie"]).assign(question_id="q")
    first, second = rows.iloc[[0]], rows.iloc[[1]]
    stores = [Store(tmp_path / f"{k}.sqlite") for k in range(2)]
    for store in stores:
        store.studies.create("s")
    stores[0].verdicts.add("s", rows)
    stores[1].verdicts.add("s", first)
    stores[1].verdicts.add("s", second)
    one, two = (s.verdicts.table("s", with_vote=True)[["question_id", "winner", "vote"]] for s in stores)
    pd.testing.assert_frame_equal(one, two)
    assert one["vote"].tolist() == [0, 1]


def test_a_key_repeated_with_another_verdict_in_one_frame_is_refused(store):
    frame = pd.concat([_verdicts("j", ["model_a"]), _verdicts("j", ["model_b"])]).assign(vote=0)
    with pytest.raises(VerdictConflict):
        store.verdicts.add("s", frame)
    assert len(store.verdicts.table("s")) == 0


def test_resolve_judge_keeps_a_configuration_under_one_name_and_gives_another_a_variant(store):
    first = store.judges.resolve("s", "openai:gpt-4o", REVIEW, register=True)
    again = store.judges.resolve("s", "openai:gpt-4o", dict(REVIEW), register=True)
    other = store.judges.resolve("s", "openai:gpt-4o", {**REVIEW, "method": "logprobs", "max_tokens": 1},
                                 register=True)
    assert first == again == "openai:gpt-4o"
    assert other == "openai:gpt-4o~logprobs"  # the first setting that differs names the variant
    assert store.judges.resolve("s", "openai:gpt-4o", {**REVIEW, "method": "logprobs", "max_tokens": 1}) == other
    judges = store.judges.table("s").set_index("name")
    assert judges.loc[other, "origin"] == "run" and judges.loc[other, "base"] == "openai:gpt-4o"
    assert judges.loc["openai:gpt-4o", "settings"]["method"] == "verdict"


def test_a_forced_name_held_by_another_configuration_is_refused_naming_what_differs(store):
    store.judges.resolve("s", "mine", REVIEW, explicit=True, register=True)
    with pytest.raises(JudgeConflict, match=r"judge 'mine' is already in study 's' with another configuration: it "
                                            r"differs in temperature 0.0 -> 0.9") as info:
        store.judges.resolve("s", "mine", {**REVIEW, "temperature": 0.9}, explicit=True)
    assert info.value.differences == {"temperature": (0.0, 0.9)}


def test_imported_and_run_judges_never_share_a_name(store):
    store.judges.add("s", [{"name": "openai:gpt-4o", "kind": "llm"}])
    store.verdicts.add("s", _verdicts("openai:gpt-4o", ["tie"]))
    assert store.judges.resolve("s", "openai:gpt-4o", REVIEW, register=True) == "openai:gpt-4o~verdict"
    with pytest.raises(JudgeConflict, match="holds verdicts imported from a file"):
        store.judges.resolve("s", "openai:gpt-4o", {**REVIEW, "temperature": 0.3}, explicit=True)
    import_id = store.studies.record_import("s", source="x.csv", format="canonical")
    with pytest.raises(JudgmentError, match="judge 'openai:gpt-4o~verdict' is a judge that PeerBoard's runs produced"):
        store.verdicts.add("s", _verdicts("openai:gpt-4o~verdict", ["tie"]), import_id=import_id)


def test_variant_names_are_readable_stable_and_unique():
    base = {**REVIEW}
    assert variant_name("m", {**base, "temperature": 0.7}, base_identity=base, taken={"m"}) == "m~temperature=0.7"
    assert variant_name("m", {**base, "method": "samples", "samples": 5}, base_identity=base, taken={"m"}) == "m~samples"
    assert variant_name("m", {**base, "method": "samples", "samples": 5}, base_identity=base,
                        taken={"m", "m~samples"}) == "m~samples,samples=5"
    # an imported base has no configuration: the method names the variant, more settings while taken
    assert variant_name("m", base, base_identity=None, taken={"m"}) == "m~verdict"
    assert variant_name("m", base, base_identity=None, taken={"m", "m~verdict"}) == "m~verdict,template=prd_review"
    assert fingerprint({**base, "temperature": 0}) == fingerprint({**base, "temperature": 0.0})


def test_writes_refuse_out_of_range_votes_and_non_text_raw(store):
    with pytest.raises(JudgmentError, match="vote -1 is not a whole number from 0 to 1,000,000"):
        store.verdicts.add("s", _verdicts("j", ["tie"]).assign(vote=[-1]))
    with pytest.raises(JudgmentError, match="raw must be text"):
        store.verdicts.add("s", _verdicts("j", [None]).assign(valid=[0], raw=[["a", "list"]]))
    assert len(store.verdicts.table("s", include_invalid=True)) == 0


def test_undo_with_a_token_removes_only_that_decision(store):
    store.debates.add("s", {"debate_key": "d", "question_id": "q", "model_a": "a", "model_b": "b",
                            "status": "unresolved"}, [])
    debate = int(store.debates.table("s")["id"].iloc[0])
    store.debates.adjudicate(debate, "carol", "model_a", token="tab-1")
    store.debates.adjudicate(debate, "carol", "tie", token="tab-2")  # the same annotator, another tab
    assert store.debates.undo_adjudication(debate, "carol", token="tab-1") is False
    assert store.debates.adjudications("s")["verdict"].tolist() == ["tie"]
    assert store.debates.undo_adjudication(debate, "carol", token="tab-2") is True


def test_a_database_url_is_not_a_file(tmp_path, monkeypatch):
    # Store("postgresql://...") opens PostgreSQL (test_postgres_store), as does $PEERBOARD_DB holding
    # such a URL (issue 13); other URLs are refused, never taken for a folder, the password never repeated.
    with pytest.raises(StoreError, match=r"is a mysql:// URL") as refused:
        Store("mysql://user:pw-secret@host/db")
    assert "pw-secret" not in str(refused.value)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PEERBOARD_DB", "postgres://user:pw-secret@127.0.0.1:1/db")
    with pytest.raises(StoreError, match=r"postgres://user:\*\*\*@127\.0\.0\.1:1/db") as unreachable:
        Store()
    assert "pw-secret" not in str(unreachable.value)
    assert list(tmp_path.iterdir()) == []


def test_version_2_judges_registered_by_runs_become_run_judges(tmp_path):
    # SQLite-only: upgrades a SQLite file of version 2 (PostgreSQL databases start at the baseline).
    import peercore.store as module
    from peercore.store.legacy import LEGACY
    from peercore.store.schema import statements

    path = tmp_path / "v2.sqlite"
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                       "applied_at TEXT NOT NULL)")
    for version, name, sql in LEGACY[:2]:
        for statement in statements(sql):
            connection.execute(statement)
        connection.execute("INSERT INTO schema_migrations VALUES (?, ?, '2025-01-01')", (version, name))
    connection.execute("INSERT INTO studies (name, created_at) VALUES ('s', '2025-01-01')")
    connection.execute("""INSERT INTO judges (study_id, name, kind, settings) VALUES
        (1, 'openai:gpt-4o', 'llm', '{"backend": "openai", "model": "gpt-4o"}'), (1, 'human:x', 'human', '{}')""")
    connection.close()
    judges = Store(path).judges.table("s").set_index("name")
    assert judges.loc["openai:gpt-4o", "origin"] == "run" and judges.loc["human:x", "origin"] == "import"
