"""Importers and exporters: the peer tools' formats in, canonical tables and leaderboards out.

``peercore import PATH`` (or :func:`import_path`) reads a file or a folder, detects its
format (:mod:`peercore.io.detect`), checks all of it, and writes it into a study of the
store in one transaction; a rejected input names the file, line and field and leaves
the database byte-for-byte unchanged. Every read path (small files row by row, large
files through Arrow / pandas, Parquet, zip uploads, folders) applies the same rules and
budgets, kept in one place: :mod:`peercore.io.rules` (non-finite and out-of-range
numbers, integer bounds, one value where one is expected, line, nesting and row limits,
Parquet and zip budgets, no symbolic links out of a folder). Formats accepted
(``--format`` name in brackets):

Judgments
---------
- **canonical** judgments, CSV / JSONL / JSON array / Parquet: ``question_id, model_a,
  model_b, judge, winner`` + optional ``p_a, criterion, turn, round, rationale``
  (:mod:`peercore.judgments`); optional ``valid`` (0 = unparsed verdict, kept with its
  ``raw`` text) and ``vote`` (numbers repeated verdicts by one judge on one key).
  [canonical]
- **human annotations**, one row per vote: ``question_id, model_a, model_b, annotator,
  winner`` + optional ``criterion, turn, note`` -> judge ``human:<annotator>``; majority
  labels and inter-annotator agreement are derived on read
  (:func:`peercore.io.human.majority_labels`, :func:`~peercore.io.human.annotator_agreement`).
  [human]
- **Chatbot Arena** battle logs (``clean_battle`` JSON / JSONL: ``model_a, model_b,
  winner, judge, tstamp, anony, language, turn``, ``tie (bothbad)``) and the MT-Bench
  **human judgments** -> judge ``human:<judge>``. [arena, fastchat-human]
- **FastChat MT-Bench**: a ``data/<bench>`` folder (``question.jsonl``,
  ``model_answer/*.jsonl``, ``reference_answer/``, ``model_judgment/*_pair.jsonl`` with
  g1/g2 games in both orders), or each file alone. [fastchat, fastchat-questions,
  fastchat-answers, fastchat-pair]
- **AlpacaEval** annotations (``instruction, output_1, output_2, generator_1,
  generator_2, preference`` with 1 / 2 / 1.5 / a float in [1, 2]). [alpacaeval]
- **PRD** ``vicuna80`` folder (``ratings-<reviewer>/answer_<A>-vs-answer_<B>-...jsonl``,
  score 1 / 2 / 3, human votes, prompts and generations), or one rating file (the models
  and the reviewer read from its name), or one answer file (``generations/answer_<model>.jsonl``,
  QLoRA's ``<size>-guanaco-...jsonl``). [prd, prd-file, prd-answers]

Questions, answers, debates
---------------------------
- **questions**: ``question_id`` + ``question`` / ``text`` / ``prompt`` / ``turns``,
  optional ``category``, ``reference``. [questions]
- **answers**: ``question_id, model, answer`` (optional ``turn``); every answer's question
  must be in the same import or already in the study. [answers]
- **question/answer table**: ``question_id, question, model, answer`` (+ ``category``,
  ``reference``, ``turn``). [qa]
- **debates** as a table, one row per speaker per round: ``debate_id, question_id,
  model_a, model_b, round, speaker, verdict`` (+ ``criterion, scenario, rationale``);
  round 0 = initial verdicts; an empty verdict is an unparsed one. Debates still split
  in their last round are *unresolved* (the adjudication queue). [debates]
- **ScaleEval** results folders (``responses/``, ``results/<A>_vs_<B>/<criterion>/
  {<judge>_score, multiagent_score}/<scenario>.jsonl``), or one result file (outside the
  layout each record names ``model_a``, ``model_b``, ``criterion`` and ``judge`` or
  ``speakers``). [scaleeval]

A folder in none of these layouts (e.g. ``sample_data/``) is imported file by file,
every data file detected on its own, all in one transaction. [folder]

Exports
-------
:mod:`peercore.io.export`: judgments and leaderboards as CSV (cells that a spreadsheet
would run as a formula are neutralised), JSONL or Parquet, as files or bytes.
"""

from __future__ import annotations

__all__ = ["import_path", "read_path", "import_bundle", "ImportReport", "detect_format", "FORMATS",
           "write_table", "table_bytes", "neutralise_formulas"]

_LAZY = {
    "import_path": "peercore.io.importer", "read_path": "peercore.io.importer",
    "import_bundle": "peercore.io.importer", "ImportReport": "peercore.io.importer", "FORMATS": "peercore.io.importer",
    "detect_format": "peercore.io.detect",
    "write_table": "peercore.io.export", "table_bytes": "peercore.io.export",
    "neutralise_formulas": "peercore.io.export",
}


def __getattr__(name: str):
    """Import on first use, so ``import peercore.io.prd`` stays light."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'peercore.io' has no attribute {name!r}")
