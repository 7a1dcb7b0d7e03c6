"""An archive store outage (its root missing, as when the store is not mounted), the whole path with real
processes (see conftest.py): the controller's upload of a job costs one backoff however many files it
has, the job is reported FAILED while the store is down, and once the store is back the controller stores
the files in its retries between jobs and the job is reported again: DONE, with its history rows."""

from __future__ import annotations

import re

from sqlalchemy import select

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus
from tests.harvester.test_controller_failures import job_directory, wait_for


def test_a_store_outage_costs_one_backoff_and_the_job_is_done_once_stored(harvesting):
    h = harvesting()
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.archive.rmdir()  # the store is not mounted: its root is missing, and an upload must not make it
    h.start_scheduler()
    controller = h.start_controller(**{"harvestsuite.harvester.uploadRetries": 2,
                                       "harvestsuite.harvester.uploadRetryDelay": 1,
                                       "harvestsuite.harvester.leftoverUploadInterval": 1})
    (job,) = h.wait_for_jobs(harvest_id, timeout=120)
    assert JobStatus(job.status) == JobStatus.FAILED, job
    found = re.search(r"the archive store failed: (\d+) of (\d+) files not stored yet after 2 passes and 1 backoffs",
                      job.upload_errors)
    assert found, job.upload_errors
    with h.engine.connect() as conn:
        assert conn.scalar(select(s.jobs.c.store_failed).where(s.jobs.c.job_id == job.job_id))
    assert h.history(job.job_id) == []  # nothing is archived yet
    directory = job_directory(h.server_dir)
    files = int(found.group(2))
    assert found.group(1) == found.group(2) and files >= 3  # WARC, metadata WARC, CDXJ index, deduplication entries

    # one backoff for the job, not one per file
    backoffs = re.findall(rf"job {job.job_id}: the archive store failed on pass \d of 2 .* all retried in 1 s",
                          controller.text())
    assert len(backoffs) == 1, controller.text()[-3000:]

    assert not h.archive.exists()
    h.archive.mkdir()  # the store is back
    (job,) = h.wait_for_jobs(harvest_id, statuses=(JobStatus.DONE,), timeout=60)
    assert not job.upload_errors
    (row,) = h.history(job.job_id)
    assert row.name == "kulturarv.dk" and row.objectcount > 0
    stored = h.archive / str(harvest_id) / str(job.job_id)
    assert len((stored / "SHA256SUMS").read_text().splitlines()) == files
    wait_for(lambda: not directory.exists(), 10, "the job directory moved to oldjobs")
    assert (h.server_dir / "oldjobs" / directory.name).is_dir()
    assert "reported again as DONE" in controller.text()
