"""API routes: harvest definitions, selective, event and snapshot (``/api/v1/harvests``).

Records are addressed by name and listed by name with keyset paging. Every write runs in one transaction,
so a request that fails half-way (an unknown configuration in the third entry, a seed without a domain)
stores nothing; refused seeds are answered 400 with every refused line listed (webui/api/refusals.py). A
name the request refers to that does not exist (a schedule, a configuration, a template,
a channel, a previous snapshot) is bad input, so it is answered 400 naming the field, not 404.
"""

from __future__ import annotations

from typing import Any

from flask import request

from harvestdef.errors import CrawlerTrapError
from harvestdef.model.definitions import HarvestDefinition, HarvestKind, SnapshotHarvest
from harvestdef.repositories.channels import ChannelRepository
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.schedules import ScheduleRepository
from webui.api import refusals  # noqa: F401 - its handler answers RefusedLinesError with the lines
from webui.api.core import PAGED, blueprint, body, edition, field, input_named, jsonable, limit, name_after, page
from webui.api.errors import ApiError
from webui.api.parameters import QueryParameter, query, takes
from webui.auth import CURATE, READ, require
from webui.context import actor, database, settings


def save_warning(repository: HarvestRepository, harvest: HarvestDefinition) -> str | None:
    """What a curator who has just saved ``harvest`` is warned of: that it will not run (again), and why."""
    outlook = repository.outlook(harvest)
    if not outlook.reason:
        return None
    again = " again" if outlook.last_run else ""
    when_active = "" if harvest.isactive else ", even when activated"
    return f"Harvest {harvest.name} will not run{again}{when_active}: {outlook.reason}."


def harvest_json(repository: HarvestRepository, harvest: HarvestDefinition, state: Any = None,
                 detail: bool = False) -> dict[str, Any]:
    outlook = repository.outlook(harvest)
    record: dict[str, Any] = {
        "name": harvest.name, "type": harvest.kind.value, "active": harvest.isactive,
        "comments": harvest.comments, "audience": harvest.audience, "numevents": harvest.numevents,
        "submitted": jsonable(harvest.submitted), "edition": harvest.edition,
        "state": None if state is None else {"state": state.state, "reason": state.reason,
                                             "changed_at": jsonable(state.changed_at)},
        "outlook": {"state": outlook.outlook.value, "reason": outlook.reason or None,
                    "last_run": outlook.last_run, "last_run_at": jsonable(outlook.last_run_at)},
    }
    if isinstance(harvest, SnapshotHarvest):
        previous = repository.get_by_id(harvest.previoushd).name if harvest.previoushd is not None else None
        record.update(max_bytes=harvest.maxbytes, max_objects=harvest.maxobjects,
                      max_running_time=harvest.maxjobrunningtime, previous=previous,
                      index_ready=harvest.isindexready)
    else:
        record.update(schedule=harvest.schedule_name, nextdate=jsonable(harvest.nextdate),
                      crawlertraps=list(harvest.crawlertraps))
        if detail:
            record["configurations"] = [{"domain": entry.domain_name, "configuration": entry.config_name}
                                        for entry in repository.configurations(harvest.name)]
    if detail:
        record["channel"] = ChannelRepository(repository.conn).channel_of(harvest.harvest_id).name
    return record


def harvest_repository(conn: Any) -> HarvestRepository:
    return HarvestRepository.from_settings(conn, settings(), actor())


def _configuration_pairs(data: dict[str, Any]) -> list[tuple[str, str | None]]:
    entries = field(data, "configurations", list, required=False, default=[])
    pairs = []
    for number, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("domain"), str):
            raise ApiError("invalid", f"configurations[{number}] must be {{\"domain\", \"configuration\"}}",
                           "configurations")
        configuration = entry.get("configuration")
        if configuration is not None and not isinstance(configuration, str):
            raise ApiError("invalid", f"configurations[{number}].configuration must be a string",
                           "configurations")
        pairs.append((entry["domain"], configuration))
    return pairs


