"""Store-side counts behind the dashboard's pages equal the pandas computations they replace (issue 12).

At Arena scale the Leaderboard, Bias, Meta-evaluation and Efficiency pages start from the
store's pair tally (:func:`peercore.aggregates.verdict_tally`, one index scan) instead
of reading a million verdicts. Every shortcut is checked here against the computation
over the verdicts themselves, on random studies with ties, unparsed replies, several
judges (humans among them), probabilities on some verdicts, and studies with repeated
votes or debate rounds (where the shortcut must step aside).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from peercore import aggregates, bias
from peercore.store import Store
from peercore.study import Selection, Study, final_verdicts, rank

from test_aggregates import _random_study


@pytest.fixture(params=[0, 1, 2, 3])
def study(tmp_path, request):
    rng = np.random.default_rng(10 + request.param)
    store = Store(tmp_path / "pages.sqlite")
    _random_study(store, "s", rng, n=600, votes=request.param == 1, rounds=request.param == 2,
                  probabilities=request.param != 3)
    return store


def test_the_tally_equals_a_pandas_groupby_of_every_verdict(study):
    every = study.judgments("s", include_invalid=True)
    expected = (every.assign(has_p=every["p_a"].notna(), winner=every["winner"].astype(object))
                .groupby(["judge", "model_a", "model_b", "valid", "winner"], dropna=False, observed=True)
                .agg(n=("judge", "size"), n_p=("has_p", "sum")).reset_index())
    got = aggregates.verdict_tally(study, "s")
    assert int(got["n"].sum()) == len(every)
    assert (got["winner"].isna() == (got["valid"] == 0)).all()  # unparsed replies have no winner
    key = ["judge", "model_a", "model_b", "valid", "winner"]
    as_rows = lambda f: sorted(tuple(None if pd.isna(v) else (str(v) if isinstance(v, str) else int(v))  # noqa: E731
                                     for v in row) for row in f[key + ["n", "n_p"]].itertuples(index=False))
    assert as_rows(got) == as_rows(expected)
    assert set(got["winner"].dropna()) <= {"model_a", "model_b", "tie"} and "tie" in set(got["winner"])


def test_judge_health_from_counts_equals_judge_health_on_the_verdicts(study):
    handle = Study(study, "s")
    kinds = handle.kinds()
    every = study.judgments("s", include_invalid=True)
    llm = every[every["judge"].map(lambda j: kinds.get(j) == "llm").to_numpy(dtype=bool)].reset_index(drop=True)
    expected = bias.judge_health(final_verdicts(llm))
    pd.testing.assert_frame_equal(handle.health(), expected)
    assert expected["n_invalid"].sum() > 0
    # Straight from counts too: any frame of (judge, valid, winner, n) gives the table of its verdicts.
    counts = (llm.assign(winner=llm["winner"].astype(object))
              .groupby(["judge", "valid", "winner"], dropna=False).size().rename("n").reset_index())
    if "round" not in aggregates.filled_columns(study, "s"):
        pd.testing.assert_frame_equal(bias.judge_health_from_counts(counts), expected)


def test_judge_health_flags_a_stuck_judge_from_counts_as_from_verdicts():
    frame = pd.DataFrame({"question_id": [f"q{k}" for k in range(40)], "model_a": "a", "model_b": "b",
                          "judge": ["stuck"] * 30 + ["fine"] * 10,
                          "winner": ["model_b"] * 30 + ["model_a", "model_b", "tie", "model_a", "model_b"] * 2})
    from peercore.judgments import judgments_from_frame

    frame = judgments_from_frame(frame)
    expected = bias.judge_health(frame)
    counts = frame.groupby(["judge", "winner"]).size().rename("n").reset_index().assign(valid=1)
    got = bias.judge_health_from_counts(counts)
    pd.testing.assert_frame_equal(got, expected)
    assert got.loc["stuck", "flagged"] and not got.loc["fine", "flagged"]


SELECTIONS = [
    Selection(),
    Selection(kinds=("llm",)),
    Selection(kinds=("human",)),
    Selection(judges=("gpt",)),
    Selection(judges=("human:", "claude")),
    Selection(contestants=("m0", "m1", "m2")),
    Selection(judges=("gpt", "human:ann"), common_contestants=True),
]


@pytest.mark.parametrize("options", [dict(bootstrap=100), dict(bootstrap=0), dict(bootstrap=50, prior=200.0),
                                     dict(bootstrap=100, intervals="sandwich")])
def test_bradley_terry_from_the_tally_equals_ranking_the_verdicts(study, options):
    handle = Study(study, "s")
    for selection in SELECTIONS:
        direct = rank(handle.judgments(selection), method="bt", aliases=handle.aliases(),
                      flagged=handle.flagged_judges(handle.judgments(selection)["judge"].unique()), **options)
        shown = Study(study, "s").leaderboard(selection, method="bt", **options)
        pd.testing.assert_frame_equal(shown.table, direct.table, check_exact=True)
        assert shown.warnings == direct.warnings and shown.n_judgments == direct.n_judgments
        assert shown.judges == direct.judges and shown.options == direct.options


def test_the_tally_is_used_where_it_can_be_and_not_where_it_cannot(study, monkeypatch):
    handle = Study(study, "s")
    tallied = handle._tallied_battles(Selection())
    assert (tallied is None) == aggregates.column_used(study, "s", "round")  # final verdicts need the rows
    assert handle._tallied_battles(Selection(categories=("x",))) is None
    assert handle._tallied_battles(Selection(judges=("gpt",), repeated_votes="each", final_only=False)) is not None
    with pytest.raises(ValueError, match="matches no judge"):
        handle._tallied_battles(Selection(judges=("nobody",), repeated_votes="each", final_only=False))
    expected = sorted(Study(study, "s").rankable()["judge"].astype(str).unique())
    if tallied is not None:  # the page's leaderboard never reads a verdict
        monkeypatch.setattr(aggregates, "read_verdicts", lambda *a, **k: pytest.fail("read every verdict"))
        fresh = Study(study, "s")
        fresh.leaderboard(Selection(kinds=("llm",)), method="bt", bootstrap=10)
        fresh.health()
        assert fresh.rankable_judges() == expected
    assert Study(study, "s").rankable_judges() == expected


def test_repeated_votes_are_the_comparisons_majority_of_votes_changes(study):
    every = study.judgments("s", with_vote=True, include_invalid=True)
    key = ["question_id", "model_a", "model_b", "judge", "criterion", "turn", "round"]
    texts = pd.Series(["|".join(map(str, row)) for row in every[key].astype(object).itertuples(index=False)])
    repeated = set(texts[(every["vote"] != 0).to_numpy()])  # a repeated vote, readable or not, marks its comparison
    expected = every[texts.isin(repeated).to_numpy() & (every["valid"] == 1).to_numpy()]
    got = aggregates.repeated_votes(study, "s")
    assert len(got) == len(expected)
    assert sorted(map(tuple, got[["judge", "model_a", "model_b", "winner"]].astype(str).values)) == \
        sorted(map(tuple, expected[["judge", "model_a", "model_b", "winner"]].astype(str).values))
    assert aggregates.column_used(study, "s", "vote") == bool(len(repeated))


def test_progress_reaches_one_and_changes_nothing(study):
    seen = []
    handle = Study(study, "s")
    with_progress = handle.leaderboard(Selection(repeated_votes="each", final_only=False), method="bt",
                                       bootstrap=120, progress=seen.append)
    plain = Study(study, "s").leaderboard(Selection(repeated_votes="each", final_only=False), method="bt",
                                          bootstrap=120)
    pd.testing.assert_frame_equal(with_progress.table, plain.table)
    assert seen and seen[-1] == 1.0 and seen == sorted(seen)


def test_the_bias_model_from_counted_battles_equals_the_model_on_the_verdicts(study):
    handle = Study(study, "s")
    families = {"m0": "fam", "m1": "fam"}
    for selection in (Selection(), Selection(kinds=("llm",)), Selection(judges=("local:m2", "gpt"))):
        tallied = handle._tallied_battles(selection)
        if tallied is None:  # debate rounds: the page reads the verdicts, as before
            assert aggregates.column_used(study, "s", "round")
            continue
        chosen = handle.judgments(selection)
        judges = set(chosen["judge"])
        aliases = {j: m for j, m in handle.aliases().items() if j in judges}
        assert "local:m2" not in judges or aliases.get("local:m2") == "m2"  # a self term is estimated
        direct = bias.judge_bias_model(chosen, aliases=aliases, families=families)
        counted = bias.judge_bias_model(tallied[0], aliases=aliases, families=families)
        # Sums over a few thousand weighted rows instead of a million single ones: equal to rounding error.
        pd.testing.assert_frame_equal(counted.table, direct.table, check_exact=False, rtol=1e-9, atol=1e-9)
        pd.testing.assert_series_equal(counted.ratings, direct.ratings, check_exact=False, rtol=1e-9)
        assert counted.table["n"].tolist() == direct.table["n"].tolist()
        assert counted.table["n_informative"].tolist() == direct.table["n_informative"].tolist()


def test_the_bias_page_model_comes_from_the_tally_without_answers(tmp_path, monkeypatch):
    store = Store(tmp_path / "noanswers.sqlite")
    _random_study(store, "s", np.random.default_rng(5), n=500, votes=True)
    store.connect().execute("DELETE FROM answers")
    store.connect().commit()
    expected = bias.judge_bias_model(Study(store, "s").judgments(Selection()), aliases={"local:m2": "m2"})
    monkeypatch.setattr(aggregates, "read_verdicts", lambda *a, **k: pytest.fail("read every verdict"))
    got = Study(store, "s").judge_bias(Selection())
    pd.testing.assert_frame_equal(got.table, expected.table, check_exact=False, rtol=1e-9, atol=1e-9)


def test_majority_of_numbered_votes_equals_the_majority_of_every_row(study):
    from peercore.study import majority_of_votes

    every = study.judgments("s", with_vote=True)
    pd.testing.assert_frame_equal(majority_of_votes(every, numbered_votes=True), majority_of_votes(every))
    shuffled = every.sample(frac=1.0, random_state=1).reset_index(drop=True)
    pd.testing.assert_frame_equal(majority_of_votes(shuffled, numbered_votes=True), majority_of_votes(shuffled))


def test_usable_questions_per_judge_equal_the_candidates_counted_in_pandas(study):
    frame = study.judgments("s")
    sizes = aggregates.question_judge_sizes(frame)
    expected = sizes[sizes["candidates"] >= 3].groupby("judge").size()
    got = aggregates.questions_with_three_candidates(study, "s")
    assert got.to_dict() == {str(k): int(v) for k, v in expected.items()}
    assert list(got.index) == sorted(got.index)


def _llm_only_study(path) -> Store:
    """LLM judges only (ties, unparsed replies, probabilities on some verdicts, repeated votes): no gold, no humans."""
    store = Store(path)
    rng = np.random.default_rng(3)
    store.create_study("s")
    n = 300
    frame = pd.DataFrame({"question_id": [f"q{int(k) % 30:02d}" for k in range(n)],
                          "model_a": rng.choice(["m0", "m1"], n), "model_b": rng.choice(["m2", "m3", "m4"], n),
                          "judge": rng.choice(["gpt", "claude", "local:m2"], n),
                          "winner": rng.choice(["model_a", "model_b", "tie"], n)})
    frame = frame.drop_duplicates(["question_id", "model_a", "model_b", "judge"]).reset_index(drop=True)
    frame["p_a"] = np.where(rng.random(len(frame)) < 0.3, rng.random(len(frame)), np.nan)
    bad = rng.random(len(frame)) < 0.15
    frame["valid"] = np.where(bad, 0, 1)
    frame.loc[bad, "winner"] = None
    frame.loc[bad, "p_a"] = np.nan
    frame["raw"] = np.where(bad, "no verdict", None)
    store.add_judgments("s", frame)
    store.add_judgments("s", frame[frame["valid"] == 1].head(10).assign(winner="tie", p_a=np.nan, vote=1))
    return store


def test_meta_evaluation_from_counts_equals_the_computation_on_the_verdicts(tmp_path, monkeypatch):
    from peercore.ui import data

    path = tmp_path / "meta.sqlite"
    store = _llm_only_study(path)
    rev = store.revision("s")
    counted = data._meta_from_counts(str(path), "s", rev, None)
    assert counted is not None
    monkeypatch.setattr(data, "_meta_from_counts", lambda *a, **k: None)
    data.meta_evaluation.clear()
    direct = data.meta_evaluation(str(path), "s", rev, None)
    assert set(counted) == set(direct)
    for key in counted:
        if key == "costs":
            pd.testing.assert_frame_equal(counted[key]["table"], direct[key]["table"])
            assert counted[key]["axis"] == direct[key]["axis"] and counted[key]["caption"] == direct[key]["caption"]
        elif isinstance(direct[key], pd.DataFrame):
            assert len(counted[key]) == len(direct[key]) == 0
        else:
            assert counted[key] == direct[key], key
    assert counted["n_judges"] == 3 and counted["costs"]["table"]["cost"].sum() == len(
        store.judgments("s", include_invalid=True))


def test_meta_evaluation_reads_the_verdicts_when_there_are_human_votes(study):
    from peercore.ui import data

    assert data._meta_from_counts(str(study.path), "s", study.revision("s"), None) is None


def test_efficiency_judges_from_counts_equal_the_pandas_counts(tmp_path):
    from peercore.ui import data

    path = tmp_path / "eff.sqlite"
    store = _llm_only_study(path)
    frame = store.judgments("s")
    sizes = aggregates.question_judge_sizes(frame)
    usable = sizes[sizes["candidates"] >= 3].groupby("judge").size()
    with_p = frame[frame["p_a"].notna()].groupby("judge").size().reindex(usable.index).fillna(0)
    labels = data.efficiency_judges(str(path), "s", store.revision("s"))
    for judge in usable.index:
        assert labels[judge].startswith(f"{judge} ({usable[judge]} questions")
        assert ("with probabilities" in labels[judge]) == bool(with_p[judge])
    assert set(labels) == set(usable.index) | {data.POOLED}


def _swap_study(path, *, seed: int = 0) -> Store:
    """Three LLM judges (none a contestant), pairs in both orders, ties, unparsed replies, repeated votes that
    disagree, no probabilities, no answers: what the Bias page computes from the store's counts."""
    store = Store(path)
    rng = np.random.default_rng(seed)
    store.create_study("s")
    rows = []
    for q in range(60):
        for _ in range(6):
            a, b = rng.choice(5, 2, replace=False)
            rows.append({"question_id": f"q{q:02d}", "model_a": f"m{a}", "model_b": f"m{b}",
                         "judge": str(rng.choice(["gpt", "claude", "llama"])),
                         "winner": str(rng.choice(["model_a", "model_b", "tie"], p=[0.5, 0.3, 0.2]))})
    frame = pd.DataFrame(rows).drop_duplicates(["question_id", "model_a", "model_b", "judge"]).reset_index(drop=True)
    bad = rng.random(len(frame)) < 0.1
    frame["valid"] = np.where(bad, 0, 1)
    frame.loc[bad, "winner"] = None
    frame["raw"] = np.where(bad, "no verdict", None)
    store.add_judgments("s", frame)
    repeats = frame[frame["valid"] == 1].head(30)
    store.add_judgments("s", repeats.assign(vote=1, winner=np.where(np.arange(30) % 2, "model_b", "tie")))
    store.add_judgments("s", repeats.head(10).assign(vote=2, winner="model_b"))
    return store


