"""The demo's narrator tells why a job FAILED, whatever step failed: a job that failed at the upload has
its reason in the upload's errors only, and the narrator says it (it said "no reason given"), as does the
job's record. On SQLite and PostgreSQL."""

from __future__ import annotations

import logging

from sqlalchemy import select

from harvestdef.db import schema as s
from harvestdef.demo.narrator import Narrator
from harvestdef.messages import CrawlStatus
from harvestdef.model.status import JobStatus
from tests.webui.test_nothing_harvested import CONTROLLER, started_job, transport  # noqa: F401 - a fixture

SEEDS = {domain: f"http://www.{domain}/" for domain in ("good.dk", "forbidden.dk", "dead.invalid")}
UPLOAD_ERROR = "storing 1-1-20261201-00000.warc.gz failed: [Errno 28] No space left on device"


def test_a_job_that_failed_at_the_upload_is_told_with_the_uploads_reason(engine, transport, tmp_path, caplog):  # noqa: F811
    job_id, attempt, handle = started_job(engine, transport, SEEDS)
    # the report post-processing sends when only the upload failed (harvester/finish.py)
    assert handle(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id=CONTROLLER, status=JobStatus.FAILED,
                              upload_errors=UPLOAD_ERROR, upload_error_details=UPLOAD_ERROR))
    with engine.connect() as conn:
        record = conn.execute(select(s.jobs.c.status, s.jobs.c.harvest_errors, s.jobs.c.upload_errors)
                              .where(s.jobs.c.job_id == job_id)).one()
    assert (record.status, record.harvest_errors, record.upload_errors) == (JobStatus.FAILED, None, UPLOAD_ERROR)
    caplog.set_level(logging.INFO, logger="harvestsuite.demo")
    Narrator(engine, "http://127.0.0.1:8080", tmp_path).look()
    (line,) = [record.getMessage() for record in caplog.records if " FAILED: " in record.getMessage()]
    assert f"upload: {UPLOAD_ERROR}" in line, line


def test_a_job_that_failed_in_the_crawl_and_at_the_upload_is_told_with_both(engine, transport, tmp_path, caplog):  # noqa: F811
    job_id, attempt, handle = started_job(engine, transport, SEEDS)
    assert handle(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id=CONTROLLER, status=JobStatus.FAILED,
                              harvest_errors="the crawl engine died during the crawl: exit status -9",
                              upload_errors=UPLOAD_ERROR))
    caplog.set_level(logging.INFO, logger="harvestsuite.demo")
    Narrator(engine, "http://127.0.0.1:8080", tmp_path).look()
    (line,) = [record.getMessage() for record in caplog.records if " FAILED: " in record.getMessage()]
    assert "harvest: the crawl engine died during the crawl: exit status -9" in line, line
    assert f"upload: {UPLOAD_ERROR}" in line, line
