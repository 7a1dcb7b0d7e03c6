"""The running job's page in Debian's chromium, steering a real crawl: the scheduler, a harvest controller
process with its bundled engine and RabbitMQ (conftest.py), and ``harvestsuite webui run`` on the same
database. An operator pauses the crawl from the page, adds a reject rule while it is paused, resumes it and
stops it, and the page follows each step without a reload: the change list, "Paused since ... by
operator", the buttons, and the end of the job."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus
from tests.harvester.test_controller_checkpoint_events import paced_template
from tests.harvester.test_controller_failures import crawled_lines, wait_for
from tests.harvester.test_live_steering import LIVE, running_job
from tests.webui.browser import ServedWebui, log_in, screenshot

pytestmark = pytest.mark.timeout(300)



def endless_template() -> str:
    """The paced template with room for a thousand link hops: the test site's calendar trap (/trap/N/ links to
    /trap/N+1/) keeps the crawl going, four URIs a second, until the operator stops it, however slow the
    machine is at opening the page."""
    return paced_template().replace("%{MAX_HOPS}", "1000")


def test_an_operator_pauses_changes_resumes_and_stops_a_crawl_from_its_page(browser, harvesting, tmp_path):
    h = harvesting(endless_template())
    harvest_id = h.selective_harvest("from the page", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.start_scheduler(**LIVE)
    h.start_controller("steered")
    job_id = running_job(h, harvest_id)
    wait_for(lambda: crawled_lines(h.server_dir) >= 5, 60, "five crawl.log lines")
    with ServedWebui(tmp_path, users=("operator",),
                     settings={"harvestsuite.webui.livePollIntervalMs": "500"}) as webui:
        context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=webui.url)
        context.set_default_timeout(30_000)
        page = context.new_page()
        try:
            log_in(page, webui.url, "operator")
            page.goto(f"/status/jobs/{job_id}")
            page.evaluate("window.loadedOnce = true")  # gone if the page were reloaded
            changes = page.locator('[data-live="changes"]')
            paused = page.locator('[data-live="paused"]')
            page.get_by_role("button", name="Pause").click()
            changes.locator('tr[data-version="1"][data-state="applied"]').wait_for()
            paused.wait_for(state="visible")
            assert paused.inner_text().startswith("Paused since ") and paused.inner_text().endswith(" by operator")
            page.wait_for_function("!document.querySelector('.control-actions [data-action=\"resume\"] button')"
                                   ".disabled")
            lines_paused = crawled_lines(h.server_dir)

            rule = page.locator('form[data-form="rule"]')
            rule.get_by_label("Regular expression").fill(".*/private/.*")
            rule.get_by_role("button", name="Send").click()
            page.wait_for_load_state()
            page.locator('[data-live="changes"] tr[data-version="2"][data-state="applied"]').wait_for()
            screenshot(page, tmp_path, "job-steered-paused")
            page.evaluate("window.loadedOnce = true")  # the form's answer was a page of its own

            page.get_by_role("button", name="Resume").click()
            page.locator('[data-live="changes"] tr[data-version="3"][data-state="applied"]').wait_for()
            paused.wait_for(state="hidden")
            wait_for(lambda: crawled_lines(h.server_dir) > lines_paused, 60, "the crawl going on after resume")

            page.once("dialog", lambda dialog: dialog.accept())
            page.get_by_role("button", name="Stop").click()
            page.locator('[data-live="changes"] tr[data-version="4"][data-state="applied"]').wait_for(timeout=60_000)
            (job,) = h.wait_for_jobs(harvest_id, timeout=120)
            assert JobStatus(job.status) == JobStatus.DONE, job
            assert "stopped by" not in (job.harvest_errors or ""), "the operator's stop is no harvest error"
            with h.engine.connect() as conn:
                end = conn.execute(select(s.job_ends).where(s.job_ends.c.job_id == job.job_id)).one()
            assert (end.cause, end.author, end.change_version) == ("stop", "operator", 4), end
            page.locator('[data-live-url][data-state="DONE"]').wait_for(state="attached")
            assert page.locator(".control-actions button:enabled").count() == 0
            assert page.locator('[data-live="change_forms"]').is_hidden()
            assert page.evaluate("window.loadedOnce") is True
            screenshot(page, tmp_path, "job-steered-stopped")
            # once the job has ended, its page says who paused, resumed and stopped it, none of it an error
            page.reload()
            for action, version in (("pause", 1), ("resume", 3)):
                line = page.locator(f'[data-operator-action="{action}"]')
                assert line.inner_text().startswith("Paused by operator at " if action == "pause"
                                                    else "Resumed by operator at "), line.inner_text()
                assert line.inner_text().endswith(f"(change {version}).")
            assert page.locator('[data-stopped-by="operator"]').inner_text().startswith("Stopped by operator at ")
            assert page.locator(".error-message").count() == 0
            screenshot(page, tmp_path, "job-steered-stopped-page")
        finally:
            context.close()
