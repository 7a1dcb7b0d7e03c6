"""A harvester's machine dies mid-upload (every process on it killed at once), its disk kept or lost.

Disk kept: the scheduler finds its controller lost and resubmits the job when resubmitLostAfter has
passed; the resubmission lists what the old attempt had stored in its SHA256SUMS (scheduler/tick.py). The
machine back stores the files its upload had left, none of those stored before again, and lists them all.

Disk lost: the machine comes back at once under the same controller id with nothing of the job; its
heartbeats name no job, and claimGraceTime after it registered the job is resubmitted and crawled anew.
The files the dead attempt had stored stay in the store, listed in SHA256SUMS by the resubmission, since
no controller will ever list them."""

from __future__ import annotations

import hashlib
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from harvestdef.cluster.cluster import Cluster
from tests.cluster.conftest import define_selective
from tests.cluster.test_harvester_cut_off import (
    RUN_TIMEOUT,
    assert_stored_whole,
    check_invariants,
    finished,
    host_of,
    resubmitted,
    started,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]  # slow: its file is one of the longest of the stage


def held_mid_upload(cluster: Cluster, harvest: str, sites: list[int],
                    before: dict[str, dict[str, int]]) -> tuple[dict[str, Any], str, Path, Path]:
    """The harvest's job crawled to its end and held in the middle of its upload: a file of the test's in
    the way of the job's cdxj/ directory in the store makes every pass fail after the WARCs and the metadata
    WARC are stored (harvester/jobdir.py stores them first), so the controller sits in its upload backoff.
    ``before`` is the web host's count of requests taken first. Returns the job, its host, the job's
    directory in the store and the obstacle."""
    define_selective(cluster, harvest, sites)
    job, host = started(cluster, harvest, sites, before)
    directory = cluster.archive / str(job["harvest_id"]) / str(job["job_id"])
    directory.mkdir(parents=True, exist_ok=True)
    obstacle = directory / "cdxj"
    obstacle.write_text("a file where the store keeps the job's CDXJ indexes\n")
    cluster.wait_for(f"job {job['job_id']}'s upload held after its metadata WARC", lambda: (
        any("metadata" in path.name for path in directory.glob("*.warc.gz"))
        and not (directory / "SHA256SUMS").exists()), RUN_TIMEOUT)
    return job, host, directory, obstacle


def stored_names(directory: Path) -> set[str]:
    return {str(path.relative_to(directory)) for path in directory.rglob("*") if path.is_file()}


def test_a_harvester_host_back_mid_upload_with_its_disk_lost_has_its_job_resubmitted_and_its_files_listed(
        cluster: Cluster, record_property):
    sites = [50, 51, 52]
    before = cluster.site_requests()
    job, host, directory, obstacle = held_mid_upload(cluster, "cluster-disk-lost", sites, before)
    held = stored_names(directory) - {"cdxj"}
    cluster.kill_host(host)
    obstacle.unlink()
    # the machine comes back at once with an empty disk: its controller, under the same id (derived from
    # the host name and serverDir), has no job directory and reports no job
    shutil.rmtree(cluster.server_dir(host))
    cluster.start_harvester(host)
    back_at = time.monotonic()
    detail = resubmitted(cluster, job["job_id"],
                         float(cluster.settings_value("harvestsuite.scheduler.claimGraceTime")) + 60)
    resubmitted_after = time.monotonic() - back_at
    assert cluster.controller_id(host) == job["controller"], "the same controller id on the new disk"
    assert "resubmitted" in [event["kind"] for event in detail["events"]], detail["events"]
    # what the dead attempt had stored stays, and the resubmission listed it in SHA256SUMS, as no
    # controller ever will now
    cluster.wait_for(f"job {job['job_id']}'s leftover files listed", lambda: (directory / "SHA256SUMS").exists(), 30)
    assert_stored_whole(directory)
    assert stored_names(directory) - {"SHA256SUMS"} == held, held
    new = finished(cluster, detail["resubmitted_as_job"])
    new_host = host_of(cluster, new["controller"])
    # nothing of the old attempt is counted
    for number in sites:
        rows = cluster.api("GET", f"/domains/site{number}.dk/history?limit=10")["items"]
        assert not [row for row in rows if row["job_id"] == job["job_id"]], rows
    refetched = check_invariants(cluster, new, new_host, sites, before, earlier=(host,) if new_host != host else ())
    figures = {"resubmitted_after_back_s": round(resubmitted_after, 1), "left_files": len(held),
               "new_job": new["job_id"], "on": new_host}
    record_property("figures", figures)
    print(f"{host} died mid-upload of job {job['job_id']} ({len(held)} files stored) and came back with its disk "
          f"lost: the job resubmitted {resubmitted_after:.1f} s after it was back (claimGraceTime), its {len(held)} "
          f"stored files listed in SHA256SUMS, as job {new['job_id']}, DONE on {new_host}; fetched again: "
          f"{len(refetched)} URLs")

