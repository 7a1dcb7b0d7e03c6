"""Steering a running job through the API: ``POST /api/v1/jobs/{id}/control`` and ``/changes``, ``GET
/changes``, and the live view's ``changes``, ``paused`` and ``actions``, on SQLite and PostgreSQL.

The job is STARTED through the scheduler's real intake (tests/webui/test_live_job.py's ``crawl``), and the
crawler's state comes in CrawlProgress messages; the controller's answers are stood in for by
JobChangeRepository.settle, as the scheduler records them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import Engine, update

from harvestdef.db import schema as s
from harvestdef.db.types import utcnow
from harvestdef.model.status import JobStatus
from harvestdef.queues import open_transport
from harvestdef.repositories.jobchanges import JobChange, JobChangeRepository
from harvestdef.repositories.users import UserRepository
from harvestdef.settings import QueueSettings, load_settings
from tests.webui.conftest import PASSWORD, ROLES, csrf_of
from tests.webui.test_live_job import Crawl, start_crawl
from webui import create_app

CONTROL, CHANGES = "/api/v1/jobs/{}/control", "/api/v1/jobs/{}/changes"
# The rules of what a request may say and when are the same code whatever the database: their many cases run
# on SQLite; storing, listing, locking and the pause state run on both databases.
pytestmark = pytest.mark.database("users")
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@pytest.fixture
def crawl(engine: Engine, tmp_path: Path) -> Iterator[Crawl]:
    """A STARTED job of a.dk and københavn.dk, reported through the scheduler's intake."""
    transport = open_transport(QueueSettings(url=f"sqlite:///{tmp_path / 'queue.db'}", environmentName="UNIT"))
    try:
        yield start_crawl(engine, transport)
    finally:
        transport.close()


def role_app(engine: Engine, tmp_path: Path, overrides: dict[str, Any] | None = None) -> Flask:
    """The web UI on ``engine`` (a user of each role, password PASSWORD), under ``overrides`` of its settings."""
    settings = load_settings(environ={}, overrides={
        "harvestsuite.webui.secretKey": "test-secret", "harvestsuite.archive.root": str(tmp_path / "archive"),
        **(overrides or {})})
    return create_app(settings, engine, {"TESTING": True})


@pytest.fixture
def app(engine: Engine, tmp_path: Path) -> Flask:
    return role_app(engine, tmp_path)


@pytest.fixture
def api(app: Flask, engine: Engine) -> Callable[..., Any]:
    """``api("operator", "post", path, json=...)``: a call with that role's API token."""
    with engine.begin() as conn:
        tokens = {role: UserRepository(conn).create_token(role) for role in ROLES}
    client = app.test_client()

    def call(role: str, method: str, path: str, **kwargs: Any) -> Any:
        return getattr(client, method)(path, headers={"Authorization": f"Bearer {tokens[role]}"}, **kwargs)
    return call


def stored(engine: Engine, job_id: int) -> list[JobChange]:
    with engine.connect() as conn:
        return JobChangeRepository(conn).for_job(job_id)


def settle(engine: Engine, job_id: int, version: int, state: str = "applied", reason: str = "",
           at: datetime | None = None) -> None:
    """What the scheduler records when the job's controller answers."""
    with engine.begin() as conn:
        assert JobChangeRepository(conn).settle(job_id, version, state, reason, at or utcnow(), "attempt-1")


def control(api: Callable[..., Any], job_id: int, action: str, role: str = "operator", **extra: Any) -> Any:
    return api(role, "post", CONTROL.format(job_id), json={"action": action, **extra})


def live(api: Callable[..., Any], job_id: int) -> dict[str, Any]:
    response = api("curator", "get", f"/api/v1/jobs/{job_id}/live")
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def available(answer: dict[str, Any]) -> set[str]:
    return {action for action, judged in answer["actions"].items() if judged["available"]}


