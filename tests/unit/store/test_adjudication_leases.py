"""Migration 6: leases on debates for several annotators (issue 13), with a clock the tests own."""

from __future__ import annotations

import sqlite3

import pytest

from peercore import assignment
from peercore.assignment import DecisionRefused, identity, lease_seconds, offerable, stamp
from peercore.store import SCHEMA_VERSION, Store
from peercore.store.core import _now
from peercore.store.legacy import LEGACY
from peercore.store.schema import statements

T0 = 1_800_000_000.0  # a fixed clock (2027-01-15); every call below passes now=


@pytest.fixture
def store(db):  # both backends (tests/conftest.py)
    s = Store(db)
    s.studies.create("s")
    s.debates.add_many("s", [({"debate_key": f"d{k}", "question_id": f"q{k}", "model_a": "a", "model_b": "b",
                               "status": "unresolved", "criterion": "help" if k % 2 else "harm",
                               "scenario": "math" if k < 3 else "code"},
                         [{"round": 0, "position": 0, "speaker": "judge-x", "verdict": "model_a"}])
                        for k in range(1, 6)])
    s.debates.add("s", {"debate_key": "agreed", "question_id": "q9", "model_a": "a", "model_b": "b",
                        "status": "agreed", "consensus": "tie"}, [])
    yield s
    s.close()


def take(store, who, t, *, lease=60, **filters):
    item = assignment.next_item(store, "s", who, lease=lease, now=t, **filters)
    return None if item is None else item.debate_id


def test_overlap_one_never_offers_a_held_debate_and_an_expired_lease_returns_it(store):
    store.studies.update_settings("s", overlap=1)
    assert [take(store, who, T0) for who in ("ann", "ben", "cat")] == [1, 2, 3]
    assert [take(store, who, T0 + 30) for who in ("ann", "ben", "cat")] == [1, 2, 3]  # asking again renews
    leases = store.debates.leases("s", now=T0 + 30).set_index("annotator")
    assert leases.loc["ann", "expires_at"] == stamp(T0 + 90) and leases["live"].all()
    # ann's process dies: nobody gets debate 1 until her lease runs out, then the next asker does.
    assert take(store, "dan", T0 + 89) == 4
    assert take(store, "eve", T0 + 89) == 5
    assert take(store, "fay", T0 + 89.9) is None
    assert take(store, "fay", T0 + 90) == 1  # expiry is exclusive: at T0+90 the lease is over
    assert store.debates.leases("s", now=T0 + 90)[["debate_id", "annotator"]].values.tolist()[0] == [1, "fay"]
    assert "ann" not in set(store.debates.leases("s")["annotator"])  # expired leases are cleared by the next claim


def test_one_lease_per_annotator_and_a_decision_ends_it(store):
    assert take(store, "ann", T0) == 1
    store.debates.skip(1, "ann")
    assert take(store, "ann", T0 + 1) == 2  # taking debate 2 gives debate 1 back
    assert store.debates.leases("s", now=T0 + 1)[["debate_id", "annotator"]].values.tolist() == [[2, "ann"]]
    assert assignment.decide(store, 2, "ann", "model_b")
    assert store.debates.leases("s").empty
    assert take(store, "ann", T0 + 2, criterion="help") == 3  # filters narrow what is taken
    assert take(store, "ann", T0 + 3, scenario="code", criterion="harm") == 4
    assert assignment.release(store, "s", "ann") == 1 and store.debates.leases("s").empty
    # Leases are no data: the study's revision (the cache stamp) does not move.
    revision = store.studies.revision("s")
    take(store, "ann", T0 + 4)
    assert store.studies.revision("s") == revision


def test_overlap_zero_lets_everyone_take_everything(store):
    assert store.studies.settings("s")["overlap"] == 0
    assert [take(store, who, T0) for who in ("ann", "ben", "cat")] == [1, 1, 1]
    for who in ("ann", "ben", "cat"):
        assignment.decide(store, 1, who, "tie")
    assert take(store, "dan", T0) == 1  # four decisions, still open to a fourth annotator
    assignment.decide(store, 1, "dan", "tie")
    assert store.debates.adjudications("s")["annotator"].tolist() == ["ann", "ben", "cat", "dan"]


