"""Supervision, the first step of every scheduler tick (scheduler/tick.py): the running jobs are looked after.

STARTED jobs older than jobtimeouttime become FAILED with the reason (every tick, unlike NetarchiveSuite's
one-shot timer in its JobSupervisor). A STARTED job whose controller is lost (silent for lostAfterHeartbeats
of the heartbeat intervals it states, harvestdef.model.controllers) gets the interrupted mark, a ``lost`` job
event and a notification (e-mail, and a controller_lost webhook event in the same transaction); its
controller reports the job when it comes back. If it stays lost past resubmitLostAfter, the job is
resubmitted (STARTED -> RESUBMITTED as CONTROLLER_LOST, audited, with a ``resubmitted`` job event), so the
harvest is not stuck: the old attempt is never granted again, and its controller's late report of it is
never taken (scheduler.intake, dispatch). A STARTED job whose controller came back without it (registered
again since the job started, its heartbeats claimGraceTime later name other work or none:
harvestdef.model.controllers.has_left_job) is resubmitted the same way at once: nothing crawls it, and
nothing will report it. A job granted to a controller that, in a heartbeat sent after the grant and
claimGraceTime later, reports other work or none is resubmitted: its attempt cannot run any more, because a
resubmitted job is never granted again. A SUBMITTED job nobody claimed whose queue is empty has lost its
message and is resubmitted too.

Each job that stops running so has its pending live changes refused in the same transaction, with the
reason (scheduler.livechanges); a resubmitted job's changes stay with it, since the new job starts from its
template. Then any job that ended by other means and still has changes pending gets them refused. A
resubmitted job's directory in the archive store, if its attempt stored anything before it stopped (a
controller that died mid-upload), gets every file it holds listed in its SHA256SUMS (harvestdef.archive
``seal``), so no stored file goes unlisted.

While the scheduler's broker connection is down no heartbeat can reach it, so no controller is counted lost
then; once it is back, silence is counted from then at the earliest (``Supervisor.heard``, written to
scheduler_hearing as it changes, so the web UI judges silence by it too).

Supervision reads the running jobs and their controllers directly (a few queries over every running job,
each shaped for its question); every change of a job goes through JobRepository, audited.
"""

from __future__ import annotations

import logging
import os
import socket
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, or_, select

from harvestdef.archive import ArchiveStore
from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.errors import DatabaseError, HarvestSuiteError, QueueError, StaleJobError, ValidationError
from harvestdef.model.controllers import HEARING_ALL_ALONG, Hearing, has_left_job, last_sign_of_life
from harvestdef.model.jobs import Job
from harvestdef.model.status import JobStatus, JobTransitionReason
from harvestdef.queues import QueueNames, Transport
from harvestdef.repositories.hearing import write_hearing
from harvestdef.repositories.jobevents import CONTROLLER_LOST, RESUBMITTED, JobEventRepository
from harvestdef.repositories.jobs import JobRepository
from harvestdef.times import utc_text
from scheduler.intake import remove_monitor_rows
from scheduler.jobgen.generate import GenerationOptions
from scheduler.livechanges import ended_reason, refuse_changes_of_ended_jobs, refuse_left_changes, resubmitted_reason
from scheduler.notify import Notifier
from scheduler.progresshistory import thin_history
from scheduler.tickreport import TickOptions, TickReport

log = logging.getLogger(__name__)

# A time in a notification or the log, as the web UI shows every time.
when = utc_text


