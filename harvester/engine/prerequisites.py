"""The prerequisites of a fetch, as Heritrix's PreconditionEnforcer: a host's address (the ``dns:`` lookup,
once per host) and a host:port's robots.txt (fetched once, as a prerequisite with hop ``P``), and the robots
rules a URI must pass. What is known is kept in the ServerCache; what is fetched or looked up is recorded
through the disposition like any capture.
"""

from __future__ import annotations

import time

from harvester.engine.chain import DOMAIN_LOOKUP_FAILED, ROBOTS_PRECLUDED, Curi, Outcome
from harvester.engine.disposition import Disposition
from harvester.engine.fetch import Fetcher
from harvester.engine.frontier import CrawlUri, Frontier
from harvester.engine.queuepolicy import is_ip_address
from harvester.engine.servercache import ServerCache

ROBOTS_MAX_BYTES = 500_000  # robots.txt read beyond this is ignored, as by Heritrix's Robotstxt


class DnsPrerequisite:
    """Looks a host up the first time one of its URIs comes (an IP literal is its own address, with no
    ``dns:`` capture); a URI whose host has no address ends -6."""

    def __init__(self, servers: ServerCache, disposition: Disposition) -> None:
        self.servers = servers
        self.disposition = disposition

    async def process(self, curi: Curi) -> Outcome | None:
        servers, host = self.servers, curi.host
        if not servers.knows_host(host):
            if is_ip_address(host):
                servers.take_literal(host)
            else:
                started = time.time()
                address = servers.look_up(host)
                self.disposition.record_dns(curi.queue.key, host, address, curi.uri, curi.thread, started)
        curi.address = servers.address(host)
        if curi.address is None:
            return curi.fail(DOMAIN_LOOKUP_FAILED)
        return None


class RobotsPrerequisite:
    """Fetches a host:port's robots.txt before its first URI (unless the policy is ``ignore``) and ends a URI
    its rules disallow -9998. A prerequisite URI itself passes."""

    def __init__(self, policy: str, servers: ServerCache, fetcher: Fetcher, frontier: Frontier,
                 disposition: Disposition) -> None:
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
