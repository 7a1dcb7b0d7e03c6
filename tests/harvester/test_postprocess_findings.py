"""Nothing harvested is a finding: the domain report flags a configuration whose seeds all failed or that got
no object, with the reason from crawl.log, and keeps NetarchiveSuite's stop reason beside it.

First the rules on written crawl.logs, then a real crawl of the bundled engine on the local test site: a
dead name, a seed robots.txt forbids, a refused connection, a missing page and a good site."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvestdef.messages import NothingHarvested
from harvestdef.model.status import StopReason
from harvester.engine.config import load_crawl_config
from harvester.engine.crawl import CrawlController
from harvester.postprocess.crawllogreader import describe_fetch_status
from harvester.postprocess.domainreport import build_domain_report
from tests.engine.conftest import write_job
from tests.engine.site import TestSite

JOB = {"alpha.dk": "defaultconfig", "beta.dk": "defaultconfig"}


def line(status: int, url: str, seed: str, discovery: str = "-", annotations: str = "-") -> str:
    return (f"2026-01-01T10:00:00.000Z {status:>5} 10 {url} {discovery} - text/html #001 "
            f"20260101100000000+1 - {seed} {annotations}")


def report_of(tmp_path: Path, *lines: str, job: dict[str, str] = JOB) -> dict[str, tuple]:
    path = tmp_path / "crawl.log"
    path.write_text("".join(text + "\n" for text in lines), encoding="utf-8")
    result = build_domain_report(path, None, job, forced_stop_reason=StopReason.DOWNLOAD_COMPLETE)
    return {stats.domain: (stats.objects, stats.nothing_harvested) for stats in result.report.domains}


@pytest.mark.parametrize(("status", "words"), [
    (-6, "DNS lookup failed (-6)"), (-1, "DNS lookup failed (-1)"), (-2, "connection refused (-2)"),
    (-9998, "robots.txt precluded (-9998)"), (-61, "robots.txt prerequisite failed (-61)"),
    (-5000, "out of scope (-5000)"), (503, "HTTP 503"), (404, "HTTP 404"), (-123, "fetch status -123"),
])
def test_fetch_statuses_are_told_in_words_with_their_code(status, words):
    assert describe_fetch_status(status) == words


def test_a_seed_answered_with_a_page_or_a_redirect_is_harvested(tmp_path):
    rows = report_of(tmp_path,
                     line(200, "http://www.alpha.dk/", "http://www.alpha.dk/"),
                     line(301, "http://www.beta.dk/", "http://www.beta.dk/"))
    assert rows == {"alpha.dk": (1, None), "beta.dk": (1, None)}


def test_a_domain_without_any_line_got_nothing_and_says_so(tmp_path):
    rows = report_of(tmp_path, line(200, "http://www.alpha.dk/", "http://www.alpha.dk/"))
    assert rows["beta.dk"] == (0, NothingHarvested("no object harvested: no seed of the domain is in crawl.log"))


def test_a_seed_answered_with_an_http_error_is_fetched_but_failed(tmp_path):
    rows = report_of(tmp_path,
                     line(404, "http://www.alpha.dk/gone", "http://www.alpha.dk/gone"),
                     line(200, "http://www.alpha.dk/robots.txt", "http://www.alpha.dk/gone", discovery="P"))
    assert rows["alpha.dk"] == (2, NothingHarvested("HTTP 404 for http://www.alpha.dk/gone", 404,
                                                    "http://www.alpha.dk/gone", 0))


def test_one_answered_seed_is_enough(tmp_path):
    rows = report_of(tmp_path,
                     line(-6, "http://old.alpha.dk/", "http://old.alpha.dk/"),
                     line(200, "http://www.alpha.dk/", "http://www.alpha.dk/"))
    assert rows["alpha.dk"] == (1, None)


def test_the_most_telling_failure_names_the_reason_and_the_others_are_counted(tmp_path):
    rows = report_of(tmp_path,
                     line(503, "http://www.alpha.dk/", "http://www.alpha.dk/"),
                     line(-9998, "http://www.alpha.dk/private/", "http://www.alpha.dk/private/"),
                     line(-6, "http://old.alpha.dk/", "http://old.alpha.dk/"),
                     line(404, "http://www.beta.dk/a", "http://www.beta.dk/a"),
                     line(500, "http://www.beta.dk/b", "http://www.beta.dk/b"))
    assert rows["alpha.dk"][1] == NothingHarvested(
        "DNS lookup failed (-6) for http://old.alpha.dk/ (and 2 other seeds failed)", -6, "http://old.alpha.dk/", 2)
    assert rows["beta.dk"][1].reason == "HTTP 500 for http://www.beta.dk/b (and 1 other seed failed)"
    assert rows["beta.dk"][1].other_seeds_failed == 1


def test_objects_reached_without_a_seed_of_the_domain_are_not_flagged(tmp_path):
    """Lines found by links from another domain's seed, attributed by their URI (no source tag)."""
    rows = report_of(tmp_path, line(200, "http://www.alpha.dk/page", "-", discovery="L"))
    assert rows["alpha.dk"] == (1, None)


