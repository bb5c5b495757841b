"""Exports (CSV formula neutralisation, JSONL, Parquet) and the import / export / rank --study commands.

The commands run on both backends (``db``: a SQLite file, then a PostgreSQL schema; issue 13).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from peercore.cli import main
from peercore.io.export import neutralise_formulas, table_bytes, write_table
from peercore.store import Store
from peercore.app import Study


@pytest.fixture
def judgments_csv(tmp_path):
    path = tmp_path / "judgments.csv"
    path.write_text("question_id,model_a,model_b,judge,winner,p_a,rationale\n"
                    "q1,a,b,j,model_a,0.9,=HYPERLINK(\"http://x\")\n"
                    "q2,b,a,j,model_b,,-5 points for b\n"
                    "q3,a,c,k,tie,0.5,@fine\n"
                    "q4,c,b,k,model_a,,plain\n")
    return path


# ------------------------------------------------------------------------ export


def test_formula_cells_are_neutralised_and_numbers_are_not():
    frame = pd.DataFrame({"text": ["=1+1", "+x", "-x", "@x", "\tx", "\rx", "ok", None, "a=b"],
                          "score": [-0.5, 1, 2, 3, 4, 5, 6, 7, 8], "=col": ["v"] * 9})
    out = neutralise_formulas(frame)
    assert out["text"].tolist()[:7] == ["'=1+1", "'+x", "'-x", "'@x", "'\tx", "'\rx", "ok"]
    assert pd.isna(out["text"].iloc[7]) and out["text"].iloc[8] == "a=b"
    assert out["score"].tolist() == frame["score"].tolist()
    assert list(out.columns) == ["text", "score", "'=col"]
    assert frame["text"].iloc[0] == "=1+1"  # the input is not modified


def test_csv_jsonl_parquet_round_trips(tmp_path):
    frame = pd.DataFrame({"model": pd.array(["a", "=b", None], dtype="str"), "score": [1.5, -2.0, np.nan],
                          "rank": pd.array([1, 2, None], dtype="Int64")})
    csv = pd.read_csv(io.BytesIO(table_bytes(frame, format="csv")))
    assert csv["model"].tolist()[:2] == ["a", "'=b"] and csv["score"].tolist()[:2] == [1.5, -2.0]
    lines = table_bytes(frame, format="jsonl").decode().splitlines()
    assert [json.loads(line) for line in lines] == [{"model": "a", "score": 1.5, "rank": 1},
                                                     {"model": "=b", "score": -2.0, "rank": 2},
                                                     {"model": None, "score": None, "rank": None}]
    write_table(frame, tmp_path / "t.parquet", format="parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "t.parquet"), frame)
    with pytest.raises(ValueError, match="format must be one of csv, jsonl, parquet; got 'xlsx'"):
        table_bytes(frame, format="xlsx")


# ---------------------------------------------------------------------- commands


def test_import_prints_added_and_skipped(judgments_csv, tmp_path, capsys, db):
    assert main(["import", str(judgments_csv), "--db", str(db), "--study", "demo"]) == 0
    out = capsys.readouterr().out
    assert "into study 'demo'" in out and "judgments          4 added, 0 skipped as already stored (identical)" in out
    assert main(["import", str(judgments_csv), "--db", str(db), "--study", "demo"]) == 0
    assert "judgments          0 added, 4 skipped as already stored (identical)" in capsys.readouterr().out
    source = Store(db).studies.source("demo")
    assert [i["format"] for i in source["imports"]] == ["canonical", "canonical"]
    assert source["imports"][0]["counts"]["judgments"] == {"added": 4, "skipped": 0}


def test_database_location_from_the_environment(judgments_csv, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PEERBOARD_DB", str(tmp_path / "env.sqlite"))
    assert main(["import", str(judgments_csv)]) == 0
    assert f"database: {tmp_path / 'env.sqlite'}" in capsys.readouterr().out
    assert Study(Store(tmp_path / "env.sqlite"), "judgments").counts()["judgments"] == 4  # study named after the file


def test_export_judgments_csv_is_neutralised(judgments_csv, tmp_path, capsysbinary, db):
    assert main(["import", str(judgments_csv), "--db", str(db), "--study", "demo"]) == 0
    capsysbinary.readouterr()
    assert main(["export", "--study", "demo", "--what", "judgments", "--format", "csv", "--db", str(db)]) == 0
    exported = pd.read_csv(io.BytesIO(capsysbinary.readouterr().out), dtype=str, keep_default_na=False)
    assert exported["rationale"].tolist() == ["'=HYPERLINK(\"http://x\")", "'-5 points for b", "'@fine", "plain"]
    assert exported.columns.tolist() == ["question_id", "model_a", "model_b", "judge", "winner", "p_a", "criterion",
                                         "turn", "round", "rationale"]


def test_export_leaderboard_jsonl_and_parquet(judgments_csv, tmp_path, capsysbinary, db):
    main(["import", str(judgments_csv), "--db", str(db), "--study", "demo"])
    capsysbinary.readouterr()
    assert main(["export", "--study", "demo", "--what", "leaderboard", "--format", "jsonl", "--method", "winrate",
                 "--db", str(db)]) == 0
    rows = [json.loads(line) for line in capsysbinary.readouterr().out.decode().splitlines()]
    assert [r["model"] for r in rows] == ["a", "c", "b"] and set(rows[0]) == {"model", "score", "rank", "ci_low",
                                                                              "ci_high", "battles", "preliminary"}
    target = tmp_path / "judgments.parquet"
    assert main(["export", "--study", "demo", "--what", "judgments", "--format", "parquet", "--output", str(target),
                 "--judge", "k", "--db", str(db)]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(target), Store(db).verdicts.table("demo", judges=["k"]))


def test_export_errors_are_one_line(tmp_path, judgments_csv, capsys, db):
    assert main(["export", "--study", "x", "--what", "judgments", "--format", "csv", "--db",
                 str(tmp_path / "none.sqlite")]) == 2
    assert capsys.readouterr().err.startswith("peercore: error: no PeerBoard database at")
    main(["import", str(judgments_csv), "--db", str(db), "--study", "demo"])
    capsys.readouterr()
    assert main(["export", "--study", "nope", "--what", "judgments", "--format", "csv", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no study named 'nope'" in err and "studies are ['demo']" in err


def test_rank_agree_bias_on_a_stored_study(judgments_csv, tmp_path, capsys, db):
    main(["import", str(judgments_csv), "--db", str(db), "--study", "demo"])
    capsys.readouterr()
    assert main(["rank", "--study", "demo", "--db", str(db), "--method", "winrate", "--format", "csv"]) == 0
    from_store = capsys.readouterr().out
    assert main(["rank", str(judgments_csv), "--method", "winrate", "--format", "csv"]) == 0
    assert from_store == capsys.readouterr().out
    assert main(["bias", "--study", "demo", "--db", str(db), "--format", "json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"j", "k"}
    assert main(["rank", str(judgments_csv), "--study", "demo", "--db", str(db)]) == 2
    assert "give either a judgments FILE or --study NAME" in capsys.readouterr().err
    assert main(["rank"]) == 2
    capsys.readouterr()


def test_rejected_import_through_the_console_script(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question_id": "q", "model_a": "a", "model_b": "b", "judge": "j", "winner": "A"}\n')
    done = subprocess.run([sys.executable, "-m", "peercore.cli", "import", str(bad), "--db", str(tmp_path / "x.sqlite")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("peercore: error: bad.jsonl, line 1, column 'winner': winner 'A' is not one of "
                           "model_a, model_b, tie (or 'tie (bothbad)')\n")
