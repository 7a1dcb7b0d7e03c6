"""Figures and words that read right on the pages, through Flask's test client: every time in the one format
(never the ISO text with microseconds the database hands out), counts with their noun, schedule names in
words, the change history in words (names, before → after, never ids), and the largest domains of a run
from that run's own history rows."""

from __future__ import annotations

import html
import re
from datetime import timedelta

from sqlalchemy import insert, update

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.repositories.history import DomainFigures, HistoryWriter
from harvestdef.repositories.jobs import JobRepository, new_job_row
from harvestdef.repositories.users import UserRepository
from scheduler.jobgen.generate import GenerationOptions
from scheduler.notify import Notifier
from scheduler.tick import Ticker, TickOptions
from tests.scheduler.factories import make_selective
from tests.webui.conftest import PASSWORD
from tests.webui.test_history import record_runs
from tests.webui.test_jobs import T0
from tests.webui.test_system import add_harvesters

RAW_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")
MICROSECONDS = re.compile(r"\d\d:\d\d:\d\d\.\d")
A_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d UTC)?")
THE_FORMAT = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")


def visible_text(page: str) -> str:
    """What a reader sees of a page: no scripts (a job page's live figures travel as JSON in one), no tags
    (a <time> element's datetime attribute is for the browser), entities decoded."""
    page = re.sub(r"<script\b.*?</script>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def words_of(page: str) -> str:
    """The visible text as one line of words, as it reads: "Schedule: Every 5 minutes"."""
    return re.sub(r" ([:.,])", r"\1", " ".join(visible_text(page).split()))


def ticker(engine) -> Ticker:
    return Ticker(engine, GenerationOptions(), TickOptions(postpone_unregistered_channel=False), Notifier())


def seed_times_with_microseconds(engine, api) -> None:
    """Rows of every kind a page shows a time of, most stamped now (microseconds and all)."""
    record_runs(engine)  # harvest "daily": runs 1-3, history of alpha.dk and beta.dk
    now = utcnow()
    assert now.microsecond or utcnow().microsecond, "the clock gives microseconds"
    add_harvesters(engine)
    with engine.begin() as conn:
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == 2).values(
            submitteddate=now, startdate=now, enddate=now + timedelta(seconds=1, microseconds=250)))
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == 3).values(enddate=now))
        conn.execute(update(s.ordertemplates).values(lastupdated=now))
        conn.execute(insert(s.scheduler_lock).values(name="scheduler", holder="sched-host:4242", acquired_at=now,
                                                     expires_at=now + timedelta(minutes=1)))
    assert api("curator", "post", "/api/v1/schedules", json={
        "name": "Every_5_minutes", "timeunit": "MINUTE", "numtimeunits": 5,
        "startdate": "2030-01-31T02:00:00.250000Z", "enddate": "2031-01-31T02:00:00.500000Z"}).status_code == 201
    assert api("curator", "post", "/api/v1/harvests", json={
        "type": "selective", "name": "weekly", "schedule": "Every_5_minutes", "active": True,
        "configurations": [{"domain": "alpha.dk"}]}).status_code == 201
    ticker(engine).tick()  # "weekly" waits for 2030, saying since when


PAGES = ["/", "/definitions/harvests", "/definitions/harvests/weekly", "/definitions/harvests/daily",
         "/definitions/schedules", "/definitions/schedules/Every_5_minutes", "/definitions/templates",
         "/definitions/domains/alpha.dk", "/definitions/domains/alpha.dk/configurations/defaultconfig",
         "/status/", "/status/jobs/2", "/status/jobs/3", "/status/waiting", "/history/", "/history/harvests/daily",
         "/history/domains/alpha.dk", "/system", "/system/users", "/system/users/admin/tokens"]
# pages that show at least one time in these rows (the others may show none)
WITH_TIMES = {"/", "/definitions/harvests", "/definitions/harvests/weekly", "/definitions/schedules",
              "/definitions/templates", "/status/", "/status/jobs/2", "/status/waiting", "/history/domains/alpha.dk",
              "/system", "/system/users"}


def test_every_page_shows_times_in_the_one_format_never_iso_with_microseconds(api, login, webui_engine):
    seed_times_with_microseconds(webui_engine, api)
    client = login("admin")
    shown = 0
    for path in PAGES:
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code)
        page = response.get_data(as_text=True)
        text = words_of(page)
        assert not RAW_ISO.search(text), f"{path} shows raw ISO time text: {RAW_ISO.search(text).group(0)!r}"
        assert not MICROSECONDS.search(text), f"{path} shows microseconds: {MICROSECONDS.search(text).group(0)!r}"
        for found in A_TIME.finditer(text):
            assert found.group(1), f"{path}: {text[found.start():found.end() + 12]!r} is not in the one format"
        times = THE_FORMAT.findall(text)
        if path in WITH_TIMES:
            assert times, f"{path} shows no time, so this test proves nothing there"
            # each time a reader sees is a <time> element the browser can add the reader's zone to
            assert re.search(r'<time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ">', page), path
        shown += len(times)
    assert shown >= 25


