"""A harvest controller killed without warning mid-crawl takes its crawl with it: the bundled engine it started
sees its pipe close, checkpoints the crawl and ends it as at a shutdown, and exits on its own, so no orphan
crawls the job while the scheduler resubmits it to another controller. When the controller starts
again, the job resumes from that checkpoint if the scheduler grants it again, as after a shutdown of the
controller's own; a job resubmitted meanwhile is reported as any leftover and not crawled again. With the
real scheduler, RabbitMQ, the real controller and the bundled engine."""

from __future__ import annotations

import json
from collections import Counter

from sqlalchemy import func, select

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus
from harvestdef.repositories.jobevents import JobEventRepository
from harvester.heritrix3.layout import SHUTDOWN_CHECKPOINT
from harvester.jobdir import RESUME
from tests.harvester.test_controller_failures import crawled_lines, job_directory, slow_template, wait_for
from tests.harvester.test_lost_controller import is_running, job_row

# Pause (a fetch in flight at 0.7 s politeness), checkpoint, terminate, exit: seconds. A generous bound for a
# real process: an engine that missed its pipe closing would crawl on and serve until stopped, never exiting.
ENGINE_EXIT_SECONDS = 120


def kill_mid_crawl(h, lines: int = 3):
    """Start a controller, kill it with SIGKILL once crawl.log has ``lines`` lines and wait for its engine to
    exit; the job directory."""
    controller = h.start_controller("first")
    wait_for(lambda: crawled_lines(h.server_dir) >= lines, 60, f"{lines} crawl.log lines")
    directory = job_directory(h.server_dir)
    engine_pid = int((h.server_dir / "engine.pid").read_text())
    assert is_running(engine_pid)
    controller.kill()
    wait_for(lambda: not is_running(engine_pid), ENGINE_EXIT_SECONDS, "the orphaned engine to exit")
    return directory


def launches(directory) -> list[str]:
    return sorted(p.name for p in directory.glob("[0-9]*") if p.is_dir() and not p.is_symlink())


def test_the_engine_of_a_killed_controller_checkpoints_its_crawl_and_exits(harvesting):
    h = harvesting(slow_template())
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.start_scheduler(**{"harvestsuite.scheduler.lostAfterHeartbeats": 3,
                         "harvestsuite.scheduler.resubmitLostAfter": 0})
    directory = kill_mid_crawl(h)
    (job,) = h.jobs(harvest_id)
    lines_at_exit = crawled_lines(h.server_dir)

    # Left as a controller's shutdown with shutdownAction=checkpoint leaves the crawl: checkpointed, then
    # terminated, every WARC closed.
    checkpoints = sorted(p.name for p in (directory / "checkpoints").iterdir())
    assert checkpoints, "a checkpoint to resume from"
    job_log = (directory / "job.log").read_text(encoding="utf-8")
    assert f"Checkpoint {checkpoints[-1]} written at engine shutdown" in job_log
    assert "Job terminated at engine shutdown" in job_log
    assert list(directory.glob("[0-9]*/warcs/*.warc.gz")), "closed WARC files"
    assert not list(directory.glob("[0-9]*/warcs/*.open")), "no WARC left open"
    # ... and marked for the controller that comes back: that checkpoint, of that launch, nothing after it.
    marker = json.loads((directory / SHUTDOWN_CHECKPOINT).read_text())
    assert (marker["checkpoint"], [marker["launch"]]) == (checkpoints[-1], launches(directory))
    assert not (directory / RESUME).exists(), "the controller's own marker: nobody wrote it"

    # Nothing crawls on: by the time the scheduler finds the controller lost, crawl.log has not grown.
    wait_for(lambda: job_row(h, job.job_id).interrupted, 30, "the job marked interrupted")
    assert crawled_lines(h.server_dir) == lines_at_exit


