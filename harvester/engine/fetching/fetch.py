"""One HTTP exchange over asyncio streams, parsed with h11, its bytes recorded as they arrive; and the
fetcher that keeps a connection per host:port and sends Heritrix's request headers.

h11 only finds boundaries, status, headers and the de-chunked body; the bytes received go to a
ResponseSpool (harvester/engine/warcwriting/spool.py) as they arrive, in memory for a small response and on disk for a
large one, with the block and payload digests computed on the way, so no response is ever held whole. A
response h11 rejects (bad header, truncated body) is still returned with what was received and
``is_malformed`` set: it is recorded, never a crash. Every path is bounded before a byte is recorded
(``_ResponseCaps``): the head at the engine's header caps (``headerTrunc``, nothing more read), the body as
received at maxLengthBytes (``lenTrunc``), so no record exceeds maxLengthBytes plus the header cap, a
malformed response's included. Truncation follows Heritrix: ``lenTrunc`` past maxLengthBytes,
``timeTrunc`` past timeoutSeconds. A server that stops sending mid-body for soTimeoutMs has lost the
connection (``-3``, as Heritrix's FetchHTTP counts a read that times out): nothing is recorded and the URI
is retried, so a page cut short by a stalled network is fetched again, never kept truncated as a 200.
This module opens sockets only; it knows nothing of WARCs, queues or logs.
"""

from __future__ import annotations

import asyncio
import errno
import re
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urlsplit

import h11

from harvestdef.destinations import DestinationPolicy
from harvester.engine.fetching.bounds import DEFAULT_HEADER_MAX_BYTES, DEFAULT_HEADER_MAX_LINES, ResponseBounds
from harvester.engine.fetching.credentials import server_name
from harvester.engine.warcwriting.spool import ResponseSpool

if TYPE_CHECKING:
    from harvester.engine.config import CrawlConfig
    from harvester.engine.fetching.cookies import CookieStore
    from harvester.engine.fetching.credentials import HttpAuthentication

READ_SIZE = 65536
# Heritrix's truncation annotations (heritrix3 FetchErrors / CoreAttributeConstants).
HEADER_TRUNC = "headerTrunc"
LENGTH_TRUNC = "lenTrunc"
TIME_TRUNC = "timeTrunc"
_BLANK_LINE = re.compile(rb"\n\r?\n")
# Heritrix's fetch status codes (its FetchStatusCodes) for failures before a response.
CONNECT_FAILED = -2
CONNECTION_BROKEN = -3
TIMED_OUT = -4
# Ours, in Heritrix's "blocked" family (-5000..-5004 are Heritrix's; -5005 is unused there): an address the
# policy of harvestdef/destinations.py refuses (loopback, private, link-local...), never connected to.
DESTINATION_REFUSED = -5005


@dataclass
class FetchResult:
    """What one exchange gave; a context manager, since ``spool`` may hold a temporary file."""

    status: int                              # HTTP status, or a negative Heritrix code
    raw_request: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    spool: ResponseSpool | None = None       # the response as received; None when nothing was received
    annotations: list[str] = field(default_factory=list)
    is_malformed: bool = False
    started: float = 0.0                     # epoch seconds
    duration_ms: int = 0
    address: str = ""

    def __enter__(self) -> FetchResult:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self.spool is not None:
            self.spool.close()

    def header(self, name: str, default: str = "") -> str:
        name = name.lower()
        for key, value in self.headers:
            if key == name:
                return value
        return default

    def header_values(self, name: str) -> list[str]:
        """Every value of a header the response repeats (Set-Cookie, WWW-Authenticate)."""
        name = name.lower()
        return [value for key, value in self.headers if key == name]

    @property
    def payload_digest(self) -> str:
        assert self.spool is not None  # only a response (status >= 0) is recorded
        return self.spool.payload_digest

    @property
    def payload_length(self) -> int:
        """The body's size as crawl.log's column 3 gives it: de-chunked, still content-encoded."""
        return self.spool.payload_length if self.spool is not None else 0

    @property
    def content_size(self) -> int:
        """Heritrix's content size: headers plus body as received, what its byte totals and reports count."""
        return self.spool.raw_length if self.spool is not None else 0

    def read_payload(self, limit: int) -> bytes:
        """At most ``limit`` bytes of the payload (for robots.txt, which is small and capped)."""
        if self.spool is None:
            return b""
        return b"".join(self.spool.payload_pieces(limit))


