"""The crawl controller: one launch of one job, in its own thread with its own asyncio event loop.

It owns the launch's lifecycle and nothing of a URI's processing: it starts the crawl (seeds, or a
checkpoint's state), runs the crawl threads, each taking a URI from the frontier and handing it to the
processor chain (harvester/engine/chain.py, which holds the order of work for each URI) until the frontier
is empty, a crawl limit is hit (FINISHED_DATA_LIMIT / FINISHED_DOCUMENT_LIMIT / FINISHED_TIME_LIMIT) or an
operator terminates; it pauses, takes checkpoints, writes progress lines and reports, and answers status.

Controller states and the actions allowed in each are one table, harvester/crawlstates.py's
CONTROLLER_TRANSITIONS. Public methods are thread-safe and return at once (checkpoint waits for in-flight
fetches, which is brief).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import shutil
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harvestdef.dedup import DedupIndex
from harvestdef.domainnames import to_punycode
from harvestdef.errors import CrawlEngineError
from harvester.crawlstates import (
    CONTROLLER_TRANSITIONS,
    ControllerEvent,
    ControllerState,
    CrawlExitStatus,
    FrontierState,
)
from harvester.engine import checkpoint as checkpoints
from harvester.engine.chain import Curi, ProcessorChain
from harvester.engine.clock import CrawlClock
from harvester.engine.config import CrawlConfig
from harvester.engine.crawllog import CrawlLogs, iso_now
from harvester.engine.discovery import LinkDiscovery
from harvester.engine.disposition import Disposition
from harvester.engine.fetch import Fetcher, RequestSettings
from harvester.engine.fetching import FetchProcessor
from harvester.engine.figures import CrawlFigures, crawl_figures
from harvester.engine.frontier import DONE, Frontier
from harvester.engine.links import is_extractable
from harvester.engine.prerequisites import DnsPrerequisite, RobotsPrerequisite
from harvester.engine.queuepolicy import QueueAssignment
from harvester.engine.quota import QuotaEnforcer, QuotaRules
from harvester.engine.recorder import CaptureRecorder, DedupRules
from harvester.engine.reports import (
    CRAWL_STATUS_TEXT,
    FrontierSummary,
    ReportInput,
    render_reports,
    write_reports,
)
from harvester.engine.scope import Scope, canonical_url
from harvester.engine.servercache import ServerCache
from harvester.engine.stats import PROGRESS_HEADER, CrawlStats, RateTracker, iso_seconds, progress_line
from harvester.engine.urlstore import UrlStore
from harvester.engine.warc import WarcFileWriter

STORE_FILE = "frontier.sqlite"


# The crawl status the reports give a crawl that has not ended (Heritrix's CrawlController sets these as it
# pauses); RUNNING for the other states.
_EXIT_STATUS_WHILE = {ControllerState.PAUSED: CrawlExitStatus.PAUSED,
                      ControllerState.PAUSING: CrawlExitStatus.WAITING_FOR_PAUSE}


class CrawlStateError(CrawlEngineError, RuntimeError):
    """An action the controller's current state does not allow (still a RuntimeError, as it was before)."""


@dataclass(frozen=True)
class CrawlStatus:
    controller_state: ControllerState
    exit_status: CrawlExitStatus | None
    figures: CrawlFigures
    elapsed_ms: int
    toe_count: int
    crawl_log_tail: tuple[str, ...]
    alert_count: int


