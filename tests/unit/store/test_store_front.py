"""The store's shape (issue 19, item 1): a front of at most ten methods and one repository per kind of record.

What is checked is what a maintainer relies on: the front holds the connection and nothing about
records; each repository holds only its store and reaches other kinds of record through their
public methods; no module outside ``peercore.store`` opens a database connection.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pandas as pd
import pytest

import peercore
from peercore.store import Repository, Store, WriteCounts
from peercore.store.access import Access
from peercore.store.adjudication import Debates
from peercore.store.judges import Judges
from peercore.store.judgments import Verdicts
from peercore.store.questions import Questions
from peercore.store.runs import Runs
from peercore.store.scores import Scores
from peercore.store.studies import Studies

REPOSITORIES = {"studies": Studies, "questions": Questions, "judges": Judges, "verdicts": Verdicts, "runs": Runs,
                "debates": Debates, "scores": Scores, "access": Access}
PACKAGE = Path(peercore.__file__).parent


def _public_methods(cls) -> list[str]:
    return sorted(name for name, value in vars(cls).items() if not name.startswith("_") and callable(value))


def test_the_front_has_at_most_ten_methods_of_its_own():
    assert _public_methods(Store) == ["checkpoint", "clock", "close", "connect", "integrity_problems", "migrations",
                                      "schema_version", "snapshot", "transaction", "write_if_free"]
    assert not any(issubclass(Store, cls) for cls in REPOSITORIES.values())  # composed, not inherited


def test_each_kind_of_record_has_one_repository_holding_only_its_store(tmp_path):
    store = Store(tmp_path / "pb.sqlite")
    for attribute, cls in REPOSITORIES.items():
        repository = getattr(store, attribute)
        assert type(repository) is cls and isinstance(repository, Repository)
        assert vars(repository) == {"_store": store}, attribute
    # no method name is defined twice across the repositories and the front
    names = [name for cls in (Store, *REPOSITORIES.values()) for name in _public_methods(cls)]
    owners = {}
    for cls in (Store, *REPOSITORIES.values()):
        for name in _public_methods(cls):
            owners.setdefault(name, []).append(cls.__name__)
    assert len(names) == sum(len(v) for v in owners.values())


def test_no_repository_reaches_into_another_ones_privates():
    for cls in REPOSITORIES.values():
        tree = ast.parse(inspect.getsource(inspect.getmodule(cls)))
        for node in ast.walk(tree):
            # self._store.<repository>.<name>: name must be public
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                    and isinstance(node.value.value, ast.Attribute) and node.value.value.attr == "_store"):
                assert node.value.attr in REPOSITORIES, ast.unparse(node)
                assert not node.attr.startswith("_"), f"{cls.__name__}: {ast.unparse(node)}"
            # self._store.<name>: the front's public methods and attributes only
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "_store":
                assert not node.attr.startswith("_"), f"{cls.__name__}: {ast.unparse(node)}"


def test_only_the_store_opens_connections():
    opened = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("store/") or relative == "db.py":  # the front, and the driver layer it calls
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "connect"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id in ("sqlite3", "psycopg", "_db")):
                opened.append(f"{relative}:{node.lineno}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "connect_postgres":
                opened.append(f"{relative}:{node.lineno}")
    assert opened == []


def test_a_repository_works_alone_over_the_front(tmp_path):
    # Two repositories used through a store, nothing else: a study and its questions.
    store = Store(tmp_path / "pb.sqlite")
    studies, questions = Studies(store), Questions(store)
    studies.create("s")
    before = studies.revision("s")
    assert questions.add("s", pd.DataFrame({"question_id": ["q1", "q2"], "text": ["a", "b"]})) == WriteCounts(2, 0)
    assert questions.add("s", pd.DataFrame({"question_id": ["q1"], "text": ["a"]})) == WriteCounts(0, 1)
    assert studies.revision("s") == before + 1  # one write that added rows moves the revision once
    assert list(questions.table("s")["question_id"]) == ["q1", "q2"]
    with pytest.raises(Exception, match="no study named"):
        questions.table("missing")
