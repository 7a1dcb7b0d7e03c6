"""Job events: what happened to a job's crawl beside its status, for the job page and the job's API answer.

Two sources. The controller reports its crawl's checkpoints and resumes (message JobEvent, taken by the
scheduler's status intake). The scheduler records what it saw of the controller: ``lost`` (silent past
lostAfterHeartbeats; ``happened_at`` is its last sign of life, ``received_at`` when the scheduler marked
the job interrupted), ``back`` (its heartbeat named the job again) and ``resubmitted`` (it stayed lost past
resubmitLostAfter; the copy is the job's resubmitted_as_job). Those carry no checkpoint.

An event is stored once: a message delivered twice, or a second tick that sees the same silence, matches
the row of its first record (job, kind, checkpoint, time) and adds nothing. Events never move a job; the
status changes among them (the resubmission) are audited by JobRepository, not here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, select
from sqlalchemy.dialects import postgresql, sqlite

from harvestdef.db import schema as s
from harvestdef.db.engine import is_postgresql

_events = s.job_events

# kinds of event
CHECKPOINT, RESUME = "checkpoint", "resume"
CONTROLLER_LOST, CONTROLLER_BACK, RESUBMITTED = "lost", "back", "resubmitted"


@dataclass(frozen=True)
class JobEventEntry:
    """One checkpoint or resume of a job's crawl."""

    job_id: int
    attempt_id: str
    controller_id: str
    kind: str            # CHECKPOINT, RESUME, CONTROLLER_LOST, CONTROLLER_BACK, RESUBMITTED
    checkpoint: str      # the checkpoint written, or resumed from; empty for the others
    happened_at: datetime
    received_at: datetime


class JobEventRepository:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def record(self, *, job_id: int, attempt_id: str, controller_id: str, kind: str, checkpoint: str,
               happened_at: datetime, received_at: datetime) -> bool:
        """Store one event; False if it was stored before (a repeated message)."""
        dialect = postgresql if is_postgresql(self.conn.engine) else sqlite
        statement = dialect.insert(_events).values(
            job_id=job_id, attempt_id=attempt_id, controller_id=controller_id, kind=kind, checkpoint=checkpoint,
            happened_at=happened_at, received_at=received_at).on_conflict_do_nothing(
            index_elements=["job_id", "kind", "checkpoint", "happened_at"]).returning(_events.c.event_id)
        return self.conn.execute(statement).first() is not None

    def still_lost(self, job_id: int, attempt_id: str) -> bool:
        """Whether the attempt's newest ``lost`` event has no ``back`` after it."""
        newest = self.conn.scalar(
            select(_events.c.kind).where(_events.c.job_id == job_id, _events.c.attempt_id == attempt_id,
                                         _events.c.kind.in_([CONTROLLER_LOST, CONTROLLER_BACK]))
            .order_by(_events.c.event_id.desc()).limit(1))
        return newest == CONTROLLER_LOST

    def for_job(self, job_id: int) -> list[JobEventEntry]:
        """The job's events, oldest first (a job has a handful: one per checkpoint and resume)."""
        rows = self.conn.execute(
            select(_events.c.job_id, _events.c.attempt_id, _events.c.controller_id, _events.c.kind,
                   _events.c.checkpoint, _events.c.happened_at, _events.c.received_at)
            .where(_events.c.job_id == job_id).order_by(_events.c.happened_at, _events.c.event_id))
        return [JobEventEntry(**row._mapping) for row in rows]
