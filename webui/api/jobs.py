"""API routes: jobs (the list with filters, one job in full, and an operator's restart, reject, unreject).

The queries here are shared with the harvest status pages (webui/status/jobs.py), so a page and its API
call always show the same jobs. Status changes go through JobRepository, which owns the transition table.

The job list and a job's figures are read with direct, read-only queries (keyset paging over jobs
joined with the harvest's name); every change goes through JobRepository.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from flask import url_for
from sqlalchemy import BigInteger, Connection, DateTime, Row, cast, func, select, type_coerce

from harvestdef.archive import ArchiveStore
from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.errors import DomainNameError, NotFoundError
from harvestdef.harvestreasons import from_stored
from harvestdef.livechanges import APPLIED, FAIL, PAUSE, RESUME, STOP
from harvestdef.messages import BUDGET_END_CAUSES
from harvestdef.model.controllers import LostControllerRule, last_sign_of_life
from harvestdef.model.jobs import Job
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.repositories.domains import lookup_name
from harvestdef.repositories.hearing import read_hearing
from harvestdef.repositories.jobdedup import JobDedupRepository
from harvestdef.repositories.jobends import JobEnd, JobEndRepository
from harvestdef.repositories.jobevents import CONTROLLER_LOST, RESUBMITTED, JobEventEntry, JobEventRepository
from harvestdef.repositories.jobs import JobRepository
from harvestdef.times import duration_text, utc_text
from webui.api.core import PAGED, blueprint, decode_cursor, jsonable, limit, page, parse_time
from webui.api.errors import ApiError
from webui.api.parameters import QueryParameter, query, takes
from webui.api.shapes import BOOLEAN, INTEGER, PHRASE, STRING, TIME, answers, described, nullable, page_of, shape
from webui.auth import OPERATE, READ, readable_template, require
from webui.context import actor, database, settings
from webui.qa import job_qa
from webui.thumbnails import job_thumbnails

_j, _hd, _h = s.jobs, s.harvestdefinitions, s.historyinfo


def _harvested(column: Any, label: str) -> Any:
    """The sum of a historyinfo figure over the job's rows (NULL until it reported), per listed job: a
    subquery on the historyinfojob index, run only for the rows of the page. Cast, since PostgreSQL's sum of
    a bigint is a numeric."""
    return (select(cast(func.sum(column), BigInteger)).where(_h.c.job_id == _j.c.job_id)
            .scalar_subquery().label(label))


JOB_LIST_COLUMNS = [_j.c.job_id, _j.c.harvest_id, _hd.c.name.label("harvest"), _j.c.harvest_num, _j.c.status,
                    _j.c.channel, _j.c.snapshot, _j.c.creationdate, _j.c.submitteddate, _j.c.startdate,
                    _j.c.enddate, _j.c.num_configs, _j.c.controller, _j.c.interrupted, _j.c.resubmitted_as_job,
                    _j.c.continuationof, _j.c.harvest_errors, _j.c.upload_errors,
                    _harvested(_h.c.objectcount, "objects"), _harvested(_h.c.bytecount, "bytes")]


# ---------------------------------------------------------------- filters, shared with the pages
def parse_statuses(text: str | None, field: str = "status") -> list[JobStatus]:
    """``DONE`` or ``FAILED,FAILED_REJECTED``; an invalid error naming the unknown status otherwise."""
    statuses = []
    for name in (text or "").split(","):
        name = name.strip().upper()
        if not name:
            continue
        if name not in JobStatus.__members__:
            raise ApiError("invalid", f"unknown job status {name!r}; one of {', '.join(JobStatus.__members__)}",
                           field)
        statuses.append(JobStatus[name])
    return statuses


def parse_int(text: str | None, field: str) -> int | None:
    if text is None or not text.strip():
        return None
    try:
        return int(text)
    except ValueError:
        raise ApiError("invalid", f"{field} must be a whole number, not {text!r}", field) from None


# the job list's filters (the API's list and CSV export, and the status page's form)
JOB_FILTERS = (
    QueryParameter("harvest", "string", "only jobs of the harvest definitions whose name contains this text "
                                        "(case-insensitive)"),
    QueryParameter("harvest_id", "integer", "only jobs of the harvest definition with this id"),
    QueryParameter("run", "integer", "only jobs of this run (harvest_num) of the harvest given by harvest_id or "
                                     "harvest"),
    QueryParameter("harvester", "string", "only jobs crawled by the harvest controller of this id, or by the "
                                          "controllers on the host of this name"),
    QueryParameter("status", "string", "only jobs in these statuses, comma-separated names: "
                                       + ", ".join(JobStatus.__members__)),
    QueryParameter("from_id", "integer", "only jobs with this id or higher"),
    QueryParameter("to_id", "integer", "only jobs with this id or lower"),
    QueryParameter("since", "string", "only jobs created at or after this ISO 8601 date or time (UTC if no zone)"),
    QueryParameter("until", "string", "only jobs created at or before this ISO 8601 date or time (a bare date: "
                                      "its end)"),
    QueryParameter("domain", "string", "only jobs that harvest a configuration of this domain (Unicode or "
                                       "punycode); with status=STARTED, the running job of a domain"),
)


def job_filters(get: Callable[[str], str | None], paged: bool = True) -> dict[str, Any]:
    """The job list's filters, each read with ``get`` (a page's ``request.args.get``, or the API's
    ``query``): harvest, harvest_id, run, harvester, status, from_id, to_id, since, until, domain, and with
    ``paged`` the cursor after."""
    after = None
    if paged:
        cursor = decode_cursor(get("after"))
        after = cursor[0] if cursor else None
        if after is not None and not isinstance(after, int):
            raise ApiError("invalid", "after is not a cursor this API gave out", "after")
    run = parse_int(get("run"), "run")
    if run is not None and run < 1:
        raise ApiError("invalid", f"run must be 1 or more, not {run}", "run")
    return {"harvest": (get("harvest") or "").strip() or None, "harvest_id": parse_int(get("harvest_id"), "harvest_id"),
            "run": run, "harvester": (get("harvester") or "").strip() or None,
            "statuses": parse_statuses(get("status")),
            "from_id": parse_int(get("from_id"), "from_id"), "to_id": parse_int(get("to_id"), "to_id"),
            "since": parse_time(get("since"), "since"),
            "until": parse_time(get("until"), "until", end_of_day=True),
            "domain": parse_domain(get("domain")), "after": after}


def parse_domain(text: str | None) -> str | None:
    """A domain name as the API stores and looks it up (lookup_name: IDN in Unicode, lower case, a
    registered domain), or an invalid error naming the domain field."""
    if text is None or not text.strip():
        return None
    try:
        return lookup_name(text)
    except DomainNameError as exc:
        raise ApiError("invalid", str(exc), "domain") from None


def jobs_of_domain(conn: Connection, domain: str) -> Any:
    """The ids of the jobs that harvest a configuration of ``domain`` (a subquery); a not-found error naming
    the domain field when there is no such domain (NetarchiveSuite's FindRunningJobQuery)."""
    domain_id = conn.scalar(select(s.domains.c.domain_id).where(s.domains.c.name == domain))
    if domain_id is None:
        raise ApiError("not_found", f"no domain named {domain!r}", "domain")
    c, jc = s.configurations, s.job_configs
    return select(jc.c.job_id).join(c, c.c.config_id == jc.c.config_id).where(c.c.domain_id == domain_id)


def harvests_named_like(conn: Connection, text: str) -> list[int]:
    """The ids of the harvest definitions whose name contains ``text``, compared case-folded in Python, so
    ``æ`` finds ``Æ`` on SQLite too (its lower() knows ASCII only); a not-found error naming the harvest
    field when there is none. Reads every definition's id and name: a site has thousands, not millions."""
    wanted = text.casefold()
    found = [row.harvest_id for row in conn.execute(select(_hd.c.harvest_id, _hd.c.name))
             if wanted in row.name.casefold()]
    if not found:
        raise ApiError("not_found", f"no harvest definition's name contains {text!r}", "harvest")
    return found


def controllers_of_harvester(conn: Connection, harvester: str) -> list[str]:
    """The controller ``harvester`` and the controllers of the host ``harvester`` (a list of values, so the
    jobcontroller index answers the job list's condition); a not-found error naming the harvester field when
    neither a registered controller nor host nor any job has that name."""
    h = s.harvesters
    controllers = {harvester, *conn.scalars(select(h.c.controller_id).where(h.c.host == harvester))}
    known = (len(controllers) > 1
             or conn.scalar(select(h.c.controller_id).where(h.c.controller_id == harvester)) is not None
             or conn.scalar(select(_j.c.job_id).where(_j.c.controller == harvester).limit(1)) is not None)
    if not known:
        raise ApiError("not_found", f"no harvest controller or harvester host named {harvester!r}", "harvester")
    return sorted(controllers)


def find_jobs(conn: Connection, size: int, *, harvest: str | None = None, harvest_id: int | None = None,
              run: int | None = None, harvester: str | None = None, statuses: list[JobStatus] | None = None,
              from_id: int | None = None, to_id: int | None = None, since: datetime | None = None,
              until: datetime | None = None, domain: str | None = None, after: int | None = None,
              columns: Sequence[Any] = JOB_LIST_COLUMNS) -> list[Row[Any]]:
    """Up to ``size + 1`` jobs, newest (highest id) first, below the cursor ``after``; ``since``/``until``
    bound the creation date. One index range scan on the primary key (keyset paging, never OFFSET).
    ``harvest``: part of harvest definitions' names (harvests_named_like); ``harvest_id``: one definition;
    ``run``: its harvest_num, with either. ``harvester``: a controller id or host (controllers_of_harvester).
    ``domain``: only jobs with a configuration of that domain (stored form, see parse_domain).
    ``columns``: JOB_LIST_COLUMNS, or JOB_JSON_COLUMNS for rows that go straight to JSON."""
    query = select(*columns).select_from(_j.join(_hd, _hd.c.harvest_id == _j.c.harvest_id))
    if harvest is not None:
        query = query.where(_j.c.harvest_id.in_(harvests_named_like(conn, harvest)))
    if harvest_id is not None:
        if conn.scalar(select(_hd.c.harvest_id).where(_hd.c.harvest_id == harvest_id)) is None:
            raise ApiError("not_found", f"no harvest definition with id {harvest_id}", "harvest_id")
        query = query.where(_j.c.harvest_id == harvest_id)
    if run is not None:
        if harvest is None and harvest_id is None:
            raise ApiError("invalid", "run is a run of one harvest: give harvest_id or harvest with it", "run")
        query = query.where(_j.c.harvest_num == run)
    if harvester is not None:
        query = query.where(_j.c.controller.in_(controllers_of_harvester(conn, harvester)))
    if statuses:
        query = query.where(_j.c.status.in_([int(x) for x in statuses]))
    if from_id is not None:
        query = query.where(_j.c.job_id >= from_id)
    if to_id is not None:
        query = query.where(_j.c.job_id <= to_id)
    if since is not None:
        query = query.where(_j.c.creationdate >= since)
    if until is not None:
        query = query.where(_j.c.creationdate <= until)
    if domain is not None:
        query = query.where(_j.c.job_id.in_(jobs_of_domain(conn, domain)))
    if after is not None:
        query = query.where(_j.c.job_id < after)
    return list(conn.execute(query.order_by(_j.c.job_id.desc()).limit(size + 1)))


# The list's time columns: only these need converting, and a list page renders fifty rows of eighteen
# columns, so asking every value what it is cost more than the query.
_JOB_LIST_TIMES = ("creationdate", "submitteddate", "startdate", "enddate")
# The same columns with the times as stored (naive UTC), for rows rendered straight to JSON: making 200
# datetimes aware per page only to print them cost more than the query.
JOB_JSON_COLUMNS = [type_coerce(column, DateTime()).label(column.key) if column.key in _JOB_LIST_TIMES else column
                    for column in JOB_LIST_COLUMNS]
# a row's keys and status names looked up once, not per row: Row._asdict and the enum's constructor per row
# would be a fifth of a list call's CPU
_JOB_LIST_KEYS = tuple(column.key for column in JOB_LIST_COLUMNS)
_STATUS_NAMES = {int(status): status.name for status in JobStatus}


def render_job_row(row: Row[Any], end: JobEnd | None = None) -> dict[str, Any]:
    """A listed job as JSON; ``end``: how its crawl ended when that was asked for (``job_ends``), given as
    ``stopped_by`` (an operator's stop or fail) or ``budget_reached``, never among ``harvest_errors``."""
    values = dict(zip(_JOB_LIST_KEYS, row, strict=True))
    values["status"] = _STATUS_NAMES[values["status"]]
    for key in _JOB_LIST_TIMES:
        moment = values[key]
        if moment is not None:
            values[key] = moment.isoformat() + "Z" if moment.tzinfo is None else jsonable(moment)
    values["stopped_by"] = stopped_by(end)
    values["budget_reached"] = budget_reached(end)
    return values


# ---------------------------------------------------------------- a crawl ended as asked is not an error
def job_ends(conn: Connection, job_ids: Sequence[int]) -> dict[int, JobEnd]:
    """Per job of ``job_ids`` whose crawl ended as asked, that end (an operator's stop or fail, or a budget of
    the whole crawl reached), as its controller reported it; one query for a page of jobs."""
    return JobEndRepository(conn).for_jobs(job_ids)


def stopped_by(end: JobEnd | None) -> dict[str, Any] | None:
    """The API's ``stopped_by`` of a job's end: ``action`` (stop or fail), ``user``, ``change`` (its version)
    and ``at`` (when the controller carried it out); None when no operator ended the crawl."""
    if end is None or not end.is_operator_end:
        return None
    return {"action": end.cause, "user": end.author, "change": end.change_version, "at": jsonable(end.ended_at)}


def budget_reached(end: JobEnd | None) -> dict[str, Any] | None:
    """The API's ``budget_reached`` of a job's end: ``budget`` (max_objects, max_bytes, max_running_time),
    its ``limit`` (objects, bytes, seconds; None when the controller could not tell) and ``at``; None when
    the crawl did not end at a budget."""
    if end is None or not end.is_budget:
        return None
    return {"budget": end.cause, "limit": end.budget_limit, "at": jsonable(end.ended_at)}


def operator_actions(conn: Connection, job_id: int) -> list[dict[str, Any]]:
    """The job's pauses and resumes that its controller carried out, oldest first: ``action`` (pause or
    resume), ``user``, ``change`` (its version) and ``at`` (when the controller applied it)."""
    c = s.job_changes
    rows = conn.execute(select(c.c.version, c.c.kind, c.c.author, c.c.created, c.c.applied)
                        .where(c.c.job_id == job_id, c.c.kind.in_((PAUSE, RESUME)), c.c.state == APPLIED)
                        .order_by(c.c.version))
    return [{"action": row.kind, "user": row.author, "change": row.version, "at": jsonable(row.applied or row.created)}
            for row in rows]


def job_detail(conn: Connection, job_id: int) -> dict[str, Any]:
    """Everything about one job: limits, configurations, seeds, template (its credential values masked but for
    admins), errors, its stored files, its events and, while or because its controller is lost, the
    ``interruption``."""
    job = JobRepository(conn).get(job_id)
    harvest = conn.scalar(select(_hd.c.name).where(_hd.c.harvest_id == job.harvest_id))
    events = JobEventRepository(conn).for_job(job_id)
    end = job_ends(conn, [job_id]).get(job_id)
    return {
        "job_id": job.job_id, "harvest": harvest, "harvest_id": job.harvest_id, "harvest_num": job.harvest_num,
        "status": job.status.name, "channel": job.channel, "snapshot": job.snapshot,
        "limits": {"max_bytes": job.forcemaxbytes,
                   "max_objects": -1 if job.forcemaxcount is None else job.forcemaxcount,
                   "max_running_time": -1 if job.forcemaxrunningtime is None else job.forcemaxrunningtime},
        "configurations": job_configurations(conn, job_id),
        "seeds": [line for line in job.seedlist.splitlines() if line.strip()],
        "template": {"name": job.orderxml, "document": readable_template(job.orderxmldoc)},
        "errors": {"harvest": job.harvest_errors, "harvest_details": job.harvest_error_details,
                   "upload": job.upload_errors, "upload_details": job.upload_error_details},
        "stopped_by": stopped_by(end), "budget_reached": budget_reached(end),
        "operator_actions": operator_actions(conn, job_id),
        "times": {name: jsonable(getattr(job, name))
                  for name in ("creationdate", "submitteddate", "startdate", "enddate")},
        "controller": job.controller, "interrupted": job.interrupted, "attempt_id": job.attempt_id,
        "resubmitted_as_job": job.resubmitted_as_job, "continuationof": job.continuationof,
        "store_failed": job.store_failed,
        "deduplication": job_deduplication(conn, job_id),
        "files": job_files(job.harvest_id, job.job_id),
        "events": [render_job_event(event) for event in events],
        "interruption": job_interruption(conn, job, events, LostControllerRule.from_settings(settings()), utcnow()),
    }


def job_deduplication(conn: Connection, job_id: int) -> dict[str, Any] | None:
    """Which earlier jobs the job deduplicates against, as the scheduler decided (docs/scheduler.md,
    Deduplication); None for a job it has not decided (a first selective run, a job waiting for its sources
    to end, deduplication off, a job of a run given one index before migration 0028_job_dedup_sources)."""
    row = JobDedupRepository(conn).find(job_id)
    if row is None:
        return None
    return {"ready": row.ready, "sources": [{"harvest_id": h, "job_id": j} for h, j in row.sources],
            "domains": row.domains, "with_history": row.with_history, "covered": row.covered,
            "missing_job_ids": list(row.missing_job_ids), "refusal": row.refusal,
            "refusal_phrase": from_stored(row.refusal_phrase), "decided_at": jsonable(row.changed_at)}


def render_job_event(event: JobEventEntry) -> dict[str, Any]:
    """One event of the job, oldest first in the job's list: what (``kind``: checkpoint, resume, lost, back,
    resubmitted), when, which controller, which checkpoint (checkpoint and resume only), the attempt it
    belongs to, and when the scheduler recorded it (for ``lost``: ``happened_at`` is the controller's last
    sign of life, ``received_at`` when it was found lost)."""
    return {"kind": event.kind, "checkpoint": event.checkpoint, "controller": event.controller_id,
            "attempt_id": event.attempt_id, "happened_at": jsonable(event.happened_at),
            "received_at": jsonable(event.received_at)}


def job_interruption(conn: Connection, job: Job, events: Sequence[JobEventEntry], rule: LostControllerRule,
                     now: datetime) -> dict[str, Any] | None:
    """The job's lost controller, in figures and in words, or None when its controller is not lost.

    ``state`` is ``lost`` for a STARTED job with the interrupted mark (silent since its controller's last
    sign of life, resubmitted at ``resubmits_at`` unless it reports again; None: never automatically, or not
    while the scheduler is deaf to heartbeats), or
    ``resubmitted`` for a job the scheduler resubmitted because its controller stayed lost.
    """
    if job.status == JobStatus.STARTED and job.interrupted:
        h = s.harvesters
        controller = conn.execute(select(h.c.last_heartbeat, h.c.heartbeat_interval)
                                  .where(h.c.controller_id == job.controller)).first()
        heartbeat = controller.last_heartbeat if controller is not None else None
        interval = controller.heartbeat_interval if controller is not None else None
        since = last_sign_of_life(heartbeat, job.startdate) or now
        # counted as the scheduler counts it: not while it is deaf to heartbeats, not from before it heard again
        hearing = read_hearing(conn)
        due = None if hearing.deaf else rule.resubmits_at(since, interval, hearing)
        silent = (now - since).total_seconds()
        text = f"controller {job.controller} silent since {utc_text(since)}, {duration_text(silent)}; "
        if hearing.deaf:
            assert hearing.deaf_since is not None
            text += (f"not resubmitted while the scheduler does not reach the broker (since "
                     f"{utc_text(hearing.deaf_since)}): no heartbeat can reach it meanwhile")
        elif due is not None:
            text += f"resubmitted at {utc_text(due)} unless it reports again"
        else:
            text += "not resubmitted automatically (resubmitLostAfter is 0): it reports the job when it comes back"
        return {"state": "lost", "controller": job.controller, "silent_since": jsonable(since),
                "silent_seconds": round(silent), "resubmits_at": jsonable(due), "resubmitted_as_job": None,
                "resubmitted_at": None, "text": text}
    resubmitted = next((event for event in events if event.kind == RESUBMITTED), None)
    if job.status != JobStatus.RESUBMITTED or resubmitted is None:
        return None
    lost = [event for event in events if event.kind == CONTROLLER_LOST and event.happened_at <= resubmitted.happened_at]
    since = lost[-1].happened_at if lost else None
    text = f"controller {resubmitted.controller_id} "
    if since is not None:
        text += (f"silent since {utc_text(since)}, {duration_text((resubmitted.happened_at - since).total_seconds())}"
                 "; ")
    else:
        text += "lost; "
    text += f"resubmitted as job {job.resubmitted_as_job} at {utc_text(resubmitted.happened_at)}"
    return {"state": "resubmitted", "controller": resubmitted.controller_id, "silent_since": jsonable(since),
            "silent_seconds": round((resubmitted.happened_at - since).total_seconds()) if since else None,
            "resubmits_at": None, "resubmitted_as_job": job.resubmitted_as_job,
            "resubmitted_at": jsonable(resubmitted.happened_at), "text": text}


def job_configurations(conn: Connection, job_id: int) -> list[dict[str, Any]]:
    """The job's configurations with their limits and, once the job has reported, what it harvested of
    each (historyinfo): objects, bytes, the part of them that was new and the part that deduplicated,
    the stop reason, and whether it got nothing (harvest_findings) with the reason from crawl.log.
    ``result`` is None until then."""
    h, f = s.historyinfo, s.harvest_findings
    results = {row.config_id: row for row in conn.execute(
        select(h.c.config_id, h.c.objectcount, h.c.bytecount, h.c.stopreason, h.c.novel_objects, h.c.novel_bytes,
               h.c.duplicate_objects, h.c.duplicate_bytes,
               f.c.reason, f.c.fetch_status, f.c.seed, f.c.other_seeds_failed)
        .select_from(h.outerjoin(f, f.c.historyinfo_id == h.c.historyinfo_id)).where(h.c.job_id == job_id))}

    def result(config_id: int) -> dict[str, Any] | None:
        row = results.get(config_id)
        if row is None:
            return None
        return {"objects": row.objectcount, "bytes": row.bytecount, "stop_reason": StopReason(row.stopreason).name,
                "novel_objects": row.novel_objects, "novel_bytes": row.novel_bytes,
                "duplicate_objects": row.duplicate_objects, "duplicate_bytes": row.duplicate_bytes,
                **finding_json(row)}

    return [{"domain": c["domain"], "configuration": c["name"], "max_objects": c["maxobjects"],
             "max_bytes": c["maxbytes"], "result": result(c["config_id"])}
            for c in JobRepository(conn).configurations(job_id)]


def finding_json(row: Any) -> dict[str, Any]:
    """The nothing-harvested flag of a row read with harvest_findings' reason, fetch_status, seed and
    other_seeds_failed (outer-joined: all None when the configuration got something)."""
    return {"nothing_harvested": row.reason is not None, "nothing_harvested_reason": row.reason,
            "nothing_harvested_fetch_status": row.fetch_status, "nothing_harvested_seed": row.seed,
            "nothing_harvested_other_seeds_failed": row.other_seeds_failed}


def job_files(harvest_id: int, job_id: int) -> list[dict[str, Any]]:
    """The job's files in the archive store (name relative to the job's directory, and size), by name."""
    directory = ArchiveStore.from_settings(settings()).job_path(harvest_id, job_id)
    found = []
    for folder, subfolders, names in os.walk(directory):
        subfolders.sort()
        for name in names:
            if name.startswith("."):  # the store's temporary files
                continue
            path = os.path.join(folder, name)
            found.append({"name": os.path.relpath(path, directory).replace(os.sep, "/"),
                          "size": os.path.getsize(path)})
    return sorted(found, key=lambda f: f["name"])


# ---------------------------------------------------------------- actions, shared with the pages
def restart_job(job_id: int) -> dict[str, Any]:
    """NetarchiveSuite's resubmit of a FAILED job in one transaction: the new NEW job, as a list row.

    JobRepository.restart refuses a job whose controller still reports crawling it with
    JobStillCrawlingError, a ConflictError, which webui.api.errors answers as 409: the job is fine as a
    request, but the harvesters' state forbids it now, and it may succeed once that crawl stops.
    """
    with write_transaction(database()) as conn:
        new = JobRepository(conn, actor()).restart(job_id, LostControllerRule.from_settings(settings()),
                                                   settings().database.nextJobId)
        row = conn.execute(select(*JOB_LIST_COLUMNS).select_from(_j.join(_hd, _hd.c.harvest_id == _j.c.harvest_id))
                           .where(_j.c.job_id == new.job_id)).one()
        return render_job_row(row)


def reject_job(job_id: int) -> None:
    with write_transaction(database()) as conn:
        JobRepository(conn, actor()).reject(job_id)


def unreject_job(job_id: int) -> None:
    with write_transaction(database()) as conn:
        JobRepository(conn, actor()).unreject(job_id)


JOB_ACTIONS: dict[str, Callable[[int], Any]] = {"restart": restart_job, "reject": reject_job,
                                                "unreject": unreject_job}


def _job_status(job_id: int) -> dict[str, Any]:
    with database().connect() as conn:
        row = conn.execute(select(*JOB_LIST_COLUMNS).select_from(_j.join(_hd, _hd.c.harvest_id == _j.c.harvest_id))
                           .where(_j.c.job_id == job_id)).first()
        if row is None:
            raise NotFoundError("job", job_id)
        end = job_ends(conn, [job_id]).get(job_id)
    return render_job_row(row, end)


# ---------------------------------------------------------------- routes
STOPPED_BY = nullable(shape({
    "action": {"type": "string", "enum": [STOP, FAIL], "description": "stop: the crawl was stopped and its job "
               "post-processed with what it harvested; fail: it was ended and the job reported FAILED"},
    "user": described(STRING, "the operator who asked for it"),
    "change": described(INTEGER, "the job's change that asked for it (its version, GET /jobs/{job_id}/changes)"),
    "at": described(TIME, "when the job's controller carried it out")}),
    "the stop or fail an operator asked for that ended the crawl; null when no operator ended it. It is not "
    "among the job's errors")
BUDGET_REACHED = nullable(shape({
    "budget": {"type": "string", "enum": list(BUDGET_END_CAUSES), "description": "the budget of the whole crawl "
               "it ended at: max_objects (the crawler's maxDocumentsDownload), max_bytes (maxBytesDownload) or "
               "max_running_time (maxTimeSeconds, or the job's time limit)"},
    "limit": nullable(INTEGER, "the budget: objects, bytes or seconds; null when the controller could not tell"),
    "at": described(TIME, "when the crawl ended")}),
    "the budget the crawl ended at; null when it ended otherwise. It is not among the job's errors")
DEDUPLICATION = nullable(shape({
    "ready": described(BOOLEAN, "the job may be dispatched as far as deduplication goes"),
    "sources": {"type": "array", "items": shape({"harvest_id": INTEGER, "job_id": INTEGER}),
                "description": "the earlier jobs whose stored entries hold its domains' captures, newest first"},
    "domains": described(INTEGER, "the job's domains"),
    "with_history": described(INTEGER, "of those, the domains an earlier job of its chain harvested"),
    "covered": described(INTEGER, "of those, the domains whose earlier captures are stored"),
    "missing_job_ids": {"type": "array", "items": INTEGER,
                        "description": "ended jobs without stored entries that left a domain uncovered"},
    "refusal": nullable(STRING, "why the job is held: too few covered domains (satisfactorythresholdpercentage)"),
    "refusal_phrase": PHRASE,
    "decided_at": described(TIME, "when the scheduler decided")}),
    "which earlier jobs the job deduplicates against (docs/scheduler.md, Deduplication); null until the "
    "scheduler has decided, and for jobs of a first selective run or with deduplication off")
OPERATOR_ACTION = shape({
    "action": {"type": "string", "enum": [PAUSE, RESUME]}, "user": described(STRING, "the operator who asked"),
    "change": described(INTEGER, "the job's change (its version)"),
    "at": described(TIME, "when the job's controller carried it out")})
JOB_ERRORS = shape({
    "harvest": nullable(STRING, "what went wrong in the crawl; an operator's stop or fail is in stopped_by and "
                                "a budget reached in budget_reached, not here"),
    "harvest_details": nullable(STRING), "upload": nullable(STRING), "upload_details": nullable(STRING)})
JOB_ROW = shape({"job_id": INTEGER, "status": STRING,
                 "harvest_errors": nullable(STRING, "what went wrong in the crawl; an operator's stop or fail "
                                                    "(stopped_by) and a budget reached (budget_reached) are not "
                                                    "errors"),
                 "stopped_by": STOPPED_BY, "budget_reached": BUDGET_REACHED},
                "job_id", "status", "harvest_errors", "stopped_by", "budget_reached")


@blueprint.get("/jobs")
@answers(page_of(JOB_ROW))
@takes(*JOB_FILTERS, *PAGED)
@require(READ)
def list_jobs() -> Any:
    """Jobs, newest first, with what each harvested (``objects``, ``bytes``: NULL until it reported) and its
    domains (``num_configs``): ?harvest=PART-OF-NAME&harvest_id=&run=&harvester=&status=FAILED,DONE&from_id=
    &to_id=&since=&until=&domain=&after=CURSOR.

    A job an operator stopped or failed has ``stopped_by`` (who, which change, when), one that ended at a
    budget of the whole crawl ``budget_reached`` (which, its limit, when); neither is in its
    ``harvest_errors``: what was asked for is not an error."""
    size = limit()
    filters = job_filters(query)
    with database().connect() as conn:
        rows = find_jobs(conn, size, **filters, columns=JOB_JSON_COLUMNS)
        ends = job_ends(conn, [row.job_id for row in rows[:size]])
    return page(rows, size, lambda row: [row.job_id], lambda row: render_job_row(row, ends.get(row.job_id)))


@blueprint.get("/jobs/<int:job_id>")
@answers(shape({"job_id": INTEGER, "status": STRING, "errors": JOB_ERRORS, "stopped_by": STOPPED_BY,
                "budget_reached": BUDGET_REACHED, "operator_actions": {"type": "array", "items": OPERATOR_ACTION},
                "deduplication": DEDUPLICATION}))
@require(READ)
def get_job(job_id: int) -> Any:
    """One job: limits, configurations with their figures and nothing-harvested flags, seeds, errors, files.

    ``stopped_by`` names the operator whose stop or fail ended the crawl, the change and when its controller
    carried it out; ``budget_reached`` the budget of the whole crawl it ended at, and its limit;
    ``operator_actions`` the pauses and resumes operators asked for that its controller carried out.
    ``errors`` holds what went wrong, never such an end. ``deduplication`` names the earlier jobs whose
    captures of its domains the job deduplicates against, and how many of its domains they cover.

    Each configuration's ``result`` (once reported) has objects, bytes, novel and duplicate figures, the stop
    reason, and ``nothing_harvested`` with ``nothing_harvested_reason`` (from crawl.log, in English),
    ``_fetch_status``, ``_seed`` and ``_other_seeds_failed`` when it got nothing. The crawl template and
    the job's files in the archive store come too."""
    with database().connect() as conn:
        return job_detail(conn, job_id)


@blueprint.get("/jobs/<int:job_id>/qa")
@require(READ)
def get_job_qa(job_id: int) -> Any:
    """The job's QA report from its stored metadata WARC, with each domain's change against the previous run.

    ``report``: the report post-processing wrote (seeds' outcomes, missing embedded resources by reason with
    the pages that need them, hosts' status counts and the hosts that failed most; lists capped, counts
    exact). What an operator's reject rule, deletion of queued URIs, a crawler trap of the template or a
    budget kept out is not missing but in ``excluded``, grouped by that ``rule`` (kind, regex, domain,
    author, version, at; null for a configuration's own budget), counted by ``excluded_resources``;
    ``pages_captured`` counts the pages read for references. A report of version 1 has neither.
    ``domain_changes``: per configuration, objects and bytes against the same harvest's previous run,
    ``flagged`` beyond ``change_threshold`` percent (harvestsuite.webui.qaChangeThreshold) or
    ``fell_to_nothing``. 404 naming why when the job has no QA report yet."""
    with database().connect() as conn:
        return job_qa(conn, ArchiveStore.from_settings(settings()), job_id, settings().webui.qaChangeThreshold)


THUMBNAIL = shape({"job_id": INTEGER, "harvest_num": INTEGER, "has_image": BOOLEAN,
                   "capture_time": nullable(STRING, "the capture pictured (14 digits); null when none"),
                   "note": nullable(STRING, "why there is no picture; null when there is one"),
                   "image_url": nullable(STRING, "the PNG, served by the web UI; null when there is none")})
SEED_THUMBNAILS = shape({
    "job_id": INTEGER,
    "state": nullable(STRING, "MADE or SKIPPED; null while the QA worker has not finished the job"),
    "note": nullable(STRING, "why the job got no thumbnails (SKIPPED)"),
    "seeds": {"type": "array", "items": shape({"seed": STRING, "thumbnail": nullable(THUMBNAIL),
                                               "previous": nullable(THUMBNAIL, "the seed's in the previous run")})},
})


def _thumbnail_json(shown: dict[str, Any] | None) -> dict[str, Any] | None:
    if shown is None:
        return None
    image = url_for("status.thumbnail", job_id=shown["job_id"], key=shown["key"]) if shown["has_image"] else None
    return {"job_id": shown["job_id"], "harvest_num": shown["harvest_num"], "has_image": shown["has_image"],
            "capture_time": shown["capture_time"], "note": shown["note"], "image_url": image}


@blueprint.get("/jobs/<int:job_id>/thumbnails")
@answers(SEED_THUMBNAILS)
@require(READ)
def get_job_thumbnails(job_id: int) -> Any:
    """The QA worker's thumbnails of the job's seeds as replayed, each with the same seed's of the previous run.

    ``state`` is null until the QA worker (harvestsuite qa thumbnails run) has finished the job, MADE when
    it has, SKIPPED with ``note`` saying why when it could make none (no Chromium, no replay service). A
    seed's ``thumbnail`` has ``image_url`` (a PNG) or a ``note`` (not captured by the job, or its replay did
    not load)."""
    with database().connect() as conn:
        job = JobRepository(conn).get(job_id)
        found = job_thumbnails(conn, job_id, job.harvest_num, job.harvest_id)
    return {"job_id": job_id, "state": found["state"], "note": found["note"],
            "seeds": [{"seed": seed["seed"],
                       "thumbnail": _thumbnail_json({k: v for k, v in seed.items() if k not in ("seed", "previous")}
                                                    if "key" in seed else None),
                       "previous": _thumbnail_json(seed["previous"])} for seed in found["seeds"]]}


@blueprint.post("/jobs/<int:job_id>/restart")
@require(OPERATE)
def restart(job_id: int) -> Any:
    """Restart a FAILED job: a NEW copy (returned, 201), the old job RESUBMITTED."""
    return restart_job(job_id), 201


@blueprint.post("/jobs/<int:job_id>/reject")
@require(OPERATE)
def reject(job_id: int) -> Any:
    """Reject a FAILED job: FAILED_REJECTED, not to be harvested again."""
    reject_job(job_id)
    return _job_status(job_id)


@blueprint.post("/jobs/<int:job_id>/unreject")
@require(OPERATE)
def unreject(job_id: int) -> Any:
    """Take back a rejection: FAILED_REJECTED becomes FAILED again."""
    unreject_job(job_id)
    return _job_status(job_id)
