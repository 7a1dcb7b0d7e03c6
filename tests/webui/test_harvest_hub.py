"""The harvest page as the curator's hub, through the API and Flask's test client, on SQLite and PostgreSQL:
its runs with links to their jobs and statistics, "run now" (carried out by a real scheduler tick, once),
the job-generation preview (made by a real tick, writing nothing), editing name, comments, channel and
schedule, changing and removing a domain's configuration, and the event harvest's title. Bad input gets a
clear error naming the field, and nothing is stored."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.repositories.audit import AuditRepository
from harvestdef.repositories.configurations import ConfigurationRepository
from harvestdef.repositories.domains import DomainRepository
from harvestdef.repositories.harvests import HarvestRepository
from harvestdef.repositories.seedlists import SeedListRepository
from scheduler.jobgen.generate import GenerationOptions
from scheduler.notify import Notifier
from scheduler.tick import Ticker, TickOptions
from tests.webui.conftest import database_with_users

pytestmark = pytest.mark.database("users")

PAGE = "/definitions/harvests/sel"


@pytest.fixture
def webui_engine(database_url: str) -> Iterator[Engine]:
    """kb.dk (two configurations) and dr.dk in the selective harvest "sel" (active, next run in a week), an
    inactive snapshot "snap", and a selective harvest "empty" without domains."""
    for engine in database_with_users(database_url):
        with engine.begin() as conn:
            domains = DomainRepository(conn)
            for name in ("kb.dk", "dr.dk"):
                domains.create(name)
            kb = domains.get("kb.dk")
            SeedListRepository(conn).create("kb.dk", "news", ["http://kb.dk/news"], kb.edition)
            ConfigurationRepository(conn).create("kb.dk", "deep", "default_orderxml", ["news"], kb.edition + 1)
            harvests = HarvestRepository(conn)
            created = harvests.create_selective("sel", "Once_a_day", nextdate=utcnow() + timedelta(days=7),
                                                active=True)
            harvests.add_configurations("sel", [("kb.dk", None), ("dr.dk", None)], created.edition)
            harvests.create_snapshot("snap")
            harvests.create_selective("empty", "Once_a_day")
        yield engine


def harvest_id_of(engine, name: str) -> int:
    with engine.connect() as conn:
        return HarvestRepository(conn).get(name).harvest_id


def tick(engine: Engine) -> Any:
    """One real scheduler tick, deduplication off (no sources to decide), no controller needed."""
    return Ticker(engine, GenerationOptions(deduplication_enabled=False),
                  TickOptions(postpone_unregistered_channel=False), Notifier()).tick()


def job_runs(engine: Engine, harvest: str) -> list[tuple[int, int]]:
    """(harvest_num, jobs) of the harvest's jobs."""
    with engine.connect() as conn:
        harvest_id = HarvestRepository(conn).get(harvest).harvest_id
        return [tuple(row) for row in conn.execute(
            select(s.jobs.c.harvest_num, func.count()).where(s.jobs.c.harvest_id == harvest_id)
            .group_by(s.jobs.c.harvest_num).order_by(s.jobs.c.harvest_num))]


def form(client: Any, **fields: object) -> dict[str, object]:
    return {"csrf_token": client.csrf, **fields}


def edition_of(engine: Engine, name: str) -> int:
    with engine.connect() as conn:
        return HarvestRepository(conn).get(name).edition


