"""The crawl's cookies, as Heritrix's BdbCookieStore keeps them for FetchHTTP.

Heritrix sends and takes cookies with HttpClient's STANDARD cookie spec (RFC 6265) whenever the template
has a cookie store bean (BdbCookieStore, SimpleCookieStore) and FetchHTTP's ``ignoreCookies`` is off. The
rules here are the standard library's (http.cookiejar) under that reading:

- ``Set-Cookie`` of every response is taken (robots.txt and redirects included); a cookie belongs to the
  host that set it, or with a ``Domain`` attribute to that domain and its subdomains (a domain the host is
  not under, or a top-level domain, is refused); without ``Path`` it belongs to the directory of the URL
  that set it;
- a request carries the cookies whose domain and path match its URL, longest path first; a ``Secure``
  cookie goes over https only; ``HttpOnly`` (a rule for scripts) does not stop a crawler sending it;
- ``Expires`` and ``Max-Age`` are honoured: an expired cookie is no longer sent, and a cookie set with a
  date in the past deletes the one it names; a cookie without either lasts the whole crawl (the crawl is
  one session), checkpoints and resumes included;
- at most MAX_COOKIES_PER_DOMAIN cookies are kept for a domain and its parent domains together
  (AbstractCookieStore.MAX_COOKIES_FOR_DOMAIN): a new cookie past that is dropped, a changed one replaces
  its old value.

Cookies are kept in one jar per registered domain (a cookie is never shared across one), so finding a
URL's cookies costs one lookup and a walk over its own site's few cookies, and a URL of a site that set none
costs one dictionary lookup. The jar goes into checkpoints (``to_json``, ``restore``). This module does no
I/O.
"""

from __future__ import annotations

import http.cookiejar
import time
from collections.abc import Iterable
from functools import lru_cache
from urllib.request import Request

from harvestdef.domainnames import registered_domain, to_punycode

MAX_COOKIES_PER_DOMAIN = 50
_COOKIE_FIELDS = ("version", "name", "value", "port", "port_specified", "domain", "domain_specified",
                  "domain_initial_dot", "path", "path_specified", "secure", "expires", "discard", "comment",
                  "comment_url", "rfc2109")


@lru_cache(maxsize=65536)
def site_of(host: str) -> str:
    """The registered domain whose jar holds a host's cookies (the host itself for an address or a name
    the public-suffix list gives no domain)."""
    try:
        return to_punycode(registered_domain(host))
    except Exception:
        return host.lower()


class _Policy(http.cookiejar.DefaultCookiePolicy):
    """RFC 6265's reading of Netscape cookies: a cookie without Domain is the setting host's alone."""

    def __init__(self) -> None:
        super().__init__(rfc2965=False, netscape=True,
                         strict_ns_domain=http.cookiejar.DefaultCookiePolicy.DomainStrictNonDomain)


class _Response:
    """The part of a response CookieJar reads: its Set-Cookie header values."""

    def __init__(self, set_cookie: list[str]) -> None:
        self._set_cookie = set_cookie

    def info(self) -> _Response:
        return self

    def get_all(self, name: str, default: list[str] | None = None) -> list[str]:
        return list(self._set_cookie) if name.lower() == "set-cookie" else (default or [])


class _SiteJar(http.cookiejar.CookieJar):
    """One registered domain's cookies, with Heritrix's bound per domain."""

    def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
        now = time.time()
        domain = cookie.domain.lstrip(".").lower()
        replaced = False
        visible = 0
        for kept in self:
            if kept.domain == cookie.domain and kept.path == cookie.path and kept.name == cookie.name:
                replaced = True
            kept_domain = kept.domain.lstrip(".").lower()
            if not kept.is_expired(now) and (domain == kept_domain or domain.endswith("." + kept_domain)):
                visible += 1
        if replaced or visible < MAX_COOKIES_PER_DOMAIN:
            super().set_cookie(cookie)


class CookieStore:
    """A crawl's cookies: ``header_for`` a request, ``take`` a response's Set-Cookie values."""

    def __init__(self) -> None:
        self._policy = _Policy()
        self._jars: dict[str, _SiteJar] = {}

    def _jar(self, site: str) -> _SiteJar:
        jar = self._jars.get(site)
        if jar is None:
            jar = self._jars[site] = _SiteJar(self._policy)
        return jar

    def header_for(self, url: str, host: str) -> str | None:
        """The Cookie header value a request of ``url`` (on ``host``) carries; None when it carries none."""
        jar = self._jars.get(site_of(host))
        if jar is None:
            return None
        request = Request(url)
        jar.add_cookie_header(request)
        return request.get_header("Cookie")

    def take(self, url: str, host: str, set_cookie: list[str]) -> None:
        """Keep the cookies a response of ``url`` set (its Set-Cookie header values), as the rules allow."""
        if set_cookie:
            self._jar(site_of(host)).extract_cookies(_Response(set_cookie), Request(url))

    def cookies(self) -> list[http.cookiejar.Cookie]:
        """Every cookie kept (expired ones that were not replaced included), site by site."""
        return [cookie for jar in self._jars.values() for cookie in jar]

    def __len__(self) -> int:
        return sum(len(jar) for jar in self._jars.values())

    # -- checkpoints ----------------------------------------------------------------------------------
    def to_json(self) -> list[dict]:
        """The cookies that have not expired, each with its jar's site."""
        now = time.time()
        saved = []
        for site, jar in self._jars.items():
            for cookie in jar:
                if cookie.is_expired(now):
                    continue
                entry = {name: getattr(cookie, name) for name in _COOKIE_FIELDS}
                entry["site"] = site
                entry["http_only"] = cookie.has_nonstandard_attr("HttpOnly")
                saved.append(entry)
        return saved

    def restore(self, saved: Iterable[dict]) -> None:
        """Put back what ``to_json`` gave (the jar is emptied first)."""
        self._jars = {}
        for entry in saved:
            values = {name: entry[name] for name in _COOKIE_FIELDS}
            rest = {"HttpOnly": None} if entry.get("http_only") else {}
            cookie = http.cookiejar.Cookie(**values, rest=rest)
            # straight into the jar: the rules were applied when the cookie was first taken
            http.cookiejar.CookieJar.set_cookie(self._jar(str(entry["site"])), cookie)
