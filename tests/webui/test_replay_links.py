"""The web UI's links to the replay service: on the replay origin, in a new tab, only when replay.url is set,
and only for what was captured (the job page's seeds and 2xx crawl-log lines; the history pages' runs that
captured their configuration's seed)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update

from harvestdef.db import schema as s
from harvestdef.messages import NothingHarvested
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.repositories.history import DomainFigures, HistoryWriter
from harvestdef.repositories.jobs import JobRepository
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


def replay_links(page: str) -> list[tuple[str, str]]:
    return re.findall(r'<a href="([^"]+)" target="_blank" rel="noopener" class="replay-link">(\w+)</a>', page)


def record_two_runs(engine) -> None:  # noqa: ANN001
    """Runs 1 and 2 of "daily" (jobs 1 and 2, a day apart): alpha.dk captured in both; beta.dk captured in
    run 1, and in run 2 its seed answered 404: two objects (its DNS record and robots.txt), nothing of its own."""
    seed(engine, [JobStatus.DONE, JobStatus.DONE])
    with engine.begin() as conn:
        for job_id in (1, 2):
            conn.execute(update(s.jobs).where(s.jobs.c.job_id == job_id).values(
                startdate=STARTED + timedelta(days=job_id - 1)))
        jobs, writer = JobRepository(conn), HistoryWriter(conn)
        done = StopReason.DOWNLOAD_COMPLETE
        writer.record_job(jobs.get(1), JobStatus.DONE, done, {"alpha.dk": DomainFigures(100, 10_000, done),
                                                              "beta.dk": DomainFigures(50, 2_000, done)}, STARTED)
        lost = NothingHarvested("HTTP 404 (404) for http://www.beta.dk", 404, "http://www.beta.dk")
        writer.record_job(jobs.get(2), JobStatus.DONE, done, {
            "alpha.dk": DomainFigures(120, 30_000, done),
            "beta.dk": DomainFigures(2, 300, done, nothing_harvested=lost)}, STARTED + timedelta(days=1))


@pytest.mark.parametrize("replay_url", [REPLAY, ""])
def test_history_pages_link_the_runs_that_captured_their_seed(webui_engine, tmp_path, replay_url):
    record_two_runs(webui_engine)
    client = client_for(webui_engine, tmp_path, replay_url)
    run_1, run_2 = "20260301095958", "20260302095958"
    alpha = client.get("/history/domains/alpha.dk").get_data(as_text=True)
    beta = client.get("/history/domains/beta.dk").get_data(as_text=True)
    statistics = client.get("/history/harvests/daily").get_data(as_text=True)
    assert "30.0 KB" in alpha and "nothing harvested" in beta and "Largest domains" in statistics
    if not replay_url:
        for page in (alpha, beta, statistics):
            assert replay_links(page) == [] and "replay.example.org" not in page and "<th>Replay</th>" not in page
        return
    # the domain's latest capture (its default configuration's first seed, at the job's start), its calendar
    # across jobs, and each run that captured the seed
    assert replay_links(alpha) == [(f"{REPLAY}/all/{run_2}/http://www.alpha.dk", "view"),
                                   (f"{REPLAY}/all/*/http://www.alpha.dk", "captures"),
                                   (f"{REPLAY}/all/{run_2}/http://www.alpha.dk", "view"),
                                   (f"{REPLAY}/all/{run_1}/http://www.alpha.dk", "view")]
    # run 2 got nothing of beta.dk's own, though it has objects: its latest capture is run 1's, and run 2's
    # row has no link
    assert replay_links(beta) == [(f"{REPLAY}/all/{run_1}/http://www.beta.dk", "view"),
                                  (f"{REPLAY}/all/*/http://www.beta.dk", "captures"),
                                  (f"{REPLAY}/all/{run_1}/http://www.beta.dk", "view")]
    assert 'Latest capture: <span class="url">http://www.beta.dk</span> in job' in beta
    # the statistics' configurations, each at its newest run in the harvest: beta.dk's got nothing
    assert replay_links(statistics) == [(f"{REPLAY}/all/{run_2}/http://www.alpha.dk", "view"),
                                        (f"{REPLAY}/all/*/http://www.alpha.dk", "captures")]


def test_a_domain_never_captured_has_no_replay_links(webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.DONE])
    with webui_engine.begin() as conn:
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == 1).values(startdate=STARTED))
        done = StopReason.DOWNLOAD_COMPLETE
        HistoryWriter(conn).record_job(JobRepository(conn).get(1), JobStatus.DONE, done, {
            "alpha.dk": DomainFigures(0, 0, done)}, STARTED)
    client = client_for(webui_engine, tmp_path, REPLAY)
    for path in ("/history/domains/alpha.dk", "/history/domains/beta.dk", "/history/harvests/daily"):
        page = client.get(path).get_data(as_text=True)
        assert replay_links(page) == [] and "Latest capture" not in page, path
