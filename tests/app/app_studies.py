"""Fixture studies and AppTest helpers for the dashboard tests, written straight through the Store API.

``synthetic`` is a small study with everything a page can show: questions with
scenarios, answers of four contestants, three LLM reviewers that are also contestants
(one gives probabilities and leans to the first position), two human annotators,
ScaleEval-style debates (agreed and unresolved, with opinion changes), a PRD-style
discussion and a finished run. ``hostile`` has the same shape with Markdown and HTML
in every text field (names, questions, answers, rationales, criteria, scenarios, notes,
provenance, run errors), for the tests that untrusted text renders as text. ``prd`` is
the PRD Vicuna80 study read with ``peercore.io.prd`` (skipped when
../shared/data/prd_vicuna80 is absent).
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from peercore.judgments import judgments_from_frame
from peercore.store import Store

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")

# Every page of app.py's navigation (pages/<name>.py) -> the title it shows (Home's is the product's name).
PAGE_TITLES = {
    "home": "PeerBoard",
    "studies": "Studies",
    "leaderboard": "Leaderboard",
    "bias": "Bias",
    "efficiency": "Efficiency",
    "data": "Data",
    "reviewers": "Reviewers & runs",
    "debates": "Discussions & debates",
    "adjudication": "Adjudication",
    "meta_evaluation": "Meta-evaluation",
    "nlg": "NLG assessment",
}

MODELS = ("alpha", "bravo", "charlie", "delta")
STRENGTH = {"alpha": 1.2, "bravo": 0.6, "charlie": 0.0, "delta": -0.8}
LLM_JUDGES = ("openai:alpha", "anthropic:bravo", "local:charlie")
HUMANS = ("human:ann", "human:ben")
SCENARIOS = ("math", "writing", "code")
N_QUESTIONS = 9
N_UNRESOLVED = 4


def build_synthetic_study(store: Store, name: str = "synthetic", *, seed: int = 0) -> dict:
    """Write the synthetic study; returns what the tests need to know about it."""
    return _build_study(store, name, PLAIN, seed=seed)


# ------------------------------------------------------------------ the hostile study
# Every text field of this study carries Markdown / HTML that would do something if a
# page rendered it: fetch an image from TRACKER, link to EVIL, draw a badge reading
# FAKE, bold a plotly label. Rendered as text, none of it may do anything.

TRACKER = "tracker.invalid"  # an image from here is a leak (RFC 2606: never resolves)
EVIL = "evil.invalid"        # a link to here is a phishing link
FAKE = "FAKE VERDICT"        # a badge with this text is a forged verdict
IMAGE = f"![](http://{TRACKER}/track.png)"
BADGE = f":red-badge[{FAKE}]"
HOSTILE_LINE = (
    f"{IMAGE} {BADGE} [click here](http://{EVIL}/phish) <img src=\"http://{TRACKER}/html.png\"> "
    f"<b>bold</b> <a href=\"http://{EVIL}/a\">a link</a> www.{EVIL} spy@{EVIL} <http://{EVIL}/auto> "
    "$e^{i\\pi}$ :material/warning: :smile: :streamlit: :color[red]{foreground=\"red\"} "
    "&lt;b&gt;escaped&lt;/b&gt; -> ~~struck~~ **strong** _em_"
)
HOSTILE_BLOCK = "\n".join([
    "First line of the reply.", "", IMAGE, BADGE, "```", "a fenced block", "```", "| a | b |", "|---|---|",
    "| 1 | 2 |", "# A heading", "> a quote", "- a list item", "1. a numbered item", "    indented code",
    f"<img src=\"http://{TRACKER}/block.png\">", f"Last line: [click](http://{EVIL}/last) {HOSTILE_LINE}",
])
HOSTILE_STUDY = f"hostile {BADGE} <b>study</b>"


@dataclass(frozen=True)
class Words:
    """The names and texts a fixture study is written with."""

    models: tuple[str, ...]
    llm_judges: tuple[str, ...]
    humans: tuple[str, ...]
    scenarios: tuple[str, ...]
    criterion: str
    description: str
    source: dict
    question_id: Callable[[int], str]
    question: Callable[[int], str]
    answer: Callable[[str, str], str]
    rationale: Callable[[str, str], str]
    turn: Callable[[str, str, str, str], str]
    annotators: tuple[str, ...] = ()
    note: str = ""
    run_error: str | None = None


PLAIN = Words(
    models=MODELS, llm_judges=LLM_JUDGES, humans=HUMANS, scenarios=SCENARIOS, criterion="helpfulness",
    description="A small synthetic study for the dashboard tests.",
    source={"kind": "synthetic", "generator": "tests/app/conftest.py"},
    question_id=lambda k: f"q{k:02d}",
    question=lambda k: f"Question {k}: explain topic {k} in a few sentences.",
    answer=lambda m, q: f"{m} answers {q}. ",
    rationale=lambda judge, q: f"{judge} on {q}",
    turn=lambda stage, speaker, verdict, q: (f"{speaker} first thinks {verdict} on {q}." if stage == "first"
                                             else f"{speaker} after reading the others: {verdict}."),
)

_HOSTILE_MODELS = ("<b>alpha</b>", f"bravo <a href='http://{EVIL}/m'>x</a>", f"charlie ![](http://{TRACKER}/m.png)",
                   f"delta {BADGE}")
HOSTILE = Words(
    models=_HOSTILE_MODELS,
    llm_judges=(f"openai:{_HOSTILE_MODELS[0]}", f"anthropic:{_HOSTILE_MODELS[1]}", f"local:{_HOSTILE_MODELS[2]}"),
    humans=(f"human:<i>ann</i> www.{EVIL}", f"human:ben ![](http://{TRACKER}/h.png)"),
    scenarios=("math <b>x</b>", f"writing {BADGE}", f"code ![](http://{TRACKER}/s.png)"),
    criterion=f"helpfulness {BADGE} <b>c</b>",
    description=HOSTILE_BLOCK,
    source={"kind": HOSTILE_LINE, "generator": "tests/app/app_studies.py", "notes": HOSTILE_BLOCK},
    question_id=lambda k: f"q{k:02d} {BADGE}",
    question=lambda k: f"Question {k}: {HOSTILE_BLOCK}",
    answer=lambda m, q: f"{HOSTILE_BLOCK}\n{m} answers. ",
    rationale=lambda judge, q: HOSTILE_LINE,
    turn=lambda stage, speaker, verdict, q: f"Verdict: {verdict}\n{HOSTILE_BLOCK}",
    annotators=(f"<b>eve</b> {BADGE}", f"mallory ![](http://{TRACKER}/a.png)"),
    note=HOSTILE_LINE,
    run_error=f"server said: {HOSTILE_BLOCK}",
)


def build_hostile_study(store: Store, name: str = HOSTILE_STUDY) -> dict:
    """The synthetic study's shape with hostile text in every field a page shows.

    Models, judges (LLM, human, annotators, debate speakers), question ids and texts,
    answers, rationales, criteria, scenarios, the study's name, description and
    provenance, annotators' notes, a run's error, and a human-vote file imported with
    :func:`peercore.io.importer.import_path` (its provenance goes in the import log).
    """
    info = _build_study(store, name, HOSTILE, seed=0)
    with tempfile.TemporaryDirectory() as folder:
        votes = Path(folder) / f"votes {BADGE}.jsonl"
        rows = [{"question_id": HOSTILE.question_id(k), "model_a": a, "model_b": b, "judge": f"human:zoe {BADGE}",
                 "winner": "model_a", "criterion": HOSTILE.criterion, "rationale": HOSTILE_BLOCK}
                for k, (a, b) in enumerate(itertools.combinations(HOSTILE.models, 2))]
        votes.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        from peercore.io.importer import import_path

        import_path(votes, store=store, study=name, format="canonical")
    info["judgments"] += len(rows)
    return info


def _build_study(store: Store, name: str, words: Words, *, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    models, llm_judges, humans, scenarios = words.models, words.llm_judges, words.humans, words.scenarios
    store.studies.create(name, description=words.description, source={**words.source, "seed": seed})
    qids = [words.question_id(k) for k in range(N_QUESTIONS)]
    store.questions.add(name, pd.DataFrame({
        "question_id": qids, "text": [words.question(k) for k in range(N_QUESTIONS)],
        "category": [scenarios[k % len(scenarios)] for k in range(N_QUESTIONS)],
    }))
    answers = [
        {"question_id": q, "model": m, "answer": words.answer(m, q) + "More detail. " * int(rng.integers(1, 12))}
        for q in qids for m in models
    ]
    store.questions.add_answers(name, pd.DataFrame(answers))
    store.judges.add(name, [{"name": j, "kind": "llm"} for j in llm_judges] + [{"name": h, "kind": "human"} for h in humans])

    strength = dict(zip(models, STRENGTH.values()))
    leaning = llm_judges[2]
    rows = []
    for q, (a, b), judge in itertools.product(qids, itertools.permutations(models, 2), llm_judges):
        diff = strength[a] - strength[b] + (0.6 if judge == leaning else 0.0)  # charlie leans to the first answer
        p = float(1 / (1 + np.exp(-2 * diff + rng.normal(0, 0.8))))
        winner = "model_a" if p > 0.55 else "model_b" if p < 0.45 else "tie"
        rows.append({"question_id": q, "model_a": a, "model_b": b, "judge": judge, "winner": winner,
                     "p_a": round(p, 4) if judge == leaning else None, "rationale": words.rationale(judge, q),
                     "criterion": words.criterion})
    for q, (a, b) in itertools.product(qids[:6], itertools.combinations(models, 2)):
        for human in humans:
            diff = strength[a] - strength[b] + rng.normal(0, 0.7)
            rows.append({"question_id": q, "model_a": a, "model_b": b, "judge": human, "criterion": words.criterion,
                         "winner": "model_a" if diff > 0.2 else "model_b" if diff < -0.2 else "tie"})
    judgments = judgments_from_frame(pd.DataFrame(rows))
    store.verdicts.add(name, judgments)

    # ScaleEval-style debates between the three LLM judges on alpha vs bravo.
    for k, q in enumerate(qids):
        unresolved = k < N_UNRESOLVED
        initial = ["model_a", "model_b", "tie"] if unresolved else ["model_a", "model_b", "model_a"]
        final = ["model_a", "model_b", "model_b"] if unresolved else ["model_a", "model_a", "model_a"]
        turns = [{"round": 0, "position": p, "speaker": s, "verdict": v, "rationale": words.turn("first", s, v, q)}
                 for p, (s, v) in enumerate(zip(llm_judges, initial))]
        turns += [{"round": 1, "position": p, "speaker": s, "verdict": v, "rationale": words.turn("after", s, v, q)}
                  for p, (s, v) in enumerate(zip(llm_judges, final))]
        store.debates.add(name, {
            "debate_key": f"debate-{q}", "kind": "debate", "question_id": q, "model_a": models[0], "model_b": models[1],
            "criterion": words.criterion, "scenario": scenarios[k % len(scenarios)],
            "status": "unresolved" if unresolved else "agreed", "consensus": None if unresolved else "model_a",
            "n_rounds": 2,
        }, turns)
    debate_ids = store.debates.table(name)["id"].tolist()
    # A PRD-style two-reviewer discussion.
    first, second = llm_judges[0], llm_judges[1]
    store.debates.add(name, {"debate_key": f"discussion-{qids[0]}", "kind": "discussion", "question_id": qids[0],
                             "model_a": models[2], "model_b": models[3], "status": "agreed", "consensus": "model_a",
                             "n_rounds": 2}, [
        {"round": 0, "position": 0, "speaker": first, "verdict": "model_a",
         "rationale": words.note or "Answer 1 is clearer."},
        {"round": 0, "position": 1, "speaker": second, "verdict": "model_b",
         "rationale": words.note or "Answer 2 is shorter."},
        {"round": 1, "position": 0, "speaker": first, "verdict": "model_a", "rationale": words.note or "I hold my view."},
        {"round": 1, "position": 1, "speaker": second, "verdict": "model_a",
         "rationale": words.note or "Agreed, 1 is better."},
    ])
    # Two annotators decided the first open debate (differently), with notes.
    for annotator, verdict in zip(words.annotators, ("model_a", "tie")):
        store.debates.adjudicate(debate_ids[0], annotator, verdict, note=words.note)
    run_id = store.runs.create(name, "review", {"judge": llm_judges[0], "api_key": "sk-should-never-show"}, items=["x", "y"])
    store.runs.finish_item(run_id, "x", prompt_tokens=120, completion_tokens=30, cost_usd=0.0012)
    store.runs.finish_item(run_id, "y", prompt_tokens=100, completion_tokens=20, cost_usd=0.0010)
    store.runs.set_status(run_id, "finished")
    if words.run_error is not None:
        failed = store.runs.create(name, "review", {"judge": llm_judges[1]}, items=["z"])
        store.runs.set_status(failed, "failed", error=words.run_error)
    return {"name": name, "judgments": len(judgments), "unresolved": N_UNRESOLVED, "debate_ids": debate_ids,
            "words": words}


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
    store.studies.create(name, description="PRD Vicuna80: 5 LLM reviewers and human votes.",
                         source={"kind": "PRD ratings folder", "folder": "prd_vicuna80"})
    store.verdicts.add(name, judgments)
    return {"name": name, "judgments": len(judgments)}


def app_test(*, timeout: float = 60, page: str | None = "studies"):
    """An AppTest of app.py, run once (it opens on Home), then on ``pages/<page>.py`` (Studies; None: stay on Home)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=timeout)
    at.run()
    if page:
        open_page(at, page)
    return at


def open_page(at, page: str):
    """Switch to ``pages/<page>.py`` and run."""
    at.switch_page(f"pages/{page}.py")
    at.run()
    return at


def problems(at) -> list[str]:
    """Exceptions and error boxes on screen (what a test asserts is empty)."""
    return [f"exception: {e.value}" for e in at.exception] + [f"error: {e.value}" for e in at.error]


def build_one_judge_study(db, *, name: str = "llm only", judge: str = "openai:gpt-4o") -> str:
    """A study with one judge (by default an LLM judge, no human label; 12 questions, 3 models in a chain): its name."""
    store = Store(db)
    store.studies.create(name)
    rows = [{"question_id": f"q{k}", "model_a": a, "model_b": b, "judge": judge,
             "winner": ("model_a", "model_b", "tie")[k % 3]}
            for k in range(12) for a, b in (("alpha", "bravo"), ("bravo", "charlie"))]
    store.verdicts.add(name, pd.DataFrame(rows))
    store.close()
    return name
