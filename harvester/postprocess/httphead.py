"""The HTTP head at the start of a WARC response record's block: status code and Content-Type.

Parsed here rather than by warcio's record parser so that a response with a malformed head (the crawler
stores what the server sent) is read as "no status, no type" instead of failing the whole file. Reading
stops at the blank line ending the head, so the stream is left at the first byte of the payload, and
never reads more than ``MAX_HEAD_BYTES`` (NetarchiveSuite's CDX extractor uses the same 1 MiB cap).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

MAX_HEAD_BYTES = 1024 * 1024
_STATUS_LINE = re.compile(rb"^HTTP/\d(?:\.\d)?\s+(\d{3})")
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_MEDIA_TYPE = re.compile(rf"^\s*({_TOKEN})/({_TOKEN})")


class ReadlineStream(Protocol):
    def readline(self, size: int = -1) -> bytes: ...


@dataclass(frozen=True, slots=True)
class HttpHead:
    status: int | None
    content_type: str | None    # the header's value as sent, None without one


def short_media_type(content_type: str | None) -> str | None:
    """``text/html; charset=utf-8`` -> ``text/html`` (lower case); None when it is not type/subtype."""
    if not content_type:
        return None
    match = _MEDIA_TYPE.match(content_type)
    return f"{match.group(1)}/{match.group(2)}".lower() if match else None


def read_http_head(stream: ReadlineStream) -> HttpHead:
    """Read the status line and headers; the stream is left just after the blank line that ends them."""
    status = None
    content_type = None
    consumed = 0
    first = True
    while consumed < MAX_HEAD_BYTES:
        line = stream.readline(MAX_HEAD_BYTES - consumed)
        if not line:
            break
        consumed += len(line)
        if first:
            first = False
            match = _STATUS_LINE.match(line)
            status = int(match.group(1)) if match else None
            continue
        if line in (b"\r\n", b"\n"):
            break
        name, separator, value = line.partition(b":")
        if separator and content_type is None and name.strip().lower() == b"content-type":
            content_type = value.strip().decode("latin-1")
    return HttpHead(status, content_type)
