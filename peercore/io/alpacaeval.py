"""AlpacaEval annotations (Dubois et al. 2023, ``alpaca_eval`` ``annotations.json``).

A JSON array (or JSONL / CSV) of records::

    {"instruction": "...", "output_1": "...", "output_2": "...",
     "generator_1": "gpt4_turbo", "generator_2": "my-model",
     "annotator": "weighted_alpaca_eval_gpt4_turbo", "preference": 1.73}

``output_1`` was shown first, so ``model_a = generator_1`` and ``model_b = generator_2``.
``preference`` follows ``alpaca_eval.metrics.pairwise_to_winrate``: 1 = output_1 better,
2 = output_2 better, 1.5 (or the legacy 0) = tie, and a float in [1, 2] is
``1 + P(output_2 better)`` (the weighted annotators). So ``p_a = 2 - preference``, and
the winner is model_a below 1.5, model_b above, tie at 1.5. A missing preference (the
annotator produced no verdict) is kept as an invalid verdict; anything else outside
{0} U [1, 2] is an error.

There is no question id in AlpacaEval: ``question_id`` is ``alpaca:`` plus the first
12 hex digits of the SHA-256 of the instruction (stable across files), unless the record
has a ``question_id`` or ``instruction_id``. The instructions and both outputs are
imported as questions and answers (``dataset`` becomes the category). The judge is
``alpacaeval:<annotator>`` (``alpacaeval:annotator`` when the field is missing).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pandas as pd

from peercore.io._common import (
    Bundle,
    dedupe_answers,
    dedupe_questions,
    fail,
    first_non_scalar,
    is_missing,
    plain,
    quote,
    require_columns,
    table_records,
)
from peercore.io.rules import kind_of
from peercore.io.canonical import _careful_canonical, _judges_of

__all__ = ["read_alpacaeval", "alpaca_question_id"]

REQUIRED = ("instruction", "output_1", "output_2", "generator_1", "generator_2", "preference")


def alpaca_question_id(instruction: str) -> str:
    """``alpaca:`` + 12 hex digits of SHA-256(instruction)."""
    return "alpaca:" + hashlib.sha256(instruction.encode("utf-8")).hexdigest()[:12]


def read_alpacaeval(path: str | Path) -> Bundle:
    """Read AlpacaEval annotations.

    Raises
    ------
    JudgmentError
        Naming file, line and field: a missing field, an empty generator, a preference
        that is not a number in {0} U [1, 2], an instruction that is not text, a
        generator given two different outputs for one instruction (in two records).
    """
    path = Path(path)
    name = path.name
    frame, line_of = table_records(path)
    require_columns(frame, REQUIRED, source=name, what="AlpacaEval annotations")
    for column in ("question_id", "instruction_id", "annotator", "dataset", "generator_1", "generator_2", "preference"):
        row = first_non_scalar(frame[column]) if column in frame.columns else None
        if row is not None:
            value = frame[column].iloc[row]
            fail(f"{column} is {kind_of(value)} ({quote(value)}); one value is expected", source=name,
                 line=line_of(row), row=row, column=column, value=quote(value))
    for column in ("output_1", "output_2"):
        texts = frame[column].tolist()
        bad = next((row for row, value in enumerate(texts) if not isinstance(value, str)), None)
        if bad is not None:
            fail(f"{column} {quote(plain(texts[bad]))} is not a text", source=name, line=line_of(bad), row=bad,
                 column=column, value=quote(plain(texts[bad])))
    n = len(frame)
    qids, winners, p_a, valid, raws = [], [], [], [], []
    for row in range(n):
        instruction = plain(frame["instruction"].iloc[row])
        if not isinstance(instruction, str) or not instruction.strip():
            fail(f"instruction {quote(instruction)} is not a text", source=name, line=line_of(row),
                 column="instruction", value=quote(instruction))
        given_id = next((frame[c].iloc[row] for c in ("question_id", "instruction_id") if c in frame.columns
                         and not is_missing(frame[c].iloc[row])), None)
        qids.append(str(given_id) if given_id is not None else alpaca_question_id(instruction))
        preference = plain(frame["preference"].iloc[row])
        if is_missing(preference):
            winners.append(None), p_a.append(None), valid.append(0), raws.append("preference missing")
            continue
        number = _number(preference)
        if number is None or not (number == 0 or 1 <= number <= 2):
            fail(f"preference {quote(preference)} is not 1 (output_1), 2 (output_2), 1.5 / 0 (tie) or a number in [1, 2]",
                 source=name, line=line_of(row), column="preference", value=preference)
        if number == 0:
            number = 1.5
        winners.append("model_a" if number < 1.5 else "model_b" if number > 1.5 else "tie")
        p_a.append(2.0 - number)
        valid.append(1)
        raws.append(None)
    annotator = frame["annotator"] if "annotator" in frame.columns else pd.Series(["annotator"] * n)
    judges = ["alpacaeval:" + (str(a) if not is_missing(a) else "annotator") for a in annotator]
    judgments = pd.DataFrame({"question_id": qids, "model_a": frame["generator_1"].to_numpy(),
                              "model_b": frame["generator_2"].to_numpy(), "judge": judges, "winner": winners,
                              "p_a": pd.array(p_a, dtype="Float64").astype(float), "valid": valid, "raw": raws})
    judgments = _careful_canonical(judgments, name=name, line_of=line_of, judge_prefix=None)
    category = frame["dataset"].astype(object).where(frame["dataset"].notna(), "").astype(str) \
        if "dataset" in frame.columns else pd.Series([""] * n)
    questions = dedupe_questions(pd.DataFrame({
        "question_id": pd.array(qids, dtype="str"), "text": frame["instruction"].astype(str).to_numpy(),
        "category": category.to_numpy(), "reference": [None] * n, "metadata": [{} for _ in range(n)],
    }), source=name, line_of=line_of)
    # Both outputs of each record, in the file's order (record 0's output_1, its output_2, record 1's ...).
    answers = pd.DataFrame({
        "question_id": np.repeat(np.asarray(qids, dtype=object), 2),
        "model": np.column_stack([judgments["model_a"].to_numpy(dtype=object),
                                  judgments["model_b"].to_numpy(dtype=object)]).ravel(),
        "turn": 1,
        "answer": np.column_stack([frame["output_1"].astype(str).to_numpy(dtype=object),
                                   frame["output_2"].astype(str).to_numpy(dtype=object)]).ravel(),
    })
    answers = dedupe_answers(answers, source=name, where=lambda row: (line_of(row // 2), f"output_{row % 2 + 1}"))
    return Bundle(source=str(path), format="alpacaeval", order="unknown", questions=questions, answers=answers,
                  judgments=judgments, judges=_judges_of(judgments), files=[path], judgment_lines=line_of)


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None

