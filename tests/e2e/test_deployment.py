"""End to end on the real PostgreSQL and RabbitMQ: harvests defined through the JSON API are scheduled,
split into jobs, crawled by two harvest controllers on two channels, stored in the archive store (WARCs,
metadata WARC, CDXJ, deduplication entries, checksums) and reported into the history the API serves; the
second selective run deduplicates, a snapshot's continuation step takes exactly the domains the first step
stopped on its limit, and pywb replays a page and a revisit from what HarvestSuite stored.

The selective harvest's schedule runs it twice, a minute apart (a minute is the shortest schedule); both
snapshot steps run on the other controller meanwhile. The tests run in the order of this file and read
what the ones before them waited for.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvestdef.domainnames import registered_domain
from harvester.postprocess.crawllogreader import iter_crawl_log
from tests.e2e.conftest import Deployment
from tests.harvester.conftest import OUR_TEMPLATE, fast_politeness
from tests.pywb import pywb_server, replay

pytestmark = [pytest.mark.postgres, pytest.mark.rabbitmq]

SELECTIVE = "e2e-selective"
SNAPSHOT_1 = "e2e-snapshot-1"
SNAPSHOT_2 = "e2e-snapshot-2"
TEMPLATE = "e2e_fast"
# Objects per domain in the first snapshot step: well above lille.dk's handful, far below the others'.
SNAPSHOT_LIMIT = 10
SEED_PATHS = {"kulturarv.dk": ("www.kulturarv.dk", "/"), "bibliotek.no": ("www.bibliotek.no", "/"),
              "lille.dk": ("www.lille.dk", "/missing/1")}
SELECTIVE_DOMAINS = ("bibliotek.no", "kulturarv.dk")
HARVESTERS = ("harvester-focused", "harvester-snapshot")
# Run 2 starts a minute after run 1 (the schedule), then crawls.
RUN_TIMEOUT = 150.0


# ---------------------------------------------------------------- reading what was stored
def job_dir(system: Deployment, job: dict[str, Any]) -> Path:
    return system.archive / str(job["harvest_id"]) / str(job["job_id"])


def content_warcs(directory: Path) -> list[Path]:
    return sorted(path for path in directory.glob("*.warc.gz") if "metadata" not in path.name)


def captures(paths: list[Path]) -> list[dict[str, Any]]:
    """Every response and revisit record: type, URL, date, digest, what a revisit refers to, content type,
    payload (responses only)."""
    found = []
    for path in paths:
        with open(path, "rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type not in ("response", "revisit"):
                    continue
                headers = record.rec_headers
                found.append({
                    "type": record.rec_type, "warc": path.name, "url": headers.get_header("WARC-Target-URI"),
                    "date": headers.get_header("WARC-Date"), "digest": headers.get_header("WARC-Payload-Digest"),
                    "refers_to": headers.get_header("WARC-Refers-To-Target-URI"),
                    "content_type": record.http_headers.get_header("Content-Type") if record.http_headers else None,
                    "payload": record.content_stream().read() if record.rec_type == "response" else None})
    return found


def metadata_records(path: Path) -> dict[str, bytes]:
    """The metadata WARC's documents by their metadata:// URL without its query (versions, job ids)."""
    with open(path, "rb") as handle:
        return {record.rec_headers.get_header("WARC-Target-URI").split("?")[0]: record.content_stream().read()
                for record in ArchiveIterator(handle) if record.rec_type in ("resource", "metadata")}


def timestamp14(warc_date: str) -> str:
    return "".join(ch for ch in warc_date if ch.isdigit())[:14]


def history(system: Deployment, domain: str, harvest: str) -> list[dict[str, Any]]:
    rows = system.api("GET", f"/domains/{domain}/history?limit=100")["items"]
    return [row for row in rows if row["harvest"] == harvest]


def statistics_run(system: Deployment, harvest: str, harvest_num: int) -> dict[str, Any]:
    runs = system.api("GET", f"/harvests/{harvest}/statistics")["items"]
    (run,) = [run for run in runs if run["harvest_num"] == harvest_num]
    return run


