"""CSV exports of the long lists: domain search results, the job list and a harvest's statistics.

A response is a generator: it reads the list in keyset pages of EXPORT_BATCH rows, each page on a
connection of its own that is closed before the page's lines are sent, so an export of 2,000,000 domains
holds one page in memory and no transaction open while a slow client reads. The input is
checked before the first line is sent, so a bad filter is still a 400 with a JSON error, not a broken file.
The history page's statistics export (webui/history/views.py) uses the same generator.

The lists are read with direct queries (keyset pages of the schema's tables), not repositories: they
only read, and stream more rows than a repository would hand back at once.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from flask import Response
from sqlalchemy import Connection, Engine, select

from harvestdef.db import schema as s
from harvestdef.domainnames import to_punycode
from harvestdef.errors import PatternError
from harvestdef.model.status import StopReason
from harvestdef.patterns import bounded_wildcard_search
from harvestdef.repositories.domains import DomainDefaults, DomainRepository
from webui.api.core import SEARCH_FIELD, SEARCH_QUERY, blueprint, input_named, jsonable
from webui.api.history import STOP_COLUMNS, harvest_id_of, render_run
from webui.api.jobs import JOB_FILTERS, find_jobs, job_ends, job_filters, render_job_row
from webui.api.parameters import query, takes
from webui.auth import EXPORT, require
from webui.context import database, settings
from webui.downloads import attachment

EXPORT_BATCH = 1000
# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection): such text gets a
# leading apostrophe, which spreadsheets show as text and do not run.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

DOMAIN_COLUMNS = ["name", "punycode", "alias", "alias_confirmed", "active", "comments", "crawler_traps", "edition"]
JOB_COLUMNS = ["job_id", "harvest", "harvest_num", "status", "channel", "snapshot", "creationdate", "submitteddate",
               "startdate", "enddate", "num_configs", "controller", "interrupted", "resubmitted_as_job",
               "continuationof", "harvest_errors", "upload_errors", "objects", "bytes", "stopped_by", "stop_action",
               "stop_change", "stopped_at", "budget_reached", "budget_limit"]
RUN_NUMBERS = ["jobs_done", "jobs_failed", "configurations", "objects", "bytes", "novel_objects", "novel_bytes",
               "duplicate_objects", "duplicate_bytes", "nothing_harvested"]
RUN_COLUMNS = ["harvest", "harvest_num", *RUN_NUMBERS, *STOP_COLUMNS.values(), "updated_at"]


def cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def csv_lines(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """The header and each row as CSV text, produced as the rows arrive."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    for row in rows:
        writer.writerow([cell(value) for value in row])
        if buffer.tell() > 64 * 1024:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def csv_response(lines: Iterator[str], filename: str) -> Response:
    return Response(lines, mimetype="text/csv", headers={**attachment(filename), "X-Accel-Buffering": "no"})


def keyset_pages(engine: Engine, read: Callable[[Connection, Any], list[Any]], key: Callable[[Any], Any],
                 ) -> Iterator[Any]:
    """Every row of a list read ``EXPORT_BATCH`` at a time: ``read(conn, after)`` gives the rows after the
    key ``after`` (None: from the start), and ``key(row)`` is a row's key."""
    after = None
    while True:
        with engine.connect() as conn:
            rows = read(conn, after)
        yield from rows
        if len(rows) < EXPORT_BATCH:
            return
        after = key(rows[-1])


# ---------------------------------------------------------------- the three exports
def domain_rows(engine: Engine, defaults: DomainDefaults, query: str, where: str) -> Iterator[list[Any]]:
    # a generator runs after the request has ended: it takes what it needs of the app as arguments
    def read(conn: Connection, after: str | None) -> list[Any]:
        return DomainRepository(conn, defaults=defaults).search_page(query, after, EXPORT_BATCH, where)
    for item in keyset_pages(engine, read, lambda item: item.domain.name):
        domain = item.domain
        # the API's domain_json, without its IP-address test per name: an ASCII name (IP addresses
        # included) is its own punycode, and that test would be half of an export's time
        punycode = domain.name if domain.name.isascii() else to_punycode(domain.name)
        yield [domain.name, punycode, domain.alias_of, jsonable(domain.lastaliasupdate), item.is_active,
               domain.comments, "\n".join(domain.crawlertraps), domain.edition]


