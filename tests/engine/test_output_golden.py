"""What a crawl writes stays what it was: the WARC records and crawl.log lines of a crawl of the fixed test
site, in a canonical form, against golden files checked in (tests/engine/golden/).

The canonical form keeps every record's type, target URI and WARC headers, and its block, and every
crawl.log line, setting aside only what differs from one crawl to the next however correct the engine is:
dates, record ids and the headers that name other records by id, the WARC file's name, fetch timings and
the test site's port (which the pages' links and so their digests hold). Digests are checked against the
bytes recorded, then written as digests of the canonical bytes. One crawl thread, so the order of records
and lines is the crawl's own, and two fetch modes: HTTP/1.0 with ``Connection: close`` (Heritrix's
default, NetarchiveSuite's template) and HTTP/1.1 keep-alive.

When a change is meant to change what is written, regenerate the files and review their diff:

    HARVESTSUITE_WRITE_GOLDEN=1 .venv/bin/pytest tests/engine/test_output_golden.py
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import re
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.engine.site import DEFAULT_HOSTS, punycode

GOLDEN = Path(__file__).parent / "golden"
MODES = {
    "http10-close": {"fetchHttp.useHTTP11": "false", "fetchHttp.sendConnectionClose": "true"},
    "http11-keepalive": {"fetchHttp.useHTTP11": "true", "fetchHttp.sendConnectionClose": "false"},
}
# Headers naming a date, a record by its id, or the file a record is in.
VARYING_HEADERS = {"warc-date", "warc-record-id", "warc-concurrent-to", "warc-refers-to", "warc-warcinfo-id",
                   "warc-refers-to-date", "warc-filename"}
# Lines of a warcinfo, metadata or dns block that hold the machine, a time or a timing.
VARYING_LINES = re.compile(rb"^(?:(hostname|ip|fetchTimeMs|harvestInfo\.jobSubmitDate)\s*:.*|\d{14})$",
                           re.MULTILINE)


def dechunked(body: bytes) -> bytes:
    """The body of a chunked message, its chunks joined (what WARC-Payload-Digest is taken over)."""
    pieces, rest = [], body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        pieces.append(rest[:size])
        rest = rest[size + 2:]
    return b"".join(pieces)


def sha1_base32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


class Canonical:
    """Turns a launch's WARC records and crawl.log into lines that compare across crawls."""

    def __init__(self, port: int):
        self.port_bytes = f":{port}".encode()
        self.digests: dict[str, str] = {}  # digest of the bytes recorded -> digest of the canonical bytes
        self.sizes_set_aside: set[str] = set()  # URIs whose lengths the port changes (gzip)

    def bytes_(self, data: bytes) -> bytes:
        return data.replace(self.port_bytes, b":PORT")

    def text(self, value: str) -> str:
        return self.bytes_(value.encode("utf-8")).decode("utf-8")

    def other_block(self, data: bytes) -> bytes:
        """A block that is not an HTTP message (warcinfo, metadata, dns, request), in canonical form."""
        return VARYING_LINES.sub(lambda match: (match.group(1) or b"date") + b": *", self.bytes_(data))

    def http_message(self, head: bytes, payload: bytes) -> tuple[bytes, bytes]:
        """A response's head and payload in canonical form. A gzip payload is compared unzipped (the port in
        it changes the compressed bytes and their length), its lengths set aside."""
        if b"\r\ncontent-encoding: gzip" in head.lower():
            head = re.sub(rb"(?im)^(content-length):.*$", rb"\1: *", head)
            payload = b"gunzipped " + gzip.decompress(payload)
        return self.bytes_(head), self.bytes_(payload)

    def digest(self, recorded: str, data: bytes, canonical_data: bytes) -> str:
        """The digest of ``canonical_data``, after checking ``recorded`` is the digest of ``data``."""
        assert recorded == sha1_base32(data), f"recorded digest {recorded} is not that of the bytes recorded"
        canonical = sha1_base32(canonical_data)
        self.digests[recorded] = canonical
        return canonical

    def warc(self, paths: list[Path]) -> list[str]:
        lines: list[str] = []
        for path in paths:
            with open(path, "rb") as handle:
                for record in ArchiveIterator(handle, no_record_parse=True):
                    lines.extend(self.record(record))
        return lines

    def record(self, record) -> list[str]:
        block = record.raw_stream.read()
        headers = record.rec_headers
        uri = headers.get_header("WARC-Target-URI") or ""
        lines = [f"== {record.rec_type} {self.text(uri)}"]
        is_http = record.rec_type in ("response", "revisit") and block.startswith(b"HTTP/")
        if is_http:
            end = block.find(b"\r\n\r\n")
            head, payload = (block[:end + 4], block[end + 4:]) if end >= 0 else (block, b"")
            canonical_head, canonical_payload = self.http_message(head, payload)
            canonical_block = canonical_head + canonical_payload
            if canonical_head != self.bytes_(head):
                self.sizes_set_aside.add(uri)
        else:
            head, payload, canonical_block = b"", block, self.other_block(block)
        block_digest = self.digest(headers.get_header("WARC-Block-Digest"), block, canonical_block)
        for name, value in headers.headers:
            key = name.lower()
            if key in VARYING_HEADERS:
                continue
            if key == "warc-block-digest":
                value = block_digest
            elif key == "content-length" and uri in self.sizes_set_aside:
                value = "*"
            elif key == "warc-payload-digest":
                # a revisit's is its original's, seen earlier in the crawl; a request's is of its body; a
                # dns record's is its block's
                if is_http and record.rec_type == "response" and not headers.get_header("WARC-Truncated"):
                    if b"transfer-encoding: chunked" in head.lower():
                        value = self.digest(value, dechunked(payload), self.bytes_(dechunked(payload)))
                    else:
                        value = self.digest(value, payload, canonical_payload)
                else:
                    value = self.digests.get(value, value)
            lines.append(f"  {name}: {self.text(value)}")
        if is_http:
            lines.extend("  | " + line for line in canonical_head.decode("latin-1").split("\r\n") if line)
            lines.append(f"  payload {len(canonical_payload)} bytes {sha1_base32(canonical_payload)}")
        else:
            lines.extend("  | " + line for line in canonical_block.decode("utf-8", "replace").splitlines())
        return lines

    def crawl_log(self, path: Path) -> list[str]:
        """crawl.log without its date (column 1) and fetch start and duration (column 9)."""
        lines = []
        for line in path.read_text(encoding="utf-8").splitlines():
            fields = line.split()
            if not fields:
                continue
            fields[0] = "*"
            if len(fields) > 8:
                fields[8] = "*"
            if len(fields) > 9:
                fields[9] = self.digests.get(fields[9], fields[9])
            if len(fields) > 3 and fields[3] in self.sizes_set_aside:
                fields[2] = "*"
                fields[-1] = re.sub(r"content-size:\d+", "content-size:*", fields[-1])
            lines.append(" ".join(self.text(field) for field in fields))
        return lines


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_crawl_writes_what_the_golden_files_hold(crawl, test_site, mode):
    seeds = [test_site.url(host) for host in DEFAULT_HOSTS]
    run = crawl(seeds, overrides={"crawlController.maxToeThreads": 1, **MODES[mode]})
    canonical = Canonical(test_site.port)
    warcs = sorted((run.launch_dir / "warcs").glob("*.warc*"))
    assert warcs, "the crawl wrote no WARC"
    written = ["# WARC records"] + canonical.warc(warcs) + ["# crawl.log"] + canonical.crawl_log(
        run.logs / "crawl.log")
    text = "\n".join(written) + "\n"
    golden = GOLDEN / f"crawl-{mode}.txt.gz"
    if os.environ.get("HARVESTSUITE_WRITE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    assert golden.exists(), f"{golden} is missing: HARVESTSUITE_WRITE_GOLDEN=1 writes it"
    expected = gzip.decompress(golden.read_bytes()).decode("utf-8")
    # the crawl covered what the golden files are for: every host, pages, images, redirects, 404s, robots.txt
    for host in DEFAULT_HOSTS:
        assert f"== response http://{punycode(host)}:PORT/page/1" in text
    for status in (" 200 ", " 301 ", " 404 "):
        assert any(status in line for line in canonical.crawl_log(run.logs / "crawl.log"))
    if text != expected:
        import difflib
        diff = "\n".join(list(difflib.unified_diff(expected.splitlines(), text.splitlines(), "golden", "crawl",
                                                   lineterm=""))[:80])
        pytest.fail(f"the crawl wrote other records or lines than {golden.name}:\n{diff}")
