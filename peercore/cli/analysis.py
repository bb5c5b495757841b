"""``peercore rank | agree | bias``: the numbers of a judgment file or a stored study.

Each command calls one use case of :mod:`peercore.app` (the Leaderboard, Meta-evaluation
and Bias pages call the same ones with the same defaults) on a
:class:`peercore.app.study.Study`: a stored study (``--study``) or a judgment FILE read
by the importers' careful reader. What a selection merged or left out (repeated votes,
earlier debate rounds, unparsed replies) is said in the warnings, on stderr or in the
JSON's ``warnings``.
"""

from __future__ import annotations

import json
import math
import shlex
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from peercore.agreement import pooled_agreement
from peercore.app.agreement import agreement, alpha
from peercore.app.bias import bias_report, judge_bias
from peercore.app.leaderboard import (DEFAULT_LC_ROUNDS, PRELIMINARY_BATTLES, RankOptions, leaderboard,
                                      leaderboards_by, selection_baseline)
from peercore.app.study import Study
from peercore.cli.common import flag_args, selection_args, selection_of
from peercore.domain.plain import json_value
from peercore.domain import verdicts as V
from peercore.domain.selection import Selection
from peercore.io._common import table_records
from peercore.io.canonical import read_judgments
from peercore.reports import baseline_columns, bias_model_display, grouped_table, style_table
from peercore.store import Store

__all__ = ["rank_command", "rank_options", "rank_command_line", "agree_command", "bias_command", "study_of", "file_columns",
           "grouped_warnings"]

# Optional columns of a judgment FILE that some options read (answers' texts or lengths, a question's category,
# whether model_a was shown first).
_ANSWER_COLUMNS = ("answer_a", "answer_b", "length_a", "length_b")


# ------------------------------------------------------------------------------ sources


def study_of(args, *, extras: tuple[str, ...] = ()):
    """The :class:`peercore.app.study.Study` of ``--study`` (and ``--db``), or of the judgment FILE.

    A FILE is read by the importers' careful reader (:func:`peercore.io.canonical.read_judgments`);
    ``extras`` names its optional columns to keep beside the canonical ones (answer texts
    or lengths, a question's category), and an ``order_known`` column is always kept.

    Raises
    ------
    ValueError
        If neither or both of FILE and ``--study`` are given, or a length is not a number.
    """

    if (args.file is None) == (args.study is None):
        raise ValueError("give either a judgments FILE or --study NAME (with --db PATH)")
    if args.study is not None:
        return Study(Store(args.db, create=False), args.study)
    judgments = read_judgments(args.file)
    columns = file_columns(judgments, args.file, (*extras, "order_known"))
    if "order_known" in columns.columns:
        judgments = judgments.assign(order_known=columns["order_known"].to_numpy())
        columns = columns.drop(columns=["order_known"])
    return Study.from_frame(judgments, name=Path(args.file).name, extras=columns if len(columns.columns) else None)


def file_columns(judgments, path: str, columns: tuple[str, ...]):
    """Those of ``columns`` the judgment file has, aligned with ``judgments`` (lengths as numbers, texts as text).

    Raises
    ------
    ValueError
        If a length is not a number >= 0 (file, line and value named).
    """

    frame, line_of = table_records(Path(path), allow_empty=True, columns=columns)  # Parquet: only these are read
    present = [c for c in columns if c in frame.columns]
    out = pd.DataFrame(index=range(len(judgments)))
    if not present:
        return out
    if len(frame) != len(judgments):
        raise ValueError(f"{path}: read {len(frame)} rows for {len(judgments)} judgments")
    for column in present:
        values = frame[column].reset_index(drop=True)
        if column.startswith("length_"):
            given = (values.notna() & (values.astype(str) != "")).to_numpy()
            numbers = pd.to_numeric(values.astype(object).where(given, None), errors="coerce")
            bad = np.flatnonzero(given & ~(numbers.to_numpy(dtype=float) >= 0))
            if bad.size:
                row = int(bad[0])
                line = line_of(row)
                raise ValueError(f"{path}: {'line ' + str(line) if line else 'row ' + str(row)}: {column} "
                                 f"{str(values.iloc[row])[:80]!r} is not a length (a number >= 0)")
            out[column] = numbers.to_numpy(dtype=float)
        else:
            out[column] = values.astype(object).where(values.notna(), None).to_numpy()
    return out


