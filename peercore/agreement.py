"""Agreement between a judge and a reference: accuracy, kappa, rank correlation.

Three families of meta-evaluation live here:

* **Verdict agreement** (PRD, Li, Patel & Du 2023, Table 3; MT-Bench, Zheng et al. 2023,
  Table 3 and FastChat ``compute_agreement.py``): each judge verdict is matched with the
  reference verdict about the same question and pair, accuracy is the share that are
  equal, chance-corrected by Cohen's and Fleiss' kappa (statsmodels).
* **Leaderboard agreement** (PRD Table 2): Spearman / Kendall correlation of two
  model-indexed score Series (scipy).
* **ScaleEval meta-evaluation** (Chern et al. 2024, Tables 3-4): example-level agreement
  (share of examples where a judge matches the gold verdict) and system-level
  agreement (the judge's most frequent verdict equals the gold's).
* **Agreement across many raters**: Krippendorff's alpha (nominal), with a bootstrap
  interval over units (:func:`krippendorff_alpha`), for annotators and for judges.

Unparsed verdicts
-----------------
A judge verdict that could not be parsed (``winner`` missing, or ``valid == 0`` - the
rows :meth:`peercore.store.Store.verdicts.table` returns with ``include_invalid=True``) is
still an answer the judge gave about an example. ScaleEval's example-level agreement
(Chern et al. 2024, section 3.3, eq. 2) averages over all n examples, and its section 8
measures exactly a judge that fails to answer (Claude-2 refusing), so by default
(``unparsed="miss"``) such a verdict is matched like any other and counts as a
disagreement; ``unparsed="exclude"`` leaves it out of n instead. Either way the number
of matched unparsed verdicts is reported (``AgreementResult.unparsed``, the
``unparsed`` columns). Unparsed *reference* verdicts say nothing about the example and
are always left out.

Matching
--------
The matching key of a verdict is ``(question_id, model_a, model_b)`` plus ``turn`` and
``criterion`` when both tables have those columns; a missing ``turn`` / ``criterion``
is a value of its own (it matches only another missing value). Verdicts are always
compared in the judge row's orientation: a reference verdict about ``(q, B, A)`` is
mirrored (``model_a`` <-> ``model_b``) before it is compared with a judge verdict about
``(q, A, B)``.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from peercore.judgments import COLUMNS, REQUIRED_COLUMNS, WINNERS, concat, judgments_from_frame
from peercore.ranking._battles import row_weights

__all__ = [
    "AgreementResult",
    "RankCorrelation",
    "majority_vote",
    "match_reference",
    "agreement",
    "agreement_of_pairs",
    "agreement_by_judge",
    "cohen_kappa",
    "fleiss_kappa",
    "rank_correlation",
    "verdict_mode",
    "example_level_agreement",
    "system_level_agreement",
    "scaleeval_agreement",
    "UNPARSED_MODES",
    "AlphaResult",
    "krippendorff_alpha",
    "alpha_units",
    "PooledAgreement",
    "pooled_agreement",
]

_KEY: list[str] = ["question_id", "model_a", "model_b", "turn", "criterion"]
_VOTE = {"model_a": 1.0, "tie": 0.0, "model_b": -1.0}
_FLIP = {"model_a": "model_b", "model_b": "model_a", "tie": "tie"}
_MISSING = "\x00<missing>"  # stands for a missing key value so that missing == missing
_REFERENCE_MODES = ("majority", "votes")
_TIES = ("include", "exclude")
UNPARSED_MODES: tuple[str, ...] = ("miss", "exclude")
_UNPARSED_LABEL = "\x00<unparsed>"  # an unparsed judge verdict: equal to no reference label


@dataclass(frozen=True)
class AgreementResult:
    """Agreement of matched verdict pairs.

    Attributes
    ----------
    n : number of matched (verdict, reference verdict) pairs counted (with
        ``unparsed="miss"`` this includes the unparsed judge verdicts).
    agreement : share of pairs with equal verdicts (accuracy); NaN when ``n == 0``.
    cohen_kappa : Cohen's kappa of the two label sequences; NaN when ``n == 0`` or
        when chance agreement is 1 (both sides use one and the same label only).
        Unparsed judge verdicts counted as misses are one more judge label, which the
        reference never uses.
    fleiss_kappa : Fleiss' kappa treating the pair as two raters per item (with two
        raters this is Scott's pi); NaN in the same cases as ``cohen_kappa``.
    unparsed : matched pairs whose judge verdict was not parsed (after the ``ties``
        filter), whether they were counted as misses or excluded.
    """

    n: int
    agreement: float
    cohen_kappa: float
    fleiss_kappa: float
    unparsed: int = 0


@dataclass(frozen=True)
class RankCorrelation:
    """Rank correlation of two leaderboards (see :func:`rank_correlation`)."""

    statistic: float
    pvalue: float
    n_models: int
    method: str

    def __float__(self) -> float:
        return float(self.statistic)


# ------------------------------------------------------------------ verdict agreement


def majority_vote(
    judgments: pd.DataFrame,
    *,
    weights: Mapping[str, float] | None = None,
    tie_margin: float = 0.0,
    judge_name: str = "majority",
) -> pd.DataFrame:
    """Reduce several verdicts about the same ordered pair to one (PRD section 4).

    For each ordered key ``(question_id, model_a, model_b[, turn, criterion])``

    .. math:: s = \\frac{\\sum_r w_{j(r)} v_r}{\\sum_r w_{j(r)}}, \\qquad
              v_r = +1 \\text{ (model_a)}, 0 \\text{ (tie)}, -1 \\text{ (model_b)}

    and the winner is ``model_a`` if :math:`s > m`, ``model_b`` if :math:`s < -m`, and
    ``tie`` otherwise (:math:`m` = ``tie_margin``). With equal weights and ``m = 0`` this
    is the PRD notebook's human majority, ``sign(mean(score))``, so votes (+1, 0, -1)
    give a tie. With Peer Rank reviewer weights and ``m = 0.01`` it is PRD's
    "All (weighted)" vote (the notebook's weights sum to 1, so :math:`s` is the plain
    weighted sum there).

    Verdicts about ``(q, A, B)`` and ``(q, B, A)`` are different ordered keys and are
    reduced separately (see :func:`match_reference` for combining orientations).

    Parameters
    ----------
    judgments : canonical judgment table (any number of judges).
    weights : optional judge -> non-negative weight; ``None`` weighs every verdict
        equally. A key whose verdicts all have weight 0 gets :math:`s = 0` (a tie).
    tie_margin : non-negative half-width :math:`m` of the band read as a tie.
    judge_name : the ``judge`` value of the returned rows.

    Returns
    -------
    DataFrame
        Canonical judgment table, one row per ordered key, sorted by key (as text).
        ``p_a`` is :math:`(1 + s) / 2`, the weighted share of votes for model_a with
        ties counting half; ``round`` and ``rationale`` are missing. Empty input gives an empty table.

    Raises
    ------
    ValueError
        If ``judgments`` is not a valid judgment table (``JudgmentError``),
        ``tie_margin`` is negative or not finite, or ``weights`` lacks a judge or holds
        a negative weight.
    """
    judgments = _canonical(judgments, "judgments")
    if isinstance(tie_margin, bool) or not isinstance(tie_margin, (int, float)) or not (
        math.isfinite(tie_margin) and tie_margin >= 0
    ):
        raise ValueError(f"tie_margin must be a finite number >= 0, got {tie_margin!r}")
    group = _key_codes([judgments[c] for c in _KEY]) if len(judgments) else np.zeros(0, dtype=np.int64)
    n_groups = int(group.max()) + 1 if len(group) else 0
    weight = row_weights(judgments, weights)
    weight = np.ones(len(judgments)) if weight is None else weight
    vote = judgments["winner"].map(_VOTE).to_numpy(dtype=float)
    total = np.bincount(group, weights=weight, minlength=n_groups)
    weighted = np.bincount(group, weights=weight * vote, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(total > 0, weighted / np.where(total > 0, total, 1.0), 0.0)
    winner = np.where(score > tie_margin, "model_a", np.where(score < -tie_margin, "model_b", "tie"))
    _, first_row = np.unique(group, return_index=True)
    # Groups sorted by their key's text, column by column (as sorting the key tuples would).
    firsts = pd.DataFrame({f"k{i}": _key_text(judgments[c].iloc[first_row]) for i, c in enumerate(_KEY)})
    order = firsts.sort_values(list(firsts.columns), kind="stable").index.to_numpy() if n_groups else \
        np.zeros(0, dtype=np.intp)
    score, winner, first_row = score[order], winner[order], first_row[order]
    out = judgments.iloc[first_row].reset_index(drop=True)
    out["judge"] = str(judge_name)
    out["winner"] = winner
    out["p_a"] = (1.0 + score) / 2.0
    out["round"] = pd.NA
    out["rationale"] = np.nan
    return concat([out])


def match_reference(
    judgments: pd.DataFrame, reference: pd.DataFrame, *, reference_mode: str = "majority"
) -> pd.DataFrame:
    """Pair every judge verdict with the reference verdict(s) about the same comparison.

    Parameters
    ----------
    judgments : canonical table of the verdicts to evaluate (any number of judges). It
        may hold unparsed verdicts (``winner`` missing, or a ``valid`` column that is
        0), as ``Store.verdicts.table(study, include_invalid=True)`` returns them: they are
        matched like the others and come back with a missing ``verdict``.
    reference : canonical table of reference verdicts (e.g. human votes); unparsed rows
        (as above) are left out.
    reference_mode :
        ``"majority"`` (PRD): the reference is reduced to one verdict per ordered key by
        :func:`majority_vote`, then "doubled": the mirror of every reference key is
        added unless that mirrored ordered key has a reference verdict of its own. Each
        judge row is compared with the reference verdict of its own ordered key. This is
        exactly the PRD notebook's comparison of each reviewer's ordered verdicts with
        the doubled human majority.

        ``"votes"`` (MT-Bench, FastChat ``compute_agreement.py``): each judge row is
        compared with every individual reference vote about the same question and pair,
        in either orientation (mirrored as needed), so one judge row can give several
        pairs.

    Returns
    -------
    DataFrame
        One row per matched pair with the key columns (``question_id, model_a, model_b,
        turn, criterion``), ``judge``, ``verdict`` (the judge's ``winner``) and
        ``reference_verdict``, both in the judge row's orientation; ``verdict`` is
        missing for an unparsed judge verdict. Judge rows without a reference verdict
        are left out. Rows follow the order of ``judgments``.

    Raises
    ------
    ValueError
        If a table is not a valid judgment table (a ``JudgmentError`` naming
        ``judgments`` or ``reference``, the row, column and value), or
        ``reference_mode`` is not "majority" or "votes".
    """
    judgments, unparsed_rows = _with_unparsed(judgments, "judgments")
    reference, unparsed_reference = _with_unparsed(reference, "reference")
    if unparsed_reference.any():
        reference = reference[~unparsed_reference].reset_index(drop=True)
    if reference_mode not in _REFERENCE_MODES:
        raise ValueError(f"reference_mode must be one of {_REFERENCE_MODES}, got {reference_mode!r}")
    if reference_mode == "majority":
        reduced = majority_vote(reference)
        keys, verdicts, mirror_only_if_new = reduced, reduced["winner"], True
    else:
        keys, verdicts, mirror_only_if_new = reference, reference["winner"], False
    rows, matched = _matches(judgments, keys, verdicts.to_numpy(dtype=object), mirror_only_if_new=mirror_only_if_new)
    out = judgments.iloc[rows][[*_KEY, "judge", "winner"]].reset_index(drop=True)
    out = out.rename(columns={"winner": "verdict"})
    if unparsed_rows.any():
        out["verdict"] = out["verdict"].mask(unparsed_rows[np.asarray(rows, dtype=np.intp)])
    out["reference_verdict"] = pd.array(matched, dtype="str")
    return out


def agreement_of_pairs(pairs: pd.DataFrame, *, ties: str = "include", unparsed: str = "miss") -> AgreementResult:
    """Accuracy, Cohen's and Fleiss' kappa of matched verdict pairs.

    .. math:: \\text{agreement} = \\frac{1}{n} \\sum_{i=1}^{n} \\mathbb{1}[v_i = g_i]

    over the n matched pairs (ScaleEval, Chern et al. 2024, section 3.3, eq. 2, for
    the example level; PRD Table 3 accuracy).

    Parameters
    ----------
    pairs : DataFrame with ``verdict`` and ``reference_verdict`` columns, as returned by
        :func:`match_reference`; a missing ``verdict`` is an unparsed judge verdict.
    ties : ``"include"`` counts every pair (MT-Bench "w/ tie", PRD); ``"exclude"`` drops
        pairs where either side is a tie (MT-Bench "w/o tie").
    unparsed : ``"miss"`` (default) counts an unparsed verdict as a disagreement: it
        stays in n, never equals the reference, and is its own label in the kappas;
        ``"exclude"`` leaves it out of n. Either way ``AgreementResult.unparsed`` says
        how many there were.

    Returns
    -------
    AgreementResult
        ``n = 0`` gives NaN agreement and kappas (no exception). Kappas are NaN when
        chance agreement is 1, e.g. both sides always say ``model_a`` (statsmodels
        computes 0/0 there).

    Raises
    ------
    ValueError
        If ``ties`` or ``unparsed`` is unknown, a column is missing, or a
        ``reference_verdict`` is missing (the values are quoted).
    """
    if ties not in _TIES:
        raise ValueError(f"ties must be one of {_TIES}, got {ties!r}")
    _check_unparsed(unparsed)
    missing = [c for c in ("verdict", "reference_verdict") if c not in pairs.columns]
    if missing:
        raise ValueError(f"pairs is missing column(s) {missing}; build it with match_reference")
    verdict, failed = _verdicts(pairs["verdict"])
    reference = pairs["reference_verdict"].to_numpy(dtype=object)
    if len(reference) and pd.isna(pairs["reference_verdict"]).any():
        raise ValueError("pairs holds a missing reference_verdict; only the judge's verdict may be unparsed")
    if ties == "exclude":
        keep = (verdict != "tie") & (reference != "tie")
        verdict, reference, failed = verdict[keep], reference[keep], failed[keep]
    n_unparsed = int(failed.sum())
    if unparsed == "exclude":
        verdict, reference = verdict[~failed], reference[~failed]
    n = len(verdict)
    if n == 0:
        return AgreementResult(0, math.nan, math.nan, math.nan, n_unparsed)
    return AgreementResult(
        n=n,
        agreement=float(np.mean(verdict == reference)),
        cohen_kappa=cohen_kappa(verdict, reference),
        fleiss_kappa=fleiss_kappa(np.column_stack([verdict, reference])),
        unparsed=n_unparsed,
    )


def agreement(
    judgments: pd.DataFrame,
    reference: pd.DataFrame,
    *,
    ties: str = "include",
    reference_mode: str = "majority",
    unparsed: str = "miss",
) -> AgreementResult:
    """Agreement of all verdicts in ``judgments`` with a reference (PRD Table 3; MT-Bench).

    ``agreement_of_pairs(match_reference(judgments, reference, ...), ties=ties,
    unparsed=unparsed)``: the verdicts of every judge in ``judgments`` are pooled
    (filter to one judge first, or use :func:`agreement_by_judge`). With PRD's data, one
    reviewer's 1600 ordered verdicts against the human votes with the default
    ``reference_mode="majority"`` give the paper's accuracy and Fleiss' kappa. With
    ScaleEval's Claude-2 verdicts (unparsed ones included) against the debate
    consensus, n = 767 of which 8 unparsed, agreement 0.8488 (0.8577 over the 759
    parsed ones with ``unparsed="exclude"``).

    Parameters
    ----------
    judgments, reference : canonical judgment tables; ``judgments`` may hold unparsed
        verdicts (see :func:`match_reference`).
    ties : "include" or "exclude" (see :func:`agreement_of_pairs`).
    reference_mode : "majority" or "votes" (see :func:`match_reference`).
    unparsed : "miss" (default) or "exclude" (see :func:`agreement_of_pairs`).
    """
    _check_unparsed(unparsed)
    pairs = match_reference(judgments, reference, reference_mode=reference_mode)
    return agreement_of_pairs(pairs, ties=ties, unparsed=unparsed)


def agreement_by_judge(
    judgments: pd.DataFrame,
    reference: pd.DataFrame,
    *,
    ties: str = "include",
    reference_mode: str = "majority",
    unparsed: str = "miss",
) -> pd.DataFrame:
    """:func:`agreement` for each judge of ``judgments`` separately.

    Returns
    -------
    DataFrame indexed by judge (sorted) with columns ``n, agreement, cohen_kappa,
    fleiss_kappa, unparsed``. A judge with no matched pair has ``n = 0`` and NaN values.
    """
    _check_unparsed(unparsed)
    pairs = match_reference(judgments, reference, reference_mode=reference_mode)
    judges = sorted(pd.unique(judgments["judge"].astype(str)))
    rows = [agreement_of_pairs(pairs[pairs["judge"] == j], ties=ties, unparsed=unparsed) for j in judges]
    frame = pd.DataFrame(
        [[r.n, r.agreement, r.cohen_kappa, r.fleiss_kappa, r.unparsed] for r in rows],
        index=pd.Index(judges, name="judge", dtype="str"),
        columns=["n", "agreement", "cohen_kappa", "fleiss_kappa", "unparsed"],
    )
    return frame.astype({"n": "int64", "agreement": float, "cohen_kappa": float, "fleiss_kappa": float,
                         "unparsed": "int64"})


@dataclass(frozen=True)
class PooledAgreement:
    """What :func:`pooled_agreement` returns.

    Attributes
    ----------
    pairs, agreeing, agreement : pairs of votes by two different raters on one
        comparison, those that are equal, and their share (NaN without pairs), ties
        counted as verdicts.
    pairs_without_ties, agreeing_without_ties, agreement_without_ties : the same over
        the pairs in which neither vote is a tie.
    raters : raters with at least one vote.
    """

    pairs: int
    agreeing: int
    agreement: float
    pairs_without_ties: int
    agreeing_without_ties: int
    agreement_without_ties: float
    raters: int


def pooled_agreement(judgments: pd.DataFrame) -> PooledAgreement:
    """Agreement of raters with each other, pooled over every pair of their votes.

    MT-Bench (Zheng et al. 2023, section 4.2, Table 2: human vs human agreement, "w/
    tie" and "w/o tie") as FastChat's ``compute_agreement.py --judges human human``
    computes it: for every comparison, every pair of votes by two different raters is
    one trial, and

    .. math:: \\text{agreement} = \\frac{\\#\\{\\text{pairs with equal votes}\\}}{\\#\\{\\text{pairs}\\}}

    over all comparisons; without ties, the pairs in which either vote is a tie are
    left out. A comparison is a question, turn and criterion and an unordered pair of
    models: votes about ``(A, B)`` and ``(B, A)`` are compared in one orientation, as
    FastChat sorts the pair. Unlike the per-rater, leave-one-out table of
    :func:`peercore.app.agreement.agreement_table`, each pair counts once, so this is the
    figure to set beside FastChat's human-human 65.4% (with ties) and 82.8% (without).
    FastChat pairs every two expert votes on a comparison; two votes of one rater on
    one comparison are not a pair here (MT-Bench's experts vote once per comparison).

    Parameters
    ----------
    judgments : canonical table of the raters' readable verdicts (``judge`` names the
        rater).

    Returns
    -------
    PooledAgreement
    """
    frame = _canonical(judgments, "judgments")
    a, b = _key_text(frame["model_a"]), _key_text(frame["model_b"])
    swap = a > b
    winner = frame["winner"].to_numpy(dtype=object)
    winner = np.where(swap, pd.Series(winner).map(_FLIP).to_numpy(dtype=object), winner)
    votes = pd.DataFrame({"q": _key_text(frame["question_id"]), "lo": np.where(swap, b, a), "hi": np.where(swap, a, b),
                          "turn": _key_text(frame["turn"]), "criterion": _key_text(frame["criterion"]),
                          "rater": frame["judge"].to_numpy(dtype=object), "vote": winner})
    key = ["q", "lo", "hi", "turn", "criterion"]

    def pairs_and_agreeing(part: pd.DataFrame) -> tuple[int, int]:
        if len(part) == 0:
            return 0, 0
        # pairs of different raters = C(n, 2) - sum over raters C(n_r, 2); the same within each verdict
        n = part.groupby(key, sort=False).size()
        n_r = part.groupby([*key, "rater"], sort=False).size()
        c_v = part.groupby([*key, "vote"], sort=False).size()
        c_rv = part.groupby([*key, "rater", "vote"], sort=False).size()
        half = lambda x: int((x * (x - 1) // 2).sum())  # noqa: E731
        return half(n) - half(n_r), half(c_v) - half(c_rv)

    pairs, agreeing = pairs_and_agreeing(votes)
    decisive_pairs, decisive_agreeing = pairs_and_agreeing(votes[votes["vote"] != "tie"])
    return PooledAgreement(pairs=pairs, agreeing=agreeing, agreement=agreeing / pairs if pairs else math.nan,
                           pairs_without_ties=decisive_pairs, agreeing_without_ties=decisive_agreeing,
                           agreement_without_ties=decisive_agreeing / decisive_pairs if decisive_pairs else math.nan,
                           raters=int(votes["rater"].nunique()))


def cohen_kappa(labels_1: Sequence[Hashable], labels_2: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters' labels on the same items (Cohen 1960).

    .. math:: \\kappa = \\frac{p_o - p_e}{1 - p_e}, \\qquad
              p_e = \\sum_k p_{1k} p_{2k}

    computed by ``statsmodels.stats.inter_rater.cohens_kappa`` on the contingency table
    of the labels seen (categories nobody used do not change kappa).

    Returns
    -------
    float
        In [-1, 1]; NaN for no items or when :math:`p_e = 1` (both raters always give
        one and the same label).

    Raises
    ------
    ValueError
        If the two sequences differ in length or hold a missing label.
    """
    first, second = _labels(labels_1, "labels_1"), _labels(labels_2, "labels_2")
    if len(first) != len(second):
        raise ValueError(f"labels_1 and labels_2 must have the same length, got {len(first)} and {len(second)}")
    if len(first) == 0:
        return math.nan
    codes, _ = pd.factorize(np.concatenate([first, second]))
    k = int(codes.max()) + 1
    table = np.zeros((k, k))
    np.add.at(table, (codes[: len(first)], codes[len(first) :]), 1.0)
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        from statsmodels.stats import inter_rater  # imported on use: pages that never compute kappa skip it

        return float(inter_rater.cohens_kappa(table, return_results=False))


def fleiss_kappa(ratings: np.ndarray | Sequence[Sequence[Hashable]]) -> float:
    """Fleiss' kappa of an items x raters array of labels (Fleiss 1971).

    The labels are counted per item with ``statsmodels.stats.inter_rater.aggregate_raters``
    and passed to ``fleiss_kappa(method="fleiss")``, as the PRD notebook does for one
    reviewer and the human majority.

    Returns
    -------
    float
        NaN for no items or when every rating uses the same single label.

    Raises
    ------
    ValueError
        If ``ratings`` is not two-dimensional, has fewer than two raters, or holds a
        missing label.
    """
    array = np.asarray(ratings, dtype=object)
    if array.ndim != 2:
        raise ValueError(f"ratings must be an items x raters array, got shape {array.shape}")
    if array.shape[0] == 0:
        return math.nan
    if array.shape[1] < 2:
        raise ValueError(f"ratings needs at least 2 raters (columns), got {array.shape[1]}")
    codes, _ = pd.factorize(_labels(array.ravel(), "ratings"))
    from statsmodels.stats import inter_rater

    counts, _ = inter_rater.aggregate_raters(codes.reshape(array.shape))
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(inter_rater.fleiss_kappa(counts, method="fleiss"))


# --------------------------------------------------------------- leaderboard agreement


def rank_correlation(scores_1: pd.Series, scores_2: pd.Series, *, method: str = "spearman") -> RankCorrelation:
    """Rank correlation between two leaderboards (PRD Table 2: Elo vs human).

    Parameters
    ----------
    scores_1, scores_2 : model-indexed scores (higher is better). Only the models in
        both, with a score in both, are compared.
    method : ``"spearman"`` (``scipy.stats.spearmanr``) or ``"kendall"``
        (``scipy.stats.kendalltau``, tau-b).

    Returns
    -------
    RankCorrelation
        ``statistic`` (NaN when either side is constant), ``pvalue``, ``n_models``;
        ``float(result)`` is the statistic.

    Raises
    ------
    ValueError
        If ``method`` is unknown, an index holds a model twice, or fewer than 2 models
        are scored on both sides.
    """
    if method not in ("spearman", "kendall"):
        raise ValueError(f"method must be 'spearman' or 'kendall', got {method!r}")
    for name, scores in (("scores_1", scores_1), ("scores_2", scores_2)):
        if not isinstance(scores, pd.Series):
            raise ValueError(f"{name} must be a model-indexed pandas Series, got {type(scores).__name__}")
        duplicated = scores.index[scores.index.duplicated()].unique().tolist()
        if duplicated:
            raise ValueError(f"{name} lists model(s) {duplicated} more than once")
    both = pd.concat([scores_1.rename("s1"), scores_2.rename("s2")], axis=1, join="inner").dropna()
    if len(both) < 2:
        raise ValueError(
            f"scores_1 and scores_2 share {len(both)} scored model(s) ({list(both.index)}); need at least 2"
        )
    import scipy.stats  # imported on use (0.6 s): the Bias and Leaderboard pages' first run does not need it

    test = scipy.stats.spearmanr if method == "spearman" else scipy.stats.kendalltau
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: scipy warns and returns NaN
        result = test(both["s1"].to_numpy(dtype=float), both["s2"].to_numpy(dtype=float))
    return RankCorrelation(float(result.statistic), float(result.pvalue), len(both), method)


# --------------------------------------------------------------------------- ScaleEval


def verdict_mode(verdicts: Iterable[Hashable]) -> Hashable:
    """The most frequent verdict; ``"tie"`` when several verdicts are equally frequent.

    A judge whose verdicts split evenly between the two systems expresses no overall
    preference, so a tie for the most frequent value resolves to ``"tie"``, whatever
    the labels (``model_a`` / ``model_b`` / ``tie``, or winning model names). This is the
    system-level verdict of ScaleEval (Chern et al. 2024, section 5).

    Raises
    ------
    ValueError
        If ``verdicts`` is empty (the mode is undefined).
    """
    counts = Counter(verdicts)
    if not counts:
        raise ValueError("verdicts is empty; the mode of no verdicts is undefined")
    ranked = counts.most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return "tie"
    return ranked[0][0]


def example_level_agreement(
    judge_verdicts: Sequence[Hashable], gold: Sequence[Hashable], *, unparsed: str = "miss"
) -> float:
    """Share of examples where the judge's verdict equals the gold verdict.

    ScaleEval's example-level agreement (Chern et al. 2024, section 3.3, eq. 2,
    Table 3): :math:`\\frac{1}{n} \\sum_{i=1}^{n} \\mathbb{1}[v_i = g_i]` over all n
    examples. The two sequences are aligned by position; two pandas Series must carry
    the same index (they are aligned on it). Returns NaN for no examples.

    Parameters
    ----------
    judge_verdicts : the judge's verdicts; a missing one (None / NaN) is an unparsed
        verdict.
    gold : the gold verdicts (none missing).
    unparsed : ``"miss"`` (default, eq. 2 over all n examples): an unparsed verdict is
        a disagreement; ``"exclude"``: it is left out of n.

    Raises
    ------
    ValueError
        If the lengths (or Series indexes) differ, ``gold`` holds a missing verdict, or
        ``unparsed`` is unknown.
    """
    _check_unparsed(unparsed)
    judge, reference = _aligned(judge_verdicts, gold)
    if len(reference) and pd.isna(pd.Series(reference, dtype=object)).any():
        raise ValueError("gold holds a missing verdict; the gold set must be complete")
    judge, failed = _verdicts(pd.Series(judge, dtype=object))
    if unparsed == "exclude":
        judge, reference = judge[~failed], reference[~failed]
    if len(judge) == 0:
        return math.nan
    return float(np.mean(judge == reference))


def system_level_agreement(judge_verdicts: Sequence[Hashable], gold: Sequence[Hashable]) -> bool:
    """Whether the judge's most frequent verdict equals the gold's (ScaleEval Table 4).

    Both modes are taken with :func:`verdict_mode` (ties for the most frequent verdict
    resolve to ``"tie"``). Use orientation-free labels (winning model names) when the
    examples do not all show the two systems in the same order;
    :func:`scaleeval_agreement` does.

    Raises
    ------
    ValueError
        If the lengths differ or there are no examples.
    """
    judge, reference = _aligned(judge_verdicts, gold)
    return bool(verdict_mode(judge) == verdict_mode(reference))


def scaleeval_agreement(
    judgments: pd.DataFrame,
    gold: pd.DataFrame,
    *,
    group_of: Mapping[str, str] | pd.Series | None = None,
    unparsed: str = "miss",
) -> pd.DataFrame:
    """Example- and system-level agreement of each judge with a gold set (ScaleEval).

    The gold set (debate consensus plus human adjudications) is matched with
    :func:`match_reference` (``reference_mode="majority"``, so several gold verdicts
    about one comparison are reduced by majority and either orientation matches).
    Results are reported per judge, per group (``group_of[question_id]``, e.g. the
    scenario), per criterion and per pair of systems: the shape of ScaleEval
    Tables 3-4.

    Parameters
    ----------
    judgments : canonical table of the single judges' verdicts, unparsed ones included
        when known (see :func:`match_reference`).
    gold : canonical table of gold verdicts.
    group_of : optional question_id -> group label (dict or Series).
    unparsed : ``"miss"`` (default): an unparsed verdict is one of the n examples and a
        disagreement (section 3.3, eq. 2 averages over all n; section 8 measures a judge
        that does not answer), and in the judge's mode it is a label of its own (a judge
        that mostly fails to answer has no system-level agreement); ``"exclude"``: it is
        left out of n and of the mode.

    Returns
    -------
    DataFrame
        Columns ``judge``, ``group`` (with ``group_of``), ``criterion`` (missing when
        the verdicts have none), ``system_1``, ``system_2`` (the pair, sorted by name),
        ``n`` (matched examples counted), ``unparsed`` (matched unparsed verdicts,
        counted in n or not as ``unparsed`` says), ``example_agreement``,
        ``judge_mode`` and ``gold_mode`` (the most frequent winning system or
        ``"tie"``, see :func:`verdict_mode`; ``"unparsed"`` when unparsed verdicts are
        the judge's most frequent) and ``system_agreement`` (bool). Judges with no
        matched example do not appear.

    Raises
    ------
    ValueError
        If ``group_of`` has no group for a question that was matched, or ``unparsed`` is
        unknown.
    """
    _check_unparsed(unparsed)
    pairs = match_reference(judgments, gold, reference_mode="majority")
    by = ["judge"]
    if group_of is not None:
        mapping = pd.Series(dict(group_of.items()), dtype=object)
        mapping.index = mapping.index.map(str)
        groups = pairs["question_id"].astype(str).map(mapping)
        if groups.isna().any():
            unknown = sorted(pd.unique(pairs.loc[groups.isna(), "question_id"].astype(str)))
            raise ValueError(f"group_of has no group for question_id(s) {unknown[:10]}")
        pairs["group"] = groups.to_numpy()
        by.append("group")
    pairs["criterion"] = _key_text(pairs["criterion"])
    by.append("criterion")
    first_is_lower = (pairs["model_a"] <= pairs["model_b"]).to_numpy()
    pairs["system_1"] = np.where(first_is_lower, pairs["model_a"], pairs["model_b"])
    pairs["system_2"] = np.where(first_is_lower, pairs["model_b"], pairs["model_a"])
    pairs["_judge_winner"] = _winner_names(pairs, "verdict")
    pairs["_gold_winner"] = _winner_names(pairs, "reference_verdict")
    by += ["system_1", "system_2"]
    pairs["_unparsed"] = pd.isna(pairs["verdict"]).to_numpy()
    rows = []
    for group_key, part in pairs.groupby(by, sort=True):
        failed = int(part["_unparsed"].sum())
        counted = part[~part["_unparsed"]] if unparsed == "exclude" else part
        if len(counted) == 0:
            rows.append((*group_key, 0, failed, math.nan, None, verdict_mode(part["_gold_winner"]), False))
            continue
        judge_mode, gold_mode = verdict_mode(counted["_judge_winner"]), verdict_mode(part["_gold_winner"])
        rows.append(
            (*group_key, len(counted), failed,
             example_level_agreement(counted["verdict"], counted["reference_verdict"], unparsed="miss"),
             judge_mode, gold_mode, judge_mode == gold_mode)
        )
    columns = [*by, "n", "unparsed", "example_agreement", "judge_mode", "gold_mode", "system_agreement"]
    out = pd.DataFrame(rows, columns=columns)
    out["criterion"] = pd.array(out["criterion"].where(out["criterion"] != _MISSING, None), dtype="str")
    return out.astype({"n": "int64", "unparsed": "int64", "example_agreement": float, "system_agreement": bool})


# ---------------------------------------------------------------------------- helpers


# --------------------------------------------------------------- Krippendorff's alpha


@dataclass(frozen=True)
class AlphaResult:
    """Krippendorff's alpha of a set of raters (:func:`krippendorff_alpha`).

    Attributes
    ----------
    alpha : the point estimate (NaN when no unit has two raters' values, or every value is the same).
    ci_low, ci_high : the bootstrap percentile interval (NaN without rounds).
    units : pairable units (at least two raters' values).
    values : pairable values.
    raters : the raters counted.
    observed, expected : the observed and expected disagreement :math:`D_o, D_e`.
    rounds, level : the bootstrap.
    """

    alpha: float
    ci_low: float
    ci_high: float
    units: int
    values: int
    raters: tuple[str, ...]
    observed: float
    expected: float
    rounds: int
    level: float

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in ("alpha", "ci_low", "ci_high", "units", "values", "observed", "expected",
                                              "rounds", "level")}
        out = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}
        return {**out, "raters": list(self.raters)}


def alpha_units(judgments: pd.DataFrame) -> pd.DataFrame:
    """The rater x unit matrix of verdicts Krippendorff's alpha is computed from.

    A unit is one presentation: ``(question_id, model_a, model_b, criterion, turn)``
    (the mirrored presentation is another unit, so a rater's position bias is not
    mistaken for disagreement about the pair). A rater with several votes on a unit
    gives their majority (a tie when split evenly); unparsed verdicts are left out.

    Returns
    -------
    DataFrame indexed by rater, one column per unit, values ``model_a`` / ``model_b`` /
    ``tie`` or missing.
    """
    judgments = _canonical(judgments, "judgments")
    judgments = judgments[judgments["winner"].notna()]
    if "valid" in judgments.columns:
        judgments = judgments[judgments["valid"].fillna(1).astype(int) == 1]
    if len(judgments) == 0:
        return pd.DataFrame()
    key = [_key_text(judgments[c]) for c in _KEY]
    unit = pd.Series(list(zip(*key)), index=judgments.index).map(lambda parts: "\x1f".join(parts))
    frame = pd.DataFrame({"rater": judgments["judge"].astype(str).to_numpy(), "unit": unit.to_numpy(),
                          "vote": judgments["winner"].map(_VOTE).to_numpy(dtype=float)})
    votes = frame.groupby(["rater", "unit"], sort=True)["vote"].sum()
    labels = np.where(votes > 0, "model_a", np.where(votes < 0, "model_b", "tie"))
    return pd.Series(labels, index=votes.index).unstack("unit")


def krippendorff_alpha(judgments: pd.DataFrame, *, raters: Sequence[str] | None = None, rounds: int = 1000,
                       seed: int = 0, level: float = 0.95) -> AlphaResult:
    """Krippendorff's alpha (nominal) among raters, with a bootstrap interval over units.

    With :math:`n_{uc}` the number of values of category c in unit u and
    :math:`m_u = \\sum_c n_{uc}` (units with :math:`m_u \\ge 2` are pairable), the
    coincidences are :math:`o_{ck} = \\sum_u (n_{uc} n_{uk} - [c = k] n_{uc}) / (m_u - 1)`,
    :math:`n_c = \\sum_k o_{ck}`, :math:`n = \\sum_c n_c`, and (Krippendorff 2004,
    *Content Analysis*, ch. 11; 2011, "Computing Krippendorff's alpha-reliability")

    .. math:: \\alpha = 1 - \\frac{D_o}{D_e}, \\qquad D_o = 1 - \\frac{\\sum_c o_{cc}}{n},
              \\qquad D_e = 1 - \\frac{\\sum_c n_c (n_c - 1)}{n (n - 1)}.

    The interval resamples units with replacement (each round's alpha from the
    resampled units' coincidences) and takes percentiles. ``evalica.alpha_bootstrap``
    resamples pairs of values instead (Krippendorff's KALPHA algorithm, Hayes 2006);
    the point estimates agree exactly, the intervals closely.

    Parameters
    ----------
    judgments : canonical judgment table (unit definition in :func:`alpha_units`).
    raters : judge names, or prefixes ending in ``:`` (``human:`` for annotators);
        default every judge.
    rounds : bootstrap rounds (0: no interval).
    seed : seed of the bootstrap.
    level : interval coverage in (0, 1).

    Returns
    -------
    AlphaResult

    Raises
    ------
    ValueError
        If a rater name or prefix matches no judge, fewer than two raters remain,
        ``rounds`` is negative or ``level`` is not in (0, 1).
    """
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    judgments = _canonical(judgments, "judgments")
    if raters is not None:
        names = judgments["judge"].astype(str)
        keep = np.zeros(len(judgments), dtype=bool)
        for rater in raters:
            match = (names.str.startswith(rater) if rater.endswith(":") else names == rater).to_numpy(dtype=bool)
            if not match.any():
                raise ValueError(f"rater {rater!r} matches no judge; judges are {sorted(names.unique())}")
            keep |= match
        judgments = judgments[keep]
    matrix = alpha_units(judgments)
    if len(matrix.index) < 2:
        raise ValueError(f"Krippendorff's alpha needs at least two raters, got {list(matrix.index)}")
    categories = ["model_a", "model_b", "tie"]
    counts = np.stack([(matrix == c).sum(axis=0).to_numpy(dtype=float) for c in categories], axis=1)  # units x C
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    per_unit = (counts[:, :, None] * counts[:, None, :] - np.eye(3)[None] * counts[:, :, None]) / (m - 1)[:, None, None]
    flat = per_unit.reshape(len(per_unit), 9)
    alpha, observed, expected = _alpha_from(flat.sum(axis=0))
    low = high = math.nan
    if rounds and len(flat):
        rng = np.random.default_rng(seed)
        draws = rng.multinomial(len(flat), np.full(len(flat), 1.0 / len(flat)), size=rounds)
        boot = np.array([_alpha_from(row)[0] for row in draws @ flat])
        boot = boot[~np.isnan(boot)]
        if len(boot):
            low, high = (float(v) for v in np.quantile(boot, [(1 - level) / 2, (1 + level) / 2]))
    return AlphaResult(alpha, low, high, int(pairable.sum()), int(m.sum()), tuple(matrix.index.astype(str)),
                       observed, expected, rounds, level)


def _alpha_from(coincidence_flat: np.ndarray) -> tuple[float, float, float]:
    o = coincidence_flat.reshape(3, 3)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if n <= 1:
        return math.nan, math.nan, math.nan
    observed = 1.0 - np.trace(o) / n
    expected = 1.0 - float((n_c * (n_c - 1)).sum()) / (n * (n - 1))
    if expected <= 0:
        return math.nan, float(observed), float(expected)
    return float(1.0 - observed / expected), float(observed), float(expected)


def _canonical(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """Validate and canonicalise a judgment table; errors name the parameter.

    A frame that already has the canonical columns and dtypes and valid winners (the
    output of :func:`peercore.judgments_from_frame`) is only re-indexed, not
    re-validated.
    """
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{name} must be a pandas DataFrame, got {type(frame).__name__}")
    if _looks_canonical(frame):
        return frame.reset_index(drop=True)
    return judgments_from_frame(frame, source=name)


def _looks_canonical(frame: pd.DataFrame) -> bool:
    if tuple(frame.columns) != COLUMNS:
        return False
    if any(frame[c].dtype != "str" for c in (*REQUIRED_COLUMNS, "criterion", "rationale")):
        return False
    if frame["p_a"].dtype != np.float64 or any(frame[c].dtype != "Int64" for c in ("turn", "round")):
        return False
    return bool(frame["winner"].isin(WINNERS).all())


def _matches(judgments: pd.DataFrame, reference: pd.DataFrame, verdicts: np.ndarray, *,
             mirror_only_if_new: bool) -> tuple[np.ndarray, np.ndarray]:
    """Every (judgment row, reference verdict) pair with the same ordered key, in judgment-row order.

    The reference table holds each reference row's verdict under its key and, flipped,
    under the mirrored key (``question_id, model_b, model_a, ...``); with
    ``mirror_only_if_new`` a mirrored entry is dropped where the mirrored key has a
    verdict of its own (the doubled PRD majority). A judgment row's matches come in
    reference-row order, each row's own entry before its mirror: a vectorised version of
    filling a dict of lists in that order and looking each judgment key up.

    Returns
    -------
    (rows, matched): the judgment row of each pair (non-decreasing) and the reference
    verdict, in that row's orientation.
    """
    n_ref, n_judged = len(reference), len(judgments)
    flipped = np.array([_FLIP[v] for v in verdicts], dtype=object) if n_ref else np.zeros(0, dtype=object)
    mirror_of = {"model_a": "model_b", "model_b": "model_a"}
    codes = _key_codes([pd.concat([judgments[c], reference[c], reference[mirror_of.get(c, c)]], ignore_index=True)
                        for c in _KEY])
    judged, direct_code, mirror_code = codes[:n_judged], codes[n_judged:n_judged + n_ref], codes[n_judged + n_ref:]
    entry_code = np.concatenate([direct_code, mirror_code])
    entry_verdict = np.concatenate([np.asarray(verdicts, dtype=object), flipped])
    entry_rank = np.concatenate([2 * np.arange(n_ref), 2 * np.arange(n_ref) + 1])
    if mirror_only_if_new:
        keep = np.r_[np.ones(n_ref, dtype=bool), ~np.isin(mirror_code, direct_code)]
        entry_code, entry_verdict, entry_rank = entry_code[keep], entry_verdict[keep], entry_rank[keep]
    order = np.lexsort((entry_rank, entry_code))
    entry_code, entry_verdict = entry_code[order], entry_verdict[order]
    start = np.searchsorted(entry_code, judged, side="left")
    count = np.searchsorted(entry_code, judged, side="right") - start
    rows = np.repeat(np.arange(len(judgments)), count)
    offsets = np.arange(len(rows)) - np.repeat(np.cumsum(count) - count, count)
    return rows, entry_verdict[np.repeat(start, count) + offsets]


def _key_codes(columns: list[pd.Series]) -> np.ndarray:
    """One integer per row, equal exactly when every column's value is equal, missing equal to missing.

    Ids are in order of first appearance; no collision and no overflow (the running code
    is re-factorised after each column).
    """
    code = np.zeros(len(columns[0]), dtype=np.int64)
    for column in columns:
        values, _ = pd.factorize(column, use_na_sentinel=False)
        combined, _ = pd.factorize(code * (int(values.max(initial=0)) + 1) + values)
        code = combined.astype(np.int64)
    return code


def _key_text(values: pd.Series) -> np.ndarray:
    """Each value as text (``str(v)``: turn 1 -> "1"), :data:`_MISSING` where missing; vectorised by pandas."""
    return values.astype("string[python]").to_numpy(dtype=object, na_value=_MISSING)


def _labels(values: Iterable[Hashable], name: str) -> np.ndarray:
    array = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=object)
    if len(array) and pd.isna(pd.Series(array)).any():
        raise ValueError(f"{name} holds a missing label; drop or fill it first")
    return array


def _aligned(judge_verdicts, gold) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(judge_verdicts, pd.Series) and isinstance(gold, pd.Series):
        if not judge_verdicts.index.sort_values().equals(gold.index.sort_values()):
            raise ValueError("judge_verdicts and gold are Series with different indexes; align them first")
        gold = gold.loc[judge_verdicts.index] if not judge_verdicts.index.equals(gold.index) else gold
    judge, reference = np.asarray(judge_verdicts, dtype=object), np.asarray(gold, dtype=object)
    if judge.shape != reference.shape:
        raise ValueError(f"judge_verdicts and gold must have the same length, got {len(judge)} and {len(reference)}")
    return judge, reference


def _winner_names(pairs: pd.DataFrame, column: str) -> np.ndarray:
    """The winning system's name, ``"tie"``, or ``"unparsed"`` for a missing verdict."""
    verdict, failed = _verdicts(pairs[column])
    names = np.where(
        verdict == "model_a", pairs["model_a"].to_numpy(dtype=object),
        np.where(verdict == "model_b", pairs["model_b"].to_numpy(dtype=object), "tie"),
    ).astype(object)
    names[failed] = "unparsed"
    return names


def _check_unparsed(unparsed) -> None:
    if unparsed not in UNPARSED_MODES:
        raise ValueError(f"unparsed must be one of {UNPARSED_MODES}, got {unparsed!r}")


def _verdicts(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Verdicts as an object array with unparsed (missing) ones replaced by a label that
    equals no verdict, and the mask of those."""
    failed = np.array(pd.isna(values), dtype=bool)
    verdict = np.array(values.to_numpy(dtype=object), dtype=object)
    verdict[failed] = _UNPARSED_LABEL
    return verdict, failed


def _with_unparsed(frame: pd.DataFrame, name: str) -> tuple[pd.DataFrame, np.ndarray]:
    """A canonical table of every row, and the mask of the unparsed ones.

    A row is unparsed when its ``winner`` is missing or a ``valid`` column holds 0 (the
    shape of ``Store.verdicts.table(..., include_invalid=True)``). Its key columns are
    validated like any other row's (a placeholder winner stands in while validating);
    its ``winner`` comes back missing.
    """
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{name} must be a pandas DataFrame, got {type(frame).__name__}")
    if "winner" not in frame.columns:
        return _canonical(frame, name), np.zeros(len(frame), dtype=bool)
    failed = np.array(pd.isna(frame["winner"]), dtype=bool)
    if "valid" in frame.columns:
        valid = pd.to_numeric(frame["valid"], errors="coerce").to_numpy(dtype=float)
        failed = failed | (valid == 0)
    if "valid" in frame.columns:  # read above; without it a canonical table skips re-validation
        frame = frame.drop(columns="valid")
    if not failed.any():
        return _canonical(frame, name), failed
    filled = frame.copy()
    filled["winner"] = filled["winner"].astype(object).where(~failed, "tie")
    out = _canonical(filled, name)
    out["winner"] = out["winner"].mask(failed)
    return out, failed
