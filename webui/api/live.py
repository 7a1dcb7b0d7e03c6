"""API route ``/api/v1/jobs/{id}/live``: a running job seen from inside, and in words what holds it back.

Everything comes from what reaches the scheduler while the job runs: the
newest CrawlProgress (runningjobsmonitor, with the crawler's newest crawl.log lines), its samples over time
(runningjobshistory), the newest frontier report (frontierreportmonitor), the newest CrawlTally (the
controller's counts of the crawl.log so far: runningjobsmonitor.statuscounts, running_domain_counts) and
the controller's heartbeat (harvesters). Nothing is read from the archive store or the crawler itself,
and a figure none of these carries is answered as null or [] (LIVE_FIELDS says why), never estimated.
Beside them, the job's changes (job_changes, through JobChangeRepository), whether the crawl is paused and
by whom, and which control actions it takes now (webui/api/jobcontrol.py judges both). The job page
(webui/status/jobs.py) renders the same answer and its script polls this route.

Read with direct, read-only queries, as the running-jobs page reads the monitor tables: live status kept
by the scheduler, not definitions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Row, select

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.errors import NotFoundError, PatternError
from harvestdef.messages import CRAWL_LOG_TAIL_LINES, CRAWL_PROGRESS_STATUSES
from harvestdef.model.controllers import HEARING_ALL_ALONG, Hearing, LostControllerRule, last_sign_of_life
from harvestdef.model.status import JobStatus
from harvestdef.patterns import compile_pattern
from harvestdef.repositories.hearing import read_hearing
from harvestdef.repositories.jobchanges import JobChangeRepository
from harvestdef.settings import Settings
from harvestdef.times import duration_text, utc_text
from webui.api import jobcontrol
from webui.api.changelist import render_change
from webui.api.core import blueprint, jsonable
from webui.api.errors import ApiError
from webui.api.parameters import QueryParameter, query, takes
from webui.api.phrases import N_, Phrase, phrasebook
from webui.auth import READ, require
from webui.context import database, settings

DEFAULT_LOG_LINES = 20
MAX_LOG_PATTERN_LENGTH = 200  # as the crawl-log search (webui/status/jobs.py)
# runningjobshistory keeps a sample of each report for recentHistoryWindow (900 s: 450 at the shortest
# crawlLoopWaitTime of 2 s) and one each historySampleRate (300 s) before: 2000 of them are a week.
MAX_HISTORY_SAMPLES = 2500
MAX_QUEUES = 50
# NetarchiveSuite's frontier report filters, as the controller names them (harvester/frontierqueues.py)
FRONTIER_FILTER_IDS = ("TopTotalEnqueuesFilter", "RetiredQueuesFilter", "ExhaustedQueuesFilter")
MAX_LIVE_DOMAINS = 100
# The pending versions the live view names (a page says which changes it waits for); the rest are counted.
MAX_PENDING_VERSIONS = 20
DEFAULT_CHANGES_PAGE = 100  # harvestsuite.liveChanges.pageSize's default
# The downloaded count unchanged for this many historySampleRate intervals (by the samples and the newest
# report) is a stall: two, so one slow interval does not count.
NO_PROGRESS_INTERVALS = 2
# A controller silent for this many of its heartbeat intervals is said to be silent, before it is lost.
SILENT_AFTER_HEARTBEATS = 2

LIVE_PARAMETERS = (
    QueryParameter("log_lines", "integer", f"how many of the newest crawl-log lines to answer, 0 to "
                                           f"{CRAWL_LOG_TAIL_LINES} (default {DEFAULT_LOG_LINES})"),
    QueryParameter("log_regex", "string", "only crawl-log lines this regular expression finds (Java's syntax, "
                                          f"run by RE2, at most {MAX_LOG_PATTERN_LENGTH} characters)"),
)

# Each field of the answer with what it holds; LIVE_SCHEMA, the route's response in its OpenAPI description,
# is made from it.
LIVE_FIELDS: dict[str, str] = {
    "job_id": "the job",
    "state": "the job's status (STARTED while it runs; a page stops polling on any other)",
    "reported_at": "when the newest progress report was sent; null before the first",
    "crawler": "the crawler as its newest progress report gives it: status (PRE_CRAWL, CRAWLER_ACTIVE, "
               "CRAWLER_EMPTY, CRAWLER_PAUSING, CRAWLER_PAUSED, CRAWLING_FINISHED), progress (percent of "
               "discovered URIs downloaded), elapsed_seconds, alerts, threads, and console_url: the job's page "
               "on a real Heritrix 3's web console, null for the bundled engine, which has none; null before "
               "the first report",
    "controller": "the job's harvest controller: id, host, last_heartbeat, paused, pause_reason, "
                  "free_disk_bytes, min_space_left (null when its heartbeat does not state it)",
    "downloaded": "URIs downloaded (Heritrix's downloadedUriCount); null before the first report",
    "queued": "URIs queued; null before the first report",
    "failed": "URIs the crawler tried and could not get (a network error: a negative fetch status above "
              "-4000, e.g. -6 DNS failure, -2 connection failed), from the crawl.log lines the controller has "
              "read so far; null before its first count",
    "bytes": "bytes written (Heritrix's total size); null before the first report",
    "rates": "bytes_per_second and documents_per_second, each now (the crawler's current rate) and average "
             "(since the crawl began); null before the first report",
    "status_counts": "the crawl.log lines the controller has read so far (lines), their count per fetch "
                     "status (by_code) and per class (by_class: dns for status 1, 1xx to 5xx, network_error "
                     "for -1 to -3999, refused for -4000 and below: scope, robots, quota, deleted, and "
                     "not_tried for 0); null before its first count",
    "queue_counts": "total, active, retired (over budget) and exhausted queues of the newest report",
    "queues": f"the newest frontier report's queues, at most {MAX_QUEUES} of each of NetarchiveSuite's "
              "filters, most URIs first: the busiest active ones (TopTotalEnqueuesFilter), then the retired "
              "(RetiredQueuesFilter: over budget or quota) and the exhausted (ExhaustedQueuesFilter); each "
              "queue, state (snoozed when it has a wake time, "
              "retired when its budget is spent, exhausted when empty, else active), current_size, "
              "total_enqueues, total_spend, total_budget (-1: none), session_balance, error_count, wakes_in, "
              "last_peek_uri, last_queued_uri",
    "frontier_reported_at": "when the newest frontier report was sent; null before the first",
    "frontier_age_seconds": "how old the newest frontier report is, in seconds; null before the first",
    "frontier_stale": "whether the newest frontier report is older than the page's own refresh "
                      "(harvestsuite.webui.livePollIntervalMs): its queues' wake times (wakes_in) are then past "
                      "and answered as null, and its figures are as of frontier_age_seconds ago",
    "domains": f"the job's domains with the most objects so far, at most {MAX_LIVE_DOMAINS}, each domain, "
               "objects, bytes: counted from crawl.log by the final domain report's rules as the controller "
               "reads it; [] before its first count",
    "holding_back": "what holds the crawl back, each {reason, text, phrase}: reason one of controller_paused, "
                    "controller_lost, controller_silent, scheduler_deaf (the scheduler's broker connection is "
                    "down: no controller is counted lost meanwhile), crawler_paused, crawler_pausing, "
                    "no_active_queues, "
                    "disk_low (the controller's free disk below its minSpaceLeft, both from its "
                    "newest heartbeat), no_progress (the downloaded count unchanged for two "
                    "harvester.monitor.historySampleRate intervals), no_progress_report; text in English; phrase "
                    "the same words as {code, values}, for a page in another language",
    "waiting": "null, or {reason, text, phrase, snoozed, queue, next_in_seconds} when every queue of the newest "
               "frontier report that can be fetched from waits for its politeness delay, as a crawl does between "
               "fetches from one host (reason politeness): snoozed, how many; queue, the one that wakes first; "
               "next_in_seconds, when it wakes, counted from now, null when the report is stale (frontier_stale)",
    "history": "the progress samples (runningjobshistory), oldest first: a sample of each progress report for "
               "the last harvestsuite.scheduler.recentHistoryWindow seconds, one each "
               "harvester.monitor.historySampleRate before; each at, elapsed_seconds, downloaded, queued, bytes, "
               "bytes_per_second, documents_per_second",
    "log": "the crawler's newest crawl-log lines from the newest report, newest first, those log_regex "
           "finds, at most log_lines",
    "changes": "the job's newest control actions and live changes, at most harvestsuite.liveChanges.pageSize, "
               "oldest first, as GET /api/v1/jobs/{id}/changes answers them (which pages the older ones): "
               "version, kind, payload, author, created, state (pending, applied, refused), "
               "applied (when the controller applied or refused it), reason (the controller's, for a refusal), "
               "summary (what it does, in words) and summary_phrase (the same as {code, values})",
    "changes_total": "how many changes the job has, those in changes and the older ones",
    "changes_pending": f"the versions of the job's oldest pending changes, at most {MAX_PENDING_VERSIONS}, "
                       "oldest first; [] when none is pending",
    "paused": "null, or since when and by whom the crawl is paused ({since, by}): the newest applied pause not "
              "followed by an applied resume, unless the crawler reported running after it; by \"the crawler\" "
              "when the crawler reports itself paused and no change explains it, since the first progress "
              "sample that said so",
    "actions": "each control action (pause, resume, checkpoint, stop, fail) with available (whether POST "
               "/api/v1/jobs/{id}/control would take it now), why_not (in words, naming the state) and "
               "why_not_phrase (the same words as {code, values}, for a page in another language)",
}


_LIVE_TYPES: dict[str, Any] = {
    "job_id": "integer", "state": "string", "reported_at": ["string", "null"], "crawler": ["object", "null"],
    "controller": ["object", "null"], "downloaded": ["integer", "null"], "queued": ["integer", "null"],
    "failed": ["integer", "null"], "bytes": ["integer", "null"], "rates": ["object", "null"],
    "status_counts": ["object", "null"],
    "queue_counts": ["object", "null"], "queues": "array", "frontier_reported_at": ["string", "null"],
    "frontier_age_seconds": ["integer", "null"], "frontier_stale": "boolean",
    "domains": "array", "holding_back": "array", "waiting": ["object", "null"], "history": "array",
    "log": "array", "changes": "array",
    "changes_total": "integer", "changes_pending": "array",
    "paused": ["object", "null"], "actions": "object"}
LIVE_SCHEMA: dict[str, Any] = {
    "type": "object", "required": list(LIVE_FIELDS),
    "properties": {name: {"type": _LIVE_TYPES[name], "description": text} for name, text in LIVE_FIELDS.items()}}


@dataclass(frozen=True)
class LiveTimes:
    """The intervals the live view judges its figures by, read once from the settings."""

    refresh: timedelta = timedelta(seconds=5)  # harvestsuite.webui.livePollIntervalMs: the page's own refresh
    sample_rate: timedelta = timedelta(seconds=300)  # harvester.monitor.historySampleRate

    @classmethod
    def from_settings(cls, settings: Settings) -> LiveTimes:
        return cls(refresh=timedelta(milliseconds=settings.webui.livePollIntervalMs),
                   sample_rate=timedelta(seconds=settings.scheduler.historySampleRate))

    @property
    def stall_after(self) -> timedelta:
        return self.sample_rate * NO_PROGRESS_INTERVALS


def parse_log_lines(text: str | None) -> int:
    if text is None or not text.strip():
        return DEFAULT_LOG_LINES
    lines = int(text)  # query() has checked it is a whole number
    if not 0 <= lines <= CRAWL_LOG_TAIL_LINES:
        raise ApiError("invalid", f"log_lines must be between 0 and {CRAWL_LOG_TAIL_LINES}, not {lines}",
                       "log_lines")
    return lines


def parse_log_regex(text: str | None) -> Any:
    """A user's pattern, compiled by the bounded pattern engine (RE2), or None; a 400 naming log_regex."""
    if not text:
        return None
    try:
        return compile_pattern(text, MAX_LOG_PATTERN_LENGTH)
    except PatternError as exc:
        raise ApiError("invalid", f"log_regex is not a regular expression the search can run: {exc.reason}",
                       "log_regex") from None


