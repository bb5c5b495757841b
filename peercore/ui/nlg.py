"""NLG page glue: cached loaders over :class:`peercore.nlg.study.NLGStudy` and display helpers.

Caching only (keyed on the database path, the study and its revision), as the rest of
``peercore/ui``: the maths is in :mod:`peercore.nlg`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from peercore.efficiency import efficiency_curve, problems_from_judgments, summarise
from peercore.io.export import table_bytes
from peercore.io.scores import human_scores_wide, judge_scores_table
from peercore.nlg.study import NLGStudy
from peercore.ui.data import _store

__all__ = ["preferred_attribute", "context_table", "overview", "evaluation", "curves", "human_scores", "judge_scores", "export_bytes",
           "METHOD_LABELS", "has_human_scores", "efficiency_against_humans"]

METHOD_LABELS = {"win_ratio": "win ratio", "bt": "Bradley-Terry", "avg_prob": "average probability",
                 "poe_bt": "PoE-BT", "poe_gaussian": "PoE-Gaussian"}
NONE = "__none__"


def _study(db: str, name: str):
    return NLGStudy(_store(db), name)


@st.cache_data(show_spinner=False, max_entries=32)
def has_human_scores(db: str, study: str, rev: int) -> bool:
    return bool(_store(db).studies.record_counts(study)["human_scores"])


@st.cache_data(show_spinner=False, max_entries=16)
def overview(db: str, study: str, rev: int) -> dict:
    """``attributes`` (with human scores), ``comparative`` (judge, criterion, comparisons,
    contexts) and ``scoring`` (judge, attribute, n_scores, n_invalid)."""
    nlg = _study(db, study)
    return {"attributes": nlg.attributes(), "comparative": nlg.comparative_judges(), "scoring": nlg.score_judges()}


@st.cache_data(show_spinner=False, max_entries=32)
def defaults(db: str, study: str, rev: int, attribute: str) -> tuple[str, str | None]:
    """The default comparative choice (``judge|criterion``) and score judge for an attribute."""
    nlg = _study(db, study)
    found = nlg.default_judge(attribute)
    return (f"{found[0]}\x1f{found[1]}" if found else NONE), (nlg.default_score_judge(attribute) or NONE)


@st.cache_data(show_spinner="Correlating with the human scores…", max_entries=32)
def evaluation(db: str, study: str, rev: int, attribute: str, comparative: str, score_judge: str, common: bool):
    judge, criterion = comparative.split("\x1f", 1) if comparative != NONE else (None, None)
    score = None if score_judge == NONE else score_judge
    if judge is None and score is None:
        return None
    return _study(db, study).evaluate(attribute, judge=judge, criterion=criterion, score_judge=score, common=common)


@st.cache_data(show_spinner=False, max_entries=32)
def context_table(db: str, study: str, rev: int, attribute: str, comparative: str, score_judge: str,
                  context: str) -> pd.DataFrame:
    """One context's candidates with their human and predicted scores (:meth:`NLGStudy.context`)."""
    judge, criterion = comparative.split("\x1f", 1) if comparative != NONE else (None, None)
    return _study(db, study).context(attribute, context, judge=judge, criterion=criterion,
                                     score_judge=None if score_judge == NONE else score_judge)


@st.cache_data(show_spinner="Sub-sampling comparisons…", max_entries=32)
def curves(db: str, study: str, rev: int, attribute: str, comparative: str, methods: tuple[str, ...],
           repeats: int) -> pd.DataFrame:
    judge, criterion = comparative.split("\x1f", 1)
    return _study(db, study).curves(attribute, judge=judge, criterion=criterion, methods=methods, repeats=repeats,
                                    sizes=range(1, 31))


def preferred_attribute(info: dict) -> str:
    """The first attribute with comparisons or absolute scores on it (else the first attribute)."""
    judged = set(info["comparative"]["criterion"]) | set(info["scoring"]["attribute"])
    return next((a for a in info["attributes"] if a in judged), info["attributes"][0])


def comparative_options(frame: pd.DataFrame) -> dict[str, str]:
    """``judge\\x1fcriterion`` -> label, plus "none"."""
    out = {f"{r.judge}\x1f{r.criterion}": f"{r.judge} — {r.criterion or 'no criterion'} ({r.comparisons:,} comparisons, "
                                          f"{r.contexts} contexts)" for r in frame.itertuples(index=False)}
    return {**out, NONE: "none (absolute scores only)"}


