"""Roles and the audit log in the store, on SQLite and PostgreSQL (issue 20, items 2 and 4).

Schema version 11 adds ``roles`` (natural key (study, who), a study NULL for a global role)
and ``audit_log`` (append-only); :class:`peercore.store.access.Access` (``store.access``) reads and writes
them. Who may do what is decided one layer up (``tests/unit/test_access.py``).
"""

from __future__ import annotations

import sqlite3

import pytest

from peercore.store import SCHEMA_VERSION, Store, StoreError


@pytest.fixture
def store(db):
    store = Store(db)
    store.studies.create("alpha")
    store.studies.create("beta")
    yield store
    store.close()


def test_version_11_adds_roles_and_audit_log_on_both_backends(store):
    assert SCHEMA_VERSION >= 11 and store.schema_version() == SCHEMA_VERSION
    names = store.migrations().set_index("version")["name"]
    assert "issue 20" in names[11]
    assert store.access.roles().empty and store.access.audit_log().empty


def test_a_version_10_sqlite_file_gains_the_tables_and_keeps_its_rows(tmp_path):
    """An existing database upgrades in place: migrations 11 and on run, the study it held is still there."""
    path = tmp_path / "v10.sqlite"
    with Store(path) as store:
        store.studies.create("kept")
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("DROP TABLE roles")
    connection.execute("DROP TABLE audit_log")
    connection.execute("DROP TABLE adjudication_history")  # and what later versions added
    connection.execute("DROP TABLE verdict_snapshots")
    connection.execute("ALTER TABLE studies DROP COLUMN reviewers")
    connection.execute("DELETE FROM schema_migrations WHERE version >= 11")
    connection.close()
    with Store(path) as store:
        assert store.schema_version() == SCHEMA_VERSION
        assert list(store.studies.table()["name"]) == ["kept"]
        store.access.grant_role("ada@example.com", "owner", granted_by="configuration")
        assert store.access.role_of("ada@example.com", "kept") == "owner"


def test_grant_role_has_one_row_per_study_and_who(store):
    store.access.grant_role("Ann@Example.com ", "viewer", granted_by="configuration")
    store.access.grant_role("ann@example.com", "editor", granted_by="ada@example.com")  # replaces the global one
    store.access.grant_role("ann@example.com", "annotator", study="alpha", granted_by="ada@example.com")
    store.access.grant_role("ann@example.com", "owner", study="alpha", granted_by="ada@example.com")  # replaces
    roles = store.access.roles()
    assert roles[["who", "role", "study"]].values.tolist() == [
        ["ann@example.com", "editor", None], ["ann@example.com", "owner", "alpha"]]
    assert set(roles["granted_by"]) == {"ada@example.com"}
    assert store.access.roles("beta")[["who", "role", "study"]].values.tolist() == [["ann@example.com", "editor", None]]


def test_role_of_study_overrides_global_and_the_address_beats_its_domain(store):
    """Most specific first: address in the study, domain in the study, address globally, domain globally."""
    store.access.grant_role("@example.com", "viewer", granted_by="configuration")
    store.access.grant_role("ed@example.com", "editor", granted_by="configuration")
    store.access.grant_role("@example.com", "annotator", study="alpha", granted_by="configuration")
    store.access.grant_role("ed@example.com", "viewer", study="beta", granted_by="configuration")  # lower, still wins
    assert store.access.role_of("someone@example.com") == "viewer"
    assert store.access.role_of("someone@example.com", "alpha") == "annotator"
    assert store.access.role_of("someone@example.com", "beta") == "viewer"
    assert store.access.role_of("ED@example.com") == "editor"
    assert store.access.role_of("ed@example.com", "alpha") == "annotator"  # the study's domain rule beats the global address
    assert store.access.role_of("ed@example.com", "beta") == "viewer"
    assert store.access.role_of("ed@example.com", "no such study") == "editor"
    assert store.access.role_of("someone@example.org") is None
    assert store.access.role_of("someone@sub.example.com") is None  # a domain rule is that domain only
    assert store.access.role_of("not an address") is None


def test_grant_role_refuses_bad_values_and_writes_nothing(store):
    with pytest.raises(ValueError, match="role must be one of .* got 'admin'"):
        store.access.grant_role("ann@example.com", "admin", granted_by="x")
    with pytest.raises(ValueError, match="e-mail address or '@domain'.*'ann'"):
        store.access.grant_role("ann", "viewer", granted_by="x")
    with pytest.raises(StoreError, match="no study named"):
        store.access.grant_role("ann@example.com", "viewer", study="gamma", granted_by="x")
    assert store.access.roles().empty


def test_deleting_a_study_removes_its_roles_not_its_audit_record(store):
    store.access.grant_role("ann@example.com", "owner", study="alpha", granted_by="configuration")
    store.access.record_action("ann@example.com", "delete_study", study="alpha", details={"held": {"verdicts": 3}})
    store.studies.delete("alpha")
    assert store.access.roles().empty
    log = store.access.audit_log("alpha")
    assert log[["actor", "action", "study"]].values.tolist() == [["ann@example.com", "delete_study", "alpha"]]
    assert log["details"].iloc[0] == {"held": {"verdicts": 3}}


def test_audit_log_appends_in_order_scrubs_secrets_and_filters_by_study(store):
    first = store.access.record_action("ada@example.com", "import", study="alpha", details={"file": "a.csv"})
    second = store.access.record_action("configuration", "grant_role", details={"who": "ada@example.com",
                                                                                 "api_key": "sk-should-not-be-here"})
    third = store.access.record_action("ed@example.com", "set_overlap", study="beta", details={"before": 0, "after": 2})
    assert first < second < third
    log = store.access.audit_log()
    assert log["id"].tolist() == [first, second, third]
    assert log["study"].tolist() == ["alpha", None, "beta"]
    assert log["details"].iloc[1] == {"who": "ada@example.com", "api_key": "***"}
    assert log["at"].is_monotonic_increasing
    assert store.access.audit_log("beta")["action"].tolist() == ["set_overlap"]
    with pytest.raises(ValueError, match="actor"):
        store.access.record_action(" ", "import")


def test_the_store_offers_no_way_to_change_or_remove_an_audit_record(store):
    """Append-only through the Store API: no public method updates or deletes audit_log rows."""
    import inspect

    from peercore.store import access

    source = inspect.getsource(access)
    assert "UPDATE audit_log" not in source and "DELETE FROM audit_log" not in source
    assert not [name for name in dir(store) if "audit" in name and name not in ("audit_log",)]


def test_an_audit_record_in_a_rolled_back_transaction_is_not_kept(store):
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.access.record_action("ada@example.com", "delete_study", study="alpha")
            raise RuntimeError("the write it described failed")
    assert store.access.audit_log().empty
