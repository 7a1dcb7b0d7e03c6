"""The web UI's links to the replay service: on the replay origin, in a new tab, only when replay.url is set."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from sqlalchemy import update

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus
from harvestdef.settings import load_settings
from harvester.postprocess.metadata import MetadataInfo, write_metadata_warc
from tests.webui.conftest import PASSWORD, csrf_of
from tests.webui.test_jobs import CRAWL_LOG, seed
from webui import create_app
from webui.replaylinks import calendar_link, capture_link, crawl_log_capture_link, timestamp14

REPLAY = "https://replay.example.org"
STARTED = datetime(2026, 3, 1, 9, 59, 58, tzinfo=UTC)


def test_links_follow_pywbs_url_forms():
    assert capture_link(REPLAY + "/", "http://a.dk/", STARTED) == f"{REPLAY}/all/20260301095958/http://a.dk/"
    assert capture_link(REPLAY, "http://a.dk/", "20260301095958123", "harvest-7") == \
        f"{REPLAY}/harvest-7/20260301095958/http://a.dk/"
    assert calendar_link(REPLAY, "http://a.dk/x") == f"{REPLAY}/all/*/http://a.dk/x"
    assert capture_link("", "http://a.dk/", STARTED) is None and calendar_link("", "http://a.dk/") is None
    assert timestamp14("2026-03-01T10:00:00.000Z") == "20260301100000"
    line = "2026-03-01T10:00:00.000Z 200 12 http://a.dk/ - - text/html #001 20260301095959123+45 sha1:X - -"
    assert crawl_log_capture_link(REPLAY, line) == f"{REPLAY}/all/20260301095959/http://a.dk/"
    assert crawl_log_capture_link(REPLAY, line.replace(" 200 ", " 404 ")) is None
    assert crawl_log_capture_link(REPLAY, line.replace(" 200 ", " -6 ")) is None


def client_for(webui_engine, tmp_path, replay_url: str):  # noqa: ANN001, ANN201
    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test-secret",
                                                    "harvestsuite.archive.root": str(tmp_path / "archive"),
                                                    "harvestsuite.replay.url": replay_url})
    client = create_app(settings, webui_engine, {"TESTING": True}).test_client()
    client.post("/login", data={"name": "archivist", "password": PASSWORD, "csrf_token": csrf_of(client)})
    return client


@pytest.mark.parametrize("replay_url", [REPLAY, ""])
def test_job_page_links_seeds_and_2xx_crawl_log_lines_only_with_a_replay_url(webui_engine, tmp_path, replay_url):
    seed(webui_engine, [JobStatus.DONE])
    with webui_engine.begin() as conn:
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == 1).values(startdate=STARTED))
    log = tmp_path / "crawl.log"
    log.write_text(CRAWL_LOG)
    info = MetadataInfo(job_id=1, harvest_id=1, harvest_num=1, organization="netarkivet.dk",
                        heritrix_version="3.4.0", software_version="test", hostname="h", ip="127.0.0.1")
    write_metadata_warc(tmp_path / "archive" / "1" / "1" / "1-metadata-1.warc.gz", info, [], [], [log], [])
    client = client_for(webui_engine, tmp_path, replay_url)
    page = client.get("/status/jobs/1?domain=alpha.dk").get_data(as_text=True)
    assert "http://www.alpha.dk/missing" in page, "the crawl-log search ran"
    links = re.findall(r'<a href="([^"]+)" target="_blank" rel="noopener" class="replay-link">(\w+)</a>', page)
    if not replay_url:
        assert links == [] and "replay.example.org" not in page
        return
    assert (f"{REPLAY}/all/20260301095958/http://www.alpha.dk", "view") in links
    assert (f"{REPLAY}/all/*/http://www.alpha.dk", "captures") in links
    assert (f"{REPLAY}/all/20260301095958/https://beta.dk", "view") in links
    # the 200 line of the search has its own time; the 404 line has no link
    assert (f"{REPLAY}/all/20260301100000/http://www.alpha.dk/", "view") in links
    assert not any("missing" in href for href, _ in links)
    assert all(href.startswith(REPLAY + "/") for href, _ in links), "never through the web UI's origin"
