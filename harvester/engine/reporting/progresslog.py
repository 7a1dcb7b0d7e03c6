"""progress-statistics.log, as Heritrix's StatisticsTracker writes it: the legend, a progress line every
``intervalSeconds`` and at the pause and the end, and the state notes (CRAWL RUNNING, WAITING, PAUSED,
CHECKPOINTING, ENDING, ENDED) between them.

It writes what it is given; when to write a line or a note is the crawl controller's.
"""

from __future__ import annotations

import resource
import time
from typing import TYPE_CHECKING

from harvester.engine.reporting.launchlogs import CrawlLogs
from harvester.engine.reporting.stats import CrawlStats, RateTracker, double_to_string
from harvester.heritrix3.layout import PROGRESS_LOG

if TYPE_CHECKING:
    from harvester.engine.frontier.frontier import Frontier

# Heritrix's legend line of progress-statistics.log, column for column (heritrix3 engine/src/main/java/org/
# archive/crawler/reporting/StatisticsTracker.java, progressStatisticsLegend).
PROGRESS_HEADER = ("           timestamp  discovered      queued   downloaded       doc/s(avg)  KB/s(avg)   dl-failures"
                   "   busy-thread   mem-use-KB  heap-size-KB   congestion   max-depth   avg-depth")
# Where each field of a progress line ends (CrawlStatSnapshot.getProgressStatisticsLine's raAppend columns).
PROGRESS_COLUMNS = (32, 44, 57, 74, 85, 99, 113, 126, 140, 153, 165, 177)


def iso_seconds(epoch: float | None = None) -> str:
    """Heritrix's ArchiveUtils.getLog14Date: ``2016-12-05T10:11:43Z``, the stamp of progress lines and notes."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if epoch is None else epoch))


def memory_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def progress_line(stamp: str, discovered: int, queued: int, downloaded: int, docs_rate: float, avg_docs: float,
                  kib_rate: float, avg_kib: float, failures: int, busy: int, congestion: float, max_depth: int,
                  avg_depth: float) -> str:
    """One line in Heritrix's layout: each field right-aligned to end at its column, nothing added when a
    field is wider (PaddingStringBuffer.raAppend). Memory is this process's resident set where Heritrix
    gives the JVM heap in use and its size."""
    mem = memory_kb()
    fields = (discovered, queued, downloaded,
              f"{double_to_string(docs_rate, 2)}({double_to_string(avg_docs, 2)})", f"{int(kib_rate)}({int(avg_kib)})",
              failures, busy, mem, mem, double_to_string(congestion, 2), max_depth, int(avg_depth))
    line = stamp
    for column, value in zip(PROGRESS_COLUMNS, fields, strict=True):
        text = str(value)
        line += " " * max(0, column - len(line) - len(text)) + text
    return line


class ProgressLog:
    """The launch's progress-statistics.log, written through its CrawlLogs."""

    def __init__(self, logs: CrawlLogs) -> None:
        self.logs = logs

    def legend(self) -> None:
        self.logs.write(PROGRESS_LOG, PROGRESS_HEADER)

    def note(self, note: str) -> None:
        """A state line, as StatisticsTracker.logNote writes it: CRAWL RUNNING, WAITING, PAUSED, ENDING, ENDED
        (heritrix3 engine/src/main/java/org/archive/crawler/reporting/StatisticsTracker.java). There,
        onApplicationEvent sends both the PREPARING and the RUNNING state event to crawlResuming, which writes
        ``CRAWL RUNNING - <message>``: at start (``Preparing``, then ``Running``) and after every unpause
        (CrawlController.requestCrawlResume sends RUNNING, ``Running``). An older crawlResuming of the heritrix3
        repository wrote ``CRAWL RESUMED - `` for the same two events, so no Heritrix 3 writes RESUMED for an
        unpause only; this engine writes what current Heritrix 3 writes, and what Heritrix's own self-test
        requires of the log (heritrix3 engine/src/test/java/org/archive/crawler/selftest/SelfTestBase.java,
        verifyProgressStatistics: ``CRAWL RUNNING - Preparing``, ``CRAWL RUNNING - Running``, ``CRAWL ENDING -
        Finished``)."""
        self.logs.write(PROGRESS_LOG, f"{iso_seconds()} {note}")

    def progress(self, stats: CrawlStats, rates: RateTracker, frontier: Frontier, busy: int,
                 elapsed_ms: int) -> None:
        """A progress line of the crawl's figures now: ``busy`` crawl threads, ``elapsed_ms`` on its clock."""
        avg_docs, avg_kib = rates.averages(stats.downloaded, stats.total_bytes, elapsed_ms)
        depths = frontier.queue_depths()
        self.logs.write(PROGRESS_LOG, progress_line(
            iso_seconds(), stats.discovered, frontier.queued_count, stats.downloaded, rates.current_docs,
            avg_docs, rates.current_kib, avg_kib, stats.failures, busy, 0.0,
            max(depths) if depths else 0, sum(depths) / len(depths) if depths else 0))
