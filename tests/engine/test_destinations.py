"""The destination policy in the crawl engine: a harvested page, a redirect, a seed or a login form that names
a loopback, private or link-local address is never connected to; its crawl.log line says -5005 and why.

The hostile site is a real server on 127.0.0.1 reached by a name of the engine's hosts file (allowed: the
operator mapped it); the "internal service" is another server on 127.0.0.1 that counts every connection it
is given, so "never a connection" is checked where it would show.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvestdef.destinations import DestinationPolicy
from harvester.engine.config import load_crawl_config
from harvester.engine.crawl import CrawlController
from harvester.engine.frontier.scope import canonical_url
from tests.engine.conftest import stop_controllers, write_job
from tests.netns import network_namespace

HOSTILE = "hostile.example"
# robots.txt's Sitemap lines and sitemaps are followed: a sitemap is one more way to name an address
SITEMAP_BEANS = """
  <bean id="extractorRobotsTxt" class="org.archive.modules.extractor.ExtractorRobotsTxt"/>
  <bean id="extractorSitemap" class="org.archive.modules.extractor.ExtractorSitemap"/>
"""


class CountingServer:
    """A server on 127.0.0.1 answering every request 200 with a small body, counting connections."""

    def __init__(self, body_for: dict[str, tuple[int, str, list[tuple[str, str]]]] | None = None,
                 address: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        self.body_for = body_for or {}
        self.connections = 0
        self.targets: list[str] = []
        self.listener = socket.create_server(address)
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
            self.answered(target)
            connection.sendall(head.encode() + b"Content-Type: text/html\r\n\r\n" + body.encode())

    def answered(self, target: str) -> None:
        """Called before ``target``'s answer is sent: a subclass's hook."""

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
            name: str = "job", extra_beans: str = "") -> list[list[str]]:
        job_dir = tmp_path / name
        cxml = write_job(job_dir, seeds, replace={"</beans>": SITEMAP_BEANS + extra_beans + "</beans>"})
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
    # localhost has no registered domain: before, the seed's domain scope could not be made and the crawl
    # failed at its start instead of refusing the seed
    seeds = ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://[::1]:8080/",
             f"http://127.0.0.1:{internal.port}/", f"http://localhost:{internal.port}/"]
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


@pytest.fixture
def namespace(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A network namespace of this test's own, with PUBLIC on a veth interface, and its hosts file
    (/etc/netns/NAME/hosts, which ``ip netns exec`` mounts over /etc/hosts) naming rebind.test there."""
    name = f"hs-rebind-{os.getpid()}-{tmp_path.name[-12:]}"[:40]
    # a veth pair with both ends inside the namespace: the public address leads nowhere outside it
    commands = [["ip", "-n", name, "link", "add", "public0", "type", "veth", "peer", "name", "public1"],
                ["ip", "-n", name, "addr", "add", f"{PUBLIC}/32", "dev", "public0"],
                ["ip", "-n", name, "link", "set", "public0", "up"], ["ip", "-n", name, "link", "set", "public1", "up"]]
    with network_namespace(name, {"hosts": f"127.0.0.1 localhost\n{PUBLIC} rebind.test\n"}, commands) as etc:
        yield name, etc / "hosts"


# A public address (not in any network the policy refuses), which exists only inside the test's namespace.
PUBLIC = "44.0.0.1"


