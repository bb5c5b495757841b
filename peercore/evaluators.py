"""The pieces of an evaluator (judge) leaderboard that did not exist elsewhere, on arrays.

AlpacaEval reports, for each of its annotators (judges), agreement with humans, price and
time per 1,000 annotations, the probability of preferring the first output and the
longer one, and more (Dubois et al. 2023, AlpacaEval's ``annotator`` leaderboard). Each
column of PeerBoard's evaluator leaderboard comes from ONE function:

==============================  =====================================================================
column                          computed by
==============================  =====================================================================
agreement with humans (+/- ties) :func:`peercore.agreement.agreement_by_judge` (``ties="include"`` /
                                 ``"exclude"``), interval :func:`peercore.position.wilson`
Spearman / Kendall vs humans'    :func:`rank_agreement` (two calls of
leaderboard                      :func:`peercore.agreement.rank_correlation`, contestants both ranked)
stability over K samples         :func:`stability` (votes equal to their majority, the product's rule)
position consistency             :func:`peercore.position.swap_consistency` (silent, with a note,
                                 where the order is unknown)
P(prefers first)                 :func:`peercore.position.position_bias` (``p_first``)
P(prefers longer)                :func:`prefers_longer` (:func:`peercore.bias.larger_preference`)
P(prefers lists)                 :func:`prefers_lists` (Markdown list items by
                                 :func:`peercore.ranking.style.answer_style`)
unparsed share                   :func:`peercore.position.judge_health` (``invalid_share``)
price, seconds per 1,000         :func:`per_thousand` of the run accounting's totals
                                 (:func:`peercore.reports.run_costs` gives the cost per judge)
==============================  =====================================================================

Verdict codes are the read model's (:mod:`peercore.domain.verdicts`): 0 ``model_a``,
1 ``model_b``, 2 tie, -1 no readable verdict.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from peercore.agreement import rank_correlation
from peercore.bias import larger_preference
from peercore.domain.verdicts import UNPARSED, WINNER_NAMES
from peercore.ranking.style import answer_style
from peercore.selective import probability_from_votes, verdict_from_probability

__all__ = ["prefers_longer", "prefers_lists", "has_markdown_list", "stability", "rank_agreement", "per_thousand"]


def prefers_longer(judge, winner, length_a, length_b, *, level: float = 0.95) -> pd.DataFrame:
    """P(prefers longer): the share of each judge's decisive verdicts that go to the longer answer.

    Zheng et al. 2023 (section 3.3, verbosity bias); AlpacaEval's "Proba. prefer longer".
    Ties, unreadable verdicts and answers of equal (or unknown) length are left out; an
    unbiased judge on answers whose quality does not depend on length gives 1/2.

    Parameters
    ----------
    judge : (n,) judge names of the verdicts.
    winner : (n,) verdict codes (0 a, 1 b, 2 tie, -1 none).
    length_a, length_b : (n,) the two answers' lengths (characters; NaN unknown), e.g.
        :func:`peercore.ranking.style.battle_lengths`.
    level : confidence level of the Wilson interval.

    Returns
    -------
    DataFrame indexed by judge: ``n`` (decisive verdicts between answers of unequal
    length), ``n_longer_won``, ``p_longer``, ``ci_low``, ``ci_high``.
    """
    out = larger_preference(judge, _winner_names(winner), length_a, length_b, level=level)
    return out.rename(columns={"n_larger_won": "n_longer_won", "larger_win_rate": "p_longer"})


def has_markdown_list(texts: Iterable[str | None]) -> np.ndarray:
    """Whether each answer holds a Markdown list: at least one list item (``-``, ``*``, ``+`` or ``1.`` line).

    The ``list`` count of :func:`peercore.ranking.style.answer_style` (code blocks removed)
    above 0, as float (1.0 / 0.0; NaN for a missing text).
    """
    counts = answer_style(texts)["list"].to_numpy(dtype=float)
    return np.where(np.isnan(counts), np.nan, (counts > 0).astype(float))


def prefers_lists(judge, winner, answer_a, answer_b, *, level: float = 0.95) -> pd.DataFrame:
    """P(prefers lists): when exactly one of the two answers holds a Markdown list, the share of
    decisive verdicts that go to it.

    AlpacaEval's "Proba. prefer lists". Comparisons where both or neither answer has a
    list (and ties, unreadable verdicts, missing texts) are left out.

    Parameters
    ----------
    judge, winner, level : as :func:`prefers_longer`.
    answer_a, answer_b : (n,) the two answers' texts.

    Returns
    -------
    DataFrame indexed by judge: ``n``, ``n_list_won``, ``p_lists``, ``ci_low``, ``ci_high``.
    """
    answer_a, answer_b = list(answer_a), list(answer_b)
    if len(answer_a) != len(answer_b):
        raise ValueError(f"answer_a and answer_b must have one length, got {len(answer_a)} and {len(answer_b)}")
    texts = pd.unique(pd.Series(answer_a + answer_b, dtype=object).dropna())
    has = dict(zip(texts, has_markdown_list(texts)))
    value_a = np.array([has.get(t, np.nan) if isinstance(t, str) else np.nan for t in answer_a], dtype=float)
    value_b = np.array([has.get(t, np.nan) if isinstance(t, str) else np.nan for t in answer_b], dtype=float)
    out = larger_preference(judge, _winner_names(winner), value_a, value_b, level=level)
    return out.rename(columns={"n_larger_won": "n_list_won", "larger_win_rate": "p_lists"})


def stability(comparison, judge, winner, *, judges: Iterable[str] | None = None) -> pd.DataFrame:
    """Stability over K samples: the share of a judge's repeated votes equal to their own majority.

    For each comparison a judge voted on :math:`K \\ge 2` times (question, pair, criterion,
    turn: the read model's ``vote`` numbers the repeats), the majority verdict is the
    product's (:func:`peercore.domain.verdicts.majority`: the sign of the votes summed as
    +1 ``model_a``, 0 tie, -1 ``model_b``; computed here by
    :func:`peercore.selective.verdict_from_probability` of
    :func:`peercore.selective.probability_from_votes`, the same rule). A judge's stability
    pools its votes:

    .. math:: \\mathrm{stability} = \\frac{\\sum_c \\#\\{k : v_{ck} = \\mathrm{maj}_c\\}}{\\sum_c K_c}

    1 for a judge that always repeats itself (ties included); a coin between the two
    answers has 1/2 in expectation at K = 2 (a split pair has the majority "tie", which
    neither vote equals). Unreadable votes are left out (a comparison with fewer than two
    readable votes does not count).

    Parameters
    ----------
    comparison : (n,) integer id of each vote's comparison (e.g.
        :func:`peercore.domain.verdicts.group_ids` of question, a, b, judge, criterion, turn).
    judge : (n,) judge codes (integers) or names.
    winner : (n,) verdict codes.
    judges : the judges to report (default: those given, sorted); a judge without
        repeated votes gets NaN.

    Returns
    -------
    DataFrame indexed by judge: ``comparisons`` (with K >= 2 readable votes), ``votes``,
    ``stability``.
    """
    comparison = np.asarray(comparison, dtype=np.int64).reshape(-1)
    judge = np.asarray(judge).reshape(-1)
    winner = np.asarray(winner, dtype=np.int64).reshape(-1)
    if not (len(comparison) == len(judge) == len(winner)):
        raise ValueError(f"comparison, judge and winner must have one length, got {len(comparison)}, {len(judge)}, "
                         f"{len(winner)}")
    judge_code, judge_names = pd.factorize(judge)  # a million names: compared as codes, spelled once each
    judge_names = np.array([str(j) for j in judge_names], dtype=object)
    names = sorted(set(judge_names)) if judges is None else [str(j) for j in judges]
    readable = winner != UNPARSED
    comparison, judge_code, winner = comparison[readable], judge_code[readable], winner[readable]
    ids, group = np.unique(comparison, return_inverse=True)
    owner_code = np.zeros(len(ids), dtype=np.int64)
    owner_code[group] = judge_code
    if (owner_code[group] != judge_code).any():
        raise ValueError("a comparison id holds votes of more than one judge; include the judge in the comparison key")
    owner = judge_names[owner_code]
    k = np.bincount(group, minlength=len(ids))
    rank = np.empty(len(group), dtype=np.int64)
    order = np.argsort(group, kind="stable")
    starts = np.cumsum(k) - k
    rank[order] = np.arange(len(group)) - np.repeat(starts, k)
    votes = np.full((len(ids), int(k.max(initial=0))), UNPARSED, dtype=np.int64)
    votes[group, rank] = winner
    majority = verdict_from_probability(probability_from_votes(votes)) if len(ids) else np.zeros(0, dtype=np.int8)
    agree = (votes == majority[:, None].astype(np.int64)).sum(axis=1)
    repeated = k >= 2
    frame = pd.DataFrame({"judge": owner[repeated], "k": k[repeated], "weighted": agree[repeated]})
    grouped = frame.groupby("judge")
    out = pd.DataFrame(index=pd.Index(names, name="judge"))
    out["comparisons"] = grouped.size().reindex(out.index).fillna(0).astype("int64")
    out["votes"] = grouped["k"].sum().reindex(out.index).fillna(0).astype("int64")
    with np.errstate(invalid="ignore", divide="ignore"):
        out["stability"] = grouped["weighted"].sum().reindex(out.index) / out["votes"].where(out["votes"] > 0)
    return out


def rank_agreement(scores: pd.Series, reference: pd.Series) -> dict:
    """Spearman and Kendall (tau-b) between a judge's leaderboard and the reference's (e.g. the humans').

    Over the contestants both rank (:func:`peercore.agreement.rank_correlation`, PRD
    Table 2's correlation of leaderboards).

    Returns
    -------
    ``{"spearman", "spearman_p", "kendall", "kendall_p", "n_models"}``; NaN values (and
    the count) when fewer than 2 contestants are ranked by both.
    """
    shared = pd.concat([scores.rename("s"), reference.rename("r")], axis=1, join="inner").dropna()
    if len(shared) < 2:
        return {"spearman": math.nan, "spearman_p": math.nan, "kendall": math.nan, "kendall_p": math.nan,
                "n_models": len(shared)}
    spearman = rank_correlation(scores, reference, method="spearman")
    kendall = rank_correlation(scores, reference, method="kendall")
    return {"spearman": spearman.statistic, "spearman_p": spearman.pvalue, "kendall": kendall.statistic,
            "kendall_p": kendall.pvalue, "n_models": spearman.n_models}


def per_thousand(total, comparisons):
    """A run total (dollars, seconds) per 1,000 comparisons: :math:`1000\\,T / n` (NaN where n is 0).

    AlpacaEval's "Price [$/1000 examples]" and "Time [seconds/1000 examples]". ``total``
    and ``comparisons`` are numbers, arrays or aligned Series (e.g. the cost per judge of
    :func:`peercore.reports.run_costs` and its verdicts).

    Raises
    ------
    ValueError
        If a total or a count is negative.
    """
    if isinstance(total, pd.Series) or isinstance(comparisons, pd.Series):
        total, comparisons = pd.Series(total, dtype=float), pd.Series(comparisons, dtype=float)
        total, comparisons = total.align(comparisons)
        if (total < 0).any() or (comparisons < 0).any():
            raise ValueError("totals and comparison counts must be >= 0")
        return 1000.0 * total / comparisons.where(comparisons > 0)
    t, n = np.asarray(total, dtype=float), np.asarray(comparisons, dtype=float)
    if (t < 0).any() or (n < 0).any():
        raise ValueError(f"totals and comparison counts must be >= 0, got {total!r} and {comparisons!r}")
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(n > 0, 1000.0 * t / np.where(n > 0, n, 1.0), np.nan)
    return float(out) if out.ndim == 0 else out


def _winner_names(winner) -> np.ndarray:
    codes = np.asarray(winner, dtype=np.int64).reshape(-1)
    names = np.array([*WINNER_NAMES, None], dtype=object)
    return names[np.where((codes >= 0) & (codes <= 2), codes, 3)]
