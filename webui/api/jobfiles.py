"""API routes: a job's text files a range of lines at a time, and the records of its metadata WARC; the reading
both the API and the job file pages (webui/status/files.py) use, so a page shows what the API returns.

What is text: every stored file but the WARCs (``*.warc``, ``*.warc.gz``, and ARC files), which stay
download-only: the CDXJ indexes, SHA256SUMS, the deduplication entries (gzip, decompressed as they are
read). The crawler's own files (crawl.log, progress-statistics.log, reports, the crawler-beans.cxml the
job ran with) are records of the job's metadata WARC (harvester/postprocess/metadata.py), so a metadata WARC
lists its records, and each record is read like a file.

Lines are read by webui/textlines.py: only up to the page's last line (the last page excepted, which
counts the whole file), never a file whole. A record is found by its target URI or its name (the URI's
path after ``/crawl/``, so ``logs/crawl.log``), reading the metadata WARC from its start; the list of
records gives each one's offset, which is tried first and verified, so following it reads the WARC from
that record on.

A record that is a copy of the crawl template (``setup/*.cxml``, Heritrix 1's ``setup/order.xml``) is read
with its credential values masked by every role but admin (``open_readable_record``): metadata WARCs
written since post-processing masks that copy hold none, older ones do. For the same reason only admins
download whole a metadata WARC whose template copy holds credential values (``holds_credentials``).

Paths are the archive store's (ArchiveStore.path_of: no absolute path, no ``..``) and must resolve inside
the job's directory; anything else is not found, naming the file.
"""

from __future__ import annotations

import gzip
import io
import logging
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import parse_qs, urlsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from harvestdef.archive import ArchiveStore
from harvestdef.crawltemplate import MAX_TEMPLATE_BYTES
from harvestdef.errors import HarvestSuiteError
from harvestdef.repositories.jobs import JobRepository
from harvestdef.templatesecrets import WITHHELD, has_secrets, masked_template
from webui.api.core import blueprint
from webui.api.errors import ApiError
from webui.api.parameters import QueryParameter, query, takes
from webui.auth import READ, SECRETS, may, require
from webui.context import database, settings
from webui.qa import METADATA_WARC
from webui.textlines import LinePage, read_last_page, read_page

log = logging.getLogger(__name__)

WARC_FILE = re.compile(r"\.w?arc(\.gz)?$", re.IGNORECASE)
# pictures among a job's files (the QA worker's thumbnails): downloaded or shown as images, never as lines
PICTURE_FILE = re.compile(r"\.(png|jpe?g|gif|webp)$", re.IGNORECASE)
RECORD_TYPES = ("resource", "metadata")  # the metadata WARC's files; its warcinfo is the WARC's own header
CRAWL_PATH = "/crawl/"
UNREADABLE = (ArchiveLoadFailed, EOFError, OSError, zlib.error)

Opener = Callable[[], AbstractContextManager[BinaryIO]]


def is_text_file(name: str) -> bool:
    """True for the stored files that are read as lines: all but WARC and ARC files and pictures."""
    return WARC_FILE.search(name) is None and PICTURE_FILE.search(name) is None


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
    found = parse_qs(urlsplit(uri).query)
    for key in ("filename", "version"):
        if key in found:
            return f"{key} {found[key][0]}"
    return ""


# ---------------------------------------------------------------- resolving and opening
def stored_file(job_id: int, name: str) -> Path:
    """The path of the job's stored file ``name``; a not-found error naming it when there is no such job or
    file, or the name leads outside the job's directory."""
    with database().connect() as conn:
        job = JobRepository(conn).find(job_id, with_documents=False)
    if job is None:
        raise ApiError("not_found", f"no job {job_id}")
    store = ArchiveStore.from_settings(settings())
    try:
        directory = store.job_path(job.harvest_id, job_id).resolve()
        path = store.path_of(f"{job.harvest_id}/{job_id}/{name}")
        is_inside = path.resolve().is_relative_to(directory)
    except (ValueError, OSError, HarvestSuiteError):
        is_inside = False
    if not is_inside or not path.is_file() or any(part.startswith(".") for part in Path(name).parts):
        raise ApiError("not_found", f"no file {name!r} of job {job_id}", "name")
    return path


def file_opener(path: Path) -> Opener:
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


def is_template_record(wanted: str) -> bool:
    """True for a record that is a copy of the crawl template: ``setup/<name>.cxml`` or ``setup/order.xml``."""
    name = record_name(wanted)
    return name.startswith("setup/") and (name.endswith(".cxml") or name == "setup/order.xml")


