"""``ReviewJob(pairs=...)``: a review restricted to a list of comparisons (what a cascade stage judges).

Trust or Escalate (Jung, Brahman & Choi, ICLR 2025, arXiv 2407.18370), section 2.3: stage s of
a cascade judges only what the stages before it did not keep (plus the human-labelled
calibration comparisons it calibrates on, section 2.1 eqs. 2-4), so a review must be able to
judge exactly a list of comparisons, and nothing else.
"""

from __future__ import annotations

import pytest

from peercore.jobs.base import parse_item_key
from peercore.jobs.review import ReviewJob
from peercore.runner import run_job_sync
from runner.fakes import FakeBackend

LISTED = [("q0", "m1", "m2"), ("q0", "m2", "m1"), ("q2", "m3", "m1")]


def test_listed_pairs_are_the_only_items_in_their_order(store, study):
    """Section 2.3: the stage judges the listed comparisons only, each in the order shown (model_a first)."""
    job = ReviewJob(study, [FakeBackend("r1")], pairs=LISTED)
    items = [parse_item_key(item) for item in job.prepare(store)]
    assert [(q, a, b) for q, a, b, _ in items] == LISTED
    assert job.plan_note() == ""


def test_a_run_of_listed_pairs_calls_and_stores_only_those(store, study):
    """Every paid call of the restricted review ends as a stored verdict on a listed comparison (section 2.3's
    stage judges nothing it was not asked to)."""
    backend = FakeBackend("r1")
    result = run_job_sync(ReviewJob(study, [backend], pairs=LISTED), store)
    assert result.status == "finished" and result.calls == len(backend.requests) == 3
    stored = store.verdicts.table(study, include_invalid=True)
    assert sorted(zip(stored["question_id"], stored["model_a"], stored["model_b"])) == sorted(LISTED)
    assert result.accounting["verdicts"] == 3


def test_the_pair_list_is_part_of_the_run_identity_only_when_given(store, study):
    """A different list is a different run (its own items); a review without a list keeps the run id it had."""
    plain = ReviewJob(study, [FakeBackend("r1")])
    assert "pairs" not in plain.config()
    one = ReviewJob(study, [FakeBackend("r1")], pairs=LISTED[:1])
    two = ReviewJob(study, [FakeBackend("r1")], pairs=LISTED[:2])
    assert one.config()["pairs"] == [list(LISTED[0])]
    assert len({plain.run_id(), one.run_id(), two.run_id()}) == 3


@pytest.mark.parametrize("options, message", [
    ({"pairs": []}, "pairs is empty"),
    ({"pairs": [("q0", "m1")]}, r"pairs\[0\] must be \(question_id, model_a, model_b\)"),
    ({"pairs": [("q0", "m1", "m1")]}, "compares 'm1' with itself"),
    ({"pairs": [("q0", "m1", "m2"), ("q0", "m1", "m2")]}, "listed twice"),
    ({"pairs": LISTED, "budget": 4}, "cannot be combined with budget"),
    ({"pairs": LISTED, "strategy": "random", "comparisons": 2}, "cannot be combined with strategy, comparisons"),
    ({"pairs": LISTED, "questions": ["q0"]}, "cannot be combined with questions"),
])
def test_bad_pair_lists_are_refused_before_any_call(study, options, message):
    with pytest.raises(ValueError, match=message):
        ReviewJob(study, [FakeBackend("r1")], **options)


@pytest.mark.parametrize("pair, message", [
    (("q9", "m1", "m2"), "question 'q9' is not in study"),
    (("q0", "m1", "nobody"), "'nobody' has no answer to question 'q0'"),
])
def test_a_pair_the_study_cannot_show_is_refused_when_prepared(store, study, pair, message):
    backend = FakeBackend("r1")
    job = ReviewJob(study, [backend], pairs=[pair])
    with pytest.raises(ValueError, match=message):
        job.prepare(store)
    assert backend.requests == []
