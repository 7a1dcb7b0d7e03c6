"""API routes: harvest history of a domain, and statistics of a harvest definition's runs.

A domain's history reads historyinfo by configuration (an index range per configuration), each row with
its nothing-harvested flag and reason from harvest_findings. A harvest's statistics come from the summary
table kept at status intake (harvest_run_summary per run), never from a scan of historyinfo, which holds
billions of rows in a national archive; a run's largest domains rank that run's own rows, read by its
jobs; a run's list of configurations that got nothing is an index range of harvest_findings. The queries
are shared with the history pages (webui/history/views.py).

These are direct, read-only queries by index ranges over the summary tables, shaped for each page; the
writes behind them are the intake's, through HistoryWriter.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Row, func, select

from harvestdef.db import schema as s
from harvestdef.model.status import StopReason
from webui.api.core import PAGED, blueprint, decode_cursor, jsonable, limit, page
from webui.api.errors import ApiError
from webui.api.jobs import finding_json
from webui.api.parameters import query, takes
from webui.auth import READ, require
from webui.context import database
from webui.qa import run_qa_sums

STOP_REASONS = list(StopReason)
STOP_COLUMNS = {reason: f"stop_{reason.name.lower()}" for reason in StopReason}
LARGEST_DOMAINS = 10


def _int_cursor(field: str = "after") -> int | None:
    cursor = decode_cursor(query(field))
    if cursor is None:
        return None
    if len(cursor) != 1 or not isinstance(cursor[0], int):
        raise ApiError("invalid", "after is not a cursor this API gave out", field)
    return cursor[0]


# ---------------------------------------------------------------- domain history
def domain_history(conn: Connection, name: str, size: int, after: int | None = None) -> list[Row[Any]]:
    """Up to ``size + 1`` historyinfo rows of the domain's configurations, newest (highest id) first."""
    d, c, h, hd, j, f = s.domains, s.configurations, s.historyinfo, s.harvestdefinitions, s.jobs, s.harvest_findings
    domain_id = conn.scalar(select(d.c.domain_id).where(d.c.name == name))
    if domain_id is None:
        raise ApiError("not_found", f"no domain named {name!r}")
    query = (select(h.c.historyinfo_id, h.c.harvest_time, hd.c.name.label("harvest"), j.c.harvest_num,
                    h.c.job_id, c.c.name.label("configuration"), h.c.stopreason, h.c.objectcount, h.c.bytecount,
                    h.c.novel_objects, h.c.novel_bytes, h.c.duplicate_objects, h.c.duplicate_bytes,
                    f.c.reason, f.c.fetch_status, f.c.seed, f.c.other_seeds_failed)
             .select_from(h.join(c, c.c.config_id == h.c.config_id)
                          .join(hd, hd.c.harvest_id == h.c.harvest_id, isouter=True)
                          .join(j, j.c.job_id == h.c.job_id, isouter=True)
                          .join(f, f.c.historyinfo_id == h.c.historyinfo_id, isouter=True))
             .where(c.c.domain_id == domain_id))
    if after is not None:
        query = query.where(h.c.historyinfo_id < after)
    return list(conn.execute(query.order_by(h.c.historyinfo_id.desc()).limit(size + 1)))


def render_history_row(row: Row[Any]) -> dict[str, Any]:
    values = dict(row._mapping)
    values["stopreason"] = StopReason(values["stopreason"])
    for key in ("reason", "fetch_status", "seed"):
        del values[key]
    return {**{key: jsonable(value) for key, value in values.items()}, **finding_json(row)}


# ---------------------------------------------------------------- harvest statistics
def harvest_id_of(conn: Connection, name: str) -> int:
    harvest_id = conn.scalar(select(s.harvestdefinitions.c.harvest_id).where(s.harvestdefinitions.c.name == name))
    if harvest_id is None:
        raise ApiError("not_found", f"no harvest definition named {name!r}")
    return harvest_id


def harvest_runs(conn: Connection, harvest_id: int, size: int, after: int | None = None) -> list[Row[Any]]:
    """Up to ``size + 1`` runs of the harvest from harvest_run_summary, newest (highest harvest_num) first."""
    r = s.harvest_run_summary
    query = select(r).where(r.c.harvest_id == harvest_id)
    if after is not None:
        query = query.where(r.c.harvest_num < after)
    return list(conn.execute(query.order_by(r.c.harvest_num.desc()).limit(size + 1)))


def render_run(row: Row[Any]) -> dict[str, Any]:
    values = dict(row._mapping)
    run = {key: jsonable(values[key]) for key in (
        "harvest_num", "jobs_done", "jobs_failed", "configurations", "objects", "bytes", "novel_objects",
        "novel_bytes", "duplicate_objects", "duplicate_bytes", "nothing_harvested", "updated_at")}
    run["stop_reasons"] = {reason.name: values[column] for reason, column in STOP_COLUMNS.items()}
    return run


