"""``peercore nlg ...``: NLG assessment against human scores from the shell.

Import the data with ``peercore import`` (the USR file and generic score tables are
detected: formats ``usr``, ``human-scores``, ``judge-scores``), then::

    peercore nlg compare  --study S --judge local:qwen2.5-coder-1.5b --attribute coherence
    peercore nlg score    --study S --judge local:qwen2.5-coder-1.5b --attribute coherence
    peercore nlg evaluate --study S --attribute coherence            # the papers' table
    peercore nlg curves   --study S --attribute coherence            # Spearman vs comparisons
    peercore nlg judges   --study S                                   # what can be evaluated
    peercore nlg export   --study S --what human --format csv > human.csv

``compare`` and ``score`` run jobs like ``peercore review`` (``--dry-run`` estimates,
running the same command again resumes the same run, exit 1 when items failed);
``evaluate`` and ``curves`` read the store only. Errors exit 2 with one line.
"""

from __future__ import annotations

import json
import sys

import pandas as pd

from peercore.cli.common import fail
from peercore.cli.runs import ProgressBar, missing_credentials
from peercore.io.export import write_table
from peercore.io.scores import human_scores_wide, judge_scores_table
from peercore.jobs.estimate import estimate
from peercore.jobs.scoring import ScoreJob
from peercore.jobs.specs import parse_judge_spec
from peercore.nlg.jobs import ComparisonJob
from peercore.nlg.report import paper_table
from peercore.nlg.study import CURVE_METHODS, NLGStudy
from peercore.runner import RetryPolicy, run_job_sync
from peercore.store import Store

__all__ = []


# ------------------------------------------------------------------------ handlers


def _judges_of(args) -> list:
    return [parse_judge_spec(spec, timeout=args.timeout) for spec in args.judge]


def _compare(args) -> int:
    job = ComparisonJob(args.study, _judges_of(args), attribute=args.attribute, contestants=args.contestant,
                        questions=args.question, strategy=args.strategy, comparisons=args.comparisons,
                        seed=args.seed, method=args.method, max_tokens=args.max_tokens or 512)
    return _run(job, args)


def _score(args) -> int:
    job = ScoreJob(args.study, _judges_of(args), attribute=args.attribute, contestants=args.contestant,
                   questions=args.question, method=args.method, scale=_scale(args.scale),
                   temperature=args.temperature, max_tokens=args.max_tokens or 64)
    return _run(job, args)


