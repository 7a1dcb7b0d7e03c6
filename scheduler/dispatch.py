"""Dispatch and claims: how a NEW job reaches exactly one harvest controller (docs/scheduler.md, One job,
one crawl).

Releasing a job (``Dispatcher.ready``), for a ready message of an idle, registered controller:

1. in one write transaction: the oldest NEW job of the first of the controller's channels that has one
   (selective channels first, as the controller lists them) gets a fresh attempt id and moves NEW ->
   SUBMITTED (a compare-and-set). With deduplication on, only jobs whose deduplication sources are ready
   count (scheduler.dedupsources.has_index_ready: a first selective run needs none; any other job needs its
   ready job_dedup_sources row, which every intake process reads alike), so a job that waits for the
   earlier jobs of its domains holds back none of the other jobs of its channel;
2. its DoOneCrawl message is published to the channel's job queue and the broker's confirm awaited;
3. only then is the transaction committed. A failed publish rolls the job back to NEW. A scheduler that
   dies after the confirm and before the commit leaves a message whose attempt the database never
   recorded: its claim is refused, and the job, still NEW, is released again.

Claiming (``Dispatcher.claim``): the controller that took the message asks for its attempt before it
crawls. The grant is a compare-and-set on jobs.controller (NULL -> the controller,
``JobRepository.grant_claim``, which audits it), so of two controllers holding copies of one message (a
redelivery after a broker restart) exactly one gets it. The same
controller asking again (it restarted, or it resumes a checkpointed crawl) gets it again while the job is
SUBMITTED or STARTED with that attempt; a resubmitted, finished or re-dispatched job is never granted.

Both run in a ``scheduler.batch.Batch``: the transaction of one message, or of several that the intake
took together. The DoOneCrawl is then published at the end of the batch, after every write of it and
before its commit, so step 3 holds for each job the batch released.

So an attempt is crawled by at most one controller, a SUBMITTED job always has a confirmed message or a
controller that claimed it, and at-least-once delivery of every message below is harmless.

One idle controller releases one job: a ready message releases nothing while the job released for that
controller's previous ready message still waits in the queue unclaimed, and ready messages older than
readyMaxAge (sent before an outage) release nothing. A paused controller sends none (harvester issue),
so queues never fill with jobs nobody takes.

Direct statements, not a repository, for the controller's row: a ready message, the most frequent of
all, is one statement on harvesters (checked and touched) and the release mark, built once below; the
job's changes (NEW -> SUBMITTED, the grant) go through JobRepository.
"""

from __future__ import annotations

import functools
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, bindparam, func, select, update

from harvestdef.db import schema as s
from harvestdef.db.engine import is_postgresql
from harvestdef.db.types import utcnow
from harvestdef.errors import StaleJobError
from harvestdef.messages import (
    AliasRecord,
    ClaimAnswer,
    ClaimRequest,
    DeduplicationSource,
    DoOneCrawl,
    HarvesterReady,
    PreHarvestMetadata,
    encode,
)
from harvestdef.model.jobs import Job
from harvestdef.model.status import JobStatus
from harvestdef.queues import QueueNames
from harvestdef.repositories.jobevents import CONTROLLER_BACK, JobEventRepository
from harvestdef.repositories.jobs import JobRepository
from scheduler.batch import Batch
from scheduler.dedupsources import HarvestRun, find_run_index, find_sources_row, has_index_ready
from scheduler.jobgen.building import fixed_harvest_info
from scheduler.metrics import SchedulerMetrics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DispatchOptions:
    ready_max_age: int = 120
    deduplication_enabled: bool = True
    limit_submitted_jobs_in_queue: bool = False
    submitted_jobs_in_queue_limit: int = 1
    release_timeout: int = 600  # seconds after which a released, unclaimed job no longer holds back its controller


