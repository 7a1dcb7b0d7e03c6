"""The leading scheduler cut off from the database and the broker: the standby on the other host leads
within the documented time, no job is generated twice, no attempt granted twice, and the old leader,
joined again, does not act: it finds its lock gone and waits as a standby.

PostgreSQL drops the advisory lock of a session whose client vanished when the session's TCP keepalives
fail (15 s idle, 3 probes 5 s apart: about 30 s, scheduler/leader.py); the standby tries the lock every
few seconds."""

from __future__ import annotations

import re
import time

import pytest

from harvestdef.cluster.cluster import Cluster
from tests.cluster.conftest import define_selective

pytestmark = pytest.mark.cluster

TAKEOVER_LIMIT = 60.0   # the server's ~30 s and the standby's next try, with room for a busy machine
LEADER = re.compile(r"^(\S+ \S+).*scheduler (\S+) is now the leader", re.MULTILINE)


def leaders(cluster: Cluster) -> list[tuple[str, str]]:
    """(log time, host) of every start of leading, in order."""
    found = []
    for host in cluster.scheduler_hosts:
        for when, holder in LEADER.findall(cluster.processes[f"scheduler-{host}"].text()):
            assert holder.startswith(f"{host}:"), holder
            found.append((when, host))
    return sorted(found)


def test_the_standby_leads_when_the_leader_is_cut_off_and_the_old_leader_does_not_act_again(cluster,
                                                                                             record_property):
    first = cluster.wait_for("a leading scheduler", lambda: leaders(cluster), 60)
    assert len(first) == 1, first
    old = first[0][1]
    standby = next(host for host in cluster.scheduler_hosts if host != old)
    old_log = cluster.processes[f"scheduler-{old}"]
    cluster.network.cut(old)
    cut_at = time.monotonic()
    try:
        # a harvest defined while the leader is gone: the new leader must generate and dispatch it, once
        define_selective(cluster, "cluster-leader-cut", [20, 21])
        cluster.wait_for(f"the standby on {standby} leading", lambda: len(leaders(cluster)) == 2,
                         TAKEOVER_LIMIT, interval=0.2)
        took_over = time.monotonic() - cut_at
        assert leaders(cluster)[-1][1] == standby
        (job,) = cluster.wait_for("the harvest's job", lambda: cluster.api(
            "GET", "/jobs?harvest=cluster-leader-cut&limit=10")["items"], 60)
        cut_log_length = len(old_log.text())
    finally:
        cluster.network.restore(old)
    restored_at = time.monotonic()
    lost = cluster.wait_for(f"the old leader on {old} finding its lock gone", lambda: re.search(
        r"lost its lock: (.*)", old_log.text()[cut_log_length - 2000:]), 60, interval=0.2)
    noticed = time.monotonic() - restored_at
    detail = cluster.wait_for(f"job {job['job_id']} ended", lambda: (
        d if (d := cluster.api("GET", f"/jobs/{job['job_id']}"))["status"] in ("DONE", "FAILED") else None), 240)
    assert detail["status"] == "DONE", detail
    # one run, one job, one attempt: nothing generated or granted twice
    jobs = cluster.api("GET", "/jobs?harvest=cluster-leader-cut&limit=10")["items"]
    assert [j["job_id"] for j in jobs] == [job["job_id"]], jobs
    assert detail["events"] == [] or {e["attempt_id"] for e in detail["events"]} <= {detail["attempt_id"]}
    # the old leader stays a standby: it never leads again while the new one does
    time.sleep(2 * cluster.settings_value("harvestsuite.scheduler.leaderLeaseTime"))
    assert [host for _, host in leaders(cluster)] == [old, standby], leaders(cluster)
    assert "another scheduler is the leader" in old_log.text()[cut_log_length:], old_log.tail(40)
    figures = {"takeover_s": round(took_over, 1), "old_leader_noticed_s": round(noticed, 1),
               "why": lost.group(1)[:200]}
    record_property("figures", figures)
    print(f"leader {old} cut off: {standby} led {took_over:.1f} s after the cut; {old}, joined again, found its "
          f"lock gone {noticed:.1f} s after the link ({lost.group(1)[:160]})")
