"""What a harvest controller does when things go wrong: killed mid-crawl, its engine killed, a stalling site,
too little disk, SIGTERM during a crawl. Real processes throughout (see conftest.py)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from warcio.archiveiterator import ArchiveIterator

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.model.status import JobStatus, StopReason
from harvester.jobdir import HARVEST_INFO, REPORTED, RESUME
from tests.harvester.conftest import OUR_TEMPLATE, fast_politeness


def slow_template() -> str:
    """Politeness of 0.7 s per request on each host: a crawl of the test site's trap lasts a while."""
    text = fast_politeness(OUR_TEMPLATE.read_text(encoding="utf-8"))
    text = re.sub(r"disposition\.minDelayMs=\d+", "disposition.minDelayMs=700", text)
    return re.sub(r"disposition\.maxDelayMs=\d+", "disposition.maxDelayMs=700", text)


def record_ids(paths: list[Path]) -> set[str]:
    """WARC-Record-IDs of every complete record in ``paths`` (a file still being written may end mid-record)."""
    found = set()
    for path in paths:
        with open(path, "rb") as handle:
            try:
                for record in ArchiveIterator(handle):
                    found.add(record.rec_headers.get_header("WARC-Record-ID"))
            except Exception:  # noqa: BLE001 - the tail of a file being written
                pass
    return found


def stored_record_ids(archive: Path, harvest_id: int, job_id: int) -> set[str]:
    root = archive / str(harvest_id) / str(job_id)
    return record_ids([p for p in root.glob("*.warc.gz") if "metadata" not in p.name])


def job_directory(server_dir: Path) -> Path:
    found = [p for p in server_dir.iterdir() if p.is_dir() and (p / HARVEST_INFO).exists()]
    assert len(found) == 1, found
    return found[0]


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout} s: {what}")


def paused_heartbeat_since(h, since: datetime):
    """The controller's row in the harvest database once the scheduler has stored a heartbeat of it, sent at
    ``since`` or later, that says it is paused; else None."""
    with h.engine.connect() as conn:
        row = conn.execute(select(s.harvesters.c.paused, s.harvesters.c.last_heartbeat,
                                  s.harvesters.c.last_ready)).one_or_none()
    if row is None or row.last_heartbeat is None or row.last_heartbeat < since:
        return None
    assert row.paused
    return row


def crawled_lines(server_dir: Path) -> int:
    total = 0
    for log in server_dir.glob("*/[0-9]*/logs/crawl.log"):
        total += sum(1 for _ in log.open(encoding="utf-8"))
    return total


def test_a_controller_killed_mid_crawl_with_its_engine_reports_the_job_failed_with_everything_stored(harvesting):
    # Both killed at once (the host went down): no checkpoint to resume from, unlike a controller killed
    # alone, whose engine checkpoints the crawl before it exits (test_orphaned_engine.py).
    h = harvesting(slow_template())
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.start_scheduler()
    first = h.start_controller("first")
    wait_for(lambda: crawled_lines(h.server_dir) >= 6, 60, "six crawl.log lines")
    directory = job_directory(h.server_dir)
    engine_pid = int((h.server_dir / "engine.pid").read_text())
    os.kill(engine_pid, signal.SIGSTOP)  # frozen, it cannot see its pipe close when the controller dies
    first.kill()
    os.kill(engine_pid, signal.SIGKILL)
    written = record_ids(list(directory.glob("[0-9]*/warcs/*.warc.gz*")))
    assert len(written) >= 4
    h.start_controller("second")
    (job,) = h.wait_for_jobs(harvest_id, timeout=120)
    assert JobStatus(job.status) == JobStatus.FAILED
    assert "interrupted" in job.harvest_errors
    assert written <= stored_record_ids(h.archive, harvest_id, job.job_id)
    (row,) = h.history(job.job_id)
    assert row.objectcount >= 3 and row.bytecount > 0
    assert StopReason(row.stopreason) == StopReason.DOWNLOAD_UNFINISHED
    assert not (h.server_dir / "engine.pid").exists()


def test_an_engine_that_dies_ends_the_job_failed_with_its_partial_files(harvesting):
    h = harvesting(slow_template())
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.start_scheduler()
    controller = h.start_controller()
    wait_for(lambda: crawled_lines(h.server_dir) >= 6, 60, "six crawl.log lines")
    os.kill(int((h.server_dir / "engine.pid").read_text()), signal.SIGKILL)
    (job,) = h.wait_for_jobs(harvest_id, timeout=120)
    assert JobStatus(job.status) == JobStatus.FAILED
    assert "crawl engine died" in job.harvest_errors and "SIGKILL" in job.harvest_errors
    stored = stored_record_ids(h.archive, harvest_id, job.job_id)
    assert len(stored) >= 4
    (row,) = h.history(job.job_id)
    assert row.objectcount >= 3
    assert controller.process.poll() is None  # the controller goes on to the next job


