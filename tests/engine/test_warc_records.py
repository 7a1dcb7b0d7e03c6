"""Golden WARC records, as warcio's test_writer.py keeps them: the bytes of every kind of record the engine
writes, with fixed record IDs and dates, compared to text kept here; and warcio reading them back with their
digests checked."""

from __future__ import annotations

import gzip
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.engine.warcwriting.spool import ResponseSpool
from harvester.engine.warcwriting.warc import WarcFileWriter, sha1_digest
from harvester.engine.warcwriting.warcrecords import new_record_id, warc_fields, write_record

WARCIO = Path(sys.executable).parent / "warcio"
STARTED = 1714557600.25  # 2024-05-01T10:00:00.25Z
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\ncontent-length: 5\r\nX-Odd:  spaced\r\n\r\n"
REQUEST = b"GET / HTTP/1.1\r\nHost: www.kulturarv.dk\r\n\r\n"
DNS_ANSWER = b"20240501100000\nwww.kulturarv.dk.\t300\tIN\tA\t127.0.0.1\n"

# The records after the warcinfo, record IDs numbered in order of first appearance. The revisit's block is
# the head exactly as received (the lower-case field name and the two spaces included).
GOLDEN_CAPTURES = """\
WARC/1.1\r
WARC-Record-ID: <urn:uuid:1>\r
WARC-Date: 2024-05-01T10:00:00.250Z\r
WARC-Payload-Digest: sha1:DEUU7UW2KTVXLZN7JTPUTJWUPVX35MNB\r
WARC-Block-Digest: sha1:DEUU7UW2KTVXLZN7JTPUTJWUPVX35MNB\r
WARC-Type: response\r
WARC-Target-URI: dns:www.kulturarv.dk\r
Content-Type: text/dns\r
Content-Length: 52\r
\r
20240501100000
www.kulturarv.dk.\t300\tIN\tA\t127.0.0.1
\r
\r
WARC/1.1\r
WARC-Record-ID: <urn:uuid:2>\r
WARC-Date: 2024-05-01T10:00:00.250Z\r
WARC-IP-Address: 127.0.0.1\r
WARC-Payload-Digest: sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N\r
WARC-Block-Digest: sha1:522NTDYRGABVH4QUK22IDNE2OZQPP4JD\r
WARC-Type: response\r
WARC-Target-URI: http://www.kulturarv.dk/\r
Content-Type: application/http; msgtype=response\r
Content-Length: 84\r
\r
HTTP/1.1 200 OK\r
Content-Type: text/html\r
content-length: 5\r
X-Odd:  spaced\r
\r
hello\r
\r
WARC/1.1\r
WARC-Record-ID: <urn:uuid:3>\r
WARC-Date: 2024-05-01T10:00:00.250Z\r
WARC-Concurrent-To: <urn:uuid:2>\r
WARC-Payload-Digest: sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ\r
WARC-Block-Digest: sha1:E7QUIZ4ASXDITTGWGGT36FF2ABEDVPJU\r
WARC-Type: request\r
WARC-Target-URI: http://www.kulturarv.dk/\r
Content-Type: application/http; msgtype=request\r
Content-Length: 42\r
\r
GET / HTTP/1.1\r
Host: www.kulturarv.dk\r
\r
\r
\r
WARC/1.1\r
WARC-Record-ID: <urn:uuid:4>\r
WARC-Date: 2024-05-01T10:00:01.250Z\r
WARC-IP-Address: 127.0.0.1\r
WARC-Payload-Digest: sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N\r
WARC-Profile: http://netpreserve.org/warc/1.1/revisit/identical-payload-digest\r
WARC-Refers-To-Target-URI: http://www.kulturarv.dk/\r
WARC-Refers-To-Date: 2024-05-01T10:00:00Z\r
WARC-Truncated: length\r
WARC-Refers-To: <urn:uuid:2>\r
WARC-Block-Digest: sha1:SD6WMJON6O25VIYYMBC6GYDFBOHIKADW\r
WARC-Type: revisit\r
WARC-Target-URI: http://www.kulturarv.dk/again\r
Content-Type: application/http; msgtype=response\r
Content-Length: 79\r
\r
HTTP/1.1 200 OK\r
Content-Type: text/html\r
content-length: 5\r
X-Odd:  spaced\r
\r
\r
\r
WARC/1.1\r
WARC-Record-ID: <urn:uuid:5>\r
WARC-Date: 2024-05-01T10:00:01.250Z\r
WARC-Concurrent-To: <urn:uuid:4>\r
WARC-Payload-Digest: sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ\r
WARC-Block-Digest: sha1:BYNMDRBKPXVUCFM7YMKWQW4BHSMJQU3H\r
WARC-Type: request\r
WARC-Target-URI: http://www.kulturarv.dk/again\r
Content-Type: application/http; msgtype=request\r
Content-Length: 47\r
\r
GET /again HTTP/1.1\r
Host: www.kulturarv.dk\r
\r
\r
\r
"""

