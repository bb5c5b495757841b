"""The ``peercore`` command line.

Every command reads a canonical judgment file (CSV, JSONL or Parquet). Bad input
exits with status 2 and one line on stderr naming the file, line and problem.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence

import numpy as np
import pandas as pd

from peercore.errors import PeercoreError

__all__ = ["main", "build_parser", "fail"]

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, status 2, like every other error
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    parser = _Parser(prog="peercore", description="Rank LLMs by peer review and meta-evaluate LLM judges.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    rank = commands.add_parser("rank", help="leaderboard from judgments",
                               description="Rank contestants from a judgment file or a stored study. The "
                               "Leaderboard page computes the same table with the same defaults.")
    rank.add_argument("file", nargs="?", help="judgments: .csv, .jsonl or .parquet in the canonical shape")
    _study_options(rank)
    rank.add_argument("--method", choices=("winrate", "elo", "bt", "poe-gaussian", "poe-bt"), default="bt",
                      help="win rate (PRD), online Elo (PRD), Bradley-Terry on the Elo scale (Chatbot Arena, "
                           "default), or Product-of-Experts scores (Liusie et al.)")
    _selection_options(rank)
    rank.add_argument("--peer-weights", choices=("none", "prd", "fixed-point"), default="none",
                      help="weigh each judge by its own score as a contestant (PRD Peer Rank)")
    rank.add_argument("--weights-from", choices=("winrate", "elo", "bt", "elo-per-shuffle"), default="winrate",
                      help="the score Peer Rank's weights come from (default winrate, as PRD Table 2's weighted win "
                           "rates); elo-per-shuffle, with --method elo --peer-weights prd: PRD's notebook weighted Elo "
                           "(within each shuffle 5 rounds of Elo, each weighted by min-max weights of the previous "
                           "round, W/mean(W); Table 2's 'All (weighted)' Elo)")
    rank.add_argument("--weight-normalisation", choices=("sum", "mean"), default="sum",
                      help="weighted Elo with fixed weights: weights summing to 1 (default) or W/mean(W) "
                           "(Algorithm 1, the notebook's rescaling)")
    rank.add_argument("--soft", action="store_true",
                      help="count the judges' probabilities p_a as fractional wins where given (soft verdicts)")
    rank.add_argument("--bootstrap", type=_non_negative_int, default=100, metavar="N",
                      help="bootstrap rounds for 95%% intervals (default 100, as the Leaderboard page; 0: none)")
    rank.add_argument("--seed", type=int, default=0)
    rank.add_argument("--elo-shuffles", type=_non_negative_int, default=100, metavar="R",
                      help="Elo: average over R random battle orders (0 = file order; default 100)")
    rank.add_argument("--baseline", metavar="MODEL",
                      help="with --method winrate: AlpacaEval's columns against this model (win_rate, "
                           "discrete_win_rate, standard_error, n_wins, n_wins_base, n_draws, avg_length, lc_win_rate; "
                           "percent), the length-controlled win rate from the answers' lengths")
    rank.add_argument("--control", action="append", choices=("length", "markdown"), metavar="STYLE",
                      help="with --method bt: style control (Chatbot Arena's contextual Bradley-Terry) for the answers' "
                           "length and/or Markdown (headers, lists, bold); repeatable. Needs the answers: a study's "
                           "stored answers, or answer_a / answer_b columns in FILE (length_a / length_b for length)")
    rank.add_argument("--intervals", choices=("bootstrap", "sandwich"), default="bootstrap",
                      help="Bradley-Terry: the interval that sets the ranks; the sandwich (robust) interval is always "
                           "reported beside the bootstrap (default bootstrap)")
    rank.add_argument("--reweight", action="store_true",
                      help="Bradley-Terry: weigh each battle by 1/max(battles of its pair, 50), as LMArena does")
    rank.add_argument("--prior", type=_positive_float, metavar="SD",
                      help="Bradley-Terry: a weak Gaussian prior on the ratings with this standard deviation in Elo "
                           "points (e.g. 200: five verdicts stay within 1000 +- 200)")
    rank.add_argument("--min-battles", type=_non_negative_int, default=None, metavar="N",
                      help="mark contestants with fewer battles than N preliminary (default 30)")
    rank.add_argument("--style-reg", type=_non_negative_float, default=None, metavar="R",
                      help="style control: ridge on the style coefficients, on arena-rank's scale (default 1e-3; "
                           "arena-rank's own default is 1.0)")
    rank.add_argument("--lc-rounds", type=_non_negative_int, default=None, metavar="N",
                      help="bootstrap rounds over instructions for the length-controlled win rate's standard error "
                           "(default 200)")
    rank.add_argument("--by", choices=("category", "criterion", "turn"),
                      help="one leaderboard per question category, criterion or turn, side by side with counts")
    rank.add_argument("--group", action="append", metavar="VALUE",
                      help="with --by: only these groups (repeatable; default all)")
    rank.add_argument("--format", choices=("table", "csv", "json"), default="table")

    agree = commands.add_parser("agree", help="agreement of judges with a reference (never with their own votes)")
    agree.add_argument("file", nargs="?")
    _study_options(agree)
    agree.add_argument("--judge", required=True, action="append", metavar="NAME_OR_PREFIX",
                       help="the judge, or a prefix ending in ':' for several (e.g. human: for annotator agreement); "
                            "with --alpha, repeatable: the raters")
    agree.add_argument("--alpha", action="store_true",
                       help="Krippendorff's alpha (nominal) among the --judge raters, with a bootstrap 95%% interval "
                            "over units (no --reference)")
    agree.add_argument("--rounds", type=_non_negative_int, default=1000, metavar="N",
                       help="--alpha: bootstrap rounds (default 1000)")
    agree.add_argument("--seed", type=int, default=0)
    agree.add_argument("--reference", metavar="NAME_OR_PREFIX",
                       help="reference judge, or a prefix ending in ':' for several (e.g. human:); a judge is never "
                            "compared with its own votes (leave-one-out)")
    agree.add_argument("--ties", choices=("include", "exclude"), default="include")
    agree.add_argument("--reference-mode", choices=("votes", "majority"), default="majority")
    agree.add_argument("--unparsed", choices=("miss", "exclude"), default="miss",
                       help="a judge reply with no readable verdict counts as a disagreement (ScaleEval eq. 2, "
                            "default) or is left out")
    agree.add_argument("--all-rounds", action="store_true", help="also count debate agents' initial verdicts")
    agree.add_argument("--format", choices=("table", "json"), default="table")

    bias = commands.add_parser("bias", help="position bias, swap consistency and health of each judge")
    bias.add_argument("file", nargs="?")
    _study_options(bias)
    bias.add_argument("--model", action="store_true",
                      help="judge bias as a model: each judge's position, self/family preference and length bias "
                           "estimated together (contextual Bradley-Terry), in Elo points and as probability shifts "
                           "with 95%% intervals")
    bias.add_argument("--family", action="append", metavar="MODEL=FAMILY",
                      help="--model: put contestants in one family for self-preference (repeatable; default: each "
                           "model its own family)")
    bias.add_argument("--judge", action="append", metavar="NAME", help="--model: only these judges (repeatable; a "
                      "name ending in ':' is a prefix)")
    bias.add_argument("--format", choices=("table", "json"), default="table")

    rank.set_defaults(handler=_rank)
    agree.set_defaults(handler=_agree)
    bias.set_defaults(handler=_bias)
    for module in _command_modules():
        module.add_commands(commands)
    return parser


# Command groups that live beside the code they drive (import/export in peercore.io,
# review runs in peercore.jobs). Each module defines add_commands(subparsers) and sets
# handler=callable(args) -> exit status on its parsers.
_COMMAND_MODULES = ("peercore.io.commands", "peercore.jobs.commands", "peercore.nlg.commands", "peercore.ui.commands",
                    "peercore.assignment", "peercore.store.commands")


def _command_modules():
    import importlib
    import importlib.util

    for name in _COMMAND_MODULES:
        if importlib.util.find_spec(name.rsplit(".", 1)[0]) and importlib.util.find_spec(name):
            yield importlib.import_module(name)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``peercore`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if getattr(args, "db", None) is not None:
            # A SQLite file path, or a postgresql:// URL (the team store); any other URL is
            # refused here, without repeating it (it may carry a password).
            from peercore.store import database_location

            args.db = database_location(args.db, what="--db")
        return int(args.handler(args) or 0)
    except BrokenPipeError:
        # The reader went away (``peercore rank ... | head -1``): what was asked is done, the
        # rest of the output is not wanted. Not an error, and nothing blames the input.
        _quiet_stdout()
        return 0
    except PeercoreError as exc:
        return _fail(str(exc))
    except (ValueError, OSError) as exc:
        where = getattr(args, "file", None) or getattr(args, "path", None)
        return _fail(f"{where}: {exc}" if where else str(exc))


# --------------------------------------------------------------------------- commands


def add_db_option(parser: argparse.ArgumentParser, *, of: str = "") -> None:
    """The ``--db PATH|URL`` option every command shares (:func:`main` checks its value)."""
    parser.add_argument("--db", metavar="PATH|URL", help=f"{of}SQLite file or postgresql:// URL (default: "
                        "$PEERBOARD_DB or the per-user data folder)")


def _study_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--study", metavar="NAME", help="read a stored study instead of a file")
    add_db_option(parser, of="database of --study: ")


def _selection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--judge", action="append", metavar="NAME",
                        help="count only this judge (repeatable; a name ending in ':' is a prefix, e.g. human:)")
    parser.add_argument("--kind", action="append", choices=("llm", "human", "gold", "debate", "adjudicator", "vote",
                                                            "other"),
                        help="count only judges of this kind (repeatable; gold = debate consensus + adjudications)")
    parser.add_argument("--contestant", action="append", metavar="MODEL", help="only battles between these (repeatable)")
    parser.add_argument("--category", action="append", metavar="NAME", help="only questions of this category")
    parser.add_argument("--criterion", action="append", metavar="NAME", help="only this criterion")
    parser.add_argument("--turn", action="append", type=int, metavar="N", help="only this turn")
    parser.add_argument("--common-contestants", action="store_true",
                        help="only contestants every chosen judge judged (for mixed selections)")
    parser.add_argument("--all-rounds", action="store_true",
                        help="also count debate agents' and discussion reviewers' initial verdicts (default: final)")
    parser.add_argument("--each-vote", action="store_true",
                        help="count every repeated vote of a judge on a comparison (default: their majority)")


def _selection(args):
    from peercore.study import Selection

    return Selection(judges=args.judge, kinds=args.kind, contestants=args.contestant, categories=args.category,
                     criteria=args.criterion, turns=args.turn, final_only=not args.all_rounds,
                     repeated_votes="each" if args.each_vote else "majority",
                     common_contestants=args.common_contestants)


def _source(args, *, extras: tuple[str, ...] = ()):
    """A :class:`peercore.study.Study` for ``--study``, or the judgments of the FILE argument.

    ``extras`` names optional columns of the file to keep beside the canonical ones
    (answer texts or lengths, a question category), read by the same careful reader.
    """
    if (args.file is None) == (args.study is None):
        raise ValueError("give either a judgments FILE or --study NAME (with --db PATH)")
    if args.study is None:
        from peercore.judgments import read_judgments

        judgments = read_judgments(args.file)
        return _with_file_columns(judgments, args.file, extras) if extras else judgments
    from peercore.store import Store
    from peercore.study import Study

    return Study(Store(args.db, create=False), args.study)


def _rank(args) -> int:
    from peercore.study import DEFAULT_LC_ROUNDS, PRELIMINARY_BATTLES, Study, aliases_of, rank, rank_by, select

    extras = _needed_columns(args)
    source = _source(args, extras=extras)
    options = dict(method=args.method, peer_weights=args.peer_weights, weights_from=args.weights_from,
                   bootstrap=args.bootstrap, seed=args.seed, elo_shuffles=args.elo_shuffles, soft=args.soft,
                   weight_normalisation=args.weight_normalisation, baseline=args.baseline,
                   controls=tuple(args.control or ()), intervals=args.intervals, reweight=args.reweight,
                   prior=args.prior, min_battles=PRELIMINARY_BATTLES if args.min_battles is None else args.min_battles,
                   style_reg=args.style_reg, lc_rounds=DEFAULT_LC_ROUNDS if args.lc_rounds is None else args.lc_rounds)
    if args.group and not args.by:
        raise ValueError("--group needs --by category|criterion|turn")
    if args.by:
        if isinstance(source, Study):
            grouped = source.leaderboards_by(_selection(args), by=args.by, groups=args.group, **options)
        else:
            grouped = rank_by(select(source, _selection(args)), by=args.by, groups=args.group,
                              aliases=aliases_of(source), **options)
        return _print_grouped(grouped, args)
    if isinstance(source, Study):
        board = source.leaderboard(_selection(args), **options)
    else:
        chosen = select(source, _selection(args))
        board = rank(chosen, aliases=aliases_of(source), **options)
    table = board.table
    if args.format == "json":
        print(json.dumps(board.to_json(), indent=2))
    elif args.format == "csv":
        print(table.to_csv(index=False), end="")
    else:
        _print_ranking(board, args)
    if args.format != "json":
        for warning in board.warnings:
            print(f"warning: {warning}", file=sys.stderr)
    return 0


def _print_ranking(board, args) -> None:
    from peercore.reports import baseline_columns, style_table

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
    from peercore.reports import grouped_table

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
    if args.format != "json":
        for warning in _grouped_warnings(grouped):
            print(f"warning: {warning}", file=sys.stderr)
    return 0


def _grouped_warnings(grouped) -> list[str]:
    """Each group's warnings, a warning every group shares said once rather than once per group."""
    per_group = {group: list(dict.fromkeys(ranking.warnings)) for group, ranking in grouped.rankings.items()}
    shared = [w for w in dict.fromkeys(w for ws in per_group.values() for w in ws)
              if all(w in ws for ws in per_group.values())]
    if len(per_group) < 2:
        shared = []
    out = [f"every {grouped.by}: {w}" for w in shared]
    out += [f"{grouped.by} {group}: {w}" for group, ws in per_group.items() for w in ws if w not in shared]
    return out