class Supervisor:
    """The supervision of one scheduler (see the module's docstring); ``supervise`` is one tick's share."""

    def __init__(self, engine: Engine, generation: GenerationOptions, options: TickOptions, notifier: Notifier,
                 transport: Transport | None = None, names: QueueNames | None = None,
                 store: ArchiveStore | None = None, holder: str = "") -> None:
        self.engine = engine
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}"  # named in scheduler_hearing
        self.store = store  # where a resubmitted job's abandoned attempt may have left files (_seal_abandoned)
        self.transport = transport  # with names: lets supervision see job queues that are empty
        self.names = names
        self.generation = generation  # its next_job_id numbers the jobs resubmitted
        self.options = options
        self.notifier = notifier
        # The scheduler's own hearing: while its broker connection is down no heartbeat can reach it, so
        # silence then says nothing of the controllers (_hearing); written to scheduler_hearing as it changes
        # (and by each new leader once), so the web UI judges silence by it too.
        self._heard: Hearing = HEARING_ALL_ALONG
        self._heard_written: Hearing | None = None
        self._opened_seen: int | None = None

    @property
    def heard(self) -> Hearing:
        """Whether, and since when, heartbeats reach this scheduler, as the last supervision found."""
        return self._heard

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
                thin_history(conn, job_id, timedelta(seconds=self.options.history_sample_rate), None)
                refuse_left_changes(conn, job_id, ended_reason(
                    job_id, JobStatus.FAILED, f"STARTED longer than jobtimeouttime ({timeout} s), marked FAILED "
                                              "by the scheduler"), now)
                events = self.notifier.events(conn)
                events.job_failed(job_id, f"STARTED longer than jobtimeouttime ({timeout} s); the scheduler "
                                          "marked it FAILED")
                events.run_done_of_job(job_id)
                report.timed_out.append(job_id)

            lost: list[tuple[int, str, str]] = []
            lost_jobs = self._mark_lost(conn, jobs, now, report, lost)
            left_jobs = self._find_left(conn)

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
                instead = f"job {current}" if current else "no job"
                refuse_left_changes(conn, job_id, resubmitted_reason(
                    job_id, new_job.job_id, f"it was granted to {controller}, which reports {instead} since"), now)
                log.warning("job %d was granted to %s, which reports %s since; resubmitted as job %d", job_id,
                            controller, instead, new_job.job_id)
                report.resubmitted[job_id] = new_job.job_id
        for job_id, attempt_id in lost_jobs:
            self._resubmit_lost(job_id, attempt_id, now, report)
        for job_id, attempt_id in left_jobs:
            self._resubmit_left(job_id, attempt_id, now, report)
        self._resubmit_lost_messages(now, report)
        try:
            report.changes_refused.update(refuse_changes_of_ended_jobs(self.engine, now))
        except DatabaseError as exc:  # a safety net: the next tick tries again, and nothing else waits for it
            log.warning("the pending changes of ended jobs could not be refused now: %s", exc)
        for job_id in report.timed_out:
            self.notifier.notify(f"Job {job_id} failed", f"Job {job_id} was STARTED longer than jobtimeouttime "
                                                         f"({timeout} s) and was marked FAILED.")
        resubmit = (f"it is resubmitted if the controller stays lost {self.options.lost.resubmit_lost_after} s "
                    "after its last heartbeat (resubmitLostAfter)" if self.options.lost.resubmit_lost_after > 0
                    else "it is not resubmitted automatically (resubmitLostAfter is 0)")
        for job_id, controller, silent in lost:
            self.notifier.notify(f"Harvest controller {controller} lost",
                                 f"The harvest controller {controller} is lost ({silent}): its job {job_id} is "
                                 f"marked interrupted. The job comes back when the controller starts again; "
                                 f"{resubmit}.")

    def _hearing(self, now: datetime) -> bool:
        """Whether heartbeats can reach this scheduler now: its broker connection is up (the embedded queue
        always is). Once it is back after an outage, ``_heard.hearing_since`` holds when, and a controller's
        silence is counted from then at the earliest (Hearing.counted): the heartbeats of the outage were
        never delivered, and the controllers that sent them need not be lost."""
        connected = True if self.transport is None else bool(getattr(self.transport, "is_connected", True))
        if not connected:
            if not self._heard.deaf:
                self._heard = Hearing(deaf_since=now)
                log.warning("the scheduler does not reach the broker: no heartbeat can come in, so no controller "
                            "is counted lost and no job resubmitted for its silence until the connection is back")
            return False
        # An outage that began and ended between two ticks shows only in the count of connections opened.
        opened = getattr(self.transport, "connections_opened", None)
        reconnected = opened is not None and self._opened_seen is not None and opened > self._opened_seen
        self._opened_seen = opened
        if self._heard.deaf or reconnected:
            deaf_since = self._heard.deaf_since
            log.warning("the scheduler reaches the broker again%s; controllers' silence is counted from now",
                        "" if deaf_since is None else f" after {(now - deaf_since).total_seconds():.0f} s")
            self._heard = Hearing(hearing_since=now)
        return True

    def _record_hearing(self, conn: Connection, now: datetime) -> None:
        """Write the hearing to scheduler_hearing if it changed since written (or was never written by this
        scheduler: an earlier leader's row says nothing of this one's connection)."""
        if self._heard != self._heard_written:
            write_hearing(conn, self._heard, self.holder, now)
            self._heard_written = self._heard

    def _mark_lost(self, conn: Connection, jobs: JobRepository, now: datetime, report: TickReport,
                   lost: list[tuple[int, str, str]]) -> list[tuple[int, str]]:
        """Give the STARTED jobs of lost controllers the interrupted mark, a ``lost`` event and a
        controller_lost webhook event, and add each to ``lost`` (job id, controller, since when silent) for its
        notification; returns those (job id, attempt id) whose controller has been lost past
        resubmitLostAfter. One row per running job: a few dozen, judged here rather than in SQL because each
        controller states its own interval."""
        j, h = s.jobs, s.harvesters
        rule = self.options.lost
        hearing = self._hearing(now)
        self._record_hearing(conn, now)
        if not hearing:
            return []
        running = conn.execute(
            select(j.c.job_id, j.c.attempt_id, j.c.controller, j.c.startdate, j.c.interrupted,
                   h.c.last_heartbeat, h.c.heartbeat_interval)
            .select_from(j.outerjoin(h, h.c.controller_id == j.c.controller))
            .where(j.c.status == int(JobStatus.STARTED))).all()
        overdue: list[tuple[int, str]] = []
        for row in running:
            last_sign = last_sign_of_life(row.last_heartbeat, row.startdate)
            if not rule.is_lost(last_sign, row.heartbeat_interval, now, self._heard):
                continue
            if not row.interrupted and jobs.set_interrupted(row.job_id, row.attempt_id, True):
                JobEventRepository(conn).record(
                    job_id=row.job_id, attempt_id=row.attempt_id, controller_id=row.controller or "",
                    kind=CONTROLLER_LOST, checkpoint="", happened_at=last_sign or now, received_at=now)
                log.warning("job %d: its controller %s is lost, silent since %s; marked interrupted", row.job_id,
                            row.controller, when(last_sign) if last_sign else "ever")
                self.notifier.events(conn).controller_lost(row.job_id, row.controller or "", last_sign)
                lost.append((row.job_id, row.controller or "an unknown controller",
                             f"silent since {when(last_sign)}" if last_sign else "never heard from"))
                report.interrupted.append(row.job_id)
            counted = self._heard.counted(last_sign)
            if counted is None or rule.needs_resubmission(counted, row.heartbeat_interval, now, self._heard):
                overdue.append((row.job_id, row.attempt_id))
        return overdue

    def _resubmit_lost(self, job_id: int, attempt_id: str, now: datetime, report: TickReport) -> None:
        """Resubmit the job of a controller lost past resubmitLostAfter, in a transaction of its own, if it is
        still so once its row is locked: a heartbeat or a report that came meanwhile wins."""
        rule = self.options.lost
        if rule.resubmit_lost_after <= 0 or not self._hearing(now):
            return
        h = s.harvesters
        try:
            with write_transaction(self.engine) as conn:
                jobs = JobRepository(conn)
                job = jobs.find(job_id, with_documents=False, for_update=True)
                if (job is None or job.status != JobStatus.STARTED or job.attempt_id != attempt_id
                        or not job.interrupted):
                    return
                controller = conn.execute(select(h.c.last_heartbeat, h.c.heartbeat_interval)
                                          .where(h.c.controller_id == job.controller)).first()
                last_heartbeat = controller.last_heartbeat if controller is not None else None
                interval = controller.heartbeat_interval if controller is not None else None
                last_sign = last_sign_of_life(last_heartbeat, job.startdate)
                counted = self._heard.counted(last_sign)
                if counted is not None and not rule.needs_resubmission(counted, interval, now, self._heard):
                    return
                silent = f"silent since {when(last_sign)}" if last_sign else "never heard from"
                new_job = self._resubmit_abandoned(conn, jobs, job, now, f"its controller {job.controller} stayed "
                                                                          f"lost ({silent}) past resubmitLostAfter")
        except (StaleJobError, ValidationError) as exc:
            log.info("job %d was not resubmitted: %s", job_id, exc)  # it moved on meanwhile
            return
        log.warning("job %d: its controller %s stayed lost (%s) past resubmitLostAfter (%d s); resubmitted as "
                    "job %d", job_id, job.controller, silent, rule.resubmit_lost_after, new_job.job_id)
        self._announce_resubmitted(job, new_job, report, (
            f"The controller {job.controller} of job {job_id} is lost ({silent}) and did not come back within "
            f"resubmitLostAfter ({rule.resubmit_lost_after} s)."))

    def _left_jobs(self, conn: Connection, job_id: int | None = None) -> list[tuple[int, str, str]]:
        """The STARTED jobs (job id, attempt id, what the controller reports instead) whose claim-holding
        controller has left them (has_left_job), in one query; ``job_id`` asks about that job alone."""
        j, h = s.jobs, s.harvesters
        query = (select(j.c.job_id, j.c.attempt_id, j.c.startdate, h.c.registered_at, h.c.last_heartbeat,
                        h.c.current_job_id, h.c.current_attempt_id)
                 .select_from(j.join(h, h.c.controller_id == j.c.controller))
                 .where(j.c.status == int(JobStatus.STARTED), h.c.last_heartbeat.is_not(None),
                        or_(h.c.current_attempt_id.is_(None), h.c.current_attempt_id != j.c.attempt_id)))
        if job_id is not None:
            query = query.where(j.c.job_id == job_id)
        grace = timedelta(seconds=self.options.claim_grace_time)
        return [(row.job_id, row.attempt_id,
                 f"job {row.current_job_id}" if row.current_job_id is not None else "no job")
                for row in conn.execute(query)
                if has_left_job(row.attempt_id, row.current_attempt_id, row.last_heartbeat, row.startdate,
                                row.registered_at, grace)]

    def _find_left(self, conn: Connection) -> list[tuple[int, str]]:
        """The STARTED jobs (job id, attempt id) whose controller has left them (``_left_jobs``)."""
        return [(job_id, attempt_id) for job_id, attempt_id, _ in self._left_jobs(conn)]

    def _resubmit_abandoned(self, conn: Connection, jobs: JobRepository, job: Job, now: datetime, why: str) -> Job:
        """The one resubmission of a STARTED job no controller crawls any more (lost, or back without it):
        CONTROLLER_LOST, audited by the repository, a ``resubmitted`` job event, its monitor rows gone, its
        pending live changes refused (``why`` it was resubmitted is their reason): the new job's crawl starts
        from its template."""
        new_job = jobs.resubmit(job.job_id, self.generation.next_job_id, now,
                                reason=JobTransitionReason.CONTROLLER_LOST)
        JobEventRepository(conn).record(
            job_id=job.job_id, attempt_id=job.attempt_id or "", controller_id=job.controller or "",
            kind=RESUBMITTED, checkpoint="", happened_at=now, received_at=now)
        remove_monitor_rows(conn, job.job_id)
        thin_history(conn, job.job_id, timedelta(seconds=self.options.history_sample_rate), None)
        refuse_left_changes(conn, job.job_id, resubmitted_reason(job.job_id, new_job.job_id, why), now)
        return new_job

    def _resubmit_left(self, job_id: int, attempt_id: str, now: datetime, report: TickReport) -> None:
        """Resubmit a STARTED job its controller came back without, in a transaction of its own, if that is
        still so once its row is locked: a heartbeat naming it, or its report, that came meanwhile wins.
        Audited, with a ``resubmitted`` job event and a notification, as a lost controller's job."""
        try:
            with write_transaction(self.engine) as conn:
                jobs = JobRepository(conn)
                job = jobs.find(job_id, with_documents=False, for_update=True)
                if job is None or job.status != JobStatus.STARTED or job.attempt_id != attempt_id:
                    return
                left = [instead for _, held, instead in self._left_jobs(conn, job_id) if held == attempt_id]
                if not left:
                    return
                (instead,) = left
                new_job = self._resubmit_abandoned(conn, jobs, job, now, f"its controller {job.controller} came "
                                                                          f"back without it, reporting {instead}")
        except (StaleJobError, ValidationError) as exc:
            log.info("job %d was not resubmitted: %s", job_id, exc)  # it moved on meanwhile
            return
        log.warning("job %d: its controller %s is back without it, reporting %s for more than claimGraceTime "
                    "(%d s); resubmitted as job %d", job_id, job.controller, instead, self.options.claim_grace_time,
                    new_job.job_id)
        self._announce_resubmitted(job, new_job, report, (
            f"The controller {job.controller} of job {job_id} is back without the job: its heartbeats report "
            f"{instead}, more than claimGraceTime ({self.options.claim_grace_time} s) after the job started and "
            f"the controller registered, so nothing crawls the job (its job directory was lost)."))

    def _announce_resubmitted(self, job: Job, new_job: Job, report: TickReport, why: str) -> None:
        """After an abandoned job's resubmission: the report, its attempt's stored files listed
        (``_seal_abandoned``) and the notification, which says ``why`` and what follows."""
        report.resubmitted[job.job_id] = new_job.job_id
        left = self._seal_abandoned(job)
        self.notifier.notify(
            f"Job {job.job_id} resubmitted as job {new_job.job_id}",
            f"{why} Job {job.job_id} is RESUBMITTED, its attempt will never be granted again, and job "
            f"{new_job.job_id} harvests its domains.{left}")

    def _seal_abandoned(self, job: Job) -> str:
        """A resubmitted job's attempt may have died mid-upload, leaving stored files that no SHA256SUMS
        lists (its controller lists them only once all are stored): list them now (``ArchiveStore.seal``),
        so every file in the store is in its directory's SHA256SUMS. A controller that comes back with the
        rest stores and lists them in turn. Returns a sentence for the notification ("" when the store holds
        nothing of the job); a store that cannot be written is logged and the resubmission stands."""
        if self.store is None:
            return ""
        try:
            files = self.store.seal(job.harvest_id, job.job_id)
        except (OSError, HarvestSuiteError) as exc:
            log.error("job %d: the files its abandoned attempt left in the archive store could not be listed in "
                      "SHA256SUMS: %s", job.job_id, exc)
            return (f" The files its attempt left in the archive store could not be listed in SHA256SUMS: "
                    f"{exc}.")
        if not files:
            return ""
        where = self.store.job_path(job.harvest_id, job.job_id)
        log.warning("job %d: its abandoned attempt left %d files in the archive store (%s), all listed in its "
                    "SHA256SUMS now", job.job_id, files, where)
        return (f" Its attempt left {files} files in the archive store ({where}); they stay there, listed in "
                f"SHA256SUMS.")

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
                    refuse_left_changes(conn, job_id, resubmitted_reason(
                        job_id, new_job.job_id, f"its DoOneCrawl message was lost from {queue}"), now)
                    log.warning("job %d was SUBMITTED to %s, unclaimed, and the queue is empty: its message is "
                                "lost; resubmitted as job %d", job_id, queue, new_job.job_id)
                    report.resubmitted[job_id] = new_job.job_id


__all__ = ["Supervisor"]
