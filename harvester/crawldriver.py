"""Driving one crawl through the Heritrix 3 REST API, from adding the job to its teardown.

One code path serves a real Heritrix 3 and the bundled engine. Actions are judged by the job's resulting
state, not by their status code: a real Heritrix answers 303 to everything, the bundled engine refuses an
action with nothing to do (409), and either may have done the work before a connection dropped.

The watch loop polls the job's status every ``poll_interval`` seconds and hands it to ``on_status`` (the
controller turns it into a CrawlProgress message). A failed poll is never read as the end of the crawl
(NetarchiveSuite's Heritrix 3 controller reads it so, and tears the crawl down): it is retried, and only
``poll_retries`` failures in a row, or an engine process that has died, end the crawl as failed. The stall
watchdog stops a crawl that received no new bytes for ``noresponse_timeout`` or had no active queue for
``inactivity_timeout``, and a crawl over the job's time limit.

Between two polls the loop waits on ``steering`` when there is one (harvester/steering.py): the live
changes operators make arrive and are applied then. An operator's stop or fail ends the crawl as the
watchdog does (terminate, then post-processing as usual); the outcome's ``end`` names the operator, the
change and the time, and the harvest errors say nothing of it: it was asked for. So does a crawl that ends
at a budget of its own, the job's time limit here or the crawler's maxDocumentsDownload, maxBytesDownload
or maxTimeSeconds (its crawlExitStatus says which).
A crawl paused by an operator is never taken for a stalled one: the stall clocks restart while it is paused.

While the crawl is RUNNING, every ``frontier_report_interval`` seconds (the first at the first poll that
finds it running, and again at the first poll that finds it running after a pause, since the report taken
before the pause says nothing of the queues now) the loop also fetches the FrontierSummaryReport and hands its queues to
``on_frontier`` (the controller sends them as a FrontierReport message). A report that cannot be fetched
is logged and the crawl goes on; so are queue blocks that do not parse. None is fetched at the end: by
then every queue is exhausted, so the report would list no queue, and the scheduler drops a job's
frontier rows when the job ends anyway.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from harvestdef.errors import HeritrixError
from harvestdef.settings import ShutdownAction
from harvester.frontierqueues import FrontierQueues
from harvester.heritrix import HeritrixClient
from harvester.heritrix3.model import JobResource
from harvester.heritrix3.states import PAUSED_OR_PAUSING, SETTLING, UNDER_WAY, ControllerState, CrawlExitStatus
from harvester.jobdir import CrawlOutcome
from harvester.steering import CrawlSteering

STOP_WAIT_SECONDS = 120.0
# The crawler's exit statuses of a crawl that ended at a budget of its CrawlLimitEnforcer -> the budget
BUDGET_EXITS = {CrawlExitStatus.FINISHED_DOCUMENT_LIMIT: "max_objects",
                CrawlExitStatus.FINISHED_DATA_LIMIT: "max_bytes",
                CrawlExitStatus.FINISHED_TIME_LIMIT: "max_running_time"}

log = logging.getLogger(__name__)


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass(frozen=True)
class DriverOptions:
    poll_interval: float = 20.0
    inactivity_timeout: float = 1800.0
    noresponse_timeout: float = 1800.0
    max_running_time: float = 0.0  # 0 = no limit of ours (the template's maxTimeSeconds still applies)
    poll_retries: int = 5
    start_timeout: float = 60.0
    shutdown_action: ShutdownAction = "checkpoint"
    frontier_report_interval: float = 600.0  # 0: no frontier reports


@dataclass
class DriveResult:
    outcome: CrawlOutcome
    checkpoint: str | None = None  # set when the crawl was checkpointed at shutdown, to be resumed


class CrawlDriver:
    """Runs one job on one engine; ``run`` returns when the crawl has ended, been stopped or checkpointed."""

    def __init__(self, client: HeritrixClient, name: str, directory: Path, options: DriverOptions,
                 on_status: Callable[[JobResource], None], shutdown: threading.Event,
                 engine_alive: Callable[[], bool] | None = None,
                 engine_gone: Callable[[], str] | None = None,
                 on_frontier: Callable[[FrontierQueues], None] | None = None,
                 steering: CrawlSteering | None = None) -> None:
        self.client = client
        self.name = name
        self.directory = Path(directory)
        self.options = options
        self.on_status = on_status
        self.shutdown = shutdown
        self.engine_alive = engine_alive
        self.engine_gone = engine_gone or (lambda: "the crawl engine is gone")
        self.on_frontier = on_frontier
        self.steering = steering

    # ------------------------------------------------------------------ actions judged by their result
    def _act(self, action: Callable[[], object], what: str, done: Callable[[JobResource], bool]) -> JobResource:
        try:
            action()
        except HeritrixError as exc:
            # Refused (nothing to do) or cut off: what counts is the state it leaves.
            log.info("job %s: %s answered %s; judging by the job's state", self.name, what, exc)
        return self.client.wait_for(self.name, done, self.options.start_timeout)

    def _launch(self, checkpoint: str | None) -> None:
        engine = self.client.engine_status()
        if self.name not in engine.job_names():
            self.client.add_job(self.directory)
        status = self.client.job_status(self.name)
        if status.crawl_controller_state in UNDER_WAY:
            log.info("job %s is already under way (%s)", self.name, status.crawl_controller_state)
            return
        if not (status.is_ready or status.is_launchable):
            status = self._act(lambda: self.client.build(self.name), "build",
                               lambda s: s.is_ready or s.is_launchable or (s.is_unbuilt and s.job_log_tail != ()))
            if not (status.is_ready or status.is_launchable):
                raise HeritrixError(f"job {self.name} could not be built: " + " | ".join(status.job_log_tail[:5]))
        launches = status.launch_count
        status = self._act(lambda: self.client.launch(self.name, checkpoint), "launch",
                           lambda s: s.launch_count > launches or s.crawl_controller_state in UNDER_WAY)
        if status.crawl_controller_state in SETTLING or status.crawl_controller_state == ControllerState.PAUSED:
            status = self.client.wait_for(self.name, lambda s: s.crawl_controller_state not in SETTLING,
                                          self.options.start_timeout)
        if status.crawl_controller_state == ControllerState.PAUSED:
            # pauseAtStart: NetarchiveSuite's Heritrix 3 controller unpauses such a crawl too.
            self._act(lambda: self.client.unpause(self.name), "unpause",
                      lambda s: s.crawl_controller_state != ControllerState.PAUSED)

    def _stop(self, reason: str) -> None:
        """Terminate the crawl and wait until it has ended (its files closed)."""
        log.warning("job %s: stopping the crawl: %s", self.name, reason)
        try:
            self._act(lambda: self.client.terminate(self.name), "terminate",
                      lambda s: s.is_finished or s.crawl_controller_state is None)
        except HeritrixError as exc:
            log.error("job %s: terminate: %s", self.name, exc)
        try:
            self.client.wait_for(self.name, lambda s: s.is_finished or s.crawl_controller_state is None,
                                 STOP_WAIT_SECONDS, poll_interval=1.0)
        except HeritrixError as exc:
            log.error("job %s: the crawl did not end after terminate: %s", self.name, exc)

    def _checkpoint(self) -> str | None:
        """Pause the crawl, checkpoint it, then end it; the checkpoint's name, or None if none was written.

        Paused first, as Heritrix checkpoints a paused crawl: the fetches in flight finish and are written,
        and no new one starts, so nothing happens between the checkpoint and the terminate. A crawl
        checkpointed while running would go on fetching until the terminate, and its resume would fetch
        (and write) those URIs again."""
        try:
            paused = self._act(lambda: self.client.pause(self.name), "pause",
                               lambda s: s.crawl_controller_state == ControllerState.PAUSED or s.is_finished)
        except HeritrixError as exc:
            # A fetch slower than the wait: the bundled engine's checkpoint still waits for the fetches in
            # flight and starts none (it is pausing), so the checkpoint is still whole.
            log.warning("job %s: not paused before the shutdown checkpoint: %s", self.name, exc)
        else:
            if paused.is_finished:
                log.info("job %s ended while pausing for the shutdown checkpoint", self.name)
                return None
        before = set(self.client.job_status(self.name).checkpoint_files)
        try:
            status = self._act(lambda: self.client.checkpoint(self.name), "checkpoint",
                               lambda s: set(s.checkpoint_files) - before != set())
        except HeritrixError as exc:
            log.error("job %s: no checkpoint at shutdown: %s", self.name, exc)
            return None
        names = sorted(set(status.checkpoint_files) - before)
        self._stop("controller shutdown (checkpointed)")
        return names[-1]

    def teardown(self) -> None:
        try:
            self._act(lambda: self.client.teardown(self.name), "teardown",
                      lambda s: s.crawl_controller_state is None)
        except HeritrixError as exc:
            log.warning("job %s: teardown: %s", self.name, exc)

    # ------------------------------------------------------------------ the frontier report
    def _report_frontier(self) -> None:
        """Fetch the frontier's queues and hand them on; a failure is the log's business, not the crawl's."""
        assert self.on_frontier is not None
        try:
            queues = self.client.frontier_queues(self.name)
        except HeritrixError as exc:
            log.warning("job %s: no frontier report this time: %s", self.name, exc)
            return
        if queues.skipped:
            log.warning("job %s: %d queue blocks of the frontier report could not be read and were left out; "
                        "the first: %s", self.name, queues.skipped, queues.first_problem)
        self.on_frontier(queues)

    # ------------------------------------------------------------------ the watch loop
    def _wait(self, seconds: float) -> None:
        if self.steering is not None:
            self.steering.wait(seconds)
        else:
            self.shutdown.wait(seconds)

    def _end_as_asked(self, outcome: CrawlOutcome) -> bool:
        """Carry out an operator's stop or fail, if one came; True if the crawl was ended."""
        steering = self.steering
        request = steering.end_request if steering is not None else None
        if steering is None or request is None:
            return False
        self._stop(request.description)
        if request.failed:
            outcome.failed = True
        else:
            outcome.stopped = True
        change = request.change
        outcome.end = {"cause": change.kind, "at": _now(), "user": change.author, "change": change.version}
        steering.settle_end()
        return True

    def run(self, checkpoint: str | None = None) -> DriveResult:
        outcome = CrawlOutcome()
        try:
            self._launch(checkpoint)
        except HeritrixError as exc:
            outcome.failed = True
            outcome.errors.append(f"the crawl could not be started: {exc}")
            if self.engine_alive is not None and not self.engine_alive():
                outcome.errors.append(self.engine_gone())
            return DriveResult(outcome)
        options = self.options
        started = last_change = time.monotonic()
        active_seen = time.monotonic()
        last_progress: tuple[int, int] | None = None
        failures = 0
        reports_frontier = self.on_frontier is not None and options.frontier_report_interval > 0
        next_frontier_report = started
        was_paused = False
        while True:
            if self.shutdown.is_set():
                if options.shutdown_action == "checkpoint":
                    name = self._checkpoint()
                    if name is not None:
                        return DriveResult(outcome, checkpoint=name)
                self._stop("controller shutdown")
                outcome.errors.append("the crawl was stopped at the harvest controller's shutdown")
                break
            try:
                status = self.client.job_status(self.name)
            except HeritrixError as exc:
                failures += 1
                if self.engine_alive is not None and not self.engine_alive():
                    outcome.failed = True
                    outcome.errors.append(f"the crawl engine died during the crawl: {self.engine_gone()}")
                    return DriveResult(outcome)
                log.warning("job %s: status poll %d of %d failed: %s", self.name, failures, options.poll_retries, exc)
                if failures >= options.poll_retries:
                    outcome.failed = True
                    outcome.errors.append(f"the crawler did not answer {failures} status polls in a row over "
                                          f"{failures * options.poll_interval:.0f} s: {exc}")
                    log.error("job %s: %s; the crawl counts as failed", self.name, outcome.errors[-1])
                    return DriveResult(outcome)
                self.shutdown.wait(options.poll_interval)
                continue
            failures = 0
            self.on_status(status)
            if status.is_finished:
                budget = BUDGET_EXITS.get(status.crawl_exit_status or "")
                if budget is not None:
                    # the limit is the crawler-beans' value, which post-processing reads (harvester/finish.py)
                    outcome.end = {"cause": budget, "at": _now()}
                break
            if status.crawl_controller_state not in UNDER_WAY:
                outcome.failed = True
                outcome.errors.append(f"the crawl disappeared from the crawler (status {status.status_description!r})")
                return DriveResult(outcome)
            now = time.monotonic()
            running = status.crawl_controller_state == ControllerState.RUNNING
            if running and was_paused:
                next_frontier_report = now
            was_paused = status.crawl_controller_state in PAUSED_OR_PAUSING or (was_paused and not running)
            if reports_frontier and running and now >= next_frontier_report:
                next_frontier_report = now + options.frontier_report_interval
                self._report_frontier()
            sizes, uris = status.size_totals_report, status.uri_totals_report
            progress = (sizes.total if sizes else 0, uris.downloaded_uri_count if uris else 0)
            if progress != last_progress:
                last_progress, last_change = progress, now
            frontier = status.frontier_report
            if frontier is None or frontier.active_queues or frontier.in_process_queues:
                active_seen = now
            paused = status.crawl_controller_state in PAUSED_OR_PAUSING
            if paused:  # an operator's pause is no stall: the clocks start again when the crawl does
                last_change = active_seen = now
            reason = None
            if not paused and now - last_change >= options.noresponse_timeout:
                reason = (f"no new bytes for {now - last_change:.0f} s "
                          f"(noresponseTimeout {options.noresponse_timeout:g})")
            elif not paused and now - active_seen >= options.inactivity_timeout:
                reason = (f"no active queues for {now - active_seen:.0f} s "
                          f"(inactivityTimeout {options.inactivity_timeout:g})")
            if reason is not None:
                self._stop(reason)
                outcome.stalled = True
                outcome.errors.append(f"the crawl stalled and was stopped: {reason}")
                break
            if options.max_running_time and now - started >= options.max_running_time:
                self._stop("the job's time limit")
                outcome.end = {"cause": "max_running_time", "at": _now(), "limit": round(options.max_running_time)}
                break
            self._wait(options.poll_interval)
            if self._end_as_asked(outcome):
                break
        with contextlib.suppress(HeritrixError):  # the final figures are a courtesy; the files are what count
            self.on_status(self.client.job_status(self.name))
        self.teardown()
        return DriveResult(outcome)
