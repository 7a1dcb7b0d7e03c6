"""harvestdef.sqlitewal: the switch to WAL mode waits for a lock that SQLite itself would not wait for."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from harvestdef.db.engine import open_engine
from harvestdef.queues.sqlite import SqliteTransport
from harvestdef.sqlitewal import use_wal


def written_fresh_file(path) -> sqlite3.Connection:
    """A new file in rollback mode, with another connection in a write transaction on it."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (a)")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t VALUES (1)")
    return holder


def test_sqlite_does_not_wait_for_the_lock_of_the_switch_and_use_wal_does(tmp_path):
    path = tmp_path / "fresh.db"
    holder = written_fresh_file(path)
    opener = sqlite3.connect(path, timeout=30, isolation_level=None)
    # the reason for use_wal: a busy timeout of 30 s, and the switch fails at once
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        opener.execute("PRAGMA journal_mode=WAL")
    assert time.monotonic() - started < 10  # far below the 30 s it would have waited for the lock

    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 3:
            holder.execute("COMMIT")  # the other connection lets go while use_wal waits

    assert use_wal(opener, 30, pause=pause) == "wal"
    assert len(pauses) == 3 and pauses == sorted(pauses)
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # kept in the file
    opener.close()
    holder.close()


def test_use_wal_gives_up_after_its_timeout_with_sqlites_error(tmp_path):
    path = tmp_path / "fresh.db"
    holder = written_fresh_file(path)
    opener = sqlite3.connect(path, isolation_level=None)
    now = [0.0]
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        use_wal(opener, 2.0, clock=lambda: now[0], pause=lambda seconds: now.__setitem__(0, now[0] + seconds))
    assert 1.9 <= now[0] <= 2.0  # it waited out the timeout, not more
    opener.close()
    holder.close()


def test_roles_opening_a_new_queue_file_and_database_at_once_all_open_them(tmp_path):
    """The demo's roles open the new files in the same second; before use_wal, one round in ten or more of
    eight threads lost the race with "database is locked"."""
    failures: list[str] = []

    def open_both(round_dir) -> None:
        try:
            transport = SqliteTransport(round_dir / "queue.db", dead_letter_queue="dead")
            transport.close()
            engine = open_engine(f"sqlite:///{round_dir / 'harvest.db'}")
            with engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
            engine.dispose()
        except Exception as exc:  # noqa: BLE001 - every failure is the finding
            failures.append(repr(exc))

    for number in range(150):
        round_dir = tmp_path / str(number)
        round_dir.mkdir()
        threads = [threading.Thread(target=open_both, args=(round_dir,)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []
