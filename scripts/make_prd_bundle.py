"""Make the bundled PRD Vicuna80 study (``sample_data/prd_vicuna80/``) from PRD's released folder.

Usage::

    python scripts/make_prd_bundle.py [PRD_VICUNA80_FOLDER] [OUT_FOLDER]

(defaults: ``../shared/data/prd_vicuna80`` and ``sample_data/prd_vicuna80``).

The folder is read with PeerBoard's own PRD reader (:func:`peercore.io.prd.read_prd_folder`,
what ``peercore import`` does), kept to PRD's five models (bard, claude, gpt35, gpt4,
vicuna-13b: the Guanaco models of the QLoRA human study are dropped) and written as three
flat files the first-run seeding imports with the ordinary readers:

- ``questions.jsonl``: ``prompts/vicuna_questions.jsonl``, byte for byte;
- ``answers.parquet``: ``question_id, model, answer`` from ``generations/answer_<model>.jsonl``
  (the model named by the file, as the PRD reader does; ``answer_id`` and ``model_id`` dropped);
- ``judgments.parquet``: the canonical table ``question_id, model_a, model_b, judge, winner, order_known,
  rationale`` in the reader's order: 8,000 LLM reviews (the review text as rationale; PRD's
  unparsed ``-1`` scores read as ties, as the PRD notebook and the reader do) and 1,760 human
  votes (judge ``human:prd``, no text; repeated votes on one pair are numbered by the store).
  Zstandard-compressed Parquet: the review texts are most of the bytes.

``provenance.json`` beside them records each source file's path and SHA-256 and the counts;
``PROVENANCE.md`` and ``LICENSE`` are written by hand.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from peercore import __version__  # noqa: E402
from peercore.io.prd import PRD_HUMAN_JUDGE, _file_pattern, read_prd_folder  # noqa: E402

MODELS = ("bard", "claude", "gpt35", "gpt4", "vicuna-13b")
STUDY = "prd-vicuna80"
UPSTREAM = "bcdnlp/PRD"
UPSTREAM_COMMIT = "35fb99e5d5c7a2f3535811f1edbe417da7563957"
COLUMNS = ["question_id", "model_a", "model_b", "judge", "winner", "rationale"]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(table, path, compression="zstd", compression_level=19, use_dictionary=True)


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else REPO.parent / "shared" / "data" / "prd_vicuna80"
    out = Path(argv[1]) if len(argv) > 1 else REPO / "sample_data" / "prd_vicuna80"
    out.mkdir(parents=True, exist_ok=True)
    bundle = read_prd_folder(source)

    judgments = bundle.judgments
    keep = judgments["model_a"].isin(MODELS) & judgments["model_b"].isin(MODELS)
    judgments = judgments.loc[keep, COLUMNS].reset_index(drop=True)
    judgments["rationale"] = judgments["rationale"].astype(object).where(judgments["rationale"].notna(), None)
    for column in COLUMNS[:5]:
        judgments[column] = judgments[column].astype(str)
    # PRD's files record which answer was shown first (the reviewers' and the annotators' answer 1): the
    # canonical copy says so, as importing the PRD folder itself does (issue 18).
    judgments["order_known"] = True
    _write_parquet(judgments, out / "judgments.parquet")

    answers = bundle.answers[bundle.answers["model"].isin(MODELS)][["question_id", "model", "answer"]]
    _write_parquet(answers.reset_index(drop=True).astype(str), out / "answers.parquet")
    shutil.copyfile(source / "prompts" / "vicuna_questions.jsonl", out / "questions.jsonl")

    human = judgments["judge"] == PRD_HUMAN_JUDGE
    rating_files = [p for p in sorted(source.glob("ratings-*/answer_*.jsonl")) if _between_the_five(p)]
    facts = {
        "study": STUDY,
        "description": "PRD Vicuna80 (Li, Patel & Du 2023; MIT): 8,000 LLM peer reviews and 1,760 human votes; "
                       "Peer Rank reproduces the paper.",
        "leaderboard_method": "Peer Rank weighted",  # what the Home page's button opens the Leaderboard on
        "made_by": "scripts/make_prd_bundle.py",
        "date_utc": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "peercore_version": __version__,
        "python": platform.python_version(),
        "data": f"{UPSTREAM} data/vicuna80 at {UPSTREAM_COMMIT} (MIT, Copyright (c) 2023 bcdnlp); human votes among "
                "gpt4, gpt35, bard and vicuna-13b from the QLoRA human study (artidoro/qlora, MIT); questions: the "
                "Vicuna benchmark (lm-sys/FastChat, Apache-2.0)",
        "licence": "MIT (see LICENSE beside this file); questions Apache-2.0",
        "paper": "Li, Patel & Du, PRD: Peer Rank and Discussion Improve Large Language Model based Evaluations, "
                 "arXiv 2307.02762",
        "questions": int(len(bundle.questions)),
        "contestants": len(MODELS),
        "llm_reviews": int((~human).sum()),
        "human_votes": int(human.sum()),
        "sources": {
            "questions.jsonl": {"from": "prompts/vicuna_questions.jsonl", "sha256": _sha256(source / "prompts" /
                                                                                      "vicuna_questions.jsonl")},
            "answers.parquet": {f"generations/answer_{m}.jsonl": _sha256(source / "generations" / f"answer_{m}.jsonl")
                                for m in MODELS},
            "judgments.parquet": {str(p.relative_to(source)): _sha256(p) for p in rating_files},
        },
    }
    (out / "provenance.json").write_text(json.dumps(facts, indent=1) + "\n", encoding="utf-8")
    print(f"{out}: {len(judgments):,} judgments ({int((~human).sum()):,} LLM reviews, {int(human.sum()):,} human "
          f"votes), {len(answers)} answers, {len(bundle.questions)} questions")
    return 0


def _between_the_five(path: Path) -> bool:
    """A rating file the PRD reader reads (``answer_<A>-vs-answer_<B>-<reviewer>-reviewer...``) between two of the five."""
    match = _file_pattern(path.parent.name.removeprefix("ratings-")).match(path.name)
    return match is not None and match["a"] in MODELS and match["b"] in MODELS


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
