"""What the crawl knows of each host and each host:port, as Heritrix's ServerCache keeps CrawlHost (the
address a DNS lookup gave) and CrawlServer (the robots.txt rules): looked up or fetched once, asked for
every URI, saved in checkpoints.

It looks addresses up (the engine's ``--hosts`` file first, then the system resolver) but fetches nothing
and writes no records or logs: the crawl controller fetches robots.txt and records the ``dns:`` capture.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping

from harvester.engine.robots import RobotsRules


class ServerCache:
    """Addresses by host (None: the lookup failed) and robots.txt by host:port (text None: none, allow all)."""

    def __init__(self, hosts: Mapping[str, str], user_agent: str) -> None:
        self.hosts = dict(hosts)
        self.user_agent = user_agent
        self.addresses: dict[str, str | None] = {}
        self.robots_texts: dict[str, str | None] = {}
        self._robots: dict[str, RobotsRules] = {}

    # -- hosts ----------------------------------------------------------------------------------------
    def knows_host(self, host: str) -> bool:
        return host in self.addresses

    def address(self, host: str) -> str | None:
        return self.addresses.get(host)

    def take_literal(self, host: str) -> None:
        """An IP literal is its own address (Heritrix's CrawlHost): no lookup, no ``dns:`` record."""
        self.addresses[host] = host

    def look_up(self, host: str) -> str | None:
        """Resolve ``host`` (the hosts file first) and remember the answer, a failure included."""
        address = self.hosts.get(host)
        if address is None:
            try:
                address = str(socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0][4][0])
            except OSError:
                address = None
        self.addresses[host] = address
        return address

    # -- robots.txt -----------------------------------------------------------------------------------
    def has_robots(self, authority: str) -> bool:
        return authority in self._robots

    def set_robots(self, authority: str, text: str | None) -> None:
        self.robots_texts[authority] = text
        self._robots[authority] = RobotsRules(text, self.user_agent)

    def use_known_robots(self, authority: str) -> None:
        """Rules from the text already known for ``authority`` (none known: everything allowed)."""
        self.set_robots(authority, self.robots_texts.get(authority))

    def is_allowed(self, authority: str, url: str) -> bool:
        rules = self._robots.get(authority)
        return rules is None or rules.is_allowed(url)

    def crawl_delay(self, authority: str) -> float | None:
        rules = self._robots.get(authority)
        return rules.crawl_delay() if rules is not None else None

    # -- checkpoints ----------------------------------------------------------------------------------
    def restore(self, addresses: Mapping[str, str | None], robots_texts: Mapping[str, str | None]) -> None:
        self.addresses = dict(addresses)
        self.robots_texts = {}
        self._robots = {}
        for authority, text in robots_texts.items():
            self.set_robots(authority, text)