class CrawlController:
    """One launch of one job. Runs in its own thread with its own asyncio loop; every public method is
    thread-safe and returns at once."""

    def __init__(self, config: CrawlConfig, job_dir: Path, launch_dir: Path, hosts: Mapping[str, str],
                 job_log: logging.Logger, checkpoint: Path | None = None, api_port: int = 0):
        self.config = config
        self.job_dir = Path(job_dir)
        self.launch_dir = Path(launch_dir)
        self.hosts = {to_punycode(k): v for k, v in hosts.items()}
        self.job_log = job_log
        self.resume_from = Path(checkpoint) if checkpoint else None
        self.api_port = api_port  # the engine's REST port: Heritrix ends WARC names with it (~PORT)
        self._state = ControllerState.NASCENT
        self._exit_status: CrawlExitStatus | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._finished = threading.Event()
        # The frontier's store: the job's state/ directory, as Heritrix's BDB; a resumed launch starts
        # from the checkpoint's copy of it.
        store_path = self.job_dir / "state" / STORE_FILE
        if self.resume_from is not None:
            checkpoints.require_resumable(self.resume_from, STORE_FILE)
            store_path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.resume_from / STORE_FILE, store_path)
        self.store = UrlStore(store_path, fresh=self.resume_from is None)
        self.frontier = Frontier(self.store, config.parallel_queues)
        self.scope = Scope(config.scope_rules, config.seeds)
        self.queue_assignment = QueueAssignment(config.queue_policy, config.queue_by_domain)
        self.stats = CrawlStats()
        self.quota = QuotaEnforcer(QuotaRules(config.group_max_fetch_successes, config.group_max_all_kb,
                                              config.quota_counts_prerequisites), self.frontier)
        self.discovery = LinkDiscovery(self.frontier, self.scope, self.queue_assignment,
                                       on_discovered=self._count_discovered, on_scheduled=self._wake_workers)
        self.rates = RateTracker()
        self.logs: CrawlLogs | None = None
        self.warc: WarcFileWriter | None = None
        self.dedup: DedupIndex | None = None
        self.recorder: CaptureRecorder | None = None
        self.chain: ProcessorChain | None = None
        self.servers = ServerCache(self.hosts, config.user_agent)
        self.fetcher = Fetcher(RequestSettings(
            user_agent=config.user_agent, operator_from=config.operator_from, accept_headers=config.accept_headers,
            accept_compression=config.accept_compression, send_connection_close=config.send_connection_close,
            send_referer=config.send_referer, use_http11=config.use_http11,
            so_timeout_seconds=config.so_timeout_ms / 1000, timeout_seconds=config.timeout_seconds,
            max_length_bytes=config.max_length_bytes), keeps_payload=is_extractable)
        self.alert_count = 0
        self.busy = 0
        self._paused = False
        self._start_unpaused = False
        self._stop_status: CrawlExitStatus | None = None
        self.clock = CrawlClock()
        self._wakeup: asyncio.Event | None = None

    # -- public, thread-safe --------------------------------------------------------------------------
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

    def start(self) -> None:
        self._transition(ControllerEvent.START)
        self._thread = threading.Thread(target=self._run_thread, name=f"crawl-{self.config.job_name}", daemon=True)
        self._thread.start()

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

    def report_text(self, file_name: str) -> str | None:
        """One report as it stands now: rendered on the crawl's loop while it runs (the counters change
        there), else read from the launch's reports/ directory. None if there is no such report."""
        loop = self._loop
        if loop is not None and loop.is_running() and not self._finished.is_set():
            async def render() -> dict[str, str]:
                return self._render_reports()
            try:
                return asyncio.run_coroutine_threadsafe(render(), loop).result(timeout=30).get(file_name)
            except (RuntimeError, concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
                pass  # the loop ended meanwhile: the file written at crawl end is the report
        path = self.launch_dir / "reports" / file_name
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def join(self, timeout: float | None = None) -> bool:
        return self._finished.wait(timeout)

    def status(self) -> CrawlStatus:
        frontier, elapsed_ms, state = self.frontier, self._elapsed_ms(), self._state
        figures = crawl_figures(self.stats, self.rates, frontier.queue_counts(time.monotonic()), frontier.queued_count,
                                frontier.in_flight, elapsed_ms, self.busy, self.config.max_toe_threads,
                                self.warc.bytes_written if self.warc else 0, state)
        return CrawlStatus(
            controller_state=state, exit_status=self._exit_status, figures=figures, elapsed_ms=elapsed_ms,
            toe_count=self.config.max_toe_threads, crawl_log_tail=self.logs.tail_lines() if self.logs else (),
            alert_count=self.alert_count)

    # -- thread and loop ------------------------------------------------------------------------------
    def _call(self, function, *args) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(function, *args)

    def _count_discovered(self) -> None:
        self.stats.discovered += 1  # self.stats itself is replaced when a checkpoint is restored

    def _wake_workers(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    def _elapsed_ms(self) -> int:
        return self.clock.elapsed_ms(self.stats.elapsed_before_ms)

    def _run_thread(self) -> None:
        try:
            asyncio.run(self._main())
            self._transition(ControllerEvent.STOPPED)
        except Exception:
            self.job_log.exception("crawl %s failed", self.config.job_name)
            self._exit_status = self._exit_status or CrawlExitStatus.FINISHED_ABNORMAL
            self._transition_if_allowed(ControllerEvent.CRASH)
        finally:
            self._finished.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wakeup = asyncio.Event()
        config = self.config
        warc_dir = Path(config.warc_store_paths[0])
        warc_dir = warc_dir if warc_dir.is_absolute() else self.launch_dir / warc_dir
        with CrawlLogs(self.launch_dir / "logs") as logs:
            self.logs = logs
            serial = self._restore() if self.resume_from else self._seed()
            with WarcFileWriter(warc_dir, config.warc_prefix, config.warc_max_file_size_bytes, config.warc_compress,
                                config.warcinfo_items, serial=serial, port=self.api_port,
                                crawl_metadata=config.crawl_metadata) as warc:
                self.warc = warc if config.warc_enabled else None
                if config.dedup_index is not None:
                    self.dedup = DedupIndex(config.dedup_index).__enter__()
                self.recorder = CaptureRecorder(self.warc, self.store, self.dedup, DedupRules.from_config(config))
                self.chain = self._build_chain()
                try:
                    await self._crawl()
                finally:
                    if self.dedup is not None:
                        self.dedup.__exit__(None, None, None)
                    self.fetcher.close()
                    self._write_reports()
                    self.store.close()
                    self._note(f"CRAWL ENDED - {CRAWL_STATUS_TEXT.get(self._exit_status or '', self._exit_status)}")
            logs.flush()
        self.job_log.info("crawl ended: %s", self._exit_status)

    def _build_chain(self) -> ProcessorChain:
        """The steps of harvester/engine/chain.py's order of work, over this launch's logs and statistics."""
        assert self.logs is not None and self.recorder is not None  # built inside _main, after both

        def is_stopping() -> bool:
            return self._stop_status is not None

        disposition = Disposition(self.config, self.stats, self.logs, self.recorder, self.frontier,
                                  self.queue_assignment, self.quota, self.discovery, is_stopping)
        return ProcessorChain((
            DnsPrerequisite(self.servers, disposition),
            self.quota,
            RobotsPrerequisite(self.config.robots_policy, self.servers, self.fetcher, self.frontier, disposition),
            FetchProcessor(self.config, self.fetcher, self.frontier, self.servers, disposition, is_stopping),
        ), disposition)

    async def _crawl(self) -> None:
        config = self.config
        self.clock.start()
        self.logs.write("progress-statistics.log", PROGRESS_HEADER)
        self._note("CRAWL RUNNING - Preparing")
        with self._lock:
            state = self._state  # an operator may have paused or terminated before the loop existed
        if state is ControllerState.STOPPING:
            self._request_stop(CrawlExitStatus.ABORTED)
        elif config.pause_at_start and not self._start_unpaused:
            self._set_paused(True)
        else:
            self._transition(ControllerEvent.RUN)
            self._note("CRAWL RUNNING - Running")
        self.job_log.info("crawl started: %d seeds, %d URIs queued", len(config.seeds), self.frontier.queued_count)
        workers = [asyncio.create_task(self._worker(n + 1)) for n in range(config.max_toe_threads)]
        ticker = asyncio.create_task(self._ticker())
        try:
            while self._stop_status is None:
                await asyncio.sleep(0.05)
                if self.frontier.is_empty() and not self._paused:
                    self._request_stop(CrawlExitStatus.FINISHED)
            # Let in-flight fetches end (limits are soft, as in Heritrix); an operator's terminate does not wait.
            grace = 0.0 if self._stop_status == CrawlExitStatus.ABORTED else min(5.0, config.so_timeout_ms / 1000)
            _, pending = await asyncio.wait(workers, timeout=grace if grace > 0 else 0.01)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        finally:
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)
        self._exit_status = self._stop_status
        self.clock.end()
        self._progress()
        self._transition(ControllerEvent.FINISH)  # already STOPPING unless the workers ended on their own

    def _note(self, note: str) -> None:
        """A state line of progress-statistics.log, as StatisticsTracker.logNote writes it: CRAWL RUNNING,
        WAITING, PAUSED, ENDING, ENDED (heritrix3 engine/src/main/java/org/archive/crawler/reporting/
        StatisticsTracker.java). There, onApplicationEvent sends both the PREPARING and the RUNNING state
        event to crawlResuming, which writes ``CRAWL RUNNING - <message>``: at start (``Preparing``, then
        ``Running``) and after every unpause (CrawlController.requestCrawlResume sends RUNNING, ``Running``).
        An older crawlResuming of the heritrix3 repository wrote ``CRAWL RESUMED - `` for the same two
        events, so no Heritrix 3 writes RESUMED for an unpause only; this engine writes what current
        Heritrix 3 writes, and what Heritrix's own self-test requires of the log (heritrix3 engine/src/test/
        java/org/archive/crawler/selftest/SelfTestBase.java, verifyProgressStatistics: ``CRAWL RUNNING -
        Preparing``, ``CRAWL RUNNING - Running``, ``CRAWL ENDING - Finished``)."""
        if self.logs is not None:
            self.logs.write("progress-statistics.log", f"{iso_seconds()} {note}")

    def _request_stop(self, exit_status: CrawlExitStatus) -> None:
        if self._stop_status is None:
            self._stop_status = exit_status
            self._note(f"CRAWL ENDING - {CRAWL_STATUS_TEXT.get(exit_status, exit_status)}")
            if exit_status != CrawlExitStatus.ABORTED:
                with contextlib.suppress(CrawlStateError):
                    self._transition(ControllerEvent.FINISH)
        if self._wakeup is not None:
            self._wakeup.set()

    def _set_paused(self, paused: bool) -> None:
        if paused and self.clock.pause():
            if self.busy:
                self._note(f"CRAWL WAITING - {CRAWL_STATUS_TEXT[CrawlExitStatus.WAITING_FOR_PAUSE]}")
        elif not paused and self.clock.resume():
            self._note("CRAWL RUNNING - Running")
        self._paused = paused
        if paused:
            self._check_paused()
        if self._wakeup is not None:
            self._wakeup.set()

    def _check_paused(self) -> None:
        # Paused for a checkpoint while RUNNING, the table has no "paused": the state stays RUNNING.
        if self._paused and self.busy == 0 and self._transition_if_allowed(ControllerEvent.PAUSED):
            self._progress()
            self._note("CRAWL PAUSED - Paused")

    async def _ticker(self) -> None:
        config = self.config
        last_progress = time.monotonic()
        while True:
            await asyncio.sleep(min(1.0, max(0.05, config.stats_interval_seconds / 4)))
            self.rates.snapshot(self.stats.downloaded, self.stats.total_bytes)
            if config.max_time_seconds > 0 and self._elapsed_ms() >= config.max_time_seconds * 1000:
                self._request_stop(CrawlExitStatus.FINISHED_TIME_LIMIT)
            if time.monotonic() - last_progress >= config.stats_interval_seconds:
                last_progress = time.monotonic()
                self._progress()
            self.logs.flush()

    def _progress(self) -> None:
        stats = self.stats
        avg_docs, avg_kib = self.rates.averages(stats.downloaded, stats.total_bytes, self._elapsed_ms())
        depths = self.frontier.queue_depths()
        self.logs.write("progress-statistics.log", progress_line(
            iso_seconds(), stats.discovered, self.frontier.queued_count, stats.downloaded, self.rates.current_docs,
            avg_docs, self.rates.current_kib, avg_kib, stats.failures, self.busy, 0.0,
            max(depths) if depths else 0, sum(depths) / len(depths) if depths else 0))

    # -- workers --------------------------------------------------------------------------------------
    async def _worker(self, number: int) -> None:
        wakeup = self._wakeup
        while self._stop_status is None:
            if self._paused:
                wakeup.clear()
                await wakeup.wait()
                continue
            taken = self.frontier.next_ready(time.monotonic())
            if taken is None or isinstance(taken, float):
                wakeup.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wakeup.wait(), timeout=taken if taken else 0.5)
                continue
            queue, uri = taken
            self.busy += 1
            ready_at = time.monotonic()
            try:
                ready_at = await self.chain.process(Curi.taken(uri, queue, number))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one bad URI must not end the crawl: log it where Heritrix does
                self.alert_count += 1
                self.logs.write("runtime-errors.log", f"{iso_now()} {uri.url} {exc!r}")
                self.logs.write("alerts.log", f"{iso_now()} SEVERE {uri.url} {exc!r}")
                self.frontier.mark_done(uri)
            finally:
                self.busy -= 1
            if ready_at is not None:
                self.frontier.release(queue, ready_at)
            wakeup.set()
            self._check_paused()
            self._check_limits()

    def _check_limits(self) -> None:
        config, stats = self.config, self.stats
        if config.max_documents_download > 0 and stats.downloaded >= config.max_documents_download:
            self._request_stop(CrawlExitStatus.FINISHED_DOCUMENT_LIMIT)
        elif config.max_bytes_download > 0 and stats.total_bytes >= config.max_bytes_download:
            self._request_stop(CrawlExitStatus.FINISHED_DATA_LIMIT)

    def _seed(self) -> int:
        for seed in self.config.seeds:
            url = canonical_url(seed)
            if url is None:
                self.logs.write("alerts.log", f"{iso_now()} WARNING seed {seed!r} is not an http(s) URL, ignored")
                self.alert_count += 1
                continue
            self.stats.seeds.setdefault(url, (0, ""))
            self.discovery.seed(url)
        return 0

    # -- checkpoint -----------------------------------------------------------------------------------
    async def _checkpoint(self) -> str:
        self._transition(ControllerEvent.CHECKPOINT)
        was_paused = self._paused
        self._paused = True
        while self.busy:
            await asyncio.sleep(0.01)
        name = checkpoints.next_checkpoint_name(self.job_dir / "checkpoints")
        self._note(f"CRAWL CHECKPOINTING TO {self.job_dir / 'checkpoints' / name}")
        frontier = self.frontier
        # Queued URIs, the seen set, deferred outlinks and digests are in the store: with every head spilled
        # to it and no fetch in flight, a copy of the store and this JSON are one consistent state.
        frontier.spill_heads()
        state = checkpoints.CheckpointState(
            job=self.config.job_name, stats={**self.stats.to_json(), "elapsed_before_ms": self._elapsed_ms()},
            quotas={key: (*self.quota.counts(key), q.retired_reason) for key, q in frontier.queues.items()},
            warc_serial=self.warc.serial if self.warc else 0, robots=dict(self.servers.robots_texts),
            dns=dict(self.servers.addresses))
        checkpoints.save_checkpoint(self.job_dir / "checkpoints", name, state,
                                    lambda directory: self.store.backup(directory / STORE_FILE))
        self._write_reports()
        self.logs.flush()
        self._paused = was_paused
        self._wakeup.set()
        self.job_log.info("checkpoint %s written", name)
        return name

    def _restore(self) -> int:
        state = checkpoints.load_checkpoint(self.resume_from)
        frontier = self.frontier
        frontier.restore_queues()
        for key, (successes, all_bytes, reason) in state.quotas.items():
            frontier.retire(key, reason)
            self.quota.restore(key, successes, all_bytes)
        self.stats = CrawlStats.from_json(state.stats)
        self.servers.restore(state.dns, state.robots)
        for seed in self.stats.seeds:
            self.scope.add_seed(seed)
        self.job_log.info("resumed from checkpoint %s: %d URIs queued, %d done", self.resume_from.name,
                          frontier.queued_count, self.store.count_state(DONE))
        return state.warc_serial

    def _report_input(self) -> ReportInput:
        frontier, now = self.frontier, time.monotonic()
        queues = [queue.report(now) for queue in frontier.queues.values()]
        status = self._exit_status or _EXIT_STATUS_WHILE.get(self._state, CrawlExitStatus.RUNNING)
        last_state = (FrontierState.EMPTY if frontier.is_empty() and self._exit_status is CrawlExitStatus.FINISHED
                      else self.status().figures.last_reached_state)
        summary = FrontierSummary(job_name=self.config.job_name, queued=frontier.queued_count,
                                  already_included=frontier.seen_count, last_state=last_state, queues=queues)
        return ReportInput(job_name=self.config.job_name, crawl_status=status, elapsed_ms=self._elapsed_ms(),
                           stats=self.stats, dedup_present=self.config.dedup_enabled, frontier=summary,
                           stamp12=time.strftime("%Y%m%d%H%M", time.gmtime()))

    def _render_reports(self) -> dict[str, str]:
        return render_reports(self._report_input())

    def _write_reports(self) -> None:
        try:
            write_reports(self.launch_dir / "reports", self._report_input())
        except OSError as exc:
            self.alert_count += 1
            self.logs.write("alerts.log", f"{iso_now()} SEVERE reports not written: {exc}")

