"""The browser crawler's recording proxy: the HTTP(S) proxy the crawl's Chromium sends every request through.

It takes one request per browser connection (absolute-form for http, a CONNECT tunnel for https, answered
with a self-signed certificate the browser is told to accept), hands it to the exchange handler of the
page being loaded (harvester/engine/fetching/browserfetch.py), which fetches it with the engine's fetch (so the
``--hosts`` file, timeouts and length limits apply) and records it, and relays the response as received,
its header block marked ``Connection: close``. A page's requests carry its visit's token in VISIT_HEADER
(set on the page by the browser, taken off here before anything is sent on); a request without the token
of a page loading now (the browser's own traffic: updates, time, metrics) is answered 503 and fetches
nothing: nothing reaches the browser, or leaves the crawler, except through a page's exchanges.

It parses requests (h11) and copies bytes; it records nothing itself and knows no WARC, log or frontier.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import h11

from harvester.engine.fetching.fetch import FetchResult
from harvester.engine.rest.tls import make_self_signed, server_context

log = logging.getLogger(__name__)

READ_SIZE = 65536
VISIT_HEADER = "x-harvestsuite-visit"
REQUEST_HEAD_TIMEOUT_SECONDS = 30.0
# Headers of the browser-to-proxy hop that are not sent on (RFC 9110 §7.6.1), and those the fetch sets itself.
_NOT_FORWARDED = frozenset({"host", "connection", "proxy-connection", "keep-alive", "proxy-authorization",
                            "proxy-authenticate", "te", "trailer", "upgrade", "transfer-encoding",
                            "content-length", VISIT_HEADER})


@dataclass(frozen=True)
class ProxyRequest:
    """One request of the browser's: method, absolute URL, the headers to send on, the body."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


@dataclass(frozen=True)
class ProxyAnswer:
    """What a handler gives back: the fetch's result (None: nothing fetched, answered 502) and whether the
    proxy closes it after relaying (False: the handler keeps it, as a page keeps its own document)."""

    result: FetchResult | None
    proxy_closes: bool = True


ExchangeHandler = Callable[[ProxyRequest], Awaitable[ProxyAnswer]]


async def _read_request(reader: asyncio.StreamReader) -> tuple[h11.Request, bytes] | None:
    """The next request on ``reader`` with its body; None when the browser closed without one."""
    connection = h11.Connection(our_role=h11.SERVER)
    request: h11.Request | None = None
    body = bytearray()
    async with asyncio.timeout(REQUEST_HEAD_TIMEOUT_SECONDS):
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                connection.receive_data(await reader.read(READ_SIZE))
            elif isinstance(event, h11.Request):
                request = event
                if event.method == b"CONNECT":
                    return request, b""
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return (request, bytes(body)) if request is not None else None
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return None


def _forwarded(request: h11.Request) -> tuple[tuple[str, str], ...]:
    return tuple((name.decode("latin-1"), value.decode("latin-1")) for name, value in request.headers
                 if name.decode("latin-1").lower() not in _NOT_FORWARDED)


def _closing_head(head: bytes) -> bytes:
    """The response's header block with its connection headers replaced by ``Connection: close``: the proxy
    serves one exchange per browser connection."""
    lines = head.rstrip(b"\r\n").split(b"\r\n")
    kept = [line for line in lines[1:]
            if line.split(b":", 1)[0].strip().lower() not in (b"connection", b"keep-alive", b"proxy-connection")]
    return b"\r\n".join([lines[0], *kept, b"Connection: close"]) + b"\r\n\r\n"


def _visit_token(request: h11.Request) -> str:
    for name, value in request.headers:
        if name.decode("latin-1").lower() == VISIT_HEADER:
            return value.decode("latin-1")
    return ""


class RecordingProxy:
    """Listens on 127.0.0.1 (a free port). ``handlers`` holds the exchange handler of each page loading now, by
    its visit token. ``start`` and ``close`` run on the crawl's event loop; ``close`` ends the exchanges
    still in flight, so none records after the crawl closed its WARC."""

    def __init__(self) -> None:
        self.handlers: dict[str, ExchangeHandler] = {}
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task] = set()
        self._certificate_dir: tempfile.TemporaryDirectory[str] | None = None
        self._tls: ssl.SSLContext | None = None

    async def start(self) -> int:
        """Listen; the port."""
        self._certificate_dir = tempfile.TemporaryDirectory(prefix="recording-proxy-")
        cert, key = Path(self._certificate_dir.name, "proxy.pem"), Path(self._certificate_dir.name, "proxy.key")
        make_self_signed(cert, key, ["localhost"])
        self._tls = server_context(cert, key)
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=READ_SIZE * 4)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await self._server.wait_closed()
            self._server = None
        if self._certificate_dir is not None:
            self._certificate_dir.cleanup()
            self._certificate_dir = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._exchange(reader, writer)
        except (OSError, TimeoutError, h11.ProtocolError, ssl.SSLError, asyncio.IncompleteReadError) as exc:
            # the browser gave up on the connection, or sent what is not HTTP: nothing to record, and the
            # page's own outcome is what the crawl reports
            log.debug("recording proxy: a browser connection ended without an exchange: %r", exc)
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        taken = await _read_request(reader)
        if taken is None:
            return
        request, body = taken
        if request.method == b"CONNECT":
            authority = request.target.decode("latin-1")
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await writer.start_tls(self._tls)
            taken = await _read_request(reader)
            if taken is None:
                return
            request, body = taken
            host, _, port = authority.rpartition(":")
            origin = f"https://{host}" if port == "443" else f"https://{authority}"
            url = origin + request.target.decode("latin-1")
        else:
            url = request.target.decode("latin-1")
            if not url.startswith(("http://", "https://")):
                await self._answer(writer, 400, "the proxy takes absolute http URLs and CONNECT only")
                return
        handler = self.handlers.get(_visit_token(request))
        if handler is None:
            await self._answer(writer, 503, "not a request of a page loading: nothing is fetched outside a page")
            return
        answer = await handler(ProxyRequest(request.method.decode("ascii"), url, _forwarded(request), body))
        result = answer.result
        try:
            if result is None or result.spool is None:
                await self._answer(writer, 502, f"not fetched (status {result.status if result else 'none'})")
                return
            spool = result.spool
            if spool.header_length:
                writer.write(_closing_head(spool.head()))
                pieces = spool.raw.read_range(spool.header_length, spool.raw_length - spool.header_length)
            else:
                pieces = spool.raw.read_range(0, spool.raw_length)
            for piece in pieces:
                writer.write(piece)
                await writer.drain()
            await writer.drain()
        finally:
            if result is not None and answer.proxy_closes:
                result.close()

    @staticmethod
    async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
        body = text.encode() + b"\n"
        reason = {400: "Bad Request", 502: "Bad Gateway", 503: "Service Unavailable"}[status]
        writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                     "Connection: close\r\n\r\n".encode() + body)
        await writer.drain()
