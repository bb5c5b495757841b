"""A call budget caps a job (keeps what fits, says what it left out) instead of refusing; a question limit.

The planning rule (:mod:`peercore.jobs.budget`) and the command line's entry point
(``peercore review --budget/--max-questions``): a dry run prints the cut, a real run
against a fake OpenAI-compatible server makes no more calls than the budget.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from peercore.cli import main
from peercore.jobs.budget import fit_budget, limit_questions
from peercore.jobs.review import ReviewJob
from peercore.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fakes.llm_server import FakeLLMServer  # noqa: E402
from integration.helpers import make_review_study  # noqa: E402

# ------------------------------------------------------------------------ the rule


def test_nothing_is_cut_without_a_budget_or_when_everything_fits():
    costs = {"q1": [2, 2], "q2": [2, 2]}
    for budget in (None, 8, 100):
        plan = fit_budget(costs, budget, seed=0)
        assert dict(plan.kept) == {"q1": 2, "q2": 2} and not plan.cut and plan.note() == ""


def test_whole_questions_are_kept_while_they_fit():
    costs = {f"q{i}": [2, 2, 2] for i in range(10)}  # 6 calls a question
    plan = fit_budget(costs, 20, seed=0)
    assert len(plan.kept) == 3 and all(n == 3 for n in plan.kept.values())  # 18 calls of 20
    assert plan.kept_calls == 18 and plan.calls == 60 and plan.cut
    assert list(plan.kept) == [q for q in costs if q in plan.kept]  # study order
    assert plan.note() == "call budget 20: 3 of 10 questions, 9 of 30 comparisons, at most 18 of 60 calls."
    # a random sample of questions, fixed by the seed (not the study's first questions)
    kept = {seed: tuple(fit_budget(costs, 20, seed=seed).kept) for seed in range(6)}
    assert kept[0] == tuple(fit_budget(costs, 20, seed=0).kept) and len(set(kept.values())) > 1


def test_part_of_one_question_when_not_one_whole_question_fits():
    plan = fit_budget({"q1": [4, 4, 4], "q2": [4, 4, 4]}, 9, seed=0)
    assert sum(plan.kept.values()) == 2 and plan.kept_calls == 8 and len(plan.kept) == 1
    assert "part of one question" in plan.note()


def test_a_budget_below_one_comparison_is_refused_with_the_numbers():
    with pytest.raises(ValueError, match="budget=3 calls is too small for a single comparison.*up to 4 calls"):
        fit_budget({"q1": [4, 4]}, 3, seed=0)
    with pytest.raises(ValueError, match="budget must be an integer >= 1"):
        fit_budget({"q1": [4]}, 0, seed=0)


def test_a_question_limit_keeps_a_seeded_random_subset_in_study_order():
    questions = [f"q{i:02d}" for i in range(40)]
    kept = limit_questions(questions, 5, seed=1)
    assert len(kept) == 5 and kept == sorted(kept) and kept != questions[:5]
    assert kept == limit_questions(questions, 5, seed=1)
    assert limit_questions(questions, 100, seed=1) == questions and limit_questions(questions, None, seed=0) == questions
    with pytest.raises(ValueError, match="max_questions must be an integer >= 1"):
        limit_questions(questions, 0, seed=0)


# ------------------------------------------------------------------------- the jobs


@pytest.fixture
def review_db(tmp_path):
    db = tmp_path / "budget.sqlite"
    store = Store(db)
    make_review_study(store, name="b", questions=10, models=3)  # 6 ordered pairs a question
    store.close()
    return db


def test_a_review_over_budget_keeps_whole_questions_with_both_orders(review_db):
    from peercore.jobs.base import parse_item_key
    from runner.fakes import FakeBackend

    store = Store(review_db)
    job = ReviewJob("b", [FakeBackend("r1")], budget=20)  # 6 calls a question: 3 whole questions
    items = [parse_item_key(i) for i in job.prepare(store)]
    assert len(items) == 18 and len({q for q, *_ in items}) == 3
    pairs = {(q, a, b) for q, a, b, _ in items}
    assert all((q, b, a) in pairs for q, a, b in pairs)  # both presentation orders of every pair
    assert "call budget 20: 3 of 10 questions" in job.plan_note()
    limited = ReviewJob("b", [FakeBackend("r1")], max_questions=2)
    assert len({parse_item_key(i)[0] for i in limited.prepare(store)}) == 2
    assert "question limit 2: 2 of 10 questions" in limited.plan_note()
    assert "max_questions" not in ReviewJob("b", [FakeBackend("r1")]).config()  # old run ids unchanged


# --------------------------------------------------------------------- the command line


def test_cli_dry_run_says_what_the_budget_left_out(review_db, capsys):
    code = main(["review", "--study", "b", "--db", str(review_db), "--reviewer", "local:qwen2.5-coder-1.5b",
                 "--budget", "25", "--max-questions", "8", "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "question limit 8: 8 of 10 questions" in out and "call budget 25:" in out
    assert "cost           local, free" in out
    assert "an item is one comparison of two answers by one reviewer" in out
    code = main(["review", "--study", "b", "--db", str(review_db), "--reviewer", "local:qwen2.5-coder-1.5b",
                 "--budget", "25", "--dry-run", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert payload["calls_high"] <= 25 and payload["local"] is True and "call budget 25" in payload["note"]


def test_cli_run_makes_no_more_calls_than_the_budget(review_db, capsys):
    with FakeLLMServer() as server:
        spec = f"compatible:judge@{server.openai_base_url}"
        code = main(["review", "--study", "b", "--db", str(review_db), "--reviewer", spec, "--method", "verdict",
                     "--budget", "15", "--no-progress", "--json"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        payload = json.loads(captured.out)
        assert payload["status"] == "finished" and payload["total"] == 12  # 2 whole questions of 6 reviews
        assert server.requests_total == 12 <= 15
    code = main(["review", "--study", "b", "--db", str(review_db), "--reviewer", spec, "--method", "verdict",
                 "--budget", "15", "--no-progress"])
    assert "note: call budget 15: 2 of 10 questions" in capsys.readouterr().err


def test_discussions_and_debates_are_capped_by_their_most_calls(review_db):
    from peercore.jobs.base import parse_item_key
    from peercore.jobs.discussion import DebateJob, DiscussionJob
    from runner.fakes import FakeBackend

    store = Store(review_db)
    # a debate item: 2 agents x 3 rounds = at most 6 calls; 3 unordered pairs a question = 18
    debate = DebateJob("b", [FakeBackend("x"), FakeBackend("y")], max_rounds=3, budget=40)
    items = debate.prepare(store)
    assert len(items) == 6 and len({parse_item_key(i)[0] for i in items}) == 2  # 36 calls of 40
    assert "at most 36 of 180 calls" in debate.plan_note()
    # a discussion item: 2 reviews + 4 turns = 6 calls; a pair in both orders, both leaders: 24 calls
    discussion = DiscussionJob("b", [FakeBackend("x"), FakeBackend("y")], turns=4, budget=30)
    items = [parse_item_key(i) for i in discussion.prepare(store)]
    assert len(items) == 4 and len({frozenset(i[1:3]) for i in items}) == 1  # one pair: both orders, both leaders
    assert "part of one question" in discussion.plan_note()
