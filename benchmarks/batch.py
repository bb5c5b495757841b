"""A 10,000-comparison review through the providers' batch APIs vs the same review live, against the fake server.

Setup: the fake OpenAI server (``tests/fakes/llm_server.py``) runs in its own process on
127.0.0.1 with a fixed latency per live request (200 ms by default, as
``benchmarks/runner.py``) and a batch processing delay (``--batch-delay``, default 0:
a real provider takes minutes to 24 hours, which no benchmark can stand for). One judge
(``openai:gpt-4o-mini``, then ``anthropic:claude-3-5-haiku``) reviews 500 questions x 5
contestants x 4 others = 10,000 ordered pairs, once live (``peercore.runner`` at
concurrency 32, each call its own request) and once with ``--batch``
(:mod:`peercore.jobs.batch`: OpenAI: one uploaded JSONL, one batch, the output file read
back; Anthropic: one message batch, its results read back; polls every ``--poll``
seconds; every item judged from the call cache), each on a fresh database.

Reported per run: wall time, client CPU, HTTP requests the server received (by
endpoint), calls paid, stored verdicts, dollars (bundled prices; batch at half), and
whether the two runs stored the same verdicts.

Run: ``.venv/bin/python benchmarks/batch.py [--comparisons 10000] [--latency 0.2] [--concurrency 32]
[--provider openai --provider anthropic]``.
Results are printed as a Markdown table and written to ``benchmarks/results/batch.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))
from _common import machine, markdown_table  # noqa: E402

import pandas as pd  # noqa: E402

from peercore.jobs.batch import run_batch_sync  # noqa: E402
from peercore.jobs.review import ReviewJob  # noqa: E402
from peercore.reviewers import AnthropicBackend, OpenAIBackend  # noqa: E402
from peercore.runner import run_job_sync  # noqa: E402
from peercore.store import Store  # noqa: E402

SERVER = """
import json, sys
sys.path.insert(0, {tests!r})
from fakes.llm_server import FakeLLMServer
server = FakeLLMServer(latency_s={latency!r}, batch_delay_s={delay!r}).start()
print(server.port, flush=True)
for line in sys.stdin:    # one line: report and zero the counts; end of input: stop
    print(json.dumps(dict(server.endpoint_counts)), flush=True)
    server.reset_counts()
