"""Fencing on PostgreSQL: a scheduler whose lock session has ended changes nothing, even while its own
lease would still let it act, and a scheduler that takes the lock waits for the transactions of the one
before it that were already under way, so the old leader's last write comes before the new one's first."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import Engine, text

from harvestdef.db.engine import open_engine, write_transaction
from harvestdef.db.init import init_database
from scheduler.leader import FencedOut, LeaderLock

pytestmark = pytest.mark.postgres


@pytest.fixture
def two_engines(postgresql_url: str):
    """Two schedulers' engines on one harvest database, as on two machines."""
    first = open_engine(postgresql_url)
    init_database(first)
    with write_transaction(first) as conn:
        conn.execute(text("CREATE TABLE fence_probe (value TEXT NOT NULL)"))
    second = open_engine(postgresql_url)
    yield first, second
    first.dispose()
    second.dispose()


def write(engine: Engine, value: str) -> None:
    with write_transaction(engine) as conn:
        conn.execute(text("INSERT INTO fence_probe (value) VALUES (:value)"), {"value": value})


def written(engine: Engine) -> list[str]:
    with engine.execution_options(harvestsuite_unfenced=True).connect() as conn:
        return list(conn.scalars(text("SELECT value FROM fence_probe ORDER BY value")))


def end_session(engine: Engine, pid: int) -> None:
    """End session ``pid`` and wait until it is gone (the server ends it asynchronously)."""
    with engine.execution_options(harvestsuite_unfenced=True).connect() as conn:
        assert conn.scalar(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        deadline = time.monotonic() + 10
        while conn.scalar(text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}):
            assert time.monotonic() < deadline, f"session {pid} did not end"
            conn.rollback()
            time.sleep(0.05)


def test_a_scheduler_whose_lock_session_ended_is_fenced_out_though_its_lease_lasts(two_engines):
    first_engine, second_engine = two_engines
    first, second = LeaderLock(first_engine, lease_seconds=60), LeaderLock(second_engine, lease_seconds=60)
    first.install_fence(first_engine)
    second.install_fence(second_engine)
    with pytest.raises(FencedOut, match="does not lead"):
        write(first_engine, "before leading")
    assert first.try_acquire() and first.lock_pid is not None
    write(first_engine, "first leads")
    end_session(second_engine, first.lock_pid)  # as the server does when first's machine vanished
    assert second.try_acquire()
    assert first.is_held, "its lease still runs: only the fence stands between it and the database"
    with pytest.raises(FencedOut, match="no longer held"):
        write(first_engine, "first, after losing the lock")
    write(second_engine, "second leads")
    assert written(second_engine) == ["first leads", "second leads"]
    second.release()


def test_taking_the_lock_waits_for_the_old_leaders_transaction_under_way(two_engines):
    first_engine, second_engine = two_engines
    first, second = LeaderLock(first_engine, lease_seconds=60), LeaderLock(second_engine, lease_seconds=60)
    first.install_fence(first_engine)
    assert first.try_acquire()
    with first_engine.connect() as conn:
        conn.execute(text("INSERT INTO fence_probe (value) VALUES ('the old leader''s last write')"))
        # this transaction passed the fence; now its lock session ends and another scheduler takes over
        end_session(second_engine, first.lock_pid)
        took: list[float] = []
        taker = threading.Thread(target=lambda: took.append(time.monotonic()) if second.try_acquire() else None)
        taker.start()
        taker.join(timeout=1.0)
        assert taker.is_alive(), "the new leader took the lock while the old one's transaction was open"
        committed = time.monotonic()
        conn.commit()
    taker.join(timeout=30)
    assert took and took[0] >= committed
    assert written(second_engine) == ["the old leader's last write"]
    second.release()
