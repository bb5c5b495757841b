"""``peercore import``, ``peercore export`` and ``peercore copy`` (a whole database into an empty one).

::

    peercore import PATH [--study NAME] [--format auto|prd|scaleeval|...] [--db PATH]
    peercore export --study NAME --what judgments|leaderboard|audit --format csv|jsonl|parquet
                    [--output FILE] [--db PATH] [--judge NAME ...] [--method bt|elo|winrate] ...

The database is ``--db``, else ``$PEERBOARD_DB``, else the per-user default
(:func:`peercore.locations.default_db_path`). A rejected import exits with status 2 and
one line naming the file, line and field, and leaves the database untouched. Once an
import has committed, a closed standard output (``peercore import F | head -1``) is not


an error: the exit status is 0.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from peercore.cli.common import fail
from peercore.errors import PeercoreError
from peercore.app.exports import study_table
from peercore.io.export import write_table
from peercore.io.importer import default_study_name, import_bundle, read_path
from peercore.io.rules import quote
from peercore.locations import database_location
from peercore.store import Store
from peercore.store.copy import copy_database
from peercore.store.studies import study_name_problem

__all__ = []


def _import(args) -> int:
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

    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _export(args) -> int:
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


def _copy(args) -> int:
    source = Store(database_location(args.source, what="SOURCE"), create=False)
    target = Store(database_location(args.target, what="TARGET"))
    started = time.perf_counter()
    lines: list[str] = []
    counts = copy_database(source, target, on_table=lambda name, n: lines.append(f"  {name:<20} {n:>12,} rows"))
    studies = target.studies.table()["name"].tolist()
    print(f"copied {len(studies)} stud{'y' if len(studies) == 1 else 'ies'} ({', '.join(studies) or 'none'}) "
          f"from {source.path} to {target.path} in {time.perf_counter() - started:.1f} s")
    print("\n".join(lines))
    print(f"  {'total':<20} {sum(counts.values()):>12,} rows")
    return 0

