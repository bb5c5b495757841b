"""What the order of a verdict means, and one rule for repeated votes, through ``peercore import`` (issue 18).

``model_a`` is the answer the judge saw first only where the source recorded the order
(DESIGN.md, the canonical judgment table): the importers record it per verdict
(``order_known``), a canonical file may declare it (column or ``--order``), and a pair a
judge saw in one orientation only is imported as unknown with a warning naming the option.
Position statistics read only known orders (Liusie et al. 2024, section 6: position bias
is measured over a symmetric set).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from peercore.cli import main
from peerboard_testing import make_version_8
from peercore.store import SCHEMA_VERSION, Store

HEADER = "question_id,model_a,model_b,judge,winner\n"


def run(capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def stored_order(db, study: str) -> pd.DataFrame:
    store = Store(db)
    try:
        rows = store.connect().execute(
            "SELECT v.question_id, a.text, b.text, v.order_known, v.vote, v.winner FROM verdicts v "
            "JOIN labels a ON a.study_id = v.study_id AND a.id = v.model_a "
            "JOIN labels b ON b.study_id = v.study_id AND b.id = v.model_b ORDER BY v.id").fetchall()
    finally:
        store.close()
    return pd.DataFrame([tuple(r) for r in rows], columns=["question_id", "model_a", "model_b", "order_known", "vote",
                                                          "winner"])


def test_a_fixed_orientation_is_an_unknown_order_and_the_import_names_the_option(db, tmp_path, capsys):
    """MT-Bench's human judgments as a canonical CSV: each unordered pair in one fixed orientation."""
    path = tmp_path / "fixed.csv"
    path.write_text(HEADER + "q1,gpt4,claude,j,model_a\nq2,gpt4,claude,j,model_b\nq1,claude,vicuna,j,tie\n")
    code, out, _ = run(capsys, "import", path, "--study", "s", "--db", db)
    assert code == 0
    assert "3 verdicts are on pairs of models their judge judged in one orientation only" in out
    assert "--order known" in out
    assert stored_order(db, "s")["order_known"].tolist() == [0, 0, 0]


def test_both_orientations_are_known_and_the_option_or_column_overrides(db, tmp_path, capsys):
    both = tmp_path / "both.csv"
    both.write_text(HEADER + "q1,a,b,j,model_a\nq1,b,a,j,model_b\nq2,a,c,j,tie\n")
    assert run(capsys, "import", both, "--study", "s", "--db", db)[0] == 0
    assert stored_order(db, "s")["order_known"].tolist() == [1, 1, 0]
    forced = tmp_path / "forced.csv"
    forced.write_text(HEADER + "q9,a,c,k,model_a\n")
    code, out, _ = run(capsys, "import", forced, "--study", "s", "--db", db, "--order", "known")
    assert code == 0 and "one orientation only" not in out
    declared = tmp_path / "declared.csv"
    declared.write_text(HEADER.strip() + ",order_known\nq8,a,b,m,model_a,true\nq8,b,a,m,tie,false\n")
    assert run(capsys, "import", declared, "--study", "s", "--db", db)[0] == 0
    assert stored_order(db, "s")["order_known"].tolist() == [1, 1, 0, 1, 1, 0]


