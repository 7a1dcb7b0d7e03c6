"""Packing rules (NetarchiveSuite's DefaultJobGenerator and FixedDomainConfigurationCountJobGenerator;
docs/jobgen.md) on in-memory candidates: the code both the database path and the planner use."""

from __future__ import annotations

import random

import numpy as np

from harvestdef.model.status import StopReason
from scheduler.jobgen.expectation import ExpectationParams, HistoryRow
from scheduler.jobgen.packing import (
    FIXED_COUNT_GENERATOR,
    Candidates,
    DefaultJobGenerator,
    FixedDomainConfigurationCountJobGenerator,
    HarvestLimits,
    PackingRules,
    job_generator,
)

SNAPSHOT_10MB = HarvestLimits(True, -1, 10_000_000)
SELECTIVE = HarvestLimits(False)


def candidates(limits, rows, params=None):
    """rows: (domain, template, max_objects, max_bytes, best or None[, name[, attributes]])"""
    found = Candidates(limits, params or ExpectationParams())
    domains: dict[str, int] = {}
    for number, row in enumerate(rows):
        domain, template, max_objects, max_bytes, best = row[:5]
        name = row[5] if len(row) > 5 else "defaultconfig"
        attributes = row[6] if len(row) > 6 else (20, 0, 1)
        found.add(number, domains.setdefault(domain, len(domains)), template, attributes, name, max_objects,
                  max_bytes, best)
    return found


def packed(rules, found):
    return [[found.config_id[i] for i in job.members] for job in job_generator(rules).pack(found)]


def test_sort_order_template_then_limit_desc_then_expectation_desc_then_position():
    found = candidates(SNAPSHOT_10MB, [
        ("a.dk", "t2", -1, -1, None),
        ("b.dk", "t1", -1, 1_000_000, None),                        # limit 1 MB: after the 10 MB ones
        ("c.dk", "t1", -1, -1, HistoryRow(10, 380_000, StopReason.DOWNLOAD_COMPLETE)),
        ("d.dk", "t1", -1, -1, None),                               # 263 expected
        ("e.dk", "t1", -1, 20_000_000, None),                       # effective limit 10 MB, 263 expected
        ("f.dk", "t1", -1, -1, None, "defaultconfig", (5, 0, 1)),   # other attributes: after (20, 0, 1)? no: 5 < 20
    ])
    order = DefaultJobGenerator(PackingRules()).order(found)
    assert [found.config_id[i] for i in order] == [5, 3, 4, 2, 1, 0]


def test_one_configuration_per_domain_per_job():
    found = candidates(SELECTIVE, [("a.dk", "t", -1, 5_000_000, None, "one"),
                                   ("a.dk", "t", -1, 5_000_000, None, "two"),
                                   ("b.dk", "t", -1, 5_000_000, None)])
    # greedy with one open job: a.dk's second configuration closes the first job
    assert packed(PackingRules(), found) == [[0], [1, 2]]


def test_snapshot_configuration_cap():
    found = candidates(SNAPSHOT_10MB, [(f"d{i}.dk", "t", -1, -1, None) for i in range(7)])
    assert [len(job) for job in packed(PackingRules(fixed_domain_count_snapshot=3), found)] == [3, 3, 1]
    assert [len(job) for job in packed(PackingRules(fixed_domain_count_snapshot=0), found)] == [7]


def test_cap_does_not_apply_to_selective_harvests():
    found = candidates(SELECTIVE, [(f"d{i}.dk", "t", -1, -1, None) for i in range(7)])
    assert [len(job) for job in packed(PackingRules(fixed_domain_count_snapshot=3), found)] == [7]


