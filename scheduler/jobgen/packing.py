"""Packing domain configurations into jobs: NetarchiveSuite's DefaultJobGenerator and
FixedDomainConfigurationCountJobGenerator. The one implementation, used by the database path and by the
offline planner alike.

Configurations are held as ``Candidates``: one row of a few machine integers per configuration in
``array`` columns (about 70 bytes each), so a national snapshot of millions of configurations fits in a few
hundred MB. The sort is global, over every configuration of the run (NetarchiveSuite sorts each subset of
10,000 on its own, which makes packing depend on database row order: docs/jobgen.md, What we do
differently from NetarchiveSuite). Ties break on the candidate's position: the database path adds
candidates ordered by domain name then configuration name; the planner adds them in input order, as
NetarchiveSuite's stable sort keeps them.

This module never touches the database or the settings (``PackingRules.from_settings`` picks the values).
"""

from __future__ import annotations

import typing
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from harvestdef.settings import JobGeneratorClass, JobGenSettings
from scheduler.jobgen.expectation import (
    NO_HISTORY,
    UNLIMITED,
    ExpectationParams,
    HistoryRow,
    compare_inf,
    expected_objects,
    expected_objects_array,
)

DEFAULT_GENERATOR: JobGeneratorClass = "DefaultJobGenerator"
FIXED_COUNT_GENERATOR: JobGeneratorClass = "FixedDomainConfigurationCountJobGenerator"
GENERATORS: tuple[JobGeneratorClass, ...] = typing.get_args(JobGeneratorClass)

_I63 = (1 << 63) - 1
_EXPECTATION_CHUNK = 100_000
# The columns of Candidates that extend_by_column fills, in add_flat's order (the expectation is computed),
# and those the expectation is computed from, in expected_objects_array's order.
COLUMNS = ("config_id", "domain", "group", "name", "max_objects", "max_bytes", "best_objects", "best_bytes",
           "best_stop")
_EXPECTATION_INPUTS = ("max_objects", "max_bytes", "best_objects", "best_bytes", "best_stop")


@dataclass(frozen=True)
class PackingRules:
    """The job-generation settings packing obeys: NetarchiveSuite's jobGen.config (docs/jobgen.md, Commands)."""

    # Checked once where it comes in: by the settings loader, and by the planner for its JSON input.
    generator: JobGeneratorClass = DEFAULT_GENERATOR
    split_by_object_limit: bool = False
    max_relative_size_difference: int = 100
    min_absolute_size_difference: int = 2000
    max_total_size: int = 8_000_000
    fixed_domain_count_snapshot: int = 10_000
    fixed_domain_count_focused: int = 0
    exclude_domains_with_zero_budget: bool = False
    expectation: ExpectationParams = field(default_factory=ExpectationParams)

    @classmethod
    def from_settings(cls, jobgen: JobGenSettings) -> PackingRules:
        return cls(
            generator=jobgen.generatorClass,
            split_by_object_limit=jobgen.splitByObjectLimit,
            max_relative_size_difference=jobgen.maxRelativeSizeDifference,
            min_absolute_size_difference=jobgen.minAbsoluteSizeDifference,
            max_total_size=jobgen.maxTotalSize,
            fixed_domain_count_snapshot=jobgen.fixedDomainCountSnapshot,
            fixed_domain_count_focused=jobgen.fixedDomainCountFocused,
            exclude_domains_with_zero_budget=jobgen.excludeDomainsWithZeroBudget,
            expectation=ExpectationParams(
                error_factor_prev_result=jobgen.errorFactorPrevResult,
                expected_average_bytes_per_object=jobgen.expectedAverageBytesPerObject,
                max_domain_size=jobgen.maxDomainSize,
            ),
        )


@dataclass(frozen=True)
class HarvestLimits:
    """A harvest's kind and the per-domain limits it forces on its jobs (AbstractJobGenerator.getNewJob).

    A snapshot forces its own maxobjects/maxbytes/maxjobrunningtime; selective and event harvests force
    nothing (-1, -1, 0), whatever their definition says.
    """

    snapshot: bool
    max_objects: int = UNLIMITED
    max_bytes: int = UNLIMITED
    max_job_running_time: int = 0

    @property
    def max_objects_per_domain(self) -> int:
        return self.max_objects if self.snapshot else UNLIMITED

    @property
    def max_bytes_per_domain(self) -> int:
        return self.max_bytes if self.snapshot else UNLIMITED

    @property
    def forced_max_running_time(self) -> int:
        return self.max_job_running_time if self.snapshot else 0


