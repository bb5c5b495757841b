"""Tell the format of a file or folder from its layout and the fields of its first record.

Folders: ``ratings-*/`` -> ``prd``; ``results/<A>_vs_<B>/<criterion>/<judge>_score/`` ->
``scaleeval``; ``question.jsonl`` + ``model_answer/`` -> ``fastchat``; anything else ->
``folder`` (every data file inside is detected and imported on its own, all in one
transaction).

Files, by the fields of the first record (CSV header, first JSON object, Parquet schema):

=====================================================  ===================
fields                                                 format
=====================================================  ===================
g1_winner, g2_winner, model_1, model_2                 fastchat-pair
question, answer_a, answer_b, reviewer_1_model, ...    prd-discussions
instruction, output_1, output_2, preference            alpacaeval
Speaker 1 - Initial Evaluation, ... / ID, Score        scaleeval
debate_id, speaker, round, verdict                     debates
annotator, model_a, model_b, winner                    human
question_id, model_a, model_b, winner + tstamp / anony /
language / conversation_a, or no judge field           arena
question_id, model_a, model_b, judge, winner           canonical
question_id, model_id, choices                         fastchat-answers
question_id, question, model, answer                   qa
question_id, model, answer                             answers
source, system_id, system_output, scores               usr (USR ratings)
question_id, model, judge + score / expected           judge-scores
question_id, model + attribute columns (no answer,     human-scores
judge, pair or question text)
question_id + question / text / prompt / turns         questions
=====================================================  ===================

A PRD rating file (``answer_<A>-vs-answer_<B>-<reviewer>-reviewer...jsonl``) is
recognised by its name, or by its fields (``question_id, answer1_id, answer2_id, score``:
``prd-file``); PRD's answer files (``answer_id, question_id, model_id, text``) and
QLoRA's (``question_id, prompt, generation``) are ``prd-answers``, not questions.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from peercore.io._common import fail, file_kind, read_bytes
from peercore.io.formats import FILE_FORMATS, FOLDER_FORMATS
from peercore.io.rules import MAX_JSON_DEPTH, column_list, parse_json
from peercore.io.scaleeval import is_scaleeval_folder

__all__ = ["detect_format", "first_record_fields", "FILE_FORMATS", "FOLDER_FORMATS", "DATA_SUFFIXES"]

DATA_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json", ".ndjson", ".parquet", ".pq")
_ARENA_HINTS = ("tstamp", "anony", "language", "conversation_a", "conversation_b", "conv_metadata")
_PRD_FILE = re.compile(r"^answer[_-].+-vs-answer[_-].+-reviewer.*\.jsonl$")


def detect_format(path: str | Path) -> str:
    """The format name of ``path`` (see the module docstring).

    Raises
    ------
    JudgmentError
        If the path does not exist, is empty, or its fields match no format (the fields
        found are listed).
    """
    path = Path(path)
    if not path.exists():
        fail("no such file or folder", source=str(path))
    if path.is_dir():
        if any(p.is_dir() for p in path.glob("ratings-*")):
            return "prd"
        if is_scaleeval_folder(path):
            return "scaleeval"
        if (path / "question.jsonl").is_file() and (path / "model_answer").is_dir():
            return "fastchat"
        return "folder"
    if _PRD_FILE.match(path.name):
        return "prd-file"
    fields = first_record_fields(path)
    found = set(fields)
    if {"g1_winner", "g2_winner"} <= found:
        return "fastchat-pair"
    if {"question_id", "answer1_id", "answer2_id", "score"} <= found:
        return "prd-file"  # a PRD review renamed: its reader says how the name must read
    if {"answer_id", "question_id", "model_id", "text"} <= found or {"question_id", "prompt", "generation"} <= found:
        return "prd-answers"  # PRD's generations/answer_<model>.jsonl, QLoRA's Guanaco answers: not questions
    if {"question", "answer_a", "answer_b", "reviewer_1_model", "reviewer_2_model"} <= found:
        return "prd-discussions"
    if {"instruction", "output_1", "output_2"} <= found and ("preference" in found or "generator_1" in found):
        return "alpacaeval"
    if any(f.startswith("Speaker ") and " - " in f for f in found) or {"ID", "Score"} <= found:
        return "scaleeval"
    if {"debate_id", "speaker", "round"} <= found:
        return "debates"
    if "annotator" in found and {"model_a", "model_b", "winner"} <= found:
        return "human"
    if {"model_a", "model_b", "winner"} <= found:
        if found & set(_ARENA_HINTS) or "judge" not in found:
            return "arena"
        return "canonical"
    if {"question_id", "model_id", "choices"} <= found:
        return "fastchat-answers"
    if {"question_id", "question", "model", "answer"} <= found:
        return "qa"
    if {"question_id", "model", "answer"} <= found:
        return "answers"
    if {"system_id", "system_output", "scores"} <= found:
        return "usr"
    if {"question_id", "model", "judge"} <= found and found & {"score", "expected"}:
        return "judge-scores"
    if {"question_id", "model"} <= found and len(found) > 2 and not found & {
            "judge", "annotator", "answer", "question", "text", "prompt", "turns", "model_a", "model_b", "winner"}:
        return "human-scores"
    if "question_id" in found and found & {"question", "text", "prompt", "turns"}:
        return "questions"
    if {"model_a", "model_b"} <= found:
        return "canonical"  # judgments missing a column: the reader names it
    shown = column_list(fields, most=12)
    fail(f"cannot tell the format from the fields ({shown}); expected judgments (question_id, model_a, model_b, "
         "judge, winner), questions, answers or a peer tool's layout, or pass --format", source=path.name, line=1)


def first_record_fields(path: Path) -> list[str]:
    """Field names of the first record: CSV header, first JSON object, Parquet columns."""
    kind = file_kind(path)
    name = path.name
    if kind == "parquet":
        read_bytes(path)
        import pyarrow.parquet as pq

        try:
            return list(pq.read_schema(path).names)
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            fail(f"not a readable Parquet file ({type(exc).__name__}: {exc})", source=name)
    head = _head(path)
    if kind == "csv":
        import csv
        import io

        first = next((line for line in head.splitlines() if line.strip()), "")
        delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
        return [h.strip() for h in next(csv.reader(io.StringIO(first), delimiter=delimiter), [])]
    stripped = head.lstrip()
    decoder = json.JSONDecoder()
    if stripped.startswith("["):
        body = stripped[1:].lstrip()
        if body.startswith("]"):
            fail("the JSON array is empty; expected records", source=name)
        text = body
        try:
            record, _ = _raw_decode(decoder, text)
        except json.JSONDecodeError:
            text = path.read_text(encoding="utf-8-sig", errors="replace").lstrip()[1:].lstrip()
            try:
                record, _ = _raw_decode(decoder, text)
            except json.JSONDecodeError as exc:
                fail(f"not valid JSON ({exc.msg})", source=name, line=head[: head.find("[")].count("\n") + exc.lineno)
    else:
        number, line = next(((i, l) for i, l in enumerate(head.split("\n"), start=1) if l.strip()), (0, ""))
        if number == 0:
            fail("the file holds only blank lines; expected records", source=name)
        if len(head.split("\n")) == 1 and len(head) >= _HEAD_BYTES:
            fail(f"the first line is longer than {_HEAD_BYTES:,} bytes; is this a JSONL file?", source=name, line=1)
        record = parse_json(line, name=name, line=number)
    if not isinstance(record, dict):
        fail(f"expected JSON objects (records), got {type(record).__name__}", source=name, line=1)
    return [str(k) for k in record]


_HEAD_BYTES = 16 * 1024 * 1024


def _raw_decode(decoder: json.JSONDecoder, text: str):
    """The first JSON value of ``text`` (nesting too deep for Python's parser is a clear error, not a crash)."""
    try:
        return decoder.raw_decode(text)
    except RecursionError:
        raise json.JSONDecodeError(f"nested more than {MAX_JSON_DEPTH} levels deep", text, 0) from None


def _head(path: Path) -> str:
    """The first 16 MiB of the file as text (enough to see the first record)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            raw = handle.read(_HEAD_BYTES)
    except OSError as exc:
        fail(f"cannot read the file ({exc.strerror})", source=path.name)
    if size == 0:
        fail("the file is empty (0 bytes)", source=path.name)
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        fail("the file is UTF-16 text; save it as UTF-8", source=path.name, line=1)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start >= len(raw) - 4 and len(raw) == _HEAD_BYTES:  # cut inside a character
            return raw[: exc.start].decode("utf-8-sig")
        fail(f"the file is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); save it as UTF-8",
             source=path.name, line=raw[: exc.start].count(b"\n") + 1)
