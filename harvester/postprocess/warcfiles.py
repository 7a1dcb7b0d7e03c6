"""The names of a crawl's WARC files, and closing the ``.open`` files a killed crawler leaves behind.

Where the files are is the job directory's to say (harvester/jobdir.py); this module only tells a crawl's
WARC file by its name (``is_crawl_warc``, ``is_open_warc``).

Heritrix and the bundled engine write ``<name>.warc.gz.open`` and rename it to ``<name>.warc.gz`` when the
file is closed. After a crash the ``.open`` file may end inside a record. ``close_open_warc`` keeps every
complete record, cuts the partial one off the end and renames the file; the cut is the end of the last
record that is complete in every respect:

* for ``.warc.gz``, the gzip member holding it ended with a valid trailer (zlib checks CRC and size), and
* the decompressed bytes form whole records: a ``WARC/`` header block, Content-Length bytes of block and
  the closing CRLF CRLF. Members and records need not coincide; a cut is only made where both end.

A damaged record (corrupt gzip data, a header without Content-Length, a block not closed by CRLF CRLF)
ends the file there too: nothing after it can be trusted to start a record. The file is read in 64 KiB
chunks; memory holds one chunk, its inflated output (at most 256 KiB) and a record's header block. After
the cut, the kept part is read once more with warcio, which must find exactly the records counted here.
"""

from __future__ import annotations

import logging
import os
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from harvestdef.errors import ValidationError

log = logging.getLogger(__name__)

