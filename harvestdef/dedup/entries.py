"""A job's deduplication entries file, ``dedup/<job_id>.gz`` in its archive-store directory.

gzip-compressed UTF-8 text, one capture per line, six tab-separated fields (docs/architecture.md, Deduplication)::

    digest  url  date14  record_id  warc_file  offset

``digest`` is the WARC payload digest ``sha1:BASE32``, ``date14`` is yyyyMMddHHmmss in UTC; the last three
fields are empty when unknown. Reading streams line by line; writing goes to a temporary name that is
renamed when complete, so a reader never sees half a file.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import secrets
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harvestdef.errors import DedupFormatError

# DedupEntry's fields in its order, as read_entry_fields yields them.
EntryFields = tuple[str, str, str, str | None, str | None, int | None]
_DIGEST = re.compile(r"sha1:[A-Z2-7]{32}")
_DATE = re.compile(r"\d{14}", re.ASCII)
# gzip's default level 9 takes half as long again as level 6 to make entries files about 1 % smaller.
_COMPRESS_LEVEL = 6


@dataclass(frozen=True)
class DedupEntry:
    """One capture of a payload: where and when it was harvested, and which WARC record holds it."""
    digest: str
    url: str
    date: str
    record_id: str | None = None
    warc_file: str | None = None
    warc_offset: int | None = None


def entries_name(job_id: int) -> str:
    """The entries file's name inside the job's archive-store directory."""
    return f"dedup/{job_id}.gz"


def write_entries(path: Path, entries: Iterable[DedupEntry]) -> int:
    """Write ``entries`` to ``path`` (through a temporary name beside it) and return how many were written.

    :raise ValueError: an entry that read_entries would refuse (the message names the entry).
    """
    path = Path(path)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(6)}")
    count = 0
    try:
        with open(temporary, "xb") as raw:
            # The text layer buffers, so zlib gets blocks rather than one call per line.
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=_COMPRESS_LEVEL,
                               mtime=0) as compressed, \
                    io.TextIOWrapper(compressed, encoding="utf-8", newline="\n") as text:
                for entry in entries:
                    text.write(_entry_line(entry))
                    count += 1
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return count


def read_entries(path: Path) -> Iterator[DedupEntry]:
    """Stream the entries of ``path``.

    :raise DedupFormatError: a line that is not six well-formed fields, or a broken gzip stream; the
        message names the file, the line number and what is wrong.
    """
    for fields in read_entry_fields(path):
        yield DedupEntry(*fields)


def read_entry_fields(path: Path) -> Iterator[EntryFields]:
    """read_entries without building a DedupEntry per line: the fields as a tuple in DedupEntry's order,
    for bulk loading (building an index of millions of entries spends a good part of its time there)."""
    number = 0
    try:
        with gzip.open(path, "rt", encoding="utf-8", newline="\n") as lines:
            for number, line in enumerate(lines, start=1):
                yield parse_entry_line(line, path, number)
    except (gzip.BadGzipFile, EOFError, zlib.error, UnicodeDecodeError) as exc:
        # The stream is decoded in blocks, so the failure is known only to lie after the last good line.
        raise DedupFormatError(path, None, f"unreadable after line {number}: {exc}") from exc


def parse_entry_line(line: str, path: object, number: int) -> EntryFields:
    """One line (with its newline) -> its fields; ``path`` and ``number`` name it in the error.

    :raise DedupFormatError: the line is not six well-formed fields.
    """
    if not line.endswith("\n"):
        raise DedupFormatError(path, number, "the last line has no newline (file cut short?)")
    fields = line[:-1].split("\t")
    if len(fields) != 6:
        raise DedupFormatError(path, number, f"expected 6 tab-separated fields, found {len(fields)}")
    digest, url, date, record_id, warc_file, offset = fields
    if not _DIGEST.fullmatch(digest):
        raise DedupFormatError(path, number, f"digest {digest[:80]!r} is not sha1:BASE32 (32 base32 letters)")
    if not url:
        raise DedupFormatError(path, number, "the URL is empty")
    if not _DATE.fullmatch(date):
        raise DedupFormatError(path, number, f"date {date[:80]!r} is not 14 digits (yyyyMMddHHmmss)")
    if offset and not (offset.isascii() and offset.isdigit()):
        raise DedupFormatError(path, number, f"offset {offset[:80]!r} is not a non-negative integer")
    return digest, url, date, record_id or None, warc_file or None, int(offset) if offset else None


def _entry_line(entry: DedupEntry) -> str:
    return entry_line(entry.digest, entry.url, entry.date, entry.record_id, entry.warc_file, entry.warc_offset)


def entry_line(digest: str, url: str, date: str, record_id: str | None = None, warc_file: str | None = None,
               warc_offset: int | None = None) -> str:
    """One capture as its line of an entries file, newline included.

    :raise ValueError: a capture that read_entries would refuse (the message names it).
    """
    shown = f"dedup entry ({digest!r}, {url!r}, {date!r})"
    if not _DIGEST.fullmatch(digest):
        raise ValueError(f"{shown}: digest is not sha1:BASE32")
    if not url:
        raise ValueError(f"{shown}: the URL is empty")
    if not _DATE.fullmatch(date):
        raise ValueError(f"{shown}: date is not 14 digits (yyyyMMddHHmmss)")
    if warc_offset is not None and (isinstance(warc_offset, bool) or warc_offset < 0):
        raise ValueError(f"{shown}: offset is not a non-negative integer")
    for text in (url, record_id, warc_file):
        if text and ("\t" in text or "\n" in text or "\r" in text):
            raise ValueError(f"{shown}: a tab or line break in {text!r} would break its line")
    offset = "" if warc_offset is None else str(warc_offset)
    return f"{digest}\t{url}\t{date}\t{record_id or ''}\t{warc_file or ''}\t{offset}\n"
