"""The figures' filters."""

from webui.formatting import count, size


def test_counts_get_separators_and_minus_one_is_unlimited():
    assert count(1234567) == "1,234,567"
    assert count(-1) == "unlimited"
    assert count(None) == ""
    assert count(0) == "0"


def test_sizes_take_the_largest_unit_that_keeps_them_at_least_one():
    assert size(999) == "999 bytes"
    assert size(1_000) == "1.0 KB"
    assert size(1_500_000_000) == "1.5 GB"
    assert size(-1) == "unlimited"
    assert size(None) == ""


def test_times_read_alike_whether_stored_or_sent_as_iso_text():
    from datetime import UTC, datetime, timedelta, timezone

    from webui.formatting import when
    stored = datetime(2026, 11, 23, 4, 1, 55, 390191, tzinfo=UTC)
    assert when(stored) == "2026-11-23 04:01:55 UTC"
    assert when("2026-11-23T04:01:55.390191Z") == "2026-11-23 04:01:55 UTC"
    assert when(stored.astimezone(timezone(timedelta(hours=1)))) == "2026-11-23 04:01:55 UTC"
    assert when(None) == ""
