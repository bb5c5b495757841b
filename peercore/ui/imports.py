"""Data page glue: uploads to files, parsing with peercore.io, errors shown against their row.

Uploads are written to a private temporary folder because the importers read paths. A
``.zip`` is checked against the budget of :func:`peercore.io.rules.check_zip` (entries,
bytes once extracted, compression ratio, paths that leave the folder, links) before a
single member is extracted, and members are extracted without ever writing more than
they declare. The parsed bundle is kept in session state until the user imports or
replaces it. Nothing touches the database before the user presses Import, and
:func:`peercore.io.importer.import_bundle` writes everything in one transaction.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import streamlit as st

from peercore.app import access
from peercore.errors import AccessDenied, JudgmentError
from peercore.ui import data, state
from peercore.ui.access import current_actor
from peercore.io.importer import FORMATS, read_path
from peercore.io.rules import check_zip, extract_zip
from peercore.io._common import parquet_frame
from peercore.app.exports import study_table
from peercore.io.export import table_bytes

# What the format picker offers: importer format -> label (peercore.io.importer.FORMATS).
FORMAT_LABELS: dict[str, str] = {
    "auto": "Detect from the file",
    "canonical": "Judgments (canonical table)",
    "human": "Human annotations (one vote per row)",
    "questions": "Questions",
    "answers": "Answers",
    "qa": "Questions with answers (one row per answer)",
    "arena": "Chatbot Arena battle log",
    "fastchat-human": "MT-Bench human judgments",
    "fastchat-pair": "FastChat MT-Bench pairwise judgments",
    "fastchat-answers": "FastChat model answers",
    "fastchat-questions": "FastChat questions",
    "fastchat": "FastChat MT-Bench data folder (.zip)",
    "alpacaeval": "AlpacaEval annotations",
    "prd": "PRD folder with ratings-*/ (.zip)",
    "prd-file": "One PRD ratings file (answer_<A>-vs-answer_<B>-<reviewer>-reviewer...jsonl)",
    "prd-answers": "PRD answers (generations/answer_<model>.jsonl)",
    "prd-discussions": "PRD discussions (two reviewers talk a verdict over)",
    "scaleeval": "ScaleEval results (file, or folder as .zip)",
    "debates": "Debate transcripts (one row per speaker per round)",
    "folder": "A folder of files, each detected (.zip)",
    "human-scores": "Human scores (one column per attribute)",
    "usr": "USR dialogue ratings (TopicalChat / PersonaChat)",
    "judge-scores": "Judges' scores (one score per answer)",
}
UPLOAD_TYPES = ["csv", "tsv", "jsonl", "json", "ndjson", "parquet", "pq", "zip"]
PARSED = "data_parsed"
EXPORT_WHAT = {"judgments": "every judgment (canonical table)", "leaderboard": "the Bradley-Terry leaderboard"}


def formats() -> list[str]:
    """The formats this peercore can import, in the picker's order."""

    known = [f for f in FORMAT_LABELS if f in FORMATS]
    return known + [f for f in FORMATS if f not in FORMAT_LABELS]


def format_label(name: str) -> str:
    """The picker's words for an importer format; the CLI keeps the internal name.

    A format without a label of its own (one a newer peercore adds) reads as words:
    ``"some-new-format"`` -> ``"Some new format"``.
    """
    label = FORMAT_LABELS.get(name)
    if label is not None:
        return label
    words = re.sub(r"[-_]+", " ", str(name)).strip()
    return words[:1].upper() + words[1:] if words else str(name)


@dataclass
class Parsed:
    """One upload, parsed (``bundle``) or refused (``error``: where and what, and the rows around it)."""

    key: str
    name: str
    folder: Path
    bundle: object | None = None
    error: str | None = None
    context: pd.DataFrame | None = None
    counts: dict = field(default_factory=dict)
    where: str = ""


def upload_key() -> str:
    return f"data_upload_{st.session_state[state.DATA_UPLOAD_VERSION]}"


