"""A job in, its files in the archive store, its report in the harvest database: the scheduler (real, in a
thread), ``harvestsuite harvester run`` as a process driving the bundled engine, the local test site and
the real RabbitMQ."""

from __future__ import annotations

import gzip
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select
from warcio.archiveiterator import ArchiveIterator

from harvestdef.db import schema as s
from harvestdef.domainnames import registered_domain
from harvestdef.model.status import JobStatus, StopReason
from harvester.postprocess.crawllogreader import iter_crawl_log
from tests.engine.engine_process import PASSWORD, USER, EngineProcess
from tests.harvester.conftest import NAS_WITHDEDUP, OUR_TEMPLATE, fast_politeness
from tests.pywb import pywb_server, replay
from tests.servers import in_ci


def stored_files(archive: Path, harvest_id: int, job_id: int) -> dict[str, Path]:
    root = archive / str(harvest_id) / str(job_id)
    return {str(p.relative_to(root)): p for p in root.rglob("*") if p.is_file()}


def records(path: Path) -> list:
    with open(path, "rb") as handle:
        return [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.rec_headers.get_header("WARC-Profile"))
                for r in ArchiveIterator(handle)]


def test_a_job_is_crawled_stored_and_reported(harvesting, tmp_path):
    h = harvesting()
    harvest_id = h.selective_harvest("selective", {
        "kulturarv.dk": [h.seed("www.kulturarv.dk")],
        "bibliotek.no": [h.seed("www.bibliotek.no")],
        # resolves nowhere: a domain of the job that harvests nothing still gets its row
        "ingenting.dk": [h.seed("www.ingenting.dk")],
    })
    h.start_scheduler()
    controller = h.start_controller()
    (job,) = h.wait_for_jobs(harvest_id, timeout=180)
    assert JobStatus(job.status) == JobStatus.DONE, (job, controller.text()[-3000:])

    files = stored_files(h.archive, harvest_id, job.job_id)
    warcs = [name for name in files if name.endswith(".warc.gz") and "/" not in name and "metadata" not in name]
    assert warcs, files
    assert f"{job.job_id}-metadata-1.warc.gz" in files
    assert {f"cdxj/{name}.cdxj" for name in warcs} <= set(files)
    assert f"dedup/{job.job_id}.gz" in files
    assert "SHA256SUMS" in files
    checked = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=files["SHA256SUMS"].parent,
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    listed = {line.split("  ", 1)[1] for line in files["SHA256SUMS"].read_text().splitlines()}
    assert listed == set(files) - {"SHA256SUMS"}

    # every response in the WARCs is in the CDXJ index and the dedup entries hold the non-text payloads
    responses = [uri for name in warcs for kind, uri, _ in records(files[name]) if kind == "response"]
    cdxj_urls = [line for name in warcs for line in files[f"cdxj/{name}.cdxj"].read_text().splitlines()]
    assert len(cdxj_urls) >= len(responses) > 0
    with gzip.open(files[f"dedup/{job.job_id}.gz"], "rt", encoding="utf-8") as handle:
        dedup = [line.split("\t") for line in handle]
    assert dedup and all(entry[0].startswith("sha1:") and entry[4] in warcs for entry in dedup)
    assert any(entry[1].endswith("/dup.bin") for entry in dedup)
    metadata_urls = [uri for _, uri, _ in records(files[f"{job.job_id}-metadata-1.warc.gz"]) if uri]
    assert any("/crawl/setup/crawler-beans.cxml" in uri for uri in metadata_urls)
    assert any("/crawl/logs/crawl.log" in uri for uri in metadata_urls)
    assert sum("/crawl/index/cdx" in uri for uri in metadata_urls) == len(warcs)

    # the per-domain report: read back from historyinfo, checked against the crawl.log that was written
    oldjobs = list((h.server_dir / "oldjobs").iterdir())
    assert len(oldjobs) == 1, oldjobs
    crawl_logs = sorted(oldjobs[0].glob("[0-9]*/logs/crawl.log"))  # not the "latest" link
    expected: Counter[str] = Counter()
    for line in (entry for path in crawl_logs for entry in iter_crawl_log(path)):
        if line.status >= 0:
            seed_host = (line.source_tag or line.url).split("/")[2].split(":")[0]
            expected[registered_domain(seed_host)] += 1
    history = {row.name: row for row in h.history(job.job_id)}
    assert set(history) == {"kulturarv.dk", "bibliotek.no", "ingenting.dk"}
    assert history["kulturarv.dk"].objectcount == expected["kulturarv.dk"] > 5
    assert history["bibliotek.no"].objectcount == expected["bibliotek.no"] > 5
    assert history["kulturarv.dk"].bytecount > 10_000
    assert history["ingenting.dk"].objectcount == 0
    assert StopReason(history["kulturarv.dk"].stopreason) == StopReason.DOWNLOAD_COMPLETE
    # the WARCs left the harvester once stored
    assert not list(oldjobs[0].glob("*/warcs/*.warc.gz"))

    # pywb replays the seed page from the stored CDXJ and WARC, byte for byte
    seed = h.seed("www.kulturarv.dk")
    captured = []
    for name in warcs:
        with open(files[name], "rb") as handle:
            captured += [(r.rec_headers.get_header("WARC-Date"), r.content_stream().read())
                         for r in ArchiveIterator(handle)
                         if r.rec_type == "response" and r.rec_headers.get_header("WARC-Target-URI") == seed]
    assert len(captured) == 1
    timestamp = "".join(ch for ch in captured[0][0] if ch.isdigit())[:14]
    with pywb_server(tmp_path / "pywb", "harvest", [files[f"cdxj/{name}.cdxj"] for name in warcs],
                     [files[name] for name in warcs]) as wayback:
        status, _headers, body = replay(wayback, "harvest", timestamp, seed)
        assert status == 200
        assert body == captured[0][1] and b"<a href" in body
        assert replay(wayback, "harvest", timestamp, h.seed("www.kulturarv.dk", "/never-crawled"))[0] == 404


