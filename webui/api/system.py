"""API routes: the harvest controllers (registration, latest heartbeat, current job, pause), queue depths
per harvest channel, and the scheduler's liveness. Shared with the System page (webui/system/views.py).

The queue transport is opened per call and closed before returning; a broker that cannot be reached gives
depths of None with the reason, never an error page (the page is where an operator looks when it is down).

These are direct, read-only queries of what the scheduler and the controllers keep (harvesters,
harvest_state, the scheduler's lock and hearing): status to show, not definitions, with no repository.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, func, select

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.model.controllers import HEARING_ALL_ALONG, Hearing, LostControllerRule, last_sign_of_life
from harvestdef.queues import QueueNames, open_transport
from harvestdef.repositories.hearing import read_hearing
from webui.api.core import PAGED, blueprint, decode_cursor, jsonable, limit, page
from webui.api.errors import ApiError
from webui.api.parameters import query, takes
from webui.auth import READ, require
from webui.context import database, settings

QUEUE_TIMEOUT = 5


def find_harvesters(conn: Connection, size: int, after: str | None = None) -> list[Any]:
    h = s.harvesters
    query = select(h)
    if after is not None:
        query = query.where(h.c.controller_id > after)
    return list(conn.execute(query.order_by(h.c.controller_id).limit(size + 1)))


def render_harvester(row: Any, hearing: Hearing = HEARING_ALL_ALONG) -> dict[str, Any]:
    """A controller as the API and the System page show it. ``is_lost`` is the scheduler's own judgement
    (harvestdef.model.controllers): silent past lostAfterHeartbeats of the interval its heartbeats state,
    ``lost_after_seconds``, counted by the leading scheduler's ``hearing`` (never while it is deaf, not from
    before it heard again: ``silence_counted_from``); ``heartbeat_age_seconds`` is how long ago its last
    heartbeat was sent."""
    values = dict(row._mapping)
    rule = LostControllerRule.from_settings(settings())
    heartbeat, interval = values["last_heartbeat"], values["heartbeat_interval"]
    # a registration is a sign of life, as for the scheduler's readiness (scheduler.readiness)
    last_sign = last_sign_of_life(heartbeat, values["registered_at"])
    counted = hearing.counted(last_sign)
    now = utcnow()
    return {
        "controller_id": values["controller_id"], "host": values["host"],
        "channels": [c for c in values["channels"].split(",") if c],
        "accepted": values["accepted"], "refusal_reason": values["refusal_reason"],
        "last_heartbeat": jsonable(heartbeat),
        "heartbeat_age_seconds": round((now - heartbeat).total_seconds()) if heartbeat is not None else None,
        "heartbeat_interval": interval,
        "lost_after_seconds": round(rule.silence_limit(interval).total_seconds()),
        "is_lost": rule.is_lost(last_sign, interval, now, hearing),
        "silence_counted_from": jsonable(counted) if counted != last_sign else None,
        "free_disk_bytes": values["free_disk_bytes"], "load_average": values["load_average"],
        "memory_rss_bytes": values["memory_rss_bytes"], "version": values["version"], "pid": values["pid"],
        "paused": values["paused"], "pause_reason": values["pause_reason"],
        "current_job_id": values["current_job_id"], "current_job_state": values["current_job_state"],
        "registered_at": jsonable(values["registered_at"]),
    }


def queue_depths(conn: Connection) -> dict[str, Any]:
    """Messages waiting in each channel's job queue: ``{"channels": {NAME: int|None}, "error": str|None}``."""
    channels = list(conn.scalars(select(s.harvestchannel.c.name).order_by(s.harvestchannel.c.name)))
    # A page must not hang for the publish timeout (60 s by default) while the broker is down.
    queue_settings = replace(settings().queue, publishTimeout=min(settings().queue.publishTimeout, QUEUE_TIMEOUT))
    names = QueueNames(queue_settings.environmentName)
    depths: dict[str, int | None] = dict.fromkeys(channels)
    try:
        with open_transport(queue_settings) as transport:
            for channel in channels:
                depths[channel] = transport.message_count(names.jobs(channel))
    except Exception as exc:  # noqa: BLE001 - any broker failure is shown as "unknown" with its reason
        return {"channels": dict.fromkeys(channels), "error": f"{type(exc).__name__}: {exc}"}
    return {"channels": depths, "error": None}


def scheduler_hearing(hearing: Hearing) -> dict[str, Any]:
    """Whether the leading scheduler hears heartbeats: ``deaf_since`` (its broker connection down since),
    ``hearing_since`` (back since, after an outage), as it wrote them to scheduler_hearing."""
    return {"deaf_since": jsonable(hearing.deaf_since), "hearing_since": jsonable(hearing.hearing_since)}


def scheduler_liveness(conn: Connection, hearing: Hearing) -> dict[str, Any]:
    """The scheduler's lock rows (holder and lease), its ``hearing`` (read once by the caller, so that the
    page judges its controllers by the same one) and its last recorded harvest state change."""
    lock = s.scheduler_lock
    now = utcnow()
    locks = [{"name": row.name, "holder": row.holder, "acquired_at": jsonable(row.acquired_at),
              "expires_at": jsonable(row.expires_at), "is_current": row.expires_at > now}
             for row in conn.execute(select(lock).order_by(lock.c.name))]
    last_tick = conn.scalar(select(func.max(s.harvest_state.c.changed_at)))
    return {"locks": locks, "hearing": scheduler_hearing(hearing), "last_harvest_state_change": jsonable(last_tick)}


@blueprint.get("/harvesters")
@takes(*PAGED)
@require(READ)
def list_harvesters() -> Any:
    """Harvest controllers: host, channels, last heartbeat, free disk, current job, paused and why."""
    size = limit()
    cursor = decode_cursor(query("after"))
    if cursor is not None and (len(cursor) != 1 or not isinstance(cursor[0], str)):
        raise ApiError("invalid", "after is not a cursor this API gave out", "after")
    with database().connect() as conn:
        rows = find_harvesters(conn, size, cursor[0] if cursor else None)
        hearing = read_hearing(conn)
    return page(rows, size, lambda row: [row.controller_id], functools.partial(render_harvester, hearing=hearing))
