"""The job list that leads somewhere, through the API and Flask's test client, on SQLite and PostgreSQL: filtered by
part of a harvest's name (any case, Danish letters too), by one harvest and run, by harvester (a controller or a
host) and by domain; what each job harvested (objects, bytes) and its domains as columns, read in a fixed number
of queries whatever the page's size; every harvest, run and harvester a link, and the pages that link to it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, event, insert, select

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.repositories.jobs import JobRepository, new_job_row
from tests.scheduler.factories import add_history, make_domain, make_selective
from tests.webui.conftest import database_with_users
from tests.webui.test_history import record_runs

pytestmark = pytest.mark.database("users")

T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def webui_engine(database_url: str) -> Iterator[Engine]:
    """The harvest database of the web UI on both databases (the sums of historyinfo differ in type)."""
    yield from database_with_users(database_url)


def job(job_id: int, harvest_id: int, run: int, controller: str | None, status: JobStatus = JobStatus.DONE) -> dict:
    row = new_job_row(job_id=job_id, harvest_id=harvest_id, channel="FOCUSED", snapshot=False,
                      orderxml="default_orderxml", harvest_num=run, creationdate=T0 + timedelta(hours=job_id),
                      orderxmldoc="<beans/>", seedlist="http://www.alpha.dk", num_configs=0)
    row.update(status=int(status), controller=controller)
    return row


def seed_harvests(engine: Engine) -> None:
    """Three harvests: "Daily News" (jobs 1-3: runs 1, 1, 2), "weekly" (job 4), "Æbler og pærer" (job 5);
    controllers ctl-1 and ctl-2 on crawler1.example.org, ctl-3 on crawler2; jobs 1 and 2 have reported."""
    with engine.begin() as conn:
        _, alpha = make_domain(conn, "alpha.dk")
        _, beta = make_domain(conn, "beta.dk")
        _, gamma = make_domain(conn, "gamma.dk")
        make_selective(conn, 1, "Daily News", [alpha, beta])
        make_selective(conn, 2, "weekly", [gamma])
        make_selective(conn, 3, "Æbler og pærer", [beta])
        repository = JobRepository(conn)
        rows = [job(1, 1, 1, "ctl-1"), job(2, 1, 1, "ctl-2"), job(3, 1, 2, None, JobStatus.NEW),
                job(4, 2, 1, "ctl-3"), job(5, 3, 1, "ctl-1")]
        configs = {1: [alpha, beta], 2: [alpha], 3: [alpha, beta], 4: [gamma], 5: [beta]}
        for row in rows:
            row["num_configs"] = len(configs[row["job_id"]])
        repository.insert(rows, configs)
        add_history(conn, alpha, 1, 1234, 12_300_000, int(StopReason.DOWNLOAD_COMPLETE), job_id=1)
        add_history(conn, beta, 1, 766, 700_000, int(StopReason.OBJECT_LIMIT), job_id=1)
        add_history(conn, alpha, 1, 5_000_000_000, 9_000_000_000_000, int(StopReason.DOWNLOAD_COMPLETE), job_id=2)
        now = datetime.now(UTC)
        conn.execute(insert(s.harvesters), [
            {"controller_id": controller, "host": host, "channels": "FOCUSED", "accepted": True, "paused": False,
             "last_heartbeat": now, "pause_reason": None}
            for controller, host in (("ctl-1", "crawler1.example.org"), ("ctl-2", "crawler1.example.org"),
                                     ("ctl-3", "crawler2.example.org"))])


def ids(answer) -> list[int]:
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return [item["job_id"] for item in answer.json["items"]]


def test_the_api_filters_by_part_of_a_harvest_name_one_run_a_harvester_and_a_domain(api, webui_engine):
    seed_harvests(webui_engine)
    assert ids(api("archivist", "get", "/api/v1/jobs?harvest=News")) == [3, 2, 1]
    assert ids(api("archivist", "get", "/api/v1/jobs?harvest=daily%20NEWS")) == [3, 2, 1]
    assert ids(api("archivist", "get", "/api/v1/jobs?harvest=e")) == [5, 4, 3, 2, 1]
    assert ids(api("archivist", "get", "/api/v1/jobs?harvest=ÆBLER")) == [5]
    assert ids(api("archivist", "get", "/api/v1/jobs?harvest=æbler")) == [5], "Danish letters in any case"
    literal = api("archivist", "get", "/api/v1/jobs?harvest=%25")
    assert literal.status_code == 404, "a percent sign is a character of the name, not a wildcard"
    assert ids(api("archivist", "get", "/api/v1/jobs?harvest_id=1&run=1")) == [2, 1]
    assert ids(api("archivist", "get", "/api/v1/jobs?harvest=news&run=2")) == [3]
    assert ids(api("archivist", "get", "/api/v1/jobs?harvester=ctl-1")) == [5, 1]
    assert ids(api("archivist", "get", "/api/v1/jobs?harvester=crawler1.example.org")) == [5, 2, 1]
    assert ids(api("archivist", "get", "/api/v1/jobs?harvester=crawler1.example.org&harvest=news")) == [2, 1]
    assert ids(api("archivist", "get", "/api/v1/jobs?domain=beta.dk")) == [5, 3, 1]
    assert ids(api("archivist", "get", "/api/v1/jobs?domain=beta.dk&harvest=news&status=DONE")) == [1]

    items = {item["job_id"]: item for item in api("archivist", "get", "/api/v1/jobs").json["items"]}
    assert (items[1]["objects"], items[1]["bytes"], items[1]["num_configs"]) == (2000, 13_000_000, 2)
    assert (items[2]["objects"], items[2]["bytes"]) == (5_000_000_000, 9_000_000_000_000), "past 32 bits"
    assert (items[3]["objects"], items[3]["bytes"], items[3]["num_configs"]) == (None, None, 2), "not reported"
    assert items[1]["controller"] == "ctl-1" and items[1]["harvest_id"] == 1


@pytest.mark.parametrize(("query", "status", "field", "message"), [
    ("harvest=nosuch", 404, "harvest", "no harvest definition's name contains 'nosuch'"),
    ("harvest_id=99", 404, "harvest_id", "no harvest definition with id 99"),
    ("harvest_id=one", 400, "harvest_id", "harvest_id must be a whole number"),
    ("run=1", 400, "run", "give harvest_id or harvest with it"),
    ("harvest_id=1&run=0", 400, "run", "run must be 1 or more, not 0"),
    ("harvest_id=1&run=x", 400, "run", "run must be a whole number"),
    ("harvester=nosuch", 404, "harvester", "no harvest controller or harvester host named 'nosuch'"),
    ("domain=nosuch.dk", 404, "domain", "no domain named 'nosuch.dk'"),
])
def test_the_api_refuses_a_filter_it_cannot_use_naming_it(api, webui_engine, query, status, field, message):
    seed_harvests(webui_engine)
    answer = api("archivist", "get", f"/api/v1/jobs?{query}")
    assert answer.status_code == status and answer.json["error"]["field"] == field
    assert message in answer.json["error"]["message"]
    export = api("archivist", "get", f"/api/v1/export/jobs.csv?{query}")
    assert export.status_code == status, "the CSV export refuses it before its first line"


def test_a_page_of_jobs_is_read_in_the_same_few_queries_whatever_its_size(app, login, webui_engine):
    """The objects and bytes come with the page's own query (no query per job): 5 jobs or 45, same count."""
    seed_harvests(webui_engine)
    client = login("archivist")
    statements: list[str] = []

    def count(conn, cursor, statement, *args) -> None:
        statements.append(statement)

    def queries_for_the_list() -> int:
        statements.clear()
        event.listen(webui_engine, "before_cursor_execute", count)
        try:
            page = client.get("/status/?harvest=e")
        finally:
            event.remove(webui_engine, "before_cursor_execute", count)
        assert page.status_code == 200
        return len(statements)

    few = queries_for_the_list()
    with webui_engine.begin() as conn:
        configs = {job_id: [] for job_id in range(6, 46)}
        JobRepository(conn).insert([job(job_id, 2, 2, "ctl-3") for job_id in range(6, 46)], configs)
        conn.execute(insert(s.historyinfo), [
            {"stopreason": 0, "objectcount": job_id, "bytecount": job_id, "config_id": 1, "harvest_id": 2,
             "job_id": job_id, "harvest_time": T0} for job_id in range(6, 46)])
    assert queries_for_the_list() == few
    assert len([s for s in statements if "historyinfo" in s]) == 1, "the sums are part of the page's query"


