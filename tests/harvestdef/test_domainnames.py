"""Domain-name rules: registered domains from the public-suffix list, IDNs, IP addresses, default seeds."""

from __future__ import annotations

import pytest

from harvestdef.domainnames import (
    TypedDomain,
    default_seeds,
    domain_of_typed,
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
    # gov.pl is a public suffix, so www.gov.pl is a domain: no www.www.gov.pl seeds (netarchivesuite#64)
    assert domain_of_typed("http://www.gov.pl/web/").domain == "www.gov.pl"
    assert default_seeds("www.gov.pl") == ["http://www.gov.pl", "https://www.gov.pl"]


@pytest.mark.parametrize(("typed", "domain", "note"), [
    ("kb.dk", "kb.dk", None),
    ("KB.DK.", "kb.dk", None),
    ("xn--kbenhavn-54a.dk", "københavn.dk", None),
    ("www.kb.dk", "kb.dk", "www.kb.dk was taken as kb.dk"),
    ("http://www.kb.dk/x", "kb.dk", "http://www.kb.dk/x was taken as kb.dk"),
    ("https://news.bbc.co.uk:443/", "bbc.co.uk", "https://news.bbc.co.uk:443/ was taken as bbc.co.uk"),
    ("http://10.1.2.3:8080/", "10.1.2.3", "http://10.1.2.3:8080/ was taken as 10.1.2.3"),
])
def test_what_a_user_typed_becomes_its_registered_domain_with_a_note(typed, domain, note):
    assert domain_of_typed(typed) == TypedDomain(domain, note)


@pytest.mark.parametrize(("typed", "reason"), [
    # not the IDNA codec's own words, "Codepoint U+003A at position 5 of 'http://www' not allowed"
    ("http://www", "the host 'www' has no top-level domain (a domain needs at least two labels)"),
    ("exa:mple.dk", "not an http or https URL (its scheme is exa)"),
    ("http://exa mple.dk", "not a URL: it contains a space (write a space in a URL as %20)"),
    ("ab--cd.dk", "the host 'ab--cd.dk' has a label with '--' as its third and fourth characters, which only "
                  "punycode labels (xn--) may have: 'ab--cd'"),
    ("xn--zz.dk", "the host 'xn--zz.dk' has a label that is not valid punycode: 'xn--zz'"),
    ("☃.dk", "the host '☃.dk' contains '☃', which a host name cannot hold (letters, digits, hyphens and dots only)"),
    ("bad..name.dk", "the host 'bad..name.dk' has an empty label (two dots in a row, or a dot at the start)"),
    ("http://[::1", "not a URL: its host has a [ without a ] (an IPv6 address is written [::1])"),
])
def test_bad_names_are_refused_in_words_never_with_the_codecs_message(typed, reason):
    with pytest.raises(DomainNameError) as refused:
        domain_of_typed(typed)
    assert refused.value.reason == reason
    assert str(refused.value) == f"'{typed}': {reason}"
    for text in (str(refused.value), refused.value.reason):
        assert "Codepoint" not in text and "position" not in text and "IDNAError" not in text
