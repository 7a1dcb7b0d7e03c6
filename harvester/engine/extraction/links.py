"""Link extraction: one extractor per content type (HTML and XHTML with lxml, CSS), each giving outlinks
with their hop letter (L link, E embed, R meta refresh treated as a redirect) and the document's base.

The interface is ``extractor_for(content_type)`` and ``extract_links(pieces, content_type,
content_encoding)``: the payload comes in bounded pieces (from the response's spool), its content encoding
(gzip, deflate, br) is undone as it streams (harvester.decoding, with an output bound), and the extractors
read it piece by piece (lxml's feed parser with a target that sees start tags, no tree; style sheets with a
small overlap between pieces), so no response is held whole; at most MAX_DECODED_BYTES of one are read.
Only extractable types are read at all. An extractor never raises on bad markup: a page lxml cannot parse
yields the links it could find. A crawl bounds each document's extraction in size and time (its
ResponseBounds, harvester/engine/fetching/bounds.py): past either, the links found so far are kept and the cut is
reported with them (``FoundLinks.cut``), for the crawl's nonfatal-errors.log.

A crawl reads through ``LinkExtractors``, which adds what its template turns on: a page's scripts and
script files (ExtractorJS, harvester/engine/extraction/jslinks.py; hop ``X``) and sitemaps (ExtractorSitemap,
harvester/engine/extraction/sitemaps.py; hop ``M``). Without those beans it reads exactly what ``extract_links`` reads.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from lxml import etree

from harvester.decoding import DECODED_PIECE, ContentDecodingError, DecodedSizeLimitError, decoded_pieces
from harvester.engine.extraction.jslinks import (
    SPECULATIVE_HOP,
    JsRules,
    is_script_type,
    script_links,
    script_pieces_links,
)
from harvester.engine.extraction.sitemaps import (
    MANIFEST_HOP,
    SNIFF_BYTES,
    SitemapLimits,
    SitemapRules,
    looks_like_sitemap,
    read_sitemap,
)
from harvester.engine.fetching.bounds import DEFAULT_EXTRACTION_MAX_BYTES, ExtractionBudget, ResponseBounds

if TYPE_CHECKING:
    from harvester.engine.config import CrawlConfig

# How much of one document the extractors read, decoded, unless the crawl's bounds say otherwise
# (harvestsuite.crawler.extractionMaxBytes): a bound on the parsing work one response can cost (memory does
# not grow with it: the extractors read piece by piece).
MAX_DECODED_BYTES = DEFAULT_EXTRACTION_MAX_BYTES
# The longest url(...) or @import a style sheet read in pieces is sure to find whole.
CSS_OVERLAP = 8192
Outlinks = tuple[list[tuple[str, str]], str | None]  # ((raw url, hop) for each link, base href or None)
_CSS_URL = re.compile(rb"""url\(\s*['"]?([^'")\s]+)['"]?\s*\)|@import\s+['"]([^'"]+)['"]""", re.IGNORECASE)
_REFRESH = re.compile(r"url\s*=\s*['\"]?([^'\"]+)", re.IGNORECASE)
# (tag, attribute, hop): what each element contributes.
_ATTRIBUTES = (
    ("a", "href", "L"), ("area", "href", "L"), ("frame", "src", "E"), ("iframe", "src", "E"),
    ("img", "src", "E"), ("script", "src", "E"), ("embed", "src", "E"), ("source", "src", "E"),
    ("input", "src", "E"), ("video", "src", "E"), ("audio", "src", "E"), ("video", "poster", "E"),
    ("body", "background", "E"), ("object", "data", "E"),
)
_ATTRIBUTES_BY_TAG: dict[str, list[tuple[str, str]]] = {}
for _tag, _attribute, _hop in _ATTRIBUTES:
    _ATTRIBUTES_BY_TAG.setdefault(_tag, []).append((_attribute, _hop))


def bounded_pieces(pieces: Iterable[bytes], content_encoding: str, limit: int = MAX_DECODED_BYTES,
                   budget: ExtractionBudget | None = None) -> Iterator[bytes]:
    """The payload's pieces with their content encoding undone (harvester.decoding), at most ``limit`` bytes
    of them in all: the links of a document's first ``limit`` bytes are worth having, so a longer one (or a
    compression bomb) is read that far and no further. A payload that does not decode from its first piece
    on is read as it is (a server that labels plain text gzip); one that stops decoding part way is read up
    to there. With a ``budget`` (one document's, harvester/engine/fetching/bounds.py) no piece is given once its time
    is up, and the budget notes why the pieces stopped early."""
    pieces = iter(pieces)
    first = next(pieces, b"")
    taken = 0
    given = 0

    def encoded() -> Iterator[bytes]:
        nonlocal taken
        for piece in _chain(first, pieces):
            taken += 1
            yield piece

    def decoded() -> Iterator[bytes]:
        nonlocal given
        try:
            for piece in decoded_pieces(encoded(), content_encoding, limit, piece_size=DECODED_PIECE):
                given += len(piece)
                yield piece
        except ContentDecodingError:
            if taken == 1 and given == 0:
                yield from decoded_pieces(_chain(first, pieces), "identity", limit)

    try:
        for piece in decoded():
            if budget is not None:
                if budget.is_time_up():
                    return
                budget.bytes_read += len(piece)
            yield piece
    except DecodedSizeLimitError:
        if budget is not None:
            budget.note_size_cut(limit)


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def _css_link(match: re.Match[bytes], links: list[tuple[str, str]]) -> None:
    """The link of one ``url(...)`` or ``@import`` match, unless it is inline data."""
    raw = match.group(1) or match.group(2)
    if raw and not raw.startswith(b"data:"):
        links.append((raw.decode("utf-8", "replace"), "E"))


def extract_css(text: bytes) -> list[tuple[str, str]]:
    links: list[tuple[str, str]] = []
    for match in _CSS_URL.finditer(text):
        _css_link(match, links)
    return links


def extract_css_pieces(pieces: Iterable[bytes]) -> Outlinks:
    """The links of a style sheet read piece by piece. A match is whole once found (both forms end on their
    closing delimiter), so it is taken at once; what follows the last match is carried over to the next
    piece, at most its last CSS_OVERLAP bytes, so a ``url(...)`` split between two pieces is found once
    and the sheet is never held whole."""
    links: list[tuple[str, str]] = []
    carried = b""
    for piece in pieces:
        text = carried + piece
        taken = 0
        for match in _CSS_URL.finditer(text):
            _css_link(match, links)
            taken = match.end()
        carried = text[max(taken, len(text) - CSS_OVERLAP):]
    return links, None


class _HtmlLinks:
    """The target of lxml's HTML parser: it sees each start tag with its attributes as the parser reads
    the document, so no tree is built and the document is never held whole (the text of ``<style>``
    elements excepted, which ``data`` gathers while one is open)."""

    __slots__ = ("links", "base", "_style")

    def __init__(self) -> None:
        self.links: list[tuple[str, str]] = []
        self.base: str | None = None
        self._style: list[str] | None = None

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        if not attrib:
            # Most elements have no attribute, and lxml gives those an empty mapping whose ``get`` is
            # Python's generic one (a KeyError raised and caught per call): only a <style> matters then.
            if tag == "style":
                self._style = []
            return
        links = self.links
        for attribute, hop in _ATTRIBUTES_BY_TAG.get(tag, ()):
            value = attrib.get(attribute)
            if value:
                links.append((value, hop))
        if tag == "base":
            if self.base is None and attrib.get("href"):
                self.base = attrib["href"]
        elif tag in ("img", "source"):
            for candidate in (attrib.get("srcset") or "").split(","):
                candidate = candidate.strip().split(" ")[0]
                if candidate:
                    links.append((candidate, "E"))
        elif tag == "link":
            if attrib.get("href"):
                rel = (attrib.get("rel") or "").lower()
                links.append((attrib["href"], "E" if ("stylesheet" in rel or "icon" in rel) else "L"))
        elif tag == "meta":
            if (attrib.get("http-equiv") or "").lower() == "refresh":
                match = _REFRESH.search(attrib.get("content") or "")
                if match:
                    links.append((match.group(1), "R"))
        elif tag == "style":
            self._style = []
        style = attrib.get("style")
        if style:
            links.extend(extract_css(style.encode("utf-8", "replace")))

    def end(self, tag: str) -> None:
        if tag == "style" and self._style is not None:
            self.links.extend(extract_css("".join(self._style).encode("utf-8", "replace")))
            self._style = None

    def data(self, text: str) -> None:
        if self._style is not None:
            self._style.append(text)

    def close(self) -> Outlinks:
        """What the document gave; the target is then empty for the parser's next document."""
        found = (self.links, self.base)
        self.links, self.base, self._style = [], None, None
        return found


# lxml's parsers are not shared between threads (each crawl runs in its own); one parser per thread is
# reused from document to document, as building one costs more than parsing a typical page.
_parsers = threading.local()
_Target = TypeVar("_Target", bound=_HtmlLinks)


def _parse_html(pieces: Iterable[bytes], slot: str, target_type: type[_Target]) -> tuple[Outlinks, _Target]:
    """Feed an HTML document piece by piece to this thread's parser kept in ``slot`` (made on first use with a
    ``target_type`` target): the document's links and base href, and the target, for what else it gathered."""
    reader = getattr(_parsers, slot, None)
    if reader is None:
        target = target_type()
        reader = (etree.HTMLParser(target=target), target)
        setattr(_parsers, slot, reader)
    parser, target = reader
    fed = False
    try:
        for piece in pieces:
            if piece.count(0) == len(piece):
                # A piece of NUL bytes alone holds no markup, and libxml2 takes about 0.1 s a MiB over them:
                # a compression bomb of zeros would hold up the crawl for seconds.
                continue
            if fed or piece.strip():  # leading white space alone is no document (lxml refuses it)
                parser.feed(piece)
                fed = True
        return (parser.close() if fed else ([], None)), target
    except etree.LxmlError:
        # markup libxml2 gives up on: the links found so far; a fresh parser for the next document
        setattr(_parsers, slot, None)
        return target.close(), target
    except BaseException:
        # the pieces failed (the spool, the decoder): this parser holds half a document, never reused
        setattr(_parsers, slot, None)
        raise


def extract_html_pieces(pieces: Iterable[bytes]) -> Outlinks:
    """The links and the base href of an HTML document read piece by piece (lxml's feed parser)."""
    return _parse_html(pieces, "html", _HtmlLinks)[0]


def extract_html(body: bytes) -> Outlinks:
    """(links as (raw url, hop)), base href or None) of a whole document."""
    return extract_html_pieces([body])


# One extractor per content type (MIME type without parameters), as Heritrix's ExtractorHTML and ExtractorCSS.
EXTRACTORS: dict[str, Callable[[Iterable[bytes]], Outlinks]] = {
    "text/html": extract_html_pieces,
    "application/xhtml+xml": extract_html_pieces,
    "text/css": extract_css_pieces,
}


def extractor_for(content_type: str) -> Callable[[Iterable[bytes]], Outlinks] | None:
    """The extractor of a Content-Type header's MIME type; None for a type with no links to find."""
    return EXTRACTORS.get(content_type.split(";", 1)[0].strip().lower())


def is_extractable(content_type: str) -> bool:
    """Whether a response of this type is read for links (so a chunked one keeps its de-chunked body)."""
    return extractor_for(content_type) is not None


def extract_links(pieces: Iterable[bytes], content_type: str, content_encoding: str) -> Outlinks:
    """Outlinks of a payload given in pieces, by its type; the pieces of other types are never read."""
    extractor = extractor_for(content_type)
    if extractor is None:
        return [], None
    return extractor(bounded_pieces(pieces, content_encoding))


class _HtmlScriptLinks(_HtmlLinks):
    """_HtmlLinks that also gathers a page's scripts, as ExtractorHTML hands them to ExtractorJS: the text of
    ``<script>`` elements, event-handler attributes (``onclick``...) and ``javascript:`` URLs."""

    __slots__ = ("scripts", "_script")

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self._script: list[str] | None = None

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        _HtmlLinks.start(self, tag, attrib)
        if tag == "script":
            self._script = []
        if not attrib:
            return
        for name in attrib:
            if name[:2] == "on":
                self.scripts.append(attrib[name])
        href = attrib.get("href")
        if href and href[:11].lower() == "javascript:":
            self.scripts.append(href[11:])

    def end(self, tag: str) -> None:
        _HtmlLinks.end(self, tag)
        if tag == "script" and self._script is not None:
            self.scripts.append("".join(self._script))
            self._script = None

    def data(self, text: str) -> None:
        if self._script is not None:
            self._script.append(text)
        elif self._style is not None:
            self._style.append(text)

    def take_scripts(self) -> list[str]:
        scripts, self.scripts, self._script = self.scripts, [], None
        return scripts


def extract_html_with_scripts(pieces: Iterable[bytes], url: str, rules: JsRules,
                              budget: ExtractionBudget | None = None) -> Outlinks:
    """The links of an HTML document and, speculative (``X``), the URL-like strings of its scripts; the
    scripts are read while the ``budget``'s time lasts."""
    (links, base), target = _parse_html(pieces, "html_scripts", _HtmlScriptLinks)
    for script in target.take_scripts():
        if budget is not None and budget.is_time_up():
            break
        links.extend((link, SPECULATIVE_HOP) for link in script_links(script, url, rules, budget))
    return links, base


@dataclass
class FoundLinks:
    """What one response gave: outlinks (raw, hop), the base they are relative to (None: the URI itself),
    and the URLs it names as sitemaps (a sitemap index's entries)."""

    links: list[tuple[str, str]] = field(default_factory=list)
    base: str | None = None
    sitemaps: list[str] = field(default_factory=list)
    cut: str = ""  # why extraction stopped before the document's end, in words; empty when it read it all


class LinkExtractors:
    """The extractors of one crawl, as its template has them: HTML (with its scripts when an ExtractorJS
    is there and ExtractorHTML's extractJavascript is on) and CSS always; script files with ExtractorJS
    enabled (links relative to the page that used the script, as ExtractorJS adds them to the via);
    sitemaps with ExtractorSitemap enabled (harvester/engine/extraction/sitemaps.py). Without the optional beans it
    reads what ``extract_links`` reads, the same way."""

    def __init__(self, js_inline: bool = False, js_files: bool = False, js_rules: JsRules | None = None,
                 sitemaps: bool = False, sitemap_rules: SitemapRules | None = None,
                 sitemap_limits: SitemapLimits | None = None, bounds: ResponseBounds | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.js_inline = js_inline
        self.js_files = js_files
        self.js_rules = js_rules or JsRules()
        self.sitemaps = sitemaps
        self.sitemap_rules = sitemap_rules or SitemapRules()
        self.sitemap_limits = sitemap_limits or SitemapLimits()
        self.bounds = bounds or ResponseBounds()
        self.clock = clock  # what the documents' extraction time is measured on

    @classmethod
    def from_config(cls, config: CrawlConfig, sitemap_limits: SitemapLimits,
                    bounds: ResponseBounds | None = None) -> LinkExtractors:
        return cls(js_inline=config.js_inline, js_files=config.js_files,
                   js_rules=JsRules(config.js_strict, config.js_max_candidate_length, config.js_reject_relative),
                   sitemaps=config.sitemaps,
                   sitemap_rules=SitemapRules(config.sitemap_url_pattern, config.sitemap_lenient),
                   sitemap_limits=sitemap_limits, bounds=bounds)

    def keeps_payload(self, content_type: str) -> bool:
        """Whether a chunked response of this type keeps its de-chunked body for extraction."""
        if is_extractable(content_type):
            return True
        mime = content_type.split(";", 1)[0].strip().lower()
        if self.js_files and is_script_type(mime, ""):
            return True
        # a sitemap may come as XML, text or gzip under any name; these are the types it comes under
        return self.sitemaps and (mime.startswith(("text/", "application/xml")) or "gzip" in mime)

    def extract(self, url: str, via: str, content_type: str, content_encoding: str,
                pieces: Callable[[], Iterable[bytes]], is_declared_sitemap: bool) -> FoundLinks:
        """The links of a 2xx response of ``url`` whose payload ``pieces()`` gives (from the start at each call).
        ``is_declared_sitemap``: robots.txt or a sitemap index named it a sitemap. The document gets its
        budget of the crawl's bounds: read up to extractionMaxBytes, for extractionMaxSeconds; the links found
        until then are kept, and ``FoundLinks.cut`` says where it stopped."""
        budget = self.bounds.extraction_budget(self.clock)
        found = self._extract(url, via, content_type, content_encoding, pieces, is_declared_sitemap, budget)
        found.cut = budget.describe()
        return found

    def _extract(self, url: str, via: str, content_type: str, content_encoding: str,
                 pieces: Callable[[], Iterable[bytes]], is_declared_sitemap: bool,
                 budget: ExtractionBudget) -> FoundLinks:
        mime = content_type.split(";", 1)[0].strip().lower()
        if self.sitemaps and (is_declared_sitemap or self.sitemap_rules.matches_url(url)
                              or self._sniffs_as_sitemap(mime, content_encoding, pieces)):
            found = read_sitemap(bounded_pieces(pieces(), content_encoding, self.sitemap_limits.max_bytes, budget),
                                 url, self.sitemap_rules, self.sitemap_limits)
            return FoundLinks([(link, MANIFEST_HOP) for link in found.urls], None, found.sitemaps)
        limit = budget.max_bytes
        if self.js_inline and mime in ("text/html", "application/xhtml+xml"):
            links, base = extract_html_with_scripts(bounded_pieces(pieces(), content_encoding, limit, budget), url,
                                                    self.js_rules, budget)
            return FoundLinks(links, base)
        extractor = EXTRACTORS.get(mime)
        if extractor is not None:
            links, base = extractor(bounded_pieces(pieces(), content_encoding, limit, budget))
            return FoundLinks(links, base)
        if self.js_files and is_script_type(mime, url):
            links = script_pieces_links(bounded_pieces(pieces(), content_encoding, limit, budget), url,
                                        self.js_rules, budget)
            return FoundLinks([(link, SPECULATIVE_HOP) for link in links], via or None)
        return FoundLinks()

    @staticmethod
    def _sniffs_as_sitemap(mime: str, content_encoding: str, pieces: Callable[[], Iterable[bytes]]) -> bool:
        if not mime.startswith(("text/xml", "application/xml")):
            return False
        head = b""
        for piece in bounded_pieces(pieces(), content_encoding, SNIFF_BYTES):
            head += piece
        return looks_like_sitemap(mime, head)
