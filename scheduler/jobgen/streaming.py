"""Streaming a query's rows as plain tuples, batch by batch, without holding the result in memory.

On PostgreSQL the compiled statement runs on a psycopg server-side (named) cursor in the caller's
transaction, and rows come back as psycopg's tuples: for the millions of rows of a national snapshot that
is several times cheaper than SQLAlchemy's Row objects. Elsewhere SQLAlchemy streams with ``yield_per``.
Only for queries whose selected columns need no SQLAlchemy type processing (integers, text, booleans).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.sql import Select

from harvestdef.db.engine import is_postgresql

_cursor_numbers = itertools.count(1)


def stream_rows(conn: Connection, query: Select, batch_size: int = 10_000) -> Iterator[tuple[Any, ...]]:
    """Yield the rows of ``query`` as tuples; the cursor is closed when the iteration ends or is abandoned."""
    if is_postgresql(conn.engine):
        compiled = query.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
        raw = conn.connection.driver_connection
        with raw.cursor(name=f"jobgen_stream_{next(_cursor_numbers)}") as cursor:
            cursor.itersize = batch_size
            cursor.execute(str(compiled), compiled.params)
            while True:
                rows = cursor.fetchmany(batch_size)
                if not rows:
                    return
                yield from rows
    result = conn.execute(query, execution_options={"stream_results": True, "yield_per": batch_size})
    try:
        for row in result:
            yield tuple(row)
    finally:
        result.close()
