"""``peercore calibrate``: a judge's leaderboard anchored to human labels (issue 23).

Calls :func:`peercore.app.calibration.calibrated_leaderboard`; with ``--request K``,
:func:`peercore.app.calibration.label_requests` and
:func:`peercore.app.calibration.queue_label_requests` (active inference, Zrnic & Candès
2024, eq. (3): which comparisons people should label next). Its own module (not
:mod:`peercore.cli.guarantees`) so that the process imports only what it runs: the
command has a whole-process budget of 5 s at a million verdicts
(``benchmarks/calibrate_cli.py``), and the audit's and evaluator leaderboard's imports
(the ranking and agreement stacks) would cost it a second for nothing.
"""

from __future__ import annotations

import json
import math
import sys

from peercore.app.calibration import (REQUESTED_BY, calibrated_leaderboard, label_requests, queue_label_requests,
                                      reference_codes, reference_names)
from peercore.app.study import Study
from peercore.store import Store

__all__ = ["calibrate_command", "request_command", "stored_study", "check_judge"]


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
    if args.request is not None:
        return request_command(args, study)
    reference_codes(study.verdicts(), args.reference, study=args.study)  # the NO_LABELS message, naming the study
    if args.seed is not None and args.labels is None:
        raise ValueError("--seed goes with --labels N or --request K (the seed of the draw)")
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


def request_command(args, study: Study) -> int:
    """``peercore calibrate ... --request K``: queue K label requests (active inference) and print them.

    Zrnic & Candès 2024, eq. (3): each request keeps its inclusion probability ``pi``
    (``probability``), the weight ``1/pi`` of its label in the active estimate.
    """
    for option in ("labels", "baseline"):
        if getattr(args, option) is not None:
            raise ValueError(f"--{option} does not go with --request (which queues label requests, no leaderboard)")
    requests = label_requests(study, judge=args.judge, reference=args.reference, k=args.request,
                              seed=args.seed or 0)
    table, already = queue_label_requests(study.store, args.study, requests, requested_by=REQUESTED_BY)
    added = len(table) - already
    if args.format == "json":
        rows = [{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
                for row in table.to_dict(orient="records")]
        print(json.dumps({"requests": rows, "queued": added, "already_queued": already, "judge": args.judge,
                          "reference": args.reference, "seed": requests.seed, "unlabelled": requests.unlabelled,
                          "labelled": requests.labelled, "uncertainty_informative": requests.informative},
                         indent=2, ensure_ascii=False))
        return 0
    how = ("with probability proportional to the judge's uncertainty mixed with uniform" if requests.informative else
           "uniformly (each comparison has one hard verdict: no uncertainty to read)")
    print(f"{len(table)} label requests among the {requests.unlabelled:,} comparisons of {args.judge} that "
          f"{args.reference} has not labelled, drawn {how} (seed {requests.seed}): {added} queued, {already} already "
          "queued before")
    print(table.to_string(index=False, float_format="{:.4f}".format))
    print(f"Decide them on the Adjudication page, then: peercore calibrate --study {args.study} --judge {args.judge} "
          f"--reference {_with_adjudicators(args.reference)}")
    return 0


def _with_adjudicators(reference: str) -> str:
    """The reference that also counts the Adjudication page's decisions (``adjudicator:`` added)."""
    names = reference_names(reference)
    return ",".join(names if any(n.startswith("adjudicator:") for n in names) else [*names, "adjudicator:"])
