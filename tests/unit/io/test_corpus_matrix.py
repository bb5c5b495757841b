"""The rule x format matrix (tests/corpus/matrix): every rule refused the same way on every read path.

Each file of the matrix holds valid records and one bad one (``make_matrix.py`` beside
the files wrote them and ``expected.json``). Each goes through ``peercore import`` twice:

- **small path**: the file as committed (< 1 MiB, read row by row);
- **large path**: the same file with valid records inserted before the bad one until it
  passes 1 MiB, which sends canonical CSV / JSONL / Parquet and Arena files to the fast
  (Arrow / pandas) reader first; it must give up and the careful reader name the row.

Both must exit 2 with one line naming the file, the line (or Parquet row) and the field,
without a traceback, and leave the database byte-for-byte unchanged (checksum after a WAL
checkpoint, and the logical dump). Also here: the rules a committed file cannot show
(a 17 MB line, a symbolic link out of a folder) and verdicts that contradict stored ones.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from io_corpus_support import CORPUS, make_template_db, reject

MATRIX = CORPUS / "matrix"
EXPECTED: dict[str, dict] = json.loads((MATRIX / "expected.json").read_text())
LARGE = 1 << 20  # the fast path starts at 1 MiB


def _matrix_module():
    spec = importlib.util.spec_from_file_location("make_matrix", MATRIX / "make_matrix.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _matrix_module()


@pytest.fixture(scope="module")
def template_db(tmp_path_factory) -> Path:
    return make_template_db(tmp_path_factory.mktemp("matrix") / "template.sqlite")


@pytest.fixture
def db(template_db, tmp_path) -> Path:
    path = tmp_path / "pb.sqlite"
    path.write_bytes(template_db.read_bytes())
    return path


def test_the_matrix_is_large_and_complete():
    files = sorted(p.name for p in MATRIX.iterdir() if p.name not in ("make_matrix.py", "expected.json", "README.md"))
    assert files == sorted(EXPECTED)
    assert len(files) >= 100
    formats = {e["format"] for e in EXPECTED.values()}
    assert formats == set(MAKE.FORMATS)  # canonical CSV/JSONL/Parquet, Arena, FastChat, AlpacaEval, PRD, ...
    rules = {e["rule"] for e in EXPECTED.values()}
    assert {"nan", "infinity", "overflow", "negative", "list", "deep", "boolean", "surrogate"} <= rules


def _expected_message(name: str, entry: dict, *, line: int | None, row: int | None) -> str:
    shown = re.escape(entry.get("file") or name)
    where = f", line {line}" if line is not None else f", row {row}"
    field = f", column '{re.escape(entry['field'])}'" if entry["blames_field"] else ""
    return f"^{shown}{where}{field}: .*{entry['problem']}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_small_path(name, db, capsys):
    entry = EXPECTED[name]
    message = reject(MATRIX / name, db, capsys)
    assert re.search(_expected_message(name, entry, line=entry["line"], row=entry["row"]), message), message


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_large_path(name, db, tmp_path, capsys):
    entry = EXPECTED[name]
    path, line, row = _padded(MATRIX / name, entry, tmp_path)
    data = next(path.rglob("*.jsonl")) if path.is_dir() else path
    assert data.stat().st_size > LARGE
    message = reject(path, db, capsys)
    assert re.search(_expected_message(name, entry, line=line, row=row), message), message


# ------------------------------------------------------------------------- padding


def _padding_records(entry: dict, size: int, *, width=lambda record: len(json.dumps(record)) + 1) -> list[dict]:
    """Valid records of the entry's format (distinct keys) until ``width`` adds up past ``size`` bytes."""
    make = MAKE.FORMATS[entry["format"]][0]
    records, total, k = [], 0, 1000
    while total <= size:
        record = make(k)
        if entry["format"] in ("answers_jsonl", "answers_csv"):
            record["model"] = f"pad-{k}"
        records.append(record)
        total += width(record)
        k += 1
    return records


