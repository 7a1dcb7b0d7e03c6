"""Link extraction with lxml: outlinks of HTML and CSS, each with its hop letter (L link, E embed,
R meta refresh treated as a redirect).

Extraction works on the decoded body (gzip, deflate and br are undone here, capped in size). It never
raises on bad markup: a page lxml cannot parse yields the links it could find.
"""

from __future__ import annotations

import re
import zlib

import brotli
from lxml import etree, html

MAX_DECODED_BYTES = 16 * 1024 * 1024
_CSS_URL = re.compile(rb"""url\(\s*['"]?([^'")\s]+)['"]?\s*\)|@import\s+['"]([^'"]+)['"]""", re.IGNORECASE)
_REFRESH = re.compile(r"url\s*=\s*['\"]?([^'\"]+)", re.IGNORECASE)
# (tag, attribute, hop): what each element contributes.
_ATTRIBUTES = (
    ("a", "href", "L"), ("area", "href", "L"), ("frame", "src", "E"), ("iframe", "src", "E"),
    ("img", "src", "E"), ("script", "src", "E"), ("embed", "src", "E"), ("source", "src", "E"),
    ("input", "src", "E"), ("video", "src", "E"), ("audio", "src", "E"), ("video", "poster", "E"),
    ("body", "background", "E"), ("object", "data", "E"),
)


def decode_body(body: bytes, content_encoding: str) -> bytes:
    """The payload with its content encoding undone (at most MAX_DECODED_BYTES); the body as is if that fails."""
    encoding = content_encoding.strip().lower()
    try:
        if encoding in ("gzip", "x-gzip"):
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(body, MAX_DECODED_BYTES)
        if encoding == "deflate":
            return zlib.decompressobj().decompress(body, MAX_DECODED_BYTES)
        if encoding == "br":
            return brotli.decompress(body)[:MAX_DECODED_BYTES]
    except (zlib.error, brotli.error):
        return body
    return body


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


def extract_links(body: bytes | memoryview, content_type: str,
                  content_encoding: str) -> tuple[list[tuple[str, str]], str | None]:
    """Outlinks of a response body by its MIME type; other types have none (and are never copied)."""
    mime = content_type.split(";", 1)[0].strip().lower()
    if mime in ("text/html", "application/xhtml+xml"):
        return extract_html(decode_body(bytes(body), content_encoding))
    if mime == "text/css":
        return extract_css(decode_body(bytes(body), content_encoding)), None
    return [], None