def test_the_status_page_filters_shows_the_figures_and_links_every_name(login, webui_engine):
    seed_harvests(webui_engine)
    client = login("archivist")
    page = client.get("/status/?harvest=News").get_data(as_text=True)
    assert "No jobs match" not in page
    assert all(f'href="/status/jobs/{n}"' in page for n in (1, 2, 3)) and 'href="/status/jobs/4"' not in page
    headers = re.findall(r"<th[^>]*>([^<]+)</th>", page)
    assert {"Harvest", "Run", "Harvester", "Domains", "Objects", "Bytes"} <= set(headers)
    row = re.sub(r"\s+", " ", re.search(r'<tr>\s*(?:<td>.*?</td>)?\s*<td class="number"><a href="/status/jobs/1">'
                                        r'.*?</tr>', page, re.S).group(0))
    assert '<a href="/definitions/harvests/Daily%20News">Daily News</a>' in row
    assert '<a href="/status/?harvest_id=1&amp;run=1" title="the jobs of this run">1</a>' in row
    assert '<a href="/system/#controller-ctl-1">ctl-1</a>' in row
    assert re.search(r'<td class="number">2</td>\s*<td class="number">2,000</td>\s*<td class="number">13.0 MB</td>',
                     row)
    assert re.search(r'<option value="Daily News">.*<option value="weekly">', page)
    assert '<option value="crawler1.example.org">' in page and '<option value="ctl-3">' in page

    assert 'href="/status/jobs/5"' in client.get("/status/?harvest=æbler").get_data(as_text=True)
    by_host = client.get("/status/?harvester=crawler1.example.org").get_data(as_text=True)
    assert [n for n in range(1, 6) if f'href="/status/jobs/{n}"' in by_host] == [1, 2, 5]
    by_domain = client.get("/status/?domain=gamma.dk").get_data(as_text=True)
    assert [n for n in range(1, 6) if f'href="/status/jobs/{n}"' in by_domain] == [4]
    run = client.get("/status/?harvest_id=1&run=1").get_data(as_text=True)
    assert [n for n in range(1, 6) if f'href="/status/jobs/{n}"' in run] == [1, 2]
    assert re.search(r'Jobs of harvest <a href="/definitions/harvests/Daily%20News">Daily News</a>, run 1', run)
    assert 'name="harvest_id" value="1"' in run, "the other filters keep the run"
    missing = client.get("/status/?harvest=nosuch").get_data(as_text=True)
    assert "no harvest definition&#39;s name contains &#39;nosuch&#39;" in missing


