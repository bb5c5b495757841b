r"""Per-context evaluation of a judge against human scores (NLG assessment).

Liusie, Manakul, Gales (2024), "LLM Comparative Assessment: Zero-shot NLG Evaluation
through Pairwise Comparisons using Large Language Models" (EACL), and Liusie, Raina,
Fathullah, Gales (2024), "Efficient LLM Comparative Assessment: a Product of Experts
Framework for Pairwise Comparisons" (EMNLP). For every *context* (an article, a dialogue:
a ``question_id``) there are N *candidates* (``model``) with human scores on an
attribute. A judge's comparisons of the candidates (or its absolute scores of each)
give predicted scores per context, and the judge is measured by

* the **per-context correlation** with the human scores, Spearman and Pearson,
  **averaged over contexts** (the papers' headline numbers), with a percentile
  bootstrap interval over contexts (:func:`per_context_correlations`,
  :func:`average_correlation`);
* the **pairwise accuracy** of its single comparisons on the candidate pairs whose
  human scores differ: raw (:math:`p > 1/2`), debiased (:math:`p > \tau`, the median of
  its probabilities: Liusie et al. eq. 9-10) and with both presentation orders averaged,
  :math:`(p_{ij} + 1 - p_{ji}) / 2` (:func:`pairwise_accuracy`);
* its **position bias** on this data (:func:`peercore.bias.position_bias`).

The predicted scores of comparisons are the five scorers of the PoE paper --
win ratio, Bradley-Terry, average probability, PoE-BT, PoE-Gaussian
(:mod:`peercore.ranking.poe`) -- each raw or **debiased**: the judge's first-position
preference, measured once over all its comparisons on the data set
(:func:`peercore.efficiency.position_offsets`), is removed (threshold :math:`\tau` for
the hard scorers, offset :math:`\beta = \bar p` for the soft ones). They are computed by
the batched scorers of :func:`peercore.efficiency.batch_scores`, which
``tests/unit/test_efficiency.py`` and ``tests/unit/nlg`` check against the one-problem
functions of :mod:`peercore.ranking.poe`, so that the table and the efficiency curves
(:func:`peercore.efficiency.efficiency_curve` with ``reference="human"``) use one
definition.

Edge cases: a context with fewer than ``min_candidates`` candidates scored by both
sides is left out; a context whose human scores are all equal has no order to recover
(its correlation is NaN, flagged ``constant_human``, left out of the mean); a
prediction that is constant over a context says nothing about the order and counts as
0 (scipy would return NaN). Predicted scores equal to 9 decimals are ties (PoE-Gaussian
gives two candidates with mirrored comparisons scores that differ by 1e-16, which would
otherwise order them). Otherwise the per-context values are exactly
:func:`scipy.stats.spearmanr` and :func:`scipy.stats.pearsonr`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats

from peercore.efficiency import METHODS, batch_scores, position_offsets

__all__ = ["SCORERS", "SCORER_LABELS", "Offsets", "comparative_scores", "judge_offsets", "one_way_note",
           "per_context_correlations",
           "average_correlation", "pairwise_accuracy", "score_pairwise_accuracy", "evaluation_table"]

SCORERS: tuple[str, ...] = METHODS
SCORER_LABELS = {"win_ratio": "win ratio", "bt": "Bradley-Terry", "avg_prob": "average probability",
                 "poe_bt": "PoE-BT", "poe_gaussian": "PoE-Gaussian", "absolute": "absolute score",
                 "absolute_text": "absolute score (text)"}


@dataclass(frozen=True)
class Offsets:
    """A judge's first-position preference: ``tau`` (median p) and ``beta`` (mean p)."""

    tau: float
    beta: float


def judge_offsets(judgments: pd.DataFrame) -> Offsets | None:
    """:func:`peercore.efficiency.position_offsets` of a judge's comparisons (``p_a``, else 1 / 0.5 / 0).

    Returns
    -------
    Offsets or None
        None when every comparison went the same way (the first-shown response always
        chosen, or the second always): the position offset would be infinite, so the
        preference cannot be removed and only raw scores exist (:func:`one_way_note`
        says so).

    Raises
    ------
    ValueError
        If there is no comparison.
    """
    p = _probabilities(judgments)
    if np.isnan(p).all():
        raise ValueError("no comparison to measure the judge's position preference from")
    try:
        return Offsets(*position_offsets(p))
    except ValueError:  # mean p is 0 or 1: debiasing is undefined
        return None


