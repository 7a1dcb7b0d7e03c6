"""What today's sites need, crawled through the engine process with the template's beans and without them:
a cookie wall, HTTP Basic and Digest areas, a login form, links only in scripts and links only in sitemaps
(named by robots.txt, one of them gzipped, one behind a sitemap index); and a cookie jar that survives a
checkpoint and a resume.

The site is tests/engine/site.py's, on its own host (MODERN_HOST) so that its robots.txt can name sitemaps.
Both crawls of the first test run at once, in one engine, from the same seed; each is judged by its own
crawl.log and WARCs.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.heritrix import HeritrixClient
from tests.engine.engine_process import EngineProcess, crawler_beans, write_job
from tests.engine.site import (
    BASIC_PASSWORD,
    BASIC_REALM,
    BASIC_USER,
    DIGEST_PASSWORD,
    DIGEST_REALM,
    DIGEST_USER,
    LOGIN_FORM,
    MODERN_HOST,
    TestSite,
)

CRAWL_TIMEOUT = 60.0


@pytest.fixture
def modern_site() -> Iterator[TestSite]:
    with TestSite(hosts=(MODERN_HOST,)) as site:
        yield site


@pytest.fixture
def engine(tmp_path: Path, modern_site: TestSite) -> Iterator[EngineProcess]:
    hosts_file = modern_site.write_hosts_file(tmp_path / "hosts.txt")
    with EngineProcess(tmp_path / "jobs", hosts_file=hosts_file) as process:
        yield process


def session_beans(site: TestSite) -> str:
    """The cookie store, a credential store with a Basic, a Digest and a form credential for the site's
    server, NetarchiveSuite's ExtractorJS (with its reject list), ExtractorSitemap and ExtractorRobotsTxt, as a
    template declares them."""
    server = f"{MODERN_HOST}:{site.port}"
    form_items = "".join(f'<entry key="{key}" value="{value}"/>' for key, value in LOGIN_FORM.items())
    return rf"""
  <bean id="cookieStorage" class="org.archive.modules.fetcher.BdbCookieStore"/>
  <bean id="credentialStore" class="org.archive.modules.credential.CredentialStore">
    <property name="credentials">
      <map>
        <entry key="basic" value-ref="basicArea"/>
        <entry key="digest" value-ref="digestArea"/>
        <entry key="members" value-ref="membersLogin"/>
      </map>
    </property>
  </bean>
  <bean id="basicArea" class="org.archive.modules.credential.HttpAuthenticationCredential">
    <property name="domain" value="{server}"/>
    <property name="realm" value="{BASIC_REALM}"/>
    <property name="login" value="{BASIC_USER}"/>
    <property name="password" value="{BASIC_PASSWORD}"/>
  </bean>
  <bean id="digestArea" class="org.archive.modules.credential.HttpAuthenticationCredential">
    <property name="domain" value="{server}"/>
    <property name="realm" value="{DIGEST_REALM}"/>
    <property name="login" value="{DIGEST_USER}"/>
    <property name="password" value="{DIGEST_PASSWORD}"/>
  </bean>
  <bean id="membersLogin" class="org.archive.modules.credential.HtmlFormCredential">
    <property name="domain" value="{server}"/>
    <property name="loginUri" value="{site.url(MODERN_HOST, '/members/login')}"/>
    <property name="formItems"><map>{form_items}</map></property>
  </bean>
  <bean id="extractorJs" class="dk.netarkivet.harvester.harvesting.extractor.IcelandicExtractorJS">
    <property name="rejectRelativeMatchingRegexList"><list><value>^Microsoft\.XMLHTTP$</value></list></property>
  </bean>
  <bean id="extractorRobotsTxt" class="org.archive.modules.extractor.ExtractorRobotsTxt"/>
  <bean id="extractorSitemap" class="org.archive.modules.extractor.ExtractorSitemap"/>