def test_overlap_two_offers_each_debate_to_two_and_refuses_a_third_decision(store):
    store.studies.update_settings("s", overlap=2)
    assert [take(store, who, T0) for who in ("ann", "ben", "cat")] == [1, 1, 2]
    queue = store.debates.queue("s", annotator="cat", overlap=2)
    assert queue.loc[queue["id"] == 1, "leased"].tolist() == [2]  # held by ann and ben
    assert assignment.decide(store, 1, "ann", "model_a")
    assert not assignment.decide(store, 1, "ann", "model_b")  # her change of mind replaces it: still one
    assert take(store, "dan", T0 + 1) == 2  # debate 1: one decision + ben's lease = 2
    # ben's lease runs out, eve takes debate 1 and decides it; ben's late decision is refused.
    assert take(store, "eve", T0 + 61) == 1
    assignment.decide(store, 1, "eve", "model_a")
    with pytest.raises(DecisionRefused, match=r"debate #1 already has the 2 decision\(s\) it needs \(by ann, eve\)"):
        assignment.decide(store, 1, "ben", "tie")
    decided = store.debates.adjudications("s")
    assert sorted(decided.loc[decided["debate_id"] == 1, "annotator"]) == ["ann", "eve"]
    assert decided.loc[decided["annotator"] == "ann", "verdict"].tolist() == ["model_b"]
    # a late decision is still stored while the overlap is not full
    assert [take(store, who, T0 + 62) for who in ("fay", "gus", "hal")] == [2, 2, 3]  # cat's, dan's ran out
    assert take(store, "ida", T0 + 200) == 2  # fay's and gus's leases ran out too
    assert assignment.decide(store, 2, "fay", "tie")  # fay decides late: debate 2 is not full, stored
    assert take(store, "jo", T0 + 201) == 3  # debate 2: fay's decision + ida's lease fill it
    assert sorted(store.debates.adjudications("s").query("debate_id == 2")["annotator"]) == ["fay"]


def test_decided_debates_leave_and_agreed_debates_never_enter(store):
    store.studies.update_settings("s", overlap=1)
    seen = []
    for k in range(6):
        debate = take(store, "ann", T0 + k)
        if debate is None:
            break
        seen.append(debate)
        assignment.decide(store, debate, "ann", "tie")
    assert seen == [1, 2, 3, 4, 5]  # debate 6 is agreed: never offered
    assert take(store, "ben", T0 + 10) is None


def test_lease_rules_and_identity():
    assert lease_seconds(None) == 600.0 and lease_seconds("2.5") == 2.5
    for bad in (0, -1, "ten", float("nan"), 86_401, True):
        with pytest.raises(ValueError, match="lease_seconds"):
            lease_seconds(bad)
    assert offerable(decisions=0, leased_by_others=0, overlap=1, decided_by_me=False)
    assert not offerable(decisions=0, leased_by_others=1, overlap=1, decided_by_me=False)
    assert offerable(decisions=1, leased_by_others=0, overlap=2, decided_by_me=False)
    assert not offerable(decisions=1, leased_by_others=1, overlap=2, decided_by_me=False)
    assert offerable(decisions=9, leased_by_others=9, overlap=0, decided_by_me=False)
    assert not offerable(decisions=0, leased_by_others=0, overlap=0, decided_by_me=True)
    assert stamp(T0) < stamp(T0 + 0.001) < stamp(T0 + 10) and len(stamp(T0)) == len(_now())
    assert identity(None) == identity({}) == ("typed", "")
    assert identity({"is_logged_in": False}) == ("signed_out", "")
    assert identity({"is_logged_in": True, "name": "Ann Lee", "email": "ann@example.org"}) == ("signed_in",
                                                                                            "ann@example.org")
    assert identity({"is_logged_in": True, "name": " Ann Lee "}) == ("signed_in", "Ann Lee")


def test_lease_seconds_from_the_environment(monkeypatch):
    monkeypatch.setenv("PEERBOARD_LEASE_SECONDS", "3")
    assert lease_seconds() == 3.0
    monkeypatch.setenv("PEERBOARD_LEASE_SECONDS", "soon")
    with pytest.raises(ValueError, match="PEERBOARD_LEASE_SECONDS must be a number"):
        lease_seconds()