class Candidates:
    """The configurations of one run, column-wise; a configuration is known by its index (add order)."""

    def __init__(self, limits: HarvestLimits, params: ExpectationParams) -> None:
        self.limits = limits
        self.params = params
        self.config_id = array("q")
        self.domain = array("q")          # any integer naming the domain (domain_id, or the planner's number)
        self.group = array("l")           # index into groups: (template name, crawl attribute values)
        self.name = array("l")            # index into names: the configuration's name
        self.max_objects = array("q")
        self.max_bytes = array("q")
        self.best_objects = array("q")
        self.best_bytes = array("q")
        self.best_stop = array("b")       # NO_HISTORY without a best history row
        self.expected = array("q")        # expectation under the harvest's forced limits: the sort key
        self.groups: list[tuple[str, tuple[int, ...]]] = []
        self._group_index: dict[tuple[str, tuple[int, ...]], int] = {}
        self.names: list[str] = []
        self._name_index: dict[str, int] = {}
        self._no_history: dict[tuple[int, int], int] = {}
        # the harvest's forced limits, read once: add_flat runs once per configuration
        self._forced_objects, self._forced_bytes = limits.max_objects_per_domain, limits.max_bytes_per_domain

    def __len__(self) -> int:
        return len(self.config_id)

    def add(self, config_id: int, domain: int, template: str, attributes: tuple[int, ...], name: str,
            max_objects: int, max_bytes: int, best: HistoryRow | None) -> int:
        """Add one configuration with its best history row (or None); returns its index."""
        if best is None:
            return self.add_flat(config_id, domain, template, attributes, name, max_objects, max_bytes,
                                 0, 0, NO_HISTORY)
        return self.add_flat(config_id, domain, template, attributes, name, max_objects, max_bytes,
                             best.objects, best.bytes, int(best.stop_reason))

    def group_number(self, template: str, attributes: tuple[int, ...]) -> int:
        """The number of the group (template, crawl attribute values), made on first use."""
        group_key = (template, attributes)
        group = self._group_index.get(group_key)
        if group is None:
            group = self._group_index[group_key] = len(self.groups)
            self.groups.append(group_key)
        return group

    def name_numbers(self, names: Sequence[str]) -> list[int]:
        """The numbers of configuration names, made on first use."""
        index = self._name_index
        for name in set(names) - index.keys():
            index[name] = len(self.names)
            self.names.append(name)
        return list(map(index.__getitem__, names))

    def extend_by_column(self, column: Callable[[str], np.ndarray]) -> None:
        """Add many configurations at once, a column at a time: ``column(name)`` gives the named column (each
        of ``COLUMNS``, ``add_flat``'s arguments with groups and names as the numbers ``group_number`` and
        ``name_numbers`` give) of every configuration added, in order. It is asked once per name, so that its
        maker can free each of its own columns as soon as this one holds it: millions of configurations are
        never held twice. The expectations are computed column-wise (``expected_objects_array``), the same
        figures ``add_flat`` computes one by one."""
        inputs = {name: column(name) for name in _EXPECTATION_INPUTS}
        count = len(inputs["max_objects"])
        for start in range(0, count, _EXPECTATION_CHUNK):
            # a chunk at a time: the computation's intermediate columns are as long as its input
            self.expected.frombytes(expected_objects_array(
                self._forced_objects, self._forced_bytes,
                *(np.asarray(inputs[name][start:start + _EXPECTATION_CHUNK], dtype=np.int64)
                  for name in _EXPECTATION_INPUTS),
                self.params).tobytes())
        for name in COLUMNS:
            target = getattr(self, name)
            values = inputs.pop(name) if name in inputs else column(name)
            # numpy's type codes are the array module's, so the bytes are the array's own items
            target.frombytes(np.asarray(values, dtype=np.dtype(target.typecode)).tobytes())
            del values

    def add_flat(self, config_id: int, domain: int, template: str, attributes: tuple[int, ...], name: str,
                 max_objects: int, max_bytes: int, best_objects: int, best_bytes: int, best_stop: int) -> int:
        """``add`` with the best history row as three integers (``best_stop`` NO_HISTORY without one).

        Runs once per configuration of a national snapshot, hence plain integers and the memo of
        expectations without history (they depend on the two limits only).
        """
        group = self.group_number(template, attributes)
        name_number = self._name_index.get(name)
        if name_number is None:
            name_number = self._name_index[name] = len(self.names)
            self.names.append(name)
        if best_stop == NO_HISTORY:
            expected = self._no_history.get((max_objects, max_bytes))
            if expected is None:
                expected = self._no_history[(max_objects, max_bytes)] = expected_objects(
                    self._forced_objects, self._forced_bytes, max_objects, max_bytes, 0, 0, NO_HISTORY, self.params)
        else:
            expected = expected_objects(self._forced_objects, self._forced_bytes, max_objects, max_bytes,
                                        best_objects, best_bytes, best_stop, self.params)
        self.config_id.append(config_id)
        self.domain.append(domain)
        self.group.append(group)
        self.name.append(name_number)
        self.max_objects.append(max_objects)
        self.max_bytes.append(max_bytes)
        self.best_objects.append(best_objects)
        self.best_bytes.append(best_bytes)
        self.best_stop.append(best_stop)
        self.expected.append(expected)
        return len(self.config_id) - 1

    def expectation(self, index: int, max_objects_per_domain: int, max_bytes_per_domain: int) -> int:
        """The expectation of candidate ``index`` under other per-domain limits (a job's effective ones)."""
        return expected_objects(max_objects_per_domain, max_bytes_per_domain, self.max_objects[index],
                                self.max_bytes[index],
                                self.best_objects[index], self.best_bytes[index], self.best_stop[index],
                                self.params)

    def template_name(self, index: int) -> str:
        return self.groups[self.group[index]][0]

    def attributes(self, index: int) -> tuple[int, ...]:
        return self.groups[self.group[index]][1]


