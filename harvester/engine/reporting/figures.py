"""A crawl's figures at one moment, in the nested reports of Heritrix's job status (harvester/heritrix3/model.py,
which the client reads them back into), and its launch's status (``LaunchStatus``: state, exit status,
figures and what else the job status shows).

The launch's parts give them (``crawl_figures``, through parts.py) from their counters, the frontier's
queue counts and the rates; the REST view (harvester/engine/rest/status.py) writes the reports as they are.
Nothing here reads a clock or changes a counter.
"""

from __future__ import annotations

from dataclasses import dataclass

from harvester.engine.frontier.frontier import QueueCounts
from harvester.engine.reporting.stats import CrawlStats, RateTracker
from harvester.heritrix3.model import FrontierCounts, LoadReport, RateReport, SizeTotalsReport, UriTotalsReport
from harvester.heritrix3.states import FRONTIER_STATE_OF, ControllerState, CrawlExitStatus, FrontierState


@dataclass(frozen=True)
class CrawlFigures:
    """A crawl's figures at one moment, as the reports of Heritrix's job status hold them."""

    uri_totals: UriTotalsReport
    size_totals: SizeTotalsReport
    rates: RateReport
    load: LoadReport
    frontier: FrontierCounts


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
        uri_totals=UriTotalsReport(
            downloaded_uri_count=stats.downloaded, queued_uri_count=queued,
            total_uri_count=stats.downloaded + queued + in_flight, future_uri_count=0),
        size_totals=SizeTotalsReport(
            dup_by_hash=stats.dup_bytes, dup_by_hash_count=stats.dup_count, not_modified=0, not_modified_count=0,
            novel=stats.novel_bytes, novel_count=stats.novel_count, total=stats.total_bytes,
            total_count=stats.downloaded, warc_novel_content_bytes=stats.novel_bytes,
            warc_novel_urls=stats.novel_count, size_on_disk=size_on_disk),
        rates=RateReport(
            current_docs_per_second=round(rates.current_docs, 2), average_docs_per_second=round(avg_docs, 2),
            current_kib_per_sec=int(rates.current_kib), average_kib_per_sec=int(avg_kib)),
        load=LoadReport(
            busy_threads=busy, total_threads=threads,
            congestion_ratio=round(active / max(1, busy or 1), 2) if active else 0.0,
            average_queue_depth=round(sum(depths) / len(depths), 2) if depths else 0,
            deepest_queue_depth=max(depths) if depths else 0),
        frontier=FrontierCounts(
            total_queues=counts.total, in_process_queues=in_process,
            ready_queues=max(0, active - in_process - snoozed), snoozed_queues=snoozed, active_queues=active,
            inactive_queues=0, ineligible_queues=0, retired_queues=counts.retired,
            exhausted_queues=counts.total - active,
            last_reached_state=FRONTIER_STATE_OF.get(state, FrontierState.HOLD)))
