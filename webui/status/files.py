"""A job's files in the archive store: downloaded as they are, and text ones viewed in the page a range of
lines at a time.

What is text: every stored file but the WARCs (``*.warc``, ``*.warc.gz``, and ARC files), which stay
download-only: the CDXJ indexes, SHA256SUMS, the deduplication entries (gzip, decompressed as they are
read). The crawler's own files (crawl.log, progress-statistics.log, reports, the crawler-beans.cxml the
job ran with) are records of the job's metadata WARC (harvester/postprocess/metadata.py), so a metadata WARC
lists its records, and each record is viewed and downloaded like a file.

A page is read by webui/status/textlines.py: only up to its last line is read (the last page excepted,
which counts the whole file), never a file whole. A record is found by its target URI or its name (the
URI's path after ``/crawl/``, so ``logs/crawl.log``), scanning the metadata WARC from the start; the list
of records links each with its offset, which is tried first and verified, so following a link reads the
WARC from that record on.

Paths are the archive store's (ArchiveStore.path_of: no absolute path, no ``..``) and must resolve inside
the job's directory; anything else is a 404 naming the file, as is a file that is not there.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, NoReturn
from urllib.parse import parse_qs, urlsplit

from flask import Response, abort, make_response, render_template, request, send_file, url_for
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from harvestdef.archive import ArchiveStore
from harvestdef.errors import HarvestSuiteError
from harvestdef.repositories.jobs import JobRepository
from webui.auth import READ, require
from webui.context import database, settings
from webui.downloads import attachment
from webui.qa import METADATA_WARC
from webui.status import blueprint
from webui.status.textlines import LinePage, read_last_page, read_page

WARC_FILE = re.compile(r"\.w?arc(\.gz)?$", re.IGNORECASE)
RECORD_TYPES = ("resource", "metadata")  # the metadata WARC's files; its warcinfo is the WARC's own header
CRAWL_PATH = "/crawl/"
DOWNLOAD_CHUNK = 64 * 1024


class BadViewRequest(ValueError):
    """A view's parameter that cannot be used; the message names it and says why."""


def is_text_file(name: str) -> bool:
    """True for the stored files the viewer shows: all but WARC and ARC files."""
    return WARC_FILE.search(name) is None


def is_metadata_warc(name: str) -> bool:
    return METADATA_WARC.search(name) is not None


def record_name(uri: str) -> str:
    """A metadata record's name: its target URI's path after ``/crawl/`` (``logs/crawl.log``,
    ``index/cdx``), or the whole URI when it has no such path."""
    path = urlsplit(uri).path
    at = path.find(CRAWL_PATH)
    return path[at + len(CRAWL_PATH):] if at != -1 else uri


def record_detail(uri: str) -> str:
    """What tells records of one name apart: the file of a CDX record, the version of a live change."""
    query = parse_qs(urlsplit(uri).query)
    for key in ("filename", "version"):
        if key in query:
            return f"{key} {query[key][0]}"
    return ""


def refuse(status: int, message: str) -> NoReturn:
    """End the request with the error page (the site's layout, so the way back is a click) saying why."""
    abort(make_response(render_template("error.html", status=status, message=message), status))


# ---------------------------------------------------------------- resolving and opening
def stored_file(job_id: int, name: str) -> Path:
    """The path of the job's stored file ``name``; 404 naming it when there is no such job or file, or the
    name leads outside the job's directory."""
    with database().connect() as conn:
        job = JobRepository(conn).find(job_id, with_documents=False)
    if job is None:
        refuse(404, f"no job {job_id}")
    harvest_id = job.harvest_id
    store = ArchiveStore.from_settings(settings())
    try:
        directory = store.job_path(harvest_id, job_id).resolve()
        path = store.path_of(f"{harvest_id}/{job_id}/{name}")
        is_inside = path.resolve().is_relative_to(directory)
    except (ValueError, OSError, HarvestSuiteError):
        is_inside = False
    if not is_inside or not path.is_file() or any(part.startswith(".") for part in Path(name).parts):
        refuse(404, f"no file {name!r} of job {job_id}")
    return path


def opener(path: Path) -> Callable[[], AbstractContextManager[BinaryIO]]:
    """What opens a stored text file for reading: a gzip file decompressed as it is read."""
    if path.name.endswith(".gz"):
        return lambda: gzip.open(path, "rb")  # type: ignore[return-value]
    return lambda: open(path, "rb")


class NoSuchRecordError(LookupError):
    pass


