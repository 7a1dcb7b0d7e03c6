"""Deduplication across any number of runs, through the real pipeline: the scheduler (a thread of the test)
ticks, builds each run's index and dispatches; ``harvestsuite harvester run`` drives the bundled engine over
the demo site's unchanged photos, post-processes and stores; the intake records the outcome. The WARCs are
read back from the archive store (docs/architecture.md, Deduplication).

Every run after the first must store each unchanged photo as a revisit naming the first capture, never
in full again, and its entries must carry that first capture on; pywb replays a revisit whose original
lies two runs back from the stored CDXJ.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert, update
from warcio.archiveiterator import ArchiveIterator

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.dedup import DedupEntry, read_entries
from harvestdef.demo.site import HOSTS, DemoSite, write_hosts_file
from harvestdef.model.status import JobStatus
from tests.harvester.conftest import OUR_TEMPLATE, Harvesting, fast_politeness
from tests.pywb import pywb_server, replay
from tests.scheduler.factories import add_config, make_snapshot, template_id

# Two small hosts of the demo site: 10 photos, 26 documents, front pages that change at every request.
DEMO_HOSTS = tuple(host for host in HOSTS if host.name in ("www.havbrug.org", "www.folkemoedet-demo.dk"))
PHOTOS = sum(host.photos for host in DEMO_HOSTS)


class DemoSiteForHarvesting:
    """The demo site, with what tests.harvester.conftest.Harvesting asks of a site: its port and hosts file."""

    def __init__(self, site: DemoSite) -> None:
        self.site = site
        self.port = site.port

    def write_hosts_file(self, path: Path) -> Path:
        write_hosts_file(path)
        return path


@pytest.fixture
def demo_harvesting(tmp_path: Path, harvest_queue_url: str) -> Iterator[Harvesting]:
    with DemoSite() as site:
        harvesting = Harvesting(tmp_path, DemoSiteForHarvesting(site), harvest_queue_url,
                                fast_politeness(OUR_TEMPLATE.read_text(encoding="utf-8")))
        try:
            yield harvesting
        finally:
            harvesting.close()


@dataclass(frozen=True)
class Capture:
    kind: str                    # response or revisit
    url: str
    digest: str
    date14: str
    record_id: str
    warc_file: str
    offset: int
    mime: str
    refers_to: str | None
    refers_to_url: str | None
    refers_to_date14: str | None


def date14(warc_date: str | None) -> str | None:
    return "".join(character for character in warc_date or "" if character.isdigit())[:14] or None


@dataclass(frozen=True)
class StoredJob:
    job_id: int
    warcs: list[Path]
    cdxj: list[Path]
    entries: list[DedupEntry]

    @property
    def stored_bytes(self) -> int:
        return sum(path.stat().st_size for path in self.warcs)

    def captures(self) -> list[Capture]:
        found = []
        for path in self.warcs:
            with open(path, "rb") as handle:
                records = ArchiveIterator(handle)
                for record in records:
                    if record.rec_type not in ("response", "revisit"):
                        continue
                    headers = record.rec_headers
                    url = headers.get_header("WARC-Target-URI")
                    if not url.startswith("http"):
                        continue
                    found.append(Capture(
                        record.rec_type, url, headers.get_header("WARC-Payload-Digest"),
                        date14(headers.get_header("WARC-Date")), headers.get_header("WARC-Record-ID"), path.name,
                        records.get_record_offset(), (record.http_headers.get_header("Content-Type") or ""),
                        headers.get_header("WARC-Refers-To"), headers.get_header("WARC-Refers-To-Target-URI"),
                        date14(headers.get_header("WARC-Refers-To-Date"))))
        return found


def stored_job(archive: Path, harvest_id: int, job_id: int) -> StoredJob:
    root = archive / str(harvest_id) / str(job_id)
    warcs = sorted(path for path in root.glob("*.warc.gz") if "metadata" not in path.name)
    cdxj = sorted((root / "cdxj").glob("*.cdxj"))
    entries = list(read_entries(root / "dedup" / f"{job_id}.gz"))
    assert warcs and cdxj, f"job {job_id}: nothing stored in {root}"
    return StoredJob(job_id, warcs, cdxj, entries)


def photo_captures(jobs: list[StoredJob]) -> dict[str, Capture]:
    """The image captures of a run by URL; a photo is captured once per run."""
    by_url: dict[str, Capture] = {}
    for job in jobs:
        for capture in job.captures():
            if capture.mime.startswith("image/"):
                assert capture.url not in by_url, f"{capture.url} captured twice in one run"
                by_url[capture.url] = capture
    return by_url


def as_entry(capture: Capture) -> DedupEntry:
    return DedupEntry(capture.digest, capture.url, capture.date14, capture.record_id, capture.warc_file,
                      capture.offset)


def run_jobs(h: Harvesting, harvest_id: int, harvest_num: int | None = None) -> list[StoredJob]:
    jobs = h.wait_for_jobs(harvest_id, timeout=180, harvest_num=harvest_num)
    assert all(JobStatus(job.status) == JobStatus.DONE for job in jobs), jobs
    return [stored_job(h.archive, harvest_id, job.job_id) for job in jobs]


def assert_revisits_name_the_first_capture(first: dict[str, Capture], later: list[StoredJob], what: str) -> None:
    photos = photo_captures(later)
    assert set(photos) == set(first), f"{what}: the same photos as the first capture"
    for url, capture in photos.items():
        original = first[url]
        assert capture.kind == "revisit", f"{what}: {url} stored in full again"
        assert (capture.refers_to, capture.refers_to_url, capture.refers_to_date14) == (
            original.record_id, original.url, original.date14), f"{what}: {url} names another capture"
        assert capture.digest == original.digest
    # the run's entries carry the first capture on, file and offset included, for the next run's index
    entries = {entry for job in later for entry in job.entries}
    for original in first.values():
        assert as_entry(original) in entries, f"{what}: no entry carries {original.url}'s first capture"


def test_four_runs_of_a_selective_harvest_store_each_unchanged_photo_once(demo_harvesting, tmp_path):
    h = demo_harvesting
    harvest_id = h.selective_harvest("every-five-minutes", {
        host.domain: [h.seed(host.name)] for host in DEMO_HOSTS})
    h.start_scheduler()
    h.start_controller()
    runs: list[list[StoredJob]] = []
    for number in range(1, 5):
        if number > 1:
            h.run_again(harvest_id)
        runs.append(run_jobs(h, harvest_id, harvest_num=number))

    first = photo_captures(runs[0])
    assert len(first) == PHOTOS and all(capture.kind == "response" for capture in first.values())
    for number, jobs in enumerate(runs[1:], start=2):
        assert_revisits_name_the_first_capture(first, jobs, f"run {number}")

    print("\nrun  jobs  stored bytes (WARCs, metadata WARC excluded)  responses  revisits")
    for number, jobs in enumerate(runs, start=1):
        captures = [capture for job in jobs for capture in job.captures()]
        print(f"{number:>3}  {len(jobs):>4}  {sum(job.stored_bytes for job in jobs):>44,}  "
              f"{sum(c.kind == 'response' for c in captures):>9}  {sum(c.kind == 'revisit' for c in captures):>8}")
    stored = [sum(job.stored_bytes for job in jobs) for jobs in runs]
    assert all(later < stored[0] for later in stored[1:]), f"stored bytes per run: {stored}"

    # pywb replays run 3's revisit of a photo from the original two runs back
    three = [job for jobs in runs[:3] for job in jobs]
    url, original = sorted(first.items())[0]
    revisit = photo_captures(runs[2])[url]
    (original_warc,) = [path for job in runs[0] for path in job.warcs if path.name == original.warc_file]
    with open(original_warc, "rb") as handle:
        handle.seek(original.offset)
        payload = next(iter(ArchiveIterator(handle))).content_stream().read()
    working_dir = tmp_path / "pywb"
    working_dir.mkdir()
    with pywb_server(working_dir, "harvest", [path for job in three for path in job.cdxj],
                     [path for job in three for path in job.warcs]) as base_url:
        status, headers, body = replay(base_url, "harvest", revisit.date14, url)
    assert status == 200 and body == payload and headers["Content-Type"] == "image/png"


def test_a_snapshot_chain_of_three_steps_points_every_revisit_at_the_first_step(demo_harvesting):
    h = demo_harvesting
    with h.engine.begin() as conn:
        template_id(conn, "test_template", h.template)
        for host in DEMO_HOSTS:
            domain_id = conn.execute(insert(s.domains).values(name=host.domain, edition=1)).inserted_primary_key[0]
            # seeded on the photo index, so the photos come before the limits of steps 1 and 2
            config_id = add_config(conn, domain_id, "defaultconfig", template="test_template",
                                   seeds=h.seed(host.name, "/fotos/"))
            conn.execute(update(s.domains).where(s.domains.c.domain_id == domain_id)
                         .values(defaultconfig=config_id))
        # Steps 1 and 2 stop every domain on the harvest's object limit, so the next step continues it
        # and fetches the same photos again; step 3 has no limit.
        make_snapshot(conn, 201, "step-1", maxobjects=5)
        make_snapshot(conn, 202, "step-2", maxobjects=7, previous=201)
        make_snapshot(conn, 203, "step-3", previous=202)
        conn.execute(update(s.harvestdefinitions).where(s.harvestdefinitions.c.harvest_id.in_([201, 202, 203]))
                     .values(submitted=utcnow() - timedelta(minutes=1)))
        conn.execute(update(s.fullharvests).where(s.fullharvests.c.harvest_id.in_([202, 203]))
                     .values(isindexready=False))
    h.start_scheduler()
    h.start_controller(harvester__harvesting__channel=["SNAPSHOT"])
    steps = [run_jobs(h, harvest_id) for harvest_id in (201, 202, 203)]

    first = photo_captures(steps[0])
    assert first and all(capture.kind == "response" for capture in first.values())
    for number, jobs in ((2, steps[1]), (3, steps[2])):
        later = photo_captures(jobs)
        again = {url: capture for url, capture in later.items() if url in first}
        assert again, f"step {number} fetched none of step 1's photos again"
        for url, capture in again.items():
            assert capture.kind == "revisit", f"step {number}: {url} stored in full again"
            assert (capture.refers_to, capture.refers_to_url) == (first[url].record_id, url)
        entries = {entry for job in jobs for entry in job.entries}
        assert {as_entry(first[url]) for url in again} <= entries
    # a photo step 2 captured first (beyond step 1's limit) is step 3's original
    first_in_2 = {url: capture for url, capture in photo_captures(steps[1]).items() if capture.kind == "response"}
    assert first_in_2, "step 2 captured no photo of its own"
    for url, capture in photo_captures(steps[2]).items():
        if url in first_in_2:
            assert (capture.kind, capture.refers_to) == ("revisit", first_in_2[url].record_id)