# ---------------------------------------------------------------- making changes
def test_a_control_action_is_the_jobs_next_change_pending_and_listed(crawl, api, engine):
    crawl.progress(utcnow())
    response = control(api, crawl.job_id, "pause", reason="  the site asked us to  ")
    assert response.status_code == 202, response.get_json()
    change = response.get_json()
    assert {key: change[key] for key in ("version", "kind", "payload", "author", "state", "applied", "reason")} == {
        "version": 1, "kind": "pause", "payload": {"reason": "the site asked us to"}, "author": "operator",
        "state": "pending", "applied": None, "reason": None}
    assert change["created"].endswith("Z") and change["summary"] == "pause: the site asked us to"
    made = api("admin", "post", CHANGES.format(crawl.job_id),
               json={"kind": "reject", "regex": r".*\.iso$", "domain": "xn--kbenhavn-54a.dk"})
    assert made.status_code == 202, made.get_json()
    assert made.get_json()["version"] == 2 and made.get_json()["author"] == "admin"
    assert made.get_json()["payload"] == {"regex": r".*\.iso$", "domain": "københavn.dk"}

    listed = api("archivist", "get", CHANGES.format(crawl.job_id))
    assert listed.status_code == 200
    items = listed.get_json()["items"]
    assert [(item["version"], item["kind"], item["state"]) for item in items] == [(1, "pause", "pending"),
                                                                                 (2, "reject", "pending")]
    assert set(items[0]) == {"version", "kind", "payload", "author", "created", "state", "applied", "reason",
                             "summary", "summary_phrase"}
    assert [(c.version, c.kind, c.author) for c in stored(engine, crawl.job_id)] == [(1, "pause", "operator"),
                                                                                    (2, "reject", "admin")]
    assert live(api, crawl.job_id)["changes"] == items

    settle(engine, crawl.job_id, 2, "refused", "the crawler has no such domain")
    item = api("curator", "get", CHANGES.format(crawl.job_id)).get_json()["items"][1]
    assert item["state"] == "refused" and item["reason"] == "the crawler has no such domain" and item["applied"]


@SQLITE_ONLY
@pytest.mark.parametrize("body, payload", [
    ({"kind": "unreject", "regex": "x"}, {"regex": "x"}),
    ({"kind": "budget", "domain": "a.dk", "max_objects": 50, "max_bytes": -1},
     {"domain": "a.dk", "max_objects": 50, "max_bytes": -1}),
    ({"kind": "delete_queued", "regex": "https?://a\\.dk/calendar/.*"}, {"regex": "https?://a\\.dk/calendar/.*"}),
    ({"kind": "add_uris", "uris": ["http://www.a.dk/new", "www.københavn.dk"]},
     {"uris": ["http://www.a.dk/new", "http://www.xn--kbenhavn-54a.dk"]}),
    ({"kind": "politeness", "delay_factor": 3, "max_per_host": 2}, {"delay_factor": 3.0, "max_per_host": 2}),
])
def test_every_kind_of_change_is_stored_as_normalised(crawl, api, engine, body, payload):
    response = api("operator", "post", CHANGES.format(crawl.job_id), json=body)
    assert response.status_code == 202, response.get_json()
    assert response.get_json()["payload"] == payload and response.get_json()["kind"] == body["kind"]
    assert [change.payload for change in stored(engine, crawl.job_id)] == [payload]


@SQLITE_ONLY
@pytest.mark.parametrize("body, field, words", [
    ({"kind": "reject", "regex": "(a"}, "regex", "the group is never closed"),
    ({"kind": "reject", "regex": "x", "domain": "b.dk"}, "domain", "b.dk is not one of the job's domains (a.dk"),
    ({"kind": "budget", "domain": "a.dk"}, "max_objects", "max_objects or max_bytes"),
    ({"kind": "budget", "domain": "a.dk", "max_bytes": True}, "max_bytes", "not a boolean"),
    ({"kind": "add_uris", "uris": ["http://a.dk/", "http://b.dk/"]}, "uris[1]", "in none of the job's domains"),
    ({"kind": "politeness", "min_delay_ms": 9, "max_delay_ms": 8}, "min_delay_ms", "9 > 8"),
    ({"kind": "politeness", "speed": 9}, "speed", "not a field of a politeness change"),
    ({"kind": "pause"}, "kind", "control action: POST {\"action\": \"pause\"} to /api/v1/jobs/"),
    ({"kind": "teleport"}, "kind", "one of reject, unreject, budget, delete_queued, add_uris, politeness"),
    ({"regex": "x"}, "kind", "kind is required"),
])
def test_a_refused_change_is_a_400_naming_its_field_and_nothing_is_stored(crawl, api, engine, body, field, words):
    response = api("operator", "post", CHANGES.format(crawl.job_id), json=body)
    assert response.status_code == 400, response.get_json()
    error = response.get_json()["error"]
    assert error["code"] == "invalid" and error["field"] == field and words in error["message"], error
    assert stored(engine, crawl.job_id) == []