def test_a_name_that_moves_to_loopback_between_lookups_is_refused_at_its_new_address(
        namespace: tuple[str, Path], tmp_path: Path) -> None:
    name, hosts = namespace
    result = subprocess.run(["ip", "netns", "exec", name, sys.executable, "-m", "tests.engine.rebind_crawl",
                             str(hosts), PUBLIC, str(tmp_path / "job")],
                            capture_output=True, text=True, timeout=120, check=False,
                            cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["finished"]
    statuses = dict(found["statuses"])
    # the first lookup found the public address: the page came from there
    assert statuses["dns:rebind.test"] == "1" and statuses["http://rebind.test:8080/"] == "200"
    # the page moved the name to loopback; the lookup made again once the first expired is refused
    assert statuses["http://rebind.test:8080/next"] == "-5005", found
    assert found["annotations"]["http://rebind.test:8080/next"] == "destinationRefused:loopback"
    assert found["internal_connections"] == 0 and "/next" not in found["site_targets"]


def test_a_login_form_posted_inwards_is_refused_unconnected(run_crawl, hostile: CountingServer,
                                                           internal: CountingServer) -> None:
    """A template's HtmlFormCredential whose loginUri is an internal address: the prerequisite's POST is
    refused like any fetch."""
    login = f"http://127.0.0.1:{internal.port}/login"
    beans = f"""
  <bean id="cookieStorage" class="org.archive.modules.fetcher.BdbCookieStore"/>
  <bean id="credentialStore" class="org.archive.modules.credential.CredentialStore">
    <property name="credentials"><map><entry key="inwards" value-ref="inwardsLogin"/></map></property>
  </bean>
  <bean id="inwardsLogin" class="org.archive.modules.credential.HtmlFormCredential">
    <property name="domain" value="{HOSTILE}:{hostile.port}"/>
    <property name="loginUri" value="{login}"/>
    <property name="formItems"><map><entry key="user" value="crawler"/></map></property>
  </bean>
"""
    seed = f"http://{HOSTILE}:{hostile.port}/"
    found = statuses(run_crawl([seed], {HOSTILE: "127.0.0.1"}, extra_beans=beans))
    assert found[seed] == "200"
    assert found[login] == "-5005", found
    assert internal.connections == 0, internal.targets


def test_the_browser_crawlers_requests_inwards_are_refused_unconnected(tmp_path: Path,
                                                                        internal: CountingServer) -> None:
    from harvester.engine.fetching.browser import BrowserOptions
    from tests.webui.browser import require_browser

    require_browser()  # skips saying why without Chromium and Playwright, fails so under CI=true
    users = f"http://127.0.0.1:{internal.port}/api/v1/users"
    # a form the page's script POSTs into a frame: a navigation, which no CORS check stops in the browser
    page = f"""<html><body><img src="http://127.0.0.1:{internal.port}/pixel.png">
<iframe name="sink"></iframe><form id="f" method="post" target="sink" action="{users}">
<input name="name" value="intruder"></form>
<script>document.getElementById("f").submit();</script></body></html>"""
    hostile = CountingServer({"/": (200, page, [])})
    controllers: list[CrawlController] = []
    try:
        seed = f"http://{HOSTILE}:{hostile.port}/"
        job_dir = tmp_path / "job"
        cxml = write_job(job_dir, [seed])
        launch_dir = job_dir / "20260101000000"
        launch_dir.mkdir(parents=True)
        options = BrowserOptions(executable="/usr/bin/chromium", pages_per_minute_per_host=0, page_time_limit=30.0,
                                 settle_time=0.5, memory_limit=1_500_000_000)
        controller = CrawlController(load_crawl_config(cxml, job_dir), job_dir, launch_dir, {HOSTILE: "127.0.0.1"},
                                     logging.getLogger("test.destinations"), browser=options)
        controllers.append(controller)
        controller.start()
        assert controller.join(90), "browser crawl did not finish within 90 s"
        lines = [line.split() for line in (launch_dir / "logs" / "crawl.log").read_text().splitlines() if line]
    finally:
        stop_controllers(controllers)
        hostile.close()
    found = statuses(lines)
    assert found[seed] == "200"
    assert found[f"http://127.0.0.1:{internal.port}/pixel.png"] == "-5005", found
    assert found.get(users) == "-5005", sorted(found.items())
    assert internal.connections == 0, internal.targets


def test_an_added_uri_on_loopback_is_refused_by_the_running_engine(tmp_path: Path, internal: CountingServer) -> None:
    from harvester.heritrix3.scripting import add_uris_script
    from tests.engine.engine_process import EngineProcess
    from tests.engine.site import TestSite, wait_for
    from tests.engine.test_live_changes import HOST, crawled, launch, stop

    # a seed on loopback puts 127.0.0.1 in the crawl's scope (and is refused itself), so an added URI there
    # passes the scope and meets the destination policy, as a live add_uris of an IP domain's job would
    inwards, added = f"http://127.0.0.1:{internal.port}/", f"http://127.0.0.1:{internal.port}/admin?added=1"
    with TestSite() as site, EngineProcess(tmp_path / "jobs",
                                           hosts_file=site.write_hosts_file(tmp_path / "hosts.txt")) as engine:
        client, job_dir = launch(engine, "adding", [site.url(HOST, "/"), inwards])
        result = client.run_script("adding", add_uris_script([added], "QA"))
        assert not result.failure and result.raw_output == "1 URIs scheduled, 0 not added"
        assert wait_for(lambda: (-5005, added) in {(status, uri) for status, uri, _ in crawled(job_dir)}, timeout=20)
        stop(client, "adding")
    assert (-5005, inwards) in {(status, uri) for status, uri, _ in crawled(job_dir)}
    assert internal.connections == 0, internal.targets



def test_ip_validity_is_read_from_the_templates_precondition_enforcer(tmp_path: Path) -> None:
    from harvester.engine.config import ConfigError
    from tests.engine.test_config import ROOT, _job

    cxml = _job(tmp_path, ROOT / "templates" / "default_orderxml.cxml", ["http://www.kb.dk/"], nas=True)
    config = load_crawl_config(cxml, tmp_path)
    assert config.ip_validity_seconds == 21600
    assert not [warning for warning in config.warnings if "ipValidityDurationSeconds" in warning]
    text = cxml.read_text(encoding="utf-8")
    cxml.write_text(text.replace('name="ipValidityDurationSeconds" value="21600"',
                                 'name="ipValidityDurationSeconds" value="x"'), encoding="utf-8")
    with pytest.raises(ConfigError, match="ipValidityDurationSeconds"):
        load_crawl_config(cxml, tmp_path)


@pytest.mark.parametrize("url, canonical", [
    ("http://[::1]:8080/x", "http://[::1]:8080/x"),
    ("HTTP://[::FFFF:7F00:1]:80/m.png", "http://[::ffff:7f00:1]/m.png"),
    ("https://[2001:DB8::1]:443/", "https://[2001:db8::1]/"),
])
def test_an_ipv6_literal_keeps_its_brackets_in_the_canonical_url(url: str, canonical: str) -> None:
    # without them the URL no longer parses, and the link discovery of the page that named it stopped there
    assert canonical_url(url) == canonical
    assert canonical_url("/" + url.split("/", 3)[3], url) == canonical  # a path relative to such a base too
