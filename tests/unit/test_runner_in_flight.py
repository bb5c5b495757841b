"""The runner says how many paid calls are in flight (issue 21, "Runs": a cancelled run waits for them).

The calls are held by the backend until the test lets them go (a gate), and the test
waits for them to arrive on a condition: no clock.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from peercore.jobs.pricing import Price, PriceTable
from peercore.reviewers.base import ChatRequest, Completion
from peercore.runner import RetryPolicy, Runner, start_run
from peercore.store import Store
from runner.fakes import EchoJob, FakeBackend

FAST = RetryPolicy(max_attempts=2, base_s=0.001, cap_s=0.002)
PRICES = PriceTable({"fake": {"judge": Price(input=1.0, output=2.0)}})


class GatedBackend(FakeBackend):
    """Every call arrives (counted under ``arrivals``) and waits for ``gate`` before it is answered."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.arrivals = threading.Condition()
        self.arrived = 0

    async def complete(self, request: ChatRequest) -> Completion:
        with self.arrivals:
            self.arrived += 1
            self.arrivals.notify_all()
        await asyncio.to_thread(self.gate.wait)
        return await super().complete(request)

    def wait_for_arrivals(self, count: int) -> bool:
        with self.arrivals:
            return self.arrivals.wait_for(lambda: self.arrived >= count, timeout=60)


@pytest.fixture
def store(db):  # tests/conftest.py: a SQLite file path, then a PostgreSQL URL
    s = Store(db)
    s.studies.create("demo")
    yield s
    s.close()


def test_a_runner_before_its_run_has_no_call_in_flight(store):
    assert Runner(store, prices=PRICES).calls_in_flight == 0


def test_the_handle_counts_the_calls_a_cancelled_run_waits_for(store):
    backend = GatedBackend()
    handle = start_run(EchoJob("demo", backend, 10), store, concurrency=3, retry=FAST, prices=PRICES)
    try:
        assert backend.wait_for_arrivals(3)
        assert handle.calls_in_flight == 3  # one per worker, each held by the gate
        handle.cancel()
        assert handle.phase == "cancelling"
        assert handle.calls_in_flight == 3  # still out while the gate holds them: what the cancel waits for
    finally:
        backend.gate.set()
    result = handle.wait(60)
    # The run's loop sees the cancel within its 50 ms poll: items may end after the gate opens.
    assert result.done >= 3 and result.failed == 0, result
    assert handle.calls_in_flight == 0  # ended: nothing out

