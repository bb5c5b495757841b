"""``peercore escalate`` without ``--dry-run``: the cascade runs and what no judge keeps is queued for people.

Jung, Brahman & Choi, "Trust or Escalate: LLM Judges with Provable Guarantees for Human
Agreement" (ICLR 2025, arXiv 2407.18370). Section 2.1, eq. 1: with probability at least
1 - delta, agreement with the human majority on the kept verdicts is at least 1 - alpha;
eqs. 2-4: each threshold is chosen by fixed-sequence testing with exact (Clopper-Pearson)
bounds on the human-labelled calibration comparisons, keeping at least 30 of them. Section
2.2: a judge's confidence is the agreement of both presentation orders (or a label
probability). Section 2.3 (cascaded selective evaluation): stage s judges what the stages
before it did not keep, is calibrated on those comparisons at delta / S, and what no stage
keeps is escalated to humans.

The study: 40 questions, three contestants m0 > m1 > m2 (the better model always wins),
every unordered pair once per question: 120 comparisons, of which the 90 of questions
q00-q29 carry a human vote (the truth), imported with ``peercore import`` from a canonical
CSV. The judges are specs run against the fake OpenAI wire-format server
(tests/fakes/llm_server.py), whose replies are scripted per comparison:

* ``openai:gpt-4o-mini`` is right in both orders on the "easy" comparisons ((q + pair) even),
  and otherwise always answers "Answer 1" (the orders split: confidence 1/2, a tie);
* ``openai:gpt-4o`` is right in both orders except on the hard comparisons of questions
  divisible by 3, where it always answers "Answer 1".

By hand: stage 1 keeps its 45 easy calibration comparisons (0 wrong; the Clopper-Pearson
bound at delta / 2 = 0.05 is 1 - 0.05^(1/45) = 0.064 <= 0.15), and at confidence 1/2 the
bound of 45 wrong in 90 exceeds alpha, so the threshold is the grid's 0.501. Stage 2 is
calibrated on the 45 left: it keeps 30 (1 - 0.05^(1/30) = 0.095 <= 0.15), threshold 0.501.
Unlabelled: stage 1 keeps 15 of 30, stage 2 judges the other 15 and keeps 9; the 6 hard
comparisons of q30, q33, q36 and q39 are queued as label requests.
"""

from __future__ import annotations

import itertools
import json
import re

import pandas as pd
import pytest

from fakes.llm_server import FakeLLMServer
from peercore.cli import main
from peercore.store import Store

MODELS = ("m0", "m1", "m2")
PAIRS = list(itertools.combinations(MODELS, 2))  # pair index p: (m0,m1), (m0,m2), (m1,m2)
QUESTIONS, LABELLED = 40, 30
MINI, BIG = "openai:gpt-4o-mini", "openai:gpt-4o"
TAG = re.compile(r"\[\[(q\d+):(m\d)\]\]")


def _easy(q: int, p: int) -> bool:
    return (q + p) % 2 == 0


def _big_right(q: int, p: int) -> bool:
    return _easy(q, p) or q % 3 != 0


def scripted_reply(body: dict, api: str) -> str:
    """The verdict each fake judge gives on the comparison whose answers the prompt shows (module docstring)."""
    user = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
    (question, first), (_, second) = TAG.findall(user)[:2]
    q, p = int(question[1:]), PAIRS.index(tuple(sorted((first, second))))
    right = _easy(q, p) if body["model"] == "gpt-4o-mini" else _big_right(q, p)
    digit = ("1" if first < second else "2") if right else "1"  # the lower-numbered model is the better one
    return f"Scripted review of {question}.\nVerdict: Answer {digit}"


def build_study(tmp_path, *, labelled: int = LABELLED, extra: list[dict] | None = None) -> str:
    """Questions and tagged answers in a new store; the human votes (and ``extra`` rows) through ``peercore import``."""
    db = str(tmp_path / "escalate.sqlite")
    store = Store(db)
    store.studies.create("s")
    store.questions.add("s", pd.DataFrame({"question_id": [f"q{i:02d}" for i in range(QUESTIONS)],
                                           "text": [f"Explain idea {i}." for i in range(QUESTIONS)],
                                           "category": ["general"] * QUESTIONS}))
    store.questions.add_answers("s", pd.DataFrame([{"question_id": f"q{i:02d}", "model": m,
                                                    "answer": f"[[q{i:02d}:{m}]] An answer of {m} to idea {i}."}
                                         for i in range(QUESTIONS) for m in MODELS]))
    store.close()
    rows = [{"question_id": f"q{q:02d}", "model_a": a, "model_b": b, "judge": "human:alice" if q % 2 else "human:bob",
             "winner": "model_a", "p_a": None} for q in range(labelled) for a, b in PAIRS]
    csv = tmp_path / "votes.csv"
    pd.DataFrame(rows + (extra or [])).to_csv(csv, index=False)
    assert main(["import", str(csv), "--study", "s", "--db", db]) == 0
    return db