def test_an_external_heritrix_is_driven_with_deduplication_off(harvesting, tmp_path, harvest_site):
    h = harvesting()
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    with EngineProcess(tmp_path / "heritrix-jobs", tmp_path / "hosts") as heritrix:
        h.start_scheduler()
        controller = h.start_controller(**{"harvestsuite.harvester.heritrixUrl": heritrix.base_url,
                                           "harvester.harvesting.heritrix.adminName": USER,
                                           "harvester.harvesting.heritrix.adminPassword": PASSWORD})
        (job,) = h.wait_for_jobs(harvest_id, timeout=120)
        assert JobStatus(job.status) == JobStatus.DONE, (job, controller.text()[-3000:])
    assert not (h.server_dir / "engine.pid").exists() and "crawl engine" not in controller.text()
    (oldjob,) = (h.server_dir / "oldjobs").iterdir()
    beans = (oldjob / "crawler-beans.cxml").read_text()
    assert re.search(r'class="is\.hi\.bok\.deduplicator\.DeDuplicator">\s*<property name="enabled" value="false"',
                     beans), beans
    files = stored_files(h.archive, harvest_id, job.job_id)
    assert any(name.endswith(".warc.gz") and "metadata" not in name for name in files)
    (row,) = h.history(job.job_id)
    assert row.objectcount > 5


