"""How a running job's changes are shown: each change as the API answers it and the job page lists it,
with what it does in words (``summary``), and the list of a job's changes, oldest first.

Shared by the routes that make changes (webui/api/changes.py), the live view (webui/api/live.py) and the
job page (webui/status/jobs.py), so the three always show a change alike. Reads only through
JobChangeRepository and JobRepository.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from harvestdef.repositories.jobchanges import (
    ADD_URIS,
    BUDGET,
    CONTROL_ACTIONS,
    DELETE_QUEUED,
    POLITENESS,
    REJECT,
    UNREJECT,
    JobChange,
    JobChangeRepository,
)
from harvestdef.repositories.jobs import JobRepository
from webui.api.core import jsonable

# How many added URIs a change's summary names.
_SUMMARY_URIS = 3


def render_change(change: JobChange) -> dict[str, Any]:
    """One change as the API and the page show it; ``summary`` says in words what it does."""
    return {"version": change.version, "kind": change.kind, "payload": change.payload, "author": change.author,
            "created": jsonable(change.created), "state": change.state,
            "applied": jsonable(change.applied) if change.applied is not None else None,
            "reason": change.reason or None, "summary": change_summary(change.kind, change.payload)}


def job_changes(conn: Connection, job_id: int) -> list[dict[str, Any]]:
    """The job's changes, oldest first; NotFoundError for an unknown job."""
    JobRepository(conn).get(job_id, with_documents=False)
    return [render_change(change) for change in JobChangeRepository(conn).for_job(job_id)]


def change_summary(kind: str, payload: dict[str, Any]) -> str:
    """What a change does, in words: "reject URIs matching .*\\.pdf on kb.dk"."""
    on = f" on {payload['domain']}" if payload.get("domain") else ""
    if kind in CONTROL_ACTIONS:
        return kind + (f": {payload['reason']}" if payload.get("reason") else "")
    if kind == REJECT:
        return f"reject URIs matching {payload.get('regex')}{on}"
    if kind == UNREJECT:
        return f"stop rejecting URIs matching {payload.get('regex')}{on}"
    if kind == DELETE_QUEUED:
        return f"delete queued URIs matching {payload.get('regex')}"
    if kind == BUDGET:
        limits = [f"{name.removeprefix('max_')} {'unlimited' if payload[name] == -1 else f'{payload[name]:,}'}"
                  for name in ("max_objects", "max_bytes") if name in payload]
        return f"budget of {payload.get('domain')}: {', '.join(limits)}"
    if kind == ADD_URIS:
        uris = list(payload.get("uris", []))
        more = f" and {len(uris) - _SUMMARY_URIS} more" if len(uris) > _SUMMARY_URIS else ""
        return f"add {len(uris)} URI{'' if len(uris) == 1 else 's'}: {', '.join(uris[:_SUMMARY_URIS])}{more}"
    if kind == POLITENESS:
        words = {"delay_factor": "delay factor {}", "min_delay_ms": "min delay {} ms",
                 "max_delay_ms": "max delay {} ms", "max_per_host": "at most {} at once per host"}
        return "politeness: " + ", ".join(words[name].format(payload[name]) for name in words if name in payload)
    return kind
