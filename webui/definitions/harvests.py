"""Pages of the definitions section: schedules, crawl templates, harvest definitions (selective, event and
snapshot), global crawler traps, and harvest channels with the harvest -> channel mapping (reference §7).

The pages turn form fields into the API's request bodies and reuse its functions (webui.api.harvests), so
a form and a JSON call are checked by the same code. A form with bad input is shown again with the error
(400) and nothing is stored: each post is one transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Response, flash, redirect, render_template, request, url_for

from harvestdef.errors import HarvestSuiteError
from harvestdef.model.definitions import ExtendedFieldDatatype, ExtendedFieldType, HarvestKind, SnapshotHarvest
from harvestdef.repositories.channels import ChannelRepository
from harvestdef.repositories.extendedfields import ExtendedFieldRepository
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.schedules import ScheduleRepository
from harvestdef.repositories.templates import TemplateRepository
from harvestdef.repositories.traps import GlobalCrawlerTrapRepository
from harvestdef.schedules import Schedule, TimeUnit
from webui.api import harvests as api
from webui.api.errors import ApiError, translate
from webui.auth import ADMIN, CURATE, READ, require
from webui.context import actor, database
from webui.definitions import blueprint

FORM_INTEGERS = ("numtimeunits", "onminute", "onhour", "ondayofweek", "ondayofmonth", "maxrepeats",
                 "max_objects", "max_bytes", "max_running_time", "edition")


def _message(error: Exception) -> str:
    if isinstance(error, ApiError):
        return f"{error.field}: {error.message}" if error.field else error.message
    return str(error)


def _attempt(action: Callable[[], Any], page: Callable[[], Any]) -> Any:
    """Run ``action`` (one transaction); on bad input show ``page`` again with the error, status 400/409."""
    try:
        return action()
    except (ApiError, HarvestSuiteError) as error:
        translated = translate(error)
        flash(_message(error), "error")
        status = {"conflict": 409, "not_found": 404}.get(translated.code, 400)
        return page(), status


def form_data(names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The form's fields as an API body: integers where the API wants them, empty fields left out."""
    data: dict[str, Any] = {}
    for name, value in request.form.items():
        if name == "csrf_token" or (names is not None and name not in names):
            continue
        value = value.strip()
        if value == "":
            continue
        if name in FORM_INTEGERS:
            try:
                data[name] = int(value)
            except ValueError:
                raise ApiError("invalid", f"{name} must be a whole number, not {value!r}", name) from None
        else:
            data[name] = value
    return data


# ------------------------------------------------------------------ schedules
def schedule_body() -> dict[str, Any]:
    """The schedule form of reference §3.2 as the schedules table's columns."""
    data = form_data(("name", "comments", "timeunit", "numtimeunits", "onminute", "onhour", "ondayofweek",
                      "ondayofmonth"))
    data["anytime"] = request.form.get("when", "anytime") == "anytime"
    if request.form.get("begin") == "at":
        data["startdate"] = request.form.get("startdate", "")
    end = request.form.get("end", "forever")
    if end == "until":
        data["enddate"] = request.form.get("enddate", "")
    elif end == "repeats":
        data.update(form_data(("maxrepeats",)))
    else:
        data.update(enddate=None, maxrepeats=None)
    if data["anytime"]:
        data.update(onminute=None, onhour=None, ondayofweek=None, ondayofmonth=None)
    return data


def _schedules_page() -> str:
    with database().connect() as conn:
        schedules = list(ScheduleRepository(conn).list())
    return render_template("definitions/schedules.html", schedules=schedules, timeunits=list(TimeUnit),
                           form=request.form)


@blueprint.route("/schedules", methods=["GET", "POST"])
@require(READ)
def schedules() -> Any:
    if request.method == "GET":
        return _schedules_page()
    return _create_schedule()


@require(CURATE)
def _create_schedule() -> Any:
    def create() -> Any:
        schedule = api.schedule_from(schedule_body())
        with database().begin() as conn:
            ScheduleRepository(conn, actor()).create(schedule)
        flash(f"Schedule {schedule.name} created.")
        return redirect(url_for("definitions.schedules"))
    return _attempt(create, _schedules_page)


@blueprint.route("/schedules/<name>", methods=["GET", "POST"])
@require(READ)
def schedule(name: str) -> Any:
    def show() -> str:
        with database().connect() as conn:
            repository = ScheduleRepository(conn)
            current = repository.get_by_name(name)
            users = repository.harvests_using(current.schedule_id or 0)
        return render_template("definitions/schedule.html", schedule=current, users=users,
                               timeunits=list(TimeUnit))
    if request.method == "GET":
        return show()
    return _update_schedule(name, show)


