"""A job's deduplication entries: the original captures in its WARC files (design.md, Deduplication).

An entry is made for each ``response`` record that a later harvest may point a revisit at:

* an HTTP(S) response with a 2xx status (errors and redirects are not content worth pointing at);
* whose HTTP Content-Type is not ``text/...``: NetarchiveSuite's index leaves ``^text/.*`` out, and the
  crawl templates never deduplicate text;
* that carries a WARC-Payload-Digest (``sha1:BASE32``, kept as written) and is not truncated
  (WARC-Truncated): a cut payload's digest would make a later complete fetch look like a duplicate.

Revisit records are never entries: they point at an original themselves. Records are streamed and only
their HTTP head is read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from harvestdef.dedup import DedupEntry
from harvester.postprocess.cdx import warc_date_14
from harvester.postprocess.httphead import read_http_head, short_media_type


def _entries_of(warc_path: Path) -> Iterator[DedupEntry]:
    with open(warc_path, "rb") as handle:
        records = ArchiveIterator(handle, no_record_parse=True)
        for record in records:
            if record.rec_type != "response":
                continue
            headers = record.rec_headers
            url = headers.get_header("WARC-Target-URI") or ""
            digest = headers.get_header("WARC-Payload-Digest")
            date = warc_date_14(headers.get_header("WARC-Date"))
            if not url.startswith(("http:", "https:")) or not digest or not date \
                    or headers.get_header("WARC-Truncated"):
                continue
            head = read_http_head(record.raw_stream)
            if head.status is None or not 200 <= head.status < 300:
                continue
            mime = short_media_type(head.content_type)
            if mime is not None and mime.startswith("text/"):
                continue
            # warcio reads the rest of the record to learn its offset; the payload is not needed.
            offset = records.get_record_offset()
            yield DedupEntry(digest=digest, url=url, date=date, record_id=headers.get_header("WARC-Record-ID"),
                             warc_file=warc_path.name, warc_offset=offset)


def extract_dedup_entries(warc_paths: Iterable[Path]) -> Iterator[DedupEntry]:
    """The deduplication entries of the given WARC files, file by file in the order given."""
    for warc_path in warc_paths:
        yield from _entries_of(Path(warc_path))
