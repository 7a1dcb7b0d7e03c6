"""The metadata WARC (docs/harvester.md, Post-processing, step 4) of a real crawl: warcio's command line
accepts it, the records come in NetarchiveSuite's order under its metadata:// URLs, and each holds exactly its
file or CDX lines."""

from __future__ import annotations

import json
import logging
import os
import random
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvestdef.messages import AliasRecord
from harvestdef.templatesecrets import MASK, masked_template
from harvester.engine.config import load_crawl_config
from harvester.engine.crawl import CrawlController
from harvester.jobdir import Launch
from harvester.postprocess import (
    MetadataInfo,
    cdx_lines,
    heritrix_file_category,
    metadata_file_name,
    write_metadata_warc,
)
from tests.engine.conftest import write_job
from tests.engine.site import TestSite
from tests.harvestdef.test_template_secrets import SECRET_TEMPLATE, SECRETS

WARCIO = Path(sys.executable).parent / "warcio"
Q = "heritrixVersion=3.4.0&harvestid=3&jobid=7"
SETUP_Q = "majorversion=1&minorversion=0&harvestid=3&harvestnum=2&jobid=7"


@pytest.fixture(scope="module")
def job_dir(tmp_path_factory) -> Iterator[Path]:
    """A crawled job directory: crawler-beans.cxml, seeds.txt, harvestInfo.xml and one launch."""
    job = tmp_path_factory.mktemp("metadata") / "7_1767261600000"
    with TestSite() as site:
        seeds = [site.url(host, "/page/1") for host in ("www.kulturarv.dk", "www.bibliotek.no")]
        cxml = write_job(job, seeds, overrides={"quotaenforcer.groupMaxFetchSuccesses": 8})
        (job / "harvestInfo.xml").write_text("<harvestInfo><jobId>7</jobId></harvestInfo>\n", encoding="utf-8")
        launch = job / "20260101000000"
        launch.mkdir()
        controller = CrawlController(load_crawl_config(cxml, job), job, launch, site.hosts,
                                     logging.getLogger("test.metadata"))
        controller.start()
        assert controller.join(60), "the test crawl did not finish within 60 s"
    yield job


def info(**changes) -> MetadataInfo:
    values = {"job_id": 7, "harvest_id": 3, "harvest_num": 2, "organization": "netarkivet.dk",
              "heritrix_version": "3.4.0", "software_version": "0.1.0", "hostname": "harvester-1", "ip": "10.0.0.5"}
    return MetadataInfo(**{**values, **changes})


def job_files(job_dir: Path) -> tuple[list[Path], list[Path], list[Path], list[Path]]:
    launch = job_dir / "20260101000000"
    setup = [job_dir / "seeds.txt", job_dir / "harvestInfo.xml", job_dir / "crawler-beans.cxml"]
    reports = sorted((launch / "reports").glob("*-report.txt"), reverse=True)
    logs = sorted((launch / "logs").glob("*.log"))
    return setup, reports, logs, Launch(launch).warc_files()


def read_records(path: Path) -> list[tuple[str, str | None, object, bytes]]:
    with open(path, "rb") as handle:
        return [(record.rec_type, record.rec_headers.get_header("WARC-Target-URI"), record.rec_headers,
                 record.content_stream().read()) for record in ArchiveIterator(handle)]


def test_metadata_file_names():
    assert metadata_file_name(7, 3) == "7-metadata-1.warc.gz"
    assert metadata_file_name(7, 3, "netarkivet") == "netarkivet-7-3-metadata-1.warc.gz"


@pytest.mark.parametrize(("name", "category"), [
    ("crawler-beans.cxml", "setup"), ("seeds.txt", "setup"), ("harvestInfo.xml", "setup"),
    ("crawl-report.txt", "reports"), ("hosts-report.txt", "reports"), ("crawl.log", "logs"),
    ("heritrix3_out.log", "logs"), ("heritrix_out.out", "logs"), ("state.bdb", None)])
def test_heritrix_file_categories(name, category):
    assert heritrix_file_category(name) == category


