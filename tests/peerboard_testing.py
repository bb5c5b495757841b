"""Helpers shared by the test suites (import as ``from peerboard_testing import ...``).

A module of its own, not conftest.py: several test folders have a conftest.py, and
``from conftest import`` would pick whichever was imported first.
"""

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


def make_judgments(rows, **defaults) -> pd.DataFrame:
    """Canonical table from (model_a, model_b, winner) or (model_a, model_b, winner, judge) tuples."""
    records = []
    for k, row in enumerate(rows):
        record = {"question_id": str(defaults.get("question_id", k)), "judge": defaults.get("judge", "j")}
        record.update(dict(zip(("model_a", "model_b", "winner", "judge"), row)))
        records.append(record)
    return judgments_from_frame(pd.DataFrame(records))