def _needed_columns(args) -> tuple[str, ...]:
    """Optional columns of a judgment FILE that these options read."""
    out: tuple[str, ...] = ()
    if getattr(args, "baseline", None) or getattr(args, "control", None):
        out += ("answer_a", "answer_b", "length_a", "length_b")
    if getattr(args, "by", None) == "category" or getattr(args, "category", None):
        out += ("category",)
    return out


def _agree(args) -> int:
    from peercore.study import Study, agreement_table, final_verdicts

    if args.alpha:
        return _alpha(args)
    if args.reference is None:
        raise ValueError("give --reference NAME_OR_PREFIX (or --alpha for Krippendorff's alpha among the judges)")
    if len(args.judge) > 1:
        raise ValueError("give one --judge (a prefix ending in ':' names several), or use --alpha")
    args.judge = args.judge[0]
    source = _source(args)
    if isinstance(source, Study):
        table = source.agreement(args.judge, args.reference, ties=args.ties, reference_mode=args.reference_mode,
                                 unparsed=args.unparsed, final_only=not args.all_rounds)
    else:
        frame = source if args.all_rounds else final_verdicts(source)
        table = agreement_table(frame, args.judge, args.reference, ties=args.ties,
                                reference_mode=args.reference_mode, unparsed=args.unparsed)
    pooled = _pooled(source, args) if args.judge.endswith(":") and args.judge == args.reference else None
    if args.format == "json":
        rows = [{"judge": judge, **{k: _json_value(v) for k, v in row.items()}} for judge, row in table.iterrows()]
        if pooled is not None:  # one more row: every pair of two raters' votes, as FastChat pools them
            rows.append({"judge": "pooled", **{k: _json_value(v) for k, v in vars(pooled).items()}})
        payload = rows[0] if len(rows) == 1 and not args.judge.endswith(":") else rows
        print(json.dumps(payload, indent=2))
        return 0
    print(f"{args.judge} vs {args.reference} ({args.reference_mode}, ties {args.ties}, unparsed replies "
          f"{'counted as misses' if args.unparsed == 'miss' else 'left out'}; a judge is never compared with "
          "its own votes)")
    for judge, row in table.iterrows():
        print(f"{judge}")
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


