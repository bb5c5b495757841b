"""Migration 7: provider batches and their request lines, written before each step of a batch run."""

from __future__ import annotations

import sqlite3

import psycopg

import pytest

from peercore.store import Store, StoreError


def _requests(n: int, token: str = "tok") -> list[dict]:
    return [{"custom_id": f"{token}-{i}", "cache_key": f"key{i}", "item_key": f"item{i}",
             "request": {"messages": [{"role": "user", "content": f"q{i}"}], "max_tokens": 8, "api_key": "sk-secret"}}
            for i in range(n)]


def test_a_batch_is_recorded_once_with_its_lines(db):  # both backends (tests/conftest.py)
    store = Store(db)
    assert store.runs.add_batch("tok", run_id="run-1", provider="openai", judge="openai:gpt-4o", base_url=None,
                                requests=_requests(3))
    # planning the same token again (a resume) adds nothing
    assert not store.runs.add_batch("tok", run_id="run-1", provider="openai", judge="openai:gpt-4o", base_url=None,
                                    requests=_requests(5))
    [row] = store.runs.batches("run-1")
    assert (row["status"], row["n_requests"], row["batch_id"], row["input_file_id"]) == ("planned", 3, None, None)
    lines = store.runs.batch_requests("tok")
    assert [line["custom_id"] for line in lines] == ["tok-0", "tok-1", "tok-2"]
    assert lines[0]["request"]["api_key"] == "***"  # a secret-named field never reaches the file
    assert store.runs.batched_calls("run-1") == {f"key{i}": {"status": "pending", "error": None} for i in range(3)}
    assert store.runs.batches("run-2") == []


def test_batch_updates_and_results(db):  # both backends (tests/conftest.py)
    store = Store(db)
    store.runs.add_batch("tok", run_id="run-1", provider="anthropic", judge="anthropic:claude", base_url=None,
                         requests=_requests(2))
    store.runs.update_batch("tok", status="creating", intent_at="2026-01-01T00:00:00.000+00:00")
    store.runs.update_batch("tok", status="submitted", batch_id="msgbatch_1")
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['run_id'\]"):
        store.runs.update_batch("tok", run_id="other")
    with pytest.raises(StoreError, match="no batch 'nope'"):
        store.runs.update_batch("nope", status="ended")
    with pytest.raises((sqlite3.IntegrityError, psycopg.IntegrityError)):
        store.runs.update_batch("tok", status="lost")  # not a status
    call = {"cache_key": "key0", "backend": "anthropic", "model": "claude", "request": {"messages": []},
            "response": {"text": "Verdict: Answer 1"}, "prompt_tokens": 5, "completion_tokens": 3, "run_id": "run-1",
            "item_key": "item0"}
    store.runs.store_batch_results("tok", [{"custom_id": "tok-0", "status": "succeeded"},
                                           {"custom_id": "tok-1", "status": "expired", "error": "expired"}], [call])
    assert store.runs.cached_call("key0")["response"] == {"text": "Verdict: Answer 1"}
    assert store.runs.cached_call("key0")["item_key"] == "item0"
    assert store.runs.batched_calls("run-1") == {"key0": {"status": "succeeded", "error": None},
                                                 "key1": {"status": "expired", "error": "expired"}}
    assert store.runs.batches("run-1")[0]["batch_id"] == "msgbatch_1"


def test_results_and_their_calls_land_together(db):  # both backends (tests/conftest.py)
    store = Store(db)
    store.runs.add_batch("tok", run_id="run-1", provider="openai", judge="openai:gpt-4o", base_url=None,
                         requests=_requests(1))
    good = {"cache_key": "key0", "backend": "openai", "model": "gpt-4o", "request": {}, "response": {}}
    bad = {**good, "cache_key": "key1", "unknown_option": 1}
    with pytest.raises(TypeError):
        store.runs.store_batch_results("tok", [{"custom_id": "tok-0", "status": "succeeded"}], [good, bad])
    assert store.runs.cached_call("key0") is None  # the call stored before the failure was rolled back too
    assert store.runs.batched_calls("run-1")["key0"]["status"] == "pending"