def _needed_columns(args) -> tuple[str, ...]:
    out: tuple[str, ...] = ()
    if getattr(args, "baseline", None) or getattr(args, "control", None):
        out += _ANSWER_COLUMNS
    if getattr(args, "by", None) == "category" or getattr(args, "category", None):
        out += ("category",)
    return out


# --------------------------------------------------------------------------------- rank

#: ``--baseline auto``: the model in every chosen comparison (:func:`peercore.app.leaderboard.selection_baseline`).
AUTO_BASELINE = "auto"


def rank_command(args) -> int:
    study = study_of(args, extras=_needed_columns(args))
    if args.baseline == AUTO_BASELINE:  # the Leaderboard page's default, by the same function
        args.baseline = selection_baseline(study, selection_of(args))
        if args.baseline is None:
            raise ValueError("--baseline auto: no model takes part in every chosen comparison; name the baseline "
                             "(--baseline MODEL)")
    options = rank_options(args)
    if args.group and not args.by:
        raise ValueError("--group needs --by category|criterion|turn")
    if args.by:
        grouped = leaderboards_by(study, selection_of(args), by=args.by, groups=args.group, **asdict(options))
        return _print_grouped(grouped, args)
    board = leaderboard(study, selection_of(args), **asdict(options))
    if args.format == "json":
        print(json.dumps(board.to_json(), indent=2))
        return 0
    if args.format == "csv":
        print(board.table.to_csv(index=False), end="")
    else:
        _print_ranking(board, args)
    for warning in board.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def rank_options(args) -> RankOptions:
    """The :class:`peercore.app.leaderboard.RankOptions` of ``peercore rank``'s options."""
    return RankOptions(method=args.method, peer_weights=args.peer_weights, weights_from=args.weights_from,
                       bootstrap=args.bootstrap, seed=args.seed, elo_shuffles=args.elo_shuffles, soft=args.soft,
                       weight_normalisation=args.weight_normalisation, baseline=args.baseline,
                       controls=tuple(args.control or ()), intervals=args.intervals, reweight=args.reweight,
                       prior=args.prior,
                       min_battles=PRELIMINARY_BATTLES if args.min_battles is None else args.min_battles,
                       style_reg=args.style_reg,
                       lc_rounds=DEFAULT_LC_ROUNDS if args.lc_rounds is None else args.lc_rounds)


# RankOptions' fields -> ``peercore rank``'s flags (a switch when the field is a bool)
_RANK_FLAGS = {"method": "--method", "peer_weights": "--peer-weights", "weights_from": "--weights-from",
               "bootstrap": "--bootstrap", "seed": "--seed", "elo_shuffles": "--elo-shuffles", "soft": "--soft",
               "weight_normalisation": "--weight-normalisation", "baseline": "--baseline", "controls": "--control",
               "intervals": "--intervals", "reweight": "--reweight", "prior": "--prior",
               "min_battles": "--min-battles", "style_reg": "--style-reg", "lc_rounds": "--lc-rounds"}
_AUDIT_FIELDS = ("method", "soft", "prior", "reweight")  # the leaderboard options ``peercore audit`` takes


def rank_command_line(study: str, selection: Selection, options: RankOptions, *, command: str = "rank") -> str:
    """The ``peercore rank --study`` command that computes the leaderboard of ``selection`` and ``options``.

    What the Leaderboard page shows under its table: the options that differ from the
    defaults, as :func:`rank_options` and :func:`peercore.cli.common.selection_of` read
    them back; names quoted for a POSIX shell. No ``--db``: the database is the reader's.
    With ``command="audit"``, the ``peercore audit`` of that leaderboard (which takes only
    ``method``, ``soft``, ``prior`` and ``reweight``).

    Raises
    ------
    ValueError
        If ``command`` is ``audit`` and another option differs from its default.
    """
    args = ["peercore", command, *flag_args("--study", study), *selection_args(selection)]
    default = RankOptions()
    for field, flag in _RANK_FLAGS.items():
        value = getattr(options, field)
        if value == getattr(default, field):
            continue
        if command == "audit" and field not in _AUDIT_FIELDS:
            raise ValueError(f"peercore audit takes no {flag}")
        if isinstance(value, bool):
            args.append(flag)
            continue
        for one in value if isinstance(value, tuple) else (value,):
            args += flag_args(flag, repr(one) if isinstance(one, float) else getattr(one, "value", one))
    return shlex.join(args)


