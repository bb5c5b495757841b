"""Slow, row-by-row reference implementations: the oracles property tests check the one implementation against.

Each function here says in plain Python loops what a number means; the product computes
it once, vectorised, on the read model (:mod:`peercore.domain.verdicts`,
:mod:`peercore.position`). Nothing in ``peercore`` imports this module.
"""

from __future__ import annotations

import math
from collections import defaultdict

_VOTE = {"model_a": 1, "tie": 0, "model_b": -1}


def _key(row, *, with_round=True):
    key = (row["question_id"], row["model_a"], row["model_b"], row["judge"], row.get("criterion") or "",
           int(row.get("turn") or 0))
    return key + (int(row.get("round") or 0),) if with_round else key


def final_only(rows: list[dict]) -> list[dict]:
    """Each judge's verdicts of the highest round on each comparison."""
    top = defaultdict(int)
    for row in rows:
        key = _key(row, with_round=False)
        top[key] = max(top[key], int(row.get("round") or 0))
    return [row for row in rows if int(row.get("round") or 0) == top[_key(row, with_round=False)]]


def majority(rows: list[dict]) -> list[dict]:
    """One verdict per judge and comparison: the sign of the summed votes (+1 a, -1 b, 0 tie), at the first vote's place."""
    groups = defaultdict(list)
    for index, row in enumerate(rows):
        groups[_key(row)].append(index)
    out = []
    for index, row in enumerate(rows):
        members = groups[_key(row)]
        if members[0] != index:
            continue
        if len(members) == 1:
            out.append(row)
            continue
        total = sum(_VOTE[rows[m]["winner"]] for m in members)
        given = [rows[m]["p_a"] for m in members if rows[m].get("p_a") is not None and not math.isnan(rows[m]["p_a"])]
        merged = dict(row, winner="model_a" if total > 0 else "model_b" if total < 0 else "tie",
                      p_a=sum(given) / len(given) if given else math.nan)
        out.append(merged)
    return out


def select(rows: list[dict], *, judges=None, kinds=None, kind_of=None, contestants=None, criteria=None, turns=None,
           final=True, each_vote=False) -> list[dict]:
    """What a selection picks, row by row (readable verdicts only)."""
    out = []
    for row in rows:
        if row["winner"] is None:
            continue
        if judges is not None and not any(row["judge"].startswith(j) if j.endswith(":") else row["judge"] == j
                                          for j in judges):
            continue
        if kinds is not None and kind_of(row["judge"]) not in kinds:
            continue
        if contestants is not None and not (row["model_a"] in contestants and row["model_b"] in contestants):
            continue
        if criteria is not None and (row.get("criterion") or "") not in criteria:
            continue
        if turns is not None and (int(row.get("turn") or 0) or 1) not in turns:
            continue
        out.append(row)
    if final:
        out = final_only(out)
    if not each_vote:
        out = majority(out)
    return out


def position_counts(rows: list[dict]) -> dict[str, tuple[int, int, int]]:
    """judge -> (verdicts used, first chosen, ties) over readable, order-known verdicts on pairs seen both ways round."""
    seen = defaultdict(set)
    for row in rows:
        if row["winner"] is not None and row["order_known"]:
            seen[(row["judge"], frozenset((row["model_a"], row["model_b"])))].add((row["model_a"], row["model_b"]))
    out = {}
    for row in rows:
        if row["winner"] is None or not row["order_known"]:
            continue
        if len(seen[(row["judge"], frozenset((row["model_a"], row["model_b"])))]) < 2:
            continue
        n, first, ties = out.get(row["judge"], (0, 0, 0))
        out[row["judge"]] = (n + 1, first + (row["winner"] == "model_a"), ties + (row["winner"] == "tie"))
    return out


def swap_counts(rows: list[dict]) -> dict[str, tuple[int, int, int]]:
    """judge -> (consistent, inconsistent favouring first, favouring second) pairs of verdicts (MT-Bench Table 2)."""
    forward, backward = defaultdict(list), defaultdict(list)
    for row in rows:
        if row["winner"] is None or not row["order_known"]:
            continue
        a, b = row["model_a"], row["model_b"]
        key = (row["judge"], row["question_id"], min(a, b), max(a, b), int(row.get("turn") or 0),
               row.get("criterion") or "")
        (forward if a < b else backward)[key].append(_VOTE[row["winner"]])
    out = defaultdict(lambda: [0, 0, 0])
    for key, votes in forward.items():
        for ab in votes:
            for ba in backward.get(key, ()):
                lean = ab + ba
                out[key[0]][0 if lean == 0 else 1 if lean > 0 else 2] += 1
    return {k: tuple(v) for k, v in out.items()}
