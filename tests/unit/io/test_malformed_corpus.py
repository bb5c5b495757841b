"""Every malformed input in tests/corpus is rejected with one clear line and changes nothing.

For each file: ``peercore import FILE --study existing --db DB`` exits 2 with one line
on stderr naming the file, the line and the field (the expected message is below), and
the database is unchanged: the SHA-256 of the file after a WAL checkpoint and the
logical dump (``iterdump``) are the same before and after.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from peercore.cli import main
from peercore.store import Store

CORPUS = Path(__file__).resolve().parents[2] / "corpus"

# name -> regex the one-line error must match (after "peercore: error: ").
EXPECTED = {
    "empty.csv": r"^empty\.csv: the file is empty \(0 bytes\)$",
    "empty.jsonl": r"^empty\.jsonl: the file is empty \(0 bytes\)$",
    "blank_lines.jsonl": r"^blank_lines\.jsonl: the file holds only blank lines",
    "only_header.csv": r"^only_header\.csv, line 1: the file holds a header but no rows",
    "latin1.csv": r"^latin1\.csv, line 2: the file is not UTF-8 text \(byte 0xe9 at offset 47\)",
    "utf16.jsonl": r"^utf16\.jsonl, line 1: the file is UTF-16 text; save it as UTF-8",
    "nul_byte.csv": r"^nul_byte\.csv, line 3: the file holds a NUL byte",
    "binary.parquet": r"^binary\.parquet: not a readable Parquet file",
    "wrong_extension.txt": r"^wrong_extension\.txt: cannot tell the file type from the extension '\.txt'",
    "json_scalar.json": r"^json_scalar\.json, line 1: expected JSON objects \(records\), got int",
    "ragged_row.csv": r"^ragged_row\.csv, line 3: not valid CSV: 7 fields where the header has 5",
    "truncated.jsonl": r"^truncated\.jsonl, line 3: not valid JSON \(Unterminated string",
    "truncated_array.json": r"^truncated_array\.json, line 4: not valid JSON",
    "not_an_object.jsonl": r"^not_an_object\.jsonl, line 2: expected a JSON object per line, got list",
    "p_a_nan.jsonl": r"^p_a_nan\.jsonl, line 2, column 'p_a': p_a is nan: NaN is not valid JSON",
    "mixed_formats.jsonl": r"^mixed_formats\.jsonl, line 2: not valid JSON",
    "duplicate_key.jsonl": r"^duplicate_key\.jsonl, line 2, column 'winner': field 'winner' appears twice in one record",
    "missing_winner_column.csv": r"^missing_winner_column\.csv, line 1: missing required column\(s\) winner",
    "empty_judge.jsonl": r"^empty_judge\.jsonl, line 3, column 'judge': judge is empty",
    "mixed_records.jsonl": r"^mixed_records\.jsonl, line 2, column 'question_id': question_id is empty",
    "unknown_winner.csv": r"^unknown_winner\.csv, line 3, column 'winner': winner 'modelB' is not one of model_a, model_b, tie",
    "unknown_winner_arena.jsonl": r"^unknown_winner_arena\.jsonl, line 2, column 'winner': winner 'model_c'",
    "same_models.csv": r"^same_models\.csv, line 3, column 'model_b': model_a and model_b are both 'gpt4'",
    "p_a_out_of_range.csv": r"^p_a_out_of_range\.csv, line 3, column 'p_a': p_a '1\.5' is outside \[0, 1\]",
    "turn_not_integer.csv": r"^turn_not_integer\.csv, line 3, column 'turn': turn 'two' is not a whole number",
    "unknown_columns.csv": r"^unknown_columns\.csv, line 1: cannot tell the format from the fields \(foo, bar, baz\)",
    "identifier_too_long.csv": r"^identifier_too_long\.csv, line 3, column 'question_id': question_id is 2,000 characters long",
    "newline_in_model.jsonl": r"^newline_in_model\.jsonl, line 2, column 'model_b': model_b 'gpt\\n4' holds a line break",
    "duplicate_header.csv": r"^duplicate_header\.csv, line 1, column 'winner': column 'winner' appears twice in the header",
    "duplicate_vote_human.csv": r"^duplicate_vote_human\.csv, line 4, column 'annotator': annotator 'alice' voted twice .*first vote on line 2",
    "duplicate_question.jsonl": r"^duplicate_question\.jsonl, line 3, column 'question_id': question_id 'q1' appears twice with different text",
    "duplicate_answer.jsonl": r"^duplicate_answer\.jsonl, line 2, column 'question_id': a second answer of model 'a' to question 'q1'",
    "debate_speaker_twice.csv": r"^debate_speaker_twice\.csv, line 3, column 'speaker': speaker 's1' speaks twice in round 0",
    "formula_model.csv": r"^formula_model\.csv, line 3, column 'model_a': model_a '=HYPERLINK.* starts with '=' like a spreadsheet formula",
    "formula_judge.jsonl": r"^formula_judge\.jsonl, line 2, column 'judge': judge .@SUM.* starts with '@'",
    "formula_annotator.csv": r"^formula_annotator\.csv, line 3, column 'annotator': annotator .\+cmd.* starts with '\+'",
    "formula_question_id.jsonl": r"^formula_question_id\.jsonl, line 1, column 'question_id': question_id .-2\+3.* starts with '-'",
    "alpaca_bad_preference.json": r"^alpaca_bad_preference\.json, line 10, column 'preference': preference 3\.0 is not 1",
    "fastchat_pair_bad_winner.jsonl": r"^fastchat_pair_bad_winner\.jsonl, line 2, column 'g1_winner': g1_winner 'model_3'",
    "scaleeval_missing_score.json": r"^scaleeval_missing_score\.json, line 11, column 'Score': missing field 'Score'",
    "debate_skipped_round.csv": r"^debate_skipped_round\.csv, line 2, column 'round': debate 'd1' has rounds \[0, 2\]",
    "debate_bad_verdict.csv": r"^debate_bad_verdict\.csv, line 3, column 'verdict': verdict 'Submission 1' is not one of",
    "prd_bad_score": r"^answer_a-vs-answer_b-gpt4-reviewer_threeclass\.jsonl, line 2, column 'score': score 7 is not one of",
    "orphan_answers": r"^answers\.jsonl, line 2, column 'question_id': answer to question 'q9', which is neither",
    "conflict_question.jsonl": r"^conflict_question\.jsonl, line 1, column 'question_id': question 'q1' is already in study 'existing' "
                               r"with a different text",
    "answer_unknown_question.jsonl": r"^answer_unknown_question\.jsonl, line 1, column 'question_id': answer to question 'q404'",
    # Issue 17, item 7: one output per (instruction, generator) within a file; Parquet bytes are UTF-8 text;
    # no invisible character in an identifier (every format that checks identifiers).
    "alpaca_two_outputs.json": r"^alpaca_two_outputs\.json, line 4, column 'output_2': output_2 of model 'mine' to "
                               r"question 'alpaca:[0-9a-f]{12}' is 'I refuse\.', but line 2 \(output_2\) gives it 'Hey there'",
    "binary_not_utf8.parquet": r"^binary_not_utf8\.parquet, row 1, column 'model_b': model_b is not UTF-8 text "
                               r"\(byte 0xff at offset 2",
    "zero_width_model.csv": r"^zero_width_model\.csv, line 3, column 'model_a': model_a 'gpt\\u200b4' holds an "
                            r"invisible character, U\+200B ZERO WIDTH SPACE, at character 4; .* looks like 'gpt4'",
    "bidi_judge.jsonl": r"^bidi_judge\.jsonl, line 2, column 'judge': judge 'gpt4\\u202e' holds an invisible "
                        r"character, U\+202E RIGHT-TO-LEFT OVERRIDE",
    "soft_hyphen_annotator.csv": r"^soft_hyphen_annotator\.csv, line 3, column 'annotator': annotator 'ali\\xadce' "
                                 r"holds an invisible character, U\+00AD SOFT HYPHEN",
    "zero_width_answer_model.jsonl": r"^zero_width_answer_model\.jsonl, line 2, column 'model': model 'c\\u2060' "
                                     r"holds an invisible character, U\+2060 WORD JOINER",
}


def _entries() -> list[str]:
    return sorted(p.name for p in CORPUS.iterdir() if p.name not in ("README.md", "matrix"))


def test_corpus_is_large_and_every_entry_has_an_expectation():
    entries = _entries()
    assert len(entries) >= 30
    assert set(entries) == set(EXPECTED), "add the expected message of every corpus file"


@pytest.fixture(scope="module")
def template_db(tmp_path_factory) -> Path:
    """A database with an existing study, to prove that rejected imports leave it alone."""
    path = tmp_path_factory.mktemp("db") / "template.sqlite"
    store = Store(path)
    store.studies.create("existing")
    store.questions.add("existing", pd.DataFrame({"question_id": ["q1"], "text": ["What is 2+2?"]}))
    store.questions.add_answers("existing", pd.DataFrame({"question_id": ["q1"], "model": ["a"], "answer": ["4"]}))
    store.verdicts.add("existing", pd.DataFrame({
        "question_id": ["q1", "q1"], "model_a": ["a", "b"], "model_b": ["b", "a"], "judge": ["j", "j"],
        "winner": ["model_a", "tie"]}))
    store.checkpoint()
    store.close()
    return path


def fingerprint(path: Path) -> tuple[str, list[str]]:
    """SHA-256 of the main file after a checkpoint, and the logical dump."""
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    dump = list(connection.iterdump())
    connection.close()
    return hashlib.sha256(path.read_bytes()).hexdigest(), dump


def _reject(source: Path, db: Path, capsys) -> str:
    before = fingerprint(db)
    status = main(["import", str(source), "--study", "existing", "--db", str(db)])
    captured = capsys.readouterr()
    assert status == 2, captured.out
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err
    assert lines[0].startswith("peercore: error: ")
    assert fingerprint(db) == before
    return lines[0].removeprefix("peercore: error: ")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_malformed_input_is_rejected_and_the_database_unchanged(name, template_db, tmp_path, capsys):
    db = tmp_path / "pb.sqlite"
    db.write_bytes(template_db.read_bytes())
    message = _reject(CORPUS / name, db, capsys)
    assert re.search(EXPECTED[name], message), message


def test_huge_single_line_is_rejected_before_parsing(template_db, tmp_path, capsys):
    huge = tmp_path / "huge_line.jsonl"
    huge.write_text('{"question_id": "' + "x" * (17 * 1024 * 1024) + '"')  # 17 MiB, no line break
    db = tmp_path / "pb.sqlite"
    db.write_bytes(template_db.read_bytes())
    message = _reject(huge, db, capsys)
    assert re.search(r"^huge_line\.jsonl, line 1: the first line is longer than 16,777,216 bytes", message), message


def test_rejected_import_into_a_new_database_creates_no_file(tmp_path, capsys):
    db = tmp_path / "never.sqlite"
    assert main(["import", str(CORPUS / "unknown_winner.csv"), "--db", str(db)]) == 2
    assert "unknown_winner.csv, line 3" in capsys.readouterr().err
    assert not db.exists()
