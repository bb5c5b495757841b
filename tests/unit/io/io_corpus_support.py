"""Helpers of the corpus tests: a database to refuse imports into, its fingerprint, one rejected import."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pandas as pd

from peercore.cli import main
from peercore.store import Store

CORPUS = Path(__file__).resolve().parents[2] / "corpus"


def make_template_db(path: Path) -> Path:
    """A database with a study 'existing': question q1, an answer, and a few verdicts to contradict."""
    store = Store(path)
    store.studies.create("existing")
    store.questions.add("existing", pd.DataFrame({"question_id": ["q1"], "text": ["What is 2+2?"]}))
    store.questions.add_answers("existing", pd.DataFrame({"question_id": ["q1"], "model": ["a"], "answer": ["4"]}))
    store.verdicts.add("existing", pd.DataFrame({
        "question_id": ["q1", "q1", "q1", "q1", "q1"], "model_a": ["a", "b", "a", "a", "a"],
        "model_b": ["b", "a", "b", "b", "b"], "judge": ["j", "j", "human:arena", "human:alice", "gpt-4"],
        "winner": ["model_a", "tie", "model_a", "model_a", "model_a"]}))
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


def reject(source: Path, db: Path, capsys) -> str:
    """Import ``source`` into study 'existing': exit 2, one line, no traceback, database unchanged."""
    before = fingerprint(db)
    status = main(["import", str(source), "--study", "existing", "--db", str(db)])
    captured = capsys.readouterr()
    assert status == 2, captured.out
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err[:2000]
    assert lines[0].startswith("peercore: error: ")
    assert fingerprint(db) == before
    return lines[0].removeprefix("peercore: error: ")
