"""Import defects of issue 8 that are not one bad value: the summary, a closed pipe, races, budgets, bombs.

- the summary counts unparsed verdicts (stored invalid, with their raw text) and calls
  what it skipped "already stored (identical)";
- ``peercore import F | head -1`` after a committed import is exit 0, nothing on stderr;
- two imports of one question id with different texts at the same time: the second is
  refused, never attached to the first one's question (checks inside the transaction);
- the budgets of :mod:`peercore.io.rules` for Parquet and zip uploads;
- each named bomb, imported in a fresh process, stays under 2 GB of peak memory
  (``benchmarks/io_bombs.py`` measures them and prints the table).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from peercore.cli import main
from peercore.errors import JudgmentError
from peercore.store import Store
from peercore.app import Study

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))
import io_bombs  # noqa: E402

GB2 = 2 * 10**9


PYTHONPATH = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(ROOT)) if p)


def _peercore(*args, env=None, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "peercore", *args], cwd=tempfile.gettempdir(),
                            env={**os.environ, "PYTHONPATH": PYTHONPATH, **(env or {})}, **kwargs)


# --------------------------------------------------------------------------- summary


def test_the_summary_counts_unparsed_verdicts_apart(tmp_path, capsys):
    path = tmp_path / "verdicts.csv"
    path.write_text("question_id,model_a,model_b,judge,winner,valid,raw\n"
                    "q1,a,b,j,model_a,1,\nq2,a,b,j,,0,I cannot decide\nq3,a,b,j,tie,1,\n")
    db = tmp_path / "pb.sqlite"
    assert main(["import", str(path), "--db", str(db), "--study", "s"]) == 0
    out = capsys.readouterr().out
    assert "judgments          3 added (1 of them unparsed, kept as invalid), 0 skipped as already stored " \
           "(identical)" in out
    summary = Study(Store(db), "s").counts()
    assert (summary["judgments"], summary["invalid_judgments"]) == (2, 1)  # what the Studies page shows
    more = tmp_path / "more.csv"
    more.write_text(path.read_text() + "q4,a,b,j,,0,no verdict\nq5,a,b,j,model_b,1,\n")
    assert main(["import", str(more), "--db", str(db), "--study", "s"]) == 0
    out = capsys.readouterr().out
    assert "judgments          2 added (1 of them unparsed, kept as invalid), 3 skipped as already stored " \
           "(identical)" in out
    assert Store(db).studies.imports("s")["counts"].iloc[-1]["invalid_judgments_added"] == 1


# ------------------------------------------------------------------------ closed pipe


def test_a_closed_stdout_after_a_committed_import_is_not_an_error(tmp_path):
    """``peercore import F | head -1``: on main, exit 2 and 'Broken pipe' blamed on the input."""
    path = tmp_path / "votes.csv"
    path.write_text("question_id,model_a,model_b,judge,winner\nq1,a,b,j,tie\nq2,b,a,j,model_a\n")
    db = tmp_path / "pb.sqlite"
    process = _peercore("import", str(path), "--db", str(db), "--study", "s", stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)
    process.stdout.close()  # the reader is gone before the summary is printed
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 0, stderr
    assert stderr == ""
    assert len(Store(db).verdicts.table("s")) == 2  # and the import did commit


def test_head_in_a_shell_pipeline(tmp_path):
    path = tmp_path / "votes.csv"
    path.write_text("question_id,model_a,model_b,judge,winner\nq1,a,b,j,tie\n")
    db = tmp_path / "pb.sqlite"
    done = subprocess.run(["bash", "-c", f'"{sys.executable}" -m peercore import "{path}" --db "{db}" | head -1; '
                                         'echo "status=${PIPESTATUS[0]}" >&2'],
                          cwd=tempfile.gettempdir(), env={**os.environ, "PYTHONPATH": PYTHONPATH}, capture_output=True,
                          text=True)
    assert done.stdout.startswith("imported ")
    assert done.stderr.strip() == "status=0", done.stderr


# ------------------------------------------------------------------------------ races


def test_two_imports_of_one_question_id_at_once_cannot_cross(tmp_path):
    """On main the second import checked before taking the write lock, and its answer landed on the first's question."""
    db = tmp_path / "pb.sqlite"
    Store(db).studies.create("s")
    first = tmp_path / "first.jsonl"
    first.write_text(json.dumps({"question_id": "q1", "question": "What is 2+2?", "model": "a", "answer": "4"}) + "\n")
    second = tmp_path / "second.jsonl"
    second.write_text(json.dumps({"question_id": "q1", "question": "Name a colour.", "model": "b", "answer": "Blue"})
                      + "\n")
    holder = _peercore("import", str(first), "--db", str(db), "--study", "s", stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env={"PEERBOARD_TEST_PAUSE_BEFORE_COMMIT": "4"})
    try:
        waited = time.monotonic()
        line = holder.stderr.readline()  # "pausing ... before COMMIT": the first import holds the write lock
        assert "pausing" in line, line
        racer = _peercore("import", str(second), "--db", str(db), "--study", "s", stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
        out, err = racer.communicate(timeout=120)
        assert holder.wait(timeout=120) == 0
    finally:
        holder.kill()
    assert racer.returncode == 2, out
    assert "second.jsonl, line 1, column 'question_id': question 'q1' is already in study 's' with a different " \
           "text" in err, err
    assert time.monotonic() - waited >= 3  # it waited for the first import's transaction
    answers = Store(db).questions.answers("s")
    assert answers["model"].tolist() == ["a"]  # no 'Blue' answer under 'What is 2+2?'


# ----------------------------------------------------------------------------- budgets


def test_parquet_dictionary_bomb_is_refused_before_it_is_expanded(tmp_path):
    from peercore.io.importer import read_path

    path, expands = io_bombs.parquet_dictionary(tmp_path, rows=1_000, value_bytes=600_000)
    assert path.stat().st_size < 1 << 20 and expands > 512 << 20
    with pytest.raises(JudgmentError, match=r"^dictionary_bomb\.parquet, column 'rationale': expands to more than "
                                            r"512 MiB when decoded \(column 'rationale' alone: 572 MiB"):
        read_path(path)


def test_parquet_rows_over_budget_are_refused_from_the_footer(tmp_path, monkeypatch):
    import peercore.io.rules as rules
    from peercore.io.importer import read_path

    monkeypatch.setattr(rules, "MAX_ROWS", 1_000)
    pd.DataFrame({"question_id": [f"q{k}" for k in range(1_001)], "model_a": "a", "model_b": "b", "judge": "j",
                  "winner": "tie"}).to_parquet(tmp_path / "many.parquet")
    with pytest.raises(JudgmentError, match=r"^many\.parquet: holds 1,001 rows \(limit 1,000 per file\)"):
        read_path(tmp_path / "many.parquet")


def test_parquet_delta_byte_array_is_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from peercore.io.importer import read_path

    table = pa.table({"question_id": ["q1", "q2"], "model_a": ["a", "a"], "model_b": ["b", "b"], "judge": ["j", "j"],
                      "winner": ["tie", "tie"]})
    pq.write_table(table, tmp_path / "delta.parquet", use_dictionary=False,
                   column_encoding={"question_id": "DELTA_BYTE_ARRAY"})
    with pytest.raises(JudgmentError, match=r"column 'question_id' uses the DELTA_BYTE_ARRAY encoding"):
        read_path(tmp_path / "delta.parquet")


def test_honest_parquet_reads_as_before(tmp_path):
    from peercore.io.importer import read_path

    frame = pd.DataFrame({"question_id": ["1", "2"], "model_a": ["a", "b"], "model_b": ["b", "a"],
                          "judge": ["j", "k"], "winner": ["model_a", "tie"], "p_a": [0.9, None],
                          "criterion": ["help", None], "turn": [1, 2]})
    frame.to_parquet(tmp_path / "j.parquet")
    judgments = read_path(tmp_path / "j.parquet").judgments
    assert judgments["p_a"].isna().tolist() == [False, True] and judgments["turn"].tolist() == [1, 2]


def _upload(path: Path, folder: Path):
    from peercore.ui.imports import _materialise

    return _materialise(path.name, path.read_bytes(), folder)


@pytest.mark.parametrize("bomb, message", [
    (lambda folder: io_bombs.zip_ratio(folder, size=300 << 20), r"^ratio_bomb\.zip: the archive member 'votes\.jsonl' is "
                                                                r"compressed \d[\d,]* to 1 \(limit 100 to 1"),
    (lambda folder: io_bombs.zip_members(folder, members=10_001), r"^members_bomb\.zip: the archive holds 10,001 "
                                                                   r"entries \(limit 10,000\)"),
])
def test_zip_uploads_are_checked_before_anything_is_extracted(bomb, message, tmp_path):
    path, _ = bomb(tmp_path)
    target = tmp_path / "upload"
    target.mkdir()
    with pytest.raises(JudgmentError, match=message):
        _upload(path, target)
    assert not any(p.is_file() for p in target.rglob("*") if p.name != path.name)


def test_zip_members_that_leave_the_folder_are_refused(tmp_path):
    path = tmp_path / "evil.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("../outside.csv", "question_id,model_a,model_b,judge,winner\nq,a,b,j,tie\n")
    target = tmp_path / "upload"
    target.mkdir()
    with pytest.raises(JudgmentError, match=r"^evil\.zip: the archive member '\.\./outside\.csv' would land outside"):
        _upload(path, target)
    assert not (tmp_path / "outside.csv").exists()


def test_a_zip_within_budget_is_extracted_and_read(tmp_path):
    from peercore.io.importer import read_path

    path = tmp_path / "study.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("study/votes.csv", "question_id,model_a,model_b,judge,winner\nq1,a,b,j,tie\n")
        archive.writestr("study/more/votes.jsonl", json.dumps({"question_id": "q2", "model_a": "a", "model_b": "b",
                                                               "judge": "j", "winner": "model_a"}) + "\n")
    target = tmp_path / "upload"
    target.mkdir()
    assert len(read_path(_upload(path, target)).judgments) == 2


# ------------------------------------------------------------------------------- bombs


@pytest.mark.parametrize("bomb", io_bombs.BOMBS, ids=lambda bomb: bomb.name.split(" (")[0] + (
    ", large path" if "large path" in bomb.name else "") + (", JSONL" if "JSONL" in bomb.name else ""))
def test_each_named_bomb_stays_under_2_gb_and_is_refused(bomb, tmp_path):
    """Peak RSS of a fresh import process (ru_maxrss via RUSAGE_CHILDREN in a one-child wrapper)."""
    measured = io_bombs.measure(bomb, tmp_path)
    assert measured.status == 2, measured.message
    assert bomb.expect in measured.message, measured.message
    assert "Traceback" not in measured.message
    assert measured.peak < GB2, f"{bomb.name}: peak {measured.peak / 1e6:,.0f} MB"


@pytest.mark.slow
@pytest.mark.parametrize("bomb", io_bombs.HONEST, ids=lambda bomb: bomb.name)
def test_the_largest_honest_inputs_stay_under_2_gb(bomb, tmp_path):
    measured = io_bombs.measure(bomb, tmp_path)
    assert measured.accepted != bomb.refused, measured.message
    assert measured.peak < GB2, f"{bomb.name}: peak {measured.peak / 1e6:,.0f} MB"
