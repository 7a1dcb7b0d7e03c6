"""Undoing an HTTP Content-Encoding, piece by piece and with an output bound: the one decoder of payloads for
everything in the harvester that reads them (link extraction in the crawl engine, CDXJ indexing in
post-processing).

A few hundred bytes of gzip, deflate or br can decode to gigabytes (a compression bomb), so nothing here
ever decodes a payload whole: each decoder is fed the encoded pieces as they come and gives its output in
pieces of about ``piece_size`` bytes (zlib's ``max_length``, brotli's ``output_buffer_limit``), and the
generator stops once ``limit`` decoded bytes have been given. The caller asks only for as much as it reads,
so memory stays within a few pieces whatever the payload expands to.

Codings: gzip and x-gzip, deflate (zlib-wrapped as RFC 9110 says, or raw deflate as some servers send it),
br, and identity. A list of codings (``gzip, br``) is undone last-applied first. zstd is not decoded: the
crawl engine never advertises it (``Accept-Encoding: gzip,deflate``), so a server that sends it anyway
breaks the protocol, and its bytes are passed on as they are, like those of any coding not named here.
This module raises ``ContentDecodingError`` for bytes that do not decode and ``DecodedSizeLimitError``
when the output would pass the limit; it never reads more of the encoded pieces than the decoded output
it has been asked for needs.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator

import brotli

from harvestdef.errors import ValidationError

DECODED_PIECE = 256 * 1024
_PASSED_AS_IS = frozenset({"", "identity"})


class ContentDecodingError(ValidationError):
    """The payload's bytes do not decode as its Content-Encoding says."""


class DecodedSizeLimitError(ValidationError):
    """The decoded payload is larger than the limit its reader set (a compression bomb, or a huge payload)."""


def codings(content_encoding: str) -> list[str]:
    """The codings of a Content-Encoding header in the order they were applied, lower case, identity left out."""
    return [coding for coding in (part.strip().lower() for part in content_encoding.split(","))
            if coding not in _PASSED_AS_IS]


def decoded_pieces(pieces: Iterable[bytes], content_encoding: str, limit: int, *,
                   piece_size: int = DECODED_PIECE) -> Iterator[bytes]:
    """The payload's ``pieces`` with ``content_encoding`` undone, in pieces of about ``piece_size`` bytes.

    :raise ContentDecodingError: the bytes do not decode (naming the coding and how far decoding got).
    :raise DecodedSizeLimitError: more than ``limit`` bytes would be decoded; the first ``limit`` bytes
        have been yielded before it is raised.
    """
    stream: Iterable[bytes] = pieces
    for coding in reversed(codings(content_encoding)):
        stream = _decode_one(stream, coding, piece_size)
    left = limit
    for piece in stream:
        if not piece:
            continue
        if len(piece) > left:
            if left:
                yield piece[:left]
            raise DecodedSizeLimitError(f"the {content_encoding!r}-encoded payload decodes to more than "
                                        f"{limit} bytes")
        left -= len(piece)
        yield piece


def _decode_one(pieces: Iterable[bytes], coding: str, piece_size: int) -> Iterator[bytes]:
    if coding == "br":
        return _brotli_pieces(pieces, piece_size)
    if coding in ("gzip", "x-gzip"):
        return _zlib_pieces(pieces, 16 + zlib.MAX_WBITS, piece_size, coding)
    if coding == "deflate":
        return _deflate_pieces(pieces, piece_size)
    return iter(pieces)  # a coding we do not decode: its bytes as they are (see the module's docstring)


def _zlib_pieces(pieces: Iterable[bytes], wbits: int, piece_size: int, coding: str) -> Iterator[bytes]:
    """zlib's output at most ``piece_size`` bytes a call; a full piece means more may be waiting even when
    all input was taken, so the decoder is asked again with no input until it gives less."""
    decoder = zlib.decompressobj(wbits)
    read = 0
    for piece in pieces:
        data = piece
        while data and not decoder.eof:
            try:
                out = decoder.decompress(data, piece_size)
            except zlib.error as exc:
                raise ContentDecodingError(f"{coding} data is corrupt after {read} encoded bytes: {exc}") from exc
            read += len(data) - len(decoder.unconsumed_tail)
            data = decoder.unconsumed_tail
            yield out
            while len(out) == piece_size and not data and not decoder.eof:
                out = decoder.decompress(b"", piece_size)
                yield out
        if decoder.eof:
            return  # what follows the end of the stream is not payload (zlib keeps it as unused_data)


def _deflate_pieces(pieces: Iterable[bytes], piece_size: int) -> Iterator[bytes]:
    """deflate is zlib-wrapped by the RFC, raw by many servers: the first piece decides, as zlib refuses a
    raw stream at its first two bytes."""
    pieces = iter(pieces)
    first = b""
    for first in pieces:
        if first:
            break
    if not first:
        return
    decoder = zlib.decompressobj(zlib.MAX_WBITS)
    try:
        decoder.decompress(first[:2])  # the zlib header alone: checked, nothing is output
        wbits = zlib.MAX_WBITS
    except zlib.error:
        wbits = -zlib.MAX_WBITS
    yield from _zlib_pieces(_chain(first, pieces), wbits, piece_size, "deflate")


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def _brotli_pieces(pieces: Iterable[bytes], piece_size: int) -> Iterator[bytes]:
    """brotli's output bounded by ``output_buffer_limit`` (brotli >= 1.2); while the decoder holds output
    it takes no new input, so it is drained with empty input first."""
    decoder = brotli.Decompressor()
    read = 0
    for piece in pieces:
        if decoder.is_finished():
            return
        try:
            yield decoder.process(piece, output_buffer_limit=piece_size)
            while not decoder.can_accept_more_data():
                yield decoder.process(b"", output_buffer_limit=piece_size)
        except brotli.error as exc:
            raise ContentDecodingError(f"br data is corrupt after {read} encoded bytes: {exc}") from exc
        read += len(piece)
