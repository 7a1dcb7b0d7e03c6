"""Pages of the system section: harvest controllers, queue depths per channel, scheduler liveness and the
scheduler's own figures from its /metrics endpoints (webui/schedulerfigures.py); and the
figures of the overview (home) page: running jobs, failed jobs needing attention, waiting harvests,
harvesters. The data come from the API module webui/api/system.py, so page and API agree.

The overview's counts are direct, read-only aggregate queries.
"""

from __future__ import annotations

from typing import Any

from flask import render_template
from sqlalchemy import func, or_, select

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus
from harvestdef.repositories.hearing import read_hearing
from harvestdef.repositories.webhooks import WebhookRepository
from webui.api.status import NEVER_RUNS, STATES_THAT_RUN
from webui.api.system import find_harvesters, queue_depths, render_harvester, scheduler_hearing, scheduler_liveness
from webui.auth import READ, require
from webui.context import database, settings
from webui.schedulerfigures import read_all
from webui.system import blueprint

MAX_HARVESTERS = 1000
OVERVIEW_ROWS = 10


# "/system/" like the other sections; the bare "/system" of links made before answers too, not a redirect
@blueprint.get("/system/", strict_slashes=False)
@require(READ)
def index() -> Any:
    """Harvest controllers, queue depths per channel, the scheduler's liveness and figures, and the webhook
    deliveries."""
    metrics = settings().metrics
    # before the connection is taken: a slow target holds no database connection
    figures = read_all(metrics.schedulerTargets, metrics.scrapeTimeoutMs / 1000)
    with database().connect() as conn:
        hearing = read_hearing(conn)
        scheduler = scheduler_liveness(conn, hearing)
        harvesters = [render_harvester(row, hearing) for row in find_harvesters(conn, MAX_HARVESTERS)]
        queues = queue_depths(conn)
        webhooks = WebhookRepository(conn)
        notifications = {"webhooks": len(webhooks.list()), "deliveries": webhooks.delivery_counts()}
    return render_template("system/index.html", harvesters=harvesters, hearing=scheduler["hearing"], queues=queues,
                           scheduler=scheduler,
                           notifications=notifications, scheduler_figures=figures)


def overview() -> dict[str, Any]:
    """What the home page shows: what runs, what failed and needs an operator, what waits, who harvests."""
    j, hd, st = s.jobs, s.harvestdefinitions, s.harvest_state
    with database().connect() as conn:
        hearing = read_hearing(conn)

        def jobs_in(status: JobStatus) -> list[Any]:
            return list(conn.execute(
                select(j.c.job_id, hd.c.name.label("harvest"), j.c.controller, j.c.startdate, j.c.enddate,
                       j.c.harvest_errors, j.c.interrupted)
                .select_from(j.join(hd, hd.c.harvest_id == j.c.harvest_id))
                .where(j.c.status == int(status)).order_by(j.c.job_id.desc()).limit(OVERVIEW_ROWS)))
        counts = {JobStatus(status).name: count for status, count in conn.execute(
            select(j.c.status, func.count()).where(j.c.status.in_(
                [int(JobStatus.NEW), int(JobStatus.SUBMITTED), int(JobStatus.STARTED), int(JobStatus.FAILED)]))
            .group_by(j.c.status))}
        return {
            "counts": counts,
            "running": jobs_in(JobStatus.STARTED),
            "failed": jobs_in(JobStatus.FAILED),
            "waiting": list(conn.execute(
                select(hd.c.name, st.c.state, st.c.reason, st.c.reason_phrase, st.c.changed_at)
                .select_from(st.join(hd, hd.c.harvest_id == st.c.harvest_id))
                # only what will run (webui.api.status.will_run): a finished or deactivated harvest waits
                # for nothing, and "generated" has its jobs already
                .where(hd.c.isactive.is_(True), st.c.state.in_(STATES_THAT_RUN - {"generated"}),
                       or_(st.c.reason.is_(None), ~st.c.reason.startswith(NEVER_RUNS)))
                .order_by(st.c.changed_at.desc()).limit(OVERVIEW_ROWS))),
            "harvesters": [render_harvester(row, hearing) for row in find_harvesters(conn, MAX_HARVESTERS)],
            "hearing": scheduler_hearing(hearing),
        }


@blueprint.context_processor
def _overview_for_templates() -> dict[str, Any]:
    # A function, not its result: only the page that calls it (home.html) queries the database.
    return {"overview": overview, "lost_after_heartbeats": settings().scheduler.lostAfterHeartbeats}
