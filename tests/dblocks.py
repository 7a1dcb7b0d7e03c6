"""Another writer holding the harvest database, for the tests of what waits for it and what does not."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, text


@contextmanager
def sqlite_write_lock(database: str | Path) -> Iterator[None]:
    """Another connection holds the SQLite write lock of the file ``database`` until the block ends (reads go
    on beside it)."""
    holder = sqlite3.connect(database, isolation_level=None, timeout=60)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield
    finally:
        holder.rollback()
        holder.close()


@contextmanager
def writers_held(engine: Engine, *tables: str) -> Iterator[None]:
    """Every other writer waits until the block ends: SQLite's write lock, or PostgreSQL's EXCLUSIVE lock on
    ``tables`` (``domains`` when none is named; reads go on beside either)."""
    if engine.dialect.name == "sqlite":
        assert engine.url.database
        with sqlite_write_lock(engine.url.database):
            yield
        return
    with engine.begin() as conn:
        conn.execute(text(f"LOCK TABLE {', '.join(tables or ('domains',))} IN EXCLUSIVE MODE"))
        yield
