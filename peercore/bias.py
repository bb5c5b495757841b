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

import dataclasses
import math
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd

from peercore import position
from peercore.agreement import _canonical, _key_text
from peercore.domain import verdicts
from peercore.judgments import COLUMNS, _as_text
from peercore.ranking import core
from peercore.ranking._battles import Battles, encode
from peercore.ranking.winrate import win_rates

__all__ = [
    "SelfEnhancement",
    "position_bias",
    "swap_consistency",
    "debias_threshold",
    "debias_thresholds",
    "apply_threshold",
    "self_enhancement",
    "length_bias",
    "larger_preference",
    "judge_health",
    "decide",
    "JudgeBias",
    "BIASES",
    "judge_bias_model",
    "families_of",
]

BIASES = ("position", "self", "length")



class SelfEnhancement(NamedTuple):
    """Result of :func:`self_enhancement`; unpacks as ``win_rates, summary``."""

    win_rates: pd.DataFrame
    summary: pd.DataFrame


def _read_model(judgments: pd.DataFrame):
    """A judgment table as the read model, its order from an ``order_known`` column or inferred
    (:func:`peercore.domain.verdicts.infer_order`: known on pairs a judge saw both ways round)."""
    return verdicts.from_frame(_canonical_with_validity(judgments))


def _canonical_with_validity(judgments: pd.DataFrame) -> pd.DataFrame:
    extra = [c for c in ("valid", "order_known") if c in judgments.columns]
    if "valid" in extra and (judgments["valid"].fillna(1).astype(int) == 0).any():
        return judgments  # unparsed rows: their winner is empty, the read model counts them as unparsed
    frame = _canonical(judgments, "judgments")
    for column in extra:
        frame[column] = judgments[column].to_numpy()
    return frame


