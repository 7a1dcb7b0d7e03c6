"""Link extraction: one extractor per content type (HTML and XHTML with lxml, CSS), each giving outlinks
with their hop letter (L link, E embed, R meta refresh treated as a redirect) and the document's base.

The interface is ``extractor_for(content_type)`` and ``extract_links(pieces, content_type,
content_encoding)``: the payload comes in bounded pieces (from the response's spool), its content encoding
(gzip, deflate, br) is undone here as it streams, and at most MAX_DECODED_BYTES of it are read, so a large
response is never held whole. Only extractable types are read at all. An extractor never raises on bad
markup: a page lxml cannot parse yields the links it could find.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterable, Iterator

import brotli
from lxml import etree, html

# How much of one document the extractors read, decoded: a bound on memory per fetch in flight.
MAX_DECODED_BYTES = 16 * 1024 * 1024
DECODED_PIECE = 256 * 1024
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


def _decoded_pieces(pieces: Iterable[bytes], content_encoding: str) -> Iterator[bytes]:
    """The payload's pieces with their content encoding undone; the bytes as they are if the first piece
    does not decode (a server that labels plain text gzip). zlib's output comes in pieces of at most
    DECODED_PIECE bytes, so a small piece that expands hugely (a compression bomb) is read no further than
    the consumer asks."""
    encoding = content_encoding.strip().lower()
    if encoding not in ("gzip", "x-gzip", "deflate", "br"):
        yield from pieces
        return
    pieces = iter(pieces)
    is_first = True
    if encoding == "br":
        brotli_decoder = brotli.Decompressor()
    else:
        decoder = zlib.decompressobj(zlib.MAX_WBITS if encoding == "deflate" else 16 + zlib.MAX_WBITS)
    for piece in pieces:
        try:
            if encoding == "br":
                yield brotli_decoder.process(piece)
            else:
                data = piece
                while data:
                    yield decoder.decompress(data, DECODED_PIECE)
                    data = decoder.unconsumed_tail
        except (zlib.error, brotli.error):
            if is_first:
                yield piece
                yield from pieces
            return
        is_first = False


def decode_payload(pieces: Iterable[bytes], content_encoding: str, limit: int = MAX_DECODED_BYTES) -> bytes:
    """At most ``limit`` bytes of the payload with its content encoding undone."""
    decoded = bytearray()
    for piece in _decoded_pieces(pieces, content_encoding):
        decoded += piece[:limit - len(decoded)]
        if len(decoded) >= limit:
            break
    return bytes(decoded)


def extract_css(text: bytes) -> list[tuple[str, str]]:
    links = []
    for match in _CSS_URL.finditer(text):
        raw = match.group(1) or match.group(2)
        if raw and not raw.startswith(b"data:"):
            links.append((raw.decode("utf-8", "replace"), "E"))
    return links


def extract_html(body: bytes) -> tuple[list[tuple[str, str]], str | None]:
    """(links as (raw url, hop)), base href or None)."""
    if not body.strip():
        return [], None
    try:
        document = html.document_fromstring(body)
    except (etree.ParserError, ValueError):
        return [], None
    links: list[tuple[str, str]] = []
    base = None
    for element in document.iter(etree.Element):
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag == "base" and base is None and element.get("href"):
            base = element.get("href")
            continue
        for name, attribute, hop in _ATTRIBUTES:
            if tag == name:
                value = element.get(attribute)
                if value:
                    links.append((value, hop))
        if tag in ("img", "source") and element.get("srcset"):
            for candidate in element.get("srcset").split(","):
                candidate = candidate.strip().split(" ")[0]
                if candidate:
                    links.append((candidate, "E"))
        elif tag == "link" and element.get("href"):
            rel = (element.get("rel") or "").lower()
            links.append((element.get("href"), "E" if ("stylesheet" in rel or "icon" in rel) else "L"))
        elif tag == "meta" and (element.get("http-equiv") or "").lower() == "refresh":
            match = _REFRESH.search(element.get("content") or "")
            if match:
                links.append((match.group(1), "R"))
        elif tag == "style" and element.text:
            links.extend(extract_css(element.text.encode("utf-8", "replace")))
        if element.get("style"):
            links.extend(extract_css(element.get("style").encode("utf-8", "replace")))
    return links, base


def _extract_css_document(text: bytes) -> Outlinks:
    return extract_css(text), None


# One extractor per content type (MIME type without parameters), as Heritrix's ExtractorHTML and ExtractorCSS.
EXTRACTORS: dict[str, Callable[[bytes], Outlinks]] = {
    "text/html": extract_html,
    "application/xhtml+xml": extract_html,
    "text/css": _extract_css_document,
}


def extractor_for(content_type: str) -> Callable[[bytes], Outlinks] | None:
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
    return extractor(decode_payload(pieces, content_encoding))
