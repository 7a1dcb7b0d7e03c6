"""Reading Heritrix 3's crawl.log (https://heritrix.readthedocs.io/en/latest/operating.html#crawl-log) as a
stream, line by line.

A line has 12 whitespace-separated columns; NetarchiveSuite treats a line with fewer than 11 as invalid, so
does this reader: it counts such lines, keeps the first few with their line numbers, and skips them. It
never raises on the content of the log, because a crawler killed mid-write leaves a cut last line and the
rest of the log is still worth reading. The log is read one line at a time, never whole.

``CrawlLogReader.fields()`` yields the split columns for callers that need speed (the domain report over
ten million lines); ``CrawlLogReader.lines()`` and ``iter_crawl_log`` yield ``CrawlLogLine`` objects.
``describe_fetch_status`` says in words what a fetch status code means (Heritrix's FetchStatusCodes), for
the findings that reach curators.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MIN_FIELDS = 11          # fewer columns than this make a line invalid (NetarchiveSuite's rule)
MAX_EXAMPLES = 10        # invalid lines kept as examples; the rest are only counted

# Column positions, 0-based, in Heritrix's crawl.log column order.
TIMESTAMP, STATUS, SIZE, URL, DISCOVERY_PATH, VIA, MIME, THREAD, FETCH_TIMESTAMP, DIGEST, SOURCE_TAG, ANNOTATIONS = \
    range(12)


# Heritrix 3's fetch status codes below 1 (its FetchStatusCodes) in words; a status >= 100 is
# the HTTP status of a response, 1 a DNS lookup that succeeded.
FETCH_STATUS_WORDS: dict[int, str] = {
    0: "never tried",
    -1: "DNS lookup failed",
    -2: "connection refused",
    -3: "connection broken",
    -4: "timed out",
    -5: "runtime exception",
    -6: "DNS lookup failed",
    -7: "illegal URI",
    -8: "retries exhausted",
    -50: "prerequisite failed",
    -60: "DNS prerequisite failed",
    -61: "robots.txt prerequisite failed",
    -62: "other prerequisite failed",
    -63: "prerequisite unscheduled",
    -404: "empty response",
    -3000: "severe error",
    -4000: "crawler trap",
    -4001: "too many hops",
    -4002: "too many transitive hops",
    -5000: "out of scope",
    -5001: "blocked by user",
    -5002: "blocked by processor",
    -5003: "over quota",
    -5004: "runtime limit reached",
    -5005: "destination refused",  # ours: not a public address (harvestdef/destinations.py, docs/engine.md)
    -6000: "deleted by operator",
    -7000: "thread killed",
    -8000: "the browser could not load the page",  # the browser crawler's own code (docs/browser.md)
    -9998: "robots.txt precluded",
}


def describe_fetch_status(status: int) -> str:
    """A crawl.log status in words with the code: ``DNS lookup failed (-6)``, ``HTTP 503``."""
    if status >= 100:
        return f"HTTP {status}"
    words = FETCH_STATUS_WORDS.get(status)
    if words is None:
        return f"DNS answered ({status})" if status == 1 else f"fetch status {status}"
    return f"{words} ({status})"


@dataclass(frozen=True, slots=True)
class CrawlLogLine:
    """One valid crawl.log line; ``None``/empty where the log has "-"."""

    timestamp: str
    status: int
    size: int | None
    url: str
    discovery_path: str
    via: str | None
    mime: str | None
    thread: str
    fetch_timestamp: str | None
    digest: str | None
    source_tag: str | None
    annotations: tuple[str, ...]

    @property
    def content_size(self) -> int | None:
        """The ``content-size:`` annotation (NetarchiveSuite's ContentSizeAnnotationPostProcessor), if any."""
        return content_size(self.annotations)

    @property
    def is_duplicate(self) -> bool:
        """True when the crawler found the payload in its deduplication index (a ``duplicate:`` annotation)."""
        return any(annotation.startswith("duplicate:") for annotation in self.annotations)


@dataclass(frozen=True, slots=True)
class InvalidLine:
    """An invalid line kept as an example: its 1-based number in the file and its text (cut to 200 chars)."""

    number: int
    text: str
    reason: str


def content_size(annotations: tuple[str, ...] | list[str]) -> int | None:
    for annotation in annotations:
        if annotation.startswith("content-size:"):
            try:
                return int(annotation[13:])
            except ValueError:
                return None
    return None


def _dash(value: str) -> str | None:
    return None if value == "-" else value


class CrawlLogReader:
    """Reads one crawl.log; iterate ``fields()`` or ``lines()`` once, then read the counters.

    ``lines_read`` counts every non-blank line, ``invalid_lines`` those skipped as invalid, and
    ``invalid_examples`` holds the first ``MAX_EXAMPLES`` of them with their line numbers.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.lines_read = 0
        self.invalid_lines = 0
        self.invalid_examples: list[InvalidLine] = []

    def _invalid(self, number: int, text: str, reason: str) -> None:
        self.invalid_lines += 1
        if len(self.invalid_examples) < MAX_EXAMPLES:
            self.invalid_examples.append(InvalidLine(number, text.rstrip("\r\n")[:200], reason))

    def fields(self) -> Iterator[list[str]]:
        """The columns of every valid line: at least 11 strings, the status column an integer's text."""
        blank = 0
        number = 0
        # Bad bytes are replaced rather than fatal: a URL with a stray byte must not stop the report.
        with open(self.path, encoding="utf-8", errors="replace") as handle:
            try:
                for number, text in enumerate(handle, 1):
                    fields = text.split()
                    if len(fields) < MIN_FIELDS:
                        if fields:
                            self._invalid(number, text, f"{len(fields)} fields, at least {MIN_FIELDS} needed")
                        else:
                            blank += 1
                        continue
                    status = fields[STATUS]
                    if not status.isdigit() and not (status[:1] == "-" and status[1:].isdigit()):
                        self._invalid(number, text, f"status {status!r} is not an integer")
                        continue
                    yield fields
            finally:
                # Counted once at the end rather than per line: this loop is the hot path of the report.
                self.lines_read = number - blank

    def lines(self) -> Iterator[CrawlLogLine]:
        """Every valid line as a CrawlLogLine."""
        for fields in self.fields():
            size = fields[SIZE]
            annotations = fields[ANNOTATIONS] if len(fields) > ANNOTATIONS else "-"
            yield CrawlLogLine(
                timestamp=fields[TIMESTAMP], status=int(fields[STATUS]),
                size=int(size) if size.isdigit() else None, url=fields[URL],
                discovery_path="" if fields[DISCOVERY_PATH] == "-" else fields[DISCOVERY_PATH],
                via=_dash(fields[VIA]), mime=_dash(fields[MIME]), thread=fields[THREAD],
                fetch_timestamp=_dash(fields[FETCH_TIMESTAMP]), digest=_dash(fields[DIGEST]),
                source_tag=_dash(fields[SOURCE_TAG]),
                annotations=() if annotations == "-" else tuple(annotations.split(",")))

    def __iter__(self) -> Iterator[CrawlLogLine]:
        return self.lines()


def iter_crawl_log(path: Path) -> Iterator[CrawlLogLine]:
    """The valid lines of a crawl.log; invalid ones are skipped (use CrawlLogReader to count them)."""
    return CrawlLogReader(path).lines()
