"""Inspect a run's verdicts: each item with both answers, the verdict, ``p_a``, rationale, validity.

The Reviewers & runs page shows what a run (or, for imported studies, every stored
verdict) decided, one row per verdict, with filters a reviewer of the judge asks for:

- by judge;
- invalid only: replies that held no readable verdict (``valid = 0``; the raw reply is
  kept as the rationale when the judge gave none);
- disagreeing orders only: the same judge judged the same two answers in both
  presentation orders (A/B and B/A) and picked different winners (ties count as a
  verdict: a tie one way and a win the other way disagree). MT-Bench calls the share of
  agreeing pairs *swap consistency* (Zheng et al. 2023, Table 2).

Pure functions over the store: no streamlit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from peercore.store import Store

__all__ = ["COLUMNS", "run_verdicts", "order_agreement", "filter_verdicts", "verdict_summary"]

#: Columns of :func:`run_verdicts`, in display order.
COLUMNS = ["question_id", "judge", "model_a", "model_b", "verdict", "p_a", "valid", "orders_agree",
           "rationale", "question", "answer_a", "answer_b", "criterion", "round"]
#: Rows a page shows at most (the filters narrow what is kept; counts cover every row).
DISPLAY_LIMIT = 2000


def run_verdicts(store: "Store", study: str, *, run_id: str | None = None,
                 judges: Iterable[str] | None = None) -> pd.DataFrame:
    """The verdicts of one run (or every stored verdict of the study), with their texts.

    Parameters
    ----------
    store : the store.
    study : the study (its questions and answers give the texts).
    run_id : the run; None for every verdict stored in the study (imports included).
    judges : only these judges (default all).

    Returns
    -------
    DataFrame
        :data:`COLUMNS`: ``verdict`` is the winner's name (``model_a``'s or
        ``model_b``'s model, ``tie``) or ``(no verdict)``; ``valid`` is a bool;
        ``orders_agree`` is True / False when the same judge also judged the pair in
        the other order (see :func:`order_agreement`), else missing; ``question``,
        ``answer_a``, ``answer_b`` are the stored texts (first turn), or missing.
    """
    if run_id is None:
        frame = store.verdicts.table(study, judges=list(judges) if judges is not None else None, include_invalid=True)
    else:
        frame = store.runs.judgments(run_id)
        if judges is not None:
            frame = frame[frame["judge"].isin(list(judges))]
    frame = frame.reset_index(drop=True)
    for column in ("p_a", "criterion", "round", "rationale", "raw"):
        if column not in frame.columns:
            frame[column] = np.nan if column == "p_a" else None
    winner = frame["winner"].astype(object)
    verdict = np.where(winner == "model_a", frame["model_a"].astype(object),
                       np.where(winner == "model_b", frame["model_b"].astype(object),
                                np.where(winner == "tie", "tie", "(no verdict)")))
    valid = frame["valid"].astype(bool) if "valid" in frame.columns else pd.Series(True, index=frame.index)
    rationale = frame["rationale"].astype(object).where(frame["rationale"].notna(), frame["raw"].astype(object))
    out = pd.DataFrame({
        "question_id": frame["question_id"].astype(str), "judge": frame["judge"].astype(str),
        "model_a": frame["model_a"].astype(str), "model_b": frame["model_b"].astype(str),
        "verdict": pd.Series(verdict, index=frame.index, dtype=object),
        "p_a": pd.to_numeric(frame["p_a"], errors="coerce").astype(float),
        "valid": valid.to_numpy(), "rationale": rationale,
        "criterion": frame["criterion"].astype(object), "round": frame["round"].astype(object),
    })
    out["orders_agree"] = order_agreement(out)
    questions = store.questions.table(study)
    answers = store.questions.answers(study)
    first = answers.sort_values("turn", kind="stable").drop_duplicates(["question_id", "model"])
    text = dict(zip(questions["question_id"].astype(str), questions["text"]))
    answer = dict(zip(zip(first["question_id"].astype(str), first["model"].astype(str)), first["answer"]))
    out["question"] = [text.get(q) for q in out["question_id"]]
    out["answer_a"] = [answer.get(k) for k in zip(out["question_id"], out["model_a"])]
    out["answer_b"] = [answer.get(k) for k in zip(out["question_id"], out["model_b"])]
    return out[COLUMNS]


def order_agreement(verdicts: pd.DataFrame) -> pd.Series:
    """Per row: does the same judge's verdict on the same pair in the other order name the same winner?

    Rows are matched on question, judge, criterion and round with the two models
    swapped. Only valid verdicts count; with repeated votes, a row agrees when every
    verdict of the other order names its winner. Missing (``pd.NA``) when there is no
    valid verdict in the other order, or the row itself is invalid.

    Parameters
    ----------
    verdicts : columns ``question_id, judge, model_a, model_b, verdict, valid`` and
        optionally ``criterion, round`` (as :func:`run_verdicts` builds them).
    """
    keys = ["question_id", "judge", "criterion", "round"]
    data = verdicts.copy()
    for column in ("criterion", "round"):
        if column not in data.columns:
            data[column] = None
    data[["criterion", "round"]] = data[["criterion", "round"]].astype(object).fillna("").astype(str)
    valid = data[data["valid"].astype(bool)]
    other = (valid.groupby(keys + ["model_a", "model_b"], sort=False)["verdict"]
             .agg(lambda v: frozenset(v)).rename("other").reset_index()
             .rename(columns={"model_a": "model_b", "model_b": "model_a"}))
    merged = data.reset_index().merge(other, on=keys + ["model_a", "model_b"], how="left").set_index("index")
    merged = merged.reindex(data.index)
    result = pd.Series(pd.NA, index=data.index, dtype="boolean")
    has = merged["other"].notna() & data["valid"].astype(bool)
    result[has] = [v == next(iter(o)) and len(o) == 1 if len(o) else pd.NA
                   for v, o in zip(merged.loc[has, "verdict"], merged.loc[has, "other"])]
    return result


def filter_verdicts(verdicts: pd.DataFrame, *, judges: Iterable[str] | None = None, invalid_only: bool = False,
                    disagreeing_only: bool = False) -> pd.DataFrame:
    """The rows a reviewer asked for: by judge, only invalid replies, only pairs whose orders disagree."""
    mask = pd.Series(True, index=verdicts.index)
    if judges:
        mask &= verdicts["judge"].isin(list(judges))
    if invalid_only:
        mask &= ~verdicts["valid"].astype(bool)
    if disagreeing_only:
        mask &= verdicts["orders_agree"].eq(False).fillna(False).astype(bool)
    return verdicts[mask]


def verdict_summary(verdicts: pd.DataFrame) -> dict[str, int]:
    """Counts for the page's header: verdicts, invalid, pairs judged in both orders, of them disagreeing."""
    both = verdicts["orders_agree"].notna()
    return {"verdicts": int(len(verdicts)), "invalid": int((~verdicts["valid"].astype(bool)).sum()),
            "both_orders": int(both.sum()), "disagreeing": int(verdicts["orders_agree"].eq(False).fillna(False).sum())}
