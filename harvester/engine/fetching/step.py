"""The fetch step: one HTTP exchange for a URI, retried after network errors, and the politeness after it.

A network error (a negative status) puts the URI back on its queue, which rests ``retryDelaySeconds`` ×
2^(attempt−1), at most 300 s, until ``maxRetries`` is spent (Heritrix's BdbFrontier); then the URI ends
with that status and ``Nt`` (N attempts). A response is handed to the disposition, and the queue rests
``delayFactor`` × the fetch's duration within ``minDelayMs``..``maxDelayMs``, or longer for a robots.txt
Crawl-delay up to ``respectCrawlDelayUpToSeconds`` (Heritrix's DispositionProcessor). Those four values are
one ``Politeness``, read afresh for every fetch, so an operator's change applies from the next fetch on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from harvester.engine.chain import Curi, Outcome
from harvester.engine.config import CrawlConfig
from harvester.engine.disposition import Disposition
from harvester.engine.fetching.fetch import DESTINATION_REFUSED, Fetcher, FetchResult
from harvester.engine.fetching.servercache import ServerCache
from harvester.engine.frontier.frontier import Frontier

MAX_BACKOFF_SECONDS = 300.0


@dataclass(frozen=True)
class Politeness:
    """The DispositionProcessor's politeness properties."""

    delay_factor: float
    min_delay_ms: int
    max_delay_ms: int
    respect_crawl_delay_up_to_seconds: int

    @classmethod
    def from_config(cls, config: CrawlConfig) -> Politeness:
        return cls(config.delay_factor, config.min_delay_ms, config.max_delay_ms,
                   config.respect_crawl_delay_up_to_seconds)

    def delay_ms(self, duration_ms: float, crawl_delay_seconds: float | None) -> float:
        """How long a queue rests after a fetch that took ``duration_ms``, its server asking for
        ``crawl_delay_seconds`` in robots.txt (None or 0: nothing asked)."""
        delay_ms = min(self.max_delay_ms, max(self.min_delay_ms, self.delay_factor * duration_ms))
        if crawl_delay_seconds:
            delay_ms = max(delay_ms, min(crawl_delay_seconds, self.respect_crawl_delay_up_to_seconds) * 1000)
        return delay_ms


class FetchProcessor:
    """Fetches, retries network errors while the crawl is not ending (``is_stopping``), disposes of the
    response and says when the queue may be used again (``politeness`` gives the values in force)."""

    def __init__(self, config: CrawlConfig, fetcher: Fetcher, frontier: Frontier, servers: ServerCache,
                 disposition: Disposition, is_stopping: Callable[[], bool],
                 politeness: Callable[[], Politeness]) -> None:
        self.config = config
        self.politeness = politeness
        self.fetcher = fetcher
        self.frontier = frontier
        self.servers = servers
        self.disposition = disposition
        self.is_stopping = is_stopping

    async def process(self, curi: Curi) -> Outcome:
        uri = curi.uri
        with await self.fetcher.fetch(uri.url, uri.via, uri.is_prerequisite, curi.address, curi.method,
                                      curi.body) as result:
            return self._fetched(curi, result)

    def _fetched(self, curi: Curi, result: FetchResult) -> Outcome:
        config, uri = self.config, curi.uri
        if result.status < 0:
            uri.attempts += 1
            if result.status != DESTINATION_REFUSED and uri.attempts <= config.max_retries and not self.is_stopping():
                backoff = min(MAX_BACKOFF_SECONDS, config.retry_delay_seconds * (2 ** (uri.attempts - 1)))
                self.frontier.retry_later(curi.queue, uri, time.monotonic() + backoff)
                return Outcome(ready_at=None)
            self.disposition.record_failure(uri, result.status, curi.thread, [f"{uri.attempts}t"],
                                            started=result.started, duration_ms=result.duration_ms)
            return Outcome(ready_at=time.monotonic())
        self.disposition.record_capture(curi.queue.key, uri, result, curi.thread)
        return Outcome(ready_at=time.monotonic() + self._politeness_delay_ms(curi, result) / 1000)

    def _politeness_delay_ms(self, curi: Curi, result: FetchResult) -> float:
        return self.politeness().delay_ms(result.duration_ms, self.servers.crawl_delay(curi.authority))
