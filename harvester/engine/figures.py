"""A crawl's figures at one moment, typed and in the engine's own names, and its launch's status (``LaunchStatus``:
state, exit status, figures and what else the job status shows).

The launch's parts give them (``crawl_figures``, through parts.py) from their counters, the frontier's
queue counts and the rates; only the REST view (harvester/engine/status.py) gives them Heritrix's field
names and groups them into Heritrix's nested reports. Nothing here reads a clock or changes a counter.
"""

from __future__ import annotations

from dataclasses import dataclass

from harvester.crawlstates import FRONTIER_STATE_OF, ControllerState, CrawlExitStatus, FrontierState
from harvester.engine.frontier import QueueCounts
from harvester.engine.stats import CrawlStats, RateTracker


@dataclass(frozen=True)
class CrawlFigures:
    # URI totals
    downloaded_uri_count: int
    queued_uri_count: int
    total_uri_count: int
    future_uri_count: int
    # size totals: content sizes, as Heritrix's crawled bytes
    dup_by_hash_bytes: int
    dup_by_hash_count: int
    not_modified_bytes: int
    not_modified_count: int
    novel_bytes: int
    novel_count: int
    total_bytes: int
    total_count: int
    warc_novel_content_bytes: int
    warc_novel_urls: int
    size_on_disk: int
    # rates
    current_docs_per_second: float
    average_docs_per_second: float
    current_kib_per_sec: int
    average_kib_per_sec: int
    # load
    busy_threads: int
    total_threads: int
    congestion_ratio: float
    average_queue_depth: float
    deepest_queue_depth: int
    # frontier
    total_queues: int
    in_process_queues: int
    ready_queues: int
    snoozed_queues: int
    active_queues: int
    inactive_queues: int
    ineligible_queues: int
    retired_queues: int
    exhausted_queues: int
    last_reached_state: FrontierState


@dataclass(frozen=True)
class LaunchStatus:
    """A launch's status at one moment, as the crawl controller answers it."""

    controller_state: ControllerState
    exit_status: CrawlExitStatus | None
    figures: CrawlFigures
    elapsed_ms: int
    toe_count: int
    crawl_log_tail: tuple[str, ...]
    alert_count: int


def crawl_figures(stats: CrawlStats, rates: RateTracker, counts: QueueCounts, queued: int, in_flight: int,
                  elapsed_ms: int, busy: int, threads: int, size_on_disk: int,
                  state: ControllerState) -> CrawlFigures:
    """The figures of a crawl in ``state``, rounded as Heritrix's status rounds them."""
    avg_docs, avg_kib = rates.averages(stats.downloaded, stats.total_bytes, elapsed_ms)
    depths, active, in_process, snoozed = counts.depths, counts.active, counts.in_process, counts.snoozed
    return CrawlFigures(
        downloaded_uri_count=stats.downloaded, queued_uri_count=queued,
        total_uri_count=stats.downloaded + queued + in_flight, future_uri_count=0,
        dup_by_hash_bytes=stats.dup_bytes, dup_by_hash_count=stats.dup_count, not_modified_bytes=0,
        not_modified_count=0, novel_bytes=stats.novel_bytes, novel_count=stats.novel_count,
        total_bytes=stats.total_bytes, total_count=stats.downloaded, warc_novel_content_bytes=stats.novel_bytes,
        warc_novel_urls=stats.novel_count, size_on_disk=size_on_disk,
        current_docs_per_second=round(rates.current_docs, 2), average_docs_per_second=round(avg_docs, 2),
        current_kib_per_sec=int(rates.current_kib), average_kib_per_sec=int(avg_kib),
        busy_threads=busy, total_threads=threads,
        congestion_ratio=round(active / max(1, busy or 1), 2) if active else 0.0,
        average_queue_depth=round(sum(depths) / len(depths), 2) if depths else 0,
        deepest_queue_depth=max(depths) if depths else 0,
        total_queues=counts.total, in_process_queues=in_process,
        ready_queues=max(0, active - in_process - snoozed), snoozed_queues=snoozed, active_queues=active,
        inactive_queues=0, ineligible_queues=0, retired_queues=counts.retired,
        exhausted_queues=counts.total - active,
        last_reached_state=FRONTIER_STATE_OF.get(state, FrontierState.HOLD))
