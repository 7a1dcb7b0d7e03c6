"""The engine's ``--hosts`` file: host names resolved without DNS.

Lines are "name address"; '#' starts a comment; names may be IDNs in Unicode or punycode. Keys of the
returned mapping are punycode and lower case, as they appear in URLs the crawler fetches.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from harvestdef.domainnames import to_punycode
from harvestdef.errors import ValidationError


class HostsFileError(ValidationError, ValueError):
    """A line of a hosts file cannot be read; the message names the file and line.

    Also a ValueError, for callers that catch that.
    """


def parse_hosts(text: str, source: str = "<hosts>") -> dict[str, str]:
    hosts: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        content = line.split("#", 1)[0].strip()
        if not content:
            continue
        parts = content.split()
        if len(parts) != 2:
            raise HostsFileError(f"{source}:{number}: expected 'name address', got {line!r}")
        name, address = parts
        try:
            ipaddress.ip_address(address)
        except ValueError as exc:
            raise HostsFileError(f"{source}:{number}: {address!r} is not an IP address") from exc
        hosts[to_punycode(name)] = address
    return hosts


def load_hosts_file(path: Path) -> dict[str, str]:
    """Read a hosts file: name (punycode, lower case) -> address."""
    path = Path(path)
    return parse_hosts(path.read_text(encoding="utf-8"), str(path))
