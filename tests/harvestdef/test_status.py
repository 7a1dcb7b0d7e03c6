"""JobStatus and StopReason keep NetarchiveSuite's ordinals; one table decides every job status change."""

from __future__ import annotations

import itertools

import pytest

from harvestdef.errors import IllegalTransitionError
from harvestdef.model.status import (
    JOB_TRANSITIONS,
    JobStatus,
    JobTransitionReason,
    StopReason,
    check_job_transition,
)


def test_ordinals_never_change():
    assert [(s.name, s.value) for s in JobStatus] == [
        ("NEW", 0), ("SUBMITTED", 1), ("STARTED", 2), ("DONE", 3), ("FAILED", 4), ("RESUBMITTED", 5),
        ("FAILED_REJECTED", 6)]
    assert [(s.name, s.value) for s in StopReason] == [
        ("DOWNLOAD_COMPLETE", 0), ("OBJECT_LIMIT", 1), ("SIZE_LIMIT", 2), ("CONFIG_SIZE_LIMIT", 3),
        ("DOWNLOAD_UNFINISHED", 4), ("CONFIG_OBJECT_LIMIT", 5), ("TIME_LIMIT", 6)]


@pytest.mark.parametrize(("old", "new"), [
    (JobStatus.NEW, JobStatus.SUBMITTED), (JobStatus.SUBMITTED, JobStatus.STARTED),
    (JobStatus.STARTED, JobStatus.DONE), (JobStatus.STARTED, JobStatus.FAILED),
    (JobStatus.SUBMITTED, JobStatus.RESUBMITTED), (JobStatus.FAILED, JobStatus.RESUBMITTED),
    (JobStatus.FAILED, JobStatus.FAILED_REJECTED), (JobStatus.FAILED_REJECTED, JobStatus.FAILED),
])
def test_allowed_changes(old, new):
    check_job_transition(7, old, new)


def test_every_other_change_is_refused_naming_job_and_states():
    allowed = {(a, b) for a, targets in JOB_TRANSITIONS.items() for b, reason in targets.items() if reason is None}
    for old, new in itertools.product(JobStatus, JobStatus):
        if (old, new) in allowed:
            continue
        with pytest.raises(IllegalTransitionError) as err:
            check_job_transition(42, old, new)
        assert str(err.value).startswith("job 42")
        assert str(err.value).endswith(f"illegal status change {old.name} -> {new.name}")


def test_failed_turns_done_only_for_files_stored_after_a_store_outage():
    with pytest.raises(IllegalTransitionError) as err:
        check_job_transition(42, JobStatus.FAILED, JobStatus.DONE)
    assert str(err.value) == ("job 42 (only as STORED_AFTER_STORE_OUTAGE, not None): illegal status change "
                              "FAILED -> DONE")
    check_job_transition(42, JobStatus.FAILED, JobStatus.DONE, JobTransitionReason.STORED_AFTER_STORE_OUTAGE)
    # the reason opens no other door
    with pytest.raises(IllegalTransitionError):
        check_job_transition(42, JobStatus.DONE, JobStatus.FAILED, JobTransitionReason.STORED_AFTER_STORE_OUTAGE)


def test_done_and_resubmitted_are_final():
    assert JOB_TRANSITIONS[JobStatus.DONE] == {}
    assert JOB_TRANSITIONS[JobStatus.RESUBMITTED] == {}


def test_a_started_job_is_resubmitted_only_because_its_controller_was_lost():
    with pytest.raises(IllegalTransitionError, match="only as CONTROLLER_LOST"):
        check_job_transition(42, JobStatus.STARTED, JobStatus.RESUBMITTED)
    with pytest.raises(IllegalTransitionError):
        check_job_transition(42, JobStatus.STARTED, JobStatus.RESUBMITTED,
                             JobTransitionReason.STORED_AFTER_STORE_OUTAGE)
    check_job_transition(42, JobStatus.STARTED, JobStatus.RESUBMITTED, JobTransitionReason.CONTROLLER_LOST)
