"""API routes: steering a running job, with control actions (``POST /jobs/{id}/control``) and live changes
(``POST /jobs/{id}/changes``), and the job's list of them (``GET /jobs/{id}/changes``).

Both kinds of request become the job's next change, pending until its controller applies or refuses it
(harvestdef/repositories/jobchanges.py); the answer is 202 with that change. What a change may say is
harvestdef/livechanges.py's rule (400 naming the field, nothing stored); whether the job takes it now is
decided in the same transaction that stores it, the job's row locked: only a STARTED job takes changes, and
a control action must be one the crawler's state allows (webui/api/jobcontrol.py), else 409 naming the
state. A job takes at most harvestsuite.liveChanges.maxPending pending live changes, else 429 naming the
bound, so a flood of them cannot bury the crawl; control actions are never held back by it (the controller
carries them out before queued live changes). The job page's forms (webui/status/control.py) go through
request_control and request_change too. The crawler's state is read as the live view reads it
(webui/api/live.py: crawler_report).
"""

from __future__ import annotations

from typing import Any

from harvestdef.db.engine import write_transaction
from harvestdef.db.types import utcnow
from harvestdef.livechanges import CHANGE_KINDS, CONTROL_ACTIONS, validate_change
from harvestdef.model.status import JobStatus
from harvestdef.politeness import PolitenessBounds
from harvestdef.repositories.jobchanges import JobChangeRepository
from harvestdef.repositories.jobs import JobRepository
from webui.api.changelist import changes_page, render_change
from webui.api.core import blueprint, body
from webui.api.errors import ApiError
from webui.api.jobcontrol import crawler_state, refusal
from webui.api.live import crawler_report
from webui.api.parameters import QueryParameter, query, takes
from webui.auth import OPERATE, READ, require
from webui.context import actor, database, settings

# "job 7 cannot be paused now": each action's participle
DONE_TO: dict[str, str] = {"pause": "paused", "resume": "resumed", "checkpoint": "checkpointed", "stop": "stopped",
                           "fail": "failed"}


