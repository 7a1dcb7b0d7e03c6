"""A harvester cut off from the network mid-crawl, for less than the lost threshold and for more (but less
than resubmitLostAfter), then joined again: the crawl goes on, the job ends DONE once on the controller it
was granted to, nothing is fetched by another controller, stored twice or counted twice. While the
controller is lost, an operator's chromium finds it marked lost on the System page and named, with since
when it is silent, on its job's page, in English and Danish.

Settings (harvestdef.cluster.cluster): heartbeats every 1 s, a controller lost after 10 of them, its job
resubmitted 60 s after its last one. The figures (detection, recovery, refetches) are printed with -s and
written into the test's report."""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harvestdef.cluster.cluster import ADMIN, Cluster
from tests.cluster.conftest import define_selective
from tests.webui.browser import log_in, screenshot

pytestmark = pytest.mark.cluster

SHORT_CUT = 4.0    # well under the 10 s after which a controller is lost
LONG_CUT = 25.0    # over that, well under the 60 s after which its job is resubmitted
RUN_TIMEOUT = 240.0
# the System page's badge and the job page's heading for a lost controller, by the page's language
LOST_WORDS = {"en": ("lost", "Controller lost:"), "da": ("tabt", "Controller tabt:")}


def job_of(cluster: Cluster, harvest: str) -> dict[str, Any]:
    jobs = cluster.wait_for(f"a job of {harvest}", lambda: cluster.api(
        "GET", f"/jobs?harvest={harvest}&limit=10")["items"], 60)
    assert len(jobs) == 1, jobs
    return jobs[0]


def host_of(cluster: Cluster, controller: str) -> str:
    (host,) = [host for host in cluster.harvester_hosts if cluster.controller_id(host) == controller]
    return host


def started(cluster: Cluster, harvest: str, sites: list[int],
            before: dict[str, dict[str, int]]) -> tuple[dict[str, Any], str]:
    """The harvest's job once STARTED and fetching from the sites (requests since ``before``, the web
    host's count taken before the harvest was defined); the host of its controller."""
    job = job_of(cluster, harvest)

    def fetching() -> dict[str, Any] | None:
        current = cluster.api("GET", f"/jobs/{job['job_id']}")
        requested = cluster.site_requests(since=before)
        begun = any(url.startswith(f"http://www.site{n}.dk/page/") for url in requested for n in sites)
        return current if current["status"] == "STARTED" and current.get("controller") and begun else None
    current = cluster.wait_for(f"job {job['job_id']} started and fetching", fetching, 90, interval=0.2)
    return current, host_of(cluster, current["controller"])


def finished(cluster: Cluster, job_id: int) -> dict[str, Any]:
    return cluster.wait_for(f"job {job_id} ended", lambda: (
        detail if (detail := cluster.api("GET", f"/jobs/{job_id}"))["status"] in ("DONE", "FAILED") else None),
        RUN_TIMEOUT)


def harvest_jobs(cluster: Cluster, harvest: str) -> list[dict[str, Any]]:
    return cluster.api("GET", f"/jobs?harvest={harvest}&limit=100")["items"]


def all_ended(cluster: Cluster, harvest: str, timeout: float) -> list[dict[str, Any]]:
    """The harvest's jobs, once every one is DONE or FAILED."""
    def ended() -> list[dict[str, Any]] | None:
        jobs = harvest_jobs(cluster, harvest)
        return jobs if jobs and all(job["status"] in ("DONE", "FAILED") for job in jobs) else None
    return cluster.wait_for(f"every job of {harvest} ended", ended, timeout, interval=1)


def resubmitted(cluster: Cluster, job_id: int, timeout: float) -> dict[str, Any]:
    """Job ``job_id``'s detail once it is RESUBMITTED."""
    return cluster.wait_for(f"job {job_id} resubmitted", lambda: (
        d if (d := cluster.api("GET", f"/jobs/{job_id}"))["status"] == "RESUBMITTED" else None), timeout)


def controller_state(cluster: Cluster, controller: str) -> dict[str, Any]:
    (row,) = [h for h in cluster.api("GET", "/harvesters")["items"] if h["controller_id"] == controller]
    return row


def seen_lost_in_chromium(browser: Any, cluster: Cluster, controller: str, job_id: int, directory: Path) -> None:
    """The System page and the job's page as an operator sees them in chromium, in English and Danish,
    while ``controller`` is lost: its row marked lost, and the job's page naming it and since when it is
    silent. Screenshots in ``directory`` (and /tmp/harvestsuite-screens)."""
    for language, (badge, heading) in LOST_WORDS.items():
        context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=cluster.ui_url)
        context.set_default_timeout(30_000)
        try:
            page = context.new_page()
            log_in(page, cluster.ui_url, ADMIN, cluster.password)
            context.add_cookies([{"name": "harvestsuite_language", "value": language, "url": cluster.ui_url}])
            page.goto("/system/")
            row = page.locator(f'tr[id="controller-{controller}"]')
            assert row.get_attribute("class") == "lost"
            assert row.locator(".status.FAILED").inner_text() == badge
            screenshot(page, directory, f"cluster-system-lost-{language}")
            page.goto(f"/status/jobs/{job_id}")
            interruption = page.locator(".interruption").inner_text()
            assert interruption.startswith(heading) and f"controller {controller} silent since " in interruption
            screenshot(page, directory, f"cluster-job-lost-{language}")
        finally:
            context.close()


