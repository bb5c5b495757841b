"""Reader for the PRD Vicuna80 ratings layout (bcdnlp/PRD, ``data/vicuna80``).

Layout::

    ratings-<reviewer>/answer_<A>-vs-answer_<B>-<reviewer>-reviewer[_threeclass].jsonl

one JSON object per line with ``question_id``, ``score`` and (LLM reviewers) the review
``text``. PRD's score convention is mapped to the canonical table at import:
``1`` -> model_a (answer A better), ``2`` -> model_b, ``3`` -> tie. A handful of LLM
reviews carry ``-1`` (the review could not be parsed); the PRD notebook counts them
as ties, and so do we, so that the paper's numbers reproduce.

Human votes (``ratings-human``) carry no annotator id; each vote becomes one row with
judge ``human:prd``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from peercore.errors import JudgmentError
from peercore.judgments import judgments_from_frame

__all__ = ["read_prd_judgments", "PRD_HUMAN_JUDGE", "PRD_SCORE_TO_WINNER"]

PRD_HUMAN_JUDGE = "human:prd"
PRD_SCORE_TO_WINNER = {1: "model_a", 2: "model_b", 3: "tie", -1: "tie"}


def _file_pattern(reviewer: str) -> re.Pattern:
    """answer_<A>-vs-answer_<B>-<reviewer>-reviewer[_-threeclass].jsonl (model names may hold '-')."""
    return re.compile(
        rf"^answer_(?P<a>.+?)-vs-answer_(?P<b>.+)-{re.escape(reviewer)}-reviewer(?:[_-]threeclass)?\.jsonl$"
    )


def read_prd_judgments(
    folder: str | Path,
    *,
    models: list[str] | None = None,
    reviewers: list[str] | None = None,
) -> pd.DataFrame:
    """Read every PRD ratings file under ``folder`` into one canonical judgment table.

    Parameters
    ----------
    folder : the ``vicuna80`` folder holding ``ratings-*/``.
    models : keep only battles between these contestants (PRD's five: bard, claude,
        gpt35, gpt4, vicuna-13b); default all.
    reviewers : keep only these rating folders (``gpt4``, ``human``, ...); default all.

    Notes
    -----
    Only the ``answer_`` (underscore) file names are read. ``ratings-gpt35`` also holds
    ``answer-gpt35-vs-answer-gpt4-...`` (hyphen) files, a second GPT-3.5 run on one
    pair that the PRD notebook does not use; they are skipped.

    Raises
    ------
    JudgmentError
        Naming the file and line of a record that is not valid JSON or has an unknown
        ``score``.
    """
    folder = Path(folder)
    rating_dirs = sorted(p for p in folder.glob("ratings-*") if p.is_dir())
    if not rating_dirs:
        raise JudgmentError("no ratings-*/ folders found; is this a PRD vicuna80 folder?", source=str(folder))
    frames = []
    for rating_dir in rating_dirs:
        reviewer = rating_dir.name.removeprefix("ratings-")
        if reviewers is not None and reviewer not in reviewers:
            continue
        judge = PRD_HUMAN_JUDGE if reviewer == "human" else reviewer
        pattern = _file_pattern(reviewer)
        for path in sorted(rating_dir.glob("answer_*.jsonl")):
            match = pattern.match(path.name)
            if not match:
                continue
            model_a, model_b = match["a"], match["b"]
            if models is not None and (model_a not in models or model_b not in models):
                continue
            frames.append(_read_file(path, model_a, model_b, judge))
    if not frames:
        raise JudgmentError("no PRD ratings matched the requested models and reviewers", source=str(folder))
    return judgments_from_frame(pd.concat(frames, ignore_index=True), source=str(folder))


def _read_file(path: Path, model_a: str, model_b: str, judge: str) -> pd.DataFrame:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise JudgmentError(f"not valid JSON ({exc.msg})", source=path.name, line=number) from None
            score = record.get("score")
            if score not in PRD_SCORE_TO_WINNER:
                raise JudgmentError(
                    f"score {score!r} is not one of 1 (A better), 2 (B better), 3 (tie), -1 (unparsed)",
                    source=path.name, line=number, column="score", value=score,
                )
            rows.append({
                "question_id": str(record["question_id"]),
                "model_a": model_a,
                "model_b": model_b,
                "judge": judge,
                "winner": PRD_SCORE_TO_WINNER[score],
                "rationale": record.get("text") if judge != PRD_HUMAN_JUDGE else None,
            })
    return pd.DataFrame(rows)