def parse_upload(uploaded, fmt: str) -> Parsed:
    """Parse an ``st.file_uploader`` file with ``fmt`` (cached in session state per content and format)."""
    digest = hashlib.sha256(uploaded.getvalue()).hexdigest()
    key = f"{uploaded.name}:{digest}:{fmt}"
    previous = st.session_state.get(PARSED)
    if previous is not None and previous.key == key:
        return previous
    if previous is not None:
        shutil.rmtree(previous.folder, ignore_errors=True)
    forget_outcome()  # a new file: the last import's banner (success or error) no longer applies
    folder = Path(tempfile.mkdtemp(prefix="peerboard-upload-"))
    parsed = Parsed(key=key, name=uploaded.name, folder=folder)
    try:
        path = _materialise(uploaded.name, uploaded.getvalue(), folder)

        parsed.bundle = read_path(path, format=fmt)
        parsed.counts = bundle_counts(parsed.bundle)
    except JudgmentError as error:
        parsed.where, parsed.error = describe_error(error)
        try:
            parsed.context = offending_rows(error, folder)
        except (JudgmentError, OSError, ValueError):
            parsed.context = None
    except (ValueError, OSError, zipfile.BadZipFile) as error:
        parsed.error = readable(str(error))
    except Exception as error:  # noqa: BLE001 - a reader's bug must still read as a sentence, not a traceback
        parsed.error = f"the file could not be read (an unexpected {type(error).__name__} in the reader)"
    st.session_state[PARSED] = parsed
    return parsed


def forget_outcome() -> None:
    """Clear the last import's report and error (a new upload or import replaces them)."""
    st.session_state["data_report"] = None
    st.session_state["data_error"] = ""
    st.session_state["data_warnings"] = []


def describe_error(error: JudgmentError) -> tuple[str, str]:
    """``("line 3, field 'turn'", problem)`` of a refused file: where (line, else record, and field), then what.

    The problem reads in JSON's words, not Python's (:func:`readable`).
    """
    where = []
    if error.line is not None:
        where.append(f"line {error.line:,}")
    elif error.row is not None:
        where.append(f"record {error.row + 1:,}")
    if error.column is not None:
        where.append(f"field {quote_name(error.column)}")
    problem = getattr(error, "problem", None) or str(error)
    return ", ".join(where), readable(problem)


def quote_name(name: object) -> str:
    return "‘" + str(name) + "’"


_QUOTED = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
_TYPE_WORDS = {"int": "a number", "float": "a number", "str": "a text", "list": "a list", "dict": "an object",
               "bool": "true or false", "NoneType": "null", "tuple": "a list"}


def readable(problem: str) -> str:
    """A reader's problem in JSON's words: Python values as JSON spells them.

    ``{'name': 'alpha'}`` -> ``{"name": "alpha"}``, ``True`` -> ``true``, ``None`` ->
    ``null``, ``got int`` -> ``got a number``, ``is empty (nan)`` -> ``is empty``.
    Quoted values (a name or text from the file) are left exactly as they are.

    Examples
    --------
    >>> readable("turn True is not a whole number")
    'turn true is not a whole number'
    >>> readable("judge is empty (nan); every judgment needs one")
    'judge is empty; every judgment needs one'
    """
    problem = _containers_as_json(problem)
    out, last = [], 0
    for match in _QUOTED.finditer(problem):
        out.append(_words(problem[last:match.start()]))
        out.append(match.group(0))
        last = match.end()
    out.append(_words(problem[last:]))
    return "".join(out)


def _words(text: str) -> str:
    text = re.sub(r" \((?:nan|None|NaN|<NA>)\)", "", text)
    text = re.sub(r"\bgot (int|float|str|list|dict|bool|NoneType|tuple)\b", lambda m: "got " + _TYPE_WORDS[m[1]], text)
    return re.sub(r"\b(True|False|None)\b", lambda m: {"True": "true", "False": "false", "None": "null"}[m[1]], text)


def _containers_as_json(problem: str) -> str:
    """Python list / dict literals in parentheses, e.g. ``({'a': 1})``, rewritten as JSON."""
    out, start = [], 0
    for match in re.finditer(r"\((?=[\[{])", problem):
        if match.start() < start:
            continue
        end = problem.find(")", match.end())
        while end != -1:
            try:
                value = ast.literal_eval(problem[match.end():end])
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                end = problem.find(")", end + 1)
                continue
            try:
                shown = json.dumps(value, ensure_ascii=False)
            except (TypeError, ValueError):
                break
            out.append(problem[start:match.end()] + shown)
            start = end
            break
    out.append(problem[start:])
    return "".join(out)


