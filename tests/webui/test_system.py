"""The System page, the overview (home) page and GET /api/v1/harvesters: heartbeats, queue depths per
channel from a real embedded queue (and "unknown" with the reason when it cannot be opened), scheduler
liveness."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy import Engine, insert

from harvestdef.db import schema as s
from harvestdef.model.status import JobStatus
from harvestdef.queues import QueueNames, open_transport
from harvestdef.settings import load_settings
from tests.webui.test_jobs import seed
from webui import create_app


def _settings(tmp_path: Path, queue_url: str):
    return load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test-secret",
                                                "harvestsuite.archive.root": str(tmp_path / "archive"),
                                                "harvestsuite.queue.url": queue_url})


@pytest.fixture
def app(webui_engine: Engine, tmp_path: Path) -> Flask:
    """The web UI with its embedded queue in tmp_path (never the working directory)."""
    return create_app(_settings(tmp_path, f"sqlite:///{tmp_path / 'queue.db'}"), webui_engine, {"TESTING": True})


def add_harvesters(engine: Engine) -> None:
    now = datetime.now(UTC)
    with engine.begin() as conn:
        conn.execute(insert(s.harvesters), [{**row, "pause_reason": row.get("pause_reason")} for row in [
            {"controller_id": "ctl-1", "host": "crawler1.example.org", "channels": "FOCUSED,SNAPSHOT",
             "accepted": True, "free_disk_bytes": 123_400_000_000, "current_job_id": 1,
             "current_job_state": "crawling", "last_heartbeat": now, "paused": False, "heartbeat_interval": 30.0},
            {"controller_id": "ctl-2", "host": "crawler2.example.org", "channels": "SNAPSHOT", "accepted": True,
             "free_disk_bytes": None, "current_job_id": None, "current_job_state": None,
             "paused": True, "pause_reason": "disk <full>", "last_heartbeat": now - timedelta(hours=2),
             "heartbeat_interval": None},
        ]])


def test_the_harvesters_api_lists_heartbeats_with_paging(api, webui_engine):
    add_harvesters(webui_engine)
    first = api("archivist", "get", "/api/v1/harvesters?limit=1").json
    (ctl1,) = first["items"]
    assert ctl1["controller_id"] == "ctl-1" and ctl1["channels"] == ["FOCUSED", "SNAPSHOT"]
    assert ctl1["current_job_id"] == 1 and ctl1["free_disk_bytes"] == 123_400_000_000 and not ctl1["is_lost"]
    assert ctl1["last_heartbeat"].endswith("Z")
    # lost after lostAfterHeartbeats (10) of the interval it states
    assert ctl1["heartbeat_interval"] == 30.0 and ctl1["lost_after_seconds"] == 300
    assert 0 <= ctl1["heartbeat_age_seconds"] < 60
    rest = api("archivist", "get", f"/api/v1/harvesters?after={first['next']}").json
    (ctl2,) = rest["items"]
    assert ctl2["paused"] and ctl2["pause_reason"] == "disk <full>" and ctl2["is_lost"]
    # one that states no interval is judged by the heartbeatInterval setting (30 s)
    assert ctl2["heartbeat_interval"] is None and ctl2["lost_after_seconds"] == 300
    assert 7200 <= ctl2["heartbeat_age_seconds"] < 7300
    assert rest["next"] is None


def test_the_system_page_shows_harvesters_queues_and_the_scheduler(app, login, webui_engine, tmp_path):
    seed(webui_engine, [JobStatus.STARTED])
    add_harvesters(webui_engine)
    with webui_engine.begin() as conn:
        conn.execute(insert(s.scheduler_lock).values(
            name="scheduler", holder="sched-host:4242", acquired_at=datetime.now(UTC),
            expires_at=datetime.now(UTC) + timedelta(minutes=1)))
    settings = app.extensions["harvestsuite"].settings
    with open_transport(settings.queue) as transport:
        for body in (b"one", b"two"):
            transport.publish(QueueNames(settings.queue.environmentName).jobs("FOCUSED"), body, {})
    page = login("curator").get("/system").get_data(as_text=True)
    assert "crawler1.example.org" in page and "123.4 GB" in page and 'href="/status/jobs/1"' in page
    assert "paused: disk &lt;full&gt;" in page
    # the lost controller's row stands out and says how old its last heartbeat is; the other's does not
    assert '<tr id="controller-ctl-2" class="lost"><td>ctl-2' in page and "(2 h ago)" in page and ">lost</span>" in page
    assert '<tr id="controller-ctl-1"><td>ctl-1' in page
    assert "<tr><td>FOCUSED</td><td class=\"number\">2</td></tr>" in page
    assert "<tr><td>SNAPSHOT</td><td class=\"number\">0</td></tr>" in page
    assert "sched-host:4242" in page and "valid until" in page


def test_queue_depths_are_unknown_with_the_reason_when_the_queue_cannot_be_opened(webui_engine, tmp_path):
    (tmp_path / "a-file").write_text("a queue file cannot live under a regular file")
    app = create_app(_settings(tmp_path, f"sqlite:///{tmp_path / 'a-file' / 'q.db'}"), webui_engine,
                     {"TESTING": True})
    client = app.test_client()
    from tests.webui.conftest import PASSWORD, csrf_of
    client.post("/login", data={"name": "admin", "password": PASSWORD, "csrf_token": csrf_of(client)})
    page = client.get("/system").get_data(as_text=True)
    assert "Queue depths unknown" in page
    assert "<tr><td>FOCUSED</td><td class=\"number\">unknown</td></tr>" in page


def test_the_overview_shows_what_needs_attention(login, webui_engine):
    seed(webui_engine, [JobStatus.FAILED, JobStatus.STARTED, JobStatus.DONE])
    add_harvesters(webui_engine)
    with webui_engine.begin() as conn:
        conn.execute(insert(s.harvest_state).values(harvest_id=1, state="waiting", reason="no configurations left",
                                                    changed_at=datetime.now(UTC)))
    page = login("archivist").get("/").get_data(as_text=True)
    assert "1 running" in page and "1 failed" in page
    assert "crawl ended abnormally" in page and 'href="/status/jobs/1"' in page and 'href="/status/jobs/2"' in page
    assert "no configurations left" in page and "crawler2.example.org" in page


def test_the_system_section_answers_at_its_trailing_slash_as_the_others_do(login):
    client = login("curator")
    for path in ("/system/", "/system"):
        page = client.get(path)
        assert page.status_code == 200 and "<h1>System</h1>" in page.get_data(as_text=True), path
    page = client.get("/system/").get_data(as_text=True)
    assert '<a href="/system/" class="current">System</a>' in page
    # every user finds their tokens here, admins the users too
    assert '<a href="/system/users/curator/tokens">Your API tokens</a>' in page and 'href="/system/users">' not in page
    assert '<a href="/system/users">Users</a>: add users' in login("admin").get("/system/").get_data(as_text=True)


def test_every_list_answers_with_or_without_its_trailing_slash_and_a_trimmed_job_address_finds_the_job_list(login):
    client = login("curator")
    for path in ("/definitions/harvests", "/definitions/harvests/", "/definitions/schedules/", "/history",
                 "/system/users/", "/system/webhooks/"):
        answer = client.get(path, follow_redirects=True)
        assert answer.status_code in (200, 403), (path, answer.status_code)
        assert "Not found" not in answer.get_data(as_text=True), path
    trimmed = client.get("/status/jobs?status=FAILED")
    assert trimmed.status_code == 308 and trimmed.headers["Location"].endswith("/status/?status=FAILED")
    assert client.get("/status/jobs/", follow_redirects=True).status_code == 200


def test_an_unknown_address_and_a_wrong_method_answer_a_page_of_the_web_ui_in_its_language(login):
    client = login("operator")
    missing = client.get("/system/nosuch")
    text = missing.get_data(as_text=True)
    assert missing.status_code == 404 and missing.mimetype == "text/html"
    assert '<header class="top">' in text and "<h1>Not found</h1>" in text
    assert "There is no page at /system/nosuch" in text and "Werkzeug" not in text
    wrong = client.post("/system/", data={"csrf_token": client.csrf})
    assert wrong.status_code == 405 and set(wrong.headers["Allow"].split(", ")) >= {"GET"}
    assert "/system/ does not take a POST request" in wrong.get_data(as_text=True)
    client.post("/language", data={"csrf_token": client.csrf, "language": "da", "next": "/"})
    danish = client.get("/status/nosuch").get_data(as_text=True)
    assert "<h1>Ikke fundet</h1>" in danish and "Der er ingen side på /status/nosuch" in danish
    # the JSON API keeps its JSON errors
    api_missing = client.get("/api/v1/nosuch")
    assert api_missing.status_code == 404 and api_missing.get_json()["error"]["code"] == "not_found"
    api_wrong = client.put("/api/v1/jobs", headers={"X-CSRF-Token": client.csrf}, json={})
    assert api_wrong.status_code == 405 and api_wrong.get_json()["error"]["code"] == "method_not_allowed"


def test_every_page_links_an_icon_served_without_a_login(app, login):
    anonymous = app.test_client()
    icon = anonymous.get("/static/favicon.svg")
    assert icon.status_code == 200 and icon.mimetype == "image/svg+xml" and b"<svg" in icon.data
    link = '<link rel="icon" type="image/svg+xml" href="/static/favicon.svg">'
    assert link in anonymous.get("/login").get_data(as_text=True)
    assert link in login("archivist").get("/system/users/archivist/tokens").get_data(as_text=True)
