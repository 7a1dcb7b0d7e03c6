"""A job FAILED by an archive store outage turns DONE when its files were stored later, with its history
written then; no job FAILED for another reason is ever turned DONE. And the checkpoints and resumes a
controller reports are stored once each. Both databases, the handlers driven directly."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import func, select, update

from harvestdef.db import schema as s
from harvestdef.messages import CrawlStatus, JobEvent
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.repositories.audit import AuditRepository
from harvestdef.repositories.jobevents import JobEventRepository
from tests.scheduler.test_intake import handlers, job, notifier, report, started_job, transport  # noqa: F401 - fixtures

C = StopReason.DOWNLOAD_COMPLETE
REPORT = report(("a.dk", 10, 1000, C), ("b.dk", 3, 300, C))


def status(job_id, attempt, state, controller="ctl-1", **fields):
    return CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id=controller, status=state, **fields)


def history_rows(engine, job_id) -> int:
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).where(s.historyinfo.c.job_id == job_id))


def run_summary(engine):
    with engine.connect() as conn:
        return conn.execute(select(s.harvest_run_summary.c.jobs_done, s.harvest_run_summary.c.jobs_failed,
                                   s.harvest_run_summary.c.objects)).one()


def test_a_job_failed_by_the_store_is_done_once_its_files_are_stored(engine, handlers):  # noqa: F811
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    assert handle(status(job_id, attempt, JobStatus.FAILED, domain_report=REPORT, store_outage=True,
                                         upload_errors="the archive store failed: 3 files not stored"))
    failed = job(engine, job_id)
    assert failed.status == JobStatus.FAILED and failed.store_failed
    # not archived yet: no history claims what the job harvested
    assert history_rows(engine, job_id) == 0
    assert tuple(run_summary(engine)) == (0, 1, 0)

    assert handle(status(job_id, attempt, JobStatus.DONE, domain_report=REPORT, store_outage=True))
    done = job(engine, job_id)
    assert done.status == JobStatus.DONE and not done.store_failed and done.upload_errors is None
    assert history_rows(engine, job_id) == 2
    assert tuple(run_summary(engine)) == (1, 0, 13)
    with engine.connect() as conn:
        (change,) = [e for e in AuditRepository(conn).changes_of("jobs", job_id)
                     if e.after and e.after.get("status") == int(JobStatus.DONE)]
    assert change.before == {"status": int(JobStatus.FAILED), "attempt_id": attempt}
    assert change.after["reason"] == "STORED_AFTER_STORE_OUTAGE" and change.actor == "ctl-1"

    # a repeat of the second report changes nothing and writes no second history
    assert not handle(status(job_id, attempt, JobStatus.DONE, domain_report=REPORT,
                                             store_outage=True))
    assert history_rows(engine, job_id) == 2 and tuple(run_summary(engine)) == (1, 0, 13)


def test_a_job_failed_for_another_reason_is_never_turned_done(engine, handlers):  # noqa: F811
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    assert handle(status(job_id, attempt, JobStatus.FAILED, domain_report=REPORT,
                                         harvest_errors="the crawl engine died during the crawl"))
    assert history_rows(engine, job_id) == 2
    assert not handle(status(job_id, attempt, JobStatus.DONE, domain_report=REPORT,
                                             store_outage=True))
    still = job(engine, job_id)
    assert still.status == JobStatus.FAILED and still.harvest_errors == "the crawl engine died during the crawl"
    assert history_rows(engine, job_id) == 2 and tuple(run_summary(engine))[:2] == (0, 1)


def test_the_second_report_must_come_from_the_attempt_and_controller_and_before_a_reject(engine, handlers):  # noqa: F811
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    assert handle(status(job_id, attempt, JobStatus.FAILED, store_outage=True))
    assert not handle(status(job_id, "another-attempt", JobStatus.DONE, domain_report=REPORT,
                                             store_outage=True))
    assert not handle(status(job_id, attempt, JobStatus.DONE, controller="ctl-2",
                                             domain_report=REPORT, store_outage=True))
    assert job(engine, job_id).status == JobStatus.FAILED
    with engine.begin() as conn:  # an archivist rejected it meanwhile: that stands
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == job_id).values(status=int(JobStatus.FAILED_REJECTED)))
    assert not handle(status(job_id, attempt, JobStatus.DONE, domain_report=REPORT,
                                             store_outage=True))
    assert job(engine, job_id).status == JobStatus.FAILED_REJECTED and history_rows(engine, job_id) == 0


def test_checkpoints_and_resumes_are_stored_once_each_in_order(engine, handlers):  # noqa: F811
    handle = handlers.carry_out_one
    job_id, attempt, _ = started_job(engine, handlers)
    checkpoint = JobEvent(job_id=job_id, attempt_id=attempt, controller_id="ctl-1", kind="checkpoint",
                          checkpoint="cp00001-20260101120000", happened_at="2026-01-01T12:00:00.5+00:00")
    resume = JobEvent(job_id=job_id, attempt_id=attempt, controller_id="ctl-2", kind="resume",
                      checkpoint="cp00001-20260101120000", happened_at="2026-01-01T14:00:00+01:00")
    assert handle(resume)
    assert handle(checkpoint)
    assert not handle(checkpoint)  # delivered twice
    assert not handle(JobEvent(job_id=999_999, attempt_id="x", controller_id="c", kind="resume",
                                            checkpoint="cp00001-20260101120000",
                                            happened_at="2026-01-01T12:00:00+00:00"))
    with engine.connect() as conn:
        events = JobEventRepository(conn).for_job(job_id)
    assert [(e.kind, e.controller_id, e.happened_at) for e in events] == [
        ("checkpoint", "ctl-1", datetime(2026, 1, 1, 12, 0, 0, 500000, tzinfo=UTC)),
        ("resume", "ctl-2", datetime(2026, 1, 1, 13, 0, 0, tzinfo=UTC))]
