"""The embedded queue: durable queues in one SQLite file (``queue.db``), for an installation without RabbitMQ.

Every message is a row of ``messages``. Taking one leases it: in a ``BEGIN IMMEDIATE`` transaction (so
two takers, threads or processes, are serialised by SQLite's write lock and never take the same row) the
oldest row of the queue that nobody holds gets a fresh lease token, an owner (``host:pid``) and an expiry.
A row counts as not held when it has no lease, when its lease has expired (``leaseTimeout``, the embedded
counterpart of RabbitMQ's consumer_timeout), or when its owner is a process on this host that no longer
exists (the counterpart of a closed AMQP connection). ``ack`` deletes the row only while the caller's
token still holds it, so a consumer whose lease was taken over cannot remove the new holder's message.

This module must not be used for the harvest database: it owns its own file and nothing else.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harvestdef.errors import QueueError
from harvestdef.queues.base import (
    Delivery,
    Outgoing,
    PublishFailures,
    Transport,
    check_queue_name,
    checked_messages,
    dead_letter_headers,
)
from harvestdef.settings import QueueSettings
from harvestdef.sqlitewal import use_wal

log = logging.getLogger(__name__)

_HOST = socket.gethostname()

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        queue TEXT NOT NULL,
        body BLOB NOT NULL,
        headers TEXT NOT NULL,
        enqueued_at REAL NOT NULL,
        delivery_count INTEGER NOT NULL DEFAULT 0,
        lease_token TEXT,
        lease_owner TEXT,
        lease_until REAL
    )""",
    # FIFO per queue: the oldest available row is the first one in (queue, id) order.
    "CREATE INDEX IF NOT EXISTS messages_queue_id ON messages (queue, id)",
)

# A row is available when nobody holds it: no lease, an expired lease, or a lease of a dead local process
# (the JSON array parameter lists the dead owners found by _dead_owners).
_AVAILABLE = ("(lease_token IS NULL OR lease_until < :now "
              "OR lease_owner IN (SELECT value FROM json_each(:dead)))")

_INSERT_MESSAGE = "INSERT INTO messages (queue, body, headers, enqueued_at) VALUES (?, ?, ?, ?)"


def _headers_column(headers: Mapping[str, str] | None) -> str:
    """A message's headers as the JSON object the headers column holds, every key and value a string."""
    return json.dumps({str(key): str(value) for key, value in (headers or {}).items()})


@dataclass(frozen=True)
class _Lease:
    """What a SQLite Delivery carries: its row and the token of the lease it was handed out under."""

    row_id: int
    token: str


class _Wakeup:
    """Wakes receivers in this process when a message becomes available, so they need not wait for the
    next poll. Shared by every transport of the process on the same file."""

    _by_path: dict[str, _Wakeup] = {}
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.condition = threading.Condition()
        self.sequence = 0

    @classmethod
    def for_path(cls, path: str) -> _Wakeup:
        with cls._lock:
            return cls._by_path.setdefault(path, cls())

    def notify(self) -> None:
        with self.condition:
            self.sequence += 1
            self.condition.notify_all()

    def wait(self, seen: int, timeout: float) -> None:
        """Wait up to ``timeout`` unless something happened since the caller read ``sequence`` as ``seen``."""
        with self.condition:
            if self.sequence == seen:
                self.condition.wait(timeout)


