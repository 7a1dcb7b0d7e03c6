"""RabbitMQ as a cluster of three nodes (broker1 … broker3, quorum queues, every role given all nodes):
the node that leads the job queue is killed while the jobs of a harvest are being handed out. A new
leader is elected, the clients that were connected to the dead node reconnect to another, and every job
is crawled once, on one controller, to DONE: nothing lost, nothing doubled. The node, started again with
its files, rejoins the cluster.

The figures (leader elected, first job granted after the kill, node back) are printed with -s and written
into the test's report."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvestdef.cluster.cluster import Cluster
from tests.cluster.conftest import define_selective, require_namespaces
from tests.cluster.test_harvester_cut_off import (
    RUN_TIMEOUT,
    all_ended,
    assert_stored_whole,
    harvest_jobs,
    host_of,
)

pytestmark = pytest.mark.cluster

SITES = list(range(1, 28))  # 27 sites, 3 a job: 9 jobs for 3 controllers, so most wait their turn
DOMAINS_PER_JOB = 3
WAITING = ("NEW", "SUBMITTED")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A cluster of its own: three broker nodes, three harvesters, a few sites."""
    require_namespaces()
    system = Cluster(Path(tmp_path_factory.mktemp("broker-cluster")), harvesters=3, sites=len(SITES),
                     site_delay=0.5, brokers=3,
                     sets={"harvester.scheduler.jobGen.class": "FixedDomainConfigurationCountJobGenerator",
                           "harvester.scheduler.jobGen.config.fixedDomainCountFocused": DOMAINS_PER_JOB})
    with system:
        yield system


def test_a_broker_node_killed_mid_dispatch_loses_no_job_and_doubles_none(cluster: Cluster, record_property):
    harvest = "broker-node-killed"
    expected_jobs = len(SITES) // DOMAINS_PER_JOB
    define_selective(cluster, harvest, SITES)
    # mid-dispatch: some jobs crawl, the others are still to be handed out (a job is published as
    # controllers say they are ready for one)
    cluster.wait_for("jobs crawling and jobs waiting", lambda: (
        len(jobs := harvest_jobs(cluster, harvest)) == expected_jobs
        and sum(job["status"] == "STARTED" for job in jobs) >= 2
        and sum(job["status"] in WAITING for job in jobs) >= 3), 120, interval=0.2)
    queue = f"{cluster.environment}.jobs.FOCUSED"
    leader = cluster.brokers[0].queue_leaders()[queue]
    victim = leader.partition("@")[2]
    survivor = next(node for node in cluster.brokers if node.host != victim)
    granted_before = {job["job_id"] for job in harvest_jobs(cluster, harvest) if job["status"] not in WAITING}
    cluster.kill_host(victim)
    killed_at = time.monotonic()

    def new_leader() -> str | None:
        node = survivor.queue_leaders().get(queue)
        return node if node and node != leader else None
    elected = cluster.wait_for(f"a new leader of {queue}", new_leader, 60, interval=0.2)
    elected_after = time.monotonic() - killed_at
    cluster.wait_for("a job granted after the kill", lambda: any(
        job["status"] not in WAITING and job["job_id"] not in granted_before for job in harvest_jobs(cluster, harvest)),
        RUN_TIMEOUT, interval=0.2)
    granted_after = time.monotonic() - killed_at
    jobs = all_ended(cluster, harvest, RUN_TIMEOUT * 2)

    # every job DONE once (none resubmitted, none made twice), each on one controller
    assert len(jobs) == expected_jobs and {job["status"] for job in jobs} == {"DONE"}, jobs
    requests = cluster.site_requests()
    refetched: Counter[str] = Counter()
    domains_seen: list[str] = []
    for job in jobs:
        detail = cluster.api("GET", f"/jobs/{job['job_id']}")
        kinds = [event["kind"] for event in detail["events"]]
        assert "resubmitted" not in kinds and "lost" not in kinds, kinds
        domains = [c["domain"] for c in detail["configurations"]]
        domains_seen += domains
        address = cluster.network.address(host_of(cluster, detail["controller"]))  # type: ignore[union-attr]
        fetched = {url: by for url, by in requests.items()
                   if any(url.startswith(f"http://www.{domain}/") for domain in domains)}
        assert fetched and {client for by in fetched.values() for client in by} == {address}, fetched
        refetched.update({url: by[address] - 1 for url, by in fetched.items() if by[address] > 1})
        assert_stored_whole(cluster.archive / str(detail["harvest_id"]) / str(detail["job_id"]))
        for configuration in detail["configurations"]:
            assert configuration["result"] and configuration["result"]["objects"] >= 14, configuration
            rows = [row for row in cluster.api("GET", f"/domains/{configuration['domain']}/history?limit=10")["items"]
                    if row["job_id"] == job["job_id"]]
            assert len(rows) == 1, rows  # statistics written once
    assert sorted(domains_seen) == sorted(f"site{number}.dk" for number in SITES)  # every domain in one job

    # the dead node, started again with its files, rejoins and holds its share of every queue again
    restarted_at = time.monotonic()
    cluster.broker_node(victim).restart()
    nodes = sorted(node.node for node in cluster.brokers)
    cluster.wait_for("the node back in the cluster", lambda: survivor.running_nodes() == nodes, 120)
    rejoined = time.monotonic() - restarted_at
    online = survivor.ctl("list_queues", "name", "online", "--no-table-headers", "--silent")
    assert f"rabbit@{victim}" in next(line for line in online.splitlines() if line.startswith(queue + "\t"))

    figures = {"killed": victim, "leader_elected_s": round(elected_after, 1), "new_leader": elected,
               "first_grant_after_kill_s": round(granted_after, 1), "rejoined_s": round(rejoined, 1),
               "refetched": dict(refetched)}
    record_property("figures", figures)
    print(f"broker node {victim}, leading {queue}, killed mid-dispatch: {elected} leads it "
          f"{elected_after:.1f} s later; a job granted {granted_after:.1f} s after the kill; all "
          f"{expected_jobs} jobs DONE once; the node rejoined {rejoined:.1f} s after its restart; "
          f"refetched: {dict(refetched)}")
