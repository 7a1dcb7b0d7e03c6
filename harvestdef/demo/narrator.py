"""Tells the person watching the demo what happens and where to look, from the harvest database.

It reads what the scheduler and the harvest controller wrote (jobs, their statuses, job_events, historyinfo,
harvest_findings) every few seconds and logs one line per event: a job made, queued, crawling, resumed from
its checkpoint after a restart, done with its figures, the configurations that got nothing and why, the page
that shows it and, with replay running, its first seed as harvested, or failed with the reason. The hint
that the first harvest is in is said once per demo directory: a run that finds a DONE job of an earlier run
does not say it again. It also plays the curator's part for the snapshot harvest: once step 1 has finished
it activates step 2, naming the domains step 2 continues.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from datetime import UTC
from pathlib import Path

from sqlalchemy import Engine, func, or_, select

from harvestdef.db import schema as s
from harvestdef.db.availability import unavailability
from harvestdef.demo import definitions
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.replay.layout import ALL_COLLECTION
from harvestdef.repositories.jobevents import RESUME
from harvestdef.seeds import seed_lines
from harvestdef.words import plural

log = logging.getLogger("harvestsuite.demo")

UNFINISHED = (JobStatus.NEW, JobStatus.SUBMITTED, JobStatus.STARTED)
FINDINGS_TOLD = 3  # configurations that got nothing named in a job's done line; the job page lists them all
LIMIT_REASONS = (StopReason.OBJECT_LIMIT, StopReason.SIZE_LIMIT, StopReason.CONFIG_OBJECT_LIMIT,
                 StopReason.CONFIG_SIZE_LIMIT)


def _size(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def failure_reason(row) -> str:  # noqa: ANN001 - a result row of jobs
    """Why a job FAILED, from its record: the harvest's errors and the upload's (a job that failed at the
    upload has only these), each said where it comes from."""
    said = [f"{what}: {text}" for what, text in (("harvest", row.harvest_errors), ("upload", row.upload_errors))
            if text]
    return "; ".join(said) or "its record names no reason (the job page may say more)"


class Narrator:
    """Polls the harvest database every ``interval`` seconds until ``stop`` is set; ``replay_url``, the
    replay service's address ("" when it does not run)."""

    def __init__(self, engine: Engine, web_url: str, archive_root: Path, interval: float = 2.0,
                 replay_url: str = "") -> None:
        self.engine = engine
        self.web_url = web_url.rstrip("/")
        self.replay_url = replay_url.rstrip("/")
        self.archive_root = archive_root
        self.interval = interval
        self._seen: dict[int, JobStatus] = {}
        self._highest = 0
        self._highest_event = 0  # job_events told: the resumes of this run only
        self._first_done = True
        self._unavailable = False  # the last look found the database not answering (said once)

    def start(self) -> None:
        """Take what earlier runs of the demo did as history: only what happens from now on is told."""
        with self.engine.connect() as conn:
            self._highest = conn.scalar(select(func.coalesce(func.max(s.jobs.c.job_id), 0))) or 0
            self._highest_event = conn.scalar(select(func.coalesce(func.max(s.job_events.c.event_id), 0))) or 0
            unfinished = conn.execute(select(s.jobs.c.job_id, s.jobs.c.status).where(
                s.jobs.c.status.in_(UNFINISHED)))
            self._seen = {row.job_id: JobStatus(row.status) for row in unfinished}
            # an earlier run had its first harvest in, and said so then
            self._first_done = conn.scalar(select(s.jobs.c.job_id).where(
                s.jobs.c.status == int(JobStatus.DONE)).limit(1)) is None

    def run(self, stop: threading.Event) -> None:
        self.start()
        while not stop.wait(self.interval):
            try:
                self.look()
            except Exception as exc:  # noqa: BLE001 - the story may miss a beat; the demo must go on
                unavailable = unavailability(exc)
                if unavailable is None:
                    log.exception("could not read the harvest database this time")
                elif not self._unavailable:  # once, not at every look, until it answers again
                    log.warning("the story pauses: %s", unavailable)
                self._unavailable = unavailable is not None
                continue
            if self._unavailable:
                log.info("the harvest database answers again; the story goes on")
                self._unavailable = False

    def look(self) -> None:
        """One look: log what changed since the last one."""
        jobs, harvests = s.jobs, s.harvestdefinitions
        watched = [job_id for job_id, status in self._seen.items() if status in UNFINISHED]
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(jobs.c.job_id, jobs.c.status, jobs.c.harvest_num, jobs.c.channel, jobs.c.num_configs,
                       jobs.c.controller, jobs.c.harvest_errors, jobs.c.upload_errors, jobs.c.harvest_id,
                       harvests.c.name)
                .join(harvests, harvests.c.harvest_id == jobs.c.harvest_id)
                .where(or_(jobs.c.job_id > self._highest, jobs.c.job_id.in_(watched)))
                .order_by(jobs.c.job_id)).all()
            for row in rows:
                status = JobStatus(row.status)
                before = self._seen.get(row.job_id)
                if before == status:
                    continue
                if before is None and status != JobStatus.NEW:
                    self._tell(conn, row, JobStatus.NEW)  # made and taken between two looks
                self._highest = max(self._highest, row.job_id)
                self._seen[row.job_id] = status
                self._tell(conn, row, status)
                if status not in UNFINISHED:
                    del self._seen[row.job_id]  # a final status is told once; the job is not watched further
            self._tell_resumes(conn)
        continued = definitions.activate_continuation(self.engine)
        if continued:
            self._tell_continuation(continued)

    def _tell(self, conn, row, status: JobStatus) -> None:  # noqa: ANN001 - a Connection and a result row
        what = f"job {row.job_id} ({row.name}, run {row.harvest_num})"
        if status == JobStatus.NEW:
            log.info("%s made by the scheduler: %d domain configuration%s for harvest channel %s", what,
                     row.num_configs, "" if row.num_configs == 1 else "s", row.channel)
        elif status == JobStatus.SUBMITTED:
            log.info("%s queued on harvest channel %s", what, row.channel)
        elif status == JobStatus.STARTED:
            log.info("%s crawling on harvest controller %s: %s/status/jobs/%d", what, row.controller or "?",
                     self.web_url, row.job_id)
        elif status == JobStatus.DONE:
            self._tell_done(conn, row, what)
        elif status == JobStatus.FAILED:
            log.warning("%s FAILED: %s (%s/status/jobs/%d)", what, failure_reason(row), self.web_url, row.job_id)
        else:
            log.info("%s is %s", what, status.name)

    def _tell_resumes(self, conn) -> None:  # noqa: ANN001 - a Connection
        """A crawl an earlier run checkpointed at its stop, launched again from its checkpoint."""
        events, jobs, harvests = s.job_events, s.jobs, s.harvestdefinitions
        rows = conn.execute(
            select(events.c.event_id, events.c.job_id, events.c.controller_id, events.c.checkpoint,
                   jobs.c.harvest_num, harvests.c.name)
            .join(jobs, jobs.c.job_id == events.c.job_id).join(harvests, harvests.c.harvest_id == jobs.c.harvest_id)
            .where(events.c.event_id > self._highest_event, events.c.kind == RESUME)
            .order_by(events.c.event_id)).all()
        for row in rows:
            self._highest_event = row.event_id
            log.info("resumed job %d (%s, run %d) from its checkpoint %s on harvest controller %s: %s/status/jobs/%d",
                     row.job_id, row.name, row.harvest_num, row.checkpoint, row.controller_id, self.web_url,
                     row.job_id)

    def _tell_done(self, conn, row, what: str) -> None:  # noqa: ANN001
        history = s.historyinfo
        figures = conn.execute(select(history.c.objectcount, history.c.bytecount, history.c.duplicate_objects,
                                      history.c.stopreason).where(history.c.job_id == row.job_id)).all()
        objects = sum(f.objectcount for f in figures)
        size = sum(f.bytecount for f in figures)
        duplicates = sum(f.duplicate_objects or 0 for f in figures)
        reasons = Counter(StopReason(f.stopreason).name for f in figures)
        stops = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
        revisits = ("" if not duplicates else
                    ", 1 of them a payload archived before (a revisit record, not stored again)" if duplicates == 1
                    else f", {duplicates:,} of them payloads archived before (revisit records, not stored again)")
        log.info("%s DONE: %s, %s from %s (%s)%s%s", what, plural(objects, "object"), _size(size),
                 plural(len(figures), "domain"), stops, revisits, self._nothing_harvested(conn, row.job_id))
        directory = self.archive_root / str(row.harvest_id) / str(row.job_id)
        warcs = sorted(path.name for path in directory.glob("*.warc.gz")) if directory.is_dir() else []
        log.info("    its WARCs, metadata WARC, CDXJ and deduplication entries: %s (%s)", directory,
                 plural(len(warcs), "WARC file"))
        log.info("    the job: %s/status/jobs/%d   the harvest's statistics: %s/history/harvests/%s",
                 self.web_url, row.job_id, self.web_url, row.name.replace(" ", "%20"))
        replayed = self._replay_of_first_seed(conn, row.job_id)
        if replayed:
            log.info("    its first seed as harvested, replayed by pywb at %s: %s", self.replay_url, replayed)
        if self._first_done:
            self._first_done = False
            log.info("    (the first harvest is in: log in at %s to look around; this log goes on telling what "
                     "happens)", self.web_url)

    def _replay_of_first_seed(self, conn, job_id: int) -> str | None:  # noqa: ANN001 - a Connection
        """The replay address of the job's first seed at the job's start (pywb's form, as the job page links
        it), or None without replay."""
        if not self.replay_url:
            return None
        job = conn.execute(select(s.jobs.c.startdate, s.jobs.c.seedlist).where(s.jobs.c.job_id == job_id)).first()
        seeds = seed_lines(job.seedlist) if job is not None else []
        if not seeds or job.startdate is None:
            return None
        started = job.startdate.astimezone(UTC) if job.startdate.tzinfo else job.startdate
        return f"{self.replay_url}/{ALL_COLLECTION}/{started:%Y%m%d%H%M%S}/{seeds[0]}"

    @staticmethod
    def _nothing_harvested(conn, job_id: int) -> str:  # noqa: ANN001 - a Connection
        """"; 1 configuration got nothing: dead.example (DNS lookup failed (-6) for ...)", or "" if none."""
        findings, configurations, domains = s.harvest_findings, s.configurations, s.domains
        rows = conn.execute(
            select(domains.c.name, findings.c.reason)
            .select_from(findings.join(configurations, configurations.c.config_id == findings.c.config_id)
                         .join(domains, domains.c.domain_id == configurations.c.domain_id))
            .where(findings.c.job_id == job_id).order_by(domains.c.name)).all()
        if not rows:
            return "; every domain got something"
        told = ", ".join(f"{row.name} ({row.reason})" for row in rows[:FINDINGS_TOLD])
        more = f" and {len(rows) - FINDINGS_TOLD} more" if len(rows) > FINDINGS_TOLD else ""
        return f"; {plural(len(rows), 'configuration')} got nothing: {told}{more}"

    def _tell_continuation(self, name: str) -> None:
        history, harvests = s.historyinfo, s.harvestdefinitions
        with self.engine.connect() as conn:
            step_1 = select(harvests.c.harvest_id).where(harvests.c.name == definitions.SNAPSHOT_STEP_1)
            stopped = conn.scalar(select(func.count()).select_from(history).where(
                history.c.harvest_id == step_1.scalar_subquery(), history.c.stopreason.in_(LIMIT_REASONS)))
        log.info("%s has finished; %s stopped on its limit of %s: activated %r, which continues exactly %s",
                 definitions.SNAPSHOT_STEP_1, plural(stopped or 0, "domain"),
                 plural(definitions.STEP_1_MAX_OBJECTS, "object"), name, "that one" if stopped == 1 else "those")
