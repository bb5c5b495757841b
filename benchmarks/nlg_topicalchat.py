"""The offline judge on TopicalChat (USR): comparative assessment vs absolute scoring, against humans.

Liusie, Manakul, Gales (2024) and the Product-of-Experts follow-up (Liusie et al. 2024),
measured here with the offline judge (Qwen2.5-Coder-1.5B through llama.cpp, 2 cores):

1. imports ``../shared/data/topicalchat_usr/topical_chat.json`` (60 contexts x 6 systems,
   USR human scores) into a study of its own database;
2. for each attribute (coherence, engagingness) runs the symmetric set of comparisons
   (all 30 ordered pairs of each context's 6 responses; ``peercore.nlg.jobs.ComparisonJob``)
   and the absolute-scoring baseline (every response scored 1-9, expected score over the
   score tokens; ``peercore.jobs.scoring.ScoreJob``), context by context (one context's
   four jobs share the context's prompt prefix), under the judge names
   ``local:qwen2.5-coder-1.5b~<attribute>`` and ``local:qwen2.5-coder-1.5b~score,<attribute>``;
3. times comparisons with and without llama.cpp's prompt (KV) cache on one context, in a
   throwaway database (so the run's cache cannot answer them);
4. writes ``results/nlg_topicalchat.md`` (the papers' table shape, the speed-up and the
   efficiency curves' summary) and ``results/nlg_topicalchat.json``;
5. with ``--bundle``, writes the bundled study ``sample_data/topicalchat/`` that the app
   seeds on first run (the USR file, the judge's comparisons and absolute scores of the
   contexts done, provenance and licence).

It resumes: every finished call is in the database (``--db``, default
``.local/nlg_topicalchat.sqlite``), and running the script again continues where it
stopped (the jobs' run ids are deterministic). ``--report-only`` rewrites the results
from what is stored. Start it in the background with::

    nice -n 10 .venv/bin/python benchmarks/nlg_topicalchat.py > .local/nlg_topicalchat.log 2>&1 &

It takes about three hours on 2 cores and ends by itself.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import machine  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "topicalchat_usr" / "topical_chat.json"
STUDY = "topicalchat-usr"
ATTRIBUTES = ("coherence", "engagingness")
JUDGE = "local:qwen2.5-coder-1.5b"
RESULTS = ROOT / "benchmarks" / "results"
CHUNK = 1  # one context at a time: its comparisons and scores follow each other (prompt cache)


def log(message: str) -> None:
    print(time.strftime("%H:%M:%S"), message, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", default=str(ROOT / ".local" / "nlg_topicalchat.sqlite"))
    parser.add_argument("--contexts", type=int, default=60, help="how many contexts (the first N; default all 60)")
    parser.add_argument("--report-only", action="store_true", help="only rewrite the results from the database")
    parser.add_argument("--no-timing", action="store_true", help="skip the prompt-cache timing")
    parser.add_argument("--results", default=str(RESULTS), help="folder for nlg_topicalchat.md / .json")
    parser.add_argument("--bundle", action="store_true", help="(re)write sample_data/topicalchat/ from the database")
    args = parser.parse_args(argv)

    from peercore.io.importer import import_path
    from peercore.store import Store

    Path(args.db).parent.mkdir(parents=True, exist_ok=True)
    store = Store(args.db)
    if not store.studies.exists(STUDY) or store.scores.human_scores(STUDY).empty:
        report = import_path(DATA, store=store, study=STUDY, format="usr")
        log("\n".join(report.lines()))
    contexts = list(store.questions.table(STUDY)["question_id"])[: args.contexts]
    state_path = Path(args.results) / "nlg_topicalchat.json"
    state = json.loads(state_path.read_text()) if state_path.is_file() else {}
    state.setdefault("runs", {})
    if not args.report_only:
        for start in range(0, len(contexts), CHUNK):
            chunk = contexts[start:start + CHUNK]
            for attribute in ATTRIBUTES:
                _run(store, "compare", attribute, chunk, state)
            for attribute in ATTRIBUTES:
                _run(store, "score", attribute, chunk, state)
            _save(state, state_path)
        if not args.no_timing and "timing" not in state:
            state["timing"] = _timing(store, contexts[0])
            _save(state, state_path)
    _report(store, state, Path(args.results))
    _save(state, state_path)
    if args.bundle:
        _bundle(store, state, ROOT / "sample_data" / "topicalchat")
    log("done")
    return 0


def _job(kind: str, attribute: str, chunk: list[str]):
    from peercore.jobs.scoring import ScoreJob
    from peercore.jobs.specs import make_backend
    from peercore.nlg.jobs import ComparisonJob

    from peercore.jobs.base import Judge

    if kind == "compare":
        judge = Judge(make_backend(JUDGE), name=f"{JUDGE}~{attribute}")
        return ComparisonJob(STUDY, [judge], attribute=attribute, questions=chunk)
    judge = Judge(make_backend(JUDGE), name=f"{JUDGE}~score,{attribute}")
    return ScoreJob(STUDY, [judge], attribute=attribute, questions=chunk)


def _run(store, kind: str, attribute: str, chunk: list[str], state: dict) -> None:
    from peercore.runner import run_job_sync

    job = _job(kind, attribute, chunk)
    run_id = job.run_id()
    pending = len(store.runs.pending_items(run_id)) if _has_run(store, run_id) else None
    if pending == 0:
        log(f"{kind} {attribute} {chunk[0]}..{chunk[-1]}: done before")
        state["runs"].setdefault(run_id, {}).update(_names(job, store, kind, attribute, chunk))
        return
    log(f"{kind} {attribute} {chunk[0]}..{chunk[-1]}: {pending if pending is not None else 'all'} items to do")
    started = time.perf_counter()
    last = [0.0]

    def progress(event) -> None:
        if time.perf_counter() - last[0] > 60:
            last[0] = time.perf_counter()
            log(f"  {event.done}/{event.total} done, {event.calls} calls paid, {event.invalid} invalid")

    result = run_job_sync(job, store, on_progress=progress, concurrency=1)
    elapsed = time.perf_counter() - started
    log(f"  {result.status}: {result.message} ({elapsed:.0f} s, {result.calls} calls paid); accounting "
        f"{result.accounting}")
    entry = state["runs"].setdefault(run_id, {})
    entry.update(_names(job, store, kind, attribute, chunk))
    entry["seconds"] = entry.get("seconds", 0.0) + elapsed
    entry["calls"] = entry.get("calls", 0) + result.calls
    entry["accounting"] = result.accounting
    entry["status"] = result.status


def _has_run(store, run_id: str) -> bool:
    from peercore.store import StoreError

    try:
        store.runs.get(run_id)
    except StoreError:
        return False
    return True


def _names(job, store, kind, attribute, chunk) -> dict:
    job.prepare(store)
    return {"kind": kind, "attribute": attribute, "contexts": [chunk[0], chunk[-1], len(chunk)],
            "judge": next(iter(job.judge_names().values()))}


def _timing(store, context: str) -> dict:
    """Comparisons of one context with and without the prompt cache, in a throwaway database."""
    import tempfile

    from peercore.reviewers.local import LocalBackend
    from peercore.nlg.jobs import ComparisonJob
    from peercore.runner import run_job_sync
    from peercore.store import Store

    out = {"context": context}
    with tempfile.TemporaryDirectory() as folder:
        for cached in (True, False):
            name = "cached" if cached else "uncached"
            # a database of its own per variant: one shared file would answer the second variant's calls
            # from the first's stored responses (the run's call cache), timing nothing
            probe = Store(Path(folder) / f"timing-{name}.sqlite")
            study = f"{STUDY}-{name}"
            probe.studies.create(study)
            probe.questions.add(study, store.questions.table(STUDY).query("question_id == @context"))
            probe.questions.add_answers(study, store.questions.answers(STUDY).query("question_id == @context"))
            job = ComparisonJob(study, [LocalBackend(prefix_cache=cached)], attribute="coherence")
            log(f"timing: {name} comparisons of {context}")
            started = time.perf_counter()
            result = run_job_sync(job, probe, concurrency=1)
            out[f"{name}_seconds"] = time.perf_counter() - started
            out[f"{name}_calls"] = result.calls
            frame = probe.verdicts.table(study)
            out[f"{name}_p"] = {f"{a}|{b}": p for a, b, p in zip(frame["model_a"], frame["model_b"], frame["p_a"])}
            probe.close()
        if not (out["cached_calls"] and out["uncached_calls"]):
            raise RuntimeError(f"the timing step paid no call ({out['cached_calls']} cached, {out['uncached_calls']} "
                               "uncached): it would time a cache, not the model")
        both = [(out["cached_p"][k], out["uncached_p"][k]) for k in out["cached_p"]]
        out["max_abs_dp"] = max(abs(a - b) for a, b in both)
        out["speedup"] = out["uncached_seconds"] / out["cached_seconds"]
    log(f"timing: {out['uncached_seconds']:.0f} s uncached vs {out['cached_seconds']:.0f} s cached "
        f"({out['speedup']:.1f}x), max |dp| {out['max_abs_dp']:.4f}")
    return out


def _bundle(store, state: dict, folder: Path) -> None:
    """The bundled study: the MIT data file, the run's comparisons and scores, provenance and licence."""
    import platform
    import shutil

    import peercore
    from peercore.io.scores import judge_scores_table
    from peercore.judgments import COLUMNS
    from peercore.reviewers.local_model import QWEN_SHA256

    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DATA, folder / "topical_chat.json")
    judges = sorted({run["judge"] for run in state["runs"].values()})
    judgments = store.verdicts.table(STUDY, judges=judges)
    judgments[[c for c in COLUMNS if c in judgments.columns and judgments[c].notna().any()]].to_csv(
        folder / "judgments.csv", index=False)
    scores = judge_scores_table(store.scores.judge_scores(STUDY, judges=judges, include_invalid=True))
    scores.drop(columns=[c for c in ("rationale",) if c in scores.columns]).to_csv(folder / "judge_scores.csv",
                                                                                  index=False)
    settings = {row["name"]: row["settings"] for row in store.judges.table(STUDY).to_dict(orient="records")
                if row["name"] in judges}
    facts = {
        "study": STUDY,
        "description": "TopicalChat USR ratings (60 contexts x 6 responses, MIT) with the offline judge's "
                       "comparisons and absolute scores: the NLG assessment page opens on it.",
        "made_by": "benchmarks/nlg_topicalchat.py --bundle",
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "peercore_version": getattr(peercore, "__version__", "0.1.0"),
        "python": platform.python_version(),
        "data": "topical_chat.json: maszhongming/UniEval reproduce/data/dialogue/topical_chat.json at "
                "d33e7b6cfebe97b2bafe435adbd818230d5a416a (MIT, Copyright (c) 2022 Ming Zhong); USR ratings by "
                "Mehri & Eskenazi (2020)",
        "licence": "MIT (see LICENSE beside this file)",
        "judge_model": f"Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, sha256 {QWEN_SHA256} (upstream Apache-2.0)",
        "contexts_compared": int(judgments["question_id"].nunique()),
        "comparisons": len(judgments),
        "absolute_scores": len(scores),
        "judges": settings,
    }
    (folder / "provenance.json").write_text(json.dumps(facts, indent=1) + "\n")
    log(f"bundle: {folder} ({len(judgments):,} comparisons, {len(scores):,} scores)")


