"""A sorted CDXJ index of one WARC file, as pywb reads it, made by the cdxj-indexer package.

The options are the ones pywb's own ``wb-manager`` indexes with (sorted, POST request bodies appended to
the URL key), and the ``filename`` field is the WARC's base name, so the index works for a pywb
collection that holds the WARC beside it. cdxj-indexer sorts in memory up to 32 MiB and merges sorted
temporary files beyond that. The index is written under a temporary name and renamed when complete, so
a reader never sees half an index.

What is read of each record, and why cdxj-indexer's own reading is not used: its ``buffering_record_iter``
decodes every record's payload through warcio's decoders into a temporary file before indexing it. No
field of a response's index line needs the decoded payload (URL, date, status and MIME type come from the
headers, the digest from ``WARC-Payload-Digest``, offset and length from the file), and warcio's br
decoder fails on brotli 1.2 (it sets ``unused_data`` on brotli's Decompressor, a C type without
attributes of its own since 1.2), which stops the index of a whole WARC at its first br record, while a
gzip bomb is decoded to disk in full. So here a record's payload is only read through, as stored, and
digested when its ``WARC-Payload-Digest`` is missing (cdxj-indexer would digest the stream after reading
it, that is, the empty string). Only a request's body is decoded, since pywb's POST lookup appends it to
the URL key, through harvester.decoding with a bound; a body that does not decode or is larger than the
bound is left out of the line (the response is still indexed, under its plain URL) and named in the
result, as is a record whose line could not be made: one bad record never takes the WARC's index down.
"""

from __future__ import annotations

import hashlib
import io
import logging
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO

from cdxj_indexer.bufferiter import concur_req_resp, join_req_resp
from cdxj_indexer.main import CDXJIndexer
from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import ChunkedDataReader
from warcio.recordloader import ArcWarcRecord

from harvestdef.errors import ValidationError
from harvestdef.files import replacing
from harvester.decoding import decoded_pieces
from harvester.engine.warcwriting.spool import sha1_label

# A POST body longer than this, decoded, is not appended to the URL key: pywb would base64 it into the key,
# and an index line is no place for megabytes.
REQUEST_BODY_LIMIT = 1024 * 1024
READ_PIECE = 64 * 1024
SPOOL_IN_MEMORY = 64 * 1024  # cdxj-indexer's own size for a buffered body

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CdxjIndexResult:
    """What indexing one WARC made: the number of index lines, and the records it could index only in part
    or not at all (each named by offset and URI, with the reason)."""

    lines: int
    problems: tuple[str, ...]


class _CountingWriter:
    """The text file the indexer writes to, counting the lines that reach it."""

    def __init__(self, out: TextIO):
        self.out = out
        self.lines = 0

    def write(self, text: str) -> None:
        self.lines += text.count("\n")
        self.out.write(text)

    def flush(self) -> None:
        self.out.flush()


class _Indexer(CDXJIndexer):
    """cdxj-indexer with its reading of records replaced (see the module's docstring); its fields, sorting,
    request/response pairing and POST handling are its own."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.problems: list[str] = []

    def process_one(self, input_: BinaryIO, output: TextIO, filename: str) -> None:
        self.curr_filename = self.force_filename or self._resolve_rel_path(filename)
        records = self._create_record_iter(input_)
        self._write_header(output, filename)
        for record in self._paired(records):
            if self.include_records and not self.filter_record(record):
                continue
            try:
                self.process_index_entry(records, record, filename, output)
            except Exception as exc:  # noqa: BLE001 - one record's line, never the WARC's index
                self._problem(record, f"not indexed: {exc}")

    def _paired(self, records: ArchiveIterator) -> Iterator[ArcWarcRecord]:
        """Each record read through, in file order; a response and its request next to each other are
        joined first, as cdxj-indexer's buffering_record_iter does (for the POST body in the URL key)."""
        previous = None
        for record in records:
            self._read_through(record, records)
            request, response = concur_req_resp(previous, record)
            if request is None or response is None:
                if previous is not None:
                    yield previous
                    previous.buffered_stream.close()
                previous = record
                continue
            join_req_resp(request, response, self.post_append, self.get_url_key)
            for joined in (previous, record):
                yield joined
                joined.buffered_stream.close()
            previous = None
        if previous is not None:
            yield previous
            previous.buffered_stream.close()

    def _read_through(self, record: ArcWarcRecord, records: ArchiveIterator) -> None:
        """Read the record's payload to its end (so the iterator knows its length), digesting it when its
        header lacks the digest, and keep a request's decoded body for the POST lookup."""
        record.buffered_stream = io.BytesIO(b"")
        record.file_offset = records.offset  # where the record starts, until it is read through
        digester = None
        if record.rec_type == "request":  # not indexed itself: no digest needed
            if record.http_headers is not None:
                record.buffered_stream = self._request_body(record)
        elif not record.rec_headers.get_header("WARC-Payload-Digest"):
            digester = hashlib.sha1()
        while piece := record.raw_stream.read(READ_PIECE):
            if digester is not None:
                digester.update(piece)
        if digester is not None:
            record.payload_digest = sha1_label(digester)
        record.file_offset = records.get_record_offset()
        record.file_length = records.get_record_length()

    def _request_body(self, record: ArcWarcRecord) -> BinaryIO:
        """The request's body decoded (bounded), spooled; empty when it cannot be had."""
        headers = record.http_headers
        stream: BinaryIO = record.raw_stream
        if (headers.get_header("Transfer-Encoding") or "").lower() == "chunked":
            stream = ChunkedDataReader(record.raw_stream, raise_exceptions=True)
        spool = tempfile.SpooledTemporaryFile(SPOOL_IN_MEMORY)  # noqa: SIM115 - closed with the record
        try:
            for piece in decoded_pieces(iter(lambda: stream.read(READ_PIECE), b""),
                                        headers.get_header("Content-Encoding") or "", REQUEST_BODY_LIMIT):
                spool.write(piece)
        except (ValidationError, ValueError, OSError) as exc:
            # ValueError: a chunked body that is not (warcio's ChunkedDataException)
            self._problem(record, f"request body left out of the URL key: {exc}")
            spool.close()
            return io.BytesIO(b"")
        spool.seek(0)
        return spool

    def _get_digest(self, record: ArcWarcRecord, name: str) -> str | None:
        return record.rec_headers.get_header(name) or getattr(record, "payload_digest", None)

    def _problem(self, record: ArcWarcRecord, what: str) -> None:
        text = (f"{self.curr_filename} record at offset {record.file_offset} "
                f"({record.rec_type} {record.rec_headers.get_header('WARC-Target-URI')}): {what}")
        log.warning("%s", text)
        self.problems.append(text)


def write_cdxj(warc_path: Path, out_path: Path) -> CdxjIndexResult:
    """Index ``warc_path`` into ``out_path`` (sorted CDXJ): every record, the ones that could be indexed
    only in part named in the result."""
    warc_path, out_path = Path(warc_path), Path(out_path)
    if not warc_path.is_file():
        raise FileNotFoundError(f"WARC file {warc_path} does not exist; no CDXJ index made")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with open(warc_path, "rb") as warc, replacing(out_path, "w", encoding="utf-8", newline="\n") as out:
        counter = _CountingWriter(out)
        indexer = _Indexer(output=counter, inputs=[warc], sort=True, post_append=True, filename=warc_path.name)
        indexer.process_all()
    return CdxjIndexResult(counter.lines, tuple(indexer.problems))
