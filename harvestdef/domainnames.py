"""Domain-name rules: which registered domain a host belongs to, IDNs, IP addresses, default seeds.

The registered domain comes from the public-suffix list bundled with ``publicsuffixlist`` (offline; it
never touches the network). Domain names are stored in Unicode (``københavn.dk``); seeds and URLs carry
the punycode form (``xn--kbenhavn-54a.dk``), as crawlers need it. An IP address is its own domain: the
public-suffix list would read ``127.0.0.1`` as a name under ``1``, so addresses are recognised first.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from urllib.parse import urlsplit

import idna
from publicsuffixlist import PublicSuffixList

from harvestdef.errors import DomainNameError

_psl = PublicSuffixList()

# A label of letters, digits and hyphens (Unicode letters allowed: IDNs are checked by idna afterwards).
_LABEL = re.compile(r"^(?!-)[\w-]+(?<!-)$", re.UNICODE)
MAX_NAME_LENGTH = 253


def is_ip_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def to_unicode(host: str) -> str:
    """``xn--kbenhavn-54a.dk`` -> ``københavn.dk``; lower-cased; ASCII names unchanged."""
    host = host.strip().rstrip(".").lower()
    if is_ip_address(host):
        return host.strip("[]")
    try:
        return idna.decode(host)
    except idna.IDNAError as exc:
        raise DomainNameError(f"{host!r} is not a valid host name: {exc}") from exc


def to_punycode(host: str) -> str:
    """``københavn.dk`` -> ``xn--kbenhavn-54a.dk``; lower-cased; ASCII names unchanged."""
    host = host.strip().rstrip(".").lower()
    if host.isascii():
        # the usual case, and every IP address; parsing an address costs more than the rest of a page's row
        return host.strip("[]") if host.startswith("[") and is_ip_address(host) else host
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except idna.IDNAError as exc:
        raise DomainNameError(f"{host!r} is not a valid host name: {exc}") from exc


def _check_labels(name: str, original: str) -> None:
    if not name:
        raise DomainNameError(f"{original!r} is empty")
    if len(name) > MAX_NAME_LENGTH:
        raise DomainNameError(f"{original!r} is longer than {MAX_NAME_LENGTH} characters")
    labels = name.split(".")
    if len(labels) < 2:
        raise DomainNameError(f"{original!r} has no top-level domain (a domain needs at least two labels)")
    for label in labels:
        if not label:
            raise DomainNameError(f"{original!r} has an empty label")
        if len(label) > 63:
            raise DomainNameError(f"{original!r} has a label longer than 63 characters: {label[:20]!r}...")
        if not _LABEL.match(label) or "_" in label:
            raise DomainNameError(
                f"{original!r} has an invalid label {label!r} (letters, digits and inner hyphens only)")


@lru_cache(maxsize=65536)
def registered_domain(host: str) -> str:
    """The domain a host belongs to, in Unicode: ``www.bbc.co.uk`` -> ``bbc.co.uk``.

    An IP address is returned as it is. Raises DomainNameError with the reason when the host is not a
    valid name or is itself a public suffix (``co.uk``).
    """
    original = host
    host = host.strip().rstrip(".").lower()
    if not host:
        raise DomainNameError(f"{original!r} is empty")
    if is_ip_address(host):
        return str(ipaddress.ip_address(host.strip("[]")))
    unicode_host = to_unicode(to_punycode(host))
    _check_labels(unicode_host, original)
    ascii_host = to_punycode(unicode_host)
    domain = _psl.privatesuffix(ascii_host)
    if domain is None:
        raise DomainNameError(f"{original!r} is a public suffix, not a domain that can be registered")
    return to_unicode(domain)


def normalize_domain_name(name: str) -> str:
    """A curator's domain name as it is stored: Unicode, lower case, and a registered domain itself.

    ``www.kb.dk`` is refused (it is a host of ``kb.dk``), as is anything that is not a valid name.
    """
    domain = registered_domain(name)
    given = name.strip().rstrip(".").lower()
    if not is_ip_address(given) and to_unicode(to_punycode(given)) != domain:
        raise DomainNameError(f"{name!r} is not a registered domain; its domain is {domain!r}")
    return domain


def host_of_url(url: str) -> str:
    """The host of a URL or of a bare ``host/path`` line, lower-cased, without port."""
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    try:
        host = urlsplit(text).hostname
    except ValueError as exc:
        raise DomainNameError(f"{url!r} is not a valid URL: {exc}") from exc
    if not host:
        raise DomainNameError(f"{url!r} has no host name")
    return host


def domain_of_url(url: str) -> str:
    """The registered domain of a URL (or of a bare domain or host name)."""
    return registered_domain(host_of_url(url))


def default_seeds(domain: str) -> list[str]:
    """A new domain's default seeds (reference §2.8): http://www.D, https://www.D, http://D, https://D.

    IDNs are written in punycode; an IP domain gets http and https without www.
    """
    if is_ip_address(domain):
        host = f"[{domain}]" if ":" in domain else domain
        return [f"http://{host}", f"https://{host}"]
    ascii_name = to_punycode(domain)
    return [f"http://www.{ascii_name}", f"https://www.{ascii_name}", f"http://{ascii_name}",
            f"https://{ascii_name}"]
