"""Issue 18 on the pages ("one read model, one application layer"): what the pages show of an MT-Bench-like study.

The study is imported as a user would (``peercore import`` of a canonical CSV): six models, every
unordered pair of them in ONE fixed orientation (so the importer records the display order as
unknown), three annotators' votes (``human:a``, ``human:b``, ``human:c``, each vote its own row, as
MT-Bench's human judgments) and one ``gpt-4`` verdict per comparison that agrees with the human
majority about two times in three (seeded).

* Bias: ``gpt-4`` is not flagged (its order is unknown, so there is no position statistic to flag it
  on) and the position table says why.
* Meta-evaluation, "Every human vote on its own": the per-vote agreement and n are
  ``peercore agree --judge gpt-4 --reference human: --reference-mode votes``'s, and both equal the
  count made here by hand from the file (each human vote on a comparison compared with gpt-4's).
* Leaderboard: repeated votes of one judge on one comparison are merged into their majority with a
  warning that gives the count; "Count every repeated vote" counts each (more battles, no warning).
"""

from __future__ import annotations

import itertools
import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from app_studies import app_test, open_page, problems
from peercore.cli import main
from peercore.position import ORDER_UNKNOWN

MODELS = ("gpt-4", "claude-v1", "gpt-3.5-turbo", "vicuna-13b", "alpaca-13b", "llama-13b")
STRENGTH = dict(zip(MODELS, (1.5, 1.0, 0.6, 0.2, -0.6, -1.0)))
HUMANS = ("human:a", "human:b", "human:c")
QUESTIONS = [f"q{k:02d}" for k in range(81, 93)]  # 12 questions x 15 pairs = 180 comparisons
OUTCOMES = ("model_a", "model_b", "tie")
AGREE = 2 / 3  # share of comparisons where gpt-4 gives the human majority's verdict


def _vote(rng: np.random.Generator, a: str, b: str) -> str:
    gap = STRENGTH[a] - STRENGTH[b]
    p_a = 1 / (1 + np.exp(-gap))
    p_tie = 0.2
    return str(rng.choice(OUTCOMES, p=[(1 - p_tie) * p_a, (1 - p_tie) * (1 - p_a), p_tie]))


