"""Sitemaps, as Heritrix's ExtractorSitemap and ExtractorRobotsTxt read them.

ExtractorRobotsTxt: each ``Sitemap: URL`` line of a host's robots.txt names a sitemap (relative to the
robots.txt URL). ExtractorSitemap reads a response as a sitemap when it was named so (by robots.txt or by a
sitemap index) and came with a 2xx status, when its URL matches the bean's ``urlPattern``, or when it is
XML (``text/xml``, ``application/xml``) that starts with ``<?xml`` and holds ``<urlset`` or
``<sitemapindex`` in its first 400 characters. A sitemap is XML (sitemaps.org's ``urlset`` of ``url/loc``,
or a ``sitemapindex`` of ``sitemap/loc``) or plain text (a URL per line), and either may be gzipped
(``sitemap.xml.gz``), whatever the Content-Type says; crawler-commons' SiteMapParser reads the same forms.

An index's entries are sitemaps themselves; the URLs of a sitemap are outlinks. Both are manifest hops
(``M``) and go through the scope like any link. Without ``enableLenientExtraction``, a sitemap's URLs must
lie under the sitemap's own directory (sitemaps.org's rule, crawler-commons' strict mode); an index's
entries may lie anywhere.

Bounded, as the sitemaps.org protocol bounds a sitemap (SitemapLimits, from the engine's settings): at most
``max_urls`` URLs of one sitemap are taken and at most ``max_bytes`` of it are read, decompressed; what lies
beyond is left, and a truncated or broken sitemap gives the URLs read before the break. Documents are parsed
as a stream (lxml's pull parser, no DTDs, no entities, no network) and never held whole.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from lxml import etree

from harvestdef.errors import ValidationError
from harvestdef.patterns import CompiledPattern, compile_pattern
from harvester.engine.frontier.scope import canonical_url

if TYPE_CHECKING:
    from harvestdef.settings import CrawlerSettings

MANIFEST_HOP = "M"
# sitemaps.org: at most 50,000 URLs and 50 MiB (52,428,800 bytes, uncompressed) per sitemap; Heritrix
# takes at most 50,000 outlinks of one.
DEFAULT_MAX_URLS = 50_000
DEFAULT_MAX_BYTES = 52_428_800
SNIFF_BYTES = 400
_ROBOTS_SITEMAP = re.compile(r"(?i)Sitemap:\s*(.+)")
_XML_START = re.compile(rb"(?s)^(?:\xef\xbb\xbf)?\s*<\?xml\s")
_SITEMAP_ROOT = re.compile(rb"(?i)<urlset|<sitemapindex[>\s]")
_GZIP_MAGIC = b"\x1f\x8b"
_XML_TYPES = ("text/xml", "application/xml")


@dataclass(frozen=True)
class SitemapLimits:
    """How much of one sitemap is read: URLs taken, bytes read decompressed."""

    max_urls: int = DEFAULT_MAX_URLS
    max_bytes: int = DEFAULT_MAX_BYTES

    def __post_init__(self) -> None:
        if self.max_urls < 1 or self.max_bytes < 1:
            raise ValidationError(f"harvestsuite.crawler.sitemapMaxUrls ({self.max_urls}) and sitemapMaxBytes "
                                  f"({self.max_bytes}) must be at least 1")

    @classmethod
    def from_settings(cls, crawler: CrawlerSettings) -> SitemapLimits:
        return cls(max_urls=crawler.sitemapMaxUrls, max_bytes=crawler.sitemapMaxBytes)


@dataclass(frozen=True)
class SitemapRules:
    """The ExtractorSitemap bean's properties."""

    url_pattern: str = ""               # urlPattern: a URL it matches is read as a sitemap (Java's dialect)
    lenient: bool = False               # enableLenientExtraction: URLs outside the sitemap's directory too
    _pattern: CompiledPattern | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_pattern", compile_pattern(self.url_pattern) if self.url_pattern else None)

    def matches_url(self, url: str) -> bool:
        return self._pattern is not None and self._pattern.fullmatch(url) is not None


@dataclass
class SitemapLinks:
    """What one sitemap gave: page URLs (``urls``) and, from an index, further sitemaps (``sitemaps``)."""

    urls: list[str] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)
    truncated: bool = False             # a limit ended the reading


def robots_sitemaps(text: str) -> list[str]:
    """The ``Sitemap:`` lines of a robots.txt, as written (ExtractorRobotsTxt: the whole line must match)."""
    found = []
    for line in text.splitlines():
        match = _ROBOTS_SITEMAP.fullmatch(line)
        if match and match.group(1).strip():
            found.append(match.group(1).strip())
    return found


def looks_like_sitemap(content_type: str, head: bytes) -> bool:
    """ExtractorSitemap's sniffing: an XML type whose first bytes are an XML declaration and a sitemap root."""
    mime = content_type.lower()
    return (mime.startswith(_XML_TYPES) and _XML_START.match(head) is not None
            and _SITEMAP_ROOT.search(head) is not None)