def _scale(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    low, sep, high = text.partition("-")
    try:
        return int(low), int(high)
    except ValueError:
        raise ValueError(f"--scale must be LOW-HIGH with whole numbers (e.g. 1-9), got {text!r}") from None


def _run(job, args) -> int:
    store = Store(args.db)
    if args.dry_run:
        est = estimate(job, store)
        print(json.dumps(est.to_dict(), indent=2, default=str) if args.json else est.to_text())
        return 0
    missing = missing_credentials(job)
    if missing is not None:
        return fail(missing)
    bar = None if args.no_progress else ProgressBar(sys.stderr)
    result = run_job_sync(job, store, on_progress=bar, concurrency=args.concurrency,
                          retry=RetryPolicy(max_attempts=args.max_attempts))
    if bar is not None:
        bar.close()
    names = job.judge_names()
    if args.json:
        payload = {k: getattr(result, k) for k in result.__dataclass_fields__}
        payload["judges"] = names
        print(json.dumps(payload, indent=2, default=str))
    else:
        print(_summary(result, names))
    if result.status == "failed" and result.error and not result.failed_items:
        return fail(result.error)
    return 0 if result.status == "finished" else 1


def _summary(result, names: dict) -> str:
    accounting = result.accounting or {}
    text = (f"{result.status}: {result.done}/{result.total} items ({result.invalid} invalid, {result.failed} failed); "
            f"{result.calls} calls paid, {result.cached} from cache; {result.elapsed_s:.1f} s; run {result.run_id}")
    if accounting:
        stored = (f"{accounting['scores']:,} scores" if accounting.get("scores")
                  else f"{accounting['verdicts']:,} verdicts ({accounting['valid']:,} valid + "
                       f"{accounting['invalid']:,} invalid)")
        text += (f"\npaid calls: {accounting['calls_paid']:,} calls paid by this run -> {stored} stored, "
                 f"{accounting['items_failed']:,} failed items")
        if accounting.get("unaccounted"):
            text += f"; {accounting['unaccounted']:,} items paid but stored nothing (run again: the cache has them)"
    for label, name in names.items():
        text += f"\njudge {label}: stored as {name!r}"
    if result.failed_items:
        key, reason = result.failed_items[0]
        text += f"\nfirst failure: {key}: {reason}\nrun the same command again to retry the failed items"
    return text


def _nlg(args):
    return NLGStudy(Store(args.db, create=False), args.study)


def _evaluate(args) -> int:
    study = _nlg(args)
    result = study.evaluate(args.attribute, judge=args.judge, criterion=args.criterion, score_judge=args.score_judge,
                            common=not args.all_contexts, rounds=args.rounds, seed=args.seed)
    if args.format == "json":
        print(json.dumps({"attribute": result.attribute, "judge": result.judge, "criterion": result.criterion,
                          "score_judge": result.score_judge, "contexts": len(result.contexts),
                          "comparisons": result.comparisons, "scores": result.scores,
                          "table": json.loads(result.table.to_json(orient="records")),
                          "accuracy": json.loads(result.accuracy.to_json(orient="records")),
                          "systems": json.loads(result.systems.to_json(orient="records")),
                          "system_spearman": result.system_spearman,
                          "position_bias": result.bias, "notes": list(result.notes)}, indent=2))
        return 0
    if args.format == "csv":
        result.table.to_csv(sys.stdout, index=False)
        return 0

    print(f"{args.study}: {result.attribute}, {len(result.contexts)} contexts; comparative judge "
          f"{result.judge or '-'} ({result.comparisons:,} comparisons), absolute {result.score_judge or '-'} "
          f"({result.scores:,} scores)")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(paper_table(result.table).to_string(index=False))
        if len(result.accuracy):
            print("\npairwise accuracy on pairs whose human scores differ (Wilson 95% interval):")
            print(result.accuracy.round(3).to_string(index=False))
        print("\nsystems (mean over the contexts; win ratio debiased):")
        print(result.systems.round(3).to_string(index=False))
        if result.system_spearman:
            print("system-level Spearman with the human means: " + ", ".join(
                f"{k} {v:.3f}" for k, v in result.system_spearman.items()))
    if result.bias:
        b = result.bias
        offsets = ("debiasing undefined" if b["tau"] is None else
                   f"mean p {b['mean_p']:.3f}, debiasing threshold tau {b['tau']:.3f}")
        print(f"\nposition bias: P(first) {b['p_first']:.3f} [{b['ci_low']:.3f}, {b['ci_high']:.3f}] over "
              f"{b['n']:,} comparisons; {offsets}")
    for note in result.notes:
        print(f"note: {note}")
    return 0


def _curves(args) -> int:
    study = _nlg(args)
    judge, criterion = args.judge, args.criterion
    if judge is None:
        found = study.default_judge(args.attribute)
        if found is None:
            return fail(f"study {args.study!r} has no comparisons on {args.attribute!r}; run `peercore nlg compare`")
        judge, criterion = found
    table = study.curves(args.attribute, judge=judge, criterion=criterion, methods=args.method or CURVE_METHODS,
                         repeats=args.repeats, seed=args.seed)
    if args.format == "json":
        print(table.to_json(orient="records", indent=2))
    elif args.format == "csv":
        table.to_csv(sys.stdout, index=False)
    else:
        print(f"{args.study}: {args.attribute}, judge {judge}; median Spearman with humans over {args.repeats} repeats")
        wide = table.pivot_table(index="k", columns=["method", "strategy", "debiased"], values="median")
        with pd.option_context("display.width", 200, "display.max_columns", 30):
            print(wide.round(3).to_string())
    return 0


def _judges(args) -> int:
    study = _nlg(args)
    attributes = study.attributes()
    comparative = study.comparative_judges()
    scoring = study.score_judges()
    if args.json:
        print(json.dumps({"attributes": attributes, "comparative": json.loads(comparative.to_json(orient="records")),
                          "scoring": json.loads(scoring.to_json(orient="records"))}, indent=2))
        return 0
    print(f"attributes with human scores: {', '.join(attributes) or 'none'}")
    print("comparative judges:" + ("" if len(comparative) else " none"))
    for row in comparative.itertuples(index=False):
        print(f"  {row.judge}  criterion {row.criterion or '-'}: {row.comparisons:,} comparisons, {row.contexts} contexts")
    print("scoring judges:" + ("" if len(scoring) else " none"))
    for row in scoring.itertuples(index=False):
        print(f"  {row.judge}  {row.attribute or '-'}: {int(row.n_scores):,} scores, {int(row.n_invalid):,} unreadable")
    return 0


def _export(args) -> int:
    store = Store(args.db, create=False)
    if args.what == "human":
        table = human_scores_wide(store.scores.human_scores(args.study))
    else:
        table = judge_scores_table(store.scores.judge_scores(args.study, include_invalid=True))
    if args.output:
        write_table(table, args.output, format=args.format)
    else:
        write_table(table, sys.stdout.buffer, format=args.format)
        sys.stdout.flush()
    return 0


