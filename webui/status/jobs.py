"""Pages of the harvest status section: all jobs (filters, keyset paging, bulk restart/reject/unreject),
running jobs with their latest progress, why harvests wait, and one job in full with its archive files
and a search of its crawl.log.

The job queries and actions are the API's (webui/api/jobs.py), and so are the running jobs and why
harvests wait (webui/api/status.py), so a page shows what the API returns. The crawl.log is searched in the
job's metadata WARC in the archive store by a worker of its own, within a time limit, as the API searches
it (webui/api/crawllog.py), and at most MAX_CRAWL_LOG_MATCHES matching lines are shown: a crawl.log has
millions of lines.

The names the job list's filter offers (harvest definitions' names, harvest controllers and their hosts)
and a job's harvest id, for its files and thumbnails, are read with direct, read-only queries: a list of
names and an id, no more.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from flask import abort, flash, redirect, render_template, request, send_file, url_for
from flask_babel import gettext as _
from flask_babel import ngettext
from sqlalchemy import Connection, select

from harvestdef.archive import ArchiveStore
from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.errors import HarvestSuiteError
from harvestdef.model.controllers import LostControllerRule
from harvestdef.model.status import JobStatus
from webui.api.changelist import changes_page
from webui.api.core import encode_cursor
from webui.api.crawllog import search_domain, search_job_crawl_log, search_pattern
from webui.api.errors import ApiError, translate
from webui.api.jobs import JOB_ACTIONS, budget_reached, find_jobs, job_detail, job_ends, job_filters, stopped_by
from webui.api.live import LiveTimes, job_live
from webui.api.status import find_running_jobs, find_waiting_harvests, will_run
from webui.auth import OPERATE, READ, require
from webui.context import database, settings
from webui.live_words import say
from webui.qa import NoQaReportError, job_qa
from webui.refusal_words import words
from webui.status import blueprint
from webui.thumbnails import first_seed_capture, job_thumbnails, thumbnail_path

MAX_CRAWL_LOG_MATCHES = 500
MAX_BULK_JOBS = 1000
# A change form offers the job's domains as a list up to this many; a larger job's domain is typed.
MAX_DOMAIN_OPTIONS = 300
# The job list's filter offers harvests and harvesters to choose from up to this many each; beyond, typed.
MAX_FILTER_OPTIONS = 1000


@blueprint.get("/")
@require(READ)
def index() -> Any:
    """All jobs, newest first, with what each harvested; filtered by status, harvest (part of its name, or
    one harvest and run), harvester, domain, id range and creation date."""
    size = settings().webui.pageSize
    with database().connect() as conn:
        try:
            filters = job_filters(request.args.get)
            rows = find_jobs(conn, size, **filters)
            error = None
        except ApiError as exc:
            filters, rows, error = {}, [], exc.message
        # a crawl ended as asked (an operator's stop or fail, a budget) is said on its own line, not among the
        # errors (webui/api/jobs.py)
        ends = job_ends(conn, [row.job_id for row in rows[:size]])
        ended_by = {job_id: said for job_id, end in ends.items() if (said := stopped_by(end)) is not None}
        budgets = {job_id: said for job_id, end in ends.items() if (said := budget_reached(end)) is not None}
        harvest_names, harvester_names = filter_choices(conn)
        one_harvest = (conn.scalar(select(s.harvestdefinitions.c.name)
                                   .where(s.harvestdefinitions.c.harvest_id == filters["harvest_id"]))
                       if filters.get("harvest_id") is not None else None)
    following = encode_cursor([rows[size - 1].job_id]) if len(rows) > size else None
    arguments = {k: v for k, v in request.args.items() if k != "after" and v}
    return render_template("status/index.html", jobs=rows[:size], statuses=list(JobStatus), error=error,
                           args=request.args, export_args=arguments, harvest_names=harvest_names,
                           harvester_names=harvester_names, one_harvest=one_harvest, ended_by=ended_by,
                           budgets=budgets,
                           next_url=url_for("status.index", **arguments, after=following) if following else None,
                           JobStatus=JobStatus)


def filter_choices(conn: Connection) -> tuple[list[str], list[str]]:
    """What the job list's filter offers to choose from: harvest definitions' names, and the registered
    harvest controllers and their hosts, each up to MAX_FILTER_OPTIONS (more are typed)."""
    hd, h = s.harvestdefinitions, s.harvesters
    harvests = list(conn.scalars(select(hd.c.name).order_by(hd.c.name).limit(MAX_FILTER_OPTIONS)))
    controllers = set(conn.scalars(select(h.c.controller_id).limit(MAX_FILTER_OPTIONS)))
    hosts = set(conn.scalars(select(h.c.host).distinct().limit(MAX_FILTER_OPTIONS)))
    return harvests, sorted(controllers | hosts)


@blueprint.post("/jobs/actions")
@require(OPERATE)
def job_actions() -> Any:
    """Restart, reject or unreject the checked jobs; each job in its own transaction, each outcome flashed."""
    action = request.form.get("action", "")
    if action not in JOB_ACTIONS:
        abort(400, _("unknown action %(action)s", action=repr(action)))
    job_ids = []
    for text in request.form.getlist("job_id")[:MAX_BULK_JOBS]:
        if text.isdigit():
            job_ids.append(int(text))
    if not job_ids:
        flash(_("No jobs were checked."), "error")
    done = []
    for job_id in job_ids:
        try:
            JOB_ACTIONS[action](job_id)
            done.append(job_id)
        except (ApiError, HarvestSuiteError) as exc:
            flash(_("Job %(id)s: %(reason)s", id=job_id, reason=words(translate(exc))[1]), "error")
    if done:
        done_for = {"restart": _("Restart"), "reject": _("Reject"), "unreject": _("Unreject")}[action]
        flash(ngettext("%(action)s: done for job %(jobs)s.", "%(action)s: done for jobs %(jobs)s.", len(done),
                       action=done_for, jobs=", ".join(map(str, done))), "info")
    return redirect(_back_to_list())


def _back_to_list() -> str:
    target = request.form.get("next", "")
    parts = urlsplit(target)
    if target.startswith("/") and not parts.scheme and not parts.netloc and not target.startswith("//"):
        return target
    return url_for("status.index")


@blueprint.get("/jobs")
def jobs_prefix() -> Any:
    """/status/jobs, a job page's address trimmed to its prefix: the job list, with the same filter."""
    return redirect(url_for("status.index", **request.args.to_dict(flat=False)), 308)


