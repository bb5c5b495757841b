"""Schema 13: label requests in the adjudication queue, and reviewers kept in the study (both backends).

A label request asks people to label one comparison (issue 23: the comparisons active
inference draws, Zrnic and Candès 2024, eq. (3); issue 24: what no stage of a Trust-or-Escalate
cascade keeps, Jung et al. 2025, section 3). Each decision is a vote ``adjudicator:<annotator>``
on the comparison: a label for prediction-powered inference (Angelopoulos et al. 2023, PPI++).
"""

from __future__ import annotations

import pandas as pd
import pytest

from peercore.app import Study
from peercore.assignment import DecisionRefused, next_item
from peercore.store import Store


@pytest.fixture
def store(db):  # both backends (tests/conftest.py)
    s = Store(db)
    s.studies.create("s")
    s.questions.add("s", pd.DataFrame({"question_id": ["q1", "q2"], "text": ["one?", "two?"]}))
    s.questions.add_answers("s", pd.DataFrame({"question_id": ["q1", "q1", "q2", "q2", "q2"], "model": ["a", "b", "a", "b", "b"],
                                               "turn": [1, 1, 1, 1, 2], "answer": ["A1", "B1", "A2", "B2", "B2 again"]}))
    s.debates.add_many("s", [({"debate_key": "d1", "question_id": "q1", "model_a": "a", "model_b": "b",
                               "status": "unresolved"},
                         [{"round": 0, "position": 0, "speaker": "x", "verdict": "model_a"},
                          {"round": 0, "position": 1, "speaker": "y", "verdict": "model_b"}])])
    yield s
    s.close()


def request(question="q2", a="a", b="b", **extra) -> dict:
    return {"question_id": question, "model_a": a, "model_b": b, **extra}


def test_a_label_request_is_queued_once_in_either_order(store):
    first = store.debates.add_label_requests("s", [request(metadata={"judge": "gpt", "probability": 0.25})],
                                             requested_by="peercore calibrate --request", reason="the judge was unsure")
    again = store.debates.add_label_requests("s", [request(a="b", b="a")], requested_by="someone", reason="again")
    assert (first.added, again.added, again.skipped) == (1, 0, 1)
    requests = store.debates.table("s", kind="label_request")
    assert len(requests) == 1
    assert requests.loc[0, ["status", "n_rounds", "model_a", "model_b"]].tolist() == ["unresolved", 0, "a", "b"]
    assert requests.loc[0, "metadata"] == {"judge": "gpt", "probability": 0.25, "turn": 1,
                                           "requested_by": "peercore calibrate --request",
                                           "reason": "the judge was unsure"}
    assert store.debates.turns(requests["id"]).empty
    counts = store.studies.record_counts("s")
    assert (counts["debates"], counts["unresolved_debates"], counts["label_requests"],
            counts["open_adjudications"]) == (1, 1, 1, 2)
    # The debate tables and statistics do not count it as a debate.
    assert Study(store, "s").debates()["kind"].tolist() == ["debate"]


@pytest.mark.parametrize("bad, message", [
    (request(question="q9"), "question_id 'q9' is not in study 's'"),
    (request(b="a"), "model_a and model_b are both 'a'"),
    (request(b="c"), "'c' has no answer to question 'q2'"),
    (request(turn=0), "turn must be a positive integer"),
])
def test_a_bad_request_is_refused_and_nothing_is_written(store, bad, message):
    revision = store.studies.revision("s")
    with pytest.raises(ValueError, match=f"label request 1: {message}"):
        store.debates.add_label_requests("s", [request(), bad], requested_by="t", reason="r")
    assert store.debates.table("s", kind="label_request").empty
    assert store.studies.revision("s") == revision


def test_the_queue_offers_label_requests_and_a_decision_is_a_labelled_vote_on_its_turn(store):
    store.debates.add_label_requests("s", [request(turn=2)], requested_by="t", reason="r")
    queue = store.debates.queue("s", annotator="ann")
    assert queue["kind"].tolist() == ["debate", "label_request"]
    store.debates.skip(int(queue.loc[0, "id"]), "ann")  # the debate put aside: the label request comes next
    item = next_item(store, "s", "ann", lease=60)
    assert (item.kind, item.n_rounds, item.metadata["turn"]) == ("label_request", 0, 2)
    assert store.debates.adjudicate(item.debate_id, "ann", "model_b") is True
    decided = store.debates.adjudications("s")
    assert decided[["kind", "turn", "decision"]].astype(object).values.tolist() == [["label_request", 2, "model_b"]]
    votes = Study(store, "s").judgments()
    label = votes[votes["judge"] == "adjudicator:ann"]
    assert label[["question_id", "model_a", "model_b", "winner", "turn"]].astype(object).values.tolist() == [
        ["q2", "a", "b", "model_b", 2]]
    # Changed with a reason, as any decision: the history has both entries.
    store.debates.edit_adjudication(item.debate_id, "ann", "tie", reason="looked again", changed_by="ann")
    history = store.debates.decision_history("s")
    assert history[["before", "after", "reason"]].values.tolist() == [[None, "model_b", ""],
                                                                      ["model_b", "tie", "looked again"]]


def test_a_prd_discussion_is_still_refused(store):
    store.debates.add_many("s", [({"debate_key": "p1", "kind": "discussion", "question_id": "q1", "model_a": "a",
                                   "model_b": "b", "status": "unresolved"}, [])])
    discussion = int(store.debates.table("s", kind="discussion")["id"].iloc[0])
    with pytest.raises(DecisionRefused, match="only debates whose agents disagreed and label requests"):
        store.debates.adjudicate(discussion, "ann", "model_a")


def test_reviewers_are_kept_per_study_without_secrets(store, db):
    store.studies.create("other")
    reviewers = [{"spec": "openai:gpt-4o-mini", "api_key_env": "OPENAI_API_KEY", "api_key": "typed-by-hand",
                  "base_url": "http://user:hunter2@127.0.0.1:9/v1", "temperature": 0.0}]
    revision = store.studies.revision("s")
    store.studies.update_settings("s", reviewers=reviewers)
    assert store.studies.revision("s") == revision  # settings are no data
    with Store(db) as reopened:
        kept = reopened.studies.settings("s")["reviewers"]
        assert reopened.studies.settings("other")["reviewers"] == []
    assert kept[0]["spec"] == "openai:gpt-4o-mini" and kept[0]["api_key_env"] == "OPENAI_API_KEY"
    assert kept[0]["api_key"] == "***" and "hunter2" not in kept[0]["base_url"]
    with pytest.raises(ValueError, match="API key"):
        store.studies.update_settings("s", reviewers=[{"note": "sk-proj-" + "a1B2" * 12}])
    with pytest.raises(ValueError, match="list of JSON objects"):
        store.studies.update_settings("s", reviewers={"spec": "x"})
    assert store.studies.settings("s")["reviewers"] == kept  # refusals wrote nothing
