"""Message contracts: every type round-trips; every malformed message is refused with its JSON path; newer
minor versions and unknown fields are accepted; another major version is refused."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from harvestdef.errors import ValidationError
from harvestdef.messages import (
    CRAWL_PROGRESS_STATUSES,
    ERROR_DETAILS_LIMIT,
    ERROR_SUMMARY_LIMIT,
    MESSAGE_TYPES,
    SCHEMA_VERSION,
    AliasRecord,
    ChannelInfo,
    ClaimAnswer,
    ClaimRequest,
    CrawlEnd,
    CrawlProgress,
    CrawlStatus,
    CrawlTally,
    DeduplicationSource,
    DomainCount,
    DomainReport,
    DomainStats,
    DoOneCrawl,
    FrontierLine,
    FrontierReport,
    HarvesterReady,
    HarvesterStatus,
    JobEvent,
    LiveChange,
    LiveChangeResult,
    Message,
    MessageError,
    MessageVersionError,
    PreHarvestMetadata,
    RegistrationAnswer,
    RegistrationRequest,
    clip,
    decode,
    decode_with_time,
    encode,
)
from harvestdef.model.status import JobStatus, StopReason

SENT = datetime(2025, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)
BIG = 2**63 + 12345  # bigger than a Java long: Python ints travel whole

TEMPLATE = """<?xml version="1.0" encoding="UTF-8"?>
<beans xmlns="http://www.springframework.org/schema/beans">
  <bean id="metadata" class="org.archive.modules.CrawlMetadata">
    <property name="operatorContactUrl" value="http://www.kb.dk/"/>
  </bean>
  <bean id="DeDuplicator"><property name="indexLocation" value="%{DEDUPLICATION_INDEX_LOCATION_PLACEHOLDER}"/></bean>
