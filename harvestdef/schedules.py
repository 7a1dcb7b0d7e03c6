"""Schedules: when a selective or event harvest runs (NetarchiveSuite's TimedSchedule and RepeatingSchedule).

A Schedule mirrors one row of the schedules table and answers two questions with NetarchiveSuite's
rules: when is the first event (``first_event``) and, given the last one, when is the next
(``next_event``). It does no I/O and never reads the clock: callers pass ``now`` and the zone.

Rules (NetarchiveSuite's Schedule, TimedSchedule, RepeatingSchedule and *Frequency classes):

* first event = frequency.firstEvent(max(now, startdate)), truncated to whole seconds;
* next event = snap the last event to the first valid slot at or after it, add N units, snap again;
  an "anytime" frequency simply adds N units to the last event (a monthly anytime schedule started on
  Jan 31 drifts to Feb 28/29 and stays there, as in NetarchiveSuite);
* a timed schedule ends after its enddate, a repeating one after ``maxrepeats`` events; with neither it
  is endless.

Time zones: inputs and outputs are aware UTC datetimes; slots are wall-clock times in the scheduler's
zone. Minute and hour steps are real elapsed time (like java.util.Calendar.add on HOUR and MINUTE), day,
week and month steps keep the wall-clock time. A wall time that a daylight-saving change skips moves to
the first valid time after the gap; a wall time that occurs twice is taken at its first occurrence
(fold=0), so a daily schedule runs once in a repeated hour.
"""

from __future__ import annotations

import calendar
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import MAXYEAR, MINYEAR, UTC, datetime, timedelta
from enum import IntEnum
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from harvestdef import harvestreasons as reasons
from harvestdef.errors import SettingsError, ValidationError
from harvestdef.phrases import N_, Phrase, phrase
from harvestdef.words import plural

# A nominal slot is searched from this far before the instant asked about, so a slot that a
# daylight-saving gap moved forward onto (or past) that instant is still found.
_SNAP_LOOKBACK = timedelta(days=2)


class TimeUnit(IntEnum):
    """schedules.timeunit; 0 is unused, as in NetarchiveSuite."""

    HOURLY = 1
    DAILY = 2
    WEEKLY = 3
    MONTHLY = 4
    MINUTE = 5

    def __str__(self) -> str:
        return self.name


_UNIT_WORDS = {TimeUnit.MINUTE: "minute", TimeUnit.HOURLY: "hour", TimeUnit.DAILY: "day", TimeUnit.WEEKLY: "week",
               TimeUnit.MONTHLY: "month"}
_WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")  # java.util.Calendar's order


def scheduler_zone(name: str) -> ZoneInfo:
    """The zone schedules are evaluated in: an IANA name, or "" for the system's zone.

    The system zone is taken from $TZ, then /etc/localtime (its zoneinfo link name, or the file itself),
    then /etc/timezone; UTC if none of them says.
    """
    name = name.strip()
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise SettingsError(
                f"harvestsuite.scheduler.timezone: {name!r} is not a known IANA time zone") from exc
    return _system_zone()


def _system_zone() -> ZoneInfo:
    candidates = []
    tz_variable = os.environ.get("TZ", "").lstrip(":").strip()
    if tz_variable:
        candidates.append(tz_variable)
    localtime = Path("/etc/localtime")
    if localtime.is_symlink():
        target = str(localtime.resolve())
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    timezone_file = Path("/etc/timezone")
    if timezone_file.is_file():
        candidates.append(timezone_file.read_text(encoding="utf-8").strip())
    for candidate in candidates:
        try:
            return ZoneInfo(candidate)
        except (ZoneInfoNotFoundError, ValueError):
            continue
    if localtime.is_file():
        with localtime.open("rb") as handle:
            return ZoneInfo.from_file(handle, key="localtime")
    return ZoneInfo("UTC")


def _require_aware(value: datetime | None, field_name: str) -> None:
    if value is not None and value.tzinfo is None:
        raise ValidationError(f"schedule {field_name}: {value!r} has no time zone; give an aware UTC datetime")


def _refused(field_name: str, message: str, said: Phrase) -> ValidationError:
    """A ValidationError naming ``field_name``, so that a form shows ``message`` beside that field; ``said`` is
    its phrase, which a page says in its language (without the field's name: the page names it by its label)."""
    error = ValidationError(message)
    error.field = field_name
    error.phrase = said
    return error


