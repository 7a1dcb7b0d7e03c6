"""API routes: harvest definitions, selective, event and snapshot (``/api/v1/harvests``).

Records are addressed by name and listed by name with keyset paging. Every write runs in one transaction,
so a request that fails half-way (an unknown configuration in the third entry, a seed without a domain)
stores nothing; refused seeds, and ``configurations`` entries that name no configuration or are not
``{"domain", "configuration"}``, are answered 400 with every refused line (entry) listed
(webui/api/refusals.py). A name the request refers to that does not exist (a schedule, a configuration, a
template, a channel, a previous snapshot) is bad input, so it is answered 400 naming the field, not 404.
"""

from __future__ import annotations

import json
from typing import Any

from flask import request, url_for

from harvestdef.crawlattributes import as_json, check_values
from harvestdef.errors import CrawlerTrapError, LineRefusal, RefusedLinesError
from harvestdef.harvestreasons import from_stored
from harvestdef.model.definitions import HarvestDefinition, HarvestKind, RunOutlook, SnapshotHarvest
from harvestdef.phrases import N_, phrase
from harvestdef.repositories.channels import ChannelRepository
from harvestdef.repositories.configurations import ConfigurationRepository
from harvestdef.repositories.crawlattributes import CrawlAttributeRepository
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.jobs import HarvestRunJobs, JobRepository
from harvestdef.repositories.runrequests import PreviewRequest, RunRequest, RunRequestRepository
from harvestdef.repositories.schedules import ScheduleRepository
from webui.api import refusals  # noqa: F401 - its handler answers RefusedLinesError with the lines
from webui.api.core import PAGED, blueprint, body, edition, field, input_named, jsonable, limit, name_after, page
from webui.api.errors import ApiError
from webui.api.parameters import QueryParameter, query, takes
from webui.api.shapes import BOOLEAN, STRING, TIME, answers, described, nullable, shape
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
                                             "reason_phrase": from_stored(state.reason_phrase),
                                             "changed_at": jsonable(state.changed_at)},
        "outlook": {"state": outlook.outlook.value, "reason": outlook.reason or None,
                    "reason_phrase": None if outlook.reason_phrase is None else outlook.reason_phrase.json(),
                    "last_run": outlook.last_run, "last_run_at": jsonable(outlook.last_run_at)},
    }
    if isinstance(harvest, SnapshotHarvest):
        previous = repository.get_by_id(harvest.previoushd).name if harvest.previoushd is not None else None
        record.update(max_bytes=harvest.maxbytes, max_objects=harvest.maxobjects,
                      max_running_time=harvest.maxjobrunningtime, previous=previous,
                      index_ready=harvest.isindexready)
        if detail:
            # null: each configuration's own value (harvestdef.crawlattributes)
            record["crawl_attributes"] = as_json(
                CrawlAttributeRepository(repository.conn).of_snapshot(harvest.harvest_id).own)
    else:
        record.update(schedule=harvest.schedule_name, nextdate=jsonable(harvest.nextdate),
                      crawlertraps=list(harvest.crawlertraps), event=harvest.isevent)
        if detail:
            record["configurations"] = [{"domain": entry.domain_name, "configuration": entry.config_name}
                                        for entry in repository.configurations(harvest.name)]
    if detail:
        conn = repository.conn
        record["channel"] = ChannelRepository(conn).channel_of(harvest.harvest_id).name
        request = RunRequestRepository(conn).find(harvest.harvest_id)
        record["run_request"] = None if request is None else run_request_json(request)
        record["runs"] = [run_json(harvest.name, harvest.harvest_id, run)
                          for run in JobRepository(conn).runs_of(harvest.harvest_id)]
    return record


def seeds_outlook(conn: Any, name: str) -> dict[str, Any]:
    """Whether anything will harvest what was just added to harvest ``name``: ``will_run`` (its schedule's
    next run, or a run asked for), ``next_run`` (the scheduled run's time, null without one) and, when nothing
    will, ``reason`` (why not) and ``warning`` (the sentence that says so); for a page to say it in its
    language, ``inactive``, ``end_reason`` (the outlook's reason) and ``end_reason_phrase`` (the same as a
    phrase's JSON, harvestdef/harvestreasons.py)."""
    harvests = harvest_repository(conn)
    harvest = harvests.get(name)
    outlook = harvests.outlook(harvest)
    scheduled = outlook.outlook is RunOutlook.ACTIVE and getattr(harvest, "nextdate", None) is not None
    asked = RunRequestRepository(conn).find(harvest.harvest_id) is not None
    reason = None
    if not scheduled:
        reason = outlook.reason or "it is inactive"
        if not harvest.isactive and outlook.reason:
            reason = f"it is inactive, and {outlook.reason}"
    warning = None if scheduled or asked else (
        f"nothing will harvest them until Run now or a new schedule: harvest {harvest.name} will not run "
        f"{'again' if outlook.last_run else 'at all'}, since {reason}")
    return {"will_run": scheduled or asked, "next_run": jsonable(harvest.nextdate) if scheduled else None,
            "run_requested": asked, "reason": reason, "warning": warning,
            "inactive": not harvest.isactive, "end_reason": outlook.reason or None,
            "end_reason_phrase": None if outlook.reason_phrase is None else outlook.reason_phrase.json()}


