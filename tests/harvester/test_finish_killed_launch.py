"""Post-processing of a job directory whose crawler was killed: the open WARC cut to its last whole record,
crawl.log reconciled with it, every record indexed, and what did not agree or could only be indexed in part
named in the report sent to the scheduler (real job directory, archive store and queue)."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvestdef.archive import ArchiveStore
from harvestdef.messages import ERROR_SUMMARY_LIMIT, CrawlStatus, DoOneCrawl, PreHarvestMetadata, clip, decode
from harvestdef.model.status import JobStatus
from harvestdef.queues import QueueNames
from harvestdef.queues.sqlite import SqliteTransport
from harvester.finish import FinishOptions, PostProcessor
from harvester.jobdir import CrawlOutcome, JobDirectory
from harvester.postprocess.reconcile import UNARCHIVED_LOG
from harvester.protocol import SchedulerLink
from tests.harvester.test_cdxj_encodings import BR_URL, BROKEN_FORM_URL, write_encoded_warc

JOB = DoOneCrawl(
    job_id=7, attempt_id="7-1", harvest_id=3, harvest_name="kulturarv", harvest_comments="", audience="",
    schedule_name="", channel="FOCUSED", snapshot=False, max_objects_per_domain=-1, max_bytes_per_domain=-1,
    max_running_time=0, template_name="default_orderxml", template="<beans/>", seeds=["http://www.kulturarv.dk/"],
    domain_configurations={"kulturarv.dk": "defaultconfig"}, harvest_num=0, archive_file_prefix="7-3",
    metadata=PreHarvestMetadata(aliases=[], deduplication_job_ids=None))
WARC_NAME = "7-3-20240506070809000-00001-1~host~8443.warc.gz"
# Sorted before WARC_NAME, so it is indexed first.
UNREADABLE_NAME = "7-3-20240506070808000-00000-1~host~8443.warc.gz"


def _first_record_end(path: Path) -> int:
    with path.open("rb") as handle:
        records = ArchiveIterator(handle)
        next(records)
        return records.get_record_offset() + records.get_record_length()


def _captures(path: Path) -> list[tuple[str, str]]:
    with path.open("rb") as handle:
        return [(record.rec_headers.get_header("WARC-Target-URI"),
                 record.rec_headers.get_header("WARC-Payload-Digest")
                 or record.rec_headers.get_header("WARC-Block-Digest"))
                for record in ArchiveIterator(handle, no_record_parse=True)
                if record.rec_type in ("response", "revisit")]


def _line(url: str, digest: str) -> str:
    return (f"2024-05-06T07:08:09.000Z   200        100 {url} - - text/html #001 20240506070809000+5 {digest} "
            f"http://www.kulturarv.dk/ content-size:400\n")


def _launch(tmp_path: Path) -> tuple[JobDirectory, Path]:
    jobdir = JobDirectory.create(tmp_path / "server", JOB)
    launch = jobdir.path / "20240506070809"
    (launch / "warcs").mkdir(parents=True)
    (launch / "logs").mkdir()
    return jobdir, launch


def _finish(tmp_path: Path, jobdir: JobDirectory, status: JobStatus = JobStatus.FAILED) -> CrawlStatus:
    """Post-process the job and send its report as the controller does; the report the scheduler received."""
    transport = SqliteTransport(tmp_path / "queue.db", dead_letter_queue="test.dead")
    names = QueueNames("test")
    transport.declare(names.scheduler)
    try:
        link = SchedulerLink(transport, names, "controller-1", "host", ["FOCUSED"])
        options = FinishOptions(oldjobs_dir=tmp_path / "oldjobs", organization="kb", collection=None)
        (tmp_path / "archive").mkdir(exist_ok=True)  # the store's root is mounted, never made by an upload
        postprocessor = PostProcessor(options, ArchiveStore(tmp_path / "archive"))
        finished = postprocessor.finish(jobdir, link.controller_id)
        assert finished.status == status
        link.send_status(finished.message)
        postprocessor.reported(jobdir, finished)
        delivery = transport.receive(names.scheduler, timeout=5)
        assert delivery is not None
        report = decode(delivery.body)
        transport.ack(delivery)
    finally:
        transport.close()
    assert isinstance(report, CrawlStatus)
    # Every error is in the details; the summary is the details cut to the contract's limit.
    assert report.harvest_errors == clip(report.harvest_error_details, ERROR_SUMMARY_LIMIT)
    return report


def test_a_killed_launch_is_reconciled_indexed_and_reported(tmp_path: Path) -> None:
    jobdir, launch = _launch(tmp_path)
    whole = tmp_path / "whole.warc.gz"
    write_encoded_warc(whole)
    captures = _captures(whole)
    # What the kill left: the file still open, ending in half a gzip member (a record being written) ...
    partial_record = gzip.compress(b"WARC/1.1\r\nWARC-Type: response\r\nContent-Length: 5000\r\n\r\n" + bytes(800))
    (launch / "warcs" / f"{WARC_NAME}.open").write_bytes(whole.read_bytes() + partial_record[:300])
    # ... and a crawl.log without the line of the last capture, but with one whose records were lost.
    phantom = _line("http://www.kulturarv.dk/lost.html", "sha1:" + "A" * 32)
    (launch / "logs" / "crawl.log").write_text("".join(_line(url, digest) for url, digest in captures[:-1])
                                               + phantom, encoding="utf-8")

    report = _finish(tmp_path, jobdir)  # no outcome recorded: the crawl failed
    errors = report.harvest_error_details
    assert f"1 lines without records moved to {UNARCHIVED_LOG}, 1 lines made from records" in errors
    assert f"CDXJ indexing of {WARC_NAME}: 1 records indexed without their payload's details" in errors
    assert BROKEN_FORM_URL in errors
    [row] = report.domain_report.domains
    assert row.objects == len(captures) == 7

    stored = tmp_path / "archive" / "3" / "7"
    assert (stored / WARC_NAME).read_bytes() == whole.read_bytes()  # cut back to its last whole record
    index = (stored / "cdxj" / f"{WARC_NAME}.cdxj").read_text(encoding="utf-8").splitlines()
    assert len(index) == 7 and any(f'"url": "{BR_URL}"' in line for line in index)
    moved = tmp_path / "oldjobs" / jobdir.path.name / launch.name / "logs" / UNARCHIVED_LOG
    assert moved.read_text(encoding="utf-8") == phantom
    assert hashlib.sha256((stored / WARC_NAME).read_bytes()).hexdigest() in (stored / "SHA256SUMS").read_text()


def test_a_warc_that_cannot_be_read_takes_no_other_warcs_index_down(tmp_path: Path) -> None:
    jobdir, launch = _launch(tmp_path)
    whole = tmp_path / "whole.warc.gz"
    write_encoded_warc(whole)
    (launch / "warcs" / WARC_NAME).write_bytes(whole.read_bytes())
    # Unreadable past its first record (the steps that read every record of it fail, and are named too).
    (launch / "warcs" / UNREADABLE_NAME).write_bytes(whole.read_bytes()[:_first_record_end(whole)]
                                                      + b"not a WARC record\r\n" * 20)
    report = _finish(tmp_path, jobdir)
    assert f"CDXJ indexing of {UNREADABLE_NAME} failed: " in report.harvest_error_details
    cdxj = tmp_path / "archive" / "3" / "7" / "cdxj"
    assert not (cdxj / f"{UNREADABLE_NAME}.cdxj").exists()
    assert len((cdxj / f"{WARC_NAME}.cdxj").read_text(encoding="utf-8").splitlines()) == 7


@pytest.mark.parametrize("failed", [True, False])
def test_the_launches_of_a_failed_crawl_are_reconciled_though_no_file_was_left_open(tmp_path: Path,
                                                                                   failed: bool) -> None:
    """A controller that died after closing the files and before reconciling leaves no open file behind; the
    crawl failed, so every launch is reconciled. One that ended is not: its files agree."""
    jobdir, launch = _launch(tmp_path)
    whole = tmp_path / "whole.warc.gz"
    write_encoded_warc(whole)
    (launch / "warcs" / WARC_NAME).write_bytes(whole.read_bytes())
    captures = _captures(whole)
    (launch / "logs" / "crawl.log").write_text("".join(_line(url, digest) for url, digest in captures[:-2]),
                                               encoding="utf-8")
    jobdir.record_outcome(CrawlOutcome(failed=failed))
    report = _finish(tmp_path, jobdir, JobStatus.FAILED if failed else JobStatus.DONE)
    [row] = report.domain_report.domains
    if failed:
        assert "0 lines without records moved to crawl-unarchived.log, 2 lines made from records" \
            in report.harvest_error_details
        assert row.objects == len(captures)
    else:
        assert "crawl.log" not in report.harvest_error_details
        assert row.objects == len(captures) - 2
