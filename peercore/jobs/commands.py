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

from peercore.cli import add_db_option, fail, int_at_least
from peercore.db import is_postgres_url, redact_url

__all__ = ["add_commands"]

# 128 + SIGINT: the status a shell gives a command stopped by Ctrl-C.
EXIT_INTERRUPTED = 128 + signal.SIGINT

_positive_int = int_at_least(1)
_non_negative_int = int_at_least(0)


def add_commands(subparsers) -> None:
    """Register the job commands on the ``peercore`` parser."""
    answer = subparsers.add_parser("answer", help="generate answers: each contestant answers each question")
    _common(answer)
    answer.add_argument("--contestant", action="append", required=True, metavar="SPEC",
                        help="backend:model answering (repeatable), e.g. local:smollm2-135m")
    answer.add_argument("--question", action="append", metavar="ID", help="only this question (repeatable)")
    answer.add_argument("--temperature", type=float, default=0.0)
    answer.add_argument("--max-tokens", type=_positive_int, default=512)
    answer.add_argument("--system", default=None, metavar="TEXT", help="system prompt (default: a short generic one)")
    answer.set_defaults(handler=_answer, job_parser=answer)

    review = subparsers.add_parser("review", help="pairwise peer review of the study's answers")
    _common(review)
    review.add_argument("--reviewer", action="append", required=True, metavar="SPEC",
                        help="[NAME=]backend:model[?temperature=T] (repeatable)")
    _pairs(review)
    review.add_argument("--method", choices=("verdict", "logprobs", "logits", "samples", "auto"), default=None,
                        help="how a verdict is read. Default per backend: the label-probability classifier "
                             "(Liusie et al., p_a stored) for local models and OpenAI-compatible servers that "
                             "return log-probabilities; the verdict prompt with its reasoning (PRD) for the "
                             "OpenAI and Anthropic APIs. verdict = the reply's verdict line, logprobs / logits = "
                             "label probabilities, samples = share of K sampled verdicts, auto = the best the "
                             "backend can do")
    review.add_argument("--template", default=None, help="prompt template (default prd_review for verdict, "
                                                         "liusie_classifier_numeric for probabilities)")
    review.add_argument("--criterion", default=None, help="criterion stored with the judgments (and its rubric)")
    review.add_argument("--samples", type=_positive_int, default=1, metavar="K",
                        help="samples per comparison with --method samples")
    review.add_argument("--temperature", type=float, default=None,
                        help="sampling temperature for --method samples (default 1.0); a single verdict is greedy "
                             "unless the reviewer spec sets ?temperature=")
    review.add_argument("--max-tokens", type=_positive_int, default=512)
    _batch_options(review)
    review.set_defaults(handler=_review, job_parser=review)

    discuss = subparsers.add_parser("discuss", help="PRD peer discussions between two reviewers")
    _common(discuss)
    discuss.add_argument("--reviewer", action="append", required=True, metavar="SPEC",
                         help="exactly two: [NAME=]backend:model")
    _pairs(discuss)
    discuss.add_argument("--turns", type=_non_negative_int, default=4, help="discussion turns after the reviews")
    discuss.add_argument("--one-order", action="store_true", help="only the first reviewer leads (default: both orders)")
    discuss.add_argument("--temperature", type=float, default=0.0)
    discuss.add_argument("--max-tokens", type=_positive_int, default=512)
    discuss.add_argument("--review-template", default="prd_review_discussion", metavar="NAME",
                         help="template of the initial reviews (default prd_review_discussion, PRD Table 8: 1 or 2; "
                              "prd_review is the Vicuna80 prompt with a tie)")
    _batch_options(discuss)
    discuss.set_defaults(handler=_discuss, job_parser=discuss)

    debate = subparsers.add_parser("debate", help="ScaleEval multi-agent debates; unresolved ones go to adjudication")
    _common(debate)
    debate.add_argument("--agent", action="append", required=True, metavar="SPEC",
                        help="[NAME=]backend:model[?temperature=T&seed=N] (two or more)")
    _pairs(debate)
    debate.add_argument("--criterion", action="append", default=None, metavar="NAME",
                        help="criterion rubric (repeatable; default helpfulness)")
    debate.add_argument("--max-rounds", type=_positive_int, default=3, metavar="D",
                        help="rounds including the initial verdicts (default 3)")
    debate.add_argument("--name", default=None,
                        help="panel name: the consensus judge is debate:<name> (default scaleeval; another "
                             "configuration of an existing panel gets a variant name unless you force one)")
    debate.add_argument("--temperature", type=float, default=0.0)
    debate.add_argument("--max-tokens", type=_positive_int, default=256)
    debate.add_argument("--initial-template", default="scaleeval_initial", metavar="NAME",
                        help="template of the initial verdicts (default scaleeval_initial; "
                             "scaleeval_compact_initial puts the verdict first, for small models)")
    debate.add_argument("--discussion-template", default="scaleeval_discussion", metavar="NAME",
                        help="template of the discussion rounds (default scaleeval_discussion; "
                             "scaleeval_compact_discussion puts the verdict first)")
    _batch_options(debate)
    debate.set_defaults(handler=_debate, job_parser=debate)

    runs = subparsers.add_parser("runs", help="the study's runs: status, items, and where every paid call ended")
    runs.add_argument("--study", required=True, help="study name in the database")
    add_db_option(runs)
    runs.add_argument("--json", action="store_true", help="print the runs as JSON")
    runs.set_defaults(handler=_runs)