def _pooled(source, args):
    """:func:`peercore.agreement.pooled_agreement` of the raters ``--judge`` names (``agree`` with the same prefix
    as judge and reference), on the verdicts the table above counted."""
    from peercore.agreement import pooled_agreement
    from peercore.ranking.leaderboard import select_judges
    from peercore.study import Selection, Study, final_verdicts

    if isinstance(source, Study):
        frame = source.judgments(Selection(final_only=not args.all_rounds, repeated_votes="each"))
    else:
        frame = source if args.all_rounds else final_verdicts(source)
    readable = frame["winner"].notna().to_numpy(dtype=bool)
    if "valid" in frame.columns:
        readable &= pd.to_numeric(frame["valid"], errors="coerce").to_numpy(dtype=float) != 0
    return pooled_agreement(select_judges(frame[readable].reset_index(drop=True), [args.judge]))


def _families(pairs) -> dict[str, str]:
    out = {}
    for pair in pairs or ():
        model, sep, family = pair.partition("=")
        if not sep or not model.strip() or not family.strip():
            raise ValueError(f"--family must be MODEL=FAMILY, got {pair!r}")
        out[model.strip()] = family.strip()
    return out


def _bias_model(args) -> int:
    from peercore.bias import judge_bias_model
    from peercore.ranking.style import battle_lengths
    from peercore.reports import bias_model_display
    from peercore.study import Selection, Study, aliases_of, final_verdicts, select

    families = _families(args.family)
    source = _source(args, extras=("answer_a", "answer_b", "length_a", "length_b"))
    selection = Selection(judges=tuple(args.judge) if args.judge else None)
    if isinstance(source, Study):
        result = source.judge_bias(selection, families=families)
    else:
        chosen = select(source, selection)
        lengths = battle_lengths(chosen)
        result = judge_bias_model(chosen, aliases=aliases_of(source), families=families, lengths=lengths)
    table = result.table
    if args.format == "json":
        rows = [{"judge": j, "bias": b, **{k: _json_value(v) for k, v in row.items()}} for (j, b), row in table.iterrows()]
        print(json.dumps({"biases": rows, "families": result.families}, indent=2))
        return 0
    print("Judge bias as a model: shared model strengths, per-judge position / self (family) / length terms; "
          "Elo points and the change in P(favoured answer wins) at equal quality, 95% sandwich intervals.")
    print(bias_model_display(table).to_string(index=False))
    return 0


