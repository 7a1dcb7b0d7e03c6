"""Which frontier queue (and quota group) a URL belongs to, as Heritrix's queue assignment policies say.

It names queues only: it does not create, order or politeness-delay them (frontier.py does that), and it
reads no settings; the policy and whether to group by domain are given to it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from harvestdef.domainnames import is_ip_address, registered_domain, to_punycode

DEFAULT_PORTS = {"http": 80, "https": 443}


def queue_key_of(policy: str, by_domain: bool, scheme: str, host: str, port: int) -> str:
    """A queue's name as Heritrix's policies make it (heritrix3 engine/src/main/java/org/archive/crawler/
    frontier/HostnameQueueAssignmentPolicy.java and SurtAuthorityQueueAssignmentPolicy.java): host:port or
    the SURT authority, a non-default port kept so that two servers of one host get two queues, ':' written
    '#'. The domain policies (NetarchiveSuite's) put a registered domain's hosts and ports in one queue."""
    if by_domain:
        try:
            return to_punycode(registered_domain(host))
        except Exception:
            return host
    default_port = DEFAULT_PORTS.get(scheme, 80)
    if policy == "HostnameQueueAssignmentPolicy":
        # Heritrix adds :443 to an https authority without a port, so http and https of a host differ.
        if port != default_port or scheme == "https":
            return f"{host}#{port}"
        return host
    authority = host if is_ip_address(host) else ",".join(reversed(host.split("."))) + ","
    return authority + (f"#{port}" if port != default_port else "")


def host_of_queue(key: str) -> str:
    """The host (or registered domain) a queue key names, whatever policy made it: ``www.example.dk#8080``
    and ``dk,example,www,#8080`` both give ``www.example.dk``; a domain policy's key is the domain."""
    name = key.split("#", 1)[0]
    if "," in name:
        return ".".join(reversed([label for label in name.split(",") if label]))
    return name


def is_queue_of_domain(key: str, domain: str) -> bool:
    """Whether the queue ``key`` holds URIs of ``domain`` (punycode, lower case) or of one of its subdomains:
    with NetarchiveSuite's domain policies the key is the domain itself, with host queues it ends with it."""
    host = host_of_queue(key)
    return host == domain or host.endswith("." + domain)


class QueueAssignment:
    """One crawl's policy, remembering each (scheme, host, port)'s key: every discovered link asks, and the
    registered-domain lookup of the domain policies is not cheap."""

    def __init__(self, policy: str, by_domain: bool) -> None:
        self.policy = policy
        self.by_domain = by_domain
        self._keys: dict[tuple[str, str, int], str] = {}

    def key(self, url: str) -> str:
        """The URL's queue (and quota group)."""
        parts = urlsplit(url)
        host = parts.hostname or ""
        try:
            port = parts.port or DEFAULT_PORTS.get(parts.scheme, 80)
        except ValueError:
            port = DEFAULT_PORTS.get(parts.scheme, 80)
        cache_key = (parts.scheme, host, port)
        key = self._keys.get(cache_key)
        if key is None:
            key = self._keys[cache_key] = queue_key_of(self.policy, self.by_domain, parts.scheme, host, port)
        return key
