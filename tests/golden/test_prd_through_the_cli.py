"""PRD's published numbers through the command a user types, on the folder imported with ``peercore import``.

PRD (Li, Patel & Du 2023) Table 2 (win rates, Peer Rank weights, weighted Elo) and the
human-majority win rates, from ``peercore rank --study`` on the imported
``../shared/data/prd_vicuna80`` (which also holds the Guanaco models, judged by humans
only). Expected values: ``expected_results.json`` beside the data (the PRD notebook's
outputs) and the paper's Table 2 weighted Elo (1213 / 1125 / 912 / 894 / 856).

On main the "human" ranking counted every raw vote (three per pair), so GPT-4 showed .7165
instead of the human-majority .822, and ``--elo-shuffles 0`` with Peer Rank weights exited 2.

Each test runs on a SQLite file and on PostgreSQL (issue 13: the PRD numbers identical on both).
"""

from __future__ import annotations

import json

import pytest

from peercore.cli import main
from peercore.io.importer import import_path
from peercore.store import Store

pytestmark = [pytest.mark.golden, pytest.mark.slow]

PRD_MODELS = ["bard", "claude", "gpt35", "gpt4", "vicuna-13b"]
NOTEBOOK_NAME = {"gpt4": "gpt-4", "gpt35": "gpt-3.5", "bard": "bard", "claude": "claude", "vicuna-13b": "vicuna"}


@pytest.fixture(scope="module")
def prd(prd_folder, golden_db):
    db = golden_db  # a SQLite file, then a PostgreSQL schema (tests/golden/conftest.py): the same numbers on both
    import_path(prd_folder, store=Store(db), study="prd")
    expected = json.loads((prd_folder / "expected_results.json").read_text())
    return str(db), expected


def _rank(db: str, capsys, *args: str) -> dict[str, float]:
    assert main(["rank", "--study", "prd", "--db", db, "--format", "json", "--bootstrap", "0", *args]) == 0
    payload = json.loads(capsys.readouterr().out)
    return {NOTEBOOK_NAME.get(r["model"], r["model"]): r["score"] for r in payload["leaderboard"]}, payload


def test_human_majority_win_rates(prd, capsys):
    # PRD Table 2, human row: the majority of the (up to three) human votes per pair, PRD's five models.
    db, expected = prd
    contestants = [arg for m in PRD_MODELS for arg in ("--contestant", m)]
    got, payload = _rank(db, capsys, "--kind", "human", "--method", "winrate", *contestants)
    assert got == pytest.approx(expected["winrate_human"], abs=1e-4)
    assert payload["judges"] == ["human:prd"]


def test_reviewer_win_rates_and_peer_rank_weights(prd, capsys):
    # PRD Table 2: all reviewers, and weighted by Peer Rank's 5 min-max iterations of win rates.
    db, expected = prd
    got, _ = _rank(db, capsys, "--kind", "llm", "--method", "winrate")
    assert got == pytest.approx(expected["winrate_all_reviewers"], abs=1e-4)
    got, payload = _rank(db, capsys, "--kind", "llm", "--method", "winrate", "--peer-weights", "prd")
    assert got == pytest.approx(expected["winrate_all_weighted"], abs=1e-4)
    weights = {NOTEBOOK_NAME[k]: v for k, v in payload["weights"].items()}
    assert weights == pytest.approx(expected["pr_reviewer_weights_winrate_5iter"], abs=1e-4)


def test_weighted_elo_both_normalisations(prd, capsys):
    # PRD Appendix E / Table 2: weighted Elo 1213 / 1125 / 912 / 894 / 856, reproduced by weights summing to 1;
    # Algorithm 1's W / mean(W) gives 1223.4 / 1127.6 / 905.8 / 891.9 / 851.3 (200 shuffles, seed 0).
    db, _ = prd
    common = ["--kind", "llm", "--method", "elo", "--peer-weights", "prd", "--elo-shuffles", "200", "--seed", "0"]
    summed, _ = _rank(db, capsys, *common)
    assert summed == pytest.approx({"gpt-4": 1212.6, "claude": 1122.5, "vicuna": 914.2, "gpt-3.5": 893.3,
                                    "bard": 857.4}, abs=0.1)
    assert summed == pytest.approx({"gpt-4": 1213, "claude": 1125, "vicuna": 912, "gpt-3.5": 894, "bard": 856}, abs=3)
    mean, _ = _rank(db, capsys, *common, "--weight-normalisation", "mean")
    assert mean == pytest.approx({"gpt-4": 1223.4, "claude": 1127.6, "vicuna": 905.8, "gpt-3.5": 891.9,
                                  "bard": 851.3}, abs=0.1)


def test_weighted_elo_in_file_order(prd, capsys):
    # --elo-shuffles 0 is one pass in the stored order (the help's promise), with Peer Rank weights too.
    db, _ = prd
    got, _ = _rank(db, capsys, "--kind", "llm", "--method", "elo", "--peer-weights", "prd", "--elo-shuffles", "0")
    again, _ = _rank(db, capsys, "--kind", "llm", "--method", "elo", "--peer-weights", "prd", "--elo-shuffles", "0",
                     "--seed", "7")
    assert set(got) == set(NOTEBOOK_NAME.values()) and got == again  # one pass in order: no seed involved
    assert sum(got.values()) == pytest.approx(5 * 1000)  # Elo updates are zero-sum


def test_every_prd_ranking_is_identical_on_sqlite_and_postgresql(prd_folder, tmp_path, new_pg_url, capsys):
    # Issue 13: "the PRD numbers come out identical on both". PRD Table 2 (win rates, Peer Rank weights
    # of Section 3.1's 5 iterations, weighted Elo of Appendix E in stored order and shuffled) and
    # Chatbot Arena's Bradley-Terry with bootstrap intervals: the whole JSON payload, equal, not close.
    locations = [str(tmp_path / "prd.sqlite"), new_pg_url()]
    for location in locations:
        import_path(prd_folder, store=Store(location), study="prd")
    variants = [["--kind", "llm", "--method", "winrate", "--peer-weights", "prd"],
                ["--kind", "human", "--method", "winrate"],
                ["--kind", "llm", "--method", "elo", "--peer-weights", "prd", "--elo-shuffles", "0"],
                ["--kind", "llm", "--method", "elo", "--peer-weights", "prd", "--elo-shuffles", "20", "--seed", "3"],
                ["--kind", "llm", "--method", "bt", "--bootstrap", "50", "--seed", "1"]]
    for variant in variants:
        payloads = []
        for location in locations:
            assert main(["rank", "--study", "prd", "--db", location, "--format", "json", *variant]) == 0
            payloads.append(json.loads(capsys.readouterr().out))
        assert payloads[0] == payloads[1], variant
