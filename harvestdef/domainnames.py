"""Domain-name rules: which registered domain a host belongs to, IDNs, IP addresses, the host a typed URL
names, what a user typed where a domain name is expected, default seeds.

The registered domain comes from the public-suffix list bundled with ``publicsuffixlist`` (offline; it
never touches the network). Domain names are stored in Unicode (``københavn.dk``); seeds and URLs carry
the punycode form (``xn--kbenhavn-54a.dk``), as crawlers need it. An IP address is its own domain: the
public-suffix list would read ``127.0.0.1`` as a name under ``1``, so addresses are recognised first.

Every refusal says in words what is wrong (``contains ':', which a host name cannot hold``); the IDNA
library's own messages (``Codepoint U+003A at position 5 ...``) never reach a user.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

import idna
from publicsuffixlist import PublicSuffixList

from harvestdef.errors import DomainNameError, UrlError, shown
from harvestdef.phrases import N_, Phrase, phrase


@lru_cache(maxsize=2)
def public_suffixes(accept_unknown: bool = True) -> PublicSuffixList:
    """The public suffix list, one per process and option, read on first use rather than at import: a
    process that never asks for a registered domain (most commands) does not pay for parsing it.
    ``accept_unknown=False`` takes a name whose last label is no known suffix as having none."""
    return PublicSuffixList(accept_unknown=accept_unknown)


# A label of letters, digits and hyphens (Unicode letters allowed: IDNs are checked by idna afterwards).
_LABEL = re.compile(r"^(?!-)[\w-]+(?<!-)$", re.UNICODE)
MAX_NAME_LENGTH = 253
# The longest URL a seed may be: Heritrix's UURI refuses longer ones (UsableURI.MAX_URL_LENGTH), and so does
# Scrapy's default URLLENGTH_LIMIT; a longer line is a paste gone wrong, not a seed.
MAX_URL_LENGTH = 2083
HTTP_SCHEMES = ("http", "https")
# A scheme as RFC 3986 writes it, at the start of a line.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_INVISIBLE = frozenset(("Cc", "Cf", "Zl", "Zp"))
# A host of nothing but lower-case ASCII letters, digits, hyphens and dots needs no character-by-character look.
_PLAIN_HOST = re.compile(r"[a-z0-9.-]+")


def is_ip_address(host: str) -> bool:
    bare = host.strip("[]")
    # An IPv4 address is digits and dots, an IPv6 one has colons: a host name is neither, and parsing it
    # (a raised ValueError) costs microseconds that add up over the domains of a national snapshot.
    if ":" not in bare and not bare.replace(".", "").isdigit():
        return False
    try:
        ipaddress.ip_address(bare)
    except ValueError:
        return False
    return True


def _is_host_character(char: str) -> bool:
    """Letters and digits of any script (with their combining marks, which IDNA composes), hyphen, dot."""
    return char in ".-" or char.isalnum() or unicodedata.category(char).startswith("M")


def _idna_reason(host: str) -> Phrase:
    """Why the IDNA codec refused ``host``, in words (its own message names code points and positions)."""
    for char in host:
        if not _is_host_character(char):
            return phrase(N_("the host '%(host)s' contains '%(char)s', which a host name cannot hold (letters, "
                             "digits, hyphens and dots only)"), host=shown(host), char=shown(char))
    for label in host.split("."):
        if not label:
            return phrase(N_("the host '%(host)s' has an empty label (two dots in a row, or a dot at the start)"),
                          host=shown(host))
        if label.startswith("-") or label.endswith("-"):
            return phrase(N_("the host '%(host)s' has a label that starts or ends with a hyphen: '%(label)s'"),
                          host=shown(host), label=label)
        if label.startswith("xn--"):
            return phrase(N_("the host '%(host)s' has a label that is not valid punycode: '%(label)s'"),
                          host=shown(host), label=label)
        if label[2:4] == "--":
            return phrase(N_("the host '%(host)s' has a label with '--' as its third and fourth characters, which "
                             "only punycode labels (xn--) may have: '%(label)s'"), host=shown(host), label=label)
    return phrase(N_("the host '%(host)s' is not a valid internationalised domain name (IDNA 2008 does not allow "
                     "one of its characters, or their order)"), host=shown(host))


def to_unicode(host: str) -> str:
    """``xn--kbenhavn-54a.dk`` -> ``københavn.dk``; lower-cased; ASCII names unchanged."""
    host = host.strip().rstrip(".").lower()
    if is_ip_address(host):
        return host.strip("[]")
    try:
        return idna.decode(host)
    except (idna.IDNAError, UnicodeError) as exc:
        reason = _idna_reason(host)
        raise DomainNameError(phrase(N_("'%(host)s' is not a valid host name: %(reason)s"), host=shown(host),
                                     reason=reason), reason) from exc


def to_punycode(host: str) -> str:
    """``københavn.dk`` -> ``xn--kbenhavn-54a.dk``; lower-cased; ASCII names unchanged."""
    host = host.strip().rstrip(".").lower()
    if host.isascii():
        # the usual case, and every IP address; parsing an address costs more than the rest of a page's row
        return host.strip("[]") if host.startswith("[") and is_ip_address(host) else host
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError) as exc:
        reason = _idna_reason(host)
        raise DomainNameError(phrase(N_("'%(host)s' is not a valid host name: %(reason)s"), host=shown(host),
                                     reason=reason), reason) from exc


def _refuse(original: str, reason: Phrase) -> DomainNameError:
    return DomainNameError(phrase(N_("'%(name)s' %(reason)s"), name=shown(original), reason=reason),
                           phrase(N_("the host '%(host)s' %(reason)s"), host=shown(original.strip()), reason=reason))


def _check_labels(name: str, original: str) -> None:
    if not name:
        raise _refuse(original, phrase(N_("is empty")))
    if len(name) > MAX_NAME_LENGTH:
        raise _refuse(original, phrase(N_("is longer than %(limit)s characters"), limit=MAX_NAME_LENGTH))
    labels = name.split(".")
    if len(labels) < 2:
        raise _refuse(original, phrase(N_("has no top-level domain (a domain needs at least two labels)")))
    for label in labels:
        if not label:
            raise _refuse(original, phrase(N_("has an empty label")))
        if len(label) > 63:
            raise _refuse(original, phrase(N_("has a label longer than 63 characters: '%(label)s...'"),
                                          label=label[:20]))
        if not _LABEL.match(label) or "_" in label:
            raise _refuse(original, phrase(N_("is not a valid host name: its label '%(label)s' may hold letters, "
                                              "digits and inner hyphens only"), label=shown(label)))
    if labels[-1].isdigit():
        raise _refuse(original, phrase(N_("is not a valid IP address, and a top-level domain is never a number")))


@lru_cache(maxsize=65536)
def registered_domain(host: str) -> str:
    """The domain a host belongs to, in Unicode: ``www.bbc.co.uk`` -> ``bbc.co.uk``.

    An IP address is returned as it is. Raises DomainNameError with the reason when the host is not a
    valid name or is itself a public suffix (``co.uk``).
    """
    original = host
    host = host.strip().rstrip(".").lower()
    if not host:
        raise _refuse(original, phrase(N_("is empty")))
    if is_ip_address(host):
        return str(ipaddress.ip_address(host.strip("[]")))
    if len(host) > MAX_NAME_LENGTH * 4:
        # no IDN is that long in any form; the codec need not read it to say so
        raise _refuse(original, phrase(N_("is longer than %(limit)s characters"), limit=MAX_NAME_LENGTH))
    unicode_host = to_unicode(to_punycode(host))
    _check_labels(unicode_host, original)
    ascii_host = to_punycode(unicode_host)
    domain = public_suffixes().privatesuffix(ascii_host)
    if domain is None:
        raise _refuse(original, phrase(N_("is a public suffix, not a domain that can be registered")))
    return to_unicode(domain)


def normalize_domain_name(name: str) -> str:
    """A curator's domain name as it is stored: Unicode, lower case, and a registered domain itself.

    ``www.kb.dk`` is refused (it is a host of ``kb.dk``), as is anything that is not a valid name.
    """
    domain = registered_domain(name)
    given = name.strip().rstrip(".").lower()
    if not is_ip_address(given) and to_unicode(to_punycode(given)) != domain:
        raise DomainNameError(phrase(N_("'%(name)s' is not a registered domain; its domain is '%(domain)s'"),
                                     name=shown(name), domain=domain))
    return domain


@dataclass(frozen=True)
class HttpUrl:
    """An http(s) URL as the crawler will fetch it: the scheme added where the line had none (as
    NetarchiveSuite's event harvest and Heritrix's seed reader add ``http://``), scheme and host in lower
    case, the host in punycode; user, port, path, query and fragment as they were given."""

    scheme: str
    userinfo: str  # "" or "user:password@"
    host: str  # ASCII; an IPv6 address in brackets
    port: str  # "" or ":8080"
    rest: str  # path, query and fragment
    scheme_added: bool

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.userinfo}{self.host}{self.port}{self.rest}"


def _url_refusal(reason: Phrase) -> UrlError:
    return UrlError(reason, reason)


def _other_scheme(scheme: str) -> Phrase:
    return phrase(N_("not an http or https URL (its scheme is %(scheme)s)"), scheme=scheme.lower())


def http_url(line: str) -> HttpUrl:
    """The http(s) URL a line names (a URL, or a bare ``host/path`` that gets ``http://``).

    Raises UrlError or DomainNameError whose ``reason`` says in words what is wrong: a control or
    invisible character, over MAX_URL_LENGTH, whitespace, another scheme (``ftp://``), no host, a port that
    is no port, a host that is no host name.
    """
    text = line.strip()
    plain = text.isascii() and text.isprintable()  # the usual line: no control character, no space but " "
    if not plain:
        for char in text:
            if unicodedata.category(char) in _INVISIBLE:
                raise _url_refusal(phrase(N_("contains the control character %(char)s"), char=shown(char)))
    if len(text) > MAX_URL_LENGTH:
        raise _url_refusal(phrase(N_("is %(length)s characters long; a URL has at most %(limit)s"),
                                  length=len(text), limit=MAX_URL_LENGTH))
    if not text:
        raise _url_refusal(phrase(N_("is empty")))
    if (" " in text) if plain else any(char.isspace() for char in text):
        space = phrase(N_("a space")) if " " in text else phrase(N_("whitespace"))
        raise _url_refusal(phrase(N_("not a URL: it contains %(space)s (write a space in a URL as %%20)"), space=space))
    scheme_added = False
    before, separator, _ = text.partition("://")
    if separator:
        if not _SCHEME.fullmatch(before + ":"):
            raise _url_refusal(phrase(N_("not a URL: no scheme before ://")) if not before else
                               phrase(N_("not a URL: '%(scheme)s' before :// is not a scheme"), scheme=shown(before)))
        if before.lower() not in HTTP_SCHEMES:
            raise _url_refusal(_other_scheme(before))
    elif text.startswith("//"):
        raise _url_refusal(phrase(N_("not a URL: it starts with // and has no scheme (write http:// or https://)")))
    else:
        match = _SCHEME.match(text)
        after = text[match.end():] if match else ""
        if match and match.group(1).lower() in HTTP_SCHEMES:
            raise _url_refusal(phrase(N_("not a URL: %(scheme)s: must be followed by //"),
                                      scheme=match.group(1).lower()))
        if match and after and not after[0].isdigit():
            # "kb.dk:8080/x" is a host and a port; "mailto:x@kb.dk" is another scheme, not a user and password
            # (NetarchiveSuite, adding http:// to it, harvested kb.dk as user "mailto")
            raise _url_refusal(_other_scheme(match.group(1)))
        text, scheme_added = "http://" + text, True
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        raise _url_refusal(phrase(N_("not a URL: its host has a [ without a ] (an IPv6 address is written "
                                     "[::1])"))) from exc
    host = parts.hostname
    if not host:
        raise _url_refusal(phrase(N_("not a URL: no host")))
    port_text = parts.netloc.rpartition("]")[2].rpartition("@")[2].partition(":")[2] if ":" in parts.netloc else ""
    port = ""
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise _url_refusal(phrase(N_("not a URL: its port '%(port)s' is not a number from 1 to 65535"),
                                      port=shown(port_text)))
        port = f":{int(port_text)}"
    host = host.rstrip(".")
    # an address ends in a digit (IPv4) or holds a colon (IPv6); parsing every name as one costs more
    if (host[-1:].isdigit() or ":" in host) and is_ip_address(host):
        ascii_host = f"[{host}]" if ":" in host else host
    else:
        if not _PLAIN_HOST.fullmatch(host) and not all(_is_host_character(char) for char in host):
            raise DomainNameError(_idna_reason(host), _idna_reason(host))
        ascii_host = to_punycode(host)
    userinfo = parts.netloc.rpartition("@")[0]
    rest = text[len(parts.scheme) + 3 + len(parts.netloc):]
    return HttpUrl(parts.scheme.lower(), f"{userinfo}@" if userinfo else "", ascii_host, port, rest, scheme_added)


def host_of_url(url: str) -> str:
    """The host of a URL or of a bare ``host/path`` line, lower-cased, without port (ASCII form)."""
    try:
        return http_url(url).host.strip("[]")
    except (UrlError, DomainNameError) as exc:
        raise DomainNameError(phrase(N_("'%(typed)s': %(reason)s"), typed=shown(url.strip()), reason=exc.reason_phrase),
                              exc.reason_phrase) from exc


def domain_of_url(url: str) -> str:
    """The registered domain of a URL (or of a bare domain or host name)."""
    return registered_domain(host_of_url(url))


@dataclass(frozen=True)
class TypedDomain:
    """The domain a user meant by what they typed, and a note when it is not what they typed
    (``http://www.kb.dk/x was taken as kb.dk``)."""

    domain: str
    note: str | None


def domain_of_typed(text: str) -> TypedDomain:
    """What a user typed where a domain name is expected, as a registered domain (stored form).

    A URL or a host becomes its registered domain, and the note says so; a bad name raises DomainNameError
    whose ``reason`` says in words what is wrong (the same words a seed with that line gets).
    """
    typed = text.strip()
    try:
        domain = registered_domain(http_url(typed).host)
    except (UrlError, DomainNameError) as exc:
        raise DomainNameError(phrase(N_("'%(typed)s': %(reason)s"), typed=shown(typed), reason=exc.reason_phrase),
                              exc.reason_phrase) from exc
    given = unicodedata.normalize("NFC", typed.rstrip(".").lower())
    if given in (domain, to_punycode(domain)) or (is_ip_address(given) and given.strip("[]") == domain):
        return TypedDomain(domain, None)
    return TypedDomain(domain, f"{shown(typed)} was taken as {domain}")


def default_seeds(domain: str) -> list[str]:
    """A new domain's default seeds, as NetarchiveSuite's Domain.getDefaultDomain makes them: http://www.D,
    https://www.D, http://D, https://D.

    IDNs are written in punycode; an IP domain gets http and https without www, and so does a domain that
    is itself a www host under a public suffix (``www.gov.pl``, whose www.www. seeds could only fail DNS).
    """
    if is_ip_address(domain):
        host = f"[{domain}]" if ":" in domain else domain
        return [f"http://{host}", f"https://{host}"]
    ascii_name = to_punycode(domain)
    if ascii_name.startswith("www."):
        return [f"http://{ascii_name}", f"https://{ascii_name}"]
    return [f"http://www.{ascii_name}", f"https://www.{ascii_name}", f"http://{ascii_name}",
            f"https://{ascii_name}"]
