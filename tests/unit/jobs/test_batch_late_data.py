"""A Ctrl-C on a batch run prints one line (issue 17's promise): a reply landing on a connection whose read was
just cancelled is no error (seen once under load in the full suite: anyio's stream protocol raised
InvalidStateError in data_received and asyncio printed a traceback under the line)."""

from __future__ import annotations

import asyncio

from peercore.jobs.batch import _late_data_is_no_error


class Loop:
    def __init__(self) -> None:
        self.reported: list[dict] = []

    def default_exception_handler(self, context: dict) -> None:
        self.reported.append(context)


def test_late_data_on_a_cancelled_read_is_dropped_and_every_other_error_reported():
    loop = Loop()
    late = {"message": "Fatal error: protocol.data_received() call failed.", "protocol": object(),
            "exception": asyncio.InvalidStateError("invalid state")}
    _late_data_is_no_error(loop, late)
    assert loop.reported == []
    other = [{"message": "Fatal error: protocol.data_received() call failed.", "protocol": object(),
              "exception": ValueError("bad")},
             {"message": "Task exception was never retrieved", "exception": asyncio.InvalidStateError("x")}]
    for context in other:
        _late_data_is_no_error(loop, context)
    assert loop.reported == other
