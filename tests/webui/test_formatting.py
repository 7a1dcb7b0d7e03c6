"""The figures' filters (webui/formatting.py) and the words behind them (harvestdef/words.py, a schedule's
frequency): one time format, sizes and counts as people read them, plurals and stored names in words."""

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from markupsafe import Markup

from harvestdef.schedules import Schedule, TimeUnit
from harvestdef.words import plural as plural_text
from harvestdef.words import spaced
from webui.formatting import count, frequency, size, when, words


def test_counts_get_separators_and_minus_one_is_unlimited():
    assert count(1234567) == "1,234,567"
    assert count(12345) == "12,345"
    assert count(-1) == "unlimited"
    assert count(None) == ""
    assert count(0) == "0"
    assert count(2.25) == "2.2"


def test_sizes_take_the_largest_unit_that_keeps_them_at_least_one():
    assert size(0) == "0 bytes"
    assert size(1) == "1 byte"
    assert size(999) == "999 bytes"
    assert size(1_000) == "1.0 KB"
    assert size(1_234_567) == "1.2 MB"
    assert size(717_900) == "717.9 KB"
    assert size(1_500_000_000) == "1.5 GB"
    assert size(-1) == "unlimited"
    assert size(None) == ""


def _text(markup: object) -> str:
    """The text a reader sees of the filter's HTML: the <time> element's content."""
    return Markup(str(markup)).striptags()


@pytest.mark.parametrize("value", [
    datetime(2026, 11, 23, 4, 1, 55, 390191, tzinfo=UTC),  # microseconds, as the database hands them out
    datetime(2026, 11, 23, 4, 1, 55),  # naive: the database's UTC
    datetime(2026, 11, 23, 5, 1, 55, tzinfo=timezone(timedelta(hours=1))),  # the same instant in another zone
    "2026-11-23T04:01:55.390191Z",  # as the API sends it
    "2026-11-23T04:01:55.390191+00:00",
    "2026-11-23T06:01:55+02:00",
    "2026-11-23 04:01:55",
])
def test_a_time_reads_the_same_however_it_was_stored_or_sent(value):
    shown = when(value)
    assert isinstance(shown, Markup)
    assert str(shown) == ('<time datetime="2026-11-23T04:01:55Z"><span>2026-11-23</span> <span>04:01:55 UTC</span>'
                          '</time>')
    assert _text(shown) == "2026-11-23 04:01:55 UTC"


def test_no_time_is_empty_a_date_alone_is_a_date_and_other_text_is_kept_escaped():
    assert when(None) == "" and when("") == ""
    assert when(date(2026, 11, 23)) == "2026-11-23"
    assert when("not a time <b>") == "not a time &lt;b&gt;"


def test_plurals_agree_with_their_count():
    assert plural_text(1, "job") == "1 job"
    assert plural_text(0, "job") == "0 jobs"
    assert plural_text(12345, "job") == "12,345 jobs"
    assert plural_text(3, "entry") == "3 entries"
    assert plural_text(2, "index", "indices") == "2 indices"


def test_stored_names_read_as_words():
    assert words("Every_5_minutes") == spaced("Every_5_minutes") == "Every 5 minutes"
    assert words("Once_an_hour") == "Once an hour"
    assert words("News and local history") == "News and local history"
    assert words(None) == ""


@pytest.mark.parametrize(("schedule", "said"), [
    (Schedule("s", TimeUnit.MINUTE, 5), "every 5 minutes"),
    (Schedule("s", TimeUnit.MINUTE, 1), "every minute"),
    (Schedule("s", TimeUnit.HOURLY, 1), "every hour"),
    (Schedule("s", TimeUnit.HOURLY, 2, anytime=False, onminute=15), "every 2 hours at minute 15"),
    (Schedule("s", TimeUnit.DAILY, 1, anytime=False, onhour=2, onminute=5), "every day at 02:05"),
    (Schedule("s", TimeUnit.WEEKLY, 1, anytime=False, ondayofweek=2, onhour=23, onminute=0),
     "every week on Monday at 23:00"),
    (Schedule("s", TimeUnit.WEEKLY, 3), "every 3 weeks"),
    (Schedule("s", TimeUnit.MONTHLY, 1, anytime=False, ondayofmonth=1, onhour=0, onminute=30),
     "every month on day 1 at 00:30"),
    # NetarchiveSuite's "Once": hourly, one harvest
    (Schedule("Once", TimeUnit.HOURLY, 1, maxrepeats=1), "once, at its begin time"),
    (Schedule("s", TimeUnit.DAILY, 1, anytime=False, onhour=2, onminute=0, maxrepeats=1), "once, at its begin time"),
    (Schedule("s", TimeUnit.DAILY, 1, maxrepeats=2), "every day"),
])
def test_a_schedule_says_how_often_it_runs_in_words(schedule, said):
    assert schedule.frequency == said
    # the pages' filter, which builds the same words through gettext, says it alike in English
    assert frequency(schedule) == said