def _common(parser) -> None:
    parser.add_argument("--study", required=True, help="study name in the database")
    add_db_option(parser)
    parser.add_argument("--dry-run", action="store_true", help="print the estimate of calls, tokens and cost; spend nothing")
    parser.add_argument("--show-prompts", type=_positive_int, default=None, metavar="N",
                        help="print the exact messages of the job's first N calls whose prompt is fixed before the run "
                             "(reviews, a discussion's initial reviews, a debate's initial verdicts; with --json as "
                             "JSON); spend nothing")
    parser.add_argument("--concurrency", type=_positive_int, default=8, help="calls in flight at once (default 8)")
    parser.add_argument("--limit", action="append", default=[], metavar="WHO:rpm=N,tpm=N,concurrency=N",
                        help="rate limits for a provider (openai) or judge (openai:gpt-4o), repeatable")
    parser.add_argument("--max-attempts", type=_positive_int, default=6, help="attempts per call (default 6)")
    parser.add_argument("--timeout", type=float, default=None, metavar="S", help="HTTP timeout per request")
    parser.add_argument("--prices", default=None, metavar="TOML", help="price table overriding the bundled one")
    parser.add_argument("--run-id", default=None, help="resume this run (default: the job's own id)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print the estimate or result as JSON")


def _batch_options(parser) -> None:
    parser.add_argument("--batch", action="store_true",
                        help="send the calls through the provider's batch API (OpenAI Batch, Anthropic Message "
                             "Batches; openai: and anthropic: judges only) at the batch price; a debate sends one "
                             "batch per round, a discussion one per turn. Interrupted: run the same command (or "
                             "--run-id) to resume the batches")
    parser.add_argument("--poll-seconds", type=_positive_float, default=30.0, metavar="S",
                        help="with --batch: seconds between two reads of a running batch (default 30)")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value


def _pairs(parser) -> None:
    parser.add_argument("--contestant", action="append", default=None, metavar="MODEL",
                        help="compare only these contestants' answers (repeatable)")
    parser.add_argument("--question", action="append", default=None, metavar="ID", help="only this question (repeatable)")
    parser.add_argument("--strategy", choices=("all", "random", "no-repeat", "symmetric", "greedy"), default="all",
                        help="comparison selection (Liusie et al. section 3.4); default all ordered pairs (both "
                             "presentation orders). no-repeat and greedy show each pair in one order only, so "
                             "they cannot measure position bias")
    parser.add_argument("--comparisons", type=_positive_int, default=None, metavar="K",
                        help="comparisons per question with a selection strategy")
    parser.add_argument("--budget", type=_positive_int, default=None, metavar="CALLS",
                        help="at most this many calls: sets K when --comparisons is not given; when the job "
                             "needs more, keeps whole questions (chosen at random, seeded) while they fit and "
                             "says what was left out")
    parser.add_argument("--max-questions", type=_positive_int, default=None, metavar="N",
                        help="judge at most N questions, chosen at random (seeded by --seed)")
    parser.add_argument("--seed", type=int, default=0)


# ------------------------------------------------------------------------------ handlers


def _answer(args) -> int:
    from peercore.jobs.answers import DEFAULT_SYSTEM_PROMPT, AnswerJob

    contestants = [_judge(s, args) for s in args.contestant]
    job = AnswerJob(args.study, contestants, questions=args.question,
                    system_prompt=args.system if args.system is not None else DEFAULT_SYSTEM_PROMPT,
                    temperature=args.temperature, max_tokens=args.max_tokens)
    return _run(job, args)


def _review(args) -> int:
    from peercore.jobs.review import ReviewJob

    job = ReviewJob(args.study, [_judge(s, args) for s in args.reviewer], **_pair_options(args),
                    template=args.template, criterion=args.criterion, method=args.method, samples=args.samples,
                    temperature=args.temperature, max_tokens=args.max_tokens)
    return _run(job, args)