def _alpha(args) -> int:
    from peercore.agreement import krippendorff_alpha
    from peercore.study import Study, final_verdicts

    if args.reference is not None:
        raise ValueError("--alpha measures agreement among the --judge raters; drop --reference")
    source = _source(args)
    if isinstance(source, Study):
        result = source.alpha(args.judge, rounds=args.rounds, seed=args.seed, final_only=not args.all_rounds)
    else:
        frame = source if args.all_rounds else final_verdicts(source)
        result = krippendorff_alpha(frame, raters=args.judge, rounds=args.rounds, seed=args.seed)
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


def _bias(args) -> int:
    from peercore.bias import judge_health, position_bias, swap_consistency
    from peercore.study import Study, final_verdicts

    if args.model:
        return _bias_model(args)
    if args.family or args.judge:
        raise ValueError("--family and --judge go with --model")
    source = _source(args)
    if isinstance(source, Study):
        judgments = source.judgments()
        health = source.health()
    else:
        judgments = final_verdicts(source)
        health = judge_health(judgments)
    position = position_bias(judgments)
    swap = swap_consistency(judgments)
    table = position.join(swap[["n_pairs", "consistent"]].rename(columns={"consistent": "swap_consistency"}),
                          how="left")
    table = table.join(health[["invalid_share", "identical_share", "flagged", "reasons"]], how="left")
    if args.format == "json":
        print(json.dumps(json.loads(table.to_json(orient="index")), indent=2))
    else:
        print(table.drop(columns=["reasons"]).to_string(float_format="{:.3f}".format))
        for judge, row in table[table["flagged"].fillna(False).astype(bool)].iterrows():
            fix = health.loc[judge, "fix"]
            print(f"warning: judge {judge} carries no information: {row['reasons']}. Try: {fix}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------- helpers

def _with_file_columns(judgments: pd.DataFrame, path: str, columns: tuple[str, ...]) -> pd.DataFrame:
    """``judgments`` plus those of ``columns`` the file has (texts kept as text, lengths as numbers).

    Raises
    ------
    ValueError
        If a length is not a number >= 0 (file, row and value named).
    """
    from pathlib import Path

    from peercore.io._common import table_records

    frame, line_of = table_records(Path(path), allow_empty=True)
    present = [c for c in columns if c in frame.columns]
    if not present:
        return judgments
    if len(frame) != len(judgments):
        raise ValueError(f"{path}: read {len(frame)} rows for {len(judgments)} judgments")
    out = judgments.copy()
    for column in present:
        values = frame[column].reset_index(drop=True)
        if column.startswith("length_"):
            numbers = pd.to_numeric(values.astype(object).where(values.notna() & (values.astype(str) != ""), None),
                                    errors="coerce")
            bad = np.flatnonzero((values.notna() & (values.astype(str) != "")).to_numpy() &
                                 ~(numbers.to_numpy(dtype=float) >= 0))
            if bad.size:
                row = int(bad[0])
                line = line_of(row)
                raise ValueError(f"{path}: {'line ' + str(line) if line else 'row ' + str(row)}: {column} "
                                 f"{str(values.iloc[row])[:80]!r} is not a length (a number >= 0)")
            out[column] = numbers.to_numpy(dtype=float)
        else:
            out[column] = values.astype(object).where(values.notna(), None).to_numpy()
    return out


def _float_format(method: str):
    return "{:.4f}".format if method in ("winrate", "poe-gaussian", "poe-bt") else "{:.1f}".format


def _json_value(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def int_at_least(minimum: int):
    """An argparse ``type``: a whole number >= ``minimum``, else a one-line usage error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a number >= {minimum}, got {text!r}")
        return value

    return parse


_non_negative_int = int_at_least(0)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _quiet_stdout() -> None:
    """Point standard output at /dev/null so the interpreter's final flush is silent."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # pragma: no cover - no real file descriptor (captured)
        pass


def fail(message: str) -> int:
    """Print one error line and return exit status 2 (for command modules)."""
    return _fail(message)


def _fail(message: str) -> int:
    print(f"peercore: error: {message}", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
