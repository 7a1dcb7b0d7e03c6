"""The destination policy: which addresses the harvesting side may connect to.

A harvested page, a seed list, a live ``add_uris`` or a webhook URL names where HarvestSuite connects next.
In an institution's network the harvesters sit beside the database, the broker and admin pages, so an
address that is not on the public internet is refused unless the operator allows it: loopback, link-local,
private, shared (carrier-grade NAT), multicast, reserved and unspecified addresses, and the IPv4-mapped,
6to4 and NAT64 forms of them. The check is made on an *address*, after the name was resolved, and on every
address a name has, so a name cannot lead past it; callers check again the address they connect to, so a
name that resolved public once and private later is caught as well.

Allowed are the networks and names of the operator's ``harvestsuite.network.allowDestinations`` setting,
and the names mapped by the crawler's hosts file (the demo and the tests crawl local sites that way: a name
the operator mapped by hand is the operator's decision).

This module decides only; it opens nothing. ``DestinationRefused`` carries the reason that crawl.log, the
API's 4xx and the webhook form show.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from harvestdef.errors import ValidationError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# The networks refused, each with the name its refusal gives. The order matters only for the name given:
# the first network that holds an address names it.
_REFUSED: tuple[tuple[Network, str], ...] = tuple(
    (ipaddress.ip_network(network), kind) for network, kind in (
        ("0.0.0.0/8", "unspecified"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("10.0.0.0/8", "private"),
        ("172.16.0.0/12", "private"),
        ("192.168.0.0/16", "private"),
        ("100.64.0.0/10", "shared"),
        ("192.0.0.0/24", "reserved"),
        ("192.0.2.0/24", "reserved"),
        ("198.18.0.0/15", "reserved"),
        ("198.51.100.0/24", "reserved"),
        ("203.0.113.0/24", "reserved"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("fe80::/10", "link-local"),
        ("fc00::/7", "private"),
        ("ff00::/8", "multicast"),
        ("100::/64", "reserved"),
        ("2001:db8::/32", "reserved"),
        ("fec0::/10", "reserved"),
    ))


class DestinationRefused(ValidationError):
    """A destination the policy refuses; the message names the destination and why."""

    def __init__(self, destination: str, reason: str) -> None:
        super().__init__(f"{destination}: {reason}")
        self.destination = destination
        self.reason = reason


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form carries (IPv4-mapped, IPv4-compatible, 6to4, NAT64), else None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    packed = address.packed
    if packed[:12] == bytes(12) and packed[12:] != bytes(4) and address != ipaddress.IPv6Address("::1"):
        return ipaddress.IPv4Address(packed[12:])      # IPv4-compatible ::a.b.c.d (deprecated, still routed)
    if address in ipaddress.IPv6Network("64:ff9b::/96"):
        return ipaddress.IPv4Address(packed[12:])
    return None


def address_kind(address: str | Address) -> str | None:
    """The kind of non-public network ``address`` is in ("loopback", "private", ...), or None if public."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            kind = address_kind(embedded)
            return f"{kind} (as IPv6)" if kind else None
    for network, kind in _REFUSED:
        if ip.version == network.version and ip in network:
            return kind
    return None


def _parse_allowed(entries: Iterable[str]) -> tuple[tuple[Network, ...], frozenset[str]]:
    networks: list[Network] = []
    names: set[str] = set()
    for entry in entries:
        text = entry.strip()
        if not text:
            continue
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
            continue
        except ValueError:
            pass
        name = text.lower().rstrip(".")
        if not name or any(c in name for c in "/ :@") or name.startswith("*") and not name.startswith("*."):
            raise ValidationError(f"harvestsuite.network.allowDestinations: {entry!r} is neither a network "
                                  f"(10.0.0.0/8, ::1) nor a host name (archive.example.org, *.example.org)")
        names.add(name)
    return tuple(networks), frozenset(names)


