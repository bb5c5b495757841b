"""``peercore import`` and ``peercore export``.

::

    peercore import PATH [--study NAME] [--format auto|prd|scaleeval|...] [--db PATH]
    peercore export --study NAME --what judgments|leaderboard --format csv|jsonl|parquet
                    [--output FILE] [--db PATH] [--judge NAME ...] [--method bt|elo|winrate] ...

The database is ``--db``, else ``$PEERBOARD_DB``, else the per-user default
(:func:`peercore.store.default_db_path`). A rejected import exits with status 2 and
one line naming the file, line and field, and leaves the database untouched. Once an
import has committed, a closed standard output (``peercore import F | head -1``) is not
an error: the exit status is 0.
"""

from __future__ import annotations

import sys
from pathlib import Path

from peercore.cli import add_db_option

__all__ = ["add_commands"]


def add_commands(subparsers) -> None:
    """Add the ``import`` and ``export`` parsers (called by :func:`peercore.cli.build_parser`)."""
    from peercore.io.export import EXPORT_FORMATS, EXPORT_WHAT
    from peercore.io.importer import FORMATS

    imp = subparsers.add_parser(
        "import", help="import a file or folder (canonical, Arena, FastChat, AlpacaEval, PRD, ScaleEval, human votes)",
        description="Import a file or folder into a study. Prints what was added and what was skipped as "
                    "already present. Nothing is written unless the whole input is valid.")
    imp.add_argument("path", help="file (.csv, .jsonl, .json, .parquet) or folder")
    imp.add_argument("--study", metavar="NAME", help="study to import into (created if needed; default: the "
                     "file or folder name)")
    imp.add_argument("--format", choices=FORMATS, default="auto", help="default: detected from the layout and fields")
    imp.add_argument("--order", choices=("auto", "known", "unknown"), default=None,
                     help="whether model_a is the answer each judge saw first: known, unknown, or auto (known for "
                          "the pairs a judge judged in both orientations); default: what the format records (PRD, "
                          "ScaleEval, Arena, FastChat pairs: known; AlpacaEval: unknown; canonical files: auto, or "
                          "their order_known column)")
    add_db_option(imp)
    imp.set_defaults(handler=_import)

    exp = subparsers.add_parser("export", help="export a study's judgments or leaderboard",
                                description="Write a study's judgments or leaderboard as CSV (formula cells "
                                            "neutralised), JSONL or Parquet.")
    exp.add_argument("--study", required=True, metavar="NAME")
    exp.add_argument("--what", choices=EXPORT_WHAT, required=True)
    exp.add_argument("--format", choices=EXPORT_FORMATS, required=True)
    exp.add_argument("--output", "-o", metavar="FILE", help="file to write (default: standard output)")
    add_db_option(exp)
    exp.add_argument("--judge", action="append", metavar="NAME",
                     help="only this judge (repeatable; a name ending in ':' is a prefix, e.g. human:)")
    exp.add_argument("--method", choices=("winrate", "elo", "bt"), default="bt", help="leaderboard method")
    exp.add_argument("--peer-weights", choices=("none", "prd", "fixed-point"), default="none")
    exp.add_argument("--bootstrap", type=int, default=0, metavar="N")
    exp.add_argument("--seed", type=int, default=0)
    exp.set_defaults(handler=_export)


def _import(args) -> int:
    from peercore.cli import fail
    from peercore.errors import PeercoreError
    from peercore.io.importer import default_study_name, import_bundle, read_path
    from peercore.store import Store
    from peercore.io.rules import quote
    from peercore.store.studies import study_name_problem

    study = args.study if args.study is not None else default_study_name(args.path)
    problem = study_name_problem(study)
    if problem is not None:  # before anything is read or the database opened
        shown = args.path if args.path.isprintable() else quote(args.path, 200)  # one line, whatever the path
        return fail(f"--study: {problem}" if args.study is not None else
                    f"{shown}: {problem} (the study is named after the file; give --study NAME)")
    try:
        bundle = read_path(args.path, format=args.format)  # everything is checked before the database opens
        store = Store(args.db)
        report = import_bundle(bundle, store=store, study=study, order=args.order)
    except PeercoreError as exc:
        return fail(str(exc))
    except (ValueError, OSError) as exc:
        return fail(f"{args.path}: {exc}")
    _report("\n".join([*report.lines(), f"  database: {store.path}"]))
    return 0


def _report(text: str) -> None:
    """Print the summary of a committed import; a reader that went away (``| head -1``) is no error.

    The import has committed by now, so a closed standard output changes nothing: the
    rest of the summary is dropped and the exit status stays 0, with nothing on stderr
    (standard output is pointed at /dev/null so the interpreter's final flush is quiet).
    """
    import os

    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _export(args) -> int:
    from peercore.cli import fail
    from peercore.errors import PeercoreError
    from peercore.io.export import study_table, write_table
    from peercore.store import Store

    if args.format == "parquet" and args.output is None and sys.stdout.isatty():
        return fail("Parquet is binary: give --output FILE (or redirect standard output)")
    try:
        store = Store(args.db, create=False)
        table = study_table(store, args.study, what=args.what, judges=args.judge, method=args.method,
                            peer_weights=args.peer_weights, bootstrap=args.bootstrap, seed=args.seed)
        if args.output:
            write_table(table, Path(args.output), format=args.format)
        else:
            sys.stdout.flush()
            write_table(table, sys.stdout.buffer, format=args.format)
            sys.stdout.buffer.flush()
    except PeercoreError as exc:
        return fail(str(exc))
    except (ValueError, OSError) as exc:
        return fail(str(exc))
    if args.output:
        print(f"wrote {len(table):,} rows to {args.output}", file=sys.stderr)
    return 0

