"""Read any supported file or folder into a bundle, check it, and write it in one transaction.

The order is what makes a rejected import leave the database byte-for-byte unchanged:

1. **parse and validate** the whole input into a :class:`~peercore.io._common.Bundle`
   (no database involved; the first problem raises naming file, line and field). A
   folder is first checked for symbolic links that leave it
   (:func:`peercore.io.rules.check_folder`), so nothing outside it is ever read;
2. **one write transaction** (``BEGIN IMMEDIATE``, so no other import can write in
   between) that first makes the **referential checks** against the stored study:
   every answer's question exists, no question or answer id is already stored with a
   different text; then creates the study if needed and adds questions, answers,
   judges, judgments and debates, plus the import's provenance record. A verdict whose
   natural key is stored with a different winner / p_a / validity is refused by the
   store (:class:`peercore.errors.VerdictConflict`) and reported against the file and
   line it came from. The transaction is the safety net: an exception or a killed
   process inside it leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from peercore.domain.verdicts import infer_order
from peercore import errors
from peercore.errors import JudgmentError
from peercore.io._common import Bundle, fail, merge, quote, sha256_of
from peercore.io.names import look_alike_warnings
from peercore.io.rules import check_folder
from peercore.io.detect import DATA_SUFFIXES, detect_format
from peercore.io.formats import FOLDER_FORMATS, FORMATS
from peercore.store import WriteCounts

__all__ = ["read_path", "import_path", "import_bundle", "ImportReport", "FORMATS", "default_study_name"]

_SKIP_NAMES = ("README", "LICENSE", "PROVENANCE")  # documentation, not data


# format -> (module, function); modules are imported only when their format is read
# (importing every reader would pull in scipy.stats through the agreement module).
_READERS = {
    "canonical": ("canonical", "read_canonical_judgments"),
    "arena": ("arena", "read_arena"),
    "fastchat-human": ("arena", "read_fastchat_human"),
    "fastchat-pair": ("fastchat", "read_fastchat_pairs"),
    "fastchat-answers": ("fastchat", "read_fastchat_answers"),
    "fastchat-questions": ("fastchat", "read_fastchat_questions"),
    "fastchat": ("fastchat", "read_fastchat_folder"),
    "alpacaeval": ("alpacaeval", "read_alpacaeval"),
    "prd": ("prd", "read_prd_folder"),
    "prd-file": ("prd", "read_prd_file"),
    "prd-answers": ("prd", "read_prd_answers"),
    "prd-discussions": ("prd", "read_prd_discussions"),
    "scaleeval": ("scaleeval", "read_scaleeval_path"),
    "debates": ("debates", "read_debate_table"),
    "human": ("human", "read_human_annotations"),
    "questions": ("canonical", "read_questions"),
    "answers": ("canonical", "read_answers"),
    "qa": ("canonical", "read_qa_table"),
    "human-scores": ("scores", "read_human_scores"),
    "usr": ("scores", "read_usr"),
    "judge-scores": ("scores", "read_judge_scores"),
}


def _reader(format: str) -> Callable[[Path], Bundle]:
    if format == "folder":
        return _read_folder
    import importlib

    module, name = _READERS[format]
    return getattr(importlib.import_module(f"peercore.io.{module}"), name)


def read_path(path: str | Path, *, format: str = "auto") -> Bundle:
    """Parse and validate ``path`` (file or folder) into a bundle; nothing is written.

    Raises
    ------
    JudgmentError
        Naming the file, line and field of the first problem.
    ValueError
        If ``format`` is not one of :data:`FORMATS`.
    """
    path = Path(path)
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}; got {quote(format)}")
    if not path.exists():
        fail("no such file or folder", source=str(path))
    if not path.is_dir() and not path.is_file():  # a named pipe or a device would block the read, or never end
        fail("is neither a regular file nor a folder (a named pipe, socket or device cannot be imported)",
             source=str(path))
    if path.is_dir():
        check_folder(path)  # before anything inside is read
    chosen = detect_format(path) if format == "auto" else format
    if chosen in FOLDER_FORMATS and not path.is_dir() and chosen != "scaleeval":
        fail(f"format {quote(chosen)} expects a folder", source=str(path))
    if chosen not in FOLDER_FORMATS and chosen != "prd-file" and path.is_dir():
        fail(f"format {quote(chosen)} expects a file, got a folder", source=str(path))
    bundle = _reader(chosen)(path)
    check_internal_references(bundle)
    return bundle


def _read_folder(folder: Path) -> Bundle:
    """Every data file in a folder (recursively), each detected on its own."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in DATA_SUFFIXES
                   and not any(part.startswith(".") for part in p.relative_to(folder).parts)
                   and not p.stem.upper().startswith(_SKIP_NAMES))
    if not files:
        fail(f"no data files ({', '.join(DATA_SUFFIXES)}) in this folder", source=str(folder))
    parts = [read_path(path) for path in files]
    out = merge(parts, source=str(folder), format="folder")
    out.notes["files"] = {str(p.relative_to(folder)): b.format for p, b in zip(files, parts)}
    out.parts = parts
    return out