GOLDEN_WARCINFO_AND_METADATA = """\
WARC/1.1\r
WARC-Type: warcinfo\r
WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000001>\r
WARC-Filename: 1-1-20240501100000000-00001-77~harvester~8443.warc.gz\r
WARC-Date: 2024-05-01T10:00:00.123456Z\r
WARC-Block-Digest: sha1:W7YR2UPYET6TX4LIT3SCSBWFA5VM6KZ5\r
Content-Type: application/warc-fields\r
Content-Length: 261\r
\r
software: HarvestSuite crawl engine (Heritrix 3 compatible)\r
ip: 192.0.2.7\r
hostname: harvester.example.org\r
format: WARC File Format 1.1\r
conformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r
operator: kb\r
isPartOf: 1-1\r
\r
\r
WARC/1.1\r
WARC-Type: metadata\r
WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000002>\r
WARC-Date: 2024-05-01T10:00:00.250Z\r
WARC-Target-URI: http://www.kulturarv.dk/\r
WARC-Concurrent-To: <urn:uuid:00000000-0000-4000-8000-000000000003>\r
WARC-Block-Digest: sha1:FOZI7XBWAHETMI4C3JCWRKYBQWOPMYFV\r
Content-Type: application/warc-fields\r
Content-Length: 68\r
\r
outlink: http://www.kulturarv.dk/page/1 L a/@href\r
fetchTimeMs: 12\r
\r
\r
"""

WARCINFO_FIELDS = (("software", "HarvestSuite crawl engine (Heritrix 3 compatible)"), ("ip", "192.0.2.7"),
                   ("hostname", "harvester.example.org"), ("format", "WARC File Format 1.1"),
                   ("conformsTo", "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"),
                   ("operator", "kb"), ("description", ""), ("isPartOf", "1-1"))


def numbered_ids(text: str) -> str:
    """``text`` with every record ID replaced by its number in order of first appearance."""
    numbers: dict[str, int] = {}
    return re.sub(r"<urn:uuid:[0-9a-f-]{36}>",
                  lambda found: f"<urn:uuid:{numbers.setdefault(found.group(), len(numbers) + 1)}>", text)


def spool_of(raw: bytes, head_length: int) -> ResponseSpool:
    spool = ResponseSpool()
    spool.record_received(raw)
    spool.start_payload(head_length, is_chunked=False, keep_payload=False)
    spool.record_payload(raw[head_length:])
    return spool


def write_captures(directory: Path, compress: bool = True) -> tuple[Path, list]:
    """A dns response, a response with its request, and a revisit with its request, through WarcFileWriter."""
    written = []
    with WarcFileWriter(directory, "1-1", 0, compress, (("isPartOf", "1-1"),), port=8443) as writer, \
            spool_of(HEAD + b"hello", len(HEAD)) as spool:
        written.append(writer.write_dns("dns:www.kulturarv.dk", STARTED, DNS_ANSWER))
        written.append(writer.write_exchange("http://www.kulturarv.dk/", STARTED, "127.0.0.1", REQUEST, spool))
        written.append(writer.write_revisit("http://www.kulturarv.dk/again", STARTED + 1, "127.0.0.1",
                                            REQUEST.replace(b"GET / ", b"GET /again "), HEAD, spool.payload_digest,
                                            "http://www.kulturarv.dk/", "2024-05-01T10:00:00Z",
                                            written[-1].record_id))
        name = writer.current_name
    return directory / name, written