def _readable_template(content: BinaryIO) -> str:
    data = content.read(MAX_TEMPLATE_BYTES + 1)
    if len(data) > MAX_TEMPLATE_BYTES:
        return WITHHELD  # larger than any template: not one that can be searched for its secrets
    return data.decode("utf-8", "replace")


@contextmanager
def open_readable_record(path: Path, wanted: str, offset: int | None, sees_secrets: bool) -> Iterator[BinaryIO]:
    """``open_record``, a copy of the crawl template masked unless ``sees_secrets`` (an admin: ``may(SECRETS)``,
    asked while the request is there, since a download streams after it)."""
    if sees_secrets or not is_template_record(wanted):
        with open_record(path, wanted, offset) as content:
            yield content
        return
    with open_record(path, wanted, offset) as content:
        text = masked_template(_readable_template(content))
    yield io.BytesIO(text.encode("utf-8"))


# records after the setup files: a template copy is never among them, so the search for one stops there
_AFTER_SETUP = ("logs/", "index/")


def is_warc(name: str) -> bool:
    """A WARC or ARC file (download-only), the metadata WARC among them."""
    return not is_text_file(name) and name.lower().endswith((".warc", ".warc.gz", ".arc", ".arc.gz"))


def logs_in_with_credentials(job_id: int) -> bool:
    """Whether job ``job_id`` ran with a template holding credential values: its crawl's WARCs then hold the
    requests that sent them (a login form's POST body, an Authorization header), as every crawler records
    what it sent."""
    with database().connect() as conn:
        job = JobRepository(conn).find(job_id, with_documents=True)
    return job is not None and has_secrets(job.orderxmldoc)


def holds_credentials(path: Path) -> bool:
    """True when a copy of the crawl template in the metadata WARC at ``path`` holds credential values (one
    written before post-processing masked them), or cannot be read to tell."""
    with open(path, "rb") as raw:
        for record in ArchiveIterator(raw):
            uri = record.rec_headers.get_header("WARC-Target-URI") or ""
            if record.rec_type not in RECORD_TYPES:
                continue
            if record_name(uri).startswith(_AFTER_SETUP):
                return False
            if is_template_record(uri) and has_secrets(_readable_template(record.content_stream())):
                return True
    return False


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


# ---------------------------------------------------------------- which lines
@dataclass(frozen=True)
class Paging:
    """Which lines are asked for: from line ``first``, or the last page when ``is_last``; ``count`` lines."""

    first: int
    count: int
    is_last: bool


def _whole_number(name: str, text: str, smallest: int, largest: int | None = None) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ApiError("invalid", f"{name} must be a whole number, not {text!r}", name) from None
    if value < smallest or (largest is not None and value > largest):
        bound = f"between {smallest} and {largest}" if largest is not None else f"{smallest} or more"
        raise ApiError("invalid", f"{name} must be {bound}, not {value}", name)
    return value


def parse_paging(get: Callable[[str], str | None], default_count: int, max_count: int) -> Paging:
    """``from`` (a line number, 1 is the first), or ``page`` (a page number), or ``last``, and ``lines`` per
    page up to ``max_count``, each read with ``get``; an invalid error naming the parameter otherwise."""
    text = (get("lines") or "").strip()
    count = _whole_number("lines", text, 1, max_count) if text else min(default_count, max_count)
    starts = [key for key in ("from", "page", "last") if (get(key) or "").strip()]
    if len(starts) > 1:
        raise ApiError("invalid", f"give one of from, page and last, not {' and '.join(starts)}", starts[1])
    if not starts:
        return Paging(1, count, False)
    if starts[0] == "last":
        return Paging(1, count, True)
    value = _whole_number(starts[0], get(starts[0]) or "", 1)
    return Paging(value if starts[0] == "from" else (value - 1) * count + 1, count, False)


def parse_offset(get: Callable[[str], str | None]) -> int | None:
    text = (get("at") or "").strip()
    return _whole_number("at", text, 0) if text else None


@dataclass(frozen=True)
class FileLines:
    """A page of a job's text file or of a record of its metadata WARC, and what it is called."""

    title: str
    page: LinePage
    count: int


def text_opener(job_id: int, name: str, record: str, offset: int | None) -> tuple[Path, Opener]:
    """The stored file and what opens the text asked for: the file itself, or with ``record`` one of its
    records; an invalid error when that file is not read as text."""
    path = stored_file(job_id, name)
    if record:
        if not is_metadata_warc(name):
            raise ApiError("invalid", f"{name} is not a metadata WARC: only a metadata WARC's records are read",
                           "record")
        sees_secrets = may(SECRETS)
        return path, lambda: open_readable_record(path, record, offset, sees_secrets)
    if not is_text_file(name):
        kind = "a WARC file" if WARC_FILE.search(name) else "a picture"
        raise ApiError("invalid", f"{name} is {kind}: it is downloaded, not read as text", "name")
    return path, file_opener(path)


