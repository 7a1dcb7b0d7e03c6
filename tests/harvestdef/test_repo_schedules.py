"""The schedule repository on SQLite and PostgreSQL: round trip, locking, audit, delete rules."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, insert, select

from harvestdef.db import schema as s
from harvestdef.db.defaults import DEFAULT_SCHEDULES
from harvestdef.errors import ConflictError, NotFoundError, StaleEditionError
from harvestdef.repositories.schedules import ScheduleRepository
from harvestdef.schedules import Schedule, TimeUnit


def weekly(name: str = "news weekly") -> Schedule:
    return Schedule(name, TimeUnit.WEEKLY, numtimeunits=2, anytime=False, ondayofweek=2, onhour=3, onminute=45,
                    startdate=datetime(2025, 1, 6, 12, 0, tzinfo=UTC), maxrepeats=10, comments="every other Monday")


def test_create_get_and_list(engine: Engine) -> None:
    with engine.begin() as conn:
        created = ScheduleRepository(conn, actor="curator").create(weekly())
    assert created.schedule_id is not None and created.edition == 1
    with engine.connect() as conn:
        repository = ScheduleRepository(conn)
        assert repository.get(created.schedule_id) == created
        assert repository.get_by_name("news weekly") == created
        assert created.startdate == datetime(2025, 1, 6, 12, 0, tzinfo=UTC)
        names = [schedule.name for schedule in repository.list()]
        assert names == sorted([name for name, *_ in DEFAULT_SCHEDULES] + ["news weekly"])
        once = repository.get_by_name("Once")
        assert once.maxrepeats == 1 and once.timeunit is TimeUnit.HOURLY and once.is_anytime
        audit = conn.execute(select(s.audit_log).where(s.audit_log.c.tablename == "schedules")).mappings().one()
        assert audit["actor"] == "curator" and audit["action"] == "insert"
        assert json.loads(audit["after"])["ondayofweek"] == 2


def test_duplicate_name_is_a_conflict(engine: Engine) -> None:
    with engine.begin() as conn:
        ScheduleRepository(conn).create(weekly())
    with pytest.raises(ConflictError, match="news weekly"), engine.begin() as conn:
        ScheduleRepository(conn).create(weekly())


def test_missing_schedule_is_not_found(engine: Engine) -> None:
    with engine.connect() as conn:
        with pytest.raises(NotFoundError):
            ScheduleRepository(conn).get(987654)
        with pytest.raises(NotFoundError):
            ScheduleRepository(conn).get_by_name("no such schedule")


def test_update_with_optimistic_locking(engine: Engine) -> None:
    with engine.begin() as conn:
        created = ScheduleRepository(conn).create(weekly())
    with engine.begin() as conn:
        updated = ScheduleRepository(conn, actor="alice").update(replace(created, onhour=5, maxrepeats=None))
    assert updated.edition == 2 and updated.onhour == 5 and updated.maxrepeats is None
    with pytest.raises(StaleEditionError, match="edition 1"), engine.begin() as conn:
        ScheduleRepository(conn, actor="bob").update(replace(created, onhour=7))
    with engine.connect() as conn:
        assert ScheduleRepository(conn).get(created.schedule_id).onhour == 5
        actions = list(conn.scalars(select(s.audit_log.c.action).where(s.audit_log.c.tablename == "schedules")
                                    .order_by(s.audit_log.c.audit_id)))
    assert actions == ["insert", "update"]


def test_delete_only_when_no_harvest_uses_it(engine: Engine) -> None:
    with engine.begin() as conn:
        repository = ScheduleRepository(conn)
        used = repository.create(weekly("used"))
        unused = repository.create(weekly("unused"))
        conn.execute(insert(s.harvestdefinitions).values(
            harvest_id=1, name="news", numevents=0, submitted=datetime.now(UTC), isactive=True, edition=1))
        conn.execute(insert(s.partialharvests).values(harvest_id=1, schedule_id=used.schedule_id))
    with pytest.raises(ConflictError, match="news"), engine.begin() as conn:
        ScheduleRepository(conn).delete(used.schedule_id)
    with engine.begin() as conn:
        repository = ScheduleRepository(conn, actor="alice")
        assert repository.harvests_using(used.schedule_id) == ["news"]
        assert repository.harvests_using(unused.schedule_id) == []
        repository.delete(unused.schedule_id)
    with engine.connect() as conn:
        with pytest.raises(NotFoundError):
            ScheduleRepository(conn).get(unused.schedule_id)
        assert ScheduleRepository(conn).get(used.schedule_id).name == "used"
        deleted = conn.execute(select(s.audit_log).where(s.audit_log.c.action == "delete")).mappings().one()
    assert deleted["actor"] == "alice" and json.loads(deleted["before"])["name"] == "unused"
