"""The crawl clock: how long a crawl has run, as Heritrix's StatisticsTracker.getCrawlElapsedTime counts it.

It runs only while the crawl runs: paused time is left out and the clock stops at crawl end, so the
averages of the status (averageDocsPerSecond, averageKiBPerSec) agree with crawl-report.txt. Time from
earlier launches (a resumed crawl) is the caller's, given to ``elapsed_ms``.
"""

from __future__ import annotations

import time


class CrawlClock:
    def __init__(self) -> None:
        self._started = 0.0
        self._ended = 0.0
        self._pause_started = 0.0
        self._paused_total = 0.0

    def start(self) -> None:
        self._started = time.monotonic()

    def end(self) -> None:
        self._ended = time.monotonic()

    def pause(self) -> bool:
        """Stop counting; False if the clock was paused already."""
        if self._pause_started:
            return False
        self._pause_started = time.monotonic()
        return True

    def resume(self) -> bool:
        """Count again; False if the clock was not paused."""
        if not self._pause_started:
            return False
        self._paused_total += time.monotonic() - self._pause_started
        self._pause_started = 0.0
        return True

    def elapsed_ms(self, before_ms: int) -> int:
        """Milliseconds run so far, ``before_ms`` (earlier launches) included."""
        if not self._started:
            return before_ms
        now = self._ended or time.monotonic()
        paused = self._paused_total + ((now - self._pause_started) if self._pause_started else 0.0)
        return before_ms + int(max(0.0, now - self._started - paused) * 1000)