def job_live(conn: Connection, job_id: int, rule: LostControllerRule, now: datetime, *,
             log_lines: int = DEFAULT_LOG_LINES, log_regex: Any = None,
             changes_page: int = DEFAULT_CHANGES_PAGE, times: LiveTimes = LiveTimes()) -> dict[str, Any]:
    """The live view of one job (LIVE_FIELDS), with its newest ``changes_page`` changes; NotFoundError for an
    unknown job. The pause state and the actions are judged from the job's control actions alone, so the
    cost of a poll does not grow with the number of live changes. A frontier report older than
    ``times.refresh`` is stale: its wake times are not answered as if they were current."""
    j, m, h = s.jobs, s.runningjobsmonitor, s.harvesters
    job = conn.execute(select(j.c.job_id, j.c.status, j.c.controller, j.c.startdate, j.c.interrupted)
                       .where(j.c.job_id == job_id)).first()
    if job is None:
        raise NotFoundError("job", job_id)
    monitor = conn.execute(select(m).where(m.c.jobid == job_id).order_by(m.c.tstamp.desc()).limit(1)).first()
    controller = None
    if job.controller is not None:
        controller = conn.execute(select(h).where(h.c.controller_id == job.controller)).first()
    history = _history(conn, job_id)
    queues = _queues(conn, job_id)
    log = [line for line in (monitor.crawllogtail or "").split("\n") if line] if monitor is not None else []
    if log_regex is not None:
        log = [line for line in log if log_regex.search(line) is not None]
    repository = JobChangeRepository(conn)
    changes = repository.controls_for_job(job_id)
    newest = repository.page(job_id, changes_page)
    counts = status_counts(monitor.crawlloglines, monitor.statuscounts) if monitor is not None else None
    status = crawler_status(monitor.status) if monitor is not None else None
    reported_at = monitor.tstamp if monitor is not None else None
    pause = jobcontrol.paused(status, reported_at, _paused_from(monitor, history), changes) \
        if job.status == JobStatus.STARTED else None
    frontier_age = max(timedelta(0), now - queues[0].tstamp) if queues else None
    stale = frontier_age is not None and frontier_age > times.refresh
    return {
        "job_id": job.job_id, "state": JobStatus(job.status).name,
        "reported_at": jsonable(monitor.tstamp) if monitor is not None else None,
        "crawler": _crawler(monitor),
        "controller": _controller(controller),
        "downloaded": monitor.downloadedfilescount if monitor is not None else None,
        "queued": monitor.queuedfilescount if monitor is not None else None,
        "failed": counts["by_class"].get("network_error", 0) if counts is not None else None,
        "bytes": monitor.totalbyteswritten if monitor is not None else None,
        "rates": _rates(monitor),
        "status_counts": counts,
        "queue_counts": {"total": monitor.totalqueuescount, "active": monitor.activequeuescount,
                         "retired": monitor.retiredqueuescount, "exhausted": monitor.exhaustedqueuescount}
        if monitor is not None else None,
        "queues": [_queue_json(line, stale) for line in queues],
        "frontier_reported_at": jsonable(queues[0].tstamp) if queues else None,
        "frontier_age_seconds": int(frontier_age.total_seconds()) if frontier_age is not None else None,
        "frontier_stale": stale,
        "domains": _domains(conn, job_id),
        "holding_back": holding_back(job, monitor, controller, history, queues, rule, now, times.stall_after,
                                     read_hearing(conn)),
        "waiting": politeness_wait(job, monitor, queues, frontier_age, stale),
        "history": [_sample_json(sample) for sample in history],
        "log": log[:log_lines],
        "changes": [render_change(change) for change in newest],
        "changes_total": newest[-1].version if newest else 0,
        "changes_pending": repository.pending_versions(job_id, MAX_PENDING_VERSIONS),
        "paused": {"since": jsonable(pause[0]), "by": pause[1]} if pause is not None else None,
        "actions": jobcontrol.availability(JobStatus(job.status).name,
                                           jobcontrol.crawler_state(status, reported_at, changes), changes),
    }


