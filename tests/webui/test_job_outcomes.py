"""What an operator did to a job is not called an error: a stop or fail an operator asked for, which the job's
controller reports among its harvest errors (harvestdef.livechanges.end_description), is the API's
``stopped_by`` (who, which change, when) and a neutral line on the job page and in the job list; the errors
that remain, real failures, stay errors."""

from __future__ import annotations

import re
from datetime import timedelta

from sqlalchemy import Engine, update

from harvestdef.db import schema as s
from harvestdef.livechanges import end_description
from harvestdef.model.status import JobStatus
from harvestdef.repositories.jobchanges import JobChangeRepository
from tests.webui.test_jobs import T0, seed

STOPPED_AT = T0 + timedelta(hours=10, minutes=42)


def end_job(engine: Engine, job_id: int, kind: str, author: str, *other_errors: str) -> int:
    """The job's crawl ended by ``kind`` (stop or fail) of ``author``, applied by its controller, which
    reported its words among the job's harvest errors as the harvester does; returns the change's version."""
    with engine.begin() as conn:
        changes = JobChangeRepository(conn)
        changes.add(job_id, "pause", {}, author, STOPPED_AT - timedelta(minutes=5))
        change = changes.add(job_id, kind, {}, author, STOPPED_AT - timedelta(minutes=1))
        assert changes.settle(job_id, change.version, "applied", "", STOPPED_AT, "")
        words = "; ".join([end_description(kind, author, change.version), *other_errors])
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == job_id).values(
            harvest_errors=words, harvest_error_details=words))
    return change.version


def test_a_stop_by_an_operator_is_stopped_by_in_the_api_and_not_an_error(api, webui_engine):
    seed(webui_engine, [JobStatus.DONE, JobStatus.FAILED, JobStatus.DONE])
    version = end_job(webui_engine, 1, "stop", "admin")
    end_job(webui_engine, 2, "fail", "ops2", "the crawler did not answer 5 status polls in a row")

    one = api("archivist", "get", "/api/v1/jobs/1").json
    assert one["stopped_by"] == {"action": "stop", "user": "admin", "change": version, "at": "2026-03-01T10:42:00Z"}
    assert one["errors"]["harvest"] == "" and one["errors"]["harvest_details"] == ""

    two = api("archivist", "get", "/api/v1/jobs/2").json
    assert (two["stopped_by"]["action"], two["stopped_by"]["user"]) == ("fail", "ops2")
    assert two["errors"]["harvest"] == "the crawler did not answer 5 status polls in a row", "a real failure stays"

    three = api("archivist", "get", "/api/v1/jobs/3").json
    assert three["stopped_by"] is None and three["errors"]["harvest"] is None

    rows = {row["job_id"]: row for row in api("archivist", "get", "/api/v1/jobs").json["items"]}
    assert rows[1]["stopped_by"] == one["stopped_by"] and rows[1]["harvest_errors"] == ""
    assert rows[2]["harvest_errors"] == "the crawler did not answer 5 status polls in a row"
    assert rows[3]["stopped_by"] is None and rows[3]["harvest_errors"] is None


def test_a_stop_asked_for_but_refused_is_no_operators_end(api, webui_engine):
    """Only the stop its controller carried out ended the crawl: a refused one leaves the errors as they are."""
    seed(webui_engine, [JobStatus.FAILED])
    with webui_engine.begin() as conn:
        changes = JobChangeRepository(conn)
        change = changes.add(1, "stop", {}, "admin", STOPPED_AT)
        assert changes.settle(1, change.version, "refused", "the job's crawl ended first", STOPPED_AT, "")
    job = api("archivist", "get", "/api/v1/jobs/1").json
    assert job["stopped_by"] is None and job["errors"]["harvest"] == "crawl ended abnormally"


def test_the_openapi_description_names_stopped_by(api):
    paths = api("archivist", "get", "/api/v1/openapi.json").json["paths"]
    detail = paths["/jobs/{job_id}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert set(detail["properties"]["stopped_by"]["properties"]) == {"action", "user", "change", "at"}
    assert "stopped_by" in detail["required"]
    listed = paths["/jobs"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert "stopped_by" in listed["properties"]["items"]["items"]["required"]


def test_the_job_page_and_list_say_who_stopped_it_once_and_show_no_error(login, webui_engine):
    seed(webui_engine, [JobStatus.DONE, JobStatus.FAILED])
    end_job(webui_engine, 1, "stop", "admin")
    client = login("archivist")

    page = re.sub(r"\s+", " ", client.get("/status/jobs/1").get_data(as_text=True))
    assert 'data-stopped-by="admin"' in page
    assert page.count("Stopped by admin at ") == 1 and "(change 2)." in page
    assert "error-message" not in page and "stopped by admin (change" not in page

    failed = re.sub(r"\s+", " ", client.get("/status/jobs/2").get_data(as_text=True))
    assert "<strong>Harvest:</strong> crawl ended abnormally" in failed
    assert failed.count("crawl ended abnormally") == 1, "the details that repeat the summary are not shown again"

    listed = re.sub(r"\s+", " ", client.get("/status/").get_data(as_text=True))
    ended = re.search(r'<tr class="job-ended" data-stopped-by="admin">(.*?)</tr>', listed)
    assert ended and '<span class="status">stopped</span> by admin at ' in ended.group(1)
    errors = re.findall(r'<tr class="job-errors">(.*?)</tr>', listed)
    assert len(errors) == 1 and "crawl ended abnormally" in errors[0], "only job 2's real failure"

    danish = login("archivist")
    danish.set_cookie("harvestsuite_language", "da")
    da_page = re.sub(r"\s+", " ", danish.get("/status/jobs/1").get_data(as_text=True))
    assert "Stoppet af admin " in da_page and "(ændring 2)." in da_page
    da_list = re.sub(r"\s+", " ", danish.get("/status/").get_data(as_text=True))
    assert '<span class="status">stoppet</span> af admin ' in da_list
