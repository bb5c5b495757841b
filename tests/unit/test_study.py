"""The application layer (peercore.app, on the read model peercore.domain.verdicts): selection, gold per panel, warnings, leave-one-out agreement.

Each test is a defect of issue 8 ("The CLI and the dashboard compute different things",
"Numbers that mislead") reproduced on a small study built through the store.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from peerboard_testing import make_judgments
from peercore.cli import main
from peercore.store import Store
from peercore.app import Study, alpha, judge_bias, leaderboard, leaderboards_by
from peercore.domain import verdicts as V
from peercore.domain.selection import Selection


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "study.sqlite")


def _add(store: Store, study: str, rows: list[dict]) -> None:
    store.studies.create(study, exist_ok=True)
    store.verdicts.add(study, pd.DataFrame(rows))


def test_final_verdicts_keep_each_agents_last_round_only():
    # A debate agent's initial verdict (round empty) and its final one (round 2) are the same
    # judge judging the same pair twice: counting both made every round a separate battle.
    frame = make_judgments([("a", "b", "model_a", "agent1"), ("a", "b", "model_b", "agent1"),
                            ("a", "b", "model_a", "agent2")], question_id="q1")
    frame["round"] = pd.array([pd.NA, 2, pd.NA], dtype="Int64")
    out = V.to_frame(V.final_only(V.from_frame(frame))[0])
    assert out[["judge", "winner"]].values.tolist() == [["agent1", "model_b"], ["agent2", "model_a"]]


def test_majority_of_votes_reduces_repeated_votes_of_one_judge():
    frame = make_judgments([("a", "b", "model_a", "human:prd"), ("a", "b", "model_a", "human:prd"),
                            ("a", "b", "model_b", "human:prd"), ("a", "c", "model_a", "human:prd"),
                            ("a", "c", "model_b", "human:prd")], question_id="q1")
    out = V.to_frame(V.majority(V.from_frame(frame))[0])
    assert out[["model_b", "winner"]].values.tolist() == [["b", "model_a"], ["c", "tie"]]


def test_judge_kinds_come_from_the_store_not_the_name(store):
    _add(store, "s", [{"question_id": "q", "model_a": "a", "model_b": "b", "judge": "crowd-1", "winner": "model_a"},
                      {"question_id": "q", "model_a": "a", "model_b": "b", "judge": "gpt", "winner": "model_b"}])
    store.judges.set("s", "crowd-1", kind="human", model_alias=None)
    study = Study(store, "s")
    assert study.kinds()["crowd-1"] == "human"
    humans = study.judgments(Selection(kinds=("human",)))
    assert humans["judge"].tolist() == ["crowd-1"]


def test_one_alias_rule_for_variants_and_backend_prefixes(store):
    _add(store, "s", [
        {"question_id": "q", "model_a": "gpt-4o", "model_b": "local:qwen", "judge": "openai:gpt-4o~logprobs",
         "winner": "model_a"},
        {"question_id": "q", "model_a": "gpt-4o", "model_b": "local:qwen", "judge": "local:qwen~verdict",
         "winner": "model_b"},
        {"question_id": "q", "model_a": "gpt-4o", "model_b": "local:qwen", "judge": "human:x", "winner": "tie"}])
    assert Study(store, "s").aliases() == {"openai:gpt-4o~logprobs": "gpt-4o", "local:qwen~verdict": "local:qwen"}


def test_a_mixed_selection_warns_and_common_contestants_fix_it(store):
    rows = [{"question_id": f"q{i}", "model_a": "a", "model_b": "b", "judge": "llm", "winner": "model_a"}
            for i in range(30)]
    rows += [{"question_id": f"q{i}", "model_a": "a", "model_b": "guanaco", "judge": "human:x", "winner": "model_b"}
             for i in range(30)]
    rows += [{"question_id": f"q{i}", "model_a": "a", "model_b": "b", "judge": "human:x", "winner": "model_a"}
             for i in range(30)]
    _add(store, "s", rows)
    study = Study(store, "s")
    mixed = leaderboard(study, method="winrate")
    assert any("guanaco (only by human:x)" in w for w in mixed.warnings)
    common = leaderboard(study, Selection(common_contestants=True), method="winrate")
    assert sorted(common.table["model"]) == ["a", "b"] and not any("mixed" in w for w in common.warnings)


def test_a_tiny_study_is_flagged_not_silently_ranked(store):
    # 5 verdicts gave Bradley-Terry ratings 1739 / -479 with no warning.
    _add(store, "s", [{"question_id": f"q{i}", "model_a": "a", "model_b": "b", "judge": "j", "winner": "model_a"}
                      for i in range(5)])
    ranking = leaderboard(Study(store, "s"), method="bt")
    assert ranking.table["preliminary"].all()
    assert any("only 5 judgments" in w for w in ranking.warnings)


def test_gold_is_per_debate_panel(store):
    store.studies.create("s")
    for panel, consensus in (("debate:p1", "model_a"), ("debate:p2", "model_b")):
        store.debates.add("s", {"debate_key": panel, "question_id": "q", "model_a": "a", "model_b": "b",
                                "status": "agreed", "consensus": consensus, "panel": panel}, [])
    store.debates.add("s", {"debate_key": "open", "question_id": "q2", "model_a": "a", "model_b": "b",
                            "status": "unresolved", "panel": "debate:p2"}, [])
    debate_id = int(store.debates.table("s", status="unresolved")["id"].iloc[0])
    store.debates.adjudicate(debate_id, "alice", "tie")
    study = Study(store, "s")
    assert study.panels() == ["debate:p2", "debate:p1"]
    assert study.gold("debate:p1")[["judge", "winner"]].values.tolist() == [["debate:p1", "model_a"]]
    assert sorted(map(tuple, study.gold("debate:p2")[["judge", "winner"]].values.tolist())) == [
        ("adjudicator:alice", "tie"), ("debate:p2", "model_b")]


def test_soft_rankings_use_p_a_and_say_so(store):
    rows = [{"question_id": f"q{i}", "model_a": "a", "model_b": "b", "judge": "j", "winner": "model_a", "p_a": 0.6}
            for i in range(60)]
    _add(store, "s", rows)
    study = Study(store, "s")
    hard = leaderboard(study, method="winrate")
    soft = leaderboard(study, method="winrate", soft=True)
    assert hard.verdicts == "hard" and soft.verdicts == "soft"
    assert hard.table.set_index("model").loc["a", "score"] == 1.0
    assert soft.table.set_index("model").loc["a", "score"] == pytest.approx(0.6)
    bt = leaderboard(study, method="bt", soft=True).table.set_index("model")["score"]
    # soft Bradley-Terry: P(a beats b) = 0.6 -> 400 log10(0.6 / 0.4) Elo points apart
    assert bt["a"] - bt["b"] == pytest.approx(400 * np.log10(0.6 / 0.4), abs=1e-3)


def test_cli_rank_and_study_agree_for_each_selection(store, tmp_path, capsys):
    rows = []
    for i in range(40):
        rows.append({"question_id": f"q{i}", "model_a": "a", "model_b": "b", "judge": "llm1",
                     "winner": ["model_a", "model_b", "tie"][i % 3]})
        rows.append({"question_id": f"q{i}", "model_a": "b", "model_b": "c", "judge": "llm2",
                     "winner": ["model_a", "model_b"][i % 2]})
        rows.append({"question_id": f"q{i}", "model_a": "a", "model_b": "c", "judge": "human:x", "winner": "model_a"})
    _add(store, "s", rows)
    study = Study(store, "s")
    for args, selection in ((["--kind", "llm"], Selection(kinds=("llm",))), (["--judge", "llm1"], Selection(judges=("llm1",))),
                            (["--kind", "human"], Selection(kinds=("human",))), ([], Selection())):
        for method in ("winrate", "elo", "bt", "poe-bt"):
            assert main(["rank", "--study", "s", "--db", str(store.path), "--method", method, "--format", "json",
                         *args]) == 0
            cli = json.loads(capsys.readouterr().out)["leaderboard"]
            table = leaderboard(study, selection, method=method).table
            assert [r["model"] for r in cli] == table["model"].tolist()
            assert [r["score"] for r in cli] == pytest.approx(table["score"].tolist())


def test_agree_through_a_study_is_leave_one_out_and_counts_unparsed(store, capsys):
    rows = [{"question_id": f"q{i}", "model_a": "a", "model_b": "b", "judge": judge, "winner": winner}
            for i in range(10) for judge, winner in (("human:e0", "model_a"), ("human:e1", "model_b"),
                                                     ("human:e2", "model_b"), ("human:e3", "model_b"))]
    rows += [{"question_id": "q0", "model_a": "a", "model_b": "b", "judge": "llm", "winner": None, "valid": 0,
              "raw": "I cannot decide"}]
    _add(store, "s", rows)
    assert main(["agree", "--study", "s", "--db", str(store.path), "--judge", "human:", "--reference", "human:",
                 "--format", "json"]) == 0
    table = {row["judge"]: row for row in json.loads(capsys.readouterr().out)}
    assert table["human:e0"]["agreement"] == 0.0 and table["human:e1"]["agreement"] == 1.0
    assert table["human:e1"]["reference_votes"] == 3  # e0, e2 and e3, never e1 itself
    assert main(["agree", "--study", "s", "--db", str(store.path), "--judge", "llm", "--reference", "human:",
                 "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["n"] == 1 and got["unparsed"] == 1 and got["agreement"] == 0.0


# ---------------------------------------------------------------------- issue 11 options


def _styled_study(store: Store, name: str = "styled") -> Study:
    """Four contestants on 12 questions in 3 categories and 2 criteria; answers stored; the judge likes length."""
    rng = np.random.default_rng(0)
    models = ["a", "b", "c", "d"]
    store.studies.create(name, exist_ok=True)
    store.questions.add(name, pd.DataFrame({"question_id": [f"q{i}" for i in range(12)], "text": "?",
                                            "category": [["maths", "coding", "writing"][i % 3] for i in range(12)]}))
    answers = [{"question_id": f"q{i}", "model": m, "answer": "x" * int(50 + 100 * k + rng.integers(0, 40))
                + ("\n# h\n- item" if m == "d" else "")} for i in range(12) for k, m in enumerate(models)]
    store.questions.add_answers(name, pd.DataFrame(answers))
    rows = []
    for i in range(12):
        for a in models:
            for b in models:
                if a != b:
                    for criterion in ("helpfulness", "harmlessness"):
                        longer = models.index(a) > models.index(b)
                        rows.append({"question_id": f"q{i}", "model_a": a, "model_b": b, "judge": "gpt",
                                     "criterion": criterion,
                                     "winner": "model_a" if (longer if rng.random() < 0.8 else not longer) else "model_b"})
    store.verdicts.add(name, pd.DataFrame(rows))
    return Study(store, name)


def test_baseline_view_through_the_study(store):
    study = _styled_study(store)
    ranking = leaderboard(study, method="winrate", baseline="a", lc_rounds=20)
    table = ranking.table.set_index("model")
    assert ranking.baseline["baseline"] == "a" and ranking.baseline["difficulty"] == "joint fit of 3 models"
    assert table.loc["a", "win_rate"] == 50 and table.loc["a", "n_draws"] == 12
    assert table.loc["d", "n_total"] == 2 * 12 * 2  # both orders, both criteria
    assert (table["avg_length"].notna()).all() and table.loc["d", "avg_length"] > table.loc["b", "avg_length"]
    assert ranking.to_json()["baseline"]["baseline"] == "a"
    with pytest.raises(ValueError, match="a baseline goes with method 'winrate'"):
        leaderboard(study, method="bt", baseline="a")


def test_style_control_through_the_study_lowers_the_verbose_models(store):
    study = _styled_study(store)
    plain = leaderboard(study, method="bt", bootstrap=0).table.set_index("model")
    styled = leaderboard(study, method="bt", controls=("length",), bootstrap=0)
    table = styled.table.set_index("model")
    assert styled.style is not None and styled.style.loc["length", "coefficient"] > 0
    assert table.loc["d", "score"] < plain.loc["d", "score"]          # its wins were length
    assert np.allclose(table["plain_score"], plain["score"].reindex(table.index))
    assert (table["rank_change"] == table["plain_rank"] - table["rank"]).all()
    payload = styled.to_json()
    assert set(payload["style"]) == {"length"} and set(payload["style_intervals"]["length"]) <= {None} | set(
        payload["style_intervals"]["length"])
    with pytest.raises(ValueError, match="style control is a Bradley-Terry model"):
        leaderboard(study, method="elo", controls=("length",))


def test_style_control_without_answers_says_what_to_import(store):
    _add(store, "bare", [{"question_id": f"q{i}", "model_a": "a", "model_b": "b", "judge": "j", "winner": "model_a"}
                         for i in range(5)])
    with pytest.raises(ValueError, match="import the answers"):
        leaderboard(Study(store, "bare"), method="bt", controls=("length",))


def test_leaderboards_by_category_criterion_and_turn(store):
    study = _styled_study(store)
    by_category = leaderboards_by(study, by="category", method="winrate", bootstrap=0)
    assert list(by_category.rankings) == ["coding", "maths", "writing"]
    assert by_category.counts["judgments"].tolist() == [96, 96, 96]
    assert by_category.counts["contestants"].tolist() == [4, 4, 4]
    maths = leaderboard(study, Selection(categories=("maths",)), method="winrate", bootstrap=0).table
    pd.testing.assert_frame_equal(by_category.rankings["maths"].table, maths)
    by_criterion = leaderboards_by(study, by="criterion", method="bt", bootstrap=0, groups=["harmlessness"])
    assert list(by_criterion.rankings) == ["harmlessness"]
    assert list(leaderboards_by(study, by="turn", method="winrate", bootstrap=0).rankings) == ["1"]
    with pytest.raises(ValueError, match=r"category \['poetry'\] has no judgment"):
        leaderboards_by(study, by="category", groups=["poetry"])
    with pytest.raises(ValueError, match="by must be one of"):
        leaderboards_by(study, by="judge")
    assert json.loads(json.dumps(by_category.to_json()))["counts"]["maths"]["judgments"] == 96


def test_prior_keeps_five_verdicts_near_1000(store):
    _add(store, "five", [{"question_id": f"q{i}", "model_a": "a", "model_b": "b", "judge": "j", "winner": "model_a"}
                         for i in range(5)])
    study = Study(store, "five")
    without = leaderboard(study, method="bt", bootstrap=0).table.set_index("model")["score"]
    weak = leaderboard(study, method="bt", bootstrap=0, prior=200).table.set_index("model")["score"]
    assert (without - 1000).abs().max() > 1000       # 5 wins out of 5: 'ratings like 1739 / -479' or worse
    assert (weak - 1000).abs().max() < 200
    warning = " ".join(leaderboard(study, method="bt", bootstrap=0).warnings)
    assert "a weak prior (--prior 200)" in warning


def test_min_battles_sets_the_preliminary_flag_and_options_are_checked(store):
    study = _styled_study(store)
    table = leaderboard(study, method="winrate", bootstrap=0, min_battles=200).table
    assert table["preliminary"].all()
    assert not leaderboard(study, method="winrate", bootstrap=0, min_battles=10).table["preliminary"].any()
    with pytest.raises(ValueError, match="Bradley-Terry options"):
        leaderboard(study, method="winrate", reweight=True)
    with pytest.raises(ValueError, match="intervals must be one of"):
        leaderboard(study, method="bt", intervals="jackknife")
    with pytest.raises(ValueError, match="min_battles must be"):
        leaderboard(study, method="bt", min_battles=-1)


def test_alpha_and_judge_bias_through_the_study(store):
    study = _styled_study(store)
    rows = [{"question_id": f"q{i}", "model_a": "a", "model_b": "b", "judge": judge, "criterion": "helpfulness",
             "winner": "model_a" if (i + k) % 3 else "model_b"} for i in range(12) for k, judge in
            enumerate(["human:x", "human:y", "human:z"])]
    store.verdicts.add("styled", pd.DataFrame(rows))
    result = alpha(study, ["human:"], rounds=100)
    assert result.raters == ("human:x", "human:y", "human:z") and result.units == 12
    store.judges.set("styled", "gpt", kind="llm", model_alias="d")
    bias = judge_bias(study, Selection(judges=("gpt",)))
    assert {"position", "self", "length"} == set(bias.table.index.get_level_values("bias"))
    assert bias.table.loc[("gpt", "length"), "coefficient"] > 0     # the judge likes length
    # gpt is d, and no other judge judged d: its self-preference cannot be told from d's strength
    assert np.isnan(bias.table.loc[("gpt", "self"), "coefficient"]) and bias.table.loc[("gpt", "self"),
                                                                                          "n_informative"] == 0


def test_a_leaderboard_export_holds_the_new_columns_the_cli_prints(store, capsys):
    from peercore.app.exports import study_table

    study = _styled_study(store)
    exported = study_table(store, "styled", what="leaderboard", method="bt", controls=("length",), bootstrap=0,
                           intervals="sandwich", prior=200.0)
    shown = leaderboard(study, method="bt", controls=("length",), bootstrap=0, intervals="sandwich", prior=200.0)
    pd.testing.assert_frame_equal(exported, shown.table.reset_index(drop=True))
    assert {"plain_score", "rank_change", "sandwich_low", "rank_worst"} <= set(exported.columns)
    baseline = study_table(store, "styled", what="leaderboard", method="winrate", baseline="a", lc_rounds=0)
    assert {"win_rate", "discrete_win_rate", "lc_win_rate", "avg_length"} <= set(baseline.columns)