def test_snapshot_byte_limits_at_or_above_the_harvest_limit_share_a_job():
    found = candidates(SNAPSHOT_10MB, [("a.dk", "t", -1, -1, None), ("b.dk", "t", -1, 10_000_000, None),
                                       ("c.dk", "t", -1, 50_000_000, None), ("d.dk", "t", -1, 5_000_000, None),
                                       ("e.dk", "t", -1, 5_000_000, None), ("f.dk", "t", -1, 4_000_000, None)])
    jobs = list(DefaultJobGenerator(PackingRules()).pack(found))
    assert [[found.config_id[i] for i in job.members] for job in jobs] == [[0, 1, 2], [3, 4], [5]]
    assert [job.max_bytes_per_domain for job in jobs] == [10_000_000, 5_000_000, 4_000_000]
    assert [job.configuration_sets_byte_limit for job in jobs] == [False, True, True]


def test_selective_jobs_hold_identical_byte_limits_only():
    found = candidates(SELECTIVE, [("a.dk", "t", -1, -1, None), ("b.dk", "t", -1, -1, None),
                                   ("c.dk", "t", -1, 9_000_000, None), ("d.dk", "t", -1, 9_000_000, None),
                                   ("e.dk", "t", -1, 8_000_000, None)])
    assert packed(PackingRules(), found) == [[0, 1], [2, 3], [4]]


def test_split_by_object_limit():
    found = candidates(SELECTIVE, [("a.dk", "t", 100, 1_000, None), ("b.dk", "t", 100, 2_000, None),
                                   ("c.dk", "t", 50, 1_000, None)])
    assert packed(PackingRules(split_by_object_limit=True), found) == [[0, 1], [2]]
    # by bytes, b.dk's 2,000 bytes comes first and a.dk and c.dk share the 1,000-byte job
    assert packed(PackingRules(), found) == [[1], [0, 2]]


def test_max_total_size():
    # 263 expected each under a 10 MB harvest limit: 3 fit under 800, the fourth does not
    found = candidates(SNAPSHOT_10MB, [(f"d{i}.dk", "t", -1, -1, None) for i in range(5)])
    assert [len(job) for job in packed(PackingRules(max_total_size=800), found)] == [3, 2]


def test_relative_and_absolute_size_differences():
    big = HistoryRow(5000, 5000 * 38_000, StopReason.DOWNLOAD_COMPLETE)
    small = HistoryRow(10, 380_000, StopReason.DOWNLOAD_COMPLETE)
    limits = HarvestLimits(True, -1, -1)
    found = candidates(limits, [("a.dk", "t", -1, -1, big), ("b.dk", "t", -1, -1, small)])
    # expectations 5000 and 10 + 4990/10 = 509: ratio 9.8
    assert found.expected.tolist() == [5000, 509]
    assert len(packed(PackingRules(min_absolute_size_difference=0, max_relative_size_difference=9), found)) == 2
    assert len(packed(PackingRules(min_absolute_size_difference=0, max_relative_size_difference=10), found)) == 1
    # a difference up to minAbsoluteSizeDifference is always fine
    assert len(packed(PackingRules(min_absolute_size_difference=4491, max_relative_size_difference=2), found)) == 1
    assert len(packed(PackingRules(min_absolute_size_difference=4490, max_relative_size_difference=2), found)) == 2


def test_zero_expectation_counts_as_one_in_the_ratio():
    found = candidates(HarvestLimits(True, -1, -1), [("a.dk", "t", -1, -1, HistoryRow(300, 300 * 38_000, 0)),
                                                    ("b.dk", "t", 0, -1, None)])
    # expectations 300 + 470 = 770 and 0: ratio 770 / 1
    assert found.expected.tolist() == [770, 0]
    assert len(packed(PackingRules(min_absolute_size_difference=0, max_relative_size_difference=770), found)) == 1
    assert len(packed(PackingRules(min_absolute_size_difference=0, max_relative_size_difference=769), found)) == 2