def _discuss(args) -> int:
    from peercore.jobs.discussion import DiscussionJob

    job = DiscussionJob(args.study, [_judge(s, args) for s in args.reviewer], turns=args.turns,
                        both_orders=not args.one_order, **_pair_options(args), temperature=args.temperature,
                        max_tokens=args.max_tokens, review_template=args.review_template)
    return _run(job, args)


def _debate(args) -> int:
    from peercore.jobs.discussion import DebateJob

    job = DebateJob(args.study, [_judge(s, args) for s in args.agent], criteria=args.criterion or ["helpfulness"],
                    max_rounds=args.max_rounds, name=args.name, **_pair_options(args),
                    temperature=args.temperature, max_tokens=args.max_tokens,
                    initial_template=args.initial_template, discussion_template=args.discussion_template)
    return _run(job, args)


def _runs(args) -> int:
    from peercore.store import Store

    store = Store(args.db, create=False)
    frame = store.runs(args.study)
    rows = []
    for run in frame.itertuples(index=False):
        accounting = store.run_accounting(run.id)
        rows.append({"run": run.id, "kind": run.kind, "status": run.status, "items": int(run.n_items),
                     "done": int(run.n_done), "cost_usd": float(run.cost_usd), "error": run.error,
                     "updated_at": run.updated_at, "accounting": accounting, "batches": store.batches(run.id)})
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
    from peercore.jobs.specs import parse_judge_spec

    return parse_judge_spec(spec, timeout=args.timeout)


def _limits(values: list[str]) -> dict:
    from peercore.runner import ProviderLimits

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
    from peercore.jobs.estimate import estimate
    from peercore.jobs.pricing import load_prices
    from peercore.jobs.review import ONE_ORDER_STRATEGIES
    from peercore.reviewers.base import MissingCredentials
    from peercore.runner import RetryPolicy, run_job_sync
    from peercore.store import Store

    store = Store(args.db)
    if args.show_prompts:  # what the judges would read, exactly; nothing is called
        from peercore.jobs.preview import job_prompts, prompts_text

        prompts = job_prompts(job, store, args.show_prompts)
        print(json.dumps(prompts, indent=2, ensure_ascii=False) if args.json else prompts_text(prompts))
        return 0
    prices = load_prices(args.prices)
    limits = _limits(args.limit)
    batch = getattr(args, "batch", False)
    if batch:
        from peercore.jobs.batch import check_batchable

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
    for backend in job.backends():  # fail fast, before any work, when a key is missing
        check = getattr(backend, "check_credentials", None)
        if check is not None:
            try:
                check()
            except MissingCredentials as exc:
                return fail(str(exc))
    bar = None if args.no_progress else _ProgressBar(sys.stderr)
    stop = threading.Event()  # set by a first Ctrl-C during a live run
    try:
        if batch:
            from peercore.jobs.batch import run_batch_sync

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
        run = store.run(run_id)
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
    from peercore.bias import judge_health

    stored = store.judgments(study, judges=sorted(set(names.values())), include_invalid=True)
    stored = stored[~stored["judge"].str.startswith("debate:")]
    return judge_health(stored) if len(stored) else None


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
            bias = "n/a" if row["n_decisive"] == 0 else f"{row['p_first']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
            state = f"FLAGGED: carries no information: {row['reasons']}. Try: {row['fix']}" if row["flagged"] else "ok"
            text += (f"\n  {judge}: {row['n']} replies, P(first) {bias}, identical {row['identical_share']:.0%}, "
                     f"invalid {row['invalid_share']:.0%}: {state}")
    if result.failed_items:
        from peercore.jobs.base import describe_item

        key, reason = result.failed_items[0]
        text += f"\nfirst failure: {describe_item(key)}: {reason}\nrun the same command again to retry the failed items"
    return text


def accounting_line(accounting: dict) -> str:
    """Where every call the run paid for ended up (stored verdicts, debates, answers, failed items)."""
    stored = [f"{accounting['verdicts']:,} verdicts stored ({accounting['valid']:,} valid + "
              f"{accounting['invalid']:,} invalid)"]
    if accounting.get("debates"):
        stored.append(f"{accounting['debates']:,} debates")
    if accounting.get("answers"):
        stored.append(f"{accounting['answers']:,} answers")
    text = (f"paid calls: {accounting['calls_paid']:,} calls paid by this run -> " + ", ".join(stored)
            + f", {accounting['items_failed']:,} failed items")
    if accounting.get("unaccounted"):
        text += f"; {accounting['unaccounted']:,} items paid but stored nothing (run again: the cache has them)"
    return text


class _ProgressBar:
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