def test_capture_records_are_the_golden_bytes(tmp_path):
    path, written = write_captures(tmp_path)
    text = gzip.decompress(path.read_bytes()).decode("utf-8")
    captures = text[text.index("WARC/1.1\r\n", 1):]  # after the warcinfo record that opens the file
    assert numbered_ids(captures) == GOLDEN_CAPTURES
    ids = re.findall(r"WARC-Record-ID: (<urn:uuid:[0-9a-f-]{36}>)", captures)
    assert [record.record_id for record in written] == [ids[0], ids[1], ids[3]]  # dns, response, revisit


def test_each_record_is_a_gzip_member_of_its_own_at_level_6(tmp_path):
    path, written = write_captures(tmp_path)
    data = path.read_bytes()
    for record in written:
        member = data[record.offset:]
        assert member[:3] == b"\x1f\x8b\x08"
        # XFL is 2 for zlib level 9 (what warcio's writer uses), 0 for level 6.
        assert member[8] == 0
        assert gzip.decompress(member).startswith(b"WARC/1.1\r\n")
    with open(path, "rb") as handle:
        iterator = ArchiveIterator(handle)
        offsets = [iterator.get_record_offset() for _ in iterator]
    assert {record.offset for record in written} <= set(offsets)


def test_warcinfo_and_metadata_records_are_the_golden_bytes():
    out = io.BytesIO()
    block = warc_fields(WARCINFO_FIELDS)
    write_record(out, [("WARC-Type", "warcinfo"), ("WARC-Record-ID", "<urn:uuid:00000000-0000-4000-8000-000000000001>"),
                       ("WARC-Filename", "1-1-20240501100000000-00001-77~harvester~8443.warc.gz"),
                       ("WARC-Date", "2024-05-01T10:00:00.123456Z"), ("WARC-Block-Digest", sha1_digest(block)),
                       ("Content-Type", "application/warc-fields")], io.BytesIO(block), len(block), compress=True)
    block = warc_fields((("outlink", "http://www.kulturarv.dk/page/1 L a/@href"), ("fetchTimeMs", "12")))
    write_record(out, [("WARC-Type", "metadata"), ("WARC-Record-ID", "<urn:uuid:00000000-0000-4000-8000-000000000002>"),
                       ("WARC-Date", "2024-05-01T10:00:00.250Z"), ("WARC-Target-URI", "http://www.kulturarv.dk/"),
                       ("WARC-Concurrent-To", "<urn:uuid:00000000-0000-4000-8000-000000000003>"),
                       ("WARC-Block-Digest", sha1_digest(block)), ("Content-Type", "application/warc-fields")],
                 io.BytesIO(block), len(block), compress=True)
    assert gzip.decompress(out.getvalue()).decode("utf-8") == GOLDEN_WARCINFO_AND_METADATA
    out.seek(0)
    records = [(record.rec_type, record.content_stream().read()) for record in
               ArchiveIterator(out, check_digests="raise")]
    assert [kind for kind, _ in records] == ["warcinfo", "metadata"]


@pytest.mark.parametrize("compress", [True, False], ids=["gzip", "plain"])
def test_warcio_reads_the_records_back_with_their_digests(tmp_path, compress):
    path, written = write_captures(tmp_path, compress)
    assert path.name.endswith(".warc.gz" if compress else ".warc")
    with open(path, "rb") as handle:
        records = [(record.rec_type, record.rec_headers.get_header("WARC-Record-ID"), record.content_stream().read())
                   for record in ArchiveIterator(handle, check_digests="raise")]
    assert [kind for kind, _, _ in records] == ["warcinfo", "response", "response", "request", "revisit", "request"]
    assert records[2][2] == b"hello" and records[1][2] == DNS_ANSWER
    assert [records[1][1], records[2][1], records[4][1]] == [record.record_id for record in written]
    checked = subprocess.run([str(WARCIO), "check", "-v", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "digest pass" in checked.stdout and "fail" not in checked.stdout


def test_record_ids_are_uuid_urns_and_never_repeat():
    ids = {new_record_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(re.fullmatch(r"<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}>", i)
               for i in ids)


def test_a_block_shorter_than_its_length_is_refused():
    with pytest.raises(ValueError, match="ended 3 of 8 bytes early"):
        write_record(io.BytesIO(), [("WARC-Type", "resource")], io.BytesIO(b"short"), 8, compress=False)
