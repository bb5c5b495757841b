"""The NLG assessment over a study: one object the CLI, the page and the benchmark share.

:class:`NLGStudy` reads a study's human scores, its judges' comparisons (verdicts whose
``criterion`` is the attribute) and absolute scores from the store, and returns the
tables of :mod:`peercore.nlg.evaluation` and the efficiency curves against humans of
:func:`peercore.efficiency.efficiency_curve`, so ``peercore nlg evaluate`` and the NLG
page cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from peercore.nlg import evaluation
from peercore.efficiency import efficiency_curve, summarise
from peercore.bias import position_bias

if TYPE_CHECKING:  # pragma: no cover
    from peercore.store import Store

__all__ = ["NLGStudy", "Evaluation", "CURVE_METHODS"]

CURVE_METHODS = ("win_ratio", "poe_bt", "poe_gaussian")


@dataclass(frozen=True)
class Evaluation:
    """Everything the NLG page and ``peercore nlg evaluate`` show for one attribute.

    Attributes
    ----------
    attribute : the attribute.
    judge, criterion : the comparative judge and the criterion of its verdicts (None
        without comparisons).
    score_judge : the absolute-scoring judge (None without scores).
    table : :func:`peercore.nlg.evaluation.evaluation_table` (the papers' table).
    accuracy : :func:`~peercore.nlg.evaluation.pairwise_accuracy` rows, plus an
        ``absolute`` row from the scores.
    bias : the comparative judge's position bias on this data (``n, p_first, ci_low,
        ci_high, mean_p, tau``) or an empty dict.
    contexts : the contexts evaluated (covered by the human scores and by every judge
        given).
    comparisons : how many comparisons were used; ``scores`` how many absolute scores.
    systems : one row per candidate system over the contexts (a leaderboard):
        ``model, contexts, human`` (mean human score), ``absolute`` (mean absolute score)
        and ``win_ratio`` (mean per-context win ratio, debiased), with their ranks.
    system_spearman : Spearman correlation of each system-level column with ``human``.
    notes : what the reader must know about numbers that are missing (e.g. a judge
        whose comparisons all went one way has no debiased scores).
    """

    attribute: str
    judge: str | None
    criterion: str | None
    score_judge: str | None
    table: pd.DataFrame
    accuracy: pd.DataFrame
    bias: dict = field(default_factory=dict)
    contexts: tuple[str, ...] = ()
    comparisons: int = 0
    scores: int = 0
    systems: pd.DataFrame = field(default_factory=pd.DataFrame)
    system_spearman: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()


class NLGStudy:
    """NLG assessment of study ``name`` in ``store`` (see the module docstring)."""

    def __init__(self, store: "Store", name: str) -> None:
        store.studies.study_id(name)  # raises naming the studies there are
        self.store = store
        self.name = name

    # ------------------------------------------------------------------ reading

    def attributes(self) -> list[str]:
        """Attributes with human scores, in first-seen order."""
        return list(dict.fromkeys(self.store.scores.human_scores(self.name)["attribute"]))

    def human(self, attribute: str) -> pd.DataFrame:
        """``question_id, model, value`` of one attribute.

        Raises
        ------
        ValueError
            If the study has no human score on ``attribute`` (the attributes are listed).
        """
        frame = self.store.scores.human_scores(self.name, attribute=attribute)
        if not len(frame):
            raise ValueError(f"study {self.name!r} has no human scores on {attribute!r}; attributes with human "
                             f"scores: {self.attributes() or 'none (import a score table first)'}")
        return frame[["question_id", "model", "value"]]

    def comparative_judges(self) -> pd.DataFrame:
        """``judge, criterion, comparisons, contexts``: each judge's valid verdicts per criterion."""
        judgments = self.store.verdicts.table(self.name)
        if not len(judgments):
            return pd.DataFrame(columns=["judge", "criterion", "comparisons", "contexts"])
        criterion = judgments["criterion"].fillna("") if "criterion" in judgments.columns else ""
        frame = judgments.assign(criterion=criterion)
        grouped = frame.groupby(["judge", "criterion"], sort=True)
        return pd.DataFrame({"comparisons": grouped.size(), "contexts": grouped["question_id"].nunique()}
                            ).reset_index()

    def score_judges(self) -> pd.DataFrame:
        """``judge, attribute, n_scores, n_invalid`` (:meth:`peercore.store.Store.scores.score_judges`)."""
        return self.store.scores.score_judges(self.name)

    def default_judge(self, attribute: str) -> tuple[str, str] | None:
        """The comparative judge (and criterion) for ``attribute``: most comparisons on it, else on any criterion."""
        judges = self.comparative_judges()
        if not len(judges):
            return None
        own = judges[judges["criterion"] == attribute]
        pick = (own if len(own) else judges[judges["criterion"] == ""])
        if not len(pick):
            return None
        best = pick.sort_values(["comparisons", "judge"], ascending=[False, True]).iloc[0]
        return str(best["judge"]), str(best["criterion"])

    def default_score_judge(self, attribute: str) -> str | None:
        """The absolute-scoring judge with the most scores on ``attribute``."""
        judges = self.score_judges()
        own = judges[judges["attribute"] == attribute]
        if not len(own):
            return None
        return str(own.sort_values(["n_scores", "judge"], ascending=[False, True]).iloc[0]["judge"])

    def comparisons(self, judge: str, criterion: str) -> pd.DataFrame:
        """A judge's valid verdicts with ``criterion`` ('' = verdicts given no criterion)."""
        frame = self.store.verdicts.table(self.name, judges=[judge])
        if "criterion" in frame.columns:
            frame = frame[frame["criterion"].fillna("") == criterion]
        elif criterion:
            frame = frame.iloc[:0]
        if not len(frame):
            raise ValueError(f"judge {judge!r} has no comparisons with criterion {criterion!r} in study {self.name!r}")
        return frame.reset_index(drop=True)

    def scores(self, judge: str, attribute: str) -> pd.DataFrame:
        """A judge's valid absolute scores on ``attribute``."""
        frame = self.store.scores.judge_scores(self.name, judges=[judge], attribute=attribute)
        if not len(frame):
            raise ValueError(f"judge {judge!r} has no scores on {attribute!r} in study {self.name!r}")
        return frame

    # ------------------------------------------------------------------ results

    def evaluate(self, attribute: str, *, judge: str | None = None, criterion: str | None = None,
                 score_judge: str | None = None, common: bool = True, level: float = 0.95, rounds: int = 2000,
                 seed: int = 0) -> Evaluation:
        """The papers' table, the pairwise accuracies and the position bias for ``attribute``.

        Parameters
        ----------
        attribute : an attribute with human scores.
        judge, criterion : the comparative judge and its verdicts' criterion (default:
            :meth:`default_judge`); ``criterion`` defaults to the attribute.
        score_judge : the absolute-scoring judge (default :meth:`default_score_judge`).
        common : evaluate on the contexts every given judge covers (comparative and
            absolute on the same contexts, as the papers compare them).
        level, rounds, seed : the bootstrap intervals.

        Raises
        ------
        ValueError
            If the attribute has no human scores, a judge has nothing on it, or there is
            no judge at all.
        """
        human = self.human(attribute)
        if judge is None and score_judge is None:
            found = self.default_judge(attribute)
            if found is not None:
                judge, criterion = found
            score_judge = self.default_score_judge(attribute)
        if judge is None and score_judge is None:
            raise ValueError(f"study {self.name!r} has neither comparisons nor absolute scores on {attribute!r}; "
                             "run `peercore nlg compare` or `peercore nlg score` first")
        judgments = self.comparisons(judge, attribute if criterion is None else criterion) if judge else None
        scores = self.scores(score_judge, attribute) if score_judge else None
        contexts = set(human["question_id"])
        if common:
            if judgments is not None:
                contexts &= set(judgments["question_id"])
            if scores is not None:
                contexts &= set(scores["question_id"])
        ordered = tuple(q for q in dict.fromkeys(human["question_id"]) if q in contexts)
        table = evaluation.evaluation_table(human, judgments=judgments, scores=scores, level=level, rounds=rounds,
                                            seed=seed, contexts=ordered)
        accuracy, bias = pd.DataFrame(columns=["reading", "n", "accuracy", "ci_low", "ci_high"]), {}
        used, notes = None, []
        if judgments is not None:
            used = judgments[judgments["question_id"].isin(contexts)]
            offsets = evaluation.judge_offsets(used)
            if offsets is None:
                notes.append(evaluation.one_way_note(used, judge=judge))
            accuracy = evaluation.pairwise_accuracy(used, human, offsets=offsets, level=level)
            bias = _bias(used, offsets, level)
        if scores is not None:
            kept = scores[scores["question_id"].isin(contexts)]
            row = evaluation.score_pairwise_accuracy(kept[["question_id", "model"]].assign(score=kept["value"]), human,
                                                     level=level)
            accuracy = pd.concat([accuracy, pd.DataFrame([{"reading": "absolute", **row}])], ignore_index=True)
        systems, system_spearman = _systems(human[human["question_id"].isin(contexts)], used,
                                            None if scores is None else scores[scores["question_id"].isin(contexts)])
        return Evaluation(attribute=attribute, judge=judge, criterion=None if judge is None else
                          (attribute if criterion is None else criterion), score_judge=score_judge, table=table,
                          accuracy=accuracy, bias=bias, contexts=ordered,
                          comparisons=0 if used is None else len(used),
                          scores=0 if scores is None else int(scores["question_id"].isin(contexts).sum()),
                          systems=systems, system_spearman=system_spearman, notes=tuple(notes))

    def context(self, attribute: str, question_id: str, *, judge: str | None = None, criterion: str | None = None,
                score_judge: str | None = None) -> pd.DataFrame:
        """One context's candidates: ``model, answer, human``, the absolute score and the
        comparative scores (win ratio and PoE-Gaussian, debiased; ``win_ratio (raw)`` ... when
        the judge's comparisons all went one way), best human score first."""
        human = self.human(attribute)
        out = human[human["question_id"] == question_id][["model", "value"]].rename(columns={"value": "human"})
        answers = self.store.questions.answers(self.name)
        answers = answers[(answers["question_id"] == question_id) & (answers["turn"].fillna(1) == 1)]
        out = out.merge(answers[["model", "answer"]], on="model", how="left")
        if score_judge:
            scores = self.scores(score_judge, attribute)
            scores = scores[scores["question_id"] == question_id][["model", "value"]].rename(
                columns={"value": "absolute"})
            out = out.merge(scores, on="model", how="left")
        if judge:
            judgments = self.comparisons(judge, attribute if criterion is None else criterion)
            offsets = evaluation.judge_offsets(judgments)  # None: every comparison went one way, raw scores
            mine = judgments[judgments["question_id"] == question_id]
            for method in ("win_ratio", "poe_gaussian"):
                if len(mine):
                    scored = evaluation.comparative_scores(mine, method=method, offsets=offsets)
                    name = method if offsets is not None else f"{method} (raw)"
                    out = out.merge(scored[["model", "score"]].rename(columns={"score": name}), on="model",
                                    how="left")
        return out[["model", "answer", *[c for c in out.columns if c not in ("model", "answer")]]].sort_values(
            "human", ascending=False, kind="stable").reset_index(drop=True)

    def curves(self, attribute: str, *, judge: str, criterion: str | None = None,
               methods: Sequence[str] = CURVE_METHODS, strategies: Sequence[str] = ("random", "greedy"),
               repeats: int = 10, seed: int = 0, sizes: Sequence[int] | None = None,
               band: tuple[float, float] = (0.1, 0.9), contexts: Sequence[str] | None = None) -> pd.DataFrame:
        """Spearman with the human scores against the number of comparisons per context (PoE paper Fig. 1).

        Random vs greedy selection, raw vs debiased (raw only when the judge's comparisons
        all went one way), for each scorer in ``methods``
        (:func:`peercore.efficiency.efficiency_curve` with ``reference="human"``), on
        ``contexts`` when given (e.g. :attr:`Evaluation.contexts`), else on every context
        the judge compared.

        Returns
        -------
        DataFrame ``strategy, method, debiased, k, median, low, high`` (median and
        ``band`` quantiles over the seeded repeats).
        """

        human = self.human(attribute)
        judgments = self.comparisons(judge, attribute if criterion is None else criterion)
        if contexts is not None:
            judgments = judgments[judgments["question_id"].isin(set(contexts))]
        parts = []
        debiasable = evaluation.judge_offsets(judgments) is not None  # else only the raw curves exist
        for debiased in (False, True)[:2 if debiasable else 1]:
            curve = efficiency_curve(judgments, methods=methods, strategies=strategies, repeats=repeats, seed=seed,
                                     sizes=sizes, reference="human", human=human, debias=debiased)
            parts.append(summarise(curve, band=band).assign(debiased=debiased))
        out = pd.concat(parts, ignore_index=True)
        return out[["strategy", "method", "debiased", "k", "median", "low", "high"]]


