"""The response spool and the link extractors on their own: bytes past the in-memory threshold go to disk
and come back whole, digests are over what was recorded, a chunked payload is kept only for extractable
types, and extraction decodes content encodings piece by piece within its bound."""

from __future__ import annotations

import gzip
import hashlib
from base64 import b32encode

from harvester.engine.links import decode_payload, extract_links, extractor_for, is_extractable
from harvester.engine.spool import IN_MEMORY_BYTES, ResponseSpool


def sha1(data: bytes) -> str:
    return "sha1:" + b32encode(hashlib.sha1(data).digest()).decode("ascii")


def test_a_large_response_spills_to_disk_and_reads_back_whole() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 3000000\r\n\r\n"
    body = bytes(range(256)) * (3_000_000 // 256) + b"z" * (3_000_000 % 256)
    with ResponseSpool() as spool:
        spool.record_received(head)
        spool.start_payload(len(head), is_chunked=False, keep_payload=False)
        for start in range(0, len(body), 65536):
            piece = body[start:start + 65536]
            spool.record_received(piece)
            spool.record_payload(piece)
        assert spool.raw.file._rolled, f"still in memory past {IN_MEMORY_BYTES} bytes"
        assert spool.raw_length == len(head) + len(body) and spool.payload_length == len(body)
        assert spool.block_digest == sha1(head + body) and spool.payload_digest == sha1(body)
        assert spool.head() == head
        assert b"".join(spool.payload_pieces(len(body))) == body
        assert all(len(piece) <= 65536 for piece in spool.payload_pieces(len(body)))
        assert spool.raw_file().read() == head + body


def test_a_chunked_payload_is_kept_only_when_asked() -> None:
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    for keep, expected in ((True, b"hello"), (False, b"")):
        with ResponseSpool() as spool:
            spool.record_received(raw)
            spool.start_payload(raw.index(b"\r\n\r\n") + 4, is_chunked=True, keep_payload=keep)
            spool.record_payload(b"hello")
            assert spool.payload_digest == sha1(b"hello") and spool.block_digest == sha1(raw)
            assert b"".join(spool.payload_pieces(100)) == expected


def test_extractors_by_content_type() -> None:
    assert extractor_for("text/html; charset=utf-8") is not None and is_extractable("TEXT/CSS")
    assert not is_extractable("image/png") and not is_extractable("")
    assert extract_links([b"<a href='/x'>x</a>"], "image/png", "") == ([], None)


def test_gzip_is_undone_across_pieces_and_within_the_bound() -> None:
    page = b"<html><body>" + b"<a href='/p/%d'>p</a>" % 7 + b" " * 100_000 + b"<img src='/i.png'></body></html>"
    packed = gzip.compress(page)
    pieces = [packed[i:i + 1000] for i in range(0, len(packed), 1000)]
    links, base = extract_links(pieces, "text/html", "gzip")
    assert ("/p/7", "L") in links and ("/i.png", "E") in links and base is None
    assert decode_payload(pieces, "gzip", limit=50) == page[:50]
    # A body labelled gzip that is not: read as it is, as the server sent it.
    assert extract_links([b"<a href='/plain'>p</a>"], "text/html", "gzip")[0] == [("/plain", "L")]
