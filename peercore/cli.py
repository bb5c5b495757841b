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

    rank = commands.add_parser("rank", help="leaderboard from judgments")
    rank.add_argument("file", nargs="?", help="judgments: .csv, .jsonl or .parquet in the canonical shape")
    _study_options(rank)
    rank.add_argument("--method", choices=("winrate", "elo", "bt"), default="bt")
    rank.add_argument("--judge", action="append", metavar="NAME",
                      help="count only this judge (repeatable; a name ending in ':' is a prefix, e.g. human:)")
    rank.add_argument("--peer-weights", choices=("none", "prd", "fixed-point"), default="none")
    rank.add_argument("--bootstrap", type=_non_negative_int, default=0, metavar="N",
                      help="bootstrap rounds for 95%% intervals (default 0: none)")
    rank.add_argument("--seed", type=int, default=0)
    rank.add_argument("--elo-shuffles", type=_non_negative_int, default=100, metavar="R",
                      help="Elo: average over R random battle orders (0 = file order; default 100)")
    rank.add_argument("--format", choices=("table", "csv", "json"), default="table")

    agree = commands.add_parser("agree", help="agreement of one judge with a reference")
    agree.add_argument("file", nargs="?")
    _study_options(agree)
    agree.add_argument("--judge", required=True, metavar="NAME")
    agree.add_argument("--reference", required=True, metavar="NAME_OR_PREFIX",
                       help="reference judge, or a prefix ending in ':' for several (e.g. human:)")
    agree.add_argument("--ties", choices=("include", "exclude"), default="include")
    agree.add_argument("--reference-mode", choices=("votes", "majority"), default="majority")
    agree.add_argument("--format", choices=("table", "json"), default="table")

    bias = commands.add_parser("bias", help="position bias and swap consistency per judge")
    bias.add_argument("file", nargs="?")
    _study_options(bias)
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
_COMMAND_MODULES = ("peercore.io.commands", "peercore.jobs.commands", "peercore.ui.commands")


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
        return int(args.handler(args) or 0)
    except PeercoreError as exc:
        return _fail(str(exc))
    except (ValueError, OSError) as exc:
        where = getattr(args, "file", None) or getattr(args, "path", None)
        return _fail(f"{where}: {exc}" if where else str(exc))


# --------------------------------------------------------------------------- commands


def _study_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--study", metavar="NAME", help="read a stored study instead of a file")
    parser.add_argument("--db", metavar="PATH", help="database of --study (default: $PEERBOARD_DB or the per-user "
                        "data folder)")


def _load(args):
    """(judgments, judge aliases) from the FILE argument or from ``--study`` in the store."""
    if (args.file is None) == (args.study is None):
        raise ValueError("give either a judgments FILE or --study NAME (with --db PATH)")
    if args.study is None:
        from peercore.judgments import read_judgments

        return read_judgments(args.file), None
    from peercore.store import Store

    store = Store(args.db, create=False)
    return store.judgments(args.study), store.judge_aliases(args.study) or None


def _rank(args) -> int:
    from peercore.ranking.leaderboard import leaderboard

    judgments, aliases = _load(args)
    board = leaderboard(
        judgments, method=args.method, judges=args.judge, peer_weights=args.peer_weights,
        bootstrap=args.bootstrap, seed=args.seed, elo_shuffles=args.elo_shuffles, aliases=aliases,
    )
    table = board.table
    if args.format == "json":
        payload = {
            "leaderboard": [
                {key: _json_value(row[key]) for key in ("model", "score", "rank", "ci_low", "ci_high", "battles")}
                for _, row in table.iterrows()
            ],
            "weights": None if board.weights is None else {k: float(v) for k, v in board.weights.items()},
        }
        print(json.dumps(payload, indent=2))
    elif args.format == "csv":
        print(table.to_csv(index=False), end="")
    else:
        print(f"{_METHOD_TITLES[args.method]} from {board.n_judgments} judgments")
        print(table.to_string(index=False, float_format=_float_format(args.method)))
        if board.weights is not None:
            print("\nPeer Rank reviewer weights")
            print(board.weights.sort_values(ascending=False).to_string(float_format="{:.3f}".format))
    return 0


def _agree(args) -> int:
    from peercore.agreement import agreement
    from peercore.ranking.leaderboard import select_judges

    judgments, _ = _load(args)
    judge_rows = select_judges(judgments, [args.judge])
    reference_rows = select_judges(judgments, [args.reference])
    if args.judge.endswith(":") or args.reference == args.judge:
        raise ValueError(f"--judge must name one judge other than the reference, got {args.judge!r}")
    result = agreement(judge_rows, reference_rows, ties=args.ties, reference_mode=args.reference_mode)
    summary = {"n": int(result.n), "agreement": _json_value(result.agreement), "cohen_kappa": _json_value(result.cohen_kappa)}
    if args.format == "json":
        print(json.dumps(summary, indent=2))
    else:
        print(f"{args.judge} vs {args.reference} ({args.reference_mode}, ties {args.ties})")
        print(f"  matched verdicts  {summary['n']}")
        print(f"  agreement         {_fmt(summary['agreement'])}")
        print(f"  Cohen's kappa     {_fmt(summary['cohen_kappa'])}")
    return 0


def _bias(args) -> int:
    from peercore.bias import position_bias, swap_consistency

    judgments, _ = _load(args)
    position = position_bias(judgments)
    swap = swap_consistency(judgments)
    table = position.join(swap[["n_pairs", "consistent"]].rename(columns={"consistent": "swap_consistency"}), how="left")
    if args.format == "json":
        print(json.dumps(json.loads(table.to_json(orient="index")), indent=2))
    else:
        print(table.to_string(float_format="{:.3f}".format))
    return 0


# ---------------------------------------------------------------------------- helpers

_METHOD_TITLES = {"winrate": "Win rate", "elo": "Elo", "bt": "Bradley-Terry (Elo scale)"}


def _float_format(method: str):
    return "{:.4f}".format if method == "winrate" else "{:.1f}".format


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


def fail(message: str) -> int:
    """Print one error line and return exit status 2 (for command modules)."""
    return _fail(message)


def _fail(message: str) -> int:
    print(f"peercore: error: {message}", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