def status_counts(lines: int | None, by_code_json: str | None) -> dict[str, Any] | None:
    """The crawl.log counts of a running job's newest CrawlTally, by code and by class; None before one."""
    if lines is None or by_code_json is None:
        return None
    by_code = {code: int(count) for code, count in json.loads(by_code_json).items()}
    by_class: dict[str, int] = {}
    for code, count in by_code.items():
        name = _status_class(int(code))
        by_class[name] = by_class.get(name, 0) + count
    return {"lines": lines, "by_code": by_code, "by_class": by_class}


def _status_class(code: int) -> str:
    if code == 1:
        return "dns"
    if 100 <= code < 600:
        return f"{code // 100}xx"
    if code == 0:
        return "not_tried"
    if -4000 < code < 0:
        return "network_error"
    return "refused" if code <= -4000 else "other"


def _domains(conn: Connection, job_id: int) -> list[dict[str, Any]]:
    d = s.running_domain_counts
    rows = conn.execute(select(d.c.domain, d.c.objects, d.c.bytes).where(d.c.jobid == job_id)
                        .order_by(d.c.objects.desc(), d.c.domain).limit(MAX_LIVE_DOMAINS))
    return [{"domain": row.domain, "objects": row.objects, "bytes": row.bytes} for row in rows]


