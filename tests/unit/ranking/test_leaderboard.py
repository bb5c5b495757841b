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
    extra = () if method != "bt" else ("sandwich_low", "sandwich_high")  # no bootstrap: no rank spread
    assert tuple(board.table.columns) == LEADERBOARD_COLUMNS + extra
    assert list(board.table["model"]) == ["a", "b", "c"]
    assert list(board.table["rank"]) == [1, 2, 3]
    spread = leaderboard(table, method=method, elo_shuffles=5, bootstrap=20).table
    assert tuple(spread.columns) == LEADERBOARD_COLUMNS + extra + ("rank_worst",)
    assert board.weights is None and board.n_judgments == len(table)


def test_prefix_selects_judges(table):
    assert set(select_judges(table, ["human:"])["judge"]) == {"human:1", "human:2"}
    with pytest.raises(ValueError, match=r"judge 'llm:' matches no judge; judges are \['gpt', 'human:1', 'human:2'\]"):
        select_judges(table, ["llm:"])


def test_bradley_terry_options_reach_the_table(table):
    close = make_judgments([("a", "b", "model_a")] * 6 + [("a", "b", "model_b")] * 4 + [("b", "c", "model_a")] * 6
                           + [("b", "c", "model_b")] * 4 + [("c", "a", "model_b")] * 6 + [("c", "a", "model_a")] * 4)
    sandwich = leaderboard(close, method="bt", intervals="sandwich").table.set_index("model")
    assert (sandwich["ci_low"] == sandwich["sandwich_low"]).all()
    assert (sandwich["rank"] <= sandwich["rank_worst"]).all() and (sandwich["rank_worst"] > sandwich["rank"]).any()
    plain = leaderboard(table, method="bt").table.set_index("model")["score"]
    prior = leaderboard(table, method="bt", prior=100.0).table.set_index("model")["score"]
    assert (prior - 1000).abs().max() < (plain - 1000).abs().max()  # the prior pulls towards the mean
    with pytest.raises(ValueError, match="Bradley-Terry options"):
        leaderboard(table, method="winrate", reweight=True)
    with pytest.raises(ValueError, match="intervals must be one of"):
        leaderboard(table, method="bt", intervals="profile")


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


def _peer_table():
    # a, b, c review each other; a is the strongest and most often right.
    rows = ([("a", "b", "model_a", "a")] * 3 + [("b", "c", "model_a", "a")] * 3 + [("a", "c", "model_a", "b")] * 2
            + [("b", "a", "model_a", "b")] + [("c", "a", "model_b", "c")] * 2 + [("c", "b", "model_a", "c")] * 2)
    return make_judgments(rows)


@pytest.mark.parametrize("normalisation", ["sum", "mean"])
def test_weighted_elo_in_stored_order(normalisation):
    # PRD Appendix E: `rank --method elo --peer-weights prd --elo-shuffles 0` used to exit 2
    # ("elo_shuffles must be >= 1"); 0 means one pass over the stored order.
    from peercore.ranking.elo import elo_ratings

    table = _peer_table()
    board = leaderboard(table, method="elo", peer_weights="prd", elo_shuffles=0, weight_normalisation=normalisation)
    weights = board.weights.to_dict()
    want = elo_ratings(table, weights=weights, shuffles=0, weight_normalisation=normalisation)
    assert board.table.set_index("model")["score"].to_dict() == pytest.approx(want.to_dict())


def test_weighted_elo_defaults_to_weights_that_sum_to_one():
    # PRD Table 2's weighted Elo multiplies each update by the raw weight (summing to 1).
    from peercore.ranking.elo import elo_ratings

    table = _peer_table()
    board = leaderboard(table, method="elo", peer_weights="prd", elo_shuffles=0)
    raw = table["judge"].map(board.weights).to_numpy(dtype=float)
    assert board.weights.sum() == pytest.approx(1.0)
    want = elo_ratings(table, row_weights=raw, shuffles=0)
    assert board.table.set_index("model")["score"].to_dict() == pytest.approx(want.to_dict())
    mean = leaderboard(table, method="elo", peer_weights="prd", elo_shuffles=0, weight_normalisation="mean")
    assert mean.table["score"].tolist() != pytest.approx(board.table["score"].tolist())


def test_unknown_weight_normalisation(table):
    with pytest.raises(ValueError, match=r"weight_normalisation must be one of \('sum', 'mean'\), got 'median'"):
        leaderboard(table, method="elo", weight_normalisation="median")
