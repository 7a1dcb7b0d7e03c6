"""The reports Heritrix writes into ``<launch>/reports/`` at crawl end and on checkpoint, in its words and
layout: crawl, seeds, hosts, source, mimetype, responsecode and frontier-summary reports.

Each text follows the Heritrix 3 class that writes it (heritrix3 engine/src/main/java/org/archive/crawler/
reporting/*Report.java, frontier/WorkQueueFrontier.java and WorkQueue.java). Compared with real Heritrix 3.3
output quoted in tests/engine/test_reports.py (NetarchiveSuite's test data). ``report_input`` takes what
the reports read from a crawl in one go, without changing anything; the rest of this module formats and
writes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote_plus

from harvester.engine.reporting.stats import (
    CrawlStats,
    docs_per_second,
    double_to_string,
    format_bytes,
    format_duration,
    total_kib_per_second,
)
from harvester.heritrix3.states import FRONTIER_STATE_OF, ControllerState, CrawlExitStatus, FrontierState

if TYPE_CHECKING:
    from harvester.engine.frontier.frontier import Frontier

# Heritrix's report class names (the /engine/job/NAME/report/<name> resource) and their files.
REPORT_FILES = {"CrawlSummaryReport": "crawl-report.txt", "SeedsReport": "seeds-report.txt",
                "HostsReport": "hosts-report.txt", "SourceTagsReport": "source-report.txt",
                "MimetypesReport": "mimetype-report.txt", "ResponseCodeReport": "responsecode-report.txt",
                "FrontierSummaryReport": "frontier-summary-report.txt"}
# CrawlStatus descriptions (heritrix3 engine/src/main/java/org/archive/crawler/framework/CrawlStatus.java):
# the "crawl status:" of crawl-report.txt and the words after "CRAWL ENDED - " in progress-statistics.log.
_X = CrawlExitStatus
CRAWL_STATUS_TEXT: dict[str, str] = {
    _X.RUNNING: "Running", _X.PAUSED: "Paused", _X.PREPARING: "Preparing",
    _X.WAITING_FOR_PAUSE: "Pausing - Waiting for threads to finish",
    _X.ABORTED: "Finished - Ended by operator", _X.FINISHED_ABNORMAL: "Finished - Abnormal exit from crawling",
    _X.FINISHED: "Finished", _X.FINISHED_TIME_LIMIT: "Finished - Timelimit hit",
    _X.FINISHED_DATA_LIMIT: "Finished - Maximum amount of data limit hit",
    _X.FINISHED_DOCUMENT_LIMIT: "Finished - Maximum number of documents limit hit",
    _X.FINISHED_WRITE_LIMIT: "Finished - Maximum bytes written",
}
# The crawl status the reports give a crawl that has not ended (Heritrix's CrawlController sets these as it
# pauses); RUNNING for the other states.
EXIT_STATUS_WHILE = {ControllerState.PAUSED: CrawlExitStatus.PAUSED,
                     ControllerState.PAUSING: CrawlExitStatus.WAITING_FOR_PAUSE}
# Queues listed in full per category, as WorkQueueFrontier's maxQueuesPerReportCategory.
MAX_QUEUES_PER_CATEGORY = 2000
LONGEST_QUEUES = 5
ERROR_PENALTY = 100          # BdbFrontier errorPenaltyAmount: a failure costs a queue this much
BALANCE_REPLENISH = 3000     # BdbFrontier balanceReplenishAmount


@dataclass
class QueueReport:
    """One queue's figures for the frontier report (WorkQueue.reportTo and FetchStats)."""

    key: str
    items: int = 0
    category: str = "INACTIVE"        # IN-PROCESS, READY, SNOOZED, INACTIVE, RETIRED or exhausted ("")
    last_enqueued: str | None = None
    last_peeked: str | None = None
    wakes_in_ms: int = 0
    total_scheduled: int = 0
    fetch_successes: int = 0
    fetch_failures: int = 0
    fetch_disregards: int = 0
    fetch_responses: int = 0
    robots_denials: int = 0
    success_bytes: int = 0
    total_bytes: int = 0
    fetch_non_responses: int = 0
    last_success_time: str = ""


