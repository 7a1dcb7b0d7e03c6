"""The job's files in the page: downloaded as they are, text ones viewed a range of lines at a time (first,
previous, next and last page, a jump to a line, the lines per page bounded by
``harvestsuite.webui.fileViewMaxLines``), and the records of its metadata WARC listed, viewed and downloaded.
A copy of the crawl template among them is viewed and downloaded with its credential values masked by every
role but admin, and a metadata WARC holding them unmasked (written before they were masked) is downloaded
whole by admins only (webui/api/jobfiles.py); so are the crawl's WARCs of a job whose template holds
credential values, since they hold the requests that sent them.

The reading is the API's (webui/api/jobfiles.py: what is text, where a file is, which lines, never a file
read whole), so a page shows what ``GET /api/v1/jobs/JOB/lines/NAME`` returns. The text goes into the page
through the template's escaping: a line is shown, never rendered as HTML.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from flask import Response, abort, make_response, render_template, request, send_file, url_for
from flask_babel import gettext as _

from webui.api.errors import ApiError
from webui.api.jobfiles import (
    UNREADABLE,
    NoSuchRecordError,
    holds_credentials,
    is_metadata_warc,
    is_text_file,
    is_warc,
    logs_in_with_credentials,
    open_readable_record,
    open_record,
    parse_offset,
    read_file_lines,
    read_records,
    record_name,
    stored_file,
)
from webui.auth import READ, SECRETS, may, require
from webui.context import settings
from webui.downloads import attachment
from webui.status import blueprint
from webui.textlines import LinePage

DOWNLOAD_CHUNK = 64 * 1024


def refuse(status: int, message: str) -> NoReturn:
    """End the request with the error page (the site's layout, so the way back is a click) saying why."""
    abort(make_response(render_template("error.html", status=status, message=message), status))


@blueprint.context_processor
def file_kinds() -> dict[str, Any]:
    """What the job page's list of files asks of each file: may it be viewed, does it list records."""
    return {"is_text_file": is_text_file, "is_metadata_warc": is_metadata_warc}


@blueprint.get("/jobs/<int:job_id>/files/<path:name>")
@require(READ)
def job_file(job_id: int, name: str) -> Any:
    """Download one of the job's files from the archive store; a metadata WARC whose copy of the crawl template
    holds credential values (one written before they were masked) only by admins."""
    try:
        path = stored_file(job_id, name)
    except ApiError as exc:
        refuse(exc.status, exc.message)
    if is_metadata_warc(name) and not may(SECRETS):
        try:
            is_secret = holds_credentials(path)
        except UNREADABLE as exc:
            refuse(500, f"{name} of job {job_id} cannot be read: {exc}")
        if is_secret:
            refuse(403, _("%(name)s was written before credential values were masked in metadata WARCs: its "
                          "copy of the crawl template holds them, and only admins see credential values, so only "
                          "admins download it whole. Its records can be viewed and downloaded one by one, the "
                          "template masked.", name=name))
    elif is_warc(name) and not is_metadata_warc(name) and not may(SECRETS) and logs_in_with_credentials(job_id):
        refuse(403, _("%(name)s holds the requests of the crawl, and job %(job)s logged in with the credential "
                      "values of its crawl template (a login form's POST, an Authorization header): only admins "
                      "see credential values, so only admins download the crawl's WARCs whole. Its captures can "
                      "be replayed.", name=name, job=job_id))
    return send_file(path, as_attachment=True, download_name=path.name)


@blueprint.get("/jobs/<int:job_id>/view/<path:name>")
@require(READ)
def view_file(job_id: int, name: str) -> Any:
    """A range of lines of one of the job's text files, or with ``record=`` of a record of its metadata WARC
    (``download=1``: the record itself, as an attachment)."""
    record = (request.args.get("record") or "").strip()
    try:
        offset = parse_offset(request.args.get)
        if record and request.args.get("download"):
            return _download_record(job_id, name, record, offset)
        found = read_file_lines(job_id, name, request.args.get)
    except ApiError as exc:
        refuse(exc.status, exc.message)
    return render_template("status/file.html", job_id=job_id, name=name, record=record, offset=offset,
                           # the API's title is English; the page says it in its language
                           title=_("%(record)s in %(file)s", record=record_name(record), file=name) if record else name,
                           page=found.page, count=found.count,
                           max_count=settings().webui.fileViewMaxLines,
                           pages=_pages(job_id, name, record, offset, found.page, found.count),
                           download_url=_download_url(job_id, name, record, offset))


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


def _download_record(job_id: int, name: str, record: str, offset: int | None) -> Response:
    """The record's content as an attachment, streamed from the WARC a chunk at a time."""
    path: Path = stored_file(job_id, name)
    if not is_metadata_warc(name):
        raise ApiError("invalid", f"{name} is not a metadata WARC: only a metadata WARC's records are read", "record")
    try:
        with open_record(path, record, offset):
            pass  # not found now, before the answer has started, when there is no such record
    except NoSuchRecordError:
        raise ApiError("not_found", f"{name} of job {job_id} has no record {record!r}", "record") from None

    sees_secrets = may(SECRETS)  # asked now: the chunks are sent after the view has returned

    def chunks() -> Iterator[bytes]:
        with open_readable_record(path, record, offset, sees_secrets) as content:
            while chunk := content.read(DOWNLOAD_CHUNK):
                yield chunk

    filename = record_name(record).rsplit("/", 1)[-1] or "record"
    return Response(chunks(), mimetype="application/octet-stream", headers=attachment(filename))


@blueprint.get("/jobs/<int:job_id>/records/<path:name>")
@require(READ)
def warc_records(job_id: int, name: str) -> Any:
    """The records of one of the job's metadata WARCs: the crawler's logs, reports and set-up files, the CDX of
    each WARC, each with a link to view and download it."""
    try:
        records = read_records(job_id, name)
    except ApiError as exc:
        refuse(exc.status, exc.message)
    return render_template("status/records.html", job_id=job_id, name=name, records=records)