@pytest.fixture
def server(monkeypatch):
    with FakeLLMServer(reply=scripted_reply) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret-0000")
        yield fake


def _escalate(db: str, *cascade: str, extra=()) -> list[str]:
    argv = ["escalate", "--study", "s", "--db", db, "--reference", "human:", "--target-agreement", "0.85",
            "--risk", "0.1", "--no-progress", "--format", "json", *extra]
    for entry in cascade:
        argv += ["--cascade", entry]
    return argv


def _run(capsys, argv) -> dict:
    capsys.readouterr()  # what the import printed
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _queued(db: str) -> pd.DataFrame:
    store = Store(db, create=False)
    try:
        return store.debates.table("s", kind="label_request")
    finally:
        store.close()


def _hard_unlabelled() -> set[tuple[str, str, str]]:
    return {(f"q{q:02d}", a, b) for q in range(LABELLED, QUESTIONS) for p, (a, b) in enumerate(PAIRS)
            if not _big_right(q, p)}


def test_a_cascade_of_specs_runs_each_stage_on_what_it_needs_and_queues_the_rest(tmp_path, server, capsys):
    """Trust or Escalate section 2.3 run for real: stage 1 reviews every comparison (both orders, section 2.2), stage
    2 only the labelled calibration comparisons (section 2.1, eqs. 2-4) and what stage 1 did not keep; each stage's
    verdicts are stored under its own judge, its threshold is the plan's (delta / S each), every paid call is a
    stored verdict, and what neither keeps nor people labelled is queued as label requests."""
    db = build_study(tmp_path)
    report = _run(capsys, _escalate(db, MINI, BIG))
    mini, big = report["stages"]
    assert [mini["stage"], big["stage"]] == [MINI, BIG] and mini["ran"] and big["ran"]
    assert mini["threshold"] == pytest.approx(0.501) and big["threshold"] == pytest.approx(0.501)
    assert (mini["reviewed"], mini["calls"], mini["judged"], mini["kept"]) == (120, 240, 120, 60)
    assert (big["reviewed"], big["calls"], big["judged"], big["kept"]) == (90 + 15, 210, 105, 30 + 9)
    assert mini["verdicts"] == mini["calls"] and big["verdicts"] == big["calls"]  # every paid call is stored
    assert mini["failed"] == big["failed"] == 0 and mini["cost_usd"] is not None
    assert mini["upper_bound_disagreement"] <= 0.15 and big["upper_bound_disagreement"] <= 0.15
    assert mini["level"] == pytest.approx(1 - 0.1 / 2) and big["agreement"] == pytest.approx(1.0)
    assert server.requests_total == 450
    assert (report["comparisons"], report["escalated"], report["labelled"]) == (120, 21, 15)
    assert report["queued"] == 6 and report["already_requested"] == 0 and report["status"] == "finished"

    store = Store(db, create=False)
    stored = store.verdicts.table("s", include_invalid=True)
    store.close()
    counts = stored["judge"].value_counts()
    assert counts[MINI] == 240 and counts[BIG] == 210
    queued = _queued(db)
    assert {(q, *sorted((a, b))) for q, a, b in zip(queued["question_id"], queued["model_a"], queued["model_b"])} \
        == _hard_unlabelled()
    assert set(queued["status"]) == {"unresolved"}
    metadata = queued["metadata"].iloc[0]
    metadata = json.loads(metadata) if isinstance(metadata, str) else metadata
    assert metadata["cascade"] == [MINI, BIG] and metadata["thresholds"][MINI] == pytest.approx(0.501)
    assert metadata["requested_by"] == "peercore escalate" and "Trust or Escalate" in metadata["reason"]


def test_a_second_run_pays_for_nothing_and_queues_nothing(tmp_path, server, capsys):
    """Re-running the cascade (Trust or Escalate section 2.3) makes no request to the server, queues no comparison
    twice, and reports the same thresholds and kept counts."""
    db = build_study(tmp_path)
    first = _run(capsys, _escalate(db, MINI, BIG))
    paid = server.requests_total
    second = _run(capsys, _escalate(db, MINI, BIG))
    assert server.requests_total == paid == 450
    assert [s["calls"] for s in second["stages"]] == [0, 0] and [s["reviewed"] for s in second["stages"]] == [0, 0]
    assert second["queued"] == 0 and second["already_requested"] == 6 and len(_queued(db)) == 6
    for before, after in zip(first["stages"], second["stages"]):
        assert (after["threshold"], after["kept"], after["judged"]) == (before["threshold"], before["kept"],
                                                                         before["judged"])


def test_the_text_report_names_each_stage(tmp_path, server, capsys):
    """The terminal report: per stage its threshold, comparisons judged and kept, calls and cost; the queued count."""
    db = build_study(tmp_path)
    argv = [a for a in _escalate(db, MINI, BIG) if a not in ("--format", "json")]
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert MINI in out and BIG in out and "threshold" in out and "calls" in out and "cost_usd" in out
    assert "6 label requests queued now" in out