@dataclass
class FrontierSummary:
    job_name: str
    queued: int
    already_included: int
    last_state: str
    queues: list[QueueReport] = field(default_factory=list)


@dataclass
class ReportInput:
    """Everything the reports read, taken on the crawl's loop in one go so the texts agree."""

    job_name: str
    crawl_status: str          # a CrawlStatus name (RUNNING, FINISHED, ABORTED, ...)
    elapsed_ms: int
    stats: CrawlStats
    dedup_present: bool
    frontier: FrontierSummary
    stamp12: str               # yyyyMMddHHmm, the frontier report's heading


def report_input(job_name: str, state: ControllerState, exit_status: CrawlExitStatus | None, elapsed_ms: int,
                 stats: CrawlStats, frontier: Frontier, dedup_present: bool) -> ReportInput:
    """What the reports read of a crawl in ``state`` (``exit_status`` once it has ended), taken at once."""
    now = time.monotonic()
    queues = [queue.report(now) for queue in frontier.queues.values()]
    status = exit_status or EXIT_STATUS_WHILE.get(state, CrawlExitStatus.RUNNING)
    last_state = (FrontierState.EMPTY if frontier.is_empty() and exit_status is CrawlExitStatus.FINISHED
                  else FRONTIER_STATE_OF.get(state, FrontierState.HOLD))
    summary = FrontierSummary(job_name=job_name, queued=frontier.queued_count,
                              already_included=frontier.seen_count, last_state=last_state, queues=queues)
    return ReportInput(job_name=job_name, crawl_status=status, elapsed_ms=elapsed_ms, stats=stats,
                       dedup_present=dedup_present, frontier=summary,
                       stamp12=time.strftime("%Y%m%d%H%M", time.gmtime()))


def render_reports(data: ReportInput) -> dict[str, str]:
    """Every report's text by file name."""
    return {"crawl-report.txt": crawl_report(data), "seeds-report.txt": seeds_report(data.stats),
            "hosts-report.txt": hosts_report(data.stats), "source-report.txt": source_report(data.stats),
            "mimetype-report.txt": mimetype_report(data.stats),
            "responsecode-report.txt": responsecode_report(data.stats),
            "frontier-summary-report.txt": frontier_summary_report(data)}


def write_reports(directory: Path, data: ReportInput) -> None:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in render_reports(data).items():
        (directory / name).write_text(text, encoding="utf-8")


def crawl_report(data: ReportInput) -> str:
    """CrawlSummaryReport.write: the duplicate lines only with a DeDuplicator, the byte lines with the human
    size and (for two of them) Heritrix's trailing space."""
    stats = data.stats
    seeds_crawled = sum(1 for status, _ in stats.seeds.values() if status > 0)
    lines = [f"crawl name: {data.job_name}",
             f"crawl status: {CRAWL_STATUS_TEXT.get(data.crawl_status, data.crawl_status)}",
             f"duration: {format_duration(data.elapsed_ms)}", "",
             f"seeds crawled: {seeds_crawled}", f"seeds uncrawled: {len(stats.seeds) - seeds_crawled}", "",
             f"hosts visited: {sum(1 for host in stats.hosts if host != 'dns:')}", "",
             f"URIs processed: {stats.finished}", f"URI successes: {stats.downloaded}",
             f"URI failures: {stats.failures}", f"URI disregards: {stats.disregards}", "",
             f"novel URIs: {stats.novel_count}"]
    if data.dedup_present:
        lines.append(f"duplicate-by-hash URIs: {stats.dup_count}")
    lines += ["", f"total crawled bytes: {stats.total_bytes} ({format_bytes(stats.total_bytes)}) ",
              f"novel crawled bytes: {stats.novel_bytes} ({format_bytes(stats.novel_bytes)})"]
    if data.dedup_present:
        lines.append(f"duplicate-by-hash crawled bytes: {stats.dup_bytes} ({format_bytes(stats.dup_bytes)}) ")
    lines += ["", f"URIs/sec: {double_to_string(docs_per_second(stats.downloaded, data.elapsed_ms), 2)}",
              f"KB/sec: {total_kib_per_second(stats.total_bytes, data.elapsed_ms)}"]
    return "\n".join(lines) + "\n"


