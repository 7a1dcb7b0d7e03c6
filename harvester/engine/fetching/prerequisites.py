"""The prerequisites of a fetch, as Heritrix's PreconditionEnforcer: a host's address (the ``dns:`` lookup,
once per host) and a host:port's robots.txt (fetched once, as a prerequisite with hop ``P``), and the robots
rules a URI must pass; then the credential store's login forms (HtmlFormCredential), each posted once before
its server's other URIs. What is known is kept in the ServerCache; what is fetched or looked up is recorded
through the disposition like any capture.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from urllib.parse import urlsplit

from harvestdef.domainnames import is_ip_address
from harvester.engine.chain import DOMAIN_LOOKUP_FAILED, ROBOTS_PRECLUDED, Curi, Outcome
from harvester.engine.disposition import Disposition
from harvester.engine.fetching.credentials import FormCredential, server_name
from harvester.engine.fetching.fetch import DESTINATION_REFUSED, Fetcher
from harvester.engine.fetching.servercache import ServerCache
from harvester.engine.frontier.frontier import CrawlUri, Frontier
from harvester.engine.frontier.scope import canonical_url

ROBOTS_MAX_BYTES = 500_000  # robots.txt read beyond this is ignored, as by Heritrix's Robotstxt


def host_address(servers: ServerCache, disposition: Disposition, host: str, queue_key: str, uri: CrawlUri,
                 thread: int) -> str | None:
    """``host``'s address, looked up and its ``dns:`` recorded (under ``uri``'s queue) the first time; an IP
    literal is its own address, with no lookup; None for a host with no address."""
    if not servers.knows_host(host):
        if is_ip_address(host):
            servers.take_literal(host)
        else:
            started = time.time()
            address = servers.look_up(host)
            # a refused host's lookup is not recorded: what an internal name resolves to is not the archive's
            if servers.refusal(host) is None:
                disposition.record_dns(queue_key, host, address, uri, thread, started)
    return servers.address(host)


class DnsPrerequisite:
    """Looks a host up the first time one of its URIs comes (an IP literal is its own address, with no
    ``dns:`` capture); a URI whose host has no address ends -6, one whose host the destination policy refuses
    ends -5005 with the refusal's annotation."""

    def __init__(self, servers: ServerCache, disposition: Disposition) -> None:
        self.servers = servers
        self.disposition = disposition

    async def process(self, curi: Curi) -> Outcome | None:
        curi.address = host_address(self.servers, self.disposition, curi.host, curi.queue.key, curi.uri,
                                    curi.thread)
        refusal = self.servers.refusal(curi.host)
        if refusal is not None:
            return curi.fail(DESTINATION_REFUSED, [refusal.annotation])
        if curi.address is None:
            return curi.fail(DOMAIN_LOOKUP_FAILED)
        return None


class RobotsPrerequisite:
    """Fetches a host:port's robots.txt before its first URI (unless the policy is ``ignore``) and ends a URI
    its rules disallow -9998. A prerequisite URI itself passes."""

    def __init__(self, policy: str, servers: ServerCache, fetcher: Fetcher, frontier: Frontier,
                 disposition: Disposition, offers_sitemaps: bool = False) -> None:
        self.offers_sitemaps = offers_sitemaps  # ExtractorRobotsTxt: Sitemap lines become manifest links
        self.policy = policy
        self.servers = servers
        self.fetcher = fetcher
        self.frontier = frontier
        self.disposition = disposition

    async def process(self, curi: Curi) -> Outcome | None:
        if self.policy == "ignore" or curi.uri.is_prerequisite:
            return None
        if not self.servers.has_robots(curi.authority):
            await self._fetch_robots(curi)
        if not self.servers.is_allowed(curi.authority, curi.uri.url):
            self.disposition.record_robots_denial(curi.queue.key, curi.host)
            return curi.fail(ROBOTS_PRECLUDED)
        return None

    async def _fetch_robots(self, curi: Curi) -> None:
        uri, host, port = curi.uri, curi.host, curi.port
        robots_url = f"{uri.url.split('://', 1)[0]}://{host}{'' if port in (80, 443) else f':{port}'}/robots.txt"
        robots_uri = CrawlUri(robots_url, uri.hop_path + "P", uri.url, uri.seed, is_prerequisite=True)
        if self.frontier.is_done(robots_url):
            # Fetched already: the rules come from the text known for the authority (none: allow all).
            self.servers.use_known_robots(curi.authority)
            return
        text = None
        with await self.fetcher.fetch(robots_url, uri.url, True, curi.address) as result:
            if result.status >= 0:
                self.disposition.record_capture(curi.queue.key, robots_uri, result, curi.thread, extract=False)
                if 200 <= result.status < 300:
                    text = result.read_payload(ROBOTS_MAX_BYTES).decode("utf-8", "replace")
            else:
                self.disposition.record_failure(robots_uri, result.status, curi.thread, [], started=result.started)
        self.frontier.mark_done(robots_uri)
        self.servers.set_robots(curi.authority, text)
        if self.offers_sitemaps and text:
            self.disposition.record_robots_sitemaps(robots_uri, text)


