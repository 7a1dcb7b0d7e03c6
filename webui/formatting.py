"""Jinja filters that make figures readable, one way on every page: thousands separators, -1 as "unlimited",
sizes in bytes, stored names in words, roles, how often a schedule runs, and times in one format.

Words go through gettext (webui/language.py), so "unlimited" reads "ubegrænset" on a Danish page; a count with
its noun is written in the template with ``ngettext`` ("1 job", "2 jobs"), where the catalogue holds both
forms. Times are not translated: every language reads the one UTC format.

A time is written as harvestdef.times writes it everywhere ("2026-11-27 14:05:33 UTC": stored in UTC, shown
in UTC, to the second, never the ISO text with microseconds the database hands out), inside a
``<time datetime="...Z">`` element. static/times.js adds the browser's own time beside it where the browser's
zone differs from UTC at that instant, so a curator in Copenhagen reads "(15:05:33 CET)" after it; without
the script the page still says the one UTC time.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from flask import Flask
from flask_babel import gettext as _
from flask_babel import lazy_gettext, ngettext
from markupsafe import Markup, escape

from harvestdef.model.definitions import Role, RunOutlook
from harvestdef.schedules import Schedule, TimeUnit
from harvestdef.times import duration_text, utc_text
from harvestdef.words import spaced
from webui.harvest_reasons import reason, state_name

_UNITS = ("bytes", "KB", "MB", "GB", "TB", "PB")


def count(value: Any) -> str:
    """1234567 -> "1,234,567"; -1 (NetarchiveSuite's unlimited) -> "unlimited"; None -> ""."""
    if value is None or value == "":
        return ""
    if isinstance(value, int | float) and value == -1:
        return _("unlimited")
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return str(value)


def size(value: Any) -> str:
    """A byte count in the largest unit that keeps it ≥ 1 (decimal units, as disks are sold): 1.5 GB."""
    if value is None or value == "":
        return ""
    if value == -1:
        return _("unlimited")
    amount = float(value)
    if amount == 1:
        return "1 byte"
    for unit in _UNITS:
        if abs(amount) < 1000 or unit == _UNITS[-1]:
            return f"{int(amount):,} {unit}" if unit == "bytes" else f"{amount:,.1f} {unit}"
        amount /= 1000
    raise AssertionError("unreachable")


def outlook(value: RunOutlook) -> str:
    """Whether a harvest runs (again), capitalised, in the page's language: "Active", "Cannot run"."""
    return {RunOutlook.ACTIVE: _("Active"), RunOutlook.FINISHED: _("Finished"),
            RunOutlook.CANNOT_RUN: _("Cannot run"), RunOutlook.INACTIVE: _("Inactive")}[RunOutlook(value)]


def role_name(value: Role | str) -> str:
    """A user's role as the pages say it, in the page's language: "curator" reads "kurator" on a Danish page.
    Only what is shown is translated: form values, the API and the database keep Role's own values."""
    return {Role.CURATOR: _("curator"), Role.OPERATOR: _("operator"), Role.ARCHIVIST: _("archivist"),
            Role.ADMIN: _("admin")}[Role(value)]


# java.util.Calendar's order, as Schedule.ondayofweek counts
_WEEKDAYS = (lazy_gettext("Sunday"), lazy_gettext("Monday"), lazy_gettext("Tuesday"), lazy_gettext("Wednesday"),
             lazy_gettext("Thursday"), lazy_gettext("Friday"), lazy_gettext("Saturday"))


def _every(unit: TimeUnit, n: int) -> str:
    # one ngettext per unit: a language may bend each unit its own way ("hvert minut", "hver time")
    units = f"{n:,}"
    if unit is TimeUnit.MINUTE:
        return ngettext("every minute", "every %(units)s minutes", n, units=units)
    if unit is TimeUnit.HOURLY:
        return ngettext("every hour", "every %(units)s hours", n, units=units)
    if unit is TimeUnit.DAILY:
        return ngettext("every day", "every %(units)s days", n, units=units)
    if unit is TimeUnit.WEEKLY:
        return ngettext("every week", "every %(units)s weeks", n, units=units)
    return ngettext("every month", "every %(units)s months", n, units=units)


def frequency(schedule: Schedule) -> str:
    """How often a schedule runs, in the page's language: the words of ``Schedule.frequency`` (which the API
    and the commands say in English), built here from the schedule's parts so harvestdef needs no Flask."""
    if schedule.maxrepeats == 1:
        return _("once, at its begin time")
    every = _every(schedule.timeunit, schedule.numtimeunits)
    if schedule.is_anytime:
        return every
    if schedule.timeunit is TimeUnit.HOURLY:
        return _("%(every)s at minute %(minute)s", every=every, minute=schedule.onminute)
    time = f"{schedule.onhour:02d}:{schedule.onminute:02d}" if schedule.onhour is not None else None
    if schedule.timeunit is TimeUnit.WEEKLY and schedule.ondayofweek is not None:
        day = str(_WEEKDAYS[schedule.ondayofweek - 1])
        if time is None:
            return _("%(every)s on %(weekday)s", every=every, weekday=day)
        return _("%(every)s on %(weekday)s at %(time)s", every=every, weekday=day, time=time)
    if schedule.timeunit is TimeUnit.MONTHLY:
        if time is None:
            return _("%(every)s on day %(day)s", every=every, day=schedule.ondayofmonth)
        return _("%(every)s on day %(day)s at %(time)s", every=every, day=schedule.ondayofmonth, time=time)
    return every if time is None else _("%(every)s at %(time)s", every=every, time=time)


def words(value: Any) -> str:
    """A stored name in words: ``Every_5_minutes`` -> "Every 5 minutes"; None -> ""."""
    return "" if value is None else spaced(str(value))


def instant(value: Any) -> datetime | None:
    """A time from the database (a datetime, naive meaning UTC) or from the API (ISO 8601 text, "Z" or an
    offset) as an aware UTC datetime; None for None, "" and text that is no time."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def when(value: Any) -> Markup | str:
    """A time as ``<time datetime="2026-11-23T04:01:55Z">2026-11-23 04:01:55 UTC</time>`` (the date and the
    clock each in a span, so a line breaks between them or not at all); a date alone as "2026-11-23";
    None -> ""; text that is no time comes back as it was (escaped)."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return value.isoformat()
    moment = instant(value)
    if moment is None:
        return "" if value is None or value == "" else escape(str(value))
    day, clock = utc_text(moment).split(" ", 1)
    # the date and the clock each stay whole; a tight table may put one under the other
    return Markup('<time datetime="{}"><span>{}</span> <span>{}</span></time>').format(
        f"{moment:%Y-%m-%dT%H:%M:%SZ}", day, clock)


def duration(value: Any) -> str:
    """Seconds as "45 s", "4 min", "2 h 5 min"; None -> ""."""
    return "" if value is None else duration_text(float(value))


def init_app(app: Flask) -> None:
    app.jinja_env.filters.update(count=count, size=size, when=when, duration=duration, outlook=outlook, words=words,
                                 frequency=frequency, reason=reason,
                                 state_name=state_name, role_name=role_name)
