"""The hop-count rule (seeds/000, the wpull bug): a URL's hop count is its shortest discovery path, even
when a longer path reached it first because the shorter one needed retries."""

from __future__ import annotations

HOST_QUEUES = {"dk.netarkivet.harvester.harvesting.SeedUriDomainnameQueueAssignmentPolicy":
               "org.archive.crawler.frontier.HostnameQueueAssignmentPolicy"}
RETRY = {"frontier.retryDelaySeconds": 0.3}


def test_url_rejected_by_hops_comes_back_by_a_shorter_path(crawl, test_site):
    # /hop/x1 (second host) -> x2 -> target is 3 hops and found first, while /hop/flaky (2 failures,
    # backing off) links to the target at 2 hops. With maxHops=2 only the shorter path admits it.
    run = crawl([test_site.url("www.kulturarv.dk", "/hop/")], overrides={"scope.rules[2].maxHops": 2, **RETRY},
                replace=HOST_QUEUES)
    chain = run.lines_for(test_site.url("images.kulturarv.dk", "/hop/x2"))[0]
    flaky = run.lines_for(test_site.url("www.kulturarv.dk", "/hop/flaky"))[0]
    assert chain[0] < flaky[0], "the longer path must have been found first for this test to mean anything"
    target = run.lines_for(test_site.url("www.kulturarv.dk", "/hop/target"))
    assert len(target) == 1 and target[0][1] == "200" and target[0][4] == "LL"
    assert target[0][5] == test_site.url("www.kulturarv.dk", "/hop/flaky")
    assert flaky[11].startswith("2t")
    assert not run.lines_for(test_site.url("www.kulturarv.dk", "/hop/beyond"))


def test_queued_url_takes_the_shorter_path_and_its_outlinks_stay_in_scope(crawl, test_site):
    # maxHops=3: the chain queues the target at LLL; the flaky page finds it at LL before it is fetched,
    # so /hop/beyond is at LLL and in scope. Crawled with the longer path it would be LLLL and lost.
    run = crawl([test_site.url("www.kulturarv.dk", "/hop/")], overrides={"scope.rules[2].maxHops": 3, **RETRY},
                replace=HOST_QUEUES)
    target = run.lines_for(test_site.url("www.kulturarv.dk", "/hop/target"))
    assert [fields[4] for fields in target] == ["LL"]
    beyond = run.lines_for(test_site.url("www.kulturarv.dk", "/hop/beyond"))
    assert len(beyond) == 1 and beyond[0][4] == "LLL" and beyond[0][1] == "200"
    assert test_site.request_count("www.kulturarv.dk", "/hop/target") == 1
