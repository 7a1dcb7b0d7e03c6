"""Where a fetched response's bytes go while they arrive: a spool in memory up to a threshold, on disk beyond
it (Heritrix's RecordingInputStream and its ReplayInputStream, sized by ``recorderInBufferBytes``).

A ``ResponseSpool`` records the bytes as received (the WARC block) with their block digest, the de-chunked
payload's digest, and, when asked to, a de-chunked copy of the payload for link extraction. Readers get the
bytes back in bounded pieces; nothing here ever holds a whole large response. It is a context manager:
closing it removes any file it spilled to. It opens no sockets and knows nothing of WARC records.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

# Responses up to this size stay in memory (most pages); larger ones continue in a temporary file. The
# size is Heritrix's default recorderInBufferBytes (CrawlController, 524288).
IN_MEMORY_BYTES = 512 * 1024
READ_SIZE = 65536


# base32 by ten bits at a time: a SHA-1 (160 bits) is 16 pairs of base32 characters, no padding.
_BASE32_PAIRS = tuple(first + second for first in "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
                      for second in "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")


def sha1_label(hasher: hashlib._Hash) -> str:
    """A digest in the WARC form, ``sha1:`` and base32 (what base64.b32encode gives, in a few lookups: it
    is taken several times per capture)."""
    value = int.from_bytes(hasher.digest(), "big")
    pairs = _BASE32_PAIRS
    return "sha1:" + "".join([pairs[(value >> shift) & 0x3FF] for shift in range(150, -1, -10)])


class _Spool:
    """Bytes written once, then read back from any offset; in memory until IN_MEMORY_BYTES."""

    def __init__(self) -> None:
        self.file: BinaryIO = tempfile.SpooledTemporaryFile(max_size=IN_MEMORY_BYTES)  # noqa: SIM115 - closed in close()
        self.size = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.file.write(data)
        self.size += len(data)

    def read_range(self, start: int, length: int) -> Iterator[bytes]:
        """The bytes from ``start`` on, at most ``length`` of them, in pieces of at most READ_SIZE."""
        self.file.seek(start)
        remaining = max(0, min(length, self.size - start))
        while remaining > 0:
            piece = self.file.read(min(READ_SIZE, remaining))
            if not piece:
                return
            remaining -= len(piece)
            yield piece

    def close(self) -> None:
        self.file.close()


class ResponseSpool:
    """One response as received (``raw``: the WARC block) and its payload (de-chunked, still content-encoded).

    For a response that is not chunked the payload is a range of ``raw``; for a chunked one, a de-chunked
    copy is kept only when ``keep_payload`` was asked for (a type the link extractors read), else only its
    digest is known.
    """

    def __init__(self) -> None:
        self.raw = _Spool()
        self._block_hasher = hashlib.sha1()
        self._payload_hasher = hashlib.sha1()
        self._payload_copy: _Spool | None = None
        # the payload digest's label once asked for: the recorder, the WARC writer and crawl.log each ask
        self._payload_label: str | None = None
        self.header_length = 0
        self.payload_length = 0
        self.is_chunked = False

    def __enter__(self) -> ResponseSpool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- recording ------------------------------------------------------------------------------------
    def record_received(self, data: bytes | bytearray) -> None:
        """Bytes as they came off the connection."""
        self.raw.write(data)
        self._block_hasher.update(data)

    def start_payload(self, header_length: int, is_chunked: bool, keep_payload: bool) -> None:
        """The header block ended at ``header_length``; ``keep_payload`` keeps a chunked body's de-chunked
        bytes for the link extractors."""
        self.header_length = header_length
        self.is_chunked = is_chunked
        if is_chunked and keep_payload:
            self._payload_copy = _Spool()

    def record_payload(self, data: bytes | memoryview) -> None:
        """De-chunked payload bytes, in order."""
        self._payload_hasher.update(data)
        self._payload_label = None
        self.payload_length += len(data)
        if self._payload_copy is not None:
            self._payload_copy.write(data)

    def payload_from_raw(self, header_length: int, payload_length: int) -> None:
        """Take the payload to be ``payload_length`` bytes of ``raw`` after ``header_length``, digest included
        (a response h11 refused: its body is whatever followed the header block)."""
        self.header_length, self.is_chunked = header_length, False
        self._payload_hasher = hashlib.sha1()
        self._payload_label = None
        self.payload_length = 0
        self._payload_copy = None
        for piece in self.raw.read_range(header_length, payload_length):
            self.record_payload(piece)

    # -- reading back ---------------------------------------------------------------------------------
    @property
    def raw_length(self) -> int:
        return self.raw.size

    @property
    def block_digest(self) -> str:
        return sha1_label(self._block_hasher)

    @property
    def payload_digest(self) -> str:
        label = self._payload_label
        if label is None:
            label = self._payload_label = sha1_label(self._payload_hasher)
        return label

    def head(self) -> bytes:
        """The status line and header block (small: h11 caps it)."""
        return b"".join(self.raw.read_range(0, self.header_length))

    def raw_file(self) -> BinaryIO:
        """The received bytes as a file positioned at their start, for the WARC writer to copy from."""
        self.raw.file.seek(0)
        return self.raw.file

    def payload_pieces(self, limit: int) -> Iterator[bytes]:
        """The payload's first ``limit`` bytes in bounded pieces; nothing for a chunked payload not kept."""
        if not self.is_chunked:
            return self.raw.read_range(self.header_length, min(limit, self.payload_length))
        if self._payload_copy is not None:
            return self._payload_copy.read_range(0, limit)
        return iter(())

    def close(self) -> None:
        self.raw.close()
        if self._payload_copy is not None:
            self._payload_copy.close()
