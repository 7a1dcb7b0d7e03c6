"""The disposition of a URI whose processing ended: everything written and counted about it, in one place.

A capture gets its WARC records (through the recorder), its crawl.log line, its tallies in the statistics,
its queue's figures and its group's quota counts, and its outlinks and redirect offered to discovery; a
failure gets its line and its tallies. Records are written before the crawl.log line, so a line never names
a capture that is not in a WARC. It decides nothing about what to fetch and fetches nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlsplit

from harvester.engine.chain import DNS_FAILED
from harvester.engine.config import CrawlConfig
from harvester.engine.extraction.links import LinkExtractors
from harvester.engine.extraction.sitemaps import MANIFEST_HOP, SitemapDeclarations, robots_sitemaps
from harvester.engine.fetching.fetch import FetchResult
from harvester.engine.frontier.discovery import LinkDiscovery
from harvester.engine.frontier.frontier import QUEUED, CrawlUri, Frontier
from harvester.engine.frontier.queuepolicy import QueueAssignment
from harvester.engine.frontier.quota import QuotaEnforcer
from harvester.engine.frontier.scope import canonical_url
from harvester.engine.reporting.launchlogs import CrawlLogs, iso_now
from harvester.engine.reporting.stats import CrawlStats
from harvester.engine.warcwriting.recorder import DUPLICATE_ANNOTATION, CaptureRecorder
from harvester.engine.warcwriting.warc import sha1_digest


class Disposition:
    """Records finished URIs. ``is_stopping`` tells whether the crawl is ending, when no outlink is offered.
    ``extractors`` are the crawl's link extractors; ``sitemaps`` the URLs named as sitemaps, not yet fetched."""

    def __init__(self, config: CrawlConfig, stats: CrawlStats, logs: CrawlLogs, recorder: CaptureRecorder,
                 frontier: Frontier, queue_assignment: QueueAssignment, quota: QuotaEnforcer,
                 discovery: LinkDiscovery, is_stopping: Callable[[], bool],
                 extractors: LinkExtractors | None = None, sitemaps: SitemapDeclarations | None = None) -> None:
        self.extractors = extractors or LinkExtractors()
        self.sitemaps = sitemaps if sitemaps is not None else SitemapDeclarations()
        self.config = config
        self.stats = stats
        self.logs = logs
        self.recorder = recorder
        self.frontier = frontier
        self.queue_assignment = queue_assignment
        self.quota = quota
        self.discovery = discovery
        self.is_stopping = is_stopping

    def source(self, uri: CrawlUri) -> str | None:
        """crawl.log's source tag (column 11): the URI's seed, when sourceTagSeeds is on."""
        return uri.seed if self.config.source_tag_seeds else None

    def record_failure(self, uri: CrawlUri, status: int, thread: int, annotations: list[str], started: float = 0,
                       duration_ms: int = 0) -> None:
        self.stats.note_unsuccessful(status)
        self.stats.host(urlsplit(uri.url).hostname or "")  # a host tried is a host visited, as in Heritrix
        self.frontier.note_outcome(self.queue_assignment.key(uri.url), status, 0, uri.url)
        if not uri.hop_path and not uri.is_prerequisite:
            self.stats.seeds[uri.url] = (status, "")
        self.logs.crawl(status, None, uri.url, uri.hop_path, uri.via, "unknown", thread, started, duration_ms, None,
                        self.source(uri), annotations)
        self.frontier.mark_done(uri)
        if self.sitemaps:
            self.sitemaps.forget(uri.url)

    def record_robots_denial(self, key: str, host: str) -> None:
        self.stats.host(host).robots_denied += 1
        self.frontier.note_robots_denial(key)

    def record_dns(self, key: str, host: str, address: str | None, uri: CrawlUri, thread: int,
                   started: float) -> None:
        """The ``dns:`` lookup made for ``uri``'s host: a record and a line with status 1, or a failed line."""
        dns_uri = f"dns:{host}"
        if address is None:
            self.stats.note_unsuccessful(DNS_FAILED)
            self.frontier.note_outcome(key, DNS_FAILED, 0, dns_uri)
            self.logs.crawl(DNS_FAILED, None, dns_uri, uri.hop_path + "P", uri.url, "text/dns", thread, started, 0,
                            None, self.source(uri), [])
            return
        answer = (time.strftime("%Y%m%d%H%M%S", time.gmtime(started)) + f"\n{host}.\t3600\tIN\tA\t{address}\n").encode()
        digest = sha1_digest(answer)
        self.recorder.record_dns(dns_uri, started, answer)
        # Heritrix tallies DNS lookups under the host "dns:", as text/dns, with status 1.
        self.stats.note_success("dns:", 1, "text/dns", len(answer), self.source(uri))
        self.stats.note_capture("dns:", len(answer), is_duplicate=False)
        self.frontier.note_outcome(key, 1, len(answer), dns_uri)
        self.quota.count(key, True, len(answer), is_prerequisite=True)
        annotations = [f"content-size:{len(answer)}"] if self.config.content_size_annotation else []
        self.logs.crawl(1, len(answer), dns_uri, "P", uri.url, "text/dns", thread, started,
                        int((time.time() - started) * 1000), digest, self.source(uri), annotations)

    def record_capture(self, key: str, uri: CrawlUri, result: FetchResult, thread: int, extract: bool = True) -> None:
        """A fetch that got a response: records, line, tallies; then, unless ``extract`` is off or the crawl
        is ending, its redirect and outlinks go to discovery."""
        config, stats = self.config, self.stats
        content_type = result.header("content-type")
        mime = content_type.split(";", 1)[0].strip().lower() or "unknown"
        size = result.payload_length
        content_size = result.content_size
        digest = result.payload_digest
        annotations = list(result.annotations)
        if uri.attempts:
            annotations.insert(0, f"{uri.attempts}t")
        is_duplicate = self.recorder.record_exchange(uri.url, result, mime, annotations)
        if is_duplicate:
            annotations.append(DUPLICATE_ANNOTATION)
        if config.content_size_annotation:
            annotations.append(f"content-size:{content_size}")
        host = urlsplit(uri.url).hostname or ""
        stats.note_success(host, result.status, mime, content_size, self.source(uri))
        self.frontier.note_outcome(key, result.status, content_size, uri.url)
        stats.note_capture(host, content_size, is_duplicate)
        self.quota.count(key, 200 <= result.status < 300, content_size, uri.is_prerequisite)
        self.logs.crawl(result.status, size, uri.url, uri.hop_path, uri.via, mime, thread, result.started,
                        result.duration_ms, digest, self.source(uri), annotations)
        self.frontier.mark_done(uri)
        location = result.header("location") if 300 <= result.status < 400 else ""
        if not uri.hop_path and not uri.is_prerequisite:
            stats.seeds[uri.url] = (result.status, canonical_url(location, uri.url) or "" if location else "")
        # named a sitemap: read as one if it came (2xx), forgotten either way, as a URL is fetched once
        is_declared_sitemap = bool(self.sitemaps) and self.sitemaps.take(uri.url)
        if not extract or self.is_stopping():
            return
        if location:
            self.discovery.discover(location, "R", uri, uri.url)
        if 200 <= result.status < 300 and size:
            spool = result.spool
            assert spool is not None
            found = self.extractors.extract(uri.url, uri.via, content_type, result.header("content-encoding"),
                                            lambda: spool.payload_pieces(size), is_declared_sitemap)
            if found.cut:
                # the document's links past the cut are not offered; the log says which document and why
                self.logs.write("nonfatal-errors.log", f"{iso_now()} {uri.url} {found.cut}")
            base_url = canonical_url(found.base, uri.url) if found.base else uri.url
            for raw, hop in found.links:
                self.discovery.discover(raw, hop, uri, base_url or uri.url)
            for raw in found.sitemaps:
                self.declare_sitemap(raw, uri)

    def declare_sitemap(self, raw: str, parent: CrawlUri) -> None:
        """A sitemap named by ``parent`` (robots.txt's Sitemap line, an index's entry): offered as a manifest
        link, and read as a sitemap when fetched (ExtractorRobotsTxt's isSitemap annotation)."""
        url = canonical_url(raw, parent.url)
        if url is None or self.frontier.is_done(url):
            return
        self.discovery.offer(url, parent.hop_path + MANIFEST_HOP, parent.url, parent.seed, MANIFEST_HOP)
        if self.frontier.state.get(url) == QUEUED:
            self.sitemaps.declare(url)

    def record_robots_sitemaps(self, robots_uri: CrawlUri, text: str) -> None:
        """ExtractorRobotsTxt: the Sitemap lines of a robots.txt just fetched (``robots_uri``)."""
        if self.is_stopping():
            return
        for raw in robots_sitemaps(text):
            self.declare_sitemap(raw, robots_uri)