def run_request_json(request: RunRequest) -> dict[str, Any]:
    return {"requested_at": jsonable(request.requested_at), "requested_by": request.requested_by}


def run_json(name: str, harvest_id: int, run: HarvestRunJobs) -> dict[str, Any]:
    """One run of a harvest: when it was made, its jobs by status, and where its jobs and statistics are (by
    the harvest's id: the job list's ``harvest`` matches part of a name, which other harvests may share)."""
    return {"run": run.harvest_num, "created": jsonable(run.created), "jobs": run.jobs,
            "jobs_by_status": {status.name: count for status, count in sorted(run.by_status.items())},
            "jobs_url": url_for("api.list_jobs", harvest_id=harvest_id, run=run.harvest_num),
            "statistics_url": url_for("api.get_harvest_statistics", name=name)}


def crawl_attributes_from(data: dict[str, Any], allow_none: bool = False) -> dict[str, int | None] | None:
    """The request's ``crawl_attributes`` as stored values by EAV type name, or None if it has none."""
    if data.get("crawl_attributes") is None:
        return None
    return check_values(data["crawl_attributes"], allow_none=allow_none)


def harvest_repository(conn: Any) -> HarvestRepository:
    return HarvestRepository.from_settings(conn, settings(), actor())


def _configuration_pairs(data: dict[str, Any]) -> list[tuple[str, str | None]]:
    """The request's ``configurations`` as (domain, configuration) pairs; RefusedLinesError names every entry
    that is not ``{"domain", "configuration"}`` (its ``line``: the entry's 1-based place in the list)."""
    entries = field(data, "configurations", list, required=False, default=[])
    pairs = []
    refused = []
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("domain"), str):
            refused.append(LineRefusal.of(number, json.dumps(entry, default=str),
                                           'not {"domain", "configuration"} with domain a string'))
            continue
        configuration = entry.get("configuration")
        if configuration is not None and not isinstance(configuration, str):
            refused.append(LineRefusal.of(number, json.dumps(entry, default=str),
                                           "its configuration is not a string"))
            continue
        pairs.append((entry["domain"], configuration))
    if refused:
        raise RefusedLinesError(phrase(N_("configurations")), refused, "configurations")
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
            said = phrase(N_("%(channel)s is for snapshot harvests") if target.issnapshot else
                          N_("%(channel)s is for selective harvests"), channel=target.name)
            raise ApiError("invalid", f"channel {said}", "channel", phrase=said)
    if kind == "snapshot":
        previous = field(data, "previous", str, required=False)
        if previous is not None:
            with input_named("previous"):
                harvests.get_snapshot(previous)
        attributes = crawl_attributes_from(data, allow_none=True)
        snapshot = harvests.create_snapshot(
            name, maxobjects=field(data, "max_objects", int, required=False, default=-1),
            maxbytes=field(data, "max_bytes", int, required=False, default=-1),
            maxjobrunningtime=field(data, "max_running_time", int, required=False),
            previous=previous, comments=comments, audience=audience, channel=channel, active=active)
        if attributes:
            CrawlAttributeRepository(conn, actor()).set_snapshot(snapshot.harvest_id, attributes)
        return snapshot
    if kind not in ("selective", "event"):
        raise ApiError("invalid", f"type must be selective, event or snapshot, not {kind!r}", "type")
    schedule = field(data, "schedule", str)
    if kind == "selective" and data.get("crawl_attributes") is not None:
        raise ApiError("invalid", "a selective harvest has no crawl attributes of its own: they are its "
                                  "configurations'", "crawl_attributes")
    pairs = _configuration_pairs(data) if kind == "selective" else []
    with input_named("schedule"):
        ScheduleRepository(conn).get_by_name(schedule)
    created = harvests.create_selective(name, schedule, comments=comments, audience=audience, channel=channel,
                                        active=active, event=kind == "event")
    if kind == "selective":
        if pairs:
            with input_named("configurations"):
                return harvests.add_configurations(created.name, pairs, created.edition)
        return created
    add_seeds_from(conn, created.name, data, created.edition)
    return harvests.get(created.name)