"""


def start(client: HeritrixClient, process: EngineProcess, name: str, seeds: list[str], cxml: str) -> None:
    write_job(process.jobs_dir / name, seeds, cxml=cxml)
    client.rescan()
    assert client.build(name).status_description == "Ready"
    client.launch(name)
    client.unpause(name)


def launch_dir(process: EngineProcess, name: str) -> Path:
    return Path(os.path.realpath(process.jobs_dir / name / "latest"))


def crawl_log(launch: Path) -> dict[str, list[str]]:
    """crawl.log's fields by URI (the last line of each)."""
    lines = (launch / "logs" / "crawl.log").read_text(encoding="utf-8").splitlines()
    return {fields[3]: fields for fields in (line.split() for line in lines) if len(fields) > 3}


def exchanges(launch: Path) -> dict[str, tuple[bytes, bytes]]:
    """(request record block, response payload) by target URI, from the launch's WARCs."""
    requests: dict[str, bytes] = {}
    responses: dict[str, bytes] = {}
    for path in sorted((launch / "warcs").glob("*.warc*")):
        with open(path, "rb") as handle:
            for record in ArchiveIterator(handle):
                uri = record.rec_headers.get_header("WARC-Target-URI")
                if record.rec_type == "request":
                    requests[uri] = record.http_headers.to_bytes() + record.content_stream().read()
                elif record.rec_type == "response":
                    responses[uri] = record.content_stream().read()
    return {uri: (requests.get(uri, b""), body) for uri, body in responses.items()}


def test_the_template_s_cookies_credentials_and_extractors_capture_what_a_plain_crawl_misses(
        engine: EngineProcess, modern_site: TestSite) -> None:
    client = engine.client()
    seed = modern_site.url(MODERN_HOST, "/")
    start(client, engine, "sessions", [seed], crawler_beans(max_hops=5, extra_beans=session_beans(modern_site)))
    start(client, engine, "plain", [seed], crawler_beans(max_hops=5))
    for name in ("sessions", "plain"):
        finished = client.wait_for(name, lambda status: status.is_finished, timeout=CRAWL_TIMEOUT)
        assert finished.crawl_exit_status == "FINISHED", finished.job_log_tail
    url = lambda path: modern_site.url(MODERN_HOST, path)  # noqa: E731 - a short name for the site's URLs
    job_log = (engine.jobs_dir / "sessions" / "job.log").read_text(encoding="utf-8")
    for bean in ("cookieStorage", "credentialStore", "basicArea", "membersLogin", "extractorJs",
                 "extractorSitemap", "extractorRobotsTxt"):
        assert f"bean {bean} " not in job_log

    with_beans, without = launch_dir(engine, "sessions"), launch_dir(engine, "plain")
    log, plain_log = crawl_log(with_beans), crawl_log(without)
    captured, plain_captured = exchanges(with_beans), exchanges(without)

    # The cookie wall: the cookie set by the consent page is sent back, so the article and its link are there.
    assert b"Cookie: consent=granted" in captured[url("/modern/gated")][0]
    assert b"the gated article" in captured[url("/modern/gated")][1]
    assert log[url("/modern/behind-the-wall.html")][1] == "200"
    assert b"consent wall" in plain_captured[url("/modern/gated")][1]
    assert url("/modern/behind-the-wall.html") not in plain_log

    # HTTP Basic and Digest: the 401 answered once with the credential, the server's later URIs sent it at once.
    for area in ("/basic/", "/basic/inner.html", "/digest/", "/digest/inner.html"):
        assert log[url(area)][1] == "200", log[url(area)]
        assert b"area " + area.encode() in captured[url(area)][1]
    assert b"Authorization: Basic " in captured[url("/basic/inner.html")][0]
    assert b'Authorization: Digest username="arkiv"' in captured[url("/digest/inner.html")][0]
    assert b"nc=00000002" in captured[url("/digest/inner.html")][0]
    assert plain_log[url("/basic/")][1] == plain_log[url("/digest/")][1] == "401"
    assert url("/basic/inner.html") not in plain_log and url("/digest/inner.html") not in plain_log

    # The login form: posted once, before the server's other URIs, as a prerequisite; then the members' pages.
    login = log[url("/members/login")]
    assert login[1] == "200" and login[4] == "P" and login[5] == seed
    order = [line.split()[3] for line in (with_beans / "logs" / "crawl.log").read_text().splitlines()]
    assert order.index(url("/members/login")) < order.index(seed)
    posted = [body for host, target, body in modern_site.request_bodies if target == "/members/login"]
    assert [dict(urllib.parse.parse_qsl(body.decode())) for body in posted] == [LOGIN_FORM]
    login_request = captured[url("/members/login")][0]
    assert login_request.startswith(b"POST /members/login ") and login_request.endswith(posted[0])
    assert b"members only: /members/article.html" in captured[url("/members/article.html")][1]
    assert b"please" in plain_captured[url("/members/")][1]
    assert url("/members/article.html") not in plain_log

    # Links only in scripts: an inline script, an onclick handler, a script file; not the strings that only
    # look like URLs (a MIME type, a version number, a CSS selector; an ActiveX name, by the reject list).
    for path in ("/modern/from-inline-script.html", "/modern/from-onclick.html", "/modern/from-script-file.html"):
        assert log[url(path)][1] == "200" and log[url(path)][4].endswith("X"), log.get(url(path))
        assert url(path) not in plain_log
    assert not [uri for uri in log if uri.endswith(("/text/html", "/3.5.0", "/li.selected", "Microsoft.XMLHTTP"))]

    # Links only in sitemaps: robots.txt names a sitemap and an index, the index a gzipped sitemap.
    for path in ("/sitemap.xml", "/sitemap-index.xml", "/sitemap-archive.xml.gz"):
        assert log[url(path)][1] == "200" and log[url(path)][4].endswith("M")
    for path in ("/only-in-sitemap/plain.html", "/only-in-sitemap/from-gzip.html", "/only-in-sitemap/archive.html"):
        assert log[url(path)][1] == "200" and log[url(path)][4].endswith("MM"), log.get(url(path))
        assert url(path) not in plain_log
    assert log[url("/only-in-sitemap/from-gzip.html")][4] == "PMMM"

    # The credentials' secrets reach no log: the job's, the launch's logs and reports, the engine's output.
    secrets = (BASIC_PASSWORD, DIGEST_PASSWORD, LOGIN_FORM["kodeord"])
    logs = [engine.jobs_dir / "sessions" / "job.log", engine.jobs_dir.parent / "jobs-engine-stderr.log",
            *(with_beans / "logs").glob("*"), *(with_beans / "reports").glob("*")]
    assert len(logs) > 4 and all(path.is_file() for path in logs), logs
    for path in logs:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert not [secret for secret in secrets if secret in text], path