def _float_format(method: str):
    return "{:.4f}".format if method in ("winrate", "poe-gaussian", "poe-bt") else "{:.1f}".format


def _print_ranking(board, args) -> None:
    verdicts = "soft verdicts (p_a as fractional wins)" if board.verdicts == "soft" else "hard verdicts"
    print(f"{board.score_label[:1].upper()}{board.score_label[1:]} from {board.n_judgments:,} judgments "
          f"({verdicts}; judges: {', '.join(board.judges[:6])}{' ...' if len(board.judges) > 6 else ''})")
    table = board.table
    if board.baseline is not None:
        print(table[baseline_columns(table)].to_string(index=False, float_format="{:.2f}".format))
        print(f"\nLength-controlled win rate: instruction difficulty {board.baseline['difficulty']}; standard error "
              f"{board.baseline['lc_standard_error']}.")
        if board.baseline.get("lc_note"):  # says plainly when the LC cannot be set beside AlpacaEval's published one
            print(f"Length-controlled win rate {board.baseline['lc_note']}.")
    else:
        print(table.to_string(index=False, float_format=_float_format(args.method)))
    if board.style is not None:
        print("\nStyle coefficients (Elo points per standard deviation of the feature; 95% interval; change in "
              "P(first wins) between equal models)")
        print(style_table(board.style).to_string(index=False))
    if board.weights is not None:
        print("\nPeer Rank reviewer weights")
        print(board.weights.sort_values(ascending=False).to_string(float_format="{:.3f}".format))


def _print_grouped(grouped, args) -> int:
    if args.format == "json":
        print(json.dumps(grouped.to_json(), indent=2))
        return 0
    wide = grouped_table(grouped)
    if args.format == "csv":
        print(wide.to_csv(index=False), end="")
    else:
        print(f"Leaderboards by {grouped.by} (score, rank):")
        print(wide.to_string(index=False, float_format=_float_format(args.method)))
        print(f"\nJudgments per {grouped.by}:")
        print(grouped.counts.to_string())
    for group, error in grouped.errors.items():
        print(f"warning: {grouped.by} {group} could not be ranked: {error}", file=sys.stderr)
    for warning in [*grouped.warnings, *grouped_warnings(grouped)]:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def grouped_warnings(grouped) -> list[str]:
    """Each group's warnings, a warning every group shares said once rather than once per group."""
    per_group = {group: list(dict.fromkeys(ranking.warnings)) for group, ranking in grouped.rankings.items()}
    shared = [w for w in dict.fromkeys(w for ws in per_group.values() for w in ws)
              if all(w in ws for ws in per_group.values())]
    if len(per_group) < 2:
        shared = []
    out = [f"every {grouped.by}: {w}" for w in shared]
    out += [f"{grouped.by} {group}: {w}" for group, ws in per_group.items() for w in ws if w not in shared]
    return out


# -------------------------------------------------------------------------------- agree


def agree_command(args) -> int:
    if args.alpha:
        return _alpha(args)
    if args.reference is None:
        raise ValueError("give --reference NAME_OR_PREFIX (or --alpha for Krippendorff's alpha among the judges)")
    if len(args.judge) > 1:
        raise ValueError("give one --judge (a prefix ending in ':' names several), or use --alpha")
    judge = args.judge[0]
    study = study_of(args)
    table = agreement(study, judge, args.reference, ties=args.ties, reference_mode=args.reference_mode,
                      unparsed=args.unparsed, final_only=not args.all_rounds)
    pooled = _pooled(study, judge, final_only=not args.all_rounds) \
        if judge.endswith(":") and judge == args.reference else None
    if args.format == "json":
        rows = [{"judge": name, **{k: json_value(v) for k, v in row.items()}} for name, row in table.iterrows()]
        if pooled is not None:  # one more row: every pair of two raters' votes, as FastChat pools them
            rows.append({"judge": "pooled", **{k: json_value(v) for k, v in vars(pooled).items()}})
        payload = rows[0] if len(rows) == 1 and not judge.endswith(":") else rows
        print(json.dumps(payload, indent=2))
        return 0
    print(f"{judge} vs {args.reference} ({args.reference_mode}, ties {args.ties}, unparsed replies "
          f"{'counted as misses' if args.unparsed == 'miss' else 'left out'}; a judge is never compared with "
          "its own votes)")
    for name, row in table.iterrows():
        print(f"{name}")
        print(f"  matched verdicts  {int(row['n'])}  (reference votes per comparison: median {row['reference_votes']:g})")
        print(f"  agreement         {_fmt(row['agreement'])}")
        print(f"  Cohen's kappa     {_fmt(row['cohen_kappa'])}")
        print(f"  Fleiss' kappa     {_fmt(row['fleiss_kappa'])}  (judge and reference as two raters, as PRD Table 3)")
        print(f"  unparsed replies  {int(row['unparsed'])}")
    if pooled is not None:
        print(f"pooled over every pair of two raters' votes on one comparison ({pooled.raters} raters; MT-Bench "
              "Table 2, FastChat compute_agreement.py)")
        print(f"  with ties         {_fmt(pooled.agreement)}  ({pooled.agreeing} of {pooled.pairs} pairs)")
        print(f"  without ties      {_fmt(pooled.agreement_without_ties)}  ({pooled.agreeing_without_ties} of "
              f"{pooled.pairs_without_ties} pairs)")
    return 0


