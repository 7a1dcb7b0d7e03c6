"""Pages of the definitions section: harvest definitions, selective, event and snapshot:
the list, the forms that create each kind, and a harvest's page, the curator's hub: its runs (each with
its jobs and statistics), its configurations (added, changed to another of the domain's, removed one by
one) or seeds, its name, comments, channel, schedule, limits and crawl attributes, (de)activation, "run
now" and the job-generation preview of its next run (both carried out by the scheduler's next tick,
harvestdef.repositories.runrequests).

The pages turn form fields into the API's request bodies and reuse its functions (webui/api/harvests.py),
so a form and a JSON call are checked by the same code. A form with bad input is shown again with the
error (400) and nothing is stored: each post is one transaction. Refused seeds, and domains or
configurations that name nothing, keep the form as it was typed and list every refused line with the text
area's line number (webui/definitions/refused.py). Seeds added to a harvest that no run will take (it has
run its course, or is inactive) are said to wait for Run now or a new schedule, beside the Run now button.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import ngettext

from harvestdef.crawlattributes import ATTRIBUTES, SNAPSHOT_TREE, as_json, form_values
from harvestdef.errors import LineRefusal, RefusedLinesError
from harvestdef.model.definitions import ExtendedFieldType, HarvestKind, SnapshotHarvest
from harvestdef.phrases import N_, phrase
from harvestdef.repositories.channels import ChannelRepository
from harvestdef.repositories.crawlattributes import AUDIT_TABLE as ATTRIBUTES_AUDIT_TABLE
from harvestdef.repositories.crawlattributes import CrawlAttributeRepository, audit_key
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.jobs import JobRepository
from harvestdef.repositories.runrequests import RunRequestRepository
from harvestdef.repositories.schedules import ScheduleRepository
from harvestdef.repositories.templates import TemplateRepository
from webui.api import harvests as api
from webui.api.errors import ApiError
from webui.api.extendedfields import harvest_fields, set_harvest_fields
from webui.auth import CURATE, READ, require
from webui.context import actor, database, settings
from webui.definitions import blueprint
from webui.definitions.changes import definition_changes
from webui.definitions.forms import attempt, form_data, form_edition
from webui.definitions.refused import show_refusals
from webui.formatting import words
from webui.harvest_reasons import reason


def _harvests_page() -> str:
    with database().connect() as conn:
        repository = api.harvest_repository(conn)
        rows = list(repository.all_harvests())
        states = repository.states(row.harvest_id for row in rows)
        outlooks = {row.harvest_id: repository.outlook(row) for row in rows}
    return render_template("definitions/harvests.html", selective=[h for h in rows if h.kind is HarvestKind.SELECTIVE],
                           snapshot=[h for h in rows if h.kind is HarvestKind.SNAPSHOT], states=states,
                           outlooks=outlooks)


@blueprint.get("/harvests")
@require(READ)
def harvests() -> Any:
    return _harvests_page()


def _choices(conn: Any) -> dict[str, Any]:
    schedule_names = [schedule.name for schedule in ScheduleRepository(conn).list()]
    return {"schedule_names": schedule_names,
            "schedule_choices": [(name, words(name)) for name in schedule_names],
            "template_names": TemplateRepository(conn).names(active_only=True),
            "channels": ChannelRepository(conn).all_channels(),
            "snapshot_names": [h.name for h in HarvestRepository(conn).all_harvests(HarvestKind.SNAPSHOT)]}


# The largest seeds file the event harvest form takes: NetarchiveSuite's limit for a job's combined seed list.
MAX_SEEDS_FILE_BYTES = 64 * 1024 * 1024


def event_seeds() -> str:
    """The event harvest form's seeds: the text area's lines, or those of the uploaded file (UTF-8), which
    NetarchiveSuite's form also takes; not both, so that line numbers name one input."""
    typed = request.form.get("seeds", "")
    upload = request.files.get("seedsfile")
    if upload is None or not upload.filename:
        return typed
    if typed.strip():
        raise ApiError("invalid", "give the seeds in the text area or as a file, not both", "seedsfile")
    content = upload.stream.read(MAX_SEEDS_FILE_BYTES + 1)
    if len(content) > MAX_SEEDS_FILE_BYTES:
        raise ApiError("invalid", phrase(N_("a seeds file holds at most %(bytes)s bytes"),
                                         bytes=MAX_SEEDS_FILE_BYTES), "seedsfile")
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = content[:exc.start].count(b"\n") + 1
        raise ApiError("invalid", phrase(N_("the seeds file is not UTF-8: line %(line)s holds a byte that UTF-8 "
                                            "does not allow there"), line=line), "seedsfile") from exc