# ------------------------------------------------------------------ run now
def test_run_now_through_the_api_makes_one_run_at_the_next_tick_and_keeps_the_schedule(api, webui_engine):
    before = api("archivist", "get", "/api/v1/harvests/sel").get_json()
    assert before["run_request"] is None and before["runs"] == []
    asked = api("curator", "post", "/api/v1/harvests/sel/run")
    assert asked.status_code == 202, asked.get_json()
    assert asked.get_json()["run_request"]["requested_by"] == "curator"
    again = api("curator", "post", "/api/v1/harvests/sel/run")
    assert again.status_code == 409
    assert "the scheduler's next tick makes it" in again.get_json()["error"]["message"]
    report = tick(webui_engine)
    assert list(report.generated) == ["sel"]
    assert job_runs(webui_engine, "sel") == [(1, 1)]
    after = api("archivist", "get", "/api/v1/harvests/sel").get_json()
    assert after["run_request"] is None and after["numevents"] == 1
    assert after["nextdate"] == before["nextdate"], "a run outside the schedule leaves the next scheduled run"
    (run,) = after["runs"]
    assert run["run"] == 1 and run["jobs"] == 1 and run["jobs_by_status"] == {"NEW": 1}
    assert run["jobs_url"] == f"/api/v1/jobs?harvest_id={harvest_id_of(webui_engine, 'sel')}&run=1"
    assert run["statistics_url"] == "/api/v1/harvests/sel/statistics"
    jobs = api("archivist", "get", run["jobs_url"]).get_json()["items"]
    assert [job["harvest_num"] for job in jobs] == [1]
    # the request was used up: later ticks make no second run
    tick(webui_engine)
    assert job_runs(webui_engine, "sel") == [(1, 1)]
    with webui_engine.connect() as conn:
        harvest_id = HarvestRepository(conn).get("sel").harvest_id
        audited = [(c.actor, c.action) for c in AuditRepository(conn).changes_of("harvest_run_requests", harvest_id)]
    assert sorted(audited) == [("curator", "insert"), ("system", "delete")]


def test_a_run_asked_for_can_be_withdrawn_before_the_tick(api, webui_engine):
    assert api("curator", "post", "/api/v1/harvests/sel/run").status_code == 202
    assert api("curator", "delete", "/api/v1/harvests/sel/run").status_code == 200
    assert api("curator", "delete", "/api/v1/harvests/sel/run").status_code == 404
    tick(webui_engine)
    assert job_runs(webui_engine, "sel") == []


def test_run_now_runs_an_inactive_snapshot_once_and_refuses_what_cannot_run(api, webui_engine):
    assert api("archivist", "post", "/api/v1/harvests/snap/run").status_code == 403
    empty = api("curator", "post", "/api/v1/harvests/empty/run")
    assert empty.status_code == 400 and "no domain configurations" in empty.get_json()["error"]["message"]
    assert api("curator", "post", "/api/v1/harvests/nosuch/run").status_code == 404
    assert api("curator", "post", "/api/v1/harvests/snap/run").status_code == 202
    tick(webui_engine)
    assert [num for num, _ in job_runs(webui_engine, "snap")] == [1]
    snap = api("archivist", "get", "/api/v1/harvests/snap").get_json()
    assert snap["active"] is False and snap["run_request"] is None
    ran = api("curator", "post", "/api/v1/harvests/snap/run")
    assert ran.status_code == 400 and "a snapshot runs once" in ran.get_json()["error"]["message"]


def test_run_now_on_the_page_is_audited_and_shown_until_the_tick_takes_it(login, webui_engine):
    curator = login("curator")
    response = curator.post(f"{PAGE}/run", data=form(curator))
    assert response.status_code == 302
    page = curator.get(PAGE).get_data(as_text=True)
    assert "A run is asked for: curator at" in page and "Withdraw the run asked for" in page
    assert curator.post(f"{PAGE}/run", data=form(curator)).status_code == 409
    archivist = login("archivist")
    assert archivist.post(f"{PAGE}/run", data=form(archivist)).status_code == 403
    assert "Run now" not in archivist.get(PAGE).get_data(as_text=True)
    no_csrf = curator.post(f"{PAGE}/run/withdraw", data={})
    assert no_csrf.status_code == 403
    assert "Withdraw the run asked for" in curator.get(PAGE).get_data(as_text=True), "nothing was withdrawn"
    tick(webui_engine)
    page = curator.get(PAGE).get_data(as_text=True)
    assert "A run is asked for" not in page
    [listed_url] = re.findall(r'href="(/status/\?harvest_id=\d+&amp;run=1)"', page)
    assert "Jobs of run 1" in page
    assert 'href="/history/harvests/sel">Statistics</a></td>' in page
    assert re.search(r"<td class=\"number\">1</td>\s*<td class=\"when\">", page), "the runs table lists run 1"
    listed = curator.get(listed_url.replace("&amp;", "&")).get_data(as_text=True)
    assert 'name="run"' in listed and "No jobs" not in listed


