"""Logs and reports in Heritrix's words, compared with real Heritrix output.

The quoted texts come from NetarchiveSuite's test data (netarchivesuite/netarchivesuite): the metadata file of
a Heritrix 3.3.0-LBS-2016-02 job (records metadata://netarkivet.dk/crawl/reports/*.txt?heritrixVersion=
3.3.0-LBS-2016-02&harvestid=1&jobid=3) and, for progress-statistics.log, the Heritrix 1.14.4 metadata in
harvester/harvester-test/tests/dk/netarkivet/viewerproxy/data/input/8-metadata-1.arc, whose line layout
Heritrix 3 kept. The first test renders the reports from the figures of that job and compares every line;
the second crawls the local test site through the engine process and checks the counting rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvester.engine.reporting.progresslog import PROGRESS_HEADER, progress_line
from harvester.engine.reporting.reports import FrontierSummary, QueueReport, ReportInput, render_reports
from harvester.engine.reporting.stats import CrawlStats, HostStats
from tests.engine.engine_process import EngineProcess, crawler_beans, write_job
from tests.engine.site import TestSite

# crawl-report.txt of the Heritrix 3.3.0 job (NetarchiveSuite test data, see the module docstring).
HERITRIX_CRAWL_REPORT = """crawl name: default_orderxml
crawl status: Finished
duration: 41s968ms

seeds crawled: 1
seeds uncrawled: 0

hosts visited: 4

URIs processed: 16
URI successes: 15
URI failures: 1
URI disregards: 0

novel URIs: 8
duplicate-by-hash URIs: 7

total crawled bytes: 153399 (150 KiB) 
novel crawled bytes: 7405 (7.2 KiB)
duplicate-by-hash crawled bytes: 145994 (143 KiB) 

