"""What an operator did to a job, in Debian's chromium: an operator adds a reject rule and stops a running job
from its page; the job's controller answers both and reports the job DONE with the stop among its harvest
errors, as the harvester does (through the scheduler's real intake). The ended job's page and the job list
name who stopped it on a neutral line, with no error box or error badge, and its QA (a report made from the
crawl's own crawl.log and WARC with the applied rule) shows the rejected images as excluded by that rule,
folded after the first few, not as missing; in English and in Danish. Delete queued URIs asks before it is
sent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harvestdef.db.types import utcnow
from harvestdef.livechanges import end_description
from harvestdef.messages import CrawlStatus, LiveChangeResult
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.repositories.jobchanges import JobChangeRepository
from harvester.postprocess.metadata import MetadataInfo, write_metadata_warc
from harvester.postprocess.qa import build_qa_report, operator_rules
from tests.harvester.test_postprocess_qa import write_warc
from tests.scheduler.test_intake import report
from tests.webui.browser import screenshot
from tests.webui.test_browser_job_control import operator_page_of, steered_job
from tests.webui.test_live_job import CONTROLLER

pytestmark = pytest.mark.timeout(300)

SITE = "http://www.a.dk"
GALLERY = [f"{SITE}/gallery/{n}.jpg" for n in range(29)]


def store_qa_report(directory: Path, job_id: int, changes: list[dict]) -> None:
    """The job's metadata WARC in the archive store with the QA report post-processing makes of a crawl.log
    and a WARC: a page of 29 gallery images (which the reject rule kept out: not in crawl.log) and one image
    the crawl never reached."""
    work = directory / "crawl"
    work.mkdir()
    log = work / "crawl.log"
    log.write_text(f"2026-01-01T10:00:00.000Z   200 10 {SITE}/ - - text/html #001 - - {SITE}/ -\n", encoding="utf-8")
    body = "".join(f'<img src="{url}">' for url in GALLERY) + '<img src="/never.png">'
    warc = write_warc(work / "crawl.warc.gz", [(f"{SITE}/", "text/html", f"<html>{body}</html>".encode())])
    qa = build_qa_report(job_id, 1, [SITE], [log], [warc], ["a.dk", "københavn.dk"], rules=operator_rules(changes))
    (work / "qa-report.json").write_text(qa.to_json(), encoding="utf-8")
    info = MetadataInfo(job_id=job_id, harvest_id=1, harvest_num=1, organization="netarkivet.dk",
                        heritrix_version="3.4.0", software_version="test", hostname="h", ip="127.0.0.1",
                        qa_report=work / "qa-report.json")
    write_metadata_warc(directory / "archive" / "1" / str(job_id) / f"{job_id}-metadata-1.warc.gz", info, [], [],
                        [], [])


def answer(crawl, version: int) -> None:
    crawl.handle(LiveChangeResult(job_id=crawl.job_id, attempt_id=crawl.attempt, controller_id=CONTROLLER,
                                  version=version, state="applied", reason="", happened_at=utcnow().isoformat()))


def test_a_job_an_operator_stopped_names_who_and_its_rejected_uris_are_excluded_not_missing(browser, tmp_path):
    with steered_job(tmp_path, 300) as (webui, crawl, engine), operator_page_of(browser, webui) as page:
        page.goto(f"/status/jobs/{crawl.job_id}")
        rule = page.locator('form[data-form="rule"]')
        rule.get_by_label("Regular expression").fill(".*/gallery/.*")
        rule.get_by_role("button", name="Send").click()
        page.locator('[data-live="changes"] tr[data-version="1"]').wait_for()
        page.once("dialog", lambda dialog: dialog.accept())
        page.locator('.control-actions [data-action="stop"] button').click()
        page.locator('[data-live="changes"] tr[data-version="2"]').wait_for()

        # the controller applies both, then reports the job DONE with the stop among its harvest errors, as a
        # controller from before message schema 1.5 does: the scheduler reads it as the crawl's end
        answer(crawl, 1)
        answer(crawl, 2)
        stop_words = end_description("stop", "operator", 2)
        assert crawl.handle(CrawlStatus(
            job_id=crawl.job_id, attempt_id=crawl.attempt, controller_id=CONTROLLER, status=JobStatus.DONE,
            domain_report=report(("a.dk", 31, 9000, StopReason.DOWNLOAD_UNFINISHED),
                                 ("københavn.dk", 2, 300, StopReason.DOWNLOAD_UNFINISHED)),
            harvest_errors=stop_words, harvest_error_details=stop_words))
        with engine.connect() as conn:
            changes = JobChangeRepository(conn).for_job(crawl.job_id)
        assert [(c.kind, c.state) for c in changes] == [("reject", "applied"), ("stop", "applied")]
        # changes.jsonl's lines, as the controller wrote them
        store_qa_report(tmp_path, crawl.job_id, [
            {"version": c.version, "kind": c.kind, "payload": c.payload, "author": c.author, "state": c.state,
             "happened_at": c.applied.isoformat()} for c in changes])

        page.goto(f"/status/jobs/{crawl.job_id}")
        assert page.locator("h1 [data-job-status]").inner_text() == "DONE"
        ended = page.locator("p.ended-by")
        assert ended.inner_text().startswith("Stopped by operator at ") and ended.inner_text().endswith(
            " (change 2).")
        # a stop asked for is no error
        assert page.locator(".error-message").count() == 0, page.locator(".error-message").all_inner_texts()
        assert page.get_by_text(stop_words).count() == 0

        summary = page.locator('[data-qa="summary"]').inner_text()
        assert "1 embedded resource missing on 1 of 1 captured page." in summary, summary
        assert "29 more kept out by the operators’ rules or budgets (excluded, not missing)." in summary, summary
        excluded = page.locator('h4[data-qa-excluded="reject_rule"][data-change="1"]')
        assert excluded.inner_text().startswith("Reject rule .*/gallery/.* (change 1 by operator at ")
        assert excluded.inner_text().endswith("29 resources on 1 page")
        shown = page.locator("#excluded ~ ul.qa-resources").first.locator("> li")
        assert shown.count() == 5, "the first few; the rest folded"
        more = page.locator("#excluded ~ details.qa-more").first
        assert more.locator("li").first.is_hidden()
        assert shown.first.inner_text() == f"{GALLERY[0]} (not in crawl.log), needed by {SITE}/"
        more.locator("summary").click()
        assert more.locator("summary").inner_text() == "24 more resources"
        assert more.locator("li").first.is_visible() and more.locator("li").count() == 24
        missing = page.locator('h4[data-qa-reason="never_reached"]')
        # the operator's stop is why the crawl never got to it, and the heading says so rather than a fault
        assert re.fullmatch(r"Never reached: operator stopped the crawl \(change \d+\) before it got to them: "
                            r"1 resource on 1 page", missing.inner_text()), missing.inner_text()
        assert "gallery" not in page.locator('h4[data-qa-reason="never_reached"] + ul').inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        screenshot(page, tmp_path, "job-outcome-stopped-en")

        page.goto("/status/")
        row = page.locator(f'tr:has(a[href="/status/jobs/{crawl.job_id}"])')
        assert row.locator(".status").inner_text() == "DONE"
        ended_row = page.locator(f'tr:has(a[href="/status/jobs/{crawl.job_id}"]) + tr.job-ended')
        assert ended_row.inner_text().startswith("stopped by operator at ")
        assert ended_row.locator(".status.FAILED").count() == 0
        assert page.locator("tr.job-errors").count() == 0, "no error badge"
        screenshot(page, tmp_path, "job-outcome-list-en")

        page.context.add_cookies([{"name": "harvestsuite_language", "value": "da", "url": webui.url}])
        page.goto(f"/status/jobs/{crawl.job_id}")
        assert page.locator("p.ended-by").inner_text().startswith("Stoppet af operator ")
        assert page.locator('h4[data-qa-reason="never_reached"]').inner_text().startswith(
            "Aldrig nået: operator stoppede høstningen (ændring ")
        assert page.locator('h4[data-qa-excluded="reject_rule"]').inner_text().startswith(
            "Afvisningsregel .*/gallery/.* (ændring 1 af operator ")
        quality = page.locator("#quality ~ *").all_inner_texts()
        assert not any("Never reached" in text or "not in crawl.log" in text for text in quality)
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        screenshot(page, tmp_path, "job-outcome-stopped-da")
        page.goto("/status/")
        assert page.locator("tr.job-ended").first.inner_text().startswith("stoppet af operator ")
        screenshot(page, tmp_path, "job-outcome-list-da")


def test_delete_queued_uris_asks_first_and_sends_nothing_when_dismissed(browser, tmp_path):
    with steered_job(tmp_path, 300) as (webui, crawl, engine), operator_page_of(browser, webui) as page:
        page.goto(f"/status/jobs/{crawl.job_id}")
        form = page.locator('form[data-form="delete_queued"]')
        form.get_by_label("Regular expression").fill(".*/calendar/.*")
        asked: list[str] = []
        page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
        form.get_by_role("button", name="Delete").click()
        assert asked == [f"Delete the queued URIs of job {crawl.job_id} that the expression matches? They are "
                         f"dropped from the frontier and not crawled."]

        page.once("dialog", lambda dialog: dialog.accept())
        form.get_by_role("button", name="Delete").click()
        page.locator('[data-live="changes"] tr[data-version="1"]').wait_for()
        # one change only: the dismissed form was never posted
        with engine.connect() as conn:
            [change] = JobChangeRepository(conn).for_job(crawl.job_id)
        assert (change.kind, change.payload) == ("delete_queued", {"regex": ".*/calendar/.*"})
        screenshot(page, tmp_path, "job-delete-queued-asked")