def _seed_sort_key(item: tuple[str, tuple[int, str]]) -> tuple[int, int, str]:
    # SeedRecord.sortShiftStatusCode's order: not yet tried (0) first, then failures by absolute code,
    # then successes by code, highest first.
    seed, (status, _) = item
    if status == 0:
        return 0, 0, seed
    return (1, -status, seed) if status < 0 else (2, -status, seed)


def seeds_report(stats: CrawlStats) -> str:
    """SeedsReport: ``[code] [status] [seed] [redirect]``."""
    lines = ["[code] [status] [seed] [redirect]"]
    for seed, (status, redirect) in sorted(stats.seeds.items(), key=_seed_sort_key):
        lines.append(f"{status} {'CRAWLED' if status > 0 else 'NOTCRAWLED'} {seed}" + (f" {redirect}" if redirect
                                                                                      else ""))
    return "\n".join(lines) + "\n"


def hosts_report(stats: CrawlStats) -> str:
    """HostsReport: most URIs first, host names URL-encoded (``dns:`` as it is), a space ending each line."""
    lines = ["[#urls] [#bytes] [host] [#robots] [#remaining] [#novel-urls] [#novel-bytes] [#dup-by-hash-urls] "
             "[#dup-by-hash-bytes] [#not-modified-urls] [#not-modified-bytes]"]
    for host, h in sorted(stats.hosts.items(), key=lambda item: (-item[1].urls, item[0])):
        name = host if host == "dns:" else quote_plus(host)
        lines.append(f"{h.urls} {h.bytes} {name} {h.robots_denied} {h.remaining} {h.novel_urls} {h.novel_bytes} "
                     f"{h.dup_urls} {h.dup_bytes} 0 0 ")
    return "\n".join(lines) + "\n"


def source_report(stats: CrawlStats) -> str:
    """SourceTagsReport: ``[source] [host] [#urls]``, per source its hosts by count."""
    lines = ["[source] [host] [#urls]"]
    for source in sorted(stats.sources):
        for host, count in sorted(stats.sources[source].items(), key=lambda item: (-item[1], item[0])):
            lines.append(f"{source} {host} {count}")
    return "\n".join(lines) + "\n"


def mimetype_report(stats: CrawlStats) -> str:
    """MimetypesReport: successes by MIME type, most first; bytes are content sizes."""
    lines = ["[#urls] [#bytes] [mime-types]"]
    for mime, count in sorted(stats.mimetypes.items(), key=lambda item: (-item[1], item[0])):
        lines.append(f"{count} {stats.mimetype_bytes[mime]} {mime}")
    return "\n".join(lines) + "\n"


def responsecode_report(stats: CrawlStats) -> str:
    """ResponseCodeReport: only fetches with a response code (DNS lookups as 1), most first."""
    lines = ["[#urls] [rescode]"]
    for code, count in sorted(stats.status_codes.items(), key=lambda item: (-item[1], item[0])):
        lines.append(f"{count} {code}")
    return "\n".join(lines) + "\n"