@blueprint.get("/running")
@require(READ)
def running() -> Any:
    """STARTED jobs with their latest progress report (runningjobsmonitor); with ?domain=, those harvesting
    that domain (NetarchiveSuite's FindRunningJobQuery), as the API's /running-jobs lists them."""
    typed = (request.args.get("domain") or "").strip()
    error = None
    with database().connect() as conn:
        try:
            rows = find_running_jobs(conn, domain=typed)
        except ApiError as exc:
            rows, error = [], exc.message
    return render_template("status/running.html", jobs=rows, domain=typed, error=error,
                           poll_interval=settings().webui.livePollIntervalMs)


@blueprint.get("/waiting")
@require(READ)
def waiting() -> Any:
    """Why each harvest definition that will run again waits or failed to generate (harvest_state), as the
    API's /waiting-harvests lists them; the ones that will not (finished, deactivated, inactive) on one line."""
    with database().connect() as conn:
        rows = find_waiting_harvests(conn)
    # those that will not run again (finished, deactivated, inactive) only named below the ones that will
    return render_template("status/waiting.html", harvests=[row for row in rows if will_run(row)],
                           done=sorted((row for row in rows if not will_run(row)), key=lambda row: row.name))


@blueprint.get("/jobs/<int:job_id>")
@require(READ)
def job(job_id: int) -> Any:
    """One job: limits, configurations, seeds, template, errors, archive files, crawl-log search; while it runs,
    its live figures (webui/api/live.py), which the page's script (static/live.js) keeps up to date."""
    return job_page(job_id)


