"""A job's deduplication entries: the captures in its WARC files that a later harvest may point a revisit
at (docs/architecture.md, Deduplication).

An entry is made for each ``response`` record

* of an HTTP(S) response with a 2xx status (errors and redirects are not content worth pointing at);
* whose HTTP Content-Type is not ``text/...``: NetarchiveSuite's index leaves ``^text/.*`` out, and the
  crawl templates never deduplicate text;
* that carries a WARC-Payload-Digest (``sha1:BASE32``, kept as written) and is not truncated
  (WARC-Truncated): a cut payload's digest would make a later complete fetch look like a duplicate;
* whose payload is not empty: the digest of nothing is every empty response's, and the crawler never
  deduplicates one (harvester/engine/warcwriting/recorder.py), so its entry would only take room in the index.

and for each ``revisit`` record (same status and type rules) whose original lies in an earlier job: its
entry is the original's (URL, date, record id, WARC file and offset), so the index built from this job
alone still leads the next run to the first capture, however many runs revisited it since
(NetarchiveSuite's index server pairs every crawl-log line with its record, duplicates included).
The engine names the original in the revisit (WARC-Refers-To-Target-URI, WARC-Refers-To-Date,
WARC-Refers-To) but WARC has no field for its file and offset; those come from the deduplication index
the crawl read, the copy in the job directory: the capture of (payload digest, WARC-Refers-To-Target-URI)
there is the one the engine found, confirmed by its record id. A revisit whose original is not in that
index points at a response of this same job, whose own entry is already this line, so it adds none.

Records are streamed and only their HTTP head is read; the index is opened read-only.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders

from harvestdef.dedup import DedupEntry, DedupIndex
from harvester.postprocess.cdx import warc_date_14
from harvester.postprocess.httphead import read_http_head, short_media_type

# the WARC-Payload-Digest of an empty payload, as the crawler and warcio write it
EMPTY_PAYLOAD_DIGEST = "sha1:" + base64.b32encode(hashlib.sha1(b"").digest()).decode("ascii")


def _entries_of(warc_path: Path, index: DedupIndex | None) -> Iterator[DedupEntry]:
    with open(warc_path, "rb") as handle:
        records = ArchiveIterator(handle, no_record_parse=True)
        for record in records:
            if record.rec_type not in ("response", "revisit"):
                continue
            headers = record.rec_headers
            url = headers.get_header("WARC-Target-URI") or ""
            digest = headers.get_header("WARC-Payload-Digest")
            date = warc_date_14(headers.get_header("WARC-Date"))
            if not url.startswith(("http:", "https:")) or not digest or not date or digest == EMPTY_PAYLOAD_DIGEST:
                continue
            # A revisit is always "truncated" (its payload is left out on purpose); a response must be whole.
            if record.rec_type == "response" and headers.get_header("WARC-Truncated"):
                continue
            head = read_http_head(record.raw_stream)
            if head.status is None or not 200 <= head.status < 300:
                continue
            mime = short_media_type(head.content_type)
            if mime is not None and mime.startswith("text/"):
                continue
            if record.rec_type == "revisit":
                original = _earlier_original(index, digest, headers)
                if original is not None:
                    yield original
                continue
            # warcio reads the rest of the record to learn its offset; the payload is not needed.
            offset = records.get_record_offset()
            yield DedupEntry(digest=digest, url=url, date=date, record_id=headers.get_header("WARC-Record-ID"),
                             warc_file=warc_path.name, warc_offset=offset)


def _earlier_original(index: DedupIndex | None, digest: str, headers: StatusAndHeaders) -> DedupEntry | None:
    """The index's capture that the revisit names, or None when its original is in this job."""
    refers_to_url = headers.get_header("WARC-Refers-To-Target-URI")
    if index is None or not refers_to_url:
        return None
    found = index.lookup(digest, refers_to_url)
    if found is None:
        return None
    refers_to = headers.get_header("WARC-Refers-To")
    if refers_to is not None and found.record_id is not None:
        return found if refers_to == found.record_id else None
    # no record id on one side: the capture's date must be the one the revisit names
    return found if warc_date_14(headers.get_header("WARC-Refers-To-Date")) == found.date else None


def extract_dedup_entries(warc_paths: Iterable[Path], index_path: Path | None = None) -> Iterator[DedupEntry]:
    """The deduplication entries of the given WARC files, file by file in the order given.

    ``index_path`` is the deduplication index the crawl read (the job directory's copy), None or absent when
    it had none: then every revisit points within the job and adds no entry.
    """
    with ExitStack() as stack:
        index = None
        if index_path is not None and Path(index_path).is_file():
            index = stack.enter_context(DedupIndex(index_path))
        for warc_path in warc_paths:
            yield from _entries_of(Path(warc_path), index)