def read_file_lines(job_id: int, name: str, get: Callable[[str], str | None]) -> FileLines:
    """The lines ``get`` asks for (``record``, ``at``, and parse_paging's) of the job's file ``name``;
    not found naming what is missing, a page beyond the end included."""
    webui = settings().webui
    record = (get("record") or "").strip()
    offset = parse_offset(get)
    paging = parse_paging(get, webui.fileViewLines, webui.fileViewMaxLines)
    _, open_text = text_opener(job_id, name, record, offset)
    title = f"{record_name(record)} in {name}" if record else name
    try:
        if paging.is_last:
            page = read_last_page(open_text, paging.count)
        else:
            with open_text() as stream:
                page = read_page(stream, paging.first, paging.count)
    except NoSuchRecordError:
        raise ApiError("not_found", f"{name} of job {job_id} has no record {record!r}", "record") from None
    except UNREADABLE as exc:
        log.warning("job %d: %s cannot be read: %s", job_id, name, exc)
        raise ApiError("internal", f"{name} of job {job_id} cannot be read: {exc}") from exc
    if page.is_beyond_end:
        raise ApiError("not_found", f"{title} has {page.total} line{'' if page.total == 1 else 's'}: line "
                                    f"{page.first} is beyond its end", "from")
    return FileLines(title, page, paging.count)


def read_records(job_id: int, name: str) -> list[RecordEntry]:
    """The records of the job's metadata WARC ``name``."""
    path = stored_file(job_id, name)
    if not is_metadata_warc(name):
        raise ApiError("invalid", f"{name} is not a metadata WARC: only a metadata WARC's records are listed",
                       "name")
    try:
        return metadata_records(path)
    except UNREADABLE as exc:
        log.warning("job %d: %s cannot be read: %s", job_id, name, exc)
        raise ApiError("internal", f"{name} of job {job_id} cannot be read: {exc}") from exc


# ---------------------------------------------------------------- routes
LINE_PARAMETERS = (
    QueryParameter("record", "string", "a record of the metadata WARC instead of the file: its target URI or its "
                                       "name (the URI's path after /crawl/, e.g. logs/crawl.log)"),
    QueryParameter("at", "integer", "the record's offset in the WARC, as the list of records gives it (tried "
                                    "first; the WARC is read from its start when no such record is there)"),
    QueryParameter("from", "integer", "the first line to return (1 is the file's first line)"),
    QueryParameter("page", "integer", "instead of from: the page of `lines` lines to return (1 is the first)"),
    QueryParameter("last", "string", "instead of from: any value returns the file's last `lines` lines"),
    QueryParameter("lines", "integer", "lines to return, up to harvestsuite.webui.fileViewMaxLines (default "
                                       "harvestsuite.webui.fileViewLines)"),
)


@blueprint.get("/jobs/<int:job_id>/lines/<path:name>")
@takes(*LINE_PARAMETERS)
@require(READ)
def get_file_lines(job_id: int, name: str) -> Any:
    """A range of lines of one of the job's text files (not its WARCs), or of a record of its metadata WARC.

    ``lines``: each with its ``number``, ``text`` (UTF-8, undecodable bytes replaced) and ``cut`` (the line is
    longer than 64 KiB and was cut there); ``has_more`` when a line follows; ``total`` the file's number of
    lines when the read reached its end, else null. Only the lines up to the last one returned are read
    (the last page reads the whole file). 404 naming it for a page beyond the end."""
    found = read_file_lines(job_id, name, query)
    page = found.page
    return {"job_id": job_id, "name": name, "record": (query("record") or "").strip() or None, "first": page.first,
            "lines": [{"number": line.number, "text": line.text, "cut": line.is_cut} for line in page.lines],
            "has_more": page.has_more, "total": page.total}


@blueprint.get("/jobs/<int:job_id>/records/<path:name>")
@require(READ)
def get_warc_records(job_id: int, name: str) -> Any:
    """The records of one of the job's metadata WARCs (the crawler's set-up files, reports and logs, the CDX of
    each WARC): name, what tells records of one name apart, target URI, content type, size and offset."""
    return {"items": [{"name": r.name, "detail": r.detail, "uri": r.uri, "content_type": r.content_type,
                       "size": r.size, "offset": r.offset} for r in read_records(job_id, name)]}
