"""The FrontierSummaryReport's queue blocks read into typed lines (harvester/frontierqueues.py): a literal
report in Heritrix 3's own layout, odd and broken reports, NetarchiveSuite's TopTotalEnqueuesFilter, and the
text the bundled engine serves while it crawls."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvestdef.messages import FrontierReport, decode, encode
from harvester.frontierqueues import (
    TOP_TOTAL_ENQUEUES_FILTER,
    QueueLine,
    exhausted_queues,
    parse_frontier_summary,
    retired_queues,
    top_total_enqueues,
)
from harvester.progress import frontier_reports
from tests.engine.engine_process import EngineProcess, crawler_beans
from tests.engine.site import TestSite
from tests.harvester.test_finish_killed_launch import JOB

# WorkQueueFrontier.reportTo as Heritrix 3.3 writes it: statistics, the manager thread's stack, the longest
# queues (listed again in their category), then each category with "LABEL#N:" before each queue block.
HERITRIX_REPORT = """Frontier report - 202503011200
 Job being crawled: 7_1740830000000

 -----===== STATS =====-----
 Discovered:    412
 Queued:        301
 Finished:      111
  Successfully: 104
  Failed:       7
  Disregarded:  0

 -----===== QUEUES =====-----
 Already included size:     412
               pending:     0

 All class queues map size: 4
             Active queues: 2
                    In-process: 1
                         Ready: 0
                       Snoozed: 1
           Inactive queues: 0 (p3: 0)
            Retired queues: 1
          Exhausted queues: 1

             Last state: RUN
 -----===== MANAGER THREAD =====-----
Java Thread State: RUNNABLE
Blocked/Waiting On: NONE
    java.lang.Thread.getStackTrace(Thread.java:1552)
    org.archive.crawler.frontier.WorkQueueFrontier.reportTo(WorkQueueFrontier.java:1308)

 -----===== 1 LONGEST QUEUES =====-----
LONGEST#0:
Queue kb.dk (p3)
  240 items
    last enqueued: http://www.kb.dk/da/nb/index.html
      last peeked: http://www.kb.dk/
   total expended: 62 (total budget: -1)
   active balance: 2938
   last(avg) cost: 1(1.1)
   totalScheduled fetchSuccesses fetchFailures fetchDisregards fetchResponses robotsDenials successBytes totalBytes fetchNonResponses lastSuccessTime
   302 60 2 0 60 0 1532212 1532212 4 2025-03-01T11:59:58.112Z
   SimplePrecedenceProvider
   3


 -----===== IN-PROCESS QUEUES =====-----
IN-PROCESS#0:
Queue kb.dk (p3)
  240 items
    last enqueued: http://www.kb.dk/da/nb/index.html
      last peeked: http://www.kb.dk/
   total expended: 62 (total budget: -1)
   active balance: 2938
   last(avg) cost: 1(1.1)
   totalScheduled fetchSuccesses fetchFailures fetchDisregards fetchResponses robotsDenials successBytes totalBytes fetchNonResponses lastSuccessTime
   302 60 2 0 60 0 1532212 1532212 4 2025-03-01T11:59:58.112Z
   SimplePrecedenceProvider
   3


 -----===== READY QUEUES =====-----

 -----===== SNOOZED QUEUES =====-----
SNOOZED#0:
Queue statsbiblioteket.dk (p3)
  61 items
   wakes in: 1s250ms
    last enqueued: http://www.statsbiblioteket.dk/om/
      last peeked: http://www.statsbiblioteket.dk/
   total expended: 41 (total budget: -1)
   active balance: 2959
   last(avg) cost: 1(1)
   totalScheduled fetchSuccesses fetchFailures fetchDisregards fetchResponses robotsDenials successBytes totalBytes fetchNonResponses lastSuccessTime
   102 39 2 0 39 0 842113 842113 2 2025-03-01T11:59:57.004Z
   SimplePrecedenceProvider
   3


 -----===== INACTIVE QUEUES =====-----

 -----===== RETIRED QUEUES =====-----
