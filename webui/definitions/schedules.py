"""Pages of the definitions section: schedules (the form of reference §3.2), listed, created and edited.

The form becomes the API's request body and is checked by the API's ``schedule_from``
(webui/api/schedules.py), so a form and a JSON call accept the same schedules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import flash, redirect, render_template, request, url_for
from flask_babel import gettext as _

from harvestdef.repositories.schedules import ScheduleRepository
from harvestdef.schedules import Schedule, TimeUnit
from webui.api.schedules import SCHEDULE_FIELDS, schedule_from
from webui.auth import CURATE, READ, require
from webui.context import actor, database
from webui.definitions import blueprint
from webui.definitions.forms import attempt, form_data, form_edition


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
        schedule = schedule_from(schedule_body())
        with database().begin() as conn:
            ScheduleRepository(conn, actor()).create(schedule)
        flash(_("Schedule %(name)s created.", name=schedule.name))
        return redirect(url_for("definitions.schedules"))
    return attempt(create, _schedules_page)


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
        expected = form_edition()
        with database().begin() as conn:
            repository = ScheduleRepository(conn, actor())
            current = repository.get_by_name(name)
            changed = schedule_from(data, current)
            saved = repository.update(Schedule(**{n: getattr(changed, n) for n in SCHEDULE_FIELDS},
                                                   schedule_id=current.schedule_id, edition=expected))
        flash(_("Schedule %(name)s saved.", name=saved.name))
        return redirect(url_for("definitions.schedule", name=saved.name))
    return attempt(update, show)