</beans>
"""


def _stats(domain: str, objects: int, size: int, reason: StopReason) -> DomainStats:
    return DomainStats(domain=domain, configuration="defaultconfig", objects=objects, bytes=size,
                       novel_objects=objects - 1, novel_bytes=size // 2, duplicate_objects=1,
                       duplicate_bytes=size - size // 2, stop_reason=reason)


SAMPLES: dict[str, Message] = {
    "DoOneCrawl": DoOneCrawl(
        job_id=4711, attempt_id="4711-1-9f1c", harvest_id=42, harvest_name="Folketingsvalg 2025 ✓",
        harvest_comments="event harvest\nsecond line", audience="researchers", schedule_name="Once_a_day",
        channel="FOCUSED", snapshot=False, max_objects_per_domain=-1, max_bytes_per_domain=BIG,
        max_running_time=0, template_name="default_orderxml", template=TEMPLATE,
        seeds=["http://www.kb.dk/", "http://københavn.dk/", "https://xn--kbenhavn-54a.dk/søg?q=æøå"],
        domain_configurations={"kb.dk": "defaultconfig", "københavn.dk": "Folketingsvalg_2025"},
        harvest_num=3, archive_file_prefix="4711-42",
        metadata=PreHarvestMetadata(
            aliases=[AliasRecord(domain="kb.dk", alias_of="kb.dk", last_change="2025-01-02T03:04:05Z"),
                     AliasRecord(domain="københavn.dk", alias_of="kk.dk", last_change="2024-12-31T23:59:59Z")],
            deduplication_job_ids=[4700, 4701, BIG],
            deduplication_index="dedup-index/ab12cd.sqlite"),
    ),
    "DoOneCrawl-sources": DoOneCrawl(
        job_id=4712, attempt_id="4712-1-0a", harvest_id=42, harvest_name="weekly", harvest_comments="",
        audience="", schedule_name="", channel="FOCUSED", snapshot=False, max_objects_per_domain=-1,
        max_bytes_per_domain=-1, max_running_time=0, template_name="default_orderxml", template="<beans/>",
        seeds=["http://www.kb.dk/"], domain_configurations={"kb.dk": "defaultconfig"}, harvest_num=4,
        archive_file_prefix="4712-42",
        metadata=PreHarvestMetadata(aliases=[], deduplication_job_ids=[4701, 4600],
                                    deduplication_sources=[DeduplicationSource(42, 4701),
                                                           DeduplicationSource(41, 4600)])),
    "DoOneCrawl-no-dedup": DoOneCrawl(
        job_id=1, attempt_id="1-1", harvest_id=1, harvest_name="snapshot", harvest_comments="",
        audience="", schedule_name="", channel="SNAPSHOT", snapshot=True, max_objects_per_domain=2000,
        max_bytes_per_domain=-1, max_running_time=86_400, template_name="default_orderxml", template="<beans/>",
        seeds=[], domain_configurations={}, harvest_num=0, archive_file_prefix="1-1",
        metadata=PreHarvestMetadata(aliases=[], deduplication_job_ids=None)),
    "CrawlStatus-DONE": CrawlStatus(
        job_id=4711, attempt_id="4711-1-9f1c", controller_id="harv01-1a2b3c4d", status=JobStatus.DONE,
        domain_report=DomainReport(
            default_stop_reason=StopReason.DOWNLOAD_COMPLETE,
            domains=[_stats("kb.dk", 1200, BIG, StopReason.SIZE_LIMIT),
                     _stats("københavn.dk", 3, 4096, StopReason.DOWNLOAD_COMPLETE),
                     _stats("例え.テスト", 1, 0, StopReason.TIME_LIMIT)]),
        harvest_errors="stalled: no new bytes for 1800 s", harvest_error_details="Traceback…",
    ),
    "CrawlStatus-STARTED": CrawlStatus(job_id=5, attempt_id="5-1", controller_id="c", status=JobStatus.STARTED),
    "CrawlStatus-FAILED": CrawlStatus(
        job_id=6, attempt_id="6-2", controller_id="c", status=JobStatus.FAILED,
        upload_errors="2 files not uploaded", upload_error_details="x.warc.gz: checksum mismatch"),
    "CrawlProgress": CrawlProgress(
        job_id=4711, attempt_id="4711-1-9f1c", harvest_id=42, controller_id="harv01-1a2b3c4d",
        host_url="https://harv01:8443/engine/job/4711_1740830000000", status="CRAWLER_ACTIVE",
        crawler_state="RUNNING", progress=37.5, queued_files=6250, total_queues=120, active_queues=25,
        retired_queues=3, exhausted_queues=10, elapsed_seconds=3600, alert_count=0, downloaded_files=3750,
        discovered_files=10_000, current_processed_kb_per_sec=512, processed_kb_per_sec=480,
        current_processed_docs_per_sec=12.25, processed_docs_per_sec=11.0, active_toe_count=25,
        total_bytes_written=BIG, frontier_short_report="120 URI queues: 25 active (25 in-process; 0 ready)",
        crawl_log_tail=["2025-03-01T12:30:15.123Z   200       1234 http://www.kaarefc.dk/ - - text/html #001 "
                        "20250301123015000+12 sha1:ABC - -"], is_heritrix_console=True),
    "FrontierReport": FrontierReport(
        job_id=4711, attempt_id="4711-1-9f1c", controller_id="c", filter_id="TopTotalEnqueuesFilter",
        lines=[FrontierLine(
            domain_name="københavn.dk", current_size=12, total_enqueues=340, session_balance=-3, last_cost=1,
            average_cost=1, last_dequeue_time="2025-03-01T12:00:00Z", wake_time="", total_spend=328,
            total_budget=-1, error_count=2, last_peek_uri="http://københavn.dk/a",
            last_queued_uri="http://københavn.dk/b")]),
    "HarvesterReady": HarvesterReady(controller_id="harv01-1a2b3c4d", host="harv01.kb.dk",
                                     channels=["FOCUSED", "SNAPSHOT"]),
    "HarvesterStatus": HarvesterStatus(
        controller_id="harv01-1a2b3c4d", host="harv01.kb.dk", pid=31337, version="0.1.0",
        channels=["FOCUSED"], free_disk_bytes=BIG, load_average=0.75, memory_rss_bytes=123_456_789,
        paused=True, pause_reason="disk space below minSpaceLeft", current_job_id=4711,
        current_attempt_id="4711-1-9f1c", current_job_state="post-processing"),
    "HarvesterStatus-idle": HarvesterStatus(
        controller_id="c", host="h", pid=1, version="0.1.0", channels=[], free_disk_bytes=0,
        load_average=0.0, memory_rss_bytes=0, paused=False),
    "ClaimRequest": ClaimRequest(job_id=4711, attempt_id="4711-1-9f1c", controller_id="c",
                                 reply_queue="prod.claims.c", resume=True),
    "ClaimAnswer": ClaimAnswer(job_id=4711, attempt_id="4711-1-9f1c", controller_id="c", granted=True,
                               control_queue="prod.control.c"),
    "ClaimAnswer-refused": ClaimAnswer(job_id=4711, attempt_id="4711-1-9f1c", controller_id="c", granted=False,
                                       reason="attempt granted to harv02-0badf00d"),
    "RegistrationRequest": RegistrationRequest(controller_id="c", host="harv01", channels=["FOCUSED", "ÆØÅ"],
                                               reply_queue="prod.registration.c"),
    "RegistrationAnswer": RegistrationAnswer(
        controller_id="c", accepted=True,
        channels=[ChannelInfo(name="FOCUSED", snapshot=False), ChannelInfo(name="SNAPSHOT", snapshot=True)]),
    "RegistrationAnswer-refused": RegistrationAnswer(controller_id="c", accepted=False, channels=[],
                                                     reason="unknown channels: ÆØÅ, NOPE"),
    "CrawlStatus-FAILED-store": CrawlStatus(
        job_id=7, attempt_id="7-1", controller_id="c", status=JobStatus.FAILED, store_outage=True,
        upload_errors="the archive store failed"),
    "JobEvent": JobEvent(job_id=4711, attempt_id="4711-1-9f1c", controller_id="harv01-1a2b3c4d",
                         kind="checkpoint", checkpoint="cp00001-20250301120000",
                         happened_at="2025-03-01T12:00:00.250000+00:00"),
    "CrawlTally": CrawlTally(job_id=4711, attempt_id="4711-1-9f1c", controller_id="harv01-1a2b3c4d", lines=120,
                             status_counts={"200": 100, "404": 3, "-6": 2, "1": 15},
                             domains=[DomainCount(domain="kb.dk", objects=90, bytes=1_234_567),
                                      DomainCount(domain="københavn.dk", objects=10, bytes=4_096)]),
    "LiveChange": LiveChange(job_id=4711, attempt_id="4711-1-9f1c", version=3, kind="reject",
                             payload='{"regex": ".*calendar.*", "domain": "example.dk"}', author="ops1",
                             created="2025-03-01T12:00:00+00:00"),
    "LiveChangeResult": LiveChangeResult(job_id=4711, attempt_id="4711-1-9f1c", controller_id="harv01-1a2b3c4d",
                                         version=3, state="refused", reason="no reject rule .*x.* in the scope",
                                         happened_at="2025-03-01T12:00:01+00:00"),
}


def _document(name: str = "CrawlStatus-DONE") -> dict[str, Any]:
    return json.loads(encode(SAMPLES[name], SENT))


def _bytes(document: dict[str, Any]) -> bytes:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# --- round trips ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_round_trip(name):
    message = SAMPLES[name]
    data = encode(message, SENT)
    decoded, sent_at = decode_with_time(data)
    assert decoded == message
    assert type(decoded) is type(message)
    assert sent_at == SENT
    assert encode(decoded, SENT) == data
    assert decode(data, expected=type(message)) == message


def test_every_message_type_has_a_sample_and_a_docstring():
    assert {type(m).__name__ for m in SAMPLES.values()} == set(MESSAGE_TYPES)
    for name, cls in MESSAGE_TYPES.items():
        assert cls.__name__ == name
        assert issubclass(cls, Message)
        assert "->" in (cls.__doc__ or ""), f"{name} must say who sends it to whom"


def test_wire_form_is_the_documented_envelope():
    message = SAMPLES["ClaimAnswer"]
    assert encode(message, SENT) == (
        b'{"type":"ClaimAnswer","version":"1.7","sent":"2025-03-01T12:30:15.123456Z","body":{"job_id":4711,'
        b'"attempt_id":"4711-1-9f1c","controller_id":"c","granted":true,"reason":"","control_queue":'
        b'"prod.control.c"}}')
    assert SCHEMA_VERSION == (1, 7)


def test_enums_travel_by_name_and_text_as_utf8():
    body = _document()["body"]
    assert body["status"] == "DONE"
    assert body["domain_report"]["domains"][0]["stop_reason"] == "SIZE_LIMIT"
    assert "københavn.dk".encode() in encode(SAMPLES["CrawlStatus-DONE"], SENT)


def test_sent_defaults_to_now_and_is_given_back_in_utc():
    before = datetime.now(UTC)
    _, sent_at = decode_with_time(encode(SAMPLES["HarvesterReady"]))
    assert before <= sent_at <= datetime.now(UTC)
    copenhagen = timezone(timedelta(hours=1))
    document = _document("HarvesterReady")
    document["sent"] = "2025-03-01T13:30:15+01:00"
    _, sent_at = decode_with_time(_bytes(document))
    assert sent_at == datetime(2025, 3, 1, 13, 30, 15, tzinfo=copenhagen)
    assert sent_at.tzinfo == UTC


def test_naive_sent_at_is_refused_when_encoding():
    with pytest.raises(ValueError, match="timezone-aware"):
        encode(SAMPLES["HarvesterReady"], datetime(2025, 1, 1))


# --- forward compatibility and versions -------------------------------------------------------------------------


def test_newer_minor_version_with_unknown_fields_everywhere_is_accepted():
    document = _document()
    document["version"] = "1.7"
    document["priority"] = "high"
    document["body"]["new_field"] = {"nested": [1, 2]}
    document["body"]["domain_report"]["checksum"] = "abc"
    document["body"]["domain_report"]["domains"][1]["warc_files"] = ["a.warc.gz"]
    assert decode(_bytes(document)) == SAMPLES["CrawlStatus-DONE"]


@pytest.mark.parametrize("version", ["2.0", "0.9", "10.1"])
def test_another_major_version_is_refused_naming_both(version):
    document = _document()
    document["version"] = version
    with pytest.raises(MessageVersionError) as err:
        decode(_bytes(document))
    assert isinstance(err.value, MessageError)
    assert isinstance(err.value, ValidationError)
    assert version in str(err.value) and "1.7" in str(err.value)
    assert err.value.version == tuple(int(part) for part in version.split("."))


def test_optional_and_defaulted_fields_may_be_absent():
    document = _document("DoOneCrawl")
    del document["body"]["metadata"]["deduplication_job_ids"]
    del document["body"]["metadata"]["deduplication_index"]
    metadata = decode(_bytes(document)).metadata
    assert metadata.deduplication_job_ids is None and metadata.deduplication_index is None

    document = _document("CrawlStatus-FAILED")
    for name in ("domain_report", "harvest_errors", "upload_errors", "upload_error_details"):
        del document["body"][name]
    status = decode(_bytes(document))
    assert status.domain_report is None and status.harvest_errors == "" and status.upload_errors == ""


def test_an_integer_is_accepted_for_a_float():
    document = _document("HarvesterStatus")
    document["body"]["load_average"] = 2
    status = decode(_bytes(document))
    assert status.load_average == 2.0 and type(status.load_average) is float


def test_failed_without_report_is_fine():
    assert decode(encode(SAMPLES["CrawlStatus-FAILED"])).domain_report is None


def test_crawl_progress_statuses_keep_netarchivesuites_order():
    assert CRAWL_PROGRESS_STATUSES == ("PRE_CRAWL", "CRAWLER_ACTIVE", "CRAWLER_EMPTY", "CRAWLER_PAUSING",
                                       "CRAWLER_PAUSED", "CRAWLING_FINISHED")


# --- refusals ----------------------------------------------------------------------------------------------


def _set(path: tuple, value: Any, name: str = "CrawlStatus-DONE") -> bytes:
    document = _document(name)
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return _bytes(document)


def _delete(path: tuple, name: str = "CrawlStatus-DONE") -> bytes:
    document = _document(name)
    target = document
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return _bytes(document)


REFUSALS: list[tuple[str, Callable[[], bytes], str]] = [
    ("not utf-8", lambda: b'{"type": "\xff"}', "not UTF-8"),
    ("not json", lambda: b'{"type": ', "not JSON"),
    ("nan", lambda: _bytes(_document()).replace(b'"objects":1200', b'"objects":NaN'), "not JSON: NaN"),
    ("not an object", lambda: b"[1, 2]", "expected a JSON object, got a list"),
    ("no type", lambda: _delete(("type",)), "type: required field is missing"),
    ("type not a string", lambda: _set(("type",), 3), "type: expected a string, got 3"),
    ("unknown type", lambda: _set(("type",), "DoTwoCrawls"), 'type: unknown message type "DoTwoCrawls"'),
    ("no version", lambda: _delete(("version",)), "version: required field is missing"),
    ("version a number", lambda: _set(("version",), 1.0), 'version: expected a string "MAJOR.MINOR", got 1.0'),
    ("no sent", lambda: _delete(("sent",)), "sent: required field is missing"),
    ("naive sent", lambda: _set(("sent",), "2025-03-01T12:00:00"),
     'sent: expected an ISO-8601 time with a zone (…Z), got "2025-03-01T12:00:00"'),
    ("no body", lambda: _delete(("body",)), "body: required field is missing"),
    ("body a list", lambda: _set(("body",), []), "body: expected an object, got a list"),
    ("missing field", lambda: _delete(("body", "job_id")), "body.job_id: required field is missing"),
    ("string for int", lambda: _set(("body", "job_id"), "4711"), 'body.job_id: expected an integer, got "4711"'),
    ("bool for int", lambda: _set(("body", "job_id"), True), "body.job_id: expected an integer, got true"),
    ("float for int", lambda: _set(("body", "job_id"), 4711.0), "body.job_id: expected an integer, got 4711.0"),
    ("null for str", lambda: _set(("body", "attempt_id"), None), "body.attempt_id: expected a string, got null"),
    ("int for str", lambda: _set(("body", "harvest_errors"), 0), "body.harvest_errors: expected a string, got 0"),
    ("nested", lambda: _set(("body", "domain_report", "domains", 2, "bytes"), "x"),
     'body.domain_report.domains[2].bytes: expected an integer, got "x"'),
    ("nested missing", lambda: _delete(("body", "domain_report", "domains", 0, "stop_reason")),
     "body.domain_report.domains[0].stop_reason: required field is missing"),
    ("optional object wrong", lambda: _set(("body", "domain_report"), 5),
     "body.domain_report: expected an object or null, got 5"),
    ("list wrong", lambda: _set(("body", "domain_report", "domains"), {}),
     "body.domain_report.domains: expected a list, got an object"),
    ("enum name", lambda: _set(("body", "domain_report", "domains", 1, "stop_reason"), "SIZE"),
     'body.domain_report.domains[1].stop_reason: expected one of DOWNLOAD_COMPLETE, OBJECT_LIMIT, SIZE_LIMIT, '
     'CONFIG_SIZE_LIMIT, DOWNLOAD_UNFINISHED, CONFIG_OBJECT_LIMIT, TIME_LIMIT, got "SIZE"'),
    ("enum ordinal", lambda: _set(("body", "domain_report", "default_stop_reason"), 0),
     "body.domain_report.default_stop_reason: expected one of DOWNLOAD_COMPLETE"),
    ("status NEW", lambda: _set(("body", "status"), "NEW"),
     "body.status: a CrawlStatus reports STARTED, DONE or FAILED, not NEW"),
    ("status unknown", lambda: _set(("body", "status"), "RUNNING"),
     "body.status: expected one of NEW, SUBMITTED, STARTED"),
    ("DONE without report", lambda: _delete(("body", "domain_report")),
     "body.domain_report: required when status is DONE"),
    ("DONE with null report", lambda: _set(("body", "domain_report"), None),
     "body.domain_report: required when status is DONE"),
    ("lone surrogate", lambda: _bytes(_document()).replace(b'"controller_id":"harv01', b'"controller_id":"\\ud800'),
     "body.controller_id: not valid Unicode text (lone surrogate)"),
    ("list item", lambda: _set(("body", "seeds", 1), 5, "DoOneCrawl"), "body.seeds[1]: expected a string, got 5"),
    ("dict value", lambda: _set(("body", "domain_configurations", "københavn.dk"), 3, "DoOneCrawl"),
     'body.domain_configurations["københavn.dk"]: expected a string, got 3'),
    ("optional list item", lambda: _set(("body", "metadata", "deduplication_job_ids", 0), "4700", "DoOneCrawl"),
     'body.metadata.deduplication_job_ids[0]: expected an integer, got "4700"'),
    ("deep nested missing", lambda: _delete(("body", "metadata", "aliases", 1, "alias_of"), "DoOneCrawl"),
     "body.metadata.aliases[1].alias_of: required field is missing"),
    ("progress status", lambda: _set(("body", "status"), "RUNNING", "CrawlProgress"),
     "body.status: expected one of PRE_CRAWL, CRAWLER_ACTIVE, CRAWLER_EMPTY"),
    ("float as string", lambda: _set(("body", "progress"), "37.5%", "CrawlProgress"),
     'body.progress: expected a finite number, got "37.5%"'),
    ("huge float", lambda: _bytes(_document("CrawlProgress")).replace(b'"progress":37.5', b'"progress":1e999'),
     "body.progress: expected a finite number, got Infinity"),
    ("int too big for a float", lambda: _set(("body", "load_average"), 10**400, "HarvesterStatus"),
     "body.load_average: expected a finite number, got 1000000000"),
    ("bool for float", lambda: _set(("body", "load_average"), False, "HarvesterStatus"),
     "body.load_average: expected a finite number, got false"),
    ("bool as string", lambda: _set(("body", "granted"), "true", "ClaimAnswer"),
     'body.granted: expected true or false, got "true"'),
    ("optional int", lambda: _set(("body", "current_job_id"), "7", "HarvesterStatus"),
     'body.current_job_id: expected an integer or null, got "7"'),
]


@pytest.mark.parametrize(("data", "expected"), [(make, text) for _, make, text in REFUSALS],
                         ids=[name for name, _, _ in REFUSALS])
def test_refusal_names_the_path(data, expected):
    with pytest.raises(MessageError) as err:
        decode(data())
    assert not isinstance(err.value, MessageVersionError)
    assert expected in str(err.value)


def test_a_type_other_than_expected_is_refused():
    data = encode(SAMPLES["CrawlStatus-DONE"])
    with pytest.raises(MessageError, match='^type: expected DoOneCrawl, got "CrawlStatus"$'):
        decode(data, expected=DoOneCrawl)
    with pytest.raises(MessageError, match='^type: expected one of ClaimAnswer, RegistrationAnswer, got "Crawl'):
        decode(data, expected=(ClaimAnswer, RegistrationAnswer))
    assert decode(data, expected=(DoOneCrawl, CrawlStatus)) == SAMPLES["CrawlStatus-DONE"]


def test_error_carries_path_and_reason():
    with pytest.raises(MessageError) as err:
        decode(_set(("body", "domain_report", "domains", 2, "bytes"), "x"))
    assert err.value.path == "body.domain_report.domains[2].bytes"
    assert err.value.reason == 'expected an integer, got "x"'


def _leaf_paths(value: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(value, dict):
        return [path] + [p for key, item in value.items() for p in _leaf_paths(item, (*path, key))]
    if isinstance(value, list):
        return [path] + [p for i, item in enumerate(value) for p in _leaf_paths(item, (*path, i))]
    return [path]


@pytest.mark.parametrize("name", ["DoOneCrawl", "CrawlStatus-DONE", "HarvesterStatus", "RegistrationAnswer"])
def test_any_value_anywhere_gives_a_message_or_a_message_error(name):
    """The consumer dead-letters a bad message; it must never see another exception."""
    for path in _leaf_paths(_document(name)):
        if not path:
            continue
        for junk in (None, True, -1, 1.5, "x", [], {}, [None], {"a": None}):
            with contextlib.suppress(MessageError):
                decode(_set(path, junk, name))


# --- the sending side ------------------------------------------------------------------------------------------


def test_encode_refuses_a_value_that_does_not_fit_its_field():
    wrong = ClaimRequest(job_id="4711", attempt_id="a", controller_id="c", reply_queue="q")  # type: ignore[arg-type]
    with pytest.raises(MessageError, match=r'^body\.job_id: cannot encode str "4711" as an integer$'):
        encode(wrong)
    with pytest.raises(MessageError, match=r"^body\.resume: cannot encode int 1 as true or false$"):
        encode(ClaimRequest(job_id=1, attempt_id="a", controller_id="c", reply_queue="q", resume=1))
    with pytest.raises(MessageError, match=r"^body\.job_id: cannot encode bool true as an integer$"):
        encode(ClaimRequest(job_id=True, attempt_id="a", controller_id="c", reply_queue="q"))
    report = DomainReport(default_stop_reason=4, domains=[])  # type: ignore[arg-type]
    with pytest.raises(MessageError, match=r"^body\.domain_report\.default_stop_reason: cannot encode int 4"):
        encode(CrawlStatus(job_id=1, attempt_id="a", controller_id="c", status=JobStatus.DONE, domain_report=report))


def test_encode_refuses_what_is_not_a_message():
    with pytest.raises(TypeError, match="DomainStats is not a message type"):
        encode(_stats("kb.dk", 1, 1, StopReason.DOWNLOAD_COMPLETE))  # type: ignore[arg-type]


@pytest.mark.parametrize("status", [JobStatus.NEW, JobStatus.SUBMITTED, JobStatus.RESUBMITTED,
                                    JobStatus.FAILED_REJECTED])
def test_crawl_status_only_reports_started_done_failed(status):
    expected = f"^status: a CrawlStatus reports STARTED, DONE or FAILED, not {status.name}$"
    with pytest.raises(MessageError, match=expected):
        CrawlStatus(job_id=1, attempt_id="a", controller_id="c", status=status)


def test_done_needs_a_domain_report():
    with pytest.raises(MessageError, match="^domain_report: required when status is DONE$"):
        CrawlStatus(job_id=1, attempt_id="a", controller_id="c", status=JobStatus.DONE)


def test_crawl_progress_status_is_checked_when_built():
    with pytest.raises(MessageError, match="^status: expected one of PRE_CRAWL"):
        dataclasses.replace(SAMPLES["CrawlProgress"], status="crawling")


def test_a_crawl_log_tail_is_bounded_in_lines_and_length():
    from harvestdef.messages import CRAWL_LOG_LINE_LENGTH, CRAWL_LOG_TAIL_LINES

    with pytest.raises(MessageError, match=rf"crawl_log_tail: {CRAWL_LOG_TAIL_LINES + 1} lines"):
        dataclasses.replace(SAMPLES["CrawlProgress"], crawl_log_tail=["x"] * (CRAWL_LOG_TAIL_LINES + 1))
    with pytest.raises(MessageError, match=r"crawl_log_tail\[1\]: .* characters long"):
        dataclasses.replace(SAMPLES["CrawlProgress"], crawl_log_tail=["x", "y" * (CRAWL_LOG_LINE_LENGTH + 1)])
    document = _document("CrawlProgress")
    del document["body"]["crawl_log_tail"], document["body"]["is_heritrix_console"]
    older = decode(_bytes(document))  # a 1.2 controller's progress: no tail, no console
    assert older.crawl_log_tail == [] and older.is_heritrix_console is False


def test_messages_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        SAMPLES["ClaimRequest"].job_id = 1  # type: ignore[misc]


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("kind", "rewind", "expected one of checkpoint, resume"),
    ("checkpoint", "", "checkpoint name"),
    ("happened_at", "2025-03-01T12:00:00", "with a UTC offset"),
    ("happened_at", "yesterday", "with a UTC offset"),
])
def test_a_job_event_names_what_is_wrong(field, value, reason):
    document = _document("JobEvent")
    document["body"][field] = value
    with pytest.raises(MessageError) as err:
        decode(_bytes(document))
    assert err.value.path == f"body.{field}" and reason in err.value.reason


def test_a_crawl_status_without_store_outage_is_an_ordinary_report():
    document = _document("CrawlStatus-FAILED-store")
    assert document["body"]["store_outage"] is True
    del document["body"]["store_outage"]
    assert decode(_bytes(document)).store_outage is False


@pytest.mark.parametrize("limit", [ERROR_SUMMARY_LIMIT, ERROR_DETAILS_LIMIT])
def test_an_error_text_is_cut_to_its_limit_and_shows_the_cut(limit):
    assert clip("x" * limit, limit) == "x" * limit
    cut = clip("x" * (limit + 1), limit)
    assert len(cut) == limit and cut == "x" * (limit - 1) + "…"
    assert clip("", limit) == ""


def test_a_live_change_names_its_bad_field():
    with pytest.raises(MessageError, match="kind"):
        LiveChange(job_id=1, attempt_id="a", version=1, kind="reboot", payload="{}", author="x",
                   created="2025-03-01T12:00:00+00:00")
    with pytest.raises(MessageError, match="payload"):
        LiveChange(job_id=1, attempt_id="a", version=1, kind="pause", payload="[1]", author="x",
                   created="2025-03-01T12:00:00+00:00")
    with pytest.raises(MessageError, match="version"):
        LiveChange(job_id=1, attempt_id="a", version=0, kind="pause", payload="{}", author="x",
                   created="2025-03-01T12:00:00+00:00")
    with pytest.raises(MessageError, match="state"):
        LiveChangeResult(job_id=1, attempt_id="a", controller_id="c", version=1, state="maybe", reason="",
                         happened_at="2025-03-01T12:00:00+00:00")
    with pytest.raises(MessageError, match="happened_at"):
        LiveChangeResult(job_id=1, attempt_id="a", controller_id="c", version=1, state="applied", reason="",
                         happened_at="yesterday")


def test_a_crawl_ended_as_asked_travels_as_crawl_end_and_an_older_report_has_none():
    end = CrawlEnd(cause="stop", at="2026-03-01T10:42:00+00:00", user="ops2", change=4)
    status = CrawlStatus(job_id=7, attempt_id="a", controller_id="c", status=JobStatus.DONE,
                         domain_report=DomainReport(default_stop_reason=StopReason.DOWNLOAD_UNFINISHED, domains=[]),
                         crawl_end=end)
    assert decode(encode(status)).crawl_end == end
    older = json.loads(encode(status))
    del older["body"]["crawl_end"]
    older["version"] = "1.4"
    assert decode(json.dumps(older).encode()).crawl_end is None
    budget = CrawlEnd(cause="max_objects", at="2026-03-01T10:42:00+00:00", limit=500)
    assert not budget.is_operator_end and end.is_operator_end
    with pytest.raises(MessageError, match="cause"):
        CrawlEnd(cause="tired", at="2026-03-01T10:42:00+00:00")
    with pytest.raises(MessageError, match="names its user and its change"):
        CrawlEnd(cause="fail", at="2026-03-01T10:42:00+00:00")
