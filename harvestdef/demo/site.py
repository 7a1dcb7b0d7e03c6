"""The demo's website: several hosts with real-looking names on one loopback port, told apart by Host.

The names resolve only inside the crawl engine, through the hosts file the demo writes; a browser that
opens the port directly gets a page listing them. Every host has a front page, article or page
documents, photos (PNG), a style sheet and robots.txt. The content is generated and the same on every
run, except each front page, which carries the time it was served: so a second harvest of a host finds
new HTML and the same photos again, and the deduplication shows in its statistics.
"""

from __future__ import annotations

import html
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# The photos and pages never change, so they carry one fixed modification date.
PUBLISHED = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)


@dataclass(frozen=True)
class DemoHost:
    """One host of the demo site: what it is about and how much it holds."""

    name: str
    title: str
    about: str
    section: str        # path segment of its documents, e.g. "artikel"
    documents: int
    photos: int
    disallowed: str = "/intern/"
    trap: bool = False  # a calendar whose "next month" link never ends

    @property
    def domain(self) -> str:
        return self.name.split(".", 1)[1]

    def objects(self) -> int:
        """Documents the host serves outside its calendar: robots.txt, style sheet, front page, the two
        index pages, the documents and the photos."""
        return 5 + self.documents + self.photos


HOSTS: tuple[DemoHost, ...] = (
    DemoHost("www.nordposten.dk", "Nordposten", "news from the north coast, updated every hour", "artikel",
             documents=120, photos=30),
    DemoHost("www.byhistorie.dk", "Byhistorisk Arkiv", "the town's history in photographs and letters", "samling",
             documents=40, photos=24),
    DemoHost("www.folkemoedet-demo.dk", "Folkemødet 2026", "a four-day political festival", "program",
             documents=14, photos=6),
    DemoHost("www.havbrug.org", "Havbrug", "an association for sustainable fish farming", "side",
             documents=12, photos=4),
    DemoHost("blog.strandvejen.dk", "Strandvejen", "a neighbourhood blog with an endless calendar", "indlaeg",
             documents=30, photos=10, trap=True),
)

WORDS = ("havn", "byråd", "vejr", "skole", "bibliotek", "kyst", "fiskeri", "festival", "arkiv", "museum", "kirke",
         "marked", "færge", "strand", "skov", "mølle", "brev", "fotografi", "borgmester", "koncert", "sommer",
         "vinter", "udstilling", "forening", "jernbane")


def _words(seed: int, count: int) -> str:
    return " ".join(WORDS[(seed * 7 + i * 13 + (i * i) % 5) % len(WORDS)] for i in range(count))


def _png(seed: int, caption: str, width: int = 120, height: int = 80) -> bytes:
    """A small, valid PNG whose stripes and colours depend on ``seed``, captioned in a text chunk: the
    caption (host and number) makes every photo of the site a payload of its own."""
    red, green, blue = (seed * 67) % 256, (seed * 131) % 256, (seed * 29) % 256
    stripe = 4 + seed % 11
    rows = bytearray()
    for y in range(height):
        rows.append(0)  # filter type: none
        for x in range(width):
            shade = 60 if ((x + y) // stripe) % 2 else 0
            rows += bytes(((red + shade) % 256, (green + x) % 256, (blue + y + shade) % 256))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"tEXt", b"Title\0" + caption.encode("latin-1"))
            + chunk(b"IDAT", zlib.compress(bytes(rows), 9)) + chunk(b"IEND", b""))


STYLE = b"""body { font-family: Georgia, serif; max-width: 46em; margin: 2em auto; color: #222; }
header { border-bottom: 2px solid #335; margin-bottom: 1em; }
nav a, footer a { margin-right: 1em; }
img { margin: 0.3em; border: 1px solid #999; }
"""


