"""Pages of the definitions section: schedules (NetarchiveSuite's schedule form), listed, created and edited.

The form becomes the API's request body and is checked by the API's ``schedule_from``
(webui/api/schedules.py), so a form and a JSON call accept the same schedules. The form's own choices are
checked here: a time of day (``attime``, HH:MM) for a schedule at a fixed time, a begin or end time (ISO
8601, UTC when it has no zone, as the browser's date and time input sends it) or a number of harvests for
the choice that needs one, so that a choice made without its value is refused rather than saved as
"whenever", "as soon as possible" or "forever".
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import time
from typing import Any

from flask import flash, redirect, render_template, request, url_for
from flask_babel import gettext as _

from harvestdef.phrases import N_, phrase
from harvestdef.repositories.schedules import ScheduleRepository
from harvestdef.schedules import Schedule
from webui.api.errors import ApiError
from webui.api.schedules import SCHEDULE_FIELDS, schedule_from
from webui.auth import CURATE, READ, require
from webui.context import actor, database
from webui.definitions import blueprint
from webui.definitions.forms import attempt, form_data, form_edition


def _required(name: str, what: str) -> str:
    """The form field ``name``, which its chosen radio button needs: refused naming the field if empty."""
    text = request.form.get(name, "").strip()
    if not text:
        # the page names the field by its label, beside it and in the summary
        raise ApiError("invalid", f"{name}: give {what}, or choose another option", name,
                       phrase=phrase(N_("give %(what)s, or choose another option"), what=what))
    return text


def _time_of_day() -> dict[str, int]:
    """The hour and minute of the form's time of day (``attime``, HH:MM as the browser's time input sends
    it, in the scheduler's zone); a form without the field may give ``onhour`` and ``onminute`` as numbers."""
    if "attime" not in request.form:
        return form_data(("onhour", "onminute"))
    text = _required("attime", _("a time of day"))
    try:
        chosen = time.fromisoformat(text)
    except ValueError:
        raise ApiError("invalid", f"attime must be a time of day as HH:MM (24-hour clock), not {text[:40]!r}",
                       "attime", phrase=phrase(N_("must be a time of day as HH:MM (24-hour clock), not %(value)s"),
                                               value=repr(text[:40]))) from None
    return {"onhour": chosen.hour, "onminute": chosen.minute}


def schedule_body() -> dict[str, Any]:
    """The schedule form as the schedules table's columns."""
    data = form_data(("name", "comments", "timeunit", "numtimeunits", "ondayofweek", "ondayofmonth"))
    data["anytime"] = request.form.get("when", "anytime") == "anytime"
    if request.form.get("begin") == "at":
        data["startdate"] = _required("startdate", _("a begin time"))
    end = request.form.get("end", "forever")
    if end == "until":
        data["enddate"] = _required("enddate", _("an end time"))
    elif end == "repeats":
        _required("maxrepeats", _("a number of harvests"))
        data.update(form_data(("maxrepeats",)))
    else:
        data.update(enddate=None, maxrepeats=None)
    if data["anytime"]:
        data.update(onminute=None, onhour=None, ondayofweek=None, ondayofmonth=None)
    else:
        data.update(_time_of_day())
    return data


def _schedules_page() -> str:
    with database().connect() as conn:
        schedules = list(ScheduleRepository(conn).list())
    return render_template("definitions/schedules.html", schedules=schedules)


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
        return render_template("definitions/schedule.html", schedule=current, users=users)
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
