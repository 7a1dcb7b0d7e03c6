"""The parts of one launch, wired from its CrawlConfig as Heritrix's Spring context wires crawler-beans.cxml:
the frontier and its store, scope, queue assignment, statistics and rates, crawl limits, the quota enforcer,
link discovery, the server cache and the fetcher, and the processor chain over them (chain.py).

It also gives the launch its first state (the seeds, or a checkpoint's state, operators' live changes
included), takes the parts to a checkpoint, and reads them for status and reports. Operators' live changes
(live/livechanges.py) change the parts it holds, ``politeness`` among them. It wires and holds; the crawl
controller (crawl.py) runs the launch and owns its state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path

from harvestdef.dedup import DedupIndex
from harvestdef.destinations import PUBLIC_ONLY, DestinationPolicy
from harvestdef.domainnames import to_punycode
from harvester.engine import checkpoint as checkpoints
from harvester.engine.chain import ProcessorChain
from harvester.engine.config import CrawlConfig
from harvester.engine.disposition import Disposition
from harvester.engine.extraction.links import LinkExtractors
from harvester.engine.extraction.sitemaps import SitemapDeclarations, SitemapLimits
from harvester.engine.fetching.bounds import ResponseBounds
from harvester.engine.fetching.browser import BrowserOptions
from harvester.engine.fetching.browserfetch import BrowserFetchProcessor, BrowserPages
from harvester.engine.fetching.cookies import CookieStore
from harvester.engine.fetching.credentials import HttpAuthentication
from harvester.engine.fetching.fetch import Fetcher, RequestSettings
from harvester.engine.fetching.prerequisites import DnsPrerequisite, FormLoginPrerequisite, RobotsPrerequisite
from harvester.engine.fetching.servercache import ServerCache
from harvester.engine.fetching.step import FetchProcessor, Politeness
from harvester.engine.frontier.discovery import LinkDiscovery
from harvester.engine.frontier.frontier import DONE, Frontier
from harvester.engine.frontier.preselector import Preselector
from harvester.engine.frontier.queuepolicy import QueueAssignment
from harvester.engine.frontier.quota import QuotaEnforcer, QuotaRules
from harvester.engine.frontier.scope import Scope, canonical_url
from harvester.engine.limits import CrawlLimits
from harvester.engine.live.livechanges import LiveChanges
from harvester.engine.reporting.figures import CrawlFigures, crawl_figures
from harvester.engine.reporting.launchlogs import CrawlLogs
from harvester.engine.reporting.reports import ReportInput, report_input
from harvester.engine.reporting.stats import CrawlStats, RateTracker
from harvester.engine.warcwriting.recorder import CaptureRecorder, DedupRules
from harvester.engine.warcwriting.warc import WarcFileWriter
from harvester.heritrix3.states import ControllerState, CrawlExitStatus


class CrawlParts:
    """One launch's parts. ``on_scheduled`` is called whenever a URL is (re)queued (to wake idle crawl
    threads). A launch from ``resume_from`` starts from that checkpoint's copy of the store. With ``browser``
    options the fetch step loads each URI as a page in Chromium (fetching/browserfetch.py) instead of fetching it."""

    def __init__(self, config: CrawlConfig, job_dir: Path, hosts: Mapping[str, str], resume_from: Path | None,
                 on_scheduled: Callable[[], None], sitemap_limits: SitemapLimits | None = None,
                 browser: BrowserOptions | None = None, bounds: ResponseBounds | None = None,
                 destinations: DestinationPolicy = PUBLIC_ONLY, job_log: logging.Logger | None = None) -> None:
        self.config = config
        punycode_hosts = {to_punycode(name): address for name, address in hosts.items()}
        self.store = checkpoints.launch_store(job_dir, resume_from)
        self.frontier = Frontier(self.store, config.parallel_queues)
        self.scope = Scope(config.scope_rules, config.seeds)
        self.queue_assignment = QueueAssignment(config.queue_policy, config.queue_by_domain)
        self.stats = CrawlStats()  # replaced by the checkpoint's when a launch resumes
        self.rates = RateTracker()
        self.limits = CrawlLimits.from_config(config)
        self.quota = QuotaEnforcer(QuotaRules.from_config(config), self.frontier)
        self.discovery = LinkDiscovery(self.frontier, self.scope, self.queue_assignment,
                                       on_discovered=self._count_discovered, on_scheduled=on_scheduled)
        # the destination policy, with the hosts file's names allowed: what the crawl may connect to
        self.servers = ServerCache(punycode_hosts, config.user_agent, destinations, job_log,
                                   config.ip_validity_seconds)
        bounds = bounds or ResponseBounds()
        self.extractors = LinkExtractors.from_config(config, sitemap_limits or SitemapLimits(), bounds)
        # What the template's cookie store and credential store keep; None where the template has neither,
        # so a fetch without them costs nothing more than before.
        self.cookies = CookieStore() if config.cookies_enabled else None
        self.authentication = HttpAuthentication(config.http_credentials) if config.http_credentials else None
        self.logins_posted: set[str] = set()
        self.sitemaps = SitemapDeclarations()
        self.fetcher = Fetcher(RequestSettings.from_config(config, bounds), keeps_payload=self.extractors.keeps_payload,
                               cookies=self.cookies, authentication=self.authentication,
                               destinations=self.servers.destinations)
        # The DispositionProcessor's politeness in force: replaced whole by a live change, read for each fetch.
        self.politeness = Politeness.from_config(config)
        self.live = LiveChanges(self)
        self.browser_pages = BrowserPages(browser, config.user_agent) if browser is not None else None

    def _count_discovered(self) -> None:
        self.stats.discovered += 1  # self.stats, not a reference kept: a resume replaces it

    def chain(self, logs: CrawlLogs, warc: WarcFileWriter | None, dedup: DedupIndex | None,
              is_stopping: Callable[[], bool]) -> ProcessorChain:
        """The steps of chain.py's order of work, writing to ``logs`` and ``warc`` (None: WARC writing is off),
        deduplicating against ``dedup`` as the DeDuplicator's rules say; retries and outlinks end once
        ``is_stopping`` says so."""
        config, servers, frontier = self.config, self.servers, self.frontier
        recorder = CaptureRecorder(warc, self.store, dedup, DedupRules.from_config(config))
        disposition = Disposition(config, self.stats, logs, recorder, frontier, self.queue_assignment, self.quota,
                                  self.discovery, is_stopping, self.extractors, self.sitemaps)
        logins = ([FormLoginPrerequisite(config.form_credentials, servers, self.fetcher, frontier, disposition,
                                         self.queue_assignment.key, self.logins_posted)]
                  if config.form_credentials else [])
        return ProcessorChain((
            Preselector(self.scope),
            DnsPrerequisite(servers, disposition),
            self.quota,
            RobotsPrerequisite(config.robots_policy, servers, self.fetcher, frontier, disposition,
                               offers_sitemaps=config.robots_sitemaps),
            *logins,
            self._fetch_step(disposition, is_stopping),
        ), disposition)

    def _fetch_step(self, disposition: Disposition,
                    is_stopping: Callable[[], bool]) -> FetchProcessor | BrowserFetchProcessor:
        if self.browser_pages is not None:
            return BrowserFetchProcessor(self.config, self.browser_pages, self.fetcher, self.frontier, self.servers,
                                         disposition, self.discovery, self.queue_assignment.key, is_stopping,
                                         lambda: self.politeness)
        return FetchProcessor(self.config, self.fetcher, self.frontier, self.servers, disposition, is_stopping,
                              lambda: self.politeness)

    async def close_fetching(self) -> None:
        """End what fetches: the browser and its proxy (their exchanges in flight given up), the connections."""
        if self.browser_pages is not None:
            await self.browser_pages.close()
        self.fetcher.close()

    def seed(self, logs: CrawlLogs) -> int:
        """Schedule the configured seeds (one not http(s) is an alert and left out); the first WARC serial of
        a fresh launch, 0."""
        for seed in self.config.seeds:
            url = canonical_url(seed)
            if url is None:
                logs.alert("WARNING", f"seed {seed!r} is not an http(s) URL, ignored")
                continue
            self.stats.seeds.setdefault(url, (0, ""))
            self.discovery.seed(url)
        return 0

    def add_seed(self, url: str) -> bool:
        """A seed added while the crawl runs (canonical already): in the seeds report, in scope as a seed, and
        scheduled unless already included. True if it was scheduled."""
        self.stats.seeds.setdefault(url, (0, ""))
        return self.discovery.add_seed(url)

    def resume(self, checkpoint: Path, job_log: logging.Logger) -> int:
        """Continue from ``checkpoint`` (whose store this launch opened); the WARC serial it had reached."""
        self.stats, serial, sessions = checkpoints.resume_crawl(
            checkpoint, frontier=self.frontier, quota=self.quota, servers=self.servers, scope=self.scope,
            live=self.live)
        self._restore_sessions(sessions)
        job_log.info("resumed from checkpoint %s: %d URIs queued, %d done; live changes kept: %s", checkpoint.name,
                     self.frontier.queued_count, self.store.count_state(DONE), self.live.describe())
        if self.cookies is not None:
            job_log.info("cookies kept from the checkpoint: %d", len(self.cookies))
        return serial

    def _sessions(self) -> checkpoints.Sessions:
        """What the crawl keeps of its sites' sessions: cookies, logins posted, HTTP credentials in use, the
        sitemaps named and not yet fetched."""
        return checkpoints.Sessions(
            cookies=self.cookies.to_json() if self.cookies is not None else [],
            logins_posted=sorted(self.logins_posted),
            http_authentication=self.authentication.to_json() if self.authentication is not None else {},
            sitemaps=self.sitemaps.to_json())

    def _restore_sessions(self, sessions: checkpoints.Sessions) -> None:
        if self.cookies is not None:
            self.cookies.restore(sessions.cookies)
        self.logins_posted.update(sessions.logins_posted)
        if self.authentication is not None:
            self.authentication.restore(sessions.http_authentication)
        for url in sessions.sitemaps:
            self.sitemaps.declare(url)

    def save_checkpoint(self, directory: Path, elapsed_ms: int, warc_serial: int) -> None:
        """Checkpoint ``directory`` of this launch, which has no fetch in flight."""
        checkpoints.save_crawl(directory.parent, directory.name, job=self.config.job_name, stats=self.stats,
                               elapsed_ms=elapsed_ms, frontier=self.frontier, quota=self.quota, servers=self.servers,
                               warc_serial=warc_serial, live_changes=self.live.to_json(), sessions=self._sessions())

    def figures(self, state: ControllerState, elapsed_ms: int, busy: int, now: float,
                size_on_disk: int) -> CrawlFigures:
        frontier = self.frontier
        return crawl_figures(self.stats, self.rates, frontier.queue_counts(now), frontier.queued_count,
                             frontier.in_flight, elapsed_ms, busy, self.config.max_toe_threads, size_on_disk, state)

    def report_input(self, state: ControllerState, exit_status: CrawlExitStatus | None,
                     elapsed_ms: int) -> ReportInput:
        return report_input(self.config.job_name, state, exit_status, elapsed_ms, self.stats, self.frontier,
                            self.config.dedup_enabled)
