"""Streaming a query's rows as plain tuples, batch by batch, without holding the result in memory.

On PostgreSQL the compiled statement runs on a psycopg server-side (named) cursor in the caller's
transaction, and rows come back as psycopg's tuples: for the millions of rows of a national snapshot that
is several times cheaper than SQLAlchemy's Row objects. Elsewhere SQLAlchemy streams with ``yield_per``.
Only for queries whose selected columns need no SQLAlchemy type processing (integers, text, booleans).

With ``prefetch`` the PostgreSQL cursor is read by a thread of its own, one batch ahead of the caller: the
server makes the next batch while the caller works on this one (a named cursor otherwise idles between
FETCHes), which for a national snapshot overlaps most of the database's work with the client's. The thread
waits on the socket without the GIL; psycopg serialises the connection's use.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.sql import Select

from harvestdef.db.engine import is_postgresql

_cursor_numbers = itertools.count(1)
_END = object()


def stream_batches(conn: Connection, query: Select, batch_size: int = 10_000,
                   prefetch: bool = False) -> Iterator[list[tuple[Any, ...]]]:
    """Yield the rows of ``query`` as lists of up to ``batch_size`` tuples, never an empty one; the cursor is
    closed when the iteration ends or is abandoned."""
    if not is_postgresql(conn.engine):
        result = conn.execute(query, execution_options={"stream_results": True, "yield_per": batch_size})
        try:
            for partition in result.partitions():
                yield [tuple(row) for row in partition]
        finally:
            result.close()
        return
    compiled = query.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    batches = _fetched(conn.connection.driver_connection, str(compiled), compiled.params, batch_size)
    if prefetch:
        yield from _ahead(batches)
    else:
        yield from batches


def _fetched(raw: Any, statement: str, params: Any, batch_size: int) -> Iterator[list[tuple[Any, ...]]]:
    with raw.cursor(name=f"jobgen_stream_{next(_cursor_numbers)}") as cursor:
        cursor.itersize = batch_size
        cursor.execute(statement, params)
        while True:
            rows = cursor.fetchmany(batch_size)
            if not rows:
                return
            yield rows


def _ahead(batches: Iterator[list[tuple[Any, ...]]]) -> Iterator[list[tuple[Any, ...]]]:
    """The batches, each fetched by a thread while the caller works on the one before."""
    ready: queue.Queue[Any] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def fetch() -> None:
        try:
            for rows in batches:
                while not stop.is_set():
                    try:
                        ready.put(rows, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    break
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread, which raises it
            ready.put(exc)
            return
        finally:
            batches.close()  # the cursor is closed by the thread that used it
        ready.put(_END)

    fetcher = threading.Thread(target=fetch, name="jobgen-prefetch", daemon=True)
    fetcher.start()
    try:
        while True:
            item = ready.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while fetcher.is_alive():
            with contextlib.suppress(queue.Empty):
                ready.get(timeout=0.1)  # make room for a put the thread is waiting on
        fetcher.join()


def stream_rows(conn: Connection, query: Select, batch_size: int = 10_000) -> Iterator[tuple[Any, ...]]:
    """Yield the rows of ``query`` as tuples, one by one (``stream_batches``, flattened)."""
    for rows in stream_batches(conn, query, batch_size):
        yield from rows