# ------------------------------------------------------------------ preview
def test_a_preview_is_made_by_the_tick_and_writes_nothing(api, webui_engine):
    assert api("curator", "get", "/api/v1/harvests/snap/preview").get_json()["state"] == "none"
    asked = api("curator", "post", "/api/v1/harvests/snap/preview")
    assert asked.status_code == 202 and asked.get_json()["state"] == "waiting"
    assert api("archivist", "post", "/api/v1/harvests/snap/preview").status_code == 403
    report = tick(webui_engine)
    assert report.previewed == ["snap"] and not report.generated
    answer = api("archivist", "get", "/api/v1/harvests/snap/preview").get_json()
    assert answer["state"] == "made" and answer["requested_by"] == "curator"
    preview = answer["preview"]
    assert preview["run"] == 1 and preview["configurations"] == 2 and preview["type"] == "snapshot"
    (job,) = preview["jobs"]
    assert job["configurations"] == 2 and sorted(job["sample"]) == ["dr.dk/defaultconfig", "kb.dk/defaultconfig"]
    assert job["expected_objects"] > 0 and job["expected_bytes"] > 0
    assert preview["expected_bytes"] == job["expected_bytes"]
    assert job["crawl_attributes"] == {"max_hops": 20, "honor_robots_dot_txt": False, "extract_javascript": True}
    assert job_runs(webui_engine, "snap") == []
    with webui_engine.connect() as conn:
        assert HarvestRepository(conn).get("snap").numevents == 0


def test_the_preview_on_the_page(login, webui_engine):
    curator = login("curator")
    assert "Look at it before activating the snapshot." in curator.get("/definitions/harvests/snap").get_data(
        as_text=True)
    assert curator.post("/definitions/harvests/snap/preview", data=form(curator)).status_code == 302
    assert "the scheduler makes it at its next tick" in curator.get("/definitions/harvests/snap").get_data(
        as_text=True)
    tick(webui_engine)
    page = curator.get("/definitions/harvests/snap").get_data(as_text=True)
    assert "2 configurations in 1 job" in page
    assert "dr.dk/defaultconfig, kb.dk/defaultconfig" in page
    assert "20 hops, robots.txt ignored, JavaScript read" in page and "unlimited objects" in page


# ------------------------------------------------------------------ editing
def test_name_comments_channel_and_schedule_are_edited_on_the_page(login, webui_engine):
    curator = login("curator")
    response = curator.post(PAGE, data=form(curator, edition=edition_of(webui_engine, "sel"), name="news",
                                            comments="the news sites", audience="", channel="FOCUSED",
                                            schedule="Once_a_week", crawlertraps=""))
    assert response.status_code == 302 and response.headers["Location"].endswith("/definitions/harvests/news")
    with webui_engine.connect() as conn:
        harvest = HarvestRepository(conn).get("news")
    assert harvest.comments == "the news sites" and harvest.schedule_name == "Once_a_week"
    page = curator.get("/definitions/harvests/news").get_data(as_text=True)
    assert "Selective harvest news" in page and "channel FOCUSED" in page
    # a channel of the other kind is refused, naming the field, and nothing is changed
    edition = edition_of(webui_engine, "news")
    refused = curator.post("/definitions/harvests/news", data=form(
        curator, edition=edition, name="renamed", comments="x", channel="SNAPSHOT", schedule="Once_a_day"))
    assert refused.status_code == 400
    assert re.findall(r"flash error\">([^<]*)", refused.get_data(as_text=True)) == [
        "Channel: SNAPSHOT is for snapshot harvests, and news is not a snapshot harvest"]
    assert edition_of(webui_engine, "news") == edition


