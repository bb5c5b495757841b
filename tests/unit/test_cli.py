"""The peercore command line: outputs and one-line errors with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from peerboard_testing import make_judgments
from peercore.cli import main


@pytest.fixture
def judgments_file(tmp_path):
    rows = ([("a", "b", "model_a", "gpt")] * 6 + [("b", "a", "model_b", "gpt")] * 6
            + [("b", "c", "model_a", "gpt")] * 6 + [("c", "b", "tie", "claude")] * 2
            + [("a", "b", "model_a", "human:x")] * 5 + [("a", "b", "tie", "human:y")] * 2)
    path = tmp_path / "j.csv"
    make_judgments(rows).to_csv(path, index=False)
    return path


def test_rank_json_shape(judgments_file, capsys):
    assert main(["rank", str(judgments_file), "--method", "bt", "--bootstrap", "50", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == {"leaderboard", "weights", "method", "peer_weights", "verdicts", "judgments", "judges",
                            "warnings", "options", "merged"} and payload["weights"] is None
    assert payload["options"] == {"intervals": "bootstrap", "reweight": False, "prior": None, "min_battles": 30}
    assert [row["model"] for row in payload["leaderboard"]] == ["a", "b", "c"]
    assert set(payload["leaderboard"][0]) == {"model", "score", "rank", "ci_low", "ci_high", "battles", "preliminary",
                                              "sandwich_low", "sandwich_high", "rank_worst"}
    assert payload["verdicts"] == "hard" and payload["judgments"] == 27
    # 27 verdicts: every contestant is preliminary, and the output says the numbers are unreliable
    assert all(row["preliminary"] for row in payload["leaderboard"])
    assert any("only 27 judgments" in w for w in payload["warnings"])
    assert payload["leaderboard"][0]["ci_low"] < payload["leaderboard"][0]["score"]


def test_rank_judge_filter_and_csv(judgments_file, capsys):
    assert main(["rank", str(judgments_file), "--method", "winrate", "--judge", "human:", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "model,score,rank,ci_low,ci_high,battles,rank_worst,preliminary"
    assert lines[1].startswith("a,0.857142857") and lines[2].startswith("b,0.142857142")


def test_rank_table_output(judgments_file, capsys):
    assert main(["rank", str(judgments_file), "--method", "elo"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Elo from 27 judgments") and "model" in out


def test_peer_weights_reported(tmp_path, capsys):
    path = tmp_path / "peer.csv"
    make_judgments([("a", "b", "model_a", "a"), ("b", "a", "model_b", "b"), ("a", "b", "model_b", "b")]).to_csv(path, index=False)
    assert main(["rank", str(path), "--method", "winrate", "--peer-weights", "prd", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["weights"] == {"a": 1.0, "b": 0.0}


def test_bad_file_is_one_line_exit_2(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("question_id,model_a,model_b,judge,winner\nq1,a,b,j,model_a\nq2,a,a,j,tie\n")
    done = subprocess.run([sys.executable, "-m", "peercore.cli", "rank", str(path)], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("peercore: error: bad.csv, line 3, column 'model_b'")
    assert done.stdout == ""


@pytest.mark.parametrize("argv", [
    ["rank", "missing.csv"],
    ["rank", "x.csv", "--method", "glicko"],
    ["rank", "x.csv", "--bootstrap", "-5"],
    ["nonsense"],
])
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as info:
        status = main(argv)
        raise SystemExit(status)
    assert info.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_unknown_judge_is_reported(judgments_file, capsys):
    assert main(["rank", str(judgments_file), "--judge", "nobody"]) == 2
    assert "judge 'nobody' matches no judge" in capsys.readouterr().err


def test_agree_json_and_prefix_reference(judgments_file, capsys):
    assert main(["agree", str(judgments_file), "--judge", "gpt", "--reference", "human:", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == {"judge", "n", "agreement", "cohen_kappa", "fleiss_kappa", "unparsed", "reference_votes"}
    # make_judgments gives every row its own question id, so no verdict has a reference: n = 0
    assert payload["n"] == 0 and payload["agreement"] is None


def test_agree_matches_reversed_orientation(tmp_path, capsys):
    rows = [("a", "b", "model_a", "gpt"), ("b", "a", "model_b", "human:x"), ("b", "a", "model_a", "human:y"),
            ("b", "a", "model_b", "human:z")]
    path = tmp_path / "agree.csv"
    make_judgments(rows, question_id="q1").to_csv(path, index=False)
    assert main(["agree", str(path), "--judge", "gpt", "--reference", "human:", "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["n"], got["agreement"], got["cohen_kappa"], got["reference_votes"]) == (1, 1.0, None, 3.0)
    assert main(["agree", str(path), "--judge", "gpt", "--reference", "human:", "--reference-mode", "votes", "--format", "json"]) == 0
    votes = json.loads(capsys.readouterr().out)
    assert votes["n"] == 3 and votes["agreement"] == pytest.approx(2 / 3)


def test_agree_never_compares_a_judge_with_its_own_votes(tmp_path, capsys):
    # Issue 8: `agree --judge human:expert_0 --reference human:` matched expert_0 against its own votes.
    rows = [("a", "b", "model_a", "human:e0"), ("a", "b", "model_a", "human:e0"), ("a", "b", "model_b", "human:e1")]
    path = tmp_path / "self.csv"
    make_judgments(rows, question_id="q1").to_csv(path, index=False)
    assert main(["agree", str(path), "--judge", "human:e0", "--reference", "human:", "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["n"] == 2 and got["agreement"] == 0.0  # e0 against e1 only (its own two votes would say 1.0)
    assert main(["agree", str(path), "--judge", "human:", "--reference", "human:", "--format", "json"]) == 0
    table = {row["judge"]: row for row in json.loads(capsys.readouterr().out)}
    assert table["human:e0"]["agreement"] == 0.0 and table["human:e1"]["n"] == 1


def test_bias_json(tmp_path, capsys):
    rows = [("a", "b", "model_a", "j"), ("b", "a", "model_a", "j"), ("a", "b", "model_a", "j"), ("b", "a", "tie", "j")]
    path = tmp_path / "bias.csv"
    make_judgments(rows, question_id="q").to_csv(path, index=False)
    assert main(["bias", str(path), "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)["j"]
    assert payload["n"] == 4 and payload["n_decisive"] == 3 and payload["p_first"] == 1.0
    assert payload["n_pairs"] == 4 and payload["swap_consistency"] == 0.0


def test_a_database_url_is_never_taken_for_a_folder(tmp_path, monkeypatch, capsys):
    # Issue 8: PEERBOARD_DB=postgresql://... silently created a SQLite file under a folder named "postgresql:".
    # Issue 13: a postgresql:// URL is the team store; any other URL is refused, neither repeats a password.
    path = tmp_path / "j.csv"
    make_judgments([("a", "b", "model_a", "gpt")]).to_csv(path, index=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PEERBOARD_DB", "mysql://me:s3cret-password@127.0.0.1:1/peer")
    assert main(["import", str(path), "--study", "s"]) == 2
    err = capsys.readouterr().err
    assert "$PEERBOARD_DB is a mysql:// URL" in err and "postgresql://" in err and "s3cret" not in err, err
    assert main(["rank", "--study", "s", "--db", "sqlite:///x.db"]) == 2
    assert "--db is a sqlite:// URL" in capsys.readouterr().err
    # A PostgreSQL server that is not there: exit 2 naming the (redacted) URL, before anything else.
    monkeypatch.setenv("PEERBOARD_DB", "postgresql://me:s3cret-password@127.0.0.1:1/peer")
    for argv in (["import", str(path), "--study", "s"], ["rank", "--study", "s"], ["runs", "--study", "s"],
                 ["import", str(path), "--study", "s", "--db", "postgresql://me:s3cret-password@127.0.0.1:1/peer"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "postgresql://me:***@127.0.0.1:1/peer" in err and "s3cret" not in err, err
    assert not list(tmp_path.glob("postgresql*")) and not list(tmp_path.glob("mysql*"))


# ------------------------------------------------------------------------ issue 11 options


@pytest.fixture
def answered_file(tmp_path):
    """Battles with the answers' texts and a question category as extra columns of the file."""
    rng = np.random.default_rng(0)
    models = ["base", "terse", "wordy"]
    rows = []
    for q in range(40):
        # each answer's length varies by question, so which answer is longer is not fixed by the pair
        text = {"base": "b" * int(200 * rng.uniform(0.3, 3)), "terse": "t" * int(100 * rng.uniform(0.3, 3)),
                "wordy": "w" * int(400 * rng.uniform(0.3, 3)) + "\n# Heading\n- a\n- b\n**bold**"}
        for a in models:
            for b in models:
                if a != b:
                    longer = len(text[a]) > len(text[b])
                    rows.append({"question_id": f"q{q}", "model_a": a, "model_b": b, "judge": "gpt",
                                 "winner": "model_a" if (longer if rng.random() < 0.8 else not longer) else "model_b",
                                 "answer_a": text[a], "answer_b": text[b],
                                 "category": "maths" if q % 2 else "writing"})
    path = tmp_path / "answered.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_rank_against_a_baseline_from_a_file_with_answers(answered_file, capsys):
    assert main(["rank", str(answered_file), "--method", "winrate", "--baseline", "base", "--lc-rounds", "20",
                 "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    rows = {r["model"]: r for r in payload["leaderboard"]}
    assert set(rows) == {"base", "terse", "wordy"}
    assert rows["wordy"]["avg_length"] > rows["terse"]["avg_length"] and rows["base"]["n_draws"] == 40
    assert {"win_rate", "discrete_win_rate", "standard_error", "n_wins", "n_wins_base", "n_draws", "avg_length",
            "lc_win_rate"} <= set(rows["wordy"])
    assert payload["baseline"]["difficulty"] == "joint fit of 2 models"  # issue 22: always the joint fit
    assert main(["rank", str(answered_file), "--method", "winrate", "--baseline", "base", "--lc-rounds", "0"]) == 0
    out = capsys.readouterr().out
    assert "lc_win_rate" in out and "instruction difficulty joint fit of 2 models" in out


def test_rank_with_style_control_from_answer_texts(answered_file, capsys):
    assert main(["rank", str(answered_file), "--method", "bt", "--control", "length", "--control", "markdown",
                 "--bootstrap", "0", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload["style"]) == {"length", "header", "list", "bold"}
    assert {"plain_score", "plain_rank", "rank_change", "sandwich_low", "rank_worst"} <= set(payload["leaderboard"][0])
    assert main(["rank", str(answered_file), "--method", "bt", "--control", "length", "--bootstrap", "0"]) == 0
    assert "Style coefficients" in capsys.readouterr().out


def test_a_parquet_file_gives_its_extra_columns_as_a_csv_does(answered_file, tmp_path, capsys):
    """A judgment FILE's extra columns (answers, category) are read only where a command needs them;
    from Parquet only those columns are read again. The same table as CSV and as Parquet gives the
    same AlpacaEval baseline table (length-controlled, Dubois et al. 2024, eq. 1) and per-category ranks."""
    parquet = tmp_path / "answered.parquet"
    pd.read_csv(answered_file).to_parquet(parquet, index=False)
    for command in (["--method", "winrate", "--baseline", "base", "--lc-rounds", "20"],
                    ["--method", "winrate", "--by", "category", "--bootstrap", "0"]):
        outputs = []
        for path in (answered_file, parquet):
            assert main(["rank", str(path), *command, "--format", "json"]) == 0
            outputs.append(json.loads(capsys.readouterr().out))
        outputs[1].pop("source", None), outputs[0].pop("source", None)
        assert outputs[0] == outputs[1]


def test_rank_by_category_side_by_side(answered_file, capsys):
    assert main(["rank", str(answered_file), "--method", "winrate", "--by", "category", "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    assert "score (maths)" in out and "rank (writing)" in out and "Judgments per category" in out
    assert main(["rank", str(answered_file), "--method", "winrate", "--by", "category", "--group", "maths",
                 "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert list(payload["groups"]) == ["maths"] and payload["counts"]["maths"]["judgments"] == 20 * 6
    assert main(["rank", str(answered_file), "--group", "maths"]) == 2
    assert "--group needs --by" in capsys.readouterr().err
    # a warning every group shares is said once, not once per group (the ten-category PRD study printed it ten times)
    from types import SimpleNamespace

    from peercore.cli.analysis import grouped_warnings as _grouped_warnings

    grouped = SimpleNamespace(by="category", rankings={
        "maths": SimpleNamespace(warnings=("mixed selection: x", "few battles: a")),
        "writing": SimpleNamespace(warnings=("mixed selection: x",))})
    assert _grouped_warnings(grouped) == ["every category: mixed selection: x", "category maths: few battles: a"]


def test_rank_sandwich_prior_reweight_and_min_battles(judgments_file, capsys):
    assert main(["rank", str(judgments_file), "--method", "bt", "--intervals", "sandwich", "--prior", "200",
                 "--reweight", "--min-battles", "5", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["options"] == {"intervals": "sandwich", "reweight": True, "prior": 200.0, "min_battles": 5}
    assert all(r["ci_low"] == r["sandwich_low"] for r in payload["leaderboard"])
    assert [r["preliminary"] for r in payload["leaderboard"]] == [False, False, False]  # 19, 27, 8 battles >= 5
    assert main(["rank", str(judgments_file), "--method", "bt", "--reweight", "--format", "json"]) == 0
    flat = json.loads(capsys.readouterr().out)["leaderboard"]
    spread = lambda rows: max(r["score"] for r in rows) - min(r["score"] for r in rows)  # noqa: E731
    assert spread(payload["leaderboard"]) < spread(flat)  # the prior pulls towards 1000
    assert main(["rank", str(judgments_file), "--method", "winrate", "--reweight"]) == 2
    assert "Bradley-Terry options" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["rank", str(judgments_file), "--prior", "-3"])


def test_a_length_column_that_is_not_a_number_is_refused_with_its_row(tmp_path, capsys):
    path = tmp_path / "lengths.csv"
    pd.DataFrame({"question_id": ["1", "2"], "model_a": ["a", "a"], "model_b": ["b", "b"], "judge": "j",
                  "winner": ["model_a", "model_b"], "length_a": ["12", "long"], "length_b": [3, 4]}).to_csv(path,
                                                                                                    index=False)
    assert main(["rank", str(path), "--method", "winrate", "--baseline", "a"]) == 2
    err = capsys.readouterr().err
    assert "line 3" in err and "length_a 'long' is not a length" in err


def test_agree_alpha_and_bias_model(judgments_file, answered_file, capsys):
    assert main(["agree", str(judgments_file), "--alpha", "--judge", "human:", "--judge", "gpt", "--rounds", "50",
                 "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["raters"] == ["gpt", "human:x", "human:y"]
    assert payload["units"] == 0 and payload["alpha"] is None   # every verdict is its own question: no unit shared
    assert main(["agree", str(answered_file), "--alpha", "--judge", "gpt", "--judge", "gpt", "--rounds", "0"]) == 2
    assert "at least two raters" in capsys.readouterr().err
    assert main(["agree", str(judgments_file), "--alpha", "--judge", "human:", "--reference", "gpt"]) == 2
    assert main(["agree", str(judgments_file), "--judge", "human:"]) == 2
    assert "give --reference" in capsys.readouterr().err
    assert main(["bias", str(answered_file), "--model", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    biases = {(r["judge"], r["bias"]) for r in payload["biases"]}
    assert biases == {("gpt", "position"), ("gpt", "length")}  # gpt is no contestant: no self term
    length = next(r for r in payload["biases"] if r["bias"] == "length")
    assert length["elo"] > 0 and length["significant"]
    assert main(["bias", str(answered_file), "--model", "--family", "terse=lab", "--family", "wordy=lab"]) == 0
    assert "longer answer" in capsys.readouterr().out
    assert main(["bias", str(answered_file), "--model", "--family", "nonsense"]) == 2
    assert main(["bias", str(answered_file), "--family", "a=b"]) == 2
