"""Shared fixtures: the real datasets beside the project, and small judgment tables."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from peercore.judgments import judgments_from_frame

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """``../shared/data`` beside the checkout, or $PEERBOARD_SHARED_DATA."""
    override = os.environ.get("PEERBOARD_SHARED_DATA")
    return Path(override) if override else REPO.parent / "shared" / "data"


def require_dataset(name: str) -> Path:
    """The dataset folder, or skip the test cleanly when it is not there (CI has it)."""
    folder = shared_data_dir() / name
    if not folder.is_dir():
        pytest.skip(f"real dataset {folder} is not present")
    return folder


@pytest.fixture(scope="session")
def prd_folder() -> Path:
    return require_dataset("prd_vicuna80")


def make_judgments(rows, **defaults) -> pd.DataFrame:
    """Canonical table from (model_a, model_b, winner) or (model_a, model_b, winner, judge) tuples."""
    records = []
    for k, row in enumerate(rows):
        record = {"question_id": str(defaults.get("question_id", k)), "judge": defaults.get("judge", "j")}
        record.update(dict(zip(("model_a", "model_b", "winner", "judge"), row)))
        records.append(record)
    return judgments_from_frame(pd.DataFrame(records))


@pytest.fixture
def small_judgments() -> pd.DataFrame:
    """Three models, two judges, a tie, both presentation orders."""
    return make_judgments([
        ("a", "b", "model_a", "j1"),
        ("b", "a", "model_b", "j1"),
        ("a", "c", "tie", "j1"),
        ("c", "b", "model_a", "j2"),
        ("b", "c", "model_a", "j2"),
        ("a", "c", "model_a", "j2"),
    ])
