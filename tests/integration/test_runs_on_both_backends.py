"""Review runs on PostgreSQL (issue 13): the same verdicts as on SQLite, and the runner's lock and conflict handling.

A review job runs in-process (:func:`peercore.runner.run_job_sync`, what ``peercore
review`` calls; the CLI still refuses a database URL) through the real ``openai`` SDK
against the local wire-format server (tests/fakes/llm_server.py). On PostgreSQL the runner
must treat psycopg's lock timeout as it treats SQLite's "database is locked" (wait, keep
the paid responses, retry) and psycopg's IntegrityError as sqlite3's (store the batch's
items one by one): before, either error ended the run with paid responses unstored.
"""

from __future__ import annotations

import logging
import threading

import pandas as pd
import pytest

from fakes.llm_server import FakeLLMServer
from integration.helpers import make_review_study
from peercore.app import Study
from peercore.jobs.review import ReviewJob
from peercore.reviewers import OpenAIBackend
from peercore.runner import RetryPolicy, run_job_sync
from peercore.store import Store

RETRY = RetryPolicy(max_attempts=6, base_s=0.005, cap_s=0.05)
KEY = ["question_id", "model_a", "model_b", "judge"]


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret-0000")


def _review(store: Store, server: FakeLLMServer, **options):
    job = ReviewJob("s", [OpenAIBackend("gpt-4o-mini", base_url=server.openai_base_url, timeout=10)],
                    method="verdict")
    return run_job_sync(job, store, concurrency=options.pop("concurrency", 4), retry=RETRY, **options)


def _verdicts(store: Store) -> pd.DataFrame:
    return store.verdicts.table("s", include_invalid=True).sort_values(KEY, kind="stable").reset_index(drop=True)


def test_a_review_run_stores_the_same_verdicts_on_sqlite_and_postgresql(tmp_path, pg_url, keys):
    stores = (Store(tmp_path / "run.sqlite"), Store(pg_url))
    results, seen = [], []
    with FakeLLMServer(seed=5) as server:  # one server: the same base_url in both judges' settings
        for store in stores:
            make_review_study(store, name="s", questions=4, models=3)  # 4 x 6 ordered pairs = 24 reviews
            server.reset_counts()
            results.append(_review(store, server))
            seen.append(server.requests_total)
        for result in results:
            assert result.status == "finished" and (result.done, result.failed) == (24, 0)
        assert seen == [24, 24] and results[0].run_id == results[1].run_id
        here, there = (_verdicts(store) for store in stores)
        assert len(here) == 24 and set(here["winner"].dropna()) <= {"model_a", "model_b", "tie"}
        pd.testing.assert_frame_equal(here, there, check_exact=True)
        pd.testing.assert_frame_equal(stores[0].judges.table("s"), stores[1].judges.table("s"))
        accounts = [store.runs.accounting(result.run_id) for store, result in zip(stores, results)]
        assert accounts[0] == accounts[1] and accounts[1]["unaccounted"] == 0
        assert Study(stores[0], "s").counts() == Study(stores[1], "s").counts()
        # a second run of the same job pays nothing on PostgreSQL either
        server.reset_counts()
        again = _review(stores[1], server)
        assert again.run_id == results[1].run_id and again.status == "finished" and server.requests_total == 0
    for store in stores:
        store.close()


def test_a_write_lock_held_mid_run_on_postgresql_delays_the_run_and_loses_nothing(pg_url, keys, caplog):
    # Another connection holds the database's write lock (BEGIN IMMEDIATE's advisory lock) while replies the
    # run paid for arrive: the runner's short lock timeout expires (psycopg LockNotAvailable) and it must wait
    # and retry with the paid responses in hand. No clock: the fake server holds the run's requests after the
    # first 12 replies; the lock is taken while they are held, the replies are let go, and the lock is given
    # back only once the runner has said it met the lock.
    store = Store(pg_url)
    make_review_study(store, name="s", questions=4, models=3)
    holder = Store(pg_url)
    locked_out = threading.Event()

    class Said(logging.Handler):
        def emit(self, record):
            if "database locked while writing" in record.getMessage():
                locked_out.set()

    said = Said()
    logging.getLogger("peercore.runner").addHandler(said)
    outcome: dict = {}
    try:
        with FakeLLMServer(seed=5) as server, caplog.at_level(logging.INFO, logger="peercore.runner"):
            server.hold_after(12)
            run = threading.Thread(target=lambda: outcome.setdefault("result", _review(store, server, concurrency=2)))
            run.start()
            assert server.wait_until(lambda s: s.held >= 1, timeout=120)  # mid-run, requests in flight
            with holder.transaction():
                server.release()  # the held replies arrive while another connection holds the lock
                assert locked_out.wait(120)  # the runner met the lock (and keeps the replies it paid for)
            run.join(120)
    finally:
        logging.getLogger("peercore.runner").removeHandler(said)
    assert not run.is_alive()
    result = outcome["result"]
    assert result.status == "finished" and (result.done, result.failed) == (24, 0), result.failed_items[:2]
    assert server.requests_total == 24 == len(store.verdicts.table("s", include_invalid=True))
    assert store.runs.accounting(result.run_id)["unaccounted"] == 0
    for s in (store, holder):
        s.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_batch_that_breaks_a_constraint_is_stored_item_by_item_on_both(tmp_path, request, keys, backend):
    # The first batch's transaction breaks a real CHECK constraint of the engine (sqlite3.IntegrityError,
    # psycopg.errors.CheckViolation): the runner stores that batch's items one by one, as it always did on SQLite.
    store = Store(tmp_path / "c.sqlite" if backend == "sqlite" else request.getfixturevalue("pg_url"))
    make_review_study(store, name="s", questions=2, models=3)
    add = store.verdicts.add
    broken = []

    def add_once_broken(study, frame, **kwargs):
        if not broken:
            broken.append(len(frame))
            store.connect().execute("INSERT INTO verdict_columns (study_id, name) VALUES (?, 'nonsense')",
                                    (store.studies.study_id(study),))
        return add(study, frame, **kwargs)

    store.verdicts.add = add_once_broken
    with FakeLLMServer(seed=5) as server:
        result = _review(store, server)
    assert broken and result.status == "finished" and (result.done, result.failed) == (12, 0)
    assert len(store.verdicts.table("s")) == 12 == server.requests_total
    assert store.runs.accounting(result.run_id)["unaccounted"] == 0
    store.close()