class HttpConnection:
    """A keep-alive connection to one host:port; one exchange at a time."""

    def __init__(self, address: str, port: int, tls_host: str | None = None,
                 destinations: DestinationPolicy | None = None, host: str = ""):
        self.address = address
        self.port = port
        # checked again on each open, whoever made the connection: a refused address is never connected to
        self.destinations = destinations
        self.host = host or address
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
        if self.destinations is not None:
            reason = self.destinations.refusal(self.host, self.address)
            if reason is not None:
                raise PermissionError(errno.EACCES, reason)
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


def _parse_status_line(head: bytes) -> int:
    """Status code from a response h11 refused, so a malformed response keeps its real status."""
    first = head.split(b"\r\n", 1)[0].split(b" ")
    if len(first) >= 2 and first[0].startswith(b"HTTP/") and first[1].isdigit():
        return int(first[1])
    return CONNECTION_BROKEN


def _header_end(spool: ResponseSpool, limit: int = READ_SIZE) -> int:
    """Where the header block of the received bytes ends (after its blank line); -1 if not within ``limit``.
    A blank line is an empty line or a lone CR, as h11 reads it (``\\n\\r?\\n``)."""
    head = b"".join(spool.raw.read_range(0, limit))
    match = _BLANK_LINE.search(head)
    return match.end() if match else -1


class _ResponseCaps:
    """The bounds on one response's bytes as they arrive, applied before anything is recorded or parsed.

    The head (status line and header fields, and any interim 1xx responses before them) is kept up to
    ``header_max_bytes`` bytes and ``header_max_lines`` header lines (every line but one status line and the
    blank lines); the body that follows, as received (chunk framing included), up to ``max_length`` bytes,
    0 for no bound. So a response is never recorded longer than ``max_length`` plus the header cap, whatever
    the server sends. ``admit(data)`` gives the part of ``data`` that may be kept; once something had to go,
    ``cut`` is Heritrix's annotation for it: ``headerTrunc`` (FetchErrors.HEADER_TRUNC) for the head,
    ``lenTrunc`` for the body. ``header_end`` is where the head ended (after its blank line), -1 until then.
    Work is a few steps per line of the head and one slice per piece of the body: a head cut at its cap of
    lines costs no more than a short one."""

    __slots__ = ("header_max_bytes", "header_max_lines", "max_length", "head_length", "header_end", "body_length",
                 "cut", "_lines", "_block_lines", "_block_first", "_line_length", "_line_start")

    def __init__(self, header_max_bytes: int, header_max_lines: int, max_length: int) -> None:
        self.header_max_bytes = header_max_bytes
        self.header_max_lines = header_max_lines
        self.max_length = max_length
        self.head_length = 0
        self.header_end = -1
        self.body_length = 0
        self.cut = ""
        self._lines = 0             # lines of the head that were not blank, status lines included
        self._block_lines = 0       # of them, in the current block (a 1xx response's or the final one)
        self._block_first = b""     # the start of the current block's status line
        self._line_length = 0       # bytes of the current line so far, across pieces
        self._line_start = b""      # its first bytes (enough to tell a blank line and a status code)

    def admit(self, data: bytes) -> bytes:
        if self.cut:
            return b""
        if self.header_end >= 0:
            return self._admit_body(data)
        head = self._admit_head(data)
        if self.header_end < 0 or self.cut:
            return head
        return head + self._admit_body(data[len(head):])

    def _admit_head(self, data: bytes) -> bytes:
        room = self.header_max_bytes - self.head_length
        window = data[:room]
        position = 0
        while True:
            if (self._line_length == 0 and self._lines > self.header_max_lines and position < len(window)
                    and window[position] not in b"\r\n"):
                # a line begins that is not the blank one, and the head has all the lines it may have: the head
                # is kept up to the line before it
                self.cut = HEADER_TRUNC
                self.head_length += position
                return data[:position]
            newline = window.find(b"\n", position)
            if newline < 0:
                break
            length = self._line_length + newline - position
            start = (self._line_start + window[position:min(newline, position + 16)])[:16]
            self._line_length, self._line_start = 0, b""
            if length == 0 or (length == 1 and start == b"\r"):
                if self._block_lines:
                    if not _is_interim_status(self._block_first):
                        self.head_length += newline + 1
                        self.header_end = self.head_length
                        return data[:newline + 1]
                    self._block_lines = 0  # an interim response ended; the final one follows
            else:
                if not self._block_lines:
                    self._block_first = start
                self._block_lines += 1
                self._lines += 1
                if self._lines > self.header_max_lines + 1:
                    # one line too many that began as a blank one would (a lone CR): kept up to its start
                    self.cut = HEADER_TRUNC
                    self.head_length += position
                    return data[:position]
            position = newline + 1
        if position < len(window):
            self._line_start = (self._line_start + window[position:position + 16])[:16]
            self._line_length += len(window) - position
        self.head_length += len(window)
        if len(data) > len(window):
            self.cut = HEADER_TRUNC  # the cap came before the blank line
        return window

    def _admit_body(self, data: bytes) -> bytes:
        if self.max_length and self.body_length + len(data) > self.max_length:
            self.cut = LENGTH_TRUNC
            data = data[:self.max_length - self.body_length]
        self.body_length += len(data)
        return data


