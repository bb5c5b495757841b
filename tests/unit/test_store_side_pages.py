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
