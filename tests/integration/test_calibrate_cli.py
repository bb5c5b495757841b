"""``peercore calibrate`` as users reach it (issue 23): a judge's leaderboard anchored to human labels.

The study is imported with ``peercore import`` from a CSV (tests/integration/guarantees_study.py):
a hard judge ``gpt`` right 80% of the time, and one human vote on each comparison of the
first 50 questions. Equations: PPI++ (Angelopoulos, Duchi & Zrnic 2023, arXiv 2311.01453)
eq. (2) with Example 6.1's tuned lambda for win rates; the PPI M-estimator, eqs. (4) and
(7), for Bradley-Terry (Boyeau, Angelopoulos et al. 2024, arXiv 2403.07008, section 3).
"""

from __future__ import annotations

import json

import pytest

from peercore.cli import main
from integration.guarantees_study import MODELS, imported, run, synthetic_rows

ROW_KEYS = {"model", "score", "ci_low", "ci_high", "judge_score", "reference_score", "reference_ci_low",
            "reference_ci_high", "effective_labels"}


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    return imported(tmp_path_factory.mktemp("calibrate"), synthetic_rows())


def _json(capsys, *args) -> dict:
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


def _calibrate(capsys, db, *extra) -> dict:
    return _json(capsys, "calibrate", "--study", "s", "--db", db, "--judge", "gpt", "--reference", "human:",
                 "--format", "json", *extra)


def _rank_scores(capsys, *args) -> dict[str, float]:
    payload = _json(capsys, "rank", *args, "--bootstrap", "0", "--format", "json")
    return {row["model"]: row["score"] for row in payload["leaderboard"]}


def test_json_has_issue_23s_shape(db, capsys):
    """Issue 23 "Where people meet it": ``leaderboard`` rows with PPI++ score and interval (PPI++ eq. (2)), judge-only
    and humans-only columns and effective labels n Var(classical)/Var(PPI); ``labels``, ``effective_labels``
    (median over models), ``warnings``."""
    payload = _calibrate(capsys, db)
    assert ROW_KEYS <= set(payload["leaderboard"][0])
    assert {"labels", "effective_labels", "warnings"} <= set(payload)
    assert sorted(r["model"] for r in payload["leaderboard"]) == sorted(MODELS)
    assert payload["labels"] == 300 and payload["comparisons"] == 480
    scores = [r["score"] for r in payload["leaderboard"]]
    assert scores == sorted(scores, reverse=True)
    for row in payload["leaderboard"]:
        assert row["ci_low"] < row["score"] < row["ci_high"]
        assert row["reference_ci_low"] < row["reference_score"] < row["reference_ci_high"]
    effective = sorted(r["effective_labels"] for r in payload["leaderboard"])
    assert payload["effective_labels"] == pytest.approx((effective[1] + effective[2]) / 2)


def test_reference_score_is_peercore_rank_of_the_human_votes(db, capsys):
    """The estimand (issue 23): the reference's win rate per model as ``peercore rank --judge human: --each-vote
    --method winrate`` computes it (PRD eq. 1); with every label used, PPI++ at lambda = 0 (the humans-only
    column, PPI++ eq. (2) with lambda = 0) is that number."""
    want = _rank_scores(capsys, "--study", "s", "--db", db, "--judge", "human:", "--each-vote", "--method", "winrate")
    got = {r["model"]: r["reference_score"] for r in _calibrate(capsys, db)["leaderboard"]}
    assert got == pytest.approx(want, abs=1e-12)


def test_judge_score_is_peercore_rank_of_the_judge(db, capsys):
    """The judge-only column: the judge's own win rate over all N comparisons (PRD eq. 1; PPI++ eq. (2)'s
    unlabelled term on every comparison), as ``peercore rank --judge gpt --method winrate``."""
    want = _rank_scores(capsys, "--study", "s", "--db", db, "--judge", "gpt", "--method", "winrate")
    got = {r["model"]: r["judge_score"] for r in _calibrate(capsys, db)["leaderboard"]}
    assert got == pytest.approx(want, abs=1e-12)


def test_an_informative_judge_is_worth_more_labels_than_it_has(db, capsys):
    """PPI++ is never worse than the labels alone (PPI++ section 2, power tuning) and a judge right 80% of the time
    is worth more: effective labels n Var(classical)/Var(PPI) above the 300 labels, intervals narrower."""
    payload = _calibrate(capsys, db)
    assert payload["effective_labels"] > payload["labels"]
    for row in payload["leaderboard"]:
        assert row["ci_high"] - row["ci_low"] < row["reference_ci_high"] - row["reference_ci_low"]