# ---------------------------------------------------------------- the harvests, defined through the API
@pytest.fixture(scope="module")
def defined(deployment: Deployment) -> Deployment:
    """A test crawl template, three domains with their default seeds on the local site, a selective harvest
    of two of them on a schedule that runs it twice, and a snapshot in two steps; all through /api/v1."""
    system = deployment
    # the controllers register before the selective harvest is ready, so it is not postponed
    system.wait_for("two registered harvest controllers", lambda: len(
        [h for h in system.api("GET", "/harvesters")["items"] if h["accepted"] and not h["is_lost"]]) == 2, 60)
    system.api("POST", "/templates", {"name": TEMPLATE, "description": "test-speed politeness",
                                      "cxml": fast_politeness(OUR_TEMPLATE.read_text(encoding="utf-8"))}, expect=201)
    created = system.api("POST", "/domains", {"names": sorted(SEED_PATHS)}, expect=201)
    assert sorted(created["created"]) == sorted(SEED_PATHS) and not created["notes"], created
    for domain, (host, path) in SEED_PATHS.items():
        edition = system.api("GET", f"/domains/{domain}")["edition"]
        seeds = system.api("PATCH", f"/domains/{domain}/seedlists/defaultseeds",
                           {"seeds": [system.site.url(host, path)], "edition": edition})
        assert seeds["seeds"] == [system.site.url(host, path)]
        configuration = system.api("PATCH", f"/domains/{domain}/configurations/defaultconfig",
                                   {"template": TEMPLATE, "edition": edition + 1})
        assert configuration["template"] == TEMPLATE and configuration["default"] is True
    system.api("POST", "/schedules", {"name": "e2e-every-minute-twice", "timeunit": "MINUTE", "numtimeunits": 1,
                                      "maxrepeats": 2}, expect=201)
    selective = system.api("POST", "/harvests", {
        "type": "selective", "name": SELECTIVE, "schedule": "e2e-every-minute-twice", "channel": "FOCUSED",
        "configurations": [{"domain": domain} for domain in SELECTIVE_DOMAINS], "active": True}, expect=201)
    assert selective["nextdate"] is not None, selective
    system.api("POST", "/harvests", {"type": "snapshot", "name": SNAPSHOT_1, "channel": "SNAPSHOT",
                                     "max_objects": SNAPSHOT_LIMIT, "max_bytes": -1, "active": True}, expect=201)
    # The continuation step is active from the start: it waits until every job of the first step ended.
    step2 = system.api("POST", "/harvests", {"type": "snapshot", "name": SNAPSHOT_2, "channel": "SNAPSHOT",
                                             "previous": SNAPSHOT_1, "max_objects": -1, "max_bytes": -1,
                                             "active": True}, expect=201)
    assert step2["previous"] == SNAPSHOT_1
    return system