def crawler_status(index: int | None) -> str | None:
    """runningjobsmonitor.status (an index of CRAWL_PROGRESS_STATUSES) by name; None when unknown."""
    if index is None or not 0 <= index < len(CRAWL_PROGRESS_STATUSES):
        return None
    return CRAWL_PROGRESS_STATUSES[index]


def crawler_report(conn: Connection, job_id: int) -> tuple[str | None, datetime | None]:
    """The crawler's status by the job's newest progress report, and that report's time; (None, None)
    before the first (to judge a control action: webui/api/jobcontrol.py)."""
    m = s.runningjobsmonitor
    newest = conn.execute(select(m.c.status, m.c.tstamp).where(m.c.jobid == job_id)
                          .order_by(m.c.tstamp.desc()).limit(1)).first()
    return (crawler_status(newest.status), newest.tstamp) if newest is not None else (None, None)


def _history(conn: Connection, job_id: int) -> list[Row[Any]]:
    r = s.runningjobshistory
    newest = conn.execute(select(r.c.tstamp, r.c.elapsedseconds, r.c.downloadedfilescount, r.c.queuedfilescount,
                                 r.c.totalbyteswritten, r.c.currentprocessedkbpersec, r.c.currentprocesseddocspersec,
                                 r.c.status)
                          .where(r.c.jobid == job_id).order_by(r.c.tstamp.desc()).limit(MAX_HISTORY_SAMPLES))
    return list(reversed(list(newest)))


