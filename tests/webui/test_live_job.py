"""A running job seen from inside: progress, frontier reports and heartbeats go through the scheduler's real
intake (MessageHandlers), on SQLite and PostgreSQL; then ``GET /api/v1/jobs/{id}/live``, the job page, and
the running jobs page with its domain search show them, and each reason that holds a crawl back appears
when its condition does."""

from __future__ import annotations

import dataclasses
import html
import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import Engine, update

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.messages import (
    CrawlProgress,
    CrawlStatus,
    CrawlTally,
    DomainCount,
    FrontierLine,
    FrontierReport,
    HarvesterStatus,
)
from harvestdef.model.status import JobStatus
from harvestdef.settings import load_settings
from scheduler.dispatch import Dispatcher, DispatchOptions
from scheduler.handlers import MessageHandlers
from scheduler.intake import StatusIntake
from scheduler.notify import Notifier
from tests.scheduler.factories import make_domain
from tests.scheduler.test_intake import NAMES, claim, job, one_job, ready, register, transport  # noqa: F401
from tests.webui.conftest import PASSWORD, csrf_of
from webui import create_app

pytestmark = pytest.mark.database("users")

CONTROLLER = "ctl-1"
LINE = "2026-03-01T12:00:0{}.000Z   200       1234 https://www.københavn.dk/page{} L http://www.københavn.dk/ " \
       "text/html #001 20260301120000000+12 sha1:ABC - -"


@dataclasses.dataclass
class Crawl:
    """A STARTED job of a.dk and københavn.dk, and the scheduler's intake to report to."""

    job_id: int
    attempt: str
    handle: Callable[..., Any]

    def progress(self, sent_at: datetime, **figures: Any) -> None:
        values: dict[str, Any] = dict(
            job_id=self.job_id, attempt_id=self.attempt, harvest_id=1, controller_id=CONTROLLER,
            host_url="https://127.0.0.1:8443/engine/job/x", status="CRAWLER_ACTIVE", crawler_state="RUNNING",
            progress=10.0, queued_files=90, total_queues=4, active_queues=2, retired_queues=1, exhausted_queues=1,
            elapsed_seconds=60, alert_count=0, downloaded_files=10, discovered_files=100,
            current_processed_kb_per_sec=3, processed_kb_per_sec=2, current_processed_docs_per_sec=1.5,
            processed_docs_per_sec=1.0, active_toe_count=5, total_bytes_written=12_345)
        values.update(figures)
        self.handle(CrawlProgress(**values), sent_at)

    def frontier(self, sent_at: datetime, *lines: FrontierLine) -> None:
        self.handle(FrontierReport(job_id=self.job_id, attempt_id=self.attempt, controller_id=CONTROLLER,
                                   filter_id="TopTotalEnqueuesFilter", lines=list(lines)), sent_at)

    def heartbeat(self, sent_at: datetime, paused: bool = False, reason: str = "", free_disk: int = 10**9,
                  min_space_left: int = 0) -> None:
        self.handle(HarvesterStatus(controller_id=CONTROLLER, host="h", pid=1, version="t", channels=["FOCUSED"],
                                    free_disk_bytes=free_disk, load_average=0.0, memory_rss_bytes=1, paused=paused,
                                    pause_reason=reason, current_job_id=self.job_id, current_attempt_id=self.attempt,
                                    current_job_state="crawling", heartbeat_interval=10.0,
                                    min_space_left=min_space_left), sent_at)


def queue(name: str, size: int, wake: str = "", spend: int = 3, budget: int = -1) -> FrontierLine:
    return FrontierLine(domain_name=name, current_size=size, total_enqueues=size + spend, session_balance=10,
                        last_cost=1, average_cost=1.0, last_dequeue_time="", wake_time=wake, total_spend=spend,
                        total_budget=budget, error_count=0, last_peek_uri=f"http://{name}/",
                        last_queued_uri=f"http://{name}/x")


@pytest.fixture
def crawl(engine: Engine, transport) -> Crawl:  # noqa: F811
    return start_crawl(engine, transport)


def start_crawl(engine: Engine, queues: Any) -> Crawl:
    """A STARTED job of a.dk and københavn.dk, claimed by CONTROLLER through the scheduler's intake (on the
    queue transport ``queues``)."""
    handlers = MessageHandlers(engine, queues, Dispatcher(NAMES, DispatchOptions()),
                               StatusIntake(Notifier(), history_sample_rate=1))
    handle = handlers.carry_out_one
    job_id, _ = one_job(engine, domains=(("a.dk", 1000, -1), ("københavn.dk", 1000, -1)))
    register(handle, CONTROLLER)
    assert ready(handle, CONTROLLER) == job_id
    attempt = job(engine, job_id).attempt_id
    assert claim(handle, job_id, attempt, CONTROLLER).granted
    assert handle(CrawlStatus(job_id=job_id, attempt_id=attempt, controller_id=CONTROLLER, status=JobStatus.STARTED))
    return Crawl(job_id, attempt, handle)


