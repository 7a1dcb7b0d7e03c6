"""WARC 1.1 output: files opened, named and rolled over here; records written by warcio's WARCWriter.

Each record is its own gzip member (zlib level 6: level 9 costs CPU for little gain), so offsets stay
seekable. Response and request blocks are the bytes that went over the wire; a response's block is copied
from its spool (harvester/engine/spool.py) in bounded pieces and compressed as it goes, so a large response
is never in memory whole. WARC-Payload-Digest is taken, as the bytes arrived, over the de-chunked, still
content-encoded body (the spec's entity body, iipc/warc-specifications#22), which warcio would take over
the chunked bytes (warcio #74). A request record's payload is the request's
body, so a GET's payload digest is that of the empty string. A warcinfo record opens every file, with
Heritrix's fields. File names follow Heritrix:
``{prefix}-{timestamp17}-{serial:05d}-{pid}~{hostname}~{port}.warc.gz``, port being the engine's API port.
Each capture's records are handed to the OS (flushed) once written, before its crawl.log line is written
(harvester/engine/crawllog.py): the order that keeps crawl.log and the WARCs in agreement after a kill.
"""

from __future__ import annotations

import hashlib
import io
import os
import socket
import time
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from warcio.recordbuilder import RecordBuilder
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvester.engine.spool import ResponseSpool, sha1_label

REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
SOFTWARE = "HarvestSuite crawl engine (Heritrix 3 compatible)"
# We write WARC/1.1 records, so the 1.1 format and specification, where Heritrix names 1.0.
WARC_FORMAT = "WARC File Format 1.1"
WARC_CONFORMS_TO = "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
MEMBER_BUFFER = 1024 * 1024


def sha1_digest(data: bytes) -> str:
    return sha1_label(hashlib.sha1(data))


