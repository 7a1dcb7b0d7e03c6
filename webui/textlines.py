"""A page of lines of a text stream, read without holding the stream: the file viewer's reading.

A stored file may be gigabytes (a crawl.log of a large snapshot job), so nothing here reads a stream whole
into memory. Lines before the page are not decoded or kept: they are counted, a chunk of CHUNK_BYTES at a
time, by ``bytes.count`` of the newlines in it. The page's own lines are kept, each cut at MAX_LINE_BYTES
(the rest of a longer line is read through and dropped, and the line marked cut), so a page holds at most
its number of lines times MAX_LINE_BYTES. Reading stops after the page's last line and one more chunk to
tell whether a line follows; only the last page, whose line numbers depend on the whole length, reads the
stream to its end (twice: once to count, once for its lines).

A line ends at ``\\n`` (a ``\\r`` before it is dropped); a last line without one is a line. Bytes are
decoded as UTF-8, a byte that is not replaced by U+FFFD, so any file can be viewed. This module knows
streams only: webui/api/jobfiles.py opens them (a stored file, a gzip file decompressed as it is read, a
record of a metadata WARC) and webui/status/files.py shows the page.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import BinaryIO

CHUNK_BYTES = 1024 * 1024
MAX_LINE_BYTES = 64 * 1024   # as the crawl-log search reads them (webui/crawllogsearch.py)


@dataclass(frozen=True)
class Line:
    """One line of a page: its number (the first line is 1), its text, and whether it was cut at
    MAX_LINE_BYTES."""

    number: int
    text: str
    is_cut: bool = False


@dataclass(frozen=True)
class LinePage:
    """The lines from line ``first`` on, at most the number asked for; ``has_more`` when a line follows them,
    ``total`` the stream's number of lines when the read reached its end (None when it did not)."""

    first: int
    lines: tuple[Line, ...]
    has_more: bool
    total: int | None

    @property
    def is_beyond_end(self) -> bool:
        """True when the page starts after the last line (of a stream that has lines, or at a line other
        than the first of an empty one)."""
        return self.total is not None and self.first > max(self.total, 1)


class LineReader:
    """The lines of a binary stream in order: ``skip`` counts past lines without keeping them, ``next_line``
    returns one, ``has_more`` tells whether any byte is left. Reads the stream in CHUNK_BYTES pieces and
    never keeps more than one piece and the line being read (up to ``max_line_bytes``)."""

    def __init__(self, stream: BinaryIO, max_line_bytes: int = MAX_LINE_BYTES, chunk_bytes: int = CHUNK_BYTES) -> None:
        self._stream = stream
        self._max_line_bytes = max_line_bytes
        self._chunk_bytes = chunk_bytes
        self._buffer = b""
        self._at = 0
        self._is_at_end = False

    def _refill(self) -> bool:
        """Replace the consumed buffer by the stream's next chunk; False at the stream's end."""
        if self._is_at_end:
            return False
        chunk = self._stream.read(self._chunk_bytes)
        if not chunk:
            self._is_at_end = True
            self._buffer, self._at = b"", 0
            return False
        self._buffer, self._at = chunk, 0
        return True

    def skip(self, count: int) -> int:
        """Read past ``count`` lines; returns how many there were (fewer than ``count`` at the end)."""
        skipped = 0
        in_line = False  # bytes of a line without its newline yet were read through
        while skipped < count:
            newlines = self._buffer.count(b"\n", self._at)
            if skipped + newlines >= count:
                for _ in range(count - skipped):
                    self._at = self._buffer.index(b"\n", self._at) + 1
                return count
            skipped += newlines
            last = self._buffer.rfind(b"\n", self._at)
            if last == -1:
                in_line = in_line or self._at < len(self._buffer)
            else:
                in_line = last + 1 < len(self._buffer)
            if not self._refill():
                return skipped + (1 if in_line else 0)
        return skipped

    def next_line(self) -> tuple[bytes, bool] | None:
        """The next line without its newline and whether it was cut, or None at the end."""
        parts: list[bytes] = []
        kept = 0
        is_cut = is_seen = False
        while True:
            newline = self._buffer.find(b"\n", self._at)
            end = newline if newline != -1 else len(self._buffer)
            piece = self._buffer[self._at:end]
            if piece:
                is_seen = True
                room = self._max_line_bytes - kept
                if len(piece) > room:
                    is_cut = True
                    piece = piece[:room]
                if piece:
                    parts.append(piece)
                    kept += len(piece)
            if newline != -1:
                self._at = newline + 1
                return b"".join(parts), is_cut
            self._at = len(self._buffer)
            if not self._refill():
                return (b"".join(parts), is_cut) if is_seen else None

    def has_more(self) -> bool:
        """True when a byte is left to read (so at least one more line follows)."""
        return self._at < len(self._buffer) or self._refill()


def decode_line(raw: bytes) -> str:
    """A line's bytes as text: UTF-8, undecodable bytes as U+FFFD, a trailing carriage return dropped."""
    return raw.decode("utf-8", "replace").removesuffix("\r")


def read_page(stream: BinaryIO, first: int, count: int) -> LinePage:
    """Lines ``first`` (1 is the first line) to ``first + count - 1`` of ``stream``, read from where it is."""
    if first < 1 or count < 1:
        raise ValueError(f"a page starts at line 1 or later and has at least one line, not {first} and {count}")
    reader = LineReader(stream)
    skipped = reader.skip(first - 1)
    if skipped < first - 1:
        return LinePage(first, (), False, skipped)
    lines = []
    for number in range(first, first + count):
        line = reader.next_line()
        if line is None:
            return LinePage(first, tuple(lines), False, number - 1)
        lines.append(Line(number, decode_line(line[0]), line[1]))
    has_more = reader.has_more()
    return LinePage(first, tuple(lines), has_more, None if has_more else first + count - 1)


def count_lines(stream: BinaryIO) -> int:
    """The number of lines of ``stream`` from where it is, counted a chunk at a time."""
    return LineReader(stream).skip(sys.maxsize)


def read_last_page(open_stream: Callable[[], AbstractContextManager[BinaryIO]], count: int) -> LinePage:
    """The last ``count`` lines of the stream that ``open_stream`` opens (it is opened twice: the lines are
    counted first, since a page's line numbers need the total, then the page is read)."""
    with open_stream() as stream:
        total = count_lines(stream)
    first = max(1, total - count + 1)
    with open_stream() as stream:
        page = read_page(stream, first, count)
    return LinePage(page.first, page.lines, page.has_more, total if page.total is None else page.total)