def one_way_note(judgments: pd.DataFrame, *, judge: str | None = None) -> str:
    """What the page and ``peercore nlg evaluate`` say about a judge whose comparisons all went one way."""
    side = "first" if float(np.nanmean(_probabilities(judgments))) >= 0.5 else "second"
    who = f"judge {judge!r}" if judge else "the judge"
    return (f"every comparison by {who} chose the response shown {side}: its verdicts say nothing about the "
            "candidates, and its position preference cannot be removed (the offset would be infinite), so only "
            "raw scores are shown, without the debiased rows, threshold or curves")


def _probabilities(judgments: pd.DataFrame) -> np.ndarray:
    hard = judgments["winner"].map({"model_a": 1.0, "model_b": 0.0, "tie": 0.5}).to_numpy(dtype=float)
    if "p_a" not in judgments.columns:
        return hard
    given = pd.to_numeric(judgments["p_a"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return np.where(np.isnan(given), hard, given)


def comparative_scores(judgments: pd.DataFrame, *, method: str, offsets: Offsets | None = None) -> pd.DataFrame:
    """Each context's candidates scored from one judge's comparisons of them.

    Parameters
    ----------
    judgments : canonical judgment table of one judge on one attribute; ``question_id``
        is the context, ``model_a`` the candidate shown first, ``p_a`` the probability
        that it is better (the ``winner`` when ``p_a`` is missing).
    method : one of :data:`SCORERS` (the PoE paper's five scorers).
    offsets : debias with this position preference (:func:`judge_offsets`); None for the
        raw scores.

    Returns
    -------
    DataFrame ``question_id, model, score``: higher is better; scales differ between
    methods. A candidate with no comparison in its context is left out.
    """
    if method not in SCORERS:
        raise ValueError(f"method must be one of {SCORERS}, got {method!r}")
    options = {} if offsets is None else {"threshold": offsets.tau, "beta": offsets.beta}
    p = _probabilities(judgments)
    rows = []
    for question, index in judgments.groupby("question_id", sort=False).indices.items():
        a = judgments["model_a"].to_numpy(dtype=object)[index]
        b = judgments["model_b"].to_numpy(dtype=object)[index]
        names = sorted(set(a) | set(b))
        code = {name: k for k, name in enumerate(names)}
        i = np.array([code[x] for x in a], dtype=np.intp)[None, :]
        j = np.array([code[x] for x in b], dtype=np.intp)[None, :]
        values = batch_scores(i, j, p[index][None, :], np.ones_like(i, dtype=bool), len(names), method, **options)[0]
        rows.extend((str(question), name, float(value)) for name, value in zip(names, values))
    return pd.DataFrame(rows, columns=["question_id", "model", "score"])


def per_context_correlations(predicted: pd.DataFrame, human: pd.DataFrame, *, min_candidates: int = 3
                             ) -> pd.DataFrame:
    """Spearman and Pearson correlation of predicted with human scores, one row per context.

    Parameters
    ----------
    predicted : ``question_id, model, score``.
    human : ``question_id, model, value`` (one attribute).
    min_candidates : contexts with fewer candidates scored by both are left out.

    Returns
    -------
    DataFrame ``question_id, n, spearman, pearson, constant_human``, in the order the
    contexts first appear in ``predicted``; ``spearman`` is
    :func:`scipy.stats.spearmanr` of the context's two score vectors (average ranks for
    ties), ``pearson`` :func:`scipy.stats.pearsonr`; see the module docstring for
    constant vectors.

    Raises
    ------
    ValueError
        If a column is missing, a (context, candidate) is given twice, or
        ``min_candidates < 2``.
    """
    if min_candidates < 2:
        raise ValueError(f"min_candidates must be >= 2, got {min_candidates!r}")
    for frame, columns, what in ((predicted, ("question_id", "model", "score"), "predicted"),
                                 (human, ("question_id", "model", "value"), "human")):
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise ValueError(f"{what} is missing column(s) {missing} (found: {list(frame.columns)})")
        repeated = frame.duplicated(["question_id", "model"])
        if repeated.any():
            row = frame[repeated].iloc[0]
            raise ValueError(f"{what} gives {row['model']!r} in context {row['question_id']!r} twice")
    merged = predicted[["question_id", "model", "score"]].merge(human[["question_id", "model", "value"]],
                                                              on=["question_id", "model"], how="inner", sort=False)
    rows = []
    for question, group in merged.groupby("question_id", sort=False):
        if len(group) < min_candidates:
            continue
        # Scores equal to 9 decimals are ties: a solver's rounding (1e-16) must not order candidates that
        # the comparisons cannot tell apart.
        x, y = np.round(group["score"].to_numpy(dtype=float), 9), group["value"].to_numpy(dtype=float)
        constant_human = bool(np.ptp(y) == 0)
        if constant_human:
            rho = r = np.nan
        elif np.ptp(x) == 0:
            rho = r = 0.0
        else:
            rho = float(scipy.stats.spearmanr(x, y).statistic)
            r = float(scipy.stats.pearsonr(x, y).statistic)
        rows.append((str(question), len(group), rho, r, constant_human))
    return pd.DataFrame(rows, columns=["question_id", "n", "spearman", "pearson", "constant_human"])


def average_correlation(values: Sequence[float] | np.ndarray | pd.Series, *, level: float = 0.95,
                        rounds: int = 2000, seed: int = 0) -> dict:
    """Mean of per-context correlations with a percentile bootstrap interval over contexts.

    Parameters
    ----------
    values : one correlation per context (NaN ones are left out).
    level : interval coverage, in (0, 1).
    rounds : bootstrap resamples of the contexts.
    seed : seeds ``numpy.random.default_rng``.

    Returns
    -------
    dict ``mean, ci_low, ci_high, contexts`` (NaN mean and interval for no context).
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds!r}")
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return {"mean": np.nan, "ci_low": np.nan, "ci_high": np.nan, "contexts": 0}
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, (int(rounds), x.size))].mean(axis=1)
    tail = (1 - level) / 2
    return {"mean": float(x.mean()), "ci_low": float(np.quantile(means, tail)),
            "ci_high": float(np.quantile(means, 1 - tail)), "contexts": int(x.size)}


def pairwise_accuracy(judgments: pd.DataFrame, human: pd.DataFrame, *, offsets: Offsets | None = None,
                      level: float = 0.95) -> pd.DataFrame:
    """Accuracy of single comparisons against the human order, on pairs whose human scores differ.

    A comparison of ``model_a`` (shown first) with ``model_b`` is right when it prefers
    the candidate with the higher human score; ``p`` exactly at the threshold counts
    half. Three readings (Liusie, Manakul, Gales 2024, Sec. 4 and eq. 9-10):

    ``raw``
        every comparison, decided at :math:`p > 1/2`;
    ``debiased``
        every comparison, decided at :math:`p > \\tau` (``offsets.tau``, the median
        :math:`p`: both positions then win equally often);
    ``both orders``
        each pair compared in both orders once, decided by
        :math:`(p_{ij} + 1 - p_{ji}) / 2 > 1/2` (one decision per unordered pair).

    Returns
    -------
    DataFrame ``reading, n, accuracy, ci_low, ci_high`` (Wilson interval); ``debiased``
    only with ``offsets``.
    """
    from statsmodels.stats.proportion import proportion_confint

    values = {(str(q), str(m)): float(v) for q, m, v in zip(human["question_id"], human["model"], human["value"])}
    q = judgments["question_id"].astype(str).to_numpy()
    a = judgments["model_a"].astype(str).to_numpy()
    b = judgments["model_b"].astype(str).to_numpy()
    p = _probabilities(judgments)
    ha = np.array([values.get(key, np.nan) for key in zip(q, a)])
    hb = np.array([values.get(key, np.nan) for key in zip(q, b)])
    keep = ~np.isnan(ha) & ~np.isnan(hb) & (ha != hb)
    first_better = ha > hb
    readings = [("raw", 0.5)] + ([("debiased", offsets.tau)] if offsets is not None else [])
    rows = []
    for name, threshold in readings:
        right = np.where(p == threshold, 0.5, ((p > threshold) == first_better).astype(float))[keep]
        rows.append((name, right))
    forward: dict[tuple, float] = {}
    for key, value, use in zip(zip(q, a, b), p, keep):
        if use:
            forward[key] = value
    both = []
    for (question, x, y), p_xy in forward.items():
        p_yx = forward.get((question, y, x))
        if p_yx is None or x > y:
            continue
        p_deb = (p_xy + 1.0 - p_yx) / 2.0
        better = values[(question, x)] > values[(question, y)]
        both.append(0.5 if p_deb == 0.5 else float((p_deb > 0.5) == better))
    rows.append(("both orders", np.array(both)))
    out = []
    for name, right in rows:
        n = len(right)
        accuracy = float(right.mean()) if n else np.nan
        low, high = proportion_confint(right.sum(), n, alpha=1 - level, method="wilson") if n else (np.nan, np.nan)
        out.append((name, n, accuracy, float(low), float(high)))
    return pd.DataFrame(out, columns=["reading", "n", "accuracy", "ci_low", "ci_high"])


def score_pairwise_accuracy(scores: pd.DataFrame, human: pd.DataFrame, *, level: float = 0.95) -> dict:
    """Pairwise accuracy implied by absolute scores: within each context, every pair of
    candidates whose human scores differ is ordered by the scores (a tie counts half).

    Parameters
    ----------
    scores : ``question_id, model, score``.
    human : ``question_id, model, value``.

    Returns
    -------
    dict ``n, accuracy, ci_low, ci_high`` (Wilson interval).
    """
    from statsmodels.stats.proportion import proportion_confint

    merged = scores.merge(human, on=["question_id", "model"], how="inner")
    right = []
    for _, group in merged.groupby("question_id", sort=False):
        s, h = group["score"].to_numpy(dtype=float), group["value"].to_numpy(dtype=float)
        for x in range(len(group)):
            for y in range(x + 1, len(group)):
                if h[x] == h[y]:
                    continue
                right.append(0.5 if s[x] == s[y] else float((s[x] > s[y]) == (h[x] > h[y])))
    n = len(right)
    if not n:
        return {"n": 0, "accuracy": np.nan, "ci_low": np.nan, "ci_high": np.nan}
    low, high = proportion_confint(sum(right), n, alpha=1 - level, method="wilson")
    return {"n": n, "accuracy": float(np.mean(right)), "ci_low": float(low), "ci_high": float(high)}


def evaluation_table(human: pd.DataFrame, *, judgments: pd.DataFrame | None = None,
                     scores: pd.DataFrame | None = None, methods: Sequence[str] = SCORERS, debias: bool = True,
                     level: float = 0.95, rounds: int = 2000, seed: int = 0, contexts: Sequence[str] | None = None
                     ) -> pd.DataFrame:
    """The papers' table for one attribute: averaged per-context correlations of every scorer.

    Parameters
    ----------
    human : ``question_id, model, value`` of the attribute.
    judgments : one judge's comparisons on the attribute (canonical table), or None.
    scores : one judge's absolute scores (``question_id, model, value``, optionally
        ``score``: the text reading, reported as its own row), or None.
    methods : comparative scorers (:data:`SCORERS`).
    debias : also the debiased row of each comparative scorer (none when the judge's
        comparisons all went one way: :func:`judge_offsets` is then None).
    level, rounds, seed : the bootstrap interval (:func:`average_correlation`).
    contexts : only these contexts (e.g. those the judge's comparisons and scores both
        cover); default every context.

    Returns
    -------
    DataFrame ``approach, scorer, debiased, spearman, spearman_low, spearman_high,
    pearson, pearson_low, pearson_high, contexts``: ``approach`` is ``comparative`` or
    ``absolute``, ``scorer`` a key of :data:`SCORER_LABELS`.
    """
    if judgments is None and scores is None:
        raise ValueError("give judgments (comparisons), scores (absolute scores) or both")
    keep = None if contexts is None else {str(c) for c in contexts}
    if keep is not None:
        human = human[human["question_id"].astype(str).isin(keep)]
    rows = []

    def add(approach: str, scorer: str, debiased: bool, predicted: pd.DataFrame) -> None:
        if keep is not None:
            predicted = predicted[predicted["question_id"].astype(str).isin(keep)]
        table = per_context_correlations(predicted, human)
        rho = average_correlation(table["spearman"], level=level, rounds=rounds, seed=seed)
        r = average_correlation(table["pearson"], level=level, rounds=rounds, seed=seed)
        rows.append((approach, scorer, debiased, rho["mean"], rho["ci_low"], rho["ci_high"], r["mean"], r["ci_low"],
                     r["ci_high"], rho["contexts"]))

    if scores is not None and len(scores):
        add("absolute", "absolute", False, scores[["question_id", "model"]].assign(score=scores["value"]))
        if "score" in scores.columns and scores["score"].notna().any() and "expected" in scores.columns \
                and scores["expected"].notna().any():
            text = scores[scores["score"].notna()]
            add("absolute", "absolute_text", False, text[["question_id", "model", "score"]])
    if judgments is not None and len(judgments):
        offsets = judge_offsets(judgments) if debias else None
        for method in methods:
            add("comparative", method, False, comparative_scores(judgments, method=method))
            if offsets is not None:
                add("comparative", method, True, comparative_scores(judgments, method=method, offsets=offsets))
    return pd.DataFrame(rows, columns=["approach", "scorer", "debiased", "spearman", "spearman_low", "spearman_high",
                                       "pearson", "pearson_low", "pearson_high", "contexts"])
