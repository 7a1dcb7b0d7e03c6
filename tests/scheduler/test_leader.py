"""Only one scheduler acts on a database: the second waits, and takes over when the first is gone."""

from __future__ import annotations

import time

from scheduler.leader import LeaderLock


def test_second_scheduler_waits_and_takes_over_when_the_first_is_gone(engine):
    first, second = LeaderLock(engine, lease_seconds=1), LeaderLock(engine, lease_seconds=1)
    try:
        assert first.try_acquire() and first.is_held
        assert not second.try_acquire(), "a second scheduler must wait"
        assert first.renew()
        assert first.current_holder() is not None
        first.release()
        assert second.try_acquire(), "the lock is free once the first one let go"
        assert not first.try_acquire()
    finally:
        first.release()
        second.release()


def test_a_dead_leader_is_taken_over_after_its_lease(engine):
    """The first scheduler dies without releasing (its connection closes with the process on PostgreSQL;
    its lease row is left behind on SQLite): the second takes over within the lease."""
    first, second = LeaderLock(engine, lease_seconds=1), LeaderLock(engine, lease_seconds=1)
    assert first.try_acquire()
    first._close_connection()  # what the death of its process does to its session
    first._held = False
    deadline = time.monotonic() + 10
    while not second.try_acquire():
        assert time.monotonic() < deadline, "the second scheduler never took over"
        time.sleep(0.2)
    second.release()
