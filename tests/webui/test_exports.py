"""CSV exports of domain search results, the job list and a harvest's statistics: streamed in keyset
pages (the batch is made tiny here so every export crosses page boundaries), checked before the first
line, and open to the roles that export. Every test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from harvestdef.model.status import JobStatus
from tests.webui.conftest import database_with_users
from tests.webui.test_history import record_runs
from tests.webui.test_jobs import seed

pytestmark = pytest.mark.database("users")


@pytest.fixture
def webui_engine(database_url: str) -> Iterator[Engine]:
    """The harvest database of the web UI on both databases (the conftest's is SQLite only)."""
    yield from database_with_users(database_url)


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("webui.api.exports.EXPORT_BATCH", 2)


def rows_of(answer) -> list[dict[str, str]]:
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert answer.mimetype == "text/csv" and answer.is_streamed
    return list(csv.DictReader(io.StringIO(answer.get_data(as_text=True))))


def test_domain_search_results_export_every_match_by_name(api, login):
    names = ["alpha.dk", "beta.dk", "gamma.dk", "delta.dk", "københavn.dk", "example.com"]
    assert api("curator", "post", "/api/v1/domains", json={"names": names}).status_code == 201
    edition = api("curator", "get", "/api/v1/domains/beta.dk").json["edition"]
    api("curator", "patch", "/api/v1/domains/beta.dk", json={"edition": edition, "comments": "=HYPERLINK(1)"})
    rows = rows_of(api("archivist", "get", "/api/v1/export/domains.csv", query_string={"q": "*.dk"}))
    assert [row["name"] for row in rows] == ["alpha.dk", "beta.dk", "delta.dk", "gamma.dk", "københavn.dk"]
    assert rows[4]["punycode"] == "xn--kbenhavn-54a.dk" and rows[0]["active"] == "True"
    assert rows[1]["comments"] == "'=HYPERLINK(1)", "a formula is exported as text"
    by_comment = rows_of(api("curator", "get", "/api/v1/export/domains.csv?q=HYPERLINK&field=comments"))
    assert [row["name"] for row in by_comment] == ["beta.dk"]
    page = login("curator").get("/definitions/domains?q=*.dk").get_data(as_text=True)
    assert "/api/v1/export/domains.csv?q=*.dk&amp;field=name" in page
    bad = api("archivist", "get", "/api/v1/export/domains.csv?field=seeds")
    assert bad.status_code == 400 and bad.json["error"]["field"] == "field"
    refused = api("operator", "get", "/api/v1/export/domains.csv")
    assert refused.status_code == 403 and refused.json["error"]["code"] == "forbidden"


def test_the_job_list_exports_with_its_filters_newest_first(api, login, webui_engine):
    seed(webui_engine, [JobStatus.FAILED, JobStatus.DONE, JobStatus.FAILED, JobStatus.DONE, JobStatus.FAILED])
    rows = rows_of(api("archivist", "get", "/api/v1/export/jobs.csv"))
    assert [row["job_id"] for row in rows] == ["5", "4", "3", "2", "1"]
    assert rows[0]["harvest"] == "daily" and rows[0]["status"] == "FAILED"
    assert rows[0]["harvest_errors"] == "crawl ended abnormally" and rows[1]["harvest_errors"] == ""
    failed = rows_of(api("curator", "get", "/api/v1/export/jobs.csv?status=FAILED&harvest=daily&to_id=4"))
    assert [row["job_id"] for row in failed] == ["3", "1"]
    page = login("archivist").get("/status/?status=FAILED").get_data(as_text=True)
    assert "/api/v1/export/jobs.csv?status=FAILED" in page
    bad = api("archivist", "get", "/api/v1/export/jobs.csv?status=LOST")
    assert bad.status_code == 400 and bad.json["error"]["field"] == "status"
    missing = api("archivist", "get", "/api/v1/export/jobs.csv?harvest=nosuch")
    assert missing.status_code == 404 and missing.json["error"]["field"] == "harvest"


def test_harvest_statistics_export_every_run_oldest_first(api, login, webui_engine):
    record_runs(webui_engine)
    rows = rows_of(api("archivist", "get", "/api/v1/export/harvests/daily/statistics.csv"))
    assert [row["harvest_num"] for row in rows] == ["1", "2", "3"]
    assert rows[0]["bytes"] == "12000" and rows[0]["stop_object_limit"] == "1" and rows[2]["jobs_failed"] == "1"
    page_export = rows_of(login("archivist").get("/history/harvests/daily/statistics.csv"))
    assert page_export == rows
    missing = api("archivist", "get", "/api/v1/export/harvests/nosuch/statistics.csv")
    assert missing.status_code == 404 and missing.json["error"]["code"] == "not_found"


def test_the_exports_are_described_with_the_export_permission(api):
    paths = api("archivist", "get", "/api/v1/openapi.json").json["paths"]
    for path in ("/export/domains.csv", "/export/jobs.csv", "/export/harvests/{name}/statistics.csv"):
        assert paths[path]["get"]["x-permission"] == "export", path