def test_a_stalling_site_is_stopped_by_the_watchdog(harvesting):
    # The fetch itself waits long (as for a slow site): the site stalls for 900 s and the fetch's own
    # timeouts are longer still, so only the watchdog can end the crawl early.
    text = fast_politeness(OUR_TEMPLATE.read_text(encoding="utf-8"))
    text = re.sub(r"fetchHttp\.soTimeoutMs=\d+", "fetchHttp.soTimeoutMs=1000000", text)
    h = harvesting(re.sub(r"fetchHttp\.timeoutSeconds=\d+", "fetchHttp.timeoutSeconds=2000", text))
    h.site.stall_seconds = 900
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk", "/stall.bin")]})
    h.start_scheduler()
    h.start_controller(**{"harvester.harvesting.heritrix.noresponseTimeout": 3})
    # the stalled fetch would hold the job for 900 s: DONE within 240 s proves the watchdog's stop did not
    # wait for it (a generous bound for the real processes; the crawl takes seconds)
    (job,) = h.wait_for_jobs(harvest_id, timeout=240)
    assert JobStatus(job.status) == JobStatus.DONE
    assert "stalled" in job.harvest_errors and "noresponseTimeout" in job.harvest_errors
    (row,) = h.history(job.job_id)
    assert StopReason(row.stopreason) == StopReason.DOWNLOAD_UNFINISHED


def test_too_little_disk_pauses_the_controller_until_space_is_back(harvesting, tmp_path):
    if shutil.which("fallocate") is None:
        pytest.fail("fallocate (util-linux) is needed to take disk space away quickly")
    h = harvesting()
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    filler = tmp_path / "filler"
    # 300 MB taken away; the threshold lies halfway between the free space with and without them
    subprocess.run(["fallocate", "-l", "300000000", str(filler)], check=True)
    try:
        threshold = shutil.disk_usage(tmp_path).free + 150_000_000
        h.start_scheduler()
        controller = h.start_controller(**{"harvester.harvesting.minSpaceLeft": threshold})
        controller.wait_for_log(r"paused: [\d,]+ bytes free", 30)
        # the job is generated, but a paused controller sends no ready message, so it is never dispatched
        h.wait_for_jobs(harvest_id, (JobStatus.NEW,), timeout=20)
        # Ready messages and heartbeats go to the scheduler's one queue, and the scheduler releases a NEW job
        # in the batch that handles a ready message. A controller that sent ready messages while paused
        # would send one every sendReadyDelay (1 s), so one would be queued at least a second ahead of any
        # heartbeat sent 3 s after the job was seen NEW. Once the scheduler has stored such a heartbeat, it
        # has taken that ready message too, and the job would no longer be NEW.
        seen_new = utcnow()
        row = wait_for(lambda: paused_heartbeat_since(h, seen_new + timedelta(seconds=3)), 30,
                       "a heartbeat of the paused controller sent 3 s after the job was seen NEW")
        assert [JobStatus(j.status) for j in h.jobs(harvest_id)] == [JobStatus.NEW]
        assert row.last_ready is None
    finally:
        filler.unlink()
    controller.wait_for_log(r"bytes free again", 30)
    (job,) = h.wait_for_jobs(harvest_id, timeout=120)
    assert JobStatus(job.status) == JobStatus.DONE


def test_sigterm_checkpoints_the_crawl_and_the_next_start_resumes_it(harvesting):
    h = harvesting(slow_template())
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.start_scheduler()
    first = h.start_controller("first")
    wait_for(lambda: crawled_lines(h.server_dir) >= 5, 60, "five crawl.log lines")
    assert first.stop() == 0
    directory = job_directory(h.server_dir)
    marker = json.loads((directory / RESUME).read_text())
    assert marker["checkpoint"]
    (job,) = h.jobs(harvest_id)
    assert JobStatus(job.status) == JobStatus.STARTED
    lines_before = crawled_lines(h.server_dir)
    second = h.start_controller("second")
    (job,) = h.wait_for_jobs(harvest_id, timeout=120)
    assert JobStatus(job.status) == JobStatus.DONE, job
    assert f"resumes from checkpoint {marker['checkpoint']}" in second.text()
    (row,) = h.history(job.job_id)
    # both launches count, and the resumed one did not start over from the seed
    assert row.objectcount > lines_before - 3


