"""Efficiency: how many comparisons a good ranking of a question's answers needs (the Efficiency page's numbers).

:func:`efficiency_judges` says which judges' verdicts can rank a question's answers and
which to show first; :func:`efficiency_verdicts` gives a judge's verdicts (or every LLM
judge's, pooled); :func:`efficiency_result` computes the curves of
:func:`peercore.efficiency.efficiency_curve` with what the page says beside them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from peercore.app.health import flagged_judges
from peercore.app.study import Study
from peercore.domain import verdicts as V
from peercore.efficiency import efficiency_curve, problems_from_judgments, summarise, usable_questions

__all__ = ["POOLED", "efficiency_judges", "efficiency_codes", "efficiency_verdicts", "efficiency_result"]

POOLED = "__pooled__"  # every LLM judge's verdicts together


def efficiency_judges(study: Study) -> pd.DataFrame:
    """The judges whose verdicts can rank a question's answers, the best default first.

    A judge qualifies with at least one question on which it compared three candidates
    or more (:func:`peercore.domain.verdicts.candidates_per_question`); judges of kind
    ``llm`` or ``human`` only. Order: not flagged by the health check first, then the
    judge with the most verdicts carrying probabilities, then the most usable questions.

    Returns
    -------
    DataFrame indexed by judge: ``questions`` (usable), ``with_probabilities`` (verdicts
    with ``p_a``), ``flagged``, ``kind``; plus a :data:`POOLED` row (``kind`` ``pooled``,
    ``questions`` = LLM judges pooled) when several LLM judges qualify.
    """
    table = study.verdicts()
    sizes = V.candidates_per_question(table)
    usable = sizes[sizes["candidates"] >= 3].groupby("judge")["question_id"].size()
    kinds = table.kinds()
    usable = usable[[kinds.get(j, "llm") in ("llm", "human") for j in usable.index]]
    if len(usable) == 0:
        return pd.DataFrame(columns=["questions", "with_probabilities", "flagged", "kind"])
    readable = (table.winner >= 0) & ~np.isnan(table.p_a)
    with_p = pd.Series(np.bincount(table.judge[readable], minlength=len(table.judges)), index=list(table.judges))
    flags = set(flagged_judges(study, list(usable.index)))
    order = sorted(usable.index, key=lambda j: (j in flags, -int(with_p.get(j, 0)), -int(usable[j]), j))
    out = pd.DataFrame({"questions": [int(usable[j]) for j in order],
                        "with_probabilities": [int(with_p.get(j, 0)) for j in order],
                        "flagged": [j in flags for j in order], "kind": [kinds.get(j, "llm") for j in order]},
                       index=pd.Index(order, name="judge"))
    llm = [j for j in order if kinds.get(j, "llm") == "llm"]
    if len(llm) > 1:
        out.loc[POOLED] = [len(llm), int(out.loc[llm, "with_probabilities"].sum()), False, "pooled"]
    return out


def efficiency_codes(table: V.Verdicts, judge: str) -> np.ndarray:
    """Which judge codes of ``table`` the curves of ``judge`` read (:data:`POOLED`: every LLM judge)."""
    if judge == POOLED:
        return np.array([k == "llm" for k in table.judge_kinds], dtype=bool)
    return V.judge_codes(table, [judge])


def efficiency_verdicts(study: Study, judge: str, *, max_questions: int | None = None) -> pd.DataFrame:
    """The readable verdicts of ``judge`` (or of every LLM judge, :data:`POOLED`) as a canonical table.

    With ``max_questions``, only those of the first ``max_questions`` usable questions
    (:func:`peercore.efficiency.usable_questions`, by id: what :func:`efficiency_result` measures), picked on
    the codes before any name is decoded; ``attrs["usable"]`` then holds how many
    questions were usable in all.
    """
    table = study.verdicts()
    chosen = efficiency_codes(table, judge)
    part = V.take(table, chosen[table.judge] & (table.winner >= 0) & (table.row >= 0))
    if max_questions is None:
        return V.to_frame(part)
    usable = usable_questions(part)
    keep = np.isin(np.asarray(part.questions, dtype=object), np.asarray(usable[:max_questions], dtype=object))
    rows = V.to_frame(V.take(part, keep[part.question]))
    rows.attrs["usable"] = len(usable)
    return rows


def efficiency_result(rows: pd.DataFrame, *, methods: Sequence[str], repeats: int, max_questions: int,
                      reference: str, progress: Callable[[float, pd.DataFrame], None] | None = None,
                      facts: dict | None = None) -> dict:
    """The curves of :func:`peercore.efficiency.efficiency_curve` (seed 0) and the facts the page states.

    Returns
    -------
    dict ``curve``, ``summary`` (:func:`peercore.efficiency.summarise`), ``questions``
    (used), ``usable`` (with three candidates or more), ``candidates`` (mean per
    question), ``max_comparisons``, ``hard_only`` (no probability given). ``facts``, when
    given, is filled with those facts before the curves start (a progress callback that
    shows partial curves reads them).
    """
    usable_in_all = int(rows.attrs.get("usable", 0))  # rows already cut to their first questions
    usable = usable_questions(V.from_frame(rows[["question_id", "model_a", "model_b", "winner"]].assign(judge="")))
    rows = rows[rows["question_id"].isin(usable[:max_questions]).to_numpy()]
    problems = problems_from_judgments(rows)
    facts = {} if facts is None else facts
    facts.update({"questions": len(problems), "usable": max(len(usable), usable_in_all),
                  "candidates": round(sum(p.n for p in problems) / max(len(problems), 1), 1),
                  "max_comparisons": max((len(p.p) for p in problems), default=0),
                  "hard_only": bool(rows["p_a"].isna().all())})
    curve = efficiency_curve(rows, methods=methods, repeats=repeats, seed=0, reference=reference,
                             max_questions=max_questions, progress=progress)
    return {"curve": curve, "summary": summarise(curve), **facts}
