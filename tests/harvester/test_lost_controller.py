"""A harvest controller killed without warning mid-crawl, with the real scheduler, RabbitMQ, the real
controller and the bundled engine: it is marked lost once silent past lostAfterHeartbeats of its heartbeat
interval, its job is resubmitted once it has been silent past resubmitLostAfter, and when it comes back its
report of the old attempt is not the job's outcome: the copy is crawled and reported instead."""

from __future__ import annotations

import shutil
from pathlib import Path

from sqlalchemy import func, select

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus
from harvestdef.repositories.jobevents import JobEventRepository
from tests.harvester.test_controller_failures import crawled_lines, slow_template, wait_for

HEARTBEAT_INTERVAL = 1  # the controllers' (conftest.py)
LOST_AFTER_HEARTBEATS = 3
# well after the loss (3 s of silence), so that a tick (every second) finds the loss before the resubmission
RESUBMIT_LOST_AFTER = 12


def is_running(pid: int) -> bool:
    """True while ``pid`` runs; a zombie nobody reaped yet (its parent is the killed controller) has ended."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def job_row(h, job_id: int):
    with h.engine.connect() as conn:
        return conn.execute(select(s.jobs).where(s.jobs.c.job_id == job_id)).one()


def test_a_killed_controller_is_lost_its_job_resubmitted_and_its_return_reports_nothing_for_it(harvesting):
    h = harvesting(slow_template())
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]}, maxobjects=12)
    h.start_scheduler(**{"harvestsuite.scheduler.lostAfterHeartbeats": LOST_AFTER_HEARTBEATS,
                         "harvestsuite.scheduler.resubmitLostAfter": RESUBMIT_LOST_AFTER})
    first = h.start_controller("first")
    wait_for(lambda: crawled_lines(h.server_dir) >= 3, 60, "three crawl.log lines")
    (job,) = h.jobs(harvest_id)
    assert JobStatus(job.status) == JobStatus.STARTED
    with h.engine.connect() as conn:
        assert conn.scalar(select(s.harvesters.c.heartbeat_interval)) == HEARTBEAT_INTERVAL, "stated by the controller"
    first.kill()

    wait_for(lambda: job_row(h, job.job_id).interrupted, 60, "the job marked interrupted")
    old = wait_for(lambda: (row := job_row(h, job.job_id)).status == int(JobStatus.RESUBMITTED) and row, 60,
                   "the job resubmitted")
    new_id = old.resubmitted_as_job
    with h.engine.connect() as conn:
        events = JobEventRepository(conn).for_job(job.job_id)
    assert [e.kind for e in events] == ["lost", "resubmitted"]
    # The scheduler's own record of when it acted, against the controller's last sign of life (the lost
    # event's happened_at): neither before its setting, however slow the machine; how soon after is the
    # tick's business (the rule itself is tests/scheduler/test_lost_controllers.py's).
    lost, resubmitted = events
    assert (lost.received_at - lost.happened_at).total_seconds() > LOST_AFTER_HEARTBEATS * HEARTBEAT_INTERVAL
    assert (resubmitted.happened_at - lost.happened_at).total_seconds() > RESUBMIT_LOST_AFTER
    assert lost.received_at < resubmitted.happened_at, "lost at a tick before the one that resubmitted"

    # The same controller comes back (same serverDir, so the same controller id): it reports its leftover job
    # FAILED as always, the scheduler does not take that report, and the copy is crawled to its end.
    second = h.start_controller("second")
    second.wait_for_log(rf"job {job.job_id} reported FAILED", 120)
    jobs = h.wait_for_jobs(harvest_id, statuses=(JobStatus.DONE, JobStatus.FAILED, JobStatus.RESUBMITTED),
                           timeout=180)
    assert [(j.job_id, JobStatus(j.status)) for j in jobs] == [(job.job_id, JobStatus.RESUBMITTED),
                                                                 (new_id, JobStatus.DONE)]
    old = job_row(h, job.job_id)
    assert old.harvest_errors is None and old.enddate is None, "the old attempt's report was not taken"
    with h.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(s.historyinfo)
                           .where(s.historyinfo.c.job_id == job.job_id)) == 0
    assert len(h.history(new_id)) == 1
    assert f"job {new_id} reported DONE" in second.text()


def test_a_controller_back_without_its_job_directory_has_its_job_resubmitted(harvesting):
    # The same controller id on a fresh disk: killed mid-crawl, it starts again with an empty serverDir.
    h = harvesting(slow_template())
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]}, maxobjects=12)
    h.start_scheduler(**{"harvestsuite.scheduler.resubmitLostAfter": 0})  # the lost rule never resubmits
    identity = {"harvestsuite.harvester.controllerId": "node-1"}
    first = h.start_controller("first", **identity)
    wait_for(lambda: crawled_lines(h.server_dir) >= 3, 60, "three crawl.log lines")
    (job,) = h.jobs(harvest_id)
    first.kill()
    engine_pid = int((h.server_dir / "engine.pid").read_text())
    wait_for(lambda: not is_running(engine_pid), 30, "the orphaned engine to exit")
    shutil.rmtree(h.server_dir)

    second = h.start_controller("second", **identity)
    old = wait_for(lambda: (row := job_row(h, job.job_id)).status == int(JobStatus.RESUBMITTED) and row, 60,
                   "the job resubmitted")
    jobs = h.wait_for_jobs(harvest_id, statuses=(JobStatus.DONE, JobStatus.RESUBMITTED), timeout=180)
    assert [(j.job_id, JobStatus(j.status)) for j in jobs] == [(job.job_id, JobStatus.RESUBMITTED),
                                                                 (old.resubmitted_as_job, JobStatus.DONE)]
    assert f"job {old.resubmitted_as_job} reported DONE" in second.text()
    with h.engine.connect() as conn:
        assert [e.kind for e in JobEventRepository(conn).for_job(job.job_id)][-1] == "resubmitted"
