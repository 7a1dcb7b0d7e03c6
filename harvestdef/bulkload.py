"""Bulk loading into the harvest database: COPY, and the constraints a large load sets aside and restores.

Every large write of HarvestSuite (the domain import, a national snapshot's job_configs, the benchmarks'
data) goes through these steps, so that each PostgreSQL trick is written, and reasoned about, once:

* ``copy_rows``: COPY FROM STDIN through psycopg on PostgreSQL; executemany in batches elsewhere.
* ``copy_integers``: binary COPY of integer columns laid out by numpy (PostgreSQL).
* ``skip_foreign_key_checks``: the foreign-key triggers off for the transaction, as ``pg_restore
  --disable-triggers`` does (needs a role allowed to set session_replication_role).
* ``lock_tables_nowait``: the tables a load rebuilds, locked without waiting, or not at all.
* ``set_aside_constraints``: drop foreign keys, unique constraints and secondary indexes; returns the
  statements that restore them. PostgreSQL checks a foreign key row by row (about 10 µs each) and
  maintains every index row by row; restoring them checks and builds in one pass each.

All of it runs in the caller's transaction: an interrupted load rolls the dropped constraints back with
everything else, so nobody ever sees a table without them once the transaction is over. Nothing here
decides *whether* a load is large enough to be worth it; callers do, by their own measurements.

On SQLite the caller's transaction must hold the write lock from its start (BEGIN IMMEDIATE: the domain
import's batches, job generation's ``write_transaction``): a load reads before it writes, and a deferred
transaction that does so fails with "database is locked" whenever another writer committed in between.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from sqlalchemy import Connection, insert, text
from sqlalchemy.exc import DBAPIError, OperationalError

from harvestdef.db import schema as s
from harvestdef.db.engine import is_postgresql

# Rows per executemany where there is no COPY (SQLite).
EXECUTEMANY_BATCH = 10_000


def copy_rows(conn: Connection, table: str, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> int:
    """Write ``rows`` (tuples in ``columns`` order) into ``table``; returns how many were written.

    COPY on PostgreSQL, in the caller's transaction; executemany in batches elsewhere.
    """
    count = 0
    if is_postgresql(conn.engine):
        raw = conn.connection.driver_connection
        with raw.cursor() as cursor, cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
                count += 1
        return count
    target = s.metadata.tables[table]
    batch: list[dict[str, object]] = []
    for row in rows:
        batch.append(dict(zip(columns, row, strict=True)))
        if len(batch) >= EXECUTEMANY_BATCH:
            conn.execute(insert(target), batch)
            count += len(batch)
            batch = []
    if batch:
        conn.execute(insert(target), batch)
        count += len(batch)
    return count


def copy_text(conn: Connection, table: str, columns: Sequence[str], chunks: Iterable[str]) -> None:
    """COPY already formatted text (tab-separated lines) into ``table``: the cheapest path for generated data."""
    raw = conn.connection.driver_connection
    with raw.cursor() as cursor, cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for chunk in chunks:
            copy.write(chunk)


# PostgreSQL's binary COPY: signature, flags, header extension length; the trailer ends the rows.
_BINARY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
_BINARY_TRAILER = b"\xff\xff"


def copy_integers(conn: Connection, table: str, columns: Sequence[str],
                  batches: Iterable[Sequence[np.ndarray]]) -> int:
    """COPY rows of bigint columns without NULLs into ``table`` (PostgreSQL), each batch a column array per
    column; returns how many rows were written.

    The rows go in PostgreSQL's binary format, laid out by numpy a batch at a time (per row: the field
    count, then each field's length and big-endian value): no per-row Python, and no text for the server to
    parse, for the millions of two-integer rows of a national snapshot's job_configs.
    """
    layout = np.dtype([("fields", ">i2")] + [item for position in range(len(columns))
                                              for item in ((f"length{position}", ">i4"), (f"value{position}", ">i8"))])
    count = 0
    raw = conn.connection.driver_connection
    with raw.cursor() as cursor, \
            cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT binary)") as copy:
        copy.write(_BINARY_HEADER)
        for arrays in batches:
            rows = np.empty(len(arrays[0]), dtype=layout)
            rows["fields"] = len(columns)
            for position, values in enumerate(arrays):
                rows[f"length{position}"] = 8
                rows[f"value{position}"] = values
            copy.write(rows.tobytes())
            count += len(rows)
        copy.write(_BINARY_TRAILER)
    return count


def skip_foreign_key_checks(conn: Connection) -> bool:
    """Turn the foreign-key triggers off for this transaction; False, and nothing changed, if the role
    may not (then drop and restore the foreign keys instead: ``set_aside_constraints``)."""
    try:
        with conn.begin_nested():
            conn.execute(text("SET LOCAL session_replication_role = replica"))
    except DBAPIError:
        return False
    return True


def lock_tables_nowait(conn: Connection, locks: Sequence[tuple[str, str]]) -> bool:
    """Take every (table, lock mode) now, or none of them: False if any table is busy.

    NOWAIT inside a savepoint: a load never waits while holding one of its locks, so it cannot deadlock
    with a transaction that takes the same tables in another order, and a caller that must not stall
    (the scheduler's tick) falls back to a slower load with the constraints in place.
    """
    savepoint = conn.begin_nested()
    try:
        for table, mode in locks:
            conn.execute(text(f"LOCK TABLE {table} IN {mode} MODE NOWAIT"))
    except OperationalError:
        savepoint.rollback()
        return False
    savepoint.commit()
    return True


def set_aside_constraints(conn: Connection, tables: Sequence[str], *, foreign_keys: bool = True,
                          unique: bool = True, indexes: bool = True) -> list[str]:
    """Drop the foreign keys, unique constraints and secondary indexes of ``tables`` (each kind if asked);
    returns the statements that restore them, in the order they must run.

    Primary keys stay: other tables' foreign keys point at them. Restoring builds indexes first, then
    unique constraints, then foreign keys, which may need the unique keys they reference; dropping goes
    the other way round. The caller holds locks that keep others off the tables until it restores.
    """
    if not tables:
        return []
    conn.execute(text("SET LOCAL maintenance_work_mem = '512MB'"))
    relations = ", ".join(f"CAST('{table}' AS regclass)" for table in tables)
    kinds = [kind for kind, wanted in (("f", foreign_keys), ("u", unique)) if wanted]
    constraints = []
    if kinds:
        constraints = conn.execute(text(
            f"SELECT conrelid::regclass::text, quote_ident(conname), pg_get_constraintdef(oid), contype "
            f"FROM pg_constraint WHERE conrelid IN ({relations}) AND contype = ANY(:kinds) "
            f"ORDER BY contype DESC, conrelid::regclass::text, conname"), {"kinds": kinds}).all()
    secondary = []
    if indexes:
        secondary = conn.execute(text(
            f"SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index i "
            f"WHERE indrelid IN ({relations}) AND NOT indisprimary "
            f"AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid) "
            f"ORDER BY indexrelid::regclass::text")).all()
    # 'u' sorts before 'f' in DESC order: unique constraints first in the list, so foreign keys are
    # dropped first (reversed) and restored last.
    for table, name, _definition, _kind in reversed(constraints):
        conn.execute(text(f"ALTER TABLE {table} DROP CONSTRAINT {name}"))
    restore = []
    for name, definition in secondary:
        conn.execute(text(f"DROP INDEX {name}"))
        restore.append(definition)
    restore.extend(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}"
                   for table, name, definition, _kind in constraints)
    return restore


def restore_constraints(conn: Connection, statements: Iterable[str]) -> None:
    """Run what ``set_aside_constraints`` returned: every restored foreign key is checked in one pass."""
    for statement in statements:
        conn.execute(text(statement))


@contextmanager
def constraints_set_aside(conn: Connection, tables: Sequence[str], *, foreign_keys: bool = True,
                          unique: bool = True, indexes: bool = True) -> Iterator[None]:
    """``set_aside_constraints`` for the body of a with-block, restored when it ends without error (on an
    error the caller's transaction rolls the drops back)."""
    restore = set_aside_constraints(conn, tables, foreign_keys=foreign_keys, unique=unique, indexes=indexes)
    yield
    restore_constraints(conn, restore)