def _parts(bundle: Bundle) -> list[Bundle]:
    return bundle.parts or [bundle]


def check_internal_references(bundle: Bundle, *, stored_questions: set[str] | None = None) -> None:
    """Every answer names a question of the bundle (or of the study, when given)."""
    known = set(bundle.questions["question_id"]) | (stored_questions or set())
    for part in _parts(bundle):
        if len(part.answers) == 0:
            continue
        if not known and stored_questions is None:
            continue  # checked again against the study before writing
        missing = ~part.answers["question_id"].isin(known).to_numpy()
        if missing.any():
            row = int(missing.nonzero()[0][0])
            qid = part.answers["question_id"].iloc[row]
            line = part.answer_lines(row) if part.answer_lines else None
            fail(f"answer to question {quote(qid)}, which is neither in this import nor in the study; "
                 "import its question first", source=Path(part.source).name, line=line,
                 row=None if line else row, column="question_id", value=qid)


@dataclass
class ImportReport:
    """What an import added and skipped (already stored, identical), per table, and what it noted.

    Attributes
    ----------
    counts : table -> :class:`~peercore.store.WriteCounts` (added, skipped).
    invalid_judgments : how many of the judgments added are unparsed verdicts, stored
        with ``valid = 0`` and their raw text (the Studies page counts them apart).
    warnings : what the user should look at although nothing was wrong enough to refuse:
        names of the import that look like another name of it or of the study
        (:func:`peercore.io.names.look_alike_warnings`).
    """

    study: str
    source: str
    format: str
    import_id: int
    counts: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)
    invalid_judgments: int = 0
    warnings: list = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"imported {self.source} ({self.format}) into study {quote(self.study)}"]
        for table, counts in self.counts.items():
            invalid = (f" ({self.invalid_judgments:,} of them unparsed, kept as invalid)"
                       if table == "judgments" and self.invalid_judgments else "")
            out.append(f"  {table:<10} {counts.added:>9,} added{invalid}, {counts.skipped:,} skipped as already "
                       "stored (identical)")
            if table == "judgments" and counts.repeated:
                out.append(f"  {'':<10} {counts.repeated:>9,} of them repeated votes of a judge on a comparison it "
                           "had voted on (rankings count their majority by default; --each-vote counts each)")
        for key, value in self.notes.items():
            if key != "files":
                out.append(f"  {key.replace('_', ' ')}: {value}")
        out.extend(f"  warning: {warning}" for warning in self.warnings)
        return out


def default_study_name(path: str | Path) -> str:
    """The study a path imports into when none is named: the folder name or file stem."""
    path = Path(path).resolve()
    return path.name if path.is_dir() else path.stem


def import_path(path: str | Path, *, store, study: str | None = None, format: str = "auto",
                order: str | None = None) -> ImportReport:
    """Import ``path`` into ``study`` of ``store`` (see the module docstring for the order).

    Parameters
    ----------
    order : whether ``model_a`` is the answer the judge saw first, for every verdict of
        the import (``known`` or ``unknown``; ``auto``: a pair judged in both orientations
        has a known order); None: what the format knows (:attr:`Bundle.order`), a file's
        ``order_known`` column wins either way.

    Returns
    -------
    ImportReport
        Counts of added / skipped rows per table and the import's notes (e.g.
        ``unresolved_debates`` for ScaleEval).
    """
    bundle = read_path(path, format=format)
    return import_bundle(bundle, store=store, study=study or default_study_name(path), order=order)