RETIRED#0:
Queue netarkivet.dk (p3)
  5 items
    last enqueued: http://netarkivet.dk/about/
      last peeked: http://netarkivet.dk/about/
   total expended: 8 (total budget: 8)
   active balance: 2992
   last(avg) cost: 1(1)
   totalScheduled fetchSuccesses fetchFailures fetchDisregards fetchResponses robotsDenials successBytes totalBytes fetchNonResponses lastSuccessTime
   13 8 0 0 8 0 52011 52011 1 2025-03-01T11:59:40.870Z
   SimplePrecedenceProvider
   3

"""  # noqa: E501 - Heritrix's lines as they are

# Heritrix 3.2 and older: the FetchStats legend has no lastSuccessTime, the longest queue has a section of
# its own, and an average cost before any URI was charged is NaN.
OLDER_BLOCKS = """
 -----===== LONGEST QUEUE =====-----
Queue com,fizzandpop,www, (p1)
  3 items
    last enqueued: http://www.fizzandpop.com/b
      last peeked: http://www.fizzandpop.com/
   total expended: 0 (total budget: -1)
   active balance: 3000
   last(avg) cost: 0(NaN)
   totalScheduled fetchSuccesses fetchFailures fetchDisregards fetchResponses robotsDenials successBytes totalBytes fetchNonResponses
   4 0 0 1 0 1 0 0 2
   SimplePrecedenceProvider
   1