@pytest.mark.parametrize("seed", [0, 1])
def test_bias_tables_from_counts_equal_the_tables_of_the_verdicts(tmp_path, monkeypatch, seed):
    from peercore import tallies
    from peercore.ui import data

    path = tmp_path / "swap.sqlite"
    store = _swap_study(path, seed=seed)
    rev = store.revision("s")
    for selection in (Selection(judges=("gpt", "claude", "llama")), Selection(judges=("gpt",)),
                      Selection(judges=("claude", "llama"), repeated_votes="each")):
        counted = data._bias_tables_from_counts(str(path), "s", rev, selection)
        assert counted is not None
        chosen = Study(store, "s").judgments(selection)
        pd.testing.assert_frame_equal(counted["position"], bias.position_bias(chosen))
        pd.testing.assert_frame_equal(counted["swap"], bias.swap_consistency(chosen))
        pd.testing.assert_frame_equal(counted["swap"], tallies.swap_consistency(chosen))
        assert counted["swap"]["n_pairs"].sum() > 0
        with monkeypatch.context() as patch:
            patch.setattr(data, "_bias_tables_from_counts", lambda *a, **k: None)
            data.bias_tables.clear()
            direct = data.bias_tables(str(path), "s", rev, selection)
        for key in ("position", "swap", "health"):
            pd.testing.assert_frame_equal(counted[key], direct[key])
        for key in ("self_matrix", "self_summary", "debiased", "length"):
            assert counted[key] is None and direct[key] is None
        assert counted["aliases"] == direct["aliases"] == {} and len(counted["tau"]) == len(direct["tau"]) == 0


def test_bias_tables_read_the_verdicts_when_a_judge_is_a_contestant_or_gave_probabilities(study, tmp_path):
    from peercore.ui import data

    assert data._bias_tables_from_counts(str(study.path), "s", study.revision("s"), Selection()) is None
    path = tmp_path / "p.sqlite"
    store = _llm_only_study(path)  # probabilities on some verdicts
    assert data._bias_tables_from_counts(str(path), "s", store.revision("s"), Selection(judges=("gpt",))) is None


def test_the_tally_is_a_covering_index_scan_of_migration_8(study):
    connection = study.connect()
    assert connection.execute("SELECT 1 FROM schema_migrations WHERE version = 8").fetchone() is not None
    plan = " ".join(str(row[-1]) for row in connection.execute(
        "EXPLAIN QUERY PLAN SELECT judge, model_a, model_b, valid, winner, COUNT(*), COUNT(p_a) FROM verdicts "
        "WHERE study_id = ? GROUP BY judge, model_a, model_b, valid, winner", (study.study_id("s"),)))
    assert "COVERING INDEX verdicts_tally" in plan and "TEMP B-TREE" not in plan, plan
