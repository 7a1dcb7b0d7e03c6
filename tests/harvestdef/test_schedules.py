"""Schedule events: every frequency, month lengths, the anytime drift, ends, DST, NetarchiveSuite's snapping."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from harvestdef.errors import SettingsError, ValidationError
from harvestdef.schedules import Schedule, TimeUnit, from_wall, scheduler_zone

UTC_ZONE = ZoneInfo("UTC")
COPENHAGEN = ZoneInfo("Europe/Copenhagen")


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def local(zone: ZoneInfo, *args: int, fold: int = 0) -> datetime:
    return datetime(*args, tzinfo=zone, fold=fold).astimezone(UTC)


def events(schedule: Schedule, now: datetime, count: int, tz: ZoneInfo = UTC_ZONE) -> list[datetime | None]:
    found: list[datetime | None] = []
    event = schedule.first_event(now, tz)
    while event is not None and len(found) < count:
        found.append(event)
        event = schedule.next_event(event, len(found), tz)
    return found


def test_minute_schedule_adds_minutes_and_truncates_fractions() -> None:
    schedule = Schedule("every 5 minutes", TimeUnit.MINUTE, numtimeunits=5, anytime=False)
    now = utc(2024, 3, 1, 10, 7, 13, 999_999)
    assert events(schedule, now, 3) == [utc(2024, 3, 1, 10, 7, 13), utc(2024, 3, 1, 10, 12, 13),
                                        utc(2024, 3, 1, 10, 17, 13)]


def test_hourly_on_minute() -> None:
    schedule = Schedule("hourly at :15", TimeUnit.HOURLY, numtimeunits=2, anytime=False, onminute=15)
    assert events(schedule, utc(2024, 3, 1, 10, 20), 3) == [
        utc(2024, 3, 1, 11, 15), utc(2024, 3, 1, 13, 15), utc(2024, 3, 1, 15, 15)]
    # at the slot exactly: that slot is the first event
    assert schedule.first_event(utc(2024, 3, 1, 11, 15), UTC_ZONE) == utc(2024, 3, 1, 11, 15)


def test_hourly_anytime_adds_hours() -> None:
    schedule = Schedule("Once_an_hour", TimeUnit.HOURLY)
    assert events(schedule, utc(2024, 3, 1, 10, 20, 5), 2) == [utc(2024, 3, 1, 10, 20, 5), utc(2024, 3, 1, 11, 20, 5)]


def test_daily_at_time() -> None:
    schedule = Schedule("daily 04:30", TimeUnit.DAILY, anytime=False, onhour=4, onminute=30)
    assert events(schedule, utc(2024, 2, 28, 5, 0), 3) == [
        utc(2024, 2, 29, 4, 30), utc(2024, 3, 1, 4, 30), utc(2024, 3, 2, 4, 30)]


def test_weekly_uses_java_calendar_day_numbers() -> None:
    # 1 = Sunday: 2024-03-01 is a Friday, the next Sunday is 2024-03-03
    sunday = Schedule("sundays", TimeUnit.WEEKLY, anytime=False, ondayofweek=1, onhour=23, onminute=0)
    assert events(sunday, utc(2024, 3, 1, 12, 0), 2) == [utc(2024, 3, 3, 23, 0), utc(2024, 3, 10, 23, 0)]
    saturday = Schedule("saturdays", TimeUnit.WEEKLY, numtimeunits=2, anytime=False, ondayofweek=7, onhour=6,
                        onminute=0)
    assert events(saturday, utc(2024, 3, 2, 6, 0), 2) == [utc(2024, 3, 2, 6, 0), utc(2024, 3, 16, 6, 0)]


def test_monthly_day_clamped_to_month_length() -> None:
    schedule = Schedule("monthly 31st", TimeUnit.MONTHLY, anytime=False, ondayofmonth=31, onhour=1, onminute=0)
    assert events(schedule, utc(2023, 1, 15), 4) == [
        utc(2023, 1, 31, 1), utc(2023, 2, 28, 1), utc(2023, 3, 31, 1), utc(2023, 4, 30, 1)]
    assert events(schedule, utc(2024, 1, 31, 2), 2) == [utc(2024, 2, 29, 1), utc(2024, 3, 31, 1)]


def test_monthly_anytime_drifts_like_netarchivesuite() -> None:
    schedule = Schedule("Once_a_month", TimeUnit.MONTHLY)
    assert events(schedule, utc(2023, 1, 31, 12), 4) == [
        utc(2023, 1, 31, 12), utc(2023, 2, 28, 12), utc(2023, 3, 28, 12), utc(2023, 4, 28, 12)]
    assert events(schedule, utc(2024, 1, 31, 12), 3) == [utc(2024, 1, 31, 12), utc(2024, 2, 29, 12),
                                                         utc(2024, 3, 29, 12)]


def test_next_event_snaps_a_last_event_that_is_not_on_a_slot() -> None:
    # NetarchiveSuite: snap lastEvent to the first slot at/after it, add N units, snap again.
    daily = Schedule("daily 04:30", TimeUnit.DAILY, anytime=False, onhour=4, onminute=30)
    assert daily.next_event(utc(2024, 3, 1, 10, 0), 1, UTC_ZONE) == utc(2024, 3, 3, 4, 30)
    assert daily.next_event(utc(2024, 3, 1, 4, 0), 1, UTC_ZONE) == utc(2024, 3, 2, 4, 30)
    hourly = Schedule("hourly at :15", TimeUnit.HOURLY, anytime=False, onminute=15)
    assert hourly.next_event(utc(2024, 3, 1, 10, 20), 1, UTC_ZONE) == utc(2024, 3, 1, 12, 15)


def test_start_date_in_the_future_is_the_first_event() -> None:
    schedule = Schedule("later", TimeUnit.DAILY, startdate=utc(2030, 5, 1, 8, 0, 30))
    assert schedule.first_event(utc(2024, 1, 1), UTC_ZONE) == utc(2030, 5, 1, 8, 0, 30)
    assert schedule.first_event(utc(2031, 1, 1, 9), UTC_ZONE) == utc(2031, 1, 1, 9)


def test_repeating_schedule_stops_after_maxrepeats() -> None:
    once = Schedule("Once", TimeUnit.HOURLY, maxrepeats=1)
    assert events(once, utc(2024, 3, 1, 10), 10) == [utc(2024, 3, 1, 10)]
    thrice = Schedule("thrice", TimeUnit.DAILY, maxrepeats=3)
    assert len(events(thrice, utc(2024, 3, 1, 10), 10)) == 3
    assert thrice.next_event(utc(2024, 3, 3, 10), 3, UTC_ZONE) is None


def test_timed_schedule_stops_after_enddate() -> None:
    schedule = Schedule("until", TimeUnit.DAILY, startdate=utc(2024, 3, 1, 10), enddate=utc(2024, 3, 3, 10))
    assert events(schedule, utc(2024, 1, 1), 10) == [utc(2024, 3, 1, 10), utc(2024, 3, 2, 10), utc(2024, 3, 3, 10)]
    assert schedule.first_event(utc(2024, 3, 4), UTC_ZONE) is None
    endless = Schedule("forever", TimeUnit.DAILY)
    assert endless.is_endless and len(events(endless, utc(2024, 1, 1), 400)) == 400


def test_daily_in_copenhagen_keeps_wall_time_across_dst() -> None:
    schedule = Schedule("daily 08:00", TimeUnit.DAILY, anytime=False, onhour=8, onminute=0)
    found = events(schedule, local(COPENHAGEN, 2024, 3, 30, 9), 2, COPENHAGEN)
    assert found == [utc(2024, 3, 31, 6), utc(2024, 4, 1, 6)]  # 08:00 CEST = 06:00 UTC
    assert [e.astimezone(COPENHAGEN).hour for e in found] == [8, 8]


def test_spring_forward_moves_a_skipped_time_to_the_next_valid_time() -> None:
    # 2024-03-31 02:00 CET -> 03:00 CEST in Copenhagen: 02:30 does not exist that day.
    schedule = Schedule("daily 02:30", TimeUnit.DAILY, anytime=False, onhour=2, onminute=30)
    found = events(schedule, local(COPENHAGEN, 2024, 3, 30, 3), 3, COPENHAGEN)
    assert found == [utc(2024, 3, 31, 1, 0), utc(2024, 4, 1, 0, 30), utc(2024, 4, 2, 0, 30)]
    assert [e.astimezone(COPENHAGEN).strftime("%m-%d %H:%M") for e in found] == [
        "03-31 03:00", "04-01 02:30", "04-02 02:30"]
    assert from_wall(datetime(2024, 3, 31, 2, 30), COPENHAGEN) == utc(2024, 3, 31, 1, 0)


def test_fall_back_runs_a_repeated_hour_once() -> None:
    # 2024-10-27 03:00 CEST -> 02:00 CET in Copenhagen: 02:30 occurs twice; the first one is taken.
    schedule = Schedule("daily 02:30", TimeUnit.DAILY, anytime=False, onhour=2, onminute=30)
    found = events(schedule, local(COPENHAGEN, 2024, 10, 26, 3), 3, COPENHAGEN)
    assert found == [utc(2024, 10, 27, 0, 30), utc(2024, 10, 28, 1, 30), utc(2024, 10, 29, 1, 30)]
    # asked between the two occurrences, the schedule does not run again in the repeated hour
    second_occurrence = local(COPENHAGEN, 2024, 10, 27, 2, 15, fold=1)
    assert schedule.first_event(second_occurrence, COPENHAGEN) == utc(2024, 10, 28, 1, 30)


def test_hourly_counts_real_hours_across_dst() -> None:
    schedule = Schedule("hourly at :30", TimeUnit.HOURLY, anytime=False, onminute=30)
    found = events(schedule, local(COPENHAGEN, 2024, 10, 27, 1, 45), 3, COPENHAGEN)
    assert found == [utc(2024, 10, 27, 0, 30), utc(2024, 10, 27, 1, 30), utc(2024, 10, 27, 2, 30)]
    assert [(e.astimezone(COPENHAGEN).hour, e.astimezone(COPENHAGEN).fold) for e in found] == [
        (2, 0), (2, 1), (3, 0)]


@pytest.mark.parametrize(("fields", "named"), [
    ({"timeunit": TimeUnit.HOURLY, "anytime": False, "onminute": 60}, "onminute"),
    ({"timeunit": TimeUnit.DAILY, "anytime": False, "onhour": 24, "onminute": 0}, "onhour"),
    ({"timeunit": TimeUnit.WEEKLY, "anytime": False, "ondayofweek": 0, "onhour": 1, "onminute": 0}, "ondayofweek"),
    ({"timeunit": TimeUnit.WEEKLY, "anytime": False, "ondayofweek": 8, "onhour": 1, "onminute": 0}, "ondayofweek"),
    ({"timeunit": TimeUnit.MONTHLY, "anytime": False, "ondayofmonth": 32, "onhour": 1, "onminute": 0},
     "ondayofmonth"),
    ({"timeunit": TimeUnit.DAILY, "numtimeunits": 0}, "numtimeunits"),
    ({"timeunit": TimeUnit.DAILY, "maxrepeats": 0}, "maxrepeats"),
    ({"timeunit": TimeUnit.DAILY, "maxrepeats": 2, "enddate": datetime(2030, 1, 1, tzinfo=UTC)}, "maxrepeats"),
    ({"timeunit": TimeUnit.DAILY, "startdate": datetime(2030, 1, 2, tzinfo=UTC),
      "enddate": datetime(2030, 1, 1, tzinfo=UTC)}, "enddate"),
    ({"timeunit": TimeUnit.DAILY, "anytime": False, "onminute": 0}, "onhour"),
    ({"timeunit": 9}, "timeunit"),
    ({"timeunit": TimeUnit.DAILY, "startdate": datetime(2030, 1, 1)}, "startdate"),
])
def test_validation_names_the_field(fields: dict, named: str) -> None:
    with pytest.raises(ValidationError, match=named):
        Schedule("bad", **fields)


def test_scheduler_zone() -> None:
    assert scheduler_zone("Europe/Copenhagen") == COPENHAGEN
    assert isinstance(scheduler_zone(""), ZoneInfo)
    with pytest.raises(SettingsError, match="Mars/Olympus"):
        scheduler_zone("Mars/Olympus")
