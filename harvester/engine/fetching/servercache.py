"""What the crawl knows of each host and each host:port, as Heritrix's ServerCache keeps CrawlHost (the
address a DNS lookup gave) and CrawlServer (the robots.txt rules): looked up or fetched once (a name
again once its lookup is older than PreconditionEnforcer's ipValidityDurationSeconds), asked for every
URI, saved in checkpoints.

It looks addresses up (the engine's ``--hosts`` file first, then the system resolver) but fetches nothing
and writes no records: the crawl controller fetches robots.txt and records the ``dns:`` capture.
Every address a lookup gives is put to the destination policy (harvestdef/destinations.py): a host with one
refused address among them is refused whole, since the crawl could be sent to that one; ``refusal(host)``
says why (and job.log says it once per host), and the chain ends the host's URIs with DESTINATION_REFUSED
instead of connecting.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass

from harvestdef.destinations import PUBLIC_ONLY, DestinationPolicy, address_kind
from harvester.engine.fetching.robots import RobotsRules


@dataclass(frozen=True)
class Refusal:
    """Why the destination policy refuses a host: ``reason`` (the policy's sentence, for job.log) and the
    ``address`` it refused."""

    reason: str
    address: str

    @property
    def annotation(self) -> str:
        """crawl.log's annotation: ``destinationRefused:KIND`` (loopback, private, link-local-as-IPv6, ...);
        crawl.log's annotations hold no spaces, the whole reason goes to job.log."""
        kind = address_kind(self.address) if _is_address(self.address) else None
        return "destinationRefused:" + (re.sub(r"[^A-Za-z0-9]+", "-", kind).strip("-") if kind else "invalid")


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return False
    return True


class ServerCache:
    """Addresses by host (None: the lookup failed) and robots.txt by host:port (text None: none, allow all).

    ``destinations`` is the destination policy; the names of ``hosts`` are allowed whatever it says (the
    operator mapped them by hand). Refusals are kept by host beside the address connected to."""

    def __init__(self, hosts: Mapping[str, str], user_agent: str,
                 destinations: DestinationPolicy = PUBLIC_ONLY, job_log: logging.Logger | None = None,
                 ip_validity_seconds: float = 0) -> None:
        self.hosts = dict(hosts)
        self.job_log = job_log or logging.getLogger(__name__)
        self.user_agent = user_agent
        self.destinations = destinations.with_hosts(self.hosts)
        self.addresses: dict[str, str | None] = {}
        self.refusals: dict[str, Refusal] = {}
        # Heritrix's ipValidityDurationSeconds (0: a lookup never expires): when each host was looked up
        # (monotonic), so a name is resolved again, and its new addresses checked, once its lookup is old
        self.ip_validity_seconds = ip_validity_seconds
        self._looked_up_at: dict[str, float] = {}
        self.robots_texts: dict[str, str | None] = {}
        self._robots: dict[str, RobotsRules] = {}

    # -- hosts ----------------------------------------------------------------------------------------
    def knows_host(self, host: str) -> bool:
        """Whether ``host`` was looked up and its lookup has not expired (an IP literal never expires)."""
        if host not in self.addresses:
            return False
        looked_up_at = self._looked_up_at.get(host)
        return (looked_up_at is None or not self.ip_validity_seconds
                or time.monotonic() - looked_up_at < self.ip_validity_seconds)

    def address(self, host: str) -> str | None:
        return self.addresses.get(host)

    def refusal(self, host: str) -> Refusal | None:
        """Why the destination policy refuses ``host`` (one of its addresses is not public), or None."""
        return self.refusals.get(host)

    def take_literal(self, host: str) -> None:
        """An IP literal is its own address (Heritrix's CrawlHost): no lookup, no ``dns:`` record."""
        self.addresses[host] = host
        self._check(host, [host.strip("[]")])

    def look_up(self, host: str) -> str | None:
        """Resolve ``host`` (the hosts file first) and remember the answer, a failure included; every
        address the resolver gives is checked, the first one is the one connected to."""
        address = self.hosts.get(host)
        addresses = [address] if address is not None else []
        if address is None:
            try:
                infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
                addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
            except OSError:
                addresses = []
        self.addresses[host] = addresses[0] if addresses else None
        self._looked_up_at[host] = time.monotonic()
        self._check(host, addresses)
        return self.addresses[host]

    def _check(self, host: str, addresses: list[str]) -> None:
        self.refusals.pop(host, None)
        for address in addresses:
            reason = self.destinations.refusal(host, address)
            if reason is not None:
                self.refusals[host] = Refusal(reason, address)
                self.job_log.warning("destination refused: %s", reason)
                return

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
        # A checkpoint keeps the address connected to; the policy in force now decides on it again.
        self.refusals = {}
        now = time.monotonic()
        self._looked_up_at = {host: now for host in self.addresses if not _is_address(host.strip("[]"))}
        for host, address in self.addresses.items():
            if address is not None:
                self._check(host, [address])
        self.robots_texts = {}
        self._robots = {}
        for authority, text in robots_texts.items():
            self.set_robots(authority, text)

