"""Frontier reports from a running crawl to frontierreportmonitor: the harvest controller as a process
driving the bundled engine over the local test site, the real RabbitMQ, the scheduler's monitor intake."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus
from harvestdef.repositories.users import UserRepository
from tests.engine.site import TestSite
from tests.harvester.conftest import FINAL
from tests.webui.conftest import PASSWORD, csrf_of
from webui import create_app


@pytest.fixture
def harvest_site() -> Iterator[TestSite]:
    # Every response a little late, so the crawl's queues still hold URIs when a report is taken.
    with TestSite(stall_seconds=60.0, response_delay=0.1) as site:
        yield site


def test_frontier_reports_of_a_running_crawl_reach_frontierreportmonitor(harvesting):
    h = harvesting()
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")],
                                                   "bibliotek.no": [h.seed("www.bibliotek.no")]})
    h.start_scheduler()
    controller = h.start_controller(**{"harvester.harvesting.frontier.frontierReportWaitTime": 1})
    f = s.frontierreportmonitor
    seen: dict[str, tuple] = {}
    deadline = time.monotonic() + 120
    job_ids: set[int] = set()
    while time.monotonic() < deadline:
        jobs = h.jobs(harvest_id)
        job_ids |= {job.job_id for job in jobs}
        with h.engine.connect() as conn:
            for row in conn.execute(select(f).where(f.c.jobid.in_(job_ids))):
                seen[(row.filterid, row.domainname)] = row
        if jobs and all(JobStatus(job.status) in FINAL for job in jobs):
            break
        time.sleep(0.2)
    (job,) = h.jobs(harvest_id)
    assert JobStatus(job.status) == JobStatus.DONE, (job, controller.text()[-3000:])
    assert seen, f"no frontier report was stored:\n{controller.text()[-3000:]}"
    assert {domain for _, domain in seen} <= {"kulturarv.dk", "bibliotek.no"}, seen
    # one report per NetarchiveSuite filter; nothing has a budget here, so no queue is retired
    assert {filter_id for filter_id, _ in seen} <= {"TopTotalEnqueuesFilter", "ExhaustedQueuesFilter"}, seen
    assert any(filter_id == "TopTotalEnqueuesFilter" for filter_id, _ in seen), seen
    for (filter_id, _), row in seen.items():
        assert row.jobid == job.job_id and row.totalenqueues > 0 and row.totalbudget == -1
        assert row.lastqueueduri.startswith("http://")
        if filter_id == "TopTotalEnqueuesFilter":
            assert row.currentsize > 0 and row.sessionbalance > 0
        else:
            assert row.currentsize == 0
    assert "frontier report" not in controller.text()  # neither a failed fetch nor skipped blocks
    # the job's end takes its rows off the monitor
    with h.engine.connect() as conn:
        assert conn.execute(select(f).where(f.c.jobid == job.job_id)).all() == []


def test_the_live_view_of_a_running_crawl_shows_its_newest_crawl_log_lines(harvesting):
    """The job page's live figures come from the running crawler through CrawlProgress: the crawl-log lines
    the live endpoint shows are the engine's own, read while the job is STARTED."""
    h = harvesting()
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    with h.engine.begin() as conn:
        UserRepository(conn).create("archivist", "archivist", password=PASSWORD)
    client = create_app(h.settings(), h.engine, {"TESTING": True}).test_client()
    assert client.post("/login", data={"name": "archivist", "password": PASSWORD,
                                       "csrf_token": csrf_of(client)}).status_code == 302
    h.start_scheduler()
    controller = h.start_controller()
    lines: list[str] = []
    fetched: list[str] = []  # lines of pages (not of the dns: prerequisite) seen while the job ran
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not fetched:
        jobs = h.jobs(harvest_id)
        started = [job for job in jobs if JobStatus(job.status) == JobStatus.STARTED]
        if started:
            answer = client.get(f"/api/v1/jobs/{started[0].job_id}/live", query_string={"log_regex": "kulturarv"})
            assert answer.status_code == 200, answer.get_json()
            lines = answer.get_json()["log"]
            fetched = [line for line in lines if line.split()[3].startswith("http://www.kulturarv.dk")]
        if jobs and all(JobStatus(job.status) in FINAL for job in jobs):
            break
        time.sleep(0.2)
    assert fetched, f"the live view showed no page's crawl-log line while the job ran:\n{controller.text()[-3000:]}"
    # crawl.log lines as the engine writes them: a timestamp, a status, a size, then the URI
    assert all("kulturarv.dk" in line for line in lines)
    (job,) = h.wait_for_jobs(harvest_id)
    assert JobStatus(job.status) == JobStatus.DONE, (job, controller.text()[-3000:])


def test_a_crawl_resumed_after_a_pause_reports_its_frontier_again_at_once(harvesting):
    """The frontier report taken before a pause says nothing of the queues after it: the first poll that
    finds the crawl running again fetches a new one, whatever frontierReportWaitTime says (600 s here)."""
    from tests.harvester.test_controller_checkpoint_events import paced_template
    from tests.harvester.test_controller_failures import wait_for
    from tests.harvester.test_live_steering import LIVE, change, crawler_status, running_job, settled

    h = harvesting(paced_template())
    harvest_id = h.selective_harvest("resumed", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.start_scheduler(**LIVE)
    controller = h.start_controller(**{"harvester.harvesting.frontier.frontierReportWaitTime": 600})
    job_id = running_job(h, harvest_id)
    f = s.frontierreportmonitor

    def reported_at():
        with h.engine.connect() as conn:
            return conn.scalar(select(func.max(f.c.tstamp)).where(f.c.jobid == job_id))

    first = wait_for(reported_at, 60, "the crawl's first frontier report")
    assert settled(h, job_id, change(h, job_id, "pause")).state == "applied"
    wait_for(lambda: crawler_status(h, job_id) == "CRAWLER_PAUSED", 30, "the crawler paused")
    resumed = settled(h, job_id, change(h, job_id, "resume"))
    assert resumed.state == "applied", resumed
    again = wait_for(lambda: (at := reported_at()) is not None and at > first and at, 30,
                     f"a frontier report after the resume:\n{controller.text()[-3000:]}")
    assert again >= resumed.applied - timedelta(seconds=2), (again, resumed.applied)