def _queues(conn: Connection, job_id: int) -> list[Row[Any]]:
    """The newest frontier report's queues: of each filter (the busiest active, the retired, the exhausted)
    the MAX_QUEUES with the most URIs, in that order."""
    f = s.frontierreportmonitor
    queues: list[Row[Any]] = []
    for filter_id in FRONTIER_FILTER_IDS:
        queues += conn.execute(select(f).where(f.c.jobid == job_id, f.c.filterid == filter_id)
                               .order_by(f.c.currentsize.desc(), f.c.domainname).limit(MAX_QUEUES))
    return queues


def _paused_from(monitor: Row[Any] | None, history: Sequence[Row[Any]]) -> datetime | None:
    """When the crawler's newest run of reports saying it is paused began: the first of the progress samples
    since it last said otherwise, or the newest report's own time."""
    if monitor is None or crawler_status(monitor.status) != "CRAWLER_PAUSED":
        return None
    since = monitor.tstamp
    for sample in reversed(history):
        if sample.status != monitor.status:
            break
        since = min(since, sample.tstamp) if since is not None else sample.tstamp
    return since


def _crawler(monitor: Row[Any] | None) -> dict[str, Any] | None:
    if monitor is None:
        return None
    return {"status": crawler_status(monitor.status), "progress": monitor.progress,
            "elapsed_seconds": monitor.elapsedseconds, "alerts": monitor.alertscount, "threads": monitor.activetoecount,
            "console_url": monitor.hosturl if monitor.isheritrixconsole else None}


