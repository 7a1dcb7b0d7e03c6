"""How a running job's changes are shown: each change as the API answers it and the job page lists it,
with what it does in words (``summary``), and the list of a job's changes, oldest first.

Shared by the routes that make changes (webui/api/changes.py), the live view (webui/api/live.py) and the
job page (webui/status/jobs.py), so the three always show a change alike. Reads only through
JobChangeRepository and JobRepository.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from harvestdef.livechanges import (
    ADD_URIS,
    BUDGET,
    CONTROL_ACTIONS,
    DELETE_QUEUED,
    PENDING,
    POLITENESS,
    REJECT,
    UNREJECT,
)
from harvestdef.repositories.jobchanges import JobChange, JobChangeRepository
from harvestdef.repositories.jobs import JobRepository
from webui.api.core import jsonable
from webui.api.phrases import N_, Phrase, phrasebook

# How many added URIs a change's summary names.
_SUMMARY_URIS = 3


def render_change(change: JobChange) -> dict[str, Any]:
    """One change as the API and the page show it; ``summary`` says in words what it does."""
    return {"version": change.version, "kind": change.kind, "payload": change.payload, "author": change.author,
            "created": jsonable(change.created), "state": change.state,
            "applied": jsonable(change.applied) if change.applied is not None else None,
            "reason": change.reason or None, "summary": change_summary(change.kind, change.payload),
            "summary_phrase": _phrase_json(summary_phrase(change.kind, change.payload))}


def _phrase_json(phrase: Phrase | None) -> dict[str, Any] | None:
    return None if phrase is None else phrase.json()


def job_changes(conn: Connection, job_id: int) -> list[dict[str, Any]]:
    """The job's changes, oldest first; NotFoundError for an unknown job."""
    JobRepository(conn).get(job_id, with_documents=False)
    return [render_change(change) for change in JobChangeRepository(conn).for_job(job_id)]


def changes_page(conn: Connection, job_id: int, limit: int, *, after: int | None = None,
                 before: int | None = None) -> dict[str, Any]:
    """One page of the job's changes, oldest first (JobChangeRepository.page: the first ``limit`` after
    version ``after``, or the newest before ``before``, or the newest of all), with the counts of the whole
    list: ``total``, ``pending``, and where the neighbouring pages are (``next``: the cursor of the page after
    this one, to pass as ?after=, as every paged list of the API has it; ``previous_before``: the version the
    page before ends before, to pass as ?before=; null when there is none). NotFoundError for an unknown
    job."""
    JobRepository(conn).get(job_id, with_documents=False)
    repository = JobChangeRepository(conn)
    changes = repository.page(job_id, limit, after=after, before=before)
    counts = repository.counts(job_id)
    newest = repository.page(job_id, 1)
    first, last = (changes[0].version, changes[-1].version) if changes else (None, None)
    return {"items": [render_change(change) for change in changes], "total": sum(counts.values()),
            "pending": counts[PENDING],
            "next": str(last) if last is not None and newest and newest[0].version > last else None,
            "previous_before": first if first is not None and first > 1 else None}


# The words of a change's summary (webui/api/phrases.py), so the job page says it in its language.
PHRASES = {
    "action_pause": N_("pause"), "action_resume": N_("resume"), "action_checkpoint": N_("checkpoint"),
    "action_stop": N_("stop"), "action_fail": N_("fail"),
    "control_with_reason": N_("%(action)s: %(reason)s"),
    "reject": N_("reject URIs matching %(regex)s"),
    "reject_on": N_("reject URIs matching %(regex)s on %(domain)s"),
    "unreject": N_("stop rejecting URIs matching %(regex)s"),
    "unreject_on": N_("stop rejecting URIs matching %(regex)s on %(domain)s"),
    "delete_queued": N_("delete queued URIs matching %(regex)s"),
    "budget": N_("budget of %(domain)s: %(limits)s"),
    "max_objects": N_("objects %(limit)s"), "max_bytes": N_("bytes %(limit)s"), "unlimited": N_("unlimited"),
    "add_uri": N_("add 1 URI: %(uris)s"),
    "add_uris": N_("add %(count)s URIs: %(uris)s"),
    "add_uris_more": N_("add %(count)s URIs: %(uris)s and %(more)s more"),
    "politeness": N_("politeness: %(settings)s"),
    "delay_factor": N_("delay factor %(value)s"), "min_delay_ms": N_("min delay %(value)s ms"),
    "max_delay_ms": N_("max delay %(value)s ms"), "max_per_host": N_("at most %(value)s at once per host"),
}
_say = phrasebook(PHRASES)


def change_summary(kind: str, payload: dict[str, Any]) -> str:
    """What a change does, in words: "reject URIs matching .*\\.pdf on kb.dk"."""
    phrase = summary_phrase(kind, payload)
    return kind if phrase is None else phrase.english()


def summary_phrase(kind: str, payload: dict[str, Any]) -> Phrase | None:
    """What a change does as a phrase; None for a kind this version does not know (its name is said)."""
    domain = payload.get("domain")
    if kind in CONTROL_ACTIONS:
        action = _say(f"action_{kind}")
        return _say("control_with_reason", action=action, reason=payload["reason"]) if payload.get("reason") \
            else action
    if kind in (REJECT, UNREJECT):
        return _say(f"{kind}_on", regex=str(payload.get("regex")), domain=domain) if domain \
            else _say(kind, regex=str(payload.get("regex")))
    if kind == DELETE_QUEUED:
        return _say("delete_queued", regex=str(payload.get("regex")))
    if kind == BUDGET:
        limits = [_say(name, limit=_say("unlimited") if payload[name] == -1 else f"{payload[name]:,}")
                  for name in ("max_objects", "max_bytes") if name in payload]
        return _say("budget", domain=str(domain), limits=limits)
    if kind == ADD_URIS:
        uris = [str(uri) for uri in payload.get("uris", [])]
        shown = ", ".join(uris[:_SUMMARY_URIS])
        if len(uris) == 1:
            return _say("add_uri", uris=shown)
        if len(uris) > _SUMMARY_URIS:
            return _say("add_uris_more", count=len(uris), uris=shown, more=len(uris) - _SUMMARY_URIS)
        return _say("add_uris", count=len(uris), uris=shown)
    if kind == POLITENESS:
        settings = [_say(name, value=payload[name])
                    for name in ("delay_factor", "min_delay_ms", "max_delay_ms", "max_per_host") if name in payload]
        return _say("politeness", settings=settings)
    return None