def _padded(source: Path, entry: dict, folder: Path) -> tuple[Path, int | None, int | None]:
    """A copy of ``source`` past 1 MiB, valid records before the bad one; (path, its new line, its new row)."""
    writer = entry["writer"]
    if writer == "prd":
        target = folder / source.name
        inner = next(source.rglob("*.jsonl"))
        padded_file = target / inner.relative_to(source)
        padded_file.parent.mkdir(parents=True)
        records = _padding_records(entry, int(LARGE * 1.1))
        padded_file.write_text("".join(json.dumps(r) + "\n" for r in records) + inner.read_text(encoding="utf-8"),
                               encoding="utf-8")
        return target, entry["line"] + len(records), None
    target = folder / source.name
    if writer == "jsonl":
        records = _padding_records(entry, int(LARGE * 1.1))
        target.write_bytes("".join(json.dumps(r) + "\n" for r in records).encode() + source.read_bytes())
        return target, entry["line"] + len(records), None
    if writer == "array":
        records = _padding_records(entry, int(LARGE * 1.1))
        text = source.read_text(encoding="utf-8")
        assert text.startswith("[\n")
        target.write_text("[\n" + "".join(json.dumps(r) + ",\n" for r in records) + text[2:], encoding="utf-8")
        return target, entry["line"] + len(records), None
    if writer == "csv":
        raw = source.read_bytes()
        header, rest = raw.split(b"\n", 1)
        columns = header.decode().split(",")

        def cells(record: dict) -> str:
            return ",".join(str({"rationale": "", "vote": 0, **record}.get(c, "")) for c in columns)

        rows = [cells(r) for r in _padding_records(entry, int(LARGE * 1.1), width=lambda r: len(cells(r)) + 1)]
        target.write_bytes(header + b"\n" + ("\n".join(rows) + "\n").encode() + rest)
        return target, entry["line"] + len(rows), None
    # Parquet: valid rows (with a random rationale, so the file passes 1 MiB) before the bad file's rows,
    # concatenated as Arrow tables (through pandas a NaN would turn into null).
    table = pq.read_table(source)
    count = 24_000
    pad = pd.DataFrame([MAKE.canonical(k) for k in range(1000, 1000 + count)])
    pad["vote"] = 0
    columns = {}
    for name in table.column_names:
        kind = table.schema.field(name).type
        values = pad[name].tolist()
        if pa.types.is_list(kind):
            values = [[v] for v in values]
        elif pa.types.is_boolean(kind):
            values = [True] * count
        columns[name] = pa.array(values, type=kind)
    columns["rationale"] = pa.array([os.urandom(24).hex() for _ in range(count)], pa.string())
    padding = pa.table(columns)
    original = table.append_column("rationale", pa.nulls(len(table), pa.string()))
    pq.write_table(pa.concat_tables([padding, original]), target)
    row = entry["row"] if entry["rule"] in ("boolean", "list") else entry["row"] + count
    return target, None, row


# ------------------------------------------------------------- beyond the committed files


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
@pytest.mark.parametrize("valid_before", [0, 20_000])
def test_a_line_longer_than_16_mib_is_refused_on_both_paths(suffix, valid_before, db, tmp_path, capsys):
    """The 50 MB one-line CSV passed the large path on main: the limit now holds on every path."""
    path = tmp_path / f"long{suffix}"
    header = "question_id,model_a,model_b,judge,winner,rationale\n" if suffix == ".csv" else ""
    with open(path, "w") as handle:
        handle.write(header)
        for k in range(valid_before):
            handle.write(f"q{k},a,b,j,model_a,ok\n" if suffix == ".csv" else json.dumps(
                {"question_id": f"q{k}", "model_a": "a", "model_b": "b", "judge": "j", "winner": "model_a"}) + "\n")
        cell = "x" * (17 * 1024 * 1024)
        handle.write(f"qx,a,b,j,model_a,{cell}\n" if suffix == ".csv" else json.dumps(
            {"question_id": "qx", "model_a": "a", "model_b": "b", "judge": "j", "winner": "model_a", "rationale": cell})
            + "\n")
    line = valid_before + (2 if suffix == ".csv" else 1)
    message = reject(path, db, capsys)
    if suffix == ".jsonl" and valid_before == 0:  # format detection reads the first line and stops there
        assert re.search(r"^long\.jsonl, line 1: the first line is longer than 16,777,216 bytes", message), message
    else:
        assert re.search(rf"^long{re.escape(suffix)}, line {line}: line is 17,8\d\d,\d\d\d bytes long "
                         r"\(limit 16,777,216\)", message), message