def test_a_harvester_host_that_dies_mid_upload_stores_the_rest_when_back_and_nothing_twice(cluster: Cluster,
                                                                                        record_property):
    sites = [60, 61, 62]
    before = cluster.site_requests()
    job, host, directory, obstacle = held_mid_upload(cluster, "cluster-dies-mid-upload", sites, before)
    held = {name: hashlib.sha256((directory / name).read_bytes()).hexdigest()
            for name in stored_names(directory) - {"cdxj"}}
    cluster.kill_host(host)
    died_at = time.monotonic()
    obstacle.unlink()
    detail = resubmitted(cluster, job["job_id"],
                         float(cluster.settings_value("harvestsuite.scheduler.resubmitLostAfter")) + 60)
    resubmitted_after = time.monotonic() - died_at
    assert [event["kind"] for event in detail["events"]][:1] == ["lost"], detail["events"]
    new = finished(cluster, detail["resubmitted_as_job"])
    new_host = host_of(cluster, new["controller"])
    assert new_host != host
    # the resubmission listed what the dead attempt had stored
    cluster.wait_for(f"job {job['job_id']}'s stored files listed", lambda: (directory / "SHA256SUMS").exists(), 30)
    assert_stored_whole(directory)
    assert stored_names(directory) - {"SHA256SUMS"} == set(held)
    # back with its disk, the controller stores what its upload had left: the files stored before it died
    # are not stored again (same bytes, same names), the rest join them, SHA256SUMS lists them all
    cluster.start_harvester(host)
    back_at = time.monotonic()
    cluster.wait_for(f"{host} finishing the upload of job {job['job_id']}",
                     lambda: "  cdxj/" in (directory / "SHA256SUMS").read_text(), 120)
    stored_after = time.monotonic() - back_at
    assert_stored_whole(directory)
    names = stored_names(directory) - {"SHA256SUMS"}
    assert set(held) < names and any(name.startswith("cdxj/") for name in names), (held, names)
    assert {name for name in names if name.endswith(".warc.gz")} == {name for name in held if name.endswith(".warc.gz")}
    assert all(hashlib.sha256((directory / name).read_bytes()).hexdigest() == digest
               for name, digest in held.items()), "a file stored before the host died was replaced"
    assert cluster.api("GET", f"/jobs/{job['job_id']}")["status"] == "RESUBMITTED"
    for number in sites:
        rows = cluster.api("GET", f"/domains/site{number}.dk/history?limit=10")["items"]
        assert not [row for row in rows if row["job_id"] == job["job_id"]], rows
    refetched = check_invariants(cluster, new, new_host, sites, before, earlier=(host,))
    figures = {"resubmitted_s": round(resubmitted_after, 1), "stored_after_back_s": round(stored_after, 1),
               "held_files": len(held), "new_job": new["job_id"], "on": new_host}
    record_property("figures", figures)
    print(f"{host} died mid-upload of job {job['job_id']} ({len(held)} files stored): resubmitted "
          f"{resubmitted_after:.1f} s later as job {new['job_id']}, DONE on {new_host}; {host} back, stored the "
          f"rest {stored_after:.1f} s later, nothing twice; refetched by {new_host}: {dict(refetched)}")