def import_bundle(bundle: Bundle, *, store, study: str, order: str | None = None) -> ImportReport:
    """Write a parsed bundle into ``study`` (created if needed), all or nothing.

    Every check against the stored study runs inside the write transaction, so a
    concurrent import cannot slip a different question text (or verdict) in between
    the check and the write.

    Raises
    ------
    JudgmentError
        Naming the file and line of an answer to an unknown question, a question or
        answer stored with another text, or a verdict stored with another outcome.
    """
    checksum = sha256_of(bundle.files) if bundle.files else None
    counts: dict = {}
    with store.transaction():
        exists = store.studies.exists(study)
        stored_questions = set(store.questions.table(study)["question_id"]) if exists else set()
        check_internal_references(bundle, stored_questions=stored_questions)
        if exists:
            _check_conflicts(bundle, store, study)
        registered = store.judges.registered(study) if exists else set()
        store.studies.create(study, exist_ok=True)
        import_id = store.studies.record_import(study, source=bundle.source, format=bundle.format, sha256=checksum)
        counts["questions"] = store.questions.add(study, bundle.questions)
        counts["answers"] = store.questions.add_answers(study, bundle.answers)
        new_judges = [j for j in bundle.judges if j["name"] not in registered]
        if new_judges:
            store.judges.add(study, new_judges)
        counts["judgments"], unknown_order = _write_judgments(bundle, store, study, import_id, order)
        counts["debates"] = store.debates.add_many(study, bundle.debates)
        guidelines = bundle.guidelines or next((part.guidelines for part in bundle.parts if part.guidelines), "")
        if guidelines and not store.studies.settings(study)["rubric"].strip():  # never over the study's own
            store.studies.update_settings(study, rubric=guidelines)
        _write_scores(bundle, store, study, import_id, counts)
        invalid = counts["judgments"].invalid
        notes = dict(bundle.notes)
        warnings = look_alike_warnings(bundle_names(bundle), store.studies.names(study) if exists else ())
        if unknown_order:
            warnings.append(unknown_order)
        store.studies.set_import_counts(import_id, {**counts, "invalid_judgments_added": invalid, "notes": notes,
                                                    **({"warnings": warnings} if warnings else {})})
    return ImportReport(study=study, source=bundle.source, format=bundle.format, import_id=import_id,
                        counts=counts, notes=notes, invalid_judgments=invalid, warnings=warnings)


def _write_judgments(bundle: Bundle, store, study: str, import_id: int, order: str | None):
    """The bundle's verdicts written file by file (a folder as its files one after another), and a warning
    about verdicts stored with an unknown display order (or None).

    Writing each file on its own gives a folder the answer its files give imported one
    after the other (:meth:`peercore.store.Store.verdicts.add`'s one rule for votes).
    """
    total = WriteCounts(0, 0)
    inferred = 0
    offset = 0
    for part in _parts(bundle):
        frame = part.judgments
        if len(frame) == 0:
            continue
        policy = order or part.order
        if "order_known" not in frame.columns:
            frame = frame.assign(order_known=_order_of(frame, policy))
            if policy == "auto":
                inferred += int((~frame["order_known"].to_numpy(dtype=bool)).sum())
        try:
            total = total + store.verdicts.add(study, frame, import_id=import_id)
        except JudgmentError as exc:
            if exc.row is not None and bundle.parts:
                exc.row = exc.row + offset
            if _is_conflict(exc):
                _refuse_conflict(bundle, exc, study)
            if exc.row is not None and exc.source is None:  # the store names its row: name the file's line
                _refuse_row(bundle, exc)
            raise
        offset += len(frame)
    warning = None
    if inferred:
        warning = (f"{inferred:,} verdicts are on pairs of models their judge judged in one orientation only, so "
                   "whether model_a was the answer shown first is unknown: position bias, swap consistency and the "
                   "health check leave them out. If model_a is the answer the judge saw first, import with "
                   "--order known (or give an order_known column)")
    return total, warning


def _order_of(frame: pd.DataFrame, policy: str) -> np.ndarray:
    """``order_known`` of a file's verdicts under ``policy`` (known, unknown, auto)."""
    if policy == "known":
        return np.ones(len(frame), dtype=bool)
    if policy == "unknown":
        return np.zeros(len(frame), dtype=bool)
    if policy != "auto":
        raise ValueError(f"order must be auto, known or unknown, got {policy!r}")
    (a, b), models = _codes_of([frame["model_a"], frame["model_b"]])
    (judge,), _ = _codes_of([frame["judge"]])
    return infer_order(a, b, judge, len(models))


def _codes_of(columns):
    uniques = sorted({str(v) for column in columns for v in pd.unique(column)})
    index = {name: k for k, name in enumerate(uniques)}
    return [column.astype(str).map(index).to_numpy(dtype=np.int64) for column in columns], uniques


def bundle_names(bundle: Bundle) -> set[str]:
    """The names a bundle brings: contestants, judges (annotators as ``human:<name>``), criteria,
    debate speakers and the attributes and judges of scores (what :func:`look_alike_warnings` reads)."""
    names: set[str] = set()
    for frame, columns in ((bundle.judgments, ("model_a", "model_b", "judge", "criterion")),
                           (bundle.answers, ("model",))):
        for column in columns:
            if column in frame.columns:
                names.update(pd.unique(frame[column].dropna()).tolist())
    for debate, turns in bundle.debates:
        names.update(str(debate.get(key)) for key in ("model_a", "model_b", "criterion") if debate.get(key))
        names.update(str(turn["speaker"]) for turn in turns if turn.get("speaker"))
    for part in _parts(bundle):
        for table in ("human_scores", "judge_scores"):
            frame = getattr(part, table, None)
            if frame is not None and len(frame):
                for column in ("model", "judge", "attribute"):
                    if column in frame.columns:
                        names.update(pd.unique(frame[column].dropna()).tolist())
    names.update(j["name"] for j in bundle.judges)
    return {n for n in names if isinstance(n, str) and n}


