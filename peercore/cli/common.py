"""What every command group of the ``peercore`` command line shares: the parser, errors, options, types.

Nothing here imports pandas or numpy: ``peercore --help`` loads every command group's
parser and nothing else.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import shlex
import sys
from collections.abc import Iterator, Sequence

from peercore.db import database_trouble
from peercore.domain.options import KindChoice, RepeatedVotes, values
from peercore.domain.selection import Selection
from peercore.errors import read_only_refusal
from peercore.locations import ENV_DB, default_db_path, is_postgres_url, redact_text, redact_url

__all__ = ["EXIT_USAGE", "Parser", "fail", "database_failure", "say_warnings", "add_db_option", "int_at_least",
           "non_negative_int", "positive_int",
           "positive_float", "non_negative_float", "quiet_stdout", "add_study_options",
           "add_selection_options", "selection_of", "selection_args", "flag_args"]

EXIT_USAGE = 2


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit status 2, like every other error of the command line."""

    def error(self, message: str) -> None:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def fail(message: str) -> int:
    """Print one error line and return exit status 2."""
    print(f"peercore: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def database_failure(exc: BaseException, args: argparse.Namespace, argv: Sequence[str]) -> str | None:
    """The one error line for ``exc`` when the database stayed busy or went away, else None.

    It names the database (``--db``, ``SOURCE`` / ``TARGET`` of ``copy``, else
    ``$PEERBOARD_DB`` or the default file), says what happened and that nothing was
    half-written (every write is one transaction), and ends with the command to run again
    (``argv``). Every password of a URL the command was given is shown as ``***``.
    """
    given = [getattr(args, name, None) for name in ("db", "source", "target")] + [os.environ.get(ENV_DB)]
    urls = [str(value) for value in given if is_postgres_url(str(value))]
    named = [str(value) for value in given[:3] if value is not None]
    if not named:
        named = [str(given[3] or default_db_path())]
    shown = " or ".join(redact_url(v) if is_postgres_url(v) else v for v in named)
    trouble = database_trouble(exc, shown) or read_only_refusal(exc, shown)
    if trouble is None:
        return None
    command = shlex.join(["peercore", *argv])
    for url in urls:
        command = redact_text(command, url)
    return f"{trouble}: {command if len(command) <= 300 else command[:299] + '…'}"


class _OneLineWarnings(logging.Handler):
    """peercore's log warnings on stderr as it is when they happen, one line each: ``peercore: MESSAGE
    (ExceptionType: its first line)``; a warning caused by a database that stayed busy or went away is
    left to the command's own error line (:func:`database_failure`), which says it once."""

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and _is_database_trouble(exc):
            return
        text = record.getMessage()
        if exc is not None:
            text += f" ({type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]})"
        print(f"peercore: {text}", file=sys.stderr, flush=True)


_warnings = _OneLineWarnings(logging.WARNING)


@contextlib.contextmanager
def say_warnings() -> Iterator[None]:
    """Within the block, peercore's log warnings (a wait for a busy database, a status not recorded) go to
    stderr one line each (a command run in-process leaves the logging set up as it found it)."""
    logger = logging.getLogger("peercore")
    added = _warnings not in logger.handlers
    logger.addHandler(_warnings)
    try:
        yield
    finally:
        if added:
            logger.removeHandler(_warnings)


def _is_database_trouble(exc: BaseException) -> bool:
    return database_trouble(exc, "") is not None


def add_db_option(parser: argparse.ArgumentParser, *, of: str = "") -> None:
    """The ``--db PATH|URL`` option every command shares (:func:`peercore.cli.main` checks its value)."""
    parser.add_argument("--db", metavar="PATH|URL", help=f"{of}SQLite file or postgresql:// URL (default: "
                        "$PEERBOARD_DB or the per-user data folder); a write waits for another process's write lock "
                        "up to $PEERBOARD_BUSY_TIMEOUT seconds (default 120)")


def add_study_options(parser: argparse.ArgumentParser) -> None:
    """``--study NAME`` and its ``--db`` (commands that read a judgment FILE or a stored study)."""
    parser.add_argument("--study", metavar="NAME", help="read a stored study instead of a file")
    add_db_option(parser, of="database of --study: ")


def add_selection_options(parser: argparse.ArgumentParser) -> None:
    """Which judgments count (:class:`peercore.domain.selection.Selection`), as the pages offer it."""
    parser.add_argument("--judge", action="append", metavar="NAME",
                        help="count only this judge (repeatable; a name ending in ':' is a prefix, e.g. human:)")
    parser.add_argument("--kind", action="append", choices=values(KindChoice),
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
                        help="count every repeated vote of a judge on a comparison (default: their majority, with a "
                             "warning saying how many were merged)")


def selection_of(args):
    """The :class:`peercore.domain.selection.Selection` of :func:`add_selection_options`' options."""
    return Selection(judges=args.judge, kinds=args.kind, contestants=args.contestant, categories=args.category,
                     criteria=args.criterion, turns=args.turn, final_only=not args.all_rounds,
                     repeated_votes="each" if args.each_vote else "majority",
                     common_contestants=args.common_contestants)


def flag_args(flag: str, value) -> list[str]:
    """``[flag, value]`` as argparse reads them back; ``[flag=value]`` when the value starts with ``-``."""
    text = str(value)
    return [f"{flag}={text}"] if text.startswith("-") else [flag, text]


def selection_args(selection: Selection) -> list[str]:
    """The options of :func:`add_selection_options` that :func:`selection_of` turns back into ``selection``.

    Only what differs from the default is written (values by :func:`flag_args`).
    """
    args: list[str] = []
    for flag, chosen in (("--judge", selection.judges), ("--kind", selection.kinds),
                         ("--contestant", selection.contestants), ("--category", selection.categories),
                         ("--criterion", selection.criteria), ("--turn", selection.turns)):
        for value in chosen or ():
            args += flag_args(flag, value)
    if selection.common_contestants:
        args.append("--common-contestants")
    if not selection.final_only:
        args.append("--all-rounds")
    if selection.repeated_votes == RepeatedVotes.EACH.value:
        args.append("--each-vote")
    return args


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


non_negative_int = int_at_least(0)
positive_int = int_at_least(1)


def positive_float(text: str) -> float:
    """An argparse ``type``: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    """An argparse ``type``: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def quiet_stdout() -> None:
    """Point standard output at /dev/null so the interpreter's final flush is silent (the reader went away)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # pragma: no cover - no real file descriptor (captured)
        pass