@dataclass
class PackedJob:
    """A job as packing made it: its limits and the indexes of its configurations, in the order added."""

    template_name: str
    attributes: tuple[int, ...]
    max_objects_per_domain: int
    max_bytes_per_domain: int
    max_running_time: int
    configuration_sets_object_limit: bool
    configuration_sets_byte_limit: bool
    members: array = field(default_factory=lambda: array("q"))
    expected_total: int = 0
    min_expectation: int = 0
    max_expectation: int = 0
    group: int = 0
    domains: set[int] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.members)


def _new_job(candidates: Candidates, index: int) -> PackedJob:
    """AbstractJobGenerator.getNewJob + the Job constructor: effective limits from the first configuration."""
    limits = candidates.limits
    max_objects, sets_objects = limits.max_objects_per_domain, False
    max_bytes, sets_bytes = limits.max_bytes_per_domain, False
    if compare_inf(candidates.max_objects[index], max_objects) < 0:
        max_objects, sets_objects = candidates.max_objects[index], True
    if compare_inf(candidates.max_bytes[index], max_bytes) < 0:
        max_bytes, sets_bytes = candidates.max_bytes[index], True
    # A 0 byte limit forces 0 objects and vice versa (Job.setMaxBytesPerDomain / setMaxObjectsPerDomain).
    if max_bytes == 0:
        max_objects = 0
    elif max_objects == 0:
        max_bytes = 0
    template, attributes = candidates.groups[candidates.group[index]]
    job = PackedJob(template, attributes, max_objects, max_bytes, limits.forced_max_running_time,
                    sets_objects, sets_bytes, group=candidates.group[index])
    # As NetarchiveSuite's DefaultJobGenerator does: min/max start from the expectation under the harvest's
    # limits, then the Job constructor's addConfiguration widens them with the one under the job's limits;
    # only the latter counts in the total.
    expected_under_harvest = candidates.expected[index]
    job.min_expectation = job.max_expectation = expected_under_harvest
    _add(job, candidates, index, candidates.expectation(index, max_objects, max_bytes))
    return job


def _job_expectation(job: PackedJob, candidates: Candidates, index: int) -> int:
    """The expectation under the job's effective limits; the sort key already holds it when those are the
    harvest's own (the usual case), which saves recomputing it for millions of configurations."""
    limits = candidates.limits
    if (job.max_objects_per_domain, job.max_bytes_per_domain) == (limits.max_objects_per_domain,
                                                                  limits.max_bytes_per_domain):
        return candidates.expected[index]
    return candidates.expectation(index, job.max_objects_per_domain, job.max_bytes_per_domain)