def create_harvest_from(conn: Any, data: dict[str, Any]) -> HarvestDefinition:
    """Create the harvest ``data`` describes (its ``type``: selective, event or snapshot) on ``conn``."""
    kind = field(data, "type", str)
    name = field(data, "name", str)
    harvests = harvest_repository(conn)
    active = field(data, "active", bool, required=False, default=False)
    comments = field(data, "comments", str, required=False, default="")
    audience = field(data, "audience", str, required=False)
    channel = field(data, "channel", str, required=False)
    if channel is not None:
        with input_named("channel"):
            target = ChannelRepository(conn).get(channel)
        if target.issnapshot != (kind == "snapshot"):
            raise ApiError("invalid", f"channel {target.name} is for "
                                      f"{'snapshot' if target.issnapshot else 'selective'} harvests", "channel")
    if kind == "snapshot":
        previous = field(data, "previous", str, required=False)
        if previous is not None:
            with input_named("previous"):
                harvests.get_snapshot(previous)
        return harvests.create_snapshot(
            name, maxobjects=field(data, "max_objects", int, required=False, default=-1),
            maxbytes=field(data, "max_bytes", int, required=False, default=-1),
            maxjobrunningtime=field(data, "max_running_time", int, required=False),
            previous=previous, comments=comments, audience=audience, channel=channel, active=active)
    if kind not in ("selective", "event"):
        raise ApiError("invalid", f"type must be selective, event or snapshot, not {kind!r}", "type")
    schedule = field(data, "schedule", str)
    pairs = _configuration_pairs(data) if kind == "selective" else []
    with input_named("schedule"):
        ScheduleRepository(conn).get_by_name(schedule)
    created = harvests.create_selective(name, schedule, comments=comments, audience=audience, channel=channel,
                                        active=active)
    if kind == "selective":
        if pairs:
            with input_named("configurations"):
                return harvests.add_configurations(created.name, pairs, created.edition)
        return created
    add_seeds_from(conn, created.name, data, created.edition)
    return harvests.get(created.name)


def add_seeds_from(conn: Any, name: str, data: dict[str, Any], expected: int) -> list[Any]:
    """The event harvest form's seeds (``seeds``: a list of lines or one text), ``template``, ``max_bytes`` and
    ``max_objects`` added to harvest ``name`` at edition ``expected``: one configuration per domain."""
    seeds = field(data, "seeds", (list, str))
    if isinstance(seeds, list) and not all(isinstance(seed, str) for seed in seeds):
        raise ApiError("invalid", "seeds must be a list of URLs", "seeds")
    with input_named("template"):
        return harvest_repository(conn).add_seeds(
            name, seeds, field(data, "template", str), expected,
            maxbytes=field(data, "max_bytes", int, required=False, default=-1),
            maxobjects=field(data, "max_objects", int, required=False, default=-1))


@blueprint.get("/harvests")
@takes(QueryParameter("type", "string", "only harvest definitions of this kind", enum=("selective", "snapshot")),
       *PAGED)
@require(READ)
def list_harvests() -> Any:
    """Harvest definitions by name (``?type=selective|snapshot``), each with why it waits or was deactivated."""
    size = limit()
    kind_text = query("type")
    try:
        kind = HarvestKind(kind_text) if kind_text else None
    except ValueError:
        raise ApiError("invalid", f"type must be selective or snapshot, not {kind_text!r}", "type") from None
    with database().connect() as conn:
        harvests = HarvestRepository(conn)
        rows = harvests.page(name_after(), size + 1, kind)
        states = harvests.states(row.harvest_id for row in rows)
        return page(rows, size, lambda row: [row.name],
                    lambda row: harvest_json(harvests, row, states.get(row.harvest_id)))


@blueprint.post("/harvests")
@require(CURATE)
def create_harvest() -> Any:
    """Create a selective, event or snapshot harvest (``type``); nothing is stored if any part is wrong.

    ``warnings`` says when the harvest, as saved, will never run (a schedule that has ended)."""
    data = body()
    with database().begin() as conn:
        created = create_harvest_from(conn, data)
        harvests = harvest_repository(conn)
        return _with_warnings(harvests, created, harvest_json(harvests, created, detail=True)), 201


def _with_warnings(harvests: HarvestRepository, harvest: HarvestDefinition, record: dict[str, Any]
                   ) -> dict[str, Any]:
    """The answer to a write: the record and ``warnings``, sentences about what was saved (it will not run)."""
    warning = save_warning(harvests, harvest)
    return {**record, "warnings": [warning] if warning else []}


def _harvest_detail(name: str, warn: bool = False) -> dict[str, Any]:
    with database().connect() as conn:
        harvests = harvest_repository(conn)
        harvest = harvests.get(name)
        state = harvests.states([harvest.harvest_id]).get(harvest.harvest_id)
        record = harvest_json(harvests, harvest, state, detail=True)
        return _with_warnings(harvests, harvest, record) if warn else record


