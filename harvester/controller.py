"""The harvest controller: takes one job at a time from its harvest channels, crawls it, post-processes it,
stores its files in the archive store and reports to the scheduler (docs/architecture.md, One harvest, from
definition to historyinfo, steps 6-10).

It never opens the harvest database: jobs come as DoOneCrawl messages, answers go back as messages, files
go to the archive store. Its durable state is its serverDir: one directory per job (harvester/jobdir.py).

Its states and the moves between them are one table, ``HARVEST_CONTROLLER_TRANSITIONS``::

    STARTING -> IDLE <-> PAUSED (too little disk)
    IDLE -> CRAWLING -> POSTPROCESSING -> IDLE
    any -> STOPPING (SIGTERM, or shutdown.txt in serverDir)

While IDLE it sends a ready message every sendReadyDelay seconds and waits for a job; while PAUSED it
sends none and takes none, says why in its log and heartbeat, and resumes by itself once space is back.
Heartbeats go out from their own thread every heartbeatInterval seconds in every state.

An archive store outage holds the controller for one backoff schedule per job (harvester/upload.py),
never per file. A job whose files are still not stored after it is reported FAILED and left in its job
directory, and the controller takes other work: between jobs and while idle, every
leftoverUploadInterval seconds, it makes one more pass over such directories, and at its next start it
does the same (docs/harvester.md, Archive store outages). That is safe because the job directory is the
controller's durable state: ``reported.json`` and the upload ledger survive a restart, and the retries run
in the controller's own loop, never beside a crawl's post-processing of the same directory. Once every file is stored, a
job that failed only because of the store is reported again, DONE.

The crawl's checkpoints (at shutdown, or asked for through the crawler's REST API) and resumes are
reported to the scheduler as JobEvent messages, for the job page.

While a crawl runs, each status poll goes to the monitor queue as a CrawlProgress message, and every
frontierReportWaitTime seconds the crawler's frontier as a FrontierReport (harvester/crawldriver.py).

What it does is counted in ``metrics`` (harvester/metrics.py): its state and job, read when scraped, and each
status poll's figures, post-processing and upload times; its role serves them on
``harvestsuite.metrics.harvesterPort``.

The controller alone sends what it tells the scheduler: STARTED, the FAILED of a job it could not set
up, and the final status and second report that post-processing makes (harvester/finish.py's
``JobReport``), each sent before the job directory records it sent (``_send_report``).
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from harvestdef import __version__
from harvestdef.archive import ArchiveStore
from harvestdef.dedup.jobindex import build_job_index
from harvestdef.errors import HarvestSuiteError, HeritrixError, SettingsError
from harvestdef.messages import CrawlTally, DoOneCrawl, HarvesterStatus
from harvestdef.model.status import JobStatus
from harvestdef.queues import QueueNames, Transport
from harvestdef.settings import Settings
from harvester.crawldriver import CrawlDriver, DriverOptions
from harvester.engineprocess import BundledEngine
from harvester.finish import JobReport, PostProcessor
from harvester.frontierqueues import FrontierQueues
from harvester.heritrix import HeritrixClient
from harvester.heritrix3.model import JobResource
from harvester.identity import controller_id_from_settings
from harvester.jobdir import CrawlOutcome, JobDirectory, JobDirectoryError, unfinished_job_directories
from harvester.livetally import LiveTally
from harvester.metrics import ControllerMetrics
from harvester.progress import crawl_progress, frontier_reports
from harvester.protocol import RegistrationRefusedError, SchedulerLink, SchedulerSilentError, TakenJob
from harvester.steering import CrawlSteering

log = logging.getLogger(__name__)

STARTING, IDLE, PAUSED, CRAWLING, POSTPROCESSING, STOPPING = (
    "STARTING", "IDLE", "PAUSED", "CRAWLING", "POSTPROCESSING", "STOPPING")
HARVEST_CONTROLLER_TRANSITIONS: dict[str, frozenset[str]] = {
    STARTING: frozenset({IDLE, PAUSED, CRAWLING, POSTPROCESSING, STOPPING}),
    IDLE: frozenset({PAUSED, CRAWLING, POSTPROCESSING, STOPPING}),
    PAUSED: frozenset({IDLE, POSTPROCESSING, STOPPING}),
    CRAWLING: frozenset({POSTPROCESSING, STOPPING}),
    POSTPROCESSING: frozenset({IDLE, PAUSED, STOPPING}),
    STOPPING: frozenset(),
}
SHUTDOWN_FILE = "shutdown.txt"
INTERRUPTED = "crawl interrupted: the harvest controller stopped before the crawl ended"


def browser_settings(settings: Settings) -> tuple[tuple[str, object], ...]:
    """The browser crawler's settings in force (harvestsuite.crawler.browser.*), by dotted key."""
    return tuple((key, value) for key, value in settings.effective().items()
                 if key.startswith("harvestsuite.crawler.browser."))