@pytest.fixture
def app(engine: Engine, tmp_path: Path) -> Flask:
    # a sample each 10 s and a page that refreshes each 5 s: the stall and the frontier report's age are judged
    # by them
    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test-secret",
                                                    "harvestsuite.archive.root": str(tmp_path / "archive"),
                                                    "harvester.monitor.historySampleRate": "10",
                                                    "harvestsuite.webui.livePollIntervalMs": "5000"})
    return create_app(settings, engine, {"TESTING": True})


@pytest.fixture
def client(app: Flask):
    client = app.test_client()
    assert client.post("/login", data={"name": "archivist", "password": PASSWORD,
                                       "csrf_token": csrf_of(client)}).status_code == 302
    return client


def live(client, job_id: int, **query: Any) -> dict[str, Any]:
    response = client.get(f"/api/v1/jobs/{job_id}/live", query_string=query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def reasons(answer: dict[str, Any]) -> dict[str, str]:
    return {why["reason"]: why["text"] for why in answer["holding_back"]}


def test_the_live_view_shows_what_the_intake_received(crawl, client):
    now = utcnow()
    crawl.heartbeat(now)
    crawl.progress(now - timedelta(seconds=20), downloaded_files=4, queued_files=50)
    crawl.progress(now, crawl_log_tail=[LINE.format(2, 2), LINE.format(1, 1), "404 http://a.dk/gone"])
    crawl.frontier(now, queue("a.dk", 7), queue("www.københavn.dk", 30, wake="1s250ms"))

    answer = live(client, crawl.job_id)
    assert answer["state"] == "STARTED"
    assert (answer["downloaded"], answer["queued"], answer["bytes"]) == (10, 90, 12_345)
    assert answer["rates"] == {"bytes_per_second": {"now": 3 * 1024, "average": 2 * 1024},
                               "documents_per_second": {"now": 1, "average": 1}}
    assert answer["queue_counts"] == {"total": 4, "active": 2, "retired": 1, "exhausted": 1}
    # what the scheduler is never told is null or empty, not made up
    assert answer["failed"] is None and answer["status_counts"] is None and answer["domains"] == []
    assert answer["crawler"]["status"] == "CRAWLER_ACTIVE" and answer["crawler"]["console_url"] is None
    assert [(q["queue"], q["state"], q["current_size"], q["total_budget"]) for q in answer["queues"]] == [
        ("www.københavn.dk", "snoozed", 30, -1), ("a.dk", "active", 7, -1)]
    assert [sample["downloaded"] for sample in answer["history"]] == [4, 10]
    assert answer["log"][:2] == [LINE.format(2, 2), LINE.format(1, 1)] and len(answer["log"]) == 3
    assert live(client, crawl.job_id, log_lines=1)["log"] == [LINE.format(2, 2)]
    assert live(client, crawl.job_id, log_regex=r"page1\b")["log"] == [LINE.format(1, 1)]
    assert answer["holding_back"] == []


def test_a_pattern_or_line_count_the_engine_refuses_is_a_400_naming_its_field(crawl, client):
    for query, field in (({"log_regex": "(a"}, "log_regex"), ({"log_regex": "(a)\\1"}, "log_regex"),
                         ({"log_regex": "a" * 201}, "log_regex"), ({"log_lines": "51"}, "log_lines"),
                         ({"log_lines": "-1"}, "log_lines"), ({"log_lines": "x"}, "log_lines")):
        response = client.get(f"/api/v1/jobs/{crawl.job_id}/live", query_string=query)
        assert response.status_code == 400, query
        assert response.get_json()["error"]["field"] == field
    assert client.get("/api/v1/jobs/999999/live").status_code == 404


def test_a_real_heritrix_console_is_linked_and_the_bundled_engine_is_not(crawl, client):
    crawl.progress(utcnow(), host_url="https://heritrix.example:8443/engine/job/x", is_heritrix_console=True)
    assert live(client, crawl.job_id)["crawler"]["console_url"] == "https://heritrix.example:8443/engine/job/x"
    page = client.get("/status/running").get_data(as_text=True)
    assert 'href="https://heritrix.example:8443/engine/job/x"' in page and "#controller-ctl-1" in page


def test_no_report_yet_is_said(crawl, client):
    crawl.heartbeat(utcnow())
    assert "no_progress_report" in reasons(live(client, crawl.job_id))


def test_the_crawl_logs_counts_so_far_give_failed_status_counts_and_domains(crawl, client):
    before = live(client, crawl.job_id)
    assert (before["failed"], before["status_counts"], before["domains"]) == (None, None, [])

    def tally(domains: list[DomainCount], **counts: int) -> None:
        crawl.handle(CrawlTally(job_id=crawl.job_id, attempt_id=crawl.attempt, controller_id=CONTROLLER,
                                lines=sum(counts.values()), status_counts={k.replace("m", "-"): v
                                                                           for k, v in counts.items()},
                                domains=domains), utcnow())

    tally([DomainCount("københavn.dk", 3, 3000)], **{"1": 2, "200": 3})  # no progress report yet: kept anyway
    crawl.progress(utcnow())
    tally([DomainCount("a.dk", 7, 70_000)], **{"1": 2, "200": 9, "404": 1, "m6": 2, "m5000": 4})
    answer = live(client, crawl.job_id)
    assert answer["failed"] == 2
    assert answer["status_counts"] == {
        "lines": 18, "by_code": {"1": 2, "200": 9, "404": 1, "-6": 2, "-5000": 4},
        "by_class": {"dns": 2, "2xx": 9, "4xx": 1, "network_error": 2, "refused": 4}}
    # a tally names only the domains that changed; the others keep their counts
    assert answer["domains"] == [{"domain": "a.dk", "objects": 7, "bytes": 70_000},
                                 {"domain": "københavn.dk", "objects": 3, "bytes": 3000}]
    page = client.get(f"/status/jobs/{crawl.job_id}").get_data(as_text=True)
    assert "2xx 9 · 4xx 1 · dns 2 · network error 2 · refused 4" in page
    assert '<td class="number">7</td>' in page
    crawl.handle(CrawlStatus(job_id=crawl.job_id, attempt_id=crawl.attempt, controller_id=CONTROLLER,
                             status=JobStatus.FAILED), utcnow())
    assert live(client, crawl.job_id)["domains"] == []


def test_a_disk_below_min_space_left_is_said_from_the_heartbeat(crawl, client):
    crawl.heartbeat(utcnow(), free_disk=5_000_000, min_space_left=400_000_000)
    crawl.progress(utcnow())
    answer = live(client, crawl.job_id)
    assert answer["controller"]["min_space_left"] == 400_000_000
    assert reasons(answer)["disk_low"].startswith(f"Controller {CONTROLLER} is short of disk: 5,000,000 bytes free "
                                                  f"in its serverDir on h, below its minSpaceLeft of 400,000,000")
    crawl.heartbeat(utcnow(), free_disk=500_000_000, min_space_left=400_000_000)
    assert "disk_low" not in reasons(live(client, crawl.job_id))


def test_a_paused_controller_holds_the_crawl_back(crawl, client):
    crawl.heartbeat(utcnow(), paused=True, reason="paused: 12 bytes free in /srv, below minSpaceLeft 400")
    crawl.progress(utcnow())
    assert reasons(live(client, crawl.job_id))["controller_paused"] == \
        "Controller ctl-1 is paused: paused: 12 bytes free in /srv, below minSpaceLeft 400."


def test_a_silent_and_then_a_lost_controller_hold_the_crawl_back(crawl, client, engine):
    crawl.progress(utcnow())
    with engine.begin() as conn:  # started long ago: the heartbeat is the last sign of life
        conn.execute(update(s.jobs).values(startdate=utcnow() - timedelta(hours=1)))
    crawl.heartbeat(utcnow() - timedelta(seconds=35))  # 10 s intervals: silent after 20 s, lost after 100 s
    found = reasons(live(client, crawl.job_id))
    assert "controller_lost" not in found
    assert found["controller_silent"].startswith("Controller ctl-1 has been silent for 35 s since")
    assert found["controller_silent"].endswith("it counts as lost after 1 min.")
    with engine.begin() as conn:
        conn.execute(update(s.harvesters).values(last_heartbeat=utcnow() - timedelta(minutes=5)))
    found = reasons(live(client, crawl.job_id))
    assert "controller_silent" not in found
    assert found["controller_lost"].startswith("Controller ctl-1 is lost: silent since")


@pytest.mark.parametrize("status, reason", [("CRAWLER_PAUSED", "crawler_paused"),
                                            ("CRAWLER_PAUSING", "crawler_pausing")])
def test_a_paused_or_pausing_crawler_holds_the_crawl_back(crawl, client, status, reason):
    crawl.heartbeat(utcnow())
    crawl.progress(utcnow(), status=status)
    assert reason in reasons(live(client, crawl.job_id))


def test_no_active_queue_while_uris_wait_names_the_retired_and_exhausted(crawl, client):
    crawl.heartbeat(utcnow())
    crawl.progress(utcnow(), active_queues=0, retired_queues=3, exhausted_queues=1, total_queues=4, queued_files=900)
    assert reasons(live(client, crawl.job_id))["no_active_queues"].startswith(
        "No queue is active while 900 URIs are queued: of 4 queues 3 are retired (their budget is spent) and 1 "
        "exhausted")


def test_queues_all_snoozed_on_politeness_are_a_crawl_waiting_between_fetches_not_held_back(crawl, client):
    crawl.heartbeat(utcnow())
    crawl.progress(utcnow())
    crawl.frontier(utcnow(), queue("a.dk", 5, wake="2m1s"), queue("b.dk", 9, wake="3s250ms"),
                   queue("c.dk", 0), queue("d.dk", 4, spend=10, budget=10))
    answer = live(client, crawl.job_id)
    assert {q["queue"]: q["state"] for q in answer["queues"]} == {
        "a.dk": "snoozed", "b.dk": "snoozed", "c.dk": "exhausted", "d.dk": "retired"}
    assert answer["holding_back"] == [] and answer["frontier_stale"] is False
    waiting = answer["waiting"]
    assert (waiting["reason"], waiting["snoozed"], waiting["queue"]) == ("politeness", 2, "b.dk")
    assert waiting["next_in_seconds"] in (2, 3)  # 3.25 s from the report, counted from now
    assert waiting["text"] == f"Waiting between fetches as the politeness rules ask (next in " \
                              f"{waiting['next_in_seconds']} s, from b.dk)."
    assert [q["wakes_in"] for q in answer["queues"][:2]] == ["3s250ms", "2m1s"]
    # one queue that can be fetched from now: nothing waits
    crawl.frontier(utcnow(), queue("a.dk", 5, wake="2m1s"), queue("b.dk", 9))
    assert live(client, crawl.job_id)["waiting"] is None
    # a queue its quota retired comes in the RetiredQueuesFilter report, whatever its budget says
    crawl.handle(FrontierReport(job_id=crawl.job_id, attempt_id=crawl.attempt, controller_id=CONTROLLER,
                                filter_id="RetiredQueuesFilter", lines=[queue("quota.dk", 7)]), utcnow())
    listed = [(q["queue"], q["state"]) for q in live(client, crawl.job_id)["queues"]]
    assert listed[-1] == ("quota.dk", "retired") and ("a.dk", "snoozed") in listed
    # paused, its queues wait on the pause, not on politeness
    crawl.frontier(utcnow(), queue("a.dk", 5, wake="2m1s"))
    assert live(client, crawl.job_id)["waiting"]["queue"] == "a.dk"
    crawl.progress(utcnow(), status="CRAWLER_PAUSED", crawler_state="PAUSED")
    answer = live(client, crawl.job_id)
    assert set(reasons(answer)) == {"crawler_paused"} and answer["waiting"] is None


def test_a_frontier_report_older_than_the_pages_refresh_is_quoted_with_its_age_and_no_wake_times(crawl, client):
    crawl.heartbeat(utcnow())
    crawl.progress(utcnow())
    crawl.frontier(utcnow() - timedelta(seconds=20), queue("a.dk", 5, wake="2m1s"), queue("b.dk", 9, wake="1s"))
    answer = live(client, crawl.job_id)
    assert answer["frontier_stale"] is True and 20 <= answer["frontier_age_seconds"] < 30
    assert [q["wakes_in"] for q in answer["queues"]] == [None, None]
    waiting = answer["waiting"]
    assert waiting["next_in_seconds"] is None and waiting["phrase"]["code"] == "politeness_wait_as_of"
    assert re.fullmatch(r"Waiting between fetches as the politeness rules ask, as of the frontier report of 2\d s "
                        r"ago: all 2 queues that could be fetched from were snoozed\.", waiting["text"])
    assert answer["holding_back"] == []
    crawl.frontier(utcnow() - timedelta(seconds=20), queue("a.dk", 5, wake="2m1s"))
    assert live(client, crawl.job_id)["waiting"]["text"].endswith(
        "ago: the one queue that could be fetched from was snoozed.")


def test_a_downloaded_count_unchanged_for_two_sample_intervals_is_no_progress(crawl, client):
    now = utcnow()
    crawl.heartbeat(now)
    for seconds in (30, 20):
        crawl.progress(now - timedelta(seconds=seconds), downloaded_files=77)
    assert "no_progress" not in reasons(live(client, crawl.job_id))  # 10 s are one interval only
    crawl.progress(now, downloaded_files=77)
    assert reasons(live(client, crawl.job_id))["no_progress"].endswith(
        "(30 s): the count stayed at 77 across the last 3 progress samples and the newest report.")
    crawl.progress(now + timedelta(seconds=10), downloaded_files=78)
    assert "no_progress" not in reasons(live(client, crawl.job_id))


def test_an_ended_job_has_no_live_figures_and_nothing_holds_it_back(crawl, client, engine):
    crawl.progress(utcnow(), active_queues=0)
    with engine.begin() as conn:
        conn.execute(update(s.jobs).values(status=int(JobStatus.DONE)))
    answer = live(client, crawl.job_id)
    assert answer["state"] == "DONE" and answer["holding_back"] == []


def test_the_running_job_of_a_domain_is_found_by_its_name_in_unicode_or_punycode(crawl, client, engine):
    for name in ("københavn.dk", "xn--kbenhavn-54a.dk", "KØBENHAVN.DK"):
        items = client.get("/api/v1/jobs", query_string={"status": "STARTED", "domain": name}).get_json()["items"]
        assert [item["job_id"] for item in items] == [crawl.job_id], name
    with engine.begin() as conn:
        make_domain(conn, "other.dk")
    assert client.get("/api/v1/jobs", query_string={"status": "STARTED", "domain": "other.dk"}).get_json()[
        "items"] == []
    refused = client.get("/api/v1/jobs", query_string={"domain": "www.a.dk"})
    assert refused.status_code == 400 and refused.get_json()["error"]["field"] == "domain"
    unknown = client.get("/api/v1/jobs", query_string={"domain": "nowhere.dk"})
    assert unknown.status_code == 404 and unknown.get_json()["error"]["field"] == "domain"
    page = client.get("/status/running", query_string={"domain": "xn--kbenhavn-54a.dk"}).get_data(as_text=True)
    assert f'data-job="{crawl.job_id}"' in page
    page = client.get("/status/running", query_string={"domain": "other.dk"}).get_data(as_text=True)
    assert "No running job harvests other.dk." in page


def test_the_job_page_shows_the_live_figures_and_polls_for_more(crawl, client):
    crawl.heartbeat(utcnow())
    crawl.progress(utcnow(), crawl_log_tail=[LINE.format(1, 1)], active_queues=0, queued_files=5)
    page = client.get(f"/status/jobs/{crawl.job_id}").get_data(as_text=True)
    assert f'data-live-url="/api/v1/jobs/{crawl.job_id}/live"' in page and "live.js" in page
    assert "https://www.københavn.dk/page1" in page and 'data-reason="no_active_queues"' in page


def test_the_live_page_gives_its_script_the_words_in_the_pages_language(crawl, client):
    crawl.heartbeat(utcnow())
    page = client.get(f"/status/jobs/{crawl.job_id}", headers={"Accept-Language": "da"}).get_data(as_text=True)
    attribute = re.search(r'<section id="live"[^>]* data-words="([^"]*)"', page)
    assert attribute, "the live section carries the words of static/live.js"
    words = json.loads(html.unescape(attribute.group(1)))
    assert words["no report yet"] == "ingen rapport endnu" and words["unlimited"] == "ubegrænset"
    # values stay placeholders, for the script to fill in; each plural form for its count
    assert words["Paused since %(time)s by %(name)s"] == "Sat på pause siden %(time)s af %(name)s"
    assert words["%(num)s progress sample"] == "%(num)s fremdriftsmåling"
    assert words["%(num)s progress samples"] == "%(num)s fremdriftsmålinger"
    # the chart's legend is the page's language
    legend = re.search(r'<p class="chart-legend">(.*?)</p>', page, re.S).group(1)
    assert "hentede URI'er" in html.unescape(legend) and "URI'er i kø" in html.unescape(legend)
    english = client.get(f"/status/jobs/{crawl.job_id}").get_data(as_text=True)
    attribute = re.search(r'<section id="live"[^>]* data-words="([^"]*)"', english)
    assert json.loads(html.unescape(attribute.group(1)))["no report yet"] == "no report yet"
