"""The destination policy where seeds and added URIs are saved: what it refuses without resolving (IP literals
of refused networks, ``localhost``), each refusal naming the line or the URI; what the operator's
harvestsuite.network.allowDestinations allows; and names, which are left to the crawler's check after
resolution."""

from __future__ import annotations

import pytest

from harvestdef.destinations import PUBLIC_ONLY, DestinationPolicy
from harvestdef.errors import FieldError
from harvestdef.livechanges import validate_change
from harvestdef.seeds import check_event_seeds, check_seed_list

UNLESS = "which harvesting does not connect to unless harvestsuite.network.allowDestinations allows it"
REFUSED = [
    ("http://169.254.169.254/latest/meta-data/", f"169.254.169.254 is a link-local address, {UNLESS}"),
    ("http://10.0.0.1/", f"10.0.0.1 is a private address, {UNLESS}"),
    ("http://[::1]:8080/", f"::1 is a loopback address, {UNLESS}"),
    ("http://[fe80::1]/", f"fe80::1 is a link-local address, {UNLESS}"),
    ("http://[fd00::5]/", f"fd00::5 is a private address, {UNLESS}"),
    ("http://[::ffff:192.168.1.1]/", f"::ffff:192.168.1.1 is a private (as IPv6) address, {UNLESS}"),
    ("http://100.64.0.1/", f"100.64.0.1 is a shared address, {UNLESS}"),
    ("http://224.0.0.1/", f"224.0.0.1 is a multicast address, {UNLESS}"),
    ("http://0.0.0.0:5432/", f"0.0.0.0 is an unspecified address, {UNLESS}"),
    ("http://localhost:15672/", f"localhost is a loopback name, {UNLESS}"),
    ("http://admin.localhost/", f"admin.localhost is a loopback name, {UNLESS}"),
]


def test_event_seeds_naming_internal_addresses_are_refused_each_with_its_line() -> None:
    lines = ["http://www.kb.dk/", *(line for line, _ in REFUSED), "http://93.184.216.34/"]
    checked = check_event_seeds(lines, destinations=PUBLIC_ONLY)
    assert [(r.line, r.text, r.reason) for r in checked.refusals] == [
        (number, line, reason) for number, (line, reason) in enumerate(REFUSED, start=2)]
    # a public address and a name pass: a name is decided on its addresses, by the crawler
    assert checked.seeds == ("http://www.kb.dk/", "http://93.184.216.34/")


def test_without_a_policy_the_seed_rule_is_as_before() -> None:
    assert check_event_seeds(["http://10.0.0.1/", "http://[::1]:8080/"]).refusals == ()


def test_the_setting_allows_networks_and_names() -> None:
    policy = DestinationPolicy.from_entries(["10.0.0.0/8", "::1", "localhost"])
    checked = check_event_seeds(["http://10.20.30.40/", "http://[::1]:8080/", "http://localhost:8080/",
                                 "http://192.168.0.1/"], destinations=policy)
    # localhost passes the policy and meets the domain rule, which has always refused a name without a TLD
    assert [(r.line, r.reason.split(",")[0]) for r in checked.refusals] == [
        (3, "the host 'localhost' has no top-level domain (a domain needs at least two labels)"),
        (4, "192.168.0.1 is a private address")]
    assert checked.seeds == ("http://10.20.30.40/", "http://[::1]:8080/")


def test_a_seed_list_of_an_ip_domain_is_refused_on_the_destination() -> None:
    checked = check_seed_list("127.0.0.1", ["http://127.0.0.1:5432/"], destinations=PUBLIC_ONLY)
    assert [str(refusal) for refusal in checked.refusals] == [
        f"line 1: 'http://127.0.0.1:5432/': 127.0.0.1 is a loopback address, {UNLESS}"]


@pytest.mark.parametrize("uris, field, words", [
    (["http://127.0.0.1:8080/ok", "http://127.0.0.1:5432/"], "uris[0]", "127.0.0.1 is a loopback address"),
    (["http://127.0.0.1.nip.io/", "http://[::1]:15672/"], "uris[1]", "::1 is a loopback address"),
])
def test_added_uris_naming_internal_addresses_are_refused_naming_the_uri(uris: list[str], field: str,
                                                                        words: str) -> None:
    with pytest.raises(FieldError) as refused:
        validate_change("add_uris", {"uris": uris}, ["127.0.0.1", "::1", "nip.io"], destinations=PUBLIC_ONLY)
    assert refused.value.field == field
    assert f"'{uris[int(field[5])]}': {words}" in str(refused.value)


def test_added_uris_the_setting_allows_are_stored() -> None:
    allowed = DestinationPolicy.from_entries(["127.0.0.0/8"])
    payload = validate_change("add_uris", {"uris": ["http://127.0.0.1:8080/new"]}, ["127.0.0.1"],
                              destinations=allowed)
    assert payload == {"uris": ["http://127.0.0.1:8080/new"]}