def test_the_stop_reason_keeps_netarchivesuites_value(tmp_path):
    path = tmp_path / "crawl.log"
    path.write_text(line(-6, "http://www.alpha.dk/", "http://www.alpha.dk/") + "\n", encoding="utf-8")
    progress = tmp_path / "progress-statistics.log"
    progress.write_text("2026-01-01T10:00:00.412Z CRAWL ENDED - Finished\n", encoding="utf-8")
    (alpha, _) = build_domain_report(path, progress, JOB).report.domains
    assert alpha.stop_reason == StopReason.DOWNLOAD_COMPLETE and alpha.nothing_harvested is not None


# ---------------------------------------------------------------- a real crawl of the bundled engine
HOSTS = ("www.good.dk", "www.forbidden.dk", "www.gone.dk")
CRAWL_JOB = {"good.dk": "defaultconfig", "forbidden.dk": "defaultconfig", "gone.dk": "defaultconfig",
             "refused.dk": "defaultconfig", "dead.invalid": "defaultconfig"}
DEAD_SEED = "http://www.dead.invalid/"  # .invalid never resolves (RFC 6761), and it is not in --hosts


def closed_port() -> int:
    """A loopback port nothing listens on: bound, then closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def crawl_with_findings(tmp_path: Path, site: TestSite) -> tuple[Path, dict[str, str]]:
    """Crawl one good seed and four that fail in four ways; returns the launch's logs directory and the
    seeds by domain."""
    seeds = {"good.dk": site.url("www.good.dk"), "forbidden.dk": site.url("www.forbidden.dk", "/private/secret.html"),
             "gone.dk": site.url("www.gone.dk", "/missing/1"),
             "refused.dk": f"http://www.refused.dk:{closed_port()}/", "dead.invalid": DEAD_SEED}
    job_dir = tmp_path / "crawl"
    cxml = write_job(job_dir, list(seeds.values()),
                     overrides={"frontier.retryDelaySeconds": 0.05, "frontier.maxRetries": 1})
    launch = job_dir / "20260101000000"
    launch.mkdir()
    hosts = {**site.hosts, "www.refused.dk": "127.0.0.1"}
    controller = CrawlController(load_crawl_config(cxml, job_dir), job_dir, launch, hosts,
                                 logging.getLogger("test.findings"))
    controller.start()
    try:
        assert controller.join(60), "crawl did not finish within 60 s"
    finally:
        if not controller.join(0):
            controller.terminate()
            controller.join(30)
    return launch / "logs", seeds


@pytest.fixture
def findings_site() -> Iterator[TestSite]:
    with TestSite(hosts=HOSTS, pages=2) as site:
        yield site


def test_a_real_crawl_flags_the_dead_the_forbidden_the_refused_and_the_missing_seed_not_the_good_one(
        tmp_path, findings_site):
    logs, seeds = crawl_with_findings(tmp_path, findings_site)
    result = build_domain_report(logs / "crawl.log", logs / "progress-statistics.log", CRAWL_JOB)
    stats = {row.domain: row for row in result.report.domains}

    assert stats["good.dk"].nothing_harvested is None and stats["good.dk"].objects > 3
    assert stats["dead.invalid"].objects == 0
    assert stats["dead.invalid"].nothing_harvested == NothingHarvested(
        f"DNS lookup failed (-6) for {DEAD_SEED}", -6, DEAD_SEED, 0)
    forbidden = seeds["forbidden.dk"]
    # its DNS record and robots.txt are objects, yet nothing of the site itself was harvested
    assert stats["forbidden.dk"].objects == 2
    assert stats["forbidden.dk"].nothing_harvested == NothingHarvested(
        f"robots.txt precluded (-9998) for {forbidden}", -9998, forbidden, 0)
    assert stats["refused.dk"].nothing_harvested == NothingHarvested(
        f"connection refused (-2) for {seeds['refused.dk']}", -2, seeds["refused.dk"], 0)
    assert stats["gone.dk"].nothing_harvested == NothingHarvested(
        f"HTTP 404 for {seeds['gone.dk']}", 404, seeds["gone.dk"], 0)
    # the stop reason is still NetarchiveSuite's, from progress-statistics.log, for every domain
    assert {row.stop_reason for row in result.report.domains} == {StopReason.DOWNLOAD_COMPLETE}
