"""Size estimation (NetarchiveSuite's DomainConfiguration.getExpectedNumberOfObjects; docs/jobgen.md),
table-driven from the rules; defaults 10 / 38,000 / 5,000."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from harvestdef.model.status import StopReason
from scheduler.jobgen.expectation import (
    NO_HISTORY,
    ExpectationParams,
    HistoryRow,
    best_history,
    compare_inf,
    expected_objects,
    expected_objects_array,
    min_inf,
)

P = ExpectationParams()
C, S, T, U = (StopReason.DOWNLOAD_COMPLETE, StopReason.SIZE_LIMIT, StopReason.TIME_LIMIT,
              StopReason.DOWNLOAD_UNFINISHED)

# (why, HD objects, HD bytes, cfg maxobjects, cfg maxbytes, best (objects, bytes, stop) or None, expected)
CASES = [
    ("no history, no limits: maxDomainSize", -1, -1, -1, -1, None, 5000),
    ("no history, harvest bytes: 10 MB / 38,000", -1, 10_000_000, -1, -1, None, 263),
    ("no history, config objects cap the guess", -1, -1, 100, -1, None, 100),
    ("no history, config bytes when the harvest has none", -1, -1, -1, 3_800_000, None, 100),
    ("harvest object and byte limits: the smaller", 500, 38_000_000, -1, -1, None, 500),
    ("complete: min + (max-min)/10", -1, 100_000_000, -1, -1, (1000, 38_000_000, C), 1000 + 1631 // 10),
    ("size limit: min + (max-min)/2", -1, 100_000_000, -1, -1, (1000, 38_000_000, S), 1000 + 1631 // 2),
    ("unfinished is /2 too", -1, 100_000_000, -1, -1, (1000, 38_000_000, U), 1000 + 1631 // 2),
    ("fewer than 50 objects: small bytes/object not trusted", -1, 38_000_000, -1, -1, (10, 100, C), 10 + 990 // 10),
    ("50 objects: small bytes/object trusted", -1, 38_000_000, -1, 1_000_000_000, (50, 500, C),
     50 + (3_800_000 - 50) // 10),
    ("bytes/object at least 1", -1, 1000, -1, -1, (100, 0, C), 100 + 900 // 10),
    ("history above today's limit: the maximum", -1, 38_000_000, -1, -1, (10_000, 380_000_000, C), 1000),
    ("history above today's limit, /2 case", -1, 38_000_000, -1, -1, (10_000, 380_000_000, T), 1000),
    ("config bytes below harvest bytes cap the maximum (step 7)", -1, 38_000_000, -1, 3_800_000, None, 100),
    # 10 + (1000 - 10) / 2 = 505 before step 7 brings the maximum down to the config's 30 objects
    ("config objects below harvest limit cap the maximum", -1, 38_000_000, 30, -1, (10, 380_000, S), 30),
    ("-1 everywhere with history: maxDomainSize as maximum", -1, -1, -1, -1, (200, 7_600_000, C),
     200 + 4800 // 10),
    ("zero objects in history: default bytes/object", -1, 38_000_000, -1, -1, (0, 0, C), 100),
    ("zero byte limit", -1, 0, -1, -1, None, 0),
]


@pytest.mark.parametrize(("why", "hd_objects", "hd_bytes", "cfg_objects", "cfg_bytes", "best", "expected"), CASES,
                         ids=[case[0] for case in CASES])
def test_expected_objects(why, hd_objects, hd_bytes, cfg_objects, cfg_bytes, best, expected):
    objects, size, stop = best if best else (0, 0, NO_HISTORY)
    assert expected_objects(hd_objects, hd_bytes, cfg_objects, cfg_bytes, objects, size, stop, P) == expected


@pytest.mark.parametrize(("why", "hd_objects", "hd_bytes", "cfg_objects", "cfg_bytes", "best", "expected"), CASES,
                         ids=[case[0] for case in CASES])
def test_expected_objects_array_agrees_on_each_case(why, hd_objects, hd_bytes, cfg_objects, cfg_bytes, best,
                                                    expected):
    objects, size, stop = best if best else (0, 0, NO_HISTORY)
    column = [np.array([value], dtype=np.int64) for value in (cfg_objects, cfg_bytes, objects, size, stop)]
    assert expected_objects_array(hd_objects, hd_bytes, *column, P).tolist() == [expected]


# Values at and around every boundary the rules test: -1 (unlimited), 0, 1, 49/50 objects, the default
# bytes per object, and large figures.
EDGE_COUNTS = [-1, 0, 1, 2, 49, 50, 51, 999, 5000, 5001, 123_456, 10**9, 2**40]
EDGE_BYTES = [-1, 0, 1, 37_999, 38_000, 38_001, 3_800_000, 10**9, 2 * 10**9, 2**50]
STOPS = [NO_HISTORY, *(int(reason) for reason in StopReason)]


@pytest.mark.parametrize("params", [P, ExpectationParams(4, 1, 7), ExpectationParams(1, 10**6, -1),
                                    ExpectationParams(3, 38_000, 0)], ids=["defaults", "small", "unlimited", "zero"])
def test_expected_objects_array_agrees_with_expected_objects(params):
    """Every harvest limit pair against a random sample of configurations and history rows, edge values only,
    and the same sample with random figures in between."""
    draw = random.Random(13)
    rows = [(draw.choice(EDGE_COUNTS), draw.choice(EDGE_BYTES), max(0, draw.choice(EDGE_COUNTS)),
             max(0, draw.choice(EDGE_BYTES)), draw.choice(STOPS)) for _ in range(3000)]
    rows += [(draw.choice([-1, draw.randrange(0, 10**7)]), draw.choice([-1, draw.randrange(0, 10**11)]),
              draw.randrange(0, 10**6), draw.randrange(0, 10**12), draw.choice(STOPS)) for _ in range(3000)]
    columns = [np.array(column, dtype=np.int64) for column in zip(*rows, strict=True)]
    for hd_objects, hd_bytes in itertools.product([-1, 0, 1, 50, 10_000], [-1, 0, 1, 38_000, 10**9]):
        found = expected_objects_array(hd_objects, hd_bytes, *columns, params).tolist()
        wanted = [expected_objects(hd_objects, hd_bytes, *row, params) for row in rows]
        assert found == wanted, (hd_objects, hd_bytes)


def test_expected_objects_array_refuses_a_zero_divisor():
    column = np.zeros(1, dtype=np.int64)
    with pytest.raises(ZeroDivisionError):
        expected_objects_array(-1, -1, column, column, column, column, column, ExpectationParams(0, 38_000, 5000))


def test_error_factor_setting_is_used():
    params = ExpectationParams(error_factor_prev_result=4)
    assert expected_objects(-1, 100_000_000, -1, -1, 1000, 38_000_000, C, params) == 1000 + 1631 // 4


def test_best_history_takes_most_objects_and_older_on_ties():
    rows = [HistoryRow(5, 1, S), HistoryRow(10, 2, T), HistoryRow(10, 3, S)]
    assert best_history(rows) == HistoryRow(10, 3, S)


def test_best_history_stops_after_first_complete_row():
    assert best_history([HistoryRow(5, 1, S), HistoryRow(7, 2, C), HistoryRow(100, 3, S)]) == HistoryRow(7, 2, C)
    assert best_history([HistoryRow(50, 1, S), HistoryRow(7, 2, C), HistoryRow(100, 3, S)]) == HistoryRow(50, 1, S)
    assert best_history([]) is None


def test_inf_helpers():
    assert min_inf(-1, 5) == 5 and min_inf(5, -1) == 5 and min_inf(-1, -1) == -1 and min_inf(3, 5) == 3
    assert compare_inf(-1, -1) == 0 and compare_inf(5, -1) == -1 and compare_inf(-1, 5) == 1
    assert compare_inf(3, 5) == -1 and compare_inf(5, 3) == 1
