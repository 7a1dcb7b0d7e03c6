"""The destination policy (harvestdef/destinations.py): which addresses harvesting may connect to."""

from __future__ import annotations

import pytest

from harvestdef.destinations import PUBLIC_ONLY, DestinationPolicy, DestinationRefused, address_kind
from harvestdef.errors import SettingsError, ValidationError
from harvestdef.settings import load_settings


@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.1", "loopback"),
    ("127.255.0.9", "loopback"),
    ("::1", "loopback"),
    ("169.254.169.254", "link-local"),
    ("fe80::1", "link-local"),
    ("10.0.0.1", "private"),
    ("172.16.5.4", "private"),
    ("172.31.255.255", "private"),
    ("192.168.1.1", "private"),
    ("fd12:3456::1", "private"),
    ("100.64.0.1", "shared"),
    ("224.0.0.251", "multicast"),
    ("ff02::1", "multicast"),
    ("0.0.0.0", "unspecified"),
    ("::", "unspecified"),
    ("::ffff:127.0.0.1", "loopback (as IPv6)"),
    ("::ffff:169.254.169.254", "link-local (as IPv6)"),
    ("2002:a00:1::", "private (as IPv6)"),          # 6to4 of 10.0.0.1
    ("64:ff9b::c0a8:101", "private (as IPv6)"),     # NAT64 of 192.168.1.1
])
def test_non_public_addresses_are_named_by_their_kind(address: str, kind: str) -> None:
    assert address_kind(address) == kind
    reason = PUBLIC_ONLY.refusal("example.org", address)
    assert reason is not None and kind in reason and "harvestsuite.network.allowDestinations" in reason


@pytest.mark.parametrize("address", ["8.8.8.8", "172.32.0.1", "100.128.0.1", "2a00:1450:4001::200e",
                                     "::ffff:8.8.8.8"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert address_kind(address) is None
    assert PUBLIC_ONLY.refusal("example.org", address) is None


def test_the_operator_allows_networks_and_names_and_the_hosts_file_allows_its_names() -> None:
    policy = DestinationPolicy.from_entries(["10.20.0.0/16", "intranet.example.org", "*.lab.example.org"],
                                            hosts={"Demo.Example": "127.0.0.1"})
    assert policy.refusal("a.example.org", "10.20.3.4") is None
    assert policy.refusal("a.example.org", "10.21.3.4") is not None
    assert policy.refusal("intranet.example.org", "192.168.0.9") is None
    assert policy.refusal("x.lab.example.org", "192.168.0.9") is None
    assert policy.refusal("lab.example.org.evil.net", "192.168.0.9") is not None
    assert policy.refusal("demo.example", "127.0.0.1") is None
    assert policy.refusal("other.example", "127.0.0.1") is not None


def test_one_refused_address_among_public_ones_refuses_the_name() -> None:
    with pytest.raises(DestinationRefused) as refused:
        PUBLIC_ONLY.check_all("rebind.example", ["8.8.8.8", "127.0.0.1"])
    assert refused.value.destination == "rebind.example"
    assert "loopback" in refused.value.reason


def test_ip_literals_resolve_to_themselves_and_are_checked() -> None:
    with pytest.raises(DestinationRefused, match="link-local"):
        PUBLIC_ONLY.resolve("169.254.169.254")
    with pytest.raises(DestinationRefused, match="loopback"):
        PUBLIC_ONLY.resolve("[::1]")
    assert PUBLIC_ONLY.resolve("8.8.8.8") == ["8.8.8.8"]


def test_localhost_is_refused_after_resolution() -> None:
    with pytest.raises(DestinationRefused, match="loopback"):
        PUBLIC_ONLY.resolve("localhost", 80)


def test_a_bad_entry_of_the_setting_stops_start_up_naming_it() -> None:
    with pytest.raises(ValidationError, match="'not a/net'"):
        DestinationPolicy.from_entries(["not a/net"])
    with pytest.raises(SettingsError, match=r"allowDestinations: 'http://x/'"):
        load_settings(environ={}, overrides={"harvestsuite.network.allowDestinations": ["http://x/"]})


def test_the_setting_gives_the_policy() -> None:
    settings = load_settings(environ={}, overrides={"harvestsuite.network.allowDestinations": ["127.0.0.0/8"]})
    policy = settings.network.policy({"demo.example": "10.9.9.9"})
    assert policy.refusal("anything", "127.0.0.1") is None
    assert policy.refusal("demo.example", "10.9.9.9") is None
    assert policy.refusal("anything", "10.9.9.9") is not None
