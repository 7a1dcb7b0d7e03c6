"""The crawl controller: one launch of one job, in its own thread with its own asyncio event loop.

It owns the launch's lifecycle and nothing of a URI's processing: it starts the crawl (seeds, or a
checkpoint's state), runs the crawl threads (crawlthreads.py), which hand each URI to the processor chain
(chain.py, the order of work for each URI), and the action directory's scans (live/actiondir.py), until the
frontier is empty, a crawl limit is hit (limits.py) or an operator terminates; it pauses, takes
checkpoints (checkpoint.py holds what goes into one), has progress lines and notes written
(reporting/progresslog.py) and the reports (reporting/reports.py), and answers status. Operators' live
changes (a script's calls, bean properties: live/livechanges.py) are handed to the crawl's loop while the
crawl runs or is paused, so they never interleave with a URI's processing, a checkpoint or an action file.

Controller states and the actions allowed in each are one table, harvester/heritrix3/states.py's
CONTROLLER_TRANSITIONS. Public methods are thread-safe and return at once (checkpoint waits for in-flight
fetches, which is brief).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import uvloop

from harvestdef.dedup import DedupIndex
from harvestdef.destinations import PUBLIC_ONLY, DestinationPolicy
from harvestdef.errors import CrawlEngineError
from harvester.engine import checkpoint as checkpoints
from harvester.engine.chain import ProcessorChain
from harvester.engine.clock import CrawlClock
from harvester.engine.config import CrawlConfig
from harvester.engine.crawlthreads import CrawlThreads
from harvester.engine.extraction.sitemaps import SitemapLimits
from harvester.engine.fetching.bounds import ResponseBounds
from harvester.engine.fetching.browser import BrowserOptions
from harvester.engine.live.actiondir import ActionDirectory
from harvester.engine.live.livechanges import ScriptOutcome
from harvester.engine.parts import CrawlParts
from harvester.engine.reporting.figures import LaunchStatus
from harvester.engine.reporting.launchlogs import CrawlLogs
from harvester.engine.reporting.progresslog import ProgressLog
from harvester.engine.reporting.reports import CRAWL_STATUS_TEXT, render_reports, write_reports
from harvester.engine.warcwriting.warc import WarcFileWriter
from harvester.heritrix3.layout import ACTION_DIR, ACTIONS_DONE_DIR, CHECKPOINTS_DIR, LOGS_DIR, REPORTS_DIR
from harvester.heritrix3.scripting import ScriptCall
from harvester.heritrix3.states import CONTROLLER_TRANSITIONS, ControllerEvent, ControllerState, CrawlExitStatus

# A live change waits this long for the crawl's loop: a change is quick, but a checkpoint may be under way.
LIVE_CHANGE_TIMEOUT_SECONDS = 120.0
# The states in which a crawl takes live changes: its loop runs and it is not ending.
TAKES_LIVE_CHANGES = frozenset({ControllerState.PREPARING, ControllerState.RUNNING, ControllerState.EMPTY,
                                ControllerState.PAUSING, ControllerState.PAUSED})
_T = TypeVar("_T")


class CrawlStateError(CrawlEngineError, RuntimeError):
    """An action the controller's current state does not allow (also a RuntimeError, for callers that catch that)."""


