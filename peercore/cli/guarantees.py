"""``peercore audit | judges | escalate``: guarantees a user can rely on (issue 24).

Each command calls one use case: :func:`peercore.app.guarantees.audit_leaderboard`,
:func:`peercore.app.guarantees.evaluator_leaderboard`, and
:func:`peercore.app.guarantees.escalation_plan` (``escalate --dry-run``) or
:func:`peercore.app.escalation.run_cascade` (``escalate``: the cascade run, the rest queued
as label requests). Bad input is a ``ValueError`` naming the
option; :func:`peercore.cli.main` prints it as one line and exits with status 2.
"""

from __future__ import annotations

import json
import math
import sys
import threading

import pandas as pd

from peercore.app.escalation import run_cascade
from peercore.app.guarantees import audit_leaderboard, escalation_plan, evaluator_leaderboard
from peercore.cli.analysis import study_of
from peercore.cli.calibrate import check_judge, stored_study
from peercore.cli.common import selection_of
from peercore.cli.runs import EXIT_INTERRUPTED, ProgressBar, _first_interrupt_sets
from peercore.runner import run_job_sync
from peercore.store import Store

__all__ = ["audit_command", "judges_command", "escalate_command", "escalation_text"]



# -------------------------------------------------------------------------------- audit


def audit_command(args) -> int:
    study = study_of(args)
    for name in args.judge or ():
        check_judge(study, name, "--judge", prefix=True)
    result = audit_leaderboard(study, selection_of(args), method=args.method, soft=args.soft, prior=args.prior,
                               reweight=args.reweight, cap=args.cap)
    if args.format == "json":
        print(json.dumps(result.to_json(), indent=2))
        return 0
    how = "Bradley-Terry: AMIP order, exact refits; an upper bound" if result.method == "bt" else \
        "win rate: the exact minimum"
    print(f"Votes whose removal swaps adjacent models ({how}; {result.n_votes:,} votes; Huang et al. 2026)")
    for pair in result.pairs:
        if pair["drop"] is None:
            print(f"  {pair['higher']} > {pair['lower']}: no removal within the cap swaps them")
            continue
        fragile = "  FRAGILE (under 1% of the votes)" if pair["share"] < 0.01 else ""
        pair_share = "n/a" if pair["pair_share"] is None else f"{pair['pair_share']:.2%}"
        print(f"  {pair['higher']} > {pair['lower']}: {pair['drop']} votes ({pair['share']:.2%} of all, {pair_share} "
              f"of the pair's){'' if pair['verified'] else ' (not verified by a refit)'}{fragile}")
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------- judges


def judges_command(args) -> int:
    result = evaluator_leaderboard(stored_study(args))
    if args.format == "json":
        print(json.dumps(result.to_json(), indent=2))
        return 0
    print(f"Evaluator leaderboard (human reference: {result.human_reference})")
    print(result.table.to_string(index=False, float_format="{:.3f}".format))
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


# ----------------------------------------------------------------------------- escalate


def escalate_command(args) -> int:
    """``peercore escalate``: the plan (``--dry-run``), or the cascade run and the rest queued for people.

    Exit status: 0 when every stage finished (escalated comparisons queued), 1 when a
    stage's run did not finish (nothing queued; the same command resumes it), 2 on bad
    input (one line), 130 when interrupted (Ctrl-C; nothing queued).
    """
    if args.dry_run:
        return _escalation_plan(args)
    store = Store(args.db, create=False)
    stop = threading.Event()  # a first Ctrl-C stops the stage's run cleanly, as `peercore review` does

    def run(job) -> object:
        label = job.reviewers[0].label
        if not args.no_progress:
            print(f"escalate: {label} reviews {len(job.pairs):,} presentations of comparisons", file=sys.stderr)
        bar = None if args.no_progress else ProgressBar(sys.stderr)
        try:
            with _first_interrupt_sets(stop):
                return run_job_sync(job, store, on_progress=bar, cancel=stop)
        finally:
            if bar is not None:
                bar.close()

    try:
        result = run_cascade(store, args.study, cascade=args.cascade, reference=args.reference,
                             target_agreement=args.target_agreement, risk=args.risk, ties=args.ties,
                             timeout=args.timeout, run=run)
    except KeyboardInterrupt:  # a second Ctrl-C: the calls in flight are abandoned, the stored verdicts stay
        print("peercore: interrupted; nothing was queued. Run the same command again: calls already paid come from "
              "the cache", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    if args.format == "json":
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(escalation_text(result))
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if result.status != "finished":
        print(f"peercore: {result.message}", file=sys.stderr)
        return EXIT_INTERRUPTED if stop.is_set() else 1
    return 0


def escalation_text(result) -> str:
    """What a cascade run did, for the terminal: per stage its threshold, what it judged and kept, calls and cost."""
    lines = [f"Cascade run: agreement with the human majority on kept verdicts >= {result.target_agreement:g} with "
             f"probability >= {1 - result.risk:g} (Trust or Escalate, Jung et al. 2025); "
             f"{result.comparisons:,} comparisons"]
    columns = ["stage", "threshold", "judged", "kept", "reviewed", "calls", "cached", "cost_usd", "verdicts",
               "failed", "agreement", "upper_bound_disagreement"]
    table = pd.DataFrame(result.stages)
    if "cost_usd" in table.columns:  # dollars to the cent's hundredth; None: an unknown price or no run
        table["cost_usd"] = [("-" if c is None or c != c else f"${c:,.4f}") for c in table["cost_usd"]]
    lines.append(table[[c for c in columns if c in table.columns]].to_string(index=False,
                                                                            float_format="{:.3f}".format))
    lines.append(f"escalated to humans: {result.escalated:,} comparisons ({result.labelled:,} already labelled); "
                 f"{result.queued:,} label requests queued now, {result.already_requested:,} queued before")
    return "\n".join(lines)


def _escalation_plan(args) -> int:
    study = stored_study(args)
    for name in args.cascade:
        check_judge(study, name, "--cascade", prefix=False)
    plan = escalation_plan(study, cascade=args.cascade, reference=args.reference,
                           target_agreement=args.target_agreement, risk=args.risk, ties=args.ties)
    if args.format == "json":
        print(json.dumps(plan.to_json(), indent=2))
        return 0
    print(f"Escalation plan (dry run): agreement with the human majority on kept verdicts >= "
          f"{plan.target_agreement:g} with probability >= {1 - plan.risk:g} (Trust or Escalate, Jung et al. 2025); "
          f"{plan.n_calibration:,} labelled calibration comparisons")
    print(pd.DataFrame(plan.stages).to_string(index=False, float_format="{:.3f}".format))
    agreement = "n/a" if not math.isfinite(plan.agreement) else f"{plan.agreement:.3f}"
    print(f"escalated to humans: {plan.escalated:.1%} of the comparisons; agreement on calibration {agreement}")
    for warning in plan.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0