def test_metadata_warc_passes_warcio_and_holds_everything_in_order(job_dir, tmp_path):
    setup, reports, logs, archives = job_files(job_dir)
    aliases = [AliasRecord("kulturarv.com", "kulturarv.dk", "2026-01-01T00:00:00Z"),
               AliasRecord("bibliotek.com", "bibliotek.no", "2026-01-01T00:00:00Z")]
    out = tmp_path / metadata_file_name(7, 3)
    result = write_metadata_warc(out, info(aliases=aliases, deduplication_job_ids=[4, 5],
                                           deduplication_job_ids_left_out=[6]), setup, reports, logs, archives)
    assert result == out and not list(tmp_path.glob(".*.tmp"))

    check = subprocess.run([str(WARCIO), "check", "-v", str(out)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "digest pass" in check.stdout and "fail" not in check.stdout
    index = subprocess.run([str(WARCIO), "index", "-f", "warc-type,warc-target-uri,content-type", str(out)],
                           capture_output=True, text=True, check=True)
    indexed = [json.loads(text) for text in index.stdout.splitlines()]

    [warc_name] = [path.name for path in archives]
    org = "metadata://netarkivet.dk/crawl"
    expected = ([None, f"{org}/setup/aliases?{SETUP_Q}", f"{org}/setup/duplicatereductionjobs?{SETUP_Q}",
                 f"{org}/setup/duplicatereductionleftout?{SETUP_Q}"]
                + [f"{org}/setup/{name}?{Q}" for name in ("crawler-beans.cxml", "harvestInfo.xml", "seeds.txt")]
                + [f"{org}/reports/{path.name}?{Q}" for path in sorted(reports)]
                + [f"{org}/logs/{path.name}?{Q}" for path in logs]
                + [f"{org}/index/cdx?majorversion=2&minorversion=0&harvestid=3&jobid=7&filename={warc_name}"])
    assert [entry.get("warc-target-uri") for entry in indexed] == expected
    assert [entry["warc-type"] for entry in indexed] == ["warcinfo"] + ["resource"] * (len(expected) - 1)
    types = {entry.get("warc-target-uri"): entry["content-type"] for entry in indexed}
    assert types[f"{org}/setup/harvestInfo.xml?{Q}"] == "text/xml"
    assert types[f"{org}/setup/crawler-beans.cxml?{Q}"] == "text/plain"
    assert types[expected[-1]] == "application/x-cdx"

    records = read_records(out)
    warcinfo = records[0]
    assert b"software: HarvestSuite/0.1.0\r\n" in warcinfo[3] and b"isPartOf: 7\r\n" in warcinfo[3]
    assert b"hostname: harvester-1\r\n" in warcinfo[3] and b"ip: 10.0.0.5\r\n" in warcinfo[3]
    assert warcinfo[2].get_header("WARC-Filename") == out.name
    warcinfo_id = warcinfo[2].get_header("WARC-Record-ID")
    assert all(headers.get_header("WARC-Warcinfo-ID") == warcinfo_id for _, _, headers, _ in records[1:])
    assert all(headers.get_header("WARC-IP-Address") == "10.0.0.5" for _, _, headers, _ in records[1:])
    content = {url: body for _, url, _, body in records}
    assert content[expected[1]] == (b"kulturarv.com is an alias for kulturarv.dk\n"
                                    b"bibliotek.com is an alias for bibliotek.no\n")
    assert content[expected[2]] == b"4,5"
    assert content[expected[3]] == b"6"
    for path in setup + reports + logs:
        category = heritrix_file_category(path.name)
        assert content[f"{org}/{category}/{path.name}?{Q}"] == path.read_bytes()
    cdx = content[expected[-1]].decode().splitlines()
    assert cdx == list(cdx_lines(archives[0])) and len(cdx) > 10


def test_records_are_left_out_when_there_is_nothing_to_say(job_dir, tmp_path):
    setup, reports, logs, archives = job_files(job_dir)
    out = write_metadata_warc(tmp_path / "m.warc.gz", info(), setup[:1], [], [], [])
    assert [url for _, url, _, _ in read_records(out)] == [None, f"metadata://netarkivet.dk/crawl/setup/seeds.txt?{Q}"]
    out = write_metadata_warc(tmp_path / "n.warc.gz", info(deduplication_job_ids=[]), [], [], [], [])
    records = read_records(out)
    assert [(url, body) for _, url, _, body in records[1:]] == [
        (f"metadata://netarkivet.dk/crawl/setup/duplicatereductionjobs?{SETUP_Q}", b"")]


def test_an_uncompressed_metadata_warc_when_the_name_says_so(job_dir, tmp_path):
    setup, _, _, archives = job_files(job_dir)
    out = write_metadata_warc(tmp_path / "7-metadata-1.warc", info(), setup, [], [], archives)
    assert out.read_bytes().startswith(b"WARC/1.1\r\n")
    assert subprocess.run([str(WARCIO), "check", str(out)], capture_output=True).returncode == 0


def test_a_missing_input_is_named_and_nothing_is_written(job_dir, tmp_path):
    setup, reports, logs, archives = job_files(job_dir)
    out = tmp_path / "7-metadata-1.warc.gz"
    with pytest.raises(FileNotFoundError, match="gone.log"):
        write_metadata_warc(out, info(), setup, reports, logs + [tmp_path / "gone.log"], archives)
    assert list(tmp_path.iterdir()) == []


def test_a_large_log_is_streamed_not_read_whole(tmp_path):
    log = tmp_path / "crawl.log"
    generator = random.Random(7)
    with open(log, "w", encoding="ascii") as handle:
        for number in range(160_000):
            handle.write(f"2026-01-01T10:00:00.000Z 200 {generator.randrange(10**6)} http://www.kulturarv.dk/"
                         f"{number} L - text/html #001 - sha1:{generator.getrandbits(160):040x} - -\n")
    size = log.stat().st_size
    assert size > 20 * 1024 * 1024
    tracemalloc.start()
    try:
        out = write_metadata_warc(tmp_path / "m.warc.gz", info(), [], [], [log], [])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * 1024 * 1024, f"peak {peak} bytes while archiving a {size}-byte log"
    with open(out, "rb") as handle:
        [_, record] = list(ArchiveIterator(handle))
        assert int(record.rec_headers.get_header("Content-Length")) == size
    assert os.path.getsize(out) < size


def test_each_applied_live_change_is_a_record_of_its_own_in_version_order(job_dir, tmp_path):
    setup, _, _, _ = job_files(job_dir)
    changes = [{"version": 3, "kind": "reject", "payload": {"regex": ".*/trap/.*"}, "author": "ops1",
                "created": "2026-11-26T10:00:00+00:00", "state": "applied", "reason": "",
                "happened_at": "2026-11-26T10:00:01+00:00"},
               {"version": 1, "kind": "pause", "payload": {}, "author": "ops2", "created": "2026-11-26T09:00:00+00:00",
                "state": "applied", "reason": "", "happened_at": "2026-11-26T09:00:02+00:00"}]
    out = write_metadata_warc(tmp_path / "c.warc.gz", info(live_changes=changes), setup[:1], [], [], [])
    records = [(url, headers, body) for _, url, headers, body in read_records(out)
               if url and "/crawl/setup/jobchange?" in url]
    assert [url for url, _, _ in records] == [
        f"metadata://netarkivet.dk/crawl/setup/jobchange?{SETUP_Q}&version=1",
        f"metadata://netarkivet.dk/crawl/setup/jobchange?{SETUP_Q}&version=3"]
    assert all(headers.get_header("Content-Type") == "application/json" for _, headers, _ in records)
    assert json.loads(records[1][2]) == changes[0]
    check = subprocess.run([str(WARCIO), "check", str(out)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_qa_report_is_one_json_record_among_the_reports(job_dir, tmp_path):
    setup, reports, _, _ = job_files(job_dir)
    qa_report = tmp_path / "qa-report.json"
    qa_report.write_text('{"job_id": 7}\n', encoding="utf-8")
    out = write_metadata_warc(tmp_path / "q.warc.gz", info(qa_report=qa_report), setup[:1], reports, [], [])
    records = [(url, headers, body) for _, url, headers, body in read_records(out) if url and "qa-report" in url]
    assert [(url, headers.get_header("Content-Type"), body) for url, headers, body in records] == [
        (f"metadata://netarkivet.dk/crawl/reports/qa-report?{SETUP_Q}", "application/json", b'{"job_id": 7}\n')]
    check = subprocess.run([str(WARCIO), "check", str(out)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_template_copy_has_its_credential_values_masked_and_the_job_keeps_them(tmp_path):
    beans = tmp_path / "crawler-beans.cxml"
    beans.write_text(SECRET_TEMPLATE, encoding="utf-8")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://www.site.dk/\n", encoding="utf-8")
    out = write_metadata_warc(tmp_path / "s.warc.gz", info(), [beans, seeds], [], [], [])
    bodies = {url: body.decode("utf-8") for _, url, _, body in read_records(out) if url}
    copy = bodies[f"metadata://netarkivet.dk/crawl/setup/crawler-beans.cxml?{Q}"]
    assert copy == masked_template(SECRET_TEMPLATE) and MASK in copy
    for secret in SECRETS:
        assert secret not in copy, secret
    assert bodies[f"metadata://netarkivet.dk/crawl/setup/seeds.txt?{Q}"] == "http://www.site.dk/\n"
    assert beans.read_text(encoding="utf-8") == SECRET_TEMPLATE, "the crawler's own file keeps the values"
    check = subprocess.run([str(WARCIO), "check", str(out)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