@blueprint.get("/harvests/<name>")
@require(READ)
def get_harvest(name: str) -> Any:
    """One harvest definition: its settings, configurations, channel and why it waits or was deactivated."""
    return _harvest_detail(name)


def update_harvest_from(conn: Any, name: str, data: dict[str, Any]) -> None:
    """Apply the changes ``data`` names (comments, audience, schedule, limits...) at edition ``data["edition"]``."""
    expected = edition(data)
    harvests = harvest_repository(conn)
    harvest = harvests.get(name)
    if harvest.edition != expected:
        harvests.set_comments(name, harvest.comments, expected)  # raises StaleEditionError
    if "comments" in data:
        harvest = harvests.set_comments(name, field(data, "comments", str, required=False, default=""),
                                        harvest.edition)
    if "audience" in data:
        harvest = harvests.set_audience(name, field(data, "audience", str, required=False) or None,
                                        harvest.edition)
    if isinstance(harvest, SnapshotHarvest):
        harvests.update_snapshot(
            name, harvest.edition, maxobjects=field(data, "max_objects", int, required=False),
            maxbytes=field(data, "max_bytes", int, required=False),
            maxjobrunningtime=field(data, "max_running_time", int, required=False))
        return
    schedule = field(data, "schedule", str, required=False)
    with input_named("schedule"), input_named("crawlertraps", CrawlerTrapError):
        harvests.update_selective(name, harvest.edition, schedule=schedule,
                                  crawlertraps=field(data, "crawlertraps", str, required=False))
    if "configurations" in data:
        with input_named("configurations"):
            harvests.add_configurations(name, _configuration_pairs(data), harvests.get(name).edition)


def set_harvest_active(conn: Any, name: str, active: bool, expected: int | None) -> None:
    """(De)activate at edition ``expected`` (None: whatever edition it has now)."""
    harvests = harvest_repository(conn)
    expected = harvests.get(name).edition if expected is None else expected
    (harvests.activate if active else harvests.deactivate)(name, expected)


@blueprint.patch("/harvests/<name>")
@require(CURATE)
def update_harvest(name: str) -> Any:
    """Change comments, audience, schedule (selective) or limits (snapshot); 409 if ``edition`` is stale.

    ``warnings`` says when the harvest, as saved, will not run (again): its schedule has ended or its
    repeats are used up."""
    data = body()
    with database().begin() as conn:
        update_harvest_from(conn, name, data)
    return _harvest_detail(name, warn=True)


@blueprint.post("/harvests/<name>/seeds")
@require(CURATE)
def add_harvest_seeds(name: str) -> Any:
    """Add seeds (the event harvest form): ``{"seeds", "template", "max_bytes", "max_objects", "edition"}``.

    Each seed's domain gets a configuration and a seed list in this harvest; the answer lists them
    (``added``) with the harvest. 400 with every refused line if any is refused, and nothing is stored."""
    data = body()
    expected = edition(data)
    with database().begin() as conn:
        made = add_seeds_from(conn, name, data, expected)
        added = [{"domain": config.domain_name, "configuration": config.name} for config in made]
    return {"added": added, "harvest": _harvest_detail(name)}, 201


@blueprint.delete("/harvests/<name>/configurations/<domain>/<configuration>")
@require(CURATE)
def remove_harvest_configuration(name: str, domain: str, configuration: str) -> Any:
    """Remove a domain configuration from a selective harvest: ``{"edition"}`` (the harvest's; 409 if stale).

    404 if the harvest does not name that configuration; the configuration itself stays with its domain."""
    expected = edition(body())
    with database().begin() as conn:
        harvest_repository(conn).remove_configuration(name, domain, configuration, expected)
    return _harvest_detail(name)


def _set_active(name: str, active: bool) -> Any:
    data = request.get_json(silent=True)
    expected = field(data, "edition", int, required=False) if isinstance(data, dict) else None
    with database().begin() as conn:
        set_harvest_active(conn, name, active, expected)
    return _harvest_detail(name, warn=active)


@blueprint.post("/harvests/<name>/activate")
@require(CURATE)
def activate_harvest(name: str) -> Any:
    """Activate a harvest definition (``{"edition"}`` optional; 409 if given and stale)."""
    return _set_active(name, True)


@blueprint.post("/harvests/<name>/deactivate")
@require(CURATE)
def deactivate_harvest(name: str) -> Any:
    """Deactivate a harvest definition (``{"edition"}`` optional; 409 if given and stale)."""
    return _set_active(name, False)
