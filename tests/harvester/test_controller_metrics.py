"""A harvest controller's /metrics (harvester/metrics.py, docs/metrics.md), scraped from ``harvestsuite harvester
run`` as a process while it waits, crawls a job of the local test site with the bundled engine and reports it;
the figures are checked against the job's own crawl.log and against what the scheduler recorded."""

from __future__ import annotations

from sqlalchemy import select

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus
from harvester.postprocess.crawllogreader import iter_crawl_log
from tests.metricscrape import free_port, refuses_connections, scrape_until, value

STATES = ("STARTING", "IDLE", "PAUSED", "CRAWLING", "POSTPROCESSING", "STOPPING")


def state_of(samples) -> list[str]:
    return [state for state in STATES if value(samples, "harvestsuite_harvester_state", state=state) == 1]


def test_a_controller_serves_its_state_crawl_and_upload_figures(harvesting):
    h = harvesting()
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    h.start_scheduler()
    controller = h.start_controller(**{"harvestsuite.metrics.harvesterPort": port})
    # before any job: idle, once the scheduler has answered its registration
    idle = scrape_until(url, lambda got: state_of(got) == ["IDLE"], 90, "IDLE")
    assert value(idle, "harvestsuite_harvester_current_job_id") == 0
    assert value(idle, "harvestsuite_harvester_disk_free_bytes") > 1_000_000
    (info,) = [labels for (name, labels) in idle if name == "harvestsuite_harvester_info"]
    assert dict(info)["channels"] == "FOCUSED" and dict(info)["controller_id"]
    assert value(idle, "harvestsuite_harvester_urls_fetched_total") == 0

    harvest_id = h.selective_harvest("measured", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    crawling = scrape_until(url, lambda got: state_of(got) in (["CRAWLING"], ["POSTPROCESSING"]), 90,
                            "taking the job")
    (job,) = h.wait_for_jobs(harvest_id, timeout=180)
    assert JobStatus(job.status) == JobStatus.DONE, (job, controller.text()[-3000:])
    assert value(crawling, "harvestsuite_harvester_current_job_id") == job.job_id

    after = scrape_until(url, lambda got: state_of(got) == ["IDLE"] and
                         value(got, "harvestsuite_harvester_jobs_finished_total", status="DONE") == 1, 60,
                         "IDLE again with the job reported")
    assert value(after, "harvestsuite_harvester_current_job_id") == 0
    # what the crawler counted, which the scheduler recorded from the same crawl: the domain's objects
    with h.engine.connect() as conn:
        objects = conn.scalar(select(s.historyinfo.c.objectcount).where(s.historyinfo.c.job_id == job.job_id))
    crawl_logs = sorted((h.server_dir / "oldjobs").glob("*/[0-9]*/logs/crawl.log"))
    downloaded = sum(1 for path in crawl_logs for line in iter_crawl_log(path) if line.status > 0)
    fetched = value(after, "harvestsuite_harvester_urls_fetched_total")
    assert fetched > 0 and objects > 0, (fetched, objects)
    assert fetched <= downloaded, (fetched, downloaded)
    assert value(after, "harvestsuite_harvester_written_bytes_total") > 0
    # the crawl's own gauges went back to 0 with the crawl
    for gauge in ("harvestsuite_harvester_crawl_urls_fetched", "harvestsuite_harvester_frontier_queued_urls",
                  "harvestsuite_harvester_fetch_rate_urls_per_second"):
        assert value(after, gauge) == 0, gauge
    assert value(after, "harvestsuite_harvester_upload_duration_seconds_count") == 1
    assert value(after, "harvestsuite_harvester_upload_duration_seconds_sum") > 0
    assert value(after, "harvestsuite_harvester_postprocessing_duration_seconds_count") == 1
    assert value(after, "harvestsuite_harvester_postprocessing_duration_seconds_sum") >= \
        value(after, "harvestsuite_harvester_upload_duration_seconds_sum")

    assert controller.stop() == 0
    assert refuses_connections(port), "the endpoint outlived the controller"
    assert f"metrics at {url}" in controller.text()
