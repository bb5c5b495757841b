"""Meta-evaluation's three guarantees sections (and the Leaderboard's anchored table), read from the
application layer and cached per revision.

* the evaluator leaderboard (:func:`peercore.app.guarantees.evaluator_leaderboard`,
  ``peercore judges``): every LLM judge as an evaluator, issue 24 section 3;
* the judge's scores anchored to human labels (:func:`peercore.app.calibration.calibrated_leaderboard`,
  ``peercore calibrate``): PPI++ scores, the judge-only and humans-only ones beside them,
  effective labels, and the Rogan-Gladen corrected judge score (issue 23);
* the escalation plan (:func:`peercore.app.guarantees.escalation_plan`, ``peercore escalate
  --dry-run``): a cascade of judges with a promised agreement (issue 24 section 1).

Nothing here computes a number: each function calls the one the CLI calls, through the
study handle's per-revision memo, and turns its result into a display frame with words
for headers. A study that cannot give a section its input gets a sentence saying why
(:class:`SectionUnavailable`), never an error.
"""

from __future__ import annotations

import math

import pandas as pd

from peercore.app.calibration import CalibratedLeaderboard, calibrated_leaderboard
from peercore.app.guarantees import EscalationPlan, EvaluatorLeaderboard, escalation_plan, evaluator_leaderboard
from peercore.ui import data, safe

__all__ = ["SectionUnavailable", "evaluators", "evaluator_display", "EVALUATOR_LABELS", "EVALUATOR_HELP",
           "references", "llm_judges", "anchored", "anchored_display", "anchored_decimals", "ANCHORED_LABELS",
           "leaderboard_anchored", "reference_label", "anchored_sentence",
           "plan", "plan_display",
           "PLAN_LABELS"]


class SectionUnavailable(Exception):
    """This study cannot fill the section; the message says why, in one sentence for the page."""


def _memo(db: str, study: str, key: tuple, make):
    handle = data.study(db, study)
    return handle.cached(("ui.guarantees", *key), lambda: make(handle))


def _unavailable(make):
    """``make`` with its ValueError (a study that lacks the input) turned into :class:`SectionUnavailable`."""
    def run(handle):
        try:
            return make(handle)
        except ValueError as exc:
            return SectionUnavailable(str(exc))
    return run


def _result(value):
    if isinstance(value, SectionUnavailable):
        raise value
    return value


# ------------------------------------------------------------------ evaluator leaderboard

EVALUATOR_LABELS = {
    "judge": "Judge", "verdicts": "Verdicts", "human_n": "Human-judged comparisons",
    "human_agreement": "Agreement with humans", "human_agreement_interval": "95% interval",
    "human_agreement_without_ties": "Agreement, no ties", "cohen_kappa": "Cohen's kappa",
    "fleiss_kappa": "Fleiss' kappa", "spearman": "Spearman vs humans' ranking", "kendall": "Kendall vs humans",
    "stability": "Stability over samples", "position_consistency": "Same verdict in both orders",
    "p_first": "P(prefers first)", "p_longer": "P(prefers longer)", "p_lists": "P(prefers lists)",
    "unparsed_share": "Unparsed share", "price_per_1000": "USD per 1,000", "seconds_per_1000": "Seconds per 1,000",
}
EVALUATOR_HELP = {
    "human_agreement": "Share of comparisons where the judge's verdict equals the human majority, ties included "
                       "(PRD Table 3; the 'Against human annotations' table above, same function), with its 95% Wilson "
                       "interval.",
    "human_agreement_without_ties": "The same on the comparisons neither the judge nor the humans called a tie.",
    "spearman": "Rank correlation between the judge's Bradley-Terry leaderboard and the humans' over the "
                "contestants both ranked (PRD Table 2).",
    "stability": "Share of the judge's votes equal to its own majority over repeated samples of one comparison.",
    "position_consistency": "Share of comparisons judged in both orders where both verdicts agree "
                            "(MT-Bench Table 2); empty where the order shown is unknown.",
    "p_first": "How often the judge prefers the answer shown first (0.5 = no position bias).",
    "p_longer": "How often the judge prefers the longer answer (Zheng et al. 2023, section 3.3).",
    "p_lists": "How often the judge prefers the answer with more list items.",
    "price_per_1000": "The runs' recorded cost per 1,000 verdicts; empty for imported verdicts.",
}
_EVALUATOR_SHOWN = ["judge", "verdicts", "human_agreement", "human_agreement_interval", "cohen_kappa", "spearman",
                    "stability", "position_consistency", "p_first", "p_longer", "unparsed_share", "price_per_1000"]
_EVALUATOR_MORE = ["human_n", "human_agreement_without_ties", "fleiss_kappa", "kendall", "p_lists",
                   "seconds_per_1000"]


def evaluators(db: str, study: str, rev: int) -> EvaluatorLeaderboard:
    """The study's evaluator leaderboard, as ``peercore judges`` prints it.

    Raises
    ------
    SectionUnavailable
        When the study has no LLM judge.
    """
    return _result(_memo(db, study, ("evaluators",), _unavailable(evaluator_leaderboard)))


