"""``peercore calibrate``: a judge's leaderboard anchored to human labels (issue 23).

Calls :func:`peercore.app.calibration.calibrated_leaderboard`. Its own module (not
:mod:`peercore.cli.guarantees`) so that the process imports only what it runs: the
command has a whole-process budget of 5 s at a million verdicts
(``benchmarks/calibrate_cli.py``), and the audit's and evaluator leaderboard's imports
(the ranking and agreement stacks) would cost it a second for nothing.
"""

from __future__ import annotations

import json
import math
import sys

from peercore.app.calibration import NO_LABELS, calibrated_leaderboard
from peercore.app.study import Study
from peercore.store import Store
from peercore.domain import verdicts as V

__all__ = ["calibrate_command", "stored_study", "check_judge"]


def stored_study(args) -> Study:
    """The :class:`peercore.app.study.Study` of ``--study`` and ``--db``."""
    return Study(Store(args.db, create=False), args.study)


def check_judge(study: Study, name: str, option: str, *, prefix: bool) -> None:
    """One-line error naming ``option`` when ``name`` is not a judge of the study (a prefix only if allowed)."""
    judges = study.verdicts().judges
    if prefix and name.endswith(":"):
        if any(j.startswith(name) for j in judges):
            return
    elif name in judges:
        return
    shown = ", ".join(judges[:20]) + (" ..." if len(judges) > 20 else "")
    raise ValueError(f"{option} {name!r} is not a judge of study {study.name!r} (judges: {shown})")


# ---------------------------------------------------------------------------- calibrate


def calibrate_command(args) -> int:
    study = stored_study(args)
    check_judge(study, args.judge, "--judge", prefix=False)
    try:  # the read model's rule for a name or a prefix ending in ':'
        V.judge_codes(study.verdicts(), [args.reference])
    except ValueError:
        raise ValueError(f"{NO_LABELS}: --reference {args.reference!r} names no judge of study {args.study!r}; "
                         "import human votes (judges named human:...) or adjudicate some comparisons first") from None
    if args.seed is not None and args.labels is None:
        raise ValueError("--seed goes with --labels N (the seed of the N labels drawn)")
    board = calibrated_leaderboard(study, judge=args.judge, reference=args.reference, method=args.method,
                                   baseline=args.baseline, labels=args.labels, seed=args.seed or 0)
    if args.format == "json":
        print(json.dumps(board.to_json(), indent=2))
        return 0
    print(f"{board.score_label[:1].upper()}{board.score_label[1:]} of {args.reference} anchored on {args.judge}'s "
          f"{board.comparisons:,} comparisons with {board.labels:,} labels on {board.labelled_comparisons:,} of them "
          f"(PPI++, 95% intervals); effective labels {board.effective_labels:,.0f}")
    fmt = "{:.4f}".format if board.method == "winrate" else "{:.1f}".format
    shown = board.table.copy()
    shown["effective_labels"] = shown["effective_labels"].map(lambda v: f"{v:,.0f}" if math.isfinite(v) else "n/a")
    print(shown.to_string(index=False, float_format=fmt))
    for warning in board.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0
