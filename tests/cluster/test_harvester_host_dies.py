"""A harvester's machine dies mid-crawl (every process on it killed at once), its disk kept: the scheduler
finds its controller lost, resubmits the job when resubmitLostAfter has passed, another controller crawls
the new job to DONE. The dead machine, started again with its disk, stores what the old attempt had
harvested (whole: every file in SHA256SUMS, nothing harvested is lost) and reports it FAILED, which the
scheduler ignores: the old job stays RESUBMITTED and its figures count nowhere. Its death mid-upload, and
with its disk lost, is test_harvester_dies_mid_upload.py's."""

from __future__ import annotations

import time

import pytest

from harvestdef.cluster.cluster import Cluster
from tests.cluster.conftest import define_selective
from tests.cluster.test_harvester_cut_off import (
    assert_stored_whole,
    check_invariants,
    finished,
    host_of,
    resubmitted,
    started,
)

pytestmark = pytest.mark.cluster


def test_a_harvester_host_that_dies_mid_crawl_has_its_job_resubmitted_and_crawled_elsewhere(cluster: Cluster,
                                                                                            record_property):
    sites = [30, 31, 32]
    before = cluster.site_requests()
    define_selective(cluster, "cluster-host-dies", sites)
    job, host = started(cluster, "cluster-host-dies", sites, before)
    cluster.kill_host(host)
    died_at = time.monotonic()
    detail = resubmitted(cluster, job["job_id"],
                         float(cluster.settings_value("harvestsuite.scheduler.resubmitLostAfter")) + 60)
    resubmitted_after = time.monotonic() - died_at
    kinds = [event["kind"] for event in detail["events"]]
    assert kinds[:1] == ["lost"] and "resubmitted" in kinds, kinds
    assert detail["interruption"]["state"] == "resubmitted", detail["interruption"]
    new = finished(cluster, detail["resubmitted_as_job"])
    new_host = host_of(cluster, new["controller"])
    assert new_host != host
    # the dead machine comes back with its disk: its controller reports the old attempt, which is refused
    cluster.start_harvester(host)
    cluster.wait_for(f"{host}'s controller registered again", lambda: any(
        row["controller_id"] == job["controller"] and not row["is_lost"]
        for row in cluster.api("GET", "/harvesters")["items"]), 120)
    old_directory = cluster.archive / str(detail["harvest_id"]) / str(job["job_id"])
    cluster.wait_for(f"{host} storing its leftover job {job['job_id']}",
                     lambda: (old_directory / "SHA256SUMS").exists(), 60)
    assert_stored_whole(old_directory)
    assert cluster.api("GET", f"/jobs/{job['job_id']}")["status"] == "RESUBMITTED"
    for number in sites:
        rows = cluster.api("GET", f"/domains/site{number}.dk/history?limit=10")["items"]
        assert not [row for row in rows if row["job_id"] == job["job_id"]], rows
    # the new job: crawled and stored whole by the other host (the old host's fetches were for the old job)
    refetched = check_invariants(cluster, new, new_host, sites, before, earlier=(host,))
    figures = {"resubmitted_s": round(resubmitted_after, 1), "new_job": new["job_id"], "on": new_host}
    record_property("figures", figures)
    print(f"{host} died mid-crawl of job {job['job_id']}: resubmitted {resubmitted_after:.1f} s later as job "
          f"{new['job_id']}, DONE on {new_host}; {host} back, stored its leftover whole, ignored; refetched by "
          f"{new_host}: "
          f"{dict(refetched)}")
