"""A selective harvest on the BROWSER channel through the real pipeline: the scheduler (a thread of the test)
dispatches to the BROWSER queue, ``harvestsuite harvester run`` with ``harvestsuite.harvester.crawler =
browser`` starts the browser crawler as its child, drives it through the REST API and post-processes; the
site's pages are built by scripts (tests/engine/scriptsite.py). The job's statistics, metadata WARC, CDXJ
and deduplication entries are those of any job; a second run stores the unchanged image as a revisit; pywb
replays the page with what its scripts made."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from warcio.archiveiterator import ArchiveIterator

from harvestdef.db import schema as s
from harvestdef.errors import SettingsError
from harvestdef.model.status import JobStatus
from harvestdef.repositories.channels import ChannelRepository
from harvestdef.settings import load_settings
from harvester.controller import ControllerOptions
from tests.engine.scriptsite import CDN_HOST, HOST, NOTE_TEXT, SCRIPT_TEXT, ScriptSite
from tests.harvester.conftest import OUR_TEMPLATE, Harvesting, fast_politeness
from tests.harvester.test_dedup_chain import stored_job
from tests.pywb import pywb_server
from tests.webui.browser import launch_chromium, require_browser

BROWSER_CONTROLLER = {
    "harvester.harvesting.channel": ["BROWSER"],
    "harvestsuite.harvester.crawler": "browser",
    "harvestsuite.crawler.browser.pageTimeLimit": 10,
    "harvestsuite.crawler.browser.settleTime": 1,
    "harvestsuite.crawler.browser.pagesPerMinutePerHost": 0,
}


@pytest.fixture
def browser_harvesting(tmp_path: Path, harvest_queue_url: str) -> Iterator[Harvesting]:
    require_browser()
    with ScriptSite() as site:
        harvesting = Harvesting(tmp_path, site, harvest_queue_url,
                                fast_politeness(OUR_TEMPLATE.read_text(encoding="utf-8")))
        try:
            yield harvesting
        finally:
            harvesting.close()


def _records(path: Path) -> list[tuple[str, str, bytes]]:
    with open(path, "rb") as handle:
        return [(record.rec_type, record.rec_headers.get_header("WARC-Target-URI") or "",
                 record.content_stream().read()) for record in ArchiveIterator(handle)]


def test_a_selective_harvest_on_the_browser_channel_goes_through_the_whole_pipeline(browser_harvesting, tmp_path):
    h = browser_harvesting
    home = h.seed(HOST)
    harvest_id = h.selective_harvest("scripted", {"skriptet.dk": [home]})
    with h.engine.begin() as conn:
        ChannelRepository(conn).map_harvest(harvest_id, "BROWSER", expected_edition=1)
    h.start_scheduler()
    controller = h.start_controller(**BROWSER_CONTROLLER)
    (job,) = h.wait_for_jobs(harvest_id, timeout=180)
    assert JobStatus(job.status) == JobStatus.DONE, job
    assert "crawler browser" in controller.text()
    # the child is the browser crawler, under the limits the controller was given
    assert "Browser crawler: /usr/bin/chromium, 10 s per page" in (h.server_dir / "engine.out").read_text()
    first = stored_job(h.archive, harvest_id, job.job_id)

    # the statistics of the job: the domain's objects and bytes from the browser's crawl.log
    (history,) = h.history(job.job_id)
    assert history.name == "skriptet.dk" and history.objectcount >= 7 and history.bytecount > 0
    # the WARC holds what the scripts fetched; the metadata WARC holds the crawl.log of the browser's fetches
    responses = {url: body for path in first.warcs for kind, url, body in _records(path) if kind == "response"}
    assert SCRIPT_TEXT.encode() in responses[h.seed(HOST, "/api/articles.json")]
    assert NOTE_TEXT.encode() in responses[h.seed(HOST, "/api/note.txt")]
    (metadata,) = h.archive.glob(f"{harvest_id}/{job.job_id}/{job.job_id}-metadata-1.warc.gz")
    metadata_records = _records(metadata)
    (crawl_log,) = [body for _, url, body in metadata_records if "crawl/logs/crawl.log" in url]
    lines = {fields[3]: fields for fields in (line.split() for line in crawl_log.decode().splitlines())}
    assert lines[h.seed(HOST, "/api/articles.json")][4:6] == ["E", home]
    assert lines[h.seed(HOST, "/artikel/1")][4:6] == ["L", home]
    assert any("cdx" in url for _, url, _ in metadata_records)
    # CDXJ and deduplication entries (non-text payloads) as for any job
    assert any(h.seed(HOST, "/api/articles.json").split("://")[1].split(":")[0] in path.read_text()
               for path in first.cdxj)
    logo = h.seed(CDN_HOST, "/logo.png")
    assert {logo, h.seed(HOST, "/app.js")} <= {entry.url for entry in first.entries}
    assert home not in {entry.url for entry in first.entries}

    # The second run stores the unchanged image as a revisit of the first capture.
    h.run_again(harvest_id)
    (second_job,) = h.wait_for_jobs(harvest_id, timeout=180, harvest_num=2)
    assert JobStatus(second_job.status) == JobStatus.DONE, second_job
    second = stored_job(h.archive, harvest_id, second_job.job_id)
    kinds = {url: kind for path in second.warcs for kind, url, _ in _records(path) if kind in ("response", "revisit")}
    assert kinds[logo] == "revisit" and kinds[home] == "response"

    # pywb replays the first run's page, and the browser shows what the page's scripts made from the archive
    with h.engine.connect() as conn:
        started = conn.scalar(select(s.jobs.c.startdate).where(s.jobs.c.job_id == job.job_id))
    working_dir = tmp_path / "pywb"
    working_dir.mkdir()
    with pywb_server(working_dir, "harvest", first.cdxj, first.warcs) as base_url:
        from playwright.sync_api import sync_playwright
        with sync_playwright() as playwright:
            chromium = launch_chromium(playwright)
            try:
                page = chromium.new_page()
                # pywb's framed replay, as an archivist sees it: the archived page in its replay frame
                page.goto(f"{base_url}/harvest/{started:%Y%m%d%H%M%S}/{home}")
                replayed = page.frame_locator("#replay_iframe")
                replayed.locator("#note").wait_for(timeout=20_000)
                assert replayed.locator("#title").text_content() == SCRIPT_TEXT
                assert replayed.locator("#note").text_content() == NOTE_TEXT
            finally:
                chromium.close()


def test_the_browser_crawler_is_not_an_external_heritrix():
    settings = load_settings(environ={}, overrides={"harvestsuite.harvester.crawler": "browser",
                                                    "harvestsuite.harvester.heritrixUrl": "https://heritrix:8443"})
    with pytest.raises(SettingsError, match="heritrixUrl"):
        ControllerOptions.from_settings(settings)
