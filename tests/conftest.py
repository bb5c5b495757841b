"""Shared fixtures: the real datasets beside the project, and small judgment tables."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peerboard_testing import make_judgments, require_dataset, shared_data_dir  # noqa: E402,F401


@pytest.fixture(scope="session")
def prd_folder() -> Path:
    return require_dataset("prd_vicuna80")


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