def test_first_configuration_below_harvest_limit_widens_min_max_with_harvest_expectation():
    # Both configs: 3.8 MB limit under a 38 MB harvest. A: expectation 100 under the harvest's limits
    # (capped by step 7), 19 under the job's. B: 100 under both.
    limits = HarvestLimits(True, -1, 38_000_000)
    found = candidates(limits, [("a.dk", "t", -1, 3_800_000, HistoryRow(10, 380_000, 0)),
                                ("b.dk", "t", -1, 3_800_000, None)])
    assert found.expected.tolist() == [100, 100]
    jobs = list(DefaultJobGenerator(PackingRules(min_absolute_size_difference=0,
                                                 max_relative_size_difference=5)).pack(found))
    # range [19, 100] from the start, so B (100) fits although 100/19 > 5
    assert [len(job) for job in jobs] == [2]
    assert jobs[0].expected_total == 19 + 100
    assert (jobs[0].min_expectation, jobs[0].max_expectation) == (19, 100)


def test_attributes_and_templates_never_share_a_job():
    found = candidates(SELECTIVE, [("a.dk", "t", -1, -1, None), ("b.dk", "t", -1, -1, None, "c", (3, 0, 1)),
                                   ("c.dk", "u", -1, -1, None)])
    assert len(packed(PackingRules(), found)) == 3


def test_ties_keep_position_and_packing_is_deterministic():
    rows = [(f"d{i:03}.dk", "t", -1, [-1, 5_000_000, 20_000_000][i % 3],
             HistoryRow(i * 7 % 300, i * 1000, i % 7)) for i in range(300)]
    first = packed(PackingRules(max_total_size=5000), candidates(SNAPSHOT_10MB, rows))
    again = packed(PackingRules(max_total_size=5000), candidates(SNAPSHOT_10MB, rows))
    assert first == again
    assert sorted(i for job in first for i in job) == list(range(300))


def test_global_sort_is_independent_of_input_order_except_ties():
    # expectations 18 i + 500: no two alike, so no tie-break is involved
    rows = [(f"d{i:03}.dk", "t", -1, -1, HistoryRow(20 * i, 20 * i * 38_000, 0)) for i in range(200)]
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    limits = HarvestLimits(True, -1, -1)
    first = candidates(limits, rows)
    second = candidates(limits, shuffled)
    rules = PackingRules(max_total_size=3000)
    names = [[rows_domain(first, i) for i in job.members] for job in DefaultJobGenerator(rules).pack(first)]
    names2 = [[rows_domain(second, i) for i in job.members] for job in DefaultJobGenerator(rules).pack(second)]
    assert names == names2 and len(names) > 1


def rows_domain(found, index):
    return (found.best_objects[index], found.best_bytes[index])


def test_fixed_count_generator_groups_by_template_and_limits():
    rows = [(f"d{i}.dk", "t", -1, [1000, 2000][i % 2], None, f"cfg{i % 3}") for i in range(10)]
    rows += [("z1.dk", "t", 0, 1000, None), ("z2.dk", "t", 5, 0, None)]  # zero budgets share a key
    found = candidates(SELECTIVE, rows)
    generator = FixedDomainConfigurationCountJobGenerator(PackingRules(generator=FIXED_COUNT_GENERATOR,
                                                                       fixed_domain_count_focused=3))
    jobs = list(generator.pack(found))
    for job in jobs:
        assert len({(found.max_objects[i] == 0 or found.max_bytes[i] == 0) or found.max_bytes[i]
                    for i in job.members}) == 1
        assert len(job) <= 3
    assert sorted(found.config_id[i] for job in jobs for i in job.members) == list(range(12))
    zero_jobs = [job for job in jobs if found.config_id[job.members[0]] in (10, 11)]
    assert len(zero_jobs) == 1 and len(zero_jobs[0]) == 2
    # sorted by configuration name within a key: cfg0 first
    first_of_1000 = next(job for job in jobs if found.max_bytes[job.members[0]] == 1000)
    assert found.names[found.name[first_of_1000.members[0]]] == "cfg0"


def test_fixed_count_zero_focused_count_closes_after_every_configuration():
    found = candidates(SELECTIVE, [(f"d{i}.dk", "t", -1, -1, None) for i in range(4)])
    rules = PackingRules(generator=FIXED_COUNT_GENERATOR, fixed_domain_count_focused=0)
    assert [len(job) for job in job_generator(rules).pack(found)] == [1, 1, 1, 1]


