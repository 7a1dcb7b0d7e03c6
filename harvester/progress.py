"""Turning what the crawler reports into the monitor messages operators follow: its job status into
CrawlProgress, its frontier's queues into FrontierReport (docs/messages.md, CrawlProgress and FrontierReport:
controller → `<env>.monitor`)."""

from __future__ import annotations

from harvestdef.messages import (
    CRAWL_LOG_LINE_LENGTH,
    CRAWL_LOG_TAIL_LINES,
    CrawlProgress,
    DoOneCrawl,
    FrontierLine,
    FrontierReport,
    clip,
)
from harvester.frontierqueues import FRONTIER_FILTERS, TOP_TOTAL_ENQUEUES_SIZE, QueueLine
from harvester.heritrix3.model import JobResource
from harvester.heritrix3.states import ControllerState

# NetarchiveSuite's mapping of crawlControllerState to its crawl status (its AbstractRestHeritrixController).
_STATUS_OF_STATE = {ControllerState.PAUSING: "CRAWLER_PAUSING", ControllerState.PAUSED: "CRAWLER_PAUSED",
                    ControllerState.EMPTY: "CRAWLER_EMPTY", ControllerState.FINISHED: "CRAWLING_FINISHED",
                    None: "PRE_CRAWL"}


def crawl_progress(job: DoOneCrawl, status: JobResource, controller_id: str, console_url: str,
                   is_heritrix_console: bool = False) -> CrawlProgress:
    """The CrawlProgress of one status poll. ``is_heritrix_console``: ``console_url`` is a real Heritrix 3's
    job page (the bundled engine has no web console). The crawl-log tail is cut to the message's bounds."""
    uris = status.uri_totals_report
    sizes = status.size_totals_report
    rates = status.rate_report
    frontier = status.frontier_report
    downloaded = uris.downloaded_uri_count if uris else 0
    discovered = uris.total_uri_count if uris else 0
    return CrawlProgress(
        job_id=job.job_id, attempt_id=job.attempt_id, harvest_id=job.harvest_id, controller_id=controller_id,
        host_url=console_url,
        status=_STATUS_OF_STATE.get(status.crawl_controller_state, "CRAWLER_ACTIVE"),
        crawler_state=status.crawl_controller_state or status.status_description,
        progress=round(100.0 * downloaded / discovered, 2) if discovered else 0.0,
        queued_files=uris.queued_uri_count if uris else 0,
        total_queues=frontier.total_queues if frontier else 0,
        active_queues=frontier.active_queues if frontier else 0,
        retired_queues=frontier.retired_queues if frontier else 0,
        exhausted_queues=frontier.exhausted_queues if frontier else 0,
        elapsed_seconds=(status.elapsed_report.elapsed_milliseconds // 1000) if status.elapsed_report else 0,
        alert_count=status.alert_count,
        downloaded_files=downloaded,
        discovered_files=discovered,
        current_processed_kb_per_sec=int(rates.current_kib_per_sec) if rates else 0,
        processed_kb_per_sec=int(rates.average_kib_per_sec) if rates else 0,
        current_processed_docs_per_sec=rates.current_docs_per_second if rates else 0.0,
        processed_docs_per_sec=rates.average_docs_per_second if rates else 0.0,
        active_toe_count=status.thread_report.toe_count if status.thread_report else 0,
        total_bytes_written=sizes.total if sizes else 0,
        crawl_log_tail=[clip(line, CRAWL_LOG_LINE_LENGTH) for line in status.crawl_log_tail[:CRAWL_LOG_TAIL_LINES]],
        is_heritrix_console=is_heritrix_console,
    )


def frontier_reports(job: DoOneCrawl, queues: tuple[QueueLine, ...], controller_id: str,
                     size: int = TOP_TOTAL_ENQUEUES_SIZE) -> list[FrontierReport]:
    """One report per NetarchiveSuite filter of ``queues`` (FRONTIER_FILTERS: the busiest active queues, the
    retired, the exhausted), each of at most ``size`` lines; a filter with none still goes, so the rows of
    its previous report are replaced by nothing."""
    return [FrontierReport(
        job_id=job.job_id, attempt_id=job.attempt_id, controller_id=controller_id, filter_id=filter_id,
        lines=[FrontierLine(
            domain_name=queue.queue_name, current_size=queue.current_size, total_enqueues=queue.total_enqueues,
            session_balance=queue.session_balance, last_cost=queue.last_cost, average_cost=queue.average_cost,
            last_dequeue_time=queue.last_dequeue_time, wake_time=queue.wake_time, total_spend=queue.total_spend,
            total_budget=queue.total_budget, error_count=queue.error_count, last_peek_uri=queue.last_peek_uri,
            last_queued_uri=queue.last_queued_uri) for queue in select(queues, size)])
        for filter_id, select in FRONTIER_FILTERS]