def _check_range(value: int | None, field_name: str, low: int, high: int) -> None:
    if value is not None and not low <= value <= high:
        raise _refused(field_name, f"schedule {field_name} must be between {low} and {high}, not {value}",
                       phrase(N_("must be between %(low)s and %(high)s, not %(value)s"), low=low, high=high,
                              value=value))


def _at_least_one(value: int) -> Phrase:
    return phrase(N_("must be at least 1, not %(value)s"), value=value)


def to_wall(instant: datetime, tz: ZoneInfo) -> datetime:
    """The naive wall-clock time of an aware instant in ``tz``."""
    return instant.astimezone(tz).replace(tzinfo=None)


def from_wall(wall: datetime, tz: ZoneInfo) -> datetime:
    """The aware UTC instant of a naive wall time in ``tz``.

    A repeated wall time (fall back) is its first occurrence; a skipped one (spring forward) becomes the
    first valid instant after the gap, i.e. the moment of the change.
    """
    first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    if to_wall(first, tz) == wall:
        return first
    # In a gap: fold=0 reads the wall time with the offset before the change (an instant after the
    # change), fold=1 with the offset after it (an instant before). The change lies between the two.
    earlier = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    later = first
    if earlier > later:
        earlier, later = later, earlier
    after_offset = later.astimezone(tz).utcoffset()
    while later - earlier > timedelta(seconds=1):
        middle = earlier + (later - earlier) / 2
        if middle.astimezone(tz).utcoffset() == after_offset:
            later = middle
        else:
            earlier = middle
    return later.replace(microsecond=0)


def _add_months(wall: datetime, months: int, day: int | None = None) -> datetime:
    """``wall`` moved by whole months, the day clamped to the month's length (java.util.Calendar.add)."""
    month_index = wall.month - 1 + months
    year, month = wall.year + month_index // 12, month_index % 12 + 1
    if not MINYEAR <= year <= MAXYEAR:
        raise OverflowError(f"{months} months from {wall.isoformat()} is out of the range of dates")
    wanted = wall.day if day is None else day
    return wall.replace(year=year, month=month, day=min(wanted, calendar.monthrange(year, month)[1]))