def _add(job: PackedJob, candidates: Candidates, index: int, expectation: int) -> None:
    job.members.append(index)
    job.domains.add(candidates.domain[index])
    job.expected_total += expectation
    job.min_expectation = min(job.min_expectation, expectation)
    job.max_expectation = max(job.max_expectation, expectation)


def _closed(job: PackedJob) -> PackedJob:
    job.domains = set()  # only the open job needs it; millions of ids otherwise stay alive
    return job


class DefaultJobGenerator:
    """NetarchiveSuite's DefaultJobGenerator: sort globally, then pack greedily with canAccept."""

    def __init__(self, rules: PackingRules) -> None:
        self.rules = rules

    def order(self, candidates: Candidates) -> array:
        """Candidate indexes in CompareConfigsDesc order, ties by position.

        One stable numpy sort over three keys: the group's rank, the limit descending (unlimited first), the
        expectation descending. The limit is the byte limit, or the object limit under splitByObjectLimit,
        capped by the harvest's forced one: sorting by the limit compatibility is judged on keeps
        equal-limit configurations together in both modes. Both descending keys are ``2**63 - 1 - value``
        in 64-bit unsigned arithmetic, which orders every int64 value as Python's integers would.
        """
        limits = candidates.limits
        if self.rules.split_by_object_limit:
            config_limits, forced = candidates.max_objects, limits.max_objects_per_domain
        else:
            config_limits, forced = candidates.max_bytes, limits.max_bytes_per_domain
        limit = _numbers(config_limits)
        if forced != UNLIMITED:
            limit = np.where((limit == UNLIMITED) | (limit > forced), forced, limit)
        top = np.uint64(_I63)
        limit_key = np.where(limit == UNLIMITED, np.uint64(0), top - limit.view(np.uint64))
        expected_key = top - _numbers(candidates.expected).view(np.uint64)
        ranks = np.asarray(_group_ranks(candidates), dtype=np.int64)[_numbers(candidates.group)]
        return _index_array(np.lexsort((expected_key, limit_key, ranks)))

    def pack(self, candidates: Candidates) -> Iterator[PackedJob]:
        """The jobs, in the order NetarchiveSuite would make them.

        Each configuration goes into the open job if the job accepts it (canAccept): same template and
        crawl attributes, no configuration of its domain yet, below fixedDomainCountSnapshot, a limit at
        least the job's (equal to it when a configuration set the job's limit), the total within
        maxTotalSize, and the expectations within maxRelativeSizeDifference of each other unless they
        differ by at most minAbsoluteSizeDifference; otherwise it opens a new job. Written out with the
        open job's state in local variables: the loop runs once per configuration of a national snapshot,
        where attribute lookups and calls are most of its cost. The open job's totals are written back to
        it when it closes.
        """
        rules, limits = self.rules, candidates.limits
        group, domain, expected = candidates.group, candidates.domain, candidates.expected
        harvest_limits = (limits.max_objects_per_domain, limits.max_bytes_per_domain)
        config_limit = candidates.max_objects if rules.split_by_object_limit else candidates.max_bytes
        cap = rules.fixed_domain_count_snapshot if limits.snapshot and rules.fixed_domain_count_snapshot > 0 else 0
        max_total, min_difference = rules.max_total_size, rules.min_absolute_size_difference
        max_relative = rules.max_relative_size_difference
        job: PackedJob | None = None
        # the open job's state
        job_group = job_limit = total = low = high = 0
        fixed_limit = own_limits = False
        members: array = array("q")
        domains: set[int] = set()
        for index in self.order(candidates):
            if job is not None and group[index] == job_group and domain[index] not in domains \
                    and not (cap and len(members) >= cap):
                limit = config_limit[index]
                # compare_inf(limit, job_limit) >= 0, and == 0 when a configuration set the job's limit
                if limit == job_limit or not (fixed_limit or (limit != UNLIMITED and (
                        job_limit == UNLIMITED or limit < job_limit))):
                    expectation = candidates.expectation(index, *own_limits) if own_limits else expected[index]
                    if not (total > 0 and total + expectation > max_total):
                        accepted = low <= expectation <= high
                        if not accepted:
                            new_low = expectation if expectation < low else low
                            new_high = expectation if expectation > high else high
                            difference = new_high - new_low
                            accepted = (difference == 0 or difference <= min_difference
                                        or new_high / (new_low or 1) <= max_relative)
                        if accepted:
                            members.append(index)
                            domains.add(domain[index])
                            total += expectation
                            if expectation < low:
                                low = expectation
                            elif expectation > high:
                                high = expectation
                            continue
            if job is not None:
                job.expected_total, job.min_expectation, job.max_expectation = total, low, high
                yield _closed(job)
            job = _new_job(candidates, index)
            job_group, total, low, high = job.group, job.expected_total, job.min_expectation, job.max_expectation
            members, domains = job.members, job.domains
            if rules.split_by_object_limit:
                job_limit, fixed_limit = job.max_objects_per_domain, job.configuration_sets_object_limit
            else:
                job_limit, fixed_limit = job.max_bytes_per_domain, job.configuration_sets_byte_limit
            job_limits = (job.max_objects_per_domain, job.max_bytes_per_domain)
            # the sort key holds the expectation under the harvest's limits, the usual case
            own_limits = job_limits if job_limits != harvest_limits else False
        if job is not None:
            job.expected_total, job.min_expectation, job.max_expectation = total, low, high
            yield _closed(job)