def _materialise(name: str, payload: bytes, folder: Path) -> Path:
    """Write the upload under ``folder``; a zip is extracted and its single top folder returned."""
    safe = Path(name).name or "upload"
    if not safe.lower().endswith(".zip"):
        target = folder / safe
        target.write_bytes(payload)
        return target

    archive = folder / safe
    archive.write_bytes(payload)
    root = folder / Path(safe).stem
    members = check_zip(archive, name=safe)  # budget first: nothing is extracted from a refused archive
    root.mkdir(parents=True, exist_ok=True)
    extract_zip(archive, members, root, name=safe)
    archive.unlink()
    entries = [p for p in root.iterdir() if not p.name.startswith(("__MACOSX", "."))]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else root


def offending_rows(error: JudgmentError, folder: Path, *, around: int = 2) -> pd.DataFrame | None:
    """The lines of the file around the error's line (the bad one marked), or the bad record of a table."""
    candidates = [p for p in folder.rglob("*") if p.is_file() and p.name == Path(str(error.source or "")).name]
    if not candidates:
        return None
    path = candidates[0]
    if error.line is not None and path.suffix.lower() not in (".parquet", ".pq"):
        lines = path.read_bytes().decode("utf-8", errors="replace").splitlines()
        start, stop = max(1, error.line - around), min(len(lines), error.line + around)
        return pd.DataFrame({
            "line": list(range(start, stop + 1)),
            "": ["▶" if number == error.line else "" for number in range(start, stop + 1)],
            "content": [lines[number - 1][:400] for number in range(start, stop + 1)],
        })
    if error.row is not None and path.suffix.lower() in (".parquet", ".pq"):

        frame = parquet_frame(path, name=path.name)  # the same budget as the import
        if not 0 <= error.row < len(frame):
            return None
        return frame.iloc[[error.row]].reset_index().rename(columns={"index": "row"})
    return None


#: What makes an answer one answer, in the store as here: a model's answer to a question at a turn.
ANSWER_KEY = ["question_id", "model", "turn"]


def distinct_answers(answers: pd.DataFrame) -> pd.DataFrame:
    """The answers as the store keeps them: one row per (question, model, turn), the first kept.

    A folder of AlpacaEval files repeats the baseline's answers in every file (each file
    pairs one model with the same baseline); the store writes each once and skips the
    copies, so the preview must not count them again.
    """
    if len(answers) == 0 or not set(ANSWER_KEY) <= set(answers.columns):
        return answers
    return answers.drop_duplicates(ANSWER_KEY, keep="first").reset_index(drop=True)


def bundle_counts(bundle) -> dict[str, int]:
    """The preview's counts of a parsed upload: what the import would store (an answer counted once).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> answers = pd.DataFrame({"question_id": ["q1", "q1", "q1"], "model": ["gpt4", "gpt4", "mine"],
    ...                         "turn": [1, 1, 1], "answer": ["Hi", "Hi", "Hey"]})
    >>> bundle_counts(SimpleNamespace(questions=[1], answers=answers, judgments=[], judges=[], debates=[]))["Answers"]
    2
    """
    return {"Questions": len(bundle.questions), "Answers": len(distinct_answers(bundle.answers)),
            "Judgments": len(bundle.judgments), "Judges": len({j["name"] for j in bundle.judges}),
            "Debates": len(bundle.debates)}


def preview_tables(bundle, *, rows: int = 50) -> dict[str, pd.DataFrame]:
    """The first rows of each non-empty table of a parsed bundle, as stored (canonical column names).

    The page shows them through :func:`plain_headers` and :func:`peercore.ui.tables.show_cells`.
    """
    out = {}
    if len(bundle.judgments):
        out["Judgments"] = bundle.judgments.head(rows).drop(columns=[c for c in ("raw",) if c in bundle.judgments])
    if len(bundle.questions):
        out["Questions"] = bundle.questions.head(rows).drop(columns=[c for c in ("metadata",) if c in bundle.questions])
    if len(bundle.answers):
        out["Answers"] = distinct_answers(bundle.answers).head(rows)
    if bundle.debates:
        out["Debates"] = pd.DataFrame([{k: v for k, v in debate.items() if k != "metadata"} | {"turns": len(turns)}
                                       for debate, turns in bundle.debates[:rows]])
    if bundle.judges:
        out["Judges"] = pd.DataFrame(bundle.judges).drop(columns=["settings"], errors="ignore")
    return out