def _is_interim_status(status_line_start: bytes) -> bool:
    """Whether a status line (its first bytes) is a 1xx response's, which another head follows."""
    return status_line_start.startswith(b"HTTP/") and status_line_start[9:10] == b"1"


async def fetch(connection: HttpConnection, host_header: str, target: str, headers: list[tuple[str, str]],
                connect_timeout: float, so_timeout: float, total_timeout: float, max_length: int,
                http11: bool = True, keeps_payload: Callable[[str], bool] = lambda content_type: False,
                method: str = "GET", body: bytes = b"", header_max_bytes: int = DEFAULT_HEADER_MAX_BYTES,
                header_max_lines: int = DEFAULT_HEADER_MAX_LINES) -> FetchResult:
    """GET ``target`` on ``connection`` (reopened if needed), or with ``method`` POST send ``body`` (its
    Content-Type among ``headers``). Never raises for network trouble.

    ``http11`` False sends HTTP/1.0, as Heritrix does by default (FetchHTTP.useHTTP11): the server then
    answers without chunking, and the connection is not reused. ``keeps_payload(content_type)`` says whether
    a chunked body's de-chunked bytes are kept for link extraction. The caller closes the result.

    Bounded on every path, a response h11 refuses included: the head is kept up to ``header_max_bytes``
    and ``header_max_lines`` (past them ``headerTrunc``, and nothing more is read), the body as received up
    to ``max_length`` (``lenTrunc``), the whole exchange up to ``total_timeout`` (``timeTrunc``)."""
    started = time.time()
    clock = time.monotonic()
    result = FetchResult(status=0, started=started, address=connection.address)
    if not await _opened(connection, connect_timeout, clock, result):
        return result
    # The exchange's own h11 state machine, allowed a head as long as the caps allow (h11's default stops at
    # 16 KiB and makes a longer head a malformed response); the caps keep it from ever being given more. A
    # kept connection's previous exchange ended complete (start_next_cycle below), so nothing of it is lost.
    connection.h11 = h11.Connection(our_role=h11.CLIENT, max_incomplete_event_size=header_max_bytes)
    caps = _ResponseCaps(header_max_bytes, header_max_lines, max_length)
    result.raw_request = _request_bytes(connection.h11, method, target, [("Host", host_header), *headers], body,
                                        http11)
    assert connection.writer is not None and connection.reader is not None
    spool = result.spool = ResponseSpool()
    reusable = False
    deadline = clock + total_timeout
    try:
        connection.writer.write(result.raw_request)
        reusable = await _receive(connection, result, caps, so_timeout, deadline, keeps_payload)
    except h11.RemoteProtocolError:
        # Keep reading what the server sends, within the same caps, until it closes or goes quiet, then
        # record it as received.
        result.is_malformed = True
        await _read_malformed(connection, spool, caps, so_timeout, deadline, result.annotations)
    except (OSError, ssl.SSLError, asyncio.IncompleteReadError):
        if result.status <= 0:
            result.status = CONNECTION_BROKEN
    if caps.cut == HEADER_TRUNC and result.status == 0:
        result.is_malformed = True  # a head h11 never saw end: the response is what the caps kept of it
    if result.is_malformed:
        _keep_as_received(result, spool, caps)
    if result.status < 0:
        result.close()
        result.spool = None
    result.duration_ms = int((time.monotonic() - clock) * 1000)
    if reusable and http11:
        try:
            connection.h11.start_next_cycle()
        except h11.LocalProtocolError:
            connection.close()
    else:
        connection.close()
    return result


