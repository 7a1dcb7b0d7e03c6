"""Webhook events, recorded in the transaction of what they announce: one pending delivery per active webhook
that wants the event, so a crash after the commit loses none and a rollback sends none.

The scheduler records them where it raises its notifications (scheduler.intake, scheduler.supervision,
scheduler.tick): a job failed, a harvest run done, a harvest deactivated, a controller lost. Each event's
document is the JSON its deliveries carry: ``event``, ``time`` (when it happened, ISO 8601 UTC), a ``summary``
in words, the ids and names of what it concerns, and a ``link`` to the web UI's page of it (the notifications'
``webuiUrl`` before the path). The sender adds ``delivery_id`` and ``sent_at`` (scheduler/webhooks.py).

An event's key names its occurrence (the job and attempt that failed, the run and its number of jobs when it
was done...), and a webhook gets one delivery per key: a message handled twice, or two transactions that
both saw a run end, add no second delivery. Nothing is read when no active webhook wants the event, so an
installation without webhooks pays one small query per event.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection, func, select
from sqlalchemy.dialects import postgresql, sqlite

from harvestdef.db import schema as s
from harvestdef.db.engine import is_postgresql
from harvestdef.db.types import utcnow
from harvestdef.model.status import JobStatus
from harvestdef.model.webhooks import PENDING, WebhookEvent
from harvestdef.repositories.jobends import JobEndRepository
from harvestdef.repositories.webhooks import to_webhook

_UNFINISHED = (int(JobStatus.NEW), int(JobStatus.SUBMITTED), int(JobStatus.STARTED))


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


class WebhookEvents:
    """Records events into the caller's transaction; each method returns the deliveries it added."""

    def __init__(self, conn: Connection, webui_url: str = "", clock: Callable[[], datetime] = utcnow) -> None:
        self.conn = conn
        self.webui_url = webui_url.rstrip("/")
        self.clock = clock

    def _wanting(self, event: WebhookEvent) -> list[tuple[int, str]]:
        """(id, url) of the active webhooks that want ``event``."""
        hooks = (to_webhook(row) for row in self.conn.execute(select(s.webhooks).where(
            s.webhooks.c.isactive.is_(True))))
        return [(hook.webhook_id, hook.url) for hook in hooks if hook.wants(event)]

    def _link(self, *segments: str) -> str:
        return self.webui_url + "/" + "/".join(quote(segment, safe="") for segment in segments)

    def _record(self, event: WebhookEvent, hooks: list[tuple[int, str]], key: str, document: dict[str, Any]) -> int:
        now = self.clock()
        text = json.dumps({"event": event.value, **document}, ensure_ascii=False)
        rows = [{"webhook_id": webhook_id, "event": event.value, "event_key": key[:300], "url": url,
                 "document": text, "created": now, "state": PENDING, "attempts": 0, "next_attempt_at": now}
                for webhook_id, url in hooks]
        dialect = postgresql if is_postgresql(self.conn.engine) else sqlite
        statement = dialect.insert(s.webhook_deliveries).on_conflict_do_nothing(
            index_elements=["webhook_id", "event_key"]).returning(s.webhook_deliveries.c.delivery_id)
        return sum(len(self.conn.execute(statement.values(row)).all()) for row in rows)

    def _job(self, job_id: int) -> Any:
        j, hd = s.jobs, s.harvestdefinitions
        return self.conn.execute(
            select(j.c.job_id, j.c.status, j.c.attempt_id, j.c.controller, j.c.harvest_id, j.c.harvest_num,
                   j.c.harvest_errors, j.c.upload_errors, j.c.enddate, hd.c.name.label("harvest_name"))
            .select_from(j.outerjoin(hd, hd.c.harvest_id == j.c.harvest_id)).where(j.c.job_id == job_id)).first()

    # ------------------------------------------------------------------ the events
    def job_failed(self, job_id: int, reason: str) -> int:
        """Job ``job_id`` is FAILED now (its row says so in this transaction); ``reason`` in words."""
        hooks = self._wanting(WebhookEvent.JOB_FAILED)
        if not hooks:
            return 0
        job = self._job(job_id)
        if job is None:
            return 0
        harvest = job.harvest_name or f"harvest {job.harvest_id}"
        where = f" on {job.controller}" if job.controller else ""
        end = JobEndRepository(self.conn).for_jobs([job_id]).get(job_id)
        # an operator's fail, or a budget reached, is said in fields of its own, as the job's API answer does
        stopped_by = ({"action": end.cause, "user": end.author, "change": end.change_version,
                       "at": _time(end.ended_at)} if end is not None and end.is_operator_end else None)
        budget = ({"budget": end.cause, "limit": end.budget_limit, "at": _time(end.ended_at)}
                  if end is not None and end.is_budget else None)
        return self._record(WebhookEvent.JOB_FAILED, hooks, f"job_failed:{job_id}:{job.attempt_id}", {
            "time": _time(job.enddate or self.clock()),
            "summary": f"Job {job_id} of {harvest} (run {job.harvest_num}) failed{where}: {reason}",
            "job": {"id": job_id, "status": JobStatus(job.status).name, "controller": job.controller,
                    "harvest_errors": job.harvest_errors, "upload_errors": job.upload_errors,
                    "stopped_by": stopped_by, "budget_reached": budget},
            "harvest": {"id": job.harvest_id, "name": job.harvest_name, "run": job.harvest_num},
            "reason": reason,
            "link": self._link("status", "jobs", str(job_id))})

    def runs_done(self, runs: Iterable[tuple[int, int]]) -> int:
        """Of the harvest runs (harvest id, run number) a job of which ended in this transaction, those none of
        whose jobs is NEW, SUBMITTED or STARTED any more are done."""
        runs = sorted(set(runs))
        hooks = self._wanting(WebhookEvent.HARVEST_RUN_DONE) if runs else []
        if not hooks:
            return 0
        j, hd, summary = s.jobs, s.harvestdefinitions, s.harvest_run_summary
        added = 0
        for harvest_id, harvest_num in runs:
            of_run = (j.c.harvest_id == harvest_id, j.c.harvest_num == harvest_num)
            # the usual answer, while the run's other jobs crawl, from the first unfinished job found
            if self.conn.scalar(select(j.c.job_id).where(*of_run, j.c.status.in_(_UNFINISHED)).limit(1)) is not None:
                continue
            counts = {JobStatus(status): count for status, count in self.conn.execute(
                select(j.c.status, func.count()).where(*of_run).group_by(j.c.status))}
            total = sum(counts.values())
            if not total:
                continue
            name = self.conn.scalar(select(hd.c.name).where(hd.c.harvest_id == harvest_id))
            figures = self.conn.execute(select(summary.c.objects, summary.c.bytes).where(
                summary.c.harvest_id == harvest_id, summary.c.harvest_num == harvest_num)).first()
            statuses = {status.name: count for status, count in sorted(counts.items())}
            in_words = ", ".join(f"{count} {status}" for status, count in statuses.items())
            jobs = "job" if total == 1 else "jobs"
            added += self._record(WebhookEvent.HARVEST_RUN_DONE, hooks,
                                  f"harvest_run_done:{harvest_id}:{harvest_num}:{total}", {
                "time": _time(self.clock()),
                "summary": f"Run {harvest_num} of harvest {name or harvest_id} is done: {total} {jobs} "
                           f"({in_words})",
                "harvest": {"id": harvest_id, "name": name, "run": harvest_num},
                "jobs": {"total": total, "by_status": statuses},
                "objects": figures.objects if figures else 0, "bytes": figures.bytes if figures else 0,
                "link": self._link("history", "harvests", name) if name else self._link("history")})
        return added

    def run_done_of_job(self, job_id: int) -> int:
        """``runs_done`` for the run of job ``job_id``, which ended in this transaction."""
        run = self.conn.execute(select(s.jobs.c.harvest_id, s.jobs.c.harvest_num)
                                .where(s.jobs.c.job_id == job_id)).first()
        return self.runs_done([(run.harvest_id, run.harvest_num)]) if run is not None else 0

    def harvest_deactivated(self, harvest_id: int, reason: str) -> int:
        """Harvest ``harvest_id`` was deactivated now, for ``reason``."""
        hooks = self._wanting(WebhookEvent.HARVEST_DEACTIVATED)
        if not hooks:
            return 0
        hd = s.harvestdefinitions
        name = self.conn.scalar(select(hd.c.name).where(hd.c.harvest_id == harvest_id))
        now = self.clock()
        return self._record(WebhookEvent.HARVEST_DEACTIVATED, hooks,
                            f"harvest_deactivated:{harvest_id}:{_time(now)}", {
            "time": _time(now),
            "summary": f"Harvest definition {name or harvest_id} was deactivated: {reason}",
            "harvest": {"id": harvest_id, "name": name},
            "reason": reason,
            "link": self._link("definitions", "harvests", name) if name else self._link("definitions", "harvests")})

    def controller_lost(self, job_id: int, controller: str, silent_since: datetime | None) -> int:
        """The controller of STARTED job ``job_id`` is lost (silent since ``silent_since``, None: never heard
        from); the job is marked interrupted."""
        hooks = self._wanting(WebhookEvent.CONTROLLER_LOST)
        if not hooks:
            return 0
        job = self._job(job_id)
        if job is None:
            return 0
        host = self.conn.scalar(select(s.harvesters.c.host).where(s.harvesters.c.controller_id == controller))
        silent = f"silent since {_time(silent_since)}" if silent_since else "never heard from"
        harvest = job.harvest_name or f"harvest {job.harvest_id}"
        return self._record(WebhookEvent.CONTROLLER_LOST, hooks,
                            f"controller_lost:{controller}:{job_id}:{job.attempt_id}:{_time(silent_since)}", {
            "time": _time(self.clock()),
            "summary": f"Harvest controller {controller} is lost ({silent}); its job {job_id} of {harvest} (run "
                       f"{job.harvest_num}) is marked interrupted",
            "controller": {"id": controller, "host": host, "silent_since": _time(silent_since)},
            "job": {"id": job_id, "status": JobStatus(job.status).name, "interrupted": True},
            "harvest": {"id": job.harvest_id, "name": job.harvest_name, "run": job.harvest_num},
            "link": self._link("status", "jobs", str(job_id))})


__all__ = ["WebhookEvents"]
