"""Opening the harvest database: one SQLAlchemy engine per process, the same code for PostgreSQL and SQLite.

SQLite runs in WAL mode with foreign keys on and a busy timeout, so the embedded default's threads
(scheduler, controller, web UI) can share the file.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from harvestdef.settings import DatabaseSettings


def is_postgresql(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"


def open_engine(url: str, echo: bool = False) -> Engine:
    """An engine for ``url``; on SQLite with WAL, foreign keys and a busy timeout."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(url, echo=echo, connect_args={"timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, echo=echo, pool_pre_ping=True)


def engine_from_settings(settings: DatabaseSettings) -> Engine:
    return open_engine(settings.url, echo=settings.echo)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()