URIs/sec: 0.36
KB/sec: 3
"""  # noqa: W291 - Heritrix ends two of the byte lines with a space
# hosts-report.txt, mimetype-report.txt, responsecode-report.txt and seeds-report.txt of the same job.
HERITRIX_HOSTS_REPORT = """[#urls] [#bytes] [host] [#robots] [#remaining] [#novel-urls] [#novel-bytes] [#dup-by-hash-urls] [#dup-by-hash-bytes] [#not-modified-urls] [#not-modified-bytes]
5 133352 www.kaarefc.dk 0 0 4 3961 1 129391 0 0 
4 15098 www.w3.org 0 0 1 3287 3 11811 0 0 
3 157 dns: 0 0 3 157 0 0 0 0 
3 4792 jigsaw.w3.org 0 0 0 0 3 4792 0 0 
0 0 validator.w3.org 0 0 0 0 0 0 0 0 
"""  # noqa: E501, W291
HERITRIX_RESPONSECODE_REPORT = "[#urls] [rescode]\n10 200\n3 1\n2 404\n"
HERITRIX_SEEDS_REPORT = "[code] [status] [seed] [redirect]\n200 CRAWLED http://www.kaarefc.dk/\n"
HERITRIX_FRONTIER_HEAD = """ -----===== STATS =====-----
 Discovered:    16
 Queued:        0
 Finished:      16
  Successfully: 15
  Failed:       1
  Disregarded:  0

 -----===== QUEUES =====-----
 Already included size:     16
               pending:     0

 All class queues map size: 2
             Active queues: 0
                    In-process: 0
                         Ready: 0
                       Snoozed: 0
           Inactive queues: 0 (p3: 0)
            Retired queues: 0
          Exhausted queues: 2

             Last state: EMPTY
"""
# progress-statistics.log of NetarchiveSuite's 8-metadata-1.arc: the legend and a progress line.
HERITRIX_PROGRESS_LEGEND = ("           timestamp  discovered      queued   downloaded       doc/s(avg)  KB/s(avg)"
                            "   dl-failures   busy-thread   mem-use-KB  heap-size-KB   congestion   max-depth"
                            "   avg-depth")
HERITRIX_PROGRESS_LINE = ("2008-06-02T07:23:46Z           4           4            0             0(0)       0(0)"
                          "             0             0        12400         25984            1           2"
                          "           2")
HOST = "www.kulturarv.dk"


def heritrix_job_stats() -> CrawlStats:
    """The figures of the Heritrix 3.3.0 job above."""
    stats = CrawlStats(discovered=16, downloaded=15, failures=1, total_bytes=153399, novel_count=8, novel_bytes=7405,
                       dup_count=7, dup_bytes=145994)
    stats.hosts = {"www.kaarefc.dk": HostStats(5, 133352, 0, 0, 4, 3961, 1, 129391),
                   "www.w3.org": HostStats(4, 15098, 0, 0, 1, 3287, 3, 11811),
                   "dns:": HostStats(3, 157, 0, 0, 3, 157, 0, 0),
                   "jigsaw.w3.org": HostStats(3, 4792, 0, 0, 0, 0, 3, 4792),
                   "validator.w3.org": HostStats()}  # discovered, never fetched: still a host Heritrix knows
    stats.status_codes.update({200: 10, 1: 3, 404: 2})
    stats.seeds = {"http://www.kaarefc.dk/": (200, "")}
    return stats


def test_reports_match_heritrix_output_line_for_line() -> None:
    frontier = FrontierSummary(job_name="default_orderxml", queued=0, already_included=16, last_state="EMPTY",
                               queues=[QueueReport("kaarefc.dk", category=""), QueueReport("w3.org", category="")])
    texts = render_reports(ReportInput(job_name="default_orderxml", crawl_status="FINISHED", elapsed_ms=41968,
                                       stats=heritrix_job_stats(), dedup_present=True, frontier=frontier,
                                       stamp12="201612051011"))
    assert texts["crawl-report.txt"] == HERITRIX_CRAWL_REPORT
    assert texts["hosts-report.txt"] == HERITRIX_HOSTS_REPORT
    assert texts["responsecode-report.txt"] == HERITRIX_RESPONSECODE_REPORT
    assert texts["seeds-report.txt"] == HERITRIX_SEEDS_REPORT
    summary = texts["frontier-summary-report.txt"]
    assert summary.startswith("Frontier report - 201612051011\n Job being crawled: default_orderxml\n\n")
    assert HERITRIX_FRONTIER_HEAD in summary
    assert PROGRESS_HEADER == HERITRIX_PROGRESS_LEGEND
    line = progress_line("2008-06-02T07:23:46Z", 4, 4, 0, 0.0, 0.0, 0, 0, 0, 0, 1.0, 2, 2)
    # Memory differs (JVM heap there, resident set here); every column ends where Heritrix's does.
    mine, theirs = line.split(), HERITRIX_PROGRESS_LINE.split()
    assert mine[:8] == theirs[:8] and mine[10:] == theirs[10:]
    assert [m.end() for m in re.finditer(r"\S+", line)][:8] == \
        [m.end() for m in re.finditer(r"\S+", HERITRIX_PROGRESS_LINE)][:8]


def test_without_a_deduplicator_the_duplicate_lines_are_left_out() -> None:
    frontier = FrontierSummary(job_name="j", queued=0, already_included=0, last_state="EMPTY")
    text = render_reports(ReportInput(job_name="j", crawl_status="ABORTED", elapsed_ms=6379, stats=CrawlStats(),
                                      dedup_present=False, frontier=frontier, stamp12="202611230000"))
    report = text["crawl-report.txt"]
    assert "duplicate-by-hash" not in report
    assert "crawl status: Finished - Ended by operator\nduration: 6s379ms\n" in report


@pytest.fixture
def engine_process(tmp_path: Path, test_site: TestSite) -> Iterator[EngineProcess]:
    hosts_file = test_site.write_hosts_file(tmp_path / "hosts.txt")
    with EngineProcess(tmp_path / "jobs", hosts_file=hosts_file) as process:
        yield process


def test_a_crawl_counts_and_words_its_reports_as_heritrix(engine_process: EngineProcess,
                                                          test_site: TestSite) -> None:
    client = engine_process.client()
    write_job(engine_process.jobs_dir / "counted", [test_site.url(HOST, "/")],
              cxml=crawler_beans(max_hops=2, extra_beans=(
                  '<bean class="dk.netarkivet.harvester.harvesting.ContentSizeAnnotationPostProcessor"/>')))
    client.rescan()
    client.build("counted")
    client.launch("counted")
    client.wait_for("counted", lambda status: status.crawl_controller_state == "PAUSED", timeout=30)
    client.unpause("counted")
    finished = client.wait_for("counted", lambda status: status.is_finished, timeout=120)
    launch = engine_process.jobs_dir / "counted" / "latest"
    reports = {path.name: path.read_text(encoding="utf-8") for path in (launch / "reports").iterdir()}
    crawl_log = [line.split() for line in (launch / "logs" / "crawl.log").read_text().splitlines()]
    crawl_report = reports["crawl-report.txt"]
    # The same lines, in the same order, as Heritrix's crawl-report.txt (no dedup bean: no duplicate lines).
    keys = [line.split(":", 1)[0] for line in crawl_report.splitlines() if line]
    assert keys == [line.split(":", 1)[0] for line in HERITRIX_CRAWL_REPORT.splitlines()
                    if line and not line.startswith("duplicate")]
    assert "crawl status: Finished\n" in crawl_report
    figures = dict(line.split(": ", 1) for line in crawl_report.splitlines() if ": " in line)
    robots_excluded = [fields for fields in crawl_log if fields[1] == "-9998"]
    assert robots_excluded and int(figures["URI disregards"]) == len(robots_excluded)
    failures = [fields for fields in crawl_log if int(fields[1]) < 0 and fields[1] != "-9998"]
    assert int(figures["URI failures"]) == len(failures)
    successes = [fields for fields in crawl_log if int(fields[1]) > 0]
    assert int(figures["URI successes"]) == len(successes) == finished.uri_totals_report.downloaded_uri_count
    assert int(figures["URIs processed"]) == len(crawl_log)
    # Bytes are content sizes (headers plus body), as the crawl.log annotations give them.
    content_sizes = sum(int(re.search(r"content-size:(\d+)", fields[11]).group(1)) for fields in successes)
    assert figures["total crawled bytes"].startswith(f"{content_sizes} (")
    assert finished.size_totals_report.total == content_sizes
    codes = dict(reversed(line.split()) for line in reports["responsecode-report.txt"].splitlines()[1:])
    assert all(int(code) > 0 for code in codes) and sum(map(int, codes.values())) == len(successes)
    mimes = {line.split()[2]: int(line.split()[0]) for line in reports["mimetype-report.txt"].splitlines()[1:]}
    assert mimes["text/dns"] == int(codes["1"]) == len([f for f in crawl_log if f[3].startswith("dns:")])
    assert reports["hosts-report.txt"].splitlines()[1].endswith(" ")
    assert " -----===== STATS =====-----\n Discovered:    " in reports["frontier-summary-report.txt"]
    assert float(figures["URIs/sec"]) == pytest.approx(finished.rate_report.average_docs_per_second, abs=0.006)
    assert int(figures["KB/sec"]) == finished.rate_report.average_kib_per_sec
    notes = [line.split(" ", 1)[1] for line in (launch / "logs" / "progress-statistics.log").read_text().splitlines()
             if " CRAWL " in line]
    assert notes == ["CRAWL RUNNING - Preparing", "CRAWL PAUSED - Paused", "CRAWL RUNNING - Running",
                     "CRAWL ENDING - Finished", "CRAWL ENDED - Finished"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ CRAWL ENDED - Finished",
                        (launch / "logs" / "progress-statistics.log").read_text().splitlines()[-1])
