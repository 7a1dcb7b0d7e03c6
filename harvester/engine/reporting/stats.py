"""Crawl statistics: counters per crawl, per host, per MIME type and per status code, the rates between
snapshots, and the number formats Heritrix states them in (harvester/engine/reporting/progresslog.py and reports.py
write them).

Counters are plain integers updated on the crawl's event-loop thread; a status snapshot reads them from
another thread, which is safe under the GIL because each is one object read.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal

# Fetch statuses Heritrix counts as disregarded, not failed (WorkQueueFrontier.isDisregarded): robots.txt
# precluded, blocked by a processor, out of scope, blocked by the operator, too many hops, deleted; and our
# -5005, a destination the policy refuses, which is blocked by a processor as far as Heritrix's tallies go.
DISREGARD_STATUSES = frozenset({-9998, -5002, -5000, -5001, -5005, -4002, -4001, -6000})


def double_to_string(value: float, max_fraction_digits: int, min_fraction_digits: int = 0) -> str:
    """Java's NumberFormat for Locale.US as ArchiveUtils.doubleToString uses it: grouping commas, half-even
    rounding, at most ``max_fraction_digits`` decimals and trailing zeros dropped ("1", "4.35", "1,234.5")."""
    if value != value:  # NaN
        return "NaN"
    quantum = Decimal(1).scaleb(-max_fraction_digits)
    # The exact binary value, as Java 8+ rounds it (4.355 is 4.35499... and becomes 4.35).
    rounded = Decimal(float(value)).quantize(quantum, rounding=ROUND_HALF_EVEN)
    text = f"{rounded:,.{max_fraction_digits}f}"
    if "." in text:
        whole, fraction = text.split(".")
        fraction = fraction.rstrip("0").ljust(min_fraction_digits, "0")
        text = f"{whole}.{fraction}" if fraction else whole
    return text


def format_bytes(amount: int) -> str:
    """ArchiveUtils.formatBytesForDisplay: ``1.5 MiB``, ``150 KiB``, ``0 B`` (one decimal below 10)."""
    if amount <= 0:
        return "0 B"
    value, power = float(amount), 0
    while value >= 1024 and power < 4:
        value /= 1024
        power += 1
    digits = 1 if value < 10 else 0
    return double_to_string(value, digits, digits) + (" B", " KiB", " MiB", " GiB", " TiB")[power]


def format_duration(milliseconds: int) -> str:
    """ArchiveUtils.formatMillisecondsToConventional: ``41s968ms``, ``1h3s7ms``; zero units are left out."""
    if milliseconds == 0:
        return "0ms"
    text = "-" if milliseconds < 0 else ""
    rest = abs(int(milliseconds))
    for threshold, unit in ((86_400_000, "d"), (3_600_000, "h"), (60_000, "m"), (1000, "s"), (1, "ms")):
        if rest >= threshold:
            text += f"{rest // threshold}{unit}"
            rest %= threshold
    return text


def docs_per_second(downloaded: int, elapsed_ms: int) -> float:
    """CrawlStatSnapshot's docsPerSecond (the status's averageDocsPerSecond, crawl-report's URIs/sec)."""
    return downloaded / (elapsed_ms / 1000) if elapsed_ms > 0 else 0.0


def total_kib_per_second(total_bytes: int, elapsed_ms: int) -> int:
    """CrawlStatSnapshot's totalKiBPerSec (averageKiBPerSec, crawl-report's KB/sec), +1 ms as Heritrix adds."""
    return int((total_bytes / 1024) / ((elapsed_ms + 1) / 1000))


@dataclass
class HostStats:
    urls: int = 0
    bytes: int = 0
    robots_denied: int = 0
    remaining: int = 0
    novel_urls: int = 0
    novel_bytes: int = 0
    dup_urls: int = 0
    dup_bytes: int = 0