@pytest.mark.parametrize("layout", ["folder", "prd", "fastchat"])
def test_a_symlink_out_of_the_folder_is_refused_and_nothing_outside_is_quoted(layout, db, tmp_path, capsys):
    secret = tmp_path / "outside" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:SECRET-FIRST-LINE:/root:/bin/bash\n")
    folder = tmp_path / "upload"
    if layout == "folder":
        folder.mkdir()
        (folder / "good.csv").write_text("question_id,model_a,model_b,judge,winner\nq9,a,b,j,tie\n")
        link = folder / "votes.csv"
    elif layout == "prd":
        (folder / "ratings-gpt4").mkdir(parents=True)
        link = folder / "ratings-gpt4" / "answer_a-vs-answer_b-gpt4-reviewer.jsonl"
    else:
        (folder / "model_answer").mkdir(parents=True)
        (folder / "question.jsonl").write_text('{"question_id": 1, "turns": ["hi"]}\n')
        link = folder / "model_answer" / "alpha.jsonl"
    link.symlink_to(secret)
    message = reject(folder, db, capsys)
    relative = str(link.relative_to(folder))
    assert message == (f"upload: {relative!r} is a symbolic link to a place outside the folder; copy the file into the "
                       "folder instead")
    assert "SECRET" not in message and "root:x" not in message


def test_a_symlink_inside_the_folder_is_fine(tmp_path):
    from peercore.io.importer import read_path

    folder = tmp_path / "upload"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "votes.csv").write_text("question_id,model_a,model_b,judge,winner\nq9,a,b,j,tie\n")
    (folder / "alias.csv").symlink_to(folder / "data" / "votes.csv")
    assert len(read_path(folder).judgments) == 2


REPEATS = {
    # file name: content holding one row that votes again, differently, on a stored comparison (q1, a, b)
    "day2.csv": "question_id,model_a,model_b,judge,winner\nq2,a,b,j,tie\nq1,a,b,j,model_b\n",
    "day2.jsonl": ('{"question_id": "q2", "model_a": "a", "model_b": "b", "judge": "j", "winner": "tie"}\n'
                   '{"question_id": "q1", "model_a": "a", "model_b": "b", "judge": "j", "winner": "tie"}\n'),
    "arena_day2.jsonl": '{"question_id": "q1", "model_a": "a", "model_b": "b", "winner": "model_b", "tstamp": 1}\n',
    "votes_day2.csv": "question_id,model_a,model_b,annotator,winner\nq7,a,b,alice,tie\nq1,a,b,alice,tie\n",
    "gpt-4_pair.jsonl": ('{"question_id": "q1", "model_1": "a", "model_2": "b", "g1_winner": "model_2", '
                         '"g2_winner": "model_2", "judge": ["gpt-4", "pair-v2"], "turn": 0}\n'),
}


@pytest.mark.parametrize("name", sorted(REPEATS))
def test_another_verdict_on_a_stored_comparison_is_a_repeated_vote_and_the_import_says_so(name, db, tmp_path, capsys):
    """One rule for a comparison seen again with another verdict (issue 18, item 3): a repeated vote, whether it
    comes in the same file or in a later import (before: a vote in one file, a refused conflict across two)."""
    from peercore.cli import main
    from peercore.store import Store

    path = tmp_path / name
    path.write_text(REPEATS[name])
    before = Store(db).verdicts.table("existing", with_vote=True)
    assert main(["import", str(path), "--study", "existing", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"of them repeated votes of a judge on a comparison it had voted on \(rankings count their "
                     r"majority by default; --each-vote counts each\)", out), out
    after = Store(db).verdicts.table("existing", with_vote=True)
    added = after.iloc[len(before):]
    assert (added["vote"] > 0).any() and (added.loc[added["vote"] > 0, "question_id"] == "q1").all()


def test_the_same_verdicts_again_are_skipped_as_already_stored(db, tmp_path, capsys):
    from peercore.cli import main

    path = tmp_path / "again.csv"
    path.write_text("question_id,model_a,model_b,judge,winner\nq1,a,b,j,model_a\nq1,b,a,j,tie\nq2,a,b,j,tie\n")
    assert main(["import", str(path), "--study", "existing", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "judgments          1 added, 2 skipped as already stored (identical)" in out
