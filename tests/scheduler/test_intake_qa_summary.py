"""A job's final CrawlStatus carries its QA report in numbers; the status intake keeps them per job, for the
harvest page's sums, and a controller that sends none (an older one) leaves no row."""

from __future__ import annotations

from sqlalchemy import select

from harvestdef.db import schema as s
from harvestdef.messages import CrawlStatus, QaSummary, decode, encode
from harvestdef.model.status import JobStatus, StopReason
from tests.scheduler.test_intake import handlers, notifier, report, started_job, transport  # noqa: F401


def test_the_final_status_keeps_the_jobs_qa_summary_once(engine, handlers):  # noqa: F811
    job_id, attempt, _ = started_job(engine, handlers)
    done = CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id="ctl-1", status=JobStatus.DONE,
                       domain_report=report(("a.dk", 3, 1200, StopReason.DOWNLOAD_COMPLETE)),
                       qa_summary=QaSummary(seeds_total=4, seeds_not_captured=2, pages_with_missing_resources=3,
                                            missing_resources=5))
    assert decode(encode(done), CrawlStatus) == done
    assert handlers.carry_out_one(done)
    assert not handlers.carry_out_one(done)
    with engine.connect() as conn:
        rows = conn.execute(select(s.job_qa_summaries)).mappings().all()
    assert [(r["job_id"], r["harvest_id"], r["harvest_num"], r["seeds_total"], r["seeds_not_captured"],
             r["pages_with_missing_resources"], r["missing_resources"]) for r in rows] == [(job_id, 1, 1, 4, 2, 3, 5)]


def test_a_final_status_without_a_qa_summary_stores_none(engine, handlers):  # noqa: F811
    job_id, attempt, _ = started_job(engine, handlers)
    assert handlers.carry_out_one(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id="ctl-1",
                                              status=JobStatus.FAILED))
    with engine.connect() as conn:
        assert conn.execute(select(s.job_qa_summaries)).all() == []
