"""The canonical judgment table: validation, file formats and their error messages."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from peercore.errors import JudgmentError
from peercore.io.canonical import read_judgments
from peercore.judgments import COLUMNS, empty_judgments, judgments_from_frame, mirror

GOOD = pd.DataFrame({
    "question_id": ["q1", "q2", "q3"],
    "model_a": ["gpt", "gpt", "llama"],
    "model_b": ["llama", "claude", "claude"],
    "judge": ["human:alice", "openai:gpt-4o", "openai:gpt-4o"],
    "winner": ["model_a", "tie (bothbad)", "model_b"],
})


def test_valid_frame_gets_canonical_columns_and_dtypes():
    out = judgments_from_frame(GOOD)
    assert tuple(out.columns) == COLUMNS
    assert list(out["winner"]) == ["model_a", "tie", "model_b"]
    assert out["p_a"].isna().all()
    assert str(out["turn"].dtype) == "Int64"
    assert out["question_id"].dtype == "str"


def test_numeric_question_ids_become_text():
    out = judgments_from_frame(GOOD.assign(question_id=[1, 2.0, 3]))
    assert list(out["question_id"]) == ["1", "2", "3"]


def test_extra_columns_are_dropped_and_optional_ones_kept():
    out = judgments_from_frame(GOOD.assign(p_a=[0.9, 0.5, 0.1], turn=[1, 2, 1], tstamp=[1, 2, 3]))
    assert "tstamp" not in out.columns
    assert list(out["p_a"]) == [0.9, 0.5, 0.1]
    assert list(out["turn"]) == [1, 2, 1]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"winner": ["model_a", "modelA", "tie"]}, r"row 1, column 'winner': winner 'modelA' is not one of"),
        ({"model_b": ["llama", "gpt", "claude"]}, r"row 1, column 'model_b': model_a and model_b are both 'gpt'"),
        ({"p_a": [0.2, 1.5, 0.1]}, r"row 1, column 'p_a': p_a 1.5 is outside \[0, 1\]"),
        ({"p_a": [0.2, -0.1, 0.1]}, r"row 1, column 'p_a': p_a -0.1 is outside"),
        ({"p_a": ["0.2", "high", "0.1"]}, r"row 1, column 'p_a': p_a 'high' is not a number"),
        ({"judge": ["a", None, "b"]}, r"row 1, column 'judge': judge is empty"),
        ({"question_id": ["q1", "  ", "q3"]}, r"row 1, column 'question_id': question_id is empty"),
        ({"turn": [1, 1.5, 2]}, r"row 1, column 'turn': turn 1.5 is not a whole number"),
    ],
)
def test_bad_values_name_row_column_and_value(change, match):
    with pytest.raises(JudgmentError, match=match) as info:
        judgments_from_frame(GOOD.assign(**change))
    assert info.value.row == 1


def test_missing_column_is_named():
    with pytest.raises(ValueError, match=r"missing required column\(s\) winner \(found: question_id"):
        judgments_from_frame(GOOD.drop(columns="winner"))


def test_error_counts_other_bad_rows():
    with pytest.raises(JudgmentError, match=r"\(2 more row\(s\) like this\)"):
        judgments_from_frame(GOOD.assign(winner=["x", "y", "z"]))


def test_empty_frame_with_columns_is_allowed():
    out = judgments_from_frame(GOOD.iloc[:0])
    assert len(out) == 0 and tuple(out.columns) == COLUMNS
    assert tuple(empty_judgments().columns) == COLUMNS


def test_mirror_swaps_positions_and_verdicts():
    table = judgments_from_frame(GOOD.assign(p_a=[0.9, 0.5, 0.25]))
    swapped = mirror(table)
    assert list(swapped["model_a"]) == ["llama", "claude", "claude"]
    assert list(swapped["winner"]) == ["model_b", "tie", "model_a"]
    assert list(swapped["p_a"]) == pytest.approx([0.1, 0.5, 0.75])
    pd.testing.assert_frame_equal(mirror(swapped), table)


# ------------------------------------------------------------------------------ files


def test_csv_jsonl_parquet_round_trip(tmp_path):
    table = judgments_from_frame(GOOD.assign(p_a=[0.9, np.nan, 0.1], criterion=["helpful", None, "helpful"]))
    table.to_csv(tmp_path / "j.csv", index=False)
    table.to_json(tmp_path / "j.jsonl", orient="records", lines=True)
    table.to_parquet(tmp_path / "j.parquet")
    for name in ("j.csv", "j.jsonl", "j.parquet"):
        pd.testing.assert_frame_equal(read_judgments(tmp_path / name), table, check_dtype=True)


def test_csv_error_gives_physical_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text('question_id,model_a,model_b,judge,winner,rationale\n'
                    'q1,a,b,j,model_a,"two\nlines"\n'
                    'q2,a,b,j,nobody,x\n')
    with pytest.raises(JudgmentError, match=r"^bad.csv, line 4, column 'winner': winner 'nobody'") as info:
        read_judgments(path)
    assert info.value.line == 4 and info.value.source == "bad.csv"


def test_csv_literal_nan_probability_is_rejected(tmp_path):
    path = tmp_path / "nan.csv"
    path.write_text("question_id,model_a,model_b,judge,winner,p_a\nq1,a,b,j,model_a,0.7\nq2,a,b,j,model_a,NaN\nq3,a,b,j,tie,\n")
    with pytest.raises(JudgmentError, match=r"nan.csv, line 3, column 'p_a': p_a 'NaN' is not a number"):
        read_judgments(path)


def test_empty_cell_probability_means_not_given(tmp_path):
    path = tmp_path / "ok.csv"
    path.write_text("question_id,model_a,model_b,judge,winner,p_a\nq1,a,b,j,model_a,0.7\nq3,a,b,j,tie,\n")
    assert read_judgments(path)["p_a"].isna().tolist() == [False, True]


def test_jsonl_nan_and_truncated_lines(tmp_path):
    nan = tmp_path / "nan.jsonl"
    nan.write_text('{"question_id": 1, "model_a": "a", "model_b": "b", "judge": "j", "winner": "tie", "p_a": NaN}\n')
    with pytest.raises(JudgmentError, match=r"nan.jsonl, line 1, column 'p_a': p_a is nan"):
        read_judgments(nan)
    truncated = tmp_path / "cut.jsonl"
    truncated.write_text(json.dumps(dict(GOOD.iloc[0])) + "\n" + '{"question_id": "q2", "model_a": "a"\n')
    with pytest.raises(JudgmentError, match=r"cut.jsonl, line 2: not valid JSON"):
        read_judgments(truncated)


def test_empty_files_and_header_only(tmp_path):
    (tmp_path / "zero.csv").write_bytes(b"")
    with pytest.raises(JudgmentError, match=r"zero.csv: the file is empty \(0 bytes\)"):
        read_judgments(tmp_path / "zero.csv")
    (tmp_path / "header.csv").write_text("question_id,model_a,model_b,judge,winner\n")
    with pytest.raises(JudgmentError, match="holds no judgments"):
        read_judgments(tmp_path / "header.csv")


def test_not_utf8_is_reported_with_line(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("question_id,model_a,model_b,judge,winner\nq1,caf\xe9,b,j,tie\n".encode("latin-1"))
    with pytest.raises(JudgmentError, match=r"latin.csv, line 2: the file is not UTF-8 text \(byte 0xe9"):
        read_judgments(path)


def test_unknown_extension_and_bad_parquet(tmp_path):
    (tmp_path / "j.txt").write_text("x")
    with pytest.raises(JudgmentError, match="cannot tell the format"):
        read_judgments(tmp_path / "j.txt")
    (tmp_path / "j.parquet").write_text("not parquet")
    with pytest.raises(JudgmentError, match="not a readable Parquet file"):
        read_judgments(tmp_path / "j.parquet")
