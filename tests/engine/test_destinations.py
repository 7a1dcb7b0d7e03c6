"""The destination policy in the crawl engine: a harvested page, a redirect, a seed or a login form that names
a loopback, private or link-local address is never connected to; its crawl.log line says -5005 and why.

The hostile site is a real server on 127.0.0.1 reached by a name of the engine's hosts file (allowed: the
operator mapped it); the "internal service" is another server on 127.0.0.1 that counts every connection it
is given, so "never a connection" is checked where it would show.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvestdef.destinations import DestinationPolicy
from harvester.engine.config import load_crawl_config
from harvester.engine.crawl import CrawlController
from harvester.engine.scope import canonical_url
from tests.engine.conftest import stop_controllers, write_job

HOSTILE = "hostile.example"
# robots.txt's Sitemap lines and sitemaps are followed: a sitemap is one more way to name an address
SITEMAP_BEANS = """
  <bean id="extractorRobotsTxt" class="org.archive.modules.extractor.ExtractorRobotsTxt"/>
  <bean id="extractorSitemap" class="org.archive.modules.extractor.ExtractorSitemap"/>
"""


class CountingServer:
    """A server on 127.0.0.1 answering every request 200 with a small body, counting connections."""

    def __init__(self, body_for: dict[str, tuple[int, str, list[tuple[str, str]]]] | None = None) -> None:
        self.body_for = body_for or {}
        self.connections = 0
        self.targets: list[str] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(5)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    data += chunk
            except OSError:
                return
            target = data.split(b" ", 2)[1].decode("latin-1")
            with self._lock:
                self.targets.append(target)
            status, body, headers = self.body_for.get(target.split("?", 1)[0], (200, "internal answer", []))
            head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(body.encode())}\r\nConnection: close\r\n"
            head += "".join(f"{name}: {value}\r\n" for name, value in headers)
            connection.sendall(head.encode() + b"Content-Type: text/html\r\n\r\n" + body.encode())

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def internal() -> Iterator[CountingServer]:
    server = CountingServer()
    yield server
    server.close()


def hostile_page(internal_port: int) -> str:
    loopback = f"http://127.0.0.1:{internal_port}"
    return f"""<html><head>
