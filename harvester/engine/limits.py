"""Crawl limits, as Heritrix's CrawlLimitEnforcer sets them: documents downloaded, bytes downloaded and time
run, each ending the crawl with its own exit status (0 = unlimited).

Limits are soft, as in Heritrix: the caller ends the crawl, and fetches already in flight finish. This
module decides only whether a limit is reached; it stops nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harvester.engine.reporting.stats import CrawlStats
from harvester.heritrix3.states import CrawlExitStatus

if TYPE_CHECKING:
    from harvester.engine.config import CrawlConfig


@dataclass(frozen=True)
class CrawlLimits:
    max_documents: int         # maxDocumentsDownload -> FINISHED_DOCUMENT_LIMIT
    max_bytes: int             # maxBytesDownload -> FINISHED_DATA_LIMIT
    max_time_seconds: int      # maxTimeSeconds -> FINISHED_TIME_LIMIT

    @classmethod
    def from_config(cls, config: CrawlConfig) -> CrawlLimits:
        return cls(config.max_documents_download, config.max_bytes_download, config.max_time_seconds)

    def reached_by_counts(self, stats: CrawlStats) -> CrawlExitStatus | None:
        """The exit status of the download limit ``stats`` reached (documents before bytes), else None."""
        if self.max_documents > 0 and stats.downloaded >= self.max_documents:
            return CrawlExitStatus.FINISHED_DOCUMENT_LIMIT
        if self.max_bytes > 0 and stats.total_bytes >= self.max_bytes:
            return CrawlExitStatus.FINISHED_DATA_LIMIT
        return None

    def is_time_up(self, elapsed_ms: int) -> bool:
        """Whether a crawl that has run ``elapsed_ms`` on the crawl clock is over its time limit."""
        return self.max_time_seconds > 0 and elapsed_ms >= self.max_time_seconds * 1000
