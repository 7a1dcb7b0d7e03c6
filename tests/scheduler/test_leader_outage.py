"""A database that stops answering for a while costs the scheduler a pause, not its leadership.

The leader's lease outlives a renewal that the database could not answer: it stays the leader, tries
again, and renews once the database answers. A leader whose lease did run out meanwhile (or whose
PostgreSQL session ended, taking the advisory lock with it) steps down and waits to lead again, as at its
start. In process on the lock itself (with an injected clock for the lease), and with real
``harvestsuite scheduler run`` processes through a held lock: SQLite's write lock held by another
connection (BEGIN IMMEDIATE), PostgreSQL's tables locked, its session terminated.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from sqlalchemy import Engine, func, select, text

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from scheduler.leader import _ADVISORY_KEY, LeaderLock
from tests.dblocks import writers_held
from tests.scheduler.factories import make_domain, make_selective
from tests.scheduler.test_scheduler_processes import LEADS, SchedulerProcess

LOST = "lost its lock"
STEPPED_DOWN = "waits to lead again"
TICK_FAILED = "tick failed"


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _expiry(engine: Engine):
    with engine.connect() as conn:
        return conn.scalar(select(s.scheduler_lock.c.expires_at))


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_renewal_under_a_held_write_lock_keeps_the_leadership_until_the_lease_runs_out(engine):
    clock = Clock()
    leader = LeaderLock(engine, lease_seconds=10, clock=clock)
    assert leader.try_acquire()
    written = _expiry(engine)
    try:
        with writers_held(engine):
            clock.now += 9.5  # half a second of the lease left: the renewal waits that long for the lock
            assert leader.renew(), "a renewal the database could not answer lost a lease that still lasted"
            assert leader.is_held
            assert _expiry(engine) == written, "the renewal wrote under another writer's lock"
        # the database answers again within the lease: renewed, from now on
        assert leader.renew() and leader.is_held
        assert _expiry(engine) > written
        assert leader.lease_left() == pytest.approx(10)
        with writers_held(engine):
            clock.now += 10  # the lease ran out while the database did not answer
            assert not leader.is_held
            assert not leader.renew(), "a leader whose lease ran out still leads"
        assert not leader.is_held
        # it leads again once the database answers, as at its start (nobody else took the row meanwhile)
        assert leader.try_acquire() and leader.is_held
    finally:
        leader.release()


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_a_leader_whose_postgresql_session_ended_steps_down_and_leads_again(engine):
    leader = LeaderLock(engine, lease_seconds=10)
    assert leader.try_acquire()
    try:
        with engine.connect() as conn:
            assert conn.scalar(text("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
                                    "AND objid = :low AND classid = :high AND granted "
                              "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"),
                               {"low": _ADVISORY_KEY & 0xFFFFFFFF, "high": _ADVISORY_KEY >> 32})
        # the advisory lock went with the session: lost for certain, though the lease had time left
        assert not leader.renew()
        assert not leader.is_held
        assert leader.try_acquire(), "the lock is free again: the scheduler leads again"
    finally:
        leader.release()


def _with_a_ready_harvest(engine: Engine, harvest_id: int = 1) -> None:
    with engine.begin() as conn:
        make_selective(conn, harvest_id, f"daily-{harvest_id}", [make_domain(conn, f"a{harvest_id}.dk")[1]],
                       nextdate=utcnow() - timedelta(minutes=1))


def _jobs(engine: Engine, harvest_id: int | None = None) -> int:
    query = select(func.count()).select_from(s.jobs)
    if harvest_id is not None:
        query = query.where(s.jobs.c.harvest_id == harvest_id)
    with engine.connect() as conn:
        return conn.scalar(query)


def _makes_jobs_of(process: SchedulerProcess, engine: Engine, harvest_id: int, what: str) -> None:
    """Wait (60 s at most) for the leading ``process`` to make a job of harvest ``harvest_id``."""
    deadline = time.monotonic() + 60
    while _jobs(engine, harvest_id) == 0:
        assert process.process.poll() is None, "the scheduler stopped"
        assert time.monotonic() < deadline, f"{what}, yet made no jobs"
        time.sleep(0.2)


OUTAGE_SETTINGS = {"harvestsuite.scheduler.leaderLeaseTime": "6", "harvestsuite.scheduler.leaderRenewInterval": "1",
                   "harvestsuite.database.lockTimeout": "1"}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_scheduler_keeps_leading_through_a_lock_longer_than_a_renewal_and_shorter_than_its_lease(
        engine, database_url, tmp_path):
    process = SchedulerProcess(database_url, tmp_path / "queue.db", OUTAGE_SETTINGS)
    try:
        assert process.leads_within(60), "the scheduler never led"
        with writers_held(engine):
            held_since = time.monotonic()
            # held until the scheduler has met it (a tick gave up after lockTimeout) and for 4 s: longer
            # than several renewal intervals, yet inside the lease of 6 s
            assert process.first_of((TICK_FAILED, LOST), 30) == TICK_FAILED
            while time.monotonic() - held_since < 4:
                assert process.first_of((LOST,), 0.2) is None, "the scheduler lost a lease that still lasted"
        _with_a_ready_harvest(engine)
        # the next tick makes the harvest's jobs: it still leads, without having stepped down
        deadline = time.monotonic() + 60
        while _jobs(engine) == 0:
            assert process.process.poll() is None, "the scheduler stopped"
            assert time.monotonic() < deadline, "the scheduler made no jobs after the lock"
            assert process.first_of((LOST, STEPPED_DOWN, LEADS), 0.2) is None, "the scheduler stepped down"
    finally:
        process.stop()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_scheduler_whose_lease_ran_out_under_a_lock_steps_down_and_leads_again_each_time(
        engine, database_url, tmp_path):
    settings = {**OUTAGE_SETTINGS, "harvestsuite.scheduler.leaderLeaseTime": "3"}
    process = SchedulerProcess(database_url, tmp_path / "queue.db", settings)
    try:
        assert process.leads_within(60), "the scheduler never led"
        # three terms lost and taken again: what a step-down closes (the webhook sender, the index builder)
        # must open again at every new term, not only the first
        for term in (1, 2, 3):
            with writers_held(engine):
                assert process.first_of((LOST,), 60) == LOST, f"term {term}: the lease ran out, yet not said"
                assert process.first_of((STEPPED_DOWN,), 60) == STEPPED_DOWN, f"term {term}"
            _with_a_ready_harvest(engine, term)
            assert process.leads_within(60), f"term {term}: the scheduler did not lead again"
            _makes_jobs_of(process, engine, term, f"term {term}: the scheduler leads again")
    finally:
        process.stop()


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_a_scheduler_keeps_leading_through_locked_tables_and_leads_again_after_its_session_ended(
        engine, database_url, tmp_path):
    process = SchedulerProcess(database_url, tmp_path / "queue.db", OUTAGE_SETTINGS)
    try:
        assert process.leads_within(60), "the scheduler never led"
        with engine.begin() as conn:
            # reads of the harvest definitions wait too: every tick gives up after lockTimeout
            conn.execute(text("LOCK TABLE harvestdefinitions, jobs IN ACCESS EXCLUSIVE MODE"))
            held_since = time.monotonic()
            assert process.first_of((TICK_FAILED, LOST), 30) == TICK_FAILED
            while time.monotonic() - held_since < 2:
                assert process.first_of((LOST,), 0.2) is None, "the scheduler lost its lock under locked tables"
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
                              "AND objid = :low AND classid = :high AND granted "
                              "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"),
                         {"low": _ADVISORY_KEY & 0xFFFFFFFF, "high": _ADVISORY_KEY >> 32})
        assert process.first_of((LOST,), 60) == LOST
        _with_a_ready_harvest(engine)
        assert process.leads_within(60), "the scheduler did not lead again after its session ended"
        _makes_jobs_of(process, engine, 1, "the scheduler leads again")
    finally:
        process.stop()


class WaitingClock:
    """A clock whose first reading is before a wait of ``waited`` seconds and every later one after it:
    a take or renewal that waited that long for SQLite's write lock."""

    def __init__(self, waited: float) -> None:
        self.readings = 0
        self.waited = waited

    def __call__(self) -> float:
        self.readings += 1
        return 1000.0 if self.readings == 1 else 1000.0 + self.waited


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_lease_taken_after_a_wait_for_the_write_lock_counts_from_when_the_lock_was_had(engine):
    """Counted from before the wait, a take that waited longer than the lease was lost at once: the demo's
    scheduler, leading again after a held lock, lost it again."""
    leader = LeaderLock(engine, lease_seconds=10, clock=WaitingClock(waited=25))
    try:
        assert leader.try_acquire()
        assert leader.is_held, "the lease ran out during the wait for the lock, before it was taken"
        assert leader.lease_left() == pytest.approx(10)
    finally:
        leader.release()