async def _opened(connection: HttpConnection, connect_timeout: float, clock: float, result: FetchResult) -> bool:
    """Whether ``connection`` is open (opened now if it was not); if it cannot be, ``result`` says why."""
    try:
        if not connection.is_open:
            await connection.open(connect_timeout)
    except (TimeoutError, OSError) as exc:
        connection.close()
        # The connect timeout fired (wait_for's TimeoutError carries no errno), or the connection failed
        # after it. Not by the clock alone: uvloop's timers run on the loop's time, taken once per turn of the
        # loop, so a timeout may fire a little before time.monotonic() says it is due.
        timed_out = (isinstance(exc, TimeoutError) and exc.errno is None) \
            or time.monotonic() - clock >= connect_timeout
        result.status = TIMED_OUT if timed_out else CONNECT_FAILED
        result.duration_ms = int((time.monotonic() - clock) * 1000)
        return False
    return True


def _request_bytes(machine: h11.Connection, method: str, target: str, headers: list[tuple[str, str]],
                   body: bytes, http11: bool) -> bytes:
    """The request as sent: a GET, or ``method`` with ``body`` and its length."""
    if method == "GET":
        raw = machine.send(h11.Request(method="GET", target=target, headers=headers)) \
            + machine.send(h11.EndOfMessage())
    else:
        request = h11.Request(method=method, target=target, headers=[*headers, ("Content-Length", str(len(body)))])
        raw = machine.send(request) + machine.send(h11.Data(data=body)) + machine.send(h11.EndOfMessage())
    if not http11:
        # h11 speaks only HTTP/1.1 as a client; its request line is the one thing that differs, and its
        # response parsing (Content-Length, or read to close) serves an HTTP/1.0 exchange unchanged.
        raw = raw.replace(b" HTTP/1.1\r\n", b" HTTP/1.0\r\n", 1)
    return raw


