"""The status representations (harvester.engine.rest.status) read back by the client's parser: XML shaped like
Heritrix's marshaller output and JSON with the same structure give the same typed status."""

from __future__ import annotations

from lxml import etree

from harvester.engine.rest.status import elapsed_pretty, to_json, to_xml
from harvester.heritrix3.model import JSON, parse_engine_status, parse_job_resource

MODEL = {
    "shortName": "7_1732200000000",
    "crawlControllerState": "PAUSED",
    "crawlExitStatus": None,
    "statusDescription": "Active: PAUSED",
    "availableActions": ["unpause"],
    "launchCount": 2,
    "isRunning": True,
    "jobLogTail": [],
    "checkpointFiles": ["cp00001-20261121101500", "cp00002-20261121103000"],
    "uriTotalsReport": {"downloadedUriCount": 40, "queuedUriCount": 2, "totalUriCount": 42, "futureUriCount": 0},
    "rateReport": {"currentDocsPerSecond": 0.0, "averageDocsPerSecond": 3.5, "currentKiBPerSec": 0,
                   "averageKiBPerSec": 12},
}


def test_xml_follows_heritrix_marshalling() -> None:
    document = to_xml("job", MODEL)
    assert document.startswith(b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<job>')
    root = etree.fromstring(document)
    assert root.find("crawlExitStatus") is None  # None is left out, as JAXB leaves out null
    assert [value.text for value in root.find("availableActions")] == ["unpause"]
    assert root.findtext("isRunning") == "true"
    assert root.find("uriTotalsReport").findtext("downloadedUriCount") == "40"


def test_xml_and_json_parse_to_the_same_status() -> None:
    from_xml = parse_job_resource(to_xml("job", MODEL))
    from_json = parse_job_resource(to_json(MODEL), JSON)
    assert from_xml == from_json
    assert from_xml.available_actions == ("unpause",) and from_xml.job_log_tail == ()
    assert from_xml.checkpoint_files == ("cp00001-20261121101500", "cp00002-20261121103000")
    assert from_xml.rate_report.average_kib_per_sec == 12.0 and from_xml.crawl_exit_status is None


def test_engine_document_round_trips() -> None:
    model = {"heritrixVersion": "x", "availableActions": ["rescan", "add", "create"],
             "jobs": [{"shortName": "a", "launchCount": 0, "statusDescription": "Unbuilt"},
                      {"shortName": "b", "launchCount": 3, "statusDescription": "Finished: ABORTED"}]}
    status = parse_engine_status(to_xml("engine", model))
    assert status.job_names() == ["a", "b"] and status.jobs[1].launch_count == 3
    assert status == parse_engine_status(to_json(model), JSON)


def test_elapsed_pretty_drops_leading_zero_units() -> None:
    assert elapsed_pretty(519) == "519ms"
    assert elapsed_pretty(62_045) == "1m2s45ms"
    # Heritrix's formatMillisecondsToConventional leaves zero units out.
    assert elapsed_pretty(3_600_000) == "1h" and elapsed_pretty(3_600_007) == "1h7ms"


def test_the_engine_writes_every_field_of_the_job_resource_the_client_reads(tmp_path) -> None:
    """The top of the job model is written field by field: every JobResource field must be among its keys, and
    every nested report is written from the client's own representation (harvester/heritrix3/model.py)."""
    from dataclasses import fields

    from harvester.engine.frontier.frontier import QueueCounts
    from harvester.engine.reporting.figures import LaunchStatus, crawl_figures
    from harvester.engine.reporting.stats import CrawlStats, RateTracker
    from harvester.engine.rest.status import job_model
    from harvester.heritrix3.model import JobResource, camel_key
    from harvester.heritrix3.states import ControllerState

    stats = CrawlStats(downloaded=5, total_bytes=9_000, novel_count=5, novel_bytes=9_000)
    figures = crawl_figures(stats, RateTracker(), QueueCounts(total=3, active=2, in_process=1, snoozed=0,
                                                              retired=0, depths=(4, 2)),
                            queued=6, in_flight=1, elapsed_ms=5_000, busy=1, threads=4, size_on_disk=10,
                            state=ControllerState.RUNNING)
    launch = LaunchStatus(controller_state=ControllerState.RUNNING, exit_status=None, figures=figures,
                          elapsed_ms=5_000, toe_count=4, crawl_log_tail=(), alert_count=0)
    job = _job_snapshot(tmp_path, launch)
    model = job_model(job, "https://127.0.0.1:8443")
    assert {camel_key(item) for item in fields(JobResource)} - set(model) == set()
    parsed = parse_job_resource(to_xml("job", model))
    assert parsed.uri_totals_report == figures.uri_totals
    assert parsed.frontier_report.total_queues == 3 and parsed.frontier_report.last_reached_state == "RUN"
    assert parsed.load_report.deepest_queue_depth == 4 and parsed.thread_report.toe_count == 4
    assert parsed.elapsed_report.elapsed_pretty == "5s"


def _job_snapshot(tmp_path, launch):
    from harvester.engine.rest.jobregistry import JobSnapshot, JobState

    launch_dir = tmp_path / "20261201100000"
    return JobSnapshot(name="7_1", directory=tmp_path, primary_config=tmp_path / "crawler-beans.cxml",
                       state=JobState.ACTIVE, controller_state=launch.controller_state, exit_status=None,
                       available_actions=("pause", "terminate"), launch_count=1, last_launch="2026-12-01",
                       launch_dir=launch_dir, checkpoints=(), resumed_checkpoint=None, job_log_tail=("a",),
                       launch_status=launch)
