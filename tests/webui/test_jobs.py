"""Jobs through the API and the harvest status pages: filters and keyset paging, one job in full with its
archive files and crawl-log search, restart/reject/unreject singly and in bulk, and who may do them."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, insert, select

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus, StopReason
from harvestdef.repositories.jobs import JobRepository, new_job_row
from harvester.postprocess.metadata import MetadataInfo, write_metadata_warc
from tests.scheduler.factories import make_domain, make_selective

T0 = datetime(2026, 3, 1, tzinfo=UTC)
CRAWL_LOG = (
    "2026-03-01T10:00:00.000Z   200       1234 http://www.alpha.dk/ - - text/html #001 - - -\n"
    "2026-03-01T10:00:01.000Z   404        100 http://www.alpha.dk/missing L http://www.alpha.dk/ text/html #002\n"
    "2026-03-01T10:00:02.000Z   200       5678 https://beta.dk/page.html L http://www.alpha.dk/ text/html #003\n"
    "2026-03-01T10:00:03.000Z   200         42 https://notalpha.dk/x L - text/plain #004\n"
)


def seed(engine: Engine, statuses: list[JobStatus], harvest: str = "daily", harvest_id: int = 1) -> list[int]:
    """A selective harvest on alpha.dk and beta.dk with one job per status; returns the job ids."""
    with engine.begin() as conn:
        _, alpha = make_domain(conn, "alpha.dk")
        _, beta = make_domain(conn, "beta.dk")
        make_selective(conn, harvest_id, harvest, [alpha, beta])
        rows = []
        for index, status in enumerate(statuses, start=1):
            row = new_job_row(job_id=index, harvest_id=harvest_id, channel="FOCUSED", snapshot=False,
                              orderxml="default_orderxml", harvest_num=index, creationdate=T0 + timedelta(days=index),
                              orderxmldoc="<beans>template</beans>", seedlist="http://www.alpha.dk\nhttps://beta.dk",
                              num_configs=2, forcemaxcount=5000)
            row["status"] = int(status)
            row["harvest_errors"] = "crawl ended abnormally" if status == JobStatus.FAILED else None
            rows.append(row)
        JobRepository(conn).insert(rows, {row["job_id"]: [alpha, beta] for row in rows})
    return [row["job_id"] for row in rows]


def status_of(engine: Engine, job_id: int) -> JobStatus:
    with engine.connect() as conn:
        return JobStatus(conn.scalar(select(s.jobs.c.status).where(s.jobs.c.job_id == job_id)))


def job_count(engine: Engine) -> int:
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(s.jobs))


# ---------------------------------------------------------------- list, filters, paging
def test_the_job_list_walks_every_page_once_and_filters(api, webui_engine):
    statuses = [JobStatus.DONE, JobStatus.FAILED, JobStatus.NEW, JobStatus.DONE, JobStatus.FAILED_REJECTED,
                JobStatus.DONE, JobStatus.STARTED]
    seed(webui_engine, statuses)
    seen, cursor = [], None
    while True:
        path = "/api/v1/jobs?limit=3" + (f"&after={cursor}" if cursor else "")
        answer = api("archivist", "get", path)
        assert answer.status_code == 200
        seen += [item["job_id"] for item in answer.json["items"]]
        cursor = answer.json["next"]
        if cursor is None:
            break
    assert seen == [7, 6, 5, 4, 3, 2, 1]
    done = api("curator", "get", "/api/v1/jobs?status=DONE").json["items"]
    assert [job["job_id"] for job in done] == [6, 4, 1]
    assert {job["status"] for job in done} == {"DONE"} and done[0]["harvest"] == "daily"
    both = api("curator", "get", "/api/v1/jobs?status=FAILED,FAILED_REJECTED&harvest=daily").json["items"]
    assert [job["job_id"] for job in both] == [5, 2]
    ranged = api("curator", "get", "/api/v1/jobs?from_id=2&to_id=4").json["items"]
    assert [job["job_id"] for job in ranged] == [4, 3, 2]
    dated = api("curator", "get", "/api/v1/jobs?since=2026-03-05&until=2026-03-06T12:00:00Z").json["items"]
    assert dated == api("curator", "get", "/api/v1/jobs?since=2026-03-05&until=2026-03-06").json["items"]
    assert [job["job_id"] for job in dated] == [5, 4]
    assert dated[0]["creationdate"] == "2026-03-06T00:00:00Z"


def test_the_job_list_refuses_bad_filters(api, webui_engine):
    seed(webui_engine, [JobStatus.DONE])
    bad = api("curator", "get", "/api/v1/jobs?status=FINISHED")
    assert bad.status_code == 400 and bad.json["error"]["field"] == "status"
    assert api("curator", "get", "/api/v1/jobs?harvest=nosuch").status_code == 404
    assert api("curator", "get", "/api/v1/jobs?after=garbage!").json["error"]["field"] == "after"


def test_the_status_page_pages_and_filters(app, login, webui_engine):
    app.extensions["harvestsuite"].settings = _with_page_size(app, 2)
    seed(webui_engine, [JobStatus.DONE, JobStatus.FAILED, JobStatus.DONE])
    client = login("archivist")
    first = client.get("/status/").get_data(as_text=True)
    assert 'href="/status/jobs/3"' in first and 'href="/status/jobs/2"' in first
    assert 'href="/status/jobs/1"' not in first
    following = re.search(r'href="([^"]*after=[^"]*)"', first).group(1).replace("&amp;", "&")
    second = client.get(following).get_data(as_text=True)
    assert 'href="/status/jobs/1"' in second and 'href="/status/jobs/3"' not in second
    failed = client.get("/status/?status=FAILED").get_data(as_text=True)
    assert 'href="/status/jobs/2"' in failed and 'href="/status/jobs/3"' not in failed
    # an archivist sees no action buttons
    assert 'value="restart"' not in first
    assert 'value="restart"' in login("operator").get("/status/").get_data(as_text=True)


def _with_page_size(app, size: int):
    from dataclasses import replace
    settings = app.extensions["harvestsuite"].settings
    return replace(settings, webui=replace(settings.webui, pageSize=size))


# ---------------------------------------------------------------- one job
def test_job_detail_shows_limits_configurations_seeds_errors_and_archive_files(api, login, webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.FAILED])
    directory = tmp_path / "archive" / "1" / "1"
    (directory / "cdxj").mkdir(parents=True)
    (directory / "1-metadata-1.warc.gz").write_bytes(b"metadata bytes")
    (directory / "cdxj" / "a.warc.gz.cdxj").write_bytes(b"cdx")
    (directory / ".x.tmp-1-ab").write_bytes(b"temporary")
    job = api("archivist", "get", "/api/v1/jobs/1").json
    assert job["status"] == "FAILED" and job["harvest"] == "daily"
    assert job["limits"] == {"max_bytes": -1, "max_objects": 5000, "max_running_time": -1}
    assert [c["domain"] for c in job["configurations"]] == ["alpha.dk", "beta.dk"]
    assert job["seeds"] == ["http://www.alpha.dk", "https://beta.dk"]
    assert job["template"] == {"name": "default_orderxml", "document": "<beans>template</beans>"}
    assert job["errors"]["harvest"] == "crawl ended abnormally"
    assert job["files"] == [{"name": "1-metadata-1.warc.gz", "size": 14}, {"name": "cdxj/a.warc.gz.cdxj", "size": 3}]
    assert api("archivist", "get", "/api/v1/jobs/99").status_code == 404

    client = login("archivist")
    page = client.get("/status/jobs/1").get_data(as_text=True)
    assert "alpha.dk" in page and "crawl ended abnormally" in page and "cdxj/a.warc.gz.cdxj" in page
    download = client.get("/status/jobs/1/files/cdxj/a.warc.gz.cdxj")
    assert download.status_code == 200 and download.data == b"cdx"
    assert client.get("/status/jobs/1/files/../../secret").status_code == 404
    assert client.get("/status/jobs/1/files/nothing.txt").status_code == 404


def test_job_detail_shows_what_each_configuration_harvested_once_reported(api, login, webui_engine):
    seed(webui_engine, [JobStatus.DONE, JobStatus.STARTED])
    with webui_engine.begin() as conn:
        alpha = conn.scalar(select(s.configurations.c.config_id).join(
            s.domains, s.domains.c.domain_id == s.configurations.c.domain_id).where(s.domains.c.name == "alpha.dk"))
        conn.execute(insert(s.historyinfo).values(
            stopreason=int(StopReason.OBJECT_LIMIT), objectcount=5000, bytecount=12_345_678, config_id=alpha,
            harvest_id=1, job_id=1, harvest_time=T0, novel_objects=4990, novel_bytes=12_000_000,
            duplicate_objects=10, duplicate_bytes=345_678))
    configurations = {c["domain"]: c for c in api("archivist", "get", "/api/v1/jobs/1").json["configurations"]}
    assert configurations["alpha.dk"]["result"] == {
        "objects": 5000, "bytes": 12_345_678, "stop_reason": "OBJECT_LIMIT", "novel_objects": 4990,
        "novel_bytes": 12_000_000, "duplicate_objects": 10, "duplicate_bytes": 345_678, "nothing_harvested": False,
        "nothing_harvested_reason": None, "nothing_harvested_fetch_status": None, "nothing_harvested_seed": None,
        "nothing_harvested_other_seeds_failed": None}
    assert configurations["beta.dk"]["result"] is None  # a DONE job that reported nothing of it
    assert all(c["result"] is None for c in api("archivist", "get", "/api/v1/jobs/2").json["configurations"])

    client = login("archivist")
    page = re.sub(r"\s+", " ", client.get("/status/jobs/1").get_data(as_text=True))
    assert "Harvested: 5,000 objects, 12.3 MB, of which 10 objects" in page
    assert re.search(r"alpha\.dk.*?5,000.*?12\.3 MB.*?>10<.*?OBJECT_LIMIT", page, re.S)
    running = client.get("/status/jobs/2").get_data(as_text=True)
    assert running.count("not reported yet") == 2 and "Harvested:" not in running


def test_crawl_log_search_reads_the_metadata_warc(login, webui_engine, tmp_path, monkeypatch):
    seed(webui_engine, [JobStatus.DONE])
    log = tmp_path / "crawl.log"
    log.write_text(CRAWL_LOG)
    info = MetadataInfo(job_id=1, harvest_id=1, harvest_num=1, organization="netarkivet.dk",
                        heritrix_version="3.4.0", software_version="test", hostname="h", ip="127.0.0.1")
    write_metadata_warc(tmp_path / "archive" / "1" / "1" / "1-metadata-1.warc.gz", info, [], [], [log], [])
    client = login("curator")
    by_domain = client.get("/status/jobs/1?domain=alpha.dk").get_data(as_text=True)
    assert "http://www.alpha.dk/missing" in by_domain and "#001" in by_domain
    assert "https://beta.dk/page.html" not in by_domain and "notalpha.dk" not in by_domain
    assert "2 matching lines" in by_domain
    by_regex = client.get("/status/jobs/1?regex=%5E%5CS%2B%5Cs%2B404").get_data(as_text=True)
    assert "1 matching line." in by_regex and "/missing" in by_regex
    broken = client.get("/status/jobs/1?regex=(").get_data(as_text=True)
    assert "not a regular expression" in broken
    monkeypatch.setattr("webui.status.jobs.MAX_CRAWL_LOG_MATCHES", 1)
    capped = client.get("/status/jobs/1?regex=dk").get_data(as_text=True)
    assert "1 matching line, stopped at 1." in capped and "#001" in capped and "#002" not in capped


# ---------------------------------------------------------------- actions
def test_restart_makes_a_new_job_and_resubmits_the_old(api, webui_engine):
    seed(webui_engine, [JobStatus.FAILED, JobStatus.DONE])
    answer = api("operator", "post", "/api/v1/jobs/1/restart")
    assert answer.status_code == 201
    new_id = answer.json["job_id"]
    assert new_id == 3 and answer.json["status"] == "NEW" and answer.json["continuationof"] == 1
    assert status_of(webui_engine, 1) == JobStatus.RESUBMITTED
    assert status_of(webui_engine, new_id) == JobStatus.NEW
    with webui_engine.connect() as conn:
        assert JobRepository(conn).get(1).resubmitted_as_job == new_id
        assert len(JobRepository(conn).configurations(new_id)) == 2
        actors = set(conn.scalars(select(s.audit_log.c.actor).where(s.audit_log.c.tablename == "jobs",
                                                                    s.audit_log.c.row_key.in_(["1", "3"]))))
    assert "operator" in actors
    again = api("operator", "post", "/api/v1/jobs/2/restart")
    assert again.status_code == 400 and "only a FAILED job" in again.json["error"]["message"]


def test_restart_is_refused_while_the_controller_still_crawls_the_job(api, login, webui_engine):
    seed(webui_engine, [JobStatus.FAILED])
    with webui_engine.begin() as conn:
        conn.execute(insert(s.harvesters).values(
            controller_id="c1", host="h1", channels="FOCUSED", accepted=True, current_job_id=1,
            current_attempt_id=None, last_heartbeat=datetime.now(UTC)))
    answer = api("operator", "post", "/api/v1/jobs/1/restart")
    assert answer.status_code == 409 and answer.json["error"]["code"] == "conflict"
    assert "its controller c1 still reported crawling it" in answer.json["error"]["message"]
    assert status_of(webui_engine, 1) == JobStatus.FAILED and job_count(webui_engine) == 1
    client = login("operator")
    page = client.post("/status/jobs/actions", data={"action": "restart", "job_id": "1", "csrf_token": client.csrf,
                                                     "next": "/status/jobs/1"}, follow_redirects=True)
    text = page.get_data(as_text=True)
    assert "Job 1: job 1 cannot be restarted yet: its controller c1 still reported crawling it" in text
    assert status_of(webui_engine, 1) == JobStatus.FAILED and job_count(webui_engine) == 1
    with webui_engine.begin() as conn:  # the controller has moved on: now the restart goes through
        conn.execute(s.harvesters.update().values(current_job_id=None))
    assert api("operator", "post", "/api/v1/jobs/1/restart").status_code == 201


@pytest.mark.parametrize("action", ["restart", "reject", "unreject"])
def test_an_archivist_may_not_act_on_jobs(api, webui_engine, action):
    seed(webui_engine, [JobStatus.FAILED, JobStatus.FAILED_REJECTED])
    job_id = 2 if action == "unreject" else 1
    answer = api("archivist", "post", f"/api/v1/jobs/{job_id}/{action}")
    assert answer.status_code == 403 and answer.json["error"]["code"] == "forbidden"
    assert status_of(webui_engine, 1) == JobStatus.FAILED
    assert status_of(webui_engine, 2) == JobStatus.FAILED_REJECTED
    assert job_count(webui_engine) == 2


def test_reject_and_unreject(api, webui_engine):
    seed(webui_engine, [JobStatus.FAILED, JobStatus.DONE])
    rejected = api("operator", "post", "/api/v1/jobs/1/reject")
    assert rejected.status_code == 200 and rejected.json["status"] == "FAILED_REJECTED"
    assert status_of(webui_engine, 1) == JobStatus.FAILED_REJECTED
    assert api("admin", "post", "/api/v1/jobs/1/unreject").json["status"] == "FAILED"
    assert status_of(webui_engine, 1) == JobStatus.FAILED
    refused = api("operator", "post", "/api/v1/jobs/2/reject")
    assert refused.status_code == 409 and status_of(webui_engine, 2) == JobStatus.DONE


def test_bulk_actions_on_the_status_page(login, webui_engine):
    seed(webui_engine, [JobStatus.FAILED, JobStatus.FAILED, JobStatus.FAILED, JobStatus.DONE])
    client = login("operator")
    answer = client.post("/status/jobs/actions", data={"csrf_token": client.csrf, "action": "reject",
                                                       "job_id": ["1", "2", "4"]}, follow_redirects=True)
    page = answer.get_data(as_text=True)
    assert answer.status_code == 200 and "done for jobs 1, 2" in page and "Job 4:" in page
    assert [status_of(webui_engine, i) for i in (1, 2, 3, 4)] == [
        JobStatus.FAILED_REJECTED, JobStatus.FAILED_REJECTED, JobStatus.FAILED, JobStatus.DONE]
    client.post("/status/jobs/actions", data={"csrf_token": client.csrf, "action": "unreject", "job_id": ["2"]})
    client.post("/status/jobs/actions", data={"csrf_token": client.csrf, "action": "restart", "job_id": ["2", "3"]})
    assert status_of(webui_engine, 2) == JobStatus.RESUBMITTED and status_of(webui_engine, 3) == JobStatus.RESUBMITTED
    assert [status_of(webui_engine, i) for i in (5, 6)] == [JobStatus.NEW, JobStatus.NEW]


def test_bulk_actions_with_a_forged_csrf_token_or_by_an_archivist_change_nothing(login, webui_engine):
    seed(webui_engine, [JobStatus.FAILED, JobStatus.FAILED])
    operator = login("operator")
    forged = operator.post("/status/jobs/actions", data={"csrf_token": "forged", "action": "restart",
                                                         "job_id": ["1", "2"]})
    assert forged.status_code == 403
    archivist = login("archivist")
    refused = archivist.post("/status/jobs/actions", data={"csrf_token": archivist.csrf, "action": "reject",
                                                           "job_id": ["1"]})
    assert refused.status_code == 403
    assert [status_of(webui_engine, i) for i in (1, 2)] == [JobStatus.FAILED, JobStatus.FAILED]
    assert job_count(webui_engine) == 2


def test_running_and_waiting_pages(login, webui_engine):
    seed(webui_engine, [JobStatus.STARTED])
    with webui_engine.begin() as conn:
        conn.execute(insert(s.runningjobsmonitor).values(
            jobid=1, harvestname="daily", hosturl="http://h1:8443", progress=42.5, downloadedfilescount=1234,
            queuedfilescount=99, totalbyteswritten=5555, elapsedseconds=60, alertscount=0,
            currentprocessedkbpersec=10, activequeuescount=3, tstamp=T0))
        conn.execute(insert(s.harvest_state).values(harvest_id=1, state="waiting",
                                                    reason="next run at 2026-04-01 <soon>", changed_at=T0))
    client = login("curator")
    running = client.get("/status/running").get_data(as_text=True)
    assert "42.5 %" in running and "1,234" in running and "5.6 KB" in running
    detail = client.get("/status/jobs/1").get_data(as_text=True)
    assert "42.5 %" in detail and "1,234" in detail and 'data-live-url="/api/v1/jobs/1/live"' in detail
    waiting = client.get("/status/waiting").get_data(as_text=True)
    assert "next run at 2026-04-01 &lt;soon&gt;" in waiting


def test_files_outside_the_job_are_never_served(login, webui_engine, tmp_path: Path):
    seed(webui_engine, [JobStatus.DONE])
    (tmp_path / "archive" / "1").mkdir(parents=True)
    (tmp_path / "archive" / "1" / "other.txt").write_text("not this job's")
    client = login("curator")
    assert client.get("/status/jobs/1/files/%2E%2E/other.txt").status_code == 404
    assert client.get("/status/jobs/99/files/x").status_code == 404


def test_the_openapi_description_lists_the_job_history_and_harvester_routes(api, login, webui_engine):
    paths = api("curator", "get", "/api/v1/openapi.json").json["paths"]
    assert set(paths["/jobs/{job_id}/restart"]) == {"post"} and "get" in paths["/jobs"]
    assert "get" in paths["/domains/{name}/history"] and "get" in paths["/harvests/{name}/statistics"]
    assert "get" in paths["/harvesters"]
    client = login("curator")
    assert client.get("/status/jobs/99").status_code == 404
    assert client.get("/history/domains/nosuch.dk").status_code == 404
    assert client.get("/history/harvests/nosuch").status_code == 404
