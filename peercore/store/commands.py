"""``peercore copy``: every study of one database into an empty one (:mod:`peercore.store.copy`).

::

    peercore copy SOURCE TARGET     # e.g. ~/peerboard.sqlite 'postgresql://peerboard@db.example.org/peerboard'

SOURCE and TARGET are each a SQLite file or a ``postgresql://`` URL. The target is created
(a file) or given its tables (a PostgreSQL database) if needed, and must hold nothing yet.
One line per table says what was copied; a refusal exits with status 2 and leaves the
target as it was.
"""

from __future__ import annotations

__all__ = ["add_commands"]


def add_commands(subparsers) -> None:
    """Add the ``copy`` parser (called by :func:`peercore.cli.build_parser`)."""
    copy = subparsers.add_parser(
        "copy", help="copy a whole database (every study, run, cached response, debate and decision) into an empty one",
        description="Copy every study of SOURCE into the empty database TARGET, with its runs, the responses "
                    "they paid for (so resumes stay free), judges, debates and adjudications: a SQLite file into "
                    "the team's PostgreSQL store, or back. All or nothing: a refusal or a failure leaves TARGET "
                    "as it was.")
    copy.add_argument("source", metavar="SOURCE", help="SQLite file or postgresql:// URL to copy from (must exist)")
    copy.add_argument("target", metavar="TARGET", help="SQLite file or postgresql:// URL to copy into (empty)")
    copy.set_defaults(handler=_copy)


def _copy(args) -> int:
    import time

    from peercore.store import Store, database_location
    from peercore.store.copy import copy_database

    source = Store(database_location(args.source, what="SOURCE"), create=False)
    target = Store(database_location(args.target, what="TARGET"))
    started = time.perf_counter()
    lines: list[str] = []
    counts = copy_database(source, target, on_table=lambda name, n: lines.append(f"  {name:<20} {n:>12,} rows"))
    studies = target.studies()["name"].tolist()
    print(f"copied {len(studies)} stud{'y' if len(studies) == 1 else 'ies'} ({', '.join(studies) or 'none'}) "
          f"from {source.path} to {target.path} in {time.perf_counter() - started:.1f} s")
    print("\n".join(lines))
    print(f"  {'total':<20} {sum(counts.values()):>12,} rows")
    return 0
