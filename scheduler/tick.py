"""One scheduler tick: supervision, readiness and job generation (reference §3.1, §3.5).

A tick, every jobgenerationperiod seconds (first at start), or once with ``harvestsuite scheduler tick
--once``:

1. Supervision. STARTED jobs older than jobtimeouttime become FAILED with the reason (every tick, unlike
   NetarchiveSuite's one-shot timer). A STARTED job whose controller sent no heartbeat for
   controllerSilenceTimeout gets the interrupted mark; its controller reports it when it comes back. A
   job granted to a controller that, in a heartbeat sent after the grant and claimGraceTime later, reports
   other work or none is resubmitted: its attempt cannot run any more, because a resubmitted job is never
   granted again.
2. Readiness. A selective or event harvest is ready when it is active and its nextdate has come, and,
   with postponeUnregisteredChannel, a registered controller serves its channel. A snapshot step is ready
   when it is active, has not run (numevents < 1), its previous step (if any) has jobs and none of them is
   NEW, SUBMITTED or STARTED, and isindexready is set (set here directly until the deduplication index is
   built by the harvester side).
3. Generation, harvest by harvest, each run in one transaction (scheduler.jobgen.generate); a failed
   run deactivates its harvest, and the reason is stored and notified.

Why each harvest waits, was generated or was deactivated is kept in harvest_state for the UI and API,
written only when it changes.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, func, or_, select, update

from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.errors import JobGenerationError, QueueError, StaleJobError, ValidationError
from harvestdef.model.status import JobStatus
from harvestdef.queues import QueueNames, Transport
from harvestdef.repositories.base import SYSTEM_ACTOR, record_audit
from harvestdef.repositories.jobs import JobRepository
from scheduler.intake import remove_monitor_rows
from scheduler.jobgen.generate import GenerationOptions, generate_jobs
from scheduler.notify import Notifier

log = logging.getLogger(__name__)

WAITING, GENERATING, GENERATED, DEACTIVATED = "waiting", "generating", "generated", "deactivated"
_UNFINISHED = [int(JobStatus.NEW), int(JobStatus.SUBMITTED), int(JobStatus.STARTED)]


@dataclass(frozen=True)
class TickOptions:
    job_timeout: int = 604_800
    controller_silence_timeout: int = 300
    claim_grace_time: int = 120
    postpone_unregistered_channel: bool = True


@dataclass
class TickReport:
    """What one tick did, for the log, the command line and tests."""

    generated: dict[str, list[int]] = field(default_factory=dict)
    waiting: dict[str, str] = field(default_factory=dict)
    deactivated: dict[str, str] = field(default_factory=dict)
    timed_out: list[int] = field(default_factory=list)
    interrupted: list[int] = field(default_factory=list)
    resubmitted: dict[int, int] = field(default_factory=dict)


def set_harvest_state(conn: Connection, harvest_id: int, state: str, reason: str, now: datetime) -> bool:
    """Store why the harvest is where it is; True if that changed."""
    hs = s.harvest_state
    current = conn.execute(select(hs.c.state, hs.c.reason).where(hs.c.harvest_id == harvest_id)).first()
    reason = reason[:2000]
    if current is not None and (current.state, current.reason) == (state, reason):
        return False
    if current is None:
        conn.execute(hs.insert().values(harvest_id=harvest_id, state=state, reason=reason, changed_at=now))
    else:
        conn.execute(update(hs).where(hs.c.harvest_id == harvest_id)
                     .values(state=state, reason=reason, changed_at=now))
    return True


class Ticker:
    """Carries out ticks; one at a time per process (the leader lock makes it one per database)."""

    def __init__(self, engine: Engine, generation: GenerationOptions, options: TickOptions, notifier: Notifier,
                 deduplication_enabled: bool = True, transport: Transport | None = None,
                 names: QueueNames | None = None) -> None:
        self.engine = engine
        self.transport = transport  # with names: lets supervision see job queues that are empty
        self.names = names
        self.generation = generation
        self.options = options
        self.notifier = notifier
        self.deduplication_enabled = deduplication_enabled
        self._running = threading.Lock()

    def tick(self, now: datetime | None = None) -> TickReport:
        report = TickReport()
        if not self._running.acquire(blocking=False):
            log.warning("the previous tick is still running; this one is skipped")
            return report
        try:
            now = now or utcnow()
            self.supervise(now, report)
            for harvest_id, name in self._ready_harvests(now, report):
                self._generate(harvest_id, name, now, report)
        finally:
            self._running.release()
        if report.generated or report.deactivated or report.timed_out or report.interrupted or report.resubmitted:
            log.info("tick: generated %s; deactivated %s; timed out %s; interrupted %s; resubmitted %s",
                     {name: len(ids) for name, ids in report.generated.items()}, list(report.deactivated),
                     report.timed_out, report.interrupted, report.resubmitted)
        return report

    # ------------------------------------------------------------------ supervision
    def supervise(self, now: datetime, report: TickReport) -> None:
        j, h = s.jobs, s.harvesters
        timeout = self.options.job_timeout
        with write_transaction(self.engine) as conn:
            jobs = JobRepository(conn)
            overdue = conn.execute(select(j.c.job_id, j.c.attempt_id, j.c.controller).where(
                j.c.status == int(JobStatus.STARTED), j.c.startdate < now - timedelta(seconds=timeout))).all()
            for job_id, attempt_id, controller in overdue:
                jobs.change_status(job_id, JobStatus.STARTED, JobStatus.FAILED, attempt_id=attempt_id, values={
                    "enddate": now, "harvest_errors": f"job timed out: STARTED longer than {timeout} s",
                    "harvest_error_details": f"The job was still STARTED on {controller} after jobtimeouttime "
                                             f"({timeout} s); the scheduler marked it FAILED."})
                remove_monitor_rows(conn, job_id)
                report.timed_out.append(job_id)

            silent_since = now - timedelta(seconds=self.options.controller_silence_timeout)
            silent = conn.execute(
                select(j.c.job_id, j.c.attempt_id, j.c.controller)
                .select_from(j.outerjoin(h, h.c.controller_id == j.c.controller))
                .where(j.c.status == int(JobStatus.STARTED), j.c.interrupted.is_(False),
                       j.c.startdate < silent_since,
                       or_(h.c.last_heartbeat.is_(None), h.c.last_heartbeat < silent_since))).all()
            for job_id, attempt_id, controller in silent:
                if jobs.set_interrupted(job_id, attempt_id, True):
                    log.warning("job %d: its controller %s sent no heartbeat for %d s; marked interrupted",
                                job_id, controller, self.options.controller_silence_timeout)
                    report.interrupted.append(job_id)

            grace = now - timedelta(seconds=self.options.claim_grace_time)
            claimed = conn.execute(
                select(j.c.job_id, j.c.controller, j.c.claimed_at, h.c.last_heartbeat, h.c.current_job_id)
                .select_from(j.join(h, h.c.controller_id == j.c.controller))
                .where(j.c.status == int(JobStatus.SUBMITTED), j.c.claimed_at < grace,
                       h.c.last_heartbeat.is_not(None),
                       or_(h.c.current_job_id.is_(None), h.c.current_job_id != j.c.job_id))).all()
            settle = timedelta(seconds=self.options.claim_grace_time)
            # only a heartbeat sent well after the grant counts: one sent before could not know of the job yet
            abandoned = [(job_id, controller, current) for job_id, controller, claimed_at, heartbeat, current
                         in claimed if heartbeat > claimed_at + settle]
            for job_id, controller, current in abandoned:
                new_job = jobs.resubmit(job_id, self.generation.next_job_id, now)
                log.warning("job %d was granted to %s, which reports %s since; resubmitted as job %d", job_id,
                            controller, f"job {current}" if current else "no job", new_job.job_id)
                report.resubmitted[job_id] = new_job.job_id
        self._resubmit_lost_messages(now, report)
        for job_id in report.timed_out:
            self.notifier.notify(f"Job {job_id} failed", f"Job {job_id} was STARTED longer than jobtimeouttime "
                                                         f"({timeout} s) and was marked FAILED.")

    def _resubmit_lost_messages(self, now: datetime, report: TickReport) -> None:
        """A SUBMITTED job nobody claimed whose channel queue is empty has lost its message (an operator
        purged the queue, or the broker lost it): it is resubmitted. Safe even when wrong: a message that
        turns up later names a RESUBMITTED job, and its claim is refused."""
        if self.transport is None or self.names is None:
            return
        j = s.jobs
        settled = now - timedelta(seconds=self.options.claim_grace_time)
        with self.engine.connect() as conn:
            waiting = conn.execute(select(j.c.channel, j.c.job_id).where(
                j.c.status == int(JobStatus.SUBMITTED), j.c.controller.is_(None),
                j.c.submitteddate < settled).order_by(j.c.job_id)).all()
        by_channel: dict[str, list[int]] = {}
        for channel, job_id in waiting:
            by_channel.setdefault(channel, []).append(job_id)
        for channel, job_ids in by_channel.items():
            queue = self.names.jobs(channel)
            try:
                if self.transport.message_count(queue) > 0:
                    continue
            except QueueError as exc:
                log.warning("cannot count the messages of %s: %s", queue, exc)
                continue
            with write_transaction(self.engine) as conn:
                jobs = JobRepository(conn)
                for job_id in job_ids:
                    try:
                        new_job = jobs.resubmit(job_id, self.generation.next_job_id, now)
                    except (StaleJobError, ValidationError):
                        continue  # claimed or changed meanwhile
                    log.warning("job %d was SUBMITTED to %s, unclaimed, and the queue is empty: its message is "
                                "lost; resubmitted as job %d", job_id, queue, new_job.job_id)
                    report.resubmitted[job_id] = new_job.job_id

    # ------------------------------------------------------------------ readiness
    def _served_channels(self, conn: Connection, now: datetime) -> set[str]:
        h = s.harvesters
        fresh = now - timedelta(seconds=self.options.controller_silence_timeout)
        served: set[str] = set()
        for (channels,) in conn.execute(select(h.c.channels).where(
                h.c.accepted.is_(True), or_(h.c.last_heartbeat > fresh, h.c.registered_at > fresh))):
            served.update(name for name in channels.split(",") if name)
        return served

    def _ready_harvests(self, now: datetime, report: TickReport) -> list[tuple[int, str]]:
        hd, full, partial, ch, j = (s.harvestdefinitions, s.fullharvests, s.partialharvests, s.harvestchannel,
                                    s.jobs)
        ready: list[tuple[int, str]] = []
        with write_transaction(self.engine) as conn:
            served = self._served_channels(conn, now)
            default_selective = conn.scalar(select(ch.c.name).where(ch.c.issnapshot.is_(False),
                                                                    ch.c.isdefault.is_(True)))
            selective = conn.execute(
                select(hd.c.harvest_id, hd.c.name, partial.c.nextdate, ch.c.name.label("channel"))
                .join(partial, partial.c.harvest_id == hd.c.harvest_id)
                .outerjoin(ch, ch.c.id == hd.c.channel_id)
                .where(hd.c.isactive.is_(True), partial.c.nextdate.is_not(None))).all()
            for harvest_id, name, nextdate, channel in selective:
                channel = channel or default_selective
                if nextdate > now:
                    self._wait(conn, harvest_id, name, f"next run at {nextdate.isoformat()}", now, report)
                elif self.options.postpone_unregistered_channel and channel not in served:
                    self._wait(conn, harvest_id, name, f"postponed: no registered harvest controller serves "
                                                       f"channel {channel}", now, report)
                else:
                    ready.append((harvest_id, name))

            snapshots = conn.execute(
                select(hd.c.harvest_id, hd.c.name, full.c.previoushd, full.c.isindexready)
                .join(full, full.c.harvest_id == hd.c.harvest_id)
                .where(hd.c.isactive.is_(True), hd.c.numevents < 1)).all()
            for harvest_id, name, previous, index_ready in snapshots:
                if previous is not None:
                    total, unfinished = conn.execute(select(
                        func.count(), func.count().filter(j.c.status.in_(_UNFINISHED)))
                        .where(j.c.harvest_id == previous)).one()
                    if total == 0:
                        self._wait(conn, harvest_id, name, f"waiting for the previous step (harvest {previous}) "
                                                           "to make its jobs", now, report)
                        continue
                    if unfinished:
                        self._wait(conn, harvest_id, name, f"waiting for the previous step (harvest {previous}): "
                                                           f"{unfinished} of its {total} jobs are not finished",
                                   now, report)
                        continue
                if not index_ready:
                    # The deduplication index is not built on this side yet: the step is ready for it at once.
                    conn.execute(update(full).where(full.c.harvest_id == harvest_id).values(isindexready=True))
                    record_audit(conn, SYSTEM_ACTOR, "fullharvests", harvest_id, "update",
                                 {"isindexready": False}, {"isindexready": True})
                ready.append((harvest_id, name))
        return ready

    def _wait(self, conn: Connection, harvest_id: int, name: str, reason: str, now: datetime,
              report: TickReport) -> None:
        report.waiting[name] = reason
        if set_harvest_state(conn, harvest_id, WAITING, reason, now):
            log.info("harvest definition %r is waiting: %s", name, reason)

    # ------------------------------------------------------------------ generation
    def _generate(self, harvest_id: int, name: str, now: datetime, report: TickReport) -> None:
        with write_transaction(self.engine) as conn:
            set_harvest_state(conn, harvest_id, GENERATING, f"generating jobs since {now.isoformat()}", now)
        try:
            result = generate_jobs(self.engine, harvest_id, self.generation, now)
        except JobGenerationError as exc:
            reason = str(exc)
            report.deactivated[name] = reason
            with write_transaction(self.engine) as conn:
                set_harvest_state(conn, harvest_id, DEACTIVATED, reason, utcnow())
            self.notifier.notify(f"Harvest definition {name} deactivated", reason)
            return
        report.generated[name] = result.job_ids
        summary = f"run {result.harvest_num}: {len(result.job_ids)} jobs at {now.isoformat()}"
        if result.next_date is not None:
            summary += f"; next run at {result.next_date.isoformat()}"
        with write_transaction(self.engine) as conn:
            set_harvest_state(conn, harvest_id, GENERATED, summary, utcnow())


__all__ = ["Ticker", "TickOptions", "TickReport", "set_harvest_state"]