def _matches(record: Any, wanted: str) -> bool:
    uri = record.rec_headers.get_header("WARC-Target-URI") or ""
    return record.rec_type in RECORD_TYPES and wanted in (uri, record_name(uri))


@contextmanager
def open_record(path: Path, wanted: str, offset: int | None) -> Iterator[BinaryIO]:
    """The content of the first record of the WARC at ``path`` whose URI or name is ``wanted``; the record at
    ``offset`` is tried first, and when it is not that record the WARC is read from its start.

    :raise NoSuchRecordError: the WARC has no such record.
    :raise ArchiveLoadFailed: the WARC cannot be read.
    """
    with open(path, "rb") as raw:
        if offset is not None:
            try:
                raw.seek(offset)
                records = ArchiveIterator(raw)
                record = next(records, None)
            except (ArchiveLoadFailed, EOFError, OSError, ValueError, zlib.error):
                record = None  # an offset that is not a record's start: found by reading from the start instead
            if record is not None and _matches(record, wanted):
                yield record.content_stream()
                return
            raw.seek(0)
        for record in ArchiveIterator(raw):
            if _matches(record, wanted):
                yield record.content_stream()
                return
    raise NoSuchRecordError(f"{path.name} has no record {wanted!r}")


@dataclass(frozen=True)
class RecordEntry:
    """One record of a metadata WARC as its list shows it."""

    name: str
    detail: str
    uri: str
    content_type: str
    size: int | None
    offset: int


def metadata_records(path: Path) -> list[RecordEntry]:
    """The resource and metadata records of a metadata WARC, in file order (read through once)."""
    entries = []
    with open(path, "rb") as raw:
        records = ArchiveIterator(raw)
        for record in records:
            if record.rec_type not in RECORD_TYPES:
                continue
            uri = record.rec_headers.get_header("WARC-Target-URI") or ""
            length = record.rec_headers.get_header("Content-Length")
            entries.append(RecordEntry(record_name(uri), record_detail(uri), uri,
                                       record.rec_headers.get_header("Content-Type") or "",
                                       int(length) if length and length.isdigit() else None,
                                       records.get_record_offset()))
    return entries


# ---------------------------------------------------------------- paging parameters
@dataclass(frozen=True)
class Paging:
    """Which lines a view asks for: from line ``first``, or the last page when ``is_last``; ``count`` lines."""

    first: int
    count: int
    is_last: bool


def _whole_number(name: str, text: str, smallest: int, largest: int | None = None) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise BadViewRequest(f"{name} must be a whole number, not {text!r}") from None
    if value < smallest or (largest is not None and value > largest):
        bound = f"between {smallest} and {largest}" if largest is not None else f"{smallest} or more"
        raise BadViewRequest(f"{name} must be {bound}, not {value}")
    return value


def parse_paging(args: Any, default_count: int, max_count: int) -> Paging:
    """``from`` (a line number, 1 is the first), or ``page`` (a page number), or ``last``, and ``lines`` per
    page up to ``max_count``; BadViewRequest naming the parameter otherwise."""
    text = (args.get("lines") or "").strip()
    count = _whole_number("lines", text, 1, max_count) if text else min(default_count, max_count)
    starts = [key for key in ("from", "page", "last") if (args.get(key) or "").strip()]
    if len(starts) > 1:
        raise BadViewRequest(f"give one of from, page and last, not {' and '.join(starts)}")
    if not starts:
        return Paging(1, count, False)
    if starts[0] == "last":
        return Paging(1, count, True)
    value = _whole_number(starts[0], args.get(starts[0]), 1)
    return Paging(value if starts[0] == "from" else (value - 1) * count + 1, count, False)


def read_lines(open_stream: Callable[[], AbstractContextManager[BinaryIO]], paging: Paging) -> LinePage:
    if paging.is_last:
        return read_last_page(open_stream, paging.count)
    with open_stream() as stream:
        return read_page(stream, paging.first, paging.count)


# ---------------------------------------------------------------- routes
@blueprint.context_processor
def file_kinds() -> dict[str, Any]:
    """What the job page's list of files asks of each file: may it be viewed, does it list records."""
    return {"is_text_file": is_text_file, "is_metadata_warc": is_metadata_warc}


@blueprint.get("/jobs/<int:job_id>/files/<path:name>")
@require(READ)
def job_file(job_id: int, name: str) -> Any:
    """Download one of the job's files from the archive store."""
    path = stored_file(job_id, name)
    return send_file(path, as_attachment=True, download_name=path.name)


