"""crawl.log in Heritrix 3's 12 columns (https://heritrix.readthedocs.io/en/latest/operating.html#crawl-log),
plus the other per-launch logs.

Columns: timestamp, status, size, URI, discovery path, via, MIME type, thread, fetch begin+duration,
digest, source tag, annotations. A crawl.log line is handed to the OS as soon as it is written, one write
per URI as Heritrix's log handler does, and only after the records it reports have been (the WARC writer
flushes each capture before the crawl controller writes its line): so an engine killed at any moment
leaves a crawl.log whose lines all have their records in the WARCs, and at most the capture being logged
without its line. The other logs are buffered and flushed by the controller's stats tick and at the end.
"""

from __future__ import annotations

import collections
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from harvester.heritrix3.layout import ALERTS_LOG, CRAWL_LOG, LAUNCH_LOGS


def iso_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def stamp17(epoch: float) -> str:
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(epoch)) + f"{int(epoch * 1000) % 1000:03d}"


class CrawlLogs:
    """The launch's logs/ directory; a context manager that flushes and closes every file."""

    def __init__(self, logs_dir: Path, tail_size: int = 50):
        self.directory = Path(logs_dir)
        self.tail: collections.deque[str] = collections.deque(maxlen=tail_size)
        self.alert_count = 0       # lines of alerts.log: the status's alertCount
        self._lock = threading.Lock()
        self._files: dict[str, object] = {}

    def __enter__(self) -> CrawlLogs:
        self.directory.mkdir(parents=True, exist_ok=True)
        for name in LAUNCH_LOGS:
            self._files[name] = open(self.directory / name, "a", encoding="utf-8", buffering=1 << 16)  # noqa: SIM115
        return self

    def __exit__(self, *exc_info: object) -> None:
        for handle in self._files.values():
            handle.close()
        self._files.clear()

    def crawl(self, status: int, size: int | None, url: str, hop_path: str, via: str, mime: str, thread: int,
              started: float, duration_ms: int, digest: str | None, source: str | None,
              annotations: list[str]) -> None:
        line = (f"{iso_now()} {status:>5} {size if size is not None else '-':>10} {url} {hop_path or '-'} "
                f"{via or '-'} {mime or '-'} #{thread:03d} "
                f"{stamp17(started) + '+' + str(duration_ms) if started else '-'} {digest or '-'} {source or '-'} "
                f"{','.join(annotations) if annotations else '-'}")
        handle = self._files[CRAWL_LOG]
        handle.write(line + "\n")
        handle.flush()
        with self._lock:
            self.tail.append(line)

    def write(self, name: str, line: str) -> None:
        self._files[name].write(line + "\n")

    def alert(self, level: str, text: str) -> None:
        """A line of alerts.log (``WARNING`` or ``SEVERE``, as Heritrix's alert levels), counted."""
        self.alert_count += 1
        self.write(ALERTS_LOG, f"{iso_now()} {level} {text}")

    def flush(self) -> None:
        for handle in self._files.values():
            handle.flush()

    def tail_lines(self, count: int = 10) -> tuple[str, ...]:
        """The newest ``count`` crawl.log lines, newest first (Heritrix's crawlLogTail)."""
        with self._lock:
            return tuple(reversed(self.tail))[:count]
