"""Post-processing of a real crawl's WARC files: CDX lines, CDXJ index, deduplication entries, closing a
WARC left open, and the domain report of the same crawl. One crawl of the local test site serves them all;
expectations are recomputed from the files with warcio's own parser."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import surt
from cdxj_indexer.main import write_cdx_index
from warcio.archiveiterator import ArchiveIterator

from harvestdef.dedup import DedupEntry, read_entries, write_entries
from harvestdef.errors import ValidationError
from harvestdef.model.status import StopReason
from harvester.engine.config import load_crawl_config
from harvester.engine.crawl import CrawlController
from harvester.jobdir import JobDirectory, Launch
from harvester.postprocess import (
    build_domain_report,
    cdx_lines,
    close_open_warc,
    extract_dedup_entries,
    reconcile_crawl_log,
    write_cdxj,
)
from tests.engine.conftest import write_job
from tests.engine.site import TestSite
from tests.harvester.test_finish_killed_launch import JOB

HOSTS = ("www.kulturarv.dk", "www.bibliotek.no", "www.økologi.dk")


@pytest.fixture(scope="module")
def launch_dir(tmp_path_factory) -> Iterator[Path]:
    """One finished crawl: dup.bin (identical everywhere, so revisits), pages, images, big.bin, on 3 hosts."""
    job_dir = tmp_path_factory.mktemp("postprocess") / "job"
    with TestSite() as site:
        seeds = [site.url(host, path) for host in HOSTS for path in ("/dup.bin", "/page/1")]
        seeds += [site.url("www.kulturarv.dk", path) for path in ("/big.bin", "/chunked.html", "/gzip.html")]
        cxml = write_job(job_dir, seeds, overrides={"quotaenforcer.groupMaxFetchSuccesses": 12})
        launch = job_dir / "20260101000000"
        launch.mkdir()
        controller = CrawlController(load_crawl_config(cxml, job_dir), job_dir, launch, site.hosts,
                                     logging.getLogger("test.postprocess"))
        controller.start()
        assert controller.join(60), "the test crawl did not finish within 60 s"
    yield launch


@pytest.fixture(scope="module")
def warc(launch_dir) -> Path:
    [path] = Launch(launch_dir).warc_files()
    return path


def parsed_records(path: Path) -> list[dict]:
    """Every record as warcio parses it (HTTP heads included), with its offset and payload as stored."""
    records = []
    with open(path, "rb") as handle:
        iterator = ArchiveIterator(handle)
        for record in iterator:
            payload = record.raw_stream.read()
            records.append({"type": record.rec_type, "headers": record.rec_headers, "http": record.http_headers,
                            "payload": payload, "offset": iterator.get_record_offset()})
    return records


def test_the_job_directory_lists_closed_warcs_only(launch_dir, warc, tmp_path):
    assert warc.name.endswith(".warc.gz") and warc.parent.name == "warcs"
    assert Launch(launch_dir).open_warc_files() == []
    job = tmp_path / "7_1767261600000"
    first, second = job / "20260101000000", job / "20260102000000"
    (first / "warcs").mkdir(parents=True)
    (second / "warcs").mkdir(parents=True)
    shutil.copy(warc, first / "warcs" / "a.warc.gz")
    shutil.copy(warc, first / "warcs" / "b.warc.gz.open")
    shutil.copy(warc, second / "warcs" / "c.warc")
    shutil.copy(warc, first / "warcs" / "7-metadata-1.warc.gz")
    (job / "latest").symlink_to(second)  # the crawler's link to its newest launch lists no WARC twice
    assert JobDirectory(job, JOB).warc_files() == [first / "warcs" / "a.warc.gz", second / "warcs" / "c.warc"]
    assert Launch(first).open_warc_files() == [first / "warcs" / "b.warc.gz.open"]


def test_cdx_lines_match_the_records(warc):
    expected = []
    for record in parsed_records(warc):
        if record["type"] != "response":
            continue
        headers = record["headers"]
        content_type = (record["http"].get_header("Content-Type") if record["http"]
                        else headers.get_header("Content-Type"))
        date = headers.get_header("WARC-Date")
        expected.append(" ".join([
            headers.get_header("WARC-Target-URI"), headers.get_header("WARC-IP-Address") or "-",
            date[0:4] + date[5:7] + date[8:10] + date[11:13] + date[14:16] + date[17:19],
            content_type.split(";")[0].strip().lower(), headers.get_header("Content-Length"), warc.name,
            str(record["offset"]), hashlib.md5(record["payload"]).hexdigest()]))
    lines = list(cdx_lines(warc))
    assert lines == expected
    assert len(lines) > 20
    assert {line.split()[3] for line in lines} >= {"text/dns", "text/html", "image/png", "application/octet-stream"}
    big = next(line for line in lines if "/big.bin " in line).split()
    assert int(big[4]) > 300_000  # a payload read in many chunks


def test_cdx_record_types_can_be_widened_to_revisits(warc):
    revisits = [record for record in parsed_records(warc) if record["type"] == "revisit"]
    assert revisits, "the crawl should have written revisit records for dup.bin"
    lines = list(cdx_lines(warc, record_types={"response", "revisit"}))
    offsets = {int(line.split()[6]) for line in lines}
    assert {record["offset"] for record in revisits} <= offsets
    assert len(lines) == len(list(cdx_lines(warc))) + len(revisits)


def test_cdxj_is_sorted_and_points_at_the_records(warc, tmp_path):
    out = tmp_path / "cdxj" / (warc.name + ".cdxj")
    result = write_cdxj(warc, out)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert result.lines == len(lines) and result.problems == ()
    # The same lines as cdxj-indexer's own reading of the records makes (pywb's wb-manager options).
    library = tmp_path / "library.cdxj"
    write_cdx_index(str(library), [str(warc)], {"sort": True, "post_append": True})
    assert library.read_text(encoding="utf-8").splitlines() == lines
    assert lines == sorted(lines)
    assert not list(out.parent.glob(".*.tmp"))
    records = {record["offset"]: record for record in parsed_records(warc)}
    indexed = [record for record in records.values() if record["type"] in ("response", "revisit")]
    assert len(lines) == len(indexed)
    for text in lines:
        urlkey, timestamp, fields = text.split(" ", 2)
        entry = json.loads(fields)
        record = records[int(entry["offset"])]
        assert entry["filename"] == warc.name
        assert entry["url"] == record["headers"].get_header("WARC-Target-URI")
        assert urlkey == surt.surt(entry["url"])  # what pywb looks a URL up by
        assert timestamp == "".join(c for c in record["headers"].get_header("WARC-Date") if c.isdigit())[:14]
        if record["type"] == "revisit":
            assert entry["mime"] == "warc/revisit"


def test_cdxj_of_a_missing_warc_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.warc.gz"):
        write_cdxj(tmp_path / "nothing.warc.gz", tmp_path / "out.cdxj")
    assert not (tmp_path / "out.cdxj").exists()


def test_dedup_entries_are_the_non_text_2xx_responses(warc, tmp_path):
    expected = set()
    for record in parsed_records(warc):
        http = record["http"]
        if record["type"] != "response" or http is None or not http.get_statuscode().startswith("2"):
            continue
        if (http.get_header("Content-Type") or "").lower().startswith("text/"):
            continue
        headers = record["headers"]
        date = "".join(c for c in headers.get_header("WARC-Date") if c.isdigit())[:14]
        expected.add(DedupEntry(headers.get_header("WARC-Payload-Digest"), headers.get_header("WARC-Target-URI"),
                                date, headers.get_header("WARC-Record-ID"), warc.name, record["offset"]))
    entries = list(extract_dedup_entries([warc]))
    assert set(entries) == expected and len(entries) == len(expected)
    urls = [entry.url for entry in entries]
    assert sum(url.endswith("/dup.bin") for url in urls) == 1  # the other two captures are revisits
    assert any(url.endswith("/big.bin") for url in urls) and any(url.endswith(".png") for url in urls)
    assert not any(url.endswith((".html", "/robots.txt", "/page/1")) for url in urls)
    path = tmp_path / "7.gz"
    assert write_entries(path, extract_dedup_entries([warc])) == len(entries)
    assert list(read_entries(path)) == entries


def record_offsets(path: Path) -> list[int]:
    return [record["offset"] for record in parsed_records(path)]


def open_copy(source: Path, directory: Path, length: int, name: str = "TEST-1.warc.gz.open") -> Path:
    target = directory / name
    with open(source, "rb") as handle:
        target.write_bytes(handle.read(length))
    return target


def test_closing_keeps_exactly_the_complete_records(warc, tmp_path):
    offsets = record_offsets(warc)
    size = warc.stat().st_size
    original = warc.read_bytes()
    for cut, kept in ((offsets[7] + 10, 7), (offsets[7], 7), (offsets[-1] + 1, len(offsets) - 1),
                      (size - 4, len(offsets) - 1), (size, len(offsets))):
        closed = close_open_warc(open_copy(warc, tmp_path, cut))
        assert closed == tmp_path / "TEST-1.warc.gz"
        assert record_offsets(closed) == offsets[:kept]
        end = offsets[kept] if kept < len(offsets) else size
        assert closed.read_bytes() == original[:end]
        closed.unlink()


def test_closing_an_uncompressed_warc_cuts_at_a_record_end(warc, tmp_path):
    plain = tmp_path / "plain.warc"
    with gzip.open(warc) as source, open(plain, "wb") as target:
        shutil.copyfileobj(source, target)
    offsets = record_offsets(plain)
    closed = close_open_warc(open_copy(plain, tmp_path, offsets[5] + 30, "TEST-2.warc.open"))
    assert closed == tmp_path / "TEST-2.warc"
    assert record_offsets(closed) == offsets[:5]
    assert closed.stat().st_size == offsets[5]


def test_a_gzip_member_ending_inside_a_record_is_no_place_to_cut(warc, tmp_path):
    plain = gzip.decompress(warc.read_bytes())
    offsets = record_offsets_plain(plain)
    first, second = plain[:offsets[1]], plain[offsets[1]:offsets[2]]
    # The second record is split over two gzip members; the file ends after the first of them.
    data = gzip.compress(first) + gzip.compress(second[:len(second) // 2])
    path = tmp_path / "TEST-4.warc.gz.open"
    path.write_bytes(data + gzip.compress(second[len(second) // 2:])[:20])
    closed = close_open_warc(path)
    assert closed is not None and closed.read_bytes() == gzip.compress(first)


def record_offsets_plain(data: bytes) -> list[int]:
    offsets = []
    iterator = ArchiveIterator(io.BytesIO(data), no_record_parse=True)
    for record in iterator:
        record.raw_stream.read()
        offsets.append(iterator.get_record_offset())
    return offsets


def test_a_file_without_one_complete_record_is_left_as_it_is(warc, tmp_path):
    partial = open_copy(warc, tmp_path, record_offsets(warc)[1] - 3)
    before = partial.read_bytes()
    assert close_open_warc(partial) is None
    assert partial.read_bytes() == before
    assert not (tmp_path / "TEST-1.warc.gz").exists()


def test_closing_refuses_wrong_names_and_existing_targets(warc, tmp_path):
    with pytest.raises(ValidationError, match="not an open WARC file"):
        close_open_warc(open_copy(warc, tmp_path, 100, "TEST-1.warc.gz"))
    shutil.copy(warc, tmp_path / "TEST-3.warc.gz")
    with pytest.raises(FileExistsError, match="TEST-3.warc.gz exists"):
        close_open_warc(open_copy(warc, tmp_path, warc.stat().st_size, "TEST-3.warc.gz.open"))


def test_domain_report_of_the_real_crawl(launch_dir):
    logs = launch_dir / "logs"
    fields = [text.split() for text in (logs / "crawl.log").read_text(encoding="utf-8").splitlines()]
    job = {"kulturarv.dk": "a", "bibliotek.no": "b", "økologi.dk": "c", "tom.dk": "d"}
    result = build_domain_report(logs / "crawl.log", logs / "progress-statistics.log", job)
    report = {stats.domain: stats for stats in result.report.domains}
    assert result.report.default_stop_reason == StopReason.DOWNLOAD_COMPLETE
    assert result.invalid_lines == 0 and result.domains_outside_job == 0
    assert sum(stats.objects for stats in report.values()) == sum(int(f[1]) >= 0 for f in fields)
    assert sum(stats.duplicate_objects for stats in report.values()) == \
        sum("duplicate:digest" in f[11] for f in fields) == 2
    assert report["kulturarv.dk"].bytes > 300_000  # big.bin
    quota_seeds = {f[10] for f in fields if f[1] == "-5003"}
    assert quota_seeds, "the crawl should have hit the per-domain quota"
    for domain, stats in report.items():
        hit = any(domain.encode("idna").decode() in seed for seed in quota_seeds)
        assert stats.stop_reason == (StopReason.OBJECT_LIMIT if hit else StopReason.DOWNLOAD_COMPLETE)
    assert (report["tom.dk"].objects, report["tom.dk"].stop_reason) == (0, StopReason.DOWNLOAD_COMPLETE)


def test_reconciling_a_complete_crawl_changes_nothing_and_lost_revisit_lines_come_back_as_duplicates(
        launch_dir, warc, tmp_path):
    crawl_log = tmp_path / "crawl.log"
    shutil.copy(launch_dir / "logs" / "crawl.log", crawl_log)
    original = crawl_log.read_text(encoding="utf-8")
    result = reconcile_crawl_log(crawl_log, [warc])
    assert not result.changed and crawl_log.read_text(encoding="utf-8") == original
    domains = {"kulturarv.dk": "c", "bibliotek.no": "c", "økologi.dk": "c"}
    expected = build_domain_report([crawl_log], None, domains).report.domains
    # The lines of the revisits lost, as with a crawl.log buffer at a kill: made again from the records.
    kept = [line for line in original.splitlines(keepends=True) if "duplicate:" not in line]
    assert len(kept) < len(original.splitlines())
    crawl_log.write_text("".join(kept), encoding="utf-8")
    result = reconcile_crawl_log(crawl_log, [warc])
    assert (result.unarchived_lines, result.recovered_lines) == (0, len(original.splitlines()) - len(kept))
    recovered = build_domain_report([crawl_log], None, domains).report.domains
    assert [(row.domain, row.objects, row.duplicate_objects) for row in recovered] == \
        [(row.domain, row.objects, row.duplicate_objects) for row in expected]
