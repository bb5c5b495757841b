"""The offline judge's label probabilities on LFQA's 260 expert-labelled pairs (input of ``selective_real.py``).

LFQA (Xu et al. 2023, ``../shared/data/lfqa_expert_pairwise``; 260 pairs of long-form
answers, one expert preference each, no tie) carries no LLM verdict, so the selective
evaluation benchmark needs one: the offline judge ``local:qwen2.5-coder-1.5b`` through the
label-probability classifier (Liusie et al. 2024, eq. 3), in both orders
(:func:`peercore.reviewers.judging.compare_both_orders`). Written to
``results/lfqa_local_judge.csv``: the file's row, ``p_12`` (P(answer_a better), a first),
``p_21`` (P(answer_b better), b first), ``p_a`` (both orders averaged), and the expert's
``label`` (``model_a`` / ``model_b``). No text is copied. Resumable: rows already in the
file are not judged again.

Slow (about 5 s per order on 2 cores: ~45 minutes); run it with ``nice``:
``nice -n 19 .venv/bin/python benchmarks/lfqa_local_judge.py``.
"""

from __future__ import annotations

import asyncio
import csv
import json
import sys
from pathlib import Path

from peercore.reviewers.judging import compare_both_orders
from peercore.reviewers.local import LocalBackend

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "lfqa_expert_pairwise" / \
    "experts_pairwise_human_preferences.jsonl"
OUT = Path(__file__).resolve().parent / "results" / "lfqa_local_judge.csv"
FIELDS = ["row", "p_12", "p_21", "p_a", "label"]


def main() -> int:
    if not DATA.exists():
        print(f"{DATA} is absent; nothing to do")
        return 0
    rows = [json.loads(line) for line in DATA.open(encoding="utf-8")]
    done = set()
    if OUT.exists():
        with OUT.open(newline="") as handle:
            done = {int(r["row"]) for r in csv.DictReader(handle)}
    backend = LocalBackend("qwen2.5-coder-1.5b", n_ctx=4096)
    new = not OUT.exists()
    with OUT.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        if new:
            writer.writeheader()
        for index, row in enumerate(rows):
            if index in done:
                continue
            result = asyncio.run(compare_both_orders(backend, None, row["question"], row["answer_a"],
                                                     row["answer_b"], method="logits"))
            label = {-1: "model_a", 1: "model_b", 0: "tie"}[int(row["overall_preference"])]
            forward, backward = result.forward.p_first, result.backward.p_first
            writer.writerow({"row": index, "p_12": forward, "p_21": backward, "p_a": result.p_debiased,
                             "label": label})
            handle.flush()
            print(index, forward, backward, result.p_debiased, label, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
