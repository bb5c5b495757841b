"""A stored study's read model, on SQLite and PostgreSQL, against what was written and the row-by-row oracles.

These checks were held by the parity tests of issues 12 and 13 (``test_aggregates``,
``test_store_side_pages``, ``test_study_on_both_backends``), which compared SQL-count and
pandas twins with each other. Issue 18 leaves one implementation of each number, on the
read model (:mod:`peercore.domain.verdicts`, read by :mod:`peercore.store.verdict_reader`),
so here each is compared with what was written and with the plain loops of
``tests/oracles.py``, on both store backends (the ``db`` fixture):

* texts CSV, ``COPY`` and NULL handling could confuse (``NA``, ``null``, ``\\N``, commas,
  quotes, new lines, a judge named ``NA``) come back as written;
* the selection, final verdicts only and the majority of repeated votes (PRD section 4:
  the human majority is the sign of the summed votes) equal :func:`oracles.select`;
* the counts, judges, contestants (an answer-only model included) and probabilities;
* a write is seen at once.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import oracles
from peercore.app import Study
from peercore.domain import verdicts as V
from peercore.domain.selection import Selection
from peercore.efficiency import efficiency_curve, problems_from_judgments
from peercore.judges import judge_kind
from peercore.store import Store

MODELS = ["m0", "m1", "m2", "m3", "m4"]
JUDGES = ["gpt", "claude", "human:ann", "HUMAN:Bob", "humans-not", "local:m2", "NA"]
ODD_QUESTIONS = ["NA", "null", "NaN", "a,b", 'say "hi"', "two\nlines", "naïve é ✓", "\\N", "q-plain"]


def _rows(rng: np.random.Generator, n: int = 400) -> list[dict]:
    """Random verdicts: odd question texts, unparsed replies, probabilities, rounds, criteria, repeated votes."""
    rows, seen = [], set()
    for k in range(n):
        a, b = rng.choice(len(MODELS), 2, replace=False)
        bad = rng.random() < 0.1
        row = {"question_id": ODD_QUESTIONS[k % len(ODD_QUESTIONS)] + ("" if k < 9 else f"#{k % 40}"),
               "model_a": MODELS[a], "model_b": MODELS[b], "judge": JUDGES[int(rng.integers(len(JUDGES)))],
               "winner": None if bad else str(rng.choice(["model_a", "model_b", "tie"])),
               "p_a": float(rng.random()) if rng.random() < 0.3 and not bad else np.nan,
               "criterion": [None, "helpful", "NA"][k % 3], "turn": int(k % 2) + 1, "round": int(rng.integers(0, 2)),
               "rationale": [None, "", "NULL", "because, \"x\"\nso"][k % 4],
               "raw": "unparsed, \"raw\"\ntext" if bad else None, "valid": 0 if bad else 1}
        key = tuple(row[c] for c in ("question_id", "model_a", "model_b", "judge", "criterion", "turn", "round"))
        if key in seen:
            continue
        seen.add(key)
        rows.append(dict(row, vote=0))
    # repeated votes on the first readable comparisons: a second and a third vote
    for row in [r for r in rows if r["valid"]][:15]:
        rows.append(dict(row, vote=1, winner="tie", p_a=np.nan))
        rows.append(dict(row, vote=2, winner="model_b", p_a=0.25))
    return rows


@pytest.fixture(params=[0, 1])
def stored(db, request):
    """(store, rows written): study ``s`` with the random verdicts and two answers, and an empty study."""
    store = Store(db)
    rows = _rows(np.random.default_rng(request.param))
    store.studies.create("s")
    store.verdicts.add("s", pd.DataFrame(rows))
    store.questions.add_answers("s", pd.DataFrame({"question_id": ["q-plain", "NA"], "model": ["m1", "lonely"],
                                                   "answer": ["one", "two"]}))
    store.studies.create("empty")
    yield store, rows
    store.close()


def _decoded(frame: pd.DataFrame) -> list[tuple]:
    return sorted(zip(frame["question_id"], frame["model_a"], frame["model_b"], frame["judge"],
                      frame["winner"].astype(object).where(frame["winner"].notna(), None),
                      frame["criterion"].astype(object).where(frame["criterion"].notna(), ""),
                      frame["turn"].fillna(0).astype(int), frame["round"].fillna(0).astype(int)))


def _written(rows: list[dict]) -> list[tuple]:
    return sorted((r["question_id"], r["model_a"], r["model_b"], r["judge"], r["winner"], r["criterion"] or "",
                   r["turn"], r["round"]) for r in rows)


def test_odd_texts_come_back_as_written(stored):
    store, rows = stored
    study = Study(store, "s")
    every = V.to_frame(study.verdicts(), include_invalid=True)
    assert _decoded(every) == _written(rows)  # every verdict, readable or not, each vote
    assert set(ODD_QUESTIONS) <= set(every["question_id"])  # "NA", "null", "NaN", "\\N" stay texts, not NULL
    assert "NA" in study.verdicts().judges and set(every["criterion"].dropna()) == {"helpful", "NA"}
    texts = store.verdicts.table("s", include_invalid=True)["rationale"]
    assert set(texts.dropna()) == {"", "NULL", "because, \"x\"\nso"}  # "" is a text, None is none
    assert len(Study(store, "empty").verdicts()) == 0


@pytest.mark.parametrize("selection, options", [
    (Selection(), {}),
    (Selection(final_only=False), {"final": False}),
    (Selection(repeated_votes="each"), {"each_vote": True}),
    (Selection(judges=("gpt", "human:")), {"judges": ("gpt", "human:")}),
    (Selection(judges=("NA",), final_only=False, repeated_votes="each"),
     {"judges": ("NA",), "final": False, "each_vote": True}),
    (Selection(kinds=("llm",)), {"kinds": {"llm"}}),
    (Selection(contestants=("m0", "m1", "m2")), {"contestants": ("m0", "m1", "m2")}),
    (Selection(criteria=("NA",), turns=(2,)), {"criteria": ("NA",), "turns": (2,)}),
])
def test_a_selection_equals_the_row_by_row_oracle(stored, selection, options):
    """Selection, final verdicts (each judge's last round) and the majority of repeated votes
    (PRD section 4: the sign of the summed votes, +1 model_a, -1 model_b, 0 tie) against tests/oracles.py."""
    store, rows = stored
    study = Study(store, "s")
    got = study.select(selection)
    readable = [r for r in rows if r["winner"] is not None]
    expected = oracles.select(readable, kind_of=study.kinds().get, **options)
    assert _decoded(V.to_frame(got.verdicts)) == _written(expected)
    if selection.repeated_votes != "each" and not options.get("judges") and not options.get("kinds"):
        assert got.notes.merged_votes > 0  # the repeated votes were merged, and it is said


def test_counts_judges_contestants_and_probabilities_are_what_was_written(stored):
    store, rows = stored
    study = Study(store, "s")
    readable = [r for r in rows if r["winner"] is not None]
    counts = study.counts()
    kinds = study.kinds()
    assert counts["judgments"] == len(readable) and counts["invalid_judgments"] == len(rows) - len(readable)
    assert counts["human_votes"] == sum(kinds[r["judge"]] == "human" for r in readable)
    assert kinds["HUMAN:Bob"] == judge_kind("HUMAN:Bob") and kinds["humans-not"] == "llm"
    judges = study.judges().set_index("name")
    for judge in JUDGES:
        assert judges.loc[judge, "n_judgments"] == sum(r["judge"] == judge for r in readable), judge
        assert judges.loc[judge, "n_invalid"] == sum(r["judge"] == judge and r["winner"] is None for r in rows), judge
    assert study.contestants() == sorted(MODELS + ["lonely"])  # an answer without any battle counts
    assert study.has_probabilities()
    empty = Study(store, "empty")
    assert empty.contestants() == [] and not empty.has_probabilities() and empty.counts()["judgments"] == 0


def test_a_write_is_seen_at_once(stored):
    store, _ = stored
    study = Study(store, "s")
    before = study.counts()["judgments"], len(study.judgments(Selection()))
    store.verdicts.add("s", pd.DataFrame({"question_id": ["new"], "model_a": ["m0"], "model_b": ["newcomer"],
                                          "judge": ["gpt"], "winner": ["tie"]}))
    assert study.counts()["judgments"] == before[0] + 1
    assert len(study.judgments(Selection())) == before[1] + 1
    assert "newcomer" in study.contestants()


def test_problems_limit_equals_slicing_and_progress_changes_nothing(tmp_path):
    """Efficiency curves (Liusie et al. 2024, the PoE paper, Fig. 1): the first ``limit`` problems, and partial results
    of whole strategies only."""
    store = Store(tmp_path / "eff.sqlite")
    rows = [r for r in _rows(np.random.default_rng(3), n=900) if r["vote"] == 0]
    store.studies.create("s")
    store.verdicts.add("s", pd.DataFrame(rows))
    frame = Study(store, "s").judgments(Selection())
    for judge in ("gpt", "claude"):
        chosen = frame[frame["judge"] == judge]
        everything = problems_from_judgments(chosen)
        assert len(everything) > 3
        for limit in (0, 1, 3, 1000):
            limited = problems_from_judgments(chosen, limit=limit)
            assert [p.question_id for p in limited] == [p.question_id for p in everything[:limit]]
            for a, b in zip(limited, everything):
                assert a.candidates == b.candidates and np.array_equal(a.p, b.p) and np.array_equal(a.i, b.i)
    chosen = frame[frame["judge"] == "gpt"]
    plain = efficiency_curve(chosen, repeats=3, seed=0, max_questions=8)
    seen = []
    tracked = efficiency_curve(chosen, repeats=3, seed=0, max_questions=8,
                               progress=lambda fraction, partial: seen.append((fraction, partial)))
    pd.testing.assert_frame_equal(plain, tracked)
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and fractions[0] < 1.0
    partials = [p for f, p in seen if f < 1.0 and len(p)]
    assert partials and set(partials[0]["strategy"]) == {"random"}
    pd.testing.assert_frame_equal(partials[0], plain[plain["strategy"] == "random"].reset_index(drop=True))
    store.close()


def test_probabilities_come_back_bit_for_bit(db):
    """A judge's probability is stored and read exactly (the soft win of Liusie et al. 2024,
    the PoE paper, eq. (6), is an average of them): SQLite's ``quote`` gave 15 significant digits,
    so 0.9030385791534981 came back as 0.903038579153498; tiny values and NULLs too."""
    store = Store(db)
    values = [0.9030385791534981, 0.6425714758734971, 0.0, 1.0, 2.0 ** -10, np.nextafter(2.0 ** -10, 0.0),
              1e-5, 3e-300, 5e-324, 0.1, 1.0 / 3.0, np.nan, 0.5]
    store.studies.create("p")
    store.verdicts.add("p", pd.DataFrame({"question_id": [f"q{k}" for k in range(len(values))],
                                          "model_a": "m0", "model_b": "m1", "judge": "gpt",
                                          "winner": "model_a", "p_a": values}))
    got = V.to_frame(Study(store, "p").verdicts(), include_invalid=True).sort_values("question_id", key=lambda q: q.str[1:].astype(int))
    assert [v.hex() for v in got["p_a"].fillna(-1.0)] == [v.hex() for v in pd.Series(values).fillna(-1.0)]
    store.close()
