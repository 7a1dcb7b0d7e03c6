"""Opening the harvest database: one SQLAlchemy engine per process, the same code for PostgreSQL and SQLite.

SQLite runs in WAL mode with foreign keys on and a busy timeout, so the embedded default's threads
(scheduler, controller, web UI) can share the file. A statement waits for a lock that another writer
holds at most ``lock_timeout`` seconds (harvestsuite.database.lockTimeout: SQLite's busy timeout,
PostgreSQL's lock_timeout), then fails; the callers tell it as "the database is busy"
(harvestdef.db.availability). Every PostgreSQL session asks the server for TCP keepalives (15 s idle,
5 s apart, 3 probes), so the server ends the sessions of a machine that vanished within about 30 s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, Table, create_engine, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url

from harvestdef.settings import DatabaseSettings
from harvestdef.sqlitewal import use_wal

# keepalives for an idle session; tcp_user_timeout (ms) for one whose answer is still unacknowledged when
# the client vanished, where keepalives never start and retransmissions would go on for a quarter of an hour
_KEEPALIVES = (("tcp_keepalives_idle", 15), ("tcp_keepalives_interval", 5), ("tcp_keepalives_count", 3),
               ("tcp_user_timeout", 30000))


def is_postgresql(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"


def open_engine(url: str, echo: bool = False, lock_timeout: float = 30.0) -> Engine:
    """An engine for ``url``; on SQLite with WAL, foreign keys and a busy timeout. A statement waits at most
    ``lock_timeout`` seconds for a lock another writer holds."""
    if lock_timeout <= 0:
        raise ValueError(f"lock_timeout: seconds, more than 0, got {lock_timeout}")
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(url, echo=echo, connect_args={"timeout": lock_timeout})
        event.listen(engine, "connect", lambda connection, _record: _sqlite_pragmas(connection, lock_timeout))
        return engine
    # No ping before every checkout: it costs a round trip per transaction, as much as the commit. A
    # connection the server dropped fails its statement once; SQLAlchemy then discards the whole pool, and
    # the callers retry (the scheduler returns the message to its queue).
    engine = create_engine(url, echo=echo, pool_recycle=3600)
    milliseconds = max(1, int(lock_timeout * 1000))

    def _lock_timeout(dbapi_connection: Any, _record: Any) -> None:
        # a session setting rather than the URL's ``options``, which the URL may use for its own (search_path)
        autocommit = dbapi_connection.autocommit
        dbapi_connection.autocommit = True
        try:
            dbapi_connection.execute(f"SET lock_timeout = {milliseconds}")
            # The server asks a silent client every 5 s after 15 s idle and ends the session after 3
            # unanswered: a session whose machine vanished mid-transaction then lets go of its row and
            # advisory locks within about half a minute, not the operating system's two hours.
            for name, value in _KEEPALIVES:
                dbapi_connection.execute(f"SET {name} = {value}")
        finally:
            dbapi_connection.autocommit = autocommit

    event.listen(engine, "connect", _lock_timeout)
    return engine


def engine_from_settings(settings: DatabaseSettings) -> Engine:
    return open_engine(settings.url, echo=settings.echo, lock_timeout=settings.lockTimeout)


def _sqlite_pragmas(dbapi_connection: Any, lock_timeout: float) -> None:
    use_wal(dbapi_connection, lock_timeout)
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction that writes, committed when the block ends and rolled back if it raises.

    On SQLite it takes the write lock at its start (BEGIN IMMEDIATE): a transaction that first reads and
    then writes would otherwise fail at its first write whenever another writer committed after its read
    (WAL's stale snapshot), and two job generations reading max(job_id) at once would collide on job ids.
    Other writers wait for the lock (the busy timeout). On PostgreSQL it is an ordinary transaction.
    """
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.rollback()
            raise
        conn.commit()


def upsert(conn: Connection, table: Table, key: Sequence[str], rows: Sequence[Mapping[str, Any]],
           set_: Callable[[Any], Mapping[str, Any]] | None = None) -> None:
    """INSERT … ON CONFLICT (key) DO UPDATE, the same statement on PostgreSQL and SQLite.

    ``set_`` receives the ``excluded`` row and returns the columns to update; by default every column of
    the rows that is not part of the key takes the new value.
    """
    if not rows:
        return
    dialect = postgresql if is_postgresql(conn.engine) else sqlite
    statement = dialect.insert(table)
    if set_ is None:
        values = {name: statement.excluded[name] for name in rows[0] if name not in key}
    else:
        values = dict(set_(statement.excluded))
    conn.execute(statement.on_conflict_do_update(index_elements=list(key), set_=values), list(rows))