# ---------------------------------------------------------------- the tests
def test_a_selective_run_is_crawled_stored_and_reported_in_the_history(defined):
    system = defined
    jobs = system.wait_for_run(SELECTIVE, 1, RUN_TIMEOUT)
    assert [job["status"] for job in jobs] == ["DONE"] * len(jobs), jobs
    assert {job["channel"] for job in jobs} == {"FOCUSED"}
    focused_controller = (system.server_dirs["focused"] / "controller-id").read_text(encoding="utf-8").strip()
    assert {job["controller"] for job in jobs} == {focused_controller}

    expected_objects: Counter[str] = Counter()
    revisits: list[dict[str, Any]] = []
    for job in jobs:
        directory = job_dir(system, job)
        warcs = content_warcs(directory)
        assert warcs, sorted(directory.rglob("*"))
        metadata = directory / f"{job['job_id']}-metadata-1.warc.gz"
        # SHA256SUMS lists every other stored file with its digest, and the API lists the same files
        sums = dict(reversed(line.split("  ", 1)) for line in (directory / "SHA256SUMS").read_text().splitlines())
        stored = {str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file()} - {"SHA256SUMS"}
        assert set(sums) == stored
        assert {f"cdxj/{w.name}.cdxj" for w in warcs} | {metadata.name, f"dedup/{job['job_id']}.gz"} <= stored
        for name, digest in sums.items():
            assert hashlib.sha256((directory / name).read_bytes()).hexdigest() == digest, name
        detail = system.api("GET", f"/jobs/{job['job_id']}")
        assert {f["name"] for f in detail["files"]} == stored | {"SHA256SUMS"}

        records = captures(warcs)
        responses = [r for r in records if r["type"] == "response"]
        # no index from an earlier run: a revisit here can only be of a payload this crawl fetched before
        # (dup.bin, the same bytes on every host)
        revisits += [r for r in records if r["type"] == "revisit"]
        assert responses and all((r["refers_to"], r["digest"]) in {(x["url"], x["digest"]) for x in responses}
                                 for r in revisits)
        # every response is in its WARC's CDXJ index, at the offset the index gives
        for warc in warcs:
            lines = (directory / "cdxj" / f"{warc.name}.cdxj").read_text(encoding="utf-8").splitlines()
            assert lines == sorted(lines)
            indexed = {json.loads(line.split(" ", 2)[2])["url"] for line in lines}
            assert {r["url"] for r in responses if r["warc"] == warc.name} <= indexed
        # the dedup entries: the non-text payloads of the responses, with the WARC they are in
        with gzip.open(directory / "dedup" / f"{job['job_id']}.gz", "rt", encoding="utf-8") as handle:
            entries = [line.rstrip("\n").split("\t") for line in handle]
        assert entries and all(len(entry) == 6 for entry in entries)
        by_url = {(r["url"], r["warc"]): r for r in responses}
        for digest, url, _date14, _record_id, warc_name, _offset in entries:
            response = by_url[(url, warc_name)]
            assert response["digest"] == digest and not response["content_type"].startswith("text/")
        assert any(entry[1].endswith("/dup.bin") for entry in entries)
        # the metadata WARC holds the crawl's setup and logs; its crawl.log is what the history counts
        documents = metadata_records(metadata)
        assert any(url.endswith("/crawl/setup/crawler-beans.cxml") for url in documents)
        (crawl_log,) = [body for url, body in documents.items() if url.endswith("/crawl/logs/crawl.log")]
        crawl_log_path = system.tmp / f"crawl-{job['job_id']}.log"
        crawl_log_path.write_bytes(crawl_log)
        for line in iter_crawl_log(crawl_log_path):
            if line.status >= 0:
                expected_objects[registered_domain((line.source_tag or line.url).split("/")[2].split(":")[0])] += 1

    job_ids = {job["job_id"] for job in jobs}
    for domain in SELECTIVE_DOMAINS:
        (row,) = history(system, domain, SELECTIVE)
        assert row["job_id"] in job_ids and row["harvest_num"] == 1
        assert row["objectcount"] == expected_objects[domain] > 5, (domain, row)
        assert row["bytecount"] > 10_000 and row["stopreason"] == "DOWNLOAD_COMPLETE"
        assert row["novel_objects"] + row["duplicate_objects"] == row["objectcount"]
    run = statistics_run(system, SELECTIVE, 1)
    assert run["duplicate_objects"] == len(revisits)
    assert run["jobs_done"] == len(jobs) and run["configurations"] == len(SELECTIVE_DOMAINS)
    assert run["objects"] == sum(expected_objects[domain] for domain in SELECTIVE_DOMAINS)


def test_the_second_selective_run_deduplicates_against_the_first(defined):
    system = defined
    first = system.wait_for_run(SELECTIVE, 1, RUN_TIMEOUT)
    second = system.wait_for_run(SELECTIVE, 2, RUN_TIMEOUT)
    assert [job["status"] for job in second] == ["DONE"] * len(second), second
    earlier = {(r["url"], r["digest"]) for job in first for r in captures(content_warcs(job_dir(system, job)))}
    records = [r for job in second for r in captures(content_warcs(job_dir(system, job)))]
    revisits = [r for r in records if r["type"] == "revisit"]
    assert revisits, "the second run wrote no revisit records"
    # each revisit points at a capture of the first run with the same payload
    assert all((r["refers_to"], r["digest"]) in earlier for r in revisits)
    # every non-text payload the first run stored and the second found unchanged is a revisit now
    again = [r for r in records if (r["url"], r["digest"]) in earlier
             and not (r["content_type"] or "").startswith("text/")]
    assert again and all(r["type"] == "revisit" for r in again)
    for job in second:
        documents = metadata_records(job_dir(system, job) / f"{job['job_id']}-metadata-1.warc.gz")
        (reduction,) = [body for url, body in documents.items() if url.endswith("/crawl/setup/duplicatereductionjobs")]
        assert sorted(int(i) for i in reduction.decode().split(",")) == sorted(job["job_id"] for job in first)

    rows = [row for domain in SELECTIVE_DOMAINS for row in history(system, domain, SELECTIVE)
            if row["harvest_num"] == 2]
    assert len(rows) == len(SELECTIVE_DOMAINS)
    assert sum(row["duplicate_objects"] for row in rows) == len(revisits)
    assert all(row["novel_objects"] + row["duplicate_objects"] == row["objectcount"] for row in rows)
    assert statistics_run(system, SELECTIVE, 2)["duplicate_objects"] == len(revisits)