def local_address() -> str:
    """This machine's address towards the network (warcinfo ``ip``), without sending anything: a UDP
    socket "connected" to a public address picks the outgoing interface. Loopback when there is no route."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: routed like any public address, never answered
            return probe.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def http_body(raw_message: bytes) -> bytes:
    """The bytes after the header block of an HTTP message (empty for a GET)."""
    end = raw_message.find(b"\r\n\r\n")
    return raw_message[end + 4:] if end >= 0 else b""


def warc_date(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


class _RawHeaders:
    """HTTP header bytes handed to warcio as they are, so it neither re-parses nor re-serialises them."""

    def __init__(self, raw: bytes):
        self.headers_buff = raw

    def compute_headers_buffer(self, header_filter: object = None) -> None:
        """The buffer is the received bytes; nothing to compute."""


class _Member:
    """One record's bytes on their way into the file: gathered up to MEMBER_BUFFER bytes, then compressed
    (or not) and written, so a small record costs one compress call and a large one bounded memory."""

    def __init__(self, file: BinaryIO, compress: bool) -> None:
        self.file = file
        self.compressor = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS + 16) if compress else None
        self.parts: list[bytes] = []
        self.pending = 0
        self.written = 0

    def write(self, data: bytes) -> None:
        self.parts.append(data)
        self.pending += len(data)
        if self.pending >= MEMBER_BUFFER:
            self._drain()

    def flush(self) -> None:
        """warcio flushes after each record; the member is finished by ``finish`` instead."""

    def _drain(self) -> None:
        data = b"".join(self.parts)
        self.parts.clear()
        self.pending = 0
        if self.compressor is not None:
            data = self.compressor.compress(data)
        self.file.write(data)
        self.written += len(data)

    def finish(self) -> None:
        self._drain()
        if self.compressor is not None:
            tail = self.compressor.flush()
            self.file.write(tail)
            self.written += len(tail)


@dataclass(frozen=True)
class WrittenRecord:
    record_id: str
    warc_file: str
    offset: int


class WarcFileWriter:
    """Writes records into rolling WARC files in ``directory``; a context manager."""

    def __init__(self, directory: Path, prefix: str, max_file_size: int, compress: bool,
                 warcinfo_items: tuple[tuple[str, str], ...], serial: int = 0, port: int = 0,
                 crawl_metadata: tuple[tuple[str, str], ...] = ()):
        self.directory = Path(directory)
        self.prefix = prefix
        self.max_file_size = max_file_size
        self.compress = compress
        self.warcinfo_items = warcinfo_items
        self.crawl_metadata = crawl_metadata
        self._ip = local_address()
        self.serial = serial
        self.port = port
        self.builder = RecordBuilder(warc_version="WARC/1.1")
        self._file: io.BufferedWriter | None = None
        self._name = ""
        self._writer = WARCWriter(None, gzip=False, warc_version="WARC/1.1")
        self.bytes_written = 0

    def __enter__(self) -> WarcFileWriter:
        self.directory.mkdir(parents=True, exist_ok=True)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            final = self.directory / self._name
            (self.directory / (self._name + ".open")).rename(final)
            self._file = None

    @property
    def current_name(self) -> str:
        return self._name

    def _open_next(self) -> None:
        self.close()
        stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S%f")[:17]
        self.serial += 1
        suffix = ".warc.gz" if self.compress else ".warc"
        self._name = (f"{self.prefix}-{stamp}-{self.serial:05d}-{os.getpid()}~{socket.gethostname()}"
                      f"~{self.port}{suffix}")
        self._file = open(self.directory / (self._name + ".open"), "wb")  # noqa: SIM115 - closed in close()
        # Heritrix's fields in its order (heritrix3 modules/src/main/java/org/archive/modules/writer/
        # BaseWARCWriterProcessor.java, getMetadata), then the writer's metadataItems (NetarchiveSuite's).
        info = {"software": SOFTWARE, "ip": self._ip, "hostname": socket.getfqdn(), "format": WARC_FORMAT,
                "conformsTo": WARC_CONFORMS_TO, **dict(self.crawl_metadata), **dict(self.warcinfo_items)}
        self._append(self.builder.create_warcinfo_record(self._name, info))

    def _append(self, record: ArcWarcRecord) -> int:
        assert self._file is not None
        offset = self._file.tell()
        member = _Member(self._file, self.compress)
        self._writer.out = member
        self._writer.write_record(record)
        member.finish()
        self.bytes_written += member.written
        return offset

    def _hand_to_os(self) -> None:
        """Write what the file object buffers to the OS: a capture's records are in the file before the
        caller writes the crawl.log line that reports them, so an engine killed at any moment never leaves a
        line whose records are lost with its buffer. A flush, not an fsync: a killed process loses only its
        own buffers, the kernel still writes what it was given, and an fsync per capture would cost a disk
        round trip per URI (a machine that loses power loses the crawl's recent output either way)."""
        assert self._file is not None
        self._file.flush()

    def _ensure_file(self) -> None:
        if self._file is None or (self.max_file_size and self._file.tell() >= self.max_file_size):
            self._open_next()

    def _record(self, record_type: str, uri: str, date: str, block: bytes, content_type: str,
                extra: dict[str, str], http_head: bytes | None = None) -> tuple[ArcWarcRecord, str]:
        return self._streamed_record(record_type, uri, date, io.BytesIO(block), len(block),
                                     sha1_digest((http_head or b"") + block), content_type, extra, http_head)

    def _streamed_record(self, record_type: str, uri: str, date: str, block: BinaryIO, block_length: int,
                         block_digest: str, content_type: str, extra: dict[str, str],
                         http_head: bytes | None = None) -> tuple[ArcWarcRecord, str]:
        """A record whose block warcio copies from ``block`` (read to its end) in pieces."""
        record_id = self.builder._make_warc_id()
        headers = {"WARC-Record-ID": record_id, "WARC-Date": date, **extra, "WARC-Block-Digest": block_digest}
        warc_headers = StatusAndHeaders("", list(headers.items()), protocol="WARC/1.1")
        warc_headers.replace_header("WARC-Type", record_type)
        warc_headers.replace_header("WARC-Target-URI", uri)
        record = ArcWarcRecord("warc", record_type, warc_headers, block,
                               _RawHeaders(http_head) if http_head is not None else None, content_type, block_length)
        record.payload_length = block_length
        return record, record_id

    def _request_record(self, uri: str, date: str, raw_request: bytes, concurrent_to: str):
        # Set here, or warcio would digest the whole block as the payload, which its own checker refuses.
        return self._record("request", uri, date, raw_request, "application/http; msgtype=request",
                            {"WARC-Concurrent-To": concurrent_to,
                             "WARC-Payload-Digest": sha1_digest(http_body(raw_request))})

    def write_exchange(self, uri: str, started: float, address: str, raw_request: bytes, response: ResponseSpool,
                       truncated: str | None = None) -> WrittenRecord:
        """A response record (the bytes received, copied from their spool) and its request record (the bytes
        sent)."""
        self._ensure_file()
        date = warc_date(started)
        extra = {"WARC-IP-Address": address, "WARC-Payload-Digest": response.payload_digest}
        if truncated:
            extra["WARC-Truncated"] = truncated
        response_record, response_id = self._streamed_record(
            "response", uri, date, response.raw_file(), response.raw_length, response.block_digest,
            "application/http; msgtype=response", extra)
        offset = self._append(response_record)
        request, _ = self._request_record(uri, date, raw_request, response_id)
        self._append(request)
        self._hand_to_os()
        return WrittenRecord(response_id, self._name, offset)

    def write_revisit(self, uri: str, started: float, address: str, raw_request: bytes, response_head: bytes,
                      payload_digest: str, refers_to_uri: str, refers_to_date: str,
                      refers_to_record: str | None) -> WrittenRecord:
        """An identical-payload-digest revisit: the response's headers only, pointing at the original."""
        self._ensure_file()
        date = warc_date(started)
        extra = {"WARC-IP-Address": address, "WARC-Payload-Digest": payload_digest, "WARC-Profile": REVISIT_PROFILE,
                 "WARC-Refers-To-Target-URI": refers_to_uri, "WARC-Refers-To-Date": refers_to_date,
                 "WARC-Truncated": "length"}
        if refers_to_record:
            extra["WARC-Refers-To"] = refers_to_record
        revisit, revisit_id = self._record("revisit", uri, date, b"", "application/http; msgtype=response", extra,
                                           http_head=response_head)
        offset = self._append(revisit)
        request, _ = self._request_record(uri, date, raw_request, revisit_id)
        self._append(request)
        self._hand_to_os()
        return WrittenRecord(revisit_id, self._name, offset)

    def write_dns(self, uri: str, started: float, answer: bytes) -> WrittenRecord:
        self._ensure_file()
        record, record_id = self._record("response", uri, warc_date(started), answer, "text/dns", {})
        offset = self._append(record)
        self._hand_to_os()
        return WrittenRecord(record_id, self._name, offset)


def iso_to_14(date: str) -> str:
    """WARC-Date -> 14 digits, for dedup entries."""
    return date.replace("-", "").replace(":", "").replace("T", "")[:14]


def now_14() -> str:
    return time.strftime("%Y%m%d%H%M%S", time.gmtime())
