"""Crawl statistics: counters per crawl, per host, per MIME type and per status code, the rates between
snapshots, and progress-statistics.log lines in Heritrix's layout.

Counters are plain integers updated on the crawl's event-loop thread; a status snapshot reads them from
another thread, which is safe under the GIL because each is one object read.
"""

from __future__ import annotations

import resource
import time
from collections import Counter
from dataclasses import asdict, dataclass, field

PROGRESS_HEADER = ("timestamp  discovered  queued  downloaded  doc/s(avg)  KB/s(avg)  dl-failures  busy-thread  "
                   "mem-use-KB  heap-size-KB  congestion  max-depth  avg-depth")


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
    downloaded: int = 0            # fetches with a positive status (DNS, robots and HTTP)
    failures: int = 0
    total_bytes: int = 0
    novel_count: int = 0
    novel_bytes: int = 0
    dup_count: int = 0
    dup_bytes: int = 0
    hosts: dict[str, HostStats] = field(default_factory=dict)
    mimetypes: Counter = field(default_factory=Counter)
    mimetype_bytes: Counter = field(default_factory=Counter)
    status_codes: Counter = field(default_factory=Counter)
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
        return data

    @classmethod
    def from_json(cls, data: dict) -> CrawlStats:
        stats = cls(**{k: v for k, v in data.items()
                       if k not in ("hosts", "mimetypes", "mimetype_bytes", "status_codes", "seeds")})
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

    def averages(self, downloaded: int, total_bytes: int, elapsed_s: float) -> tuple[float, float]:
        elapsed_s = max(elapsed_s, 1e-3)
        return downloaded / elapsed_s, total_bytes / 1024 / elapsed_s


def memory_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def progress_line(stamp: str, discovered: int, queued: int, downloaded: int, docs_rate: float, avg_docs: float,
                  kib_rate: float, avg_kib: float, failures: int, busy: int, congestion: float, max_depth: int,
                  avg_depth: float) -> str:
    mem = memory_kb()
    return (f"{stamp} {discovered:>11} {queued:>7} {downloaded:>11} {docs_rate:.2f}({avg_docs:.2f})"
            f" {kib_rate:.0f}({avg_kib:.0f}) {failures:>12} {busy:>12} {mem:>11} {mem:>12}"
            f" {congestion:>11.2f} {max_depth:>10} {avg_depth:>10.0f}")