def job_rows(engine: Engine, filters: dict[str, Any]) -> Iterator[list[Any]]:
    """Every job the filters find, newest first; a crawl ended as asked (the API's ``stopped_by`` and
    ``budget_reached``) is said in columns of its own, never among the harvest errors."""
    def read(conn: Connection, after: int | None) -> list[Any]:
        rows = find_jobs(conn, EXPORT_BATCH - 1, **{**filters, "after": after})  # it reads size + 1 rows
        ends = job_ends(conn, [row.job_id for row in rows])
        return [(row, ends.get(row.job_id)) for row in rows]
    for row, end in keyset_pages(engine, read, lambda pair: pair[0].job_id):
        values = render_job_row(row, end)
        stop, budget = values["stopped_by"] or {}, values["budget_reached"] or {}
        values.update(stopped_by=stop.get("user"), stop_action=stop.get("action"), stop_change=stop.get("change"),
                      stopped_at=stop.get("at") or budget.get("at"), budget_reached=budget.get("budget"),
                      budget_limit=budget.get("limit"))
        yield [values[column] for column in JOB_COLUMNS]


def run_rows(engine: Engine, name: str, harvest_id: int) -> Iterator[list[Any]]:
    """Every run of the harvest, oldest first, from harvest_run_summary."""
    r = s.harvest_run_summary

    def read(conn: Connection, after: int | None) -> list[Any]:
        query = select(r).where(r.c.harvest_id == harvest_id)
        if after is not None:
            query = query.where(r.c.harvest_num > after)
        return list(conn.execute(query.order_by(r.c.harvest_num).limit(EXPORT_BATCH)))
    for row in keyset_pages(engine, read, lambda row: row.harvest_num):
        run = render_run(row)
        yield [name, run["harvest_num"], *(run[n] for n in RUN_NUMBERS),
               *(run["stop_reasons"][reason.name] for reason in StopReason), run["updated_at"]]


def harvest_statistics_csv(name: str) -> Response:
    """A harvest's runs as CSV (404 before anything is sent if there is no such harvest)."""
    with database().connect() as conn:
        harvest_id = harvest_id_of(conn, name)
    return csv_response(csv_lines(RUN_COLUMNS, run_rows(database(), name, harvest_id)),
                        f"{name}-statistics.csv")


# ---------------------------------------------------------------- routes
@blueprint.get("/export/domains.csv")
@takes(SEARCH_QUERY, SEARCH_FIELD)
@require(EXPORT)
def export_domains() -> Any:
    """Domains matching ?q= (* wildcards) in ?field= (name, crawlertraps or comments) as CSV, by name."""
    where = query("field", "name") or "name"
    with input_named("q", PatternError):
        bounded_wildcard_search(query("q", "") or "")  # refused now, not halfway through a streamed file
    return csv_response(csv_lines(DOMAIN_COLUMNS, domain_rows(database(), DomainDefaults.from_settings(settings()),
                                                          query("q", "") or "", where)),
                        "domains.csv")


@blueprint.get("/export/jobs.csv")
@takes(*JOB_FILTERS)
@require(EXPORT)
def export_jobs() -> Any:
    """Jobs as CSV, newest first, with the job list's filters (harvest, harvest_id, run, harvester, status,
    from_id, to_id, since, until, domain). A crawl an operator stopped or failed names them in
    ``stopped_by``, ``stop_action`` (stop or fail) and ``stop_change``, one that ended at a budget of the
    whole crawl names it in ``budget_reached`` and ``budget_limit``; ``stopped_at`` is when either ended it.
    Neither is among ``harvest_errors``."""
    filters = job_filters(query, paged=False)
    if any(filters[key] is not None for key in ("harvest", "harvest_id", "run", "harvester", "domain")):
        with database().connect() as conn:  # an unknown harvest, harvester or domain: 404 now, not a broken file
            find_jobs(conn, 0, **filters)
    return csv_response(csv_lines(JOB_COLUMNS, job_rows(database(), filters)), "jobs.csv")


@blueprint.get("/export/harvests/<name>/statistics.csv")
@require(EXPORT)
def export_harvest_statistics(name: str) -> Any:
    """A harvest's runs as CSV, oldest first: jobs, objects, bytes, novel/duplicate, stop reasons."""
    return harvest_statistics_csv(name)
