"""Store-side aggregates and the Study's single read equal the pandas computations they replace (issue 12).

Random studies (several judges, humans with odd capitalisation, unparsed replies,
probabilities on some verdicts, answers by a model that never battled, repeated votes,
debate rounds) are written through the Store; every aggregate of :mod:`peercore.aggregates`
must equal what the pandas code computes from :meth:`Store.judgments`, and the
:class:`peercore.study.Study` shortcuts (one read of the verdicts, the majority of votes
skipped when nobody voted twice, the last few selections kept) must return the same
frames as the plain functions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from peercore import aggregates
from peercore.efficiency import efficiency_curve, problems_from_judgments
from peercore.store import Store
from peercore.study import Selection, Study, select

MODELS = ["m0", "m1", "m2", "m3", "m4"]
JUDGES = ["gpt", "claude", "human:ann", "HUMAN:Bob", "humans-not", "local:m2"]


def _random_study(store: Store, name: str, rng: np.random.Generator, *, n: int = 400, votes: bool = False,
                  rounds: bool = False, probabilities: bool = True) -> None:
    store.create_study(name)
    rows = []
    for _ in range(n):
        a, b = rng.choice(len(MODELS), 2, replace=False)
        winner = rng.choice(["model_a", "model_b", "tie"])
        row = {"question_id": f"q{int(rng.integers(0, 40)):02d}", "model_a": MODELS[a], "model_b": MODELS[b],
               "judge": JUDGES[int(rng.integers(len(JUDGES)))], "winner": winner}
        if probabilities and rng.random() < 0.3:
            row["p_a"] = float(rng.random())
        if rounds:
            row["round"] = int(rng.integers(0, 3))
        rows.append(row)
    frame = pd.DataFrame(rows)
    if not rounds:
        frame = frame.drop_duplicates(["question_id", "model_a", "model_b", "judge"])
    else:
        frame = frame.drop_duplicates(["question_id", "model_a", "model_b", "judge", "round"])
    if votes:  # a few repeated votes on the first comparisons
        repeat = frame.head(20).assign(vote=1, winner="tie")
        frame = pd.concat([frame.assign(vote=0), repeat], ignore_index=True)
    bad = rng.random(len(frame)) < 0.1
    frame["valid"] = np.where(bad, 0, 1)
    frame.loc[bad, "winner"] = None
    frame.loc[bad, "p_a"] = np.nan if "p_a" in frame.columns else None
    frame["raw"] = np.where(bad, "no verdict here", None)
    store.add_judgments(name, frame)
    store.add_answers(name, pd.DataFrame({"question_id": ["q00", "q01"], "model": ["m1", "lonely"],
                                          "answer": ["one", "two"]}))


@pytest.fixture(params=[0, 1, 2])
def study(tmp_path, request):
    rng = np.random.default_rng(request.param)
    store = Store(tmp_path / "agg.sqlite")
    _random_study(store, "s", rng, votes=request.param == 1, rounds=request.param == 2,
                  probabilities=request.param != 2)
    store.create_study("empty")
    return store


def test_summary_equals_the_stores_summary(study):
    for name in ("s", "empty"):
        assert aggregates.summary(study, name) == study.summary(name)


def test_verdict_counts_equal_a_pandas_groupby(study):
    every = study.judgments("s", include_invalid=True)
    expected = (every.assign(has_p=every["p_a"].notna())
                .groupby(["judge", "model_a", "model_b", "valid"], observed=True)
                .agg(n=("judge", "size"), n_p=("has_p", "sum")).reset_index())
    got = aggregates.verdict_counts(study, "s")
    expected = expected.sort_values(["judge", "model_a", "model_b", "valid"]).reset_index(drop=True)
    assert got[["judge", "model_a", "model_b"]].astype(str).values.tolist() == \
        expected[["judge", "model_a", "model_b"]].astype(str).values.tolist()
    assert got["valid"].tolist() == expected["valid"].astype(int).tolist()
    assert got["n"].tolist() == expected["n"].astype(int).tolist()
    assert got["n_p"].tolist() == expected["n_p"].astype(int).tolist()
    assert len(aggregates.verdict_counts(study, "empty")) == 0


def test_contestants_and_probabilities_equal_the_pandas_computation(study):
    valid = study.judgments("s")
    expected = sorted(set(valid["model_a"]) | set(valid["model_b"]) | set(study.answers("s")["model"]))
    assert aggregates.contestants(study, "s") == expected
    assert "lonely" in expected
    assert aggregates.has_probabilities(study, "s") == bool(valid["p_a"].notna().any())
    counts = aggregates.verdict_counts(study, "s")
    assert aggregates.has_probabilities(study, "s", counts=counts) == bool(valid["p_a"].notna().any())
    assert Study(study, "s").has_probabilities() == bool(valid["p_a"].notna().any())
    loaded = Study(study, "s")
    loaded.stored_judgments()  # read first: the answer comes from the table in hand
    assert loaded.has_probabilities() == bool(valid["p_a"].notna().any())
    assert aggregates.contestants(study, "empty") == [] and not aggregates.has_probabilities(study, "empty")


def test_candidates_per_judge_and_question_equal_groupby_apply(study):
    frame = study.judgments("s")
    expected = frame.groupby(["judge", "question_id"]).apply(
        lambda g: len(set(g["model_a"]) | set(g["model_b"])), include_groups=False)
    got = aggregates.question_judge_sizes(frame).set_index(["judge", "question_id"])["candidates"]
    assert got.sort_index().to_dict() == expected.sort_index().to_dict()
    assert len(aggregates.question_judge_sizes(frame.iloc[:0])) == 0


def test_the_study_reads_once_and_returns_what_the_store_and_select_return(study):
    handle = Study(study, "s")
    pd.testing.assert_frame_equal(handle.stored_judgments(), study.judgments("s", with_vote=True))
    assert handle.counts() == study.summary("s")
    everything = study.judgments("s", include_invalid=True, with_vote=True)
    for selection in (Selection(), Selection(judges=("gpt", "human:")), Selection(kinds=("llm",)),
                      Selection(contestants=("m0", "m1", "m2"), final_only=False),
                      Selection(repeated_votes="each"), Selection(common_contestants=True)):
        kinds = handle.kinds()
        pd.testing.assert_frame_equal(handle.judgments(selection),
                                      select(study.judgments("s", with_vote=True), selection, kinds=kinds))
        pd.testing.assert_frame_equal(handle.judgments(selection, include_invalid=True),
                                      select(everything, selection, kinds=kinds))
        # asked again: the kept frame, the same numbers
        pd.testing.assert_frame_equal(handle.judgments(selection), select(study.judgments("s", with_vote=True),
                                                                          selection, kinds=kinds))


def test_a_write_is_seen_at_once(study):
    handle = Study(study, "s")
    before = handle.counts()["judgments"], len(handle.judgments(Selection()))
    study.add_judgments("s", pd.DataFrame({"question_id": ["new"], "model_a": ["m0"], "model_b": ["m1"],
                                           "judge": ["gpt"], "winner": ["tie"]}))
    assert handle.counts()["judgments"] == before[0] + 1
    assert len(handle.judgments(Selection())) == before[1] + 1
    assert handle.contestants() == aggregates.contestants(study, "s")


def test_problems_limit_equals_slicing_and_progress_changes_nothing(study):
    frame = study.judgments("s")
    for judge in ("gpt", "claude"):
        rows = frame[frame["judge"] == judge]
        everything = problems_from_judgments(rows)
        for limit in (0, 1, 3, 10, 1000):
            limited = problems_from_judgments(rows, limit=limit)
            assert [p.question_id for p in limited] == [p.question_id for p in everything[:limit]]
            for a, b in zip(limited, everything):
                assert a.candidates == b.candidates and np.array_equal(a.p, b.p) and np.array_equal(a.i, b.i)
    rows = frame[frame["judge"] == "gpt"]
    plain = efficiency_curve(rows, repeats=3, seed=0, max_questions=8)
    seen = []
    tracked = efficiency_curve(rows, repeats=3, seed=0, max_questions=8,
                               progress=lambda fraction, partial: seen.append((fraction, partial)))
    pd.testing.assert_frame_equal(plain, tracked)
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and fractions[0] < 1.0
    # A partial result holds whole strategies only, with the numbers of the final curve.
    partials = [p for f, p in seen if f < 1.0 and len(p)]
    assert partials and set(partials[0]["strategy"]) == {"random"}
    pd.testing.assert_frame_equal(partials[0], plain[plain["strategy"] == "random"].reset_index(drop=True))


@pytest.mark.parametrize("seed", range(5))
def test_row_groups_partition_rows_as_a_groupby_does(seed):
    from peercore.study import _row_groups

    rng = np.random.default_rng(seed)
    n = 300
    frame = pd.DataFrame({
        "a": pd.array(rng.choice(["x", "y", "z", None], n), dtype="str"),
        "b": pd.array(rng.integers(0, 3, n)),
        "c": pd.array(np.where(rng.random(n) < 0.3, None, rng.choice(["p", "q"], n)), dtype="str"),
        "d": rng.integers(0, 50 if seed % 2 else 2, n),
    })
    columns = ["a", "b", "c", "d"][: 2 + seed % 3]
    got = _row_groups(frame, columns)
    expected = frame.groupby(columns, dropna=False, sort=False).ngroup().to_numpy()
    assert got.min() >= 0 and got.max() < n
    # the same partition: equal ids exactly where the groupby's ids are equal
    assert np.array_equal(got[:, None] == got[None, :], expected[:, None] == expected[None, :])


def _majority_reference(judgments: pd.DataFrame) -> pd.DataFrame:
    """majority_of_votes as it was before the one-pass version (main at ada9ce6), for comparison."""
    from peercore.judgments import COLUMNS, concat

    vote = {"model_a": 1, "tie": 0, "model_b": -1}
    frame = judgments.drop(columns=["vote"], errors="ignore")
    if len(frame) == 0:
        return frame
    key = ["question_id", "model_a", "model_b", "judge", "criterion", "turn", "round"]
    group = frame.groupby(key, dropna=False, sort=False).ngroup().to_numpy()
    sizes = np.bincount(group)
    duplicated = sizes[group] > 1
    if not duplicated.any():
        return frame
    single, repeated = frame[~duplicated], frame[duplicated]
    repeated_group = group[duplicated]
    score = repeated["winner"].map(vote).to_numpy(dtype=float)
    n_groups = len(sizes)
    total = np.bincount(repeated_group, score, minlength=n_groups)
    p = repeated["p_a"].to_numpy(dtype=float)
    given = ~np.isnan(p)
    p_sum = np.bincount(repeated_group[given], p[given], minlength=n_groups)
    p_count = np.bincount(repeated_group[given], minlength=n_groups)
    first_mask = ~pd.Series(repeated_group).duplicated(keep="first").to_numpy()
    first = repeated[first_mask].copy()
    first_group = repeated_group[first_mask]
    votes = total[first_group]
    first["winner"] = np.where(votes > 0, "model_a", np.where(votes < 0, "model_b", "tie"))
    with np.errstate(invalid="ignore", divide="ignore"):
        first["p_a"] = np.where(p_count[first_group] > 0, p_sum[first_group] / np.maximum(p_count[first_group], 1),
                                np.nan)
    first["rationale"] = pd.array([None] * len(first), dtype="str")
    out = pd.concat([single, first]).sort_index(kind="stable")
    extras = [c for c in out.columns if c not in COLUMNS]
    canonical = concat([out[list(COLUMNS)]])
    for column in extras:
        canonical[column] = out[column].to_numpy()
    return canonical


@pytest.mark.parametrize("seed", range(4))
def test_majority_of_votes_equals_the_reference(tmp_path, seed):
    from peercore.study import majority_of_votes

    rng = np.random.default_rng(seed)
    store = Store(tmp_path / "votes.sqlite")
    _random_study(store, "v", rng, n=600, votes=True, rounds=seed % 2 == 1)
    for frame in (store.judgments("v", with_vote=True), store.judgments("v", include_invalid=True, with_vote=True)):
        frame = frame.assign(extra=np.arange(len(frame)))
        got = majority_of_votes(frame)
        assert len(got) < len(frame)  # the repeated votes were combined
        pd.testing.assert_frame_equal(got, _majority_reference(frame))
        shuffled = frame.sample(frac=1.0, random_state=seed)  # an index that does not increase: the plain path
        pd.testing.assert_frame_equal(majority_of_votes(shuffled), _majority_reference(shuffled))


def test_judges_equal_the_stores_judges(study):
    study.add_judges("s", [{"name": "gpt", "kind": "llm", "model_alias": "m0", "settings": {"t": 0.7}},
                           {"name": "registered-only", "kind": "human"}, {"name": "HUMAN:Bob", "kind": "other"}])
    for name in ("s", "empty"):
        pd.testing.assert_frame_equal(aggregates.judges(study, name), study.judges(name))
    study.add_judges("empty", [{"name": "lonely"}])
    pd.testing.assert_frame_equal(aggregates.judges(study, "empty"), study.judges("empty"))


def test_the_studys_judges_equal_the_stores_however_they_are_counted(study):
    study.add_judges("s", [{"name": "gpt", "kind": "llm", "model_alias": "m0"}, {"name": "registered-only"}])
    expected = study.judges("s")
    counted = Study(study, "s")
    counted.counts()  # verdict counts in hand
    loaded = Study(study, "s")
    loaded.stored_judgments()  # every verdict in hand
    for handle in (Study(study, "s"), counted, loaded):
        pd.testing.assert_frame_equal(handle._judge_rows(), expected)


def test_judges_without_any_alias_equal_the_stores_judges(tmp_path):
    store = Store(tmp_path / "plain.sqlite")
    _random_study(store, "p", np.random.default_rng(5), n=100)
    pd.testing.assert_frame_equal(aggregates.judges(store, "p"), store.judges("p"))


@pytest.mark.parametrize("seed", range(4))
def test_swap_consistency_by_codes_equals_the_reference(tmp_path, seed):
    from peercore import bias, tallies

    rng = np.random.default_rng(seed)
    store = Store(tmp_path / "swap.sqlite")
    _random_study(store, "w", rng, n=900, votes=seed % 2 == 0, rounds=seed == 3)
    frame = store.judgments("w")
    # both orders of many pairs, a turn and a criterion on some verdicts
    mirrored = frame.head(300).rename(columns={"model_a": "model_b", "model_b": "model_a"})
    mirrored = mirrored.assign(winner=rng.choice(["model_a", "model_b", "tie"], len(mirrored)))
    both = pd.concat([frame, mirrored], ignore_index=True)
    both["turn"] = pd.array(np.where(rng.random(len(both)) < 0.2, 2, 1), dtype="Int64")
    both.loc[rng.random(len(both)) < 0.5, "turn"] = pd.NA
    both["criterion"] = pd.array(np.where(rng.random(len(both)) < 0.3, "helpful", None), dtype="str")
    expected = bias.swap_consistency(both)
    assert expected["n_pairs"].sum() > 50
    pd.testing.assert_frame_equal(tallies.swap_consistency(both), expected)
    pd.testing.assert_frame_equal(tallies.swap_consistency(frame), bias.swap_consistency(frame))


@pytest.mark.parametrize("include_invalid", [False, True])
@pytest.mark.parametrize("with_vote", [False, True])
def test_read_verdicts_equals_the_stores_read(study, include_invalid, with_vote, monkeypatch):
    expected = study.judgments("s", include_invalid=include_invalid, with_vote=with_vote)
    pd.testing.assert_frame_equal(aggregates.read_verdicts(study, "empty", include_invalid=include_invalid,
                                                           with_vote=with_vote),
                                  study.judgments("empty", include_invalid=include_invalid, with_vote=with_vote))

    def no_fallback(*args, **kwargs):
        raise AssertionError("read_verdicts fell back to Store.judgments")

    monkeypatch.setattr(study, "judgments", no_fallback)
    got = aggregates.read_verdicts(study, "s", include_invalid=include_invalid, with_vote=with_vote)
    pd.testing.assert_frame_equal(got, expected)


def test_read_verdicts_keeps_every_optional_column_and_odd_text(tmp_path):
    store = Store(tmp_path / "odd.sqlite")
    store.create_study("o")
    rng = np.random.default_rng(7)
    n = 200
    store.add_judgments("o", pd.DataFrame({
        "question_id": [f"q-é-{k % 17}-😀,''" for k in range(n)], "model_a": "a,b", "model_b": "c",
        "judge": rng.choice(["j1", "j2"], n), "winner": rng.choice(["model_a", "model_b", "tie"], n),
        "p_a": np.where(rng.random(n) < 0.5, rng.random(n), np.nan), "criterion": rng.choice(["x", "y,z"], n),
        "turn": rng.integers(1, 3, n), "round": np.arange(n) // 17,
        "rationale": np.where(rng.random(n) < 0.5, "because, '' é\\n", None), "vote": 0,
    }))
    expected = {invalid: store.judgments("o", include_invalid=invalid, with_vote=True) for invalid in (False, True)}
    store.judgments = None  # the fast path only
    for invalid in (False, True):
        pd.testing.assert_frame_equal(aggregates.read_verdicts(store, "o", include_invalid=invalid, with_vote=True),
                                      expected[invalid])
