"""A WARC written with warcio and indexed by cdxj-indexer replays in pywb byte for byte.

This is the path an archive takes with HarvestSuite's output: WARC records, a sorted CDXJ index beside
them, and pywb's ``id_`` replay giving back exactly the payload that was archived.
"""

from __future__ import annotations

from io import BytesIO
from pathlib import Path

from cdxj_indexer.main import write_cdx_index
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.pywb import pywb_server, replay

COLLECTION = "harvest"
WARC_DATE = "2024-05-06T07:08:09Z"
TIMESTAMP = "20240506070809"
PAGE_URL = "http://www.kulturarv.dk/index.html"
IMAGE_URL = "http://www.kulturarv.dk/billeder/logo.gif"
PAGE = ("<!DOCTYPE html>\r\n<html lang=\"da\"><head><title>Kulturarv</title></head>\r\n"
        "<body><h1>Dansk kulturarv på nettet</h1><img src=\"/billeder/logo.gif\" alt=\"æøå\"></body></html>\r\n"
        ).encode()
# A 1x1 GIF: NUL and 0xFF bytes that text handling anywhere on the way would damage.
IMAGE = (b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00"
         b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")


def write_warc(path: Path, captures: dict[str, tuple[str, bytes]]) -> None:
    """One gzipped response record per URL, each with the given content type and body."""
    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True)
        for url, (content_type, body) in captures.items():
            http_headers = StatusAndHeaders("200 OK", [("Content-Type", content_type),
                                                       ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
            record = writer.create_warc_record(url, "response", payload=BytesIO(body), http_headers=http_headers,
                                               warc_headers_dict={"WARC-Date": WARC_DATE})
            writer.write_record(record)


def test_pywb_replays_warc_records_byte_for_byte_and_404s_the_rest(tmp_path):
    warc = tmp_path / "kulturarv-00000.warc.gz"
    write_warc(warc, {PAGE_URL: ("text/html; charset=utf-8", PAGE), IMAGE_URL: ("image/gif", IMAGE)})
    index = tmp_path / "kulturarv.cdxj"
    write_cdx_index(str(index), [str(warc)], {"sort": True})
    lines = index.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and lines == sorted(lines)

    working_dir = tmp_path / "pywb"
    working_dir.mkdir()
    with pywb_server(working_dir, COLLECTION, [index], [warc]) as base_url:
        status, headers, body = replay(base_url, COLLECTION, TIMESTAMP, PAGE_URL)
        assert (status, body) == (200, PAGE)
        assert headers["Content-Type"] == "text/html; charset=utf-8"

        status, headers, body = replay(base_url, COLLECTION, TIMESTAMP, IMAGE_URL)
        assert (status, body) == (200, IMAGE)
        assert headers["Content-Type"] == "image/gif"

        status, _, _ = replay(base_url, COLLECTION, TIMESTAMP, "http://www.kulturarv.dk/ikke-arkiveret.html")
        assert status == 404