@require(CURATE)
def _update_schedule(name: str, show: Callable[[], str]) -> Any:
    def update() -> Any:
        data = schedule_body()
        expected = form_data(("edition",)).get("edition", 0)
        with database().begin() as conn:
            repository = ScheduleRepository(conn, actor())
            current = repository.get_by_name(name)
            changed = api.schedule_from(data, current)
            saved = repository.update(Schedule(**{n: getattr(changed, n) for n in api.SCHEDULE_FIELDS},
                                                   schedule_id=current.schedule_id, edition=expected))
        flash(f"Schedule {saved.name} saved.")
        return redirect(url_for("definitions.schedule", name=saved.name))
    return _attempt(update, show)


# ------------------------------------------------------------------ crawl templates
def _templates_page() -> str:
    with database().connect() as conn:
        templates = TemplateRepository(conn).page(None, 10_000)
    return render_template("definitions/templates.html", templates=templates, form=request.form)


@blueprint.route("/templates", methods=["GET", "POST"])
@require(READ)
def templates() -> Any:
    if request.method == "GET":
        return _templates_page()
    return _upload_template()


@require(ADMIN)
def _upload_template() -> Any:
    """Upload a new template, or replace one (the form then carries the edition it replaces)."""
    def upload() -> Any:
        name = request.form.get("name", "").strip()
        uploaded = request.files.get("file")
        cxml = uploaded.read().decode("utf-8", "replace") if uploaded and uploaded.filename else \
            request.form.get("cxml", "")
        expected = form_data(("edition",)).get("edition")
        with api.template_input(), database().begin() as conn:
            repository = TemplateRepository(conn, actor())
            if expected is None:
                repository.create(name, cxml, request.form.get("description", ""))
            else:
                repository.replace(name, cxml, expected)
        flash(f"Template {name} {'uploaded' if expected is None else 'replaced'}.")
        return redirect(url_for("definitions.templates"))
    return _attempt(upload, _templates_page)


@blueprint.get("/templates/<name>/download")
@require(READ)
def download_template(name: str) -> Any:
    with database().connect() as conn:
        template = TemplateRepository(conn).get(name)
    return Response(template.orderxml, mimetype="application/xml",
                    headers={"Content-Disposition": f'attachment; filename="{template.name}.cxml"'})


@blueprint.post("/templates/<name>/active")
@require(ADMIN)
def template_active(name: str) -> Any:
    def change() -> Any:
        expected = form_data(("edition",)).get("edition", 0)
        with database().begin() as conn:
            repository = TemplateRepository(conn, actor())
            (repository.activate if request.form.get("active") == "1" else repository.deactivate)(name, expected)
        return redirect(url_for("definitions.templates"))
    return _attempt(change, _templates_page)


# ------------------------------------------------------------------ harvest definitions
def _harvests_page() -> str:
    with database().connect() as conn:
        repository = HarvestRepository(conn)
        rows = list(repository.all_harvests())
        states = repository.states(row.harvest_id for row in rows)
    return render_template("definitions/harvests.html", selective=[h for h in rows if h.kind is HarvestKind.SELECTIVE],
                           snapshot=[h for h in rows if h.kind is HarvestKind.SNAPSHOT], states=states)


@blueprint.get("/harvests")
@require(READ)
def harvests() -> Any:
    return _harvests_page()


def _choices(conn: Any) -> dict[str, Any]:
    return {"schedule_names": [schedule.name for schedule in ScheduleRepository(conn).list()],
            "template_names": TemplateRepository(conn).names(active_only=True),
            "channels": ChannelRepository(conn).all_channels(),
            "snapshot_names": [h.name for h in HarvestRepository(conn).all_harvests(HarvestKind.SNAPSHOT)]}


def parse_configurations(text: str) -> list[dict[str, Any]]:
    """One ``domain`` or ``domain/configuration`` a line (the domain's default configuration if none)."""
    entries = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            domain, _, configuration = line.partition("/")
            entries.append({"domain": domain.strip(), "configuration": configuration.strip() or None})
    return entries


