"""The bundled PRD Vicuna80 study (``sample_data/prd_vicuna80/``) seeded on first run reproduces the paper.

An empty database gets every bundled study from ``sample_data/`` in one transaction
(:func:`peercore.ui.data.ensure_sample_study`); the PRD one must then hold PRD's five
models, 80 questions, 8,000 LLM reviews and 1,760 human votes, and ``peercore rank
--study prd-vicuna80`` must give the numbers of ``../shared/data/prd_vicuna80/
expected_results.json`` (the PRD notebook's outputs: Peer Rank weights .488 / .377 /
.082 / .053 / .000, weighted win rates .802 / .685 / .376 / .346 / .291, the human
majority .822 / .689 / .389 / .314 / .286, GPT-4 against the human majority 0.6425,
Fleiss kappa 0.406). The counts need only the repository; the comparison with the
expected file skips cleanly without ``../shared/data``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peercore.cli import main
from peercore.store import Store
from peercore.app import Study, agreement
from peercore.ui.data import ensure_sample_study

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "sample_data" / "prd_vicuna80"
STUDY = "prd-vicuna80"
MODELS = ["bard", "claude", "gpt35", "gpt4", "vicuna-13b"]
NOTEBOOK_NAME = {"gpt4": "gpt-4", "gpt35": "gpt-3.5", "bard": "bard", "claude": "claude", "vicuna-13b": "vicuna"}
TOL = 1e-5


@pytest.fixture(scope="module")
def seeded(golden_db) -> str:
    # The dashboard's first run, on a SQLite file and on PostgreSQL (tests/golden/conftest.py).
    if not (BUNDLE / "provenance.json").is_file():
        pytest.fail("sample_data/prd_vicuna80/ is missing from the repository")
    db = golden_db
    store = Store(db)
    assert ensure_sample_study(store, REPO / "sample_data") == "sample"  # the sample is still the first study
    store.close()
    return db


@pytest.fixture(scope="module")
def expected(prd_folder) -> dict:
    return json.loads((prd_folder / "expected_results.json").read_text())


def _rank(db: Path, capsys, *args: str) -> tuple[dict[str, float], dict]:
    assert main(["rank", "--study", STUDY, "--db", str(db), "--format", "json", "--bootstrap", "0", *args]) == 0
    payload = json.loads(capsys.readouterr().out)
    return {NOTEBOOK_NAME[r["model"]]: r["score"] for r in payload["leaderboard"]}, payload


# ----------------------------------------------------------------- without ../shared


def test_the_first_run_seeds_the_prd_study_beside_the_others(seeded):
    store = Store(seeded)
    assert {"prd-vicuna80", "sample", "topicalchat-usr"} <= set(store.studies.table()["name"])
    counts = Study(store, STUDY).counts()
    assert (counts["questions"], counts["answers"], counts["contestants"]) == (80, 400, 5)
    assert counts["judgments"] == 9760 and counts["human_votes"] == 1760 and counts["invalid_judgments"] == 0
    judges = Study(store, STUDY).judges().set_index("name")
    assert sorted(judges.index) == ["bard", "claude", "gpt35", "gpt4", "human:prd", "vicuna-13b"]
    assert judges.loc[MODELS, "n_judgments"].tolist() == [1600] * 5
    assert judges.loc[MODELS, "model_alias"].tolist() == MODELS  # each reviewer is its own contestant (Peer Rank)
    assert judges.loc["human:prd", "kind"] == "human"
    with_text = store.verdicts.table(STUDY)
    reviews = with_text[with_text["judge"] != "human:prd"]
    lengths = reviews["rationale"].fillna("").str.len()
    assert (lengths > 0).sum() == 8000 - 18 and lengths.median() > 500  # the review texts (18 of Bard's are empty)
    source = store.studies.source(STUDY)
    assert source["made_by"] == "scripts/make_prd_bundle.py" and "MIT" in source["licence"]
    assert "bcdnlp/PRD" in source["data"]


def test_every_bundled_file_is_accounted_for_with_its_licence():
    facts = json.loads((BUNDLE / "provenance.json").read_text())
    data_files = sorted(p.name for p in BUNDLE.iterdir() if p.suffix in (".jsonl", ".parquet"))
    assert data_files == sorted(facts["sources"])
    assert len(facts["sources"]["judgments.parquet"]) == 100 + 16  # 5 reviewers x 20 ordered pairs + 16 human files
    assert (BUNDLE / "LICENSE").read_text().count("MIT License") == 2  # bcdnlp/PRD and artidoro/qlora
    provenance = (BUNDLE / "PROVENANCE.md").read_text()
    assert all(name in provenance for name in [*data_files, "provenance.json", "LICENSE"])
    assert "35fb99e5d5c7a2f3535811f1edbe417da7563957" in provenance and "Apache-2.0" in provenance


def test_the_bundle_stays_small():
    assert sum(p.stat().st_size for p in BUNDLE.iterdir()) < 1_500_000


# ------------------------------------------------------------------ the paper's numbers


@pytest.mark.golden
def test_peer_rank_weights_and_win_rates_reproduce_prd_table_2(seeded, expected, capsys):
    got, payload = _rank(seeded, capsys, "--kind", "llm", "--method", "winrate")
    assert got == pytest.approx(expected["winrate_all_reviewers"], abs=TOL)
    got, payload = _rank(seeded, capsys, "--kind", "llm", "--method", "winrate", "--peer-weights", "prd")
    assert got == pytest.approx(expected["winrate_all_weighted"], abs=TOL)
    weights = {NOTEBOOK_NAME[k]: v for k, v in payload["weights"].items()}
    assert weights == pytest.approx(expected["pr_reviewer_weights_winrate_5iter"], abs=TOL)
    for reviewer, key in (("gpt4", "winrate_gpt4_reviewer"), ("gpt35", "winrate_gpt35_reviewer")):
        got, _ = _rank(seeded, capsys, "--judge", reviewer, "--method", "winrate")
        assert got == pytest.approx(expected[key], abs=TOL), reviewer


@pytest.mark.golden
def test_the_human_majority_reproduces_prd_table_2(seeded, expected, capsys):
    got, payload = _rank(seeded, capsys, "--kind", "human", "--method", "winrate")
    assert got == pytest.approx(expected["winrate_human"], abs=TOL)
    assert payload["judges"] == ["human:prd"] and payload["judgments"] == expected["n_human_majority"]


@pytest.mark.golden
def test_reviewer_agreement_with_the_human_majority_reproduces_prd_table_3(seeded, expected):
    study = Study(Store(seeded), STUDY)
    for reviewer in MODELS:
        want = expected["agreement_vs_human_majority"][NOTEBOOK_NAME[reviewer]]
        row = agreement(study, reviewer, "human:", ties="include", reference_mode="majority").loc[reviewer]
        assert row["n"] == want["n"], reviewer
        assert row["agreement"] == pytest.approx(want["accuracy"], abs=TOL), reviewer
        assert row["fleiss_kappa"] == pytest.approx(want["fleiss_kappa"], abs=TOL), reviewer
