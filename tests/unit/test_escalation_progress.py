"""``run_cascade``'s ``on_stage`` callback (issue 24 section 1): the Reviewers & runs page shows which stage of a
cascade is running. Synthetic study: tests/integration/guarantees_study.py (stored judges ``prob`` and ``gpt``,
human labels on 50 of 80 questions), imported with ``peercore import``; stored judges make no call."""

from __future__ import annotations

import pandas as pd

from integration.guarantees_study import imported, synthetic_rows
from peercore.app.escalation import run_cascade
from peercore.store import Store


def _run(db: str, **options):
    store = Store(db, create=False)
    try:
        return run_cascade(store, "s", cascade=["prob", "gpt"], reference="human:", target_agreement=0.85, risk=0.1,
                           **options)
    finally:
        store.close()


def test_on_stage_is_called_once_per_stage_in_order_and_changes_nothing(tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "watched").mkdir()
    plain_db, watched_db = imported(tmp_path / "plain", synthetic_rows()), imported(tmp_path / "watched",
                                                                                      synthetic_rows())
    seen = []
    watched = _run(watched_db, on_stage=lambda index, source: seen.append((index, source.judge, source.entry,
                                                                           source.reviewer)))
    assert seen == [(0, "prob", "prob", None), (1, "gpt", "gpt", None)]
    plain = _run(plain_db)  # the callback only watches
    pd.testing.assert_frame_equal(pd.DataFrame(watched.stages), pd.DataFrame(plain.stages))
    assert (watched.queued, watched.escalated) == (plain.queued, plain.escalated)