class ControllerStateError(HarvestSuiteError):
    """A move the controller's state table does not allow."""


@dataclass(frozen=True)
class ControllerOptions:
    server_dir: Path
    oldjobs_dir: Path
    channels: tuple[str, ...]
    min_space_left: int
    send_ready_delay: float
    heartbeat_interval: float
    driver: DriverOptions
    heritrix_url: str          # empty: the bundled engine
    heritrix_user: str
    heritrix_password: str
    engine_port: int
    engine_bind: str
    hosts_file: str
    engine_start_timeout: float
    request_timeout: float = 30.0
    # None: the bundled engine fetches; else the browser crawler, with these harvestsuite.crawler.browser.* values
    browser_settings: tuple[tuple[str, object], ...] | None = None
    answer_timeout: float = 30.0
    leftover_upload_interval: float = 300.0
    # live changes: how many one round applies, and how long collecting a round waits for the next message
    live_change_batch: int = 500
    live_change_drain_wait: float = 0.02
    # harvestsuite.network.allowDestinations, handed to the bundled engine: what its crawls may connect to
    allow_destinations: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: Settings, channels: tuple[str, ...] | None = None) -> ControllerOptions:
        h = settings.harvester
        if h.crawler == "browser" and h.heritrixUrl:
            raise SettingsError("harvestsuite.harvester.crawler = browser starts the browser crawler, which "
                                f"an external Heritrix (harvestsuite.harvester.heritrixUrl = {h.heritrixUrl}) is not: "
                                "leave heritrixUrl empty on the BROWSER channel's controllers")
        server_dir = Path(h.serverDir).resolve()
        oldjobs = Path(h.oldjobsDir)
        return cls(
            server_dir=server_dir, oldjobs_dir=oldjobs if oldjobs.is_absolute() else server_dir / oldjobs,
            channels=tuple(c.strip().upper() for c in (channels or h.channels) if c.strip()),
            min_space_left=h.minSpaceLeft, send_ready_delay=h.sendReadyDelay,
            heartbeat_interval=h.heartbeatInterval,
            driver=DriverOptions(poll_interval=h.crawlLoopWaitTime, inactivity_timeout=h.inactivityTimeout,
                                 noresponse_timeout=h.noresponseTimeout, poll_retries=h.statusPollRetries,
                                 start_timeout=h.engineStartTimeout, shutdown_action=h.shutdownAction,
                                 frontier_report_interval=h.frontierReportWaitTime),
            heritrix_url=h.heritrixUrl, heritrix_user=h.heritrixUser, heritrix_password=h.heritrixPassword,
            engine_port=settings.crawler.port, engine_bind=settings.crawler.bind,
            hosts_file=settings.crawler.hostsFile, engine_start_timeout=h.engineStartTimeout,
            request_timeout=h.statusPollTimeout, leftover_upload_interval=h.leftoverUploadInterval,
            live_change_batch=settings.livechanges.applyBatch,
            live_change_drain_wait=settings.livechanges.drainWaitMs / 1000.0,
            browser_settings=browser_settings(settings) if h.crawler == "browser" else None,
            allow_destinations=settings.network.allowDestinations)