def test_the_snapshot_continuation_harvests_exactly_the_domains_the_first_step_stopped_on_its_limit(defined):
    system = defined
    step1 = system.wait_for_run(SNAPSHOT_1, 1, RUN_TIMEOUT)
    assert [job["status"] for job in step1] == ["DONE"] * len(step1), step1
    assert {job["channel"] for job in step1} == {"SNAPSHOT"}
    stopped = {}
    for domain in SEED_PATHS:
        (row,) = history(system, domain, SNAPSHOT_1)
        stopped[domain] = row["stopreason"]
        if row["stopreason"] == "OBJECT_LIMIT":
            assert row["objectcount"] >= SNAPSHOT_LIMIT, row
        else:
            assert 0 < row["objectcount"] < SNAPSHOT_LIMIT, row
    assert stopped == {"kulturarv.dk": "OBJECT_LIMIT", "bibliotek.no": "OBJECT_LIMIT",
                       "lille.dk": "DOWNLOAD_COMPLETE"}
    assert statistics_run(system, SNAPSHOT_1, 1)["stop_reasons"]["OBJECT_LIMIT"] == 2

    step2 = system.wait_for_run(SNAPSHOT_2, 1, RUN_TIMEOUT)
    assert [job["status"] for job in step2] == ["DONE"] * len(step2), step2
    continued = {entry["domain"] for job in step2
                 for entry in system.api("GET", f"/jobs/{job['job_id']}")["configurations"]}
    assert continued == {domain for domain, reason in stopped.items() if reason == "OBJECT_LIMIT"}
    for domain in continued:
        (row,) = history(system, domain, SNAPSHOT_2)
        assert row["stopreason"] == "DOWNLOAD_COMPLETE" and row["objectcount"] > SNAPSHOT_LIMIT, row
    assert history(system, "lille.dk", SNAPSHOT_2) == []


def test_pywb_replays_a_harvested_page_and_a_revisit_from_the_stored_cdxj_and_warcs(defined):
    system = defined
    first = system.wait_for_run(SELECTIVE, 1, RUN_TIMEOUT)
    second = system.wait_for_run(SELECTIVE, 2, RUN_TIMEOUT)
    directories = [job_dir(system, job) for job in first + second]
    warcs = [warc for directory in directories for warc in content_warcs(directory)]
    indexes = [directory / "cdxj" / f"{warc.name}.cdxj" for directory in directories
               for warc in content_warcs(directory)]
    first_captures = [r for job in first for r in captures(content_warcs(job_dir(system, job)))]
    seed = system.site.url("www.kulturarv.dk", "/")
    (page,) = [r for r in first_captures if r["type"] == "response" and r["url"] == seed]
    # a revisit of the same URL: pywb takes its payload from the first run's response record
    revisit = next(r for job in second for r in captures(content_warcs(job_dir(system, job)))
                   if r["type"] == "revisit" and r["refers_to"] == r["url"])
    (original,) = [r for r in first_captures if r["type"] == "response" and r["url"] == revisit["url"]]
    working_dir = system.tmp / "pywb"
    working_dir.mkdir()
    with pywb_server(working_dir, "harvest", indexes, warcs) as wayback:
        status, _headers, body = replay(wayback, "harvest", timestamp14(page["date"]), seed)
        assert status == 200 and body == page["payload"] and b"<a href" in body
        status, _headers, body = replay(wayback, "harvest", timestamp14(revisit["date"]), revisit["url"])
        assert status == 200 and body == original["payload"], (status, body[:200])


def test_every_role_stops_on_sigterm(defined):
    system = defined
    for name in ("harvester-focused", "harvester-snapshot", "webui", "scheduler"):
        process = system.processes[name]
        assert process.process.poll() is None, f"{name} is not running:\n{process.tail()}"
        assert system.stop(process, timeout=60) == 0, f"{name} did not exit cleanly:\n{process.tail()}"
    for name in HARVESTERS:
        assert "stopped" in system.processes[name].tail(5)

