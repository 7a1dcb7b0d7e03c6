"""The expected number of objects of a domain configuration (reference §2.5), NetarchiveSuite's rules exactly.

NetarchiveSuite computes this in ``DomainConfiguration.getExpectedNumberOfObjects`` with Java ``long``
arithmetic. Every division here has non-negative operands except ``(maximum - minimum) // k`` when an old
harvest exceeded today's limits; there the result is capped by ``maximum`` in the last step anyway, so
Python's floor division gives the same answers as Java's truncation (reference §2.5, last paragraph).

This module is pure arithmetic: it never reads settings or the database.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harvestdef.model.status import StopReason

UNLIMITED = -1
# NetarchiveSuite's constants (DomainConfiguration): fewer objects than this do not make a small
# bytes-per-object figure trustworthy, and an object is never assumed smaller than one byte.
MIN_OBJECTS_TO_TRUST_SMALL_EXPECTATION = 50
MIN_EXPECTATION = 1
# best_stop value of a configuration that has no history at all
NO_HISTORY = -1


def min_inf(a: int, b: int) -> int:
    """The smaller of two limits, -1 meaning unlimited (NumberUtils.minInf)."""
    if a == UNLIMITED:
        return b
    if b == UNLIMITED:
        return a
    return min(a, b)


def compare_inf(a: int, b: int) -> int:
    """-1, 0 or 1 as ``a`` is smaller than, equal to or larger than ``b``; -1 counts as infinite."""
    if a == b:
        return 0
    if a == UNLIMITED:
        return 1
    if b == UNLIMITED:
        return -1
    return -1 if a < b else 1


@dataclass(frozen=True)
class ExpectationParams:
    """The three settings the estimate uses (reference §2.7)."""

    error_factor_prev_result: int = 10
    expected_average_bytes_per_object: int = 38_000
    max_domain_size: int = 5000


@dataclass(frozen=True)
class HistoryRow:
    """One historyinfo row of a configuration: what one earlier harvest got."""

    objects: int
    bytes: int
    stop_reason: int


def best_history(rows_newest_first: Iterable[HistoryRow]) -> HistoryRow | None:
    """The row the estimate trusts (DomainHistory.getBestHarvestInfoExpectation).

    Rows come newest first. The row with the most objects wins; on a tie the older row wins (NetarchiveSuite
    replaces on ``>=`` while walking back in time). The walk stops after the first DOWNLOAD_COMPLETE row:
    a complete harvest makes everything older irrelevant.
    """
    best: HistoryRow | None = None
    for row in rows_newest_first:
        if best is None or row.objects >= best.objects:
            best = row
        if row.stop_reason == StopReason.DOWNLOAD_COMPLETE:
            break
    return best


def bytes_per_object(best_objects: int, best_bytes: int, best_stop: int, params: ExpectationParams) -> int:
    """Step 2: bytes per object from the best row, or the setting when the history is missing or too thin."""
    if best_stop != NO_HISTORY and best_objects > 0:
        per_object = max(MIN_EXPECTATION, best_bytes // best_objects)
        is_small = per_object < params.expected_average_bytes_per_object
        if is_small and best_objects < MIN_OBJECTS_TO_TRUST_SMALL_EXPECTATION:
            return params.expected_average_bytes_per_object
        return per_object
    return params.expected_average_bytes_per_object


def limit_to_objects(object_limit: int, byte_limit: int, per_object: int, max_domain_size: int) -> int:
    """Step 3: an object count from an object limit and a byte limit (either may be -1)."""
    if object_limit != UNLIMITED and byte_limit != UNLIMITED:
        return min(object_limit, byte_limit // per_object)
    if object_limit != UNLIMITED:
        return object_limit
    if byte_limit != UNLIMITED:
        return byte_limit // per_object
    return max_domain_size


def expected_objects(max_objects_per_domain: int, max_bytes_per_domain: int, config_max_objects: int,
                     config_max_bytes: int, best_objects: int, best_bytes: int, best_stop: int,
                     params: ExpectationParams) -> int:
    """The expectation of a configuration under the per-domain limits ``max_objects_per_domain`` and
    ``max_bytes_per_domain``.

    ``best_*`` describe the best history row (``best_history``); ``best_stop`` is NO_HISTORY without one.
    Flat integer arguments, because this runs millions of times per snapshot.
    """
    per_object = bytes_per_object(best_objects, best_bytes, best_stop, params)
    # step 4: the largest number of objects the limits allow
    if max_objects_per_domain != UNLIMITED or max_bytes_per_domain != UNLIMITED:
        maximum = limit_to_objects(max_objects_per_domain, max_bytes_per_domain, per_object, params.max_domain_size)
    elif config_max_objects != UNLIMITED or config_max_bytes != UNLIMITED:
        maximum = limit_to_objects(config_max_objects, config_max_bytes, per_object, params.max_domain_size)
    else:
        maximum = params.max_domain_size
    # steps 5 and 6
    if best_stop != NO_HISTORY:
        minimum = best_objects
        if best_stop == StopReason.DOWNLOAD_COMPLETE and maximum != UNLIMITED:
            expectation = minimum + (maximum - minimum) // params.error_factor_prev_result
        else:
            # NetarchiveSuite hard-codes this 2; errorFactorBestGuess is documented but never read.
            expectation = minimum + (maximum - minimum) // 2
    else:
        expectation = min_inf(params.max_domain_size, config_max_objects)
    # step 7: the configuration's own limits cap the maximum
    if ((config_max_objects != UNLIMITED and maximum > config_max_objects)
            or (config_max_bytes != UNLIMITED and maximum > config_max_bytes // per_object)):
        maximum = limit_to_objects(config_max_objects, config_max_bytes, per_object, params.max_domain_size)
    # step 8
    return min(expectation, maximum)