@SQLITE_ONLY
@pytest.mark.parametrize("body, words", [
    ({"action": "shutdown"}, "action is not one: one of pause, resume, checkpoint, stop, fail"),
    ({}, "action is required: one of pause, resume, checkpoint, stop, fail"),
    ({"action": ["pause"]}, "one of pause, resume, checkpoint, stop, fail"),
    ({"action": "pause", "reason": "x" * 501}, "at most 500 characters"),
    ({"action": "pause", "force": True}, "not a field of a pause change"),
])
def test_an_unknown_action_or_a_bad_field_is_a_400_naming_the_allowed(crawl, api, engine, body, words):
    crawl.progress(utcnow())
    response = api("operator", "post", CONTROL.format(crawl.job_id), json=body)
    assert response.status_code == 400
    assert words in response.get_json()["error"]["message"]
    assert response.get_json()["error"]["field"] in ("action", "reason", "force")
    assert stored(engine, crawl.job_id) == []


@SQLITE_ONLY
def test_an_unknown_job_is_a_404_for_each_route(crawl, api):
    assert control(api, 999_999, "stop").status_code == 404
    assert api("operator", "post", CHANGES.format(999_999), json={"kind": "delete_queued", "regex": "x"}
               ).status_code == 404
    missing = api("curator", "get", CHANGES.format(999_999))
    assert missing.status_code == 404 and missing.get_json()["error"]["code"] == "not_found"
    assert api("operator", "post", CONTROL.format(crawl.job_id), data="pause").status_code == 400


@pytest.mark.parametrize("status", [JobStatus.DONE, JobStatus.FAILED, JobStatus.SUBMITTED])
def test_a_job_that_is_not_started_takes_no_change_naming_its_status(crawl, api, engine, status):
    with engine.begin() as conn:
        conn.execute(update(s.jobs).where(s.jobs.c.job_id == crawl.job_id).values(status=int(status)))
    stopping = control(api, crawl.job_id, "stop")
    assert stopping.status_code == 409
    assert stopping.get_json()["error"]["message"] == \
        f"job {crawl.job_id} is {status.name}, not STARTED: changes go to a running job only"
    change = api("operator", "post", CHANGES.format(crawl.job_id), json={"kind": "delete_queued", "regex": "x"})
    assert change.status_code == 409 and status.name in change.get_json()["error"]["message"]
    assert stored(engine, crawl.job_id) == []
    assert all(not judged["available"] and status.name in judged["why_not"]
               for judged in live(api, crawl.job_id)["actions"].values())


# ---------------------------------------------------------------- which control action, when
@SQLITE_ONLY
@pytest.mark.parametrize("crawler, allowed", [
    ("CRAWLER_ACTIVE", {"pause", "checkpoint", "stop", "fail"}),
    ("CRAWLER_EMPTY", {"pause", "checkpoint", "stop", "fail"}),
    ("CRAWLER_PAUSING", {"resume", "stop", "fail"}),
    ("CRAWLER_PAUSED", {"resume", "checkpoint", "stop", "fail"}),
    ("PRE_CRAWL", {"stop", "fail"}),
    ("CRAWLING_FINISHED", {"stop", "fail"}),
    (None, {"stop", "fail"}),
])
def test_what_the_crawlers_state_allows(crawl, api, engine, crawler, allowed):
    if crawler is not None:
        crawl.progress(utcnow(), status=crawler)
    assert available(live(api, crawl.job_id)) == allowed
    for action in ("pause", "resume", "checkpoint"):
        if action in allowed:
            continue
        response = control(api, crawl.job_id, action)
        assert response.status_code == 409, action
        error = response.get_json()["error"]
        assert error["field"] == "action"
        assert error["message"].startswith(f"job {crawl.job_id} cannot be ")
        assert (crawler or "no progress report") in error["message"], error
    assert stored(engine, crawl.job_id) == []
    for action in sorted(allowed - {"stop", "fail"}):
        assert control(api, crawl.job_id, action).status_code == 202, action


