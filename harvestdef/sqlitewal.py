"""Switching a SQLite file to write-ahead logging while other connections open it too.

``PRAGMA journal_mode=WAL`` on a file still in rollback mode writes to it, from inside the read
transaction the statement has already begun, and SQLite does not wait for the write lock in that case (the
busy timeout does not apply): a connection that asks while another connection is writing to the file (such
as creating the queue's table) fails at once with "database is locked". The embedded default's
scheduler, controller and web UI open a new queue file and a new harvest database in the same second, and
under load one of them lost that race and stopped the demo. The mode is kept in the file, so once one
connection has switched it, asking again takes no lock; ``use_wal`` asks again until the switch is made or
the caller's busy timeout has passed.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

_FIRST_PAUSE = 0.005
_LONGEST_PAUSE = 0.1


def use_wal(connection: sqlite3.Connection, timeout: float, *,
            clock: Callable[[], float] = time.monotonic, pause: Callable[[float], None] = time.sleep) -> str:
    """Put ``connection``'s file in WAL mode, trying again while another connection holds a lock on it, for
    at most ``timeout`` seconds (then the last "database is locked" is raised). Returns the journal mode
    SQLite reports ("wal"; "memory" for an in-memory database)."""
    deadline = clock() + timeout
    wait = _FIRST_PAUSE
    while True:
        try:
            return str(connection.execute("PRAGMA journal_mode=WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            message = str(exc)
            if ("locked" not in message and "busy" not in message) or clock() + wait > deadline:
                raise
        pause(wait)
        wait = min(wait * 2, _LONGEST_PAUSE)
