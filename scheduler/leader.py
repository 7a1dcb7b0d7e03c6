"""Only one scheduler acts on a harvest database at a time.

PostgreSQL: a session advisory lock held on a connection of its own. The server drops it the moment that
session ends: at once when the process dies (its socket closes), and within about half a minute when
its machine vanishes, because the session asks the server for TCP keepalives (15 s idle, 5 s apart,
3 probes) instead of the operating system's two hours.

SQLite: the row ``scheduler`` of scheduler_lock, with a lease the holder renews (``renew``) well inside
leaderLeaseTime; a second scheduler takes the row over once the lease has run out.

A renewal that fails because the database does not answer (another writer holds SQLite's write lock,
PostgreSQL cancels or times out the statement) loses nothing yet: the lease written at the last renewal
still keeps every other scheduler out, so the holder stays the leader and tries again at the next
renewal, until that lease has really run out (measured on this process's monotonic clock from when the
renewal that wrote it had the write lock, read before the row's expiry is computed, so it ends here no
later than in the row). Only then, or when the lock is
gone for certain (the row names another holder; PostgreSQL's session that held it has ended), is the
leadership lost. On SQLite a renewal waits for the write lock no longer than the lease has left.

Fencing (PostgreSQL): a leader cut off from the database may still have a transaction open there, or
start one the moment the network returns, before its next renewal finds the lock gone. So every
transaction of the scheduler's engine (``install_fence``) first takes a shared advisory lock, the fence,
and checks that the leader's lock is still held by the session that took it (by its backend pid); a
transaction that finds it gone raises FencedOut and changes nothing. A scheduler that takes the lock
takes the fence exclusively once before it acts, which waits for every transaction of the old leader
that passed the check to end: the old leader's last write comes before the new leader's first. The
server ends a vanished machine's sessions within about 30 s (harvestdef.db.engine: keepalives), so the
wait is bounded; a wait longer than the lock timeout gives the lock back, to try again. On SQLite the
lease is the fence: the file is on one machine, and the row is taken over only after it has run out.

A waiting scheduler calls ``try_acquire`` now and then (``SchedulerService`` does so every few seconds),
so it takes over within a minute of the first one's death.

The lock is the database's own locking, not a definition or a job's state: this module takes it with
direct statements (the advisory lock's functions, the scheduler_lock row), unaudited, and no repository
holds it. Their errors become DatabaseError in ``database_errors``, which is what this module catches:
a database that cannot be asked means "not the leader" (or, while the lease lasts, "still the leader"),
never a crash.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import Connection, Engine, delete, event, insert, select, text, update

from harvestdef.db import schema as s
from harvestdef.db.engine import is_postgresql, write_transaction
from harvestdef.db.types import utcnow
from harvestdef.errors import DatabaseError, HarvestSuiteError
from harvestdef.repositories.base import database_errors

log = logging.getLogger(__name__)

# Any constant will do, as long as only the scheduler's leadership uses it.
_ADVISORY_KEY = 0x68736C656164  # "hslead"
_FENCE_KEY = 0x6873666E6365  # "hsfnce"
_ROW = "scheduler"
# An execution option of the lock's own connections, which the fence lets through.
UNFENCED = "harvestsuite_unfenced"
_HELD_BY = ("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = {pid} "
            "AND objid = :low AND classid = :high AND granted")
_KEY_PARTS = {"low": _ADVISORY_KEY & 0xFFFFFFFF, "high": _ADVISORY_KEY >> 32}


class FencedOut(HarvestSuiteError):
    """A transaction of a scheduler that no longer leads: refused before it changed anything."""


class LeaderLock:
    """The scheduler's leadership of one harvest database."""

    def __init__(self, engine: Engine, lease_seconds: int = 60, holder: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        # the lock's own work passes the fence: it is what the fence checks
        self.engine = engine.execution_options(**{UNFENCED: True})
        self.lease = timedelta(seconds=lease_seconds)
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.clock = clock
        self._connection: Connection | None = None
        self._held = False
        self._lease_ends = 0.0  # on ``clock``: when the lease of the last successful take or renewal runs out
        self._taken_at = 0.0  # on ``clock``: the moment the lease of the take or renewal under way counts from
        self._renewal_failing = False
        # the last try_acquire could not ask the database (rather than finding the lock held by another)
        self.is_unanswered = False
        # PostgreSQL: the backend pid of the session holding the lock, which fenced transactions look for
        self.lock_pid: int | None = None
        self._follows = False  # an intake process of the leader: fenced by its pid, leads nothing itself

    # ------------------------------------------------------------------ the fence
    def install_fence(self, engine: Engine) -> None:
        """Fence every transaction of ``engine`` (PostgreSQL; a no-op on SQLite) until ``remove_fence``:
        each checks first that this scheduler leads, or raises FencedOut."""
        if is_postgresql(engine) and not event.contains(engine, "begin", self._fence):
            event.listen(engine, "begin", self._fence)

    def remove_fence(self, engine: Engine) -> None:
        if event.contains(engine, "begin", self._fence):
            event.remove(engine, "begin", self._fence)

    def follow(self, lock_pid: int) -> None:
        """Fence this process's transactions by the leader's lock session ``lock_pid`` (an intake process
        the leader started, which holds no lock of its own)."""
        self.lock_pid = lock_pid
        self._follows = True

    def _fence(self, conn: Connection) -> None:
        if conn.get_execution_options().get(UNFENCED):
            return
        pid = self.lock_pid
        if pid is None or not (self._follows or self.is_held):
            raise FencedOut("this scheduler does not lead now: it changes nothing in the harvest database")
        conn.execute(text("SELECT pg_advisory_xact_lock_shared(:key)"), {"key": _FENCE_KEY})
        if not conn.scalar(text(_HELD_BY.format(pid=int(pid))), _KEY_PARTS):
            raise FencedOut(f"the scheduler lock is no longer held by this scheduler's session (backend {pid}): "
                            "another scheduler may lead; nothing was changed")

    @property
    def is_held(self) -> bool:
        """Whether this scheduler leads now: it took the lock and its lease has not run out."""
        return self._held and self.clock() < self._lease_ends

    def lease_left(self) -> float:
        """Seconds the lease written last still lasts (0 when not held)."""
        return max(0.0, self._lease_ends - self.clock()) if self._held else 0.0

    def try_acquire(self) -> bool:
        """Take the lock if nobody holds it; True while we hold it."""
        if self._held:
            return self.renew()
        self._taken_at = self.clock()  # SQLite moves it on to when the write lock was had
        try:
            with database_errors("taking the scheduler lock"):
                self._held = self._acquire_postgresql() if is_postgresql(self.engine) else self._acquire_sqlite()
        except DatabaseError as exc:
            if not self.is_unanswered:  # once, until the database answers again
                log.warning("could not try the scheduler lock: %s", exc)
            self._close_connection()
            self._held = False
            self.is_unanswered = True
        else:
            self.is_unanswered = False
        if self._held:
            self._lease_ends = self._taken_at + self.lease.total_seconds()
            self._renewal_failing = False
            log.info("scheduler %s is now the leader", self.holder)
        return self._held

    def renew(self) -> bool:
        """Keep the lock; True while this scheduler still leads. A renewal the database could not answer
        keeps the leadership until the lease written last runs out (module docstring); False (and no
        longer held) once it has, or when the lock is gone for certain."""
        if not self._held:
            return False
        self._taken_at = self.clock()  # SQLite moves it on to when the write lock was had
        left = self._lease_ends - self._taken_at
        if left <= 0:
            return self._lose(f"its lease of {self.lease.total_seconds():g} s ran out without a renewal")
        try:
            with database_errors("renewing the scheduler lock"):
                renewed = self._renew_postgresql() if is_postgresql(self.engine) else self._renew_sqlite(left)
        except DatabaseError as exc:
            if self._connection is not None and self._connection.invalidated:
                # PostgreSQL: the session that held the advisory lock has ended, and the lock with it
                return self._lose(f"its database session ended ({exc})")
            left = self._lease_ends - self.clock()
            if left <= 0:
                return self._lose(f"the database did not answer until its lease ran out ({exc})")
            if not self._renewal_failing:
                log.warning("scheduler %s could not renew its lock (%s); still the leader for %.1f s, while its "
                            "lease lasts, and trying again", self.holder, exc, left)
            self._renewal_failing = True
            return True
        if not renewed:
            return self._lose("another scheduler holds it now")
        self._lease_ends = self._taken_at + self.lease.total_seconds()
        if self._renewal_failing:
            log.warning("scheduler %s renewed its lock again; still the leader", self.holder)
            self._renewal_failing = False
        return True

    def _lose(self, why: str) -> bool:
        log.error("scheduler %s lost its lock: %s; it is no longer the leader", self.holder, why)
        self._held = False
        self._renewal_failing = False
        self._close_connection()
        return False

    def _renew_postgresql(self) -> bool:
        """Whether this session still holds the advisory lock (a session that ended has lost it)."""
        assert self._connection is not None
        return bool(self._connection.scalar(text(_HELD_BY.format(pid="pg_backend_pid()")), _KEY_PARTS))

    def _renew_sqlite(self, left: float) -> bool:
        """Push the row's expiry on, waiting for the write lock no longer than the lease has ``left``."""
        with self.engine.connect() as conn:
            previous = conn.exec_driver_sql("PRAGMA busy_timeout").scalar()
            conn.exec_driver_sql(f"PRAGMA busy_timeout = {max(1, int(left * 1000))}")
            try:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                try:
                    # both leases count from when the write lock was ours, the one here read first: it never
                    # ends later than the row's
                    self._taken_at = self.clock()
                    renewed = conn.execute(update(s.scheduler_lock).where(
                        s.scheduler_lock.c.name == _ROW, s.scheduler_lock.c.holder == self.holder)
                        .values(expires_at=utcnow() + self.lease)).rowcount == 1
                except BaseException:
                    conn.rollback()
                    raise
                conn.commit()
            finally:
                conn.exec_driver_sql(f"PRAGMA busy_timeout = {int(previous)}")
                conn.commit()
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
                # advisory locks are per database: another installation's scheduler on the server is not ours
                held = conn.scalar(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = :low "
                                        "AND classid = :high AND granted AND database = (SELECT oid FROM "
                                        "pg_database WHERE datname = current_database())"),
                                   {"low": _ADVISORY_KEY & 0xFFFFFFFF, "high": _ADVISORY_KEY >> 32})
                return "a PostgreSQL session" if held else None
            row = conn.execute(select(s.scheduler_lock).where(s.scheduler_lock.c.name == _ROW)).first()
            return row.holder if row is not None and row.expires_at > utcnow() else None

    def _acquire_postgresql(self) -> bool:
        if self._connection is None:
            # its keepalives (harvestdef.db.engine) let the server end it soon after this machine vanished
            self._connection = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        got = bool(self._connection.scalar(text("SELECT pg_try_advisory_lock(:key)"), {"key": _ADVISORY_KEY}))
        if not got:
            self._close_connection()
            return False
        try:
            # the old leader's fenced transactions that passed their check end before this one acts
            self._connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _FENCE_KEY})
            self._connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _FENCE_KEY})
            # the lease counts from now: the wait for the fence must not use it up
            self._taken_at = self.clock()
            self.lock_pid = int(self._connection.scalar(text("SELECT pg_backend_pid()")))
        except BaseException:
            log.warning("took the scheduler lock, but a transaction of the scheduler before is still open; "
                        "giving the lock back to try again")
            self._close_connection()  # the session ends, and its advisory locks with it
            raise
        return True

    def _acquire_sqlite(self) -> bool:
        lock = s.scheduler_lock
        with write_transaction(self.engine) as conn:
            # the lease counts from when the write lock was ours (a wait for it must not shorten the lease,
            # nor let the row be written expired already), on this process's clock read first
            self._taken_at = self.clock()
            now = utcnow()
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
