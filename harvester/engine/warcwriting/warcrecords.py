"""WARC records as bytes, each in a gzip member of its own: where the crawl engine meets warcio.

A record is a header block, a block and CRLF CRLF. The header block is written here in the form warcio's
``StatusAndHeaders.to_bytes`` gives it (the version line, one ``name: value`` line per field, a blank line),
without building one per record; the block is copied as it is, from a stream, in bounded pieces. warcio's
own writer is not used, for three reasons:

* it compresses at zlib level 9, where level 6 costs far less CPU for nearly the same size;
* it writes an HTTP head by serialising it again from its parsed form, and a revisit's block must be the
  head exactly as received (case, spacing, order and repeats of its fields);
* giving it record IDs of our own or a new output per record takes its private parts.

Record IDs are made here (``new_record_id``), so this module and its callers use no private part of
warcio. It opens no files: ``write_record`` writes to a file object it is given, at its position.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable
from datetime import datetime
from typing import BinaryIO

from warcio.timeutils import datetime_to_iso_date

WARC_VERSION = "WARC/1.1"
# zlib's default level: level 9 costs CPU for little gain on crawled content.
GZIP_LEVEL = 6
GZIP_WBITS = zlib.MAX_WBITS + 16  # a gzip header and trailer around the deflate stream
# A record's bytes are gathered up to this many before each compress call, so a small record costs one
# call and a large one bounded memory.
MEMBER_BUFFER = 1024 * 1024
COPY_SIZE = 65536


def new_record_id() -> str:
    """A WARC-Record-ID: a random UUID as a URN in angle brackets (WARC 1.1 §5.2).

    The bits of uuid.uuid4 (16 random bytes, version 4, the RFC 4122 variant), formatted without building a
    UUID object, which costs more than the rest of the record's fields together."""
    value = bytearray(os.urandom(16))
    value[6] = (value[6] & 0x0F) | 0x40
    value[8] = (value[8] & 0x3F) | 0x80
    digits = value.hex()
    return f"<urn:uuid:{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}>"


def warcinfo_date(moment: datetime) -> str:
    """A warcinfo record's WARC-Date: ``moment`` (naive, in UTC) with its microseconds, as warcio writes it."""
    return datetime_to_iso_date(moment, use_micros=True)


def warc_fields(items: Iterable[tuple[str, str]]) -> bytes:
    """An application/warc-fields block: one ``name: value`` line per item; items without a value left out."""
    return b"".join(f"{name}: {value}\r\n".encode() for name, value in items if value)


class _Member:
    """One record's bytes on their way into the file, compressed into a gzip member of its own (or not).

    A record that fits in MEMBER_BUFFER (nearly all) is compressed in one call; a compressor that lives
    across calls is made only for a larger one. A compressor object made and dropped for every record
    measured far dearer (20,000 exchanges of 4 KB: 3.8 s of CPU against 2.2 s), most of it glibc trimming
    and regrowing its heap around the compressor's few hundred KiB each time."""

    def __init__(self, file: BinaryIO, compress: bool) -> None:
        self.file = file
        self.compress = compress
        self.compressor: zlib._Compress | None = None
        self.parts: list[bytes] = []
        self.pending = 0
        self.written = 0

    def write(self, data: bytes) -> None:
        self.parts.append(data)
        self.pending += len(data)
        if self.pending >= MEMBER_BUFFER:
            self._drain()

    def _drain(self) -> None:
        data = b"".join(self.parts)
        self.parts.clear()
        self.pending = 0
        if self.compress:
            if self.compressor is None:
                self.compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, GZIP_WBITS)
            data = self.compressor.compress(data)
        self._out(data)

    def _out(self, data: bytes) -> None:
        self.file.write(data)
        self.written += len(data)

    def finish(self) -> None:
        if self.compress and self.compressor is None:
            self._out(zlib.compress(b"".join(self.parts), GZIP_LEVEL, GZIP_WBITS))
            return
        self._drain()
        if self.compressor is not None:
            self._out(self.compressor.flush())


def write_record(file: BinaryIO, fields: Iterable[tuple[str, str]], block: BinaryIO, block_length: int,
                 compress: bool) -> int:
    """Write one record at ``file``'s position and return the bytes written to it.

    ``fields`` are the WARC header fields in their order, without Content-Length, which is
    ``block_length``; exactly that many bytes are copied from ``block``. Raises ValueError when ``block``
    ends before them, so a record never claims more bytes than it holds.
    """
    lines = "".join(f"{name}: {value}\r\n" for name, value in fields)
    member = _Member(file, compress)
    member.write(f"{WARC_VERSION}\r\n{lines}Content-Length: {block_length}\r\n\r\n".encode())
    remaining = block_length
    while remaining > 0:
        piece = block.read(min(COPY_SIZE, remaining))
        if not piece:
            raise ValueError(f"the block ended {remaining} of {block_length} bytes early")
        member.write(piece)
        remaining -= len(piece)
    member.write(b"\r\n\r\n")
    member.finish()
    return member.written
