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
