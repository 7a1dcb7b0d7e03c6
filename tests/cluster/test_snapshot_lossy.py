"""A whole snapshot step of 300 domains over three harvesters whose links lose 10 % of their packets each
way and hold each packet 200 ms each way (a wire in user space, harvestdef.cluster.wire: this kernel has no
netem). The crawls are slower and TCP resends what was lost; every job ends DONE once on one controller,
every domain is crawled in one job and by that job's host alone, every file is stored once and in
SHA256SUMS, and each domain's statistics are written once.

The figures (the step's time, what was fetched again, controllers shown lost meanwhile) are printed with
-s and written into the test's report."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter

import pytest

from harvestdef.cluster.cluster import Cluster
from tests.cluster.conftest import SNAPSHOT_JOB_DOMAINS, configure_domains
from tests.cluster.test_harvester_cut_off import all_ended, assert_stored_whole, host_of

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(1500)]

DELAY_MS = 200
LOSS_PERCENT = 10
STEP_TIMEOUT = 900.0


CONNECT = """
import socket, sys, time
started = time.monotonic()
socket.create_connection((sys.argv[1], 80), timeout=30).close()
print(time.monotonic() - started)
"""


def connect_seconds(cluster: Cluster, host: str, target: str) -> float:
    result = subprocess.run(cluster.network.command(host, [sys.executable, "-c", CONNECT, target]),  # type: ignore[union-attr]
                            capture_output=True, text=True, timeout=60, check=True)
    return float(result.stdout)


def test_a_snapshot_step_over_lossy_slow_harvester_links_ends_done_once_with_nothing_doubled(cluster: Cluster,
                                                                                            record_property):
    domains = [f"site{number}.dk" for number in range(1, cluster.sites + 1)]
    configure_domains(cluster, domains)
    for host in cluster.harvester_hosts:
        cluster.network.shape(host, delay_ms=DELAY_MS, loss_percent=LOSS_PERCENT)  # type: ignore[union-attr]
    try:
        # the links are slow indeed: a connection from a harvester to the web host takes its SYN and SYN-ACK
        # over the harvester's link, 200 ms each
        assert connect_seconds(cluster, cluster.harvester_hosts[0], "web") >= 2 * DELAY_MS / 1000 * 0.95
        before = cluster.site_requests()
        started = time.monotonic()
        cluster.api("POST", "/harvests", {"type": "snapshot", "name": "cluster-lossy-snapshot",
                                          "channel": "SNAPSHOT", "active": True}, expect=201)
        jobs = all_ended(cluster, "cluster-lossy-snapshot", STEP_TIMEOUT)
        took = time.monotonic() - started
    finally:
        for host in cluster.harvester_hosts:
            cluster.network.unshape(host)  # type: ignore[union-attr]

    assert len(jobs) == len(domains) // SNAPSHOT_JOB_DOMAINS and {job["status"] for job in jobs} == {"DONE"}, jobs
    after = cluster.site_requests()
    requests = {url: {client: n - before.get(url, {}).get(client, 0) for client, n in by.items()
                      if n - before.get(url, {}).get(client, 0) > 0} for url, by in after.items()}
    refetched: Counter[str] = Counter()
    crawled: list[str] = []
    hosts_used, lost_events = set(), 0
    for job in jobs:
        detail = cluster.api("GET", f"/jobs/{job['job_id']}")
        kinds = [event["kind"] for event in detail["events"]]
        assert "resubmitted" not in kinds, kinds
        lost_events += kinds.count("lost")
        host = host_of(cluster, detail["controller"])
        hosts_used.add(host)
        address = cluster.network.address(host)  # type: ignore[union-attr]
        job_domains = [c["domain"] for c in detail["configurations"]]
        crawled += job_domains
        for domain in job_domains:
            fetched = {url: by for url, by in requests.items() if url.startswith(f"http://www.{domain}/") and by}
            assert fetched and {client for by in fetched.values() for client in by} == {address}, (domain, fetched)
            refetched.update({url: by[address] - 1 for url, by in fetched.items() if by[address] > 1})
        assert_stored_whole(cluster.archive / str(detail["harvest_id"]) / str(detail["job_id"]))
        for configuration in detail["configurations"]:
            result = configuration["result"]
            assert result and result["objects"] >= 14, configuration  # robots, front, 8 pages, 4 pictures
    assert sorted(crawled) == sorted(domains), "every domain in exactly one job"
    for domain in domains[::37]:  # statistics written once: a sample of the domains' histories
        rows = [row for row in cluster.api("GET", f"/domains/{domain}/history?limit=50")["items"]
                if row["job_id"] in {job["job_id"] for job in jobs}]
        assert len(rows) == 1, (domain, rows)
    figures = {"step_s": round(took, 1), "jobs": len(jobs), "harvesters": sorted(hosts_used),
               "refetched_urls": len(refetched), "refetches": sum(refetched.values()),
               "lost_events": lost_events}
    record_property("figures", figures)
    print(f"snapshot step of {len(domains)} domains in {len(jobs)} jobs over {', '.join(sorted(hosts_used))}, "
          f"harvester links {LOSS_PERCENT} % loss and {DELAY_MS} ms delay each way: all DONE once in {took:.0f} s; "
          f"{len(refetched)} URLs fetched again ({sum(refetched.values())} extra fetches); controllers shown lost "
          f"{lost_events} times")
