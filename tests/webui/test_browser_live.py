"""A running job's page and the running jobs page in Debian's chromium: the figures the scheduler's intake
records after the page was loaded appear on it without a reload (static/live.js polling), and the page
stops polling once the job has ended."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from harvestdef.db.engine import open_engine
from harvestdef.db.types import utcnow
from harvestdef.messages import CrawlStatus
from harvestdef.model.status import JobStatus
from harvestdef.queues import open_transport
from harvestdef.settings import QueueSettings
from scheduler.dispatch import Dispatcher, DispatchOptions
from scheduler.handlers import MessageHandlers
from scheduler.intake import StatusIntake
from scheduler.notify import Notifier
from tests.scheduler.test_intake import NAMES, claim, job, one_job, ready, register
from tests.webui.browser import ServedWebui, log_in, screenshot
from tests.webui.test_live_job import CONTROLLER, LINE, Crawl, queue

pytestmark = pytest.mark.timeout(300)



@pytest.fixture
def crawl_served(tmp_path: Path) -> Iterator[tuple[ServedWebui, Crawl]]:
    """A web UI polling every half second, and a STARTED job on its database reported through the intake."""
    with ServedWebui(tmp_path, users=("curator",), settings={"harvestsuite.webui.livePollIntervalMs": "500"}) as webui:
        engine = open_engine(f"sqlite:///{tmp_path / 'harvest.db'}")
        transport = open_transport(QueueSettings(url=f"sqlite:///{tmp_path / 'queue.db'}", environmentName="UNIT"))
        try:
            handle = MessageHandlers(engine, transport, Dispatcher(NAMES, DispatchOptions()),
                                     StatusIntake(Notifier(), history_sample_rate=1)).carry_out_one
            job_id, _ = one_job(engine, domains=(("a.dk", 1000, -1), ("københavn.dk", 1000, -1)))
            register(handle, CONTROLLER)
            assert ready(handle, CONTROLLER) == job_id
            attempt = job(engine, job_id).attempt_id
            assert claim(handle, job_id, attempt, CONTROLLER).granted
            handle(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id=CONTROLLER, status=JobStatus.STARTED))
            yield webui, Crawl(job_id, attempt, handle)
        finally:
            transport.close()
            engine.dispose()


def test_the_running_job_page_follows_the_crawl_without_a_reload(browser, crawl_served, tmp_path):
    webui, crawl = crawl_served
    start = utcnow()
    crawl.heartbeat(start)
    crawl.progress(start - timedelta(seconds=20), downloaded_files=3, queued_files=40, elapsed_seconds=40)
    crawl.progress(start, downloaded_files=10, queued_files=90, crawl_log_tail=[LINE.format(1, 1)])
    crawl.frontier(start, queue("a.dk", 7), queue("www.københavn.dk", 30, wake="1s250ms"))
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=webui.url)
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        log_in(page, webui.url, "curator")
        page.goto(f"/status/jobs/{crawl.job_id}")
        assert page.locator('[data-live="downloaded"]').inner_text() == "10"
        page.evaluate("window.loadedOnce = true")  # gone if the page were reloaded

        crawl.heartbeat(utcnow())
        crawl.progress(utcnow() + timedelta(seconds=10), downloaded_files=1234, queued_files=80, elapsed_seconds=70,
                       active_queues=0, crawl_log_tail=[LINE.format(2, 2), LINE.format(1, 1)])
        page.wait_for_function("document.querySelector('[data-live=\"downloaded\"]').textContent === '1,234'")
        assert page.evaluate("window.loadedOnce") is True
        assert "page2" in page.locator('[data-live="log"]').inner_text()
        assert page.locator('[data-reason="no_active_queues"]').count() == 1
        assert page.locator('svg[data-live="chart"] polyline').count() == 2
        screenshot(page, tmp_path, "live-job")

        page.goto("/status/running")
        page.evaluate("window.loadedOnce = true")
        crawl.progress(utcnow() + timedelta(seconds=20), downloaded_files=5678)
        page.wait_for_function("document.querySelector('#running-jobs [data-field=\"downloaded\"]')"
                               ".textContent.trim() === '5,678'")
        assert page.evaluate("window.loadedOnce") is True
        page.get_by_label("Domain").fill("xn--kbenhavn-54a.dk")
        page.get_by_role("button", name="Find its running job").click()
        page.wait_for_load_state()
        assert page.locator(f'#running-jobs tr[data-job="{crawl.job_id}"]').count() == 1
        screenshot(page, tmp_path, "running-jobs-domain")
    finally:
        context.close()


def test_the_job_page_pages_its_changes_and_links_the_older_ones_once_the_list_outgrows_the_page(browser, tmp_path):
    """The newest page of changes (harvestsuite.liveChanges.pageSize) follows the list as it grows, and the
    link to the older ones appears once the page no longer holds them all, without a reload."""
    from harvestdef.repositories.jobchanges import JobChangeRepository
    settings = {"harvestsuite.webui.livePollIntervalMs": "500", "harvestsuite.liveChanges.pageSize": "3"}
    with ServedWebui(tmp_path, users=("curator",), settings=settings) as webui:
        engine = open_engine(f"sqlite:///{tmp_path / 'harvest.db'}")
        transport = open_transport(QueueSettings(url=f"sqlite:///{tmp_path / 'queue.db'}", environmentName="UNIT"))
        context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=webui.url)
        context.set_default_timeout(15_000)
        try:
            handle = MessageHandlers(engine, transport, Dispatcher(NAMES, DispatchOptions()),
                                     StatusIntake(Notifier(), history_sample_rate=1)).carry_out_one
            job_id, _ = one_job(engine, domains=(("a.dk", 1000, -1),))
            register(handle, CONTROLLER)
            assert ready(handle, CONTROLLER) == job_id
            attempt = job(engine, job_id).attempt_id
            assert claim(handle, job_id, attempt, CONTROLLER).granted
            handle(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id=CONTROLLER, status=JobStatus.STARTED))

            def add(count: int) -> None:
                with engine.begin() as conn:
                    for _ in range(count):
                        JobChangeRepository(conn).add(job_id, "reject", {"regex": ".*/x/.*"}, "ops1", utcnow())

            add(2)
            page = context.new_page()
            log_in(page, webui.url, "curator")
            page.goto(f"/status/jobs/{job_id}")
            pages = page.locator("[data-changes-pages]")
            assert page.locator('[data-live="changes"] tr').count() == 2 and pages.is_hidden()
            page.evaluate("window.loadedOnce = true")  # gone if the page were reloaded
            add(3)
            page.locator('[data-live="changes"] tr[data-version="5"]').wait_for()
            pages.wait_for(state="visible")
            assert [row.get_attribute("data-version") for row in
                    page.locator('[data-live="changes"] tr').all()] == ["3", "4", "5"]
            assert pages.locator("[data-changes-range]").inner_text() == "Changes 3 to 5 of 5."
            assert page.evaluate("window.loadedOnce") is True
            page.locator('[data-changes-page="older"]').click()
            page.wait_for_load_state()
            assert [row.get_attribute("data-version") for row in page.locator("table.job-changes tbody tr").all()] \
                == ["1", "2"]
            assert page.locator('[data-changes-page="newest"]').is_visible()
            screenshot(page, tmp_path, "job-changes-older-page")
        finally:
            context.close()
            transport.close()
            engine.dispose()