"""  # noqa: E501


def test_heritrix_3_queue_blocks_become_typed_lines() -> None:
    parsed = parse_frontier_summary(HERITRIX_REPORT)
    assert parsed.skipped == 0
    assert [queue.queue_name for queue in parsed.queues] == ["kb.dk", "statsbiblioteket.dk", "netarkivet.dk"]
    kb, sb, retired = parsed.queues
    assert kb == QueueLine(
        queue_name="kb.dk", current_size=240, total_enqueues=302, session_balance=2938, last_cost=1,
        average_cost=1.1, last_dequeue_time="", wake_time="", total_spend=62, total_budget=-1, error_count=2,
        last_peek_uri="http://www.kb.dk/", last_queued_uri="http://www.kb.dk/da/nb/index.html",
        category="LONGEST")
    assert sb.wake_time == "1s250ms" and sb.total_enqueues == 102 and sb.current_size == 61
    assert sb.category == "SNOOZED" and retired.category == "RETIRED"
    assert (retired.total_spend, retired.total_budget) == (8, 8) and not retired.is_active and retired.is_retired


def test_older_heritrix_blocks_and_a_nan_average_parse() -> None:
    (queue,) = parse_frontier_summary(OLDER_BLOCKS).queues
    assert queue.queue_name == "com,fizzandpop,www,"
    assert (queue.total_enqueues, queue.error_count, queue.average_cost) == (4, 0, 0.0)


def test_a_report_without_queues_and_the_and_n_more_lines() -> None:
    empty = parse_frontier_summary(HERITRIX_REPORT.split(" -----===== 1 LONGEST")[0])
    assert empty.queues == () and empty.skipped == 0
    assert parse_frontier_summary("").queues == ()
    cut = HERITRIX_REPORT.replace(" -----===== INACTIVE QUEUES",
                                  "...and 2000 more SNOOZED.\n\n -----===== INACTIVE QUEUES")
    cut = cut.replace("   3\n\n\n -----===== READY", "   3\n...and 17 more.\n\n -----===== READY")
    assert [q.queue_name for q in parse_frontier_summary(cut).queues] == [
        "kb.dk", "statsbiblioteket.dk", "netarkivet.dk"]


def test_a_malformed_block_is_skipped_and_counted() -> None:
    broken = HERITRIX_REPORT.replace("  61 items", "  sixty-one items").replace(
        "   total expended: 8 (total budget: 8)\n", "")
    # a report cut off in the middle of a block
    broken += "Queue cut.dk (p3)\n  2 items\n    last enqueued: http://cut.dk/\n"
    parsed = parse_frontier_summary(broken)
    assert [queue.queue_name for queue in parsed.queues] == ["kb.dk"]
    assert parsed.skipped == 3
    assert "statsbiblioteket.dk" in parsed.first_problem


def line(name: str, enqueues: int, size: int = 1, balance: int = 10, spend: int = 0, budget: int = -1) -> QueueLine:
    return QueueLine(queue_name=name, current_size=size, total_enqueues=enqueues, session_balance=balance,
                     last_cost=1, average_cost=1.0, last_dequeue_time="", wake_time="", total_spend=spend,
                     total_budget=budget, error_count=0, last_peek_uri="", last_queued_uri="")


def test_top_total_enqueues_keeps_the_biggest_active_queues() -> None:
    queues = [line("b.dk", 50), line("a.dk", 50), line("c.dk", 70), line("small.dk", 3),
              line("exhausted.dk", 900, size=0), line("retired.dk", 800, spend=5, budget=5),
              line("spent.dk", 700, balance=0), line("budget.dk", 600, spend=4, budget=5)]
    assert [q.queue_name for q in top_total_enqueues(queues, 4)] == ["budget.dk", "c.dk", "a.dk", "b.dk"]
    assert len(top_total_enqueues(queues)) == 5


def test_retired_and_exhausted_queues_have_filters_of_their_own() -> None:
    quota_retired = dataclasses.replace(line("quota.dk", 30, size=12), category="RETIRED")
    queues = [line("b.dk", 50), line("exhausted.dk", 900, size=0), line("retired.dk", 800, size=3, spend=5, budget=5),
              quota_retired, line("gone.dk", 20, size=0)]
    assert [q.queue_name for q in retired_queues(queues)] == ["quota.dk", "retired.dk"]
    assert [q.queue_name for q in exhausted_queues(queues)] == ["exhausted.dk", "gone.dk"]
    assert [q.queue_name for q in top_total_enqueues(queues)] == ["b.dk"]  # a quota-retired queue is not active


def test_a_frontier_report_message_per_filter_carries_its_lines() -> None:
    parsed = parse_frontier_summary(HERITRIX_REPORT)
    top, retired, exhausted = frontier_reports(JOB, parsed.queues, "controller-1")
    assert top.filter_id == TOP_TOTAL_ENQUEUES_FILTER == "TopTotalEnqueuesFilter"
    assert [(ln.domain_name, ln.total_enqueues) for ln in top.lines] == [
        ("kb.dk", 302), ("statsbiblioteket.dk", 102)]
    assert (retired.filter_id, [ln.domain_name for ln in retired.lines]) == ("RetiredQueuesFilter", ["netarkivet.dk"])
    assert (exhausted.filter_id, exhausted.lines) == ("ExhaustedQueuesFilter", [])
    again = decode(encode(top), FrontierReport)
    assert again == top and again.lines[0].average_cost == 1.1


@pytest.fixture
def slow_site() -> Iterator[TestSite]:
    with TestSite(response_delay=0.2) as site:
        yield site


def test_the_bundled_engines_report_parses_while_it_crawls(tmp_path: Path, slow_site: TestSite) -> None:
    hosts = slow_site.write_hosts_file(tmp_path / "hosts.txt")
    with EngineProcess(tmp_path / "jobs", hosts_file=hosts) as engine:
        client = engine.client()
        client.create_job("queues")
        client.put_job_file("queues", "crawler-beans.cxml",
                            crawler_beans(max_hops=5, reject_regex="^nothing-matches-this$").encode())
        seeds = [slow_site.url("www.kulturarv.dk"), slow_site.url("www.bibliotek.no")]
        client.put_job_file("queues", "seeds.txt", ("\n".join(seeds) + "\n").encode())
        client.build("queues")
        client.launch("queues")
        client.unpause("queues")
        # until a queue has URIs waiting: one whose URI is being fetched counts none
        deadline = time.monotonic() + 30
        while True:
            parsed = client.frontier_queues("queues")
            if top_total_enqueues(parsed.queues) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        client.terminate("queues")
        client.wait_for("queues", lambda status: status.is_finished, timeout=60)
    assert parsed.skipped == 0, parsed.first_problem
    # SURT authority queues, with the test site's port
    by_name = {queue.queue_name.split("#")[0]: queue for queue in parsed.queues}
    assert {"dk,kulturarv,www,", "no,bibliotek,www,"} <= set(by_name), by_name
    assert all(queue.total_budget == -1 and queue.last_queued_uri.startswith("http") for queue in parsed.queues)
    top = top_total_enqueues(parsed.queues)
    assert top and all(queue.current_size > 0 and queue.total_enqueues > 0 for queue in top), parsed.queues