def job_page(job_id: int, refused: dict[str, Any] | None = None) -> str:
    """The job's page; ``refused``: a change form that was refused (webui/status/control.py), shown again with
    its input and the error: {"form": the form's kind, "field", "message", "typed": the form's fields}."""
    with database().connect() as conn:
        detail = job_detail(conn, job_id)
        running = detail["status"] == JobStatus.STARTED.name
        page_size = settings().livechanges.pageSize
        live = job_live(conn, job_id, LostControllerRule.from_settings(settings()), utcnow(),
                        changes_page=page_size, times=LiveTimes.from_settings(settings())) if running else None
        # the changes of a job that ended stay on its page: what was done to it, and what was refused; the
        # newest page of them, and an older one when the page asks for it (changes_before)
        changes_before = request.args.get("changes_before", type=int)
        paging = changes_page(conn, job_id, page_size, before=changes_before if changes_before else None)
        changes = live["changes"] if live is not None and not changes_before else paging["items"]
        domains = [configuration["domain"] for configuration in detail["configurations"]]
        qa, qa_error, thumbnails = None, None, None
        if detail["status"] in (JobStatus.DONE.name, JobStatus.FAILED.name):
            try:
                qa = job_qa(conn, ArchiveStore.from_settings(settings()), job_id, settings().webui.qaChangeThreshold)
            except NoQaReportError as exc:
                qa_error = say(exc.phrase.json(), str(exc))
            thumbnails = job_thumbnails(conn, job_id, detail["harvest_num"], detail["harvest_id"])
    domain = search_domain(request.args.get("domain"))
    pattern = request.args.get("regex") or ""
    search = None
    if domain or pattern:
        search = search_crawl_log(job_id, domain, pattern)
    return render_template("status/job.html", job=detail, live=live, changes=changes, job_domains=domains,
                           changes_paging=paging, older_page=bool(changes_before),
                           refused=refused, search=search, qa=qa, qa_error=qa_error, thumbnails=thumbnails,
                           first_seed_capture=first_seed_capture(thumbnails, detail["seeds"]) if thumbnails else None,
                           domain=domain, pattern=pattern,
                           limit=MAX_CRAWL_LOG_MATCHES, poll_interval=settings().webui.livePollIntervalMs,
                           max_domain_options=MAX_DOMAIN_OPTIONS)


@blueprint.get("/jobs/<int:job_id>/thumbnails/<key>.png")
@require(READ)
def thumbnail(job_id: int, key: str) -> Any:
    """A seed's thumbnail (``key``: the sha1 of the seed) from the job's files in the archive store: a PNG,
    served as one, which browsers never take for a page (webui/thumbnails.py)."""
    with database().connect() as conn:
        harvest_id = conn.scalar(select(s.jobs.c.harvest_id).where(s.jobs.c.job_id == job_id))
    path = None if harvest_id is None else thumbnail_path(ArchiveStore.from_settings(settings()), harvest_id,
                                                           job_id, key)
    if path is None:
        abort(404, _("no thumbnail %(key)s of job %(job)s", key=repr(key), job=job_id))
    # a stored file never changes (harvestdef/archive.py), so a browser may keep it
    response = send_file(path, mimetype="image/png", max_age=86_400)
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


# ---------------------------------------------------------------- crawl.log search
def search_crawl_log(job_id: int, domain: str, pattern: str) -> dict[str, Any]:
    """Lines of the job's crawl.log whose URL is on ``domain`` (or a subdomain) and match ``pattern`` (Java's
    dialect, run by RE2), searched as the API searches (webui/api/crawllog.py); what stops the search (a
    pattern RE2 cannot run, no metadata WARC yet, busy workers) is the answer's error."""
    try:
        regex = search_pattern(pattern)
        with database().connect() as conn:
            found = search_job_crawl_log(conn, job_id, domain, regex, MAX_CRAWL_LOG_MATCHES)
    except ApiError as exc:
        return {"error": exc.message, "lines": []}
    return {"error": found.error, "lines": [line.text for line in found.lines],
            "truncated": found.is_capped or found.is_timed_out, "timed_out": found.is_timed_out,
            "scanned": found.scanned, "seconds": found.seconds}