@blueprint.route("/harvests/new/<kind>", methods=["GET", "POST"])
@require(CURATE)
def new_harvest(kind: str) -> Any:
    if kind not in ("selective", "event", "snapshot"):
        raise ApiError("not_found", f"no harvest type {kind!r}: selective, event or snapshot")

    def show() -> str:
        with database().connect() as conn:
            return render_template("definitions/harvest_new.html", kind=kind, form=request.form, **_choices(conn))

    if request.method == "GET":
        return show()

    def create() -> Any:
        data = form_data(("name", "schedule", "comments", "audience", "channel", "template", "previous",
                          "max_objects", "max_bytes", "max_running_time"))
        data.update(type=kind, active=request.form.get("active") == "1")
        if kind == "selective":
            data["configurations"] = parse_configurations(request.form.get("configurations", ""))
        if kind == "event":
            data["seeds"] = request.form.get("seeds", "")
        with database().begin() as conn:
            created = api.create_harvest_from(conn, data)
        flash(f"Harvest {created.name} created.")
        return redirect(url_for("definitions.harvest", name=created.name))
    return _attempt(create, show)


def _harvest_page(name: str) -> str:
    with database().connect() as conn:
        repository = HarvestRepository(conn)
        current = repository.get(name)
        state = repository.states([current.harvest_id]).get(current.harvest_id)
        configurations = [] if isinstance(current, SnapshotHarvest) else list(repository.configurations(name))
        previous = (repository.get_by_id(current.previoushd).name
                    if isinstance(current, SnapshotHarvest) and current.previoushd is not None else None)
        channel = ChannelRepository(conn).channel_of(current.harvest_id)
        return render_template("definitions/harvest.html", harvest=current, state=state, previous=previous,
                               configurations=configurations, channel=channel, form=request.form,
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
        if "crawlertraps" in request.form:
            data["crawlertraps"] = request.form["crawlertraps"]
        added = parse_configurations(request.form.get("configurations", ""))
        if added:
            data["configurations"] = added
        with database().begin() as conn:
            api.update_harvest_from(conn, name, data)
        flash(f"Harvest {name} saved.")
        return redirect(url_for("definitions.harvest", name=name))
    return _attempt(update, show)


@blueprint.post("/harvests/<name>/active")
@require(CURATE)
def harvest_active(name: str) -> Any:
    def change() -> Any:
        with database().begin() as conn:
            api.set_harvest_active(conn, name, request.form.get("active") == "1",
                                   form_data(("edition",)).get("edition"))
        back = "definitions.harvests" if request.form.get("back") == "list" else "definitions.harvest"
        return redirect(url_for(back, name=name) if back == "definitions.harvest" else url_for(back))
    return _attempt(change, _harvests_page)


@blueprint.post("/harvests/<name>/seeds")
@require(CURATE)
def harvest_seeds(name: str) -> Any:
    """The event harvest form on an existing harvest: seeds become per-domain configurations (reference §7)."""
    def add() -> Any:
        data = form_data(("edition", "template", "max_objects", "max_bytes"))
        with database().begin() as conn:
            made = api.harvest_repository(conn).add_seeds(
                name, request.form.get("seeds", ""), data.get("template", ""), data.get("edition", 0),
                maxbytes=data.get("max_bytes", -1), maxobjects=data.get("max_objects", -1))
        flash(f"Seeds added: {len(made)} configuration(s).")
        return redirect(url_for("definitions.harvest", name=name))
    return _attempt(add, lambda: _harvest_page(name))


# ------------------------------------------------------------------ global crawler traps
def _traps_page() -> str:
    with database().connect() as conn:
        lists = GlobalCrawlerTrapRepository(conn).all_lists()
    return render_template("definitions/traps.html", lists=lists, form=request.form)


@blueprint.route("/traps", methods=["GET", "POST"])
@require(READ)
def global_traps() -> Any:
    if request.method == "GET":
        return _traps_page()
    return _create_traps()


@require(CURATE)
def _create_traps() -> Any:
    def create() -> Any:
        uploaded = request.files.get("file")
        expressions = uploaded.read().decode("utf-8", "replace") if uploaded and uploaded.filename else \
            request.form.get("expressions", "")
        with database().begin() as conn:
            created = GlobalCrawlerTrapRepository(conn, actor()).create(
                request.form.get("name", ""), expressions, request.form.get("description", ""),
                request.form.get("active") == "1")
        flash(f"Crawler trap list {created.name} created.")
        return redirect(url_for("definitions.global_traps"))
    return _attempt(create, _traps_page)


@blueprint.post("/traps/<name>/active")
@require(CURATE)
def traps_active(name: str) -> Any:
    with database().begin() as conn:
        GlobalCrawlerTrapRepository(conn, actor()).set_active(name, request.form.get("active") == "1")
    return redirect(url_for("definitions.global_traps"))


@blueprint.get("/traps/<name>/download")
@require(READ)
def download_traps(name: str) -> Any:
    with database().connect() as conn:
        trap_list = GlobalCrawlerTrapRepository(conn).get(name)
    return Response("\n".join(trap_list.expressions) + "\n", mimetype="text/plain",
                    headers={"Content-Disposition": f'attachment; filename="{trap_list.name}.txt"'})


# ------------------------------------------------------------------ harvest channels
def _channels_page() -> str:
    with database().connect() as conn:
        channels = ChannelRepository(conn)
        rows = list(HarvestRepository(conn).all_harvests())
        mapping = [(h, channels.channel_of(h.harvest_id)) for h in rows]
        return render_template("definitions/channels.html", channels=channels.all_channels(), mapping=mapping,
                               form=request.form)


@blueprint.route("/channels", methods=["GET", "POST"])
@require(READ)
def channels() -> Any:
    if request.method == "GET":
        return _channels_page()
    return _create_channel()


@require(ADMIN)
def _create_channel() -> Any:
    def create() -> Any:
        with database().begin() as conn:
            created = ChannelRepository(conn, actor()).create(
                request.form.get("name", ""), request.form.get("snapshot") == "1",
                request.form.get("comments", ""), request.form.get("default") == "1")
        flash(f"Harvest channel {created.name} created.")
        return redirect(url_for("definitions.channels"))
    return _attempt(create, _channels_page)


@blueprint.post("/channels/mapping")
@require(ADMIN)
def channel_mapping() -> Any:
    """Send a harvest definition's jobs to a channel (empty: the default channel of its kind)."""
    def change() -> Any:
        data = form_data(("harvest", "channel", "edition"))
        with database().begin() as conn:
            target = HarvestRepository(conn).get(data.get("harvest", ""))
            channel = ChannelRepository(conn, actor()).map_harvest(target.harvest_id, data.get("channel"),
                                                                    data.get("edition", 0))
        flash(f"Harvest {target.name} now goes to channel {channel.name}.")
        return redirect(url_for("definitions.channels"))
    return _attempt(change, _channels_page)


# ------------------------------------------------------------------ extended field definitions
def _extended_fields_page() -> str:
    with database().connect() as conn:
        repository = ExtendedFieldRepository(conn)
        fields = {kind: repository.fields_of(kind) for kind in ExtendedFieldType}
    return render_template("definitions/extended_fields.html", fields=fields, datatypes=list(ExtendedFieldDatatype),
                           kinds=list(ExtendedFieldType), form=request.form)


@blueprint.route("/extendedfields", methods=["GET", "POST"])
@require(READ)
def extended_fields() -> Any:
    if request.method == "GET":
        return _extended_fields_page()
    return _define_extended_field()


def _enum_choice(enum: Any, name: str) -> Any:
    value = request.form.get(name, "")
    try:
        return enum[value]
    except KeyError:
        raise ApiError("invalid", f"{name} must be one of {', '.join(e.name for e in enum)}, not {value!r}",
                       name) from None


@require(ADMIN)
def _define_extended_field() -> Any:
    def define() -> Any:
        data = form_data(("sequencenr", "maxlen"))
        with database().begin() as conn:
            created = ExtendedFieldRepository(conn, actor()).define(
                _enum_choice(ExtendedFieldType, "field_type"), request.form.get("name", ""),
                _enum_choice(ExtendedFieldDatatype, "datatype"), mandatory=request.form.get("mandatory") == "1",
                defaultvalue=request.form.get("defaultvalue", ""),
                options=tuple(o.strip() for o in request.form.get("options", "").splitlines() if o.strip()),
                format=request.form.get("format", ""), sequencenr=data.get("sequencenr"), maxlen=data.get("maxlen"))
        flash(f"Extended field {created.name} defined.")
        return redirect(url_for("definitions.extended_fields"))
    return _attempt(define, _extended_fields_page)


@blueprint.post("/extendedfields/<int:field_id>/delete")
@require(ADMIN)
def delete_extended_field(field_id: int) -> Any:
    with database().begin() as conn:
        ExtendedFieldRepository(conn, actor()).delete(field_id)
    return redirect(url_for("definitions.extended_fields"))