<script src="{loopback}/script.js"></script>
<link rel="stylesheet" href="http://localhost:{internal_port}/style.css">
</head><body>
<img src="http://[::1]:{internal_port}/image.png">
<img src="http://[::ffff:127.0.0.1]:{internal_port}/mapped.png">
<img src="http://169.254.169.254/latest/meta-data/">
<iframe src="{loopback}/api/v1/users"></iframe>
<a href="/bounce">a redirect inwards</a>
</body></html>"""


@pytest.fixture
def hostile(internal: CountingServer) -> Iterator[CountingServer]:
    """The harvested site: its page embeds internal addresses, /bounce redirects to one, robots.txt names an
    internal sitemap."""
    server = CountingServer({
        "/": (200, hostile_page(internal.port), []),
        "/bounce": (302, "", [("Location", f"http://127.0.0.1:{internal.port}/admin")]),
        "/robots.txt": (200, f"User-agent: *\nSitemap: http://127.0.0.1:{internal.port}/sitemap.xml\n", []),
    })
    yield server
    server.close()


@pytest.fixture
def run_crawl(tmp_path: Path):
    controllers: list[CrawlController] = []

    def run(seeds: list[str], hosts: dict[str, str], destinations: DestinationPolicy | None = None,
            name: str = "job") -> list[list[str]]:
        job_dir = tmp_path / name
        cxml = write_job(job_dir, seeds, replace={"</beans>": SITEMAP_BEANS + "</beans>"})
        launch_dir = job_dir / "20260101000000"
        launch_dir.mkdir(parents=True)
        config = load_crawl_config(cxml, job_dir)
        extra = {} if destinations is None else {"destinations": destinations}
        controller = CrawlController(config, job_dir, launch_dir, hosts, logging.getLogger("test.destinations"),
                                     **extra)
        controllers.append(controller)
        controller.start()
        assert controller.join(60), "crawl did not finish within 60 s"
        text = (launch_dir / "logs" / "crawl.log").read_text(encoding="utf-8")
        return [line.split() for line in text.splitlines() if line.strip()]

    yield run
    stop_controllers(controllers)


def statuses(lines: list[list[str]]) -> dict[str, str]:
    return {fields[3]: fields[1] for fields in lines}


def test_a_hostile_pages_embeds_and_redirect_inwards_are_refused_unconnected(
        run_crawl, hostile: CountingServer, internal: CountingServer) -> None:
    seed = f"http://{HOSTILE}:{hostile.port}/"
    lines = run_crawl([seed], {HOSTILE: "127.0.0.1"})
    found = statuses(lines)
    assert found[seed] == "200"
    mapped = canonical_url(f"http://[::ffff:127.0.0.1]:{internal.port}/mapped.png")  # in Python's own spelling
    refused = {
        f"http://127.0.0.1:{internal.port}/script.js", f"http://localhost:{internal.port}/style.css",
        f"http://[::1]:{internal.port}/image.png", mapped,
        "http://169.254.169.254/latest/meta-data/", f"http://127.0.0.1:{internal.port}/api/v1/users",
        f"http://127.0.0.1:{internal.port}/admin",
    }
    assert found.get(f"http://{HOSTILE}:{hostile.port}/bounce") == "302", lines
    for url in refused:
        assert found.get(url) == "-5005", (url, found.get(url), found)
    annotations = {fields[3]: fields[11] for fields in lines if len(fields) > 11}
    assert annotations[f"http://127.0.0.1:{internal.port}/script.js"] == "destinationRefused:loopback"
    assert annotations["http://169.254.169.254/latest/meta-data/"] == "destinationRefused:link-local"
    assert annotations[mapped] == \
        "destinationRefused:loopback-as-IPv6"
    # refused means unconnected: not a dns: record of them, not a robots.txt, not one connection inwards (the
    # sitemap robots.txt names there is out of the seeds' scope, and would be refused if it were in it)
    assert "dns:localhost" not in found
    assert internal.connections == 0, internal.targets


def test_seeds_of_internal_addresses_are_refused(run_crawl, internal: CountingServer) -> None:
    seeds = ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://[::1]:8080/",
             f"http://127.0.0.1:{internal.port}/"]
    found = statuses(run_crawl(seeds, {}))
    for seed in seeds:
        assert found.get(seed) == "-5005", (seed, found)
    assert internal.connections == 0


def test_the_operators_allowed_network_is_crawled(run_crawl, hostile: CountingServer,
                                                  internal: CountingServer) -> None:
    seed = f"http://{HOSTILE}:{hostile.port}/"
    allow = DestinationPolicy.from_entries(["127.0.0.0/8"])
    found = statuses(run_crawl([seed], {HOSTILE: "127.0.0.1"}, allow))
    assert found[f"http://127.0.0.1:{internal.port}/script.js"] == "200"
    assert found[f"http://127.0.0.1:{internal.port}/admin"] == "200"
    # only what the setting names: link-local stays refused
    assert found["http://169.254.169.254/latest/meta-data/"] == "-5005"
    assert internal.connections > 0


def test_a_name_the_setting_allows_is_crawled_whatever_it_resolves_to(run_crawl, hostile: CountingServer,
                                                                      internal: CountingServer) -> None:
    seed = f"http://{HOSTILE}:{hostile.port}/"
    found = statuses(run_crawl([seed], {HOSTILE: "127.0.0.1"}, DestinationPolicy.from_entries(["localhost"])))
    assert found[f"http://localhost:{internal.port}/style.css"] == "200"
    assert found[f"http://127.0.0.1:{internal.port}/script.js"] == "-5005"
