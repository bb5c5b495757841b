"""``peercore answer | review | discuss | debate | runs``: run LLM jobs on a study from the shell.

Every command takes ``--study``, the judges as specs (``--reviewer openai:gpt-4o``, see
:mod:`peercore.jobs.specs`), pair-selection and budget options, ``--dry-run`` (print the
estimate of calls, tokens and dollars; spend nothing) and shows a progress bar on
stderr. Running the same command again resumes the same run: finished items are not
redone and calls already paid are read from the cache.

``--batch`` (review, discuss, debate) sends the calls through the OpenAI or Anthropic
batch API at the batch price and waits for the batches (:mod:`peercore.jobs.batch`);
interrupted, the same command resumes them.

Ctrl-C stops a run and prints one line with the command that resumes it (exit status
130). A live run stops as the dashboard's Cancel does: no new call starts, the calls in
flight land in the cache and the finished items are stored, so nothing paid is lost (a
second Ctrl-C stops at once, abandoning the calls in flight). A batch run stops where it
waits: every step of it is written down before it is taken, and the batches in flight
go on at the provider; the resume reads them.

Exit status: 0 when every item is done, 1 when items failed (run it again to retry
them) or the run was cancelled, 2 on bad input or missing credentials (one line), 130
when interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import signal
import sys
import threading
import time
from collections import Counter

from tqdm import tqdm

from peercore.app.health import health, health_facts
from peercore.app.study import Study
from peercore.cli.common import fail
from peercore.locations import is_postgres_url, redact_url
from peercore.jobs.answers import DEFAULT_SYSTEM_PROMPT, AnswerJob
from peercore.jobs.base import accounting_line, describe_item
from peercore.jobs.batch import check_batchable, run_batch_sync
from peercore.jobs.discussion import DebateJob, DiscussionJob
from peercore.jobs.estimate import estimate
from peercore.jobs.preview import job_prompts, prompts_text
from peercore.jobs.pricing import load_prices
from peercore.jobs.review import ONE_ORDER_STRATEGIES, ReviewJob
from peercore.jobs.specs import parse_judge_spec
from peercore.reviewers.base import MissingCredentials
from peercore.runner import ProviderLimits, RetryPolicy, run_job_sync
from peercore.store import Store

__all__ = ["EXIT_INTERRUPTED", "ProgressBar"]

# 128 + SIGINT: the status a shell gives a command stopped by Ctrl-C.
EXIT_INTERRUPTED = 128 + signal.SIGINT


# ------------------------------------------------------------------------------ handlers


def missing_credentials(job) -> str | None:
    """What key the job's backends lack (:class:`peercore.reviewers.base.MissingCredentials`'s message), or None."""
    for backend in job.backends():
        check = getattr(backend, "check_credentials", None)
        if check is not None:
            try:
                check()
            except MissingCredentials as exc:
                return str(exc)
    return None


def _answer(args) -> int:
    contestants = [_judge(s, args) for s in args.contestant]
    job = AnswerJob(args.study, contestants, questions=args.question,
                    system_prompt=args.system if args.system is not None else DEFAULT_SYSTEM_PROMPT,
                    temperature=args.temperature, max_tokens=args.max_tokens)
    return _run(job, args)


def _review(args) -> int:
    job = ReviewJob(args.study, [_judge(s, args) for s in args.reviewer], **_pair_options(args),
                    template=args.template, criterion=args.criterion, method=args.method, samples=args.samples,
                    temperature=args.temperature, max_tokens=args.max_tokens)
    return _run(job, args)


def _discuss(args) -> int:
    job = DiscussionJob(args.study, [_judge(s, args) for s in args.reviewer], turns=args.turns,
                        both_orders=not args.one_order, **_pair_options(args), temperature=args.temperature,
                        max_tokens=args.max_tokens, review_template=args.review_template)
    return _run(job, args)


def _debate(args) -> int:
    job = DebateJob(args.study, [_judge(s, args) for s in args.agent], criteria=args.criterion or ["helpfulness"],
                    max_rounds=args.max_rounds, name=args.name, **_pair_options(args),
                    temperature=args.temperature, max_tokens=args.max_tokens,
                    initial_template=args.initial_template, discussion_template=args.discussion_template)
    return _run(job, args)


def _runs(args) -> int:
    store = Store(args.db, create=False)
    frame = store.runs.table(args.study)
    rows = []
    for run in frame.itertuples(index=False):
        accounting = store.runs.accounting(run.id)
        rows.append({"run": run.id, "kind": run.kind, "status": run.status, "items": int(run.n_items),
                     "done": int(run.n_done), "cost_usd": float(run.cost_usd), "error": run.error,
                     "updated_at": run.updated_at, "accounting": accounting, "batches": store.runs.batches(run.id)})
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    if not rows:
        print(f"study {args.study!r} has no runs")
        return 0
    for row in rows:
        print(f"{row['run']}  {row['kind']:<10} {row['status']:<11} {row['done']:,}/{row['items']:,} items  "
              f"${row['cost_usd']:,.4f}  {row['updated_at'][:19]}")
        print(f"    {accounting_line(row['accounting'])}")
        batches = row["batches"]
        if batches:
            states = ", ".join(f"{n} {s}" for s, n in sorted(Counter(b["status"] for b in batches).items()))
            print(f"    batches: {len(batches)} ({states}), {sum(b['n_requests'] for b in batches):,} requests, "
                  f"{sum(b['n_succeeded'] for b in batches):,} answered, {sum(b['n_failed'] for b in batches):,} "
                  "without a result")
        if row["error"]:
            print(f"    error: {row['error']}")
    return 0


def _pair_options(args) -> dict:
    return {"contestants": args.contestant, "questions": args.question, "strategy": args.strategy,
            "comparisons": args.comparisons, "budget": args.budget, "seed": args.seed,
            "max_questions": args.max_questions}


def _judge(spec: str, args):
    return parse_judge_spec(spec, timeout=args.timeout)


def _limits(values: list[str]) -> dict:
    out = {}
    for text in values:
        who, sep, rest = text.rpartition(":") if "=" in text.rsplit(":", 1)[-1] else ("", "", "")
        if not sep or not who:
            raise ValueError(f"--limit must look like 'openai:rpm=500,tpm=30000', got {text!r}")
        options = {}
        for part in rest.split(","):
            key, eq, value = part.partition("=")
            names = {"rpm": "requests_per_minute", "tpm": "tokens_per_minute", "concurrency": "concurrency"}
            if not eq or key.strip() not in names:
                raise ValueError(f"--limit {text!r}: options are rpm=N, tpm=N, concurrency=N; got {part!r}")
            try:
                number = float(value)
            except ValueError:
                raise ValueError(f"--limit {text!r}: {key} must be a number, got {value!r}") from None
            options[names[key.strip()]] = int(number) if key.strip() == "concurrency" else number
        out[who] = ProviderLimits(**options)
    return out


def _run(job, args) -> int:
    store = Store(args.db)
    if args.show_prompts:  # what the judges would read, exactly; nothing is called

        prompts = job_prompts(job, store, args.show_prompts)
        print(json.dumps(prompts, indent=2, ensure_ascii=False) if args.json else prompts_text(prompts))
        return 0
    prices = load_prices(args.prices)
    limits = _limits(args.limit)
    batch = getattr(args, "batch", False)
    if batch:

        check_batchable(job)  # a local model or a compatible server: refused (exit 2) before anything
    if getattr(job, "strategy", None) in ONE_ORDER_STRATEGIES:
        print(f"note: --strategy {job.strategy} shows each pair in one order only, so these verdicts cannot "
              "measure position bias (use the default, all, or symmetric for that)", file=sys.stderr)
    if args.dry_run:
        est = estimate(job, store, prices=prices.at_batch_rate() if batch else prices, run_id=args.run_id)
        if args.json:
            print(json.dumps({**est.to_dict(), "tier": "batch" if batch else "live"}, indent=2, default=str))
        else:
            print(est.to_text() + ("\n  (priced at the batch rate: half the list price)" if batch else ""))
        return 0
    if not args.json:  # a budget or a question limit that cut the job is said before any call
        note = _plan_note(job, store)
        if note:
            print(f"note: {note}", file=sys.stderr)
    missing = missing_credentials(job)  # fail fast, before any work, when a key is missing
    if missing is not None:
        return fail(missing)
    bar = None if args.no_progress else ProgressBar(sys.stderr)
    stop = threading.Event()  # set by a first Ctrl-C during a live run
    try:
        if batch:

            # Ctrl-C: asyncio cancels the run where it waits; every batch step is written down first
            result = run_batch_sync(job, store, run_id=args.run_id, prices=prices, poll_s=args.poll_seconds,
                                    on_status=lambda line: print(line, file=sys.stderr, flush=True),
                                    on_progress=bar, concurrency=args.concurrency)
        else:
            with _first_interrupt_sets(stop):  # Ctrl-C cancels the run as the dashboard's Cancel does
                result = run_job_sync(job, store, run_id=args.run_id, on_progress=bar, concurrency=args.concurrency,
                                      limits=limits, prices=prices, retry=RetryPolicy(max_attempts=args.max_attempts),
                                      cancel=stop)
        if stop.is_set():
            return _interrupted(args, job, store, bar, lost=False)
        if bar is not None:
            bar.close()
        return _report(job, args, store, result)
    except KeyboardInterrupt:  # a batch run's Ctrl-C, a second one during a live run, or one while reporting
        return _interrupted(args, job, store, bar, lost=stop.is_set())


def _report(job, args, store, result) -> int:
    """Print what a run did (the summary, or JSON) and return the exit status."""
    names = job.judge_names() if hasattr(job, "judge_names") else {}
    health = _health(store, job.study, names) if job.kind in ("review", "discussion", "debate") and names else None
    if args.json:
        payload = {k: getattr(result, k) for k in result.__dataclass_fields__}
        payload["judges"] = names
        if health is not None:
            payload["health"] = json.loads(health.to_json(orient="index"))
        print(json.dumps(payload, indent=2, default=str))
    else:
        print(summary(result, names=names, health=health))
    if result.status == "failed" and result.error and not result.failed_items:
        return fail(result.error)
    return 0 if result.status == "finished" else 1


@contextlib.contextmanager
def _first_interrupt_sets(event: threading.Event):
    """Within the block, a first Ctrl-C sets ``event`` (the run stops cleanly); a second one
    raises :class:`KeyboardInterrupt` as usual. Outside the main thread, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def first(signum, frame) -> None:
        event.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupted(args, job, store, bar, *, lost: bool) -> int:
    """After Ctrl-C: one line on stderr with the command that resumes the run; status 130.

    ``lost`` says the run stopped at once (a second Ctrl-C on a live run): calls in flight were abandoned.
    """
    if bar is not None:
        bar.close()
    run_id = args.run_id or job.run_id()
    try:
        run = store.runs.get(run_id)
        stored = f" ({run['n_done']:,}/{run['n_items']:,} items stored)"
    except Exception:  # noqa: BLE001 - interrupted before the run was recorded, or the store is gone
        stored = ""
    what = ("stopped at once; the calls in flight were abandoned" if lost else "nothing paid is lost")
    print(f"peercore: interrupted; {what}{stored}. Resume with: {_resume_command(args, run_id)}",
          file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED


def _resume_command(args, run_id: str) -> str:
    """The command line that resumes ``run_id``: the options given, then ``--run-id`` (a password in --db masked)."""
    parser = args.job_parser
    words = shlex.split(parser.prog)
    for action in parser._actions:  # argparse has no public list of a parser's options
        value = getattr(args, action.dest, None)
        if (not action.option_strings or action.dest in ("help", "run_id") or value is None or value is False
                or value == action.default):
            continue
        flag = max(action.option_strings, key=len)
        if action.dest == "db":
            value = redact_url(value) if is_postgres_url(value) else value
        if value is True:
            words.append(flag)
        else:
            for item in value if isinstance(value, list) else [value]:
                words += [flag, str(item)]
    return shlex.join([*words, "--run-id", run_id])


def _plan_note(job, store) -> str:
    """What the budget and the question limit left out ('' when nothing, or for jobs without them)."""
    if getattr(job, "budget", None) is None and getattr(job, "max_questions", None) is None:
        return ""
    job.prepare(store)  # read only; the runner prepares again
    return job.plan_note()


def _health(store, study: str, names: dict):
    """The health of the run's judges (:func:`peercore.app.health.health`, what every page shows)."""
    table = health(Study(store, study), judges=sorted(set(names.values())))
    return table if len(table) else None


def summary(result, *, names: dict | None = None, health=None) -> str:
    """What a finished (or stopped) run did: items, calls and where each paid call ended, judges, health."""
    cost = "cost unknown" if result.cost_usd is None else f"${result.cost_usd:,.4f}"
    text = (f"{result.status}: {result.done}/{result.total} items ({result.invalid} invalid, {result.failed} failed); "
            f"{result.calls} calls paid, {result.cached} from cache, {result.retries} retries; "
            f"{result.prompt_tokens:,} prompt + {result.completion_tokens:,} completion tokens, {cost}; "
            f"{result.elapsed_s:.1f} s; run {result.run_id}")
    if result.accounting:
        text += "\n" + accounting_line(result.accounting)
    if result.accounting.get("batches"):
        a = result.accounting
        text += (f"\nbatches: {a['batches']:,} ({a['batches_created_now']:,} created now), {a['batch_requests']:,} "
                 f"requests: {a['batch_succeeded']:,} answered, {a['batch_failed']:,} without a result; "
                 "priced at the batch rate")
    for label, name in (names or {}).items():
        if name != label:
            text += (f"\njudge {label}: stored as {name!r} (this configuration differs from the judge already named "
                     f"{label!r} in the study; a judge is its whole configuration)")
    if health is not None and len(health):
        text += "\njudge health (position bias over decisive verdicts, Wilson 95% interval):"
        for judge, row in health.iterrows():
            state = f"FLAGGED: carries no information: {row['reasons']}. Try: {row['fix']}" if row["flagged"] else "ok"
            text += f"\n  {judge}: {health_facts(row)}: {state}"
    if result.failed_items:

        key, reason = result.failed_items[0]
        text += f"\nfirst failure: {describe_item(key)}: {reason}\nrun the same command again to retry the failed items"
    return text


class ProgressBar:
    """The run's progress on stderr: a tqdm bar on a terminal; a line every 10 % (or 30 s) otherwise.

    tqdm redraws its line with carriage returns, which a log file or a CI log keeps as
    one ever-growing line (and ``disable=None``, tqdm's answer to a stream that is not a
    terminal, shows nothing): a log gets whole lines instead.
    """

    def __init__(self, stream) -> None:
        self.stream = stream
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.bar: tqdm | None = None
        self._last_decile = -1
        self._last_time = 0.0

    def __call__(self, event) -> None:
        cost = "cost ?" if event.cost_usd is None else f"${event.cost_usd:,.4f}"
        counts = f"{event.calls} calls  {event.cached} cached  {event.retries} retries  {event.failed} failed  {cost}"
        if self.tty:
            if self.bar is None:
                self.bar = tqdm(total=event.total, initial=event.done, file=self.stream, unit="item",
                                dynamic_ncols=True)
            self.bar.set_postfix_str(counts, refresh=False)
            if event.done > self.bar.n:
                self.bar.update(event.done - self.bar.n)  # redraws at most every 0.1 s
            if event.status != "running":
                self.bar.refresh()
            return
        decile = int(10 * event.fraction)
        now = time.monotonic()
        if decile != self._last_decile or now - self._last_time > 30 or event.status != "running":
            self._last_decile, self._last_time = decile, now
            self.stream.write(f"[{100 * event.fraction:5.1f}%] {event.done}/{event.total} items  {counts}  "
                              f"{event.elapsed_s:.0f}s\n")
            self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