def test_name_and_channel_through_the_api(api, webui_engine):
    edition = edition_of(webui_engine, "sel")
    renamed = api("curator", "patch", "/api/v1/harvests/sel", json={"edition": edition, "name": "news",
                                                                    "channel": "FOCUSED"})
    assert renamed.status_code == 200, renamed.get_json()
    assert renamed.get_json()["name"] == "news" and renamed.get_json()["channel"] == "FOCUSED"
    edition = renamed.get_json()["edition"]
    taken = api("curator", "patch", "/api/v1/harvests/news", json={"edition": edition, "name": "snap"})
    assert taken.status_code == 409
    unknown = api("curator", "patch", "/api/v1/harvests/news", json={"edition": edition, "channel": "NOPE"})
    assert unknown.status_code == 400 and unknown.get_json()["error"]["field"] == "channel"
    back = api("curator", "patch", "/api/v1/harvests/news", json={"edition": edition, "channel": None})
    assert back.status_code == 200 and back.get_json()["channel"] == "FOCUSED"
    stale = api("curator", "patch", "/api/v1/harvests/news", json={"edition": edition, "name": "x"})
    assert stale.status_code == 409


def test_a_domain_configuration_is_changed_and_removed_on_the_page(login, webui_engine):
    curator = login("curator")
    page = curator.get(PAGE).get_data(as_text=True)
    assert '<option>deep</option>' in page and "its only configuration" in page  # dr.dk has one
    change = f"{PAGE}/configurations/kb.dk/defaultconfig/change"
    changed = curator.post(change, data=form(curator, edition=edition_of(webui_engine, "sel"), configuration="deep"))
    assert changed.status_code == 302
    with webui_engine.connect() as conn:
        entries = [(e.domain_name, e.config_name) for e in HarvestRepository(conn).configurations("sel")]
    assert entries == [("dr.dk", "defaultconfig"), ("kb.dk", "deep")]
    unknown = curator.post(f"{PAGE}/configurations/kb.dk/deep/change",
                           data=form(curator, edition=edition_of(webui_engine, "sel"), configuration="nosuch"))
    assert unknown.status_code == 400 and "configuration: no configuration" in unknown.get_data(as_text=True)
    removed = curator.post(f"{PAGE}/configurations/dr.dk/defaultconfig/remove",
                           data=form(curator, edition=edition_of(webui_engine, "sel")))
    assert removed.status_code == 302
    with webui_engine.connect() as conn:
        assert [e.domain_name for e in HarvestRepository(conn).configurations("sel")] == ["kb.dk"]


def test_a_domain_configuration_is_changed_through_the_api(api, webui_engine):
    path = "/api/v1/harvests/sel/configurations/kb.dk/defaultconfig"
    edition = edition_of(webui_engine, "sel")
    missing = api("curator", "patch", path, json={"edition": edition})
    assert missing.status_code == 400 and missing.get_json()["error"]["field"] == "configuration"
    bad = api("curator", "patch", path, json={"edition": edition, "configuration": "nosuch"})
    assert bad.status_code == 400 and bad.get_json()["error"]["field"] == "configuration"
    done = api("curator", "patch", path, json={"edition": edition, "configuration": "deep"})
    assert done.status_code == 200
    assert {"domain": "kb.dk", "configuration": "deep"} in done.get_json()["configurations"]
    gone = api("curator", "patch", path, json={"edition": done.get_json()["edition"], "configuration": "deep"})
    assert gone.status_code == 404


def test_an_event_harvest_is_titled_so(login, api, webui_engine):
    curator = login("curator")
    response = curator.post("/definitions/harvests/new/event", data=form(
        curator, name="election", schedule="Once_a_day", seeds="http://valg.dk/\nhttps://www.dr.dk/valg",
        template="default_orderxml", max_objects="-1", max_bytes="-1", max_hops="5",
        honor_robots_dot_txt="obey", extract_javascript="false"))
    assert response.status_code == 302, response.get_data(as_text=True)
    page = curator.get("/definitions/harvests/election").get_data(as_text=True)
    assert "<h1>Event harvest election</h1>" in page
    assert api("archivist", "get", "/api/v1/harvests/election").get_json()["event"] is True
    assert "<h1>Selective harvest sel</h1>" in curator.get(PAGE).get_data(as_text=True)
