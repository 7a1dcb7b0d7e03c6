"""API routes of the harvest status pages: the running jobs with their latest progress figures
(``/api/v1/running-jobs``, the page /status/running) and why each harvest waits (``/api/v1/waiting-harvests``,
the page /status/waiting). The pages read through the same queries (webui/status/jobs.py).

Both are direct, read-only queries of what the scheduler keeps (the running-job monitor, harvest_state): live
status, not definitions, with no repository. A running job's own figures over time, its frontier and what
holds it back are its live view, ``/api/v1/jobs/{id}/live`` (webui/api/live.py).
"""

from __future__ import annotations

from typing import Any

from flask import url_for
from sqlalchemy import Connection, Row, and_, or_, select

from harvestdef.db import schema as s
from harvestdef.harvestreasons import TEMPLATES, from_stored
from harvestdef.model.status import JobStatus
from webui.api.core import PAGED, blueprint, decode_cursor, jsonable, limit, page
from webui.api.errors import ApiError
from webui.api.jobs import jobs_of_domain, parse_domain
from webui.api.parameters import QueryParameter, query, takes
from webui.api.shapes import BOOLEAN, INTEGER, PHRASE, STRING, TIME, answers, described, nullable, page_of, shape
from webui.auth import READ, require
from webui.context import database

_j, _m, _hd, _st = s.jobs, s.runningjobsmonitor, s.harvestdefinitions, s.harvest_state
RUNNING_JOB_COLUMNS = (
    _j.c.job_id, _j.c.harvest_id, _hd.c.name.label("harvest"), _j.c.harvest_num, _j.c.channel, _j.c.controller,
    _j.c.startdate, _j.c.interrupted, _m.c.harvestname, _m.c.hosturl, _m.c.isheritrixconsole, _m.c.progress,
    _m.c.downloadedfilescount, _m.c.queuedfilescount, _m.c.totalbyteswritten, _m.c.currentprocessedkbpersec,
    _m.c.elapsedseconds, _m.c.alertscount, _m.c.activequeuescount, _m.c.tstamp)
_FIGURE = nullable(INTEGER)
RUNNING_JOB = shape({
    "job_id": INTEGER, "harvest_id": INTEGER, "harvest": STRING, "harvest_num": INTEGER, "channel": STRING,
    "controller": nullable(STRING, "the harvest controller that holds the job; null before one took it"),
    "started": nullable(TIME), "lost": described(BOOLEAN, "its controller went silent (interrupted)"),
    "progress": nullable(shape({
        "reported_at": TIME, "percent": nullable({"type": "number"}), "downloaded": _FIGURE, "queued": _FIGURE,
        "bytes_written": _FIGURE, "kb_per_second": _FIGURE, "active_queues": _FIGURE, "alerts": _FIGURE,
        "elapsed_seconds": _FIGURE,
        "console_url": nullable(STRING, "the Heritrix 3 console of the crawl, where it runs in one")}),
        "the controller's newest progress report; null before the first"),
    "live": described(STRING, "the job's live view: figures over time, frontier, what holds it back"),
})
WAITING_HARVEST = shape({
    "harvest": STRING, "active": BOOLEAN,
    "state": described(STRING, "waiting, generating, generated, deactivated or finished"),
    "reason": described(STRING, "why, in words"), "reason_phrase": PHRASE, "since": TIME,
    "will_run": described(BOOLEAN, "whether the harvest runs again: active, neither deactivated nor finished "
                                   "(its schedule or event ran its course), and not waiting with no event to come")})
# the scheduler's states (scheduler/readiness.py) of a harvest that runs again; deactivated and finished ones do not
STATES_THAT_RUN = frozenset({"waiting", "generating", "generated"})
# ... nor one waiting with harvestdef/harvestreasons.py's never_runs reason: its English starts with the
# template's words before the reason it quotes
NEVER_RUNS = TEMPLATES["never_runs"].partition("%(")[0]
RUNNING_DOMAIN = QueryParameter("domain", "string", "only the running jobs that harvest a configuration of this "
                                                    "domain (Unicode or punycode)")


def find_running_jobs(conn: Connection, *, domain: str | None = None, after: int | None = None,
                      size: int | None = None) -> list[Row[Any]]:
    """STARTED jobs by id, each with its newest progress report (runningjobsmonitor; its columns are None
    before the first): all of them, or ``size + 1`` after the job id ``after``. ``domain``, as typed: only
    those that harvest a configuration of it (NetarchiveSuite's FindRunningJobQuery); an invalid or
    not-found error naming the domain field when it is no domain name or no domain we know."""
    statement = (select(*RUNNING_JOB_COLUMNS)
                 .select_from(_j.join(_hd, _hd.c.harvest_id == _j.c.harvest_id)
                              .join(_m, _m.c.jobid == _j.c.job_id, isouter=True))
                 .where(_j.c.status == int(JobStatus.STARTED)).order_by(_j.c.job_id))
    stored = parse_domain(domain)
    if stored is not None:
        statement = statement.where(_j.c.job_id.in_(jobs_of_domain(conn, stored)))
    if after is not None:
        statement = statement.where(_j.c.job_id > after)
    if size is not None:
        statement = statement.limit(size + 1)
    return list(conn.execute(statement))


