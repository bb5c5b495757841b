"""An event loop whose clock jumps from timer to timer: timing logic checked exactly, with no waiting.

``in_virtual_time(main, clock)`` runs ``main()`` on a loop whose ``time()`` is ``clock[0]``;
when the loop would wait for its next timer, the clock moves there instead. Used for the
runner's rate limits (tests/unit/runner, benchmarks/rate_limit_refund.py).
"""

from __future__ import annotations

import asyncio
import selectors

__all__ = ["in_virtual_time"]

# When a timer is due now and nothing else is ready, the clock moves on by this much: a
# leaky bucket whose level is a float residue above zero (1e-13) asks to be woken a
# residue later, which the clock cannot represent; real time always moves on.
_NUDGE_S = 1e-9


class _Jumping(selectors.DefaultSelector):
    """A selector that, asked to wait for the next timer, moves the clock there instead."""

    def __init__(self, clock: list[float]) -> None:
        super().__init__()
        self.clock = clock
        self.loop: asyncio.AbstractEventLoop | None = None

    def select(self, timeout=None):
        if timeout:
            self.clock[0] += timeout
        elif timeout == 0 and self.loop is not None and not self.loop._ready:  # a timer due now, nothing else
            self.clock[0] += _NUDGE_S
        return super().select(0)


def in_virtual_time(main, clock: list[float]):
    """Run ``main()`` on an event loop whose time is ``clock[0]`` and jumps from timer to timer."""
    selector = _Jumping(clock)
    loop = asyncio.SelectorEventLoop(selector)
    selector.loop = loop
    loop.time = lambda: clock[0]
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()
