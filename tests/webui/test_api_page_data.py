"""What the status and definition pages show, through the API: running jobs with their figures, why harvests
wait, channels and the channel mapping, global crawler traps, an event harvest's seeds and the crawl-log
search. Each route against its page (the same rows), paged to the end, with who may call it and the bad
input it refuses, naming the parameter."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from sqlalchemy import delete, insert, select

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus
from harvestdef.repositories.channels import ChannelRepository
from harvestdef.repositories.traps import GlobalCrawlerTrapRepository
from harvestdef.settings import load_settings
from harvester.postprocess.metadata import MetadataInfo, write_metadata_warc
from tests.scheduler.factories import make_selective
from tests.webui.conftest import ROLES
from tests.webui.test_jobs import CRAWL_LOG, T0, seed
from webui import create_app
from webui.api.core import encode_cursor

READ_ROUTES = ["/api/v1/running-jobs", "/api/v1/waiting-harvests", "/api/v1/channels", "/api/v1/channel-mapping",
               "/api/v1/traps", "/api/v1/traps/calendar", "/api/v1/harvests/election/seeds",
               "/api/v1/jobs/1/crawllog?domain=alpha.dk"]


def walk(api, path: str, role: str = "archivist") -> list[dict]:
    """Every item of a paged list, page by page; each page must be 200 and hold at most its limit."""
    items, url = [], path
    while url:
        answer = api(role, "get", url)
        assert answer.status_code == 200, answer.get_json()
        items += answer.json["items"]
        assert len(answer.json["items"]) <= int(re.search(r"limit=(\d+)", path).group(1))
        url = f"{path}&after={answer.json['next']}" if answer.json["next"] else None
    return items


def refused_naming(answer, field: str, code: str = "invalid") -> str:
    """The message of a 4xx answer that names ``field``."""
    error = answer.get_json()["error"]
    assert (error["code"], error["field"]) == (code, field), error
    return error["message"]


def metadata_warc(archive, job_id: int, crawl_log: str, tmp_path) -> None:
    log = tmp_path / f"job-{job_id}" / "crawl.log"
    log.parent.mkdir()
    log.write_text(crawl_log)
    info = MetadataInfo(job_id=job_id, harvest_id=1, harvest_num=1, organization="netarkivet.dk",
                        heritrix_version="3.4.0", software_version="test", hostname="h", ip="127.0.0.1")
    write_metadata_warc(archive / "1" / str(job_id) / f"{job_id}-metadata-1.warc.gz", info, [], [], [log], [])


def everything_the_routes_read(api, webui_engine, tmp_path) -> None:
    seed(webui_engine, [JobStatus.DONE])
    metadata_warc(tmp_path / "archive", 1, CRAWL_LOG, tmp_path)
    with webui_engine.begin() as conn:
        GlobalCrawlerTrapRepository(conn).create("calendar", [r".*/calendar/.*"], "", True)
    assert api("curator", "post", "/api/v1/harvests", json={
        "type": "event", "name": "election", "schedule": "Once", "template": "default_orderxml",
        "seeds": ["http://a.dk/valg"]}).status_code == 201


# ---------------------------------------------------------------- who may read
@pytest.mark.parametrize("path", READ_ROUTES)
def test_every_role_reads_and_nobody_without_a_login(api, app, webui_engine, tmp_path, path):
    everything_the_routes_read(api, webui_engine, tmp_path)
    for role in ROLES:
        assert api(role, "get", path).status_code == 200, (role, path)
    anonymous = app.test_client().get(path)
    assert anonymous.status_code == 401 and anonymous.get_json()["error"]["code"] == "unauthorized"
    revoked = app.test_client().get(path, headers={"Authorization": "Bearer not-a-token"})
    assert revoked.status_code == 401
    assert api("admin", "put", path.split("?")[0]).status_code == 405


def test_the_description_names_every_new_route_with_its_roles_parameters_and_answer(api):
    paths = api("archivist", "get", "/api/v1/openapi.json").json["paths"]
    for path in ("/running-jobs", "/waiting-harvests", "/channels", "/channel-mapping", "/traps", "/traps/{name}",
                 "/harvests/{name}/seeds", "/jobs/{job_id}/crawllog", "/"):
        operation = paths[path]["get"]
        assert operation["x-permission"] == "read" and operation["x-roles"] == sorted(ROLES), path
        answer = operation["responses"]["200"]["content"]["application/json"]["schema"]
        assert answer["type"] == "object" and answer["properties"], path
    crawl_log = paths["/jobs/{job_id}/crawllog"]["get"]
    assert [p["name"] for p in crawl_log["parameters"]] == ["job_id", "domain", "regex", "limit", "after"]
    line = crawl_log["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["items"]["items"]
    assert set(line["properties"]) == {"line", "text"}
    running = paths["/running-jobs"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    progress = running["properties"]["items"]["items"]["properties"]["progress"]
    assert progress["type"] == ["object", "null"] and "bytes_written" in progress["properties"]


# ---------------------------------------------------------------- running jobs
def test_running_jobs_with_their_figures_as_the_page_shows_them(api, login, webui_engine):
    seed(webui_engine, [JobStatus.STARTED, JobStatus.DONE, JobStatus.STARTED])
    with webui_engine.begin() as conn:
        conn.execute(insert(s.runningjobsmonitor).values(
            jobid=1, harvestname="daily", hosturl="https://h1:8443", isheritrixconsole=True, progress=42.5,
            downloadedfilescount=1234, queuedfilescount=99, totalbyteswritten=5555, elapsedseconds=60,
            alertscount=0, currentprocessedkbpersec=10, activequeuescount=3, tstamp=T0))
        conn.execute(s.jobs.update().where(s.jobs.c.job_id == 3).values(controller="c3", interrupted=True))
        # job 3 no longer harvests alpha.dk, so a search by domain tells the two apart
        alpha = select(s.configurations.c.config_id).join(s.domains, s.domains.c.domain_id == s.configurations.c
                                                          .domain_id).where(s.domains.c.name == "alpha.dk")
        conn.execute(delete(s.job_configs).where(s.job_configs.c.job_id == 3, s.job_configs.c.config_id.in_(alpha)))
    jobs = walk(api, "/api/v1/running-jobs?limit=1")
    assert [job["job_id"] for job in jobs] == [1, 3]
    assert jobs[0]["progress"] == {
        "reported_at": "2026-03-01T00:00:00Z", "percent": 42.5, "downloaded": 1234, "queued": 99,
        "bytes_written": 5555, "kb_per_second": 10, "active_queues": 3, "alerts": 0, "elapsed_seconds": 60,
        "console_url": "https://h1:8443"}
    assert (jobs[0]["harvest"], jobs[0]["channel"], jobs[0]["lost"], jobs[0]["live"]) == (
        "daily", "FOCUSED", False, "/api/v1/jobs/1/live")
    assert jobs[1]["progress"] is None and jobs[1]["lost"] is True and jobs[1]["controller"] == "c3"
    page = login("operator").get("/status/running").get_data(as_text=True)
    assert re.findall(r'<tr data-job="(\d+)"', page) == ["1", "3"] and "42.5 %" in page and "1,234" in page

    assert [job["job_id"] for job in api("archivist", "get", "/api/v1/running-jobs?domain=ALPHA.dk").json["items"]] \
        == [1]
    by_domain = login("operator").get("/status/running?domain=alpha.dk").get_data(as_text=True)
    assert re.findall(r'<tr data-job="(\d+)"', by_domain) == ["1"]
    assert refused_naming(api("archivist", "get", "/api/v1/running-jobs?domain=nosuch.dk"), "domain", "not_found")
    assert refused_naming(api("archivist", "get", "/api/v1/running-jobs?domain=not%20a%20domain"), "domain")
    assert "between 1 and 1000" in refused_naming(api("archivist", "get", "/api/v1/running-jobs?limit=0"), "limit")
    assert refused_naming(api("archivist", "get", "/api/v1/running-jobs?after=x"), "after")
    wrong_shape = encode_cursor(["daily"])
    assert refused_naming(api("archivist", "get", f"/api/v1/running-jobs?after={wrong_shape}"), "after")


# ---------------------------------------------------------------- why harvests wait
def test_why_harvests_wait_as_the_page_shows_it(api, login, webui_engine):
    seed(webui_engine, [JobStatus.DONE])
    with webui_engine.begin() as conn:
        alpha = conn.scalar(select(s.configurations.c.config_id))
        make_selective(conn, 2, "weekly", [alpha])
        make_selective(conn, 3, "monthly", [alpha])
        conn.execute(insert(s.harvest_state), [
            {"harvest_id": 1, "state": "waiting", "reason": "next run at 2026-04-01", "changed_at": T0},
            {"harvest_id": 2, "state": "deactivated", "reason": "its schedule has ended",
             "changed_at": T0 + timedelta(hours=1)},
            {"harvest_id": 3, "state": "waiting", "reason": "its previous run has jobs left", "changed_at": T0}])
    harvests = walk(api, "/api/v1/waiting-harvests?limit=2")
    assert [(h["state"], h["harvest"]) for h in harvests] == [
        ("deactivated", "weekly"), ("waiting", "daily"), ("waiting", "monthly")]
    assert harvests[0] == {"harvest": "weekly", "active": True, "state": "deactivated",
                           "reason": "its schedule has ended", "reason_phrase": None,  # stored without one
                           "since": "2026-03-01T01:00:00Z", "will_run": False}
    assert [h["will_run"] for h in harvests] == [False, True, True]
    page = login("curator").get("/status/waiting").get_data(as_text=True)
    # the ones that will run in the table, the deactivated one only named on the line below it
    table, below = page.split("</table>", 1)
    assert [name for name in re.findall(r">(weekly|daily|monthly)</a>", table)] == ["daily", "monthly"]
    line = re.search(r'<p class="muted will-not-run">(.*?)</p>', below, re.S)
    assert line and "1 harvest will not run again:" in line.group(1)
    assert 'title="deactivated: its schedule has ended">weekly</a>.' in line.group(1)
    # the overview's short list of waiting harvests holds the same two, and not the deactivated one
    home = login("curator").get("/").get_data(as_text=True)
    waiting_table = home.split('<h2>Waiting harvests</h2>', 1)[1].split("</table>", 1)[0]
    assert sorted(re.findall(r">(weekly|daily|monthly)</a>", waiting_table)) == ["daily", "monthly"], waiting_table
    assert refused_naming(api("archivist", "get", f"/api/v1/waiting-harvests?after={encode_cursor([1])}"), "after")
    assert refused_naming(api("archivist", "get", "/api/v1/waiting-harvests?limit=1001"), "limit")


# ---------------------------------------------------------------- channels and the mapping
def test_channels_and_the_mapping_as_the_page_shows_them(api, login, webui_engine):
    for body in ({"type": "selective", "name": "daily_news", "schedule": "Once"},
                 {"type": "selective", "name": "event_x", "schedule": "Once"},
                 {"type": "snapshot", "name": "broad"}):
        assert api("curator", "post", "/api/v1/harvests", json=body).status_code == 201
    with webui_engine.begin() as conn:
        channels = ChannelRepository(conn)
        channels.create("urgent", comments="news that cannot wait")
        harvest_id = conn.scalar(select(s.harvestdefinitions.c.harvest_id)
                                 .where(s.harvestdefinitions.c.name == "daily_news"))
        channels.map_harvest(harvest_id, "URGENT", 1)
    listed = api("operator", "get", "/api/v1/channels").json["items"]
    assert [(c["name"], c["for"], c["default"]) for c in listed] == [
        ("SNAPSHOT", "snapshot", True), ("BROWSER", "selective", False), ("FOCUSED", "selective", True),
        ("URGENT", "selective", False)]
    assert listed[3]["comments"] == "news that cannot wait"
    mapping = walk(api, "/api/v1/channel-mapping?limit=2")
    assert [(m["harvest"], m["type"], m["channel"], m["by_default"]) for m in mapping] == [
        ("broad", "snapshot", "SNAPSHOT", True), ("daily_news", "selective", "URGENT", False),
        ("event_x", "selective", "FOCUSED", True)]
    assert mapping[1]["edition"] == 2  # mapping it was a change of the harvest definition
    page = login("admin").get("/definitions/channels").get_data(as_text=True)
    rows = re.findall(r'name="harvest" value="([^"]+)">\s*<input type="hidden" name="edition" value="(\d+)">'
                      r'.*?</select>', page, re.S)
    assert rows == [("broad", "1"), ("daily_news", "2"), ("event_x", "1")]
    assert re.search(r'value="daily_news".*?<option selected>URGENT</option>', page, re.S)
    assert refused_naming(api("archivist", "get", "/api/v1/channel-mapping?limit=x"), "limit")
    assert refused_naming(api("archivist", "get", f"/api/v1/channel-mapping?after={encode_cursor([7])}"), "after")


# ---------------------------------------------------------------- global crawler traps
def test_global_crawler_traps_as_the_page_and_its_download_show_them(api, login, webui_engine):
    with webui_engine.begin() as conn:
        traps = GlobalCrawlerTrapRepository(conn)
        traps.create("calendar", [r".*/calendar/.*", r".*[?&]year=\d{4}.*"], "endless calendars", True)
        traps.create("sessions", [r".*;jsessionid=.*"], "")
    assert api("curator", "get", "/api/v1/traps").json["items"] == [
        {"name": "calendar", "description": "endless calendars", "active": True, "expression_count": 2},
        {"name": "sessions", "description": "", "active": False, "expression_count": 1}]
    one = api("archivist", "get", "/api/v1/traps/calendar").json
    assert one["expressions"] == [r".*/calendar/.*", r".*[?&]year=\d{4}.*"] and one["expression_count"] == 2
    download = login("archivist").get("/definitions/traps/calendar/download").get_data(as_text=True)
    assert download.splitlines() == one["expressions"]
    missing = api("archivist", "get", "/api/v1/traps/nosuch")
    assert missing.status_code == 404 and "nosuch" in missing.get_json()["error"]["message"]


# ---------------------------------------------------------------- an event harvest's seeds
def test_the_seeds_of_an_event_harvest_configuration_by_configuration(api, webui_engine):
    created = api("curator", "post", "/api/v1/harvests", json={
        "type": "event", "name": "election", "schedule": "Once", "template": "default_orderxml",
        "seeds": ["http://a.dk/valg", "https://www.b.dk/news", "http://b.dk/more", "http://c.dk/"]})
    assert created.status_code == 201, created.get_json()
    added = api("curator", "post", "/api/v1/harvests/election/seeds", json={
        "edition": created.json["edition"], "template": "default_orderxml", "seeds": ["http://a.dk/second"],
        "max_objects": 10})
    assert added.status_code == 201, added.get_json()
    seeds = walk(api, "/api/v1/harvests/election/seeds?limit=2")
    first, limited = "election_default_orderxml_UnlimitedBytes_UnlimitedObjects", \
        "election_default_orderxml_UnlimitedBytes_10Objects"
    assert [(entry["domain"], entry["configuration"]) for entry in seeds] == [
        ("a.dk", limited), ("a.dk", first), ("b.dk", first), ("c.dk", first)]
    assert seeds[0]["seedlists"] == [{"name": limited, "seeds": ["http://a.dk/second"]}]
    assert seeds[1]["seedlists"] == [{"name": first, "seeds": ["http://a.dk/valg"]}]
    assert seeds[2]["seedlists"][0]["seeds"] == ["https://www.b.dk/news", "http://b.dk/more"]
    configurations = api("archivist", "get", "/api/v1/harvests/election").json["configurations"]
    assert [(c["domain"], c["configuration"]) for c in configurations] == \
        [(entry["domain"], entry["configuration"]) for entry in seeds]

    assert api("curator", "post", "/api/v1/harvests", json={"type": "snapshot", "name": "broad"}).status_code == 201
    assert "snapshot" in refused_naming(api("archivist", "get", "/api/v1/harvests/broad/seeds"), "name")
    assert api("archivist", "get", "/api/v1/harvests/nosuch/seeds").status_code == 404
    assert refused_naming(api("archivist", "get", f"/api/v1/harvests/election/seeds?after={encode_cursor(['a.dk'])}"),
                          "after")
    assert refused_naming(api("archivist", "get", "/api/v1/harvests/election/seeds?limit=-1"), "limit")


# ---------------------------------------------------------------- the crawl-log search
def test_the_crawl_log_search_pages_through_what_the_job_page_finds(api, login, webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.DONE, JobStatus.DONE])
    metadata_warc(tmp_path / "archive", 1, CRAWL_LOG, tmp_path)
    by_domain = api("archivist", "get", "/api/v1/jobs/1/crawllog?domain=alpha.dk").json
    assert [(line["line"], line["text"].split()[3]) for line in by_domain["items"]] == [
        (1, "http://www.alpha.dk/"), (2, "http://www.alpha.dk/missing")]
    assert by_domain["next"] is None and by_domain["scanned"] == 4 and by_domain["timed_out"] is False
    assert by_domain["error"] is None
    page = login("archivist").get("/status/jobs/1?domain=alpha.dk").get_data(as_text=True)
    assert "2 matching lines" in page and all(line["text"] in page for line in by_domain["items"])

    every = walk(api, "/api/v1/jobs/1/crawllog?regex=dk&limit=1")
    assert [line["line"] for line in every] == [1, 2, 3, 4]
    assert [line["text"] for line in every] == CRAWL_LOG.splitlines()
    by_regex = api("archivist", "get", r"/api/v1/jobs/1/crawllog?regex=%5E%5CS%2B%5Cs%2B404").json["items"]
    assert [line["line"] for line in by_regex] == [2]

    assert "never closed" in refused_naming(api("archivist", "get", "/api/v1/jobs/1/crawllog?regex=("), "regex")
    assert "not a regular expression" in login("archivist").get("/status/jobs/1?regex=(").get_data(as_text=True)
    too_long = "a" * 201
    assert refused_naming(api("archivist", "get", f"/api/v1/jobs/1/crawllog?regex={too_long}"), "regex")
    assert "lookaround" in refused_naming(api("archivist", "get", "/api/v1/jobs/1/crawllog?regex=a(%3F%3Db)"),
                                          "regex")
    for cursor in ("x", encode_cursor([1]), encode_cursor([-1, 0]), encode_cursor(["1", 0])):
        assert refused_naming(api("archivist", "get", f"/api/v1/jobs/1/crawllog?after={cursor}"), "after")
    assert refused_naming(api("archivist", "get", "/api/v1/jobs/1/crawllog?limit=abc"), "limit")
    not_stored = api("archivist", "get", "/api/v1/jobs/2/crawllog")
    assert not_stored.status_code == 404 and "no metadata WARC" in not_stored.get_json()["error"]["message"]
    assert api("archivist", "get", "/api/v1/jobs/99/crawllog").status_code == 404


def test_a_search_stopped_by_its_deadline_goes_on_from_where_it_stopped(webui_engine, tokens, tmp_path):
    """A crawl.log far longer than one search can read within a 20 ms deadline: the pages stop at the
    deadline, and following their cursors finds every match once, in order (a page that could read nothing,
    on a busy machine, is a 503 that says to search again, which the walk does)."""
    seed(webui_engine, [JobStatus.DONE])
    lines = [f"2026-03-01T10:00:00.000Z   200   {n:8d} http://www.alpha.dk/page/{n} - - text/html #{n:06d} - - -"
             for n in range(1, 30_001)]
    metadata_warc(tmp_path / "archive", 1, "\n".join(lines) + "\n", tmp_path)
    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test-secret",
                                                    "harvestsuite.archive.root": str(tmp_path / "archive"),
                                                    "harvestsuite.webui.crawlLogSearchTimeoutMs": 20})
    client = create_app(settings, webui_engine, {"TESTING": True}).test_client()
    headers = {"Authorization": f"Bearer {tokens['archivist']}"}
    path = r"/api/v1/jobs/1/crawllog?domain=alpha.dk&regex=%23%5Cd%5Cd%5Cd000+&limit=1000"
    found, pages, timed_out, url = [], 0, 0, path
    while url and pages < 2000:
        pages += 1
        answer = client.get(url, headers=headers)
        if answer.status_code == 503:
            assert "search again" in answer.get_json()["error"]["message"]
            continue
        assert answer.status_code == 200, answer.get_json()
        found += [line["line"] for line in answer.json["items"]]
        timed_out += answer.json["timed_out"]
        url = f"{path}&after={answer.json['next']}" if answer.json["next"] else None
    assert url is None, f"still not at the end after {pages} pages"
    assert found == list(range(1000, 30_001, 1000))
    assert timed_out >= 1