def test_a_controller_killed_mid_crawl_resumes_its_job_from_the_engines_checkpoint_when_it_comes_back(harvesting):
    h = harvesting(slow_template())
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]}, maxobjects=12)
    h.start_scheduler(**{"harvestsuite.scheduler.lostAfterHeartbeats": 3,
                         "harvestsuite.scheduler.resubmitLostAfter": 0})  # the lost rule never resubmits
    directory = kill_mid_crawl(h, lines=7)
    (job,) = h.jobs(harvest_id)
    checkpoint = json.loads((directory / SHUTDOWN_CHECKPOINT).read_text())["checkpoint"]
    requests_at_checkpoint = len(h.site.requests)
    wait_for(lambda: job_row(h, job.job_id).interrupted, 30, "the job marked interrupted")

    second = h.start_controller("second")  # the same serverDir, so the same controller id
    (job,) = h.wait_for_jobs(harvest_id, timeout=180)
    assert JobStatus(job.status) == JobStatus.DONE, job
    assert f"job {job.job_id} resumes from checkpoint {checkpoint}" in second.text()
    assert not job_row(h, job.job_id).interrupted

    # The resumed launch went on from the checkpoint: the site was asked for more, and for nothing twice.
    requests = Counter(h.site.requests)
    assert len(h.site.requests) > requests_at_checkpoint, "the resumed crawl fetched nothing"
    assert {request: n for request, n in requests.items() if n > 1} == {}, "fetched twice"
    (moved,) = [p for p in h.server_dir.rglob(f"{job.job_id}_*") if p.is_dir() and p.name == directory.name]
    assert len(launches(moved)) == 2
    logged = sum(1 for log in moved.glob("[0-9]*/logs/crawl.log") for _ in log.open())
    (row,) = h.history(job.job_id)  # counted once, with both launches in it
    assert len(h.site.requests) - 1 <= row.objectcount <= logged  # robots.txt is not an object of the domain
    with h.engine.connect() as conn:
        events = JobEventRepository(conn).for_job(job.job_id)
    kinds = [e.kind for e in events]
    assert "resume" in kinds and "resubmitted" not in kinds, kinds
    # the engine's checkpoint is on the job page too, at the engine's time: before the resume from it
    (taken,) = [e for e in events if e.kind == "checkpoint"]
    (resumed,) = [e for e in events if e.kind == "resume"]
    assert taken.checkpoint == resumed.checkpoint == checkpoint, (taken, resumed)
    assert taken.happened_at < resumed.happened_at, (taken, resumed)
    print(f"site requests: {requests_at_checkpoint} before the kill, {len(h.site.requests)} in all, "
          f"crawl.log lines {logged}, objectcount {row.objectcount}, events {kinds}")


def test_a_job_resubmitted_before_its_killed_controller_comes_back_is_not_resumed(harvesting):
    h = harvesting(slow_template())
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]}, maxobjects=12)
    h.start_scheduler(**{"harvestsuite.scheduler.lostAfterHeartbeats": 3,
                         "harvestsuite.scheduler.resubmitLostAfter": 6})
    directory = kill_mid_crawl(h)
    (job,) = h.jobs(harvest_id)
    assert (directory / SHUTDOWN_CHECKPOINT).exists()
    old = wait_for(lambda: (row := job_row(h, job.job_id)).status == int(JobStatus.RESUBMITTED) and row, 30,
                   "the job resubmitted")
    new_id = old.resubmitted_as_job
    lines_before = crawled_lines(h.server_dir)
    launches_before = launches(directory)

    # The claim of the resume is refused, so the old attempt is post-processed and reported as any leftover
    # (the scheduler does not take that report), and the copy is crawled instead.
    second = h.start_controller("second")
    second.wait_for_log(rf"job {job.job_id} reported FAILED", 120)
    assert f"job {job.job_id} resumes" not in second.text()
    assert "not resumed" in second.text()
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
    # Nothing crawled for the old attempt: no launch of it after the kill, its crawl.log as it was.
    (moved,) = [p for p in h.server_dir.rglob(f"{job.job_id}_*") if p.is_dir() and p.name == directory.name]
    assert launches(moved) == launches_before
    assert sum(1 for log in moved.glob("[0-9]*/logs/crawl.log") for _ in log.open()) == lines_before
