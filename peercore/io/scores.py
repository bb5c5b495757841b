"""Human scores and judges' absolute scores: per-candidate ratings for the NLG assessment.

Scores belong to one candidate (``model``) in one context (``question_id``), not to a
pair, so they are not verdicts: they go to the store's ``human_scores`` and
``judge_scores`` tables (:meth:`peercore.store.Store.scores.add_human_scores`,
:meth:`~peercore.store.Store.scores.add_judge_scores`). Three formats:

``human-scores`` (a generic table; CSV, JSONL / JSON array, Parquet)
    ``question_id, model`` and one column per attribute (any name, any numeric scale)::

        question_id,model,coherence,engagingness
        dlg-1,system-a,2.67,3
        dlg-1,system-b,1.33,

    Every column other than ``question_id`` and ``model`` is an attribute. An empty cell
    is "not rated" (nothing stored, counted in the notes); anything else must be a finite
    number (not a boolean, not text such as ``"high"``), within +-1e12. A (question_id,
    model) pair given twice is refused naming both lines.
``usr`` (TopicalChat / PersonaChat USR ratings in UniEval's layout)
    A JSON array of records ``source, context, system_id, system_output, scores``
    (Mehri & Eskenazi 2020, USR; UniEval's ``reproduce/data/dialogue/*.json``). Records
    come in blocks, one record per system, and a block is one *context*: its id is the
    block's position (``topical_chat-00`` ... ``topical_chat-59``), because contexts may
    share their texts (TopicalChat: 60 instances, only 50 distinct ``context`` strings)
    and are still separate contexts. In UniEval's files ``source`` holds the dialogue
    history (one turn per line) and ``context`` the knowledge fact (the README beside
    the data describes them the other way round); the question text shown to judges is
    ``Fact: <context>`` followed by ``Conversation:`` and the turns. Each block gives the
    context's question, one answer per system and the six human scores, each checked
    against USR's scale (:data:`USR_SCALES`).
``judge-scores`` (a judge's absolute scores, as :func:`judge_scores_table` exports them)
    ``question_id, model, judge`` and ``score`` and / or ``expected``, optional
    ``attribute, vote, valid, rationale, raw``. An unreadable reply is a row with
    ``valid`` 0 and its ``raw`` text.

Every reader follows :mod:`peercore.io.rules` (the same careful readers as the other
formats) and refuses a bad row naming the file, the line (or row) and the field,
quoting the bad value; nothing is written until the whole file has passed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from peercore.io._common import (
    Bundle,
    check_identifiers,
    fail,
    json_records,
    quote,
    record_text,
    require_columns,
    table_records,
    text_column,
)
from peercore.io.rules import MAX_IDENTIFIER, is_scalar, kind_of
from peercore.io._common import whole_numbers

__all__ = ["ScoreBundle", "read_human_scores", "read_usr", "read_judge_scores", "judge_scores_table",
           "human_scores_wide", "USR_SCALES", "SCORE_LIMIT"]

# USR (Mehri & Eskenazi 2020) scales as UniEval's copy holds them (means of 3 annotators):
# understandability and groundedness 0-1, naturalness / coherence / engagingness 1-3, overall 1-5.
USR_SCALES: dict[str, tuple[float, float]] = {
    "understandability": (0.0, 1.0), "naturalness": (1.0, 3.0), "coherence": (1.0, 3.0),
    "engagingness": (1.0, 3.0), "groundedness": (0.0, 1.0), "overall": (1.0, 5.0),
}
SCORE_LIMIT = 1e12
_USR_FIELDS = ("source", "context", "system_id", "system_output", "scores")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_RESERVED = ("question_id", "model")
_JUDGE_SCORE_COLUMNS = ("question_id", "model", "judge", "attribute", "vote", "score", "expected", "valid",
                        "rationale", "raw")


@dataclass
class ScoreBundle(Bundle):
    """A :class:`~peercore.io._common.Bundle` that also carries scores.

    Attributes
    ----------
    human_scores : ``question_id, model, attribute, value`` (long form).
    judge_scores : the rows of :meth:`peercore.store.Store.scores.add_judge_scores`.
    score_lines : row of ``human_scores`` / ``judge_scores`` -> line of the file, to
        name the line of a score the store refuses.
    """

    human_scores: pd.DataFrame = field(default_factory=lambda: _empty_human())
    judge_scores: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(_JUDGE_SCORE_COLUMNS)))
    score_lines: object = None

    def is_empty(self) -> bool:
        return super().is_empty() and not len(self.human_scores) and not len(self.judge_scores)

    def score_origin(self, row: int | None) -> tuple[str, int | None]:
        """(file name, line) of score row ``row`` (line None when unknown)."""
        name = Path(self.source).name or self.source
        if self.score_lines is None or row is None:
            return name, None
        try:
            return name, self.score_lines(int(row))
        except (IndexError, KeyError, ValueError, TypeError):
            return name, None


def _empty_human() -> pd.DataFrame:
    return pd.DataFrame({"question_id": pd.Series([], dtype="str"), "model": pd.Series([], dtype="str"),
                         "attribute": pd.Series([], dtype="str"), "value": pd.Series([], dtype=float)})


# ----------------------------------------------------------------------- generic


def read_human_scores(path: str | Path) -> ScoreBundle:
    """Read a generic score table (``question_id, model`` + attribute columns; module docstring).

    Raises
    ------
    JudgmentError
        Naming file, line and field: a missing column, no attribute column, an empty or
        formula-like identifier, a value that is not a finite number (text, a boolean,
        a list, NaN, out of +-1e12), a (question_id, model) pair given twice.
    """
    path = Path(path)
    name = path.name
    frame, line_of = table_records(path)
    require_columns(frame, _RESERVED, source=name, what="human scores")
    attributes = [c for c in frame.columns if c not in _RESERVED]
    if not attributes:
        fail("has no attribute column: a score table is question_id, model and one numeric column per attribute "
             "(e.g. coherence)", source=name, line=1)
    for attribute in attributes:
        _check_attribute_name(attribute, source=name)
    check_identifiers(frame, _RESERVED, source=name, line_of=line_of)
    question = text_column(frame, "question_id", source=name, line_of=line_of)
    model = text_column(frame, "model", source=name, line_of=line_of)
    seen: dict[tuple[str, str], int] = {}
    for row, key in enumerate(zip(question.tolist(), model.tolist())):
        if key in seen:
            fail(f"the scores of {quote(key[1])} in context {quote(key[0])} are given twice (first on line "
                 f"{line_of(seen[key])}); one row per candidate and context", source=name, line=line_of(row),
                 column="model", value=key[1])
        seen[key] = row
    parts, lines, missing = [], [], 0
    for attribute in attributes:
        values = _numbers(frame[attribute], column=attribute, source=name, line_of=line_of)
        given = ~np.isnan(values)
        missing += int((~given).sum())
        parts.append(pd.DataFrame({"question_id": question[given].to_numpy(), "model": model[given].to_numpy(),
                                   "attribute": attribute, "value": values[given]}))
        lines.extend(np.flatnonzero(given).tolist())
    scores = pd.concat(parts, ignore_index=True).astype({"question_id": "str", "model": "str", "attribute": "str"})
    notes = {"human_scores": len(scores), "attributes": ", ".join(attributes), "contexts": int(question.nunique())}
    if missing:
        notes["not_rated"] = missing
    return ScoreBundle(source=str(path), format="human-scores", files=[path], notes=notes, human_scores=scores,
                       score_lines=lambda row: line_of(lines[row]))


def _check_attribute_name(attribute: str, *, source: str) -> None:
    text = str(attribute)
    if not text.strip():
        fail("a column has an empty name; every attribute column needs one", source=source, line=1)
    if text.strip().startswith(("=", "+", "-", "@")) or len(text) > MAX_IDENTIFIER or re.search(r"[\n\r\x00]", text):
        fail(f"attribute column {quote(text)} is not a usable name (a spreadsheet formula, a line break, or longer "
             f"than {MAX_IDENTIFIER:,} characters)", source=source, line=1, column=text)


def _numbers(values: pd.Series, *, column: str, source: str, line_of) -> np.ndarray:
    """A column of scores as floats, NaN where not rated; anything but a finite number refused."""
    out = np.full(len(values), np.nan)
    for row, value in enumerate(values.tolist()):
        if value is None or value is pd.NA or (isinstance(value, str) and not value.strip()) or (
                isinstance(value, float) and math.isnan(value)):  # an empty CSV cell (NaN text is refused below)
            continue
        number = _number(value)
        if number is None:
            shown = quote(value)
            what = kind_of(value) if not is_scalar(value) else ("a boolean" if isinstance(value, (bool, np.bool_))
                                                               else "not a number")
            fail(f"{column} {shown} is {what}; a score is a finite number (leave the cell empty when not rated)",
                 source=source, line=line_of(row), column=column, value=shown)
        if not math.isfinite(number) or abs(number) > SCORE_LIMIT:
            fail(f"{column} {quote(value)} is not a finite number within +-{SCORE_LIMIT:g}", source=source,
                 line=line_of(row), column=column, value=quote(value))
        out[row] = number
    return out


def _number(value: object) -> float | None:
    if isinstance(value, (bool, np.bool_)) or not is_scalar(value):
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    if isinstance(value, str) and _NUMBER.match(value.strip()):
        return float(value.strip())
    if isinstance(value, str) and value.strip().lower() in ("nan", "inf", "-inf", "+inf", "infinity", "-infinity"):
        return float("nan")
    return None


# --------------------------------------------------------------------------- USR


def read_usr(path: str | Path) -> ScoreBundle:
    """Read USR ratings in UniEval's layout (TopicalChat, PersonaChat; module docstring).

    Returns
    -------
    ScoreBundle
        One question per context (``<file stem>-<position>``), one answer per system,
        and the six human scores of every record (long form).

    Raises
    ------
    JudgmentError
        Naming file, line and field: a record that is not an object, a missing field,
        a field holding a list where text is expected, ``scores`` missing an attribute
        or holding an unknown one, a score that is not a number or is outside USR's
        scale (``scores.coherence``), a block whose records do not share their
        dialogue and fact, or a system repeated within a block.
    """
    path = Path(path)
    name = path.name
    records, lines = json_records(path)
    texts = []
    for index, record in enumerate(records):
        line = lines[index]
        missing = [f for f in _USR_FIELDS if f not in record]
        if missing:
            fail(f"record {index + 1} has no field(s) {', '.join(missing)}; a USR record holds "
                 f"{', '.join(_USR_FIELDS)}", source=name, line=line, column=missing[0])
        texts.append({f: record_text(record, f, source=name, line=line) for f in _USR_FIELDS[:4]})
        if not isinstance(record["scores"], dict):
            fail(f"scores is {kind_of(record['scores'])} ({quote(record['scores'])}); expected an object of "
                 "attribute: score", source=name, line=line, column="scores")
    systems = list(dict.fromkeys(t["system_id"] for t in texts))
    size = len(systems)
    if len(records) % size:
        fail(f"holds {len(records)} records for {size} systems; a USR file has one record per system for every "
             "context", source=name)
    stem = path.stem
    width = max(2, len(str(len(records) // size - 1)))
    questions, answers, scores, score_rows = [], [], [], []
    for start in range(0, len(records), size):
        block = texts[start:start + size]
        qid = f"{stem}-{start // size:0{width}d}"
        head = block[0]
        for offset, record in enumerate(block):
            line = lines[start + offset]
            for field_name in ("source", "context"):
                if record[field_name] != head[field_name]:
                    fail(f"record {start + offset + 1} has another {field_name} than the first record of its context "
                         f"(record {start + 1}); records come in blocks of {size}, one per system", source=name,
                         line=line, column=field_name, value=quote(record[field_name]))
            if record["system_id"] in {r["system_id"] for r in block[:offset]}:
                fail(f"system {quote(record['system_id'])} appears twice in the context starting at record "
                     f"{start + 1}", source=name, line=line, column="system_id", value=record["system_id"])
            answers.append({"question_id": qid, "model": record["system_id"], "turn": 1,
                            "answer": record["system_output"].strip()})
            for attribute, value in _usr_scores(records[start + offset]["scores"], source=name, line=line):
                scores.append({"question_id": qid, "model": record["system_id"], "attribute": attribute,
                               "value": value})
                score_rows.append(start + offset)
        questions.append({"question_id": qid, "text": _usr_question(head["source"], head["context"]),
                          "category": "", "reference": None,
                          "metadata": {"fact": head["context"].strip(), "dialogue": head["source"].strip()}})
    question_frame = pd.DataFrame(questions).astype({"question_id": "str", "text": "str", "category": "str"})
    answer_frame = pd.DataFrame(answers).astype({"question_id": "str", "model": "str", "answer": "str"})
    check_identifiers(answer_frame, ("model",), source=name, line_of=lambda row: lines[row])
    human = pd.DataFrame(scores).astype({"question_id": "str", "model": "str", "attribute": "str", "value": float})
    notes = {"contexts": len(questions), "systems": size, "human_scores": len(human),
             "attributes": ", ".join(USR_SCALES), "distinct_context_texts": len({t["context"] for t in texts})}
    return ScoreBundle(source=str(path), format="usr", files=[path], questions=question_frame, answers=answer_frame,
                       notes=notes, human_scores=human, answer_lines=lambda row: lines[row],
                       score_lines=lambda row: lines[score_rows[row]])


def _usr_scores(scores: dict, *, source: str, line) -> list[tuple[str, float]]:
    unknown = [k for k in scores if k not in USR_SCALES]
    if unknown:
        fail(f"scores has attribute {quote(unknown[0])}, which USR does not rate (USR: {', '.join(USR_SCALES)})",
             source=source, line=line, column=f"scores.{unknown[0]}")
    out = []
    for attribute, (low, high) in USR_SCALES.items():
        column = f"scores.{attribute}"
        if attribute not in scores:
            fail(f"scores has no {attribute}; a USR record rates {', '.join(USR_SCALES)}", source=source, line=line,
                 column=column)
        value = scores[attribute]
        number = _number(value) if not isinstance(value, str) else None
        if number is None or not math.isfinite(number):
            fail(f"{attribute} {quote(value)} is not a number", source=source, line=line, column=column,
                 value=quote(value))
        if not low <= number <= high:
            fail(f"{attribute} {quote(value)} is outside USR's {attribute} scale ({low:g} to {high:g})",
                 source=source, line=line, column=column, value=quote(value))
        out.append((attribute, number))
    return out


def _usr_question(dialogue: str, fact: str) -> str:
    turns = [t.strip() for t in dialogue.strip().split("\n") if t.strip()]
    return f"Fact: {fact.strip()}\n\nConversation:\n" + "\n".join(turns)


# -------------------------------------------------------------------- judge scores


def read_judge_scores(path: str | Path) -> ScoreBundle:
    """Read judges' absolute scores (``question_id, model, judge, score | expected ...``).

    Raises
    ------
    JudgmentError
        Naming file, line and field: a missing column, an empty or formula-like name,
        a score that is not a finite number, ``valid`` other than 0 / 1, a valid row
        with no score, a key (question_id, model, judge, attribute, vote) given twice.
    """

    path = Path(path)
    name = path.name
    frame, line_of = table_records(path)
    require_columns(frame, ("question_id", "model", "judge"), source=name, what="judge scores")
    if "score" not in frame.columns and "expected" not in frame.columns:
        fail("has neither a 'score' nor an 'expected' column; judge scores need one of them", source=name, line=1)
    check_identifiers(frame, ("question_id", "model", "judge", "attribute"), source=name, line_of=line_of)
    out = pd.DataFrame({c: text_column(frame, c, source=name, line_of=line_of) for c in ("question_id", "model", "judge")})
    out["attribute"] = (text_column(frame, "attribute", source=name, line_of=line_of, required=False).fillna("")
                        if "attribute" in frame.columns else "")
    out["vote"] = whole_numbers(frame, "vote", source=name, line_of=line_of, default=0).astype(int)
    for column in ("score", "expected"):
        out[column] = (_numbers(frame[column], column=column, source=name, line_of=line_of)
                       if column in frame.columns else np.nan)
    valid = whole_numbers(frame, "valid", source=name, line_of=line_of, default=1)
    bad = ~valid.isin([0, 1]).to_numpy(dtype=bool)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        fail(f"valid {quote(frame['valid'].iloc[row])} must be 0 or 1", source=name, line=line_of(row), column="valid",
             value=frame["valid"].iloc[row])
    out["valid"] = valid.astype(int)
    empty = (out["valid"] == 1) & out["score"].isna() & out["expected"].isna()
    if empty.any():
        row = int(np.flatnonzero(empty.to_numpy())[0])
        fail("a valid score needs 'score' or 'expected' (both are empty); mark an unreadable reply with valid 0",
             source=name, line=line_of(row), column="score")
    for column in ("rationale", "raw"):
        out[column] = (text_column(frame, column, source=name, line_of=line_of, required=False).astype(object)
                       .where(lambda s: s.notna(), None) if column in frame.columns else None)
    key = out[["question_id", "model", "judge", "attribute", "vote"]].astype(str).agg("\x1f".join, axis=1)
    repeated = key.duplicated().to_numpy()
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        first = int(np.flatnonzero((key == key.iloc[row]).to_numpy())[0])
        fail(f"the score of {quote(out['model'].iloc[row])} by {quote(out['judge'].iloc[row])} in context "
             f"{quote(out['question_id'].iloc[row])} is given twice (first on line {line_of(first)}); repeated "
             "scores need distinct 'vote' numbers", source=name, line=line_of(row), column="judge")
    judges = [{"name": j, "kind": "llm"} for j in dict.fromkeys(out["judge"])]
    notes = {"judge_scores": int(out["valid"].sum()), "unreadable_scores": int((out["valid"] == 0).sum())}
    return ScoreBundle(source=str(path), format="judge-scores", files=[path], judges=judges, notes=notes,
                       judge_scores=out, score_lines=line_of)


# ------------------------------------------------------------------------ exports


def human_scores_wide(scores: pd.DataFrame) -> pd.DataFrame:
    """Long human scores -> the generic table (``question_id, model`` + one column per attribute).

    The inverse of :func:`read_human_scores` (what the Data page and ``peercore nlg
    export`` write), rows in first-seen order, attributes in first-seen order.
    """
    if len(scores) == 0:
        return pd.DataFrame(columns=list(_RESERVED))
    attributes = list(dict.fromkeys(scores["attribute"]))
    keys = scores[["question_id", "model"]].drop_duplicates()
    wide = scores.pivot_table(index=["question_id", "model"], columns="attribute", values="value", aggfunc="first",
                              sort=False)
    wide = wide.reindex(pd.MultiIndex.from_frame(keys))[attributes]
    wide.columns.name = None
    return wide.reset_index()


def judge_scores_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Judges' scores (:meth:`peercore.store.Store.scores.judge_scores`) in the ``judge-scores`` format."""
    return scores[[c for c in _JUDGE_SCORE_COLUMNS if c in scores.columns]].reset_index(drop=True)