def assert_stored_whole(directory: Path) -> None:
    """A job's stored files: WARCs among them, every one in SHA256SUMS with its digest, nothing else."""
    sums = dict(reversed(line.split("  ", 1)) for line in (directory / "SHA256SUMS").read_text().splitlines())
    stored = {str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file()} - {"SHA256SUMS"}
    assert set(sums) == stored and any(name.endswith(".warc.gz") for name in stored)
    for name, digest in sums.items():
        assert hashlib.sha256((directory / name).read_bytes()).hexdigest() == digest, name


def check_invariants(cluster: Cluster, detail: dict[str, Any], host: str, sites: list[int],
                     before: dict[str, dict[str, int]], earlier: tuple[str, ...] = ()) -> Counter[str]:
    """The job DONE once on its controller, the sites fetched since ``before`` (the web host's count taken
    before the harvest was defined: earlier tests on the cluster crawled the same sites) by its host alone
    (but for the hosts of ``earlier`` attempts, whose fetches were theirs), its files stored once and all in
    SHA256SUMS, its statistics written once per domain; returns the URLs fetched more than once."""
    assert detail["status"] == "DONE", detail
    address = cluster.network.address(host)  # type: ignore[union-attr]
    left_out = {cluster.network.address(other) for other in earlier}  # type: ignore[union-attr]
    requested = {url: {client: n for client, n in by.items() if client not in left_out}
                 for url, by in cluster.site_requests(since=before).items()
                 if any(url.startswith(f"http://www.site{n}.dk/") for n in sites)}
    assert requested
    others = {url: by for url, by in requested.items() if set(by) != {address}}
    assert not others, f"fetched by another host than {host} ({address}): {others}"
    refetched = Counter({url: by[address] for url, by in requested.items() if by[address] > 1})
    assert_stored_whole(cluster.archive / str(detail["harvest_id"]) / str(detail["job_id"]))
    for number in sites:
        rows = [row for row in cluster.api("GET", f"/domains/site{number}.dk/history?limit=10")["items"]
                if row["job_id"] == detail["job_id"]]
        assert len(rows) == 1 and rows[0]["objectcount"] >= 14, rows  # robots, front, 8 pages, 4 pictures
    return refetched


def test_a_cut_shorter_than_the_lost_threshold_goes_unnoticed_and_the_crawl_ends_done(cluster, record_property):
    sites = [1, 2, 3]
    before = cluster.site_requests()
    define_selective(cluster, "cluster-short-cut", sites)
    job, host = started(cluster, "cluster-short-cut", sites, before)
    cluster.network.cut(host)
    cut_at = time.monotonic()
    try:
        while time.monotonic() - cut_at < SHORT_CUT:
            assert not controller_state(cluster, job["controller"])["is_lost"]
            time.sleep(0.5)
    finally:
        cluster.network.restore(host)
    detail = finished(cluster, job["job_id"])
    assert [event["kind"] for event in detail["events"] if event["kind"] in ("lost", "resubmitted")] == []
    refetched = check_invariants(cluster, detail, host, sites, before)
    record_property("refetched", dict(refetched))
    print(f"short cut of {host} for {SHORT_CUT:.0f} s: not found lost; job {job['job_id']} DONE; "
          f"refetched {sum(refetched.values()) - len(refetched)} times: {dict(refetched)}")


def test_a_cut_longer_than_the_lost_threshold_is_shown_lost_then_back_and_not_resubmitted(cluster, browser,
                                                                                          record_property, tmp_path):
    sites = [4, 5, 6]
    before = cluster.site_requests()
    define_selective(cluster, "cluster-long-cut", sites)
    job, host = started(cluster, "cluster-long-cut", sites, before)
    cluster.network.cut(host)
    cut_at = time.monotonic()
    try:
        lost = cluster.wait_for(f"controller {job['controller']} shown lost", lambda: (
            row if (row := controller_state(cluster, job["controller"]))["is_lost"] else None), LONG_CUT)
        detected = time.monotonic() - cut_at
        # the job's page says which controller and since when
        interruption = cluster.wait_for("the job's interruption", lambda: cluster.api(
            "GET", f"/jobs/{job['job_id']}")["interruption"], LONG_CUT)
        assert interruption["state"] == "lost" and interruption["controller"] == job["controller"]
        assert interruption["silent_since"] and interruption["resubmits_at"], interruption
        assert lost["last_heartbeat"]
        seen_lost_in_chromium(browser, cluster, job["controller"], job["job_id"], tmp_path)
        time.sleep(max(0.0, LONG_CUT - (time.monotonic() - cut_at)))
    finally:
        cluster.network.restore(host)
    restored_at = time.monotonic()
    cluster.wait_for(f"controller {job['controller']} back", lambda: not controller_state(
        cluster, job["controller"])["is_lost"], 60, interval=0.2)
    recovered = time.monotonic() - restored_at
    detail = finished(cluster, job["job_id"])
    kinds = [event["kind"] for event in detail["events"]]
    assert "lost" in kinds and "back" in kinds[kinds.index("lost"):] and "resubmitted" not in kinds, kinds
    assert detail["interruption"] is None
    refetched = check_invariants(cluster, detail, host, sites, before)
    figures = {"detected_s": round(detected, 1), "recovered_s": round(recovered, 1), "refetched": dict(refetched)}
    record_property("figures", figures)
    print(f"long cut of {host} for {LONG_CUT:.0f} s: found lost {detected:.1f} s after the cut, back "
          f"{recovered:.1f} s after the link; job {job['job_id']} DONE, not resubmitted; refetched: "
          f"{dict(refetched)}")
