"""The status representations (harvester.engine.status) read back by the client's parser: XML shaped like
Heritrix's marshaller output and JSON with the same structure give the same typed status."""

from __future__ import annotations

from lxml import etree

from harvester.engine.status import elapsed_pretty, to_json, to_xml
from harvester.heritrix import JSON, parse_engine_status, parse_job_resource

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
