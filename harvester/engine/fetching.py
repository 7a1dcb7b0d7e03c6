"""The fetch step: one HTTP exchange for a URI, retried after network errors, and the politeness after it.

A network error (a negative status) puts the URI back on its queue, which rests ``retryDelaySeconds`` ×
2^(attempt−1), at most 300 s, until ``maxRetries`` is spent (Heritrix's BdbFrontier); then the URI ends
with that status and ``Nt`` (N attempts). A response is handed to the disposition, and the queue rests
``delayFactor`` × the fetch's duration within ``minDelayMs``..``maxDelayMs``, or longer for a robots.txt
Crawl-delay up to ``respectCrawlDelayUpToSeconds`` (Heritrix's DispositionProcessor).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from harvester.engine.chain import Curi, Outcome
from harvester.engine.config import CrawlConfig
from harvester.engine.disposition import Disposition
from harvester.engine.fetch import Fetcher, FetchResult
from harvester.engine.frontier import Frontier
from harvester.engine.servercache import ServerCache

MAX_BACKOFF_SECONDS = 300.0


class FetchProcessor:
    """Fetches, retries network errors while the crawl is not ending (``is_stopping``), disposes of the
    response and says when the queue may be used again."""

    def __init__(self, config: CrawlConfig, fetcher: Fetcher, frontier: Frontier, servers: ServerCache,
                 disposition: Disposition, is_stopping: Callable[[], bool]) -> None:
        self.config = config
        self.fetcher = fetcher
        self.frontier = frontier
        self.servers = servers
        self.disposition = disposition
        self.is_stopping = is_stopping

    async def process(self, curi: Curi) -> Outcome:
        uri = curi.uri
        with await self.fetcher.fetch(uri.url, uri.via, uri.is_prerequisite, curi.address) as result:
            return self._fetched(curi, result)

    def _fetched(self, curi: Curi, result: FetchResult) -> Outcome:
        config, uri = self.config, curi.uri
        if result.status < 0:
            uri.attempts += 1
            if uri.attempts <= config.max_retries and not self.is_stopping():
                backoff = min(MAX_BACKOFF_SECONDS, config.retry_delay_seconds * (2 ** (uri.attempts - 1)))
                self.frontier.retry_later(curi.queue, uri, time.monotonic() + backoff)
                return Outcome(ready_at=None)
            self.disposition.record_failure(uri, result.status, curi.thread, [f"{uri.attempts}t"],
                                            started=result.started, duration_ms=result.duration_ms)
            return Outcome(ready_at=time.monotonic())
        self.disposition.record_capture(curi.queue.key, uri, result, curi.thread)
        return Outcome(ready_at=time.monotonic() + self._politeness_delay_ms(curi, result) / 1000)

    def _politeness_delay_ms(self, curi: Curi, result: FetchResult) -> float:
        config = self.config
        delay_ms = min(config.max_delay_ms, max(config.min_delay_ms, config.delay_factor * result.duration_ms))
        crawl_delay = self.servers.crawl_delay(curi.authority)
        if crawl_delay:
            delay_ms = max(delay_ms, min(crawl_delay, config.respect_crawl_delay_up_to_seconds) * 1000)
        return delay_ms
