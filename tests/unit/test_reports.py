"""peercore.reports (and the study layer's pure helpers): the tables behind the pages, no streamlit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from peercore.judgments import judgments_from_frame
from peercore import reports as views
from peercore.app import GroupedRanking, Ranking, Study, leaderboard
from peercore.app.leaderboard import poe_table
from peercore.app.study import gold_judgments, gold_to_add
from peercore.domain import verdicts as V


def debates_frame(rows):
    columns = ["id", "debate_key", "kind", "question_id", "model_a", "model_b", "criterion", "scenario", "status",
               "consensus", "n_rounds"]
    return pd.DataFrame(rows, columns=columns)


def turns_frame(rows):
    return pd.DataFrame(rows, columns=["debate_id", "round", "position", "speaker", "verdict", "rationale"])


ADJ_COLUMNS = ["debate_id", "question_id", "model_a", "model_b", "criterion", "scenario", "annotator", "verdict",
               "note", "created_at"]


def test_judge_groups_come_from_the_stores_kinds_with_variants_after_their_model():
    names = ["human:b", "gpt4", "debate:x", "adjudicator:y", "human:a", "vote:v", "crowd", "gpt4~logprobs"]
    kinds = {"human:b": "human", "gpt4": "llm", "debate:x": "debate", "adjudicator:y": "adjudicator",
             "human:a": "human", "vote:v": "vote", "crowd": "human", "gpt4~logprobs": "llm"}
    groups = views.judge_groups(names, kinds)
    assert groups == {"LLM reviewers": ["gpt4", "gpt4~logprobs"], "Humans": ["crowd", "human:a", "human:b"],
                      "Debate gold": ["adjudicator:y", "debate:x"], "Derived votes": ["vote:v"]}
    assert views.judge_label("gpt4~logprobs") == "gpt4 · variant logprobs" and views.judge_label("gpt4") == "gpt4"


def test_aliases_prefer_stored_then_name_then_base_then_suffix():
    frame = judgments([("1", "gpt4", "gpt-4o", "gpt4", "model_a", None), ("1", "gpt4", "m", "openai:gpt-4o", "tie", None),
                       ("1", "gpt4", "m", "human:x", "tie", None), ("1", "gpt4", "m", "j", "tie", None),
                       ("1", "gpt4", "m", "openai:gpt-4o~verdict", "tie", None)])
    assert V.from_frame(frame, aliases={"j": "m"}).aliases() == {"gpt4": "gpt4", "openai:gpt-4o": "gpt-4o", "j": "m",
                                                   "openai:gpt-4o~verdict": "gpt-4o"}


def test_gold_is_consensus_of_agreed_debates_plus_adjudications():
    debates = debates_frame([
        (1, "a", "debate", "q1", "x", "y", "help", "s", "agreed", "model_a", 1),
        (2, "b", "debate", "q2", "x", "y", "help", "s", "unresolved", None, 3),
        (3, "c", "discussion", "q3", "x", "y", "", "", "agreed", "model_b", 2),   # a PRD discussion: not gold
        (4, "d", "debate", "q4", "x", "y", "", "", "adjudicated", "tie", 3),      # imported already decided
    ])
    adjudications = pd.DataFrame([(2, "q2", "x", "y", "help", "s", "ann", "model_b", "", "t")], columns=ADJ_COLUMNS)
    gold = gold_judgments(debates, adjudications)
    assert gold[["question_id", "judge", "winner", "debate_id"]].values.tolist() == [
        ["q1", "debate:consensus", "model_a", 1], ["q4", "adjudicator:imported", "tie", 4],
        ["q2", "adjudicator:ann", "model_b", 2]]
    assert gold["criterion"].tolist()[:1] == ["help"]
    assert len(gold_judgments(debates.iloc[0:0], adjudications.iloc[0:0])) == 0
    paneled = gold_judgments(debates.assign(panel=["debate:p", "", "", ""]), adjudications)
    assert paneled["judge"].iloc[0] == "debate:p"  # gold is per panel


def test_opinions_leader_and_overview():
    debates = debates_frame([(1, "a", "debate", "q1", "x", "y", "", "", "agreed", "model_a", 2),
                             (2, "b", "debate", "q2", "x", "y", "", "", "unresolved", None, 2)])
    turns = turns_frame([
        (1, 0, 0, "A", "model_a", ""), (1, 0, 1, "B", "model_b", ""),
        (1, 1, 0, "A", "model_a", ""), (1, 1, 1, "B", "model_a", ""),   # B alters, A holds; ends on A's (leader's) view
        (2, 0, 0, "B", "tie", ""), (2, 0, 1, "A", "model_a", ""),
        (2, 1, 0, "B", "tie", ""), (2, 1, 1, "A", "model_a", ""),
    ])
    # PRD section 5: held / altered only when the other reviewer disagrees at that point.
    counts = views.opinion_counts(debates, turns).groupby("speaker")[["turns", "altered", "held"]].sum()
    assert counts.loc["A"].tolist() == [2, 0, 2]
    assert counts.loc["B"].tolist() == [2, 1, 1]
    leaders = views.leader_effect(debates, turns)  # PRD Fig. 6: as leader vs as follower
    assert leaders.loc["A", ["leader_held", "follower_held"]].tolist() == [1, 1]
    assert leaders.loc["B", ["leader_held", "follower_altered"]].tolist() == [1, 1]
    adoption = views.leader_adoption(debates, turns)
    assert adoption.to_dict("index") == {"A": {"debates": 1, "ended_on_leader_verdict": 1, "share": 1.0}}
    overview = views.debate_overview(debates, turns)
    assert overview["opinion_changed"].tolist() == [True, False]
    assert overview["initial"].tolist() == ["1 / 2", "tie / 1"]
    assert overview["final"].tolist() == ["1 / 1", "tie / 1"]
    final = views.final_turns(turns, 2)
    assert final["speaker"].tolist() == ["B", "A"] and final["round"].tolist() == [1, 1]


def test_turn_verdicts_before_and_after():
    debates = debates_frame([(1, "a", "debate", "q1", "x", "y", "c", "", "agreed", "model_a", 2)])
    turns = turns_frame([(1, 0, 0, "A", "model_b", "r0"), (1, 1, 0, "A", "model_a", "r1"), (1, 1, 1, "B", None, "")])
    table = views.turn_judgments(debates, turns)
    assert table["judge"].tolist() == ["A", "A"] and table["round"].tolist() == [0, 1]
    before, after = views.initial_and_final(table)
    assert before["winner"].tolist() == ["model_b"] and after["winner"].tolist() == ["model_a"]


def test_annotator_agreement_pairs():
    rows = [(1, "q", "x", "y", "", "", "ann", "model_a", "", ""), (1, "q", "x", "y", "", "", "ben", "model_a", "", ""),
            (2, "q", "x", "y", "", "", "ann", "model_b", "", ""), (2, "q", "x", "y", "", "", "ben", "tie", "", ""),
            (3, "q", "x", "y", "", "", "cat", "tie", "", "")]
    decided = pd.DataFrame(rows, columns=ADJ_COLUMNS)
    pairs = views.annotator_agreement(decided)
    assert pairs[["annotator_1", "annotator_2", "n", "agreement"]].values.tolist() == [["ann", "ben", 2, 0.5]]
    items = views.decisions_by_item(decided)
    assert items[["debate_id", "agree"]].values.tolist() == [[1, True], [2, False]]


def judgments(rows):
    return judgments_from_frame(pd.DataFrame(rows, columns=["question_id", "model_a", "model_b", "judge", "winner", "p_a"]))


def test_poe_table_ranks_with_centred_intervals():
    rng = np.random.default_rng(0)
    rows = []
    for q in range(40):
        for a, b in (("x", "y"), ("y", "x"), ("x", "z"), ("z", "x"), ("y", "z"), ("z", "y")):
            strength = {"x": 1.0, "y": 0.0, "z": -1.0}
            p = float(np.clip(0.5 + 0.25 * (strength[a] - strength[b]) + rng.normal(0, 0.05), 0, 1))
            rows.append((str(q), a, b, "j", "model_a" if p > 0.5 else "model_b", p))
    table = poe_table(judgments(rows))
    assert table["model"].tolist() == ["x", "y", "z"]
    # ranks come from the leaderboard, by the Arena rule on these intervals
    ranked = leaderboard(Study.from_frame(judgments(rows)), method="poe-gaussian").table
    assert ranked["model"].tolist() == ["x", "y", "z"] and ranked["rank"].tolist() == [1, 2, 3]
    width = (table["ci_high"] - table["ci_low"]).to_numpy()
    assert (width > 0).all() and (width < 0.05).all()  # centred: no common-shift uncertainty
    assert (table["ci_low"] < table["score"]).all() and (table["score"] < table["ci_high"]).all()
    bt = poe_table(judgments(rows), method="poe_bt")
    assert bt["ci_low"].isna().all() and bt["model"].tolist() == ["x", "y", "z"]


def test_what_if_compares_two_leaderboards():
    rows = [("1", "x", "y", "j1", "model_a", None), ("2", "y", "x", "j1", "model_b", None),
            ("3", "x", "y", "j2", "model_b", None), ("4", "y", "x", "j2", "model_a", None),
            ("5", "x", "y", "j2", "model_b", None)]
    frame = judgments(rows)
    full = leaderboard(Study.from_frame(frame), method="winrate", bootstrap=0).table
    without = leaderboard(Study.from_frame(frame[frame["judge"] == "j1"]), method="winrate", bootstrap=0).table
    compared = views.what_if(full, without)
    assert compared.set_index("model")["rank_change"].to_dict() == {"x": 1, "y": -1}


def test_answers_for_and_with_answers():
    answers = pd.DataFrame({"question_id": ["1", "1", "1"], "model": ["x", "y", "x"], "turn": [1, 1, 2],
                            "answer": ["a", "bb", "ccc"]})
    frame = judgments([("1", "x", "y", "j", "model_a", None), ("2", "x", "y", "j", "tie", None)])
    texts = views.answers_for(frame, answers)
    assert "turn" not in texts.columns and texts["answer"].tolist() == ["a", "bb"]
    assert views.with_answers(frame, texts)["question_id"].tolist() == ["1"]


def test_criteria_variation_compares_each_variant_with_the_plain_gold():
    gold = judgments_from_frame(pd.DataFrame({"question_id": ["1", "2"], "model_a": "x", "model_b": "y",
                                              "judge": "debate:consensus", "winner": ["model_a", "model_b"],
                                              "criterion": "help"}))
    runs = judgments_from_frame(pd.DataFrame({
        "question_id": ["1", "2", "1", "2", "1"], "model_a": "x", "model_b": "y", "judge": "j",
        "winner": ["model_a", "model_b", "model_b", "model_b", "model_a"],
        "criterion": ["help/gibberish", "help/gibberish", "help:flipped", "help:flipped", "help"]}))
    table = views.criteria_variation(runs, gold)
    # ScaleEval Table 5: the judge's runs on the plain criterion are its "general" column.
    assert table.set_index("variant")["example_agreement"].to_dict() == {"general": 1.0, "flipped": 0.5,
                                                                         "gibberish": 1.0}
    assert len(views.criteria_variation(runs[runs["criterion"] == "help"], gold)) == 0


def test_run_costs_split_over_the_judges_a_run_names():
    configs = {"r1": {"job": {"reviewers": [{"name": "a"}, {"name": "b"}]}}, "r2": {"judge": "a"}, "r3": {"other": 1}}
    costs = views.run_costs(configs, {"r1": 1.0, "r2": 0.25, "r3": 9.0})
    assert costs.to_dict() == pytest.approx({"a": 0.75, "b": 0.5})


def test_scaleeval_pivots_pool_scenarios():
    table = pd.DataFrame({"judge": ["j", "j"], "group": ["s1", "s2"], "criterion": ["c", "c"],
                          "system_1": "x", "system_2": "y", "n": [1, 3], "example_agreement": [1.0, 0.0],
                          "judge_mode": "x", "gold_mode": "x", "system_agreement": [True, False]})
    example, system = views.scaleeval_pivots(table, None)
    assert example.loc["j"].tolist() == [1.0, 0.0, 0.25]
    assert system.loc["j"].tolist() == [1.0, 0.0, 0.5]
    assert views.scaleeval_pivots(table, "other")[0].empty


def test_gold_is_added_for_ranking_without_counting_a_debate_twice():
    stored = judgments([("1", "x", "y", "gpt4", "model_a", None)])
    gold = judgments_from_frame(pd.DataFrame({"question_id": ["1", "2"], "model_a": "x", "model_b": "y",
                                              "judge": ["debate:consensus", "adjudicator:ann"],
                                              "winner": ["model_a", "tie"]}))
    assert sorted(gold_to_add(stored["judge"], gold)["judge"]) == ["adjudicator:ann", "debate:consensus"]
    panel = judgments([("1", "x", "y", "gpt4", "model_a", None), ("1", "x", "y", "debate:scaleeval", "model_a", None)])
    # a stored panel's consensus is its verdicts already: the derived consensus is not added again
    assert sorted(gold_to_add(panel["judge"], gold)["judge"]) == ["adjudicator:ann"]
    assert len(gold_to_add(stored["judge"], gold.iloc[0:0])) == 0


# ------------------------------------------------------------------ issue 11 displays


def test_leaderboard_display_adds_rank_spread_robust_interval_and_style_columns():
    from peercore.reports import leaderboard_display

    table = pd.DataFrame({"model": ["a", "b"], "score": [1010.04, 990.0], "rank": [1, 1], "ci_low": [990.0, 970.0],
                          "ci_high": [1030.0, 1010.0], "battles": [40, 40], "sandwich_low": [991.0, 971.0],
                          "sandwich_high": [1029.0, 1009.0], "rank_worst": [2, 2], "preliminary": [False, False],
                          "plain_score": [1000.0, 1000.0], "plain_rank": [2, 1], "rank_change": [1, 0]})
    shown = leaderboard_display(table, "Bradley-Terry (Elo scale)")
    assert shown.columns.tolist() == ["rank", "model", "Bradley-Terry (Elo scale)", "95% interval", "battles",
                                      "rank spread", "robust interval", "preliminary", "plain", "plain rank",
                                      "rank change"]
    assert shown["rank spread"].tolist() == ["1–2", "1–2"]
    assert shown["robust interval"].tolist() == ["991.0 – 1029.0", "971.0 – 1009.0"]
    assert shown["rank change"].tolist() == ["▲ 1", ""]


def test_baseline_style_grouped_and_bias_displays():
    from peercore.reports import baseline_display, bias_model_display, grouped_table, self_preference_summary, \
        style_table

    baseline = pd.DataFrame({"model": ["m"], "win_rate": [12.3456], "standard_error": [1.2], "lc_win_rate": [20.0],
                             "lc_standard_error": [0.5], "discrete_win_rate": [11.0], "n_wins": [10],
                             "n_wins_base": [80], "n_draws": [2], "n_total": [92], "avg_length": [1037.0]})
    shown = baseline_display(baseline)
    assert shown.loc[0, "win rate %"] == 12.35 and shown.loc[0, "avg length"] == 1037
    style = pd.DataFrame({"coefficient": [35.26], "ci_low": [20.0], "ci_high": [50.0], "probability_shift": [0.0507]},
                         index=pd.Index(["length"], name="feature"))
    assert style_table(style).loc[0].tolist() == ["length", 35.3, "20.0 – 50.0", 0.051]
    ranking = lambda rows: Ranking(table=pd.DataFrame(rows), method="winrate", peer_weights="none",  # noqa: E731
                                   score_label="win rate", verdicts="hard", judges=("j",), n_judgments=1)
    grouped = GroupedRanking(by="category", rankings={
        "x": ranking({"model": ["a", "b"], "score": [0.6, 0.4], "rank": [1, 2]}),
        "y": ranking({"model": ["c", "a"], "score": [0.7, 0.3], "rank": [1, 2]})},
        counts=pd.DataFrame({"judgments": [2, 2]}, index=pd.Index(["x", "y"], name="category")))
    wide = grouped_table(grouped)
    assert wide["model"].tolist() == ["a", "b", "c"]
    assert wide["rank (y)"].tolist()[0] == 2 and pd.isna(wide["rank (y)"].tolist()[1])
    bias = pd.DataFrame({"judge": ["j", "j"], "bias": ["position", "self"], "coefficient": [0.1, 0.2],
                         "elo": [17.37, 34.7], "ci_low": [1.0, 2.0], "ci_high": [30.0, 60.0],
                         "probability_shift": [0.025, 0.05], "p_low": [0.001, 0.003], "p_high": [0.04, 0.08],
                         "n": [100, 100], "n_informative": [100, 30], "significant": [True, True]}
                        ).set_index(["judge", "bias"])
    assert bias_model_display(bias)["bias toward"].tolist() == ["first position", "own family"]
    assert self_preference_summary(bias)["Elo points"].tolist() == [34.7]
