"""Status intake: what controllers report, recorded in the harvest database (docs/scheduler.md, Job states).

Every handler is idempotent, because messages arrive at least once: a STARTED or final status for a job
already there with that attempt is a repeat and changes nothing; a status of another attempt (the job was
dispatched again or resubmitted) is stale and changes nothing either. A final status writes, in one
transaction, the job's status, errors and end date, its historyinfo rows and both summaries
(harvestdef/repositories/history.py), and clears the job's running-job monitor rows.

Each handler writes into a ``scheduler.batch.Batch``, the transaction of one message or of several taken
together (scheduler.handlers has the table of handlers); what they answer or e-mail goes out after its
commit. The webhook events of a failed job, and of a harvest run whose last job ended, are recorded in the
batch's transaction itself (harvestdef/repositories/webhookevents.py), so they commit with what they
announce.
The usual STARTED and final status are one compare-and-set each (the attempt, its controller, the
status it moves from); anything else is read under the job's row lock first and decided as below.

An archive store outage: a controller whose crawl went well but whose files the store would not take
reports FAILED with ``store_outage``. The job is FAILED (and counted so in its run's summary) with
jobs.store_failed set, and gets no historyinfo rows: what it harvested is not archived yet. Once its
files are stored the controller reports DONE with ``store_outage``; only a job of that attempt and
controller that is FAILED with store_failed turns DONE (JobTransitionReason.STORED_AFTER_STORE_OUTAGE,
audited), and its historyinfo rows are written then, as for any DONE job. A job FAILED for any other
reason, rejected or resubmitted meanwhile, keeps its status.

A crawl ended as asked (an operator's stop or fail, or a budget of the whole crawl reached: the report's
``crawl_end``) is stored in job_ends with the final status, never among the job's harvest errors. A
controller from before message schema 1.5 names an operator's stop or fail in its harvest errors instead;
``with_crawl_end`` reads such a report as a new one, its words taken out of the errors, so both kinds of
controller leave the same rows.

Job events (checkpoints and resumes) are stored in job_events for the job page, once per event; so is
the return of a lost controller, when its heartbeat clears its job's interrupted mark.

A job that ends (a final status, a dead-lettered DoOneCrawl) has its pending live changes refused in the
same transaction, with the reason (scheduler.livechanges); the controllers' answers to live changes are
settled there too.

Written here directly, not through a repository: the controllers' rows (harvesters: registrations and
heartbeats), the running-job monitor (runningjobsmonitor, runningjobshistory, frontierreportmonitor) and
dead_letters. They are what the harvesters last said, kept for supervision and the web UI, none of them
a definition or a job's state, and none audited; a job's status, its history and its events go through
their repositories (JobRepository, HistoryWriter, JobEventRepository).
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update

from harvestdef.db import schema as s
from harvestdef.db.engine import upsert
from harvestdef.db.types import utcnow
from harvestdef.errors import StaleJobError
from harvestdef.livechanges import APPLIED, FAIL, STOP, end_description, read_end_description
from harvestdef.messages import (
    CRAWL_PROGRESS_STATUSES,
    ERROR_DETAILS_LIMIT,
    ERROR_SUMMARY_LIMIT,
    ChannelInfo,
    CrawlEnd,
    CrawlProgress,
    CrawlStatus,
    CrawlTally,
    FrontierReport,
    HarvesterStatus,
    JobEvent,
    LiveChangeResult,
    RegistrationAnswer,
    RegistrationRequest,
    clip,
    encode,
)
from harvestdef.model.status import JobStatus, JobTransitionReason
from harvestdef.repositories.history import DomainFigures, JobFigures
from harvestdef.repositories.jobends import JobEnd, JobEndRepository
from harvestdef.repositories.jobevents import CONTROLLER_BACK, JobEventRepository
from harvestdef.repositories.jobs import NOT_NULL, not_before
from scheduler.batch import Batch
from scheduler.livechanges import ended_reason, refuse_left_changes, settle
from scheduler.notify import Notifier
from scheduler.progresshistory import thin_history

log = logging.getLogger(__name__)

_FINAL = (JobStatus.DONE, JobStatus.FAILED)


def remove_monitor_rows(conn: Connection, job_id: int) -> None:
    """A job that ended leaves the running-jobs monitor (NetarchiveSuite's JobEndedMessage)."""
    conn.execute(delete(s.runningjobsmonitor).where(s.runningjobsmonitor.c.jobid == job_id))
    conn.execute(delete(s.frontierreportmonitor).where(s.frontierreportmonitor.c.jobid == job_id))
    conn.execute(delete(s.running_domain_counts).where(s.running_domain_counts.c.jobid == job_id))


def _final_values(message: CrawlStatus) -> dict[str, Any]:
    # The controller sends the texts cut to the contract's limits already; cut again, because a message is
    # only checked for its types, and a longer text would not fit its column.
    return {
        "interrupted": False,
        "harvest_errors": clip(message.harvest_errors, ERROR_SUMMARY_LIMIT) or None,
        "harvest_error_details": clip(message.harvest_error_details, ERROR_DETAILS_LIMIT) or None,
        "upload_errors": clip(message.upload_errors, ERROR_SUMMARY_LIMIT) or None,
        "upload_error_details": clip(message.upload_error_details, ERROR_DETAILS_LIMIT) or None,
        "store_failed": message.status == JobStatus.FAILED and message.store_outage,
    }


def _failure_in_words(message: CrawlStatus) -> str:
    """Why a job failed, as its controller's report says, in one line for a notification."""
    end = message.crawl_end
    said = [end_description(end.cause, end.user, end.change)] if end is not None and end.is_operator_end else []
    said += [text for text in (message.harvest_errors, message.upload_errors) if text]
    return "; ".join(said) or f"reported FAILED by its controller {message.controller_id}"


def with_crawl_end(conn: Connection, message: CrawlStatus, now: datetime) -> CrawlStatus:
    """``message`` as a controller of message schema 1.5 or later sends it: one from an older controller
    that names an operator's stop or fail among its harvest errors (harvestdef.livechanges.end_description)
    gets that end as its ``crawl_end``, when the job has that change applied or the report says it applied
    it, and the words go from its errors. Any other message is returned as it is."""
    if message.crawl_end is not None or message.status == JobStatus.STARTED or not message.harvest_errors:
        return message
    # the controller joins its errors with "; " (harvester/finish.py), the details are the same text uncut
    parts = message.harvest_errors.split("; ")
    for part in parts:
        said = read_end_description(part)
        if said is None:
            continue
        kind, author, version = said
        c = s.job_changes
        change = conn.execute(select(c.c.kind, c.c.author, c.c.state, c.c.applied).where(
            c.c.job_id == message.job_id, c.c.version == version)).first()
        if change is None or (change.kind, change.author) != (kind, author) or kind not in (STOP, FAIL):
            continue
        handled = next((h for h in message.live_changes if h.version == version and h.state == "applied"), None)
        if change.state != APPLIED and handled is None:
            continue
        at = handled.happened_at if handled is not None else (change.applied or now).isoformat()
        kept = "; ".join(other for other in parts if other != part)
        details = "; ".join(other for other in message.harvest_error_details.split("; ") if other != part)
        return replace(message, harvest_errors=kept, harvest_error_details=details,
                       crawl_end=CrawlEnd(cause=kind, at=at, user=author, change=version))
    return message


def _job_end(job_id: int, end: CrawlEnd, now: datetime) -> JobEnd:
    try:
        ended_at = datetime.fromisoformat(end.at).astimezone(UTC)
    except ValueError:  # checked on receipt; a message built here has a time of ours
        ended_at = now
    return JobEnd(job_id=job_id, cause=end.cause, author=end.user if end.is_operator_end else "",
                  change_version=end.change if end.is_operator_end else None,
                  budget_limit=None if end.is_operator_end or end.limit <= 0 else end.limit, ended_at=ended_at)


# What history needs of a job whose final status was set without reading it first.
_HISTORY_COLUMNS = ("job_id", "harvest_id", "harvest_num", "forcemaxbytes", "forcemaxcount")


@dataclass(frozen=True)
class DeadLetter:
    """A message somebody dead-lettered, as the dead-letter queue holds it: where from, why, and its bytes."""

    queue: str
    reason: str
    body: bytes


class StatusIntake:
    """Handlers for the messages of the scheduler's and the monitor's queues, and for dead letters."""

    def __init__(self, notifier: Notifier, history_sample_rate: int = 300, recent_history_window: int = 900) -> None:
        self.notifier = notifier
        self.history_sample_rate = timedelta(seconds=history_sample_rate)
        self.recent_history_window = timedelta(seconds=recent_history_window)
        self._harvest_names: OrderedDict[int, str] = OrderedDict()
        # each running job's last thinning cutoff (scheduler/progresshistory.py), where the next one starts
        self._thinned_to: dict[int, datetime] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ job status
    def crawl_status(self, batch: Batch, message: CrawlStatus, sent_at: datetime) -> bool:
        """Record a STARTED, DONE or FAILED status; True if it changed the job."""
        now = utcnow()
        message = with_crawl_end(batch.conn, message, now)
        jobs = batch.jobs(message.controller_id)
        # The usual case first, decided by the compare-and-set alone: the status of the attempt granted to
        # this controller, with the job where that status moves it from. The dates are written never
        # before the job's others, whatever the clocks of the processes that took its messages.
        try:
            if message.status == JobStatus.STARTED:
                jobs.change_status(message.job_id, JobStatus.SUBMITTED, JobStatus.STARTED,
                                   attempt_id=message.attempt_id, where={"controller": message.controller_id},
                                   values={"startdate": not_before(now, "submitteddate")})
                return True
            row = jobs.change_status(message.job_id, JobStatus.STARTED, message.status, attempt_id=message.attempt_id,
                                     where={"controller": message.controller_id, "startdate": NOT_NULL},
                                     values={**_final_values(message), "enddate": not_before(
                                         now, "submitteddate", "startdate")},
                                     returning=_HISTORY_COLUMNS)
        except StaleJobError:
            return self._crawl_status_read_first(batch, message, now)
        assert row is not None
        self._record_final(batch, message, row, message.status, row.enddate)
        return True

    def _crawl_status_read_first(self, batch: Batch, message: CrawlStatus, given: datetime) -> bool:
        """Every other case: the job is read under its lock and the status applied, or ignored, as it says."""
        jobs = batch.jobs(message.controller_id)
        job = jobs.find(message.job_id, with_documents=False, for_update=True)
        if job is None:
            log.warning("status %s for unknown job %d ignored", message.status, message.job_id)
            return False
        now = max(filter(None, (given, job.submitteddate, job.startdate)))
        if job.attempt_id != message.attempt_id:
            log.warning("status %s of job %d from attempt %s ignored: the job's attempt is %s (%s)",
                        message.status, job.job_id, message.attempt_id, job.attempt_id, job.status)
            return False
        if job.controller != message.controller_id:
            log.warning("status %s of job %d from %s ignored: the attempt is granted to %s",
                        message.status, job.job_id, message.controller_id, job.controller or "nobody")
            return False
        if message.status == JobStatus.STARTED:
            if job.status != JobStatus.SUBMITTED:
                log.info("STARTED of job %d ignored: it is %s", job.job_id, job.status)
                return False
            jobs.change_status(job.job_id, JobStatus.SUBMITTED, JobStatus.STARTED, attempt_id=job.attempt_id,
                               values={"startdate": now})
            return True
        if message.store_outage and message.status == JobStatus.DONE and job.status == JobStatus.FAILED:
            return self._stored_after_outage(batch, message, job, now)
        final_status = message.status
        second_report = message.store_outage and message.status == JobStatus.DONE
        if job.status == JobStatus.FAILED_REJECTED and not second_report and not batch.conn.scalar(
                select(func.count()).where(s.historyinfo.c.job_id == job.job_id)):
            # The supervisor failed the job, an archivist rejected it, and its report arrives now:
            # NetarchiveSuite's HarvestSchedulerMonitorServer sets it back to FAILED and takes the report.
            # A repeat of a report already taken (the job has history) changes nothing.
            final_status = JobStatus.FAILED
        elif job.status not in (JobStatus.SUBMITTED, JobStatus.STARTED):
            # A repeat of a final status, or the supervisor failed the job first: NetarchiveSuite's
            # HarvestSchedulerMonitorServer keeps the status it has and ignores the report.
            log.warning("final status %s of job %d ignored: it is %s already", message.status, job.job_id,
                        job.status)
            return False
        values = {**_final_values(message), "enddate": now}
        if job.startdate is None:
            values["startdate"] = now
        jobs.change_status(job.job_id, job.status, final_status, attempt_id=job.attempt_id, values=values)
        self._record_final(batch, message, job, final_status, now)
        return True

    def _stored_after_outage(self, batch: Batch, message: CrawlStatus, job: Any, now: datetime) -> bool:
        """The second report of a job FAILED by an archive store outage: DONE now, with its history."""
        if not job.store_failed:
            log.warning("DONE of job %d after a store outage refused: the job FAILED for another reason (%s)",
                        job.job_id, job.harvest_errors or "no harvest errors recorded")
            return False
        row = batch.jobs(message.controller_id).change_status(
            job.job_id, JobStatus.FAILED, JobStatus.DONE, attempt_id=job.attempt_id,
            where={"controller": message.controller_id, "store_failed": True},
            values={**_final_values(message), "enddate": now}, returning=_HISTORY_COLUMNS,
            reason=JobTransitionReason.STORED_AFTER_STORE_OUTAGE)
        assert row is not None
        self._record_final(batch, message, row, JobStatus.DONE, now, replaces_failed=True)
        return True

    def _record_final(self, batch: Batch, message: CrawlStatus, job: JobFigures, final_status: JobStatus,
                      now: datetime, replaces_failed: bool = False) -> None:
        """A final status's history and summaries, the job out of the monitor and its progress samples thinned,
        its pending live changes refused, and, after the commit, the log line and the notification of a
        failure. A job failed by a
        store outage gets no history rows yet: its files are not archived (see the module docstring)."""
        batch.job_ended(job.job_id)
        # A controller found lost whose final report comes before any heartbeat naming the job is back too:
        # the report clears the interrupted mark (_final_values), and the job's events say so.
        events = JobEventRepository(batch.conn)
        if events.still_lost(job.job_id, message.attempt_id):
            events.record(job_id=job.job_id, attempt_id=message.attempt_id, controller_id=message.controller_id,
                          kind=CONTROLLER_BACK, checkpoint="", happened_at=now, received_at=utcnow())
        # the ended job's history as NetarchiveSuite keeps it: one sample each historySampleRate
        thin_history(batch.conn, job.job_id, self.history_sample_rate, None)
        # what the controller handled settles first: its answer may still be on its way, behind this report
        for handled in message.live_changes:
            settle(batch, LiveChangeResult(
                job_id=message.job_id, attempt_id=message.attempt_id, controller_id=message.controller_id,
                version=handled.version, state=handled.state, reason=handled.reason,
                happened_at=handled.happened_at), now)
        if message.crawl_end is not None:
            JobEndRepository(batch.conn).record(_job_end(job.job_id, message.crawl_end, now))
        refuse_left_changes(batch.conn, job.job_id, ended_reason(
            job.job_id, final_status, f"reported by its controller {message.controller_id}"), now,
            audit=batch.audit, actor=message.controller_id)
        report = None if message.store_outage and final_status == JobStatus.FAILED else message.domain_report
        domains = None
        if report is not None:
            domains = {stats.domain: DomainFigures(
                stats.objects, stats.bytes, stats.stop_reason, stats.novel_objects, stats.novel_bytes,
                stats.duplicate_objects, stats.duplicate_bytes, stats.nothing_harvested)
                for stats in report.domains}
        rows = batch.history_writer().record_job(job, final_status, report.default_stop_reason if report else None,
                                                 domains, harvest_time=now, replaces_failed=replaces_failed)
        qa = message.qa_summary
        if qa is not None and job.harvest_num is not None:
            # a repeat (the DONE report after a store outage) replaces the first: the same job's numbers
            upsert(batch.conn, s.job_qa_summaries, ["job_id"], [{
                "job_id": job.job_id, "harvest_id": job.harvest_id, "harvest_num": job.harvest_num,
                "seeds_total": qa.seeds_total, "seeds_not_captured": qa.seeds_not_captured,
                "pages_with_missing_resources": qa.pages_with_missing_resources,
                "missing_resources": qa.missing_resources, "tstamp": now}])

        if final_status == JobStatus.FAILED:
            self.notifier.events(batch.conn).job_failed(job.job_id, _failure_in_words(message))
        run = (job.harvest_id, job.harvest_num)
        batch.before_commit(("run done", *run), functools.partial(self._record_run_done, run))

        def ended() -> None:
            self._thinned_to.pop(job.job_id, None)
            log.info("job %d %s%s: %d historyinfo rows", job.job_id, message.status,
                     " (its files stored after an archive store outage)" if replaces_failed else "", rows)
            if message.status == JobStatus.FAILED:
                self.notifier.notify(
                    f"Job {job.job_id} failed",
                    f"Job {job.job_id} of harvest {job.harvest_id} (run {job.harvest_num}) failed on "
                    f"{message.controller_id}.\n\nHarvest errors: {message.harvest_errors}\n"
                    f"{message.harvest_error_details}\n\nUpload errors: {message.upload_errors}\n"
                    f"{message.upload_error_details}")

        batch.after_commit(ended)

    def _record_run_done(self, run: tuple[int, int], conn: Connection) -> None:
        self.notifier.events(conn).runs_done([run])

    # ------------------------------------------------------------------ job events
    def job_event(self, batch: Batch, message: JobEvent, sent_at: datetime) -> bool:
        """Store a checkpoint or resume of a job's crawl; True if it was new. An event of an unknown job is
        logged and dropped."""
        if batch.jobs().find(message.job_id, with_documents=False) is None:
            log.warning("%s of unknown job %d ignored", message.kind, message.job_id)
            return False
        return JobEventRepository(batch.conn).record(
            job_id=message.job_id, attempt_id=message.attempt_id, controller_id=message.controller_id,
            kind=message.kind, checkpoint=message.checkpoint,
            happened_at=datetime.fromisoformat(message.happened_at), received_at=utcnow())

    # ------------------------------------------------------------------ harvesters
    def registration(self, batch: Batch, request: RegistrationRequest, sent_at: datetime) -> RegistrationAnswer:
        """Accept a controller for its channels, or refuse it naming every unknown channel; the answer goes out
        once the batch has committed."""
        now = utcnow()
        wanted = [name.strip().upper() for name in request.channels if name.strip()]
        conn = batch.conn
        known = {row.name: row.issnapshot for row in conn.execute(
            select(s.harvestchannel.c.name, s.harvestchannel.c.issnapshot))}
        unknown = [name for name in wanted if name not in known]
        reason = ""
        if not wanted:
            reason = "no harvest channel given"
        elif unknown:
            reason = (f"unknown harvest channel{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                      f"(known: {', '.join(sorted(known))})")
        upsert(conn, s.harvesters, ["controller_id"], [{
            "controller_id": request.controller_id, "host": request.host, "channels": ",".join(wanted),
            "accepted": not reason, "refusal_reason": reason or None, "registered_at": now}])
        answer = RegistrationAnswer(controller_id=request.controller_id, accepted=not reason, reason=reason,
                                    channels=[ChannelInfo(name=name, snapshot=known[name])
                                              for name in wanted if name in known])

        batch.answer_after_commit(request.reply_queue, encode(answer))

        def sent() -> None:
            if reason:
                log.error("registration of harvest controller %s on %s refused: %s", request.controller_id,
                          request.host, reason)
                self.notifier.notify(f"Harvest controller {request.controller_id} refused",
                                     f"The harvest controller {request.controller_id} on {request.host} asked to "
                                     f"serve {', '.join(request.channels)} and was refused: {reason}")
            else:
                log.info("harvest controller %s on %s registered for %s", request.controller_id, request.host,
                         ", ".join(wanted))

        batch.after_commit(sent)
        return answer

    def heartbeat(self, batch: Batch, status: HarvesterStatus, sent_at: datetime) -> None:
        """Keep the controller's latest heartbeat and the interval it states; a job it reports running again
        loses its interrupted mark, and the job's events say the controller came back. A job resubmitted
        meanwhile keeps its status: its attempt is not the job's any more, whatever the controller says."""
        h = s.harvesters
        values = {
            "heartbeat_interval": status.heartbeat_interval if status.heartbeat_interval > 0 else None,
            "host": status.host, "pid": status.pid, "version": status.version,
            "free_disk_bytes": status.free_disk_bytes,
            "min_space_left": status.min_space_left if status.min_space_left > 0 else None,
            "load_average": status.load_average, "memory_rss_bytes": status.memory_rss_bytes, "paused": status.paused,
            "pause_reason": status.pause_reason or None, "current_job_id": status.current_job_id,
            "current_attempt_id": status.current_attempt_id, "current_job_state": status.current_job_state or None,
            "last_heartbeat": sent_at}
        conn = batch.conn
        changed = conn.execute(update(h).where(h.c.controller_id == status.controller_id)
                               .where((h.c.last_heartbeat.is_(None)) | (h.c.last_heartbeat <= sent_at))
                               .values(values)).rowcount
        if not changed and conn.scalar(select(h.c.controller_id).where(
                h.c.controller_id == status.controller_id)) is None:
            conn.execute(insert(h).values(controller_id=status.controller_id, channels=",".join(status.channels),
                                          accepted=False, refusal_reason="not registered", **values))
        if status.current_job_id is not None and status.current_attempt_id is not None and batch.jobs(
                status.controller_id).set_interrupted(status.current_job_id, status.current_attempt_id, False):
            JobEventRepository(conn).record(
                job_id=status.current_job_id, attempt_id=status.current_attempt_id,
                controller_id=status.controller_id, kind=CONTROLLER_BACK, checkpoint="", happened_at=sent_at,
                received_at=utcnow())
            batch.after_commit(functools.partial(log.warning, "job %d: its controller %s reports it again; the "
                                                 "interrupted mark is cleared", status.current_job_id,
                                                 status.controller_id))

    # ------------------------------------------------------------------ monitor
    def _harvest_name(self, conn: Connection, job_id: int) -> str | None:
        with self._lock:
            if job_id in self._harvest_names:
                return self._harvest_names[job_id]
        hd, j = s.harvestdefinitions, s.jobs
        name = conn.scalar(select(hd.c.name).join(j, j.c.harvest_id == hd.c.harvest_id).where(j.c.job_id == job_id))
        if name is not None:
            with self._lock:
                self._harvest_names[job_id] = name
                while len(self._harvest_names) > 10_000:
                    self._harvest_names.popitem(last=False)
        return name

    def progress(self, batch: Batch, progress: CrawlProgress, sent_at: datetime) -> None:
        """runningjobsmonitor holds the newest figures of a running job, with its newest crawl.log lines;
        runningjobshistory a sample of each report, thinned to one each historySampleRate once older than
        recentHistoryWindow (scheduler/progresshistory.py)."""
        conn = batch.conn
        j = s.jobs
        status = conn.execute(select(j.c.status, j.c.attempt_id).where(j.c.job_id == progress.job_id)).first()
        if status is None or status.attempt_id != progress.attempt_id or status.status != JobStatus.STARTED:
            return  # a finished or stale attempt's late progress
        name = self._harvest_name(conn, progress.job_id)
        if name is None:
            return
        row = {
            "jobid": progress.job_id, "harvestname": name, "hosturl": clip(progress.host_url, 300),
            "progress": progress.progress, "queuedfilescount": progress.queued_files,
            "totalqueuescount": progress.total_queues, "activequeuescount": progress.active_queues,
            "retiredqueuescount": progress.retired_queues, "exhaustedqueuescount": progress.exhausted_queues,
            "elapsedseconds": progress.elapsed_seconds, "alertscount": progress.alert_count,
            "downloadedfilescount": progress.downloaded_files,
            "currentprocessedkbpersec": progress.current_processed_kb_per_sec,
            "processedkbpersec": progress.processed_kb_per_sec,
            "currentprocesseddocspersec": int(progress.current_processed_docs_per_sec),
            "processeddocspersec": int(progress.processed_docs_per_sec),
            "activetoecount": progress.active_toe_count,
            "status": CRAWL_PROGRESS_STATUSES.index(progress.status), "tstamp": sent_at}
        # The crawl-log tail replaces the previous one: it is the crawler's newest lines, not a log of our own.
        upsert(conn, s.runningjobsmonitor, ["jobid", "harvestname"],
               [{**row, "totalbyteswritten": progress.total_bytes_written,
                 "crawllogtail": "\n".join(line.replace("\n", " ") for line in progress.crawl_log_tail) or None,
                 "isheritrixconsole": progress.is_heritrix_console}])
        upsert(conn, s.runningjobshistory, ["jobid", "harvestname", "elapsedseconds", "tstamp"], [row])
        cutoff = sent_at - self.recent_history_window
        with self._lock:
            since = self._thinned_to.get(progress.job_id)
        if since is not None and cutoff <= since:
            return  # a report that arrived late, or out of order: nothing newly out of the window
        thin_history(conn, progress.job_id, self.history_sample_rate, cutoff, since)

        def thinned() -> None:
            with self._lock:
                self._thinned_to[progress.job_id] = max(cutoff, self._thinned_to.get(progress.job_id, cutoff))

        batch.after_commit(thinned)

    def tally(self, batch: Batch, tally: CrawlTally, sent_at: datetime) -> None:
        """What a running job's crawl.log says so far: the status counts replace the previous ones in its
        runningjobsmonitor row (none before its first progress report), each changed domain's counts replace
        its previous ones."""
        conn = batch.conn
        job = conn.execute(select(s.jobs.c.status, s.jobs.c.attempt_id).where(s.jobs.c.job_id == tally.job_id)).first()
        if job is None or job.attempt_id != tally.attempt_id or job.status != JobStatus.STARTED:
            return  # a finished or stale attempt's late figures
        conn.execute(update(s.runningjobsmonitor).where(s.runningjobsmonitor.c.jobid == tally.job_id)
                     .values(crawlloglines=tally.lines, statuscounts=json.dumps(tally.status_counts, sort_keys=True)))
        rows = [{"jobid": tally.job_id, "domain": clip(count.domain, 300), "objects": count.objects,
                 "bytes": count.bytes, "tstamp": sent_at}
                for count in {count.domain: count for count in tally.domains}.values()]
        if rows:
            upsert(conn, s.running_domain_counts, ["jobid", "domain"], rows)

    def frontier_report(self, batch: Batch, report: FrontierReport, sent_at: datetime) -> None:
        """The newest frontier report of a running job and filter replaces the previous one."""
        f = s.frontierreportmonitor
        conn = batch.conn
        attempt = conn.scalar(select(s.jobs.c.attempt_id).where(s.jobs.c.job_id == report.job_id))
        if attempt != report.attempt_id:
            return
        conn.execute(delete(f).where(f.c.jobid == report.job_id, f.c.filterid == report.filter_id))
        rows = [{
            "jobid": report.job_id, "filterid": report.filter_id, "tstamp": sent_at,
            "domainname": clip(line.domain_name, 300), "currentsize": line.current_size,
            "totalenqueues": line.total_enqueues, "sessionbalance": line.session_balance,
            "lastcost": line.last_cost, "averagecost": line.average_cost,
            "lastdequeuetime": clip(line.last_dequeue_time, 100), "waketime": clip(line.wake_time, 100),
            "totalspend": line.total_spend, "totalbudget": line.total_budget, "errorcount": line.error_count,
            "lastpeekuri": clip(line.last_peek_uri, 1000), "lastqueueduri": clip(line.last_queued_uri, 1000),
        } for line in {line.domain_name: line for line in report.lines}.values()]
        if rows:
            conn.execute(insert(f), rows)

    # ------------------------------------------------------------------ dead letters
    def dead_letter(self, batch: Batch, letter: DeadLetter, sent_at: datetime) -> int | None:
        """Keep a dead letter for the UI; a dead-lettered DoOneCrawl fails its job, which no controller
        will crawl. Returns the job id it failed, if any."""
        now = utcnow()
        queue, reason = letter.queue, letter.reason
        text = letter.body.decode("utf-8", errors="replace")
        job_id = attempt_id = None
        kind = ""
        try:
            document = json.loads(text)
            if isinstance(document, dict) and isinstance(document.get("body"), dict):
                kind = str(document.get("type", ""))
                job_id = document["body"].get("job_id")
                attempt_id = document["body"].get("attempt_id")
        except (ValueError, TypeError):
            pass
        if not isinstance(job_id, int) or isinstance(job_id, bool):
            job_id = None
        failed = None
        batch.conn.execute(insert(s.dead_letters).values(received_at=now, queue=clip(queue, 300),
                                                         reason=clip(reason, 2000), job_id=job_id, body=text))
        if kind == "DoOneCrawl" and job_id is not None and isinstance(attempt_id, str):
            try:
                batch.jobs().change_status(
                    job_id, JobStatus.SUBMITTED, JobStatus.FAILED, attempt_id=attempt_id,
                    values={"enddate": now, "harvest_errors": "DoOneCrawl message dead-lettered",
                            "harvest_error_details": clip(f"the message was dead-lettered from {queue}: "
                                                          f"{reason}", ERROR_DETAILS_LIMIT)})
                refuse_left_changes(batch.conn, job_id, ended_reason(
                    job_id, JobStatus.FAILED, f"its DoOneCrawl message was dead-lettered from {queue}"), now,
                    audit=batch.audit)
                failed = job_id
                events = self.notifier.events(batch.conn)
                events.job_failed(job_id, f"its DoOneCrawl message was dead-lettered from {queue}: {reason}")
                events.run_done_of_job(job_id)
            except StaleJobError as exc:
                log.info("dead-lettered DoOneCrawl of job %s changes nothing: %s", job_id, exc)

        def kept() -> None:
            log.error("dead letter from %s: %s", queue, reason)
            if failed is not None:
                self.notifier.notify(f"Job {failed} failed", f"The DoOneCrawl message of job {failed} was "
                                                             f"dead-lettered from {queue}: {reason}")

        batch.after_commit(kept)
        return failed
