"""Job changes: the control actions and live changes operators make to a running job, versioned per job.

A change is one row of ``job_changes``, numbered 1, 2, ... per job in the order it was made (ArchiveBot's
settings_age, per job). Its life is one table of states: it is written ``pending`` by the web UI; the
scheduler sends it (control actions before live changes, each in version order) to the controller that
holds the job's claim, again every while until the controller answers (a controller briefly away finds it
in its durable control queue, or in a later sending); the controller's answer settles it ``applied`` or
``refused`` with the reason. A change still pending when the job ends is refused with the reason: nothing
is silently dropped.

A control action (pause, resume, checkpoint, stop, fail) is a change like the others, its kind the action.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, case, func, or_, select, update

from harvestdef.db import schema as s
from harvestdef.db.engine import is_postgresql
from harvestdef.livechanges import CONTROL_ACTIONS, KINDS, PENDING, REFUSED, STATES, TRANSITIONS
from harvestdef.model.status import JobStatus

_changes = s.job_changes

ENDED_REASON = "the job's crawl ended before its controller applied this change"


@dataclass(frozen=True)
class JobChange:
    """One change of a job, as stored."""

    job_id: int
    version: int
    kind: str
    payload: dict[str, Any]
    author: str
    created: datetime
    state: str
    reason: str
    applied: datetime | None  # when the controller applied or refused it
    attempt_id: str  # the attempt whose crawl applied or refused it; empty while pending

    @property
    def is_control(self) -> bool:
        return self.kind in CONTROL_ACTIONS


@dataclass(frozen=True)
class Outgoing:
    """A pending change to send, with the claim it goes to."""

    change: JobChange
    controller_id: str
    attempt_id: str


def _to_change(row: Mapping[str, Any]) -> JobChange:
    return JobChange(job_id=row["job_id"], version=row["version"], kind=row["kind"],
                     payload=json.loads(row["payload"]), author=row["author"], created=row["created"],
                     state=row["state"], reason=row["reason"], applied=row["applied"],
                     attempt_id=row["attempt_id"])


_COLUMNS = (_changes.c.job_id, _changes.c.version, _changes.c.kind, _changes.c.payload, _changes.c.author,
            _changes.c.created, _changes.c.state, _changes.c.reason, _changes.c.applied, _changes.c.attempt_id)


class JobChangeRepository:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def lock_job(self, job_id: int) -> None:
        """Hold the job's row until the transaction ends (PostgreSQL; SQLite's write transaction holds the whole
        database): every writer of a job's changes does so first, so writers of one job's changes queue on
        that row and never deadlock on the rows of its changes."""
        if is_postgresql(self.conn.engine):
            self.conn.execute(select(s.jobs.c.job_id).where(s.jobs.c.job_id == job_id).with_for_update())

    def job_status(self, job_id: int) -> JobStatus | None:
        status = self.conn.scalar(select(s.jobs.c.status).where(s.jobs.c.job_id == job_id))
        return JobStatus(status) if status is not None else None

    def jobs_with_pending(self, statuses: Iterable[JobStatus]) -> list[int]:
        """The jobs in one of ``statuses`` that have pending changes, found through the index on the changes'
        state (one look into it when nothing is pending)."""
        return list(self.conn.execute(
            select(_changes.c.job_id).distinct().join(s.jobs, s.jobs.c.job_id == _changes.c.job_id)
            .where(_changes.c.state == PENDING, s.jobs.c.status.in_([int(status) for status in statuses]))
            .order_by(_changes.c.job_id)).scalars())

    def add(self, job_id: int, kind: str, payload: Mapping[str, Any], author: str, now: datetime) -> JobChange:
        """Store a pending change as the job's next version.

        The job's row is locked first (PostgreSQL; SQLite's write transaction holds the whole database), so
        two changes made at once get consecutive versions rather than one failing on the key."""
        if kind not in KINDS:
            raise ValueError(f"unknown kind of job change {kind!r} (one of {', '.join(KINDS)})")
        self.lock_job(job_id)
        version = self.conn.execute(select(func.coalesce(func.max(_changes.c.version), 0) + 1)
                                    .where(_changes.c.job_id == job_id)).scalar_one()
        values = dict(job_id=job_id, version=version, kind=kind, payload=json.dumps(dict(payload), sort_keys=True),
                      author=author, created=now, state=PENDING, reason="", applied=None, attempt_id="")
        self.conn.execute(_changes.insert().values(**values))
        return _to_change(values)

    def for_job(self, job_id: int) -> list[JobChange]:
        """The job's changes, oldest first."""
        rows = self.conn.execute(select(*_COLUMNS).where(_changes.c.job_id == job_id)
                                 .order_by(_changes.c.version)).mappings()
        return [_to_change(row) for row in rows]

    def controls_for_job(self, job_id: int) -> list[JobChange]:
        """The job's control actions, oldest first: all that judging the next action needs (a handful, however
        many live changes the job has)."""
        rows = self.conn.execute(select(*_COLUMNS).where(_changes.c.job_id == job_id,
                                                         _changes.c.kind.in_(CONTROL_ACTIONS))
                                 .order_by(_changes.c.version)).mappings()
        return [_to_change(row) for row in rows]

    def page(self, job_id: int, limit: int, *, after: int | None = None, before: int | None = None) -> list[JobChange]:
        """At most ``limit`` of the job's changes, oldest first: the first ones after version ``after``, or the
        newest ones before version ``before`` (the newest of all when neither is given). Read through the
        primary key (job_id, version), so a page costs the same whatever the number of changes."""
        query = select(*_COLUMNS).where(_changes.c.job_id == job_id)
        if after is not None:
            rows = self.conn.execute(query.where(_changes.c.version > after).order_by(_changes.c.version)
                                     .limit(limit)).mappings()
            return [_to_change(row) for row in rows]
        if before is not None:
            query = query.where(_changes.c.version < before)
        rows = self.conn.execute(query.order_by(_changes.c.version.desc()).limit(limit)).mappings()
        return [_to_change(row) for row in reversed(list(rows))]

    def counts(self, job_id: int) -> dict[str, int]:
        """How many of the job's changes are in each state (every state named, 0 where none)."""
        found = dict(self.conn.execute(select(_changes.c.state, func.count()).where(_changes.c.job_id == job_id)
                                       .group_by(_changes.c.state)).all())
        return {state: int(found.get(state, 0)) for state in STATES}

    def pending_live_changes(self, job_id: int) -> int:
        """How many live changes (not control actions) of the job are pending: what maxPending bounds."""
        return int(self.conn.scalar(select(func.count()).where(
            _changes.c.job_id == job_id, _changes.c.state == PENDING,
            _changes.c.kind.not_in(CONTROL_ACTIONS))) or 0)

    def pending_versions(self, job_id: int, limit: int) -> list[int]:
        """The versions of the job's oldest ``limit`` pending changes (to say which a page waits for)."""
        return list(self.conn.execute(select(_changes.c.version).where(
            _changes.c.job_id == job_id, _changes.c.state == PENDING).order_by(_changes.c.version)
            .limit(limit)).scalars())

    def get(self, job_id: int, version: int) -> JobChange | None:
        row = self.conn.execute(select(*_COLUMNS).where(_changes.c.job_id == job_id,
                                                         _changes.c.version == version)).mappings().first()
        return _to_change(row) if row is not None else None

    def to_send(self, now: datetime, resend_after: timedelta) -> list[Outgoing]:
        """Pending changes of STARTED jobs whose claim a controller holds, never sent or not sent since
        ``resend_after``: per job, its control actions first, then its live changes, each in version order
        (the order the controller carries them out in). Only the changes due: one sent before waits in the
        controller's durable control queue ahead of those sent after it, so sending it again with every new
        change would only fill that queue with copies (a flood of changes would grow it by the square of
        their number)."""
        is_live_change = case((_changes.c.kind.in_(CONTROL_ACTIONS), 0), else_=1)
        query = (select(*_COLUMNS, s.jobs.c.controller, s.jobs.c.attempt_id.label("claim_attempt"))
                 .join(s.jobs, s.jobs.c.job_id == _changes.c.job_id)
                 .where(_changes.c.state == PENDING,
                        or_(_changes.c.sent_at.is_(None), _changes.c.sent_at <= now - resend_after),
                        s.jobs.c.status == int(JobStatus.STARTED), s.jobs.c.controller.is_not(None),
                        s.jobs.c.attempt_id.is_not(None))
                 .order_by(_changes.c.job_id, is_live_change, _changes.c.version))
        return [Outgoing(_to_change(row), row["controller"], row["claim_attempt"])
                for row in self.conn.execute(query).mappings()]

    def mark_sent(self, keys: Iterable[tuple[int, int]], now: datetime) -> None:
        """Note the sending of these (job, version) changes."""
        keys = list(keys)
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            self.conn.execute(update(_changes).where(
                or_(*(and_(_changes.c.job_id == job, _changes.c.version == version) for job, version in chunk)))
                .values(sent_at=now))

    def settle(self, job_id: int, version: int, state: str, reason: str, applied: datetime,
               attempt_id: str) -> bool:
        """Mark a pending change applied or refused; False if it was settled before (a repeated answer)."""
        if state not in TRANSITIONS[PENDING]:
            raise ValueError(f"a job change is settled applied or refused, not {state!r}")
        result = self.conn.execute(update(_changes).where(
            _changes.c.job_id == job_id, _changes.c.version == version, _changes.c.state == PENDING)
            .values(state=state, reason=reason[:2000], applied=applied, attempt_id=attempt_id))
        return result.rowcount == 1

    def refuse_pending(self, job_id: int, reason: str, now: datetime) -> int:
        """Refuse the job's pending changes (its crawl ended first); how many there were."""
        result = self.conn.execute(update(_changes).where(_changes.c.job_id == job_id, _changes.c.state == PENDING)
                                   .values(state=REFUSED, reason=reason[:2000], applied=now))
        return result.rowcount