#: The preview's headers in plain words (the canonical names stay the CLI's and the files').
HEADERS: dict[str, str] = {
    "question_id": "question", "model_a": "model A", "model_b": "model B", "p_a": "P(A wins)",
    "valid": "parsed", "text": "question text", "debate_id": "debate", "human_scores": "human scores",
}


def header(name: object) -> str:
    """A column's header on screen: :data:`HEADERS`, else its name with ``_`` and ``-`` read as spaces.

    Examples
    --------
    >>> header("p_a"), header("n_pairs"), header("judge")
    ('P(A wins)', 'n pairs', 'judge')
    """
    text = str(name)
    return HEADERS.get(text) or re.sub(r"[_-]+", " ", text).strip() or text


def plain_headers(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its headers in plain words (:func:`header`); a name two columns would share keeps its own."""
    names = [header(c) for c in frame.columns]
    names = [h if names.count(h) == 1 else str(c) for h, c in zip(names, frame.columns)]
    out = frame.copy()
    out.columns = names
    if "parsed" in out.columns and "valid" in frame.columns:  # 1 / 0 from the store: a word, not a count
        out["parsed"] = frame["valid"].map({1: "yes", 0: "no", True: "yes", False: "no"}).astype(object)
    return out


def do_import(target: str) -> None:
    """The Import button: write the parsed upload into ``target`` (created if new), then clear the uploader.

    Written by :func:`peercore.app.access.import_bundle` (editor in the study, or globally
    for a new one; the import and its audit record in one transaction). A refusal is kept
    for the page as ``data_error`` and changes nothing: the upload stays parsed, the
    uploader keeps its file.
    """
    parsed = st.session_state.get(PARSED)
    forget_outcome()
    if parsed is None or parsed.bundle is None:
        return
    try:
        report = access.import_bundle(data.store(), current_actor(), parsed.bundle, study=target.strip(),
                                      file_name=parsed.name, format=st.session_state.get("data_format") or "auto")
    except AccessDenied as error:
        st.session_state["data_error"] = f"Nothing was imported: {error}"
        return
    except JudgmentError as error:
        where, problem = describe_error(error)
        file = Path(str(error.source or parsed.name)).name
        st.session_state["data_error"] = f"Nothing was imported: {file}{', ' + where if where else ''}: {problem}"
        return
    except ValueError as error:
        st.session_state["data_error"] = f"Nothing was imported: {readable(str(error))}"
        return
    st.session_state["data_report"] = report_table(report)
    st.session_state["data_warnings"] = list(report.warnings)  # e.g. names that look alike (peercore.io.names)
    st.session_state[state.STUDY] = report.study
    shutil.rmtree(parsed.folder, ignore_errors=True)
    st.session_state[PARSED] = None
    st.session_state[state.DATA_UPLOAD_VERSION] += 1  # a fresh, empty uploader


def report_table(report) -> pd.DataFrame:
    """Added / skipped per table; the judgments row says how many of those added are unparsed (kept invalid)."""
    invalid = getattr(report, "invalid_judgments", 0)
    rows = [{"table": table, "added": counts.added,
             "of them unparsed (kept as invalid)": invalid if table == "judgments" else 0,
             "skipped (already stored, identical)": counts.skipped}
            for table, counts in report.counts.items()]
    return pd.DataFrame(rows).assign(study=report.study)


def imports_display(frame: pd.DataFrame) -> pd.DataFrame:
    def added(counts: dict, table: str) -> int:
        value = counts.get(table)
        return int(value[0] if isinstance(value, (list, tuple)) else (value or {}).get("added", 0) if isinstance(value, dict) else value or 0)

    return pd.DataFrame({
        "when (UTC)": frame["created_at"].str.slice(0, 19).str.replace("T", " "), "source": frame["source"].map(lambda s: Path(s).name),
        "format": frame["format"], "judgments added": [added(c, "judgments") for c in frame["counts"]],
        "sha256": frame["sha256"].fillna("").str.slice(0, 12),
    })


@st.cache_data(show_spinner=False, max_entries=16)
def export_bytes(db: str, study: str, rev: int, what: str, fmt: str) -> bytes:
    """The study's judgments or leaderboard in ``fmt`` (CSV cells that look like formulas neutralised)."""

    return table_bytes(study_table(data.store(), study, what=what), format=fmt)