def test_a_bad_order_known_value_is_refused_naming_line_and_column(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text(HEADER.strip() + ",order_known\nq1,a,b,j,model_a,true\nq2,a,b,j,tie,maybe\n")
    db = tmp_path / "pb.sqlite"
    code, out, err = run(capsys, "import", path, "--study", "s", "--db", db)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == ["peercore: error: bad.csv, line 3, column 'order_known': order_known 'maybe' "
                                        "is not true or false (whether model_a is the answer the judge saw first)"]


def test_alpacaeval_annotations_have_an_unknown_order(tmp_path, capsys):
    """AlpacaEval randomises the order its judge saw and keeps the baseline as generator_1."""
    rows = [{"instruction": f"i{k}", "output_1": f"base {k}", "output_2": f"mine {k}", "generator_1": "gpt4_turbo",
             "generator_2": "mine", "annotator": "weighted_alpaca_eval_gpt4_turbo", "preference": 1.2 + k / 10}
            for k in range(4)]
    path = tmp_path / "annotations.json"
    pd.DataFrame(rows).to_json(path, orient="records")
    db = tmp_path / "pb.sqlite"
    code, out, _ = run(capsys, "import", path, "--study", "alpaca", "--db", db)
    assert code == 0, out
    assert "one orientation only" not in out  # the format says it: no guess, no warning
    assert stored_order(db, "alpaca")["order_known"].tolist() == [0, 0, 0, 0]


def test_a_named_pipe_is_refused_at_once(tmp_path, capsys):
    """Before: ``peercore import`` of a named pipe hung until killed."""
    pipe = tmp_path / "votes.csv"
    os.mkfifo(pipe)
    code, out, err = run(capsys, "import", pipe, "--study", "s", "--db", tmp_path / "pb.sqlite")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [f"peercore: error: {pipe}: is neither a regular file nor a folder (a named "
                                        "pipe, socket or device cannot be imported)"]


def test_the_same_rows_get_the_same_votes_in_one_file_two_files_or_a_folder(tmp_path, capsys):
    """Issue 18, item 3: a comparison seen again with another verdict is a repeated vote however the rows are
    split into files (before: a vote in one file or a folder, a refused conflict across two imports)."""
    day1 = HEADER + "q1,a,b,crowd,model_a\nq2,a,b,crowd,tie\n"
    day2 = HEADER + "q1,a,b,crowd,model_b\nq1,a,b,crowd,model_b\nq3,a,b,crowd,model_a\n"
    folder = tmp_path / "days"
    folder.mkdir()
    (folder / "day1.csv").write_text(day1)
    (folder / "day2.csv").write_text(day2)
    one = tmp_path / "one.csv"
    one.write_text(day1 + day2.split("\n", 1)[1])
    results = {}
    for name, paths in (("one file", [one]), ("two imports", [folder / "day1.csv", folder / "day2.csv"]),
                        ("a folder", [folder])):
        db = tmp_path / f"{name}.sqlite"
        for path in paths:
            code, out, _ = run(capsys, "import", path, "--study", "s", "--db", db)
            assert code == 0, out
        frame = stored_order(db, "s")
        results[name] = sorted(zip(frame["question_id"], frame["winner"], frame["vote"]))
    assert results["one file"] == results["two imports"] == results["a folder"]
    assert results["one file"] == [("q1", 0, 0), ("q1", 1, 1), ("q1", 1, 2), ("q2", 2, 0), ("q3", 0, 0)]
    code, out, _ = run(capsys, "import", one, "--study", "s", "--db", tmp_path / "one file.sqlite")
    assert code == 0 and "judgments          0 added, 5 skipped as already stored" in out  # a re-import adds nothing


@pytest.fixture
def version_8(db):
    """A database at schema version 8 (before order_known) holding a run's verdicts and three imports,
    written as that version wrote them."""
    make_version_8(db)
    rows = [("canonical", "q1", "a", "b"), ("canonical", "q1", "b", "a"), ("canonical", "q2", "a", "c"),
            ("alpacaeval", "q3", "b", "c"), ("alpacaeval", "q3", "c", "b"), ("prd", "q4", "c", "a"),
            ("run", "q5", "c", "a")]
    names = ["a", "b", "c", "j-canonical", "j-alpacaeval", "j-prd", "j-run"]
    code = {name: k + 1 for k, name in enumerate(names)}
    statements = ["INSERT INTO studies (id, name, created_at) VALUES (1, 's', '2026-11-01')",
                  "INSERT INTO runs (id, study_id, kind, created_at, updated_at) VALUES ('run-1', 1, 'review', "
                  "'2026-11-01', '2026-11-01')"]
    statements += [f"INSERT INTO labels (study_id, id, text) VALUES (1, {code[n]}, '{n}')" for n in names]
    statements += [f"INSERT INTO imports (id, study_id, source, format, created_at) VALUES ({k}, 1, '{f}.csv', '{f}', "
                   "'2026-11-01')" for k, f in enumerate(("canonical", "alpacaeval", "prd"), start=1)]
    imports = {"canonical": "1", "alpacaeval": "2", "prd": "3", "run": "NULL"}
    statements += [f"INSERT INTO verdicts (study_id, question_id, model_a, model_b, judge, winner, valid, import_id, "
                   f"run_id, created_at) VALUES (1, '{q}', {code[a]}, {code[b]}, {code[f'j-{f}']}, 0, 1, {imports[f]}, "
                   f"{chr(39) + 'run-1' + chr(39) if f == 'run' else 'NULL'}, '2026-11-01')" for f, q, a, b in rows]
    if str(db).startswith("postgresql://"):
        import psycopg

        with psycopg.connect(str(db), autocommit=True) as connection:
            for statement in statements:
                connection.execute(statement)
    else:
        import sqlite3

        connection = sqlite3.connect(db, isolation_level=None)
        for statement in statements:
            connection.execute(statement)
        connection.close()
    return db


def test_migration_9_records_what_each_stored_verdict_knew_of_its_order(version_8):
    """Existing databases upgrade with their data: runs and ordered formats known, AlpacaEval unknown, other
    imports known for the pairs their judge judged both ways round (SQLite and PostgreSQL)."""
    store = Store(version_8)
    assert store.schema_version() == SCHEMA_VERSION
    store.close()
    frame = stored_order(version_8, "s")
    assert list(zip(frame["question_id"], frame["order_known"])) == [
        ("q1", 1), ("q1", 1), ("q2", 0),  # canonical: both orientations of (a, b), one of (a, c)
        ("q3", 0), ("q3", 0),             # AlpacaEval: never known
        ("q4", 1),                        # PRD
        ("q5", 1)]                        # a PeerBoard run
    assert np.array_equal(frame["vote"].to_numpy(), np.zeros(7, dtype=np.int64))
