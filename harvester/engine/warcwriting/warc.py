"""WARC 1.1 output: files opened, named and rolled over here; each record's fields chosen here and its bytes
written by harvester/engine/warcwriting/warcrecords.py.

Each record is its own gzip member, so offsets stay seekable. Response and request blocks are the bytes
that went over the wire; a response's block is copied from its spool (harvester/engine/warcwriting/spool.py) in bounded
pieces and compressed as it goes, so a large response is never in memory whole. A revisit's block is the
response's head as received. WARC-Payload-Digest is taken, as the bytes arrived, over the de-chunked, still
content-encoded body (the spec's entity body, iipc/warc-specifications#22), which warcio would take over
the chunked bytes (warcio #74). A request record's payload is the request's body, so a GET's payload digest
is that of the empty string. A warcinfo record opens every file, with Heritrix's fields. File names follow
Heritrix: ``{prefix}-{timestamp17}-{serial:05d}-{pid}~{hostname}~{port}.warc.gz``, port being the engine's
API port. Each capture's records are handed to the OS (flushed) once written, before its crawl.log line is
written (harvester/engine/reporting/launchlogs.py): the order that keeps crawl.log and the WARCs in agreement after a
kill.
"""

from __future__ import annotations

import hashlib
import io
import os
import socket
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from harvester.engine.warcwriting.spool import ResponseSpool, sha1_label
from harvester.engine.warcwriting.warcrecords import new_record_id, warc_fields, warcinfo_date, write_record

REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
SOFTWARE = "HarvestSuite crawl engine (Heritrix 3 compatible)"
# We write WARC/1.1 records, so the 1.1 format and specification, where Heritrix names 1.0.
WARC_FORMAT = "WARC File Format 1.1"
WARC_CONFORMS_TO = "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"


def sha1_digest(data: bytes) -> str:
    return sha1_label(hashlib.sha1(data))


# A GET's request record's payload digest: its body is empty.
EMPTY_PAYLOAD_DIGEST = sha1_digest(b"")


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


def _payload_digest(body: bytes) -> str:
    return sha1_digest(body) if body else EMPTY_PAYLOAD_DIGEST


def warc_date(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


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
        self._file: io.BufferedWriter | None = None
        self._name = ""
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
        block = warc_fields(info.items())
        fields = [("WARC-Type", "warcinfo"), ("WARC-Record-ID", new_record_id()), ("WARC-Filename", self._name),
                  ("WARC-Date", warcinfo_date(datetime.now(UTC).replace(tzinfo=None))),
                  ("WARC-Block-Digest", sha1_digest(block)), ("Content-Type", "application/warc-fields")]
        self._append(fields, io.BytesIO(block), len(block))

    def _append(self, fields: list[tuple[str, str]], block: BinaryIO, block_length: int) -> int:
        assert self._file is not None
        offset = self._file.tell()
        self.bytes_written += write_record(self._file, fields, block, block_length, self.compress)
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
                extra: dict[str, str]) -> tuple[list[tuple[str, str]], str]:
        """The fields of a record whose block is ``block``, and its record ID."""
        return self._fields(record_type, uri, date, sha1_digest(block), content_type, extra)

    @staticmethod
    def _fields(record_type: str, uri: str, date: str, block_digest: str, content_type: str,
                extra: dict[str, str]) -> tuple[list[tuple[str, str]], str]:
        """A record's header fields in the order every record of ours has them, and its record ID."""
        record_id = new_record_id()
        fields = [("WARC-Record-ID", record_id), ("WARC-Date", date), *extra.items(),
                  ("WARC-Block-Digest", block_digest), ("WARC-Type", record_type), ("WARC-Target-URI", uri),
                  ("Content-Type", content_type)]
        return fields, record_id

    def _request_record(self, uri: str, date: str, raw_request: bytes, concurrent_to: str) -> None:
        # A request's payload is its body (a GET's is empty), not the whole block.
        fields, _ = self._record("request", uri, date, raw_request, "application/http; msgtype=request",
                                 {"WARC-Concurrent-To": concurrent_to,
                                  "WARC-Payload-Digest": _payload_digest(http_body(raw_request))})
        self._append(fields, io.BytesIO(raw_request), len(raw_request))

    def write_exchange(self, uri: str, started: float, address: str, raw_request: bytes, response: ResponseSpool,
                       truncated: str | None = None) -> WrittenRecord:
        """A response record (the bytes received, copied from their spool) and its request record (the bytes
        sent)."""
        self._ensure_file()
        date = warc_date(started)
        extra = {"WARC-IP-Address": address, "WARC-Payload-Digest": response.payload_digest}
        if truncated:
            extra["WARC-Truncated"] = truncated
        fields, response_id = self._fields("response", uri, date, response.block_digest,
                                           "application/http; msgtype=response", extra)
        offset = self._append(fields, response.raw_file(), response.raw_length)
        self._request_record(uri, date, raw_request, response_id)
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
        # The block is the response's head as received, and nothing of its body.
        fields, revisit_id = self._record("revisit", uri, date, response_head, "application/http; msgtype=response",
                                          extra)
        offset = self._append(fields, io.BytesIO(response_head), len(response_head))
        self._request_record(uri, date, raw_request, revisit_id)
        self._hand_to_os()
        return WrittenRecord(revisit_id, self._name, offset)

    def write_dns(self, uri: str, started: float, answer: bytes) -> WrittenRecord:
        self._ensure_file()
        # No HTTP head: the payload is the whole block.
        fields, record_id = self._record("response", uri, warc_date(started), answer, "text/dns",
                                         {"WARC-Payload-Digest": sha1_digest(answer)})
        offset = self._append(fields, io.BytesIO(answer), len(answer))
        self._hand_to_os()
        return WrittenRecord(record_id, self._name, offset)


def iso_to_14(date: str) -> str:
    """WARC-Date -> 14 digits, for dedup entries."""
    return date.replace("-", "").replace(":", "").replace("T", "")[:14]


def now_14() -> str:
    return time.strftime("%Y%m%d%H%M%S", time.gmtime())
