"""NetarchiveSuite's 8-field CDX lines for the records of one WARC file.

Fields, space-separated, "-" for a missing value (ArchiveExtractCDXJob with checksums, fields
``A e b m n g v c``): URL, IP address, 14-digit date, MIME type, length, archive file name, offset, MD5.

* Only ``response`` records are indexed, as NetarchiveSuite's EXCLUDE_NON_RESPONSE_RECORDS filter does
  (its indexers pair these lines with crawl.log); ``record_types`` widens that.
* MIME type: the HTTP Content-Type of an ``application/http; msgtype=response`` block, shortened to
  type/subtype; otherwise (or when the HTTP head has none) the record's own Content-Type, shortened.
* Length: the record's Content-Length (the block), as Heritrix's record header reports it to NAS.
* Offset: where the record starts in the file (its gzip member, for a .warc.gz).
* MD5: of the payload as stored, i.e. the block after the HTTP head for HTTP responses (neither
  de-chunked nor decoded), the whole block otherwise.

Lines come out in file order; records are streamed, never read whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterator
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from harvester.postprocess.httphead import read_http_head, short_media_type

NAS_CDX_RECORD_TYPES = frozenset({"response"})
_CHUNK = 1 << 16


def warc_date_14(warc_date: str | None) -> str | None:
    """``2026-01-02T03:04:05.123Z`` -> ``20260102030405``; None when it has fewer than 14 digits."""
    digits = "".join(character for character in warc_date or "" if character.isdigit())[:14]
    return digits if len(digits) == 14 else None


def _field(value: str | None) -> str:
    """A CDX field: "-" for nothing, and no spaces (they would shift every field after it)."""
    if not value:
        return "-"
    return value.replace(" ", "%20")


def cdx_lines(warc_path: Path, record_types: Collection[str] = NAS_CDX_RECORD_TYPES) -> Iterator[str]:
    """One CDX line (without newline) per record of ``warc_path`` whose WARC-Type is in ``record_types``."""
    warc_path = Path(warc_path)
    file_name = warc_path.name
    with open(warc_path, "rb") as handle:
        records = ArchiveIterator(handle, no_record_parse=True)
        for record in records:
            if record.rec_type not in record_types:
                continue
            headers = record.rec_headers
            content_type = headers.get_header("Content-Type") or ""
            mime = short_media_type(content_type)
            stream = record.raw_stream
            if mime == "application/http" and "msgtype=response" in content_type.replace(" ", "").lower():
                mime = short_media_type(read_http_head(stream).content_type) or mime
            md5 = hashlib.md5()
            while chunk := stream.read(_CHUNK):
                md5.update(chunk)
            # warcio knows the offset once the record has been read to its end.
            offset = records.get_record_offset()
            yield " ".join((
                _field(headers.get_header("WARC-Target-URI")), _field(headers.get_header("WARC-IP-Address")),
                _field(warc_date_14(headers.get_header("WARC-Date"))), _field(mime),
                _field(headers.get_header("Content-Length")), _field(file_name), str(offset), md5.hexdigest()))