def _controller(row: Row[Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {"id": row.controller_id, "host": row.host, "last_heartbeat": jsonable(row.last_heartbeat),
            "paused": bool(row.paused), "pause_reason": row.pause_reason, "free_disk_bytes": row.free_disk_bytes,
            "min_space_left": row.min_space_left}


def _rates(monitor: Row[Any] | None) -> dict[str, Any] | None:
    if monitor is None:
        return None
    # Heritrix reports KiB per second; the monitor columns keep NetarchiveSuite's names ("kb")
    return {"bytes_per_second": {"now": (monitor.currentprocessedkbpersec or 0) * 1024,
                                 "average": (monitor.processedkbpersec or 0) * 1024},
            "documents_per_second": {"now": monitor.currentprocesseddocspersec,
                                     "average": monitor.processeddocspersec}}


def queue_state(line: Row[Any]) -> str:
    """A frontier-report queue's state from its figures (Heritrix's rules: a queue whose spend reached its
    budget is retired, an empty one exhausted, one with a wake time snoozed on politeness); a queue of the
    RetiredQueuesFilter report is retired whatever its figures (a quota retires it, not its budget)."""
    if line.filterid == "RetiredQueuesFilter" or 0 <= line.totalbudget <= line.totalspend:
        return "retired"
    if line.currentsize == 0:
        return "exhausted"
    if line.waketime:
        return "snoozed"
    return "active"


def _queue_json(line: Row[Any], stale: bool) -> dict[str, Any]:
    # a stale report's wake time has passed, or will soon: the queue woke since, or is about to
    return {"queue": line.domainname, "state": queue_state(line), "current_size": line.currentsize,
            "total_enqueues": line.totalenqueues, "total_spend": line.totalspend, "total_budget": line.totalbudget,
            "session_balance": line.sessionbalance, "error_count": line.errorcount,
            "wakes_in": (line.waketime or None) if not stale else None,
            "last_peek_uri": line.lastpeekuri, "last_queued_uri": line.lastqueueduri}


def _sample_json(sample: Row[Any]) -> dict[str, Any]:
    return {"at": jsonable(sample.tstamp), "elapsed_seconds": sample.elapsedseconds,
            "downloaded": sample.downloadedfilescount, "queued": sample.queuedfilescount,
            "bytes": sample.totalbyteswritten, "bytes_per_second": (sample.currentprocessedkbpersec or 0) * 1024,
            "documents_per_second": sample.currentprocesseddocspersec}


# ---------------------------------------------------------------- why is it slow or stalled?
# The words of each reason, by code (webui/api/phrases.py): a reason's phrase has the reason's code, or a
# variant's (no_progress_report_since), and the parts inside it (silent_since) codes of their own.
PHRASES: Mapping[str, str] = {
    "no_progress_report": N_("No progress report has arrived since the job started: the crawler may still be "
                             "starting."),
    "no_progress_report_since": N_("No progress report has arrived since the job started at %(time)s: the "
                                   "crawler may still be starting."),
    "crawler_paused": N_("The crawler is paused (reported %(time)s): it fetches nothing until it is resumed."),
    "crawler_pausing": N_("The crawler is pausing (reported %(time)s): it finishes the URIs in hand and then "
                          "fetches nothing."),
    "controller_lost": N_("Controller %(controller)s is lost: %(silent)s (lost after %(limit)s of silence); the "
                          "figures are as it last reported them."),
    "silent_since": N_("silent since %(time)s, %(duration)s"),
    "never_heard_from": N_("never heard from"),
    "scheduler_deaf": N_("The scheduler has not reached the broker since %(time)s: no heartbeat can reach it, so "
                         "controller %(controller)s (%(silent)s) is not counted lost until it does."),
    "controller_silent": N_("Controller %(controller)s has been silent for %(duration)s since %(time)s; it counts "
                            "as lost after %(limit)s."),
    "disk_low": N_("Controller %(controller)s is short of disk: %(free)s bytes free in its serverDir on %(host)s, "
                   "below its minSpaceLeft of %(minimum)s (heartbeat %(time)s); it takes no new job until space "
                   "is back, and a crawl that fills the disk fails."),
    "controller_paused": N_("Controller %(controller)s is paused: %(reason)s."),
    "no_reason_given": N_("no reason given"),
    "no_active_queues": N_("No queue is active while %(queued)s URIs are queued: of %(total)s queues %(retired)s "
                           "is retired (their budget is spent) and %(exhausted)s exhausted (reported %(time)s)."),
    "no_active_queues_retired": N_("No queue is active while %(queued)s URIs are queued: of %(total)s queues "
                                   "%(retired)s are retired (their budget is spent) and %(exhausted)s exhausted "
                                   "(reported %(time)s)."),
    "politeness_wait": N_("Waiting between fetches as the politeness rules ask (next in %(next_in)s, from "
                          "%(queue)s)."),
    "politeness_wait_as_of_one": N_("Waiting between fetches as the politeness rules ask, as of the frontier "
                                    "report of %(age)s ago: the one queue that could be fetched from was snoozed."),
    "politeness_wait_as_of": N_("Waiting between fetches as the politeness rules ask, as of the frontier report "
                                "of %(age)s ago: all %(snoozed)s queues that could be fetched from were snoozed."),
    "no_progress": N_("No URI downloaded since %(time)s (%(duration)s): the count stayed at %(downloaded)s across "
                      "the last %(samples)s progress samples and the newest report."),
}
_say = phrasebook(PHRASES)


def holding_back(job: Row[Any], monitor: Row[Any] | None, controller: Row[Any] | None, history: Sequence[Row[Any]],
                 queues: Sequence[Row[Any]], rule: LostControllerRule, now: datetime,
                 stall_after: timedelta = LiveTimes().stall_after,
                 hearing: Hearing = HEARING_ALL_ALONG) -> list[dict[str, Any]]:
    """What holds a STARTED job back, each reason a sentence with its figures; [] for any other job. Waiting
    for politeness is no trouble: ``politeness_wait`` says it. A controller's silence is judged by the leading
    scheduler's ``hearing``, as the scheduler judges it."""
    if job.status != JobStatus.STARTED:
        return []
    reasons = _controller_reasons(job, controller, rule, now, hearing)
    if monitor is None:
        reasons.append(_reason("no_progress_report", _say("no_progress_report") if job.startdate is None
                               else _say("no_progress_report_since", time=utc_text(job.startdate))))
        return reasons
    status = crawler_status(monitor.status)
    if status == "CRAWLER_PAUSED":
        reasons.append(_reason("crawler_paused", _say("crawler_paused", time=utc_text(monitor.tstamp))))
        return reasons  # its queues wait on the pause, whatever an older frontier report said of them
    if status == "CRAWLER_PAUSING":
        reasons.append(_reason("crawler_pausing", _say("crawler_pausing", time=utc_text(monitor.tstamp))))
        return reasons
    reasons += _queue_reasons(monitor)
    stalled = _no_progress(monitor, history, stall_after)
    if stalled is not None:
        reasons.append(stalled)
    return reasons


def _reason(reason: str, phrase: Phrase) -> dict[str, Any]:
    return {"reason": reason, "text": phrase.english(), "phrase": phrase.json()}


def _controller_reasons(job: Row[Any], controller: Row[Any] | None, rule: LostControllerRule,
                        now: datetime, hearing: Hearing) -> list[dict[str, Any]]:
    if job.controller is None:
        return []
    reasons = []
    heartbeat = controller.last_heartbeat if controller is not None else None
    interval = controller.heartbeat_interval if controller is not None else None
    since = last_sign_of_life(heartbeat, job.startdate)
    counted = hearing.counted(since)
    limit = rule.silence_limit(interval)
    if hearing.deaf and not job.interrupted:
        assert hearing.deaf_since is not None
        reasons.append(_reason("scheduler_deaf", _say(
            "scheduler_deaf", time=utc_text(hearing.deaf_since), controller=job.controller,
            silent=_say("silent_since", time=utc_text(since), duration=duration_text((now - since).total_seconds()))
            if since else _say("never_heard_from"))))
    elif job.interrupted or rule.is_lost(since, interval, now, hearing):
        silent = _say("silent_since", time=utc_text(since), duration=duration_text((now - since).total_seconds())) \
            if since else _say("never_heard_from")
        reasons.append(_reason("controller_lost", _say("controller_lost", controller=job.controller, silent=silent,
                                                       limit=duration_text(limit.total_seconds()))))
    elif counted is not None and now - counted > limit / rule.lost_after_heartbeats * SILENT_AFTER_HEARTBEATS:
        reasons.append(_reason("controller_silent", _say(
            "controller_silent", controller=job.controller, duration=duration_text((now - since).total_seconds()),
            time=utc_text(since), limit=duration_text(limit.total_seconds()))))
    if controller is not None and controller.min_space_left and controller.free_disk_bytes is not None \
            and controller.free_disk_bytes < controller.min_space_left:
        reasons.append(_reason("disk_low", _say(
            "disk_low", controller=job.controller, free=f"{controller.free_disk_bytes:,}", host=controller.host,
            minimum=f"{controller.min_space_left:,}", time=utc_text(controller.last_heartbeat))))
    if controller is not None and controller.paused:
        reasons.append(_reason("controller_paused", _say(
            "controller_paused", controller=job.controller,
            reason=controller.pause_reason or _say("no_reason_given"))))
    return reasons


def _queue_reasons(monitor: Row[Any]) -> list[dict[str, Any]]:
    queued = monitor.queuedfilescount or 0
    if queued <= 0 or (monitor.activequeuescount or 0) > 0:
        return []
    retired, exhausted = monitor.retiredqueuescount or 0, monitor.exhaustedqueuescount or 0
    return [_reason("no_active_queues", _say(
        "no_active_queues" if retired == 1 else "no_active_queues_retired", queued=f"{queued:,}",
        total=f"{monitor.totalqueuescount or 0:,}", retired=f"{retired:,}", exhausted=f"{exhausted:,}",
        time=utc_text(monitor.tstamp)))]


def politeness_wait(job: Row[Any], monitor: Row[Any] | None, queues: Sequence[Row[Any]], age: timedelta | None,
                    stale: bool) -> dict[str, Any] | None:
    """A STARTED crawl whose queues that can be fetched from all wait for their politeness delay, by the newest
    frontier report: when the first wakes, counted from now, or, from a stale report, only how old it is;
    None otherwise. It is how a crawl of few hosts spends most of its time, not trouble."""
    if job.status != JobStatus.STARTED or monitor is None or age is None \
            or crawler_status(monitor.status) != "CRAWLER_ACTIVE" or (monitor.queuedfilescount or 0) <= 0 \
            or (monitor.activequeuescount or 0) == 0:
        return None
    # the queues that could be fetched from: not exhausted, not retired over their budget
    fetchable = [line for line in queues if queue_state(line) in ("active", "snoozed")]
    snoozed = [line for line in fetchable if queue_state(line) == "snoozed"]
    if not fetchable or len(snoozed) != len(fetchable):
        return None
    soonest = min(snoozed, key=lambda line: _wake_seconds(line.waketime))
    if stale:
        next_in = None
        phrase = _say("politeness_wait_as_of" if len(snoozed) > 1 else "politeness_wait_as_of_one",
                      age=duration_text(age.total_seconds()), snoozed=len(snoozed))
    else:
        wake = _wake_seconds(soonest.waketime)
        next_in = max(0, round(wake - age.total_seconds())) if wake != float("inf") else None
        phrase = _say("politeness_wait", next_in=duration_text(next_in) if next_in is not None
                      else soonest.waketime, queue=soonest.domainname)
    return {**_reason("politeness", phrase), "snoozed": len(snoozed), "queue": soonest.domainname,
            "next_in_seconds": next_in}


def _wake_seconds(text: str) -> float:
    """Heritrix's wake time "1m2s250ms" in seconds (an unreadable one sorts last)."""
    total, number = 0.0, ""
    units = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    i = 0
    while i < len(text):
        char = text[i]
        if char.isdigit() or char == ".":
            number += char
            i += 1
            continue
        unit = "ms" if text.startswith("ms", i) else char
        if unit not in units or not number:
            return float("inf")
        total += float(number) * units[unit]
        number = ""
        i += len(unit)
    return total if not number else float("inf")


def _no_progress(monitor: Row[Any], history: Sequence[Row[Any]], stall_after: timedelta) -> dict[str, Any] | None:
    """The downloaded count of the newest report unchanged since the oldest of the newest samples that share
    it, for ``stall_after`` at least."""
    recent = []
    for sample in reversed(history):
        if sample.downloadedfilescount != monitor.downloadedfilescount:
            break
        recent.append(sample)
    if not recent or monitor.tstamp is None:
        return None
    since = recent[-1].tstamp
    span = monitor.tstamp - since
    if span < stall_after:
        return None
    return _reason("no_progress", _say("no_progress", time=utc_text(since),
                                       duration=duration_text(span.total_seconds()),
                                       downloaded=f"{monitor.downloadedfilescount:,}", samples=len(recent)))


# ---------------------------------------------------------------- route
@blueprint.get("/jobs/<int:job_id>/live")
@takes(*LIVE_PARAMETERS)
@require(READ)
def job_live_view(job_id: int) -> Any:
    """A job while it runs: figures, rates, progress samples, busiest queues, what holds it back, crawl-log lines.

    Filled from what the scheduler receives while the job runs; fields it cannot fill are null or [], and
    the response schema says why for each."""
    lines = parse_log_lines(query("log_lines"))
    regex = parse_log_regex(query("log_regex"))
    with database().connect() as conn:
        return job_live(conn, job_id, LostControllerRule.from_settings(settings()), utcnow(), log_lines=lines,
                        log_regex=regex, changes_page=settings().livechanges.pageSize,
                        times=LiveTimes.from_settings(settings()))