class TypedConfigurations(list[dict[str, Any]]):
    """The form's configurations as the API's entries, with the text area's line number of each (blank lines
    are skipped, so entry 3 may be line 5)."""

    def __init__(self, entries: list[dict[str, Any]], lines: list[int]) -> None:
        super().__init__(entries)
        self.lines = lines

    def renumbered(self, error: RefusedLinesError) -> RefusedLinesError:
        """``error``, whose lines count the entries, with the text area's line numbers instead."""
        return RefusedLinesError(error.what_phrase or error.what,
                                 [LineRefusal(self.lines[refusal.line - 1], refusal.text, refusal.reason,
                                              refusal.phrase) for refusal in error.refusals], error.field, error.total)


def parse_configurations(text: str) -> TypedConfigurations:
    """One ``domain`` or ``domain/configuration`` a line (the domain's default configuration if none)."""
    entries, lines = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if line:
            # not "_", which is gettext in this module
            domain, _slash, configuration = line.partition("/")
            entries.append({"domain": domain.strip(), "configuration": configuration.strip() or None})
            lines.append(number)
    return TypedConfigurations(entries, lines)


def _refused_configurations(error: RefusedLinesError, typed: TypedConfigurations | None) -> RefusedLinesError:
    """A refusal of the form's configurations numbered by its lines; any other refusal as it is."""
    return typed.renumbered(error) if typed is not None and error.field == "configurations" else error


@blueprint.route("/harvests/new/<kind>", methods=["GET", "POST"])
@require(CURATE)
def new_harvest(kind: str) -> Any:
    if kind not in ("selective", "event", "snapshot"):
        raise ApiError("not_found", f"no harvest type {kind!r}: selective, event or snapshot")

    def show() -> str:
        with database().connect() as conn:
            return render_template("definitions/harvest_new.html", kind=kind,
                                   seed_attributes={kind.name: kind.default for kind in ATTRIBUTES}, **_choices(conn))

    if request.method == "GET":
        return show()

    def create() -> Any:
        data = form_data(("name", "schedule", "comments", "audience", "channel", "template", "previous",
                          "max_objects", "max_bytes", "max_running_time"))
        data.update(type=kind, active=request.form.get("active") == "1")
        typed = None
        if kind == "selective":
            typed = data["configurations"] = parse_configurations(request.form.get("configurations", ""))
        if kind == "event":
            data["seeds"] = event_seeds()
            data["crawl_attributes"] = as_json(form_values(request.form))
        if kind == "snapshot":
            data["crawl_attributes"] = as_json(form_values(request.form, allow_none=True))
        try:
            with database().begin() as conn:
                created = api.create_harvest_from(conn, data)
                warning = api.save_warning(api.harvest_repository(conn), created)
        except RefusedLinesError as exc:
            return show_refusals(_refused_configurations(exc, typed), show)
        flash(_("Harvest %(name)s created.", name=created.name))
        if warning:
            flash(warning, "warning")
        return redirect(url_for("definitions.harvest", name=created.name))
    return attempt(create, show)


def _harvest_page(name: str) -> str:
    with database().connect() as conn:
        repository = api.harvest_repository(conn)
        current = repository.get(name)
        state = repository.states([current.harvest_id]).get(current.harvest_id)
        outlook = repository.outlook(current)
        snapshot = isinstance(current, SnapshotHarvest)
        configurations = [] if snapshot else list(repository.configurations(name))
        choices = {} if snapshot else repository.configuration_choices(name)
        previous = (repository.get_by_id(current.previoushd).name
                    if snapshot and current.previoushd is not None else None)
        channel = ChannelRepository(conn).channel_of(current.harvest_id)
        requests = RunRequestRepository(conn)
        attributes = CrawlAttributeRepository(conn)
        detail = "fullharvests" if snapshot else "partialharvests"
        audited = [("harvestdefinitions", current.harvest_id), (detail, current.harvest_id),
                   ("harvest_run_requests", current.harvest_id)]
        if snapshot:
            audited.append((ATTRIBUTES_AUDIT_TABLE, audit_key(SNAPSHOT_TREE, current.harvest_id)))
        changes = definition_changes(conn, audited, ExtendedFieldType.HARVESTDEFINITIONS, current.harvest_id)
        return render_template("definitions/harvest.html", harvest=current, state=state, outlook=outlook,
                               previous=previous, snapshot=snapshot,
                               configurations=configurations, configuration_choices=choices, channel=channel,
                               runs=JobRepository(conn).runs_of(current.harvest_id),
                               run_request=requests.find(current.harvest_id),
                               preview=api.preview_json(requests.preview_of(current.harvest_id)),
                               tick_period=settings().scheduler.jobgenerationperiod,
                               snapshot_attributes=attributes.of_snapshot(current.harvest_id).own if snapshot else {},
                               seed_attributes={kind.name: kind.default for kind in ATTRIBUTES},
                               extended_fields=harvest_fields(conn, name)["fields"], changes=changes,
                               **_choices(conn))


