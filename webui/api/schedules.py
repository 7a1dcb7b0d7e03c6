"""API routes: schedules (``/api/v1/schedules``), with the columns of NetarchiveSuite's schedules table.

Schedules are addressed and listed by name with keyset paging; a write is one transaction, and a PATCH
names the ``edition`` it was based on (409 if the schedule has moved on). The schedule pages
(webui/definitions/schedules.py) check their forms with ``schedule_from`` too.
"""

from __future__ import annotations

from typing import Any

from harvestdef.repositories.schedules import ScheduleRepository
from harvestdef.schedules import Schedule, TimeUnit
from webui.api.core import PAGED, blueprint, body, edition, field, jsonable, limit, name_after, page, parse_time
from webui.api.errors import ApiError
from webui.api.parameters import takes
from webui.auth import CURATE, READ, require
from webui.context import actor, database

SCHEDULE_FIELDS = ("name", "timeunit", "numtimeunits", "anytime", "onminute", "onhour", "ondayofweek",
                   "ondayofmonth", "startdate", "enddate", "maxrepeats", "comments")


def parse_timeunit(value: Any) -> TimeUnit:
    """A time unit by name (DAILY) or by NetarchiveSuite's number (2)."""
    try:
        if isinstance(value, str) and not value.strip().isdigit():
            return TimeUnit[value.strip().upper()]
        if isinstance(value, bool):
            raise ValueError(value)
        return TimeUnit(int(value))
    except (KeyError, ValueError, TypeError):
        names = ", ".join(unit.name for unit in TimeUnit)
        raise ApiError("invalid", f"timeunit must be one of {names}, not {value!r}", "timeunit") from None


def schedule_from(data: dict[str, Any], base: Schedule | None = None) -> Schedule:
    """A Schedule of the schedules table's columns in ``data``; missing ones are taken from ``base``."""
    def given(name: str) -> bool:
        return base is None or name in data

    values: dict[str, Any] = {}
    if given("name"):
        values["name"] = field(data, "name", str)
    if given("timeunit"):
        values["timeunit"] = parse_timeunit(field(data, "timeunit", (str, int)))
    if given("numtimeunits"):
        values["numtimeunits"] = field(data, "numtimeunits", int, required=False, default=1)
    if given("anytime"):
        values["anytime"] = field(data, "anytime", bool, required=False, default=True)
    for name in ("onminute", "onhour", "ondayofweek", "ondayofmonth", "maxrepeats"):
        if given(name):
            values[name] = field(data, name, int, required=False)
    for name in ("startdate", "enddate"):
        if given(name):
            values[name] = parse_time(field(data, name, str, required=False), name)
    if given("comments"):
        values["comments"] = field(data, "comments", str, required=False, default="")
    if base is None:
        return Schedule(**values)
    current = {name: getattr(base, name) for name in SCHEDULE_FIELDS}
    return Schedule(**{**current, **values}, schedule_id=base.schedule_id, edition=base.edition)


def schedule_json(schedule: Schedule) -> dict[str, Any]:
    record = {name: jsonable(getattr(schedule, name)) for name in SCHEDULE_FIELDS}
    record["edition"] = schedule.edition
    return record


@blueprint.get("/schedules")
@takes(*PAGED)
@require(READ)
def list_schedules() -> Any:
    """Schedules by name."""
    size = limit()
    with database().connect() as conn:
        rows = ScheduleRepository(conn).page(name_after(), size + 1)
    return page(rows, size, lambda row: [row.name], schedule_json)


@blueprint.post("/schedules")
@require(CURATE)
def create_schedule() -> Any:
    """Create a schedule from the columns of the schedules table."""
    schedule = schedule_from(body())
    with database().begin() as conn:
        created = ScheduleRepository(conn, actor()).create(schedule)
    return schedule_json(created), 201


@blueprint.get("/schedules/<name>")
@require(READ)
def get_schedule(name: str) -> Any:
    """One schedule, with the harvests that use it."""
    with database().connect() as conn:
        schedules = ScheduleRepository(conn)
        schedule = schedules.get_by_name(name)
        users = schedules.harvests_using(schedule.schedule_id or 0)
    return {**schedule_json(schedule), "harvests": users}


@blueprint.patch("/schedules/<name>")
@require(CURATE)
def update_schedule(name: str) -> Any:
    """Change a schedule's columns; 409 if ``edition`` is stale."""
    data = body()
    expected = edition(data)
    with database().begin() as conn:
        schedules = ScheduleRepository(conn, actor())
        current = schedules.get_by_name(name)
        changed = schedule_from(data, current)
        updated = schedules.update(Schedule(**{n: getattr(changed, n) for n in SCHEDULE_FIELDS},
                                            schedule_id=current.schedule_id, edition=expected))
    return schedule_json(updated)
