"""The expected number of objects of a domain configuration, NetarchiveSuite's rules exactly.

NetarchiveSuite computes this in ``DomainConfiguration.getExpectedNumberOfObjects`` with Java ``long``
arithmetic. Every division here has non-negative operands except ``(maximum - minimum) // k`` when an old
harvest exceeded today's limits; there the result is capped by ``maximum`` in the last step anyway, so
Python's floor division gives the same answers as Java's truncation.

This module is pure arithmetic: it never reads settings or the database.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

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
    """The three settings the estimate uses: jobGen.config's errorFactorPrevResult,
    expectedAverageBytesPerObject and maxDomainSize, with NetarchiveSuite's defaults."""

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


def _limits_to_objects(object_limit: np.ndarray | int, byte_limit: np.ndarray | int, per_object: np.ndarray,
                       max_domain_size: int) -> np.ndarray:
    """``limit_to_objects`` element by element."""
    objects_set, bytes_set = np.not_equal(object_limit, UNLIMITED), np.not_equal(byte_limit, UNLIMITED)
    from_bytes = np.floor_divide(byte_limit, per_object)
    return np.where(objects_set & bytes_set, np.minimum(object_limit, from_bytes),
                    np.where(objects_set, object_limit, np.where(bytes_set, from_bytes, max_domain_size)))


def expected_objects_array(max_objects_per_domain: int, max_bytes_per_domain: int, config_max_objects: np.ndarray,
                           config_max_bytes: np.ndarray, best_objects: np.ndarray, best_bytes: np.ndarray,
                           best_stop: np.ndarray, params: ExpectationParams) -> np.ndarray:
    """``expected_objects`` of many configurations at once, as int64 (NetarchiveSuite's ``long``): the same
    steps, each over whole columns, for the millions of configurations of a national snapshot.

    The column arguments are int64 arrays of one length; the two per-domain limits are the harvest's, the
    same for every configuration. ``tests/scheduler/test_expectation.py`` checks it against
    ``expected_objects``, edge values included.
    """
    if params.expected_average_bytes_per_object < 1 or params.error_factor_prev_result < 1:
        # expected_objects divides by both: raise as it does rather than let numpy return 0 with a warning
        raise ZeroDivisionError("expectedAverageBytesPerObject and errorFactorPrevResult must be at least 1")
    average = params.expected_average_bytes_per_object
    has_history = best_stop != NO_HISTORY
    # step 2: bytes per object
    trusted = has_history & (best_objects > 0)
    per_object = np.maximum(MIN_EXPECTATION, best_bytes // np.where(trusted, best_objects, 1))
    too_thin = ~trusted | ((per_object < average) & (best_objects < MIN_OBJECTS_TO_TRUST_SMALL_EXPECTATION))
    per_object = np.where(too_thin, average, per_object)
    # step 4: the largest number of objects the limits allow
    if max_objects_per_domain != UNLIMITED or max_bytes_per_domain != UNLIMITED:
        maximum = _limits_to_objects(max_objects_per_domain, max_bytes_per_domain, per_object,
                                     params.max_domain_size)
    else:
        configured = (config_max_objects != UNLIMITED) | (config_max_bytes != UNLIMITED)
        maximum = np.where(configured, _limits_to_objects(config_max_objects, config_max_bytes, per_object,
                                                          params.max_domain_size), params.max_domain_size)
    # steps 5 and 6
    divisor = np.where((best_stop == StopReason.DOWNLOAD_COMPLETE) & (maximum != UNLIMITED),
                       params.error_factor_prev_result, 2)
    with_history = best_objects + (maximum - best_objects) // divisor
    without_history = config_max_objects  # min_inf(max_domain_size, the configuration's object limit)
    if params.max_domain_size != UNLIMITED:
        without_history = np.where(config_max_objects == UNLIMITED, params.max_domain_size,
                                   np.minimum(params.max_domain_size, config_max_objects))
    expectation = np.where(has_history, with_history, without_history)
    # step 7: the configuration's own limits cap the maximum
    capped = (((config_max_objects != UNLIMITED) & (maximum > config_max_objects))
              | ((config_max_bytes != UNLIMITED) & (maximum > config_max_bytes // per_object)))
    maximum = np.where(capped, _limits_to_objects(config_max_objects, config_max_bytes, per_object,
                                                  params.max_domain_size), maximum)
    # step 8
    return np.minimum(expectation, maximum).astype(np.int64, copy=False)
