"""Human annotations: one row per annotator vote; majority labels and agreement derived on read.

File format (CSV, JSONL / JSON array, Parquet), one row per vote::

    question_id, model_a, model_b, annotator, winner[, criterion, turn, note]

``model_a`` is the answer the annotator saw first; ``winner`` is ``model_a``, ``model_b``
or ``tie`` (``tie (bothbad)`` reads as ``tie``). Each vote becomes one canonical
judgment by ``human:<annotator>`` (``note`` becomes the rationale). An annotator voting
twice on the same comparison (same question, pair, order, criterion and turn) is an
error that names both lines: the store keeps votes, and a duplicate would count twice.

Nothing derived is stored: :func:`majority_labels` (the per-comparison majority, with
:func:`peercore.agreement.majority_vote`) and :func:`annotator_agreement` (Fleiss' kappa
and raw agreement between annotators, with :func:`peercore.agreement.fleiss_kappa`) are
computed from the stored votes whenever they are needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from peercore.io._common import Bundle, check_identifiers, fail, quote, require_columns, table_records
from peercore.io.canonical import _careful_canonical, _judges_of
from peercore.agreement import fleiss_kappa, majority_vote
from peercore.judgments import COLUMNS, judgments_from_frame

__all__ = ["read_human_annotations", "majority_labels", "annotator_agreement", "AnnotatorAgreement",
           "HUMAN_PREFIX"]

HUMAN_PREFIX = "human:"
_FLIP = {"model_a": "model_b", "model_b": "model_a", "tie": "tie"}


def read_human_annotations(path: str | Path) -> Bundle:
    """Read a file of annotator votes (see the module docstring).

    Raises
    ------
    JudgmentError
        Naming file, line and field: a missing column, an empty annotator, an unknown
        winner, ``model_a == model_b``, an annotator who voted twice on one comparison,
        an identifier that looks like a spreadsheet formula, ...
    """
    path = Path(path)
    name = path.name
    frame, line_of = table_records(path)
    require_columns(frame, ("question_id", "model_a", "model_b", "annotator", "winner"), source=name,
                    what="human annotations")
    if "judge" in frame.columns:
        fail("has both 'annotator' and 'judge' columns; human annotations name the annotator only",
             source=name, line=1, column="judge")
    check_identifiers(frame, ("question_id", "model_a", "model_b", "annotator", "criterion"), source=name,
                      line_of=line_of)
    raw = frame.rename(columns={"annotator": "judge", "note": "rationale"})
    votes = _careful_canonical(raw, name=name, line_of=line_of, judge_prefix=HUMAN_PREFIX)
    key = votes[["question_id", "model_a", "model_b", "judge", "criterion", "turn"]].astype(object).fillna("")
    repeated = key.duplicated(keep="first").to_numpy()
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        first = int(np.flatnonzero((key == key.iloc[row]).all(axis=1).to_numpy())[0])
        fail(f"annotator {quote(frame['annotator'].iloc[row])} voted twice on question {quote(votes['question_id'].iloc[row])}, "
             f"{votes['model_a'].iloc[row]} vs {votes['model_b'].iloc[row]} (first vote on line {line_of(first)})",
             source=name, line=line_of(row), column="annotator", value=frame["annotator"].iloc[row])
    judges = [{**j, "kind": "human"} for j in _judges_of(votes)]
    return Bundle(source=str(path), format="human", judgments=votes, judges=judges, files=[path],
                  notes={"human_votes": len(votes), "annotators": len(judges)}, judgment_lines=line_of)


def _human_rows(judgments: pd.DataFrame, judges: str) -> pd.DataFrame:
    if judges.endswith(":"):
        return judgments[judgments["judge"].str.startswith(judges)].reset_index(drop=True)
    return judgments[judgments["judge"] == judges].reset_index(drop=True)


def majority_labels(judgments: pd.DataFrame, *, judges: str = HUMAN_PREFIX, tie_margin: float = 0.0,
                    judge_name: str = "vote:human-majority") -> pd.DataFrame:
    """The majority label of each comparison among the human votes (never stored).

    Parameters
    ----------
    judgments : canonical judgments (e.g. ``store.verdicts.table(study)``); only the rows of
        ``judges`` are used.
    judges : a judge name, or a prefix ending in ``:`` (default every ``human:`` judge).
    tie_margin, judge_name : as :func:`peercore.agreement.majority_vote` (sign of the
        mean vote, PRD section 4; a 1-1 split is a tie).

    Returns
    -------
    DataFrame
        Canonical table, one row per ordered comparison, ``judge = judge_name``.
    """

    return majority_vote(_human_rows(judgments, judges), tie_margin=tie_margin, judge_name=judge_name)


@dataclass(frozen=True)
class AnnotatorAgreement:
    """Agreement among annotators on the comparisons they share.

    Attributes
    ----------
    n_items : comparisons counted (those with exactly ``raters_per_item`` votes).
    n_annotators : distinct annotators among the votes.
    raters_per_item : votes per counted comparison (the most common count >= 2).
    fleiss_kappa : Fleiss' kappa over those items (NaN when undefined).
    percent_agreement : mean share of agreeing vote pairs per item (Fleiss' P-bar).
    n_items_skipped : comparisons with a different number of votes (not counted).
    """

    n_items: int
    n_annotators: int
    raters_per_item: int
    fleiss_kappa: float
    percent_agreement: float
    n_items_skipped: int


def annotator_agreement(judgments: pd.DataFrame, *, judges: str = HUMAN_PREFIX) -> AnnotatorAgreement:
    """Inter-annotator agreement of the human votes (Fleiss 1971), derived on read.

    A comparison is (question, unordered pair, criterion, turn): a vote on (q, B, A) is
    mirrored onto (q, A, B) first, so annotators who saw the answers in different orders
    are compared on the same verdict. Fleiss' kappa needs the same number of raters per
    item, so only the items with the most common vote count (at least 2) are used; the
    others are reported in ``n_items_skipped``.
    """

    if any(c not in judgments.columns for c in COLUMNS):
        judgments = judgments_from_frame(judgments)
    votes = _human_rows(judgments, judges)
    n_annotators = int(votes["judge"].nunique())
    if len(votes) == 0:
        return AnnotatorAgreement(0, 0, 0, math.nan, math.nan, 0)
    swap = (votes["model_a"] > votes["model_b"]).to_numpy()
    first = np.where(swap, votes["model_b"], votes["model_a"])
    second = np.where(swap, votes["model_a"], votes["model_b"])
    winner = np.where(swap, votes["winner"].map(_FLIP), votes["winner"])
    items = pd.DataFrame({"q": votes["question_id"].astype(object), "a": first, "b": second,
                          "c": votes["criterion"].astype(object).fillna(""),
                          "t": votes["turn"].astype(object).fillna(""), "w": winner})
    groups = items.groupby(["q", "a", "b", "c", "t"], sort=True)["w"].apply(list)
    sizes = groups.map(len)
    counts = sizes[sizes >= 2].value_counts()
    if counts.empty:
        return AnnotatorAgreement(0, n_annotators, 0, math.nan, math.nan, int(len(groups)))
    raters = int(counts.sort_index(ascending=False).idxmax())
    chosen = groups[sizes == raters]
    ratings = np.array(chosen.tolist(), dtype=object)
    kappa = fleiss_kappa(ratings)
    agree = []
    for labels in chosen:
        _, n_each = np.unique(np.asarray(labels, dtype=object).astype(str), return_counts=True)
        agree.append(float((n_each * (n_each - 1)).sum()) / (raters * (raters - 1)))
    return AnnotatorAgreement(int(len(chosen)), n_annotators, raters, float(kappa), float(np.mean(agree)),
                              int(len(groups) - len(chosen)))