def add_seeds_from(conn: Any, name: str, data: dict[str, Any], expected: int) -> list[Any]:
    """The event harvest form's seeds (``seeds``: a list of lines or one text), ``template``, ``max_bytes``,
    ``max_objects`` and ``crawl_attributes`` added to harvest ``name`` at edition ``expected``: one
    configuration per domain, each with those crawl attributes (a type not given: its default)."""
    seeds = field(data, "seeds", (list, str))
    if isinstance(seeds, list) and not all(isinstance(seed, str) for seed in seeds):
        raise ApiError("invalid", "seeds must be a list of URLs", "seeds")
    attributes = crawl_attributes_from(data)
    with input_named("template"):
        return harvest_repository(conn).add_seeds(
            name, seeds, field(data, "template", str), expected,
            maxbytes=field(data, "max_bytes", int, required=False, default=-1),
            maxobjects=field(data, "max_objects", int, required=False, default=-1),
            attributes={key: value for key, value in (attributes or {}).items() if value is not None})


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


def update_harvest_from(conn: Any, name: str, data: dict[str, Any]) -> str:
    """Apply the changes ``data`` names (name, comments, audience, channel, schedule, limits, crawl attributes)
    at edition ``data["edition"]``; returns the harvest's name, which ``name`` may have changed."""
    expected = edition(data)
    harvests = harvest_repository(conn)
    harvest = harvests.get(name)
    if harvest.edition != expected:
        harvests.set_comments(name, harvest.comments, expected)  # raises StaleEditionError
    new_name = field(data, "name", str, required=False)
    attributes = crawl_attributes_from(data, allow_none=True)
    if attributes is not None and not isinstance(harvest, SnapshotHarvest):
        raise ApiError("invalid", "a selective or event harvest has no crawl attributes of its own: they are its "
                                  "configurations' (or given with the seeds added)", "crawl_attributes")
    if "channel" in data:
        channel = field(data, "channel", str, required=False) or None
        channels = ChannelRepository(conn, actor())
        if channel is not None:
            with input_named("channel"):
                target = channels.get(channel)
            if target.issnapshot != isinstance(harvest, SnapshotHarvest):
                said = phrase(N_("%(channel)s is for snapshot harvests, and %(harvest)s is not a snapshot harvest")
                              if target.issnapshot else
                              N_("%(channel)s is for selective harvests, and %(harvest)s is a snapshot harvest"),
                              channel=target.name, harvest=harvest.name)
                raise ApiError("invalid", f"channel {said}", "channel", phrase=said)
        channels.map_harvest(harvest.harvest_id, channel, harvests.get(name).edition)
        harvest = harvests.get(name)
    if attributes is not None:
        CrawlAttributeRepository(conn, actor()).set_snapshot(harvest.harvest_id, attributes)
    _update_details(harvests, harvest, name, data)
    if new_name is not None and new_name.strip() != name:
        harvests.rename(name, new_name, harvests.get(name).edition)
        return new_name.strip()
    return name


def _update_details(harvests: HarvestRepository, harvest: HarvestDefinition, name: str, data: dict[str, Any]
                    ) -> None:
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
    """Change name, comments, audience, channel, schedule (selective), limits and crawl attributes (snapshot);
    409 if ``edition`` is stale. A snapshot's ``crawl_attributes`` value null means each configuration's own.

    ``warnings`` says when the harvest, as saved, will not run (again): its schedule has ended or its
    repeats are used up."""
    data = body()
    with database().begin() as conn:
        name = update_harvest_from(conn, name, data)
    return _harvest_detail(name, warn=True)


SEEDS_ADDED = shape({
    "added": {"type": "array", "items": shape({"domain": STRING, "configuration": STRING}),
              "description": "the configuration each seed's domain got in this harvest"},
    "will_run": described(BOOLEAN, "whether a run will harvest them: the schedule's next run, or a run asked for"),
    "next_run": nullable(TIME, "the scheduled run that will harvest them; null when no scheduled run is to come "
                               "(the harvest has run its course or is inactive)"),
    "run_requested": described(BOOLEAN, "a run asked for (Run now) waits for the scheduler's next tick"),
    "reason": nullable(STRING, "why no scheduled run is to come; null when one is"),
    "warnings": {"type": "array", "items": STRING,
                 "description": "sentences for people: that nothing will harvest the seeds, until Run now or a new "
                                "schedule"},
    "harvest": {"type": "object", "description": "the harvest definition, as GET /harvests/{name} answers it"}})