def path_from_url(url: str) -> Path:
    """The file of ``sqlite:///relative/queue.db`` or ``sqlite:////absolute/queue.db``."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or len(url) == len(prefix):
        raise QueueError(f"not a SQLite queue URL: {url!r} (expected sqlite:///FILE or sqlite:////ABSOLUTE/FILE)")
    name = url[len(prefix):]
    if name == ":memory:":
        raise QueueError("the embedded queue needs a file: sqlite:///:memory: cannot be shared between threads")
    return Path(name)


class SqliteTransport(Transport):
    """Durable queues in one SQLite file, shared by the threads and processes that open it.

    :param path: the SQLite file; created with its table if missing.
    :param dead_letter_queue: where ``dead_letter`` puts messages.
    :param lease_timeout: seconds a delivered message stays with its consumer before it is handed out again.
    :param poll_interval: seconds between looks at an empty queue while ``receive`` waits (a publish from
        this process wakes the receiver at once).
    :param busy_timeout: seconds to wait for another process's write transaction.
    :param clock: the wall clock (seconds since the epoch) of leases; lease times are compared between
        processes, so it must be the real wall clock outside tests.
    """

    def __init__(self, path: str | os.PathLike[str], *, dead_letter_queue: str, lease_timeout: float = 1800.0,
                 poll_interval: float = 0.1, busy_timeout: float = 30.0,
                 clock: Callable[[], float] = time.time) -> None:
        check_queue_name(dead_letter_queue)
        self.path = Path(path)
        self.dead_letter_queue = dead_letter_queue
        self.lease_timeout = lease_timeout
        self.poll_interval = poll_interval
        self.busy_timeout = busy_timeout
        self._clock = clock
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._closed = False
        self._subscriptions: set[str] = set()
        self._wakeup = _Wakeup.for_path(str(self.path.resolve()))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._transaction() as conn:
                for statement in _SCHEMA:
                    conn.execute(statement)
        except (sqlite3.Error, OSError) as exc:
            self.close()
            raise QueueError(f"cannot open the queue file {self.path}: {exc}") from exc

    @classmethod
    def from_settings(cls, settings: QueueSettings, dead_letter_queue: str) -> SqliteTransport:
        return cls(path_from_url(settings.url), dead_letter_queue=dead_letter_queue,
                   lease_timeout=settings.leaseTimeout, poll_interval=settings.pollInterval / 1000.0)

    def __repr__(self) -> str:
        return f"SqliteTransport({str(self.path)!r})"

    # -- connections and transactions ---------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection (sqlite3 connections must not be shared by concurrent threads)."""
        if self._closed:
            raise QueueError(f"{self!r} is closed")
        conn = getattr(self._local, "connection", None)
        # A connection inherited over fork belongs to the parent; open a new one in the child.
        if conn is not None and self._local.pid == os.getpid():
            return conn
        try:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                                   check_same_thread=False)
            use_wal(conn, self.busy_timeout)
            # FULL, not NORMAL: with WAL, NORMAL already keeps a committed transaction across a crash of
            # the process (it is in the WAL file), but may lose the last ones to a power cut or a kernel
            # crash. A publish is the commit point of a dispatch (the job becomes SUBMITTED in the harvest
            # database only after it returns), so it must survive those too; the fsync per commit costs
            # about 0.15 ms on the test machine.
            conn.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as exc:
            raise QueueError(f"cannot open the queue file {self.path}: {exc}") from exc
        self._local.connection = conn
        self._local.pid = os.getpid()
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that holds SQLite's write lock from its start (``BEGIN IMMEDIATE``), so a
        read-then-lease cannot race with another taker."""
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @contextmanager
    def _translated(self, what: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise QueueError(f"{what} failed in {self.path}: {exc}") from exc

    def _owner(self) -> str:
        return f"{_HOST}:{os.getpid()}"

    def _dead_owners(self, conn: sqlite3.Connection, queue: str, now: float) -> str:
        """JSON array of the lease owners of ``queue`` that are processes of this host that have died."""
        dead = []
        for (owner,) in conn.execute(
                "SELECT DISTINCT lease_owner FROM messages WHERE queue = ? AND lease_token IS NOT NULL "
                "AND lease_until >= ?", (queue, now)):
            host, _, pid = (owner or "").rpartition(":")
            if host == _HOST and pid.isdigit() and not _process_exists(int(pid)):
                dead.append(owner)
        return json.dumps(dead)

    # -- the interface ------------------------------------------------------------------------------------

    def declare(self, queue: str) -> None:
        """Nothing to create: a queue is the set of rows with its name. Checks the name and the file."""
        check_queue_name(queue)
        self._connection()

    def publish(self, queue: str, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        check_queue_name(queue)
        with self._translated(f"publish to queue {queue!r}"), self._transaction() as conn:
            conn.execute(_INSERT_MESSAGE, (queue, bytes(body), _headers_column(headers), self._clock()))
        self._wakeup.notify()

    def publish_many(self, messages: Sequence[Outgoing]) -> None:
        """One transaction, one fsync, for all of them: all are confirmed or none is."""
        valid, failures = checked_messages(messages)
        rows = [(index, (queue, bytes(body), _headers_column(headers), self._clock()))
                for index, queue, body, headers in valid]
        if rows:
            try:
                with self._translated(f"publish of {len(rows)} messages"), self._transaction() as conn:
                    conn.executemany(_INSERT_MESSAGE, [row for _, row in rows])
            except QueueError as exc:
                failures.update((index, exc) for index, _ in rows)
            else:
                self._wakeup.notify()
        if failures:
            raise PublishFailures(failures, len(messages))

    def get(self, queue: str) -> Delivery | None:
        check_queue_name(queue)
        with self._translated(f"get from queue {queue!r}"):
            # A plain read first, so that receivers polling an empty queue do not take the write lock.
            (waiting,) = self._connection().execute(
                "SELECT EXISTS (SELECT 1 FROM messages WHERE queue = ?)", (queue,)).fetchone()
        if not waiting:
            return None
        now = self._clock()
        token = uuid.uuid4().hex
        with self._translated(f"get from queue {queue!r}"), self._transaction() as conn:
            row = conn.execute(
                f"SELECT id, body, headers, delivery_count FROM messages WHERE queue = :queue AND {_AVAILABLE} "
                "ORDER BY id LIMIT 1",
                {"queue": queue, "now": now, "dead": self._dead_owners(conn, queue, now)}).fetchone()
            if row is None:
                return None
            row_id, body, headers, delivery_count = row
            conn.execute("UPDATE messages SET lease_token = ?, lease_owner = ?, lease_until = ?, "
                         "delivery_count = delivery_count + 1 WHERE id = ?",
                         (token, self._owner(), now + self.lease_timeout, row_id))
        return Delivery(queue=queue, body=bytes(body), headers=json.loads(headers),
                        redelivered=delivery_count > 0, _handle=_Lease(row_id, token))

    def receive(self, queue: str, timeout: float) -> Delivery | None:
        """Polls every ``poll_interval`` (other processes' publishes) and wakes at once on a publish, nack
        or requeue of this process. Leases one message per call, whatever the prefetch."""
        check_queue_name(queue)
        self._subscriptions.add(queue)
        deadline = time.monotonic() + timeout
        while True:
            seen = self._wakeup.sequence
            delivery = self.get(queue)
            if delivery is not None:
                return delivery
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self._wakeup.wait(seen, min(self.poll_interval, remaining))

    def unsubscribe(self, queue: str) -> None:
        """Only bookkeeping: the embedded queue never holds messages that were not handed out."""
        self._subscriptions.discard(queue)

    def ack(self, delivery: Delivery) -> None:
        lease = self._lease(delivery)
        with self._translated(f"ack on queue {delivery.queue!r}"), self._transaction() as conn:
            deleted = conn.execute("DELETE FROM messages WHERE id = ? AND lease_token = ?",
                                   (lease.row_id, lease.token)).rowcount
        if not deleted:
            self._lease_lost("ack", delivery)

    def ack_many(self, deliveries: Sequence[Delivery]) -> None:
        """One transaction for all of them; a delivery whose lease was lost is logged, as ``ack`` does."""
        leases = [(delivery, self._lease(delivery)) for delivery in deliveries]
        if not leases:
            return
        lost = []
        with self._translated(f"ack of {len(leases)} messages"), self._transaction() as conn:
            for delivery, lease in leases:
                if not conn.execute("DELETE FROM messages WHERE id = ? AND lease_token = ?",
                                    (lease.row_id, lease.token)).rowcount:
                    lost.append(delivery)
        for delivery in lost:
            self._lease_lost("ack", delivery)

    def nack(self, delivery: Delivery, requeue: bool = True) -> None:
        lease = self._lease(delivery)
        with self._translated(f"nack on queue {delivery.queue!r}"), self._transaction() as conn:
            if requeue:
                changed = conn.execute(
                    "UPDATE messages SET lease_token = NULL, lease_owner = NULL, lease_until = NULL "
                    "WHERE id = ? AND lease_token = ?", (lease.row_id, lease.token)).rowcount
            else:
                changed = conn.execute("DELETE FROM messages WHERE id = ? AND lease_token = ?",
                                       (lease.row_id, lease.token)).rowcount
        if not changed:
            self._lease_lost("nack", delivery)
        elif requeue:
            self._wakeup.notify()

    def dead_letter(self, delivery: Delivery, reason: str) -> None:
        """Moves the row in one transaction: the copy appears in the dead-letter queue exactly when the
        original goes. If the lease was lost meanwhile, nothing happens: the new holder decides."""
        lease = self._lease(delivery)
        headers = dead_letter_headers(delivery, reason)
        with self._translated(f"dead-lettering a message of queue {delivery.queue!r}"), \
                self._transaction() as conn:
            deleted = conn.execute("DELETE FROM messages WHERE id = ? AND lease_token = ?",
                                   (lease.row_id, lease.token)).rowcount
            if deleted:
                conn.execute(_INSERT_MESSAGE, (self.dead_letter_queue, delivery.body, _headers_column(headers),
                                               self._clock()))
        if deleted:
            self._wakeup.notify()
        else:
            self._lease_lost("dead-letter", delivery)

    def message_count(self, queue: str) -> int:
        check_queue_name(queue)
        now = self._clock()
        with self._translated(f"counting queue {queue!r}"):
            conn = self._connection()
            (count,) = conn.execute(
                f"SELECT count(*) FROM messages WHERE queue = :queue AND {_AVAILABLE}",
                {"queue": queue, "now": now, "dead": self._dead_owners(conn, queue, now)}).fetchone()
        return count

    def purge(self, queue: str) -> int:
        check_queue_name(queue)
        now = self._clock()
        with self._translated(f"purging queue {queue!r}"), self._transaction() as conn:
            return conn.execute(f"DELETE FROM messages WHERE queue = :queue AND {_AVAILABLE}",
                                {"queue": queue, "now": now,
                                 "dead": self._dead_owners(conn, queue, now)}).rowcount

    def close(self) -> None:
        """Closes every thread's connection. Leases of this process are not released: they end when the
        process does (same host) or when they expire."""
        self._closed = True
        with self._connections_lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            try:
                conn.close()
            except sqlite3.Error:
                log.warning("closing a connection to %s failed", self.path, exc_info=True)

    # -- helpers ------------------------------------------------------------------------------------------

    def _lease(self, delivery: Delivery) -> _Lease:
        if not isinstance(delivery._handle, _Lease):
            raise QueueError(f"{delivery!r} was not handed out by an embedded (SQLite) queue")
        return delivery._handle

    def _lease_lost(self, action: str, delivery: Delivery) -> None:
        # Not an error: the lease expired (or its process was taken for dead) and the message was handed
        # out again or settled by its new holder, who is responsible for it now (at-least-once).
        log.info("%s of a message of queue %r ignored: its lease had expired and it was handed out again",
                 action, delivery.queue)


def _process_exists(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True