def test_a_second_pause_while_one_is_pending_names_it_and_a_resume_may_follow(crawl, api, engine):
    crawl.progress(utcnow())
    assert control(api, crawl.job_id, "pause").status_code == 202
    again = control(api, crawl.job_id, "pause", role="admin")
    assert again.status_code == 409
    message = again.get_json()["error"]["message"]
    assert message.startswith(f"job {crawl.job_id} cannot be paused now: a pause is pending already (change 1, "
                              f"made by operator at ")
    # the pending pause will have paused the crawler: resume and checkpoint it may
    assert available(live(api, crawl.job_id)) == {"resume", "checkpoint", "stop", "fail"}
    assert control(api, crawl.job_id, "checkpoint").status_code == 202
    assert control(api, crawl.job_id, "checkpoint").get_json()["error"]["message"].endswith(
        "the controller applies it shortly")
    assert control(api, crawl.job_id, "resume").status_code == 202
    assert [change.version for change in stored(engine, crawl.job_id)] == [1, 2, 3]


def test_an_applied_pause_the_crawler_has_not_reported_yet_counts(crawl, api, engine):
    crawl.progress(utcnow() - timedelta(seconds=30))
    assert control(api, crawl.job_id, "pause").status_code == 202
    settle(engine, crawl.job_id, 1)
    answer = live(api, crawl.job_id)
    assert available(answer) == {"resume", "checkpoint", "stop", "fail"}
    refused = control(api, crawl.job_id, "pause")
    assert refused.status_code == 409 and "the crawler was paused by change 1 at" in \
        refused.get_json()["error"]["message"]
    # a newer report is the crawler's own word
    crawl.progress(utcnow() + timedelta(seconds=5), status="CRAWLER_PAUSED")
    assert available(live(api, crawl.job_id)) == {"resume", "checkpoint", "stop", "fail"}


@SQLITE_ONLY
def test_a_pending_stop_ends_the_crawl_for_every_action_but_fail(crawl, api, engine):
    crawl.progress(utcnow())
    assert control(api, crawl.job_id, "stop").status_code == 202
    for action in ("pause", "checkpoint", "stop"):
        refused = control(api, crawl.job_id, action)
        assert refused.status_code == 409 and "(change 1" in refused.get_json()["error"]["message"], action
    assert available(live(api, crawl.job_id)) == {"fail"}
    assert control(api, crawl.job_id, "fail").status_code == 202
    assert control(api, crawl.job_id, "stop").status_code == 409
    # live changes still go to the job: the crawl runs until the controller stops it
    assert api("operator", "post", CHANGES.format(crawl.job_id), json={"kind": "delete_queued", "regex": "x"}
               ).status_code == 202
    settle(engine, crawl.job_id, 1, "refused", "the crawl had ended")
    assert "stop" not in available(live(api, crawl.job_id))  # the fail is still pending


# ---------------------------------------------------------------- paused
def test_paused_is_the_newest_applied_pause_without_a_resume_after_it(crawl, api, engine):
    crawl.progress(utcnow() - timedelta(seconds=60))
    assert live(api, crawl.job_id)["paused"] is None
    control(api, crawl.job_id, "pause")
    assert live(api, crawl.job_id)["paused"] is None, "a pending pause has not paused anything yet"
    applied = utcnow() - timedelta(seconds=10)
    settle(engine, crawl.job_id, 1, at=applied)
    assert live(api, crawl.job_id)["paused"] == {"since": applied.isoformat().replace("+00:00", "Z"),
                                                 "by": "operator"}
    control(api, crawl.job_id, "resume", role="admin")
    assert live(api, crawl.job_id)["paused"] is not None, "until the resume is applied"
    settle(engine, crawl.job_id, 2)
    assert live(api, crawl.job_id)["paused"] is None
    control(api, crawl.job_id, "pause", role="admin")
    settle(engine, crawl.job_id, 3, "refused", "the crawler is finishing")
    assert live(api, crawl.job_id)["paused"] is None


@SQLITE_ONLY
def test_a_crawler_that_paused_itself_is_paused_by_the_crawler_since_its_first_such_report(crawl, api):
    start = utcnow() - timedelta(minutes=5)
    crawl.progress(start)
    crawl.progress(start + timedelta(seconds=60), status="CRAWLER_PAUSED")
    crawl.progress(start + timedelta(seconds=120), status="CRAWLER_PAUSED")
    paused = live(api, crawl.job_id)["paused"]
    assert paused["by"] == "the crawler"
    assert paused["since"] == (start + timedelta(seconds=60)).isoformat().replace("+00:00", "Z")
    crawl.progress(start + timedelta(seconds=180))
    assert live(api, crawl.job_id)["paused"] is None


