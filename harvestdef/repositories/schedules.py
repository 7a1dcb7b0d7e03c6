"""Schedules in the harvest database: create, read, list, update (optimistic locking), delete.

Every change is audited in the same transaction. A schedule that a selective or event harvest uses
(partialharvests.schedule_id) cannot be deleted: the error names the harvests that use it.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import Connection, delete, insert, select

from harvestdef.db import schema as s
from harvestdef.errors import ConflictError, NotFoundError
from harvestdef.phrases import N_, phrase
from harvestdef.repositories.base import (
    SYSTEM_ACTOR,
    fetch_row,
    record_audit,
    translate_errors,
    update_with_edition,
)
from harvestdef.schedules import Schedule
from harvestdef.validation import check_name

KIND = "schedule"


class ScheduleRepository:
    """Schedules, read and written through one connection; the caller owns the transaction."""

    def __init__(self, conn: Connection, actor: str = SYSTEM_ACTOR) -> None:
        self.conn = conn
        self.actor = actor

    def create(self, schedule: Schedule) -> Schedule:
        """Insert a new schedule (edition 1); ConflictError if the name is taken."""
        values = schedule.to_values()
        values["name"] = check_name(values["name"], KIND, s.schedules.c.name)
        with translate_errors(KIND, values["name"]):
            schedule_id = self.conn.execute(
                insert(s.schedules).values(**values, edition=1)).inserted_primary_key[0]
            after = fetch_row(self.conn, s.schedules, "schedule_id", schedule_id)
            record_audit(self.conn, self.actor, "schedules", schedule_id, "insert", None, after)
        assert after is not None
        return Schedule.from_row(after)

    def get(self, schedule_id: int) -> Schedule:
        with translate_errors(KIND, schedule_id):
            row = fetch_row(self.conn, s.schedules, "schedule_id", schedule_id)
        if row is None:
            raise NotFoundError(KIND, schedule_id)
        return Schedule.from_row(row)

    def get_by_name(self, name: str) -> Schedule:
        with translate_errors(KIND, name):
            row = fetch_row(self.conn, s.schedules, "name", name.strip())
        if row is None:
            raise NotFoundError(KIND, name)
        return Schedule.from_row(row)

    def list(self) -> Iterator[Schedule]:
        """Every schedule, by name."""
        with translate_errors(KIND, "*"):
            rows = self.conn.execute(select(s.schedules).order_by(s.schedules.c.name)).mappings().all()
        for row in rows:
            yield Schedule.from_row(row)

    def page(self, after: str | None, size: int) -> list[Schedule]:
        """Up to ``size`` schedules by name, those after the name ``after`` (keyset paging)."""
        query = select(s.schedules).order_by(s.schedules.c.name).limit(size)
        if after is not None:
            query = query.where(s.schedules.c.name > after)
        with translate_errors(KIND, "*"):
            rows = self.conn.execute(query).mappings().all()
        return [Schedule.from_row(row) for row in rows]

    def update(self, schedule: Schedule) -> Schedule:
        """Write ``schedule`` over its row if nobody changed the row since ``schedule.edition`` was read.

        StaleEditionError if somebody did; ConflictError if the new name is taken.
        """
        if schedule.schedule_id is None:
            raise NotFoundError(KIND, schedule.name)
        values = schedule.to_values()
        stored_name = self.conn.scalar(select(s.schedules.c.name).where(
            s.schedules.c.schedule_id == schedule.schedule_id))
        if values["name"] == stored_name:
            del values["name"]  # a name stored before the rule of check_name stays as it is
        else:
            values["name"] = check_name(values["name"], KIND, s.schedules.c.name)
        with translate_errors(KIND, schedule.name):
            after = update_with_edition(self.conn, self.actor, s.schedules, "schedule_id", schedule.schedule_id,
                                        schedule.edition, values, KIND)
        return Schedule.from_row(after)

    def harvests_using(self, schedule_id: int) -> list[str]:
        """Names of the harvest definitions whose schedule this is."""
        query = (select(s.harvestdefinitions.c.name)
                 .join(s.partialharvests, s.partialharvests.c.harvest_id == s.harvestdefinitions.c.harvest_id)
                 .where(s.partialharvests.c.schedule_id == schedule_id)
                 .order_by(s.harvestdefinitions.c.name))
        with translate_errors(KIND, schedule_id):
            return list(self.conn.scalars(query))

    def delete(self, schedule_id: int) -> None:
        """Delete a schedule no harvest uses; NotFoundError if absent, ConflictError naming the users if used."""
        before = fetch_row(self.conn, s.schedules, "schedule_id", schedule_id)
        if before is None:
            raise NotFoundError(KIND, schedule_id)
        users = self.harvests_using(schedule_id)
        if users:
            # a conflict with the harvests that use it, not a name taken: the sentence says which
            raise ConflictError(KIND, before["name"], sentence=phrase(
                N_("schedule %(name)s is not deleted: harvest definitions %(harvests)s use it"),
                name=repr(before["name"]), harvests=", ".join(users)))
        with translate_errors(KIND, before["name"]):
            self.conn.execute(delete(s.schedules).where(s.schedules.c.schedule_id == schedule_id))
            record_audit(self.conn, self.actor, "schedules", schedule_id, "delete", before, None)