def test_counts_plurals_and_schedule_names_read_as_words(api, login, webui_engine):
    seed_times_with_microseconds(webui_engine, api)
    with webui_engine.begin() as conn:
        UserRepository(conn).create("alice", "curator", password=PASSWORD)
    admin = login("admin")
    harvests = words_of(admin.get("/definitions/harvests").get_data(as_text=True))
    assert "Every 5 minutes" in harvests and "Every_5_minutes" not in harvests
    weekly = words_of(admin.get("/definitions/harvests/weekly").get_data(as_text=True))
    assert "Active · 0 runs ·" in weekly and "run(s)" not in weekly
    assert "Schedule: Every 5 minutes" in weekly
    schedules = words_of(admin.get("/definitions/schedules").get_data(as_text=True))
    assert "Every 5 minutes every 5 minutes 2030-01-31 02:00:00 UTC 2031-01-31 02:00:00 UTC" in schedules
    assert "Once an hour every hour as soon as possible never" in schedules
    assert "Once once, at its begin time as soon as possible after 1 harvest" in schedules
    assert "hourly" not in schedules and "harvest(s)" not in schedules
    assert "Runs every 5 minutes." in words_of(login("archivist").get(
        "/definitions/schedules/Every_5_minutes").get_data(as_text=True))
    statistics = words_of(admin.get("/history/harvests/daily").get_data(as_text=True))
    assert "717" not in statistics and "30.0 KB" in statistics and "33.0 KB" in statistics
    assert "Signed in as admin." in words_of(admin.get("/").get_data(as_text=True))
    alice = login_as(admin.application, "alice")
    assert "Signed in as alice, a curator." in words_of(alice.get("/").get_data(as_text=True))


def login_as(app, name: str):
    from tests.webui.conftest import csrf_of
    client = app.test_client()
    response = client.post("/login", data={"name": name, "password": PASSWORD, "csrf_token": csrf_of(client)})
    assert response.status_code == 302
    return client


def test_a_generated_run_says_how_many_jobs_in_the_right_number(api, login, webui_engine):
    assert api("curator", "post", "/api/v1/domains", json={"names": ["kb.dk"]}).status_code in (200, 201)
    assert api("curator", "post", "/api/v1/harvests", json={
        "type": "selective", "name": "now", "schedule": "Once_an_hour", "active": True,
        "configurations": [{"domain": "kb.dk"}]}).status_code == 201
    report = ticker(webui_engine).tick()
    assert list(report.generated) == ["now"]
    page = words_of(login("curator").get("/definitions/harvests").get_data(as_text=True))
    assert re.search(r"run 1: 1 job at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", page), page


# ---------------------------------------------------------------- the change history in words
def test_the_change_history_names_what_changed_before_and_after_never_ids(api, login, webui_engine):
    assert api("curator", "post", "/api/v1/domains", json={"names": ["kb.dk"]}).status_code in (200, 201)
    default_cxml = api("curator", "get", "/api/v1/templates/default_orderxml?format=cxml").get_data(as_text=True)
    assert api("admin", "post", "/api/v1/templates", json={"name": "deep_crawl", "cxml": default_cxml}).status_code \
        == 201
    assert api("curator", "post", "/api/v1/domains/kb.dk/configurations",
               json={"name": "deep", "template": "default_orderxml", "seedlists": ["defaultseeds"]}).status_code == 201

    def edition() -> int:
        return api("curator", "get", "/api/v1/domains/kb.dk").get_json()["edition"]
    assert api("curator", "patch", "/api/v1/domains/kb.dk/configurations/deep", json={
        "edition": edition(), "template": "deep_crawl", "max_objects": 12345, "default": True}).status_code == 200
    seeds = api("curator", "get", "/api/v1/domains/kb.dk").get_json()
    assert api("curator", "patch", "/api/v1/domains/kb.dk/seedlists/defaultseeds", json={
        "edition": seeds["edition"], "seeds": ["http://www.kb.dk/", "http://kb.dk/news"]}).status_code == 200
    assert api("curator", "post", "/api/v1/harvests", json={
        "type": "selective", "name": "weekly", "schedule": "Once_a_day", "comments": "first words",
        "configurations": [{"domain": "kb.dk"}]}).status_code == 201
    current = api("curator", "get", "/api/v1/harvests/weekly").get_json()["edition"]
    assert api("curator", "patch", "/api/v1/harvests/weekly", json={
        "edition": current, "comments": "new words", "schedule": "Once_a_week"}).status_code == 200

    curator = login("curator")
    pages = {path: words_of(curator.get(path).get_data(as_text=True)) for path in (
        "/definitions/harvests/weekly", "/definitions/domains/kb.dk",
        "/definitions/domains/kb.dk/configurations/deep", "/definitions/domains/kb.dk/seedlists/defaultseeds")}
    for path, text in pages.items():
        history = text[text.index("Change history"):]
        assert not re.search(r"\b\w+_id\b|\bdefaultconfig:|\bNone\b|\bTrue\b|\bedition\b", history), (path, history)
        assert "curator changed" in history or "curator created" in history, (path, history)
        pages[path] = history

    harvest = pages["/definitions/harvests/weekly"]
    assert re.search(r"curator changed (Next run: [-\d :]+UTC → [-\d :]+UTC )?Schedule: Once a day → Once a week",
                     harvest), harvest
    assert "curator changed Comments: first words → new words" in harvest
    assert "created" in harvest and "Name: weekly" in harvest
    configuration = pages["/definitions/domains/kb.dk/configurations/deep"]
    assert "Crawl template: default_orderxml → deep_crawl" in configuration
    assert "Max objects: unlimited → 12,345" in configuration
    # as it was created, with its crawl attributes in the same one entry, yes or no
    assert "Crawl template: default_orderxml Extract links from JavaScript: yes Max bytes: unlimited Max hops: 20 " \
           "Max objects: unlimited Name: deep Obey robots.txt: no" in configuration
    assert configuration.count(" created ") == 1
    domain = pages["/definitions/domains/kb.dk"]
    assert "Default configuration: kb.dk/defaultconfig → kb.dk/deep" in domain
    seedlist = pages["/definitions/domains/kb.dk/seedlists/defaultseeds"]
    # a list of lines changed: the lines added and removed, not both lists whole
    assert "curator changed Seeds: + http://www.kb.dk/ + http://kb.dk/news − http://www.kb.dk − https://www.kb.dk " \
           "− http://kb.dk − https://kb.dk" in seedlist
    assert "created Name: defaultseeds Seeds: + http://www.kb.dk + https://www.kb.dk + http://kb.dk" in seedlist


