"""Fixture studies and AppTest helpers for the dashboard tests, written straight through the Store API.

``synthetic`` is a small study with everything a page can show: questions with
scenarios, answers of four contestants, three LLM reviewers that are also contestants
(one gives probabilities and leans to the first position), two human annotators,
ScaleEval-style debates (agreed and unresolved, with opinion changes), a PRD-style
discussion and a finished run. ``prd`` is the PRD Vicuna80 study read with
``peercore.io.prd`` (skipped when ../shared/data/prd_vicuna80 is absent).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from peercore.judgments import judgments_from_frame
from peercore.store import Store

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")

MODELS = ("alpha", "bravo", "charlie", "delta")
STRENGTH = {"alpha": 1.2, "bravo": 0.6, "charlie": 0.0, "delta": -0.8}
LLM_JUDGES = ("openai:alpha", "anthropic:bravo", "local:charlie")
HUMANS = ("human:ann", "human:ben")
SCENARIOS = ("math", "writing", "code")
N_QUESTIONS = 9
N_UNRESOLVED = 4


def build_synthetic_study(store: Store, name: str = "synthetic", *, seed: int = 0) -> dict:
    """Write the synthetic study; returns what the tests need to know about it."""
    rng = np.random.default_rng(seed)
    store.create_study(name, description="A small synthetic study for the dashboard tests.",
                       source={"kind": "synthetic", "generator": "tests/app/conftest.py", "seed": seed})
    qids = [f"q{k:02d}" for k in range(N_QUESTIONS)]
    store.add_questions(name, pd.DataFrame({
        "question_id": qids, "text": [f"Question {k}: explain topic {k} in a few sentences." for k in range(N_QUESTIONS)],
        "category": [SCENARIOS[k % len(SCENARIOS)] for k in range(N_QUESTIONS)],
    }))
    answers = [
        {"question_id": q, "model": m, "answer": f"{m} answers {q}. " + "More detail. " * int(rng.integers(1, 12))}
        for q in qids for m in MODELS
    ]
    store.add_answers(name, pd.DataFrame(answers))
    store.add_judges(name, [{"name": j, "kind": "llm"} for j in LLM_JUDGES] + [{"name": h, "kind": "human"} for h in HUMANS])

    rows = []
    for q, (a, b), judge in itertools.product(qids, itertools.permutations(MODELS, 2), LLM_JUDGES):
        diff = STRENGTH[a] - STRENGTH[b] + (0.6 if judge == "local:charlie" else 0.0)  # charlie leans to the first answer
        p = float(1 / (1 + np.exp(-2 * diff + rng.normal(0, 0.8))))
        winner = "model_a" if p > 0.55 else "model_b" if p < 0.45 else "tie"
        rows.append({"question_id": q, "model_a": a, "model_b": b, "judge": judge, "winner": winner,
                     "p_a": round(p, 4) if judge == "local:charlie" else None, "rationale": f"{judge} on {q}",
                     "criterion": "helpfulness"})
    for q, (a, b) in itertools.product(qids[:6], itertools.combinations(MODELS, 2)):
        for human in HUMANS:
            diff = STRENGTH[a] - STRENGTH[b] + rng.normal(0, 0.7)
            rows.append({"question_id": q, "model_a": a, "model_b": b, "judge": human, "criterion": "helpfulness",
                         "winner": "model_a" if diff > 0.2 else "model_b" if diff < -0.2 else "tie"})
    judgments = judgments_from_frame(pd.DataFrame(rows))
    store.add_judgments(name, judgments)

    # ScaleEval-style debates between the three LLM judges on alpha vs bravo.
    debate_ids = []
    for k, q in enumerate(qids):
        unresolved = k < N_UNRESOLVED
        initial = ["model_a", "model_b", "tie"] if unresolved else ["model_a", "model_b", "model_a"]
        final = ["model_a", "model_b", "model_b"] if unresolved else ["model_a", "model_a", "model_a"]
        turns = [{"round": 0, "position": p, "speaker": s, "verdict": v, "rationale": f"{s} first thinks {v} on {q}."}
                 for p, (s, v) in enumerate(zip(LLM_JUDGES, initial))]
        turns += [{"round": 1, "position": p, "speaker": s, "verdict": v, "rationale": f"{s} after reading the others: {v}."}
                  for p, (s, v) in enumerate(zip(LLM_JUDGES, final))]
        store.add_debate(name, {
            "debate_key": f"debate-{q}", "kind": "debate", "question_id": q, "model_a": "alpha", "model_b": "bravo",
            "criterion": "helpfulness", "scenario": SCENARIOS[k % len(SCENARIOS)],
            "status": "unresolved" if unresolved else "agreed", "consensus": None if unresolved else "model_a",
            "n_rounds": 2,
        }, turns)
    debate_ids = store.debates(name)["id"].tolist()
    # A PRD-style two-reviewer discussion.
    store.add_debate(name, {"debate_key": "discussion-q00", "kind": "discussion", "question_id": "q00",
                            "model_a": "charlie", "model_b": "delta", "status": "agreed", "consensus": "model_a",
                            "n_rounds": 2}, [
        {"round": 0, "position": 0, "speaker": "openai:alpha", "verdict": "model_a", "rationale": "Answer 1 is clearer."},
        {"round": 0, "position": 1, "speaker": "anthropic:bravo", "verdict": "model_b", "rationale": "Answer 2 is shorter."},
        {"round": 1, "position": 0, "speaker": "openai:alpha", "verdict": "model_a", "rationale": "I hold my view."},
        {"round": 1, "position": 1, "speaker": "anthropic:bravo", "verdict": "model_a", "rationale": "Agreed, 1 is better."},
    ])
    run_id = store.create_run(name, "review", {"judge": "openai:alpha", "api_key": "sk-should-never-show"}, items=["x", "y"])
    store.finish_item(run_id, "x", prompt_tokens=120, completion_tokens=30, cost_usd=0.0012)
    store.finish_item(run_id, "y", prompt_tokens=100, completion_tokens=20, cost_usd=0.0010)
    store.set_run_status(run_id, "finished")
    return {"name": name, "judgments": len(judgments), "unresolved": N_UNRESOLVED, "debate_ids": debate_ids}


def shared_data_dir() -> Path:
    override = os.environ.get("PEERBOARD_SHARED_DATA")
    return Path(override) if override else REPO.parent / "shared" / "data"


def build_prd_study(store: Store, name: str = "prd-vicuna80") -> dict:
    """The PRD Vicuna80 reviews and human votes (PRD's five contestants)."""
    from peercore.io.prd import read_prd_judgments

    folder = shared_data_dir() / "prd_vicuna80"
    if not folder.is_dir():
        pytest.skip(f"real dataset {folder} is not present")
    judgments = read_prd_judgments(folder, models=["bard", "claude", "gpt35", "gpt4", "vicuna-13b"])
    store.create_study(name, description="PRD Vicuna80: 5 LLM reviewers and human votes.",
                       source={"kind": "PRD ratings folder", "folder": "prd_vicuna80"})
    store.add_judgments(name, judgments)
    return {"name": name, "judgments": len(judgments)}


def app_test(*, timeout: float = 60):
    """An AppTest of app.py, run once (it opens on Studies)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=timeout)
    at.run()
    return at


def open_page(at, page: str):
    """Switch to ``pages/<page>.py`` and run."""
    at.switch_page(f"pages/{page}.py")
    at.run()
    return at


def problems(at) -> list[str]:
    """Exceptions and error boxes on screen (what a test asserts is empty)."""
    return [f"exception: {e.value}" for e in at.exception] + [f"error: {e.value}" for e in at.error]