def build_do_one_crawl(conn: Connection, job: Job, attempt_id: str, deduplication_enabled: bool) -> DoOneCrawl:
    """The job as its DoOneCrawl message: template, seeds, limits, harvest info and pre-harvest metadata.

    The harvest info is what job generation fixed in the template's warcinfo map (read back by
    scheduler.jobgen.building.fixed_harvest_info), so a harvest renamed since then does not make
    harvestInfo.xml disagree with the job's WARCs. Only a job whose template holds no such map (its WARCs
    name no harvest either) gets the harvest's values as they are now, and no ``harvest_info``.

    With deduplication on, the metadata carries the job's deduplication sources from job_dedup_sources
    (scheduler.dedupsources), or, for a run made ready before migration 0028_job_dedup_sources with one
    index of every job before it, that index's path and jobs from harvest_run_dedup_index; a job with
    neither (a first selective run) deduplicates against no job. Off, the job list is None.
    """
    rows = conn.execute(_HARVEST_AND_MEMBERS, {"harvest_id": job.harvest_id, "job_id": job.job_id}).all()
    if not rows:
        raise StaleJobError(job.job_id, f"a job of harvest {job.harvest_id}", "a job whose harvest is gone")
    harvest = rows[0]
    members = [row for row in rows if row.name is not None]
    aliases = [AliasRecord(domain=row.name, alias_of=row.alias_of,
                         last_change=row.lastaliasupdate.isoformat() if row.lastaliasupdate else "")
               for row in members if row.alias_of is not None]
    dedup_ids: list[int] | None = None
    dedup_index: str | None = None
    dedup_sources: list[DeduplicationSource] | None = None
    if deduplication_enabled:
        own = find_sources_row(conn, job.job_id)
        index = None if own is not None else find_run_index(conn, HarvestRun(job.harvest_id, job.harvest_num))
        if own is not None:
            dedup_sources = [DeduplicationSource(harvest_id, job_id) for harvest_id, job_id in own.sources]
            dedup_ids = [source.job_id for source in dedup_sources]
        else:
            dedup_ids = list(index.job_ids) if index is not None else []
            dedup_index = index.index_path if index is not None else None
    fixed = fixed_harvest_info(job.orderxmldoc)
    if fixed is not None:
        names, harvest_info = fixed
    else:
        names = {"harvest_name": harvest.harvest_name, "harvest_comments": harvest.comments or "",
                 "audience": harvest.audience or "", "schedule_name": harvest.schedule_name or ""}
        harvest_info = None
    return DoOneCrawl(
        job_id=job.job_id, attempt_id=attempt_id, harvest_id=job.harvest_id, **names,
        channel=job.channel, snapshot=job.snapshot,
        max_objects_per_domain=job.forcemaxcount if job.forcemaxcount is not None else -1,
        max_bytes_per_domain=job.forcemaxbytes, max_running_time=job.forcemaxrunningtime or 0,
        template_name=job.orderxml, template=job.orderxmldoc, seeds=job.seeds,
        domain_configurations={row.name: row.config for row in members}, harvest_num=job.harvest_num,
        archive_file_prefix=job.harvestname_prefix or f"{job.job_id}-{job.harvest_id}",
        metadata=PreHarvestMetadata(aliases=aliases, deduplication_job_ids=dedup_ids,
                                    deduplication_index=dedup_index, deduplication_sources=dedup_sources),
        harvest_info=harvest_info)


def _harvest_and_members() -> Any:
    """The harvest's fields of a DoOneCrawl and the job's domains, configurations and aliases in one query:
    one row per domain of the job, the harvest's fields on each (a single row with no domain if the job
    has none). The harvest's names are used only for a job whose template fixed none; they cost nothing
    here, as the harvest's row is read anyway to know that it still exists."""
    hd, partial, sched = s.harvestdefinitions, s.partialharvests, s.schedules
    jc, c, d = s.job_configs, s.configurations, s.domains
    alias_target = d.alias("alias_target")
    members = (jc.join(c, c.c.config_id == jc.c.config_id).join(d, d.c.domain_id == c.c.domain_id)
               .outerjoin(alias_target, alias_target.c.domain_id == d.c.alias))
    return (
        select(hd.c.name.label("harvest_name"), hd.c.comments, hd.c.audience, sched.c.name.label("schedule_name"),
               d.c.name, c.c.name.label("config"), alias_target.c.name.label("alias_of"), d.c.lastaliasupdate)
        .select_from(hd.outerjoin(partial, partial.c.harvest_id == hd.c.harvest_id)
                     .outerjoin(sched, sched.c.schedule_id == partial.c.schedule_id)
                     .outerjoin(members, jc.c.job_id == bindparam("job_id")))
        .where(hd.c.harvest_id == bindparam("harvest_id")).order_by(d.c.name))


_HARVEST_AND_MEMBERS = _harvest_and_members()


def _may_go(conn: Connection, job: Job) -> bool:
    """The job's deduplication sources are ready, or its run has an index, or it needs none (a first
    selective run)."""
    if not job.snapshot and job.harvest_num <= 1:
        return True
    own = find_sources_row(conn, job.job_id)
    if own is not None:
        return own.ready
    index = find_run_index(conn, HarvestRun(job.harvest_id, job.harvest_num))
    return index is not None and index.ready