server.stop()
"""


def make_study(store: Store, n_questions: int, n_models: int) -> str:
    store.studies.create("bench")
    store.questions.add("bench", pd.DataFrame({
        "question_id": [f"q{i:04d}" for i in range(n_questions)],
        "text": [f"Explain concept number {i} to a newcomer in a short paragraph." for i in range(n_questions)],
    }))
    store.questions.add_answers("bench", pd.DataFrame([
        {"question_id": f"q{i:04d}", "model": f"model-{m}",
         "answer": f"Answer of model {m} to question {i}. " + "It explains the idea step by step. " * (2 + m)}
        for i in range(n_questions) for m in range(n_models)
    ]))
    return "bench"


def measure(provider: str, args, n_questions: int, n: int, url: str, counts) -> tuple[str, bool]:
    """One provider's live and batch runs: a Markdown section, and whether both stored the same verdicts."""
    rows, verdicts = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("live", "batch"):
            store = Store(Path(tmp) / f"{mode}.sqlite")
            study = make_study(store, n_questions, 5)
            backend = (OpenAIBackend("gpt-4o-mini", base_url=url + "/v1", timeout=60.0) if provider == "openai"
                       else AnthropicBackend("claude-3-5-haiku", base_url=url, timeout=60.0))
            job = ReviewJob(study, [backend])
            counts()  # zero
            start, cpu = time.perf_counter(), time.process_time()
            if mode == "live":
                result = run_job_sync(job, store, concurrency=args.concurrency)
            else:
                result = run_batch_sync(job, store, poll_s=args.poll, concurrency=args.concurrency)
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            seen = counts()
            assert result.status == "finished" and result.done == n, result
            accounting = store.runs.accounting(result.run_id)
            stored = store.runs.judgments(result.run_id)
            verdicts[mode] = stored.sort_values(["question_id", "model_a", "model_b"]).reset_index(drop=True)
            rows[mode] = {"wall": wall, "cpu": cpu, "requests": sum(seen.values()), "by_endpoint": seen,
                          "paid": accounting["calls_paid"], "verdicts": len(stored),
                          "cost": float(store.runs.get(result.run_id)["cost_usd"])}
            store.close()
    same = verdicts["live"].equals(verdicts["batch"])
    live, batch = rows["live"], rows["batch"]

    def endpoints(seen: dict) -> str:
        return ", ".join(f"{k} {v:,}" for k, v in sorted(seen.items()))

    header = ["run", "wall s", "client CPU s", "HTTP requests", "calls paid", "verdicts stored", "cost $"]
    table = markdown_table(header, [
        [f"live: {n:,} comparisons, concurrency {args.concurrency}", f"{live['wall']:.1f}", f"{live['cpu']:.1f}",
         f"{live['requests']:,}", f"{live['paid']:,}", f"{live['verdicts']:,}", f"{live['cost']:.4f}"],
        [f"batch: the same {n:,} comparisons, `--batch`", f"{batch['wall']:.1f}", f"{batch['cpu']:.1f}",
         f"{batch['requests']:,}", f"{batch['paid']:,}", f"{batch['verdicts']:,}", f"{batch['cost']:.4f}"],
        ["batch / live", f"{batch['wall'] / live['wall']:.3f}", f"{batch['cpu'] / live['cpu']:.3f}",
         f"{batch['requests'] / live['requests']:.5f}", f"{batch['paid'] / live['paid']:.3f}",
         f"{batch['verdicts'] / live['verdicts']:.3f}", f"{batch['cost'] / live['cost']:.3f}"],
    ])
    title = {"openai": "OpenAI Batch API (openai:gpt-4o-mini)",
             "anthropic": "Anthropic Message Batches (anthropic:claude-3-5-haiku)"}[provider]
    return "\n".join([f"## {title}", "", table, "",
                      f"Requests by endpoint. Live: {endpoints(live['by_endpoint'])}. "
                      f"Batch: {endpoints(batch['by_endpoint'])}. Same verdicts: {same}.", ""]), same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comparisons", type=int, default=10_000, help="a multiple of 20 (5 contestants, 20 pairs)")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per live request at the server")
    parser.add_argument("--batch-delay", type=float, default=0.0, help="seconds the server takes to process a batch")
    parser.add_argument("--poll", type=float, default=1.0, help="seconds between two reads of a running batch")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--provider", action="append", choices=("openai", "anthropic"), default=None,
                        help="repeatable (default both)")
    parser.add_argument("--no-write", action="store_true", help="do not write benchmarks/results/batch.md")
    args = parser.parse_args()
    n_questions = max(1, args.comparisons // 20)
    n = n_questions * 20
    os.environ.setdefault("OPENAI_API_KEY", "benchmark-key")
    os.environ.setdefault("ANTHROPIC_API_KEY", "benchmark-key")
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(tests=str(ROOT / "tests"), latency=args.latency,
                                                                   delay=args.batch_delay)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline())
    base_url = f"http://127.0.0.1:{port}/v1"

    def counts() -> dict:
        server.stdin.write("\n")
        server.stdin.flush()
        return json.loads(server.stdout.readline())

    sections, same_all = [], True
    for provider in args.provider or ["openai", "anthropic"]:
        section, same = measure(provider, args, n_questions, n, base_url.removesuffix("/v1"), counts)
        sections.append(section)
        same_all &= same
    server.stdin.close()
    server.wait(30)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    text = "\n".join([
        "# Batch benchmark",
        "",
        f"Machine: {machine()}. Fake server in its own process: {args.latency * 1000:.0f} ms per live "
        f"request, a batch processed in {args.batch_delay:g} s (real providers take minutes to 24 h: the batch wall "
        f"time here is the client's own work plus polls every {args.poll:g} s). One judge, {n:,} ordered pairs "
        f"({n_questions} questions x 5 contestants x 4 others); each run on a fresh database.",
        "",
        "\n".join(sections),
        "'Same verdicts' compares the winner, rationale and validity of every comparison the two runs stored. "
        "Cost with the bundled list prices; the batch run is priced at the `[batch_rate]` of "
        f"`peercore/jobs/prices.toml` (0.5). Load average while running: {load}.",
        "",
        "Reproduce: `.venv/bin/python benchmarks/batch.py`.",
        "",
    ])
    print(text)
    if not args.no_write:
        (HERE / "results" / "batch.md").write_text(text, encoding="utf-8")
    return 0 if same_all else 1


if __name__ == "__main__":
    sys.exit(main())
