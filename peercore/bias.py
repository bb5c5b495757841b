"""Judge biases: position, swap consistency, self-enhancement, length; threshold debiasing.

* Position bias and its debiasing by a decision threshold: Liusie, Manakul & Gales,
  "LLM Comparative Assessment", EACL 2024 (section 6, eqs. 9-10).
* Swap consistency and self-enhancement: Zheng et al., "Judging LLM-as-a-Judge with
  MT-Bench and Chatbot Arena", 2023 (section 3.3, Table 2 and Figure 3).
* Verbosity (length) bias: Zheng et al. 2023 section 3.3; PRD (Li, Patel & Du 2023)
  section 5 also discusses the preference for longer answers.
* Judge bias as a model (:func:`judge_bias_model`): the contextual Bradley-Terry of
  Chatbot Arena's style control (Chiang et al. 2024; :mod:`peercore.ranking.contextual`)
  with each judge's known biases as covariates, so position, self-preference and length
  are estimated together, each with an interval, on the rating scale.

Every function takes a canonical judgment table (see :mod:`peercore.judgments`) and
returns a judge-indexed DataFrame (index named ``judge``, sorted).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd

from peercore.agreement import _KEY, _canonical, _key_text
from peercore.judgments import COLUMNS, _as_text
from peercore.ranking.winrate import win_rates

__all__ = [
    "SelfEnhancement",
    "position_bias",
    "position_bias_from_counts",
    "swap_consistency",
    "debias_threshold",
    "debias_thresholds",
    "apply_threshold",
    "self_enhancement",
    "length_bias",
    "larger_preference",
    "judge_health",
    "judge_health_from_counts",
    "JudgeBias",
    "BIASES",
    "judge_bias_model",
    "families_of",
]

BIASES = ("position", "self", "length")

_POSITION_VOTE = {"model_a": 1, "tie": 0, "model_b": -1}


class SelfEnhancement(NamedTuple):
    """Result of :func:`self_enhancement`; unpacks as ``win_rates, summary``."""

    win_rates: pd.DataFrame
    summary: pd.DataFrame


def position_bias(judgments: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """How often each judge picks the answer shown first (Liusie et al. 2024, section 6, Table 4).

    .. math:: P(\\text{first}) = \\frac{\\#\\{\\text{winner} = \\text{model\\_a}\\}}
              {\\#\\{\\text{winner} \\ne \\text{tie}\\}}, \\qquad
              P_{\\text{all}}(\\text{first}) = \\frac{\\#\\{\\text{winner} = \\text{model\\_a}\\}}{N}

    ``p_first`` divides by the decisive verdicts (what the health check reads), with a
    Wilson score interval; ``p_first_all`` by all N comparisons, ties included, as
    Liusie et al.'s eq. 8 does (the two agree for a judge that never ties). The interval
    is the closed form of ``statsmodels.stats.proportion.proportion_confint(...,
    method="wilson")``. On a symmetric set (every pair judged in both orders) an
    unbiased judge has :math:`P(\\text{first}) = 0.5`; on other sets the share also
    reflects which models happen to be shown first. Mirroring every row
    (:func:`peercore.judgments.mirror`) turns ``p_first`` into ``1 - p_first``, the
    interval into ``[1 - ci_high, 1 - ci_low]``, ``p_first_all`` into ``1 - tie_rate -
    p_first_all`` and ``mean_p_a`` into ``1 - mean_p_a``.

    Parameters
    ----------
    judgments : canonical judgment table.
    level : confidence level of the interval, in (0, 1).

    Returns
    -------
    DataFrame
        Indexed by judge: ``n`` (verdicts), ``n_decisive`` (non-tie verdicts),
        ``p_first``, ``ci_low``, ``ci_high`` (NaN when ``n_decisive == 0``),
        ``p_first_all`` (first chosen / n, Liusie eq. 8), ``tie_rate`` (ties / n) and
        ``mean_p_a`` (mean of the given ``p_a``; NaN when the judge gave none).

    Raises
    ------
    ValueError
        If ``level`` is not in (0, 1) or ``judgments`` is not a judgment table.
    """
    _check_level(level)
    judgments = _canonical(judgments, "judgments")
    frame = pd.DataFrame(
        {
            "judge": judgments["judge"].to_numpy(dtype=object),
            "first": (judgments["winner"] == "model_a").to_numpy(dtype=float),
            "decisive": (judgments["winner"] != "tie").to_numpy(dtype=float),
            "p_a": judgments["p_a"].to_numpy(dtype=float),
        }
    )
    grouped = frame.groupby("judge", sort=True)
    n = grouped.size()
    n_first = grouped["first"].sum().astype(int)
    n_decisive = grouped["decisive"].sum().astype(int)
    return _position_table(n, n_first, n_decisive, grouped["p_a"].mean(), level)


def position_bias_from_counts(counts: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """:func:`position_bias` from verdict counts: ``judge, winner, n`` (readable verdicts only).

    The same table as :func:`position_bias` of the verdicts counted, ``mean_p_a`` NaN
    (counts carry no probabilities: use it for judges that gave none).
    """
    _check_level(level)
    frame = pd.DataFrame({"judge": counts["judge"].astype(str).to_numpy(dtype=object),
                          "n": counts["n"].to_numpy(dtype=np.int64),
                          "first": np.where(counts["winner"].astype(object).to_numpy() == "model_a",
                                            counts["n"].to_numpy(dtype=np.int64), 0),
                          "decisive": np.where(counts["winner"].astype(object).to_numpy() != "tie",
                                               counts["n"].to_numpy(dtype=np.int64), 0)})
    grouped = frame.groupby("judge", sort=True)
    n = grouped["n"].sum().rename(None)
    mean_p_a = pd.Series(np.nan, index=n.index, name="p_a")
    return _position_table(n, grouped["first"].sum().astype(int), grouped["decisive"].sum().astype(int), mean_p_a,
                           level)


def _position_table(n: pd.Series, n_first: pd.Series, n_decisive: pd.Series, mean_p_a: pd.Series,
                    level: float) -> pd.DataFrame:
    ci_low, ci_high = _wilson(n_first.to_numpy(), n_decisive.to_numpy(), level)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_first = np.where(n_decisive > 0, n_first / n_decisive.where(n_decisive > 0, 1), np.nan)
    out = pd.DataFrame(
        {
            "n": n.astype("int64"),
            "n_decisive": n_decisive.astype("int64"),
            "p_first": p_first,
            "ci_low": ci_low,
            "ci_high": ci_high,
            "p_first_all": n_first / n,  # Liusie et al. eq. 8: over all comparisons, ties included
            "tie_rate": 1.0 - n_decisive / n,
            "mean_p_a": mean_p_a,
        }
    )
    return _judge_indexed(out)


def swap_consistency(judgments: pd.DataFrame) -> pd.DataFrame:
    """Whether each judge picks the same winner when the two answers swap places.

    MT-Bench (Zheng et al. 2023, Table 2). Two verdicts form a pair when the same judge
    judged the same ``question_id``, ``turn`` and ``criterion`` in both orders,
    ``(A, B)`` and ``(B, A)``. Write each verdict by position, +1 first, 0 tie,
    -1 second. The pair is *consistent* when the winning model is the same (or both are
    ties): :math:`v_{AB} = -v_{BA}`. An inconsistent pair leans toward the position
    that gained, the sign of :math:`v_{AB} + v_{BA}` (never 0 for an inconsistent
    pair): "first, first" and "first, tie" favour the first position. The three shares
    therefore sum to 1. When a judge gave several verdicts in one order (repeats,
    rounds), every verdict in one order is paired with every verdict in the other.

    Returns
    -------
    DataFrame
        Indexed by every judge of ``judgments``: ``n_pairs``, ``consistent``,
        ``inconsistent_first`` (inconsistent, favouring the first position) and
        ``inconsistent_second``, as shares of ``n_pairs`` (NaN when it is 0).
    """
    judgments = _canonical(judgments, "judgments")
    question, model_a, model_b, turn, criterion = (_key_text(judgments[c]) for c in _KEY)
    judges = judgments["judge"].tolist()
    votes = judgments["winner"].map(_POSITION_VOTE).tolist()
    forward: dict[tuple, list[int]] = {}
    backward: dict[tuple, list[int]] = {}
    for i, judge in enumerate(judges):
        if model_a[i] < model_b[i]:
            forward.setdefault((judge, question[i], model_a[i], model_b[i], turn[i], criterion[i]), []).append(votes[i])
        else:
            backward.setdefault((judge, question[i], model_b[i], model_a[i], turn[i], criterion[i]), []).append(votes[i])
    counts = {judge: [0, 0, 0] for judge in sorted(set(judges))}  # consistent, first, second
    for key, ab_votes in forward.items():
        for ab in ab_votes:
            for ba in backward.get(key, ()):
                lean = ab + ba
                counts[key[0]][0 if lean == 0 else 1 if lean > 0 else 2] += 1
    tally = pd.DataFrame.from_dict(
        counts, orient="index", columns=["consistent", "inconsistent_first", "inconsistent_second"], dtype=float
    ).reindex(sorted(counts))
    n_pairs = tally.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = tally.div(n_pairs.where(n_pairs > 0), axis=0)
    out = pd.concat([n_pairs.rename("n_pairs").astype("int64"), shares.astype(float)], axis=1)
    return _judge_indexed(out)


def debias_threshold(p_a: np.ndarray | pd.Series) -> float:
    """Decision threshold that makes both positions win equally often (Liusie eq. 9-10).

    Predicting "A" iff :math:`p_a > \\tau` gives :math:`P(A) = P(B) = 0.5` over the set
    when :math:`\\tau` is the median of :math:`p_a`:

    .. math:: \\tau^* = \\operatorname{median}\\{p_a\\}

    Use it over a symmetric set (every pair in both orders), where an unbiased judge's
    decisions are split evenly by construction. Missing values are ignored.

    Raises
    ------
    ValueError
        If no ``p_a`` is given, or a value is outside [0, 1].
    """
    values = np.asarray(p_a, dtype=float).ravel()
    values = values[~np.isnan(values)]
    if values.size == 0:
        raise ValueError("p_a holds no probabilities (empty or all missing); cannot choose a threshold")
    if ((values < 0) | (values > 1)).any():
        bad = float(values[(values < 0) | (values > 1)][0])
        raise ValueError(f"p_a must be in [0, 1], got {bad!r}")
    return float(np.median(values))


def debias_thresholds(judgments: pd.DataFrame) -> pd.Series:
    """:func:`debias_threshold` of each judge's ``p_a``.

    Returns
    -------
    Series indexed by judge (sorted), named ``tau``; judges that never gave ``p_a``
    are left out.
    """
    judgments = _canonical(judgments, "judgments")
    given = judgments[judgments["p_a"].notna()]
    tau = given.groupby("judge", sort=True)["p_a"].median().astype(float)
    tau.index = pd.Index(tau.index.astype(str), name="judge")
    return tau.rename("tau")


def apply_threshold(judgments: pd.DataFrame, tau: float | Mapping[str, float] | pd.Series) -> pd.DataFrame:
    """Re-decide each verdict from ``p_a`` with a decision threshold (Liusie eq. 9).

    ``winner`` becomes ``model_a`` if :math:`p_a > \\tau`, ``model_b`` if
    :math:`p_a < \\tau` and ``tie`` if :math:`p_a = \\tau`. Calling a value exactly at the
    threshold a tie keeps the rule symmetric: mirrored rows with threshold
    :math:`1 - \\tau` get mirrored winners. Rows without ``p_a`` keep their ``winner``
    (there is nothing to re-decide from); ``p_a`` itself is unchanged.

    Parameters
    ----------
    judgments : canonical judgment table.
    tau : one threshold in [0, 1] for every judge, or judge -> threshold (e.g. from
        :func:`debias_thresholds`).

    Returns
    -------
    DataFrame, a canonical judgment table with the new ``winner`` column.

    Raises
    ------
    ValueError
        If a threshold is outside [0, 1], or a judge with ``p_a`` has no threshold.
    """
    judgments = _canonical(judgments, "judgments")
    given = judgments["p_a"].notna()
    if isinstance(tau, (Mapping, pd.Series)):
        mapping = dict(tau.items())
        needed = sorted(pd.unique(judgments.loc[given, "judge"]))
        missing = [j for j in needed if j not in mapping]
        if missing:
            raise ValueError(f"tau has no threshold for judge(s) {missing}")
        for judge, value in mapping.items():
            _check_tau(value, f"tau[{judge!r}]")
        threshold = judgments["judge"].map(lambda j: mapping.get(j, np.nan)).to_numpy(dtype=float)
    else:
        _check_tau(tau, "tau")
        threshold = np.full(len(judgments), float(tau))
    p_a = judgments["p_a"].to_numpy(dtype=float)
    decided = np.where(p_a > threshold, "model_a", np.where(p_a < threshold, "model_b", "tie"))
    out = judgments.copy()
    out["winner"] = pd.array(np.where(given.to_numpy(), decided, judgments["winner"].to_numpy(dtype=object)), dtype="str")
    return out


def self_enhancement(judgments: pd.DataFrame, *, aliases: Mapping[str, str]) -> SelfEnhancement:
    """Whether judges favour their own model (MT-Bench section 3.3, Figure 3; PRD).

    Parameters
    ----------
    judgments : canonical judgment table.
    aliases : judge -> the contestant it is, e.g. ``{"openai:gpt-4": "gpt-4"}``. Aliases
        of judges absent from ``judgments`` are ignored.

    Returns
    -------
    SelfEnhancement
        ``win_rates``: judge x contestant matrix of the win rate (ties half, both
        positions pooled, :func:`peercore.ranking.winrate.win_rates`) each judge gives
        each contestant; NaN where a judge never saw the contestant.

        ``summary``: for each judge that has an alias, ``model`` (its contestant),
        ``own_win_rate`` (the rate it gives its own model), ``others_win_rate`` (mean
        of the rates the other judges give that model, NaN if none did) and
        ``self_enhancement`` = own - others.

    Raises
    ------
    ValueError
        If an alias of a judge in ``judgments`` names a contestant that never appears.
    """
    judgments = _canonical(judgments, "judgments")
    contestants = set(judgments["model_a"]) | set(judgments["model_b"])
    judges = sorted(pd.unique(judgments["judge"]))
    unknown = {j: m for j, m in aliases.items() if j in judges and m not in contestants}
    if unknown:
        raise ValueError(
            f"aliases name contestant(s) that never appear in judgments: {unknown} "
            f"(contestants: {sorted(contestants)})"
        )
    rows = {judge: win_rates(judgments[judgments["judge"] == judge]) for judge in judges}
    matrix = pd.DataFrame(rows).T.reindex(index=judges, columns=sorted(contestants)).astype(float)
    matrix.index.name, matrix.columns.name = "judge", "model"
    records = []
    for judge in judges:
        if judge not in aliases:
            continue
        model = aliases[judge]
        own = matrix.at[judge, model]
        others = matrix.loc[matrix.index != judge, model].dropna()
        others_rate = float(others.mean()) if len(others) else math.nan
        records.append((judge, model, own, others_rate, own - others_rate))
    summary = pd.DataFrame.from_records(
        records, columns=["judge", "model", "own_win_rate", "others_win_rate", "self_enhancement"]
    ).set_index("judge")
    summary = summary.astype({"model": "str", "own_win_rate": float, "others_win_rate": float, "self_enhancement": float})
    summary.index = pd.Index(summary.index.astype(str), name="judge")
    return SelfEnhancement(matrix, summary)


def length_bias(judgments: pd.DataFrame, answers: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """How often each judge's decisive verdicts go to the longer answer (verbosity bias).

    Length is the number of characters of the answer text. Ties and pairs of answers
    of equal length are dropped; an unbiased judge on answers whose quality does not
    depend on length would give 0.5 (Zheng et al. 2023, section 3.3).

    Parameters
    ----------
    judgments : canonical judgment table.
    answers : DataFrame with columns ``question_id, model, answer`` and optionally
        ``turn``; with ``turn`` an answer is looked up by (question_id, model, turn),
        a missing turn (in either table) counting as turn 1, so a study's stored
        judgments and answers can be passed as they come from the store.
    level : confidence level of the Wilson interval.

    Returns
    -------
    DataFrame
        Indexed by every judge of ``judgments``: ``n`` (decisive verdicts between
        answers of unequal length), ``n_longer_won``, ``longer_win_rate``, ``ci_low``,
        ``ci_high`` (NaN when ``n == 0``).

    Raises
    ------
    ValueError
        If ``answers`` lacks a column, holds two answers for one key, or has no answer
        for a (question_id, model) that ``judgments`` needs (the first is named).
    """
    _check_level(level)
    judgments = _canonical(judgments, "judgments")
    lengths, with_turn = _answer_lengths(answers)
    question = _key_text(judgments["question_id"])
    # A verdict without a turn compares the answers' first turns (a single-turn study stores
    # its answers as turn 1 and its verdicts with no turn).
    turn = _key_text(judgments["turn"].fillna(1).astype("Int64")) if with_turn else None
    length = {}
    for side in ("model_a", "model_b"):
        model = _key_text(judgments[side])
        keys = zip(question, model, turn) if with_turn else zip(question, model)
        found = np.array([lengths.get(key, np.nan) for key in keys], dtype=float)
        if np.isnan(found).any():
            position = int(np.flatnonzero(np.isnan(found))[0])
            missing = (judgments["question_id"].iloc[position], judgments[side].iloc[position])
            where = f" turn {judgments['turn'].iloc[position]!r}" if with_turn else ""
            raise ValueError(f"answers has no answer for (question_id, model) {missing}{where}")
        length[side] = found
    out = larger_preference(judgments["judge"].to_numpy(dtype=object), judgments["winner"].to_numpy(dtype=object),
                            length["model_a"], length["model_b"], level=level)
    return out.rename(columns={"n_larger_won": "n_longer_won", "larger_win_rate": "longer_win_rate"})


def larger_preference(judge, winner, value_a, value_b, *, level: float = 0.95) -> pd.DataFrame:
    """How often each judge's decisive verdicts go to the answer with the larger value (length, list items, ...).

    .. math:: P(\\text{larger}) = \\frac{\\#\\{\\text{decisive}, v_{winner} > v_{loser}\\}}
              {\\#\\{\\text{decisive}, v_a \\ne v_b\\}}

    Ties, unreadable verdicts and comparisons whose two values are equal or missing are
    left out; with lengths this is the verbosity bias of Zheng et al. 2023 (section 3.3),
    :func:`length_bias`'s number.

    Parameters
    ----------
    judge : (n,) the judge of each verdict (names).
    winner : (n,) ``model_a``, ``model_b``, ``tie`` or missing.
    value_a, value_b : (n,) the two answers' values (NaN when unknown).
    level : confidence level of the Wilson interval.

    Returns
    -------
    DataFrame indexed by every judge given (sorted): ``n``, ``n_larger_won``,
    ``larger_win_rate``, ``ci_low``, ``ci_high`` (NaN when ``n == 0``).
    """
    _check_level(level)
    value_a, value_b = np.asarray(value_a, dtype=float), np.asarray(value_b, dtype=float)
    winner = pd.Series(np.asarray(winner, dtype=object))
    decisive = winner.isin(["model_a", "model_b"]).to_numpy()
    frame = pd.DataFrame(
        {
            "judge": np.asarray(judge, dtype=object),
            "counted": decisive & (value_a != value_b) & ~np.isnan(value_a) & ~np.isnan(value_b),
        }
    )
    frame["larger_won"] = frame["counted"] & ((winner == "model_a").to_numpy() == (value_a > value_b))
    grouped = frame.groupby("judge", sort=True)
    n = grouped["counted"].sum().astype("int64")
    won = grouped["larger_won"].sum().astype("int64")
    ci_low, ci_high = _wilson(won.to_numpy(), n.to_numpy(), level)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n > 0, won / n.where(n > 0, 1), np.nan)
    out = pd.DataFrame(
        {"n": n, "n_larger_won": won, "larger_win_rate": rate, "ci_low": ci_low, "ci_high": ci_high}
    )
    return _judge_indexed(out)


# ------------------------------------------------------------------------ judge health

# A judge carries no information when (issue "judgment record"; the rules are the product's):
HEALTH_MAX_SHARE = 0.90      # one position takes more than this share of its decisive verdicts,
HEALTH_INTERVAL = (0.2, 0.8)  # or its position-bias interval lies wholly outside this range,
HEALTH_MAX_INVALID = 0.20    # or more than this share of its replies held no readable verdict.
HEALTH_MIN_DECISIVE = 10     # the share rule needs at least this many decisive verdicts.


def judge_health(judgments: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """Whether each judge's verdicts carry information: position bias, identical verdicts, invalid replies.

    A judge is *flagged* when any of these holds:

    * one position takes more than 90% of its decisive verdicts (with at least 10 of them);
    * its position-bias interval (Wilson, ``level``) lies wholly outside [0.2, 0.8];
    * more than 20% of its replies held no readable verdict.

    Position bias is P(first chosen) among decisive verdicts (Liusie et al. 2024,
    Table 4; :func:`position_bias`); on the default selection (every pair in both
    orders) an informative judge is near 0.5. A judge that answers the same label
    whatever the order (the 1.5B offline judge through the verdict prompt said
    "second" 40 times out of 40) is flagged by the first two rules.

    Parameters
    ----------
    judgments : canonical judgments, optionally with the store's ``valid`` column
        (``Store.judgments(study, include_invalid=True)``): rows with ``valid == 0``
        count as invalid replies.
    level : confidence level of the interval.

    Returns
    -------
    DataFrame
        Indexed by judge: ``n`` (replies), ``n_invalid``, ``invalid_share``,
        ``n_decisive``, ``p_first``, ``ci_low``, ``ci_high``, ``identical_share``
        (share of the most frequent verdict among readable ones), ``flagged`` (bool),
        ``reasons`` (sentence, '' when healthy) and ``fix`` (what to try).
    """
    _check_level(level)
    if "valid" in judgments.columns:
        valid_mask = judgments["valid"].fillna(1).astype(int).to_numpy() == 1
    else:
        valid_mask = judgments["winner"].notna().to_numpy()
    counts = pd.DataFrame({"judge": judgments["judge"].astype(str).to_numpy(dtype=object),
                           "valid": valid_mask.astype(np.int64),
                           "winner": judgments["winner"].astype(object).where(valid_mask, None).to_numpy()})
    counts = counts.groupby(["judge", "valid", "winner"], dropna=False, sort=False).size().rename("n").reset_index()
    return judge_health_from_counts(counts, level=level)


def judge_health_from_counts(counts: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """:func:`judge_health` from verdict counts instead of verdicts (the same table).

    Parameters
    ----------
    counts : ``judge, valid, winner, n``: how many replies of each judge were readable
        (``valid`` 1, ``winner`` one of ``model_a, model_b, tie``) or not (``valid`` 0,
        any ``winner``), e.g. :func:`peercore.aggregates.verdict_tally` summed over pairs.
        Only these counts enter the check, so a study of a million verdicts is checked
        from its store-side tally.
    level : confidence level of the interval.
    """
    _check_level(level)
    judge = counts["judge"].astype(str).to_numpy(dtype=object)
    n = counts["n"].to_numpy(dtype=np.int64)
    readable = counts["valid"].to_numpy() == 1
    winner = counts["winner"].astype(object).to_numpy()
    replies = pd.Series(n, index=judge).groupby(level=0).sum()
    invalid = pd.Series(np.where(readable, 0, n), index=judge).groupby(level=0).sum()
    out = pd.DataFrame(index=pd.Index(sorted(replies.index), name="judge"))
    out["n"] = replies.reindex(out.index).astype("int64")
    out["n_invalid"] = invalid.reindex(out.index).fillna(0).astype("int64")
    out["invalid_share"] = out["n_invalid"] / out["n"]
    seen = pd.Series(n[readable], index=judge[readable])
    by_winner = (pd.DataFrame({"judge": judge[readable], "winner": winner[readable], "n": n[readable]})
                 .groupby(["judge", "winner"])["n"].sum())
    readers = sorted(set(judge[readable]))  # judges with a readable verdict: the position statistics' rows
    if readers:
        per = by_winner.unstack("winner").reindex(index=readers).fillna(0).astype("int64")
        first = per["model_a"] if "model_a" in per.columns else pd.Series(0, index=per.index)
        ties = per["tie"] if "tie" in per.columns else pd.Series(0, index=per.index)
        total = seen.groupby(level=0).sum().reindex(readers)
        n_first = first.to_numpy(dtype=np.int64)
        n_decisive = (total - ties).to_numpy(dtype=np.int64)
        ci_low, ci_high = _wilson(n_first, n_decisive, level)
        with np.errstate(invalid="ignore", divide="ignore"):
            p_first = np.where(n_decisive > 0, n_first / np.where(n_decisive > 0, n_decisive, 1), np.nan)
        position = pd.DataFrame({"n_decisive": n_decisive, "p_first": p_first, "ci_low": ci_low, "ci_high": ci_high},
                                index=readers)
        identical = per.max(axis=1) / per.sum(axis=1)  # share of the most frequent verdict (value_counts' first)
    else:
        position = pd.DataFrame(columns=["n_decisive", "p_first", "ci_low", "ci_high"])
        identical = pd.Series(dtype=float)
    out["n_decisive"] = position["n_decisive"].reindex(out.index).fillna(0).astype("int64")
    for column in ("p_first", "ci_low", "ci_high"):
        out[column] = position[column].reindex(out.index).astype(float)
    out["identical_share"] = identical.reindex(out.index).astype(float)
    reasons, fixes = [], []
    for judge, row in out.iterrows():
        why, fix = [], []
        p = row["p_first"]
        if row["n_decisive"] >= HEALTH_MIN_DECISIVE and (p > HEALTH_MAX_SHARE or p < 1 - HEALTH_MAX_SHARE):
            side = "first" if p > 0.5 else "second"
            why.append(f"the {side} answer won {max(p, 1 - p):.0%} of its {int(row['n_decisive'])} decisive verdicts")
        elif row["ci_low"] > HEALTH_INTERVAL[1] or row["ci_high"] < HEALTH_INTERVAL[0]:
            why.append(f"its position bias P(first) = {p:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}] lies outside "
                       f"[{HEALTH_INTERVAL[0]}, {HEALTH_INTERVAL[1]}]")
        if why:
            fix.append("use the label-probability classifier (--method auto, the default for local models) and score "
                       "both orders, or a stronger judge")
        if row["invalid_share"] > HEALTH_MAX_INVALID:
            why.append(f"{row['invalid_share']:.0%} of its {int(row['n'])} replies held no readable verdict")
            fix.append("raise --max-tokens, use a template that puts the verdict first, or the classifier")
        reasons.append("; ".join(why))
        fixes.append("; ".join(fix))
    out["flagged"] = [bool(r) for r in reasons]
    out["reasons"] = reasons
    out["fix"] = fixes
    return out


# ----------------------------------------------------------------- judge bias as a model


class JudgeBias(NamedTuple):
    """Result of :func:`judge_bias_model`.

    ``table``: one row per (judge, bias) with ``coefficient`` (logit units), ``elo``
    (Elo points), ``ci_low``, ``ci_high`` (the 95% interval in Elo points),
    ``probability_shift`` with ``p_low``, ``p_high`` (the change in the probability that
    the favoured answer wins between two answers of equal quality), ``n`` (the judge's
    verdicts), ``n_informative`` (verdicts where the covariate is not zero),
    ``significant`` (the interval excludes 0). ``ratings``: the models' strengths on the
    Elo scale that every judge shares. ``families``: model -> family used.
    """

    table: pd.DataFrame
    ratings: pd.Series
    families: dict


def families_of(models, families: Mapping[str, str] | None = None) -> dict[str, str]:
    """model -> family: ``families[model]`` where given, else the model itself (its own family)."""
    families = dict(families or {})
    return {str(m): str(families.get(m, m)) for m in models}


def judge_bias_model(judgments: pd.DataFrame, *, aliases: Mapping[str, str] | None = None,
                     families: Mapping[str, str] | None = None, lengths: pd.DataFrame | None = None,
                     level: float = 0.95, l2: float = 1e-6, l2_bias: float = 1e-3, scale: float = 400.0,
                     base: float = 10.0) -> JudgeBias:
    """Each judge's position, self-preference and length bias, estimated jointly with intervals.

    One contextual Bradley-Terry model (:func:`peercore.ranking.core.fit`) over every
    judge's verdicts, with model strengths :math:`\\xi` that all judges share and, per
    judge j, three covariates:

    .. math:: \\operatorname{logit} P(a \\succ b \\mid j) = \\xi_a - \\xi_b
              + \\beta^{pos}_j + \\beta^{self}_j s_j(a, b) + \\beta^{len}_j \\ell(a, b)

    * position: the constant 1 (the answer shown first), so :math:`\\beta^{pos}_j` is
      the judge's pull towards the first position at equal quality (Liusie et al.
      2024's position bias, now net of the models shown);
    * self-preference: :math:`s_j = \\mathbb 1[\\mathrm{fam}(a) = \\mathrm{fam}(j)]
      - \\mathbb 1[\\mathrm{fam}(b) = \\mathrm{fam}(j)]`, the judge's family being the
      family of the contestant it is (``aliases``), families from ``families``
      (user-editable; by default each model is its own family). Because the strengths
      are the panel's, :math:`\\beta^{self}_j` is how much more the judge favours its own
      family than the other judges do (MT-Bench section 3.3's self-enhancement as a
      parameter);
    * length: :math:`\\ell = \\frac{(L_a - L_b)/(L_a + L_b)}{\\mathrm{sd}}`, the answers'
      length ratio in standard deviations over battles (0 when unknown).

    Intervals are sandwich (robust) intervals (:func:`peercore.ranking.core.sandwich`).
    Coefficients are reported in logit units, in Elo points (:math:`\\beta\\,\\sigma/\\ln\\beta_{10}`)
    and as a probability shift at equal quality, :math:`\\sigma(\\beta) - 1/2` (for
    length: one standard deviation of the ratio in the first answer's favour).

    Parameters
    ----------
    judgments : canonical judgment table (ties count half).
    aliases : judge -> the contestant it is; judges without one get no self term.
    families : model -> family (e.g. ``{"gpt-4": "openai", "gpt-3.5": "openai"}``).
    lengths : ``length_a``, ``length_b`` aligned with ``judgments`` (characters); None:
        no length term.
    level : interval coverage.
    l2 : ridge on the shared strengths (keeps a model that won every battle finite).
    l2_bias : ridge on the bias coefficients (sum scale; negligible with data, it keeps a
        judge that always picks one position finite).
    scale, base : the Elo scale.

    Returns
    -------
    JudgeBias
        A term with no informative verdict is NaN: a judge whose family never plays
        against another family, or whose family no other judge judged (self-preference is
        measured against the panel, so it needs one).

    Raises
    ------
    ValueError
        If ``level`` is not in (0, 1), ``judgments`` is empty, or an alias names no
        contestant.
    """
    from scipy.special import expit, ndtri

    from peercore.ranking import core
    from peercore.ranking._battles import CountedBattles, encode

    _check_level(level)
    if isinstance(judgments, CountedBattles):  # a store-side tally: each row stands for `count` battles
        if lengths is not None:
            raise ValueError("counted battles have no answers' lengths; pass the judgments for a length term")
        battles, count = judgments, np.asarray(judgments.count, dtype=np.int64)
        if len(battles) == 0:
            raise ValueError("judgments is empty; the bias model needs verdicts")
    else:
        judgments = _canonical(judgments, "judgments")
        if len(judgments) == 0:
            raise ValueError("judgments is empty; the bias model needs verdicts")
        battles = encode(judgments)
        count = np.ones(len(battles), dtype=np.int64)
    models = battles.models
    family = families_of(models, families)
    aliases = dict(aliases or {})
    unknown = {j: m for j, m in aliases.items() if j in battles.judges and m not in models}
    if unknown:
        raise ValueError(f"aliases name contestant(s) that never appear in judgments: {unknown}")
    n_rows, judges = len(battles.a), battles.judges
    model_family = np.array([family[m] for m in models], dtype=object)
    columns, names, informative = [], [], []
    ratio = None
    if lengths is not None:
        la = lengths["length_a"].to_numpy(dtype=float)
        lb = lengths["length_b"].to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(la + lb > 0, (la - lb) / (la + lb), 0.0)
        ratio = np.where(np.isfinite(ratio), ratio, 0.0)
        sd = float(np.std(ratio[ratio != 0])) if (ratio != 0).any() else 0.0
        ratio = ratio / sd if sd > 0 else None
    for k, judge in enumerate(judges):
        mine = battles.judge == k
        columns.append(mine.astype(float))
        names.append((judge, "position"))
        informative.append(int(count[mine].sum()))
        own = aliases.get(judge)
        if own is not None:
            fam = family[own]
            plays = (model_family[battles.a] == fam).astype(float) - (model_family[battles.b] == fam)
            self_term = plays * mine
            columns.append(self_term)
            names.append((judge, "self"))
            # Measured against the panel: without another judge's verdicts on the family the term is
            # the family's own strength again, and not identified.
            panel = bool(((plays != 0) & ~mine).any())
            informative.append(int(count[self_term != 0].sum()) if panel else 0)
        if ratio is not None:
            columns.append(ratio * mine)
            names.append((judge, "length"))
            informative.append(int(count[(ratio != 0) & mine].sum()))
    x = np.column_stack(columns)
    usable = np.array([c > 0 for c in informative])
    weight = count.astype(float)
    design = core.Design(battles.n_models, battles.a, battles.b, battles.score_a, weight, x=x[:, usable],
                         count=None if (count == 1).all() else weight)
    solution = core.fit(design, l2=l2, l2_features=l2_bias, what="judge-bias model")
    n = battles.n_models
    # The bias coefficients' block only: with thousands of models no models x models covariance is formed.
    cov = core.sandwich(design, solution, params=np.arange(n, n + design.k))
    coef = np.full(len(names), np.nan)
    se = np.full(len(names), np.nan)
    coef[usable] = solution.gamma
    se[usable] = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    z = float(ndtri(0.5 + level / 2.0))
    elo = scale / math.log(base)
    low, high = coef - z * se, coef + z * se
    per_judge = pd.Series(np.bincount(battles.judge, count, minlength=len(judges)).astype(np.int64), index=list(judges))
    table = pd.DataFrame({
        "judge": [j for j, _ in names], "bias": [b for _, b in names], "coefficient": coef, "elo": coef * elo,
        "ci_low": low * elo, "ci_high": high * elo, "probability_shift": expit(coef) - 0.5,
        "p_low": expit(low) - 0.5, "p_high": expit(high) - 0.5,
        "n": [int(per_judge[j]) for j, _ in names], "n_informative": informative,
        "significant": (low > 0) | (high < 0),
    }).set_index(["judge", "bias"])
    theta = solution.theta
    ratings = pd.Series((theta - theta.mean()) * elo + 1000.0, index=pd.Index(models, name="model"), name="rating")
    return JudgeBias(table, ratings, family)


# ---------------------------------------------------------------------------- helpers


def _check_level(level: float) -> None:
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")


def _check_tau(value: object, name: str) -> None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")


def _wilson(count: np.ndarray, nobs: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for ``count`` successes in ``nobs`` trials; NaN where nobs is 0.

    The closed form (Wilson 1927) that ``statsmodels.stats.proportion.proportion_confint(...,
    method="wilson")`` computes, written out here because importing that module (and
    ``scipy.stats`` with it) cost 0.8 s of the Bias page's first run; a unit test checks the
    two agree to 1e-12.
    """
    from scipy.special import ndtri  # scipy.special is already loaded by peercore.ranking

    count, nobs = np.asarray(count, dtype=float), np.asarray(nobs, dtype=float)
    low, high = np.full(count.shape, np.nan), np.full(count.shape, np.nan)
    seen = nobs > 0
    if seen.any():
        k, n = count[seen], nobs[seen]
        z = ndtri(1.0 - (1.0 - level) / 2.0)
        share, z2 = k / n, z * z
        denominator = 1.0 + z2 / n
        centre = (share + z2 / (2.0 * n)) / denominator
        half_width = z * np.sqrt(share * (1.0 - share) / n + z2 / (4.0 * n * n)) / denominator
        low[seen], high[seen] = centre - half_width, centre + half_width
    return low, high


def _judge_indexed(frame: pd.DataFrame) -> pd.DataFrame:
    frame.index = pd.Index(frame.index.astype(str), name="judge")
    return frame


def _answer_lengths(answers: pd.DataFrame) -> tuple[dict[tuple, float], bool]:
    """Character length of each answer keyed by (question_id, model[, turn]) as text,
    and whether ``answers`` has a turn column."""
    if not isinstance(answers, pd.DataFrame):
        raise ValueError(f"answers must be a pandas DataFrame, got {type(answers).__name__}")
    missing = [c for c in ("question_id", "model", "answer") if c not in answers.columns]
    if missing:
        raise ValueError(f"answers is missing column(s) {missing} (found: {list(answers.columns)})")
    names = ["question_id", "model"] + (["turn"] if "turn" in answers.columns else [])
    columns = [_key_text(_as_text(answers[c]).str.strip()) for c in ("question_id", "model")]
    if "turn" in answers.columns:
        turn = pd.to_numeric(answers["turn"].astype(object).where(answers["turn"].notna()), errors="coerce")
        if (turn.isna() != answers["turn"].isna()).any() or (turn.dropna() % 1 != 0).any():
            raise ValueError(f"answers: turn must hold whole numbers, got {answers['turn'].tolist()[:5]}...")
        columns.append(_key_text(turn.astype("Int64").fillna(1)))
    keys = list(zip(*columns))
    if len(set(keys)) < len(keys):
        seen: set[tuple] = set()
        duplicate = next(k for k in keys if k in seen or seen.add(k))
        raise ValueError(f"answers holds more than one answer for {dict(zip(names, duplicate))}")
    text = answers["answer"]
    lengths = [len(str(a)) if present else np.nan for a, present in zip(text.tolist(), text.notna().tolist())]
    return dict(zip(keys, lengths)), "turn" in answers.columns
