"""The crawl-log search of the job page and the API, run by workers of its own, never in the thread of the
request.

Theory of operation: a request hands its search to a bounded queue (``crawlLogSearchQueue`` waiting
searches; a full queue is answered at once with "busy") served by ``crawlLogSearchWorkers`` daemon threads,
and waits for the answer. A worker streams the crawl.log records of the job's metadata WARCs from the archive
store line by line (a crawl.log has millions of lines: nothing is read whole) and checks the search's
deadline, ``crawlLogSearchTimeoutMs`` after the request came, before each line. It stops at the deadline,
at MAX matches, or at the end, and hands over what it found with the place it reached. A search may start
at such a place (the API's next page, a CrawlLogPosition: a line number and the bytes of crawl.log before
it): the bytes before it are decompressed and passed over in large pieces, not read line by line, within the
same deadline, so a page far into the crawl.log costs little more than the first. The pattern is compiled by
RE2 (harvestdef.patterns) before the search is queued, so no line takes longer than linear time in its
length, and a line is at most MAX_LINE_BYTES. The request waits a little beyond the deadline for the
hand-over, and gives up (telling the worker to stop) if its search never left the queue in time.

So a search holds at most one worker for at most its deadline, the waitress threads serving the other
requests go on, and a burst of searches is refused rather than queued without end. This module does not
know jobs or pages: webui/api/crawllog.py names a job's files, and the job page and the API show the result.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NamedTuple
from urllib.parse import urlsplit

from flask import current_app
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from harvestdef.patterns import CompiledPattern
from harvestdef.settings import Settings
from webui.context import settings

log = logging.getLogger(__name__)

CRAWL_LOG_MARK = "/crawl/logs/crawl.log"
MAX_LINE_BYTES = 64 * 1024          # a longer crawl.log line is read in pieces of this size
SKIP_BYTES = 1024 * 1024            # the piece in which the crawl.log before a search's start is passed over
HANDOVER_SECONDS = 1.0              # how much longer than its deadline a request waits for the answer
EXTENSION = "harvestsuite.crawl_log_search"
_EXTENSION_LOCK = threading.Lock()


class MatchingLine(NamedTuple):
    """A matching line and its number in the crawl.log (the first line is 1)."""

    number: int
    text: str


@dataclass(frozen=True)
class CrawlLogPosition:
    """A place in a job's crawl.log (its records in the metadata WARCs, one after the other): ``line`` lines
    and ``offset`` bytes of it lie before it. The start is line 0, offset 0."""

    line: int = 0
    offset: int = 0


CRAWL_LOG_START = CrawlLogPosition()


@dataclass(frozen=True)
class CrawlLogSearchResult:
    """What one search found: ``lines`` (up to its maximum), ``scanned`` crawl.log lines read by this search,
    ``seconds`` from the request, and why it stopped early: ``is_capped`` (maximum matches: there are more),
    ``is_timed_out`` (deadline), or an ``error``: nothing searched because every worker is busy
    (``is_busy``), or a file that cannot be read. ``resume_at`` is where a search for the lines after these
    goes on (after the last line returned, or the last line read before the deadline); None once the
    crawl.log has been read to its end, or a file could not be read."""

    lines: tuple[MatchingLine, ...] = ()
    scanned: int = 0
    seconds: float = 0.0
    is_capped: bool = False
    is_timed_out: bool = False
    error: str | None = None
    is_busy: bool = False
    resume_at: CrawlLogPosition | None = None


@dataclass
class _Search:
    paths: tuple[Path, ...]
    domain: str
    regex: CompiledPattern | None
    max_matches: int
    start: CrawlLogPosition
    started: float
    deadline: float
    is_cancelled: threading.Event = field(default_factory=threading.Event)
    is_done: threading.Event = field(default_factory=threading.Event)
    result: CrawlLogSearchResult | None = None


class CrawlLogSearcher:
    """Crawl-log searches on worker threads of their own; see the module's theory of operation."""

    def __init__(self, workers: int, waiting: int, timeout_seconds: float) -> None:
        if workers < 1 or waiting < 1 or timeout_seconds <= 0:
            raise ValueError(f"a crawl-log searcher needs at least one worker ({workers}), room for one waiting "
                             f"search ({waiting}) and a positive timeout ({timeout_seconds} s)")
        self.workers = workers
        self.waiting = waiting
        self.timeout_seconds = timeout_seconds
        self._searches: queue.Queue[_Search] = queue.Queue(maxsize=waiting)
        self._threads = [threading.Thread(target=self._work, name=f"crawl-log-search-{number}", daemon=True)
                         for number in range(workers)]
        for thread in self._threads:
            thread.start()

    @classmethod
    def from_settings(cls, settings: Settings) -> CrawlLogSearcher:
        webui = settings.webui
        return cls(webui.crawlLogSearchWorkers, webui.crawlLogSearchQueue, webui.crawlLogSearchTimeoutMs / 1000)

    def search(self, paths: list[Path], domain: str, regex: CompiledPattern | None,
               max_matches: int, start: CrawlLogPosition = CRAWL_LOG_START) -> CrawlLogSearchResult:
        """Lines of the crawl.log records in ``paths`` on ``domain`` (or a subdomain; "" = any) that
        ``regex`` finds something in (None = every line), from ``start`` on (a previous search's
        ``resume_at``); waits at most the timeout and a little more."""
        started = time.monotonic()
        search = _Search(tuple(paths), domain, regex, max_matches, start, started, started + self.timeout_seconds)
        try:
            self._searches.put_nowait(search)
        except queue.Full:
            return CrawlLogSearchResult(error=f"all {self.workers} crawl-log search workers are busy and "
                                              f"{self.waiting} searches wait already; search again in a moment",
                                        is_busy=True)
        if not search.is_done.wait(self.timeout_seconds + HANDOVER_SECONDS):
            search.is_cancelled.set()
            return CrawlLogSearchResult(seconds=time.monotonic() - started, is_timed_out=True,
                                        error=f"no crawl-log search worker was free within "
                                              f"{self.timeout_seconds:g} s; search again in a moment",
                                        is_busy=True)
        assert search.result is not None
        return search.result

    def _work(self) -> None:
        while True:
            search = self._searches.get()
            try:
                search.result = _run(search)
            except Exception as exc:  # a worker must outlive any one search; the request sees why
                log.exception("crawl-log search of %s failed", [str(p) for p in search.paths])
                search.result = CrawlLogSearchResult(seconds=time.monotonic() - search.started,
                                                     error=f"the search failed: {exc}")
            finally:
                search.is_done.set()


