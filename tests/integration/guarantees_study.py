"""A small synthetic study for the calibrate / audit / judges / escalate command-line tests (issues 23 and 24).

Four models of known strength, 80 questions, every unordered pair once per question in a
random presentation order. Truth: a Bradley-Terry draw. Judges:

* ``gpt``: the truth with probability 0.8, else the other answer (a hard judge, one
  verdict per comparison);
* ``prob``: a label-probability judge (``p_a``) whose confidence tracks its accuracy: it
  is right with probability ``c`` and reports ``max(p_a, 1 - p_a) = c``, with ``c`` in
  {0.55, 0.75, 0.95};
* ``human:alice`` / ``human:bob``: one vote per comparison on the first 50 questions (the
  truth), so every human vote is a label on a comparison both judges judged.

Rows are written in a fixed order with a fixed seed: every number is reproducible.
"""

from __future__ import annotations

import itertools
import math
import random
import subprocess
import sys
from pathlib import Path

import pandas as pd

from peercore.cli import main

REPO = Path(__file__).resolve().parents[2]
MODELS = ("alpha", "beta", "gamma", "delta")
STRENGTH = {"alpha": 1.2, "beta": 0.6, "gamma": 0.0, "delta": -0.8}
HUMAN_QUESTIONS = 50


def synthetic_rows(*, questions: int = 80, humans: bool = True, seed: int = 7) -> pd.DataFrame:
    rng = random.Random(seed)
    rows = []
    for q in range(questions):
        for x, y in itertools.combinations(MODELS, 2):
            a, b = (x, y) if rng.random() < 0.5 else (y, x)
            p = 1 / (1 + math.exp(-(STRENGTH[a] - STRENGTH[b])))
            truth = "model_a" if rng.random() < p else "model_b"
            other = "model_b" if truth == "model_a" else "model_a"
            rows.append({"question_id": f"q{q}", "model_a": a, "model_b": b, "judge": "gpt",
                         "winner": truth if rng.random() < 0.8 else other, "p_a": None})
            confidence = rng.choice((0.55, 0.75, 0.95))
            said = truth if rng.random() < confidence else other
            rows.append({"question_id": f"q{q}", "model_a": a, "model_b": b, "judge": "prob", "winner": said,
                         "p_a": confidence if said == "model_a" else 1 - confidence})
            if humans and q < HUMAN_QUESTIONS:
                rows.append({"question_id": f"q{q}", "model_a": a, "model_b": b,
                             "judge": "human:alice" if q % 2 else "human:bob", "winner": truth, "p_a": None})
    return pd.DataFrame(rows)


def write_csv(path: Path, frame: pd.DataFrame) -> Path:
    frame.to_csv(path, index=False)
    return path


def imported(tmp_path: Path, frame: pd.DataFrame, *, study: str = "s") -> str:
    """``peercore import`` of ``frame`` as a CSV into a new SQLite file; returns the database path."""
    csv = write_csv(tmp_path / f"{study}.csv", frame)
    db = str(tmp_path / f"{study}.sqlite")
    assert main(["import", str(csv), "--study", study, "--db", db]) == 0
    return db


def run(*args) -> subprocess.CompletedProcess:
    """``python -m peercore ARGS`` as a user runs it."""
    return subprocess.run([sys.executable, "-m", "peercore", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=600)