def test_a_harvest_run_opens_its_jobs(login, webui_engine):
    record_runs(webui_engine)  # runs 1, 2 and 3 of "daily": jobs 1, 2 and 3
    client = login("archivist")
    statistics = client.get("/history/harvests/daily").get_data(as_text=True)
    link = re.search(r'<a href="(/status/\?harvest_id=1&amp;run=2)" title="the jobs of run 2">2</a>', statistics)
    assert link, "a run's row opens its jobs"
    run = client.get(link.group(1).replace("&amp;", "&")).get_data(as_text=True)
    assert [n for n in range(1, 4) if f'href="/status/jobs/{n}"' in run] == [2]
    assert 'href="/definitions/harvests/daily"' in statistics and 'href="/status/?harvest_id=1"' in statistics
    assert 'href="/definitions/domains/alpha.dk/configurations/defaultconfig"' in statistics


def test_the_pages_around_the_job_list_link_to_it(login, webui_engine):
    seed_harvests(webui_engine)
    client = login("archivist")
    system = client.get("/system").get_data(as_text=True)
    assert 'href="/status/?harvester=ctl-1"' in system
    assert 'href="/status/?harvester=crawler1.example.org"' in system
    history = client.get("/history/domains/alpha.dk").get_data(as_text=True)
    assert 'href="/definitions/domains/alpha.dk"' in history and 'href="/status/?domain=alpha.dk"' in history
    assert 'href="/definitions/domains/alpha.dk/configurations/defaultconfig"' in history
    harvests = client.get("/definitions/harvests").get_data(as_text=True)
    assert 'href="/definitions/schedules/Once_a_day"' in harvests
    with webui_engine.begin() as conn:
        alpha_id = conn.scalar(select(s.domains.c.domain_id).where(s.domains.c.name == "alpha.dk"))
        make_domain(conn, "alpha-alias.dk", alias_of=alpha_id, lastaliasupdate=T0)
    domains = client.get("/definitions/domains?q=alpha-alias.dk").get_data(as_text=True)
    assert '<a href="/definitions/domains/alpha.dk">alpha.dk</a>' in domains, "an alias names its domain as a link"