def _pooled(study, judge: str, *, final_only: bool):
    """:func:`peercore.agreement.pooled_agreement` of the raters ``judge`` names, on the readable votes counted."""

    chosen = study.select(Selection(judges=(judge,), final_only=final_only, repeated_votes="each")).verdicts
    return pooled_agreement(V.to_frame(chosen))


def _alpha(args) -> int:
    if args.reference is not None:
        raise ValueError("--alpha measures agreement among the --judge raters; drop --reference")
    result = alpha(study_of(args), args.judge, rounds=args.rounds, seed=args.seed, final_only=not args.all_rounds)
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2))
        return 0
    interval = "n/a" if math.isnan(result.ci_low) else f"{result.ci_low:.4f} – {result.ci_high:.4f}"
    print(f"Krippendorff's alpha (nominal) among {len(result.raters)} raters: {result.alpha:.4f}  "
          f"(95% interval {interval}; bootstrap over units, {result.rounds} rounds)")
    print(f"  pairable units {result.units}, values {result.values}; observed disagreement {result.observed:.4f}, "
          f"expected {result.expected:.4f}")
    print(f"  raters: {', '.join(result.raters[:10])}{' ...' if len(result.raters) > 10 else ''}")
    return 0


def _fmt(value) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4f}"


# --------------------------------------------------------------------------------- bias


def bias_command(args) -> int:
    if args.model:
        return _bias_model(args)
    if args.family or args.judge:
        raise ValueError("--family and --judge go with --model")
    report = bias_report(study_of(args))
    table = report.table()
    if args.format == "json":
        print(json.dumps(json.loads(table.to_json(orient="index")), indent=2))
        return 0
    shown = table.drop(columns=["reasons"])
    print(shown.to_string(float_format="{:.3f}".format))
    for judge, row in table.iterrows():
        if row["flagged"]:
            fix = report.health.loc[judge, "fix"]
            print(f"warning: judge {judge} carries no information: {row['reasons']}. Try: {fix}", file=sys.stderr)
        elif row["reasons"]:
            print(f"note: judge {judge} has no position statistic: {row['reasons']}", file=sys.stderr)
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _families(pairs) -> dict[str, str]:
    out = {}
    for pair in pairs or ():
        model, sep, family = pair.partition("=")
        if not sep or not model.strip() or not family.strip():
            raise ValueError(f"--family must be MODEL=FAMILY, got {pair!r}")
        out[model.strip()] = family.strip()
    return out


def _bias_model(args) -> int:
    families = _families(args.family)
    study = study_of(args, extras=_ANSWER_COLUMNS)
    result = judge_bias(study, Selection(judges=tuple(args.judge) if args.judge else None), families=families)
    table = result.table
    if args.format == "json":
        rows = [{"judge": j, "bias": b, **{k: json_value(v) for k, v in row.items()}} for (j, b), row in table.iterrows()]
        print(json.dumps({"biases": rows, "families": result.families}, indent=2))
        return 0
    print("Judge bias as a model: shared model strengths, per-judge position / self (family) / length terms; "
          "Elo points and the change in P(favoured answer wins) at equal quality, 95% sandwich intervals.")
    print(bias_model_display(table).to_string(index=False))
    return 0