# ---------------------------------------------------------------- largest domains of a run
def test_largest_domains_of_a_run_come_from_its_own_rows_whatever_harvests_the_domains_later(api, login,
                                                                                            webui_engine):
    record_runs(webui_engine)  # "daily": run 1 alpha 10 KB, beta 2 KB; run 2 alpha 30 KB, beta 3 KB; run 3 failed
    with webui_engine.begin() as conn:  # a later harvest of the same configurations: "other", run 1, job 4
        configs = [row.config_id for row in conn.execute(s.configurations.select())]
        make_selective(conn, 2, "other", configs)
        jobs = JobRepository(conn)
        jobs.insert([{**new_job_row(job_id=4, harvest_id=2, channel="FOCUSED", snapshot=False,
                                    orderxml="default_orderxml", harvest_num=1, creationdate=T0 + timedelta(days=5)),
                      "status": int(JobStatus.DONE)}], {4: configs})
        HistoryWriter(conn).record_job(jobs.get(4), JobStatus.DONE, StopReason.DOWNLOAD_COMPLETE, {
            "alpha.dk": DomainFigures(7, 700, StopReason.DOWNLOAD_COMPLETE, 7, 700, 0, 0),
            "beta.dk": DomainFigures(9, 900_000, StopReason.DOWNLOAD_COMPLETE, 9, 900_000, 0, 0)},
            T0 + timedelta(days=5))

    stats = api("archivist", "get", "/api/v1/harvests/daily/statistics").get_json()
    assert stats["largest_domains_run"] == 2  # the newest run with figures: run 3's one job failed
    assert [(d["domain"], d["bytes"], d["job_id"]) for d in stats["largest_domains"]] == [
        ("alpha.dk", 30_000, 2), ("beta.dk", 3_000, 2)]
    other = api("archivist", "get", "/api/v1/harvests/other/statistics").get_json()
    assert [(d["domain"], d["bytes"]) for d in other["largest_domains"]] == [("beta.dk", 900_000), ("alpha.dk", 700)]

    archivist = login("archivist")

    def largest(path: str) -> str:
        text = words_of(archivist.get(path).get_data(as_text=True))
        return text[text.rindex("Largest domains"):]  # the table's heading, after the chart's
    newest = largest("/history/harvests/daily")
    assert newest.startswith("Largest domains of run 2 ")
    assert "alpha.dk defaultconfig 30.0 KB 120 DOWNLOAD_COMPLETE 2 beta.dk defaultconfig 3.0 KB 60" in newest
    first = largest("/history/harvests/daily?run=1")
    assert first.startswith("Largest domains of run 1 ")
    assert "alpha.dk defaultconfig 10.0 KB 100 DOWNLOAD_COMPLETE 1 beta.dk defaultconfig 2.0 KB 50 OBJECT_LIMIT 1" \
        in first
    assert "No domain of run 3 has reported figures." in largest("/history/harvests/daily?run=3")
    assert "beta.dk defaultconfig 900.0 KB" in largest("/history/harvests/other")
