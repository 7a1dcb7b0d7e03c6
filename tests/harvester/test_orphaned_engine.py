"""A harvest controller killed without warning mid-crawl takes its crawl with it: the bundled engine it started
sees its pipe close, checkpoints the crawl and ends it as at a shutdown, and exits within seconds, so no
orphan crawls the job while the scheduler resubmits it to another controller. With the real scheduler,
RabbitMQ, the real controller and the bundled engine."""

from __future__ import annotations

import time

from tests.harvester.test_controller_failures import crawled_lines, job_directory, slow_template, wait_for
from tests.harvester.test_lost_controller import is_running, job_row

ENGINE_EXIT_SECONDS = 15  # pause (a fetch in flight at 0.7 s politeness), checkpoint, terminate, exit


def test_the_engine_of_a_killed_controller_checkpoints_its_crawl_and_exits(harvesting):
    h = harvesting(slow_template())
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.start_scheduler(**{"harvestsuite.scheduler.lostAfterHeartbeats": 3,
                         "harvestsuite.scheduler.resubmitLostAfter": 0})
    controller = h.start_controller("first")
    wait_for(lambda: crawled_lines(h.server_dir) >= 3, 60, "three crawl.log lines")
    directory = job_directory(h.server_dir)
    engine_pid = int((h.server_dir / "engine.pid").read_text())
    assert is_running(engine_pid)
    (job,) = h.jobs(harvest_id)

    controller.kill()
    killed = time.monotonic()
    wait_for(lambda: not is_running(engine_pid), ENGINE_EXIT_SECONDS, "the orphaned engine to exit")
    assert time.monotonic() - killed <= ENGINE_EXIT_SECONDS
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

    # Nothing crawls on: by the time the scheduler finds the controller lost, crawl.log has not grown.
    wait_for(lambda: job_row(h, job.job_id).interrupted, 30, "the job marked interrupted")
    assert crawled_lines(h.server_dir) == lines_at_exit