def test_a_cascade_of_stored_judges_applies_the_plan_without_any_call(tmp_path, server, capsys):
    """Judges named as they are in the study: no review, no HTTP request; the plan's threshold (section 2.1 by hand:
    45 calibration verdicts at confidence 0.95, all right, and 45 at 0.6, all wrong, so the walk stops at 0.600 and
    the threshold is 0.601) decides, and the 15 unlabelled comparisons at 0.6 are queued."""
    cheap = []
    for q in range(QUESTIONS):
        for p, (a, b) in enumerate(PAIRS):
            sure = _easy(q, p)
            cheap.append({"question_id": f"q{q:02d}", "model_a": a, "model_b": b, "judge": "cheap",
                          "winner": "model_a" if sure else "model_b", "p_a": 0.95 if sure else 0.4})
    db = build_study(tmp_path, extra=cheap)
    report = _run(capsys, _escalate(db, "cheap"))
    (stage,) = report["stages"]
    assert stage["stage"] == "cheap" and not stage["ran"] and stage["calls"] == 0 and stage["run_id"] is None
    assert stage["threshold"] == pytest.approx(0.601) and stage["kept"] == 60 and stage["judged"] == 120
    assert server.requests_total == 0
    assert report["queued"] == 15 and report["escalated"] == 60 and report["labelled"] == 45
    queued = _queued(db)
    want = {(f"q{q:02d}", a, b) for q in range(LABELLED, QUESTIONS) for p, (a, b) in enumerate(PAIRS)
            if not _easy(q, p)}
    assert {(q, *sorted((a, b))) for q, a, b in zip(queued["question_id"], queued["model_a"], queued["model_b"])} \
        == want


def _fails(capsys, argv, *words) -> None:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    for word in words:
        assert word in err


def test_a_study_without_human_labels_is_refused_before_any_call(tmp_path, server, capsys):
    """Section 2.1: calibration needs human-labelled comparisons; without them, one line, exit 2, nothing paid."""
    db = build_study(tmp_path, labelled=0, extra=[{"question_id": "q00", "model_a": "m0", "model_b": "m1",
                                                   "judge": "cheap", "winner": "model_a", "p_a": 0.9}])
    _fails(capsys, _escalate(db, MINI), "no human labels")
    assert server.requests_total == 0 and len(_queued(db)) == 0


def test_an_unknown_judge_is_refused_before_any_call(tmp_path, server, capsys):
    db = build_study(tmp_path)
    _fails(capsys, _escalate(db, MINI, "nobody"), "--cascade 'nobody'", "not a judge of study")
    assert server.requests_total == 0


def test_too_few_calibration_comparisons_is_refused_before_any_call(tmp_path, server, capsys):
    """Section 2.1 (the reference code's rule): a threshold must keep at least 30 calibration comparisons; 8 labelled
    questions give 24, so the stage is refused before it is paid for."""
    db = build_study(tmp_path, labelled=8)
    _fails(capsys, _escalate(db, MINI, BIG), "24 human-labelled comparisons", "fewer than the 30")
    assert server.requests_total == 0 and len(_queued(db)) == 0


def test_a_spec_on_a_study_without_answers_is_refused_before_any_call(tmp_path, server, capsys):
    """A stage to run reviews answers (section 2.3: it judges comparisons itself); imported verdicts without answer
    texts give it nothing to read: one line, exit 2, no request."""
    rows = [{"question_id": f"q{q:02d}", "model_a": a, "model_b": b, "judge": "human:carol", "winner": "model_a"}
            for q in range(LABELLED) for a, b in PAIRS]
    csv = tmp_path / "humans.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    db = str(tmp_path / "bare.sqlite")
    assert main(["import", str(csv), "--study", "s", "--db", db]) == 0
    _fails(capsys, _escalate(db, MINI), "no question with answers from two models")
    assert server.requests_total == 0


def test_a_stage_with_failed_items_queues_nothing_and_the_same_command_finishes_it(tmp_path, server, capsys):
    """Section 2.3 needs every stage's verdicts before escalating: two calls refused by the provider (permanent 400s)
    are two failed items; every paid call is a stored verdict, the run stops with exit 1 and queues nothing; the same
    command again pays only for the two missing verdicts and the second stage, then queues the same 6."""
    db = build_study(tmp_path)
    server.inject("400", "400")
    capsys.readouterr()
    assert main(_escalate(db, MINI, BIG)) == 1
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    (mini,) = report["stages"]
    assert report["status"] == "failed" and report["queued"] == 0 and len(_queued(db)) == 0
    assert mini["failed"] == 2 and mini["calls"] == mini["verdicts"] == 238
    assert "did not finish" in captured.err and "Run the same command again" in captured.err
    assert server.requests_total == 240
    again = _run(capsys, _escalate(db, MINI, BIG))
    assert [s["calls"] for s in again["stages"]] == [2, 210] and server.requests_total == 240 + 212
    assert again["queued"] == 6 and again["status"] == "finished"
