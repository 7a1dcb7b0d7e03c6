"""The cluster's web host: many sites on one address, told apart by Host, each a small site of its own.

Site ``n`` is ``www.site<n>.dk`` (``site_names``): a front page linking its pages and pictures, the pages
linking each other, robots.txt, and pictures of a few kilobytes. Everything is the same on every request,
so a second harvest finds only duplicates. ``delay`` seconds are spent before each answer, which lets a
crawl last long enough to break the network under it.

The crawler finds the names through its hosts file (``hosts_file_lines``); the site counts the requests
for each URL by the address they came from, which ``/_requests`` answers as JSON (``{url: {address:
count}}``), so a test can tell whether a URL was fetched twice, and by which hosts.

Run it as ``python -m harvestdef.cluster.site --bind ADDRESS --port PORT``.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGES = 8
PICTURES = 4
_NAME = re.compile(r"www\.site(\d+)\.dk", re.ASCII)


def site_names(count: int) -> list[str]:
    """The host names of sites 1 to ``count``."""
    return [f"www.site{number}.dk" for number in range(1, count + 1)]


def hosts_file_lines(count: int, address: str) -> Iterator[str]:
    """The crawler's hosts file: every site at ``address``."""
    yield "# the cluster's web host, resolved by the crawl engine only\n"
    for name in site_names(count):
        yield f"{name} {address}\n"


def _page(title: str, body: str) -> bytes:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head>"
            f"<body><h1>{title}</h1>{body}</body></html>").encode()


def _picture(site: int, number: int) -> bytes:
    # a GIF header and bytes that differ per site and picture: a non-text payload the deduplication keeps
    return b"GIF89a" + bytes((site * 31 + number * 7 + i) % 256 for i in range(4000))


def respond(site: int, path: str) -> tuple[int, str, bytes]:
    """Status, content type and body of ``path`` on site ``site``."""
    name = f"www.site{site}.dk"
    if path == "/robots.txt":
        return 200, "text/plain", b"User-agent: *\nDisallow: /private/\n"
    if path in ("/", "/index.html"):
        links = "".join(f"<p><a href='/page/{n}.html'>page {n}</a></p>" for n in range(1, PAGES + 1))
        pictures = "".join(f"<img src='/picture/{n}.gif'>" for n in range(1, PICTURES + 1))
        return 200, "text/html; charset=utf-8", _page(name, links + pictures)
    match = re.fullmatch(r"/page/(\d+)\.html", path)
    if match and 1 <= int(match[1]) <= PAGES:
        number = int(match[1])
        following = number % PAGES + 1
        body = (f"<p>Page {number} of {name}.</p><p><a href='/page/{following}.html'>next</a></p>"
                f"<img src='/picture/{number % PICTURES + 1}.gif'>")
        return 200, "text/html; charset=utf-8", _page(f"{name} page {number}", body)
    match = re.fullmatch(r"/picture/(\d+)\.gif", path)
    if match and 1 <= int(match[1]) <= PICTURES:
        return 200, "image/gif", _picture(site, int(match[1]))
    return 404, "text/plain", b"not here\n"


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        if self.path == "/_requests":
            body = json.dumps(self.server.counts()).encode()
            self._send(200, "application/json", body)
            return
        match = _NAME.fullmatch(host)
        if not match or not 1 <= int(match[1]) <= self.server.sites:
            self._send(404, "text/plain", f"no site {host}\n".encode())
            return
        path = self.path.split("?")[0]
        self.server.count(f"http://{host}{path}", self.client_address[0])
        if self.server.delay:
            time.sleep(self.server.delay)
        self._send(*respond(int(match[1]), path))

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], sites: int, delay: float) -> None:
        super().__init__(address, _Handler)
        self.sites = sites
        self.delay = delay
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()

    def count(self, url: str, client: str) -> None:
        with self._lock:
            self._counts[url, client] += 1

    def counts(self) -> dict[str, dict[str, int]]:
        found: dict[str, dict[str, int]] = {}
        with self._lock:
            for (url, client), count in self._counts.items():
                found.setdefault(url, {})[client] = count
        return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The cluster's web host: many small sites on one address.")
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=80)
    parser.add_argument("--sites", type=int, default=300)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds spent before each answer")
    args = parser.parse_args(argv)
    with _Server((args.bind, args.port), args.sites, args.delay) as server:
        server.serve_forever()


if __name__ == "__main__":
    main()
