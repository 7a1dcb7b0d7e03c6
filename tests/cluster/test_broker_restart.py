"""The single RabbitMQ broker dies mid-crawl (every process on its host killed at once, its files kept) and
is started again 15 s later. The crawl goes on without it; the controllers, schedulers and web UI reconnect
by themselves; the job ends DONE once on its controller, which is never counted lost (the silence was the
broker's: scheduler/tick.py counts none while the scheduler cannot reach it), and a harvest defined while
the broker was gone is handed out once it is back. Durable queues and persistent messages come back with
the broker's files.

The figures (broker down, every controller heard again) are printed with -s and written into the test's
report."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from harvestdef.cluster.cluster import Cluster
from tests.cluster.conftest import define_selective
from tests.cluster.test_harvester_cut_off import check_invariants, finished, host_of, job_of, started

pytestmark = pytest.mark.cluster

OUTAGE = 15.0  # more than the 10 s after which a silent controller is lost


def heard_since(cluster: Cluster, moment: datetime) -> bool:
    """Every controller's newest heartbeat came after ``moment``."""
    rows = cluster.api("GET", "/harvesters")["items"]
    live = [row for row in rows if row["accepted"]]
    return len(live) >= len(cluster.harvester_hosts) and all(
        row["last_heartbeat"] and datetime.fromisoformat(row["last_heartbeat"]) > moment for row in live)


def test_the_broker_killed_and_started_again_mid_crawl_loses_nothing(cluster: Cluster, record_property):
    sites, later_sites = [40, 41, 42], [43, 44]
    before = cluster.site_requests()
    define_selective(cluster, "cluster-broker-restart", sites)
    job, host = started(cluster, "cluster-broker-restart", sites, before)
    cluster.kill_host("broker")
    killed_at = time.monotonic()
    # defined while the broker is gone: its job is made, and handed out once the broker is back
    define_selective(cluster, "cluster-during-broker-outage", later_sites)
    node = cluster.broker_node("broker")
    # gone longer than a controller may be silent: the silence is the broker's, and nobody is lost for it
    time.sleep(max(0.0, OUTAGE - (time.monotonic() - killed_at)))
    restarted = datetime.now(UTC)
    node.restart()
    down = time.monotonic() - killed_at
    restart_done = time.monotonic()
    cluster.wait_for("every controller heard again", lambda: heard_since(cluster, restarted), 120, interval=0.2)
    heard_again = time.monotonic() - restart_done

    detail = finished(cluster, job["job_id"])
    kinds = [event["kind"] for event in detail["events"]]
    assert "resubmitted" not in kinds and "lost" not in kinds, kinds
    refetched = check_invariants(cluster, detail, host, sites, before)
    later = job_of(cluster, "cluster-during-broker-outage")
    later_detail = finished(cluster, later["job_id"])
    later_refetched = check_invariants(cluster, later_detail, host_of(cluster, later_detail["controller"]),
                                       later_sites, before)
    assert not later_refetched, later_refetched
    figures = {"broker_down_s": round(down, 1), "controllers_heard_s": round(heard_again, 1),
               "refetched": dict(refetched)}
    record_property("figures", figures)
    print(f"broker killed mid-crawl of job {job['job_id']} and started again: down {down:.1f} s; every "
          f"controller heard {heard_again:.1f} s after it was back; job {job['job_id']} DONE once, its "
          f"controller never counted lost; the harvest defined meanwhile DONE; "
          f"refetched: {dict(refetched)}")
