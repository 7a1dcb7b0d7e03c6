"""One HTTP exchange over asyncio streams, parsed with h11, keeping the exact bytes sent and received.

h11 only finds boundaries, status, headers and the de-chunked body; the WARC gets ``raw_request`` and
``raw_response`` as they went over the wire. A response h11 rejects (bad header, truncated body) is
still returned with what was received and ``is_malformed`` set: it is recorded, never a crash.
Truncation follows Heritrix: ``lenTrunc`` past maxLengthBytes, ``timeTrunc`` past timeoutSeconds,
``midFetchTrunc`` when the server stops sending mid-body for soTimeoutMs.
This module opens sockets only; it knows nothing of WARCs, queues or logs.
"""

from __future__ import annotations

import asyncio
import hashlib
import ssl
import time
from base64 import b32encode
from dataclasses import dataclass, field

import h11

READ_SIZE = 65536
# Heritrix's fetch status codes for failures before a response (peers.md §1.6).
CONNECT_FAILED = -2
CONNECTION_BROKEN = -3
TIMED_OUT = -4


@dataclass
class FetchResult:
    status: int                              # HTTP status, or a negative Heritrix code
    raw_request: bytes = b""
    raw_response: bytes = b""
    header_length: int = 0                   # bytes of status line + headers in raw_response
    headers: list[tuple[str, str]] = field(default_factory=list)
    # De-chunked, still content-encoded. For a response that is not chunked, a view of raw_response (the
    # body is held once); for a chunked one, its own bytes.
    body: bytes | memoryview = b""
    annotations: list[str] = field(default_factory=list)
    is_malformed: bool = False
    started: float = 0.0                     # epoch seconds
    duration_ms: int = 0
    address: str = ""
    _payload_digest: str | None = None

    def header(self, name: str, default: str = "") -> str:
        name = name.lower()
        for key, value in self.headers:
            if key == name:
                return value
        return default

    @property
    def payload_digest(self) -> str:
        if self._payload_digest is None:
            self._payload_digest = "sha1:" + b32encode(hashlib.sha1(self.body).digest()).decode("ascii")
        return self._payload_digest


class HttpConnection:
    """A keep-alive connection to one host:port; one exchange at a time."""

    def __init__(self, address: str, port: int, tls_host: str | None = None):
        self.address = address
        self.port = port
        # HTTPS: TLS to the origin without certificate checks (Heritrix's sslTrustLevel OPEN): an archive
        # wants the content of a site with a broken certificate too.
        self.tls_host = tls_host
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.h11 = h11.Connection(our_role=h11.CLIENT)

    @property
    def is_open(self) -> bool:
        return self.writer is not None and not self.writer.is_closing()

    async def open(self, timeout: float) -> None:
        tls = None
        if self.tls_host is not None:
            tls = ssl.create_default_context()
            tls.check_hostname = False
            tls.verify_mode = ssl.CERT_NONE
        self.reader, self.writer = await asyncio.wait_for(
            asyncio.open_connection(self.address, self.port, limit=READ_SIZE * 4, ssl=tls,
                                    server_hostname=self.tls_host), timeout)
        self.h11 = h11.Connection(our_role=h11.CLIENT)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.writer = None
        self.reader = None


def _parse_status_line(raw: bytes) -> int:
    """Status code from a response h11 refused, so a malformed response keeps its real status."""
    first = raw.split(b"\r\n", 1)[0].split(b" ")
    if len(first) >= 2 and first[0].startswith(b"HTTP/") and first[1].isdigit():
        return int(first[1])
    return CONNECTION_BROKEN


