"""The names of the formats ``peercore import`` reads and ``peercore export`` writes.

Plain constants, so that the command line's parser (``peercore --help``) can list them
without loading the readers.
"""

from __future__ import annotations

__all__ = ["FILE_FORMATS", "FOLDER_FORMATS", "FORMATS", "EXPORT_FORMATS", "EXPORT_WHAT", "ORDER_POLICIES"]

FILE_FORMATS = ("canonical", "arena", "fastchat-human", "fastchat-pair", "fastchat-answers", "fastchat-questions",
                "alpacaeval", "scaleeval", "debates", "human", "questions", "answers", "qa", "prd-discussions",
                "human-scores", "usr", "judge-scores", "prd-answers")
FOLDER_FORMATS = ("prd", "scaleeval", "fastchat", "folder")
# What ``--format`` accepts: auto (detected), the folder and file formats, and one PRD rating file.
FORMATS = tuple(dict.fromkeys(("auto", *FOLDER_FORMATS, *FILE_FORMATS, "prd-file")))
EXPORT_FORMATS = ("csv", "jsonl", "parquet")
EXPORT_WHAT = ("judgments", "leaderboard")
# peercore import --order: what model_a means (peercore.domain.options.OrderPolicy's values).
ORDER_POLICIES = ("auto", "known", "unknown")


def file_name_part(name: str) -> str:
    """``name`` (a study's, a judge's) as part of a file name: every character a file system or a
    browser's download would refuse or read as a folder (``/ \\ : * ? " < > |``, control
    characters) becomes ``_``, and the result never starts with a dot."""
    cleaned = "".join("_" if ch in '/\\:*?"<>|' or ord(ch) < 32 or ord(ch) == 127 else ch for ch in str(name))
    cleaned = cleaned.strip().lstrip(".") or "study"
    return cleaned[:120]