def scoring_options(frame: pd.DataFrame, attribute: str) -> dict[str, str]:
    own = frame[frame["attribute"] == attribute]
    out = {str(r.judge): f"{r.judge} ({int(r.n_scores):,} scores)" for r in own.itertuples(index=False)}
    return {**out, NONE: "none (comparisons only)"}


@st.cache_data(show_spinner=False, max_entries=16)
def human_scores(db: str, study: str, rev: int) -> pd.DataFrame:
    """The study's human scores as the generic table (one column per attribute)."""
    return human_scores_wide(_store(db).scores.human_scores(study))


@st.cache_data(show_spinner=False, max_entries=16)
def judge_scores(db: str, study: str, rev: int) -> pd.DataFrame:
    """Judges' absolute scores in the ``judge-scores`` format (unreadable replies included)."""
    return judge_scores_table(_store(db).scores.judge_scores(study, include_invalid=True))


@st.cache_data(show_spinner=False, max_entries=16)
def export_bytes(db: str, study: str, rev: int, what: str, fmt: str) -> bytes:
    """Human scores (``human``) or judges' scores (``judge-scores``) in ``fmt`` (CSV neutralised)."""
    table = human_scores(db, study, rev) if what == "human" else judge_scores(db, study, rev)
    return table_bytes(table, format=fmt)


@st.cache_data(show_spinner=False, max_entries=32)
def efficiency_against_humans(db: str, study: str, rev: int, judge: str, attribute: str, methods: tuple[str, ...],
                              repeats: int, max_questions: int) -> dict:
    """The Efficiency page's curves with the human scores of ``attribute`` as the reference.

    The judge's verdicts on that attribute (its verdicts with that criterion when it has
    some, else all of them); same shape as :func:`peercore.ui.data.efficiency`.
    """
    store = _store(db)
    rows = store.verdicts.table(study, judges=[judge])
    if "criterion" in rows.columns and (rows["criterion"] == attribute).any():
        rows = rows[rows["criterion"] == attribute]
    human = store.scores.human_scores(study, attribute=attribute)
    problems = problems_from_judgments(rows)[:max_questions]
    try:
        curve = efficiency_curve(rows, methods=methods, repeats=repeats, seed=0, reference="human", human=human,
                                 max_questions=max_questions)
    except ValueError as exc:  # e.g. no question of this judge has human scores for all its candidates
        return {"error": str(exc)}
    summary = summarise(curve)
    named = summary.assign(method=summary["method"].map(METHOD_LABELS))
    table = named.assign(cell=[f"{m:.3f} [{lo:.2f}, {hi:.2f}]" for m, lo, hi in
                               zip(named["median"], named["low"], named["high"])])
    table = table.pivot_table(index=["strategy", "k"], columns="method", values="cell", aggfunc="first").reset_index()
    table.columns.name = None
    table = table.sort_values(["strategy", "k"], key=lambda c: c.map({"random": 0, "greedy": 1})
                              if c.name == "strategy" else c)
    table = table[["strategy", "k", *[METHOD_LABELS[m] for m in methods]]].reset_index(drop=True)
    return {"summary": named, "table": table, "questions": int(curve["questions"].max()) if len(curve) else 0,
            "candidates": round(sum(p.n for p in problems) / max(len(problems), 1), 1),
            "max_comparisons": max((len(p.p) for p in problems), default=0),
            "hard_only": bool(rows["p_a"].isna().all()) if "p_a" in rows.columns else True}


@st.cache_data(show_spinner=False, max_entries=32)
def human_reference_for(db: str, study: str, rev: int, judge: str, references: list[str]) -> str | None:
    """The human reference for a judge: the attribute its verdicts' criterion names, else the first."""
    if not references:
        return None
    frame = _store(db).verdicts.table(study, judges=[judge])
    if "criterion" in frame.columns:
        for criterion in frame["criterion"].dropna().value_counts().index:
            if f"human:{criterion}" in references:
                return f"human:{criterion}"
    return references[0]


@st.cache_data(show_spinner=False, max_entries=32)
def human_attributes(db: str, study: str, rev: int) -> list[str]:
    return list(dict.fromkeys(_store(db).scores.human_scores(study)["attribute"]))
