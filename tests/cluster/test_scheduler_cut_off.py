"""The leading scheduler cut off from the database and the broker: the standby on the other host leads
within the documented time, no job is generated twice, no attempt granted twice, and the old leader,
joined again, does not act: it finds its lock gone and waits as a standby. Every machine's figures are
scraped from its /metrics over its link meanwhile: the schedulers' leadership, the System page's view of
both, and the figures of the controller that crawled the harvest and of the web UI.

PostgreSQL drops the advisory lock of a session whose client vanished when the session's TCP keepalives
fail (15 s idle, 3 probes 5 s apart: about 30 s, scheduler/leader.py); the standby tries the lock every
few seconds."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from harvestdef.cluster.cluster import Cluster
from tests.cluster.conftest import define_selective
from tests.metricscrape import Samples, scrape, total

pytestmark = pytest.mark.cluster

SITES = [20, 21]
TAKEOVER_LIMIT = 60.0   # the server's ~30 s and the standby's next try, with room for a busy machine
LEADER = re.compile(r"^(\S+ \S+).*scheduler (\S+) is now the leader", re.MULTILINE)


def scraped(cluster: Cluster, host: str) -> Samples:
    """What ``host``'s role serves at /metrics, scraped from the machine over the host's link."""
    return scrape(cluster.metrics_url(host), timeout=10)


def figures_on_the_system_page(cluster: Cluster) -> dict[str, str]:
    """Each scheduler target on the System page: what its figures say of it (leading, waiting to lead, or
    cannot be read)."""
    page = cluster.page("/system/")
    said = {}
    for host in cluster.scheduler_hosts:
        target = cluster.metrics_url(host)
        start = page.index(f"Figures of the scheduler at {target}")
        section = page[start:page.find("Figures of the scheduler at", start + 1)]
        said[host] = next(words for words in ("waiting to lead", "leading", "cannot be read") if words in section)
    return said


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
    assert [total(scraped(cluster, host), "harvestsuite_scheduler_leader") for host in (old, standby)] == [1, 0]
    assert figures_on_the_system_page(cluster) == {old: "leading", standby: "waiting to lead"}
    cluster.network.cut(old)
    cut_at = time.monotonic()
    try:
        # a harvest defined while the leader is gone: the new leader must generate and dispatch it, once
        define_selective(cluster, "cluster-leader-cut", SITES)
        cluster.wait_for(f"the standby on {standby} leading", lambda: len(leaders(cluster)) == 2,
                         TAKEOVER_LIMIT, interval=0.2)
        took_over = time.monotonic() - cut_at
        assert leaders(cluster)[-1][1] == standby
        # the new leader says so at /metrics; the System page shows it leading and the old one unreachable
        cluster.wait_for(f"{standby}'s metrics saying it leads", lambda: total(
            scraped(cluster, standby), "harvestsuite_scheduler_leader") == 1, 30)
        assert total(scraped(cluster, standby), "harvestsuite_scheduler_leadership_terms_total") == 1
        assert figures_on_the_system_page(cluster) == {old: "cannot be read", standby: "leading"}
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
    # the old leader, reached again, says it waits, having led once; the page agrees
    old_figures = scraped(cluster, old)
    assert total(old_figures, "harvestsuite_scheduler_leader") == 0
    assert total(old_figures, "harvestsuite_scheduler_leadership_terms_total") == 1
    assert figures_on_the_system_page(cluster) == {old: "waiting to lead", standby: "leading"}
    measured = every_machine_measured(cluster, detail)
    figures = {"takeover_s": round(took_over, 1), "old_leader_noticed_s": round(noticed, 1),
               "why": lost.group(1)[:200], "measured": measured}
    record_property("figures", figures)
    print(f"leader {old} cut off: {standby} led {took_over:.1f} s after the cut; {old}, joined again, found its "
          f"lock gone {noticed:.1f} s after the link ({lost.group(1)[:160]})")


def every_machine_measured(cluster: Cluster, detail: dict[str, Any]) -> dict[str, float]:
    """The figures of the controller that crawled job ``detail`` and of the web UI, scraped over their links:
    each controller names itself, the crawling one counts the job DONE, what it fetched and wrote and its
    upload; the web UI counts the API's requests by route."""
    crawled = {}
    for host in cluster.harvester_hosts:
        samples = scraped(cluster, host)
        assert total(samples, "harvestsuite_harvester_info", controller_id=cluster.controller_id(host),
                     host=host) == 1
        assert total(samples, "harvestsuite_harvester_state") == 1, "one state at a time"
        assert total(samples, "harvestsuite_harvester_disk_free_bytes") > 0
        if cluster.controller_id(host) == detail["controller"]:
            crawled = {"urls_fetched": total(samples, "harvestsuite_harvester_urls_fetched_total"),
                       "written_bytes": total(samples, "harvestsuite_harvester_written_bytes_total"),
                       "uploads": total(samples, "harvestsuite_harvester_upload_duration_seconds_count"),
                       "done": total(samples, "harvestsuite_harvester_jobs_finished_total", status="DONE")}
    assert crawled, f"no controller's figures for {detail['controller']}"
    objects = sum(row["objectcount"] for number in SITES
                  for row in cluster.api("GET", f"/domains/site{number}.dk/history?limit=10")["items"]
                  if row["job_id"] == detail["job_id"])
    assert crawled["done"] >= 1 and crawled["uploads"] >= 1, crawled
    assert crawled["urls_fetched"] >= objects and crawled["written_bytes"] > 0, (crawled, objects)
    ui = scraped(cluster, "ui")
    assert total(ui, "harvestsuite_webui_requests_total", status="200") > 0
    assert total(ui, "harvestsuite_webui_request_duration_seconds_count") > 0
    return crawled

