"""Copy a whole PeerBoard database into an empty one: a SQLite file into the team's
PostgreSQL store, or a PostgreSQL database back into a file (issue 13).

A study is more than its source files: runs (with every paid call's cached response and
their accounting), judge variants, debates and the team's adjudications live only in the
store. :func:`copy_database` carries every row of every table across, with the same ids,
so nothing has to be paid or decided twice after a move:

- the target must hold nothing yet (a database written by the same PeerBoard schema; the
  stores' migrations bring both to it when they open);
- everything is read from one snapshot of the source (a read transaction), so writers
  working on the source meanwhile do not tear the copy;
- everything is written in one write transaction of the target: a failure, or a killed
  process, leaves the target as empty as it was;
- tables go parents first (their foreign keys), rows in the source's insertion order;
  PostgreSQL's identity sequences are moved past the copied ids, so the next import or
  run adds rows after them;
- before the commit, every table's row count in the target is checked against the source.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

from peercore.store.core import StoreError

__all__ = ["copy_database", "database_tables"]

CHUNK_ROWS = 50_000  # rows per executemany: bounded memory, COPY-sized batches on PostgreSQL
# Each database keeps its own migration history; verdict snapshots are a cache the target
# rebuilds when a study is first read there.
_SKIPPED = frozenset({"schema_migrations", "verdict_snapshots"})


def database_tables(store) -> dict[str, dict]:
    """The store's tables, parents first: ``{table: {"columns": [...], "parents": {...}, "ordered_by": str | None}}``.

    ``columns`` leaves out PostgreSQL's hidden ``rowid`` (an identity the server fills);
    ``ordered_by`` is what gives the table's insertion order (``rowid`` where there is one,
    else ``id``), used to copy rows in that order.
    """
    connection = store.connect()
    if store.url is None:
        names = [r[0] for r in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]
        tables = {}
        for name in names:
            columns = [r[1] for r in connection.execute(f'PRAGMA table_info("{name}")')]
            parents = {r[2] for r in connection.execute(f'PRAGMA foreign_key_list("{name}")')} - {name}
            tables[name] = {"columns": columns, "parents": parents, "ordered_by": "rowid"}
    else:
        raw = connection.raw
        names = [r[0] for r in raw.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
            "AND table_type = 'BASE TABLE' ORDER BY table_name")]
        tables = {}
        for name in names:
            columns = [r[0] for r in raw.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = %s ORDER BY ordinal_position", (name,))]
            parents = {r[0] for r in raw.execute(
                "SELECT DISTINCT p.relname FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid "
                "JOIN pg_class p ON p.oid = c.confrelid WHERE c.contype = 'f' AND t.relname = %s "
                "AND t.relnamespace = current_schema()::regnamespace", (name,))} - {name}
            ordered_by = "rowid" if "rowid" in columns else ("id" if "id" in columns else None)
            tables[name] = {"columns": [c for c in columns if c != "rowid"], "parents": parents,
                            "ordered_by": ordered_by}
    return {name: tables[name] for name in _parents_first(tables)}


def _parents_first(tables: dict[str, dict]) -> list[str]:
    order, placed = [], set()
    pending = [name for name in tables if name not in _SKIPPED]
    while pending:
        ready = [name for name in pending if tables[name]["parents"] <= placed | _SKIPPED]
        if not ready:
            raise StoreError(f"the tables {sorted(pending)} reference each other in a cycle; cannot order the copy")
        order += ready
        placed.update(ready)
        pending = [name for name in pending if name not in placed]
    return order


def copy_database(source, target, *, on_table: Callable[[str, int], None] | None = None,
                  chunk_rows: int = CHUNK_ROWS) -> dict[str, int]:
    """Copy every row of ``source`` into the empty ``target``; return the rows copied per table.

    Parameters
    ----------
    source, target : :class:`peercore.store.Store` (SQLite or PostgreSQL, in any pairing).
    on_table : called with each table's name and row count once it is written (progress).
    chunk_rows : rows per write.

    Raises
    ------
    StoreError
        If the target already holds data (naming the tables), the two schemas differ, or
        a table's row count does not match after the copy (the target is then unchanged).
    """
    if source.path == target.path and (source.url is None) == (target.url is None):
        raise StoreError(f"the source and the target are the same database ({source.path})")
    source_tables, target_tables = database_tables(source), database_tables(target)
    if set(source_tables) != set(target_tables):
        raise StoreError(f"the two databases have different tables (only in the source: "
                         f"{sorted(set(source_tables) - set(target_tables))}, only in the target: "
                         f"{sorted(set(target_tables) - set(source_tables))}); open both with this PeerBoard first")
    versions = [_schema_version(store) for store in (source, target)]
    if versions[0] != versions[1]:
        raise StoreError(f"the source is at schema version {versions[0]}, the target at {versions[1]}")
    counts: dict[str, int] = {}
    with source.snapshot() as reading, target.transaction() as writing:
        filled = [name for name in target_tables if _count(writing, name)]
        if filled:
            raise StoreError(f"{target.path} already holds data (tables {', '.join(filled)}); copy into an empty "
                             "database")
        for name, table in target_tables.items():
            columns = table["columns"]
            if set(columns) != set(source_tables[name]["columns"]):
                raise StoreError(f"table {name}: the columns differ between the two databases")
            listed = ", ".join(f'"{c}"' for c in columns)
            order = source_tables[name]["ordered_by"]
            select = f'SELECT {listed} FROM "{name}"' + (f' ORDER BY "{order}"' if order else "")
            insert = f'INSERT INTO "{name}" ({listed}) VALUES ({", ".join("?" * len(columns))})'
            copied = 0
            iterator = _rows(source, reading, select, chunk_rows=chunk_rows)
            while chunk := list(itertools.islice(iterator, chunk_rows)):
                writing.executemany(insert, [tuple(row) for row in chunk])
                copied += len(chunk)
            counts[name] = copied
            if on_table is not None:
                on_table(name, copied)
        if target.url is not None:
            _move_identities_past_the_copied_ids(writing)
        for name, copied in counts.items():
            stored, expected = _count(writing, name), _count(reading, name)
            if stored != expected or copied != expected:
                raise StoreError(f"table {name}: {stored:,} rows written, {expected:,} in the source; nothing copied")
    return counts


def _rows(store, connection, select: str, *, chunk_rows: int) -> Iterator[tuple]:
    """The rows of ``select``, streamed: SQLite's cursor reads as it goes; on PostgreSQL a
    server-side cursor sends ``chunk_rows`` at a time (a client cursor would hold them all)."""
    if store.url is None:
        yield from connection.execute(select)
        return
    with connection.raw.cursor(name="peerboard_copy") as cursor:
        cursor.itersize = chunk_rows
        cursor.execute(select)
        yield from cursor


def _schema_version(store) -> int:
    return int(store.connect().execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] or 0)


def _count(connection, table: str) -> int:
    return int(connection.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])


def _move_identities_past_the_copied_ids(connection) -> None:
    """PostgreSQL: each ``GENERATED BY DEFAULT`` identity continues after the largest copied id."""
    raw = connection.raw
    identities = raw.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND is_identity = 'YES' AND identity_generation = 'BY DEFAULT'").fetchall()
    for table, column in identities:
        raw.execute(f'SELECT setval(pg_get_serial_sequence(%s, %s), COALESCE((SELECT MAX("{column}") FROM "{table}"), '
                    "0) + 1, false)", (f'"{table}"', column))
