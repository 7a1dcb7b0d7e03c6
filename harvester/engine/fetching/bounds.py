"""The engine's bounds on what one response may cost: the bytes and lines of its header block, and the bytes
and time its link extraction may take. Read once from the engine's settings (harvestdef/settings.py,
CrawlerSettings) into a frozen ``ResponseBounds``; the per-template limits (FetchHTTP's maxLengthBytes,
timeoutSeconds) stay in the crawl's config.

A hostile server can send a header block that never ends or a document built to make an extractor slow;
these bounds make either cost a fixed amount, whatever the server does. ``ExtractionBudget`` is the one
document's share: the extractors ask it whether they may go on, and it remembers why they stopped. This
module reads no settings itself (``from_settings`` is given them) and does no I/O.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harvestdef.errors import ValidationError

if TYPE_CHECKING:
    from harvestdef.settings import CrawlerSettings

# Defaults (the settings' defaults too). 64 KiB and 100 lines hold every real site's headers with room to
# spare (Apache httpd allows 100 fields of 8 KiB, nginx 32 KiB of large header buffers, h11 16 KiB).
DEFAULT_HEADER_MAX_BYTES = 65_536
DEFAULT_HEADER_MAX_LINES = 100
# The links of a document's first 16 MiB are worth having; a longer one (or a compression bomb) is read that
# far and no further.
DEFAULT_EXTRACTION_MAX_BYTES = 16 * 1024 * 1024
DEFAULT_EXTRACTION_MAX_SECONDS = 5.0

# Why extraction stopped before the document's end (ExtractionBudget.cut).
CUT_BY_SIZE = "size"
CUT_BY_TIME = "time"


@dataclass(frozen=True)
class ResponseBounds:
    """What one response may cost the engine: its header block, and its link extraction."""

    header_max_bytes: int = DEFAULT_HEADER_MAX_BYTES
    header_max_lines: int = DEFAULT_HEADER_MAX_LINES
    extraction_max_bytes: int = DEFAULT_EXTRACTION_MAX_BYTES
    extraction_max_seconds: float = DEFAULT_EXTRACTION_MAX_SECONDS

    def __post_init__(self) -> None:
        for name in ("header_max_bytes", "header_max_lines", "extraction_max_bytes", "extraction_max_seconds"):
            value = getattr(self, name)
            if value <= 0:
                raise ValidationError(f"response bound {name}: more than 0, got {value}")

    @classmethod
    def from_settings(cls, crawler: CrawlerSettings) -> ResponseBounds:
        return cls(header_max_bytes=crawler.responseHeaderMaxBytes,
                   header_max_lines=crawler.responseHeaderMaxLines,
                   extraction_max_bytes=crawler.extractionMaxBytes,
                   extraction_max_seconds=float(crawler.extractionMaxSeconds))

    def extraction_budget(self, clock: Callable[[], float] = time.monotonic) -> ExtractionBudget:
        """A fresh budget for one document, its time counted from now."""
        return ExtractionBudget(self.extraction_max_bytes, clock() + self.extraction_max_seconds, clock)


class ExtractionBudget:
    """One document's extraction budget: at most ``max_bytes`` read (decoded), until ``deadline`` on
    ``clock``. ``cut`` says why reading stopped early (CUT_BY_SIZE, CUT_BY_TIME), None while it has not."""

    __slots__ = ("max_bytes", "deadline", "clock", "cut", "bytes_read", "size_limit")

    def __init__(self, max_bytes: int, deadline: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_bytes = max_bytes
        self.deadline = deadline
        self.clock = clock
        self.cut: str | None = None
        self.bytes_read = 0
        self.size_limit = max_bytes

    @classmethod
    def unlimited_time(cls, max_bytes: int = DEFAULT_EXTRACTION_MAX_BYTES) -> ExtractionBudget:
        """A budget bounded in size only (for callers outside a crawl, as the tests of one extractor)."""
        return cls(max_bytes, float("inf"))

    def is_time_up(self) -> bool:
        """Whether the document's time is spent; the first such answer marks the cut."""
        if self.cut == CUT_BY_TIME:
            return True
        if self.clock() >= self.deadline:
            self.cut = CUT_BY_TIME
            return True
        return False

    def note_size_cut(self, limit: int) -> None:
        """Reading stopped at ``limit`` decoded bytes (this budget's, or a sitemap's own bound)."""
        if self.cut is None:
            self.cut = CUT_BY_SIZE
            self.size_limit = limit

    def describe(self) -> str:
        """The cut in words, for the crawl's log; empty when there was none."""
        if self.cut == CUT_BY_TIME:
            return (f"link extraction stopped at its time limit (harvestsuite.crawler.extractionMaxSeconds), "
                    f"{self.bytes_read} bytes read")
        if self.cut == CUT_BY_SIZE:
            setting = ("harvestsuite.crawler.extractionMaxBytes" if self.size_limit == self.max_bytes
                       else "harvestsuite.crawler.sitemapMaxBytes")
            return f"link extraction stopped after {self.size_limit} bytes ({setting})"
        return ""
