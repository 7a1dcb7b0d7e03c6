"""JobStatus and StopReason with NetarchiveSuite's ordinals, and the one table of allowed job transitions.

The ordinals are stored in jobs.status and historyinfo.stopreason and must never change (reference §4.4,
§6.5). ``check_job_transition`` is the only judge of a status change; the repository function that
changes a job's status calls it and then updates with ``WHERE status = :from AND attempt_id = :attempt``
so a stale attempt changes nothing.
"""

from __future__ import annotations

from enum import IntEnum

from harvestdef.errors import IllegalTransitionError


class JobStatus(IntEnum):
    NEW = 0
    SUBMITTED = 1
    STARTED = 2
    DONE = 3
    FAILED = 4
    RESUBMITTED = 5
    FAILED_REJECTED = 6

    def __str__(self) -> str:
        return self.name


class StopReason(IntEnum):
    DOWNLOAD_COMPLETE = 0
    OBJECT_LIMIT = 1
    SIZE_LIMIT = 2
    CONFIG_SIZE_LIMIT = 3
    DOWNLOAD_UNFINISHED = 4
    CONFIG_OBJECT_LIMIT = 5
    TIME_LIMIT = 6

    def __str__(self) -> str:
        return self.name


_S = JobStatus

# from-state -> the states a job may move to (reference §4.4). Who triggers each:
#   NEW -> SUBMITTED            the dispatcher published the DoOneCrawl message (confirmed)
#   NEW/SUBMITTED -> STARTED    the controller granted the attempt reported STARTED
#   NEW/SUBMITTED/STARTED -> DONE/FAILED   the final status of the attempt
#   SUBMITTED -> RESUBMITTED    scheduler restart found it never claimed; a copy goes NEW
#   FAILED -> RESUBMITTED       an operator's restart (the copy carries continuationof)
#   FAILED <-> FAILED_REJECTED  an operator's reject / unreject
#   STARTED -> FAILED           the job timeout supervisor
JOB_TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    _S.NEW: frozenset({_S.SUBMITTED, _S.STARTED, _S.DONE, _S.FAILED}),
    _S.SUBMITTED: frozenset({_S.STARTED, _S.DONE, _S.FAILED, _S.RESUBMITTED}),
    _S.STARTED: frozenset({_S.DONE, _S.FAILED}),
    _S.DONE: frozenset(),
    _S.FAILED: frozenset({_S.RESUBMITTED, _S.FAILED_REJECTED}),
    _S.RESUBMITTED: frozenset(),
    _S.FAILED_REJECTED: frozenset({_S.FAILED}),
}


def can_change_job_status(from_status: JobStatus, to_status: JobStatus) -> bool:
    return to_status in JOB_TRANSITIONS[from_status]


def check_job_transition(job_id: int, from_status: JobStatus, to_status: JobStatus) -> None:
    """Raise IllegalTransitionError naming the job and both states unless the table allows the change."""
    if not can_change_job_status(from_status, to_status):
        raise IllegalTransitionError(f"job {job_id}", from_status, to_status)