@dataclass(frozen=True)
class Schedule:
    """One row of the schedules table, with NetarchiveSuite's event rules."""

    name: str
    timeunit: TimeUnit
    numtimeunits: int = 1
    anytime: bool = True
    onminute: int | None = None
    onhour: int | None = None
    ondayofweek: int | None = None  # java.util.Calendar numbering: 1 = Sunday ... 7 = Saturday
    ondayofmonth: int | None = None
    startdate: datetime | None = None
    enddate: datetime | None = None
    maxrepeats: int | None = None
    comments: str = ""
    schedule_id: int | None = None
    edition: int = 1

    def __post_init__(self) -> None:
        if not self.name or not self.name.strip():
            raise _refused("name", "schedule name must not be empty", phrase(N_("must not be empty")))
        try:
            object.__setattr__(self, "timeunit", TimeUnit(self.timeunit))
        except ValueError as exc:
            raise ValidationError(
                f"schedule timeunit must be one of {', '.join(f'{u.value} ({u.name})' for u in TimeUnit)}, "
                f"not {self.timeunit!r}") from exc
        if self.numtimeunits < 1:
            raise _refused("numtimeunits", f"schedule numtimeunits must be at least 1, not {self.numtimeunits}",
                           _at_least_one(self.numtimeunits))
        _check_range(self.onminute, "onminute", 0, 59)
        _check_range(self.onhour, "onhour", 0, 23)
        _check_range(self.ondayofweek, "ondayofweek", 1, 7)
        _check_range(self.ondayofmonth, "ondayofmonth", 1, 31)
        if self.maxrepeats is not None and self.maxrepeats < 1:
            raise _refused("maxrepeats", f"schedule maxrepeats must be at least 1, not {self.maxrepeats}",
                           _at_least_one(self.maxrepeats))
        _require_aware(self.startdate, "startdate")
        _require_aware(self.enddate, "enddate")
        if self.enddate is not None and self.maxrepeats is not None:
            raise _refused("maxrepeats", "schedule enddate and maxrepeats: give one of them, not both",
                           phrase(N_("give an end time or a number of harvests, not both")))
        if self.startdate is not None and self.enddate is not None and self.enddate <= self.startdate:
            raise _refused(
                "enddate",
                f"schedule enddate {self.enddate.isoformat()} must be after startdate {self.startdate.isoformat()}",
                phrase(N_("%(end)s must be after the beginning, %(start)s"), end=self.enddate.isoformat(),
                       start=self.startdate.isoformat()))
        if not self.is_anytime:
            for needed in self._slot_fields():
                if getattr(self, needed) is None:
                    raise _refused(
                        needed,
                        f"schedule {needed} is required for a {self.timeunit.name.lower()} schedule at a fixed time",
                        phrase(N_("is required for a schedule at a fixed time")))

    def _slot_fields(self) -> tuple[str, ...]:
        return {
            TimeUnit.MINUTE: (),
            TimeUnit.HOURLY: ("onminute",),
            TimeUnit.DAILY: ("onhour", "onminute"),
            TimeUnit.WEEKLY: ("ondayofweek", "onhour", "onminute"),
            TimeUnit.MONTHLY: ("ondayofmonth", "onhour", "onminute"),
        }[self.timeunit]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Schedule:
        """A Schedule from a schedules row (a SQLAlchemy mapping or a dict with the column names)."""
        return cls(
            schedule_id=row["schedule_id"], name=row["name"], comments=row["comments"] or "",
            startdate=row["startdate"], enddate=row["enddate"], maxrepeats=row["maxrepeats"],
            timeunit=TimeUnit(row["timeunit"]), numtimeunits=row["numtimeunits"], anytime=bool(row["anytime"]),
            onminute=row["onminute"], onhour=row["onhour"], ondayofweek=row["ondayofweek"],
            ondayofmonth=row["ondayofmonth"], edition=row["edition"])

    def to_values(self) -> dict[str, Any]:
        """The column values of this schedule, without schedule_id and edition (the repository sets those)."""
        return {
            "name": self.name.strip(), "comments": self.comments, "startdate": self.startdate,
            "enddate": self.enddate, "maxrepeats": self.maxrepeats, "timeunit": int(self.timeunit),
            "numtimeunits": self.numtimeunits, "anytime": self.anytime, "onminute": self.onminute,
            "onhour": self.onhour, "ondayofweek": self.ondayofweek, "ondayofmonth": self.ondayofmonth,
        }

    @property
    def is_anytime(self) -> bool:
        """A minute schedule is always "anytime" (NetarchiveSuite's MinuteFrequency has no slot)."""
        return self.anytime or self.timeunit is TimeUnit.MINUTE

    @property
    def is_endless(self) -> bool:
        return self.enddate is None and self.maxrepeats is None

    @property
    def frequency(self) -> str:
        """How often it runs, in words: "every 5 minutes", "every hour", "every 2 days at 02:00", "every
        week on Sunday at 02:00", "every month on day 1 at 02:00" (times in the scheduler's zone); a schedule of
        one harvest runs "once, at its begin time", whatever its unit."""
        if self.maxrepeats == 1:
            return "once, at its begin time"
        unit = _UNIT_WORDS[self.timeunit]
        every = f"every {unit}" if self.numtimeunits == 1 else f"every {plural(self.numtimeunits, unit)}"
        if self.is_anytime:
            return every
        at = f"at {self.onhour:02d}:{self.onminute:02d}" if self.onhour is not None else ""
        if self.timeunit is TimeUnit.HOURLY:
            return f"{every} at minute {self.onminute}"
        if self.timeunit is TimeUnit.WEEKLY and self.ondayofweek is not None:
            return f"{every} on {_WEEKDAYS[self.ondayofweek - 1]} {at}"
        if self.timeunit is TimeUnit.MONTHLY:
            return f"{every} on day {self.ondayofmonth} {at}"
        return f"{every} {at}"

    # ------------------------------------------------------------------ events

    def first_event(self, now: datetime, tz: ZoneInfo) -> datetime | None:
        """The first event at or after max(now, startdate), whole seconds; None if it is past the enddate."""
        _require_aware(now, "now")
        start = now if self.startdate is None or now >= self.startdate else self.startdate
        start = start.astimezone(UTC)
        try:
            event = start if self.is_anytime else self._snap(start, tz)
        except OverflowError:  # the first slot lies after the year 9999: there is none
            return None
        event = event.replace(microsecond=0)
        return self._within_end(event)

    def next_event(self, last_event: datetime, num_previous_events: int, tz: ZoneInfo) -> datetime | None:
        """The event after ``last_event``; None once the schedule has ended (enddate or maxrepeats)."""
        _require_aware(last_event, "last_event")
        if self.maxrepeats is not None and num_previous_events >= self.maxrepeats:
            return None
        last_event = last_event.astimezone(UTC)
        try:
            if self.is_anytime:
                event = self._add_units(last_event, tz)
            elif self.timeunit is TimeUnit.HOURLY:
                event = self._snap(self._add_units(self._snap(last_event, tz), tz), tz)
            else:
                # Day, week and month steps work on the nominal wall-clock slot, not on where a
                # daylight-saving gap moved it, so a moved slot does not push the schedule a unit further.
                slot = self._nominal_slot(last_event, tz)
                event = from_wall(self._snap_wall(self._add_wall_units(slot)), tz)
        except OverflowError:  # a step of numtimeunits from last_event passes the year 9999: no next event
            return None
        return self._within_end(event)

    def end_reason(self, num_previous_events: int, now: datetime, tz: ZoneInfo) -> Phrase | None:
        """Why a harvest on this schedule that has run ``num_previous_events`` times gets no further event
        from ``now`` on (harvestdef/harvestreasons.py); None if it has one (its repeats are not used up and
        an event lies before its end)."""
        _require_aware(now, "now")
        if self.maxrepeats is not None and num_previous_events >= self.maxrepeats:
            return reasons.runs_used(self.name, self.maxrepeats)
        if self.first_event(now, tz) is not None:
            return None
        assert self.enddate is not None  # only an end date leaves first_event without an event
        if self.enddate <= now:
            return reasons.schedule_ended(self.name, self.enddate)
        return reasons.no_event_left(self.name, self.enddate)

    def _within_end(self, event: datetime) -> datetime | None:
        if self.enddate is not None and event > self.enddate:
            return None
        return event

    def _add_units(self, instant: datetime, tz: ZoneInfo) -> datetime:
        if self.timeunit is TimeUnit.MINUTE:
            return instant + timedelta(minutes=self.numtimeunits)
        if self.timeunit is TimeUnit.HOURLY:
            return instant + timedelta(hours=self.numtimeunits)
        return from_wall(self._add_wall_units(to_wall(instant, tz)), tz)

    def _add_wall_units(self, wall: datetime) -> datetime:
        if self.timeunit is TimeUnit.DAILY:
            return wall + timedelta(days=self.numtimeunits)
        if self.timeunit is TimeUnit.WEEKLY:
            return wall + timedelta(weeks=self.numtimeunits)
        if self.timeunit is TimeUnit.MONTHLY:
            return _add_months(wall, self.numtimeunits)
        raise ValueError(f"{self.timeunit} steps are real time, not wall-clock time")

    def _snap(self, instant: datetime, tz: ZoneInfo) -> datetime:
        """The first valid slot at or after ``instant`` (an aware UTC instant)."""
        if self.timeunit is TimeUnit.HOURLY:
            local = instant.astimezone(tz)
            candidate = local.replace(minute=self.onminute, second=0, microsecond=0).astimezone(UTC)
            while candidate < instant:
                candidate += timedelta(hours=1)
            return candidate
        return from_wall(self._nominal_slot(instant, tz), tz)

    def _nominal_slot(self, instant: datetime, tz: ZoneInfo) -> datetime:
        """The wall-clock slot (naive) of the first event at or after ``instant``."""
        slot = self._snap_wall(to_wall(instant, tz) - _SNAP_LOOKBACK)
        while from_wall(slot, tz) < instant:
            slot = self._snap_wall(slot + timedelta(minutes=1))
        return slot

    def _snap_wall(self, wall: datetime) -> datetime:
        """The first wall-clock slot at or after the naive ``wall`` (day, week and month frequencies)."""
        assert self.onhour is not None and self.onminute is not None
        candidate = wall.replace(hour=self.onhour, minute=self.onminute, second=0, microsecond=0)
        if self.timeunit is TimeUnit.DAILY:
            return candidate if candidate >= wall else candidate + timedelta(days=1)
        if self.timeunit is TimeUnit.WEEKLY:
            assert self.ondayofweek is not None
            # java.util.Calendar: 1 = Sunday; Python's weekday(): 0 = Monday.
            wanted = (self.ondayofweek - 2) % 7
            candidate += timedelta(days=(wanted - candidate.weekday()) % 7)
            return candidate if candidate >= wall else candidate + timedelta(weeks=1)
        if self.timeunit is TimeUnit.MONTHLY:
            assert self.ondayofmonth is not None
            candidate = _add_months(candidate, 0, self.ondayofmonth)
            return candidate if candidate >= wall else _add_months(candidate, 1, self.ondayofmonth)
        raise ValueError(f"{self.timeunit} has no wall-clock slot")