def _save(state: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")


def _cache_stats(store) -> dict:
    """The prompt cache's saving within the run: prompt tokens evaluated with it, and without it.

    Every paid call records its prompt's tokens and how many of them the cache reused
    (``raw["reused_tokens"]``); without the cache every prompt token is evaluated. The
    token ratio does not depend on the machine's load (the latencies do: the run shares
    2 cores at ``nice -n 10``); the clean timing is the separate timing step.
    """
    rows = store.connect().execute("SELECT latency_s, prompt_tokens, request, response FROM llm_calls").fetchall()
    out = {}
    for kind, prefill in (("compare", "The better response is Response "), ("score", "Score: ")):
        calls = []
        for latency, prompt_tokens, request, response in rows:
            if json.loads(request).get("prefill") != prefill:
                continue
            reused = json.loads(response).get("raw", {}).get("reused_tokens", 0) or 0
            calls.append((float(latency or 0.0), int(prompt_tokens), int(reused)))
        if not calls:
            continue
        prompt = sum(c[1] for c in calls)
        evaluated = sum(c[1] - c[2] for c in calls)
        latencies = sorted(c[0] for c in calls)
        out[kind] = {"calls": len(calls), "prompt_tokens": prompt, "evaluated_tokens": evaluated,
                     "token_ratio": prompt / evaluated if evaluated else float("nan"),
                     "median_prompt_tokens": sorted(c[1] for c in calls)[len(calls) // 2],
                     "median_evaluated_tokens": sorted(c[1] - c[2] for c in calls)[len(calls) // 2],
                     "median_latency_s": latencies[len(latencies) // 2]}
    return out


def _report(store, state: dict, folder: Path) -> None:
    state["cache_stats"] = _cache_stats(store)
    try:
        from peercore.nlg.report import topicalchat_report
    except ImportError as exc:  # the run's calls are stored; rerun with --report-only
        log(f"no report: {exc}")
        return

    text, facts = topicalchat_report(store, STUDY, attributes=ATTRIBUTES, state=state, machine=machine())
    (folder / "nlg_topicalchat.md").write_text(text)
    state["results"] = facts
    log(f"wrote {folder / 'nlg_topicalchat.md'}")


if __name__ == "__main__":
    raise SystemExit(main())