def evaluator_display(board: EvaluatorLeaderboard, *, every_column: bool = False) -> pd.DataFrame:
    """The columns that say something for this study (an all-empty column is left out; its note says why).

    The interval is one text column (``low – high``, 3 decimals, missing when unknown) so the
    table fits a 1366 px screen; ``every_column`` adds the rest of ``peercore judges``' columns.
    """
    interval = interval_text(board.table["human_agreement_low"], board.table["human_agreement_high"])
    table = board.table.assign(human_agreement_interval=interval.where(interval != "", None))  # missing: drawn "—"
    columns = _EVALUATOR_SHOWN + (_EVALUATOR_MORE if every_column else [])
    table = table[columns]
    keep = [c for c in table.columns if c in ("judge", "verdicts") or table[c].replace("", None).notna().any()]
    return table[keep].reset_index(drop=True)


def interval_text(low: pd.Series, high: pd.Series, *, decimals: int = 3) -> pd.Series:
    """``low – high`` per row with ``decimals`` decimals (as every interval on the pages); '' where an end is missing."""
    def one(a, b) -> str:
        return "" if pd.isna(a) or pd.isna(b) else f"{a:.{decimals}f} – {b:.{decimals}f}"
    return pd.Series([one(a, b) for a, b in zip(low, high)], index=low.index, dtype=object)


# ------------------------------------------------------------------ anchored to human labels

ANCHORED_LABELS = {
    "model": "Model", "score": "Anchored score", "interval": "95% interval", "judge_score": "Judge alone",
    "reference_score": "Humans alone", "reference_interval": "Humans' interval", "effective_labels": "Effective labels",
    "labelled": "Labelled", "corrected_score": "Judge corrected", "corrected_interval": "Corrected interval",
}
ANCHORED_HELP = {
    "score": "The humans' score estimated from all the judge's comparisons and the human labels (PPI++, "
             "Angelopoulos et al. 2023, eq. 7 with power tuning); low / high: 95% interval.",
    "judge_score": "The judge's own score, no correction.",
    "reference_score": "The score from the human labels alone (PPI++ at lambda = 0), with its classical interval.",
    "effective_labels": "How many human labels the anchored estimate is worth: n x Var(humans alone) / Var(anchored).",
    "corrected_score": "The judge's win rate corrected with its loss / tie / win confusion matrix on the labelled "
                       "comparisons (Rogan-Gladen; Lee et al. 2025, section 3), interval from both samples.",
}
_ANCHORED_SHOWN = ["model", "score", "interval", "judge_score", "reference_score", "reference_interval",
                   "effective_labels", "labelled", "corrected_score", "corrected_interval"]


def references(db: str, study: str, rev: int) -> list[str]:
    """The human judges of the study (possible references), ``human:`` (all of them) first when there are several."""
    judges = data.study(db, study).judges()
    humans = sorted(judges.loc[judges["kind"] == "human", "name"].astype(str))
    return (["human:"] if len(humans) > 1 else []) + humans


def llm_judges(db: str, study: str, rev: int) -> list[str]:
    """The LLM judges of the study, by name."""
    judges = data.study(db, study).judges()
    return sorted(judges.loc[judges["kind"] == "llm", "name"].astype(str))


def anchored(db: str, study: str, rev: int, *, judge: str, reference: str, method: str,
             labels: int | None = None, seed: int = 0) -> CalibratedLeaderboard:
    """``peercore calibrate --judge J --reference R --method M [--labels N --seed K]`` for the page.

    Raises
    ------
    SectionUnavailable
        When the reference has no vote on the judge's comparisons, or the judge cannot be
        anchored (the message of :func:`peercore.app.calibration.calibrated_leaderboard`).
    """
    key = ("anchored", judge, reference, method, labels, seed)
    make = _unavailable(lambda handle: calibrated_leaderboard(handle, judge=judge, reference=reference,
                                                              method=method, labels=labels, seed=seed))
    return _result(_memo(db, study, key, make))


def anchored_display(board: CalibratedLeaderboard) -> pd.DataFrame:
    """The anchored leaderboard for the page: intervals as ``[low, high]`` text, the corrected score where it exists.

    The numbers themselves stay in the frame's other columns (``ci_low``...) for ``peercore
    calibrate --format json``; the page shows what fits a 1366 px screen.
    """
    table = board.table
    shown = table.assign(interval=interval_text(table["ci_low"], table["ci_high"], decimals=_decimals(board)),
                         reference_interval=interval_text(table["reference_ci_low"], table["reference_ci_high"],
                                                          decimals=_decimals(board)))
    if "corrected_score" in table.columns:
        shown = shown.assign(corrected_interval=interval_text(table["corrected_ci_low"], table["corrected_ci_high"]))
    columns = [c for c in _ANCHORED_SHOWN if c in shown.columns]
    return shown[columns].reset_index(drop=True)


def _decimals(board: CalibratedLeaderboard) -> int:
    """Ratings with 1 decimal, win rates with 3 (the dashboard's rule)."""
    return 1 if board.method == "bt" else 3


