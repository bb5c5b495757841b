"""Leaderboard robustness audit (Huang, Shen, Wei & Broderick 2026, "Dropping Just a Handful of Preferences
Can Change Top Large Language Model Rankings", arXiv 2508.11847).

Section 3 of the paper: the AMIP (influence) approximation of each vote's effect on a
rating difference, votes removed in that order, the removal checked by refitting. Every
check of a removal here refits with the product's own ranking functions
(:func:`peercore.ranking.bradley_terry.bradley_terry`, :func:`peercore.ranking.winrate.win_rates`)
on the judgment table with the listed rows removed; the brute-force oracles search every
removal of up to a few votes. The speed at 1,000,000 battles is measured in
``benchmarks/audit_speed.py``.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import peercore.audit as audit_module
from peerboard_testing import require_dataset
from peercore.audit import adjacent_pairs, audit_bradley_terry, audit_win_rate, vote_influence
from peercore.io.importer import read_path
from peercore.judgments import judgments_from_frame
from peercore.ranking._battles import Battles, encode
from peercore.ranking.bradley_terry import bradley_terry
from peercore.ranking.winrate import win_rates

_WINNER = {1.0: "model_a", 0.5: "tie", 0.0: "model_b"}


def _synthetic(seed, n_models, n_battles, *, spread=0.3, ties=0.1, pair_skew=False, judges=1):
    rng = np.random.default_rng(seed)
    strength = rng.normal(size=n_models) * spread
    if pair_skew:  # some pairs met far more often (what LMArena's reweighting corrects)
        pairs = np.array([(i, j) for i in range(n_models) for j in range(n_models) if i != j])
        p = rng.dirichlet(np.full(len(pairs), 0.5))
        chosen = pairs[rng.choice(len(pairs), n_battles, p=p)]
        a, b = chosen[:, 0], chosen[:, 1]
    else:
        a = rng.integers(0, n_models, n_battles)
        b = (a + rng.integers(1, n_models, n_battles)) % n_models
    win = rng.random(n_battles) < 1 / (1 + np.exp(-(strength[a] - strength[b])))
    score = np.where(rng.random(n_battles) < ties, 0.5, win.astype(float))
    judge = rng.integers(0, judges, n_battles)
    return a, b, score, judge


def _frame(a, b, score, judge=None, names=None):
    names = np.array([f"m{k:02d}" for k in range(max(a.max(), b.max()) + 1)]) if names is None else names
    judge = np.zeros(len(a), dtype=int) if judge is None else judge
    return judgments_from_frame(pd.DataFrame({
        "question_id": np.arange(len(a)).astype(str), "model_a": names[a], "model_b": names[b],
        "judge": np.array([f"j{k}" for k in range(judge.max() + 1)])[judge],
        "winner": [_WINNER[float(s)] for s in score]}))


def _bt_gap_after(frame, rows, higher, lower, **options):
    keep = np.ones(len(frame), dtype=bool)
    keep[rows] = False
    ratings = bradley_terry(frame[keep].reset_index(drop=True), **options)
    names = encode(frame).models
    return ratings[names[higher]] - ratings[names[lower]]


# ------------------------------------------------------------------ Bradley-Terry: verified


@pytest.mark.parametrize("options", [{}, {"reweight": True}, {"prior": 100.0}, {"reweight": True, "prior": 50.0}])
def test_every_verified_pair_swaps_when_its_votes_are_removed(options):
    a, b, score, _ = _synthetic(0, 5, 1200, pair_skew=True)
    frame = _frame(a, b, score)
    pairs = audit_bradley_terry(a, b, score, n_models=5, **options)
    ratings = bradley_terry(frame, **options)
    names = encode(frame).models
    # first pair = ranks 1 and 2, then 2-3, ...
    assert [(names[p.higher], names[p.lower]) for p in pairs] == list(zip(ratings.sort_values(ascending=False).index[:-1],
                                                                        ratings.sort_values(ascending=False).index[1:]))
    assert all(p.verified for p in pairs)
    for p in pairs:
        assert p.drop == len(p.rows) == len(np.unique(p.rows))
        assert p.share == pytest.approx(p.drop / len(a))
        between = ((np.minimum(a, b) == min(p.higher, p.lower)) & (np.maximum(a, b) == max(p.higher, p.lower))).sum()
        assert p.pair_share == pytest.approx(p.drop / between)
        after = _bt_gap_after(frame, p.rows, p.higher, p.lower, **options)
        assert after < 0 and after == pytest.approx(p.gap_after, abs=1e-6)
        assert p.gap == pytest.approx(ratings[names[p.higher]] - ratings[names[p.lower]], abs=1e-6)


def test_verified_with_judge_weights():
    a, b, score, judge = _synthetic(1, 4, 900, judges=3)
    frame = _frame(a, b, score, judge)
    weights = {"j0": 0.5, "j1": 0.2, "j2": 0.3}
    per_battle = np.array([0.5, 0.2, 0.3])[judge] / np.mean([0.5, 0.2, 0.3])
    for p in audit_bradley_terry(a, b, score, n_models=4, weights=per_battle):
        assert p.verified and _bt_gap_after(frame, p.rows, p.higher, p.lower, weights=weights) < 0


def test_one_vote_fewer_does_not_swap():
    # The count is the first prefix (in influence order) whose refit swaps: the prefix one shorter does not.
    a, b, score, _ = _synthetic(2, 6, 3000)
    frame = _frame(a, b, score)
    for p in audit_bradley_terry(a, b, score, n_models=6):
        influence = vote_influence(a, b, score, n_models=6, higher=p.higher, lower=p.lower)
        assert influence[p.rows].max() <= np.sort(influence)[p.drop - 1] + 1e-12  # the most helpful votes
        shorter = p.rows[np.argsort(influence[p.rows], kind="stable")][:-1]
        assert _bt_gap_after(frame, shorter, p.higher, p.lower) >= 0
        assert p.amip_drop is not None  # the linear prediction (its accuracy: benchmarks/audit_speed.py)


@pytest.mark.parametrize("options", [{}, {"reweight": True}])
def test_influence_is_the_first_order_change_of_a_single_removal(options):
    # Section 3, the AMIP of a contrast: -w (y - p)(u_i - u_j) with u = H^-1 (e_h - e_l); with LMArena's
    # reweighting the removal also raises the weight of the pair's other battles (pairs of > 50 battles here).
    a, b, score, _ = _synthetic(3, 4, 3000, pair_skew=True)
    frame = _frame(a, b, score)
    names = encode(frame).models
    full = bradley_terry(frame, **options)
    influence = vote_influence(a, b, score, n_models=4, higher=0, lower=1, **options)
    for row in range(8):
        refit = bradley_terry(frame.drop(index=row).reset_index(drop=True), **options)
        change = (refit[names[0]] - refit[names[1]]) - (full[names[0]] - full[names[1]])
        assert influence[row] == pytest.approx(change, rel=0.02, abs=5e-4)  # Elo points


def _bt_brute_force(a, b, score, n_models, higher, lower, max_drop):
    """Fewest votes whose removal ranks ``lower`` above ``higher``: every removal, by category counts.

    Battles of one category (pair, outcome) are exchangeable, so trying every count per
    category tries every removal; each is refitted by ``bradley_terry`` on the battles left.
    """
    key = np.minimum(a, b) * 10 + np.maximum(a, b) + 100 * np.where(a < b, score, 1 - score)
    kinds = [np.flatnonzero(key == k) for k in np.unique(key)]
    models = tuple(f"m{k}" for k in range(n_models))
    for total in range(1, max_drop + 1):
        for counts in itertools.product(*[range(min(len(k), total) + 1) for k in kinds]):
            if sum(counts) != total:
                continue
            keep = np.ones(len(a), dtype=bool)
            keep[np.concatenate([k[:c] for k, c in zip(kinds, counts)]).astype(int)] = False
            if not ({higher, lower} <= set(a[keep]) | set(b[keep])):
                continue
            left = Battles(models, a[keep], b[keep], score[keep], ("j",), np.zeros(int(keep.sum()), dtype=np.intp))
            ratings = bradley_terry(left)
            if ratings[models[lower]] > ratings[models[higher]]:
                return total
    return None


@pytest.mark.parametrize("seed", [10, 11, 15, 16, 17])  # drops of 1 to 4 votes
def test_bradley_terry_count_against_the_brute_force_minimum(seed):
    a, b, score, _ = _synthetic(seed, 3, 14, spread=0.8, ties=0.2)
    for p in audit_bradley_terry(a, b, score, n_models=3):
        exact = _bt_brute_force(a, b, score, 3, p.higher, p.lower, max_drop=min(p.drop, 4))
        if exact is None:  # no removal of up to 4 votes swaps them
            assert p.drop > 4
            continue
        # an upper bound on the fewest; on these small cases the greedy order finds the minimum
        assert p.drop == exact


# ------------------------------------------------------------------------------ win rate


def _win_rate_brute_force(a, b, score, weight, higher, lower, max_drop):
    """Fewest votes whose removal puts ``lower`` strictly above ``higher`` by win rate (exact fractions)."""
    score = [Fraction(s).limit_denominator(4) for s in score]
    weight = [Fraction(w).limit_denominator(100) for w in weight]
    for total in range(0, max_drop + 1):
        for removed in itertools.combinations(range(len(a)), total):
            gone = set(removed)
            rate = {}
            for model in (higher, lower):
                points = sum((weight[r] * (score[r] if a[r] == model else 1 - score[r]))
                             for r in range(len(a)) if r not in gone and model in (a[r], b[r]))
                played = sum(1 for r in range(len(a)) if r not in gone and model in (a[r], b[r]))
                rate[model] = points / played if played else None
            if rate[higher] is not None and rate[lower] is not None and rate[lower] > rate[higher]:
                return total
    return None


@pytest.mark.parametrize("seed", range(5))
def test_win_rate_count_is_the_brute_force_minimum(seed):
    a, b, score, _ = _synthetic(20 + seed, 4, 11, spread=0.7, ties=0.25)
    for p in audit_win_rate(a, b, score, n_models=4):
        exact = _win_rate_brute_force(a, b, score, np.ones(len(a)), p.higher, p.lower, max_drop=4)
        if exact is None:
            assert p.drop is None or p.drop > 4
            continue
        assert p.drop == exact and p.verified


@pytest.mark.parametrize("seed", range(3))
def test_weighted_win_rate_count_is_the_brute_force_minimum(seed):
    # With judge weights the shared battles have no single best order: every order some
    # ratio of remaining battles gives is tried.
    a, b, score, judge = _synthetic(30 + seed, 3, 10, spread=0.5, ties=0.3, judges=3)
    weight = np.array([1.6, 0.4, 1.0])[judge]
    for p in audit_win_rate(a, b, score, n_models=3, weights=weight):
        exact = _win_rate_brute_force(a, b, score, weight, p.higher, p.lower, max_drop=4)
        assert (p.drop if p.drop is not None and p.drop <= 4 else None) == exact


def test_win_rate_removal_is_checked_with_win_rates():
    a, b, score, _ = _synthetic(5, 6, 2000)
    frame = _frame(a, b, score)
    names = encode(frame).models
    rates = win_rates(frame)
    pairs = audit_win_rate(a, b, score, n_models=6)
    assert [(names[p.higher], names[p.lower]) for p in pairs] == \
        list(zip(rates.sort_values(ascending=False).index[:-1], rates.sort_values(ascending=False).index[1:]))
    for p in pairs:
        keep = np.ones(len(a), dtype=bool)
        keep[p.rows] = False
        after = win_rates(frame[keep].reset_index(drop=True))
        assert p.verified and after[names[p.lower]] > after[names[p.higher]]
        assert after[names[p.higher]] - after[names[p.lower]] == pytest.approx(p.gap_after)


# ------------------------------------------------------------------------ PRD's human votes


@pytest.fixture(scope="module")
def prd_human_votes():
    folder = require_dataset("prd_vicuna80")
    judgments = read_path(folder).judgments
    five = {"gpt4", "gpt35", "claude", "bard", "vicuna-13b"}
    human = judgments[(judgments["judge"] == "human:prd") & judgments["model_a"].isin(five)
                      & judgments["model_b"].isin(five)].reset_index(drop=True)
    assert len(human) == 1760  # PRD's 1,760 human votes among its five models
    return human


@pytest.mark.parametrize("options", [{}, {"prior": 200.0}])
def test_prd_human_votes_bradley_terry(prd_human_votes, options):
    battles = encode(prd_human_votes)
    pairs = audit_bradley_terry(battles.a, battles.b, battles.score_a, n_models=battles.n_models, **options)
    assert len(pairs) == 4
    for p in pairs:
        assert p.verified
        assert _bt_gap_after(prd_human_votes, p.rows, p.higher, p.lower, **options) < 0


def test_prd_human_votes_win_rate(prd_human_votes):
    battles = encode(prd_human_votes)
    for p in audit_win_rate(battles.a, battles.b, battles.score_a, n_models=battles.n_models):
        keep = np.ones(len(prd_human_votes), dtype=bool)
        keep[p.rows] = False
        after = win_rates(prd_human_votes[keep].reset_index(drop=True))
        assert p.verified and after[battles.models[p.lower]] > after[battles.models[p.higher]]


# ---------------------------------------------------------------------------- options


def test_anchor_changes_nothing_and_pairs_are_oriented():
    a, b, score, _ = _synthetic(7, 4, 600)
    plain = audit_bradley_terry(a, b, score, n_models=4)
    anchored = audit_bradley_terry(a, b, score, n_models=4, anchor=2)
    assert [(p.higher, p.lower, p.drop) for p in plain] == [(p.higher, p.lower, p.drop) for p in anchored]
    first = plain[0]
    again = audit_bradley_terry(a, b, score, n_models=4, pairs=[(first.lower, first.higher)])
    assert (again[0].higher, again[0].lower, again[0].drop) == (first.higher, first.lower, first.drop)


def test_cap_stops_the_search():
    a, b, score, _ = _synthetic(8, 3, 3000, spread=1.0)
    far = audit_bradley_terry(a, b, score, n_models=3, cap=3)
    assert all(p.drop is None and not p.verified and len(p.rows) == 0 for p in far)
    assert all(p.drop is None for p in audit_win_rate(a, b, score, n_models=3, cap=3))


def test_adjacent_pairs_best_first():
    assert adjacent_pairs(np.array([0.1, 0.9, 0.5])) == [(1, 2), (2, 0)]


@pytest.mark.parametrize("kwargs, message", [
    ({"a": [0, 3]}, "a must hold model indices in \\[0, 3\\), got 3"),
    ({"b": [0, 1]}, "a battle of a model against itself"),
    ({"score_a": [0.5, 1.5]}, "score_a must lie in \\[0, 1\\], got 1.5"),
    ({"weights": [1.0, -1.0]}, "weights must be finite and >= 0, got -1.0"),
    ({"cap": 0}, "cap must be an integer >= 1"),
    ({"anchor": 5}, "anchor must be a model index in \\[0, 3\\), got 5"),
    ({"prior": -3}, "prior must be a positive number"),
])
def test_bad_input_is_refused(kwargs, message):
    arguments = {"a": [0, 1], "b": [1, 2], "score_a": [1.0, 0.0], **kwargs}
    with pytest.raises(ValueError, match=message):
        audit_bradley_terry(arguments.pop("a"), arguments.pop("b"), arguments.pop("score_a"), n_models=3,
                            **arguments)


def test_soft_outcomes_are_fractional_wins():
    # A judge's p_a as the outcome (one category per vote): the refit is bradley_terry on the outcome_a column.
    a, b, hard, _ = _synthetic(9, 4, 800)
    rng = np.random.default_rng(9)
    soft = np.clip(np.where(hard == 1, 0.7, np.where(hard == 0, 0.3, 0.5)) + rng.normal(0, 0.1, len(a)), 0, 1)
    frame = _frame(a, b, hard).assign(outcome_a=soft)
    pairs = audit_bradley_terry(a, b, soft, n_models=4)
    assert all(p.verified for p in pairs)
    for p in pairs:
        assert _bt_gap_after(frame, p.rows, p.higher, p.lower) < 0


def test_a_model_left_without_battles_is_no_swap():
    # C lost its only 2 battles; removing them would leave C unranked (at the prior's centre, above B):
    # that is not a swap. Any reported removal must leave both models in the refitted leaderboard.
    a = np.r_[np.zeros(40, dtype=int), [0, 0]]
    b = np.r_[np.ones(40, dtype=int), [2, 2]]
    score = np.r_[np.tile([1.0, 1.0, 0.0], 14)[:40], [1.0, 1.0]]
    frame = _frame(a, b, score)
    names = encode(frame).models
    (pair,) = audit_bradley_terry(a, b, score, n_models=3, pairs=[(1, 2)])
    assert (pair.higher, pair.lower) == (1, 2)
    assert not set(pair.rows) >= {40, 41}
    if pair.verified:
        keep = np.ones(len(a), dtype=bool)
        keep[pair.rows] = False
        ratings = bradley_terry(frame[keep].reset_index(drop=True))
        assert ratings[names[2]] > ratings[names[1]]


def test_a_partial_sort_of_many_categories_finds_the_same_removals(monkeypatch):
    # With more helpful categories than _PARTIAL only the most helpful are sorted first; the result
    # must be the one the full order gives (soft outcomes: one category per vote).
    a, b, hard, _ = _synthetic(12, 5, 1500)
    soft = np.clip(np.where(hard == 1, 0.75, np.where(hard == 0, 0.25, 0.5))
                   + np.random.default_rng(12).normal(0, 0.1, len(a)), 0, 1)
    full = audit_bradley_terry(a, b, soft, n_models=5)
    monkeypatch.setattr(audit_module, "_PARTIAL", 40)
    partial = audit_bradley_terry(a, b, soft, n_models=5)
    assert [(p.higher, p.lower, p.drop, p.rows.tolist()) for p in partial] == \
        [(p.higher, p.lower, p.drop, p.rows.tolist()) for p in full]
    assert max(p.drop for p in full) > 40  # some pair needed more than the partial order held: the fallback ran