class CrawlController:
    """One launch of one job. Runs in its own thread with its own asyncio loop; every public method is
    thread-safe and returns at once."""

    def __init__(self, config: CrawlConfig, job_dir: Path, launch_dir: Path, hosts: Mapping[str, str],
                 job_log: logging.Logger, checkpoint: Path | None = None, api_port: int = 0,
                 sitemap_limits: SitemapLimits | None = None, browser: BrowserOptions | None = None,
                 bounds: ResponseBounds | None = None, destinations: DestinationPolicy = PUBLIC_ONLY):
        self.config = config
        self.job_dir = Path(job_dir)
        self.launch_dir = Path(launch_dir)
        self.job_log = job_log
        self.resume_from = Path(checkpoint) if checkpoint else None
        self.api_port = api_port  # the engine's REST port: Heritrix ends WARC names with it (~PORT)
        self._state = ControllerState.NASCENT
        self._exit_status: CrawlExitStatus | None = None
        self._stop_status: CrawlExitStatus | None = None
        self._start_unpaused = False
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._finished = threading.Event()
        self.clock = CrawlClock()
        self.parts = CrawlParts(config, self.job_dir, hosts, self.resume_from, on_scheduled=self._wake_threads,
                                sitemap_limits=sitemap_limits, browser=browser, bounds=bounds,
                                destinations=destinations, job_log=job_log)
        self.threads = CrawlThreads(self.parts.frontier, self._is_stopping, self._after_uri)
        self.logs: CrawlLogs | None = None
        self.progress: ProgressLog | None = None
        self.warc: WarcFileWriter | None = None

    # -- public, thread-safe --------------------------------------------------------------------------
    def start(self) -> None:
        self._transition(ControllerEvent.START)
        threading.Thread(target=self._run_thread, name=f"crawl-{self.config.job_name}", daemon=True).start()

    def pause(self) -> None:
        self._transition(ControllerEvent.PAUSE)
        self._call(self._set_paused, True)

    def unpause(self) -> None:
        # An unpause that comes while the crawl still prepares (a client acting on launch's answer at once)
        # cancels pauseAtStart rather than being lost.
        self._start_unpaused = True
        self._transition(ControllerEvent.UNPAUSE)
        self._call(self._set_paused, False)

    def terminate(self) -> None:
        self._transition(ControllerEvent.TERMINATE)
        self._call(self._request_stop, CrawlExitStatus.ABORTED)

    def checkpoint(self) -> str:
        with self._lock:
            if ControllerEvent.CHECKPOINT not in CONTROLLER_TRANSITIONS[self._state] or self._loop is None:
                raise self._refusal(ControllerEvent.CHECKPOINT)
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(self._checkpoint(), loop).result(timeout=300)

    def run_script(self, calls: Sequence[ScriptCall]) -> ScriptOutcome:
        """Carry out a script's calls on the crawl's loop; CrawlStateError when the crawl is not running."""
        async def run() -> ScriptOutcome:
            return self.parts.live.run(calls, self.launch_dir / LOGS_DIR)
        return self._on_loop(run, "run a script")

    def bean_property(self, path: str) -> int | float:
        """The value in force of a bean property (livechanges.PROPERTIES); PropertyError for another path.
        Read from this thread: each value is one attribute, replaced whole on the loop."""
        return self.parts.live.value(path)

    def set_bean_property(self, path: str, text: str) -> int | float:
        """Set a bean property on the crawl's loop; the value in force afterwards. PropertyError for a path or
        value refused, CrawlStateError when the crawl is not running."""
        async def change() -> int | float:
            return self.parts.live.set_value(path, text)
        return self._on_loop(change, f"set {path}")

    def _on_loop(self, work: Callable[[], Awaitable[_T]], what: str) -> _T:
        with self._lock:
            loop = self._loop
            if self._state not in TAKES_LIVE_CHANGES or loop is None or self._stop_status is not None:
                raise CrawlStateError(f"crawl {self.config.job_name!r}: cannot {what} while {self._state}")
        try:
            future = asyncio.run_coroutine_threadsafe(work(), loop)
        except RuntimeError as exc:   # the loop closed since the check: nothing was done
            raise CrawlStateError(f"crawl {self.config.job_name!r}: cannot {what}: the crawl ended") from exc
        deadline = time.monotonic() + LIVE_CHANGE_TIMEOUT_SECONDS
        while True:
            try:
                return future.result(timeout=0.2)
            except concurrent.futures.TimeoutError:
                # A loop that ended before it took the work never will: do not wait the whole timeout for it.
                if (self._finished.is_set() and not future.done()) or time.monotonic() > deadline:
                    future.cancel()
                    raise CrawlStateError(f"crawl {self.config.job_name!r}: cannot {what}: the crawl ended or "
                                          "did not answer") from None
            except concurrent.futures.CancelledError as exc:
                raise CrawlStateError(f"crawl {self.config.job_name!r}: cannot {what}: the crawl ended") from exc

    def report_text(self, file_name: str) -> str | None:
        """One report as it stands now: rendered on the crawl's loop while it runs (the counters change
        there), else read from the launch's reports/ directory. None if there is no such report."""
        loop = self._loop
        if loop is not None and loop.is_running() and not self._finished.is_set():
            async def render() -> dict[str, str]:
                return render_reports(self.parts.report_input(self._state, self._exit_status, self._elapsed_ms()))
            try:
                return asyncio.run_coroutine_threadsafe(render(), loop).result(timeout=30).get(file_name)
            except (RuntimeError, concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
                pass  # the loop ended meanwhile: the file written at crawl end is the report
        path = self.launch_dir / REPORTS_DIR / file_name
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def join(self, timeout: float | None = None) -> bool:
        return self._finished.wait(timeout)

    def status(self) -> LaunchStatus:
        elapsed_ms, state = self._elapsed_ms(), self._state
        figures = self.parts.figures(state, elapsed_ms, self.threads.busy, time.monotonic(),
                                     self.warc.bytes_written if self.warc else 0)
        return LaunchStatus(
            controller_state=state, exit_status=self._exit_status, figures=figures, elapsed_ms=elapsed_ms,
            toe_count=self.config.max_toe_threads, crawl_log_tail=self.logs.tail_lines() if self.logs else (),
            alert_count=self.logs.alert_count if self.logs else 0)

    # -- state changes, through the one table ---------------------------------------------------------
    def _transition(self, action: ControllerEvent) -> None:
        """Take ``action``; CrawlStateError (and no change) if the current state does not allow it."""
        if not self._transition_if_allowed(action):
            raise self._refusal(action)

    def _refusal(self, action: ControllerEvent) -> CrawlStateError:
        return CrawlStateError(f"crawl {self.config.job_name!r}: cannot {action} while {self._state}")

    def _transition_if_allowed(self, action: ControllerEvent) -> bool:
        """Take ``action`` if the current state allows it; False (and no change) if not. For the crawl's own
        events that may find the state moved on (an operator's terminate while the last fetch ends)."""
        with self._lock:
            allowed = CONTROLLER_TRANSITIONS[self._state]
            if action not in allowed:
                return False
            self._state = allowed[action]
            return True

    # -- thread and loop ------------------------------------------------------------------------------
    def _call(self, function: Callable[..., None], *args: object) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(function, *args)

    def _run_thread(self) -> None:
        try:
            # uvloop: the event loop's own work (a connection's set-up and close, the selector, transports)
            # is a large part of a crawl's CPU per URI over HTTP/1.0, and uvloop does it in C.
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                runner.run(self._main())
            self._transition(ControllerEvent.STOPPED)
        except Exception:
            self.job_log.exception("crawl %s failed", self.config.job_name)
            self._exit_status = self._exit_status or CrawlExitStatus.FINISHED_ABNORMAL
            self._transition_if_allowed(ControllerEvent.CRASH)
        finally:
            self._finished.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        config = self.config
        warc_dir = config.warc_directory(self.launch_dir)
        with CrawlLogs(self.launch_dir / LOGS_DIR) as logs:
            self.logs, self.progress = logs, ProgressLog(logs)
            parts = self.parts
            serial = parts.resume(self.resume_from, self.job_log) if self.resume_from else parts.seed(logs)
            with WarcFileWriter(warc_dir, config.warc_prefix, config.warc_max_file_size_bytes, config.warc_compress,
                                config.warcinfo_items, serial=serial, port=self.api_port,
                                crawl_metadata=config.crawl_metadata) as warc:
                self.warc = warc if config.warc_enabled else None
                dedup = DedupIndex(config.dedup_index).__enter__() if config.dedup_index is not None else None
                chain = parts.chain(logs, self.warc, dedup, self._is_stopping)
                try:
                    await self._crawl(chain)
                finally:
                    if dedup is not None:
                        dedup.__exit__(None, None, None)
                    await parts.close_fetching()
                    self._write_reports()
                    parts.store.close()
                    ended = self._exit_status
                    self.progress.note(f"CRAWL ENDED - {CRAWL_STATUS_TEXT.get(ended or '', ended)}")
            logs.flush()
        self.job_log.info("crawl ended: %s", self._exit_status)

    async def _crawl(self, chain: ProcessorChain) -> None:
        config = self.config
        self.clock.start()
        self.progress.legend()
        self.progress.note("CRAWL RUNNING - Preparing")
        with self._lock:
            state = self._state  # an operator may have paused or terminated before the loop existed
        if state is ControllerState.STOPPING:
            self._request_stop(CrawlExitStatus.ABORTED)
        elif config.pause_at_start and not self._start_unpaused:
            self._set_paused(True)
        else:
            self._transition(ControllerEvent.RUN)
            self.progress.note("CRAWL RUNNING - Running")
        self.job_log.info("crawl started: %d seeds, %d URIs queued", len(config.seeds),
                          self.parts.frontier.queued_count)
        self.threads.start(config.max_toe_threads, chain, self.logs)
        ticker = asyncio.create_task(self._ticker())
        actions = ActionDirectory(self.job_dir / ACTION_DIR, self.launch_dir / ACTIONS_DONE_DIR, self.parts, self.logs,
                                  self.job_log, config.action_delay_seconds, config.action_initial_delay_seconds)
        actions.start()
        try:
            while self._stop_status is None:
                await asyncio.sleep(0.05)
                if self.parts.frontier.is_empty() and not self.threads.paused:
                    self._request_stop(CrawlExitStatus.FINISHED)
            # Let in-flight fetches end (limits are soft, as in Heritrix); an operator's terminate does not wait.
            await self.threads.stop(0.0 if self._stop_status == CrawlExitStatus.ABORTED
                                    else min(5.0, config.so_timeout_ms / 1000))
        finally:
            await actions.stop()
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)
        self._exit_status = self._stop_status
        self.clock.end()
        self._progress()
        self._transition(ControllerEvent.FINISH)  # already STOPPING unless the threads ended on their own

    async def _ticker(self) -> None:
        config, parts = self.config, self.parts
        last_progress = time.monotonic()
        while True:
            await asyncio.sleep(min(1.0, max(0.05, config.stats_interval_seconds / 4)))
            parts.rates.snapshot(parts.stats.downloaded, parts.stats.total_bytes)
            if parts.limits.is_time_up(self._elapsed_ms()):
                self._request_stop(CrawlExitStatus.FINISHED_TIME_LIMIT)
            if time.monotonic() - last_progress >= config.stats_interval_seconds:
                last_progress = time.monotonic()
                self._progress()
            self.logs.flush()

    # -- the crawl's own events -----------------------------------------------------------------------
    def _request_stop(self, exit_status: CrawlExitStatus) -> None:
        if self._stop_status is None:
            self._stop_status = exit_status
            self._note(f"CRAWL ENDING - {CRAWL_STATUS_TEXT.get(exit_status, exit_status)}")
            if exit_status != CrawlExitStatus.ABORTED:
                with contextlib.suppress(CrawlStateError):
                    self._transition(ControllerEvent.FINISH)
        self.threads.wake()

    def _set_paused(self, paused: bool) -> None:
        if paused and self.clock.pause():
            if self.threads.busy:
                self._note(f"CRAWL WAITING - {CRAWL_STATUS_TEXT[CrawlExitStatus.WAITING_FOR_PAUSE]}")
        elif not paused and self.clock.resume():
            self._note("CRAWL RUNNING - Running")
        self.threads.paused = paused
        if paused:
            self._check_paused()
        self.threads.wake()

    def _check_paused(self) -> None:
        # Paused for a checkpoint while RUNNING, the table has no "paused": the state stays RUNNING.
        if (self.threads.paused and self.threads.busy == 0
                and self._transition_if_allowed(ControllerEvent.PAUSED)):
            self._progress()
            self._note("CRAWL PAUSED - Paused")

    def _after_uri(self) -> None:
        self._check_paused()
        reached = self.parts.limits.reached_by_counts(self.parts.stats)
        if reached is not None:
            self._request_stop(reached)

    def _is_stopping(self) -> bool:
        return self._stop_status is not None

    def _wake_threads(self) -> None:
        self.threads.wake()

    def _elapsed_ms(self) -> int:
        return self.clock.elapsed_ms(self.parts.stats.elapsed_before_ms)

    def _note(self, note: str) -> None:
        if self.progress is not None:
            self.progress.note(note)

    def _progress(self) -> None:
        parts = self.parts
        self.progress.progress(parts.stats, parts.rates, parts.frontier, self.threads.busy, self._elapsed_ms())

    # -- checkpoint and reports ----------------------------------------------------------------------
    async def _checkpoint(self) -> str:
        self._transition(ControllerEvent.CHECKPOINT)
        threads = self.threads
        was_paused, threads.paused = threads.paused, True
        await threads.wait_idle()
        directory = self.job_dir / CHECKPOINTS_DIR
        name = checkpoints.next_checkpoint_name(directory)
        self._note(f"CRAWL CHECKPOINTING TO {directory / name}")
        self.parts.save_checkpoint(directory / name, self._elapsed_ms(), self.warc.serial if self.warc else 0)
        self._write_reports()
        self.logs.flush()
        threads.paused = was_paused
        threads.wake()
        self.job_log.info("checkpoint %s written", name)
        return name

    def _write_reports(self) -> None:
        try:
            write_reports(self.launch_dir / REPORTS_DIR, self.parts.report_input(self._state, self._exit_status,
                                                                               self._elapsed_ms()))
        except OSError as exc:
            self.logs.alert("SEVERE", f"reports not written: {exc}")