class FormLoginPrerequisite:
    """The credential store's login forms (HtmlFormCredential), as Heritrix's credential precondition: a URI
    of a server with a login form not yet posted waits while the form is posted to its ``loginUri`` (a
    prerequisite, hop ``P``, recorded like any capture: its request record holds the form), once per
    credential, whatever the answer; a URI that is itself a login URI is fetched by POSTing its form.
    ``posted`` (the credentials' names) is kept in checkpoints."""

    def __init__(self, credentials: Iterable[FormCredential], servers: ServerCache, fetcher: Fetcher,
                 frontier: Frontier, disposition: Disposition, queue_key: Callable[[str], str],
                 posted: set[str]) -> None:
        self.by_server: dict[str, list[FormCredential]] = {}
        self.by_login_uri: dict[str, FormCredential] = {}
        for credential in credentials:
            login_uri = canonical_url(credential.login_uri) or credential.login_uri
            credential = replace(credential, login_uri=login_uri)
            self.by_server.setdefault(credential.domain, []).append(credential)
            self.by_login_uri.setdefault(login_uri, credential)
        self.servers = servers
        self.fetcher = fetcher
        self.frontier = frontier
        self.disposition = disposition
        self.queue_key = queue_key
        self.posted = posted

    async def process(self, curi: Curi) -> Outcome | None:
        uri = curi.uri
        if uri.is_prerequisite:
            return None
        own = self.by_login_uri.get(uri.url)
        if own is not None:
            # the login URI itself, met as a link or a seed: its fetch is the form's POST
            self.posted.add(own.name)
            curi.method, curi.body = "POST", own.body()
            return None
        for credential in self.by_server.get(server_name(uri.url), ()):
            if credential.name not in self.posted:
                self.posted.add(credential.name)
                await self._post(curi, credential)
        return None

    async def _post(self, curi: Curi, credential: FormCredential) -> None:
        uri = curi.uri
        login_uri = CrawlUri(credential.login_uri, uri.hop_path + "P", uri.url, uri.seed, is_prerequisite=True)
        if self.frontier.is_done(login_uri.url):
            return
        host = urlsplit(login_uri.url).hostname or ""
        key = self.queue_key(login_uri.url)
        address = host_address(self.servers, self.disposition, host, key, login_uri, curi.thread)
        refusal = self.servers.refusal(host)
        if refusal is not None:
            self.disposition.record_failure(login_uri, DESTINATION_REFUSED, curi.thread, [refusal.annotation])
            return
        if address is None:
            self.disposition.record_failure(login_uri, DOMAIN_LOOKUP_FAILED, curi.thread, [])
            return
        with await self.fetcher.fetch(login_uri.url, uri.url, True, address, "POST", credential.body()) as result:
            if result.status >= 0:
                self.disposition.record_capture(key, login_uri, result, curi.thread)
            else:
                self.disposition.record_failure(login_uri, result.status, curi.thread, [], started=result.started,
                                                duration_ms=result.duration_ms)
