"""Leaderboard defaults and views (issue 21): the AlpacaEval baseline, one default method per
study whichever way the page is reached, the view in the URL, and a search box."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from app_studies import REPO, app_test, open_page, problems
from peercore.judgments import judgments_from_frame
from peercore.store import Store

BASELINE = "gpt4_1106_preview"
# Alphabetically first is not the baseline: "Alpha-7B" < "FuseChat-..." < "gpt4_1106_preview".
ALPACA_MODELS = {"Alpha-7B": (0.30, 900), "FuseChat-Llama-3.2-3B-Instruct": (0.55, 2600), "Zeta-chat": (0.45, 1100)}
ALPACA_STUDY = "alpaca-import"
N_INSTRUCTIONS = 40


def build_alpaca_study(store: Store) -> None:
    """AlpacaEval 2's shape: every comparison is the baseline (first) against one model, a weighted judge."""
    rng = np.random.default_rng(3)
    store.studies.create(ALPACA_STUDY, description="AlpacaEval-shaped import", source={"kind": "alpaca_eval"})
    qids = [f"alpaca-{k:03d}" for k in range(N_INSTRUCTIONS)]
    store.questions.add(ALPACA_STUDY, pd.DataFrame({"question_id": qids, "text": [f"Instruction {q}" for q in qids]}))
    lengths = {BASELINE: 1500, **{m: length for m, (_, length) in ALPACA_MODELS.items()}}
    store.questions.add_answers(ALPACA_STUDY, pd.DataFrame([
        {"question_id": q, "model": m, "answer": "x" * int(length + rng.integers(-200, 200))}
        for q, (m, length) in itertools.product(qids, lengths.items())]))
    store.judges.add(ALPACA_STUDY, [{"name": "weighted_alpaca_eval_gpt4_turbo", "kind": "llm"}])
    rows = []
    for q, (model, (strength, _)) in itertools.product(qids, ALPACA_MODELS.items()):
        p_model = float(np.clip(strength + rng.normal(0, 0.2), 0.01, 0.99))
        rows.append({"question_id": q, "model_a": BASELINE, "model_b": model, "judge": "weighted_alpaca_eval_gpt4_turbo",
                     "winner": "model_b" if p_model > 0.5 else "model_a", "p_a": round(1 - p_model, 4)})
    store.verdicts.add(ALPACA_STUDY, judgments_from_frame(pd.DataFrame(rows)))


def _table(at, *columns: str) -> pd.DataFrame:
    found = [e.value for e in at.dataframe if set(columns) <= set(e.value.columns)]
    assert found, f"no table with {columns}; tables: {[list(e.value.columns) for e in at.dataframe]}"
    return found[0]


@pytest.fixture
def alpaca(db_file, monkeypatch):
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", "")
    build_alpaca_study(Store(db_file))
    return db_file


# ------------------------------------------------------------------------- item 1: baseline


def test_versus_a_baseline_defaults_to_the_model_in_every_comparison_and_orders_by_lc(alpaca):
    at = open_page(app_test(), "leaderboard")
    at.selectbox(key="lb_method").set_value("Versus a baseline").run()
    assert problems(at) == []
    assert at.selectbox(key="lb_baseline").value == BASELINE  # not "Alpha-7B", the first by name
    table = _table(at, "LC win rate %", "rank")
    assert set(table["model"]) == {BASELINE, *ALPACA_MODELS}
    lc = table["LC win rate %"].tolist()
    assert lc == sorted(lc, reverse=True)  # AlpacaEval 2's order: by length-controlled win rate
    assert table["rank"].iloc[0] == 1 and table["rank"].is_monotonic_increasing
    assert table.loc[table["model"] == BASELINE, "win rate %"].item() == 50.0
    assert all(round(v, 2) == v for v in table["win rate %"])  # percent, 2 decimals as AlpacaEval prints them


def test_the_default_baseline_is_one_rule_in_the_application_layer(alpaca):
    from peercore.app import Study
    from peercore.app.leaderboard import selection_baseline
    from peercore.domain.selection import Selection

    study = Study(Store(alpaca), ALPACA_STUDY)
    assert selection_baseline(study) == BASELINE
    assert selection_baseline(study, Selection(judges=("weighted_alpaca_eval_gpt4_turbo",))) == BASELINE