def test_a_version_5_file_gets_the_lease_table(tmp_path):
    # SQLite-only: upgrades a SQLite file of version 5 (PostgreSQL databases start at the baseline, version 8).
    path = tmp_path / "v5.sqlite"
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                       "applied_at TEXT NOT NULL)")
    connection.execute("BEGIN")
    for version, name, sql in LEGACY:
        if version > 5:
            break
        for statement in statements(sql):
            connection.execute(statement)
        connection.execute("INSERT INTO schema_migrations VALUES (?, ?, '2026-01-01')", (version, name))
    connection.execute("INSERT INTO studies (id, name, created_at, overlap) VALUES (1, 'old', '2026-01-01', 1)")
    connection.execute("INSERT INTO debates (id, study_id, debate_key, question_id, model_a, model_b, status, "
                       "created_at) VALUES (1, 1, 'd1', 'q1', 'a', 'b', 'unresolved', '2026-01-01')")
    connection.execute("COMMIT")
    connection.close()
    store = Store(path)
    assert 6 in store.migrations()["version"].tolist() and store.schema_version() == SCHEMA_VERSION
    assert assignment.next_item(store, "old", "ann", lease=5, now=T0).debate_id == 1
    assert assignment.next_item(store, "old", "ben", lease=5, now=T0) is None
    store.studies.delete("old")  # leases go with their debates
    assert store.connect().execute("SELECT COUNT(*) FROM adjudication_leases").fetchone()[0] == 0
    store.close()


@pytest.mark.parametrize("seed", range(30))
def test_the_claim_offers_the_first_debate_the_rule_allows(db, seed):
    """Random states (decisions, skips, live and expired leases, overlap 0-2): the debate the
    SQL hands out is the lowest one :func:`peercore.assignment.offerable` allows."""
    import random

    rng = random.Random(seed)
    store = Store(db)
    store.studies.create("s")
    debates = range(1, 6)
    store.debates.add_many("s", [({"debate_key": f"d{k}", "question_id": f"q{k}", "model_a": "a", "model_b": "b",
                                   "status": "unresolved"}, []) for k in debates])
    overlap = rng.choice([0, 1, 1, 2, 2])
    store.studies.update_settings("s", overlap=overlap)
    people = ["ann", "ben", "cat", "dan", "eve", "fay"]
    decided = {(d, p) for d in debates for p in people if rng.random() < 0.15}
    skipped = {(d, p) for d in debates for p in people if (d, p) not in decided and rng.random() < 0.1}
    # one lease per annotator at most (as claims leave it), live or already expired at T0
    leases = {p: (rng.choice(debates), T0 + rng.choice([-5, 30, 30])) for p in people if rng.random() < 0.9}
    connection = store.connect()
    connection.executemany("INSERT INTO adjudications (debate_id, annotator, verdict, created_at) "
                           "VALUES (?, ?, 'tie', 'x')", sorted(decided))
    connection.executemany("INSERT INTO adjudication_skips (debate_id, annotator, created_at) VALUES (?, ?, 'x')",
                           sorted(skipped))
    connection.executemany("INSERT INTO adjudication_leases (debate_id, annotator, expires_at, created_at) "
                           "VALUES (?, ?, ?, 'x')", [(d, p, stamp(u)) for p, (d, u) in leases.items()])
    live = {(d, p) for p, (d, u) in leases.items() if u > T0}
    who = rng.choice(people)

    def allowed(debate):
        return (debate, who) not in skipped and offerable(
            decisions=sum((debate, p) in decided for p in people),
            leased_by_others=sum((debate, p) in live for p in people if p != who),
            overlap=overlap, decided_by_me=(debate, who) in decided)

    mine = [d for (d, p) in live if p == who and allowed(d)]
    expected = mine[0] if mine else next((d for d in debates if allowed(d)), None)
    assert take(store, who, T0) == expected, (overlap, who, sorted(decided), sorted(live), sorted(skipped))
    store.close()


def test_on_postgresql_lease_times_are_the_servers_so_a_fast_clock_cannot_take_a_held_debate(pg_url, monkeypatch):
    # Issue 13: annotators on several machines share one PostgreSQL. Lease expiry is judged by the
    # server's clock, so a machine whose clock runs an hour ahead neither sees ann's 60-second lease as
    # expired nor clears it (with each machine's own clock it took debate 1 from her).
    import time as time_module

    shared = Store(pg_url)
    shared.studies.create("s")
    shared.studies.update_settings("s", overlap=1)
    shared.debates.add_many("s", [({"debate_key": f"d{k}", "question_id": f"q{k}", "model_a": "a", "model_b": "b",
                                    "status": "unresolved"}, []) for k in (1, 2)])
    assert assignment.next_item(shared, "s", "ann", lease=60).debate_id == 1
    real = time_module.time
    monkeypatch.setattr(time_module, "time", lambda: real() + 3600)  # the other machine's clock
    assert assignment.next_item(shared, "s", "ben", lease=60).debate_id == 2
    assert shared.debates.leases("s").set_index("annotator").loc["ann", "live"]
    assert abs(shared.clock() - real()) < 60  # the server's clock, not the fast one
