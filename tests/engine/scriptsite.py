"""A local site whose pages only a browser sees whole, for the browser crawler's tests and bench/browser.py.

Real HTTP on 127.0.0.1, two named hosts told apart by the Host header (``hosts`` maps them to loopback for
the engine's ``--hosts``):

- ``/``                   an empty shell and ``/app.js``; no link in its HTML
- ``/app.js``             asks ``/api/articles.json`` with fetch() and ``/api/note.txt`` with XMLHttpRequest,
                          then writes SCRIPT_TEXT and NOTE_TEXT into the page, a link to each ``/artikel/N``
                          and an image from the second host
- ``/api/articles.json``  the title and the article numbers
- ``/api/note.txt``       NOTE_TEXT
- ``/artikel/N``          a plain page linking back to ``/``
- ``/logo.png``           a small image (on the second host)
- ``/hang``               sends its header block and a little HTML, then nothing for ``hang_seconds``
- ``/memory``             a script that keeps allocating memory
- ``/flyttet``            301 to ``/artikel/3``
- ``/popup``              opens ``/artikel/9`` in a new window as it loads
- ``/download``           an attachment (Content-Disposition), which a browser would save as a file
- ``/pages/N``            (``pages`` of them) the benchmark's site: each links to the next in its HTML and
                          writes into itself, by a script, what it fetched from ``/pages/N/data.json``
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from harvester.engine.rest.tls import make_self_signed, server_context

HOST = "www.skriptet.dk"
CDN_HOST = "cdn.skriptet.dk"
SCRIPT_TEXT = "Skrevet af scriptet 7391"
NOTE_TEXT = "Hentet med XMLHttpRequest 4482"
ARTICLES = (1, 2)
DOWNLOAD = b"a file to save " * 100
PNG = bytes.fromhex("89504e470d0a1a0a") + b"\0" * 64

SHELL = b"""<!doctype html><html><head><title>Skriptet</title></head>
<body><main id="app">Indlaeser...</main><script src="/app.js"></script></body></html>"""

APP = f"""
const app = document.getElementById('app');
fetch('/api/articles.json').then(r => r.json()).then(data => {{
  const h1 = document.createElement('h1'); h1.id = 'title'; h1.textContent = data.title; app.replaceChildren(h1);
  for (const n of data.articles) {{
    const a = document.createElement('a'); a.href = '/artikel/' + n; a.textContent = 'Artikel ' + n;
    app.appendChild(a);
  }}
  const img = document.createElement('img');
  img.src = location.protocol + '//{CDN_HOST}:' + location.port + '/logo.png';
  app.appendChild(img);
  const xhr = new XMLHttpRequest();
  xhr.open('GET', '/api/note.txt');
  xhr.onload = () => {{ const p = document.createElement('p'); p.id = 'note'; p.textContent = xhr.responseText;
                        app.appendChild(p); }};
  xhr.send();
}});
""".encode()

# 8 MiB more every step, written so that it is resident: the page never gets to its load event under a limit
# of a few hundred megabytes, and stops by itself at 2 GiB should no limit stop it.
MEMORY = b"""<!doctype html><html><body><p>Eats memory</p><script>
const hog = [];
for (let i = 0; i < 256; i++) hog.push(new Float64Array(1 << 20).fill(i + 0.5));
</script></body></html>"""

BENCH_PAGE = """<!doctype html><html><body><h1>Side {n}</h1>{next}<main id="m"></main><script>
fetch('/pages/{n}/data.json').then(r => r.json()).then(d => {{ document.getElementById('m').textContent = d.text; }});
</script></body></html>"""
BENCH_TEXT = "Data til side {n}"


class ScriptSite:
    """The site on a free loopback port; a context manager. ``requests`` counts requests per (host, path)."""

    def __init__(self, hang_seconds: float = 30.0, pages: int = 20, tls_dir: Path | None = None) -> None:
        self.hang_seconds = hang_seconds
        self.pages = pages
        self.requests: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.scheme = "http"
        if tls_dir is not None:  # HTTPS with a self-signed certificate (a crawler does not check it)
            make_self_signed(tls_dir / "site.pem", tls_dir / "site.key", [HOST, CDN_HOST])
            context = server_context(tls_dir / "site.pem", tls_dir / "site.key")
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.scheme = "https"
        self.hosts = {HOST: "127.0.0.1", CDN_HOST: "127.0.0.1"}

    def url(self, path: str = "/", host: str = HOST) -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    def write_hosts_file(self, path: Path) -> Path:
        path.write_text("".join(f"{name} {address}\n" for name, address in self.hosts.items()), encoding="utf-8")
        return path

    def __enter__(self) -> ScriptSite:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                host = (self.headers.get("Host") or "").split(":")[0]
                with site._lock:
                    site.requests[(host, self.path)] = site.requests.get((host, self.path), 0) + 1
                path = self.path
                if path == "/hang":
                    self._hang()
                elif host == CDN_HOST and path == "/logo.png":
                    self._send(200, "image/png", PNG)
                elif path == "/":
                    self._send(200, "text/html; charset=utf-8", SHELL)
                elif path == "/app.js":
                    self._send(200, "application/javascript", APP)
                elif path == "/api/articles.json":
                    body = json.dumps({"title": SCRIPT_TEXT, "articles": list(ARTICLES)}).encode()
                    self._send(200, "application/json", body)
                elif path == "/api/note.txt":
                    self._send(200, "text/plain; charset=utf-8", NOTE_TEXT.encode())
                elif path.startswith("/artikel/"):
                    body = f"<!doctype html><html><body><h1>Artikel {path[9:]}</h1><a href='/'>Forside</a>"
                    self._send(200, "text/html; charset=utf-8", (body + "</body></html>").encode())
                elif path == "/flyttet":
                    self._send(301, "text/plain", b"moved\n", ("Location", "/artikel/3"))
                elif path == "/popup":
                    body = b"<!doctype html><html><body><p>Pop</p><script>window.open('/artikel/9')</script>"
                    self._send(200, "text/html; charset=utf-8", body + b"</body></html>")
                elif path == "/download":
                    self._send(200, "application/octet-stream", DOWNLOAD, ("Content-Disposition", "attachment"))
                elif path == "/memory":
                    self._send(200, "text/html; charset=utf-8", MEMORY)
                elif path.startswith("/pages/") and path[7:].split("/")[0].isdigit():
                    self._bench_page(int(path[7:].split("/")[0]), path.endswith("/data.json"))
                else:
                    self._send(404, "text/plain", b"not here\n")

            def _bench_page(self, number: int, is_data: bool) -> None:
                if not 1 <= number <= site.pages:
                    self._send(404, "text/plain", b"not here\n")
                elif is_data:
                    self._send(200, "application/json", json.dumps({"text": BENCH_TEXT.format(n=number)}).encode())
                else:
                    following = f'<a href="/pages/{number + 1}">Naeste</a>' if number < site.pages else ""
                    self._send(200, "text/html; charset=utf-8", BENCH_PAGE.format(n=number, next=following).encode())

            def _send(self, status: int, content_type: str, body: bytes, *headers: tuple[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _hang(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", "100000")
                self.end_headers()
                self.wfile.write(b"<!doctype html><html><body><p>Hanging")
                self.wfile.flush()
                deadline = time.monotonic() + site.hang_seconds
                while time.monotonic() < deadline and not site._stop.is_set():
                    time.sleep(0.1)
                self.close_connection = True

        return Handler
