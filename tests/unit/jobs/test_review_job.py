"""Answer and review jobs: items, pair selection, budgets, verdict methods, storage."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from peercore.jobs.answers import AnswerJob
from peercore.jobs.base import Judge, parse_item_key, seeded_rng
from peercore.jobs.review import ReviewJob, select_pairs
from peercore.reviewers.base import Capabilities, Completion
from peercore.runner import RetryPolicy, run_job_sync
from peercore.app import Study
from runner.fakes import FakeBackend, make_study

FAST = RetryPolicy(max_attempts=3, base_s=0.001)


def run(job, store, **kw):
    return run_job_sync(job, store, retry=FAST, **kw)


# ------------------------------------------------------------------------ answers


def test_answer_job_asks_each_contestant_each_question_once(store):
    make_study(store, questions=3, answers=False)
    a = FakeBackend("a", reply=lambda r: "A says " + r.messages[-1]["content"])
    b = FakeBackend("b", reply=lambda r: "B says " + r.messages[-1]["content"])
    result = run(AnswerJob("demo", [a, b], system_prompt=None), store)
    assert result.done == 6 and len(a.requests) == 3 and len(b.requests) == 3
    answers = store.questions.answers("demo")
    assert set(answers["model"]) == {"fake:a", "fake:b"}
    row = answers[(answers["model"] == "fake:a") & (answers["question_id"] == "q1")]
    assert row["answer"].item() == "A says Question number 1?"
    assert a.requests[0].messages == ({"role": "user", "content": "Question number 0?"},)


def test_answer_job_keeps_existing_answers_and_skips_empty_ones(store):
    make_study(store, questions=2, answers=False)
    store.questions.add_answers("demo", pd.DataFrame({"question_id": ["q0"], "model": ["fake:a"], "answer": ["imported"]}))
    a = FakeBackend("a", reply=lambda r: "" if "1" in r.messages[-1]["content"] else "generated")
    result = run(AnswerJob("demo", [a]), store)
    assert len(a.requests) == 1  # q0 already answered; q1 asked
    assert result.invalid == 1 and result.status == "finished"
    answers = store.questions.answers("demo")
    assert answers["answer"].tolist() == ["imported"]  # the empty answer was not stored


def test_answer_job_validates_options(store):
    with pytest.raises(ValueError, match="max_tokens"):
        AnswerJob("demo", [FakeBackend()], max_tokens=0)
    with pytest.raises(ValueError, match="contestants is empty"):
        AnswerJob("demo", [])
    with pytest.raises(ValueError, match="duplicate names"):
        AnswerJob("demo", [FakeBackend("a"), FakeBackend("a")])


# ---------------------------------------------------------------------- selection


def test_select_pairs_all_is_every_ordered_pair():
    pairs = select_pairs(4, strategy="all", rng=np.random.default_rng(0))
    assert len(pairs) == 12 and len({tuple(p) for p in pairs}) == 12
    assert all(i != j for i, j in pairs)


@pytest.mark.parametrize("strategy,k,expected", [("no-repeat", 5, 5), ("symmetric", 6, 6), ("greedy", 4, 4),
                                                 ("random", 12, 12)])
def test_select_pairs_strategies_give_exactly_k_distinct_pairs(strategy, k, expected):
    pairs = select_pairs(4, strategy=strategy, k=k, rng=np.random.default_rng(1))
    assert len(pairs) == expected and len({tuple(p) for p in pairs}) == expected


@pytest.mark.parametrize("strategy,limit", [("no-repeat", 6), ("greedy", 6), ("random", 12), ("symmetric", 12)])
def test_select_pairs_more_than_the_strategy_can_make_is_refused_or_capped(strategy, limit):
    # Liusie et al. 2024 section 3.4: no-repeat makes each of the N(N-1)/2 pairs in one order
    # only, random draws distinct ordered pairs (at most N(N-1)).
    with pytest.raises(ValueError, match=f"K=100 per question is more than strategy '{strategy}' can make for 4 "
                                         f"candidates \\({limit}\\)"):
        select_pairs(4, strategy=strategy, k=100, rng=np.random.default_rng(1))
    pairs = select_pairs(4, strategy=strategy, k=100, rng=np.random.default_rng(1), cap=True)
    assert len(pairs) == len({tuple(p) for p in pairs}) == limit


def test_select_pairs_no_repeat_never_shows_a_pair_in_both_orders():
    # Liusie et al. 2024 section 3.4: "if (x_i, x_j) is selected then (x_j, x_i) will not be selected".
    for seed in range(20):
        pairs = select_pairs(5, strategy="no-repeat", k=10, rng=np.random.default_rng(seed))
        assert len({frozenset(p) for p in pairs.tolist()}) == 10


def test_select_pairs_random_draws_k_without_replacement():
    # select_pairs(5, strategy="random", k=10) gave 7 comparisons on main (drawn with replacement, then deduplicated).
    for seed in range(20):
        pairs = select_pairs(5, strategy="random", k=10, rng=np.random.default_rng(seed))
        assert len(pairs) == len({tuple(p) for p in pairs.tolist()}) == 10


def test_select_pairs_errors_name_the_value():
    with pytest.raises(ValueError, match="'best'"):
        select_pairs(3, strategy="best", rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="k"):
        select_pairs(3, strategy="random", rng=np.random.default_rng(0))


def test_seeded_rng_is_stable_and_depends_on_the_parts():
    a = seeded_rng(1, "q1").random(3)
    assert np.array_equal(a, seeded_rng(1, "q1").random(3))
    assert not np.array_equal(a, seeded_rng(1, "q2").random(3))
    assert not np.array_equal(a, seeded_rng(2, "q1").random(3))


# ------------------------------------------------------------------------- review


def test_review_all_pairs_for_every_reviewer(store, study):
    r1, r2 = FakeBackend("r1"), FakeBackend("r2")
    job = ReviewJob(study, [r1, r2])
    items = job.prepare(store)
    assert len(items) == 3 * 6 * 2  # questions x ordered pairs of 3 models x reviewers
    result = run(job, store)
    assert result.done == 36 and result.calls == 36
    judgments = store.verdicts.table(study)
    assert len(judgments) == 36 and set(judgments["judge"]) == {"fake:r1", "fake:r2"}
    assert set(judgments["winner"]) <= {"model_a", "model_b", "tie"}
    judges = store.judges.table(study).set_index("name")
    assert judges.loc["fake:r1", "kind"] == "llm"


def test_review_request_shows_the_first_model_first(store, study):
    backend = FakeBackend()
    job = ReviewJob(study, [backend], questions=["q0"], contestants=["m1", "m2"])
    run(job, store)
    by_order = {}
    for request in backend.requests:
        text = request.messages[-1]["content"]
        by_order[text.index("m1 answers") < text.index("m2 answers")] = True
    assert by_order == {True: True, False: True}  # both presentation orders asked


def test_review_judge_that_is_a_contestant_gets_an_alias(store):
    make_study(store, models=("fake:judge", "m2"))
    run(ReviewJob("demo", [FakeBackend()]), store)
    assert store.judges.aliases("demo") == {"fake:judge": "fake:judge"}


def test_review_budget_sets_k_per_question(store, study):
    job = ReviewJob(study, [FakeBackend("r1"), FakeBackend("r2")], strategy="random", budget=25)
    items = job.prepare(store)
    # K = 25 // (3 questions x 2 reviewers) = 4 comparisons per question
    assert len(items) == 3 * 4 * 2
    per_question = pd.Series([parse_item_key(i)[0] for i in items]).value_counts()
    assert set(per_question) == {8}


def test_review_budget_caps_k_at_what_no_repeat_can_make(store, study):
    # 3 contestants have N(N-1)/2 = 3 pairs, each shown in one order (Liusie et al. 2024, section 3.4):
    # a budget allowing K = 4 gets 3; an explicit --comparisons 4 is refused before any call.
    job = ReviewJob(study, [FakeBackend("r1"), FakeBackend("r2")], strategy="no-repeat", budget=25)
    items = job.prepare(store)
    assert len(items) == 3 * 3 * 2
    pairs = {(q, frozenset((a, b))) for q, a, b, _ in map(parse_item_key, items)}
    assert len(pairs) == 9  # no pair in both orders
    with pytest.raises(ValueError, match="K=4 per question is more than strategy 'no-repeat' can make for 3"):
        ReviewJob(study, [FakeBackend()], strategy="no-repeat", comparisons=4).prepare(store)


def test_review_budget_keeps_what_fits_and_refuses_only_below_one_comparison(store, study):
    # K = 5 // (3 questions x 2 reviewers) < 1: one comparison (2 calls) on the 2 questions 5 calls pay for
    job = ReviewJob(study, [FakeBackend("a"), FakeBackend("b")], strategy="random", budget=5)
    items = job.prepare(store)
    assert len(items) == 4 and len({parse_item_key(i)[0] for i in items}) == 2
    assert "call budget 5: 2 of 3 questions" in job.plan_note()
    # every ordered pair of 3 contestants is 6 calls a question: 10 calls keep one whole question
    job = ReviewJob(study, [FakeBackend()], budget=10)
    items = job.prepare(store)
    assert len(items) == 6 and len({parse_item_key(i)[0] for i in items}) == 1
    with pytest.raises(ValueError, match="budget=1 calls is too small for a single comparison"):
        ReviewJob(study, [FakeBackend("a"), FakeBackend("b")], strategy="random", budget=1).prepare(store)


def test_review_same_seed_same_pairs_other_seed_other_pairs(store, study):
    def pairs(seed):
        return ReviewJob(study, [FakeBackend()], strategy="no-repeat", comparisons=3, seed=seed).prepare(store)

    assert pairs(0) == pairs(0)
    assert pairs(0) != pairs(1)


def test_review_unreadable_output_is_stored_invalid_with_raw_text(store, study):
    backend = FakeBackend(reply=lambda r: "Both have merits; hard to say.")
    result = run(ReviewJob(study, [backend], questions=["q0"], contestants=["m1", "m2"]), store)
    assert result.invalid == 2 and result.status == "finished"
    assert len(store.verdicts.table(study)) == 0
    rows = store.connect().execute("SELECT valid, winner, raw FROM judgments").fetchall()
    assert [tuple(r) for r in rows] == [(0, None, "Both have merits; hard to say.")] * 2
    assert Study(store, study).counts()["invalid_judgments"] == 2


def test_review_logprobs_gives_p_a_from_label_probabilities(store, study):
    def reply(request):
        assert request.top_logprobs and request.max_tokens == 1
        assert request.prefill == "The better answer is Answer "  # the backend can prefill
        return Completion("1", 10, 1, top_logprobs={"1": math.log(0.6), "2": math.log(0.2), "The": math.log(0.1)})

    backend = FakeBackend(reply=reply, capabilities=Capabilities(logprobs=True, prefill=True))
    run(ReviewJob(study, [backend], method="logprobs", questions=["q0"]), store)
    judgments = store.verdicts.table(study)
    assert judgments["p_a"].tolist() == pytest.approx([0.75] * 6)
    assert set(judgments["winner"]) == {"model_a"}


def test_review_samples_gives_the_share_of_first_answer_verdicts(store, study):
    def reply(request):
        return "Verdict: Response B" if request.sample_index == 0 else "Verdict: Response A"

    backend = FakeBackend(reply=reply)
    run(ReviewJob(study, [backend], method="samples", samples=4, questions=["q0"], contestants=["m1", "m2"]), store)
    assert len(backend.requests) == 2 * 4
    assert {r.temperature for r in backend.requests} == {1.0}
    judgments = store.verdicts.table(study)
    assert judgments["p_a"].tolist() == pytest.approx([0.75, 0.75])


def test_review_verdict_method_stores_no_probability(store, study):
    run(ReviewJob(study, [FakeBackend()], questions=["q0"]), store)
    judgments = store.verdicts.table(study)
    assert judgments["p_a"].isna().all() and judgments["rationale"].str.startswith("Reasoning").all()


@pytest.mark.parametrize("method,caps,k", [
    ("verdict", Capabilities(), 1),
    ("samples", Capabilities(), 3),
    ("logprobs", Capabilities(logprobs=True), 1),
    ("logits", Capabilities(logprobs=True, logits=True, prefill=True), 1),
    ("auto", Capabilities(logprobs=True), 1),
])
def test_planned_requests_are_the_requests_compare_sends(store, study, method, caps, k):
    sent = []

    def reply(request):
        sent.append(request)
        if request.top_logprobs:
            return Completion("", 1, 1, top_logprobs={"x": 0.0})  # no label: auto falls back to a verdict
        return "Verdict: Answer 1"

    backend = FakeBackend(reply=reply, capabilities=caps)
    job = ReviewJob(study, [backend], method=method, samples=k, questions=["q0"], contestants=["m1", "m2"],
                    max_tokens=64)  # no criterion: these templates have no place for one (refused, issue 17)
    items = job.prepare(store)
    planned = [(c.request, c.optional) for item in items for c in job.plan(item)]
    run(job, store)
    assert sorted(map(repr, sent)) == sorted(repr(r) for r, _ in planned)
    assert any(optional for _, optional in planned) == (method == "auto")


def test_review_option_errors_name_the_value(study):
    backends = [FakeBackend()]
    with pytest.raises(ValueError, match="'dice'"):
        ReviewJob(study, backends, method="dice")
    with pytest.raises(ValueError, match="samples >= 2"):
        ReviewJob(study, backends, method="samples")
    with pytest.raises(ValueError, match="logits"):
        ReviewJob(study, backends, method="logits")  # the fake backend cannot read logits
    with pytest.raises(ValueError, match="max_tokens"):
        ReviewJob(study, backends, max_tokens=0)
    with pytest.raises(ValueError, match="needs comparisons"):
        ReviewJob(study, backends, strategy="greedy")
    with pytest.raises(ValueError, match="comparisons=3 needs a selection strategy"):
        ReviewJob(study, backends, comparisons=3)


def test_review_needs_answers(store):
    make_study(store, answers=False)
    with pytest.raises(ValueError, match="peercore answer"):
        ReviewJob("demo", [FakeBackend()]).prepare(store)
    make_study(store, name="two")
    with pytest.raises(ValueError, match=r"contestants \['nobody'\] have no answers"):
        ReviewJob("two", [FakeBackend()], contestants=["nobody", "m1"]).prepare(store)


def test_review_with_named_judges_of_one_backend(store, study):
    backend = FakeBackend(reply=lambda r: "Fine.\nVerdict: Response A")  # liusie_generative's A/B scheme
    judges = [Judge(backend, name="cool", temperature=0.3), Judge(backend, name="warm", temperature=0.9)]
    run(ReviewJob(study, judges, method="samples", samples=2, questions=["q0"], contestants=["m1", "m2"]), store)
    assert sorted({r.temperature for r in backend.requests}) == [0.3, 0.9]
    assert set(store.verdicts.table(study)["judge"]) == {"cool", "warm"}


def test_a_review_refuses_per_judge_seeds(study):
    # K samples are seeded by their sample index; one fixed seed would make them identical
    with pytest.raises(ValueError, match=r"reviewers \['warm'\] have a seed"):
        ReviewJob(study, [Judge(FakeBackend(), name="warm", temperature=1.0, seed=3)], method="samples", samples=3)


def test_an_answer_request_carries_the_contestants_seed(store):
    make_study(store, questions=1, models=("m1",))
    backend = FakeBackend(reply=lambda request: f"answer with seed {request.seed}")
    contestants = [Judge(backend, name="c1", temperature=0.7, seed=1), Judge(backend, name="c2", temperature=0.7, seed=2)]
    run(AnswerJob("demo", contestants), store)
    answers = store.questions.answers("demo").set_index("model")["answer"]
    assert (answers["c1"], answers["c2"]) == ("answer with seed 1", "answer with seed 2")
