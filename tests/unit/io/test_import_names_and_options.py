"""Issue 17, items 7 and 8: silent or wrong data at the door, through the commands a user types.

Before this change: a Parquet binary column was stored as Python reprs (``b'gpt4'``);
look-alike names (a Cyrillic ``р``, full-width letters) became separate contestants with no
word; a zero-width character in a large file's name went through the fast path; study names
with a line break, ``../`` or 3,000 characters were created; ``--criterion X`` on a template
without a criterion slot stored the cached replies as a new judge ``~criterion=X`` at 0
calls; and importing under a run judge's name said ``row 1`` (counted from 0) and no file.
The malformed files themselves are in ``tests/corpus`` (``test_malformed_corpus.py``).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fakes.llm_server import FakeLLMServer
from integration.helpers import make_review_study
from io_corpus_support import fingerprint
from peercore.cli import main
from peercore.store import Store
from peercore.store.core import StoreError

HEADER = "question_id,model_a,model_b,judge,winner\n"


def run(capsys, *args: str) -> tuple[int, str, list[str]]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def refused(capsys, db: Path, *args: str) -> str:
    """A command refused: exit 2, one line on stderr, the database (if any) byte-identical."""
    before = fingerprint(db) if db.exists() else None
    code, out, err = run(capsys, *args)
    assert (code, len(err)) == (2, 1), (code, out, err)
    assert (fingerprint(db) if db.exists() else None) == before
    return err[0].removeprefix("peercore: error: ")


# ------------------------------------------------------------------ Parquet bytes


def test_a_parquet_binary_column_is_read_as_utf8_text(tmp_path, capsys):
    path = tmp_path / "binary.parquet"
    pq.write_table(pa.table({"question_id": pa.array([b"q1", b"q2"], pa.binary()),
                             "model_a": pa.array([b"gpt4", "gр\u00e9".encode()], pa.large_binary()),
                             "model_b": pa.array([b"claude", b"claude"], pa.binary()),
                             "judge": ["j", "j"], "winner": ["model_a", "model_b"]}), path)
    db = tmp_path / "pb.sqlite"
    assert run(capsys, "import", str(path), "--study", "s", "--db", str(db))[0] == 0
    stored = Store(db).verdicts.table("s")
    assert stored["question_id"].tolist() == ["q1", "q2"]  # before: "b'q1'", "b'q2'"
    assert stored["model_a"].tolist() == ["gpt4", "gр\u00e9"]


# ---------------------------------------------------------------- look-alike names


def test_names_that_look_alike_are_imported_with_a_warning(db, tmp_path, capsys):  # SQLite and PostgreSQL
    db = str(db)
    first = tmp_path / "first.csv"
    first.write_text(HEADER + "q1,gpt4,claude,judge-x,model_a\nq2,GPT4,claude,judge-x,model_a\n")
    code, out, _ = run(capsys, "import", str(first), "--study", "s", "--db", db, "--order", "known")
    assert code == 0 and "warning" not in out  # case differs visibly: no warning
    second = tmp_path / "second.csv"  # a Cyrillic р, full-width letters, and a judge spelled with a Cyrillic х
    second.write_text(HEADER + "q3,gрt4,claude,judge-x,model_b\nq4,ｃｌａｕｄｅ,gpt4,judge-x,tie\n"
                                "q5,gpt4,claude,judge-\u0445,model_a\n", encoding="utf-8")
    code, out, _ = run(capsys, "import", str(second), "--study", "s", "--db", db, "--order", "known")
    assert code == 0
    warnings = [line.strip() for line in out.splitlines() if line.strip().startswith("warning:")]
    assert len(warnings) == 3, out
    assert "'claude' and 'ｃｌａｕｄｅ'" in warnings[0]
    assert "'gpt4' and 'gрt4' (character 2: U+0070 LATIN SMALL LETTER P / U+0440 CYRILLIC SMALL LETTER ER)" \
           in warnings[1]
    assert "'judge-x' and 'judge-х' (character 7: U+0078 LATIN SMALL LETTER X / U+0445 CYRILLIC SMALL LETTER HA)" \
           in warnings[2]
    store = Store(db)
    assert {"gpt4", "gрt4", "ｃｌａｕｄｅ"} <= set(store.verdicts.table("s")["model_a"])  # imported as written
    assert store.studies.imports("s")["counts"].iloc[-1]["warnings"] == warnings_text(warnings)
    store.close()


def warnings_text(lines: list[str]) -> list[str]:
    return [line.removeprefix("warning: ") for line in lines]


def test_an_invisible_character_in_a_large_file_is_refused_too(tmp_path, capsys):
    path = tmp_path / "large.csv"  # past 1 MiB: the Arrow (fast) path reads it first
    rows = [f"q{k},model-{k % 7},model-{k % 7 + 1},judge,model_a\n" for k in range(40_000)]
    path.write_text(HEADER + "".join(rows) + "q-last,model-1,model-2,ju\u200bdge,model_b\n", encoding="utf-8")
    assert path.stat().st_size > 1 << 20
    db = tmp_path / "pb.sqlite"
    Store(db).studies.create("s")
    message = refused(capsys, db, "import", str(path), "--study", "s", "--db", str(db))
    assert message.startswith("large.csv, line 40002, column 'judge': judge 'ju\\u200bdge' holds an invisible "
                              "character, U+200B ZERO WIDTH SPACE, at character 3")


# --------------------------------------------------------------------- study names


@pytest.mark.parametrize("name, words", [
    ("a\nb", "study name 'a\\nb' holds a line break"),
    ("../../etc", "study name '../../etc' reads as a path out of a folder"),
    ("/etc/passwd", "reads as a path out of a folder"),
    ("x" * 3000, "is 3,000 characters long (limit 200)"),
    (" prd", "study name ' prd' starts or ends with spaces"),
    ("gpt\u200b", "holds an invisible character, U+200B ZERO WIDTH SPACE"),
])
def test_a_bad_study_name_is_refused_by_peercore_import(name, words, tmp_path, capsys):
    source = tmp_path / "ok.csv"
    source.write_text(HEADER + "q1,a,b,j,model_a\n")
    db = tmp_path / "pb.sqlite"
    message = refused(capsys, db, "import", str(source), "--study", name, "--db", str(db))
    assert message.startswith("--study: ") and words in message and len(message) < 300
    assert not db.exists()  # refused before the database is opened
    Store(db).studies.create("kept")  # and an existing database stays byte-identical
    refused(capsys, db, "import", str(source), "--study", name, "--db", str(db))


def test_a_slash_inside_a_study_name_is_kept_and_its_download_name_is_a_file_name(tmp_path, capsys):
    """Issue 17 item 7: only names that climb out of a folder are refused; ``A/B test <b>x</b>`` is a
    title, and the file names made from it (downloads, exports) hold no folder separator."""
    from peercore.cli import main
    from peercore.io.formats import file_name_part

    source = tmp_path / "ok.csv"
    source.write_text(HEADER + "q1,a,b,j,model_a\n")
    db = tmp_path / "pb.sqlite"
    assert main(["import", str(source), "--study", "A/B test <b>x</b>", "--db", str(db)]) == 0
    assert "A/B test <b>x</b>" in Store(db).studies.table()["name"].tolist()
    assert file_name_part("A/B test <b>x</b>") == "A_B test _b_x__b_"
    assert file_name_part("../..") == "_.." and file_name_part("...") == "study"


def test_a_study_named_after_a_file_with_a_line_break_is_refused(tmp_path, capsys):
    source = tmp_path / "two\nlines.csv"
    source.write_text(HEADER + "q1,a,b,j,model_a\n")
    message = refused(capsys, tmp_path / "pb.sqlite", "import", str(source), "--db", str(tmp_path / "pb.sqlite"))
    assert "study name 'two\\nlines' holds a line break" in message and "give --study NAME" in message


def test_looking_up_a_3000_character_study_name_gives_one_short_line(tmp_path, capsys):
    db = tmp_path / "pb.sqlite"
    Store(db).studies.create("s")
    message = refused(capsys, db, "rank", "--study", "x" * 3000, "--db", str(db))
    assert message.startswith("no study named 'xxx") and len(message) < 300


def test_the_store_refuses_a_bad_new_study_name_on_both_backends(db):
    store = Store(db)
    for name in ("a\nb", "../x", "x" * 201, "a\u200bb", "..", "/etc", "a/../b"):
        with pytest.raises(StoreError, match="study name"):
            store.studies.create(name)
    assert store.studies.table().empty
    store.studies.create("prd vicuna80 (2023)")  # ordinary punctuation is fine
    store.close()


# ------------------------------------------------------- --criterion without a slot


@pytest.fixture
def review_setup(tmp_path, monkeypatch):
    db = tmp_path / "review.sqlite"
    make_review_study(Store(db), name="s", questions=2, models=2)
    with FakeLLMServer(seed=3) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret-0000")
        yield db, server


def test_a_criterion_on_a_template_without_a_slot_is_refused_before_any_call(review_setup, capsys):
    db, server = review_setup
    review = ["review", "--study", "s", "--reviewer", "openai:gpt-4o", "--db", str(db), "--no-progress"]
    assert run(capsys, *review)[0] == 0
    paid = server.requests_total
    for extra in (["--dry-run"], []):
        message = refused(capsys, db, *review, "--criterion", "X", *extra)
        assert message.startswith("criterion 'X': template 'prd_review' has no place for a criterion (no "
                                  "{criterion} or {rubric})") and "nothing was run" in message
    assert server.requests_total == paid  # before: 0 calls, 4 cached replies stored as openai:gpt-4o~criterion=X
    assert sorted(Store(db).verdicts.table("s")["judge"].unique()) == ["openai:gpt-4o"]
    code, out, _ = run(capsys, *review, "--criterion", "helpfulness", "--template", "scaleeval_initial", "--dry-run")
    assert code == 0 and "4 of 4 items to do" in out  # a template that shows the criterion takes one


# --------------------------------------------------- importing under a run judge's name


def test_importing_under_a_run_judges_name_names_the_file_and_line(review_setup, tmp_path, capsys):
    db, _ = review_setup
    assert run(capsys, "review", "--study", "s", "--reviewer", "openai:gpt-4o", "--db", str(db), "--no-progress")[0] == 0
    path = tmp_path / "under_run_name.csv"
    path.write_text(HEADER + "q000,model-0,model-1,someone-else,model_a\nq001,model-0,model-1,openai:gpt-4o,tie\n")
    message = refused(capsys, db, "import", str(path), "--study", "s", "--db", str(db))
    # before: "row 1, column 'judge': ..." (counted from 0, no file)
    assert message.startswith("under_run_name.csv, line 3, column 'judge': judge 'openai:gpt-4o' is a judge that "
                              "PeerBoard's runs produced in study 's'")