async def _receive(connection: HttpConnection, result: FetchResult, caps: _ResponseCaps, so_timeout: float,
                   deadline: float, keeps_payload: Callable[[str], bool]) -> bool:
    """Read the response into ``result`` and its spool until it ends, the caps or the deadline cut it, or the
    connection fails; whether the connection may carry another exchange. h11's RemoteProtocolError (a
    malformed response) and the socket's errors are the caller's."""
    assert connection.h11 is not None and connection.reader is not None and result.spool is not None
    spool = result.spool
    got_response = False
    while True:
        event = connection.h11.next_event()
        if event is h11.NEED_DATA:
            if caps.cut:
                # the caps let no more in: what was kept is the response (headerTrunc, lenTrunc)
                result.annotations.append(caps.cut)
                return False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                result.annotations.append(TIME_TRUNC)
                return False
            try:
                async with asyncio.timeout(min(so_timeout, remaining)):
                    data = await connection.reader.read(READ_SIZE)
            except TimeoutError:
                if not got_response:
                    result.status = TIMED_OUT
                elif remaining <= so_timeout or time.monotonic() >= deadline:
                    # the whole exchange's time is up when it bounded this wait (see the connect timeout)
                    result.annotations.append(TIME_TRUNC)
                else:
                    # quiet for soTimeoutMs mid-response: the connection is lost and the URI retried
                    result.status = CONNECTION_BROKEN
                return False
            kept = caps.admit(data)
            spool.record_received(kept)
            if kept or not data:  # b"" tells h11 the connection closed: not for bytes the caps refused
                connection.h11.receive_data(kept)
            if not data and not got_response and not spool.raw_length:
                result.status = CONNECTION_BROKEN
                return False
            continue
        if isinstance(event, h11.InformationalResponse):
            continue
        if isinstance(event, h11.Response):
            got_response = True
            result.status = event.status_code
            result.headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in event.headers]
            is_chunked = any(name == b"transfer-encoding" and b"chunked" in value.lower()
                             for name, value in event.headers)
            header_length = caps.header_end if caps.header_end >= 0 else _header_end(spool)
            spool.start_payload(header_length, is_chunked, keeps_payload(result.header("content-type")))
        elif isinstance(event, h11.Data):
            spool.record_payload(event.data)
        elif isinstance(event, h11.EndOfMessage):
            return connection.h11.our_state is h11.DONE and connection.h11.their_state is h11.DONE
        elif isinstance(event, h11.ConnectionClosed):
            if not got_response:
                result.status = CONNECTION_BROKEN
            return False


async def _read_malformed(connection: HttpConnection, spool: ResponseSpool, caps: _ResponseCaps,
                          so_timeout: float, deadline: float, annotations: list[str]) -> None:
    """The rest of a response h11 refused, as received: read until the server closes or is quiet for
    ``so_timeout``, the caps let no more in, or the exchange's ``deadline`` passes (``timeTrunc``)."""
    assert connection.reader is not None
    while not caps.cut:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            annotations.append(TIME_TRUNC)
            return
        try:
            async with asyncio.timeout(min(so_timeout, remaining)):
                data = await connection.reader.read(READ_SIZE)
        except TimeoutError:
            if remaining <= so_timeout or time.monotonic() >= deadline:
                annotations.append(TIME_TRUNC)
            return
        except (OSError, ssl.SSLError):
            return  # the server went away mid-response: what came is the response
        if not data:
            return
        spool.record_received(caps.admit(data))
    annotations.append(caps.cut)


def _keep_as_received(result: FetchResult, spool: ResponseSpool, caps: _ResponseCaps) -> None:
    """A response h11 could not read whole (refused, or its head cut at the caps): its status from its status
    line, its payload whatever followed the head (nothing, when the head never ended)."""
    header_length = caps.header_end if caps.header_end >= 0 else _header_end(spool)
    if header_length < 0:
        header_length = spool.raw_length
    if result.status <= 0:
        result.status = _parse_status_line(b"".join(spool.raw.read_range(0, READ_SIZE)))
    if not result.headers:
        # the head was kept within the caps, so reading it whole is bounded by them
        result.headers = _lenient_headers(b"".join(spool.raw.read_range(0, header_length)))
    if not spool.payload_length:
        spool.payload_from_raw(header_length, spool.raw_length - header_length)
    spool.header_length = header_length


def _lenient_headers(head: bytes) -> list[tuple[str, str]]:
    """The "Name: value" lines of a head h11 refused (a bad line among them, or one never ended), as Heritrix's
    lenient parser reads them: the lines that are not headers are skipped, so the capture still has its
    Content-Type (crawl.log's MIME, link extraction) and its Location."""
    headers = []
    for line in head.split(b"\n")[1:]:  # after the status line
        name, colon, value = line.rstrip(b"\r").partition(b":")
        name = name.strip()
        if colon and name and not any(c in name for c in b" \t"):
            headers.append((name.decode("latin-1").lower(), value.strip().decode("latin-1")))
    return headers