@dataclass
class CrawlStats:
    discovered: int = 0
    downloaded: int = 0            # fetches with a positive status (DNS, robots and HTTP): Heritrix's successes
    failures: int = 0
    disregards: int = 0            # DISREGARD_STATUSES: robots.txt precluded, out of scope, ...
    total_bytes: int = 0           # content sizes, headers plus body, as Heritrix's "crawled bytes"
    novel_count: int = 0
    novel_bytes: int = 0
    dup_count: int = 0
    dup_bytes: int = 0
    hosts: dict[str, HostStats] = field(default_factory=dict)
    mimetypes: Counter = field(default_factory=Counter)           # successes only, DNS as text/dns
    mimetype_bytes: Counter = field(default_factory=Counter)
    status_codes: Counter = field(default_factory=Counter)        # successes only: fetches with a response code
    sources: dict[str, Counter] = field(default_factory=dict)     # source tag (seed) -> host -> URIs
    seeds: dict[str, tuple[int, str]] = field(default_factory=dict)   # seed -> (status, redirect target)
    elapsed_before_ms: int = 0                                        # from earlier launches (resume)

    def host(self, name: str) -> HostStats:
        stats = self.hosts.get(name)
        if stats is None:
            stats = self.hosts[name] = HostStats()
        return stats

    def to_json(self) -> dict:
        data = asdict(self)
        data["hosts"] = {name: asdict(value) for name, value in self.hosts.items()}
        for key in ("mimetypes", "mimetype_bytes", "status_codes"):
            data[key] = dict(getattr(self, key))
        data["sources"] = {source: dict(hosts) for source, hosts in self.sources.items()}
        return data

    def note_success(self, host: str, status: int, mime: str, content_size: int, source: str | None) -> None:
        """Heritrix's StatisticsTracker.crawledURISuccessful tallies: by status, MIME type, host, source."""
        self.downloaded += 1
        self.total_bytes += content_size
        self.status_codes[status] += 1
        self.mimetypes[mime] += 1
        self.mimetype_bytes[mime] += content_size
        host_stats = self.host(host)
        host_stats.urls += 1
        host_stats.bytes += content_size
        if source:
            self.sources.setdefault(source, Counter())[host] += 1

    def note_capture(self, host: str, content_size: int, is_duplicate: bool) -> None:
        """A capture's novel-or-duplicate tallies, crawl-wide and for its host (the crawl report's
        "novel" and "duplicate-by-hash" lines, and the hosts report's columns)."""
        host_stats = self.host(host)
        if is_duplicate:
            self.dup_count += 1
            self.dup_bytes += content_size
            host_stats.dup_urls += 1
            host_stats.dup_bytes += content_size
        else:
            self.novel_count += 1
            self.novel_bytes += content_size
            host_stats.novel_urls += 1
            host_stats.novel_bytes += content_size

    def note_unsuccessful(self, status: int) -> bool:
        """A URI that ended without success: a disregard or a failure. True for a disregard."""
        if status in DISREGARD_STATUSES:
            self.disregards += 1
            return True
        self.failures += 1
        return False

    @property
    def finished(self) -> int:
        return self.downloaded + self.failures + self.disregards

    @classmethod
    def from_json(cls, data: dict) -> CrawlStats:
        stats = cls(**{k: v for k, v in data.items()
                       if k not in ("hosts", "mimetypes", "mimetype_bytes", "status_codes", "seeds", "sources")})
        stats.sources = {source: Counter(hosts) for source, hosts in data.get("sources", {}).items()}
        stats.hosts = {name: HostStats(**value) for name, value in data.get("hosts", {}).items()}
        stats.mimetypes = Counter(data.get("mimetypes", {}))
        stats.mimetype_bytes = Counter(data.get("mimetype_bytes", {}))
        stats.status_codes = Counter({int(k): v for k, v in data.get("status_codes", {}).items()})
        stats.seeds = {k: tuple(v) for k, v in data.get("seeds", {}).items()}
        return stats


class RateTracker:
    """Current and average docs/s and KiB/s from successive snapshots."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self._last = (self.started, 0, 0)
        self.current_docs = 0.0
        self.current_kib = 0.0

    def snapshot(self, downloaded: int, total_bytes: int) -> None:
        now = time.monotonic()
        then, docs, size = self._last
        if now - then >= 0.5:
            self.current_docs = (downloaded - docs) / (now - then)
            self.current_kib = (total_bytes - size) / 1024 / (now - then)
            self._last = (now, downloaded, total_bytes)

    @staticmethod
    def averages(downloaded: int, total_bytes: int, elapsed_ms: int) -> tuple[float, int]:
        """Average docs/s and KiB/s over the crawl clock, as crawl-report.txt states them."""
        return docs_per_second(downloaded, elapsed_ms), total_kib_per_second(total_bytes, elapsed_ms)
