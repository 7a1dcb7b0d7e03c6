"""JobStatus and StopReason keep NetarchiveSuite's ordinals; one table decides every job status change."""

from __future__ import annotations

import itertools

import pytest

from harvestdef.errors import IllegalTransitionError
from harvestdef.model.status import JOB_TRANSITIONS, JobStatus, StopReason, check_job_transition


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
    allowed = {(a, b) for a, targets in JOB_TRANSITIONS.items() for b in targets}
    for old, new in itertools.product(JobStatus, JobStatus):
        if (old, new) in allowed:
            continue
        with pytest.raises(IllegalTransitionError) as err:
            check_job_transition(42, old, new)
        assert f"job 42: illegal status change {old.name} -> {new.name}" == str(err.value)


def test_done_and_resubmitted_are_final():
    assert JOB_TRANSITIONS[JobStatus.DONE] == frozenset()
    assert JOB_TRANSITIONS[JobStatus.RESUBMITTED] == frozenset()