def _systems(human: pd.DataFrame, judgments: pd.DataFrame | None, scores: pd.DataFrame | None
             ) -> tuple[pd.DataFrame, dict]:
    """System-level means over contexts (a leaderboard) and their Spearman with the human means."""
    import scipy.stats

    table = human.groupby("model", sort=True)["value"].agg(["size", "mean"]).rename(
        columns={"size": "contexts", "mean": "human"})
    if scores is not None and len(scores):
        table["absolute"] = scores.groupby("model")["value"].mean()
    offsets = evaluation.judge_offsets(judgments) if judgments is not None and len(judgments) else None
    if offsets is not None:  # the debiased win ratio (none when every comparison went one way)
        wins = evaluation.comparative_scores(judgments, method="win_ratio", offsets=offsets)
        table["win_ratio"] = wins.groupby("model")["score"].mean()
    correlations = {}
    for column in ("absolute", "win_ratio"):
        if column in table.columns and table[column].notna().sum() >= 3 and table["human"].nunique() > 1:
            pair = table[["human", column]].dropna()
            correlations[column] = float(scipy.stats.spearmanr(pair["human"], pair[column]).statistic)
    table = table.sort_values("human", ascending=False)
    return table.reset_index(), correlations


def _bias(judgments: pd.DataFrame, offsets: "evaluation.Offsets | None", level: float) -> dict:
    """Position bias; ``mean_p`` and ``tau`` are None when the comparisons all went one way (no offsets)."""

    row = position_bias(judgments.assign(judge="judge"), level=level).iloc[0]
    return {"n": int(row["n"]), "p_first": float(row["p_first"]), "ci_low": float(row["ci_low"]),
            "ci_high": float(row["ci_high"]), "mean_p": None if offsets is None else float(offsets.beta),
            "tau": None if offsets is None else float(offsets.tau)}
