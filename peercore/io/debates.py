"""Debate transcripts as a table: one row per speaker per round.

The plain-table way to bring debates in (what ``sample_data/`` uses; the ScaleEval
folder layout is read by :mod:`peercore.io.scaleeval`). CSV, JSONL / JSON array or
Parquet with the columns::

    debate_id, question_id, model_a, model_b, round, speaker, verdict
    [, criterion, scenario, rationale, position]

``model_a`` is the answer shown first (ScaleEval's Submission 1). ``round`` 0 is the
initial verdict, 1, 2, ... the discussion rounds. ``verdict`` is ``model_a``, ``model_b``
or ``tie``; an empty verdict is an unparsed one (kept, never guessed). ``position``
(speaking order in the round) defaults to the order of the rows. A debate is *agreed*
when every speaker of its last round gives the same verdict, and then its consensus is
also written as a judgment by ``debate:<name>`` (the file stem); otherwise it is
*unresolved* and waits in the adjudication queue.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from peercore.io._common import (
    Bundle,
    plain,
    check_identifiers,
    fail,
    first_non_scalar,
    quote,
    require_columns,
    table_records,
    text_column,
    whole_numbers,
)
from peercore.io.canonical import _careful_canonical

__all__ = ["read_debate_table", "DEBATE_COLUMNS"]

DEBATE_COLUMNS = ("debate_id", "question_id", "model_a", "model_b", "round", "speaker", "verdict")
_VERDICTS = {"model_a": "model_a", "model_b": "model_b", "tie": "tie", "tie (bothbad)": "tie"}


def read_debate_table(path: str | Path, *, judge: str | None = None) -> Bundle:
    """Read a debate-turns table (see the module docstring).

    Parameters
    ----------
    judge : name of the consensus judge (default ``debate:<file stem>``).

    Raises
    ------
    JudgmentError
        Naming file, line and field: a missing column, an unknown verdict, a non-integer
        round, a speaker twice in one round, a debate whose question / models / criterion
        change between rows, a round skipped, a speaker missing from a round.
    """
    path = Path(path)
    name = path.name
    frame, line_of = table_records(path)
    require_columns(frame, DEBATE_COLUMNS, source=name, what="a debate table")
    check_identifiers(frame, ("debate_id", "question_id", "model_a", "model_b", "speaker", "criterion"),
                      source=name, line_of=line_of)
    table = pd.DataFrame({column: text_column(frame, column, source=name, line_of=line_of)
                          for column in ("debate_id", "question_id", "model_a", "model_b", "speaker")})
    for column in ("criterion", "scenario", "rationale"):
        table[column] = (text_column(frame, column, source=name, line_of=line_of, required=False).fillna("")
                         if column in frame.columns else "")
    table["round"] = whole_numbers(frame, "round", source=name, line_of=line_of)
    if table["round"].isna().any() or (table["round"] < 0).any():
        row = int(np.flatnonzero((table["round"].isna() | (table["round"] < 0)).to_numpy())[0])
        fail(f"round {quote(frame['round'].iloc[row])} must be 0 (initial verdict) or a positive discussion round",
             source=name, line=line_of(row), column="round", value=frame["round"].iloc[row])
    row = first_non_scalar(frame["verdict"])
    if row is not None:
        fail(f"verdict {quote(frame['verdict'].iloc[row])} is not one of model_a, model_b, tie (or empty for an "
             "unparsed verdict)", source=name, line=line_of(row), column="verdict", value=quote(frame["verdict"].iloc[row]))
    verdicts = []
    for row, value in enumerate(frame["verdict"].tolist()):
        if value is None or (isinstance(value, float) and np.isnan(value)) or str(value).strip() == "":
            verdicts.append(None)
            continue
        verdict = _VERDICTS.get(str(value).strip().lower())
        if verdict is None:
            fail(f"verdict {quote(value)} is not one of model_a, model_b, tie (or empty for an unparsed verdict)",
                 source=name, line=line_of(row), column="verdict", value=quote(value))
        verdicts.append(verdict)
    table["verdict"] = pd.Series(verdicts, index=table.index, dtype=object)
    if "position" in frame.columns:
        table["position"] = whole_numbers(frame, "position", source=name, line_of=line_of)
    judge = judge or f"debate:{path.stem}"
    debates, rows, row_lines = [], [], []
    for debate_id, group in table.groupby("debate_id", sort=False):
        first = group.index[0]
        for column in ("question_id", "model_a", "model_b", "criterion", "scenario"):
            changed = group[column] != group[column].iloc[0]
            if changed.any():
                row = int(group.index[np.flatnonzero(changed.to_numpy())[0]])
                fail(f"{column} of debate {quote(debate_id)} changes from {quote(group[column].iloc[0])} to "
                     f"{quote(table[column].iloc[row])} (first row on line {line_of(int(first))})", source=name,
                     line=line_of(row), column=column, value=table[column].iloc[row])
        if group["model_a"].iloc[0] == group["model_b"].iloc[0]:
            fail(f"model_a and model_b of debate {quote(debate_id)} are both {quote(group['model_a'].iloc[0])}", source=name,
                 line=line_of(int(first)), column="model_b", value=group["model_b"].iloc[0])
        repeated = group.duplicated(["round", "speaker"]).to_numpy()
        if repeated.any():
            row = int(group.index[np.flatnonzero(repeated)[0]])
            fail(f"speaker {quote(table['speaker'].iloc[row])} speaks twice in round {table['round'].iloc[row]} of debate "
                 f"{quote(debate_id)}", source=name, line=line_of(row), column="speaker", value=table["speaker"].iloc[row])
        rounds = sorted(int(r) for r in group["round"].unique())
        if rounds != list(range(len(rounds))):
            fail(f"debate {quote(debate_id)} has rounds {rounds}; they must run 0, 1, 2, ... without gaps", source=name,
                 line=line_of(int(first)), column="round")
        speakers = list(dict.fromkeys(group.loc[group["round"] == 0, "speaker"]))
        for r in rounds[1:]:
            here = set(group.loc[group["round"] == r, "speaker"])
            if here != set(speakers):
                row = int(group.index[(group["round"] == r).to_numpy()][0])
                fail(f"round {r} of debate {quote(debate_id)} has speakers {sorted(here)}, round 0 had {sorted(speakers)}",
                     source=name, line=line_of(row), column="speaker")
        turns = []
        for r in rounds:
            in_round = group[group["round"] == r]
            for position, (_index, turn) in enumerate(in_round.iterrows()):
                verdict = turn["verdict"] if isinstance(turn["verdict"], str) else None
                turns.append({"round": r, "position": int(turn["position"]) if "position" in turn
                              and pd.notna(turn["position"]) else position, "speaker": turn["speaker"],
                              "verdict": verdict, "rationale": turn["rationale"],
                              "raw": None if verdict is not None else json.dumps(plain(frame["verdict"].iloc[_index]),
                                                                                 default=str)})
        last = rounds[-1]
        final = [t["verdict"] for t in turns if t["round"] == last]
        agreed = all(v is not None for v in final) and len(set(final)) == 1
        head = group.iloc[0]
        debates.append(({
            "debate_key": str(debate_id), "kind": "debate", "question_id": head["question_id"],
            "model_a": head["model_a"], "model_b": head["model_b"], "criterion": head["criterion"],
            "scenario": head["scenario"], "status": "agreed" if agreed else "unresolved",
            "consensus": final[0] if agreed else None, "n_rounds": last,
            "metadata": {"source": name, "speakers": speakers,
                         "initial": {t["speaker"]: t["verdict"] for t in turns if t["round"] == 0},
                         "final": {t["speaker"]: t["verdict"] for t in turns if t["round"] == last}},
        }, turns))
        if agreed:
            rows.append({"question_id": head["question_id"], "model_a": head["model_a"], "model_b": head["model_b"],
                         "judge": judge, "winner": final[0], "criterion": head["criterion"] or None,
                         "rationale": f"consensus of {len(speakers)} speakers after {last} discussion round(s)"})
            row_lines.append(line_of(int(first)))
    bundle = Bundle(source=str(path), format="debates", order="known", debates=debates, files=[path],
                    guidelines=read_guidelines(path))
    speakers = list(dict.fromkeys(table["speaker"]))
    bundle.judges = [{"name": s, "kind": "human" if s.startswith("human:") else "llm"} for s in speakers]
    if rows:
        bundle.judgments = _careful_canonical(pd.DataFrame(rows), name=name, line_of=lambda r: row_lines[r],
                                              judge_prefix=None)
        bundle.judgment_lines = lambda r: row_lines[r]
        bundle.judges.append({"name": judge, "kind": "debate"})
    unresolved = sum(d["status"] == "unresolved" for d, _ in debates)
    bundle.notes = {"debates": len(debates), "agreed_debates": len(debates) - unresolved,
                    "unresolved_debates": unresolved}
    return bundle


GUIDELINES_SUFFIX = ".guidelines.md"


def read_guidelines(path: str | Path) -> str:
    """The adjudication guidelines shipped beside a debates file, ``<stem>.guidelines.md``; '' when none.

    Plain text (shown as text on the Adjudication page, never as Markdown), read as UTF-8.
    """
    path = Path(path)
    sibling = path.with_name(path.stem + GUIDELINES_SUFFIX)
    return sibling.read_text(encoding="utf-8").strip() if sibling.is_file() else ""