def _with_cookie(headers: list[tuple[str, str]], cookie: str) -> list[tuple[str, str]]:
    """``headers`` with the job's ``cookie`` pairs added: to the Cookie header already there (a browser's, whose
    own pairs win), else as one (a request has one Cookie header, RFC 6265 §5.4)."""
    for index, (name, value) in enumerate(headers):
        if name.lower() == "cookie":
            present = {pair.split("=", 1)[0].strip() for pair in value.split(";")}
            added = [pair for pair in cookie.split("; ") if pair.split("=", 1)[0].strip() not in present]
            merged = "; ".join([value, *added]) if added else value
            return [*headers[:index], (name, merged), *headers[index + 1:]]
    return [*headers, ("Cookie", cookie)]


@dataclass(frozen=True)
class RequestSettings:
    """FetchHTTP's settings that shape a request and its limits (Heritrix's bean property names beside)."""

    user_agent: str
    operator_from: str                       # metadata.operatorFrom, sent as From
    accept_headers: tuple[tuple[str, str], ...]
    accept_compression: bool                 # acceptCompression
    send_connection_close: bool              # sendConnectionClose
    send_referer: bool                       # sendReferer
    use_http11: bool                         # useHTTP11
    so_timeout_seconds: float                # soTimeoutMs, also the connect timeout
    timeout_seconds: float                   # timeoutSeconds, the whole exchange
    max_length_bytes: int                    # maxLengthBytes, 0 for no limit
    # the engine's caps on a response's head (harvestsuite.crawler.responseHeaderMaxBytes, ...MaxLines)
    header_max_bytes: int = DEFAULT_HEADER_MAX_BYTES
    header_max_lines: int = DEFAULT_HEADER_MAX_LINES

    @classmethod
    def from_config(cls, config: CrawlConfig, bounds: ResponseBounds | None = None) -> RequestSettings:
        bounds = bounds or ResponseBounds()
        return cls(user_agent=config.user_agent, operator_from=config.operator_from,
                   accept_headers=config.accept_headers, accept_compression=config.accept_compression,
                   send_connection_close=config.send_connection_close, send_referer=config.send_referer,
                   use_http11=config.use_http11, so_timeout_seconds=config.so_timeout_ms / 1000,
                   timeout_seconds=config.timeout_seconds, max_length_bytes=config.max_length_bytes,
                   header_max_bytes=bounds.header_max_bytes, header_max_lines=bounds.header_max_lines)


