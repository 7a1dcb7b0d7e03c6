"""What was asked for is not called an error: a stop or fail an operator asked for, which the job's
controller reports as its crawl's end (CrawlStatus.crawl_end, kept in job_ends), is the API's ``stopped_by``
(who, which change, when) and a neutral line on the job page and in the job list; a pause or resume is a
neutral line of its own, and so is a budget of the whole crawl reached (``budget_reached``). The CSV export
and the webhooks say them in fields of their own. The errors that remain, real failures, stay errors."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import timedelta

from sqlalchemy import Engine, select, update

from harvestdef.db import schema as s
from harvestdef.db.engine import write_transaction
from harvestdef.model.status import JobStatus
from harvestdef.repositories.jobchanges import JobChangeRepository
from harvestdef.repositories.jobends import JobEnd, JobEndRepository
from harvestdef.repositories.webhookevents import WebhookEvents
from tests.webui.test_jobs import T0, seed
from tests.webui.test_webhooks import GOOD

STOPPED_AT = T0 + timedelta(hours=10, minutes=42)


def end_job(engine: Engine, job_id: int, kind: str, author: str, *other_errors: str) -> int:
    """The job's crawl ended by ``kind`` (stop or fail) of ``author``, applied by its controller, which
    reported it as its crawl's end and ``other_errors`` as its harvest errors, as the scheduler stores such a
    report; returns the change's version."""
    with engine.begin() as conn:
        changes = JobChangeRepository(conn)
        changes.add(job_id, "pause", {}, author, STOPPED_AT - timedelta(minutes=5))
        change = changes.add(job_id, kind, {}, author, STOPPED_AT - timedelta(minutes=1))
        assert changes.settle(job_id, change.version, "applied", "", STOPPED_AT, "")
        JobEndRepository(conn).record(JobEnd(job_id, kind, author, change.version, None, STOPPED_AT))
        words = "; ".join(other_errors) or None
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == job_id).values(
            harvest_errors=words, harvest_error_details=words))
    return change.version


def test_a_stop_by_an_operator_is_stopped_by_in_the_api_and_not_an_error(api, webui_engine):
    seed(webui_engine, [JobStatus.DONE, JobStatus.FAILED, JobStatus.DONE])
    version = end_job(webui_engine, 1, "stop", "admin")
    end_job(webui_engine, 2, "fail", "ops2", "the crawler did not answer 5 status polls in a row")

    one = api("archivist", "get", "/api/v1/jobs/1").json
    assert one["stopped_by"] == {"action": "stop", "user": "admin", "change": version, "at": "2026-03-01T10:42:00Z"}
    assert one["errors"]["harvest"] is None and one["errors"]["harvest_details"] is None
    assert one["budget_reached"] is None

    two = api("archivist", "get", "/api/v1/jobs/2").json
    assert (two["stopped_by"]["action"], two["stopped_by"]["user"]) == ("fail", "ops2")
    assert two["errors"]["harvest"] == "the crawler did not answer 5 status polls in a row", "a real failure stays"

    three = api("archivist", "get", "/api/v1/jobs/3").json
    assert three["stopped_by"] is None and three["errors"]["harvest"] is None

    rows = {row["job_id"]: row for row in api("archivist", "get", "/api/v1/jobs").json["items"]}
    assert rows[1]["stopped_by"] == one["stopped_by"] and rows[1]["harvest_errors"] is None
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


