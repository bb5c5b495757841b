"""Issue 21's acceptance: from an empty database to a real leaderboard, a judge health report and an
adjudicated debate, with the keyboard for the decision, at 1366x768, with no request leaving
127.0.0.1 (the steps are in ``journeys.py``; their times are measured by
``benchmarks/first_journey.py``, not asserted here)."""

from __future__ import annotations

from e2e_support import Server
from journeys import PRD_WEIGHTS, first_journey
from peercore.store import Store


def test_an_empty_database_to_a_leaderboard_a_health_report_and_a_decision(chromium, tmp_path):
    server = Server(tmp_path / "empty.sqlite", tmp_path / "streamlit.log")
    try:
        seen = first_journey(chromium, server)
    finally:
        server.stop()
    assert seen["errors"] == []
    assert seen["elsewhere"] == []  # nothing left 127.0.0.1
    assert PRD_WEIGHTS in seen["leaderboard_caption"]  # PRD Table 1's reviewer weights
    assert seen["health_judges"] >= 5  # PRD's five LLM reviewers (and its humans) have a health row
    assert seen["saved"].startswith("Saved: debate #")
    store = Store(tmp_path / "empty.sqlite")
    try:
        decided = store.debates.adjudications("sample")
    finally:
        store.close()
    assert list(decided["annotator"]) == ["newcomer"] and list(decided["decision"]) == ["model_a"]