async def fetch(connection: HttpConnection, host_header: str, target: str, headers: list[tuple[str, str]],
                connect_timeout: float, so_timeout: float, total_timeout: float, max_length: int,
                http11: bool = True) -> FetchResult:
    """GET ``target`` on ``connection`` (reopened if needed). Never raises for network trouble.

    ``http11`` False sends HTTP/1.0, as Heritrix does by default (FetchHTTP.useHTTP11): the server then
    answers without chunking, and the connection is not reused."""
    started = time.time()
    clock = time.monotonic()
    result = FetchResult(status=0, started=started, address=connection.address)
    try:
        if not connection.is_open:
            await connection.open(connect_timeout)
    except (TimeoutError, OSError):
        connection.close()
        result.status = CONNECT_FAILED if time.monotonic() - clock < connect_timeout else TIMED_OUT
        result.duration_ms = int((time.monotonic() - clock) * 1000)
        return result
    request = h11.Request(method="GET", target=target, headers=[("Host", host_header), *headers])
    result.raw_request = connection.h11.send(request) + connection.h11.send(h11.EndOfMessage())
    if not http11:
        # h11 speaks only HTTP/1.1 as a client; its request line is the one thing that differs, and its
        # response parsing (Content-Length, or read to close) serves an HTTP/1.0 exchange unchanged.
        result.raw_request = result.raw_request.replace(b" HTTP/1.1\r\n", b" HTTP/1.0\r\n", 1)
    assert connection.writer is not None and connection.reader is not None
    received = bytearray()
    is_chunked = False
    chunked_body = bytearray()  # h11's de-chunked data, kept only for a chunked response
    body_length = 0
    reusable = False
    try:
        connection.writer.write(result.raw_request)
        deadline = clock + total_timeout
        got_response = False
        while True:
            event = connection.h11.next_event()
            if event is h11.NEED_DATA:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    result.annotations.append("timeTrunc")
                    break
                try:
                    async with asyncio.timeout(min(so_timeout, remaining)):
                        data = await connection.reader.read(READ_SIZE)
                except TimeoutError:
                    if not got_response:
                        result.status = TIMED_OUT
                    else:
                        result.annotations.append("timeTrunc" if time.monotonic() >= deadline else "midFetchTrunc")
                    break
                received += data
                connection.h11.receive_data(data)
                if not data and not got_response and not received:
                    result.status = CONNECTION_BROKEN
                    break
                continue
            if isinstance(event, h11.Response | h11.InformationalResponse):
                if isinstance(event, h11.InformationalResponse):
                    continue
                got_response = True
                result.status = event.status_code
                result.headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in event.headers]
                result.header_length = received.find(b"\r\n\r\n") + 4
                is_chunked = any(name == b"transfer-encoding" and b"chunked" in value.lower()
                                 for name, value in event.headers)
            elif isinstance(event, h11.Data):
                body_length += len(event.data)
                if is_chunked:
                    chunked_body += event.data
                if max_length and body_length > max_length:
                    if is_chunked:
                        del chunked_body[max_length:]
                    body_length = max_length
                    result.annotations.append("lenTrunc")
                    break
            elif isinstance(event, h11.EndOfMessage):
                reusable = connection.h11.our_state is h11.DONE and connection.h11.their_state is h11.DONE
                break
            elif isinstance(event, h11.ConnectionClosed):
                if not got_response:
                    result.status = CONNECTION_BROKEN
                break
    except h11.RemoteProtocolError:
        # Keep reading what the server sends until it closes or goes quiet, then record it as received.
        result.is_malformed = True
        while time.monotonic() < clock + total_timeout:
            try:
                data = await asyncio.wait_for(connection.reader.read(READ_SIZE), so_timeout)
            except TimeoutError:
                break
            if not data:
                break
            received += data
        if result.status <= 0:
            result.status = _parse_status_line(bytes(received))
        end = received.find(b"\r\n\r\n")
        result.header_length = end + 4 if end >= 0 else len(received)
        if not body_length:
            is_chunked = False
            body_length = len(received) - result.header_length
    except (OSError, ssl.SSLError, asyncio.IncompleteReadError):
        if result.status <= 0:
            result.status = CONNECTION_BROKEN
    result.raw_response = bytes(received)
    del received
    if is_chunked:
        result.body = bytes(chunked_body)
    else:
        result.body = memoryview(result.raw_response)[result.header_length:result.header_length + body_length]
    result.duration_ms = int((time.monotonic() - clock) * 1000)
    if reusable and http11:
        try:
            connection.h11.start_next_cycle()
        except h11.LocalProtocolError:
            connection.close()
    else:
        connection.close()
    return result
