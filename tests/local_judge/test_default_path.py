"""The offline judge reached with no option but ``--reviewer local:qwen2.5-coder-1.5b`` (slow: ~6 minutes).

Issue 8, "The offline judge's default path is useless": on main the command used the PRD
verdict template, and the 1.5B model replied "2" to every prompt (40 of 40 verdicts
"second answer", 0 of 20 pairs right with both orders). The default is now chosen per
backend: for local models the label-probability classifier (Liusie et al. 2024, eq. 3,
``p_a`` stored). Acceptance: on 20 clear-cut pairs written for this test, the default
command picks the better answer in at least 17 with both presentation orders combined,
p = (p_12 + 1 - p_21) / 2; and the judge health check flags the verdict template (one
position takes > 90% of the decisive verdicts) but not the classifier.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from peercore.cli import main
from peercore.store import Store
from peercore.app import Study, health

pytestmark = pytest.mark.slow

JUDGE = "local:qwen2.5-coder-1.5b"
REQUIRED = 17
# (question, clearly better answer, clearly worse answer); none of them is in another test or the sample.
PAIRS = [
    ("What is the chemical symbol for gold?", "The chemical symbol for gold is Au.",
     "The chemical symbol for gold is Gx, from the word 'gold'."),
    ("How many continents are there on Earth?",
     "There are seven continents: Africa, Antarctica, Asia, Australia, Europe, North America and South America.",
     "There are two continents, the land one and the sea one."),
    ("What is the freezing point of water in Fahrenheit?", "Water freezes at 32 degrees Fahrenheit.",
     "Water freezes at 212 degrees Fahrenheit."),
    ("Who painted the Mona Lisa?", "The Mona Lisa was painted by Leonardo da Vinci.",
     "The Mona Lisa was painted by Albert Einstein in 1950."),
    ("What is the longest river in Africa?", "The Nile is the longest river in Africa.",
     "The Thames is the longest river in Africa."),
    ("How many sides does a hexagon have?", "A hexagon has six sides.", "A hexagon has three sides, like a triangle."),
    ("What is 15 plus 27?", "15 plus 27 is 42.", "15 plus 27 is 1527."),
    ("Which organ pumps blood through the human body?", "The heart pumps blood through the body.",
     "The stomach pumps blood through the body."),
    ("What language is mainly spoken in Brazil?", "Portuguese is the main language spoken in Brazil.",
     "Brazilians mainly speak Japanese."),
    ("How do I print hello in Python?", "Use print('hello').", "Python cannot print text; use a printer."),
    ("What is the boiling point of water in Kelvin at sea level?", "About 373 kelvin (373.15 K).", "About 5 kelvin."),
    ("Name a primary colour.", "Red is a primary colour.", "The weather is nice today."),
    ("What is the opposite of 'hot'?", "The opposite of 'hot' is 'cold'.",
     "The opposite of 'hot' is 'warm soup on Tuesday'."),
    ("How many hours are in a day?", "A day has 24 hours.", "A day has 7 hours."),
    ("What is the main ingredient of guacamole?", "Guacamole is made mainly from avocado.",
     "Guacamole is made mainly from chocolate."),
    ("Which planet is known as the Red Planet?", "Mars is known as the Red Planet.",
     "Saturn's moon Pluto is the Red Planet."),
    ("What does HTML stand for?", "HTML stands for HyperText Markup Language.", "HTML stands for Hot Tamale Meal List."),
    ("How should I store fresh milk?", "Keep fresh milk in the refrigerator, below about 4 degrees Celsius.",
     "Leave fresh milk in a sunny window so it stays warm."),
    ("What is the capital of Canada?", "The capital of Canada is Ottawa.", "The capital of Canada is Paris."),
    ("Write a shell command that lists the files in the current folder.", "ls", "rm -rf /"),
]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("default_path")
    questions = pd.DataFrame({"question_id": [f"c{i:02d}" for i in range(len(PAIRS))],
                              "question": [q for q, _, _ in PAIRS]})
    answers = pd.DataFrame([{"question_id": f"c{i:02d}", "model": model, "answer": text}
                            for i, (_, good, bad) in enumerate(PAIRS) for model, text in (("strong", good), ("weak", bad))])
    questions.to_json(folder / "questions.jsonl", orient="records", lines=True)
    answers.to_json(folder / "answers.jsonl", orient="records", lines=True)
    db = folder / "judge.sqlite"
    for name in ("questions.jsonl", "answers.jsonl"):
        assert main(["import", str(folder / name), "--study", "clear", "--db", str(db)]) == 0
    return db


def _both_orders(store: Store, judge: str) -> dict[str, float]:
    """question -> P(strong better), both presentation orders combined (Liusie et al. 2024)."""
    rows = store.verdicts.table("clear", judges=[judge])
    p = {(r.question_id, r.model_a): r.p_a for r in rows.itertuples()}
    return {q: (p[(q, "strong")] + 1 - p[(q, "weak")]) / 2 for q in sorted({k[0] for k in p})}


def test_the_default_command_picks_the_better_answer(study, capsys):
    assert main(["review", "--study", "clear", "--db", str(study), "--reviewer", JUDGE, "--no-progress"]) == 0
    out = capsys.readouterr().out
    store = Store(study)
    settings = store.judges.table("clear").set_index("name").loc[JUDGE, "settings"]
    assert settings["method"] == "logits" and settings["template"] == "liusie_classifier_numeric"
    combined = _both_orders(store, JUDGE)
    correct = sum(p > 0.5 for p in combined.values())
    with capsys.disabled():
        print(f"\n{JUDGE} through the default command: {correct}/{len(PAIRS)} pairs right with both orders; "
              + ", ".join(f"{q} {p:.2f}" for q, p in combined.items()))
    assert len(combined) == len(PAIRS) and correct >= REQUIRED
    assert f"{JUDGE}: 40 replies" in out and "FLAGGED" not in out
    assert not health(Study(store, "clear")).loc[JUDGE, "flagged"]


def test_the_verdict_template_is_flagged_as_carrying_no_information(study, capsys):
    questions = [arg for i in range(8) for arg in ("--question", f"c{i:02d}")]
    assert main(["review", "--study", "clear", "--db", str(study), "--reviewer", JUDGE, "--method", "verdict",
                 "--no-progress", "--json", *questions]) == 0
    payload = json.loads(capsys.readouterr().out)
    variant = payload["judges"][JUDGE]
    assert variant == f"{JUDGE}~verdict"  # a second configuration of the model: its own name
    health = payload["health"][variant]
    assert health["flagged"] and "won" in health["reasons"]
    assert "label-probability classifier" in health["fix"]
