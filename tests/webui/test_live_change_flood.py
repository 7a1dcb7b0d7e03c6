# ruff: noqa: F811 - the tests take the fixtures imported from test_live_changes_api as their arguments
"""A flood of live changes to a running job, on SQLite and PostgreSQL: the bound on pending live changes
(harvestsuite.liveChanges.maxPending, answered 429 naming it, control actions never held back), and the
change list paged in the API (GET /changes), the live view and the job page (harvestsuite.liveChanges.pageSize).

The job is STARTED through the scheduler's real intake (tests/webui/test_live_job.py's ``crawl``); the
controller's answers are stood in for by JobChangeRepository.settle, as the scheduler records them."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import Engine

from harvestdef.db.types import utcnow
from harvestdef.repositories.jobchanges import JobChangeRepository
from tests.webui.conftest import PASSWORD, csrf_of
from tests.webui.test_live_changes_api import api, crawl, role_app  # noqa: F401 - fixtures

pytestmark = pytest.mark.database("users")

CONTROL, CHANGES, LIVE = "/api/v1/jobs/{}/control", "/api/v1/jobs/{}/changes", "/api/v1/jobs/{}/live"
MAX_PENDING, PAGE_SIZE = 5, 4


@pytest.fixture
def app(engine: Engine, tmp_path: Path) -> Flask:
    return role_app(engine, tmp_path, {"harvestsuite.liveChanges.maxPending": MAX_PENDING,
                                      "harvestsuite.liveChanges.pageSize": PAGE_SIZE})



def reject(api: Callable[..., Any], job_id: int, number: int) -> Any:
    return api("operator", "post", CHANGES.format(job_id), json={"kind": "reject", "regex": f".*/flood-{number}/.*"})


def settle(engine: Engine, job_id: int, version: int) -> None:
    with engine.begin() as conn:
        assert JobChangeRepository(conn).settle(job_id, version, "applied", "", utcnow(), "attempt-1")


def test_pending_live_changes_are_bounded_with_the_reason_and_control_actions_still_go_through(crawl, api, engine):
    crawl.progress(utcnow())
    for number in range(MAX_PENDING):
        assert reject(api, crawl.job_id, number).status_code == 202
    refused = reject(api, crawl.job_id, MAX_PENDING)
    assert refused.status_code == 429, refused.get_json()
    error = refused.get_json()["error"]
    assert error["code"] == "too_many" and error["field"] == "kind"
    assert f"{MAX_PENDING} live changes pending" in error["message"]
    assert f"harvestsuite.liveChanges.maxPending allows ({MAX_PENDING})" in error["message"]
    with engine.connect() as conn:
        assert len(JobChangeRepository(conn).for_job(crawl.job_id)) == MAX_PENDING, "the refused one is not stored"
    # a pause is never held back by the flood
    paused = api("operator", "post", CONTROL.format(crawl.job_id), json={"action": "pause"})
    assert paused.status_code == 202, paused.get_json()
    # the API's description says so
    described = api("curator", "get", "/api/v1/openapi.json").get_json()["paths"]["/jobs/{job_id}/changes"]
    assert "429" in described["post"]["responses"] and "429" not in described["get"]["responses"]
    assert {"next", "total", "pending", "previous_before"} <= set(
        described["get"]["responses"]["200"]["content"]["application/json"]["schema"]["properties"])
    # once the controller has applied one, there is room for one more
    settle(engine, crawl.job_id, 1)
    assert reject(api, crawl.job_id, MAX_PENDING).status_code == 202
    assert reject(api, crawl.job_id, MAX_PENDING + 1).status_code == 429


def test_the_page_form_shows_the_bound_beside_the_form(crawl, app, api, engine):
    crawl.progress(utcnow())
    for number in range(MAX_PENDING):
        assert reject(api, crawl.job_id, number).status_code == 202
    client = app.test_client()
    response = client.post("/login", data={"name": "operator", "password": PASSWORD, "csrf_token": csrf_of(client)})
    assert response.status_code == 302
    page = f"/status/jobs/{crawl.job_id}"
    answer = client.post(f"{page}/changes", data={"kind": "reject", "regex": ".*/one-more/.*",
                                                  "csrf_token": csrf_of(client, page)})
    assert answer.status_code == 429
    text = answer.get_data(as_text=True)
    assert re.search(r'role="alert"[^>]*>[^<]*harvestsuite\.liveChanges\.maxPending allows \(5\)', text), text[-3000:]


def test_the_change_list_is_paged_in_the_api(crawl, api, engine):
    crawl.progress(utcnow())
    with engine.begin() as conn:
        for number in range(10):
            JobChangeRepository(conn).add(crawl.job_id, "reject", {"regex": f"r{number}"}, "ops1", utcnow())
    settle(engine, crawl.job_id, 3)
    first = api("archivist", "get", CHANGES.format(crawl.job_id)).get_json()
    assert [item["version"] for item in first["items"]] == [1, 2, 3, 4]
    assert (first["total"], first["pending"], first["next"], first["previous_before"]) == (10, 9, "4", None)
    second = api("archivist", "get", CHANGES.format(crawl.job_id), query_string={"after": 4}).get_json()
    assert [item["version"] for item in second["items"]] == [5, 6, 7, 8] and second["next"] == "8"
    last = api("archivist", "get", CHANGES.format(crawl.job_id), query_string={"after": 8}).get_json()
    assert [item["version"] for item in last["items"]] == [9, 10] and last["next"] is None
    newest = api("archivist", "get", CHANGES.format(crawl.job_id), query_string={"before": 0, "limit": 3}).get_json()
    assert [item["version"] for item in newest["items"]] == [8, 9, 10] and newest["previous_before"] == 8
    older = api("archivist", "get", CHANGES.format(crawl.job_id), query_string={"before": 8}).get_json()
    assert [item["version"] for item in older["items"]] == [4, 5, 6, 7]
    for query, field in (({"limit": PAGE_SIZE + 1}, "limit"), ({"limit": 0}, "limit"), ({"after": -1}, "after"),
                         ({"after": 1, "before": 5}, "before")):
        refused = api("archivist", "get", CHANGES.format(crawl.job_id), query_string=query)
        assert refused.status_code == 400 and refused.get_json()["error"]["field"] == field, (query, refused.get_json())
    assert "pageSize" in api("archivist", "get", CHANGES.format(crawl.job_id),
                             query_string={"limit": 99}).get_json()["error"]["message"]

    # the live view carries the newest page only, the total and the oldest pending versions
    live = api("curator", "get", LIVE.format(crawl.job_id)).get_json()
    assert [item["version"] for item in live["changes"]] == [7, 8, 9, 10]
    assert live["changes_total"] == 10 and live["changes_pending"] == [1, 2, 4, 5, 6, 7, 8, 9, 10]


def test_the_job_page_shows_the_newest_page_of_changes_and_links_the_older_ones(crawl, app, engine):
    crawl.progress(utcnow())
    with engine.begin() as conn:
        for number in range(10):
            JobChangeRepository(conn).add(crawl.job_id, "reject", {"regex": f"r{number}"}, "ops1", utcnow())
    client = app.test_client()
    client.post("/login", data={"name": "archivist", "password": PASSWORD, "csrf_token": csrf_of(client)})
    page = client.get(f"/status/jobs/{crawl.job_id}").get_data(as_text=True)
    assert re.findall(r'<tr data-version="(\d+)"', page) == ["7", "8", "9", "10"]
    assert "Changes 7 to 10 of 10." in page and '<tbody data-live="changes">' in page
    older = re.search(r'href="([^"]+)" data-changes-page="older"', page).group(1).replace("&amp;", "&")
    assert "changes_before=7" in older
    page = client.get(older).get_data(as_text=True)
    assert re.findall(r'<tr data-version="(\d+)"', page) == ["3", "4", "5", "6"]
    # an older page is not refilled by the page's script with the newest changes
    assert 'data-live="changes"' not in page and 'data-changes-page="newest"' in page
    assert "changes_before=3" in re.search(r'href="([^"]+)" data-changes-page="older"', page).group(1)
