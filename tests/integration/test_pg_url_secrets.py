"""A PostgreSQL password never leaves the URL it is written in (issue 17, item 3).

libpq reads ``#`` and ``?`` inside a ``postgresql://`` URL's password as part of it (it
knows no fragment, and the user info ends at the first ``@``), and ``/``, ``@`` and ``%``
percent-encoded. The masking used to split the URL as a web URL, so a password with ``#``
or ``?`` was printed in the ``peercore import`` report, in every error and on the
dashboard's error page. A password written with an unencoded ``/``, ``@`` or ``%`` is one
libpq misreads (``u:pa/ss@host`` is host ``u``, port ``pa``), and its messages then quote
pieces of it: such a URL is refused before connecting, without repeating it.

Each password holds two markers, one on each side of its special character, and no output
may hold either: the import report on the test cluster (trust authentication accepts any
password) and the error of every command that opens a database with the server not there
(the dashboard's error page: tests/app/test_db_error_page_secrets.py).
"""

from __future__ import annotations

import contextlib
import io
from urllib.parse import quote

import pandas as pd
import pytest

from peercore.cli import main

# name -> (password, as written in the URL, does libpq read it as written?)
PASSWORDS = {
    "hash": ("LEFTa#RIGHTa", "LEFTa#RIGHTa", True),
    "question": ("LEFTb?RIGHTb", "LEFTb?RIGHTb", True),
    "hash and question": ("LEFTc?x#RIGHTc", "LEFTc?x#RIGHTc", True),
    "slash encoded": ("LEFTd/RIGHTd", "LEFTd%2FRIGHTd", True),
    "at encoded": ("LEFTe@RIGHTe", "LEFTe%40RIGHTe", True),
    "percent encoded": ("LEFTf%RIGHTf", "LEFTf%25RIGHTf", True),
    "all five encoded": ("LEFTg#?/@%RIGHTg", "LEFTg#?" + quote("/@%", safe="") + "RIGHTg", True),
    "slash as written": ("LEFTh/RIGHTh", "LEFTh/RIGHTh", False),
    "at as written": ("LEFTi@RIGHTi", "LEFTi@RIGHTi", False),
    "percent as written": ("LEFTj%RIGHTj", "LEFTj%RIGHTj", False),
    "query parameter": ("LEFTk#?RIGHTk", None, True),
}
UNREACHABLE = "127.0.0.1:1"


def url_with(name: str, *, host: str, rest: str) -> str:
    """A URL with password ``name`` of :data:`PASSWORDS`, in the user info (or ``?password=``)."""
    _, written, _ = PASSWORDS[name]
    if written is None:
        return f"postgresql://peerboard@{host}/{rest}{'&' if '?' in rest else '?'}password={quote(PASSWORDS[name][0])}"
    return f"postgresql://peerboard:{written}@{host}/{rest}"


def markers(name: str) -> tuple[str, str]:
    letter = PASSWORDS[name][0][4]
    return f"LEFT{letter}", f"RIGHT{letter}"


def assert_no_marker(text: str, name: str) -> None:
    for marker in markers(name):
        assert marker not in text, f"{name}: {marker!r} in {text!r}"


def run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue() + err.getvalue()


@pytest.fixture
def judgments_file(tmp_path):
    path = tmp_path / "j.csv"
    pd.DataFrame({"question_id": ["q1", "q2"], "model_a": ["a", "b"], "model_b": ["b", "a"], "judge": ["j", "j"],
                  "winner": ["model_a", "tie"]}).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("name", [n for n, (_, _, readable) in PASSWORDS.items() if readable])
def test_the_import_report_shows_the_url_without_the_password(name, pg_url, judgments_file):
    host, rest = pg_url.split("@", 1)[1].split("/", 1)
    status, output = run(["import", str(judgments_file), "--study", "s", "--db", url_with(name, host=host, rest=rest)])
    assert status == 0, output
    assert "database: postgresql://peerboard" in output and "***" in output, output
    assert_no_marker(output, name)


def commands(path) -> list[list[str]]:
    """Every command that opens the database named by ``--db`` (``copy`` takes it as an argument)."""
    study = ["--study", "s"]
    return [["import", str(path), *study], ["rank", *study], ["agree", *study, "--judge", "j", "--reference", "human:"],
            ["bias", *study], ["export", *study, "--what", "judgments", "--format", "csv"],
            ["answer", *study, "--contestant", "local:smollm2-135m", "--dry-run"],
            ["review", *study, "--reviewer", "local:smollm2-135m", "--dry-run"],
            ["discuss", *study, "--reviewer", "local:smollm2-135m", "--reviewer", "local:qwen2.5-coder-1.5b",
             "--dry-run"],
            ["debate", *study, "--agent", "local:smollm2-135m", "--agent", "local:qwen2.5-coder-1.5b", "--dry-run"],
            ["runs", *study],
            ["nlg", "judges", *study], ["nlg", "export", *study],
            ["nlg", "evaluate", *study, "--attribute", "overall"],
            ["adjudicate", *study, "--annotator", "ann", "--next"]]


@pytest.mark.parametrize("name", list(PASSWORDS))
def test_every_command_fails_in_one_line_without_the_password(name, judgments_file, tmp_path, monkeypatch):
    url = url_with(name, host=UNREACHABLE, rest="peerboard")
    monkeypatch.setenv("PEERBOARD_CONNECT_TIMEOUT", "2")
    outputs = []
    for argv in commands(judgments_file):
        for how in ("--db", "env"):
            if how == "env":
                monkeypatch.setenv("PEERBOARD_DB", url)
                status, output = run(argv)
                monkeypatch.delenv("PEERBOARD_DB")
            else:
                status, output = run([*argv, "--db", url])
            assert status == 2, (argv, how, output)
            assert len(output.strip().splitlines()) == 1, (argv, how, output)
            assert_no_marker(output, name)
            outputs.append(output)
    status, output = run(["copy", url, str(tmp_path / "copy.sqlite")])
    assert status == 2 and len(output.strip().splitlines()) == 1, output
    assert_no_marker(output, name)
    if not PASSWORDS[name][2]:  # refused before connecting, saying how to write it
        assert all("percent-encoded" in o for o in outputs), [o for o in outputs if "percent-encoded" not in o]
        status, output = run(["app", "--db", url])
        assert status == 2, output
        assert_no_marker(output, name)
