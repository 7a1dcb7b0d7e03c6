"""Bringing a launch's crawl.log into agreement with its WARC files after the crawler was killed.

A crawler killed mid-crawl (``kill -9``, a machine that went down) leaves a WARC file open, which
``warcfiles.close_open_warc`` cuts back to its last whole record, and a crawl.log that may say more or less
than that file holds: a line whose records were still in a buffer when the process died, or records whose
line was never written. The bundled engine hands a capture's records to the OS before its line
(harvester/engine/warcwriting/warc.py), so from it only the latter can happen, for the one capture being logged; a
Heritrix 3 or an older engine can leave both. The domain report counts crawl.log lines as objects, so
without this step historyinfo would count captures the archive does not hold, or miss ones it does.

The rule: the WARCs are what the archive holds, so they decide. A crawl.log line with a positive status
(a fetch the crawler recorded, dns: included) is matched with a response or revisit record of the same URI
and payload digest (``WARC-Payload-Digest``, else ``WARC-Block-Digest``; crawl.log's digest column is the
same value), each record matching one line at most.

* A line without its records is moved out of crawl.log into ``crawl-unarchived.log`` beside it, not marked
  in place: every reader of crawl.log (the domain report, NetarchiveSuite's tools, an archivist's grep)
  takes a positive line as an archived capture, and the line is kept whole, for the metadata WARC takes
  every ``.log`` of the launch.
* A record without a line gets one, made from the record: URI, status and MIME type from its HTTP header
  (``text/dns`` and 1 for a dns: record), fetch time from WARC-Date, digest, the annotation
  ``warcRecovered``, ``duplicate:digest`` for a revisit, and ``content-size:`` (the record's block, as the
  engine counts it for a response) when the log's lines carry that annotation. Its discovery path, via and
  source tag are unknown ("-"), so the domain report counts it under its URI's domain.

Lines with status 0 or below (failures, no record) and lines that cannot be read (a cut last line) stay as
they are. The WARCs are read twice, by headers only (the second time only when records lack lines), and
memory holds an 8-byte key and a count per distinct capture of the launch, about a hundred bytes each (a
killed launch of a million captures: some 100 MB, for the time of this step); crawl.log is streamed into its
replacement, which takes its place by rename. Post-processing (harvester/finish.py) reconciles the launches
a crawler was killed in and every launch of a failed crawl; a crawl that ended leaves both files complete.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecord

from harvestdef.files import replacing
from harvester.postprocess.crawllogreader import ANNOTATIONS, DIGEST, MIN_FIELDS, STATUS, URL

UNARCHIVED_LOG = "crawl-unarchived.log"
RECOVERED_ANNOTATION = "warcRecovered"
DUPLICATE_ANNOTATION = "duplicate:digest"  # what the engine and Heritrix's DeDuplicator write for a revisit
CAPTURE_TYPES = ("response", "revisit")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reconciliation:
    """What reconciling one crawl.log changed: lines moved out for want of records, lines made from records
    that had none."""

    crawl_log: Path
    unarchived_lines: int
    recovered_lines: int

    @property
    def changed(self) -> bool:
        return bool(self.unarchived_lines or self.recovered_lines)


def _key(url: str, digest: str) -> bytes:
    return hashlib.blake2b(f"{url} {digest}".encode("utf-8", "surrogateescape"), digest_size=8).digest()


def _record_digest(record: ArcWarcRecord) -> str:
    headers = record.rec_headers
    return headers.get_header("WARC-Payload-Digest") or headers.get_header("WARC-Block-Digest") or "-"


def _captures(warcs: Iterable[Path], parse_http: bool) -> Iterator[ArcWarcRecord]:
    """Every response and revisit record of the WARCs, read by headers only; valid inside its loop only."""
    for path in warcs:
        with open(path, "rb") as handle:
            for record in ArchiveIterator(handle, no_record_parse=not parse_http):
                if record.rec_type in CAPTURE_TYPES:
                    yield record


def reconcile_crawl_log(crawl_log: Path, warcs: list[Path]) -> Reconciliation:
    """Make ``crawl_log`` say what ``warcs`` (the launch's closed WARC files) hold; see the module's rules."""
    crawl_log = Path(crawl_log)
    unrecorded: dict[bytes, int] = {}
    for record in _captures(warcs, parse_http=False):
        key = _key(record.rec_headers.get_header("WARC-Target-URI") or "", _record_digest(record))
        unrecorded[key] = unrecorded.get(key, 0) + 1
    unarchived = 0
    has_content_size = False
    lines_exist = crawl_log.is_file()
    with replacing(crawl_log, "w", encoding="utf-8", newline="\n") as out:
        if lines_exist:
            with (open(crawl_log, encoding="utf-8", errors="surrogateescape", newline="\n") as lines,
                  open(crawl_log.with_name(UNARCHIVED_LOG), "a", encoding="utf-8", errors="surrogateescape",
                       newline="\n") as moved):
                for text in lines:
                    fields = text.split()
                    if _is_capture_line(fields):
                        if len(fields) > ANNOTATIONS and "content-size:" in fields[ANNOTATIONS]:
                            has_content_size = True
                        key = _key(fields[URL], fields[DIGEST])
                        if unrecorded.get(key, 0) > 0:
                            unrecorded[key] -= 1
                        else:
                            moved.write(text if text.endswith("\n") else text + "\n")
                            unarchived += 1
                            continue
                    out.write(text if text.endswith("\n") else text + "\n")
        recovered = 0
        if any(unrecorded.values()):
            for record in _captures(warcs, parse_http=True):
                digest = _record_digest(record)
                key = _key(record.rec_headers.get_header("WARC-Target-URI") or "", digest)
                if unrecorded.get(key, 0) > 0:
                    unrecorded[key] -= 1
                    out.write(_recovered_line(record, digest, has_content_size) + "\n")
                    recovered += 1
    if not lines_exist and not recovered:
        crawl_log.unlink()  # nothing was there and nothing is to be said
    result = Reconciliation(crawl_log, unarchived, recovered)
    if result.changed:
        log.warning("%s: %d lines without records in the WARCs moved to %s, %d lines made from records it "
                    "lacked", crawl_log, unarchived, UNARCHIVED_LOG, recovered)
    return result


def _is_capture_line(fields: list[str]) -> bool:
    """A valid line reporting a fetch the crawler recorded (positive status, a digest)."""
    if len(fields) < MIN_FIELDS or fields[DIGEST] == "-":
        return False
    status = fields[STATUS]
    return status.isdigit() and int(status) > 0


def _recovered_line(record: ArcWarcRecord, digest: str, has_content_size: bool) -> str:
    """crawl.log's 12 columns for a record that has no line (see the module's docstring)."""
    headers = record.rec_headers
    url = headers.get_header("WARC-Target-URI") or "-"
    date = headers.get_header("WARC-Date") or ""
    http = record.http_headers
    if url.startswith("dns:"):
        status, mime = "1", "text/dns"
    elif http is not None:
        status = http.get_statuscode() or "-"
        mime = (http.get_header("Content-Type") or "unknown").split(";", 1)[0].strip().lower() or "unknown"
    else:
        status, mime = "-", "unknown"
    try:
        when = datetime.fromisoformat(date.replace("Z", "+00:00"))
        timestamp = when.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        fetched = when.strftime("%Y%m%d%H%M%S%f")[:17]
    except ValueError:
        timestamp, fetched = date or "-", "-"
    size = 0
    while piece := record.raw_stream.read(1 << 16):
        size += len(piece)
    block = int(headers.get_header("Content-Length") or 0)
    annotations = [RECOVERED_ANNOTATION]
    if record.rec_type == "revisit":
        annotations.append(DUPLICATE_ANNOTATION)  # so the domain report counts it as a duplicate
    if has_content_size:
        annotations.append(f"content-size:{block}")
    return (f"{timestamp} {status:>5} {size:>10} {url} - - {mime} #000 {fetched} {digest} - "
            f"{','.join(annotations)}")
