"""End to end with the offline local models: answers, peer review, a small debate, stored and ranked.

Real llama.cpp runs (slow: about a minute on 2 cores): SmolLM2-135M answers two
questions in two settings, the Qwen2.5-Coder-1.5B judge reviews every ordered pair
with the prompt-based classifier, two agents debate one pair, and the stored judgments
produce a leaderboard. A second run of the same jobs makes no call. Like the local
judge tests, this never skips: CI installs the model wheels.
"""

from __future__ import annotations

import pandas as pd
import pytest

from peercore.jobs.answers import AnswerJob
from peercore.jobs.base import Judge
from peercore.jobs.discussion import DebateJob
from peercore.jobs.review import ReviewJob
from peercore.app import Study, leaderboard
from peercore.reviewers.local import LocalBackend
from peercore.runner import run_job_sync
from peercore.store import Store

pytestmark = pytest.mark.slow


def test_answers_review_debate_and_ranking_with_local_models(tmp_path):
    store = Store(tmp_path / "e2e.sqlite")
    store.studies.create("e2e")
    store.questions.add("e2e", pd.DataFrame({
        "question_id": ["capital", "sum"],
        "text": ["What is the capital of France? Answer in one sentence.", "What is 12 plus 30? Answer briefly."],
    }))
    smol, qwen = LocalBackend("smollm2-135m", seed=1), LocalBackend("qwen2.5-coder-1.5b", seed=1)
    contestants = [Judge(smol), Judge(smol, name="local:smollm2-135m@t1.0", temperature=1.0)]

    answers = run_job_sync(AnswerJob("e2e", contestants, max_tokens=40), store)
    assert answers.status == "finished" and answers.done == 4
    assert len(store.questions.answers("e2e")) + answers.invalid == 4

    review = run_job_sync(ReviewJob("e2e", [Judge(qwen)], method="logits"), store)
    assert review.status == "finished" and review.calls == 4
    judgments = store.verdicts.table("e2e")
    assert len(judgments) == 4 and judgments["p_a"].between(0, 1).all()

    agents = [Judge(qwen, name="local:qwen@t0", temperature=0.0), Judge(smol, name="local:smol@t0.7", temperature=0.7)]
    debate = run_job_sync(DebateJob("e2e", agents, questions=["capital"], max_rounds=2, max_tokens=48), store)
    assert debate.status == "finished" and debate.done == 1
    stored = store.debates.table("e2e", kind="debate")
    assert len(stored) == 1 and stored["status"].item() in ("agreed", "unresolved")
    assert len(store.debates.turns(stored["id"])) in (2, 4)

    board = leaderboard(Study.from_frame(store.verdicts.table("e2e", judges=["local:qwen2.5-coder-1.5b"])), method="winrate")
    assert set(board.table["model"]) == {"local:smollm2-135m", "local:smollm2-135m@t1.0"}

    again = run_job_sync(ReviewJob("e2e", [Judge(qwen)], method="logits"), store)
    assert again.calls == 0 and again.done == 4
