"""The runner's plumbing from libraries: the tenacity retry policy, aiolimiter's buckets, the run's future.

Timing is checked in virtual time (:mod:`virtual_time`) or with recorded waits: no test
here waits on the wall clock.
"""

from __future__ import annotations

import asyncio

import pytest

from peercore.reviewers._sdk import should_retry
from peercore.reviewers.base import BackendError, MissingCredentials, RetryableError
from peercore.runner import RetryPolicy, _TokenBucket
from virtual_time import in_virtual_time


def test_a_refund_gives_back_what_the_estimate_overcharged():
    clock = [0.0]

    async def main():
        bucket = _TokenBucket(600, burst_s=1.0, minimum=0.0)  # 10 tokens/s, a bucket of 10
        await bucket.take(10)   # charged 10 up front
        bucket.adjust(-8)       # the call used 2
        await bucket.take(8)    # goes at once: 8 of the 10 came back
        at_once = clock[0]
        await bucket.take(10)   # the bucket is full again after 1 s
        return at_once, clock[0]

    assert in_virtual_time(main, clock) == (0.0, pytest.approx(1.0))


def test_requests_go_first_come_first_served_whatever_their_size():
    clock = [0.0]
    order = []

    async def main():
        bucket = _TokenBucket(600, burst_s=1.0, minimum=0.0)
        await bucket.take(10)  # empty now

        async def take(name, amount):
            await bucket.take(amount)
            order.append((name, clock[0]))

        big = asyncio.ensure_future(take("big", 10))
        await asyncio.sleep(0)  # the big one asks first
        await asyncio.gather(big, *(take(f"small{k}", 1) for k in range(3)))

    in_virtual_time(main, clock)
    assert [name for name, _ in order] == ["big", "small0", "small1", "small2"]
    assert order[0][1] == pytest.approx(1.0)


@pytest.mark.parametrize("error, retried", [
    (RetryableError("429", status=429, retry_after=2.0), True), (RetryableError("503", status=503), True),
    (TimeoutError("slow"), True), (ConnectionResetError("reset"), True), (BackendError("400"), False),
    (MissingCredentials("set OPENAI_API_KEY"), False), (ValueError("a bug"), False), (asyncio.CancelledError(), False),
])
def test_should_retry_is_the_one_decision(error, retried):
    assert should_retry(error) is retried


def test_the_policy_retries_with_waits_from_retry_after_then_gives_up():
    waits: list[float] = []
    calls = []

    async def sleep(delay):
        waits.append(delay)

    async def main():
        async for attempt in RetryPolicy(max_attempts=3, base_s=0.001, cap_s=0.001).retrying(sleep=sleep):
            with attempt:
                calls.append(attempt.retry_state.attempt_number)
                raise RetryableError("429", status=429, retry_after=4.0 + len(calls))

    with pytest.raises(RetryableError):
        asyncio.run(main())
    assert calls == [1, 2, 3] and waits == [5.0, 6.0]  # the last attempt is followed by no wait


def test_a_permanent_error_is_raised_at_once():
    calls = []

    async def main():
        async for attempt in RetryPolicy().retrying():
            with attempt:
                calls.append(1)
                raise BackendError("400 bad request")

    with pytest.raises(BackendError, match="400"):
        asyncio.run(main())
    assert calls == [1]


def test_the_jitter_follows_the_runners_seed():
    from random import Random

    policy = RetryPolicy(base_s=1.0, cap_s=8.0)
    assert [policy.delay(k, rng=Random(7)) for k in range(4)] == [policy.delay(k, rng=Random(7)) for k in range(4)]
