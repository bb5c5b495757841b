"""Running a cascade of judges with a guaranteed agreement, escalating the rest to humans (issue 24 section 1).

Jung, Brahman & Choi, "Trust or Escalate" (ICLR 2025, arXiv 2407.18370). The plan (the
thresholds) is :func:`peercore.app.guarantees.escalation_plan`; this module runs it:

* each stage of the cascade is a judge of the study (its stored verdicts are used as
  they are) or a judge spec (``openai:gpt-4o-mini``, as ``peercore review`` takes it),
  which is *run*: a review (:class:`peercore.jobs.review.ReviewJob` through the runner,
  so every paid call is cached and accounted) of only the comparisons the stage needs:
  the human-labelled calibration comparisons it has not judged yet (section 2.1, eqs.
  2-4: its threshold is chosen on them) and the comparisons the stages before it did not
  keep (section 2.3), each in both presentation orders (its confidence is the agreement
  of both orders, section 2.2), minus those it has judged already;
* after each stage its threshold is calibrated by the plan's own function, on what the
  stages before it did not keep, at level ``risk / S`` (section 2.3);
* what no stage keeps, and people have not labelled yet, is queued as label requests
  (:meth:`peercore.store.Store.debates.add_label_requests`) in the adjudication queue.

A re-run pays for nothing twice (a stage reviews only what it has not judged; a call
already paid comes from the runner's cache) and queues nothing twice (a comparison
already requested is skipped by the store).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from peercore.app.guarantees import EscalationPlan, cascade_evidence, check_escalation_options, escalation_plan
from peercore.app.study import Study
from peercore.domain.plain import json_value
from peercore.jobs.base import Judge, resolve_judge_names
from peercore.jobs.review import ReviewJob
from peercore.jobs.specs import parse_judge_spec
from peercore.reviewers.base import MissingCredentials
from peercore.runner import RunResult, run_job_sync
from peercore.selective import apply_plan

if TYPE_CHECKING:  # pragma: no cover
    from peercore.store import Store

__all__ = ["StageSource", "EscalationRun", "cascade_sources", "run_cascade", "REQUESTED_BY", "REASON"]

REQUESTED_BY = "peercore escalate"
REASON = "no judge of the cascade was confident enough (Trust or Escalate)"

@dataclass(frozen=True)
class StageSource:
    """One ``--cascade`` entry: the judge name of its verdicts, and the reviewer to run (None: use them as stored).

    Attributes
    ----------
    entry : as the user wrote it.
    judge : the judge name of the stage's verdicts (a spec's: the name its whole
        configuration resolves to in the study, :meth:`peercore.store.Store.judges.resolve`).
    reviewer : the parsed spec to run, or None for a judge of the study.
    """

    entry: str
    judge: str
    reviewer: Judge | None = None


@dataclass(frozen=True)
class EscalationRun:
    """What :func:`run_cascade` did.

    Attributes
    ----------
    stages : one dict per stage: ``stage`` (judge name), ``entry``, ``ran`` (a spec run
        now), ``threshold``, ``judged`` (comparisons of the cascade it has a verdict on),
        ``kept`` (comparisons whose verdict it keeps), ``reviewed`` (comparisons reviewed
        by this run), ``calls`` (paid by this run), ``cached``, ``cost_usd``,
        ``verdicts`` (stored by this run, valid or not), ``failed`` (items),
        ``run_id``, and the plan's ``kept_share, agreement, upper_bound_disagreement,
        guarantee, level``.
    comparisons : comparisons the cascade covers.
    escalated : comparisons no stage keeps; ``labelled`` of them have human votes already.
    queued : label requests added now; ``already_requested`` : escalated comparisons
        requested before (not queued twice); ``unqueueable`` : escalated comparisons without
        both answers in the study (a label request shows the answers).
    status : ``"finished"``, or ``"failed"`` / ``"cancelled"`` when a stage's run did not
        finish (nothing was queued; the same command resumes it).
    message : why it stopped, or ''.
    plan : the final :class:`peercore.app.guarantees.EscalationPlan` (None when stopped).
    """

    stages: list[dict]
    target_agreement: float
    risk: float
    comparisons: int = 0
    escalated: int = 0
    labelled: int = 0
    queued: int = 0
    already_requested: int = 0
    unqueueable: int = 0
    status: str = "finished"
    message: str = ""
    plan: EscalationPlan | None = field(default=None, repr=False, compare=False)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        plan = self.plan
        return {"stages": [{k: json_value(v) for k, v in s.items()} for s in self.stages],
                "target_agreement": self.target_agreement, "risk": self.risk, "dry_run": False,
                "status": self.status, "message": self.message, "comparisons": self.comparisons,
                "escalated": self.escalated, "labelled": self.labelled, "queued": self.queued,
                "already_requested": self.already_requested, "unqueueable": self.unqueueable,
                "n_calibration": None if plan is None else plan.n_calibration,
                "agreement": None if plan is None else json_value(plan.agreement),
                "guarantee": None if plan is None else json_value(plan.guarantee),
                "ties": None if plan is None else plan.ties, "warnings": list(self.warnings)}


def cascade_sources(store: "Store", study: str, entries: Sequence[str], *, timeout: float | None = None
                    ) -> list[StageSource]:
    """Read each ``--cascade`` entry as a judge of the study or as a judge spec to run.

    An entry that parses as a judge spec (:func:`peercore.jobs.specs.parse_judge_spec`) is
    run, unless it names a judge of the study holding another configuration (an imported
    ``openai:gpt-4o``, a variant ``openai:gpt-4o~logprobs``): then that judge's verdicts are
    used. A spec's own earlier run (its verdicts under the name it resolves to) is run
    again, which pays for nothing already judged. Any other entry must name a judge.

    Raises
    ------
    ValueError
        If an entry is neither a judge of the study nor a judge spec, or two entries are
        one judge.
    """
    judges = set(Study(store, study).verdicts().judges)
    out: list[StageSource] = []
    for entry in entries:
        reviewer, problem = None, ""
        try:
            reviewer = parse_judge_spec(entry, timeout=timeout)
        except ValueError as exc:
            problem = str(exc)
        if reviewer is not None:
            job = ReviewJob(study, [reviewer])
            name = resolve_judge_names(store, study, job.reviewers, job.identities(), register=False)[reviewer.label]
            if entry not in judges or name == entry:
                out.append(StageSource(entry, name, reviewer))
                continue
        if entry in judges and not entry.endswith(":"):
            out.append(StageSource(entry, entry, None))
            continue
        shown = ", ".join(sorted(judges)[:20]) + (" ..." if len(judges) > 20 else "")
        raise ValueError(f"--cascade {entry!r} is not a judge of study {study!r} (judges: {shown}) nor a judge spec "
                         f"({problem})")
    names = [s.judge for s in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"--cascade names judge {twice[0]!r} twice (each stage is a different judge)")
    return out


def run_cascade(store: "Store", study: str, *, cascade: Sequence[str], reference: str, target_agreement: float,
                risk: float, ties: str = "exclude", min_kept: int = 30, timeout: float | None = None,
                run: Callable[[ReviewJob], RunResult] | None = None,
                on_stage: Callable[[int, StageSource], None] | None = None) -> EscalationRun:
    """Run a cascade of judges and queue what none of them keeps for people (Trust or Escalate, section 2.3).

    Parameters
    ----------
    store, study : the study.
    cascade : ``--cascade`` entries, cheapest first (:func:`cascade_sources`).
    reference : the human labels (a judge, or a prefix such as ``human:``).
    target_agreement, risk : 1 - alpha and delta of the paper's eq. 1: with probability at
        least ``1 - risk``, agreement with the human majority on kept verdicts is at least
        ``target_agreement``.
    ties : a human-majority tie: left out of calibration, or a disagreement.
    min_kept : fewest calibration comparisons a threshold may keep (the paper's 30); a
        stage reached by fewer is refused.
    timeout : seconds per request of the spec judges.
    run : runs a review and returns its :class:`peercore.runner.RunResult` (default
        :func:`peercore.runner.run_job_sync` without options; the CLI passes its limits
        and progress).
    on_stage : called as ``on_stage(index, source)`` when stage ``index`` (0-based) starts,
        before its review (if any) runs: the page shows which stage the cascade is on.

    Returns
    -------
    EscalationRun

    Raises
    ------
    ValueError
        Before any call: bad options, an entry that is no judge and no spec, a reference
        with no vote (a message starting with "no human labels"), a missing API key, fewer
        than ``min_kept`` calibration comparisons. Before stage s's calls: fewer than
        ``min_kept`` calibration comparisons reaching it (the stages before keep the rest).
    """
    check_escalation_options(cascade=cascade, target_agreement=target_agreement, risk=risk)
    run = run or (lambda job: run_job_sync(job, store))
    labels = cascade_evidence(Study(store, study), cascade=[], reference=reference, ties=ties)
    calibration = {k for k, c in zip(labels.keys, labels.calibration(ties)) if c}
    if not calibration:
        raise ValueError(f"no human labels: reference {reference!r} has no vote on a comparison of study {study!r} "
                         "to calibrate on")
    sources = cascade_sources(store, study, cascade, timeout=timeout)
    for source in sources:  # a missing key fails now, before anything is paid
        check = getattr(source.reviewer.backend if source.reviewer else None, "check_credentials", None)
        if check is not None:
            try:
                check()
            except MissingCredentials as exc:
                raise ValueError(str(exc)) from None
    names = [s.judge for s in sources]
    S = len(sources)
    answers = store.questions.answers(study)
    answered = set(zip(answers["question_id"].astype(str), answers["model"].astype(str)))
    reviewable = _reviewable(answers) if any(s.reviewer for s in sources) else set()
    for k, source in enumerate(sources):
        if source.reviewer is not None and not reviewable:
            raise ValueError(f"stage {k + 1} ({source.entry!r}) is a judge spec to run, but study {study!r} has no "
                             "question with answers from two models to review (import answers, or run `peercore "
                             "answer` first); nothing was run")
    existing = [s.judge for s in sources if s.reviewer is None]
    universe = set(reviewable)
    if existing:
        found = cascade_evidence(Study(store, study), cascade=existing, reference=reference, ties=ties)
        universe |= {k for k, j in zip(found.keys, np.logical_or.reduce(found.judged)) if j}
    rows: list[dict] = []
    kept_before: set = set()  # comparisons kept by the stages run so far
    for k, source in enumerate(sources):
        reach = len(calibration - kept_before)
        if reach < min_kept:
            before = "" if k == 0 else (f"; the stages before it keep the rest (their verdicts are stored, a re-run "
                                        "pays nothing for them); nothing was queued")
            raise ValueError(f"stage {k + 1} ({source.judge!r}) would be calibrated on {reach} human-labelled "
                             f"comparisons, fewer than the {min_kept} a threshold needs (Trust or Escalate, section "
                             f"2.1): label more comparisons or shorten the cascade{before}")
        if on_stage is not None:
            on_stage(k, source)
        row = {"stage": source.judge, "entry": source.entry, "ran": source.reviewer is not None, "reviewed": 0,
               "calls": 0, "cached": 0, "cost_usd": 0.0 if source.reviewer else None, "verdicts": 0, "failed": 0,
               "run_id": None}
        if source.reviewer is not None:
            need = (calibration | (universe - kept_before)) & reviewable
            pairs = _unjudged_orders(store, study, source.judge, need)
            if pairs:
                job = ReviewJob(study, [source.reviewer], pairs=pairs)
                result = run(job)
                stored = job.judge_names().get(source.reviewer.label, source.judge)
                accounting = result.accounting or {}
                row.update(reviewed=len({(q, *sorted((a, b))) for q, a, b in pairs}), calls=result.calls,
                           cached=result.cached, cost_usd=result.cost_usd, verdicts=int(accounting.get("verdicts", 0)),
                           failed=result.failed, run_id=result.run_id)
                if stored != source.judge:  # registered under another name meanwhile: follow the verdicts
                    names[k] = stored
                    row["stage"] = stored
                if result.status != "finished":
                    rows.append(row)
                    why = result.error or ("it was cancelled" if result.status == "cancelled"
                                           else f"{result.failed} item(s) failed")
                    return EscalationRun(stages=rows, target_agreement=float(target_agreement), risk=float(risk),
                                         status=result.status,
                                         message=f"stage {k + 1} ({row['stage']!r}) did not finish: {why}; nothing "
                                                 "was queued. Run the same command again: calls already paid come "
                                                 "from the cache")
        rows.append(row)
        if k < S - 1:  # what this stage keeps, for the stages after it: the plan's thresholds at risk / S each
            prefix = escalation_plan(Study(store, study), cascade=names[:k + 1], reference=reference,
                                     target_agreement=target_agreement, risk=risk * (k + 1) / S, ties=ties,
                                     min_kept=min_kept)
            kept_before = _kept(prefix)
    plan = escalation_plan(Study(store, study), cascade=names, reference=reference,
                           target_agreement=target_agreement, risk=risk, ties=ties, min_kept=min_kept)
    evidence = plan.evidence
    stage_of = dict(zip(evidence.keys, apply_plan(plan.cascade_plan, [c for c, _ in evidence.stages]).tolist()))
    judged = [dict(zip(evidence.keys, j.tolist())) for j in evidence.judged]
    labelled = {k for k, lab in zip(evidence.keys, evidence.label.tolist()) if lab >= 0}
    for k, row in enumerate(rows):
        table = plan.stages[k]
        threshold = table["threshold"]
        row.update(threshold=threshold if math.isfinite(threshold) else None,
                   judged=sum(1 for key in universe if judged[k].get(key, False)),
                   kept=sum(1 for key in universe if stage_of.get(key, -1) == k),
                   **{c: table[c] for c in ("kept_share", "agreement", "upper_bound_disagreement", "guarantee",
                                            "level")})
    escalated = sorted(key for key in universe if stage_of.get(key, -1) < 0)
    to_label = [key for key in escalated if key not in labelled]
    queueable = [key for key in to_label if (key[0], key[1]) in answered and (key[0], key[2]) in answered]
    thresholds = {row["stage"]: row["threshold"] for row in rows}
    metadata = {"cascade": list(names), "thresholds": thresholds, "reference": reference,
                "target_agreement": float(target_agreement), "risk": float(risk)}
    requests = [{"question_id": q, "model_a": a, "model_b": b, "turn": turn, "criterion": criterion,
                 "metadata": metadata} for q, a, b, turn, criterion in queueable]
    counts = (store.debates.add_label_requests(study, requests, requested_by=REQUESTED_BY, reason=REASON)
              if requests else None)
    warnings = list(plan.warnings)
    if len(to_label) > len(queueable):
        warnings.append(f"{len(to_label) - len(queueable)} escalated comparison(s) have no answer text for both "
                        "models in the study, so no label request shows them")
    return EscalationRun(stages=rows, target_agreement=float(target_agreement), risk=float(risk),
                         comparisons=len(universe), escalated=len(escalated), labelled=len(escalated) - len(to_label),
                         queued=counts.added if counts else 0, already_requested=counts.skipped if counts else 0,
                         unqueueable=len(to_label) - len(queueable), plan=plan, warnings=warnings)


def _reviewable(answers) -> set:
    """Comparisons a review can judge: two models' first-turn answers to a question (turn 1, no criterion)."""
    first = answers[answers["turn"].fillna(1).astype(int) == 1]
    by_question: dict[str, list[str]] = {}
    for question, model in zip(first["question_id"].astype(str), first["model"].astype(str)):
        by_question.setdefault(question, []).append(model)
    return {(q, a, b, 1, "") for q, models in by_question.items() for a in sorted(set(models))
            for b in sorted(set(models)) if a < b}


def _unjudged_orders(store: "Store", study: str, judge: str, need: set) -> list[tuple[str, str, str]]:
    """Both presentation orders of each needed comparison, minus those ``judge`` has a verdict on (valid or not)."""
    stored = store.verdicts.table(study, include_invalid=True)
    own = stored[stored["judge"] == judge]
    done = set(zip(own["question_id"].astype(str), own["model_a"].astype(str), own["model_b"].astype(str)))
    pairs = []
    for question, first, second, _, _ in sorted(need):
        for a, b in ((first, second), (second, first)):
            if (question, a, b) not in done:
                pairs.append((question, a, b))
    return pairs


def _kept(plan: EscalationPlan) -> set:
    """The comparisons some stage of ``plan`` keeps (:func:`peercore.selective.apply_plan`)."""
    evidence = plan.evidence
    stage = apply_plan(plan.cascade_plan, [c for c, _ in evidence.stages])
    return {key for key, s in zip(evidence.keys, stage.tolist()) if s >= 0}