@blueprint.route("/harvests/<name>", methods=["GET", "POST"])
@require(READ)
def harvest(name: str) -> Any:
    if request.method == "GET":
        return _harvest_page(name)
    return _update_harvest(name, lambda: _harvest_page(name))


@require(CURATE)
def _update_harvest(name: str, show: Callable[[], str]) -> Any:
    def update() -> Any:
        data = form_data(("edition", "schedule", "max_objects", "max_bytes", "max_running_time"))
        data.update(comments=request.form.get("comments", ""), audience=request.form.get("audience", ""))
        for optional in ("name", "channel", "crawlertraps"):
            if optional in request.form:
                data[optional] = request.form[optional]
        if "max_hops" in request.form:
            data["crawl_attributes"] = as_json(form_values(request.form, allow_none=True))
        added = parse_configurations(request.form.get("configurations", ""))
        if added:
            data["configurations"] = added
        try:
            with database().begin() as conn:
                saved = api.update_harvest_from(conn, name, data)
                repository = api.harvest_repository(conn)
                warning = api.save_warning(repository, repository.get(saved))
        except RefusedLinesError as exc:
            return show_refusals(_refused_configurations(exc, added), show)
        flash(_("Harvest %(name)s saved.", name=saved) if saved == name
              else _("Harvest %(name)s saved as %(saved)s.", name=name, saved=saved))
        if warning:
            flash(warning, "warning")
        return redirect(url_for("definitions.harvest", name=saved))
    return attempt(update, show)


@blueprint.post("/harvests/<name>/active")
@require(CURATE)
def harvest_active(name: str) -> Any:
    def change() -> Any:
        active = request.form.get("active") == "1"
        with database().begin() as conn:
            api.set_harvest_active(conn, name, active, form_data(("edition",)).get("edition"))
            repository = api.harvest_repository(conn)
            warning = api.save_warning(repository, repository.get(name)) if active else None
        if warning:
            flash(warning, "warning")
        back = "definitions.harvests" if request.form.get("back") == "list" else "definitions.harvest"
        return redirect(url_for(back, name=name) if back == "definitions.harvest" else url_for(back))
    return attempt(change, _harvests_page)


@blueprint.post("/harvests/<name>/seeds")
@require(CURATE)
def harvest_seeds(name: str) -> Any:
    """The event harvest form on an existing harvest: seeds become per-domain configurations."""
    def add() -> Any:
        data = form_data(("edition", "template", "max_objects", "max_bytes"))
        attributes = {key: value for key, value in form_values(request.form).items() if value is not None}
        try:
            with database().begin() as conn:
                made = api.harvest_repository(conn).add_seeds(
                    name, event_seeds(), data.get("template", ""), form_edition(),
                    maxbytes=data.get("max_bytes", -1), maxobjects=data.get("max_objects", -1),
                    attributes=attributes)
                outlook = api.seeds_outlook(conn, name)
        except RefusedLinesError as exc:
            return show_refusals(exc, lambda: _harvest_page(name))
        if outlook["will_run"]:
            flash(ngettext("Seeds added: %(num)s configuration.", "Seeds added: %(num)s configurations.",
                           len(made)))
        else:
            # said beside the page's Run now button (category idle-seeds, harvest.html)
            flash(ngettext("Seeds added: %(num)s configuration; nothing will harvest it until Run now or a new "
                           "schedule, since %(reason)s.",
                           "Seeds added: %(num)s configurations; nothing will harvest them until Run now or a "
                           "new schedule, since %(reason)s.", len(made), reason=_idle_reason(outlook)),
                  "warning idle-seeds")
        return redirect(url_for("definitions.harvest", name=name))
    return attempt(add, lambda: _harvest_page(name))


