"""canonical_url's short way for plain absolute paths gives what the general way (urljoin, then urlsplit)
gives, for the links that take it and for those that only look as if they might."""

from __future__ import annotations

import itertools
from urllib.parse import urljoin, urlsplit, urlunsplit

import pytest

from harvester.engine.frontier.scope import _netloc, canonical_url


def general_way(url: str, base: str) -> str | None:
    """canonical_url as it is written for every link: urljoin, urlsplit, the normalised authority."""
    try:
        parts = urlsplit(urljoin(base, url.strip()).strip())
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.netloc:
        return None
    netloc = _netloc(scheme, parts.netloc.rsplit("@", 1)[-1])
    if netloc is None:
        return None
    return urlunsplit((scheme, netloc, (parts.path or "/").replace(" ", "%20"), parts.query, ""))


BASES = [
    "http://www.kulturarv.dk/page/1.html", "https://www.kulturarv.dk:443/a/b/", "http://WWW.Kulturarv.DK:8080/x",
    "HTTP://www.økologi.dk/side?q=1#top", "http://user:pw@www.kulturarv.dk/", "http://www.kulturarv.dk",
    "ftp://files.kulturarv.dk/pub/", "mailto:arkiv@kulturarv.dk", "", "http://[::1]:8080/", "http://[bad/",
    "http:/no-authority", " http://www.kulturarv.dk/leading-space", "http://www.kulturarv.dk:99999/",
]
LINKS = [
    "/page/2.html", "/page/2.html#frag", "/page/2.html?", "/page/2.html?a=1&b=2", "/page/2.html?a#b?c",
    "/", "/a/./b", "/a/../b", "/a/..", "/.hidden", "/a//b", "//other.dk/path", "/a b", "/a\tb", " /padded ",
    "/a;params?q", "/ø/æ.html", "/%7Euser/", "/a?b/../c", "/?", "/#", "/a\\b", "\x00/x", "/x\x7f",
    "relative.html", "../up.html", "?only-query", "#only-fragment", "http://www.bibliotek.no/", "",
    "javascript:void(0)", "/a:b", "/@x",
]


@pytest.mark.parametrize(("link", "base"), list(itertools.product(LINKS, BASES)))
def test_the_short_way_gives_what_the_general_way_gives(link, base):
    assert canonical_url(link, base) == general_way(link, base)
