"""A job's deduplication entries from its revisit records: the original an earlier job captured, found in
the index the crawl read, and nothing for a revisit of the job's own capture. WARC records written with
warcio as the engine writes them, and a real index file."""

from __future__ import annotations

import base64
import hashlib
from io import BytesIO
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvestdef.dedup import DedupEntry, DedupIndexWriter
from harvester.postprocess import extract_dedup_entries

PHOTO = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
DIGEST = "sha1:" + base64.b32encode(hashlib.sha1(PHOTO).digest()).decode()
URL = "http://www.havbrug.org/fotos/1.png"
# the first capture, three runs back, as the index of the previous run holds it
FIRST = DedupEntry(DIGEST, URL, "20260101080000", "<urn:uuid:first-capture>", "1-1-20260101080000-00001.warc.gz",
                   4711)


def http_head(content_type: str) -> StatusAndHeaders:
    return StatusAndHeaders("200 OK", [("Content-Type", content_type), ("Content-Length", str(len(PHOTO)))],
                            protocol="HTTP/1.1")


def write_job_warc(path: Path) -> str:
    """A response of ``URL`` under another name (so with a record id of this job) and three revisits:
    of the earlier job's first capture, of this job's response, and of a capture the index does not hold
    under that record id. Returns the response's record id."""
    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True, warc_version="WARC/1.1")
        own_url = "http://www.havbrug.org/fotos/copy.png"
        response = writer.create_warc_record(own_url, "response", payload=BytesIO(PHOTO),
                                             http_headers=http_head("image/png"),
                                             warc_headers_dict={"WARC-Date": "2026-04-01T08:00:00Z"})
        writer.write_record(response)
        own_id = response.rec_headers.get_header("WARC-Record-ID")

        def revisit(refers_to_url: str, refers_to_date: str, refers_to: str, content_type: str = "image/png") -> None:
            record = writer.create_revisit_record(URL, DIGEST, refers_to_url, refers_to_date,
                                                  http_headers=http_head(content_type))
            record.rec_headers.add_header("WARC-Refers-To", refers_to)
            writer.write_record(record)

        revisit(URL, "2026-01-01T08:00:00Z", FIRST.record_id)
        revisit(own_url, "2026-04-01T08:00:00Z", own_id)
        revisit(URL, "2026-01-01T08:00:00Z", "<urn:uuid:not-the-one-in-the-index>")
        revisit(URL, "2026-01-01T08:00:00Z", FIRST.record_id, content_type="text/html")
    return own_id


def test_a_revisit_of_an_earlier_job_gives_that_jobs_capture_and_one_of_its_own_job_nothing(tmp_path):
    warc = tmp_path / "3-1-20260401080000-00001.warc.gz"
    own_id = write_job_warc(warc)
    index = tmp_path / "dedup-index.sqlite"
    with DedupIndexWriter(index) as writer:
        writer.add(FIRST.digest, FIRST.url, FIRST.date, FIRST.record_id, FIRST.warc_file, FIRST.warc_offset)
        writer.set_jobs([2])

    entries = list(extract_dedup_entries([warc], index))
    assert [entry.record_id for entry in entries] == [own_id, FIRST.record_id]
    assert entries[0] == DedupEntry(DIGEST, "http://www.havbrug.org/fotos/copy.png", "20260401080000", own_id,
                                    warc.name, 0)
    assert entries[1] == FIRST, "the revisit's entry is the first capture, file and offset included"

    # without the index the crawl read, no revisit can be told to point outside the job: none adds an entry
    assert [entry.record_id for entry in extract_dedup_entries([warc], tmp_path / "absent.sqlite")] == [own_id]


def test_an_empty_payload_gives_no_entry(tmp_path):
    warc = tmp_path / "empty.warc.gz"
    with warc.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True, warc_version="WARC/1.1")
        for url, payload in (("http://www.havbrug.org/empty.png", b""), (URL, PHOTO)):
            writer.write_record(writer.create_warc_record(
                url, "response", payload=BytesIO(payload),
                http_headers=StatusAndHeaders("200 OK", [("Content-Type", "image/png"),
                                                         ("Content-Length", str(len(payload)))], protocol="HTTP/1.1")))
    assert [entry.url for entry in extract_dedup_entries([warc])] == [URL]