@dataclass(frozen=True)
class DestinationPolicy:
    """Which destinations may be connected to: every public address, and the non-public ones allowed.

    ``allowed_networks`` and ``allowed_names`` come from the operator's setting; a name ``*.example.org``
    allows every name under example.org. ``mapped_names`` are the names of the crawler's hosts file, which
    are allowed whatever address they map to.
    """

    allowed_networks: tuple[Network, ...] = ()
    allowed_names: frozenset[str] = frozenset()
    mapped_names: frozenset[str] = field(default=frozenset())

    @classmethod
    def from_entries(cls, entries: Iterable[str], hosts: Mapping[str, str] | None = None) -> DestinationPolicy:
        """The policy of the setting's ``entries`` (networks and names) and a hosts file's names."""
        networks, names = _parse_allowed(entries)
        return cls(networks, names, frozenset(name.lower() for name in (hosts or {})))

    def with_hosts(self, hosts: Mapping[str, str]) -> DestinationPolicy:
        """This policy, also allowing the names of the hosts file ``hosts``."""
        return DestinationPolicy(self.allowed_networks, self.allowed_names,
                                 self.mapped_names | frozenset(name.lower() for name in hosts))

    def name_is_allowed(self, host: str) -> bool:
        """Whether ``host`` is allowed by name (the setting or the hosts file), whatever its addresses."""
        name = host.lower().rstrip(".")
        if name in self.mapped_names or name in self.allowed_names:
            return True
        return any(allowed.startswith("*.") and name.endswith(allowed[1:]) for allowed in self.allowed_names)

    def refusal(self, host: str, address: str) -> str | None:
        """Why connecting to ``address`` (what ``host`` resolved to) is refused, or None if it is allowed."""
        if self.name_is_allowed(host):
            return None
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return f"{address!r} is not an IP address"
        kind = address_kind(ip)
        if kind is None:
            return None
        if any(ip.version == network.version and ip in network for network in self.allowed_networks):
            return None
        shown = host if host == address else f"{host} ({address})"
        article = "an" if kind[0] in "aeiou" else "a"
        return (f"{shown} is {article} {kind} address, which harvesting does not connect to unless "
                f"harvestsuite.network.allowDestinations allows it")

    def refusal_before_resolution(self, host: str) -> str | None:
        """Why ``host`` is refused before any lookup (a seed or an added URI as it is saved), or None: an IP
        literal the policy refuses, and ``localhost`` and names under ``.localhost``, which resolve to
        loopback by definition (RFC 6761 §6.3); a name the setting allows is not refused. Other names are
        decided on their addresses, when the crawler resolves them."""
        bare = host.strip("[]").lower().rstrip(".")
        if self.name_is_allowed(bare):
            return None
        try:
            ipaddress.ip_address(bare.split("%", 1)[0])
        except ValueError:
            if bare == "localhost" or bare.endswith(".localhost"):
                return (f"{bare} is a loopback name, which harvesting does not connect to unless "
                        f"harvestsuite.network.allowDestinations allows it")
            return None
        return self.refusal(bare, bare)

    def check(self, host: str, address: str) -> None:
        """Raise DestinationRefused if connecting to ``address`` for ``host`` is refused."""
        reason = self.refusal(host, address)
        if reason is not None:
            raise DestinationRefused(host, reason)

    def check_all(self, host: str, addresses: Iterable[str]) -> None:
        """Raise DestinationRefused if any address of ``host`` is refused: a name with one private address
        among public ones could be connected to the private one."""
        for address in addresses:
            self.check(host, address)

    def resolve(self, host: str, port: int | None = None) -> list[str]:
        """Every address of ``host`` by the system resolver, each checked; raises DestinationRefused for a
        refused one, OSError when the name does not resolve. An IP literal is its own address."""
        bare = host.strip("[]")
        try:
            ipaddress.ip_address(bare.split("%", 1)[0])
            addresses = [bare]
        except ValueError:
            infos = socket.getaddrinfo(bare, port, type=socket.SOCK_STREAM)
            addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        self.check_all(bare, addresses)
        return addresses


#: The policy that allows nothing beyond the public internet.
PUBLIC_ONLY = DestinationPolicy()
