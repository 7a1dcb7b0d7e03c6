"""The installation on simulated machines (harvestdef.cluster): network namespaces made by the tests, a
fresh PostgreSQL and RabbitMQ on hosts of their own, two schedulers, the web UI, three harvest controllers
and a web host of many sites. Needs root (CI runs as root): without it the tests skip, saying why, and with
CI=true that is a failure."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harvestdef.cluster.cluster import Cluster
from harvestdef.cluster.network import require_root
from tests.harvester.conftest import OUR_TEMPLATE, fast_politeness
from tests.servers import in_ci

TEMPLATE = "cluster_fast"
SNAPSHOT_JOB_DOMAINS = 100
# Politeness sized for the test, retries for the network: a URL whose fetch fails while a link is cut is
# tried again every 2 s, 30 times, as Heritrix's 30 tries every 900 s outlast an outage of a real link.
RETRIES = {r"frontier\.retryDelaySeconds=\d+": "frontier.retryDelaySeconds=2",
           r"frontier\.maxRetries=\d+": "frontier.maxRetries=30",
           # a job of 100 sites fetches from 25 of them at once (one at a time each)
           r"crawlController\.maxToeThreads=\d+": "crawlController.maxToeThreads=25",
           # a lossy, slow link takes seconds for a page of a site that answers in 0.5 s: fetches cut off at
           # 5 s (the loopback tests' limit) were kept truncated (timeTrunc) and their links never followed
           r"fetchHttp\.soTimeoutMs=\d+": "fetchHttp.soTimeoutMs=20000",
           r"fetchHttp\.timeoutSeconds=\d+": "fetchHttp.timeoutSeconds=120"}


def require_namespaces() -> None:
    why = require_root()
    if why:
        if in_ci():
            pytest.fail(why + "; CI=true, so this is a failure, not a skip")
        pytest.skip(why)


def cluster_template() -> str:
    template = fast_politeness(OUR_TEMPLATE.read_text(encoding="utf-8"))
    for pattern, value in RETRIES.items():
        template = re.sub(pattern, value, template)
    return template


def configure_domains(cluster: Cluster, domains: list[str]) -> None:
    """Create ``domains`` (those not there yet), each seeded with its front page and crawled with the
    cluster's template."""
    if cluster.call("GET", f"/templates/{TEMPLATE}")[0] != 200:
        cluster.api("POST", "/templates", {"name": TEMPLATE, "description": "cluster tests",
                                           "cxml": cluster_template()}, expect=201)
    status, made = cluster.call("POST", "/domains", {"names": domains})
    assert status in (200, 201), made
    for domain in made["created"]:
        edition = cluster.api("GET", f"/domains/{domain}")["edition"]
        cluster.api("PATCH", f"/domains/{domain}/seedlists/defaultseeds",
                    {"seeds": [f"http://www.{domain}/"], "edition": edition})
        cluster.api("PATCH", f"/domains/{domain}/configurations/defaultconfig",
                    {"template": TEMPLATE, "edition": edition + 1})


def define_selective(cluster: Cluster, name: str, sites: list[int]) -> dict[str, Any]:
    """A selective harvest of ``sites`` (numbers of the web host's sites), once, now, on FOCUSED."""
    domains = [f"site{number}.dk" for number in sites]
    configure_domains(cluster, domains)
    if cluster.call("GET", "/schedules/cluster-once")[0] != 200:
        cluster.api("POST", "/schedules", {"name": "cluster-once", "timeunit": "MINUTE", "numtimeunits": 1,
                                           "maxrepeats": 1}, expect=201)
    return cluster.api("POST", "/harvests", {
        "type": "selective", "name": name, "channel": "FOCUSED", "schedule": "cluster-once",
        "configurations": [{"domain": domain} for domain in domains], "active": True}, expect=201)


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require_namespaces()
    # the harvesters' links are wires, so they can be delayed (this kernel has no netem); a snapshot's
    # jobs hold 100 domains each, so a step of 300 domains goes to the three harvesters
    system = Cluster(Path(tmp_path_factory.mktemp("cluster")), harvesters=3, sites=300, site_delay=0.5,
                     wired_harvesters=True,
                     sets={"harvester.scheduler.jobGen.config.fixedDomainCountSnapshot": SNAPSHOT_JOB_DOMAINS})
    with system:
        yield system


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """A failed test shows the tail of every process's log."""
    if call.excinfo is None or call.when != "call":
        return
    system = getattr(item, "funcargs", {}).get("cluster")
    if isinstance(system, Cluster):
        item.add_report_section("call", "cluster processes", system.log_tails(120))
