"""JobStatus and StopReason with NetarchiveSuite's ordinals, and the one table of allowed job transitions.

The ordinals are stored in jobs.status and historyinfo.stopreason and must never change (docs/database.md,
Conventions kept from NetarchiveSuite). ``check_job_transition`` is the only judge of a status change;
the repository function that changes a job's status calls it and then updates with
``WHERE status = :from AND attempt_id = :attempt`` so a stale attempt changes nothing.

A transition of the table either needs no reason or exactly one ``JobTransitionReason``: FAILED -> DONE
is allowed only as STORED_AFTER_STORE_OUTAGE (a job reported FAILED because the archive store could not
take its files, whose files were all stored later), never for a job that failed for anything else.
STARTED -> RESUBMITTED is allowed only as CONTROLLER_LOST (its controller went silent and did not come
back within resubmitLostAfter, or came back without the job, harvestdef.model.controllers), never as an
operator's action on a running job.
"""

from __future__ import annotations

from enum import Enum, IntEnum

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


class JobTransitionReason(Enum):
    """Why a transition that needs a reason is made; the table names the one reason it accepts."""

    STORED_AFTER_STORE_OUTAGE = "the job's files were stored after an archive store outage"
    CONTROLLER_LOST = ("the job's controller lost it: it went silent and did not come back within "
                       "resubmitLostAfter, or it came back without the job")

    def __str__(self) -> str:
        return self.name


_S = JobStatus
_STORED_LATER = JobTransitionReason.STORED_AFTER_STORE_OUTAGE
_LOST = JobTransitionReason.CONTROLLER_LOST

# from-state -> the states a job may move to (docs/architecture.md, Job states). Who triggers each:
#   NEW -> SUBMITTED            the dispatcher published the DoOneCrawl message (confirmed)
#   NEW/SUBMITTED -> STARTED    the controller granted the attempt reported STARTED
#   NEW/SUBMITTED/STARTED -> DONE/FAILED   the final status of the attempt
#   SUBMITTED -> RESUBMITTED    scheduler restart found it never claimed; a copy goes NEW
#   FAILED -> RESUBMITTED       an operator's restart (the copy carries continuationof)
#   FAILED <-> FAILED_REJECTED  an operator's reject / unreject
#   STARTED -> FAILED           the job timeout supervisor
#   STARTED -> RESUBMITTED      the scheduler's supervision: the controller was lost too long, or came back
#                               without the job (only with that reason); the attempt is never granted
#                               again, its report never taken
#   FAILED -> DONE              the controller's second report of a job it reported FAILED because the
#                               archive store failed, once every file is stored (only with that reason)
# Each target maps to the reason it needs, None for none.
JOB_TRANSITIONS: dict[JobStatus, dict[JobStatus, JobTransitionReason | None]] = {
    _S.NEW: {_S.SUBMITTED: None, _S.STARTED: None, _S.DONE: None, _S.FAILED: None},
    _S.SUBMITTED: {_S.STARTED: None, _S.DONE: None, _S.FAILED: None, _S.RESUBMITTED: None},
    _S.STARTED: {_S.DONE: None, _S.FAILED: None, _S.RESUBMITTED: _LOST},
    _S.DONE: {},
    _S.FAILED: {_S.RESUBMITTED: None, _S.FAILED_REJECTED: None, _S.DONE: _STORED_LATER},
    _S.RESUBMITTED: {},
    _S.FAILED_REJECTED: {_S.FAILED: None},
}


def can_change_job_status(from_status: JobStatus, to_status: JobStatus,
                          reason: JobTransitionReason | None = None) -> bool:
    targets = JOB_TRANSITIONS[from_status]
    return to_status in targets and targets[to_status] in (None, reason)


def check_job_transition(job_id: int, from_status: JobStatus, to_status: JobStatus,
                         reason: JobTransitionReason | None = None) -> None:
    """Raise IllegalTransitionError naming the job and both states unless the table allows the change
    (with ``reason`` where the table asks for one; a reason the change does not need is ignored)."""
    if not can_change_job_status(from_status, to_status, reason):
        needed = JOB_TRANSITIONS[from_status].get(to_status)
        what = f"job {job_id}" if needed is None else f"job {job_id} (only as {needed.name}, not {reason})"
        raise IllegalTransitionError(what, from_status, to_status)
