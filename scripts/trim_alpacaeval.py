"""Trim AlpacaEval annotation files to what PeerBoard's golden test needs.

Usage (from a checkout of https://github.com/tatsu-lab/alpaca_eval):

    python scripts/trim_alpacaeval.py ALPACA_EVAL_CHECKOUT OUT.csv MODEL [MODEL ...]

For each model, reads ``results/<model>/weighted_alpaca_eval_gpt4_turbo/annotations.json``
and writes one CSV row per instruction (in the order first seen): ``question_id``
(``alpaca:`` + the first 12 hex digits of SHA-256(instruction), as PeerBoard's
AlpacaEval importer names it), ``length_1`` (characters of ``output_1``, the baseline's
answer, the same in every file), then per model ``preference:<model>`` (exactly as
published, Python's round-trip float repr) and ``length:<model>`` (characters of
``output_2``, the model's answer); empty where a model has no annotation. The texts
themselves are dropped: the win rates need only the preferences, ``avg_length`` and the
length-controlled win rate only the lengths.
"""

from __future__ import annotations

import csv
import hashlib
import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    checkout, out, models = Path(argv[0]), Path(argv[1]), argv[2:]
    baseline_length: dict[str, int] = {}
    cells: dict[tuple[str, str], tuple[str, int]] = {}
    for model in models:
        path = checkout / "results" / model / "weighted_alpaca_eval_gpt4_turbo" / "annotations.json"
        for record in json.loads(path.read_text(encoding="utf-8")):
            qid = "alpaca:" + hashlib.sha256(record["instruction"].encode("utf-8")).hexdigest()[:12]
            length = baseline_length.setdefault(qid, len(record["output_1"]))
            if length != len(record["output_1"]):
                raise SystemExit(f"{model} {qid}: the baseline answer differs from another file's")
            cells[(qid, model)] = (repr(float(record["preference"])), len(record["output_2"]))
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["question_id", "length_1"] + [f"{kind}:{m}" for m in models for kind in ("preference", "length")])
        for qid, length in baseline_length.items():
            row = [qid, length]
            for model in models:
                row += list(cells.get((qid, model), ("", "")))
            writer.writerow(row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