def test_cli_baseline_auto_is_the_pages_default(alpaca, synthetic, capsys):
    import json

    from peercore.cli import main

    assert main(["rank", "--study", ALPACA_STUDY, "--db", str(alpaca), "--method", "winrate", "--baseline", "auto",
                 "--lc-rounds", "0", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["baseline"]["baseline"] == BASELINE
    lc = [row["lc_win_rate"] for row in payload["leaderboard"]]
    assert lc == sorted(lc, reverse=True) and [row["rank"] for row in payload["leaderboard"]][0] == 1
    assert main(["rank", "--study", "synthetic", "--db", str(alpaca), "--method", "winrate", "--baseline",
                 "auto"]) != 0
    assert "no model takes part in every chosen comparison" in capsys.readouterr().err


def test_without_a_model_in_every_comparison_the_page_asks_for_the_baseline(synthetic):
    at = open_page(app_test(), "leaderboard")
    at.selectbox(key="lb_method").set_value("Versus a baseline").run()
    assert problems(at) == []
    assert at.selectbox(key="lb_baseline").value is None
    assert any("choose the baseline" in i.value for i in at.info)
    assert not [e for e in at.dataframe if "LC win rate %" in e.value.columns]
    at.selectbox(key="lb_baseline").set_value("delta").run()
    assert problems(at) == [] and set(_table(at, "LC win rate %")["model"]) == {"alpha", "bravo", "charlie", "delta"}


# --------------------------------------------------------- item 2: one default method per study


def _via_sidebar(study: str):
    at = app_test()
    at.sidebar.selectbox(key="study").set_value(study).run()
    return open_page(at, "leaderboard")


def _via_home_card(study: str, monkeypatch):
    import streamlit as st

    monkeypatch.setattr(st, "switch_page", lambda page: None)  # AppTest does not follow it: open_page does
    at = app_test(page=None)
    at.button(key=f"home_open::{study}").click().run()
    return open_page(at, "leaderboard")


@pytest.mark.parametrize("fixture", ["prd", "synthetic"])
def test_a_study_opens_on_the_same_method_from_home_and_from_the_sidebar(fixture, request, monkeypatch):
    name = request.getfixturevalue(fixture)["name"]
    direct = _via_sidebar(name)
    card = _via_home_card(name, monkeypatch)
    assert problems(direct) == [] and problems(card) == []
    assert direct.selectbox(key="lb_method").value == card.selectbox(key="lb_method").value == "Bradley-Terry"


def test_an_alpacaeval_study_opens_against_its_baseline_by_every_path(alpaca, monkeypatch):
    """AlpacaEval's shape (one model in every comparison, no method named by the study): the Leaderboard opens on
    the table against that baseline, as AlpacaEval shows it, from the sidebar and from Home's card alike."""
    direct = _via_sidebar(ALPACA_STUDY)
    card = _via_home_card(ALPACA_STUDY, monkeypatch)
    for at in (direct, card):
        assert problems(at) == []
        assert at.selectbox(key="lb_method").value == "Versus a baseline"
        assert at.selectbox(key="lb_baseline").value == BASELINE
        assert _table(at, "LC win rate %", "rank")["rank"].iloc[0] == 1


def test_the_bundled_prd_study_opens_on_peer_rank_by_every_path_and_the_next_study_on_its_own(db_file, monkeypatch):
    if not (REPO / "sample_data" / "prd_vicuna80" / "provenance.json").is_file():
        pytest.fail("sample_data/prd_vicuna80/ is missing from the repository")
    card = _via_home_card("prd-vicuna80", monkeypatch)
    direct = _via_sidebar("prd-vicuna80")
    assert problems(card) == [] and problems(direct) == []
    assert card.selectbox(key="lb_method").value == direct.selectbox(key="lb_method").value == "Peer Rank weighted"
    # The sample names no method: it opens on Bradley-Terry, even after PRD's Peer Rank in the same session.
    card.sidebar.selectbox(key="study").set_value("sample").run()
    assert problems(card) == [] and card.selectbox(key="lb_method").value == "Bradley-Terry"
    # Back to PRD: the view this session chose for it.
    card.selectbox(key="lb_method").set_value("Win rate").run()
    card.sidebar.selectbox(key="study").set_value("prd-vicuna80").run()
    assert card.selectbox(key="lb_method").value == "Peer Rank weighted"


# ------------------------------------------------------------------------ item 3: the URL


def test_a_link_opens_the_leaderboard_on_its_view_and_the_view_goes_into_the_url(synthetic):
    at = app_test()
    at.query_params.update({"method": "elo", "peer_weights": "fixed-point", "judge": ["openai:alpha", "local:charlie"],
                            "category": "math", "repeated_votes": "each"})
    open_page(at, "leaderboard")
    assert problems(at) == []
    assert at.selectbox(key="lb_method").value == "Peer Rank weighted"
    assert at.selectbox(key="lb_base").value == "Elo"
    assert at.selectbox(key="lb_weight_mode").value.startswith("Fixed point")
    assert at.multiselect(key="lb_judges").value == ["openai:alpha", "local:charlie"]
    assert at.selectbox(key="lb_category").value == "math"
    assert at.checkbox(key="lb_each_vote").value is True
    at.selectbox(key="lb_method").set_value("Bradley-Terry").run()
    at.multiselect(key="lb_judges").set_value(["anthropic:bravo"]).run()
    assert problems(at) == []
    params = {k: [v] if isinstance(v, str) else list(v) for k, v in at.query_params.items()}
    assert params["method"] == ["bt"] and params["judge"] == ["anthropic:bravo"] and "peer_weights" not in params
    assert params["category"] == ["math"] and params["repeated_votes"] == ["each"]


def test_a_baseline_link_restores_the_baseline(synthetic):
    at = app_test()
    at.query_params.update({"method": "winrate", "baseline": "charlie"})
    open_page(at, "leaderboard")
    assert problems(at) == []
    assert at.selectbox(key="lb_method").value == "Versus a baseline"
    assert at.selectbox(key="lb_baseline").value == "charlie"


# ---------------------------------------------------------------------- item 4: search box


def test_the_search_box_filters_the_table_by_plain_text(synthetic):
    at = open_page(app_test(), "leaderboard")
    at.text_input(key="lb_search").input("AL").run()
    assert problems(at) == []
    assert _table(at, "model", "rank")["model"].tolist() == ["alpha"]
    assert any("openai:alpha" in c.value for c in at.caption)  # the judge whose name matches is named
    for literal in ("a.*", "*a*", "[a]"):  # never a regular expression nor Markdown
        at.text_input(key="lb_search").input(literal).run()
        assert problems(at) == [] and _table(at, "model", "rank").empty
    at.text_input(key="lb_search").input("").run()
    assert len(_table(at, "model", "rank")) == 4


# ------------------------------------------------------------ issue 24: fragile adjacent pairs


def test_prd_marks_the_pair_a_handful_of_votes_swaps(prd):
    from peercore.app import Study
    from peercore.app.guarantees import audit_leaderboard
    from peercore.domain.selection import Selection

    at = _via_sidebar(prd["name"])
    assert problems(at) == []
    judges = tuple(at.multiselect(key="lb_judges").value)
    table = _table(at, "model", "rank", "fragile").set_index("model")
    audit = audit_leaderboard(Study(Store(prd["db"]), prd["name"]), Selection(judges=judges), method="bt")
    fragile = {m for p in audit.pairs if p["verified"] and p["share"] < 0.01 for m in (p["higher"], p["lower"])}
    assert fragile == {"vicuna-13b", "gpt35"}  # 58 of 8,000 LLM votes swap them (peercore audit)
    assert table.loc["vicuna-13b", "fragile"] == "swaps with gpt35 if 58 votes (0.73%) go"
    assert {m for m, mark in table["fragile"].items() if mark} == fragile
    votes = _table(at, "pair", "question_id", "judge")
    assert len(votes) == 58 and set(votes["pair"]) == {"vicuna-13b above gpt35"}


def test_the_audit_command_shown_lists_the_same_votes(prd, capsys):
    # Huang et al. (ICLR 2026), section 3: the fewest votes whose removal swaps an adjacent pair. `peercore audit
    # --study` alone audits every judge (the human votes too); the command the page shows audits the page's judges.
    import json
    import shlex

    from peercore.cli import main

    at = _via_sidebar(prd["name"])
    shown = [block.value for block in at.code if block.value.startswith("peercore audit")]
    assert len(shown) == 1
    words = shlex.split(shown[0])
    assert [words[i + 1] for i, w in enumerate(words) if w == "--judge"] == list(at.multiselect(key="lb_judges").value)
    capsys.readouterr()
    assert main([*words[1:], "--db", str(prd["db"]), "--format", "json"]) == 0
    pairs = [p for p in json.loads(capsys.readouterr().out)["pairs"] if p["verified"] and p["share"] < 0.01]
    assert [(p["higher"], p["lower"], len(p["votes"])) for p in pairs] == [("vicuna-13b", "gpt35", 58)]
    page = _table(at, "pair", "question_id", "judge")
    cli = pd.DataFrame([{"pair": f"{p['higher']} above {p['lower']}", **vote} for p in pairs for vote in p["votes"]])
    assert page[["question_id", "judge"]].equals(cli[["question_id", "judge"]].astype(str))


# ---------------------------------------------------- issue 18: the page's command line, the page's table


def _same_table_by_command(at, db, capsys) -> list[str]:
    """Run the command shown under the page's table; assert it prints the page's table; its words."""
    import json
    import shlex

    from peercore import reports
    from peercore.cli import main

    shown = [block.value for block in at.code if block.value.startswith("peercore rank")]
    assert len(shown) == 1, [block.value for block in at.code]
    words = shlex.split(shown[0])
    capsys.readouterr()
    assert main([*words[1:], "--db", str(db), "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    page = _table(at, "model", "rank", "95% interval")
    score_label = page.columns[list(page.columns).index("model") + 1]  # the score's name (win rate, Elo, ...)
    cli = reports.leaderboard_display(pd.DataFrame(payload["leaderboard"]), score_label)
    assert page[list(cli.columns)].reset_index(drop=True).equals(cli.reset_index(drop=True)), (page, cli)
    return words


def test_the_command_under_prds_table_computes_the_same_table(prd, capsys):
    # PRD's view: Peer Rank weighted win rates (PRD section 3.1, Table 2) over the LLM reviewers, the page's default
    # judges. `peercore rank --study` alone counts every judge, human votes too: the command names the reviewers.
    at = _via_sidebar(prd["name"])
    at.selectbox(key="lb_method").set_value("Peer Rank weighted").run()
    assert problems(at) == []
    words = _same_table_by_command(at, prd["db"], capsys)
    judges = [words[i + 1] for i, word in enumerate(words) if word == "--judge"]
    assert judges == list(at.multiselect(key="lb_judges").value) and "human:prd" not in judges
    assert words[words.index("--peer-weights") + 1] == "prd"


def test_the_command_follows_the_options_chosen(prd, capsys):
    # Chatbot Arena's Bradley-Terry (Chiang et al. 2024, section 5) with LMArena's reweighting and the weak prior,
    # every repeated vote counted, human votes among the judges.
    at = _via_sidebar(prd["name"])
    at.selectbox(key="lb_method").set_value("Bradley-Terry").run()
    at.multiselect(key="lb_judges").set_value(["gpt4", "claude", "human:prd"]).run()
    at.checkbox(key="lb_each_vote").check().run()
    at.checkbox(key="lb_reweight").check().run()
    at.checkbox(key="lb_prior").check().run()
    assert problems(at) == []
    words = _same_table_by_command(at, prd["db"], capsys)
    assert {"--each-vote", "--reweight", "--prior"} <= set(words) and "--peer-weights" not in words


def test_the_command_of_the_baseline_view(alpaca, capsys):
    # AlpacaEval's win rates against the baseline (Dubois et al. 2024, section 3): the command names it.
    at = _via_sidebar(ALPACA_STUDY)
    assert problems(at) == [] and at.selectbox(key="lb_method").value == "Versus a baseline"
    shown = [block.value for block in at.code if block.value.startswith("peercore rank")]
    assert len(shown) == 1 and f"--baseline {BASELINE}" in shown[0] and "--method winrate" in shown[0]