def _refuse_row(bundle: Bundle, exc: JudgmentError) -> None:
    """Re-raise a problem the store found in judgment row ``exc.row`` against the file and line it came from.

    The store counts rows from 0 and knows no file (e.g. a verdict under the name of a judge
    PeerBoard's runs produced); every other import error names the file and its line.
    """
    file, line = bundle.judgment_origin(exc.row)
    fail(exc.problem, source=file, line=line, row=None if line else exc.row, column=exc.column, value=exc.value)


def _write_scores(bundle: Bundle, store, study: str, import_id: int, counts: dict) -> None:
    """Human scores and judges' scores of the bundle's parts (:mod:`peercore.io.scores`).

    A score the store refuses (another value under a stored key, or a run judge's name)
    is reported against the file and line it came from.
    """
    for part in _parts(bundle):
        for table, method in (("human_scores", store.scores.add_human_scores),
                              ("judge_scores", store.scores.add_judge_scores)):
            frame = getattr(part, table, None)
            if frame is None or not len(frame):
                continue
            try:
                written = method(study, frame, import_id=import_id)
            except ValueError as exc:
                row = getattr(exc, "row", None)
                file, line = part.score_origin(row) if hasattr(part, "score_origin") else (Path(part.source).name, None)
                problem = getattr(exc, "problem", None) or str(exc)
                fail(problem, source=file, line=line, row=None if line else row,
                     column=getattr(exc, "column", None) or "value")
            counts[table] = counts.get(table, WriteCounts(0, 0)) + written


def _is_conflict(exc: Exception) -> bool:
    """The store's VerdictConflict (``peercore.errors.VerdictConflict``: a JudgmentError with ``row`` and ``key``)."""
    conflict = getattr(errors, "VerdictConflict", None)
    return conflict is not None and isinstance(exc, conflict)


def _refuse_conflict(bundle: Bundle, exc, study: str) -> None:
    """Re-raise a verdict conflict against the file and line of the offending row."""
    row = getattr(exc, "row", None)
    key = getattr(exc, "key", None) or {}
    file, line = bundle.judgment_origin(row) if row is not None else (Path(bundle.source).name, None)
    shown = ", ".join(f"{name} {quote(value, 60)}" for name, value in key.items()
                      if name != "study" and value not in (None, ""))
    stored, incoming = getattr(exc, "stored", None) or {}, getattr(exc, "incoming", None) or {}
    differs = [name for name in ("winner", "p_a", "valid") if name in incoming and not _same(stored.get(name),
                                                                                          incoming.get(name))]
    what = f" (another {' / '.join(differs)})" if differs else ""
    problem = (f"a different verdict{what} for {shown or 'this key'} is already stored in study {quote(study)}; "
               "a re-import must repeat stored verdicts exactly (repeated votes need distinct 'vote' numbers or "
               "question ids; another day's results belong in another study)")
    fail(problem, source=file, line=line, row=None if line else row, column="winner")


def _same(a, b) -> bool:
    missing = lambda v: v is None or (isinstance(v, float) and v != v)  # noqa: E731
    return (missing(a) and missing(b)) or a == b


def _check_conflicts(bundle: Bundle, store, study: str) -> None:
    for part in _parts(bundle):
        name = Path(part.source).name
        if len(part.questions):
            clash = store.questions.question_conflicts(study, part.questions)
            if len(clash):
                qid = clash["question_id"].iloc[0]
                line = clash["_line"].iloc[0] if "_line" in clash.columns else None
                fail(f"question {quote(qid)} is already in study {quote(study)} with a different text (this file "
                     f"says {quote(str(clash['text'].iloc[0]), 60)}); import into another study (--study)",
                     source=name, line=None if pd.isna(line) else int(line), column="question_id", value=qid)
        if len(part.answers):
            clash = store.questions.answer_conflicts(study, part.answers)
            if len(clash):
                row = clash.index[0]
                line = part.answer_lines(int(row)) if part.answer_lines else None
                fail(f"the answer of {quote(clash['model'].iloc[0])} to question {quote(clash['question_id'].iloc[0])} "
                     f"is already in study {quote(study)} with a different text; import into another study (--study)",
                     source=name, line=line, column="answer")