def nothing_harvested(conn: Connection, harvest_id: int, harvest_num: int, size: int,
                      after: int | None = None) -> list[Row[Any]]:
    """Up to ``size + 1`` configurations of the run that got nothing, by historyinfo id, with the reason:
    one index range of harvest_findings (a snapshot run may have a hundred thousand dead domains)."""
    f, c, d = s.harvest_findings, s.configurations, s.domains
    query = (select(f.c.historyinfo_id, d.c.name.label("domain"), c.c.name.label("configuration"), f.c.job_id,
                    f.c.reason, f.c.fetch_status, f.c.seed, f.c.other_seeds_failed)
             .select_from(f.join(c, c.c.config_id == f.c.config_id).join(d, d.c.domain_id == c.c.domain_id))
             .where(f.c.harvest_id == harvest_id, f.c.harvest_num == harvest_num))
    if after is not None:
        query = query.where(f.c.historyinfo_id > after)
    return list(conn.execute(query.order_by(f.c.historyinfo_id).limit(size + 1)))


def render_nothing_harvested(row: Row[Any]) -> dict[str, Any]:
    return {"domain": row.domain, "configuration": row.configuration, "job_id": row.job_id, "reason": row.reason,
            "fetch_status": row.fetch_status, "seed": row.seed, "other_seeds_failed": row.other_seeds_failed}


def newest_run_with_figures(conn: Connection, harvest_id: int) -> int | None:
    """The newest run of the harvest whose jobs reported figures of any configuration (a run of failed jobs
    only has none to rank), from harvest_run_summary; None before any has."""
    r = s.harvest_run_summary
    return conn.scalar(select(func.max(r.c.harvest_num)).where(r.c.harvest_id == harvest_id, r.c.configurations > 0))


def largest_domains(conn: Connection, harvest_id: int, harvest_num: int | None,
                    count: int = LARGEST_DOMAINS) -> list[dict[str, Any]]:
    """The domain configurations of one run with the most bytes, most first, from that run's own historyinfo
    rows: those of the run's jobs (an index range of historyinfo per job), so a later run of the same
    domains, in this harvest or another, changes nothing here. The rows read are the run's, never the
    table's: a snapshot run of two million configurations ranks its two million rows."""
    if harvest_num is None:
        return []
    h, j, c, d = s.historyinfo, s.jobs, s.configurations, s.domains
    run_jobs = select(j.c.job_id).where(j.c.harvest_id == harvest_id, j.c.harvest_num == harvest_num)
    rows = conn.execute(
        select(d.c.name.label("domain"), c.c.name.label("configuration"), h.c.bytecount, h.c.objectcount,
               h.c.stopreason, h.c.job_id)
        .select_from(h.join(c, c.c.config_id == h.c.config_id).join(d, d.c.domain_id == c.c.domain_id))
        .where(h.c.job_id.in_(run_jobs), h.c.harvest_id == harvest_id)
        .order_by(h.c.bytecount.desc(), d.c.name, c.c.name).limit(count))
    return [{"domain": row.domain, "configuration": row.configuration, "bytes": row.bytecount,
             "objects": row.objectcount, "stop_reason": StopReason(row.stopreason).name, "job_id": row.job_id}
            for row in rows]


# ---------------------------------------------------------------- routes
@blueprint.get("/domains/<name>/history")
@takes(*PAGED)
@require(READ)
def get_domain_history(name: str) -> Any:
    """The domain's harvest history (historyinfo), newest first, each row with a nothing-harvested flag.

    Besides NetarchiveSuite's figures a row has novel and duplicate figures, and ``nothing_harvested`` with
    ``nothing_harvested_reason`` (from crawl.log, in English), ``_fetch_status``, ``_seed`` and
    ``_other_seeds_failed`` when its configuration got nothing."""
    size = limit()
    with database().connect() as conn:
        rows = domain_history(conn, name, size, _int_cursor())
    return page(rows, size, lambda row: [row.historyinfo_id], render_history_row)


@blueprint.get("/harvests/<name>/statistics")
@takes(*PAGED)
@require(READ)
def get_harvest_statistics(name: str) -> Any:
    """A harvest's runs (newest first, paged) with their figures and nothing-harvested count, and the largest
    domains of its newest run that has figures (``largest_domains_run``, null before any run has).

    A run has bytes, objects, novel and duplicate figures, configurations per stop reason and
    ``nothing_harvested``, the count of configurations that got nothing (listed by the route below), and
    ``qa``: the sums of its jobs' QA summaries (seeds_total, seeds_not_captured, pages_with_missing_resources,
    missing_resources, and the jobs that sent one), null when none did."""
    size = limit()
    with database().connect() as conn:
        harvest_id = harvest_id_of(conn, name)
        qa_sums = run_qa_sums(conn, harvest_id)
        runs = page(harvest_runs(conn, harvest_id, size, _int_cursor()), size, lambda row: [row.harvest_num],
                    lambda row: {**render_run(row), "qa": qa_sums.get(row.harvest_num)})
        run = newest_run_with_figures(conn, harvest_id)
        return {"harvest": name, **runs, "largest_domains_run": run,
                "largest_domains": largest_domains(conn, harvest_id, run)}


@blueprint.get("/harvests/<name>/runs/<int:harvest_num>/nothing-harvested")
@takes(*PAGED)
@require(READ)
def get_nothing_harvested(name: str, harvest_num: int) -> Any:
    """The configurations of one run of a harvest that got nothing, with the reason from crawl.log (paged)."""
    size = limit()
    with database().connect() as conn:
        harvest_id = harvest_id_of(conn, name)
        rows = nothing_harvested(conn, harvest_id, harvest_num, size, _int_cursor())
    return {"harvest": name, "harvest_num": harvest_num,
            **page(rows, size, lambda row: [row.historyinfo_id], render_nothing_harvested)}