def mt_bench_rows(seed: int = 18) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(human votes, gpt-4 verdicts): every pair in one orientation (itertools.combinations' order)."""
    rng = np.random.default_rng(seed)
    humans, judge = [], []
    for question in QUESTIONS:
        for a, b in itertools.combinations(MODELS, 2):
            voters = HUMANS if rng.random() < 0.6 else HUMANS[:2]  # human:c votes on about 60% of comparisons
            votes = {h: _vote(rng, a, b) for h in voters}
            humans += [{"question_id": question, "model_a": a, "model_b": b, "judge": h, "winner": w}
                       for h, w in votes.items()]
            top, count = Counter(votes.values()).most_common(1)[0]
            majority = top if count * 2 > len(votes) else "tie"
            verdict = majority if rng.random() < AGREE else str(rng.choice([o for o in OUTCOMES if o != majority]))
            judge.append({"question_id": question, "model_a": a, "model_b": b, "judge": "gpt-4", "winner": verdict})
    return pd.DataFrame(humans), pd.DataFrame(judge)


@pytest.fixture
def mt_bench(db_file, tmp_path, monkeypatch, capsys) -> dict:
    """The study ``mt`` imported with ``peercore import`` from one canonical CSV."""
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", "")
    humans, judge = mt_bench_rows()
    path = tmp_path / "mt_bench.csv"
    pd.concat([humans, judge], ignore_index=True).to_csv(path, index=False)
    assert main(["import", str(path), "--study", "mt", "--db", str(db_file)]) == 0
    imported = capsys.readouterr()
    at = app_test()
    at.sidebar.selectbox(key="study").set_value("mt").run()
    return {"db": db_file, "humans": humans, "judge": judge, "import": imported.out + imported.err, "at": at}


def _table(at, *columns: str) -> pd.DataFrame:
    found = [e.value for e in at.dataframe if set(columns) <= set(e.value.columns)]
    assert found, f"no table with {columns}; tables: {[list(e.value.columns) for e in at.dataframe]}"
    return found[0]


def _texts(elements) -> list[str]:
    return [str(e.value) for e in elements]


def test_the_import_says_the_order_is_unknown(mt_bench):
    # Every verdict is on a pair judged in one orientation: the importer cannot tell which answer came first.
    n = len(mt_bench["humans"]) + len(mt_bench["judge"])
    assert f"{n:,} verdicts are on pairs of models their judge judged in one orientation only" in mt_bench["import"]


def test_bias_page_does_not_flag_gpt4_and_says_why(mt_bench, capsys):
    at = open_page(mt_bench["at"], "bias")
    assert problems(at) == []
    assert at.multiselect(key="bias_judges").value == ["gpt-4"]  # the LLM reviewers, by default
    shown = " ".join(_texts(at.warning) + _texts(at.error))
    assert "carries no information" not in shown
    health = _table(at, "judge", "carries information")
    assert health.set_index("judge").loc["gpt-4", "carries information"] == "yes"
    position = _table(at, "P(first)", "why no statistic")
    assert (position.loc["gpt-4", "verdicts"], position.loc["gpt-4", "decisive"]) == (0, 0)  # none of a known order
    assert pd.isna(position.loc["gpt-4", "P(first)"])
    assert position.loc["gpt-4", "why no statistic"] == ORDER_UNKNOWN
    # `peercore bias` says the same: not flagged, the same reason
    assert main(["bias", "--study", "mt", "--db", str(mt_bench["db"]), "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["gpt-4"]
    assert row["flagged"] is False and row["reasons"] == ORDER_UNKNOWN and row["p_first"] is None


def _per_vote_agreement(humans: pd.DataFrame, judge: pd.DataFrame) -> tuple[int, float, int, float]:
    """By hand: each human vote compared with gpt-4's verdict on its comparison (ties included, and without)."""
    key = ["question_id", "model_a", "model_b"]
    both = humans.merge(judge[key + ["winner"]].rename(columns={"winner": "judge_winner"}), on=key)
    same = both["winner"] == both["judge_winner"]
    decisive = (both["winner"] != "tie") & (both["judge_winner"] != "tie")
    return len(both), float(same.mean()), int(decisive.sum()), float(same[decisive].mean())


@pytest.mark.parametrize("mode", ["votes", "majority"])
def test_meta_evaluation_page_equals_peercore_agree(mt_bench, mode, capsys):
    at = open_page(mt_bench["at"], "meta_evaluation")
    at.radio(key="meta_reference_mode").set_value(mode).run()
    assert problems(at) == []
    shown = _table(at, "matched", "accuracy").loc["gpt-4"]
    assert main(["agree", "--study", "mt", "--db", str(mt_bench["db"]), "--judge", "gpt-4", "--reference", "human:",
                 "--reference-mode", mode, "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert main(["agree", "--study", "mt", "--db", str(mt_bench["db"]), "--judge", "gpt-4", "--reference", "human:",
                 "--reference-mode", mode, "--ties", "exclude", "--format", "json"]) == 0
    without = json.loads(capsys.readouterr().out)
    assert shown["matched"] == cli["n"]
    assert shown["accuracy"] == np.round(cli["agreement"], 3)
    assert shown["Cohen's kappa"] == np.round(cli["cohen_kappa"], 3)
    assert shown["Fleiss' kappa (PRD Table 3)"] == np.round(cli["fleiss_kappa"], 3)
    assert shown["matched w/o ties"] == without["n"]
    assert shown["accuracy w/o ties"] == np.round(without["agreement"], 3)
    words = {"votes": "accuracy with every human vote", "majority": "accuracy with the human majority"}[mode]
    assert any(words in c.value for c in at.caption), _texts(at.caption)  # the cost chart says what it compares
    if mode == "votes":  # and both are the count by hand: every human vote on its own
        n, agreement, n_decisive, decisive = _per_vote_agreement(mt_bench["humans"], mt_bench["judge"])
        assert cli["n"] == n == len(mt_bench["humans"])
        assert cli["agreement"] == pytest.approx(agreement)
        assert (without["n"], without["agreement"]) == (n_decisive, pytest.approx(decisive))
        assert 0.35 < agreement < 0.75  # gpt-4 agrees with the majority 2/3 of the time, with single votes less
    else:
        assert cli["n"] == len(mt_bench["judge"])  # one majority per comparison


# -------------------------------------------------------------------- repeated votes

REPEATED = pd.DataFrame([  # human:a votes three times on (q81, gpt-4, claude-v1), twice on (q82, ...)
    {"question_id": "q81", "model_a": "gpt-4", "model_b": "claude-v1", "judge": "human:a", "winner": "model_a"},
    {"question_id": "q81", "model_a": "gpt-4", "model_b": "claude-v1", "judge": "human:a", "winner": "model_a"},
    {"question_id": "q81", "model_a": "gpt-4", "model_b": "claude-v1", "judge": "human:a", "winner": "model_b"},
    {"question_id": "q82", "model_a": "vicuna-13b", "model_b": "llama-13b", "judge": "human:a", "winner": "model_a"},
    {"question_id": "q82", "model_a": "vicuna-13b", "model_b": "llama-13b", "judge": "human:a", "winner": "tie"},
    {"question_id": "q83", "model_a": "claude-v1", "model_b": "alpaca-13b", "judge": "human:a", "winner": "model_a"},
    {"question_id": "q83", "model_a": "alpaca-13b", "model_b": "llama-13b", "judge": "human:b", "winner": "model_a"},
])


def test_leaderboard_says_what_it_merged_and_counts_every_vote_when_asked(db_file, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PEERBOARD_SAMPLE_DATA", "")
    path = tmp_path / "repeated.csv"
    REPEATED.to_csv(path, index=False)
    assert main(["import", str(path), "--study", "votes", "--db", str(db_file)]) == 0
    capsys.readouterr()
    at = app_test()
    at.sidebar.selectbox(key="study").set_value("votes").run()
    open_page(at, "leaderboard")
    at.button_group(key="lb_quick").set_value("All judges").run()
    at.selectbox(key="lb_method").set_value("Win rate").run()
    assert problems(at) == []
    # 5 votes on 2 comparisons merged: q81's three into model_a, q82's two (split) into a tie
    merged = [w for w in _texts(at.warning) if "repeated votes" in w]
    assert merged == ["5 repeated votes of one judge on 2 comparisons were merged into the majority of each "
                      "(“Count every repeated vote” counts every vote)"]
    battles = _table(at, "model", "battles").set_index("model")["battles"]
    assert battles.sum() == 2 * 4  # four comparisons, two contestants each

    at.checkbox(key="lb_each_vote").check().run()
    assert problems(at) == []
    assert not [w for w in _texts(at.warning) if "repeated votes" in w]
    each = _table(at, "model", "battles").set_index("model")["battles"]
    assert each.sum() == 2 * len(REPEATED)
    assert each.to_dict() == {"gpt-4": 3, "claude-v1": 4, "vicuna-13b": 2, "llama-13b": 3, "alpaca-13b": 2}
    # the CLI counts the same and says the same (in its own words)
    assert main(["rank", "--study", "votes", "--db", str(db_file), "--method", "winrate", "--format", "json"]) == 0
    out = capsys.readouterr()
    rows = json.loads(out.out)["leaderboard"]
    assert {r["model"]: r["battles"] for r in rows} == battles.to_dict()
    assert main(["rank", "--study", "votes", "--db", str(db_file), "--method", "winrate", "--each-vote",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["leaderboard"]
    assert {r["model"]: r["battles"] for r in rows} == each.to_dict()