def _gunzipped(pieces: Iterator[bytes], limit: int) -> Iterator[bytes]:
    """The pieces of a gzip stream decompressed, at most ``limit`` bytes of output; a broken stream ends it."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    given = 0
    for piece in pieces:
        data = piece
        while data and given < limit:
            try:
                out = inflater.decompress(data, min(65536, limit - given))
            except zlib.error:
                return
            given += len(out)
            if out:
                yield out
            data = inflater.unconsumed_tail
        if given >= limit or inflater.eof:
            return


def _bounded(pieces: Iterable[bytes], limit: int) -> Iterator[bytes]:
    taken = 0
    for piece in pieces:
        if taken + len(piece) >= limit:
            yield piece[:limit - taken]
            return
        taken += len(piece)
        yield piece


def read_sitemap(pieces: Iterable[bytes], sitemap_url: str, rules: SitemapRules, limits: SitemapLimits
                 ) -> SitemapLinks:
    """The links of a sitemap whose payload (content encoding undone) comes in ``pieces``."""
    stream = iter(pieces)
    first = b""
    for piece in stream:
        if piece:
            first = piece
            break
    if not first:
        return SitemapLinks()
    pieces_again = _prepend(first, stream)
    if first.startswith(_GZIP_MAGIC):
        content = _gunzipped(pieces_again, limits.max_bytes)
    else:
        content = _bounded(pieces_again, limits.max_bytes)
    content = iter(content)
    head = next(content, b"")
    base = _directory_of(sitemap_url)
    links = SitemapLinks()
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
        _read_xml(_prepend(head, content), base, rules, limits, links)
    else:
        _read_text(_prepend(head, content), base, rules, limits, links)
    return links


def _prepend(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def _directory_of(url: str) -> str:
    """The sitemap's directory, under which its URLs must lie (sitemaps.org, "Sitemap file location")."""
    canonical = canonical_url(url) or url
    parts = urlsplit(canonical)
    path = parts.path[:parts.path.rfind("/") + 1] or "/"
    return f"{parts.scheme}://{parts.netloc}{path}"


def _take_url(raw: str, base: str, rules: SitemapRules, limits: SitemapLimits, links: SitemapLinks) -> bool:
    """Keep one page URL of a sitemap (False once max_urls are taken)."""
    if len(links.urls) >= limits.max_urls:
        links.truncated = True
        return False
    url = canonical_url(raw.strip())
    if url is not None and (rules.lenient or url.startswith(base)):
        links.urls.append(url)
    return True


def _read_text(pieces: Iterator[bytes], base: str, rules: SitemapRules, limits: SitemapLimits,
               links: SitemapLinks) -> None:
    carried = b""
    for piece in pieces:
        lines = (carried + piece).split(b"\n")
        carried = lines.pop()
        for line in lines:
            if not _take_url(line.decode("utf-8", "replace"), base, rules, limits, links):
                return
    if carried:
        _take_url(carried.decode("utf-8", "replace"), base, rules, limits, links)


def _local_name(tag: object) -> str:
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


def _read_xml(pieces: Iterator[bytes], base: str, rules: SitemapRules, limits: SitemapLimits,
              links: SitemapLinks) -> None:
    parser = etree.XMLPullParser(events=("end",), resolve_entities=False, no_network=True, load_dtd=False,
                                 huge_tree=False, recover=True)
    try:
        for piece in pieces:
            parser.feed(piece)
            if not _take_events(parser, base, rules, limits, links):
                return
        parser.close()
        _take_events(parser, base, rules, limits, links)
    except etree.LxmlError:
        # what was read before the break stays (crawler-commons' allowPartial, as Heritrix sets it)
        return


def _take_events(parser: etree.XMLPullParser, base: str, rules: SitemapRules, limits: SitemapLimits,
                 links: SitemapLinks) -> bool:
    for _event, element in parser.read_events():
        name = _local_name(element.tag)
        if name == "loc":
            parent = element.getparent()
            kind = _local_name(parent.tag) if parent is not None else ""
            text = (element.text or "").strip()
            if text and kind == "sitemap":
                if len(links.sitemaps) >= limits.max_urls:
                    links.truncated = True
                    return False
                url = canonical_url(text)
                if url is not None:
                    links.sitemaps.append(url)
            elif text and kind == "url" and not _take_url(text, base, rules, limits, links):
                return False
        elif name in ("url", "sitemap"):
            # done with the entry: drop it and what came before, so the document is never held whole
            element.clear()
            parent = element.getparent()
            while parent is not None and element.getprevious() is not None:
                del parent[0]
    return True


class SitemapDeclarations:
    """URLs named as sitemaps (by robots.txt or an index) and not yet fetched: ExtractorRobotsTxt's
    ``isSitemap`` annotation, which travels with the URI in Heritrix's frontier. Kept in checkpoints."""

    def __init__(self, urls: Iterable[str] = ()) -> None:
        self._urls = set(urls)

    def declare(self, url: str) -> None:
        self._urls.add(url)

    def take(self, url: str) -> bool:
        """Whether ``url`` was named a sitemap; it is forgotten (a URL is fetched once)."""
        if url in self._urls:
            self._urls.discard(url)
            return True
        return False

    def forget(self, url: str) -> None:
        self._urls.discard(url)

    def to_json(self) -> list[str]:
        return sorted(self._urls)

    def __len__(self) -> int:
        return len(self._urls)