class Dispatcher:
    """Releases jobs for ready messages and answers claims, counting both in ``metrics`` once committed."""

    def __init__(self, names: QueueNames, options: DispatchOptions, metrics: SchedulerMetrics | None = None) -> None:
        self.names = names
        self.options = options
        self.metrics = metrics if metrics is not None else SchedulerMetrics()

    def ready(self, batch: Batch, ready: HarvesterReady, sent_at: datetime) -> int | None:
        """Release one job for an idle controller; returns its id, or None when nothing was released. The
        DoOneCrawl is published, confirmed, before the batch commits."""
        now = utcnow()
        if now - sent_at > timedelta(seconds=self.options.ready_max_age):
            log.info("ready message of %s sent at %s is older than %d s; ignored", ready.controller_id, sent_at,
                     self.options.ready_max_age)
            return None
        conn = batch.conn
        harvester = conn.execute(_TOUCH_READY_PG if is_postgresql(conn.engine) else _TOUCH_READY,
                                 {"b_cid": ready.controller_id, "b_now": now}).first()
        if harvester is None:
            log.warning("ready message of unregistered controller %s ignored", ready.controller_id)
            return None
        if harvester.released_job_id is not None and self._still_waiting(
                conn, harvester.released_job_id, harvester.released_at, now,
                harvester.unclaimed if is_postgresql(conn.engine) else None):
            return None
        registered = [name.upper() for name in harvester.channels.split(",") if name]
        for channel in [name.upper() for name in ready.channels]:
            if channel not in registered or self._throttled(conn, channel):
                continue
            job = self._next_job(conn, channel)
            if job is None:
                continue
            attempt_id = uuid.uuid4().hex
            batch.jobs().change_status(job.job_id, JobStatus.NEW, JobStatus.SUBMITTED, attempt_id=None,
                                       values={"attempt_id": attempt_id, "submitteddate": now})
            message = build_do_one_crawl(conn, job, attempt_id, self.options.deduplication_enabled)
            conn.execute(_MARK_RELEASED, {"b_cid": ready.controller_id, "b_job_id": job.job_id, "b_now": now})
            # Published and confirmed before the commit: see the module docstring.
            batch.publish_before_commit(self.names.jobs(channel), encode(message))
            batch.after_commit(functools.partial(log.info, "job %d (attempt %s) submitted to channel %s for %s",
                                                 job.job_id, attempt_id, channel, ready.controller_id))
            batch.after_commit(self.metrics.dispatched.labels(channel=channel).inc)
            return job.job_id
        return None

    def _next_job(self, conn: Connection, channel: str) -> Job | None:
        """The oldest NEW job of ``channel`` that may go now: with deduplication on, its sources are ready.

        The oldest NEW job almost always may go, and asking for it alone is the cheap query; only when it
        may not is the readiness condition put into the query."""
        repository = JobRepository(conn)
        job = repository.oldest_new(channel)
        if job is None or not self.options.deduplication_enabled or _may_go(conn, job):
            return job
        return repository.oldest_new(channel, has_index_ready(s.jobs))

    def _still_waiting(self, conn: Connection, job_id: int, released_at: datetime | None, now: datetime,
                       unclaimed: bool | None = None) -> bool:
        """The job released for the controller's previous ready message is still unclaimed in its queue
        (``unclaimed``, when the caller has read it already)."""
        if released_at is None or now - released_at > timedelta(seconds=self.options.release_timeout):
            return False
        if unclaimed is not None:
            return unclaimed
        return conn.scalar(_UNCLAIMED, {"b_job_id": job_id}) == 1

    def _throttled(self, conn: Connection, channel: str) -> bool:
        if not self.options.limit_submitted_jobs_in_queue:
            return False
        j = s.jobs
        waiting = conn.scalar(select(func.count()).where(
            j.c.channel == channel, j.c.status == int(JobStatus.SUBMITTED), j.c.controller.is_(None)))
        return waiting >= self.options.submitted_jobs_in_queue_limit

    def claim(self, batch: Batch, claim: ClaimRequest, sent_at: datetime) -> ClaimAnswer:
        """Grant the attempt to the asking controller if nobody else holds it; the answer is published to
        the claim's reply queue after the batch has committed (a lost answer makes the controller ask
        again, and the same controller is granted again)."""
        answer = self._decide_claim(batch, claim, utcnow())
        batch.answer_after_commit(claim.reply_queue, encode(answer))

        def sent() -> None:
            self.metrics.claims.labels(outcome="granted" if answer.granted else "refused").inc()
            if answer.granted:
                log.info("job %d attempt %s granted to %s", claim.job_id, claim.attempt_id, claim.controller_id)
            else:
                log.warning("claim of job %d attempt %s by %s refused: %s", claim.job_id, claim.attempt_id,
                            claim.controller_id, answer.reason)

        batch.after_commit(sent)
        return answer

    def _decide_claim(self, batch: Batch, claim: ClaimRequest, now: datetime) -> ClaimAnswer:
        def answer(granted: bool, reason: str = "") -> ClaimAnswer:
            return ClaimAnswer(job_id=claim.job_id, attempt_id=claim.attempt_id, controller_id=claim.controller_id,
                               granted=granted, reason=reason,
                               control_queue=self.names.control(claim.controller_id) if granted else "")

        jobs = batch.jobs(claim.controller_id)
        # The usual claim, the first of a SUBMITTED job's attempt, is the compare-and-set alone; every
        # other case is read and decided below.
        if jobs.grant_claim(claim.job_id, claim.attempt_id, claim.controller_id, now):
            return answer(True)
        job = jobs.find(claim.job_id, with_documents=False, for_update=True)
        if job is None:
            return answer(False, f"there is no job {claim.job_id}")
        if job.attempt_id != claim.attempt_id:
            return answer(False, f"attempt {claim.attempt_id} is not the current attempt of job {job.job_id} "
                                 f"({job.attempt_id}); the job was dispatched again")
        if job.status not in (JobStatus.SUBMITTED, JobStatus.STARTED):
            return answer(False, f"job {job.job_id} is {job.status}")
        if job.controller is not None:
            if job.controller != claim.controller_id:
                return answer(False, f"job {job.job_id} attempt {job.attempt_id} is granted to {job.controller}")
            if job.interrupted and batch.jobs().set_interrupted(job.job_id, job.attempt_id, False):
                JobEventRepository(batch.conn).record(
                    job_id=job.job_id, attempt_id=claim.attempt_id, controller_id=claim.controller_id,
                    kind=CONTROLLER_BACK, checkpoint="", happened_at=now, received_at=now)
            return answer(True, "granted again to the same controller")
        if job.status != JobStatus.SUBMITTED:
            return answer(False, f"job {job.job_id} is {job.status} without a controller")
        if not jobs.grant_claim(job.job_id, claim.attempt_id, claim.controller_id, now):
            # another claim committed between our read and our update (PostgreSQL's row lock made us wait)
            holder = jobs.get(job.job_id, with_documents=False).controller
            if holder == claim.controller_id:
                return answer(True, "granted again to the same controller")
            return answer(False, f"job {job.job_id} attempt {job.attempt_id} is granted to {holder}")
        return answer(True)