def test_the_cookie_jar_survives_a_checkpoint_and_a_resume(engine: EngineProcess, modern_site: TestSite) -> None:
    client = engine.client()
    consent, gated = modern_site.url(MODERN_HOST, "/modern/consent"), modern_site.url(MODERN_HOST, "/modern/gated")
    # 2 s between the fetches of the site's queue: time to pause after the consent page, before the article.
    cxml = crawler_beans(min_delay_ms=2000,
                         extra_beans='<bean id="cookieStorage" class="org.archive.modules.fetcher.BdbCookieStore"/>')
    start(client, engine, "jar", [consent], cxml)
    first = launch_dir(engine, "jar")
    client.wait_for("jar", lambda status: consent in crawl_log(first), timeout=30, poll_interval=0.05)
    client.pause("jar")
    client.wait_for("jar", lambda status: status.crawl_controller_state == "PAUSED", timeout=30, poll_interval=0.1)
    assert gated not in crawl_log(first)
    checkpoint = client.checkpoint("jar").checkpoint_files[-1]
    client.terminate("jar")
    client.wait_for("jar", lambda status: status.is_finished, timeout=30)
    client.teardown("jar")
    client.build("jar")
    client.launch("jar", checkpoint=checkpoint)
    client.unpause("jar")
    finished = client.wait_for("jar", lambda status: status.is_finished, timeout=CRAWL_TIMEOUT)
    assert finished.crawl_exit_status == "FINISHED"
    second = launch_dir(engine, "jar")
    assert second != first and consent not in crawl_log(second)
    request, body = exchanges(second)[gated]
    assert b"Cookie: consent=granted" in request and b"the gated article" in body
    assert crawl_log(second)[modern_site.url(MODERN_HOST, "/modern/behind-the-wall.html")][1] == "200"
    assert "cookies kept from the checkpoint: 1" in (engine.jobs_dir / "jar" / "job.log").read_text()
