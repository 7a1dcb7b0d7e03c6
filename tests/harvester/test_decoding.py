"""harvester.decoding: every Content-Encoding undone piece by piece, within its output bound, and bombs too."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib

import brotli
import pytest

from harvester.decoding import ContentDecodingError, DecodedSizeLimitError, codings, decoded_pieces
from harvester.engine.extraction.links import MAX_DECODED_BYTES, bounded_pieces, extract_links
from tests.engine.site import br_bomb

PAGE = b"<html><body>" + b"".join(b"<a href='/p/%d'>p</a>\n" % n for n in range(2000)) + b"</body></html>"
BOMB_ZEROS = 64 * 1024 * 1024  # what the zlib bombs decode to; the br bomb is 1 GiB (it compresses faster)


def _zlib_bomb(wbits: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    zeros = bytes(1 << 20)
    return b"".join(packer.compress(zeros) for _ in range(BOMB_ZEROS >> 20)) + packer.flush()


def _encoded(coding: str, data: bytes) -> bytes:
    if coding in ("gzip", "x-gzip"):
        return gzip.compress(data)
    if coding == "deflate":
        return zlib.compress(data)
    if coding == "raw-deflate":
        packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        return packer.compress(data) + packer.flush()
    return brotli.compress(data)


def _pieces(data: bytes, size: int = 1000) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("coding", ["gzip", "x-gzip", "deflate", "raw-deflate", "br"])
def test_each_coding_is_undone_across_pieces(coding: str) -> None:
    header = "deflate" if coding == "raw-deflate" else coding.upper()
    decoded = b"".join(decoded_pieces(_pieces(_encoded(coding, PAGE)), header, len(PAGE), piece_size=4096))
    assert decoded == PAGE


def test_codings_are_undone_last_applied_first_and_identity_passes() -> None:
    twice = brotli.compress(gzip.compress(PAGE))  # Content-Encoding: gzip, br
    assert b"".join(decoded_pieces(_pieces(twice), "gzip, br", len(PAGE))) == PAGE
    assert b"".join(decoded_pieces([PAGE], "identity", len(PAGE))) == PAGE
    assert b"".join(decoded_pieces([b"zstd bytes"], "zstd", 100)) == b"zstd bytes"
    assert codings("gzip, identity, BR") == ["gzip", "br"] and codings("") == []


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
def test_corrupt_data_is_an_error_naming_the_coding(coding: str) -> None:
    good = _encoded(coding, PAGE)
    broken = good[:len(good) // 2] + bytes(200) + b"\xff" * 200 + good[len(good) // 2:]
    with pytest.raises(ContentDecodingError, match=coding):
        b"".join(decoded_pieces(_pieces(broken), coding, 10 * len(PAGE)))


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate", "br"])
def test_a_bomb_is_decoded_no_further_than_the_limit_in_bounded_memory(coding: str) -> None:
    bomb = br_bomb() if coding == "br" else _zlib_bomb({"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS,
                                                       "raw-deflate": -zlib.MAX_WBITS}[coding])
    assert len(bomb) < 300_000
    limit = 8 * 1024 * 1024
    given = 0
    largest = 0
    tracemalloc.start()
    try:
        with pytest.raises(DecodedSizeLimitError, match="more than 8388608 bytes"):
            for piece in decoded_pieces(_pieces(bomb, 64 * 1024), "deflate" if coding == "raw-deflate" else coding,
                                        limit):
                given += len(piece)
                largest = max(largest, len(piece))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert given == limit
    assert largest <= 512 * 1024
    # The pieces in flight and the decoder's window: a few MiB at most, never the limit's 8 MiB or the bomb's GiB.
    assert peak < 4 * 1024 * 1024, peak


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
def test_link_extraction_reads_a_bomb_to_its_bound_only(coding: str) -> None:
    head = b"<html><body><a href='/before-the-zeros'>x</a>"
    packer = {"gzip": lambda: zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS),
              "deflate": lambda: zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS)}.get(coding)
    zeros = bytes(1 << 20)
    if packer is None:
        brotli_packer = brotli.Compressor(quality=5, lgwin=24)
        bomb = brotli_packer.process(head) + b"".join(brotli_packer.process(zeros) for _ in range(64)) \
            + brotli_packer.finish()
    else:
        zlib_packer = packer()
        bomb = zlib_packer.compress(head) + b"".join(zlib_packer.compress(zeros) for _ in range(64)) \
            + zlib_packer.flush()
    read = sum(len(piece) for piece in bounded_pieces(_pieces(bomb, 8192), coding))
    assert read == MAX_DECODED_BYTES
    links, _ = extract_links(_pieces(bomb, 8192), "text/html", coding)
    assert links == [("/before-the-zeros", "L")]


def test_extraction_reads_a_mislabelled_body_as_it_is_and_a_broken_one_up_to_the_break() -> None:
    assert extract_links([b"<a href='/plain'>p</a>"], "text/html", "br")[0] == [("/plain", "L")]
    good = gzip.compress(PAGE)
    cut = good[:len(good) // 2] + b"\xff" * 64
    links, _ = extract_links(_pieces(cut, 512), "text/html", "gzip")
    assert ("/p/0", "L") in links and ("/p/1999", "L") not in links