class HarvestController:
    def __init__(self, options: ControllerOptions, transport: Transport, names: QueueNames, store: ArchiveStore,
                 postprocessor: PostProcessor, controller_id: str, host: str | None = None) -> None:
        if options.min_space_left <= 0:
            raise HarvestSuiteError(f"harvester.harvesting.minSpaceLeft must be > 0, not {options.min_space_left}")
        self.options = options
        self.transport = transport
        self.store = store
        self.postprocessor = postprocessor
        self.controller_id = controller_id
        self.host = host or socket.gethostname()
        self.stop_event = threading.Event()
        # A shutdown ends an upload's backoff at once: the job directory keeps what is left to store.
        self.postprocessor.wait = self.stop_event.wait
        self.link = SchedulerLink(transport, names, controller_id, self.host, list(options.channels),
                                  options.answer_timeout, stop=self.stop_event)
        self.state = STARTING
        self.pause_reason = ""
        self.current: DoOneCrawl | None = None
        self._state_lock = threading.Lock()
        self.jobs_done: list[tuple[int, JobStatus]] = []
        self.metrics = ControllerMetrics(controller_id, self.host, options.channels, __version__,
                                         HARVEST_CONTROLLER_TRANSITIONS, lambda: self.state,
                                         self._current_job_id, self.free_disk)
        self.postprocessor.on_upload = self.metrics.upload_done

    @classmethod
    def from_settings(cls, settings: Settings, transport: Transport,
                      channels: tuple[str, ...] | None = None) -> HarvestController:
        options = ControllerOptions.from_settings(settings, channels)
        options.server_dir.mkdir(parents=True, exist_ok=True)
        store = ArchiveStore.from_settings(settings)
        return cls(options, transport, QueueNames(settings.queue.environmentName), store,
                   PostProcessor.from_settings(settings, store), controller_id_from_settings(settings.harvester))

    # ------------------------------------------------------------------ state
    def _move(self, new: str) -> None:
        with self._state_lock:
            if new == self.state:
                return
            if new not in HARVEST_CONTROLLER_TRANSITIONS[self.state]:
                raise ControllerStateError(f"harvest controller {self.controller_id}: {self.state} -> {new} is not "
                                           f"allowed")
            log.info("harvest controller %s: %s -> %s", self.controller_id, self.state, new)
            self.state = new

    def request_stop(self) -> None:
        self.stop_event.set()

    def _should_stop(self) -> bool:
        if (self.options.server_dir / SHUTDOWN_FILE).exists() and not self.stop_event.is_set():
            log.warning("%s found in %s: stopping", SHUTDOWN_FILE, self.options.server_dir)
            self.stop_event.set()
        return self.stop_event.is_set()

    def _current_job_id(self) -> int | None:
        job = self.current  # read once: the controller's thread may clear it meanwhile
        return job.job_id if job is not None else None

    # ------------------------------------------------------------------ heartbeats
    def free_disk(self) -> int:
        return shutil.disk_usage(self.options.server_dir).free

    def heartbeat(self) -> None:
        job = self.current
        try:
            load = os.getloadavg()[0]
        except OSError:
            load = 0.0
        self.link.send_heartbeat(HarvesterStatus(
            controller_id=self.controller_id, host=self.host, pid=os.getpid(), version=__version__,
            channels=list(self.options.channels), free_disk_bytes=self.free_disk(), load_average=load,
            memory_rss_bytes=_rss_bytes(), paused=self.state == PAUSED, pause_reason=self.pause_reason,
            current_job_id=job.job_id if job else None, current_attempt_id=job.attempt_id if job else None,
            current_job_state={CRAWLING: "crawling", POSTPROCESSING: "post-processing"}.get(self.state, "idle"),
            heartbeat_interval=self.options.heartbeat_interval, min_space_left=self.options.min_space_left))

    def _heartbeats(self) -> None:
        while not self.stop_event.wait(self.options.heartbeat_interval):
            try:
                self.heartbeat()
            except Exception as exc:  # noqa: BLE001 - a lost heartbeat must not end the thread
                log.warning("heartbeat not sent: %s", exc)

    # ------------------------------------------------------------------ the main loop
    def run(self) -> None:
        """Process leftovers, register, then take and crawl jobs until asked to stop."""
        options = self.options
        options.server_dir.mkdir(parents=True, exist_ok=True)
        log.info("harvest controller %s on %s: channels %s, serverDir %s, crawler %s", self.controller_id, self.host,
                 ",".join(options.channels), options.server_dir,
                 options.heritrix_url or ("browser" if options.browser_settings is not None else "engine"))
        if not options.heritrix_url:
            self._engine().stop_stale()
        resumable = self.process_leftovers()
        self._register()
        heartbeats = threading.Thread(target=self._heartbeats, name="heartbeats", daemon=True)
        heartbeats.start()
        try:
            self.heartbeat()
            for directory in resumable:
                if self._should_stop():
                    break
                self._resume(directory)
            if not self._should_stop():  # a resumed crawl checkpointed at shutdown goes straight to STOPPING
                self._move(IDLE)
            last_ready = 0.0
            last_upload_retry = time.monotonic()
            while not self._should_stop():
                if time.monotonic() - last_upload_retry >= options.leftover_upload_interval:
                    self.retry_uploads()
                    last_upload_retry = time.monotonic()
                if not self._has_space():
                    self.stop_event.wait(min(options.send_ready_delay, 5.0))
                    continue
                if time.monotonic() - last_ready >= options.send_ready_delay:
                    self.link.send_ready()
                    last_ready = time.monotonic()
                taken = self.link.take_job(wait=1.0)
                if taken is None:
                    if len(options.channels) > 1:
                        self.stop_event.wait(1.0)
                    continue
                if self._take(taken) and not self.stop_event.is_set():
                    last_ready = 0.0
                    self.process_leftovers()
        finally:
            if self.state != STOPPING:
                self._move(STOPPING)
            self.stop_event.set()
            heartbeats.join(timeout=5)
            try:
                self.heartbeat()
            except Exception as exc:  # noqa: BLE001 - the last heartbeat is a courtesy
                log.info("last heartbeat not sent: %s", exc)

    def _register(self) -> None:
        delay = 1.0
        while not self._should_stop():
            try:
                answer = self.link.register()
                log.info("registered for channels %s", ", ".join(c.name for c in answer.channels))
                return
            except SchedulerSilentError as exc:
                log.warning("%s; asking again in %.0f s", exc, delay)
                self.stop_event.wait(delay)
                delay = min(delay * 2, 60.0)
            except RegistrationRefusedError:
                raise

    def _has_space(self) -> bool:
        free = self.free_disk()
        if free < self.options.min_space_left:
            if self.state != PAUSED:
                self.pause_reason = (f"paused: {free:,} bytes free in {self.options.server_dir}, below minSpaceLeft "
                                     f"{self.options.min_space_left:,}")
                log.error("harvest controller %s %s; no job is taken until space is back", self.controller_id,
                          self.pause_reason)
                self._move(PAUSED)
                self.heartbeat()
            return False
        if self.state == PAUSED:
            log.warning("harvest controller %s: %d bytes free again in %s: taking jobs", self.controller_id, free,
                        self.options.server_dir)
            self.pause_reason = ""
            self._move(IDLE)
            self.heartbeat()
        return True

    def _holds(self, job: DoOneCrawl) -> bool:
        for directory in unfinished_job_directories(self.options.server_dir):
            if directory.name.startswith(f"{job.job_id}_"):
                try:
                    held = JobDirectory.load(directory).job
                except JobDirectoryError:
                    continue
                if held.attempt_id == job.attempt_id:
                    return True
        return False

    def _take(self, taken: TakenJob) -> bool:
        """Claim, persist, acknowledge, crawl, post-process and report one job; True if it was crawled."""
        job = taken.job
        if self._holds(job):
            log.info("job %d attempt %s is already in a job directory here: redelivery dropped", job.job_id,
                     job.attempt_id)
            self.transport.ack(taken.delivery)
            return False
        try:
            answer = self.link.claim(job)
        except SchedulerSilentError as exc:
            log.warning("job %d: %s; the message goes back to its queue", job.job_id, exc)
            self.transport.nack(taken.delivery)
            return False
        if not answer.granted:
            log.warning("job %d attempt %s not granted: %s", job.job_id, job.attempt_id, answer.reason)
            self.transport.ack(taken.delivery)
            return False
        # Heartbeats name the job from its grant on: building its deduplication index takes a while, and a
        # granted job its controller's heartbeats do not name is taken for abandoned after claimGraceTime.
        self.current = job
        try:
            directory = self._persist(job)
        except Exception as exc:
            self.current = None
            log.error("job %d could not be persisted: %s", job.job_id, exc)
            self.transport.ack(taken.delivery)
            reason = f"the harvest controller could not set up the job: {exc}"
            # the summary may be cut to its limit; the details keep the whole reason
            self.link.report(job, JobStatus.FAILED, harvest_errors=reason, harvest_error_details=reason)
            return False
        # Acknowledged once persisted: the crawl outlives the broker's consumer_timeout (docs/messages.md,
        # Acknowledgements, confirms and dead letters).
        self.transport.ack(taken.delivery)
        self.link.report(job, JobStatus.STARTED)
        self._crawl_and_finish(directory.path, checkpoint=None)
        return True

    def _persist(self, job: DoOneCrawl) -> JobDirectory:
        index = None
        relative = job.metadata.deduplication_index
        sources = job.metadata.deduplication_sources
        external = bool(self.options.heritrix_url)
        if (sources or relative) and not external:
            fd, name = tempfile.mkstemp(prefix=".dedup-", suffix=".sqlite", dir=self.options.server_dir)
            os.close(fd)
            if sources:
                # the job's own index: the earlier captures of its domains, from their sources' partitions
                built = build_job_index(self.store, [(s.harvest_id, s.job_id) for s in sources],
                                        job.domain_configurations, Path(name))
                unreadable = ", ".join(map(str, built.unreadable_job_ids))
                log.info("job %d: deduplication index of %d (digest, URL) pairs for %d of its %d domains from "
                         "jobs %s in %.1f s, %d bytes read%s", job.job_id, built.pairs, built.domains_found,
                         built.domains, ", ".join(map(str, built.source_job_ids)) or "none", built.seconds,
                         built.bytes_read, f"; left out, unreadable: jobs {unreadable}" if unreadable else "")
                index = built.path
            else:
                index = self.store.fetch(relative, Path(name))
        return JobDirectory.create(self.options.server_dir, job, index, deduplication=not external)

    def _resume(self, directory: Path) -> None:
        """A crawl checkpointed at the last shutdown: resumed if the scheduler grants its claim again."""
        jobdir = JobDirectory.load(directory)
        checkpoint = jobdir.resume_checkpoint
        # Heartbeats name the job while its claim waits for an answer (up to answerTimeout): a loaded scheduler
        # may answer after claimGraceTime, and a controller back whose heartbeats name no job by then is taken
        # for one that came back without it.
        self.current = jobdir.job
        try:
            self.heartbeat()
        except Exception as exc:  # noqa: BLE001 - the heartbeat thread sends the next one
            log.warning("heartbeat not sent: %s", exc)
        try:
            answer = self.link.claim(jobdir.job, resume=True)
        except SchedulerSilentError as exc:
            if self.stop_event.is_set():
                self.current = None
                return  # stopping: the resume marker stays for the next start
            answer = None
            log.warning("job %d: no answer to the resume claim: %s", jobdir.job.job_id, exc)
        if answer is not None and answer.granted:
            log.info("job %d resumes from checkpoint %s", jobdir.job.job_id, checkpoint)
            self._job_event(jobdir.job, "resume", checkpoint)
            jobdir.clear_resumable()
            self._crawl_and_finish(directory, checkpoint=checkpoint)
            return
        self.current = None
        reason = answer.reason if answer is not None else "the scheduler did not answer"
        jobdir.clear_resumable()
        self.finish_leftover(directory, f"{INTERRUPTED}; not resumed: {reason}")

    # ------------------------------------------------------------------ crawling
    def _engine(self) -> BundledEngine:
        o = self.options
        return BundledEngine(o.server_dir, o.heritrix_user, o.heritrix_password, o.engine_port, o.engine_bind,
                             o.hosts_file, o.engine_start_timeout,
                             dict(o.browser_settings) if o.browser_settings is not None else None,
                             o.allow_destinations)

    def _crawl_and_finish(self, directory: Path, checkpoint: str | None) -> None:
        jobdir = JobDirectory.load(directory)
        job = jobdir.job
        self.current = job
        self._move(CRAWLING)
        engine: BundledEngine | None = None
        try:
            if self.options.heritrix_url:
                url, client = self.options.heritrix_url, HeritrixClient(
                    self.options.heritrix_url, self.options.heritrix_user, self.options.heritrix_password,
                    verify=False, timeout=self.options.request_timeout)
            else:
                engine = self._engine()
                url = engine.start()
                client = HeritrixClient(url, self.options.heritrix_user, self.options.heritrix_password,
                                        ca_file=engine.ca_file, timeout=self.options.request_timeout)
        except HeritrixError as exc:
            result_outcome = CrawlOutcome(failed=True, errors=[f"the crawler could not be started: {exc}"])
            jobdir.record_outcome(result_outcome)
            self._postprocess(jobdir)
            return
        console = f"{url}/engine/job/{jobdir.name}"
        # Checkpoints of earlier launches (a resumed crawl's) were reported when they were written; a new
        # one in a status poll was asked for through the crawler's REST API while the crawl ran.
        checkpoints_dir = jobdir.checkpoints_dir
        checkpoints_seen = {p.name for p in checkpoints_dir.iterdir()} if checkpoints_dir.is_dir() else set()

        tally = LiveTally(jobdir)
        self.metrics.crawl_started(resumed=checkpoint is not None)

        def on_status(status: JobResource) -> None:
            self.metrics.crawl_status(status)
            try:
                self.link.send_progress(crawl_progress(job, status, self.controller_id, console,
                                                       is_heritrix_console=bool(self.options.heritrix_url)))
            except HarvestSuiteError as exc:
                log.warning("job %d: progress not sent: %s", job.job_id, exc)
            try:
                tally.update()
                self.link.send_tally(CrawlTally(job_id=job.job_id, attempt_id=job.attempt_id,
                                                controller_id=self.controller_id, lines=tally.lines,
                                                status_counts=dict(tally.status_counts),
                                                domains=tally.changed_domains()))
            except (OSError, HarvestSuiteError) as exc:  # the page misses a turn of figures; the crawl goes on
                log.warning("job %d: crawl.log figures not sent: %s", job.job_id, exc)
            for name in sorted(set(status.checkpoint_files) - checkpoints_seen):
                checkpoints_seen.add(name)
                self._job_event(job, "checkpoint", name)

        def on_frontier(queues: FrontierQueues) -> None:
            try:
                for report in frontier_reports(job, queues.queues, self.controller_id):
                    self.link.send_frontier_report(report)
            except HarvestSuiteError as exc:
                log.warning("job %d: frontier report not sent: %s", job.job_id, exc)

        options = self.options.driver
        if job.max_running_time:
            options = DriverOptions(**{**options.__dict__, "max_running_time": float(job.max_running_time)})
        steering = CrawlSteering(client, jobdir.name, jobdir, self.transport, self.link.control_queue,
                                 self.controller_id, self.link.send_live_change_results, self.stop_event,
                                 batch_size=self.options.live_change_batch,
                                 drain_wait=self.options.live_change_drain_wait)
        driver = CrawlDriver(client, jobdir.name, jobdir.path, options, on_status, self.stop_event,
                             engine_alive=engine.is_alive if engine else None,
                             engine_gone=engine.exit_description if engine else None, on_frontier=on_frontier,
                             steering=steering)
        try:
            result = driver.run(checkpoint)
        finally:
            self.metrics.crawl_ended()
            steering.close()
            if engine is not None:
                engine.stop()
        if result.checkpoint is not None:
            jobdir.mark_resumable(result.checkpoint)
            if result.checkpoint not in checkpoints_seen:
                self._job_event(job, "checkpoint", result.checkpoint)
            log.warning("job %d checkpointed as %s at shutdown; it resumes at the next start if the scheduler "
                        "grants it again", job.job_id, result.checkpoint)
            self.current = None
            return
        jobdir.record_outcome(result.outcome)
        self._postprocess(jobdir)

    def _postprocess(self, jobdir: JobDirectory) -> None:
        if self.state != POSTPROCESSING:
            self._move(POSTPROCESSING)
        self.current = jobdir.job
        started = time.monotonic()
        try:
            report = self.postprocessor.finish(jobdir, self.controller_id)
            self._send_report(jobdir, report)
            self.jobs_done.append((jobdir.job.job_id, report.status))
            self.metrics.job_finished(report.status.name, time.monotonic() - started)
        finally:
            self.current = None
            if not self.stop_event.is_set():
                self._move(IDLE)

    def _send_report(self, jobdir: JobDirectory, report: JobReport) -> None:
        """Send what post-processing has to report, then let it record that in the job directory. In this order:
        a controller that stops between the two sends the report again, which the scheduler takes as a
        repeat; the other order could leave the job never reported."""
        if report.message is not None:
            self.link.send_status(report.message)
            if jobdir.reported_status is None:
                log.info("job %d reported %s", jobdir.job.job_id, report.message.status.name)
            else:
                log.info("job %d: all files stored after an archive store outage; reported again as DONE",
                         jobdir.job.job_id)
        self.postprocessor.reported(jobdir, report)

    def store_leftover(self, jobdir: JobDirectory) -> bool:
        """One upload pass over a reported job's files not stored yet; True once all are stored (the directory
        is then in oldjobs, and a job FAILED by an archive store outage reported again, DONE)."""
        report = self.postprocessor.store_leftover(jobdir, passes=1)
        self._send_report(jobdir, report)
        return report.is_stored

    def _job_event(self, job: DoOneCrawl, kind: str, checkpoint: str, happened_at: datetime | None = None) -> None:
        try:
            self.link.send_job_event(job, kind, checkpoint, happened_at or datetime.now(UTC))
        except HarvestSuiteError as exc:  # the job page misses a line; the crawl goes on
            log.warning("job %d: %s of %s not reported: %s", job.job_id, kind, checkpoint, exc)

    # ------------------------------------------------------------------ leftovers
    def retry_uploads(self) -> int:
        """One upload pass over every reported job directory whose files the archive store did not take;
        returns how many were completed (and moved to oldjobs)."""
        completed = 0
        for directory in unfinished_job_directories(self.options.server_dir):
            if self.stop_event.is_set():
                break
            if self.current is not None and directory.name.startswith(f"{self.current.job_id}_"):
                continue
            try:
                jobdir = JobDirectory.load(directory)
                if self.postprocessor.pending_uploads(jobdir) and self.store_leftover(jobdir):
                    completed += 1
            except (OSError, HarvestSuiteError) as exc:  # one directory must not stop the others' retries
                log.error("%s: the upload could not be retried: %s", directory, exc)
        return completed

    def process_leftovers(self) -> list[Path]:
        """Post-process and report FAILED every job directory a dead controller left; returns those that
        carry a resume marker instead (checkpointed at a shutdown, they are claimed again), the controller's
        own or the one the bundled engine left when it stopped after its controller died."""
        resumable = []
        for directory in unfinished_job_directories(self.options.server_dir):
            if self.current is not None and directory.name.startswith(f"{self.current.job_id}_"):
                continue
            try:
                jobdir = JobDirectory.load(directory)
            except JobDirectoryError as exc:
                log.error("%s; moved aside to %s", exc, self.options.oldjobs_dir)
                self.options.oldjobs_dir.mkdir(parents=True, exist_ok=True)
                shutil.move(os.fspath(directory), self.options.oldjobs_dir / f"unreadable-{directory.name}")
                continue
            if jobdir.resume_checkpoint is None and (checkpoint := jobdir.engine_shutdown_checkpoint()) is not None:
                # A controller killed mid-crawl: its engine checkpointed the crawl and ended it when its pipe
                # closed. Resumed as if it had checkpointed at its own shutdown: the checkpoint is the crawl's
                # last state, so nothing is fetched twice, and the scheduler's claim decides as always (it
                # refuses a job resubmitted meanwhile, which is then reported as any leftover).
                log.warning("job %d: the crawl engine checkpointed it as %s when this controller died; it resumes "
                            "if the scheduler grants it again", jobdir.job.job_id, checkpoint)
                jobdir.mark_resumable(checkpoint)
                # the job page lists the engine's checkpoint before the resume from it, at the engine's time
                self._job_event(jobdir.job, "checkpoint", checkpoint, jobdir.engine_shutdown_checkpoint_time())
                jobdir.clear_engine_shutdown_checkpoint()
            if jobdir.resume_checkpoint is not None:
                resumable.append(directory)
                continue
            self.finish_leftover(directory, INTERRUPTED)
        return resumable

    def finish_leftover(self, directory: Path, reason: str) -> None:
        jobdir = JobDirectory.load(directory)
        outcome = jobdir.outcome
        if outcome is None:
            log.warning("job %d: leftover job directory %s is post-processed and reported FAILED: %s",
                        jobdir.job.job_id, directory, reason)
            jobdir.record_outcome(CrawlOutcome(failed=True, errors=[reason]))
        self._postprocess(jobdir)


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


__all__ = ["HARVEST_CONTROLLER_TRANSITIONS", "ControllerOptions", "HarvestController"]
