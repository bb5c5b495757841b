"""The ``peercore`` command line: one module per command group, registered here.

=====================  ===========================================================
module                 commands
=====================  ===========================================================
:mod:`.analysis`       ``rank``, ``agree``, ``bias`` (over :mod:`peercore.app`)
:mod:`.data`           ``import``, ``export``, ``copy``
:mod:`.runs`           ``answer``, ``review``, ``discuss``, ``debate``, ``runs``
:mod:`.adjudicate`     ``adjudicate``
:mod:`.nlg`            ``nlg compare | score | evaluate | curves | judges | export``
:mod:`.dashboard`      ``app``
=====================  ===========================================================

Bad input exits with status 2 and one line on stderr naming the file, line and
problem. So does a database that stays busy or goes away (:func:`.common.database_failure`):
a command waits for another process's write lock at most ``$PEERBOARD_BUSY_TIMEOUT`` seconds
(default 120, said on stderr when it starts waiting), and a lost connection to the server ends
it; the line names the database (without its password), says nothing was half-written and
gives the command to run again.

Parsers load nothing heavy: each command imports what it runs when it runs, so
``peercore --help`` starts in a fraction of a second.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import importlib

from peercore.cli.common import (EXIT_USAGE, add_db_option, database_failure, fail, int_at_least, quiet_stdout,
                                 say_warnings)
from peercore.cli.parsers import build_parser
from peercore.errors import PeercoreError
from peercore.locations import database_location

__all__ = ["main", "build_parser", "fail", "add_db_option", "int_at_least", "EXIT_USAGE", "handler"]


def handler(name: str):
    """The function a parser names as ``module:function`` (:mod:`peercore.cli.parsers`).

    Its module is imported here, when its command runs, so that parsing (``peercore
    --help``, a usage error) never loads pandas, numpy or an SDK.
    """
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``peercore`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    with say_warnings():
        return _run(args, sys.argv[1:] if argv is None else list(argv))


def _run(args, argv: list[str]) -> int:
    try:
        if getattr(args, "db", None) is not None:
            # A SQLite file path, or a postgresql:// URL (the team store); any other URL is
            # refused here, without repeating it (it may carry a password).
            args.db = database_location(args.db, what="--db")
        return int(handler(args.handler)(args) or 0)
    except BrokenPipeError:
        # The reader went away (``peercore rank ... | head -1``): what was asked is done, the
        # rest of the output is not wanted. Not an error, and nothing blames the input.
        quiet_stdout()
        return 0
    except PeercoreError as exc:
        return fail(str(exc))
    except (ValueError, OSError) as exc:
        where = getattr(args, "file", None) or getattr(args, "path", None)
        return fail(f"{where}: {exc}" if where else str(exc))
    except Exception as exc:  # a database that stayed busy or went away: one line; anything else: as it is
        line = database_failure(exc, args, argv)
        if line is None:
            raise
        return fail(line)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