def render_running_job(row: Row[Any]) -> dict[str, Any]:
    """A running job as the running-jobs page shows it: ``progress`` is null until its first report."""
    progress = None
    if row.tstamp is not None:
        progress = {
            "reported_at": jsonable(row.tstamp), "percent": row.progress, "downloaded": row.downloadedfilescount,
            "queued": row.queuedfilescount, "bytes_written": row.totalbyteswritten,
            "kb_per_second": row.currentprocessedkbpersec, "active_queues": row.activequeuescount,
            "alerts": row.alertscount, "elapsed_seconds": row.elapsedseconds,
            "console_url": row.hosturl if row.isheritrixconsole else None}
    return {"job_id": row.job_id, "harvest_id": row.harvest_id, "harvest": row.harvest,
            "harvest_num": row.harvest_num, "channel": row.channel, "controller": row.controller,
            "started": jsonable(row.startdate), "lost": bool(row.interrupted), "progress": progress,
            "live": url_for("api.job_live_view", job_id=row.job_id)}


def find_waiting_harvests(conn: Connection, *, after: tuple[str, str] | None = None,
                          size: int | None = None) -> list[Row[Any]]:
    """The scheduler's last word on each harvest definition (harvest_state: waiting, generating, generated,
    deactivated, finished, and why), by state and name: all, or ``size + 1`` after (state, name) ``after``."""
    statement = (select(_hd.c.name, _hd.c.isactive, _st.c.state, _st.c.reason, _st.c.reason_phrase,
                         _st.c.changed_at)
                 .select_from(_st.join(_hd, _hd.c.harvest_id == _st.c.harvest_id))
                 .order_by(_st.c.state, _hd.c.name))
    if after is not None:
        state, name = after
        statement = statement.where(or_(_st.c.state > state, and_(_st.c.state == state, _hd.c.name > name)))
    if size is not None:
        statement = statement.limit(size + 1)
    return list(conn.execute(statement))


def will_run(row: Row[Any]) -> bool:
    """Whether the harvest of a find_waiting_harvests row runs again: active, in a state that runs, and not
    waiting for what never comes (a schedule without events to come)."""
    return bool(row.isactive) and row.state in STATES_THAT_RUN and not (row.reason or "").startswith(NEVER_RUNS)


def render_waiting_harvest(row: Row[Any]) -> dict[str, Any]:
    return {"harvest": row.name, "active": row.isactive, "state": row.state, "reason": row.reason,
            "reason_phrase": from_stored(row.reason_phrase), "since": jsonable(row.changed_at),
            "will_run": will_run(row)}


@blueprint.get("/running-jobs")
@takes(RUNNING_DOMAIN, *PAGED)
@answers(page_of(RUNNING_JOB))
@require(READ)
def list_running_jobs() -> Any:
    """Running (STARTED) jobs by id with their newest progress figures, as the running-jobs page shows them.

    ``progress`` holds the controller's newest report (objects downloaded and queued, bytes written, KB/s,
    active queues, alerts, elapsed seconds, when reported); null until the first. ``lost`` marks a job whose
    controller went silent. ``live`` is the job's live view: figures over time, frontier, what holds it back."""
    size = limit()
    key = decode_cursor(query("after"))
    if key is not None and (len(key) != 1 or not isinstance(key[0], int) or isinstance(key[0], bool)):
        raise ApiError("invalid", "after is not a cursor this API gave out", "after")
    with database().connect() as conn:
        rows = find_running_jobs(conn, domain=query("domain"), after=key[0] if key else None, size=size)
    return page(rows, size, lambda row: [row.job_id], render_running_job)


@blueprint.get("/waiting-harvests")
@takes(*PAGED)
@answers(page_of(WAITING_HARVEST))
@require(READ)
def list_waiting_harvests() -> Any:
    """Why each harvest definition waits, was deactivated or did not generate jobs, by state and name.

    ``state`` is the scheduler's: waiting, generating, generated, deactivated or finished; ``reason`` says
    why in words, ``since`` when it came to be; ``will_run`` is false for a harvest that runs no more
    (inactive, deactivated, or finished: an event harvest or schedule that ran its course), which the page
    of waiting harvests lists apart. A harvest the scheduler has not looked at yet is not listed."""
    size = limit()
    key = decode_cursor(query("after"))
    if key is not None and (len(key) != 2 or not all(isinstance(part, str) for part in key)):
        raise ApiError("invalid", "after is not a cursor this API gave out", "after")
    with database().connect() as conn:
        rows = find_waiting_harvests(conn, after=(key[0], key[1]) if key else None, size=size)
    return page(rows, size, lambda row: [row.state, row.name], render_waiting_harvest)