def test_the_second_run_deduplicates_against_the_first_with_netarchivesuites_withdedup_template(harvesting):
    if not NAS_WITHDEDUP.is_file():
        if in_ci():
            pytest.fail(f"{NAS_WITHDEDUP} is missing; CI=true, so this is a failure")
        pytest.skip(f"NetarchiveSuite's template {NAS_WITHDEDUP} is not here (../shared is absent)")
    template = fast_politeness(NAS_WITHDEDUP.read_text(encoding="utf-8"))
    assert 'name="matchingMethod" value="URL"' in template
    h = harvesting(template)
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")],
                                                   "bibliotek.no": [h.seed("www.bibliotek.no")]})
    h.start_scheduler()
    h.start_controller()
    (first,) = h.wait_for_jobs(harvest_id, timeout=180, harvest_num=1)
    assert JobStatus(first.status) == JobStatus.DONE, first
    h.run_again(harvest_id)
    # with history, job generation may split the second run's configurations into several jobs
    seconds = h.wait_for_jobs(harvest_id, timeout=180, harvest_num=2)
    assert all(JobStatus(job.status) == JobStatus.DONE for job in seconds), seconds

    def captures(job_id: int) -> list:
        found = []
        for path in sorted((h.archive / str(harvest_id) / str(job_id)).glob("*.warc.gz")):
            if "metadata" in path.name:
                continue
            with open(path, "rb") as handle:
                for r in ArchiveIterator(handle):
                    if r.rec_type in ("response", "revisit"):
                        found.append((r.rec_type, r.rec_headers.get_header("WARC-Target-URI"),
                                      r.rec_headers.get_header("WARC-Payload-Digest"),
                                      r.rec_headers.get_header("WARC-Refers-To-Target-URI"),
                                      r.http_headers.get_header("Content-Type") if r.http_headers else None))
        return found

    run1 = captures(first.job_id)
    run2 = [capture for job in seconds for capture in captures(job.job_id)]
    # URL matching: within the first run dup.bin, the same bytes on every host, is never a duplicate
    assert not [c for c in run1 if c[0] == "revisit"]
    assert sum(1 for c in run1 if c[1].endswith("/dup.bin")) >= 2
    earlier = {(c[1], c[2]) for c in run1 if c[0] == "response" and not (c[4] or "").startswith("text/")}
    revisits = [c for c in run2 if c[0] == "revisit"]
    assert revisits
    for _, url, digest, refers_to, _ in revisits:
        assert (url, digest) in earlier and refers_to == url
    # every non-text payload of the first run that came again with the same digest is a revisit now
    again = [c for c in run2 if (c[1], c[2]) in earlier]
    assert again and all(c[0] == "revisit" for c in again)
    # the metadata WARC names the job the index was built from
    for job in seconds:
        metadata = h.archive / str(harvest_id) / str(job.job_id) / f"{job.job_id}-metadata-1.warc.gz"
        with open(metadata, "rb") as handle:
            reduction = [r.content_stream().read().decode() for r in ArchiveIterator(handle)
                         if "duplicatereductionjobs" in (r.rec_headers.get_header("WARC-Target-URI") or "")]
        assert reduction == [str(first.job_id)]
    # duplicates are counted apart in the per-domain history
    history = [row for job in seconds for row in h.history(job.job_id)]
    assert sum(row.duplicate_objects for row in history) == len(revisits)
    assert all(row.novel_objects + row.duplicate_objects == row.objectcount for row in history)


def test_a_crawl_that_starts_paused_is_unpaused_and_its_progress_reaches_the_scheduler(harvesting):
    template = fast_politeness(OUR_TEMPLATE.read_text(encoding="utf-8"))
    template = template.replace("crawlController.pauseAtStart=false", "crawlController.pauseAtStart=true")
    assert "crawlController.pauseAtStart=true" in template
    h = harvesting(template)
    harvest_id = h.selective_harvest("selective", {"kulturarv.dk": [h.seed("www.kulturarv.dk")]})
    h.start_scheduler()
    h.start_controller()
    (job,) = h.wait_for_jobs(harvest_id, timeout=120)
    assert JobStatus(job.status) == JobStatus.DONE, job
    with h.engine.connect() as conn:
        samples = conn.execute(select(s.runningjobshistory.c.status, s.runningjobshistory.c.downloadedfilescount)
                               .where(s.runningjobshistory.c.jobid == job.job_id)).all()
    assert samples, "no CrawlProgress message was recorded"
    (row,) = h.history(job.job_id)
    assert row.objectcount > 5