class DemoContent:
    """The bytes of every document of one host; pure functions of the host and the path."""

    def __init__(self, host: DemoHost) -> None:
        self.host = host

    def _page(self, title: str, body: str) -> bytes:
        host = self.host
        others = "".join(f'<a href="http://{other.name}/">{html.escape(other.title)}</a>'
                         for other in HOSTS if other is not host)
        return (f"<!DOCTYPE html>\n<html lang=\"da\"><head><meta charset=\"utf-8\">"
                f"<title>{html.escape(title)} · {html.escape(host.title)}</title>"
                f"<link rel=\"stylesheet\" href=\"/style.css\"></head>\n<body><header><h1>"
                f"<a href=\"/\">{html.escape(host.title)}</a></h1><p>{html.escape(host.about)}</p></header>\n"
                f"<main>{body}</main>\n<footer>Elsewhere: {others}</footer></body></html>\n").encode()

    def _document_link(self, number: int) -> str:
        return f'<a href="/{self.host.section}/{number}.html">{self.host.section} {number}</a>'

    def front_page(self, now: datetime) -> bytes:
        host = self.host
        latest = "".join(f"<li>{self._document_link(n)}: {_words(n, 4)}</li>"
                         for n in range(1, min(host.documents, 12) + 1))
        listing = (f'<p><a href="/{host.section}/">All {host.documents} documents</a> · '
                   f'<a href="/fotos/">All {host.photos} photos</a>'
                   + (' · <a href="/kalender/2026/1/">Calendar</a>' if host.trap else "")
                   + f' · <a href="{host.disallowed}">Members only</a></p>')
        body = (f"<p>Served at {now:%Y-%m-%d %H:%M:%S} UTC.</p>{listing}<h2>Latest</h2><ul>{latest}</ul>"
                f'<img src="/fotos/1.png" alt="photo 1" width="120" height="80">')
        return self._page("Front page", body)

    def index(self) -> bytes:
        items = "".join(f"<li>{self._document_link(n)}</li>" for n in range(1, self.host.documents + 1))
        return self._page("All documents", f"<ul>{items}</ul>")

    def photo_index(self) -> bytes:
        items = "".join(f'<a href="/fotos/{n}.png"><img src="/fotos/{n}.png" alt="photo {n}" width="60" '
                        f'height="40"></a>' for n in range(1, self.host.photos + 1))
        return self._page("All photos", f"<p>{items}</p>")

    def document(self, number: int) -> bytes:
        host = self.host
        photo = (number - 1) % host.photos + 1
        neighbours = [n for n in (number - 1, number + 1, (number * 7) % host.documents + 1)
                      if 1 <= n <= host.documents]
        text = "".join(f"<p>{_words(number * 3 + i, 40)}.</p>" for i in range(4))
        body = (f"<h2>{host.section.capitalize()} {number}: {_words(number, 3)}</h2>{text}"
                f'<img src="/fotos/{photo}.png" alt="photo {photo}" width="120" height="80">'
                f"<nav>{''.join(self._document_link(n) for n in neighbours)}</nav>")
        return self._page(f"{host.section} {number}", body)

    def calendar(self, year: int, month: int) -> bytes:
        following = (year + month // 12, month % 12 + 1)
        body = (f"<h2>Calendar {year}-{month:02d}</h2><p>Nothing planned.</p>"
                f'<a href="/kalender/{following[0]}/{following[1]}/">Next month</a>')
        return self._page(f"Calendar {year}-{month:02d}", body)

    def robots(self) -> bytes:
        return f"User-agent: *\nDisallow: {self.host.disallowed}\n".encode("ascii")

    def respond(self, path: str, now: datetime) -> tuple[int, str, bytes, bool]:
        """(status, content type, body, whether the body changes between requests) for ``path``."""
        host = self.host
        html_type = "text/html; charset=utf-8"
        parts = [part for part in path.split("?", 1)[0].split("/") if part]
        if not parts:
            return 200, html_type, self.front_page(now), True
        if parts == ["robots.txt"]:
            return 200, "text/plain", self.robots(), False
        if parts == ["style.css"]:
            return 200, "text/css", STYLE, False
        if parts == [host.section]:
            return 200, html_type, self.index(), False
        if parts == ["fotos"]:
            return 200, html_type, self.photo_index(), False
        number = _number(parts[-1], ".html" if parts[0] == host.section else ".png")
        if len(parts) == 2 and parts[0] == host.section and number and number <= host.documents:
            return 200, html_type, self.document(number), False
        if len(parts) == 2 and parts[0] == "fotos" and number and number <= host.photos:
            return 200, "image/png", _png(zlib.crc32(host.name.encode()) + number, f"{host.name} {number}"), False
        if host.trap and len(parts) == 3 and parts[0] == "kalender" and parts[1].isdigit() and parts[2].isdigit() \
                and 1 <= int(parts[2]) <= 12:
            return 200, html_type, self.calendar(int(parts[1]), int(parts[2])), False
        return 404, html_type, self._page("Not found", f"<p>Nothing at {html.escape(path)}.</p>"), False


def _number(part: str, suffix: str) -> int | None:
    stem = part.removesuffix(suffix)
    return int(stem) if stem != part and stem.isdigit() else None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real site
    server_version = "DemoSite/1.0"
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        self._answer(with_body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(with_body=False)

    def _answer(self, with_body: bool) -> None:
        now = datetime.now(UTC)
        name = (self.headers.get("Host") or "").rsplit(":", 1)[0].lower()
        content = self.server.contents.get(name)
        if content is None:
            status, kind, body, changing = 200, "text/html; charset=utf-8", self.server.directory_page(), True
        else:
            status, kind, body, changing = content.respond(self.path, now)
        self.server.count(name)
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Last-Modified", format_datetime(now if changing else PUBLISHED, usegmt=True))
        self.end_headers()
        if with_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        """Quiet: the crawl log says what was fetched."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self.contents = {host.name: DemoContent(host) for host in HOSTS}
        self.requests: dict[str, int] = {}
        self._lock = threading.Lock()

    def count(self, name: str) -> None:
        with self._lock:
            self.requests[name] = self.requests.get(name, 0) + 1

    def directory_page(self) -> bytes:
        port = self.server_address[1]
        items = "".join(f"<li>{html.escape(host.name)}: {html.escape(host.title)}, {html.escape(host.about)}</li>"
                        for host in HOSTS)
        return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>HarvestSuite demo site</title></head>"
                f"<body><h1>HarvestSuite demo site</h1><p>This port ({port}) serves these hosts. Their names "
                f"resolve to 127.0.0.1 only inside the crawler, through the demo's hosts file; the harvested "
                f"pages are in the archive store.</p><ul>{items}</ul></body></html>").encode()


class DemoSite:
    """The demo site's server on 127.0.0.1:``port`` (0 = any free port), in a thread of its own."""

    def __init__(self, port: int = 0) -> None:
        self._server = _Server(("127.0.0.1", port))
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.5},
                                        name="demo-site", daemon=True)

    def start(self) -> DemoSite:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def __enter__(self) -> DemoSite:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def requests(self) -> dict[str, int]:
        """Requests served per host name (unknown names under their own name)."""
        return dict(self._server.requests)

    def seed(self, host: DemoHost, path: str = "/") -> str:
        return f"http://{host.name}:{self.port}{path}"


def hosts_file_lines(hosts: tuple[DemoHost, ...] = HOSTS) -> Iterator[str]:
    """The engine's hosts file: every demo host at 127.0.0.1."""
    yield "# the demo site's hosts, resolved by the crawl engine only\n"
    for host in hosts:
        yield f"{host.name} 127.0.0.1\n"


def write_hosts_file(path: Path) -> None:
    path.write_text("".join(hosts_file_lines()), encoding="utf-8")
