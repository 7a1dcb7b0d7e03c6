"""Streaming a query's rows as plain tuples, batch by batch, without holding the result in memory.

On PostgreSQL the compiled statement runs in the caller's transaction in libpq's chunked-rows mode
(psycopg's ``Cursor.stream`` with a chunk size): the server sends the result as fast as the client reads
it, so it makes the next rows while the client works on these (a server-side cursor would idle between
FETCHes), and rows come back as psycopg's tuples, several times cheaper than SQLAlchemy's Row objects for
the millions of rows of a national snapshot. Values travel in binary. Elsewhere SQLAlchemy streams with
``yield_per``. Only for queries whose selected columns need no SQLAlchemy type processing (integers, text,
booleans).

While a stream is open the connection runs nothing else; an abandoned stream is closed here, which cancels
the query and drains what was sent, so the transaction can go on or roll back.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.sql import Select

from harvestdef.db.engine import is_postgresql


def stream_batches(conn: Connection, query: Select, batch_size: int = 10_000) -> Iterator[list[tuple[Any, ...]]]:
    """Yield the rows of ``query`` as lists of up to ``batch_size`` tuples, never an empty one; the query is
    ended when the iteration ends or is abandoned."""
    if not is_postgresql(conn.engine):
        result = conn.execute(query, execution_options={"stream_results": True, "yield_per": batch_size})
        try:
            for partition in result.partitions():
                yield [tuple(row) for row in partition]
        finally:
            result.close()
        return
    compiled = query.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    with conn.connection.driver_connection.cursor(binary=True) as cursor:
        rows = cursor.stream(str(compiled), compiled.params, size=batch_size)
        try:
            while batch := list(itertools.islice(rows, batch_size)):
                yield batch
        finally:
            rows.close()


def stream_rows(conn: Connection, query: Select, batch_size: int = 10_000) -> Iterator[tuple[Any, ...]]:
    """Yield the rows of ``query`` as tuples, one by one (``stream_batches``, flattened)."""
    for rows in stream_batches(conn, query, batch_size):
        yield from rows