def anchored_decimals(board: CalibratedLeaderboard) -> dict[str, int]:
    """The decimals of :func:`anchored_display`'s number columns (:func:`_decimals` for the scores)."""
    scores = {c: _decimals(board) for c in ("score", "judge_score", "reference_score")}
    return {"effective_labels": 0, **scores}


def leaderboard_anchored(db: str, study: str, rev: int, *, judge: str, reference: str, method: str,
                         baseline: str | None = None) -> CalibratedLeaderboard:
    """The Leaderboard's "Anchor to human labels" table: :func:`anchored` with every label, or against a baseline.

    ``peercore calibrate --judge J --reference R --method M [--baseline B]``, through the
    same per-revision memo as Meta-evaluation's section (a decision on Adjudication makes a
    new revision, so it shows at once).

    Raises
    ------
    SectionUnavailable
        As :func:`anchored` (e.g. no label on the judge's comparisons).
    """
    if baseline is None:
        return anchored(db, study, rev, judge=judge, reference=reference, method=method)
    key = ("anchored", judge, reference, method, None, 0, baseline)
    make = _unavailable(lambda handle: calibrated_leaderboard(handle, judge=judge, reference=reference,
                                                              method=method, baseline=baseline))
    return _result(_memo(db, study, key, make))


_REFERENCE_WORDS = {"human:": "every human judge", "adjudicator:": "every adjudicator (decisions on Adjudication)"}


def reference_label(reference: str) -> str:
    """A reference in words for a picker: ``human:,adjudicator:`` -> "every human judge + every adjudicator (...)".

    Names stay as they are (the picker renders them as text).
    """
    return " + ".join(_REFERENCE_WORDS.get(part.strip(), part.strip()) for part in str(reference).split(","))


def anchored_sentence(board: CalibratedLeaderboard) -> str:
    """One sentence saying how many labels anchored ``board``, for the page (names as code spans).

    "Anchored on 1,760 human labels (votes of every human judge, `--reference human:`) on 800
    of judge `gpt4`'s 800 comparisons: together with the judge they are worth 800 labels
    (median effective labels over the models)."
    """
    worth = ("" if board.effective_labels != board.effective_labels
             else f": together with the judge they are worth {board.effective_labels:,.0f} labels (median effective "
                  "labels over the models)")
    whose = " + ".join(_REFERENCE_WORDS.get(part.strip()) or safe.code(part.strip())
                       for part in str(board.reference).split(","))
    return (f"Anchored on {board.labels:,} human label{'s' if board.labels != 1 else ''} (votes of {whose}, "
            f"{safe.code('--reference ' + str(board.reference))}) on {board.labelled_comparisons:,} of judge "
            f"{safe.code(board.judge)}'s {board.comparisons:,} comparisons{worth}.")


# ------------------------------------------------------------------ escalation plan

PLAN_LABELS = {
    "stage": "Stage", "threshold": "Confidence threshold", "reach": "Reaches this stage", "kept_share": "Kept here",
    "kept": "Kept (of all)", "agreement": "Agreement on calibration", "upper_bound_disagreement": "Disagreement bound",
    "guarantee": "Promised agreement", "level": "With probability", "cost_per_1000": "USD per 1,000",
}


def plan(db: str, study: str, rev: int, *, cascade: tuple[str, ...], reference: str, target_agreement: float,
         risk: float) -> EscalationPlan:
    """``peercore escalate --cascade ... --reference R --target-agreement A --risk D --dry-run`` for the page.

    Raises
    ------
    SectionUnavailable
        When the cascade has no human-labelled comparisons to calibrate on (the message of
        :func:`peercore.app.guarantees.escalation_plan`).
    """
    key = ("plan", tuple(cascade), reference, target_agreement, risk)
    make = _unavailable(lambda handle: escalation_plan(handle, cascade=list(cascade), reference=reference,
                                                       target_agreement=target_agreement, risk=risk))
    return _result(_memo(db, study, key, make))


#: How the plan's table writes a stage without a usable threshold (an infinite one: the judge keeps no verdict).
NO_THRESHOLD = "no threshold (keeps none)"


def plan_display(result: EscalationPlan) -> pd.DataFrame:
    """One row per stage, then humans; the columns of the plan's table, every cell as the pages' rule reads.

    The threshold is text: 3 decimals, :data:`NO_THRESHOLD` in words where it is infinite,
    missing (drawn "—") for the humans' row; other missing cells are missing numbers, never "None".
    """
    frame = pd.DataFrame(result.stages)
    frame = frame[[c for c in PLAN_LABELS if c in frame.columns]].copy()
    for column in frame.columns:
        if column in ("stage", "threshold"):
            continue
        numbers = pd.to_numeric(frame[column], errors="coerce")
        if numbers.notna().sum() == frame[column].notna().sum():  # numbers with None for missing: NaN
            frame[column] = numbers.astype(float)
    if "threshold" in frame.columns:
        frame["threshold"] = [_threshold_text(t) for t in frame["threshold"]]
    return frame


def _threshold_text(value) -> str | None:
    """A confidence threshold in words: 3 decimals, :data:`NO_THRESHOLD` when infinite, None when absent."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    number = float(value)
    return f"{number:.3f}" if math.isfinite(number) else NO_THRESHOLD
