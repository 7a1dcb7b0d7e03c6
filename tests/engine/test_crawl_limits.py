"""Crawl limits and per-domain quotas: the crawl.log lines, the exit status and the CRAWL ENDED line."""

from __future__ import annotations

ENDLESS = {"scope.rules[2].maxHops": 100000}


def _ended_line(run) -> str:
    return (run.logs / "progress-statistics.log").read_text().splitlines()[-1]


def test_document_limit_ends_the_crawl(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/")], overrides={"crawlLimiter.maxDocumentsDownload": 10,
                                                                     "crawlController.maxToeThreads": 1})
    status = run.controller.status()
    assert status.exit_status == "FINISHED_DOCUMENT_LIMIT"
    assert 10 <= status.figures.uri_totals.downloaded_uri_count <= 11
    # Heritrix's words (CrawlStatus.FINISHED_DOCUMENT_LIMIT), as NetarchiveSuite's HeritrixTests expect them.
    assert _ended_line(run).endswith("CRAWL ENDED - Finished - Maximum number of documents limit hit")


def test_data_limit_ends_the_crawl(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/dup.bin"), test_site.url("www.kulturarv.dk", "/")],
                overrides={"crawlLimiter.maxBytesDownload": 20000, "crawlController.maxToeThreads": 1})
    assert run.controller.status().exit_status == "FINISHED_DATA_LIMIT"
    assert len([f for f in run.crawl_log() if f[3].startswith("http")]) < 10


def test_time_limit_ends_the_crawl_with_timelimit_hit(crawl, test_site):
    # The trap regex is dropped and the hop limit raised (an indexed override) so the calendar never ends.
    run = crawl([test_site.url("www.kulturarv.dk", "/trap/1/")],
                overrides={"crawlLimiter.maxTimeSeconds": 1, **ENDLESS},
                replace={"<value>.*/trap/.*</value>": "<value>.*/never/.*</value>"})
    assert run.controller.status().exit_status == "FINISHED_TIME_LIMIT"
    assert _ended_line(run).endswith("CRAWL ENDED - Finished - Timelimit hit")
    assert len(run.lines_for(test_site.url("www.kulturarv.dk", "/trap/5/"))) == 1


def test_group_max_fetch_successes_blocks_the_rest_of_the_domain(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/")], overrides={"quotaenforcer.groupMaxFetchSuccesses": 5})
    http_lines = [f for f in run.crawl_log() if f[3].startswith("http") and "/robots.txt" not in f[3]]
    successes = [f for f in http_lines if f[1].startswith("2")]
    blocked = [f for f in http_lines if f[1] == "-5003"]
    assert len(successes) == 5
    assert blocked and all(f[11] == "Q:groupMaxFetchSuccesses" for f in blocked)
    # The domain's other host is the same group (DomainnameQueueAssignmentPolicy): blocked too.
    assert not [f for f in successes if "images.kulturarv.dk" in f[3]]
    assert run.controller.status().exit_status == "FINISHED"
    assert _ended_line(run).endswith("CRAWL ENDED - Finished")


def test_group_max_all_kb_blocks_after_the_byte_budget(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/dup.bin"), test_site.url("www.kulturarv.dk", "/")],
                overrides={"quotaenforcer.groupMaxAllKb": 20, "crawlController.maxToeThreads": 1})
    blocked = [f for f in run.crawl_log() if f[1] == "-5003"]
    assert blocked and all(f[11] == "Q:groupMaxAllKb" for f in blocked)


def test_quota_is_per_domain(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/"), test_site.url("www.bibliotek.no", "/")],
                overrides={"quotaenforcer.groupMaxFetchSuccesses": 3})
    for host in ("kulturarv.dk", "bibliotek.no"):
        ok = [f for f in run.crawl_log() if f[3].startswith("http") and host in f[3].split("/")[2]
              and f[1].startswith("2") and "robots.txt" not in f[3]]
        assert len(ok) == 3, host


def test_terminate_ends_by_operator(crawl, test_site):
    run = crawl([test_site.url("www.kulturarv.dk", "/trap/1/")], wait=False, overrides=ENDLESS,
                replace={"<value>.*/trap/.*</value>": "<value>.*/never/.*</value>"})
    controller = run.controller
    deadline_ok = controller.join(0.5)
    assert not deadline_ok
    controller.terminate()
    assert controller.join(10)
    assert controller.status().exit_status == "ABORTED"
    assert _ended_line(run).endswith("CRAWL ENDED - Finished - Ended by operator")
