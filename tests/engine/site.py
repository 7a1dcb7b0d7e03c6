"""A local test web site for the crawl engine: real HTTP on 127.0.0.1, several named hosts told apart by
the Host header, with the resources a crawl must cope with.

Every response is written as raw bytes and kept in ``sent`` (per host and request target), so tests can
compare WARC records with exactly what went over the wire. The site is deterministic: the same host and
path give the same bytes, except for the resources that misbehave on purpose.

Paths (the same on every host):

- ``/robots.txt``                     ``Disallow: /private/``
- ``/``, ``/page/N`` (1..pages)       HTML linking onwards, images, CSS, srcset, a meta refresh
- ``/img/N.png``                      a small PNG-like binary, different per host
- ``/dup.bin``                        identical bytes on every host (deduplication)
- ``/big.bin``                        300,000 bytes (length truncation)
- ``/huge.bin``                       HUGE_SIZE bytes sent in 1 MiB pieces, only its head kept in ``sent``
                                      (the engine's memory must not grow with a response's size)
- ``/style.css``                      CSS with ``url()`` references
- ``/redir/N``                        301 to ``/page/N``
- ``/missing/N``                      404
- ``/private/secret.html``            forbidden by robots.txt
- ``/trap/N/``                        a calendar-like trap, links to ``/trap/N+1/`` forever
- ``/chunked.html``                   chunked transfer encoding to an HTTP/1.1 request (to HTTP/1.0, as a
                                      server must, a plain body read to the connection's close)
- ``/gzip.html``                      gzip content encoding
- ``/br-bomb.html``                   about 800 bytes of br that decode to 1 GiB of zeros (a compression bomb)
- ``/stall.bin``                      announces 100,000 bytes, sends 1,000, then stalls
- ``/stall-once.bin``                 stalls as ``/stall.bin`` the first time, sends all 100,000 bytes after
- ``/malformed``                      a header line h11 rejects
- ``/hostile/…``                      servers that never stop (the response bounds), their bytes counted in
                                      ``hostile_sent``, only their first piece kept in ``sent``:
                                      ``endless-header-lines`` (a header line after another, forever),
                                      ``endless-header-line`` (one header line that never ends),
                                      ``malformed-endless`` (a header line h11 rejects, then a body forever),
                                      ``malformed-empty`` (a header line h11 rejects and no body),
                                      ``long-head.html`` (a head of LONG_HEAD_LINES lines, over h11's 16 KiB
                                      default, under the engine's caps, sent 1 KiB at a time, and a page
                                      linking ``/page/3``),
                                      ``interim.html`` (a 100 Continue before the page)
- ``/hop/``                           links to ``/hop/flaky`` and to ``/hop/x1`` on the second host
- ``/hop/x1``, ``/hop/x2``            a chain reaching the first host's ``/hop/target`` at hop 3
- ``/hop/flaky``                      drops the connection the first two times, then links to ``/hop/target``
                                      (hop 2), so the longer path is found first: the shortest-path test

What today's sites need (tests/engine/test_process_sessions.py), linked from ``/modern/`` only:

- ``/modern/`` (and MODERN_HOST's ``/``) links to the areas below; links only in an inline script, an onclick
                                      handler and ``/modern/app.js``; strings that only look like URLs
- ``/modern/consent``                 sets the cookie ``consent=granted`` (path /modern), links ``/modern/gated``
- ``/modern/gated``                   the article and a link to ``/modern/behind-the-wall.html`` with the
                                      cookie; a consent wall without it
- ``/basic/``, ``/basic/inner.html``  HTTP Basic authentication (realm BASIC_REALM), 401 without it
- ``/digest/``, ``/digest/inner.html`` HTTP Digest authentication (realm DIGEST_REALM, qop auth)
- ``/members/login``                  a login form; its POST with LOGIN_FORM sets the session cookie
- ``/members/``, ``/members/article.html``  the members' pages with the session cookie, a login prompt without
- ``/sitemap.xml``, ``/sitemap-index.xml`` -> ``/sitemap-archive.xml.gz`` (gzip): the only links to
                                      ``/only-in-sitemap/…``; MODERN_HOST's robots.txt names the first two
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import socket
import threading
import time
import urllib.parse
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import brotli

from harvester.digestauth import digest_response, parse_auth_params

DEFAULT_HOSTS = ("www.kulturarv.dk", "images.kulturarv.dk", "www.bibliotek.no", "www.økologi.dk")
STALL_ANNOUNCED = 100_000
STALL_SENT = 1_000
BIG_SIZE = 300_000
HUGE_SIZE = 50 * 1024 * 1024
HUGE_PIECE = 1024 * 1024
DUP_BODY = hashlib.sha256(b"dup").digest() * 1000  # 32,000 identical bytes everywhere
LONG_HEAD_LINES = 40  # of 600 bytes each: 24 KiB of head
MODERN_HOST = "www.moderne.dk"
BASIC_REALM, BASIC_USER, BASIC_PASSWORD = "Arkivet", "arkiv", "basic-hemmelig"
DIGEST_REALM, DIGEST_USER, DIGEST_PASSWORD = "Digest-arkivet", "arkiv", "digest-hemmelig"
LOGIN_FORM = {"brugernavn": "arkiv", "kodeord": "form-hemmelig", "autologin": "ja"}
SESSION_COOKIE = "medlem=logget-ind"


def huge_pieces() -> Iterator[bytes]:
    """The body of ``/huge.bin``: HUGE_SIZE bytes, a different 1 MiB piece each time, made as they are sent."""
    for number in range(HUGE_SIZE // HUGE_PIECE):
        yield hashlib.sha256(number.to_bytes(4, "big")).digest() * (HUGE_PIECE // 32)


@functools.cache
def br_bomb() -> bytes:
    """About 800 bytes of br that decode to 1 GiB of zeros, made without holding the gibibyte (a second)."""
    packer = brotli.Compressor(quality=5, lgwin=24)
    zeros = bytes(1 << 20)
    return b"".join(packer.process(zeros) for _ in range(1024)) + packer.finish()


def _chain_pieces(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def punycode(host: str) -> str:
    return host.encode("idna").decode("ascii") if not host.isascii() else host


class TestSite:
    """The server; ``start()`` binds a free loopback port, ``stop()`` closes everything."""

    __test__ = False  # not a pytest class

    def __init__(self, hosts: tuple[str, ...] = DEFAULT_HOSTS, pages: int = 8, stall_seconds: float = 30.0,
                 response_delay: float = 0.0):
        self.host_names = tuple(punycode(h) for h in hosts)
        # a slow site: every response but robots.txt waits this long after its request is logged, so a
        # crawl always has fetches in flight
        self.response_delay = response_delay
        self.hosts = {name: "127.0.0.1" for name in self.host_names}
        self.pages = pages
        self.stall_seconds = stall_seconds
        self.sent: dict[tuple[str, str], list[bytes]] = defaultdict(list)
        self.requests: list[tuple[str, str]] = []
        self.request_heads: list[bytes] = []  # each request's line and headers, as received
        self.request_bodies: list[tuple[str, str, bytes]] = []  # (host, target, body) of each request with one
        self._flaky_count: dict[str, int] = defaultdict(int)
        self.hostile_sent: dict[tuple[str, str], int] = defaultdict(int)  # bytes sent of each /hostile/ answer
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self.port = 0

    # -- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> TestSite:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(128)
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        thread = threading.Thread(target=self._accept_loop, name="test-site", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        if self._listener is not None:
            self._listener.close()

    def __enter__(self) -> TestSite:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def write_hosts_file(self, path: Path) -> Path:
        """Write a ``--hosts`` file (one "name address" per line); IDNs in Unicode, as an operator would."""
        lines = ["# test site names, all on loopback"]
        for name, address in self.hosts.items():
            unicode_name = name.encode("ascii").decode("idna") if name.startswith("xn--") or ".xn--" in name \
                else name
            lines.append(f"{unicode_name} {address}")
        Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
        return Path(path)

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{punycode(host)}:{self.port}{path}"

    def responses_for(self, host: str, target: str) -> list[bytes]:
        with self._lock:
            return list(self.sent.get((punycode(host), target), []))

    def request_count(self, host: str, target: str) -> int:
        with self._lock:
            return self.requests.count((punycode(host), target))

    # -- serving --------------------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._serve_connection, args=(connection,), daemon=True)
            thread.start()

    def _serve_connection(self, connection: socket.socket) -> None:
        connection.settimeout(10)
        buffer = b""
        with connection:
            while not self._stop.is_set():
                while b"\r\n\r\n" not in buffer:
                    try:
                        data = connection.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                request_line = lines[0].split(" ")
                target = request_line[1] if len(request_line) > 1 else "/"
                is_http10 = request_line[-1] == "HTTP/1.0"
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                host = headers.get("host", "").rsplit(":", 1)[0].lower()
                body_length = int(headers.get("content-length", "0") or 0)
                while len(buffer) < body_length:
                    try:
                        data = connection.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    buffer += data
                body, buffer = buffer[:body_length], buffer[body_length:]
                with self._lock:
                    self.requests.append((host, target))
                    self.request_heads.append(head)
                    if body:
                        self.request_bodies.append((host, target, body))
                if self.response_delay and target != "/robots.txt" and self._stop.wait(self.response_delay):
                    return
                request = (request_line[0], headers, body)
                keep_open = self._respond(connection, host, target, is_http10, request)
                if not keep_open or is_http10 or headers.get("connection", "").lower() == "close":
                    return

    def _send(self, connection: socket.socket, host: str, target: str, raw: bytes) -> None:
        with self._lock:
            self.sent[(host, target)].append(raw)
        connection.sendall(raw)

    def _respond(self, connection: socket.socket, host: str, target: str, is_http10: bool = False,
                 request: tuple[str, dict[str, str], bytes] = ("GET", {}, b"")) -> bool:
        """Answer one request (its method, headers and body in ``request``); False closes the connection."""
        path = target.split("?", 1)[0]
        if path == "/stall-once.bin":
            with self._lock:
                self._flaky_count[f"{host}{path}"] += 1
                first = self._flaky_count[f"{host}{path}"] == 1
            if not first:
                head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                        f"Content-Length: {STALL_ANNOUNCED}\r\n\r\n").encode()
                self._send(connection, host, target, head + b"s" * STALL_ANNOUNCED)
                return False
            path = "/stall.bin"
        if path == "/stall.bin":
            head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                    f"Content-Length: {STALL_ANNOUNCED}\r\n\r\n").encode()
            self._send(connection, host, target, head + b"s" * STALL_SENT)
            self._stop.wait(self.stall_seconds)
            return False
        if path == "/huge.bin":
            head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                    f"Content-Length: {HUGE_SIZE}\r\n\r\n").encode()
            self._send(connection, host, target, head)
            for piece in huge_pieces():
                connection.sendall(piece)
            return True
        if path == "/hop/flaky":
            with self._lock:
                self._flaky_count[host] += 1
                attempt = self._flaky_count[host]
            if attempt <= 2:
                return False  # dropped without a response: a network error the crawler must retry
        if path == "/malformed":
            raw = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nBad Header Line\r\nContent-Length: 5\r\n\r\nhello"
            self._send(connection, host, target, raw)
            return False
        if path.startswith("/hostile/"):
            return self._hostile(connection, host, target, path[len("/hostile/"):])
        if path == "/chunked.html":
            body = self._page_html(host, 0, extra='<a href="/page/1">one</a>').encode()
            if is_http10:
                self._send(connection, host, target, b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                           b"Connection: close\r\n\r\n" + body)
                return False
            chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:50], body[50:200], body[200:]))
            head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
            raw = head + chunks + b"0\r\n\r\n"
            self._send(connection, host, target, raw)
            return True
        modern = self._modern(host, path, target, *request)
        status, content_type, body, extra_headers = modern if modern is not None else self._resource(host, path)
        reason = {200: "OK", 301: "Moved Permanently", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
                  500: "Internal Server Error"}[status]
        head = f"HTTP/1.1 {status} {reason}\r\nServer: harvestsuite-test-site\r\nContent-Type: {content_type}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in extra_headers)
        head += f"Content-Length: {len(body)}\r\n\r\n"
        self._send(connection, host, target, head.encode("latin-1") + body)
        return True

    def _hostile(self, connection: socket.socket, host: str, target: str, name: str) -> bool:
        """The resources of a server that does not stop: each sends until the client hangs up (a send
        fails) or the site stops."""
        if name == "long-head.html":
            body = b'<html><body><a href="/page/3">three</a></body></html>'
            head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
            head += b"".join(b"X-Filler-%03d: %s\r\n" % (number, b"f" * 584) for number in range(LONG_HEAD_LINES))
            raw = head + b"Content-Length: %d\r\n\r\n" % len(body) + body
            with self._lock:
                self.sent[(host, target)].append(raw)
            # in pieces, as a head this long comes over a real network: the client reads it part by part
            for start in range(0, len(raw), 1024):
                connection.sendall(raw[start:start + 1024])
                if self._stop.wait(0.005):
                    return False
            return True
        if name == "interim.html":
            body = b'<html><body><a href="/page/4">four</a></body></html>'
            raw = (b"HTTP/1.1 100 Continue\r\nX-Interim: yes\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self._send(connection, host, target, raw)
            return True
        if name == "malformed-empty":
            self._send(connection, host, target, b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nBad Header Line\r\n"
                       b"Content-Length: 0\r\n\r\n")
            return False
        if name == "endless-header-lines":
            first = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
            pieces = (b"".join(b"X-Endless-%09d: %s\r\n" % (number * 100 + line, b"e" * 40) for line in range(100))
                      for number in range(10 ** 8))
        elif name == "endless-header-line":
            first = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Endless: "
            pieces = (b"e" * 65536 for _ in range(10 ** 8))
        elif name == "malformed-endless":
            first = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nBad Header Line\r\n\r\n"
            pieces = (b"<p>" + b"b" * 65533 for _ in range(10 ** 8))
        else:
            return False
        with self._lock:
            self.sent[(host, target)].append(first)
        for piece in _chain_pieces(first, pieces):
            if self._stop.is_set():
                return False
            try:
                connection.sendall(piece)
            except OSError:
                return False  # the client hung up: the end a hostile server waits for
            with self._lock:
                self.hostile_sent[(host, target)] += len(piece)
        return False

    def _resource(self, host: str, path: str) -> tuple[int, str, bytes, list[tuple[str, str]]]:
        if path == "/robots.txt":
            return 200, "text/plain", b"User-agent: *\nDisallow: /private/\n", []
        if path == "/":
            return 200, "text/html", self._page_html(host, 0).encode(), []
        if path.startswith("/page/"):
            number = _number(path[len("/page/"):])
            if 1 <= number <= self.pages:
                return 200, "text/html", self._page_html(host, number).encode(), []
        if path.startswith("/img/") and path.endswith(".png"):
            number = _number(path[len("/img/"):-len(".png")])
            body = b"\x89PNG\r\n\x1a\n" + hashlib.sha256(f"{host}/{number}".encode()).digest() * 40
            return 200, "image/png", body, []
        if path == "/dup.bin":
            return 200, "application/octet-stream", DUP_BODY, []
        if path == "/big.bin":
            return 200, "application/octet-stream", bytes(range(256)) * (BIG_SIZE // 256) + b"x" * (BIG_SIZE % 256), []
        if path == "/style.css":
            return 200, "text/css", b"body { background: url('/img/90.png'); }\n@import url(\"/img/91.png\");\n", []
        if path == "/gzip.html":
            body = gzip.compress(self._page_html(host, 0, extra='<a href="/page/2">two</a>').encode(), mtime=0)
            return 200, "text/html", body, [("Content-Encoding", "gzip")]
        if path == "/br-bomb.html":
            return 200, "text/html", br_bomb(), [("Content-Encoding", "br")]
        if path.startswith("/redir/"):
            return 301, "text/html", b"moved", [("Location", f"/page/{_number(path[len('/redir/'):])}")]
        if path == "/qa/page.html":
            # for the QA report: an image out of scope (on another host, which transclusion would take, but
            # with a pathological path, which NetarchiveSuite's templates reject) and a style sheet that errors
            other = self.host_names[2] if len(self.host_names) > 2 else self.host_names[-1]
            return 200, "text/html", (f'<html><head><link rel="stylesheet" href="/qa/broken.css"></head><body>'
                                      f'<img src="http://{other}:{self.port}/img/x/x/x/x/x/5.png"></body></html>'
                                      ).encode(), []
        if path == "/qa/broken.css":
            return 500, "text/css", b"/* the server failed */", []
        if path == "/private/secret.html":
            return 200, "text/html", b"<html><body>robots forbid this</body></html>", []
        if path.startswith("/trap/"):
            number = _number(path.strip("/").split("/")[-1])
            return 200, "text/html", f'<html><a href="/trap/{number + 1}/">next</a></html>'.encode(), []
        if path == "/hop/":
            chain = f"http://{self.host_names[1]}:{self.port}/hop/x1"
            return 200, "text/html", f'<html><a href="/hop/flaky">f</a> <a href="{chain}">1</a></html>'.encode(), []
        if path == "/hop/x1":
            return 200, "text/html", b'<html><a href="/hop/x2">2</a></html>', []
        if path == "/hop/x2":
            target = f"http://{self.host_names[0]}:{self.port}/hop/target"
            return 200, "text/html", f'<html><a href="{target}">t</a></html>'.encode(), []
        if path == "/hop/flaky":
            return 200, "text/html", b'<html><a href="/hop/target">t</a></html>', []
        if path == "/hop/target":
            return 200, "text/html", b'<html><a href="/hop/beyond">b</a></html>', []
        if path == "/hop/beyond":
            return 200, "text/html", b"<html>beyond</html>", []
        return 404, "text/html", b"<html><body>not found</body></html>", []

    def _modern(self, host: str, path: str, target: str, method: str, headers: dict[str, str], body: bytes
                ) -> tuple[int, str, bytes, list[tuple[str, str]]] | None:
        """The resources of today's sites (see the module's docstring); None for any other path."""
        cookies = headers.get("cookie", "")
        base = f"http://{host}:{self.port}"
        if path == "/robots.txt" and host == MODERN_HOST:
            return 200, "text/plain", (f"User-agent: *\nDisallow: /private/\nSitemap: {base}/sitemap.xml\n"
                                       "Sitemap: /sitemap-index.xml\n").encode(), []
        if path == "/modern/" or (path == "/" and host == MODERN_HOST):
            return 200, "text/html", (
                b'<html><head><title>today</title><script src="/modern/app.js"></script>'
                b'<script>var next = "/modern/from-inline-script.html"; var kind = "text/html";'
                b' var version = "3.5.0"; var item = "li.selected";</script></head><body>\n'
                b'<a href="/modern/consent">consent</a> <a href="/basic/">basic</a> <a href="/digest/">digest</a>\n'
                b'<a href="/members/">members</a>\n'
                b'<button onclick="window.location=\'/modern/from-onclick.html\'">go</button>\n'
                b"</body></html>\n"), []
        if path == "/modern/app.js":
            return 200, "application/javascript", (
                b'function go() { document.location = "/modern/from-script-file.html"; }\n'
                b'var ajax = "Microsoft.XMLHTTP";\n'), []
        if path.startswith("/modern/from-") or path.startswith("/only-in-sitemap/") \
                or path == "/modern/behind-the-wall.html":
            return 200, "text/html", f"<html><body>{path} reached</body></html>".encode(), []
        if path == "/modern/consent":
            return 200, "text/html", b'<html><body><a href="/modern/gated">the article</a></body></html>', [
                ("Set-Cookie", "consent=granted; Path=/modern; HttpOnly")]
        if path == "/modern/gated":
            if "consent=granted" in cookies:
                return 200, "text/html", (b'<html><body><p>the gated article</p>'
                                          b'<a href="/modern/behind-the-wall.html">more</a></body></html>'), []
            return 200, "text/html", b"<html><body>consent wall: accept cookies to read on</body></html>", []
        if path in ("/basic/", "/basic/inner.html"):
            expected = "Basic " + base64.b64encode(f"{BASIC_USER}:{BASIC_PASSWORD}".encode()).decode()
            if headers.get("authorization") != expected:
                return 401, "text/html", b"<html>who are you?</html>", [
                    ("WWW-Authenticate", f'Basic realm="{BASIC_REALM}"')]
            return 200, "text/html", (f"<html><body>basic area {path} "
                                      '<a href="/basic/inner.html">inner</a></body></html>').encode(), []
        if path in ("/digest/", "/digest/inner.html"):
            if not self._digest_accepts(method, target, headers.get("authorization", "")):
                return 401, "text/html", b"<html>who are you?</html>", [
                    ("WWW-Authenticate", f'Digest realm="{DIGEST_REALM}", qop="auth", nonce="{self._nonce()}", '
                                         'opaque="arkiv"')]
            return 200, "text/html", (f"<html><body>digest area {path} "
                                      '<a href="/digest/inner.html">inner</a></body></html>').encode(), []
        if path == "/members/login":
            if method == "POST":
                if dict(urllib.parse.parse_qsl(body.decode())) == LOGIN_FORM:
                    return 200, "text/html", b'<html><body>welcome <a href="/members/">on</a></body></html>', [
                        ("Set-Cookie", f"{SESSION_COOKIE}; Path=/")]
                return 403, "text/html", b"<html>wrong password</html>", []
            return 200, "text/html", (b'<html><body><form method="post" action="/members/login">'
                                      b'<input name="brugernavn"><input name="kodeord" type="password">'
                                      b'</form></body></html>'), []
        if path in ("/members/", "/members/article.html"):
            if SESSION_COOKIE in cookies:
                return 200, "text/html", (f"<html><body>members only: {path} "
                                          '<a href="/members/article.html">article</a></body></html>').encode(), []
            return 200, "text/html", b'<html><body>please <a href="/members/login">log in</a></body></html>', []
        if path == "/sitemap.xml":
            return 200, "application/xml", _urlset([f"{base}/only-in-sitemap/plain.html"]), []
        if path == "/sitemap-index.xml":
            return 200, "text/xml", (
                '<?xml version="1.0" encoding="UTF-8"?>\n'
                '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                f"<sitemap><loc>{base}/sitemap-archive.xml.gz</loc></sitemap></sitemapindex>\n").encode(), []
        if path == "/sitemap-archive.xml.gz":
            return 200, "application/x-gzip", gzip.compress(
                _urlset([f"{base}/only-in-sitemap/from-gzip.html", f"{base}/only-in-sitemap/archive.html"]),
                mtime=0), []
        return None

    def _nonce(self) -> str:
        return hashlib.sha256(f"nonce-{self.port}".encode()).hexdigest()[:32]

    def _digest_accepts(self, method: str, target: str, authorization: str) -> bool:
        scheme, params = parse_auth_params(authorization) if authorization else ("", {})
        if scheme.lower() != "digest" or params.get("uri") != target or params.get("nonce") != self._nonce():
            return False
        expected = digest_response(user=DIGEST_USER, realm=DIGEST_REALM, password=DIGEST_PASSWORD, method=method,
                                   uri=target, nonce=params["nonce"], nc=params.get("nc"),
                                   cnonce=params.get("cnonce"), qop=params.get("qop"))
        return params.get("username") == DIGEST_USER and params.get("response") == expected

    def _page_html(self, host: str, number: int, extra: str = "") -> str:
        onward = [n for n in (number + 1, 2 * number + 2) if 1 <= n <= self.pages]
        links = "".join(f'<a href="/page/{n}">page {n}</a>\n' for n in onward)
        others = "".join(f'<a href="http://{other}:{self.port}/">{other}</a>\n'
                         for other in self.host_names if other != host)
        index_only = ""
        if number == 0:
            index_only = (
                '<a href="/redir/3">redirect</a>\n<a href="/missing/1">gone</a>\n'
                '<a href="/private/secret.html">private</a>\n<a href="/trap/1/">calendar</a>\n'
                '<a href="/chunked.html">chunked</a>\n<a href="/dup.bin">dup</a>\n<a href="/gzip.html">gz</a>\n'
                '<link rel="stylesheet" href="/style.css">\n'
                '<img srcset="/img/70.png 1x, /img/71.png 2x">\n'
            )
        return (f"<html><head><title>{host} {number}</title>"
                f'<style>p {{ background: url(/img/80.png) }}</style></head><body>\n'
                f'<img src="/img/{number}.png">\n{links}{index_only}{others}{extra}</body></html>\n')


def _urlset(urls: list[str]) -> bytes:
    entries = "".join(f"<url><loc>{url}</loc><changefreq>daily</changefreq></url>" for url in urls)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>\n').encode()


def _number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return -1


def wait_for(predicate, timeout: float = 20.0, interval: float = 0.05) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` passes; True if it became true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