# ---------------------------------------------------------------- making changes, shared with the page
def request_control(job_id: int, action: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """Store a control action of the logged-in user as the job's next change; the change as rendered.

    400 (field ``action``) for an action that is none of CONTROL_ACTIONS, 404 for an unknown job, 409 when
    the job is not STARTED or the crawler's state or a pending change forbids the action now."""
    if not isinstance(action, str) or action not in CONTROL_ACTIONS:
        given = "is required" if action is None else "is not one"
        raise ApiError("invalid", f"action {given}: one of {', '.join(CONTROL_ACTIONS)}", "action")
    return _add(job_id, action, fields)


def request_change(job_id: int, fields: dict[str, Any]) -> dict[str, Any]:
    """Store a live change (``fields`` with its ``kind``) of the logged-in user as the job's next change."""
    kind = fields.get("kind")
    if isinstance(kind, str) and kind in CONTROL_ACTIONS:
        raise ApiError("invalid", f"kind: {kind} is a control action: POST {{\"action\": \"{kind}\"}} to "
                                  f"/api/v1/jobs/{job_id}/control", "kind")
    if not isinstance(kind, str) or kind not in CHANGE_KINDS:
        given = "is required" if kind is None else "is not one"
        raise ApiError("invalid", f"kind {given}: one of {', '.join(CHANGE_KINDS)}", "kind")
    return _add(job_id, kind, {name: value for name, value in fields.items() if name != "kind"})


def _add(job_id: int, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    with write_transaction(database()) as conn:
        jobs = JobRepository(conn, actor())
        # locked, so the job cannot end between the check and the insert: a change stored after the
        # scheduler refused the pending ones at the job's end would stay pending for ever
        job = jobs.get(job_id, with_documents=False, for_update=True)
        domains = {configuration["domain"] for configuration in jobs.configurations(job_id)}
        payload = validate_change(kind, fields, domains, valid_seed_regex=settings().domain.validSeedRegex,
                                  politeness_bounds=PolitenessBounds.from_settings(settings().livechanges),
                                  destinations=settings().network.policy())
        if job.status != JobStatus.STARTED:
            raise ApiError("conflict", f"job {job_id} is {job.status.name}, not STARTED: changes go to a running "
                                       f"job only")
        changes = JobChangeRepository(conn)
        if kind not in CONTROL_ACTIONS:
            _refuse_a_flood(changes, job_id)
        if kind in CONTROL_ACTIONS:
            made = changes.controls_for_job(job_id)
            status, reported_at = crawler_report(conn, job_id)
            state = crawler_state(status, reported_at, made)
            why = refusal(kind, job.status.name, state, made)
            if why is not None:
                raise ApiError("conflict", f"job {job_id} cannot be {DONE_TO[kind]} now: {why}", "action")
        return render_change(changes.add(job_id, kind, payload, actor(), utcnow()))


def _refuse_a_flood(changes: JobChangeRepository, job_id: int) -> None:
    """429 when the job holds as many pending live changes as harvestsuite.liveChanges.maxPending allows."""
    limit = settings().livechanges.maxPending
    pending = changes.pending_live_changes(job_id)
    if pending >= limit:
        raise ApiError("too_many", f"job {job_id} has {pending} live changes pending, the most "
                                   f"harvestsuite.liveChanges.maxPending allows ({limit}): send more once its "
                                   f"controller has applied some; control actions (pause, stop, ...) still go "
                                   f"through", "kind")


# ---------------------------------------------------------------- routes
@blueprint.post("/jobs/<int:job_id>/control")
@require(OPERATE)
def control_job(job_id: int) -> Any:
    """Pause, resume, checkpoint, stop or fail a running job: 202 with the change, pending until applied.

    A control action is a change like the others, in the same versioned list. 409 names the job's state
    when it is not STARTED, when the crawler's state does not allow the action (pause a running crawler;
    resume a paused or pausing one; checkpoint a running or paused one; stop and fail any), or when the
    same action is pending already (naming that change's version)."""
    data = body()
    action = data.pop("action", None)
    return request_control(job_id, action, data), 202


@blueprint.post("/jobs/<int:job_id>/changes")
@require(OPERATE)
def add_job_change(job_id: int) -> Any:
    """Make a live change to a running job (reject, unreject, budget, delete_queued, add_uris, politeness).

    202 with the change, pending until the job's controller applies it; 400 naming the field (nothing is
    stored); 409 when the job is not STARTED; 429 when it has harvestsuite.liveChanges.maxPending live
    changes pending already (naming the bound)."""
    return request_change(job_id, body()), 202


CHANGES_PARAMETERS = (
    QueryParameter("after", "integer", "the page of the changes after this version (a page's next); "
                                       "without after or before, the first page"),
    QueryParameter("before", "integer", "the page of the newest changes before this version (a page's "
                                        "previous_before); before=0 is the newest page of all"),
    QueryParameter("limit", "integer", "changes per page, 1 to harvestsuite.liveChanges.pageSize (the default)"),
)


def _version_parameter(name: str) -> int | None:
    text = query(name)
    if text is None or not text.strip():
        return None
    value = int(text)  # query() has checked it is a whole number
    if value < 0:
        raise ApiError("invalid", f"{name} must be a version, 0 or more, not {value}", name)
    return value


@blueprint.get("/jobs/<int:job_id>/changes")
@takes(*CHANGES_PARAMETERS)
@require(READ)
def list_job_changes(job_id: int) -> Any:
    """The job's control actions and live changes, oldest first, each with its state, a page at a time.

    ``items`` is one page (at most ``limit``); ``total`` and ``pending`` count the whole list; ``next`` (for
    ?after=) and ``previous_before`` (for ?before=) say where the neighbouring pages are (null at either
    end)."""
    page_size = settings().livechanges.pageSize
    text = query("limit")
    limit = int(text) if text is not None and text.strip() else page_size
    if not 1 <= limit <= page_size:
        raise ApiError("invalid", f"limit must be between 1 and {page_size} (harvestsuite.liveChanges.pageSize), "
                                  f"not {limit}", "limit")
    after, before = _version_parameter("after"), _version_parameter("before")
    if after is not None and before is not None:
        raise ApiError("invalid", "give after or before, not both", "before")
    with database().connect() as conn:
        if after is None and before is None:
            after = 0
        return changes_page(conn, job_id, limit, after=after, before=before or None)