def text_of(html: str) -> str:
    """A page's words, its markup left out and its white space made single spaces."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


def budget_and_pauses(engine: Engine) -> None:
    """Job 1 paused by admin and resumed by ops2, then ended at its budget of 500 objects; job 2 ended at its
    time limit of 3600 seconds (a DONE job each, no errors)."""
    with engine.begin() as conn:
        changes = JobChangeRepository(conn)
        pause = changes.add(1, "pause", {}, "admin", STOPPED_AT - timedelta(minutes=30))
        assert changes.settle(1, pause.version, "applied", "", STOPPED_AT - timedelta(minutes=29), "")
        resume = changes.add(1, "resume", {}, "ops2", STOPPED_AT - timedelta(minutes=10))
        assert changes.settle(1, resume.version, "applied", "", STOPPED_AT - timedelta(minutes=9), "")
        JobEndRepository(conn).record(JobEnd(1, "max_objects", "", None, 500, STOPPED_AT))
        JobEndRepository(conn).record(JobEnd(2, "max_running_time", "", None, 3600, STOPPED_AT))


def test_a_pause_a_resume_and_a_budget_reached_are_neutral_lines_in_both_languages(api, login, webui_engine):
    seed(webui_engine, [JobStatus.DONE, JobStatus.DONE])
    budget_and_pauses(webui_engine)
    job = api("archivist", "get", "/api/v1/jobs/1").json
    assert job["budget_reached"] == {"budget": "max_objects", "limit": 500, "at": "2026-03-01T10:42:00Z"}
    assert job["operator_actions"] == [
        {"action": "pause", "user": "admin", "change": 1, "at": "2026-03-01T10:13:00Z"},
        {"action": "resume", "user": "ops2", "change": 2, "at": "2026-03-01T10:33:00Z"}]
    assert job["stopped_by"] is None and job["errors"]["harvest"] is None

    client = login("archivist")
    html = client.get("/status/jobs/1").get_data(as_text=True)
    page = text_of(html)
    assert "Paused by admin at 2026-03-01 10:13:00 UTC (change 1)." in page
    assert "Resumed by ops2 at 2026-03-01 10:33:00 UTC (change 2)." in page
    assert "Stopped at its budget of 500 objects at 2026-03-01 10:42:00 UTC." in page
    assert "error-message" not in html and "<h2>Errors</h2>" not in html
    timed = text_of(client.get("/status/jobs/2").get_data(as_text=True))
    assert "Stopped at its time limit of 3,600 seconds at 2026-03-01 10:42:00 UTC." in timed
    listed = re.sub(r"\s+", " ", client.get("/status/").get_data(as_text=True))
    budget = re.search(r'<tr class="job-ended" data-budget-reached="max_objects">(.*?)</tr>', listed)
    assert budget and '<span class="status">stopped</span> at its budget of 500 objects' in budget.group(1)
    assert 'class="job-errors"' not in listed and "status FAILED" not in listed

    danish = login("archivist")
    danish.set_cookie("harvestsuite_language", "da")
    da_page = text_of(danish.get("/status/jobs/1").get_data(as_text=True))
    assert "Sat på pause af admin 2026-03-01 10:13:00 UTC (ændring 1)." in da_page
    assert "Genoptaget af ops2 2026-03-01 10:33:00 UTC (ændring 2)." in da_page
    assert "Stoppet ved sit budget på 500 objekter 2026-03-01 10:42:00 UTC." in da_page
    da_timed = text_of(danish.get("/status/jobs/2").get_data(as_text=True))
    assert re.search(r"Stoppet ved sin tidsgrænse på 3\S600 sekunder 2026-03-01 10:42:00 UTC\.", da_timed)


def test_the_export_and_the_webhooks_give_an_operators_end_fields_of_their_own(api, webui_engine):
    seed(webui_engine, [JobStatus.DONE, JobStatus.FAILED, JobStatus.DONE])
    version = end_job(webui_engine, 2, "fail", "ops2", "the crawler did not answer 5 status polls in a row")
    with webui_engine.begin() as conn:
        JobEndRepository(conn).record(JobEnd(3, "max_bytes", "", None, 1_000_000, STOPPED_AT))
    rows = {row["job_id"]: row for row in csv.DictReader(io.StringIO(
        api("archivist", "get", "/api/v1/export/jobs.csv").get_data(as_text=True)))}
    two, three = rows["2"], rows["3"]
    assert (two["stopped_by"], two["stop_action"], two["stop_change"]) == ("ops2", "fail", str(version))
    assert rows["2"]["stopped_at"] == "2026-03-01T10:42:00Z"
    assert rows["2"]["harvest_errors"] == "the crawler did not answer 5 status polls in a row"
    assert (three["budget_reached"], three["budget_limit"], three["stopped_by"]) == ("max_bytes", "1000000", "")
    assert rows["1"]["stopped_by"] == rows["1"]["budget_reached"] == rows["1"]["harvest_errors"] == ""

    api("admin", "post", "/api/v1/webhooks", json=GOOD)
    with write_transaction(webui_engine) as conn:
        assert WebhookEvents(conn).job_failed(2, "the crawl was ended as failed by ops2 (change 2)") == 1
        (document,) = conn.scalars(select(s.webhook_deliveries.c.document))
    job = json.loads(document)["job"]
    assert job["stopped_by"] == {"action": "fail", "user": "ops2", "change": version, "at": "2026-03-01T10:42:00Z"}
    assert job["budget_reached"] is None
    assert job["harvest_errors"] == "the crawler did not answer 5 status polls in a row", "the fail is no error"
