"""The response spool and the link extractors on their own: bytes past the in-memory threshold go to disk
and come back whole, digests are over what was recorded, a chunked payload is kept only for extractable
types, and extraction decodes content encodings piece by piece within its bound."""

from __future__ import annotations

import gzip
import hashlib
import tracemalloc
from base64 import b32encode

from harvester.engine.extraction.links import (
    MAX_DECODED_BYTES,
    bounded_pieces,
    extract_css_pieces,
    extract_html,
    extract_html_pieces,
    extract_links,
    extractor_for,
    is_extractable,
)
from harvester.engine.warcwriting.spool import IN_MEMORY_BYTES, ResponseSpool


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
    assert b"".join(bounded_pieces(pieces, "gzip", limit=50)) == page[:50]
    # A body labelled gzip that is not: read as it is, as the server sent it.
    assert extract_links([b"<a href='/plain'>p</a>"], "text/html", "gzip")[0] == [("/plain", "L")]


def test_html_is_read_piece_by_piece_with_the_same_links_as_whole() -> None:
    page = (b"<html><head><base href='/b/'><style>p { background: url('/bg.png') }</style>"
            b"<link rel=stylesheet href=/c.css><meta http-equiv=refresh content='0; url=/r'></head><body>"
            b"<a href='/p1'>one</a><img src='/i.png' srcset='/a.png 1x, /b.png 2x'>"
            b"<p style='background:url(/s.png)'>text</p><a href='/p2'>two</a></body></html>")
    whole = extract_html(page)
    assert whole == ([("/bg.png", "E"), ("/c.css", "E"), ("/r", "R"), ("/p1", "L"), ("/i.png", "E"),
                      ("/a.png", "E"), ("/b.png", "E"), ("/s.png", "E"), ("/p2", "L")], "/b/")
    for size in (1, 5, 64):
        assert extract_html_pieces([page[i:i + size] for i in range(0, len(page), size)]) == whole
    # one parser per thread serves document after document: nothing of one is left in the next
    assert extract_html(b"<a href='/only'>x</a>") == ([("/only", "L")], None)
    assert extract_html(b"   ") == ([], None) and extract_html(b"\x00\xff<a href=/x>") == ([("/x", "L")], None)


def test_a_style_sheet_in_pieces_finds_each_url_once() -> None:
    sheet = (b"a { background: url(/one.png) } @import '/two.css'; " + b" " * 20_000
             + b"b { background: url( \"/three.png\" ) } c { background: url(data:image/png;base64,AAAA) }")
    expected = [("/one.png", "E"), ("/two.css", "E"), ("/three.png", "E")]
    for size in (1, 3, 1000, 9000, len(sheet)):
        assert extract_css_pieces([sheet[i:i + size] for i in range(0, len(sheet), size)]) == (expected, None)


def test_a_large_page_is_never_held_whole_for_extraction() -> None:
    """A 40 MiB page in 64 KiB pieces: the extractor reads up to its bound and no further, and the memory
    Python allocates meanwhile stays far below the 16 MiB it read."""
    head = b"<html><body><a href='/first'>f</a>"
    filler = b"<p>" + b"x" * 65_000 + b"</p>"
    read = 0

    def pieces():
        nonlocal read
        for index in range(640):
            piece = head if index == 0 else filler
            read += len(piece)
            yield piece

    tracemalloc.start()
    try:
        links, _ = extract_links(pieces(), "text/html", "")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert links == [("/first", "L")]
    assert peak < 2 * 1024 * 1024, f"{peak} bytes allocated at the peak"
    assert MAX_DECODED_BYTES <= read <= MAX_DECODED_BYTES + len(filler)


def test_a_document_whose_pieces_fail_leaves_nothing_in_the_next() -> None:
    """The spool or the decoder failing mid-document: the error reaches the caller, and the thread's next
    document is parsed by a fresh parser, without the half-read one's links."""

    def failing():
        yield b"<html><body><a href='/half'>h</a><p>"
        raise OSError("spool file gone")

    try:
        extract_html_pieces(failing())
    except OSError as exc:
        assert str(exc) == "spool file gone"
    else:
        raise AssertionError("the pieces' error was swallowed")
    assert extract_html(b"<a href='/next'>n</a>") == ([("/next", "L")], None)