def test_files_that_cannot_be_stored_stay_and_are_stored_and_reported_by_upload_leftovers(harvesting, tmp_path):
    h = harvesting()
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.archive.rmdir()
    h.archive.write_text("not a directory: the store cannot be written\n")
    h.start_scheduler()
    controller = h.start_controller(**{"harvestsuite.harvester.uploadRetries": 2})
    (job,) = h.wait_for_jobs(harvest_id, timeout=120)
    assert JobStatus(job.status) == JobStatus.FAILED
    assert "files not stored yet after 2 passes and 1 backoffs" in job.upload_errors
    directory = job_directory(h.server_dir)  # still in serverDir, with its WARCs
    warcs = list(directory.glob("[0-9]*/warcs/*.warc.gz"))
    assert warcs and (directory / REPORTED).exists()
    assert controller.stop() == 0

    h.archive.unlink()
    h.archive.mkdir()
    settings = h.settings_file()
    done = subprocess.run([sys.executable, "-m", "harvestdef", "--config", str(settings), "harvester",
                           "upload-leftovers"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 jobs stored, 0 left" in done.stdout
    stored = h.archive / str(harvest_id) / str(job.job_id)
    assert {p.name for p in warcs} <= {p.name for p in stored.iterdir()}
    assert (stored / "SHA256SUMS").exists() and (stored / f"{job.job_id}-metadata-1.warc.gz").exists()
    assert not directory.exists() and (h.server_dir / "oldjobs" / directory.name).is_dir()
    # it failed only because of the store: reported again, it is DONE now, with its history
    (job,) = h.wait_for_jobs(harvest_id, statuses=(JobStatus.DONE,), timeout=30)
    assert len(h.history(job.job_id)) == 1


def silence_the_engine_mid_crawl(harvesting, retries: int, until_log: str):
    """A crawl whose engine stops answering (SIGSTOP: alive, but silent) until the controller logs
    ``until_log``; then it may answer again. Returns the system and the harvest's id."""
    h = harvesting(slow_template())
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.start_scheduler()
    controller = h.start_controller(**{"harvestsuite.harvester.statusPollTimeout": 1,
                                       "harvestsuite.harvester.statusPollRetries": retries})
    wait_for(lambda: crawled_lines(h.server_dir) >= 4, 60, "four crawl.log lines")
    engine = int((h.server_dir / "engine.pid").read_text())
    os.kill(engine, signal.SIGSTOP)
    try:
        controller.wait_for_log(until_log, 30)
    finally:
        # a controller that gave up sends SIGTERM, taken now instead of the SIGKILL 45 s later
        with contextlib.suppress(ProcessLookupError):
            os.kill(engine, signal.SIGCONT)
    return h, harvest_id


def test_failed_status_polls_are_retried_and_never_read_as_the_end_of_the_crawl(harvesting):
    h, harvest_id = silence_the_engine_mid_crawl(harvesting, 10, r"status poll 2 of 10 failed")
    (job,) = h.wait_for_jobs(harvest_id, timeout=120)
    assert JobStatus(job.status) == JobStatus.DONE, job
    (row,) = h.history(job.job_id)
    assert StopReason(row.stopreason) == StopReason.DOWNLOAD_COMPLETE


def test_a_crawler_that_stops_answering_ends_the_job_failed(harvesting):
    h, harvest_id = silence_the_engine_mid_crawl(harvesting, 3, r"did not answer 3 status polls in a row")
    (job,) = h.wait_for_jobs(harvest_id, timeout=60)
    assert JobStatus(job.status) == JobStatus.FAILED
    assert "did not answer 3 status polls in a row" in job.harvest_errors
    (row,) = h.history(job.job_id)
    assert row.objectcount >= 3  # what was harvested before is post-processed and counted


def test_two_controllers_never_share_a_server_dir(harvesting, tmp_path):
    h = harvesting()
    first = h.start_controller("first")  # no scheduler: it keeps asking to register, holding its serverDir
    first.wait_for_log(r"harvest controller \S+: channels FOCUSED", 30)
    second = subprocess.run([sys.executable, "-m", "harvestdef", "--config", str(h.settings_file()), "harvester",
                             "run"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert second.returncode != 0
    assert f"serverDir {h.server_dir.resolve()} is in use by pid {first.process.pid}" in second.stderr
    assert first.process.poll() is None
    # its own serverDir is all another controller on the same machine needs
    other = h.start_controller("other", **{"harvester.harvesting.serverdir": str(tmp_path / "server2")})
    other.wait_for_log(r"harvest controller \S+: channels FOCUSED", 30)
    assert other.process.poll() is None


def test_sigterm_with_shutdown_action_finish_reports_the_stopped_crawl(harvesting):
    h = harvesting(slow_template())
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.start_scheduler()
    controller = h.start_controller(**{"harvestsuite.harvester.shutdownAction": "finish"})
    wait_for(lambda: crawled_lines(h.server_dir) >= 5, 60, "five crawl.log lines")
    assert controller.stop() == 0
    (job,) = h.wait_for_jobs(harvest_id, timeout=30)
    assert JobStatus(job.status) == JobStatus.DONE
    assert "stopped at the harvest controller's shutdown" in job.harvest_errors
    (row,) = h.history(job.job_id)
    assert row.objectcount >= 3
    assert StopReason(row.stopreason) == StopReason.DOWNLOAD_UNFINISHED  # "Ended by operator"
    assert not [p for p in h.server_dir.iterdir() if (p / HARVEST_INFO).exists()]