def _reference_order(found: Candidates, rules: PackingRules) -> list[int]:
    """CompareConfigsDesc written out plainly: template and attributes ascending, the (capped) limit descending
    with unlimited first, the expectation descending, then position."""
    limits = found.limits
    forced = limits.max_objects_per_domain if rules.split_by_object_limit else limits.max_bytes_per_domain
    column = found.max_objects if rules.split_by_object_limit else found.max_bytes

    def key(index: int) -> tuple:
        limit = column[index]
        if forced != -1 and (limit == -1 or limit > forced):
            limit = forced
        return (found.groups[found.group[index]], limit != -1, -limit, -found.expected[index], index)

    return sorted(range(len(found)), key=key)


def test_order_agrees_with_compare_configs_desc_written_out():
    draw = random.Random(29)
    limit_values = [-1, -1, 0, 1, 100, 5000, 10**6, 10**7, 10**9, 2**62]
    for limits in (SNAPSHOT_10MB, SELECTIVE, HarvestLimits(True, 500, -1), HarvestLimits(True, 0, 0)):
        rows = [(f"d{draw.randrange(300)}.dk", draw.choice(["b", "a", "c"]), draw.choice(limit_values),
                 draw.choice(limit_values),
                 draw.choice([None, HistoryRow(draw.randrange(10**5), draw.randrange(10**10),
                                               draw.choice(list(StopReason)))]),
                 "defaultconfig", draw.choice([(20, 0, 1), (5, 1, 0), (20, 0, 1)])) for _ in range(2000)]
        found = candidates(limits, rows)
        for rules in (PackingRules(), PackingRules(split_by_object_limit=True)):
            assert list(DefaultJobGenerator(rules).order(found)) == _reference_order(found, rules)


def test_fixed_count_order_is_by_name_then_position():
    draw = random.Random(31)
    rows = [(f"d{i}.dk", "t", -1, -1, None, draw.choice(["b", "a", "ærø", "Z", "a2"])) for i in range(500)]
    found = candidates(SELECTIVE, rows)
    order = list(FixedDomainConfigurationCountJobGenerator(PackingRules()).order(found))
    assert order == sorted(range(500), key=lambda index: (found.names[found.name[index]], index))


def test_extend_by_column_adds_what_add_flat_adds():
    draw = random.Random(37)
    limits = HarvestLimits(True, 2000, 10**8)
    one_by_one, at_once = Candidates(limits, ExpectationParams()), Candidates(limits, ExpectationParams())
    rows = [(config_id, draw.randrange(100), draw.choice([-1, 0, 700, 10**4]), draw.choice([-1, 0, 10**6, 10**9]),
             draw.randrange(10**5), draw.randrange(10**10), draw.choice([-1, *map(int, StopReason)]))
            for config_id in range(3000)]
    group = at_once.group_number("t", (1, 2))
    for config_id, domain, max_objects, max_bytes, best_objects, best_bytes, best_stop in rows:
        one_by_one.add_flat(config_id, domain, "t", (1, 2), "defaultconfig", max_objects, max_bytes, best_objects,
                            best_bytes, best_stop)
    columns = list(zip(*rows, strict=True))
    by_name = dict(zip(("config_id", "domain", "max_objects", "max_bytes", "best_objects", "best_bytes", "best_stop"),
                       map(np.array, columns), strict=True))
    by_name["group"] = np.full(len(rows), group)
    by_name["name"] = np.array(at_once.name_numbers(["defaultconfig"] * len(rows)))
    at_once.extend_by_column(by_name.pop)
    assert not by_name  # each column asked for once
    for column in ("config_id", "domain", "group", "name", "max_objects", "max_bytes", "best_objects", "best_bytes",
                   "best_stop", "expected"):
        assert getattr(at_once, column) == getattr(one_by_one, column), column
    assert at_once.groups == one_by_one.groups and at_once.names == one_by_one.names
