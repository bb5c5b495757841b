"""``peercore calibrate --request K`` as users reach it (issue 23, "Which comparisons to label next").

Active inference (Zrnic & Candès 2024, "Active Statistical Inference", arXiv 2403.03208,
eq. (3) and section 4): among the judge's comparisons the reference has not labelled,
comparison i is requested with probability pi_i proportional to the judge's uncertainty mixed
with uniform, summing to K; pi_i is stored with the request (its label's weight 1/pi_i). A
decided request is a vote ``adjudicator:<annotator>``, so ``--reference human:,adjudicator:``
counts it as one more label of the PPI++ leaderboard (Angelopoulos, Duchi & Zrnic 2023,
arXiv 2311.01453, eq. (2)).

The study is tests/integration/guarantees_study.py's (imported with ``peercore import``), with
the questions and the contestants' answers added (a label request shows the two answers).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from peercore.cli import main
from peercore.store import Store
from integration.guarantees_study import HUMAN_QUESTIONS, MODELS, imported, synthetic_rows

QUESTIONS = 80


def _with_answers(db: str) -> str:
    store = Store(db, create=False)
    store.questions.add("s", pd.DataFrame({"question_id": [f"q{q}" for q in range(QUESTIONS)],
                                           "text": [f"Question {q}?" for q in range(QUESTIONS)]}))
    store.questions.add_answers("s", pd.DataFrame([{"question_id": f"q{q}", "model": m, "answer": f"{m} answers {q}"}
                                                   for q in range(QUESTIONS) for m in MODELS]))
    return db


@pytest.fixture
def db(tmp_path) -> str:
    return _with_answers(imported(tmp_path, synthetic_rows()))


def _run(capsys, *args) -> tuple[int, str, str]:
    try:
        status = main(list(args))
    except SystemExit as exc:  # argparse's own usage errors
        status = exc.code
    out = capsys.readouterr()
    return status, out.out, out.err


def _request(capsys, db, k, *extra, judge="prob", reference="human:,adjudicator:") -> dict:
    status, out, err = _run(capsys, "calibrate", "--study", "s", "--db", db, "--judge", judge, "--reference",
                            reference, "--request", str(k), "--format", "json", *extra)
    assert status == 0, err
    return json.loads(out)


def _label_requests(db: str) -> pd.DataFrame:
    return Store(db, create=False).debates.table("s", kind="label_request")


def test_request_queues_k_unlabelled_comparisons_with_their_probability(db, capsys):
    """K requests are queued in the adjudication queue, each a comparison of the judge with no human label yet (the
    first 50 questions are labelled), carrying pi_i (Zrnic & Candès eq. (3)'s weight) and the judge's uncertainty
    sqrt(p(1 - p)) in its metadata; the printed rows are the queued ones."""
    payload = _request(capsys, db, 6)
    rows = payload["requests"]
    assert len(rows) == 6 and payload["queued"] == 6 and payload["already_queued"] == 0
    assert {"question_id", "model_a", "model_b", "turn", "probability", "queued"} <= set(rows[0])
    assert all(r["queued"] is True for r in rows)
    assert all(int(r["question_id"][1:]) >= HUMAN_QUESTIONS for r in rows)  # only unlabelled comparisons
    assert all(0 < r["probability"] <= 1 for r in rows)
    stored = _label_requests(db)
    assert len(stored) == 6 and set(stored["status"]) == {"unresolved"}
    assert ({(r.question_id, frozenset((r.model_a, r.model_b))) for r in stored.itertuples()}
            == {(r["question_id"], frozenset((r["model_a"], r["model_b"]))) for r in rows})
    meta = stored["metadata"].tolist()
    assert {m["judge"] for m in meta} == {"prob"} and {m["reference"] for m in meta} == {"human:,adjudicator:"}
    assert {m["requested_by"] for m in meta} == {"peercore calibrate --request"}
    by_question = {(r["question_id"], r["model_a"], r["model_b"]): r["probability"] for r in rows}
    assert sorted(m["probability"] for m in meta) == pytest.approx(sorted(by_question.values()))
    queue = Store(db, create=False).debates.queue("s", annotator="carol")
    assert (queue["kind"] == "label_request").sum() == 6


def test_probabilities_follow_the_judges_uncertainty(db, capsys):
    """The soft judge ``prob`` reports p_a in {0.55, 0.75, 0.95} (and 1 - those): its uncertainty sqrt(p(1 - p)) is
    largest at 0.55, so (active_probabilities, Zrnic & Candès section 4) a request there carries a larger pi than
    one at 0.95; the 30 unlabelled questions x 6 pairs = 180 comparisons are the population."""
    payload = _request(capsys, db, 30)
    assert payload["unlabelled"] == 180 and payload["labelled"] == 300
    rows = payload["requests"]
    by_u = {}
    for r in rows:
        by_u.setdefault(round(r["uncertainty"], 4), set()).add(round(r["probability"], 10))
    assert all(len(p) == 1 for p in by_u.values())  # pi is a function of the uncertainty
    ordered = [next(iter(by_u[u])) for u in sorted(by_u)]
    assert len(ordered) >= 2 and ordered == sorted(ordered) and ordered[0] < ordered[-1]


def test_rerun_queues_nothing_twice_and_says_so(db, capsys):
    """The same request again (same seed: the same draw) queues nothing new and says how many were queued before."""
    first = _request(capsys, db, 5, "--seed", "3")
    again = _request(capsys, db, 5, "--seed", "3")
    assert again["queued"] == 0 and again["already_queued"] == 5
    assert all(r["queued"] is False for r in again["requests"])
    assert [r["question_id"] for r in again["requests"]] == [r["question_id"] for r in first["requests"]]
    assert len(_label_requests(db)) == 5
    status, out, err = _run(capsys, "calibrate", "--study", "s", "--db", db, "--judge", "prob", "--reference",
                            "human:", "--request", "5", "--seed", "3")
    assert status == 0, err
    assert "0 queued, 5 already queued before" in out
    assert "probability" in out and "queued" in out


def test_a_study_without_the_judge_gets_one_line(db, capsys):
    """A judge the study does not have: one line naming --judge, exit 2, nothing queued."""
    status, _, err = _run(capsys, "calibrate", "--study", "s", "--db", db, "--judge", "gpt-9", "--reference",
                          "human:", "--request", "3")
    assert status == 2 and err.count("\n") == 1 and "--judge" in err
    assert len(_label_requests(db)) == 0


def test_without_human_labels_requests_start_the_labels_and_the_leaderboard_says_none(tmp_path, capsys):
    """A study without any human label: the leaderboard is one line starting "no human labels", exit 2 (PPI++
    eq. (2) needs n >= 1 labels), and --request still queues labels (requests are how labels start: the active
    probabilities need only the judge, Zrnic & Candès section 4); a request for more comparisons than exist is
    one line naming --request."""
    db = _with_answers(imported(tmp_path, synthetic_rows(humans=False)))
    status, _, err = _run(capsys, "calibrate", "--study", "s", "--db", db, "--judge", "prob", "--reference",
                          "human:,adjudicator:")
    assert status == 2 and err.count("\n") == 1 and err.startswith("peercore: error: no human labels")
    payload = _request(capsys, db, 4)
    assert payload["queued"] == 4 and payload["labelled"] == 0 and payload["unlabelled"] == 480
    status, _, err = _run(capsys, "calibrate", "--study", "s", "--db", db, "--judge", "prob", "--reference",
                          "human:", "--request", "481")
    assert status == 2 and err.count("\n") == 1 and "--request" in err


def test_a_decided_request_is_one_more_label(db, capsys):
    """Deciding a request (Store.debates.adjudicate) makes a vote of adjudicator:<annotator> on the comparison; with
    ``--reference human:,adjudicator:`` the PPI++ leaderboard counts it: one more label on one more comparison."""
    def board(reference):
        status, out, err = _run(capsys, "calibrate", "--study", "s", "--db", db, "--judge", "prob", "--reference",
                                reference, "--format", "json")
        assert status == 0, err
        return json.loads(out)

    before = board("human:,adjudicator:")
    assert before["labels"] == 300
    _request(capsys, db, 3)
    request = _label_requests(db).iloc[0]
    Store(db, create=False).debates.adjudicate(int(request["id"]), "carol", "model_a")
    after = board("human:,adjudicator:")
    assert after["labels"] == before["labels"] + 1
    assert after["labelled_comparisons"] == before["labelled_comparisons"] + 1
    assert board("human:")["labels"] == 300  # the human votes alone do not see the decision
    assert board("adjudicator:")["labels"] == 1
    # the decided comparison has a label now: a new request draws among the 179 others
    assert _request(capsys, db, 1, "--seed", "9")["unlabelled"] == 179


def test_help_documents_the_reference_list_and_request(capsys):
    """--help says that --reference takes several names comma-separated (human:,adjudicator:) and what --request
    does."""
    status, out, _ = _run(capsys, "calibrate", "--help")
    assert status == 0
    text = " ".join(out.split())
    assert "human:,adjudicator:" in text and "--request K" in text and "active inference" in text
