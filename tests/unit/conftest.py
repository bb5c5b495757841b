"""Fixtures of the job and runner tests: a fresh store and a small study in it."""

from __future__ import annotations

import pytest

from peercore.store import Store
from runner.fakes import make_study


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "pb.sqlite")
    yield s
    s.close()


@pytest.fixture
def study(store):
    return make_study(store)