OPEN_SUFFIX = ".open"
WARC_SUFFIXES = (".warc.gz", ".warc")
MAX_HEADER_BYTES = 1024 * 1024
_CHUNK = 1 << 16
_METADATA_NAME = re.compile(r"-metadata-\d+\.warc(\.gz)?$")
_CONTENT_LENGTH = re.compile(rb"^content-length[ \t]*:[ \t]*(\d+)[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)


class _RecordScanner:
    """Follows decompressed WARC bytes record by record; ``at_boundary`` is true between records."""

    def __init__(self) -> None:
        self.records = 0
        self.failure: str | None = None
        self._header = bytearray()
        self._remaining = 0          # bytes of block + closing CRLF CRLF still to come
        self._tail = b""             # the last bytes of the current record, to check its closing CRLF CRLF

    @property
    def at_boundary(self) -> bool:
        return self.failure is None and self._remaining == 0 and not self._header

    def feed(self, data: bytes) -> list[int]:
        """Take the next bytes; returns the positions in ``data`` just after each record that ended in it."""
        ends = []
        position = 0
        while position < len(data) and self.failure is None:
            if self._remaining:
                taken = min(self._remaining, len(data) - position)
                position += taken
                self._remaining -= taken
                self._tail = (self._tail + data[max(0, position - 4):position])[-4:]
                if self._remaining == 0:
                    if self._tail != b"\r\n\r\n":
                        self.failure = f"record {self.records + 1} does not end with CRLF CRLF"
                        break
                    self.records += 1
                    ends.append(position)
                continue
            if not self._header:
                while position < len(data) and data[position] in b"\r\n":
                    position += 1  # blank lines between records are tolerated
                if position == len(data):
                    break
            searched_from = max(0, len(self._header) - 3)
            self._header += data[position:]
            position = len(data)
            end = self._header.find(b"\r\n\r\n", searched_from)
            if end < 0:
                if len(self._header) > MAX_HEADER_BYTES:
                    self.failure = f"record {self.records + 1} has no end of its header within 1 MiB"
                continue
            header = bytes(self._header[:end + 4])
            position -= len(self._header) - (end + 4)  # the bytes after the header are read again as block
            self._header.clear()
            match = _CONTENT_LENGTH.search(header)
            if not header.startswith(b"WARC/") or match is None:
                self.failure = f"record {self.records + 1} has no WARC header with a Content-Length"
                break
            self._remaining = int(match.group(1)) + 4
            self._tail = b""
        return ends


def _cut_points(path: Path, compressed: bool) -> Iterator[tuple[int, int]]:
    """(file offset, records before it) for each offset where a complete record ends and the next may begin."""
    scanner = _RecordScanner()
    with open(path, "rb") as handle:
        if not compressed:
            offset = 0
            while chunk := handle.read(_CHUNK):
                for end in scanner.feed(chunk):
                    yield offset + end, scanner.records
                offset += len(chunk)
                if scanner.failure:
                    log.warning("%s: %s (within bytes %d-%d)", path, scanner.failure, offset - len(chunk), offset)
                    return
            return
        member_start = 0
        buffer = b""
        while True:
            if not buffer and not (buffer := handle.read(_CHUNK)):
                return
            decompressor = zlib.decompressobj(zlib.MAX_WBITS | 16)
            member_length = 0
            while not decompressor.eof:
                if not buffer and not (buffer := handle.read(_CHUNK)):
                    return  # the file ends inside this member: it holds the partial record
                try:
                    # Output is capped per call: a small compressed chunk may inflate to many megabytes.
                    out = decompressor.decompress(buffer, _CHUNK * 4)
                except zlib.error as exc:
                    log.warning("%s: gzip member at offset %d is corrupt: %s", path, member_start, exc)
                    return
                rest = decompressor.unused_data if decompressor.eof else decompressor.unconsumed_tail
                member_length += len(buffer) - len(rest)
                buffer = rest
                scanner.feed(out)
                if scanner.failure:
                    log.warning("%s: %s (gzip member at offset %d)", path, scanner.failure, member_start)
                    return
            member_start += member_length
            if scanner.at_boundary:
                yield member_start, scanner.records


def _final_name(path: Path) -> Path:
    if not is_open_warc(path.name):
        raise ValidationError(f"{path} is not an open WARC file (expected a name ending .warc.gz.open or "
                              ".warc.open)")
    return path.with_name(path.name[:-len(OPEN_SUFFIX)])


def _warcio_record_count(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(1 for _ in ArchiveIterator(handle, no_record_parse=True))


def close_open_warc(path: Path) -> Path | None:
    """Close a WARC file left open by a crawler that died: keep its complete records, cut off a partial last
    record, and rename it without ``.open``. Returns the new path, or None when not one record in it was
    complete (the file is then left as it is, and a warning says so).

    Raises ValidationError for a name that is not ``*.warc.gz.open``/``*.warc.open`` or when warcio does not
    read back the records kept, and FileExistsError when the closed name exists already.
    """
    path = Path(path)
    final = _final_name(path)
    if final.exists():
        raise FileExistsError(f"cannot close {path}: {final} exists already")
    size = path.stat().st_size
    keep, records = 0, 0
    for cut in _cut_points(path, compressed=final.name.endswith(".gz")):
        keep, records = cut
    if records == 0:
        log.warning("%s holds no complete WARC record (%d bytes); left as it is", path, size)
        return None
    if keep < size:
        log.warning("%s: cut %d bytes of a partial record after %d complete records", path, size - keep, records)
        os.truncate(path, keep)
    found = _warcio_record_count(path)
    if found != records:
        raise ValidationError(f"{path}: warcio reads {found} records after the cut at {keep}, expected {records}")
    path.rename(final)
    return final


def is_crawl_warc(name: str) -> bool:
    """A closed WARC file of the crawl (``*.warc.gz``, ``*.warc``). A metadata WARC's name
    (``*-metadata-N.warc*``) is not one: that name belongs to the job's metadata WARC in the store."""
    return name.endswith(WARC_SUFFIXES) and not _METADATA_NAME.search(name)


def is_open_warc(name: str) -> bool:
    """A WARC file the crawler has not closed yet (``*.warc.gz.open``, ``*.warc.open``)."""
    return name.endswith(OPEN_SUFFIX) and name[:-len(OPEN_SUFFIX)].endswith(WARC_SUFFIXES)