def test_a_crawler_reported_running_after_an_applied_pause_is_not_paused(crawl, api, engine):
    crawl.progress(utcnow() - timedelta(seconds=60))
    control(api, crawl.job_id, "pause")
    settle(engine, crawl.job_id, 1, at=utcnow() - timedelta(seconds=30))
    assert live(api, crawl.job_id)["paused"]["by"] == "operator"
    crawl.progress(utcnow(), status="CRAWLER_PAUSED")
    assert live(api, crawl.job_id)["paused"]["by"] == "operator", "the pause explains the crawler's state"
    crawl.progress(utcnow() + timedelta(seconds=1))  # resumed on a real Heritrix's console, say
    assert live(api, crawl.job_id)["paused"] is None
    assert "pause" in available(live(api, crawl.job_id))


# ---------------------------------------------------------------- who may
@SQLITE_ONLY
@pytest.mark.parametrize("role, status", [("operator", 202), ("admin", 202), ("curator", 403), ("archivist", 403)])
def test_operators_and_admins_steer_and_every_role_reads(crawl, api, engine, role, status):
    crawl.progress(utcnow())
    made = control(api, crawl.job_id, "checkpoint", role=role)
    assert made.status_code == status
    changed = api(role, "post", CHANGES.format(crawl.job_id), json={"kind": "delete_queued", "regex": "x"})
    assert changed.status_code == status
    if status == 403:
        assert made.get_json()["error"]["code"] == "forbidden"
        assert "operators and admins act on jobs" in made.get_json()["error"]["message"]
        assert stored(engine, crawl.job_id) == []
    else:
        assert [change.author for change in stored(engine, crawl.job_id)] == [role, role]
    assert api(role, "get", CHANGES.format(crawl.job_id)).status_code == 200


@SQLITE_ONLY
def test_a_session_needs_its_csrf_token_and_the_author_is_its_user(crawl, app, engine):
    crawl.progress(utcnow())
    client = app.test_client()
    assert client.post("/login", data={"name": "operator", "password": PASSWORD,
                                       "csrf_token": csrf_of(client)}).status_code == 302
    token = csrf_of(client, "/")
    assert client.post(CONTROL.format(crawl.job_id), json={"action": "pause"}).status_code == 403
    assert stored(engine, crawl.job_id) == []
    made = client.post(CONTROL.format(crawl.job_id), json={"action": "pause"}, headers={"X-CSRF-Token": token})
    assert made.status_code == 202 and made.get_json()["author"] == "operator"
    assert client.get(CHANGES.format(crawl.job_id)).status_code == 200


@SQLITE_ONLY
def test_the_description_names_the_routes_roles_bodies_and_answers(crawl, api):
    document = api("curator", "get", "/api/v1/openapi.json").get_json()
    control_op = document["paths"]["/jobs/{job_id}/control"]["post"]
    assert control_op["x-roles"] == ["admin", "operator"] and control_op["x-permission"] == "operate"
    assert control_op["requestBody"]["content"]["application/json"]["schema"]["properties"]["action"]["enum"] == \
        ["pause", "resume", "checkpoint", "stop", "fail"]
    assert {"202", "400", "403", "404", "409"} <= set(control_op["responses"])
    change_op = document["paths"]["/jobs/{job_id}/changes"]["post"]
    kinds = [option["properties"]["kind"] for option in
             change_op["requestBody"]["content"]["application/json"]["schema"]["oneOf"]]
    assert kinds[0] == {"enum": ["reject", "unreject"]} and {"const": "politeness"} in kinds
    assert change_op["responses"]["202"]["content"]["application/json"]["schema"]["properties"]["state"]["enum"] == \
        ["pending", "applied", "refused"]
    listing = document["paths"]["/jobs/{job_id}/changes"]["get"]
    assert listing["x-roles"] == ["admin", "archivist", "curator", "operator"]
    live_schema = document["paths"]["/jobs/{job_id}/live"]["get"]["responses"]["200"]["content"][
        "application/json"]["schema"]
    assert {"changes", "paused", "actions"} <= set(live_schema["required"])
    assert "network error" in live_schema["properties"]["failed"]["description"]
    assert live_schema["properties"]["status_counts"]["type"] == ["object", "null"]