def _idle_reason(outlook: dict[str, Any]) -> str:
    """Why no run will harvest what was added (api.seeds_outlook), in the page's language."""
    reasons = [_("it is inactive")] if outlook["inactive"] else []
    if outlook["end_reason"]:
        reasons.append(reason(outlook["end_reason_phrase"], outlook["end_reason"]))
    return _(", and ").join(reasons)


@blueprint.post("/harvests/<name>/configurations/<domain>/<configuration>/remove")
@require(CURATE)
def harvest_remove_configuration(name: str, domain: str, configuration: str) -> Any:
    """A configuration row's Remove button: the configuration leaves the harvest, not its domain."""
    def remove() -> Any:
        with database().begin() as conn:
            api.harvest_repository(conn).remove_configuration(
                name, domain, configuration, form_edition())
        flash(_("Configuration %(domain)s/%(configuration)s removed from harvest %(name)s.", domain=domain,
                configuration=configuration, name=name))
        return redirect(url_for("definitions.harvest", name=name))
    return attempt(remove, lambda: _harvest_page(name))


@blueprint.post("/harvests/<name>/configurations/<domain>/<configuration>/change")
@require(CURATE)
def harvest_change_configuration(name: str, domain: str, configuration: str) -> Any:
    """A configuration row's Change button: the domain is harvested with another of its configurations."""
    def change() -> Any:
        replacement = request.form.get("configuration", "").strip()
        if not replacement:
            raise ApiError("invalid", "choose the configuration to harvest instead", "configuration")
        with database().begin() as conn:
            api.change_configuration(conn, name, domain, configuration, replacement,
                                     form_edition())
        flash(_("%(domain)s is harvested with configuration %(replacement)s instead of %(configuration)s.",
                domain=domain, replacement=replacement, configuration=configuration))
        return redirect(url_for("definitions.harvest", name=name))
    return attempt(change, lambda: _harvest_page(name))


@blueprint.post("/harvests/<name>/run")
@require(CURATE)
def harvest_run(name: str) -> Any:
    """Run now: the scheduler's next tick makes a run outside the schedule (audited)."""
    def ask() -> Any:
        with database().begin() as conn:
            RunRequestRepository(conn, actor()).request_run(name)
        flash(_("A run of %(name)s is asked for: the scheduler makes it at its next tick (every %(period)s s).",
                name=name, period=settings().scheduler.jobgenerationperiod))
        return redirect(url_for("definitions.harvest", name=name))
    return attempt(ask, lambda: _harvest_page(name))


@blueprint.post("/harvests/<name>/run/withdraw")
@require(CURATE)
def harvest_run_withdraw(name: str) -> Any:
    def withdraw() -> Any:
        with database().begin() as conn:
            RunRequestRepository(conn, actor()).withdraw(name)
        flash(_("The run of %(name)s asked for is withdrawn.", name=name))
        return redirect(url_for("definitions.harvest", name=name))
    return attempt(withdraw, lambda: _harvest_page(name))


@blueprint.post("/harvests/<name>/preview")
@require(CURATE)
def harvest_preview(name: str) -> Any:
    """Ask the scheduler for the job-generation preview of the next run; the page shows it once made."""
    def ask() -> Any:
        with database().begin() as conn:
            RunRequestRepository(conn, actor()).request_preview(name)
        flash(_("Preview asked for: the scheduler makes it at its next tick (every %(period)s s); reload this "
                "page to see it.", period=settings().scheduler.jobgenerationperiod))
        return redirect(url_for("definitions.harvest", name=name, _anchor="preview"))
    return attempt(ask, lambda: _harvest_page(name))


@blueprint.post("/harvests/<name>/extendedfields")
@require(CURATE)
def harvest_extended_fields(name: str) -> Any:
    """Save the harvest definition's extended-field values from the form's ``field:NAME`` inputs."""
    def save() -> Any:
        values = {key[len("field:"):]: value for key, value in request.form.items() if key.startswith("field:")}
        with database().begin() as conn:
            set_harvest_fields(conn, name, form_edition(), values)
        flash(_("Extended fields saved."))
        return redirect(url_for("definitions.harvest", name=name))
    return attempt(save, lambda: _harvest_page(name))