def _statements() -> tuple[Any, Any, Any, Any]:
    """The dispatcher's statements, built once: a ready message or a claim costs their execution only."""
    h, j = s.harvesters, s.jobs
    # A ready message is the most frequent of all (every idle controller sends them): its controller's
    # row, checked and touched in one statement.
    touch_ready = (update(h).where(h.c.controller_id == bindparam("b_cid"), h.c.accepted.is_(True))
                   .values(last_ready=bindparam("b_now"))
                   .returning(h.c.channels, h.c.released_job_id, h.c.released_at))
    # PostgreSQL also says whether the job released for the previous ready message is still unclaimed
    # (a subquery in RETURNING): most ready messages, those of controllers whose job is on its way, then
    # cost one statement.
    unclaimed_release = (select(j.c.job_id).where(j.c.job_id == h.c.released_job_id,
                                                  j.c.status == int(JobStatus.SUBMITTED), j.c.controller.is_(None))
                         .exists().label("unclaimed"))
    touch_ready_pg = touch_ready.returning(unclaimed_release)
    mark_released = (update(h).where(h.c.controller_id == bindparam("b_cid"))
                     .values(released_job_id=bindparam("b_job_id"), released_at=bindparam("b_now")))
    unclaimed = select(func.count()).where(j.c.job_id == bindparam("b_job_id"), j.c.status == int(JobStatus.SUBMITTED),
                                           j.c.controller.is_(None))
    return touch_ready, touch_ready_pg, mark_released, unclaimed


_TOUCH_READY, _TOUCH_READY_PG, _MARK_RELEASED, _UNCLAIMED = _statements()
