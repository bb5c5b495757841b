"""The leaderboard orchestration used by the CLI and the dashboard."""

from __future__ import annotations

import pytest

from peerboard_testing import make_judgments
from peercore.ranking.leaderboard import LEADERBOARD_COLUMNS, leaderboard, select_judges


@pytest.fixture
def table():
    rows = ([("a", "b", "model_a", "human:1")] * 8 + [("b", "c", "model_a", "human:2")] * 8
            + [("c", "a", "model_b", "gpt")] * 5 + [("a", "b", "tie", "gpt")] * 2)
    return make_judgments(rows)


@pytest.mark.parametrize("method", ["winrate", "elo", "bt"])
def test_columns_and_order(table, method):
    board = leaderboard(table, method=method, elo_shuffles=5)
    assert tuple(board.table.columns) == LEADERBOARD_COLUMNS
    assert list(board.table["model"]) == ["a", "b", "c"]
    assert list(board.table["rank"]) == [1, 2, 3]
    assert board.weights is None and board.n_judgments == len(table)


def test_prefix_selects_judges(table):
    assert set(select_judges(table, ["human:"])["judge"]) == {"human:1", "human:2"}
    with pytest.raises(ValueError, match=r"judge 'llm:' matches no judge; judges are \['gpt', 'human:1', 'human:2'\]"):
        select_judges(table, ["llm:"])


def test_bootstrap_fills_intervals(table):
    board = leaderboard(table, method="bt", bootstrap=100, seed=1)
    assert board.table["ci_low"].notna().all()
    assert (board.table["ci_low"] <= board.table["score"]).all()


def test_peer_weights_need_contestant_judges(table):
    with pytest.raises(ValueError, match="are not contestants"):
        leaderboard(table, peer_weights="prd")


def test_peer_weights_on_peer_reviews():
    rows = [("a", "b", "model_a", "a"), ("b", "a", "model_b", "a"), ("a", "b", "model_a", "b"),
            ("b", "a", "model_a", "b")]
    board = leaderboard(make_judgments(rows), method="winrate", peer_weights="prd")
    assert board.weights.to_dict() == {"a": 1.0, "b": 0.0}
    assert board.peer_rank.iterations == 5


def test_bad_options(table):
    with pytest.raises(ValueError, match="method must be one of"):
        leaderboard(table, method="glicko")
    with pytest.raises(ValueError, match="peer_weights must be one of"):
        leaderboard(table, peer_weights="yes")