def position_bias(judgments: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """How often each judge picks the answer shown first (Liusie et al. 2024, section 6, Table 4; eq. 8).

    :func:`peercore.position.position_bias` of the table (the one implementation): over
    verdicts whose order is known (an ``order_known`` column, else pairs a judge judged in
    both orientations) ``p_first`` = first chosen / decisive verdicts with a Wilson
    interval, ``p_first_all`` = first chosen / all (eq. 8). Mirroring every row turns
    ``p_first`` into ``1 - p_first``.
    """
    return position.position_bias(_read_model(judgments), level=level)


def swap_consistency(judgments: pd.DataFrame) -> pd.DataFrame:
    """Whether each judge picks the same winner when the answers swap places (MT-Bench, Table 2).

    :func:`peercore.position.swap_consistency` of the table (the one implementation).
    """
    return position.swap_consistency(_read_model(judgments))


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
    winner = decide(judgments["p_a"].to_numpy(dtype=float), threshold,
                    judgments["winner"].map(_WINNER_CODE).to_numpy(dtype=np.int8))
    out = judgments.copy()
    out["winner"] = pd.array(np.array(verdicts.WINNER_NAMES, dtype=object)[winner], dtype="str")
    return out


_WINNER_CODE = {"model_a": verdicts.WINNER_A, "model_b": verdicts.WINNER_B, "tie": verdicts.TIE}


def decide(p_a: np.ndarray, threshold: np.ndarray, winner: np.ndarray) -> np.ndarray:
    """Winners re-decided from ``p_a`` by a threshold (Liusie eq. 9), as winner codes (0 a, 1 b, 2 tie).

    ``model_a`` where :math:`p_a > \\tau`, ``model_b`` where :math:`p_a < \\tau`, a tie where equal;
    where ``p_a`` or the threshold is missing, ``winner`` as it was.
    """
    p_a = np.asarray(p_a, dtype=float)
    threshold = np.broadcast_to(np.asarray(threshold, dtype=float), p_a.shape)
    decided = np.where(p_a > threshold, verdicts.WINNER_A, np.where(p_a < threshold, verdicts.WINNER_B, verdicts.TIE))
    known = ~np.isnan(p_a) & ~np.isnan(threshold)
    return np.where(known, decided, winner).astype(np.int8)


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

def judge_health(judgments: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """Whether each judge's verdicts carry information (:func:`peercore.position.judge_health` of the table).

    ``judgments`` may carry the store's ``valid`` column: rows with ``valid == 0`` count as
    replies with no readable verdict.
    """
    return position.judge_health(_read_model(judgments), level=level)


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


def judge_bias_model(judgments: "pd.DataFrame | Battles", *, aliases: Mapping[str, str] | None = None,
                     families: Mapping[str, str] | None = None, lengths: pd.DataFrame | None = None,
                     order_known: np.ndarray | None = None, level: float = 0.95, l2: float = 1e-6,
                     l2_bias: float = 1e-3, scale: float = 400.0, base: float = 10.0) -> JudgeBias:
    """Each judge's position, self-preference and length bias, estimated jointly with intervals.

    One contextual Bradley-Terry model (:func:`peercore.ranking.core.fit`) over every
    judge's verdicts, with model strengths :math:`\\xi` that all judges share and, per
    judge j, three covariates:

    .. math:: \\operatorname{logit} P(a \\succ b \\mid j) = \\xi_a - \\xi_b
              + \\beta^{pos}_j + \\beta^{self}_j s_j(a, b) + \\beta^{len}_j \\ell(a, b)

    * position: 1 on the judge's verdicts whose order is known (an ``order_known`` column,
      else pairs the judge saw both ways round, :func:`peercore.domain.verdicts.infer_order`),
      0 elsewhere, so :math:`\\beta^{pos}_j` is the judge's pull towards the answer shown
      first at equal quality (Liusie et al. 2024's position bias, now net of the models
      shown); NaN for a judge whose order is never known (AlpacaEval's annotations);
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
    judgments : canonical judgment table (ties count half), or its battles already encoded
        (:class:`peercore.ranking._battles.Battles`, e.g. from the read model).
    aliases : judge -> the contestant it is; judges without one get no self term.
    families : model -> family (e.g. ``{"gpt-4": "openai", "gpt-3.5": "openai"}``).
    lengths : ``length_a``, ``length_b`` aligned with ``judgments`` (characters); None:
        no length term.
    order_known : whether each battle's ``model_a`` was shown first; default: the table's
        ``order_known`` column, else :func:`peercore.domain.verdicts.infer_order`.
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

    _check_level(level)
    if isinstance(judgments, Battles):
        battles, recorded = judgments, order_known
    else:
        recorded = order_known if order_known is not None else \
            judgments["order_known"].to_numpy() if "order_known" in judgments.columns else None
        judgments = _canonical(judgments, "judgments")
        battles = encode(judgments) if len(judgments) else None
    if battles is None or len(battles) == 0:
        raise ValueError("judgments is empty; the bias model needs verdicts")
    # The position term reads only verdicts whose order is known (the source recorded which answer
    # the judge saw first, or the judge saw the pair both ways round): where a file fixes a pair's
    # orientation (AlpacaEval's generator_1 is always the baseline) "first" is a model, not a position.
    known = (np.asarray(recorded, dtype=float) == 1) if recorded is not None else \
        verdicts.infer_order(battles.a, battles.b, battles.judge, battles.n_models)
    count = np.ones(len(battles), dtype=np.int64)
    if lengths is None:  # the covariates depend on judge, pair and known order only: equal rows become one, counted
        battles, known, count = _collapsed(battles, known)
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
        columns.append((mine & known).astype(float))
        names.append((judge, "position"))
        informative.append(int(count[mine & known].sum()))
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


def _collapsed(battles, known: np.ndarray):
    """(battles, known, count): the battles with one row per distinct judge, pair, known order and outcome.

    The likelihood of the judge-bias model is a sum over battles and its sandwich meat a
    sum of per-battle scores; battles that share every covariate and the outcome share
    both, so each distinct row stands for ``count`` of them (``core.Design``'s ``w`` and
    ``count``): the same estimate and intervals from about 60,000 rows instead of a
    million (100 models, one judge).
    """
    outcome = pd.factorize(battles.score_a)[0]
    ids = verdicts.group_ids([battles.judge, battles.a, battles.b, known.astype(np.int64), outcome], sorted_ids=True)
    count = np.bincount(ids)
    first = verdicts.first_rows(ids)
    kept = dataclasses.replace(battles, a=battles.a[first], b=battles.b[first], score_a=battles.score_a[first],
                               judge=battles.judge[first])
    return kept, known[first], count.astype(np.int64)


def _check_level(level: float) -> None:
    position.check_level(level)


def _check_tau(value: object, name: str) -> None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")


_wilson = position.wilson


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
