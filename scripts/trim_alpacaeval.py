"""Trim AlpacaEval annotation files to what PeerBoard's golden test needs.

Usage (from a checkout of https://github.com/tatsu-lab/alpaca_eval, or a bare git directory
of it, whose ``HEAD`` is read with ``git show``):

    python scripts/trim_alpacaeval.py ALPACA_EVAL_CHECKOUT_OR_GIT_DIR OUT.csv MODEL [MODEL ...]

For each model, reads ``results/<model>/weighted_alpaca_eval_gpt4_turbo/annotations.json``
and writes one CSV row per instruction (in the order first seen): ``question_id``
(``alpaca:`` + the first 12 hex digits of SHA-256(instruction), as PeerBoard's
AlpacaEval importer names it), ``length_1`` (characters of ``output_1``, the baseline's
answer, the same in every file), then per model ``preference:<model>`` (exactly as
published, Python's round-trip float repr) and ``length:<model>`` (characters of
``output_2``, the model's answer); empty where a model has no annotation. The texts
themselves are dropped: the win rates need only the preferences, ``avg_length`` and the
length-controlled win rate only the lengths. An ``OUT`` ending in ``.gz`` is written
gzip-compressed.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

ANNOTATIONS = "results/{model}/weighted_alpaca_eval_gpt4_turbo/annotations.json"


def read_text(source: Path, relative: str) -> str:
    """A file of a checkout, or of ``HEAD`` in a bare git directory (``git show HEAD:path``)."""
    if (source / "HEAD").is_file() and (source / "objects").is_dir():
        return subprocess.run(["git", "--git-dir", str(source), "show", f"HEAD:{relative}"], check=True,
                              capture_output=True).stdout.decode("utf-8")
    return (source / relative).read_text(encoding="utf-8")


def main(argv: list[str]) -> int:
    checkout, out, models = Path(argv[0]), Path(argv[1]), argv[2:]
    baseline_length: dict[str, int] = {}
    cells: dict[tuple[str, str], tuple[str, int]] = {}
    for model in models:
        for record in json.loads(read_text(checkout, ANNOTATIONS.format(model=model))):
            qid = "alpaca:" + hashlib.sha256(record["instruction"].encode("utf-8")).hexdigest()[:12]
            length = baseline_length.setdefault(qid, len(record["output_1"]))
            if length != len(record["output_1"]):
                raise SystemExit(f"{model} {qid}: the baseline answer differs from another file's")
            cells[(qid, model)] = (repr(float(record["preference"])), len(record["output_2"]))
    with _open_for_writing(out) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["question_id", "length_1"] + [f"{kind}:{m}" for m in models for kind in ("preference", "length")])
        for qid, length in baseline_length.items():
            row = [qid, length]
            for model in models:
                row += list(cells.get((qid, model), ("", "")))
            writer.writerow(row)
    return 0


def _open_for_writing(out: Path):
    """A text handle on ``out``; gzip-compressed (with a fixed mtime, so reruns give the same bytes) for ``.gz``."""
    if out.suffix != ".gz":
        return out.open("w", newline="", encoding="utf-8")
    raw = out.open("wb")
    zipped = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
    zipped.myfileobj = raw  # closed with the GzipFile
    return io.TextIOWrapper(zipped, encoding="utf-8", newline="")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
