"""Chatbot Arena battle logs (FastChat ``clean_battle`` JSON / JSONL) and the MT-Bench human judgments.

One record per battle::

    {"question_id": "...", "model_a": "...", "model_b": "...", "winner": "model_a",
     "judge": "arena_user_...", "turn": 1, "anony": true, "language": "English", "tstamp": ...}

``winner`` is ``model_a``, ``model_b``, ``tie`` or ``tie (bothbad)`` (read as ``tie``;
Zheng et al. 2023, section 5). The voters are people, so a ``judge`` without a
``backend:`` prefix becomes ``human:<judge>``; a log without a ``judge`` field gets
``human:arena``. ``tstamp``, ``anony``, ``language`` and the conversations are not part
of the canonical table and are not stored; rows keep the file's (chronological) order.

The MT-Bench human-judgment layout (``lmsys/mt_bench_human_judgments``: ``question_id,
model_a, model_b, winner, judge, turn`` with judges such as ``expert_12``) is read the
same way (format ``fastchat-human``).
"""

from __future__ import annotations

from pathlib import Path

from peercore.io._common import Bundle
from peercore.io.canonical import read_canonical_judgments

__all__ = ["read_arena", "read_fastchat_human", "ARENA_JUDGE_PREFIX", "ARENA_DEFAULT_JUDGE"]

ARENA_JUDGE_PREFIX = "human:"
ARENA_DEFAULT_JUDGE = "human:arena"


def read_arena(path: str | Path, *, format: str = "arena") -> Bundle:
    """Read a Chatbot Arena battle log (JSON array or JSONL; CSV and Parquet work too).

    Raises
    ------
    JudgmentError
        Naming file, line and field: a missing ``question_id`` / ``model_a`` /
        ``model_b`` / ``winner``, an unknown winner (e.g. ``'model_c'``), ``model_a ==
        model_b``, a non-integer ``turn``, ...
    """
    return read_canonical_judgments(path, judge_prefix=ARENA_JUDGE_PREFIX, default_judge=ARENA_DEFAULT_JUDGE,
                                    format=format)


def read_fastchat_human(path: str | Path) -> Bundle:
    """MT-Bench human judgments (``question_id, model_a, model_b, winner, judge, turn``)."""
    return read_arena(path, format="fastchat-human")
