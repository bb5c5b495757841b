"""``peercore audit | judges | escalate``: guarantees a user can rely on (issue 24).

Each command calls one use case: :func:`peercore.app.guarantees.audit_leaderboard`,
:func:`peercore.app.guarantees.evaluator_leaderboard` and
:func:`peercore.app.guarantees.escalation_plan`. Bad input is a ``ValueError`` naming the
option; :func:`peercore.cli.main` prints it as one line and exits with status 2.
"""

from __future__ import annotations

import json
import math
import sys

import pandas as pd

from peercore.app.guarantees import audit_leaderboard, escalation_plan, evaluator_leaderboard
from peercore.cli.analysis import study_of
from peercore.cli.calibrate import check_judge, stored_study
from peercore.cli.common import selection_of

__all__ = ["audit_command", "judges_command", "escalate_command", "NOT_BUILT"]

NOT_BUILT = ("running the cascade and queueing the escalated comparisons as label requests is not built yet; "
             "add --dry-run to see the calibrated plan")


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
    if not args.dry_run:
        raise ValueError(NOT_BUILT)
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
