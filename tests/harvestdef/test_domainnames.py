"""Domain-name rules: registered domains from the public-suffix list, IDNs, IP addresses, default seeds."""

from __future__ import annotations

import pytest

from harvestdef.domainnames import (
    default_seeds,
    domain_of_url,
    normalize_domain_name,
    registered_domain,
    to_punycode,
    to_unicode,
)
from harvestdef.errors import DomainNameError


@pytest.mark.parametrize(("host", "domain"), [
    ("www.kb.dk", "kb.dk"),
    ("KB.DK.", "kb.dk"),
    ("news.bbc.co.uk", "bbc.co.uk"),
    ("a.b.c.example.com", "example.com"),
    ("www.København.dk", "københavn.dk"),
    ("www.xn--kbenhavn-54a.dk", "københavn.dk"),
    ("127.0.0.1", "127.0.0.1"),
    ("[::1]", "::1"),
])
def test_registered_domain(host, domain):
    assert registered_domain(host) == domain


@pytest.mark.parametrize(("name", "reason"), [
    ("co.uk", "public suffix"),
    ("localhost", "no top-level domain"),
    ("", "empty"),
    ("exa mple.dk", "not a valid host name"),
    ("-bad.dk", "not a valid host name"),
    ("www.kb.dk", "its domain is 'kb.dk'"),
    ("a" * 64 + ".dk", "longer than 63"),
])
def test_invalid_names_are_refused_with_the_reason(name, reason):
    with pytest.raises(DomainNameError, match=reason):
        normalize_domain_name(name)


def test_idn_round_trip():
    assert to_punycode("københavn.dk") == "xn--kbenhavn-54a.dk"
    assert to_unicode("xn--kbenhavn-54a.dk") == "københavn.dk"
    assert normalize_domain_name("xn--kbenhavn-54a.dk") == "københavn.dk"


def test_domain_of_url_and_bare_lines():
    assert domain_of_url("https://www.kb.dk:8443/path?q=1") == "kb.dk"
    assert domain_of_url("kb.dk/some/page") == "kb.dk"
    assert domain_of_url("http://xn--kbenhavn-54a.dk/") == "københavn.dk"
    with pytest.raises(DomainNameError):
        domain_of_url("http:///nohost")


def test_default_seeds():
    assert default_seeds("kb.dk") == ["http://www.kb.dk", "https://www.kb.dk", "http://kb.dk", "https://kb.dk"]
    assert default_seeds("københavn.dk")[0] == "http://www.xn--kbenhavn-54a.dk"
    assert default_seeds("10.1.2.3") == ["http://10.1.2.3", "https://10.1.2.3"]
