"""CDXJ indexing of records whatever their Content-Encoding: br (under the brotli and warcio versions installed
together), a broken br payload, compression bombs, POST bodies that decode and one that does not; every
record indexed with its digest, offset and length, and a br page replayed by pywb."""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from io import BytesIO
from pathlib import Path

import brotli
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvester.engine.warcwriting.spool import sha1_label
from harvester.postprocess.cdxj import write_cdxj
from tests.engine.site import br_bomb
from tests.pywb import pywb_server, replay

WARC_DATE = "2024-05-06T07:08:09Z"
TIMESTAMP = "20240506070809"
PAGE = b"<!DOCTYPE html><html><body><h1>Kulturarv</h1>" + b"<p>tekst</p>" * 200 + b"</body></html>"
BR_URL = "http://www.kulturarv.dk/br.html"
BROKEN_URL = "http://www.kulturarv.dk/broken-br.html"
BOMB_URL = "http://www.kulturarv.dk/bomb.html"
GZIP_BOMB_URL = "http://www.kulturarv.dk/gzip-bomb.html"
FORM_URL = "http://www.kulturarv.dk/search"
BROKEN_FORM_URL = "http://www.kulturarv.dk/search-broken"
DNS_URL = "dns:www.kulturarv.dk"


def _gzip_bomb() -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    return b"".join(packer.compress(zeros) for _ in range(64)) + packer.flush()


def _exchange(writer: WARCWriter, url: str, body: bytes, encoding: str, method: str = "GET",
              request_body: bytes = b"", request_encoding: str = "") -> None:
    """A response record and its request record, as the crawl engine writes them (response first)."""
    headers = [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))]
    if encoding:
        headers.append(("Content-Encoding", encoding))
    response = writer.create_warc_record(
        url, "response", payload=BytesIO(body), warc_headers_dict={"WARC-Date": WARC_DATE},
        http_headers=StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1"))
    writer.write_record(response)
    request_headers = [("Host", "www.kulturarv.dk"), ("Content-Length", str(len(request_body)))]
    if request_body:
        request_headers.append(("Content-Type", "application/x-www-form-urlencoded"))
    if request_encoding:
        request_headers.append(("Content-Encoding", request_encoding))
    request = writer.create_warc_record(
        url, "request", payload=BytesIO(request_body),
        warc_headers_dict={"WARC-Date": WARC_DATE,
                           "WARC-Concurrent-To": response.rec_headers.get_header("WARC-Record-ID")},
        http_headers=StatusAndHeaders(f"{method} /{url.rsplit('/', 1)[1]} HTTP/1.1", request_headers,
                                      is_http_request=True))
    writer.write_record(request)


def write_encoded_warc(path: Path) -> None:
    page_br = brotli.compress(PAGE)
    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True, warc_version="WARC/1.1")
        _exchange(writer, BR_URL, page_br, "br")
        _exchange(writer, BROKEN_URL, page_br[:40] + b"\xff" * 64 + page_br[40:], "br")
        _exchange(writer, BOMB_URL, br_bomb(), "br")
        _exchange(writer, GZIP_BOMB_URL, _gzip_bomb(), "gzip")
        _exchange(writer, FORM_URL, gzip.compress(PAGE), "gzip", method="POST",
                  request_body=brotli.compress(b"q=kulturarv&side=2"), request_encoding="br")
        _exchange(writer, BROKEN_FORM_URL, PAGE, "", method="POST", request_body=b"\xff" * 50,
                  request_encoding="br")
        # A record without WARC-Payload-Digest (warcio's writer always adds one, so it is written by hand):
        # the index digests its payload.
        dns = b"20240506070809\nwww.kulturarv.dk.\t3600\tIN\tA\t127.0.0.1\n"
        stream.write(gzip.compress(
            b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: " + DNS_URL.encode()
            + b"\r\nWARC-Date: " + WARC_DATE.encode() + b"\r\nWARC-Record-ID: <urn:uuid:0b5e3b9c-0f4e-4a8e-9d7a-"
            b"3f1c2b4d5e6f>\r\nContent-Type: text/dns\r\nContent-Length: " + str(len(dns)).encode()
            + b"\r\n\r\n" + dns + b"\r\n\r\n"))


def _records(path: Path) -> dict[int, tuple[str, str, str, int, str | None, bytes]]:
    """offset -> (type, URI, payload digest header, length, Content-Encoding, the payload as stored)"""
    found = {}
    with path.open("rb") as handle:
        records = ArchiveIterator(handle)
        for record in records:
            payload = record.raw_stream.read()
            encoding = record.http_headers.get_header("Content-Encoding") if record.http_headers else None
            found[records.get_record_offset()] = (
                record.rec_type, record.rec_headers.get_header("WARC-Target-URI"),
                record.rec_headers.get_header("WARC-Payload-Digest"), records.get_record_length(), encoding, payload)
    return found


def test_every_record_is_indexed_with_its_digest_and_place_whatever_its_encoding(tmp_path: Path) -> None:
    warc = tmp_path / "encodings-00000.warc.gz"
    write_encoded_warc(warc)
    result = write_cdxj(warc, tmp_path / "encodings.cdxj")
    lines = (tmp_path / "encodings.cdxj").read_text(encoding="utf-8").splitlines()
    records = _records(warc)
    responses = {offset: record for offset, record in records.items() if record[0] == "response"}
    assert result.lines == len(lines) == len(responses) == 7
    indexed = {}
    for line in lines:
        entry = json.loads(line.split(" ", 2)[2])
        indexed[entry["url"]] = entry
        kind, url, digest, length, _, payload = records[int(entry["offset"])]
        assert (kind, url) == ("response", entry["url"])
        assert int(entry["length"]) == length
        if url == DNS_URL:
            # no header: the digest of the payload as stored, not of the empty string after reading it
            assert digest is None and entry["digest"] == sha1_label(hashlib.sha1(payload))
        else:
            assert entry["digest"] == digest
    assert set(indexed) == {BR_URL, BROKEN_URL, BOMB_URL, GZIP_BOMB_URL, FORM_URL, BROKEN_FORM_URL, DNS_URL}
    assert indexed[FORM_URL]["method"] == "POST" and indexed[FORM_URL]["requestBody"] == "q=kulturarv&side=2"
    # The POST whose br body does not decode: indexed under its plain URL, and named.
    assert indexed[BROKEN_FORM_URL]["method"] == "POST" and indexed[BROKEN_FORM_URL]["requestBody"] == ""
    [problem] = result.problems
    broken_request = next(offset for offset, record in records.items()
                          if record[:2] == ("request", BROKEN_FORM_URL))
    assert f"record at offset {broken_request} (request {BROKEN_FORM_URL})" in problem
    assert "br data is corrupt" in problem


def test_a_br_page_indexed_here_replays_in_pywb(tmp_path: Path) -> None:
    warc = tmp_path / "encodings-00000.warc.gz"
    write_encoded_warc(warc)
    index = tmp_path / "encodings.cdxj"
    write_cdxj(warc, index)
    working_dir = tmp_path / "pywb"
    working_dir.mkdir()
    with pywb_server(working_dir, "harvest", [index], [warc]) as base_url:
        status, headers, body = replay(base_url, "harvest", TIMESTAMP, BR_URL)
        assert status == 200
        # id_ replay gives the payload as archived, or decoded where pywb undoes the encoding itself
        decoded = brotli.decompress(body) if headers.get("Content-Encoding") == "br" else body
        assert decoded == PAGE
        status, _, _ = replay(base_url, "harvest", TIMESTAMP, "http://www.kulturarv.dk/ikke-arkiveret.html")
        assert status == 404