def _queue_block(queue: QueueReport) -> str:
    """WorkQueue.reportTo. Every URI costs 1 (UnitCostAssignmentPolicy), a failure the error penalty too."""
    finished = queue.fetch_successes + queue.fetch_failures + queue.fetch_disregards
    expended = finished + ERROR_PENALTY * queue.fetch_failures
    average = double_to_string(expended / finished, 1) if finished else "NaN"
    text = f"Queue {queue.key} (p3)\n  {queue.items} items"
    if queue.wakes_in_ms:
        text += f"\n   wakes in: {format_duration(queue.wakes_in_ms)}"
    text += (f"\n    last enqueued: {queue.last_enqueued}\n      last peeked: {queue.last_peeked}\n"
             f"   total expended: {expended} (total budget: -1)\n"
             f"   active balance: {BALANCE_REPLENISH - expended}\n   last(avg) cost: 1({average})\n"
             "   totalScheduled fetchSuccesses fetchFailures fetchDisregards fetchResponses robotsDenials "
             "successBytes totalBytes fetchNonResponses lastSuccessTime\n"
             f"   {queue.total_scheduled} {queue.fetch_successes} {queue.fetch_failures} {queue.fetch_disregards} "
             f"{queue.fetch_responses} {queue.robots_denials} {queue.success_bytes} {queue.total_bytes} "
             f"{queue.fetch_non_responses} {queue.last_success_time}\n"
             "   SimplePrecedenceProvider\n   3\n\n")
    return text


def _queue_section(label: str, queues: list[QueueReport]) -> str:
    """WorkQueueFrontier.appendQueueReports, with its "...and N more" line when a category is long."""
    text = "".join(f"{label}#{number}:\n{_queue_block(queue)}"
                   for number, queue in enumerate(queues[:MAX_QUEUES_PER_CATEGORY]))
    if len(queues) > MAX_QUEUES_PER_CATEGORY + 1:
        text += f"...and {len(queues) - MAX_QUEUES_PER_CATEGORY - 1} more {label}.\n"
    return text


def frontier_summary_report(data: ReportInput) -> str:
    """FrontierSummaryReport (WorkQueueFrontier.reportTo): statistics, queue counts, the longest queues and
    each category's queues. The Java manager thread's stack is left out: there is no such thread here."""
    stats, frontier = data.stats, data.frontier
    queues = frontier.queues
    by_category = {category: [q for q in queues if q.category == category]
                   for category in ("IN-PROCESS", "READY", "SNOOZED", "INACTIVE", "RETIRED")}
    active = sum(len(by_category[c]) for c in ("IN-PROCESS", "READY", "SNOOZED"))
    exhausted = sum(1 for q in queues if not q.category)
    longest = sorted((q for q in queues if q.items), key=lambda q: (-q.items, q.key))[:LONGEST_QUEUES]
    text = (f"Frontier report - {data.stamp12}\n Job being crawled: {frontier.job_name}\n"
            "\n -----===== STATS =====-----\n"
            f" Discovered:    {stats.discovered}\n Queued:        {frontier.queued}\n"
            f" Finished:      {stats.finished}\n  Successfully: {stats.downloaded}\n"
            f"  Failed:       {stats.failures}\n  Disregarded:  {stats.disregards}\n"
            "\n -----===== QUEUES =====-----\n"
            f" Already included size:     {frontier.already_included}\n               pending:     0\n"
            f"\n All class queues map size: {len(queues)}\n"
            f"             Active queues: {active}\n"
            f"                    In-process: {len(by_category['IN-PROCESS'])}\n"
            f"                         Ready: {len(by_category['READY'])}\n"
            f"                       Snoozed: {len(by_category['SNOOZED'])}\n"
            f"           Inactive queues: {len(by_category['INACTIVE'])} (p3: {len(by_category['INACTIVE'])})\n"
            f"            Retired queues: {len(by_category['RETIRED'])}\n"
            f"          Exhausted queues: {exhausted}\n"
            f"\n             Last state: {frontier.last_state}\n"
            f"\n -----===== {len(longest)} LONGEST QUEUES =====-----\n{_queue_section('LONGEST', longest)}\n")
    for category in ("IN-PROCESS", "READY", "SNOOZED", "INACTIVE", "RETIRED"):
        label = "INACTIVE-p3" if category == "INACTIVE" else category
        text += f"\n -----===== {category} QUEUES =====-----\n{_queue_section(label, by_category[category])}"
    return text