def _run(search: _Search) -> CrawlLogSearchResult:
    lines: list[MatchingLine] = []
    last_returned = search.start
    line, offset, scanned = search.start.line, 0, 0
    is_capped = is_timed_out = False

    def is_stopped() -> bool:
        return time.monotonic() > search.deadline or search.is_cancelled.is_set()

    try:
        for content in _crawl_log_contents(search.paths):
            # the crawl.log before the start: passed over in large pieces, never matched
            while offset < search.start.offset and not (is_timed_out := is_stopped()):
                piece = content.read(min(SKIP_BYTES, search.start.offset - offset))
                if not piece:
                    break
                offset += len(piece)
            if is_timed_out:
                break
            if offset < search.start.offset:
                continue  # this record ends before the start
            # before each line: a line costs RE2 time linear in its length, so the deadline holds
            while not (is_timed_out := is_stopped()):
                raw = content.readline(MAX_LINE_BYTES)
                if not raw:
                    break
                line, offset, scanned = line + 1, offset + len(raw), scanned + 1
                text = raw.decode("utf-8", "replace").rstrip("\r\n")
                if search.domain and not _on_domain(text, search.domain):
                    continue
                if search.regex is not None and search.regex.search(text) is None:
                    continue
                if len(lines) == search.max_matches:
                    is_capped = True
                    break
                lines.append(MatchingLine(line, text))
                last_returned = CrawlLogPosition(line, offset)
            if is_timed_out or is_capped:
                break
    except (OSError, ArchiveLoadFailed) as exc:
        return CrawlLogSearchResult(tuple(lines), scanned, time.monotonic() - search.started,
                                    error=f"the metadata WARC cannot be read: {exc}")
    if is_capped:
        resume_at: CrawlLogPosition | None = last_returned
    elif is_timed_out:
        resume_at = CrawlLogPosition(line, offset) if offset >= search.start.offset else search.start
    else:
        resume_at = None
    return CrawlLogSearchResult(tuple(lines), scanned, time.monotonic() - search.started, is_capped, is_timed_out,
                                resume_at=resume_at)


def _crawl_log_contents(paths: tuple[Path, ...]) -> Iterator[IO[bytes]]:
    """The content of each crawl.log record of metadata WARCs, in order, streamed: a record is valid until
    the next is asked for."""
    for path in paths:
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                if record.rec_type not in ("metadata", "resource") or CRAWL_LOG_MARK not in uri:
                    continue
                yield record.content_stream()


def _on_domain(line: str, domain: str) -> bool:
    fields = line.split()
    if len(fields) < 4:
        return False
    host = (urlsplit(fields[3]).hostname or "").lower()
    return host == domain or host.endswith("." + domain)


def crawl_log_searcher() -> CrawlLogSearcher:
    """The searcher of this app, started at its first search."""
    searcher = current_app.extensions.get(EXTENSION)
    if searcher is None:
        with _EXTENSION_LOCK:
            searcher = current_app.extensions.get(EXTENSION)
            if searcher is None:
                searcher = CrawlLogSearcher.from_settings(settings())
                current_app.extensions[EXTENSION] = searcher
    return searcher
