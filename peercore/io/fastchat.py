"""FastChat MT-Bench files (Zheng et al. 2023, ``fastchat/llm_judge``).

- ``question.jsonl``: ``{"question_id": 81, "category": "writing", "turns": [...],
  "reference": [...]}`` -> questions (text = first turn; every turn kept in metadata).
- ``model_answer/<model>.jsonl``: ``{"question_id", "model_id", "choices": [{"index": 0,
  "turns": [...]}]}`` -> one answer per turn of the first choice.
- ``reference_answer/<judge>.jsonl`` (same shape): the question's ``reference`` when the
  question has none.
- ``model_judgment/<judge>_pair.jsonl`` (``gen_judgment.py --mode pairwise-*``): one
  record per pair and turn with ``model_1, model_2, g1_winner, g2_winner, judge:
  [model, prompt]``; game 1 showed model_1 first, game 2 swapped the answers. Each game
  becomes one canonical row: game 1 ``(model_a, model_b) = (model_1, model_2)``, game 2
  ``(model_2, model_1)``; winners ``model_1`` / ``model_2`` / ``tie`` are mapped to the
  shown positions; ``error`` (no verdict parsed) is kept as an invalid verdict with the
  judge's text. The judge is named by its model (``gpt-4``), the prompt template goes to
  the judge's settings.
- ``*_single.jsonl`` (single-answer grading) is not a pairwise verdict and is skipped
  (reported in the import notes).
- The human judgments (``question_id, model_a, model_b, winner, judge, turn``) are the
  Arena layout: see :mod:`peercore.io.arena`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from peercore.io._common import Bundle, check_identifiers, fail, json_items, json_records, merge, quote, record_text
from peercore.io.rules import MAX_LISTED_RECORDS, column_list
from peercore.io.canonical import _careful_canonical, _judges_of, questions_frame

__all__ = ["read_fastchat_folder", "read_fastchat_pairs", "read_fastchat_answers", "read_fastchat_questions"]

_GAME_WINNERS = {
    1: {"model_1": "model_a", "model_2": "model_b", "tie": "tie"},
    2: {"model_2": "model_a", "model_1": "model_b", "tie": "tie"},
}


def read_fastchat_folder(folder: str | Path) -> Bundle:
    """An MT-Bench data folder (``data/mt_bench``): questions, answers, pairwise judgments."""
    folder = Path(folder)
    question_file = folder / "question.jsonl"
    if not question_file.is_file():
        fail("no question.jsonl here; is this a FastChat data/<bench> folder?", source=folder)
    parts = [read_fastchat_questions(question_file)]
    references = {}
    for path in sorted((folder / "reference_answer").glob("*.jsonl")):
        for (qid, _model, turn), text in _answer_turns(path).items():
            if turn == 1:
                references.setdefault(qid, text)
    if references:
        questions = parts[0].questions
        missing = questions["reference"].isna()
        questions.loc[missing, "reference"] = questions.loc[missing, "question_id"].map(references)
    for path in sorted((folder / "model_answer").glob("*.jsonl")):
        parts.append(read_fastchat_answers(path))
    skipped = []
    for path in sorted((folder / "model_judgment").glob("*.jsonl")):
        if path.stem.endswith("_pair"):
            parts.append(read_fastchat_pairs(path))
        else:
            skipped.append(path.name)
    out = merge(parts, source=str(folder), format="fastchat")
    if skipped:
        out.notes["skipped_files"] = skipped
    return out


def read_fastchat_questions(path: str | Path) -> Bundle:
    path = Path(path)
    records, lines = json_records(path)
    frame = pd.DataFrame.from_records(records)
    questions = questions_frame(frame, name=path.name, line_of=lambda row: lines[row])
    return Bundle(source=str(path), format="fastchat-questions", questions=questions, files=[path])


def _answer_turns(path: Path) -> dict[tuple[str, str, int], str]:
    records, lines = json_records(path)
    out: dict = {}
    for record, line in zip(records, lines):
        out.update(_answer_turns_of(record, line, path))
    return out


def read_fastchat_answers(path: str | Path) -> Bundle:
    """``model_answer/<model>.jsonl``: one answer row per turn of the first choice."""
    path = Path(path)
    records, lines = json_records(path)
    rows = []
    line_of_row = []
    for record, line in zip(records, lines):
        for (qid, model, turn), text in _answer_turns_of(record, line, path).items():
            rows.append({"question_id": qid, "model": model, "turn": turn, "answer": text})
            line_of_row.append(line)
    answers = pd.DataFrame(rows, columns=["question_id", "model", "turn", "answer"])
    check_identifiers(answers, ("question_id", "model"), source=path.name, line_of=lambda row: line_of_row[row])
    answers = answers.astype({"question_id": "str", "model": "str", "turn": "int64", "answer": "str"})
    duplicated = answers.duplicated(["question_id", "model", "turn"]).to_numpy()
    if duplicated.any():
        row = int(np.flatnonzero(duplicated)[0])
        fail(f"a second answer to question {quote(answers['question_id'].iloc[row])} by {quote(answers['model'].iloc[row])}",
             source=path.name, line=line_of_row[row], column="question_id", value=answers["question_id"].iloc[row])
    return Bundle(source=str(path), format="fastchat-answers", answers=answers, files=[path],
                  answer_lines=lambda row: line_of_row[row])


def _answer_turns_of(record: dict, line: int, path: Path) -> dict:
    for field in ("question_id", "choices"):
        if field not in record:
            fail(f"missing field {quote(field)} of a FastChat model answer", source=path.name, line=line, column=field)
    question_id = record_text(record, "question_id", source=path.name, line=line)
    model = record_text(record, "model_id", source=path.name, line=line, required=False) or path.stem
    choices = record["choices"]
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict) \
            or not isinstance(choices[0].get("turns"), list) or not choices[0]["turns"]:
        fail(f"choices must be a list of {{'index', 'turns': [...]}}, got {quote(choices)}",
             source=path.name, line=line, column="choices")
    out = {}
    for turn, text in enumerate(choices[0]["turns"], start=1):
        if not isinstance(text, str):
            fail(f"turn {turn} of the answer is {type(text).__name__}, not text", source=path.name, line=line,
                 column="choices")
        out[(question_id, model, turn)] = text
    return out


def read_fastchat_pairs(path: str | Path) -> Bundle:
    """Pairwise judgments (``model_judgment/gpt-4_pair.jsonl``): two canonical rows per record."""
    path = Path(path)
    name = path.name
    columns: dict[str, list] = {c: [] for c in ("question_id", "model_a", "model_b", "judge", "winner", "turn",
                                                "rationale", "valid", "raw")}
    row_lines: list = []
    templates: dict[str, set] = {}
    for line, record in json_items(path, most=MAX_LISTED_RECORDS):  # no dict per record is kept
        for field in ("question_id", "model_1", "model_2", "g1_winner", "g2_winner", "judge"):
            if field not in record:
                fail(f"missing field {quote(field)} of a FastChat pairwise judgment (found: {column_list(record)})",
                     source=name, line=line, column=field)
        for field in ("question_id", "model_1", "model_2"):
            record_text(record, field, source=name, line=line)  # one value each (a list is refused here)
        judge = record["judge"]
        if isinstance(judge, list) and judge and all(isinstance(j, str) for j in judge):
            judge_name, template = judge[0], (judge[1] if len(judge) > 1 else None)
        elif isinstance(judge, str):
            judge_name, template = judge, None
        else:
            fail(f"judge must be [model, prompt] or a name, got {quote(judge)}", source=name, line=line,
                 column="judge", value=quote(judge))
        if template:
            templates.setdefault(judge_name, set()).add(template)
        for game, (first, second) in ((1, ("model_1", "model_2")), (2, ("model_2", "model_1"))):
            verdict = record[f"g{game}_winner"]
            text = record.get(f"g{game}_judgment")
            if not isinstance(verdict, str):
                fail(f"g{game}_winner {quote(verdict)} is not one of model_1, model_2, tie, error", source=name,
                     line=line, column=f"g{game}_winner", value=quote(verdict))
            if verdict == "error":
                winner, ok = None, 0
            elif verdict in _GAME_WINNERS[game]:
                winner, ok = _GAME_WINNERS[game][verdict], 1
            else:
                fail(f"g{game}_winner {quote(verdict)} is not one of model_1, model_2, tie, error", source=name,
                     line=line, column=f"g{game}_winner", value=quote(verdict))
            for column, value in (("question_id", record["question_id"]), ("model_a", record[first]),
                                  ("model_b", record[second]), ("judge", judge_name), ("winner", winner),
                                  ("turn", record.get("turn", 1)),
                                  ("rationale", text if isinstance(text, str) else None), ("valid", ok),
                                  ("raw", None if ok else (text if isinstance(text, str) else "error"))):
                columns[column].append(value)
            row_lines.append(line)
    frame = pd.DataFrame(columns)
    judgments = _careful_canonical(frame, name=name, line_of=lambda row: row_lines[row], judge_prefix=None)
    judges = [{**j, "settings": {"prompt": sorted(templates.get(j["name"], []))}} for j in _judges_of(judgments)]
    return Bundle(source=str(path), format="fastchat-pair", order="known", judgments=judgments, judges=judges, files=[path],
                  judgment_lines=lambda row: row_lines[row])