class Fetcher:
    """Fetches URIs over one kept connection per host:port, with the request headers Heritrix sends.

    With a ``cookies`` store (the template's cookie store bean) each request carries the cookies its URL
    matches and each response's Set-Cookie values are kept; with an ``authentication`` (the credential
    store's HTTP credentials) a 401 of a server it has credentials for is answered once, and the answer that
    worked goes with the server's later requests (harvester/engine/fetching/credentials.py). The 401 that was answered
    is not recorded: the authenticated exchange is the URI's capture. Without either, a fetch is one
    exchange."""

    def __init__(self, settings: RequestSettings, keeps_payload: Callable[[str], bool],
                 cookies: CookieStore | None = None, authentication: HttpAuthentication | None = None,
                 destinations: DestinationPolicy | None = None) -> None:
        self.settings = settings
        self.destinations = destinations
        self.keeps_payload = keeps_payload
        self.cookies = cookies
        self.authentication = authentication
        self.connections: dict[str, HttpConnection] = {}

    def close(self) -> None:
        for connection in self.connections.values():
            connection.close()
        self.connections.clear()

    def request_headers(self, url: str, via: str, is_prerequisite: bool) -> list[tuple[str, str]]:
        """The headers FetchHTTPRequest.configureRequestHeaders sends, under the same settings
        (heritrix3 modules/src/main/java/org/archive/modules/fetcher/FetchHTTPRequest.java)."""
        settings = self.settings
        headers = [("User-Agent", settings.user_agent)]
        if settings.accept_compression:
            headers.append(("Accept-Encoding", "gzip,deflate"))
        if settings.operator_from:
            headers.append(("From", settings.operator_from))
        if settings.send_connection_close:
            headers.append(("Connection", "close"))
        # No Referer for a prerequisite, nor from an https page to an http one (RFC 2616 §15.1.3).
        if (settings.send_referer and via and not is_prerequisite
                and not (via.startswith("https:") and url.startswith("http:"))):
            headers.append(("Referer", via))
        headers.extend(settings.accept_headers)
        return headers

    async def fetch(self, url: str, via: str, is_prerequisite: bool, address: str, method: str = "GET",
                    body: bytes = b"", headers: list[tuple[str, str]] | None = None) -> FetchResult:
        """GET ``url`` from ``address`` (or POST ``body``, form-encoded); the caller closes the result.

        With ``headers`` (a browser's request, through the browser crawler's proxy) those are sent instead of
        Heritrix's, on a connection of the exchange's own (a browser asks a server several things at once),
        with the job's cookies and credentials added as for any fetch."""
        target = urlsplit(url)
        host = target.hostname or ""
        port = target.port or (443 if target.scheme == "https" else 80)
        authority = f"{host}:{port}"
        if self.destinations is not None and self.destinations.refusal(host, address) is not None:
            # the chain refuses such a host before its fetch; this is the last guard, never a connection
            return FetchResult(status=DESTINATION_REFUSED, started=time.time(), address=address)
        own_connection = headers is not None
        connection = None if own_connection else self.connections.get(authority)
        if connection is not None and connection.address != address:
            # the host was looked up again and moved: its kept connection goes to the address it had
            connection.close()
            connection = None
        if connection is None:
            connection = HttpConnection(address, port, host if target.scheme == "https" else None,
                                        self.destinations, host)
            if not own_connection:
                self.connections[authority] = connection
        try:
            return await self._exchange(connection, url, target, host, port, method, body, headers, via,
                                        is_prerequisite)
        finally:
            if own_connection:
                connection.close()

    async def _exchange(self, connection: HttpConnection, url: str, target: SplitResult, host: str, port: int,
                        method: str, body: bytes, given_headers: list[tuple[str, str]] | None, via: str,
                        is_prerequisite: bool) -> FetchResult:
        path = (target.path or "/") + (f"?{target.query}" if target.query else "")
        host_header = host if port in (80, 443) else f"{host}:{port}"
        settings = self.settings
        if given_headers is not None:
            headers = list(given_headers)
        else:
            headers = self.request_headers(url, via, is_prerequisite)
            if method != "GET":
                headers.append(("Content-Type", "application/x-www-form-urlencoded"))
        cookies, authentication = self.cookies, self.authentication
        if cookies is None and authentication is None:
            return await fetch(connection, host_header, path, headers, settings.so_timeout_seconds,
                               settings.so_timeout_seconds, settings.timeout_seconds, settings.max_length_bytes,
                               http11=settings.use_http11, keeps_payload=self.keeps_payload, method=method,
                               body=body, header_max_bytes=settings.header_max_bytes,
                               header_max_lines=settings.header_max_lines)
        # the server (Heritrix's CrawlServer name) when the credential store has credentials for it, else ""
        server = server_name(url) if authentication is not None else ""
        if server and not authentication.covers(server):
            server = ""
        answer = authentication.authorization(server, method, path) if server else None
        for attempt in (1, 2):
            sent = list(headers)
            if cookies is not None:
                cookie = cookies.header_for(url, host)
                if cookie:
                    sent = _with_cookie(sent, cookie)
            if answer:
                sent.append(("Authorization", answer))
            result = await fetch(connection, host_header, path, sent, settings.so_timeout_seconds,
                                 settings.so_timeout_seconds, settings.timeout_seconds, settings.max_length_bytes,
                                 http11=settings.use_http11, keeps_payload=self.keeps_payload, method=method,
                                 body=body, header_max_bytes=settings.header_max_bytes,
                                 header_max_lines=settings.header_max_lines)
            if cookies is not None and result.status > 0:
                cookies.take(url, host, result.header_values("set-cookie"))
            if not server:
                return result
            if result.status != 401 or attempt == 2:
                authentication.outcome(server, result.status)
                return result
            answer = authentication.answer(server, method, path, result.header_values("www-authenticate"))
            if answer is None:
                return result
            result.close()
        raise AssertionError("unreachable: the second attempt returns")