@blueprint.post("/harvests/<name>/seeds")
@answers(SEEDS_ADDED)
@require(CURATE)
def add_harvest_seeds(name: str) -> Any:
    """Add seeds (the event harvest form): ``{"seeds", "template", "max_bytes", "max_objects", "edition"}``.

    Each seed's domain gets a configuration and a seed list in this harvest; the answer lists them
    (``added``) with the harvest, and says whether anything will harvest them: ``will_run`` and
    ``next_run`` (null when no scheduled run is to come: a harvest that has run its course or is inactive,
    whose seeds wait for Run now or a new schedule, which ``warnings`` then says). 400 with every refused
    line if any is refused, and nothing is stored."""
    data = body()
    expected = edition(data)
    with database().begin() as conn:
        made = add_seeds_from(conn, name, data, expected)
        added = [{"domain": config.domain_name, "configuration": config.name} for config in made]
        outlook = seeds_outlook(conn, name)
    warnings = [f"Seeds added to harvest {name}: {outlook['warning']}."] if outlook["warning"] else []
    return {"added": added, "will_run": outlook["will_run"], "next_run": outlook["next_run"],
            "run_requested": outlook["run_requested"], "reason": outlook["reason"], "warnings": warnings,
            "harvest": _harvest_detail(name)}, 201


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


@blueprint.patch("/harvests/<name>/configurations/<domain>/<configuration>")
@require(CURATE)
def change_harvest_configuration(name: str, domain: str, configuration: str) -> Any:
    """Harvest another configuration of the same domain instead: ``{"configuration", "edition"}`` (the
    harvest's edition; 409 if stale). 404 if the harvest does not name ``domain/configuration``; 400 naming
    ``configuration`` if the domain has no such configuration."""
    data = body()
    expected = edition(data)
    with database().begin() as conn:
        change_configuration(conn, name, domain, configuration, field(data, "configuration", str), expected)
    return _harvest_detail(name)


def change_configuration(conn: Any, name: str, domain: str, configuration: str, replacement: str,
                         expected: int) -> None:
    """Swap ``domain/configuration`` for ``domain/replacement`` in harvest ``name``, in the caller's transaction."""
    harvests = harvest_repository(conn)
    with input_named("configuration"):
        ConfigurationRepository(conn).get(domain, replacement)
    harvest = harvests.remove_configuration(name, domain, configuration, expected)
    harvests.add_configurations(name, [(domain, replacement)], harvest.edition)


@blueprint.post("/harvests/<name>/run")
@require(CURATE)
def request_harvest_run(name: str) -> Any:
    """Run the harvest at the scheduler's next tick, outside its schedule ("run now"; audited): a selective
    harvest keeps its next scheduled run; an inactive harvest runs once and stays inactive; a snapshot runs
    its one run. 409 if a run is asked for already; 400 if the harvest cannot run (a snapshot that has run,
    a selective harvest without configurations)."""
    with database().begin() as conn:
        request = RunRequestRepository(conn, actor()).request_run(name)
    return {"run_request": run_request_json(request), "harvest": _harvest_detail(name)}, 202


@blueprint.delete("/harvests/<name>/run")
@require(CURATE)
def withdraw_harvest_run(name: str) -> Any:
    """Withdraw a run asked for that the scheduler has not taken yet (audited); 404 if there is none."""
    with database().begin() as conn:
        RunRequestRepository(conn, actor()).withdraw(name)
    return _harvest_detail(name)


def preview_json(request: PreviewRequest | None) -> dict[str, Any]:
    """A preview's state (none, waiting, made, failed) with what was asked and, once made, the jobs."""
    if request is None:
        return {"state": "none", "requested_at": None, "requested_by": None, "computed_at": None,
                "preview": None, "error": None}
    state = "waiting" if request.is_waiting else ("failed" if request.error else "made")
    return {"state": state, "requested_at": jsonable(request.requested_at), "requested_by": request.requested_by,
            "computed_at": jsonable(request.computed_at), "preview": request.preview, "error": request.error}


@blueprint.get("/harvests/<name>/preview")
@require(READ)
def get_harvest_preview(name: str) -> Any:
    """The job-generation preview of the harvest's next run last asked for: ``state`` none, waiting (the
    scheduler makes it at its next tick), made (``preview``: jobs, configurations per job, expected objects
    and bytes) or failed (``error``)."""
    with database().connect() as conn:
        harvest = harvest_repository(conn).get(name)
        return preview_json(RunRequestRepository(conn).preview_of(harvest.harvest_id))


@blueprint.post("/harvests/<name>/preview")
@require(CURATE)
def request_harvest_preview(name: str) -> Any:
    """Ask for a job-generation preview of the harvest's next run (it writes nothing); the scheduler makes it
    at its next tick, and GET answers it. A new request replaces the last one."""
    with database().begin() as conn:
        request = RunRequestRepository(conn, actor()).request_preview(name)
    return preview_json(request), 202