@blueprint.get("/jobs/<int:job_id>/view/<path:name>")
@require(READ)
def view_file(job_id: int, name: str) -> Any:
    """A range of lines of one of the job's text files, or with ``record=`` of a record of its metadata WARC
    (``download=1``: the record itself, as an attachment); ``from``/``page``/``last`` and ``lines`` choose the
    lines (parse_paging)."""
    path = stored_file(job_id, name)
    wanted = (request.args.get("record") or "").strip()
    webui = settings().webui
    try:
        if wanted and not is_metadata_warc(name):
            raise BadViewRequest(f"{name} is not a metadata WARC: only a metadata WARC's records are viewed")
        if not wanted and not is_text_file(name):
            raise BadViewRequest(f"{name} is a WARC file: it is downloaded, not viewed as text")
        offset_text = (request.args.get("at") or "").strip()
        offset = _whole_number("at", offset_text, 0) if offset_text else None
        paging = parse_paging(request.args, webui.fileViewLines, webui.fileViewMaxLines)
    except BadViewRequest as exc:
        refuse(400, str(exc))
    if wanted:
        open_stream: Callable[[], AbstractContextManager[BinaryIO]] = lambda: open_record(path, wanted, offset)  # noqa: E731
        title = f"{record_name(wanted)} in {name}"
        if request.args.get("download"):
            return _download_record(path, wanted, offset, job_id)
    else:
        open_stream, title = opener(path), name
    try:
        page = read_lines(open_stream, paging)
    except NoSuchRecordError:
        refuse(404, f"{name} of job {job_id} has no record {wanted!r}")
    except (ArchiveLoadFailed, EOFError, OSError, zlib.error) as exc:
        refuse(422, f"{name} of job {job_id} cannot be read: {exc}")
    if page.is_beyond_end:
        refuse(404, f"{title} has {page.total} line{'' if page.total == 1 else 's'}: line {page.first} is beyond "
                   "its end")
    return render_template("status/file.html", job_id=job_id, name=name, record=wanted, offset=offset,
                           title=title, page=page, count=paging.count, max_count=webui.fileViewMaxLines,
                           pages=_pages(job_id, name, wanted, offset, page, paging.count),
                           download_url=_download_url(job_id, name, wanted, offset))


def _pages(job_id: int, name: str, record: str, offset: int | None, page: LinePage, count: int) -> dict[str, str]:
    """The pager's links: first and previous unless the page starts at line 1, next and last while a line
    follows it."""
    def at(**where: Any) -> str:
        return url_for("status.view_file", job_id=job_id, name=name, record=record or None, at=offset, lines=count,
                       **where)
    pages = {}
    if page.first > 1:
        pages["first"] = at()
        pages["prev"] = at(**{"from": max(page.first - count, 1)})
    if page.has_more:
        pages["next"] = at(**{"from": page.first + count})
        pages["last"] = at(last=1)
    return pages


def _download_url(job_id: int, name: str, record: str, offset: int | None) -> str:
    if record:
        return url_for("status.view_file", job_id=job_id, name=name, record=record, at=offset, download=1)
    return url_for("status.job_file", job_id=job_id, name=name)


def _download_record(path: Path, wanted: str, offset: int | None, job_id: int) -> Response:
    """The record's content as an attachment, streamed from the WARC a chunk at a time."""
    try:
        with open_record(path, wanted, offset):
            pass  # 404 now, before the answer has started, when there is no such record
    except NoSuchRecordError:
        refuse(404, f"{path.name} of job {job_id} has no record {wanted!r}")

    def chunks() -> Iterator[bytes]:
        with open_record(path, wanted, offset) as content:
            while chunk := content.read(DOWNLOAD_CHUNK):
                yield chunk

    filename = record_name(wanted).rsplit("/", 1)[-1] or "record"
    return Response(chunks(), mimetype="application/octet-stream", headers=attachment(filename))


@blueprint.get("/jobs/<int:job_id>/records/<path:name>")
@require(READ)
def warc_records(job_id: int, name: str) -> Any:
    """The records of one of the job's metadata WARCs: the crawler's logs, reports and set-up files, the CDX of
    each WARC, each with a link to view and download it."""
    path = stored_file(job_id, name)
    if not is_metadata_warc(name):
        refuse(400, f"{name} is not a metadata WARC: only a metadata WARC's records are listed")
    try:
        records = metadata_records(path)
    except (ArchiveLoadFailed, EOFError, OSError, zlib.error) as exc:
        refuse(422, f"{name} of job {job_id} cannot be read: {exc}")
    return render_template("status/records.html", job_id=job_id, name=name, records=records)
