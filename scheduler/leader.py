"""Only one scheduler acts on a harvest database at a time.

PostgreSQL: a session advisory lock held on a connection of its own. The server drops it the moment that
session ends: at once when the process dies (its socket closes), and within about half a minute when
its machine vanishes, because the session asks the server for TCP keepalives (15 s idle, 5 s apart,
3 probes) instead of the operating system's two hours.

SQLite: the row ``scheduler`` of scheduler_lock, with a lease the holder renews (``renew``) well inside
leaderLeaseTime; a second scheduler takes the row over once the lease has run out.

A waiting scheduler calls ``try_acquire`` now and then (``SchedulerService`` does so every few seconds),
so it takes over within a minute of the first one's death.

The lock is the database's own locking, not a definition or a job's state: this module takes it with
direct statements (the advisory lock's functions, the scheduler_lock row), unaudited, and no repository
holds it. Their errors become DatabaseError in ``database_errors``, which is what this module catches:
a database that cannot be asked means "not the leader", never a crash.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import uuid
from datetime import timedelta

from sqlalchemy import Connection, Engine, delete, insert, select, text, update

from harvestdef.db import schema as s
from harvestdef.db.engine import is_postgresql, write_transaction
from harvestdef.db.types import utcnow
from harvestdef.errors import DatabaseError
from harvestdef.repositories.base import database_errors

log = logging.getLogger(__name__)

# Any constant will do, as long as only the scheduler's leadership uses it.
_ADVISORY_KEY = 0x68736C656164  # "hslead"
_ROW = "scheduler"


class LeaderLock:
    """The scheduler's leadership of one harvest database."""

    def __init__(self, engine: Engine, lease_seconds: int = 60, holder: str | None = None) -> None:
        self.engine = engine
        self.lease = timedelta(seconds=lease_seconds)
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._connection: Connection | None = None
        self._held = False

    @property
    def is_held(self) -> bool:
        return self._held

    def try_acquire(self) -> bool:
        """Take the lock if nobody holds it; True while we hold it."""
        if self._held:
            return self.renew()
        try:
            with database_errors("taking the scheduler lock"):
                self._held = self._acquire_postgresql() if is_postgresql(self.engine) else self._acquire_sqlite()
        except DatabaseError as exc:
            log.warning("could not try the scheduler lock: %s", exc)
            self._close_connection()
            self._held = False
        if self._held:
            log.info("scheduler %s is now the leader", self.holder)
        return self._held

    def renew(self) -> bool:
        """Keep the lock; False (and no longer held) if it was lost."""
        if not self._held:
            return False
        try:
            with database_errors("renewing the scheduler lock"):
                if is_postgresql(self.engine):
                    assert self._connection is not None
                    self._connection.execute(text("SELECT 1"))
                    return True
                now = utcnow()
                with write_transaction(self.engine) as conn:
                    renewed = conn.execute(update(s.scheduler_lock).where(
                        s.scheduler_lock.c.name == _ROW, s.scheduler_lock.c.holder == self.holder)
                        .values(expires_at=now + self.lease)).rowcount == 1
        except DatabaseError as exc:
            log.error("scheduler %s lost its lock: %s", self.holder, exc)
            renewed = False
        if not renewed:
            log.error("scheduler %s is no longer the leader", self.holder)
            self._held = False
            self._close_connection()
        return renewed

    def release(self) -> None:
        if not self._held:
            return
        self._held = False
        try:
            with database_errors("releasing the scheduler lock"):
                if is_postgresql(self.engine):
                    if self._connection is not None:
                        self._connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _ADVISORY_KEY})
                else:
                    with write_transaction(self.engine) as conn:
                        conn.execute(delete(s.scheduler_lock).where(s.scheduler_lock.c.name == _ROW,
                                                                    s.scheduler_lock.c.holder == self.holder))
        except DatabaseError as exc:
            log.warning("releasing the scheduler lock: %s", exc)
        finally:
            self._close_connection()

    def current_holder(self) -> str | None:
        """Who holds the lock (SQLite), or whether somebody does (PostgreSQL: "a PostgreSQL session")."""
        with self.engine.connect() as conn:
            if is_postgresql(self.engine):
                held = conn.scalar(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = :low "
                                        "AND classid = :high AND granted"),
                                   {"low": _ADVISORY_KEY & 0xFFFFFFFF, "high": _ADVISORY_KEY >> 32})
                return "a PostgreSQL session" if held else None
            row = conn.execute(select(s.scheduler_lock).where(s.scheduler_lock.c.name == _ROW)).first()
            return row.holder if row is not None and row.expires_at > utcnow() else None

    def _acquire_postgresql(self) -> bool:
        if self._connection is None:
            self._connection = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            for name, value in (("tcp_keepalives_idle", 15), ("tcp_keepalives_interval", 5),
                                ("tcp_keepalives_count", 3)):
                self._connection.execute(text(f"SET {name} = {value}"))
        got = bool(self._connection.scalar(text("SELECT pg_try_advisory_lock(:key)"), {"key": _ADVISORY_KEY}))
        if not got:
            self._close_connection()
        return got

    def _acquire_sqlite(self) -> bool:
        now = utcnow()
        lock = s.scheduler_lock
        with write_transaction(self.engine) as conn:
            row = conn.execute(select(lock).where(lock.c.name == _ROW)).first()
            if row is None:
                # BEGIN IMMEDIATE holds the write lock since the read, so nobody inserted meanwhile; OR IGNORE
                # makes sure a row that is there anyway means "not ours", not an error
                return conn.execute(insert(lock).prefix_with("OR IGNORE").values(
                    name=_ROW, holder=self.holder, acquired_at=now, expires_at=now + self.lease)).rowcount == 1
            if row.holder != self.holder and row.expires_at > now:
                return False
            if row.holder != self.holder:
                log.warning("scheduler lock of %s expired at %s; taking over", row.holder, row.expires_at)
            conn.execute(update(lock).where(lock.c.name == _ROW).values(
                holder=self.holder, acquired_at=now, expires_at=now + self.lease))
            return True

    def _close_connection(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(DatabaseError), database_errors("closing the scheduler lock's connection"):
                self._connection.close()
            self._connection = None