def test_labels_n_seed_k_uses_n_labels(db, capsys):
    """``--labels N --seed K``: a random N of the reference's votes are the labels (issue 23's real-data protocol,
    random subsets of human votes); the same seed draws the same labels, another seed others."""
    first = _calibrate(capsys, db, "--labels", "100", "--seed", "3")
    again = _calibrate(capsys, db, "--labels", "100", "--seed", "3")
    other = _calibrate(capsys, db, "--labels", "100", "--seed", "4")
    assert first["labels"] == 100 and first["labelled_comparisons"] == 100 and first["available_labels"] == 300
    assert sum(r["labelled"] for r in first["leaderboard"]) == 200  # each labelled comparison: two models' battle
    assert first == again
    assert [r["reference_score"] for r in first["leaderboard"]] != [r["reference_score"] for r in other["leaderboard"]]


def test_bradley_terry_is_on_peercore_ranks_scale(db, capsys):
    """``--method bt``: the PPI M-estimator (PPI++ eqs. (4), (7); Boyeau et al. section 3) on the Elo scale, mean
    rating 1000 as ``peercore rank --method bt``; the judge-only ratings are that command's on the judge."""
    payload = _calibrate(capsys, db, "--method", "bt")
    rows = payload["leaderboard"]
    assert sum(r["score"] for r in rows) / len(rows) == pytest.approx(1000.0, abs=1e-6)
    assert [r["model"] for r in rows][0] == "alpha"
    want = _rank_scores(capsys, "--study", "s", "--db", db, "--judge", "gpt", "--method", "bt")
    assert {r["model"]: r["judge_score"] for r in rows} == pytest.approx(want, abs=0.5)


def test_baseline_gives_win_rates_against_it(db, capsys):
    """``--baseline M``: each model's win rate against M only (AlpacaEval's set-up; PPI++ eq. (2) per model on its
    comparisons with M); the baseline's own row is left out."""
    rows = _calibrate(capsys, db, "--baseline", "delta")["leaderboard"]
    assert sorted(r["model"] for r in rows) == ["alpha", "beta", "gamma"]
    assert all(r["score"] > 0.5 for r in rows)


def test_a_study_without_human_labels_gets_one_line(tmp_path, capsys):
    """Issue 23 acceptance: a study without human labels gets a clear message, not an error trace (PPI++ eq. (2)
    needs n >= 1 labels)."""
    db = imported(tmp_path, synthetic_rows(humans=False))
    assert main(["calibrate", "--study", "s", "--db", db, "--judge", "gpt", "--reference", "human:"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("peercore: error: no human labels")


def test_human_votes_on_other_comparisons_are_no_labels(tmp_path, capsys):
    """Labels are drawn from inside the judge's comparisons (issue 23, the population): human votes only on
    comparisons the judge never judged give the same one-line message."""
    frame = synthetic_rows()
    frame = frame[~((frame["judge"] == "gpt") & frame["question_id"].isin([f"q{q}" for q in range(50)]))]
    db = imported(tmp_path, frame)
    assert main(["calibrate", "--study", "s", "--db", db, "--judge", "gpt", "--reference", "human:"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no human labels" in err


@pytest.mark.parametrize("args, option", [
    (["--judge", "gpt-5"], "--judge"),
    (["--judge", "gpt", "--labels", "0"], "--labels"),
    (["--judge", "gpt", "--labels", "301"], "labels"),
    (["--judge", "gpt", "--method", "bt", "--baseline", "delta"], "baseline"),
    (["--judge", "gpt", "--baseline", "omega"], "baseline"),
    (["--judge", "gpt", "--seed", "3"], "--seed"),
])
def test_bad_options_exit_2_naming_the_option(db, capsys, args, option):
    """Bad input is one line naming the option, exit 2 (the command line's convention; PPI++ eq. (2) needs
    1 <= n <= the labels there are)."""
    argv = ["calibrate", "--study", "s", "--db", db, "--reference", "human:", *args]
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and option in err


def test_as_a_process(db):
    """``python -m peercore calibrate`` as a user types it (PPI++ eq. (2)); the table names its columns."""
    result = run("calibrate", "--study", "s", "--db", db, "--judge", "gpt", "--reference", "human:")
    assert result.returncode == 0, result.stderr
    assert "reference_score" in result.stdout and "alpha" in result.stdout
    json_result = run("calibrate", "--study", "s", "--db", db, "--judge", "gpt", "--reference", "human:",
                      "--format", "json", "--method", "bt")
    assert json_result.returncode == 0, json_result.stderr
    assert json.loads(json_result.stdout)["labels"] == 300