class FixedDomainConfigurationCountJobGenerator:
    """BnF's generator in NetarchiveSuite: a fixed number of configurations per job, no size estimation.

    Configurations are grouped by (template, crawl attributes, maxObjects, maxBytes), every zero-budget
    configuration sharing one key per template; each key has one open job, closed when it holds
    fixedDomainCountSnapshot (snapshot) or fixedDomainCountFocused (selective) configurations. Crawl
    attributes are part of the key because a job has one set of them.
    """

    def __init__(self, rules: PackingRules) -> None:
        self.rules = rules

    def order(self, candidates: Candidates) -> array:
        """Sorted by configuration name, ties by position."""
        name_ranks = np.empty(len(candidates.names), dtype=np.int64)
        name_ranks[sorted(range(len(candidates.names)), key=candidates.names.__getitem__)] = np.arange(
            len(candidates.names))
        return _index_array(np.argsort(name_ranks[_numbers(candidates.name)], kind="stable"))

    def pack(self, candidates: Candidates) -> Iterator[PackedJob]:
        cap = (self.rules.fixed_domain_count_snapshot if candidates.limits.snapshot
               else self.rules.fixed_domain_count_focused)
        open_jobs: dict[tuple[int, int, int], PackedJob] = {}
        for index in self.order(candidates):
            max_objects, max_bytes = candidates.max_objects[index], candidates.max_bytes[index]
            if max_objects == 0 or max_bytes == 0:
                max_objects = max_bytes = 0
            key = (candidates.group[index], max_objects, max_bytes)
            job = open_jobs.get(key)
            if job is not None and candidates.domain[index] not in job.domains:
                _add(job, candidates, index, _job_expectation(job, candidates, index))
            else:
                if job is not None:
                    yield _closed(job)
                job = open_jobs[key] = _new_job(candidates, index)
            if len(job) >= cap:
                yield _closed(open_jobs.pop(key))
        for job in open_jobs.values():
            yield _closed(job)


def job_generator(rules: PackingRules) -> DefaultJobGenerator | FixedDomainConfigurationCountJobGenerator:
    """The generator the ``jobGen.class`` setting names."""
    if rules.generator == FIXED_COUNT_GENERATOR:
        return FixedDomainConfigurationCountJobGenerator(rules)
    return DefaultJobGenerator(rules)


def _numbers(column: array) -> np.ndarray:
    """An array column as numpy sees it, without a copy."""
    return np.frombuffer(column, dtype=np.dtype(column.typecode))


def _index_array(indexes: np.ndarray) -> array:
    """Candidate indexes as the array packing iterates (an array's items come out as plain ints)."""
    order = array("q")
    order.frombytes(indexes.astype(np.int64, copy=False).tobytes())
    return order


def _group_ranks(candidates: Candidates) -> list[int]:
    """Rank of each group: template name ascending, then the crawl attribute values (EAV.compare)."""
    order = sorted(range(len(candidates.groups)), key=candidates.groups.__getitem__)
    ranks = [0] * len(order)
    for rank, group in enumerate(order):
        ranks[group] = rank
    return ranks
