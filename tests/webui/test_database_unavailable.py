"""A harvest database that does not answer for a while: reads with a token go on (they write nothing on
the request path), a route that must write answers 503 saying why, and the token's use is recorded once
the database answers again. On SQLite (another connection holds the write lock) and on PostgreSQL (an
EXCLUSIVE lock on the tables the requests would write; reads go on beside it), with a lock timeout of 1 s."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from harvestdef.db import schema as s
from harvestdef.db.engine import open_engine
from harvestdef.db.init import init_database
from harvestdef.repositories.users import UserRepository
from harvestdef.settings import load_settings
from tests.dblocks import writers_held
from webui import create_app
from webui.tokenuse import TokenUseRecorder

TOKEN_USE_INTERVAL = 1


@pytest.fixture
def web(database_url: str, tmp_path: Path):
    settings = load_settings(environ={}, overrides={
        "harvestsuite.database.url": database_url, "harvestsuite.database.lockTimeout": 1,
        "harvestsuite.webui.secretKey": "test-secret", "harvestsuite.archive.root": str(tmp_path / "archive"),
        "harvestsuite.webui.tokenUseInterval": TOKEN_USE_INTERVAL})
    engine = open_engine(database_url, lock_timeout=1)
    init_database(engine)
    with engine.begin() as conn:
        UserRepository(conn).create("curator", "curator", password="correct horse battery")
        token = UserRepository(conn).create_token("curator")
    app = create_app(settings, engine, {"TESTING": True})
    try:
        yield app, engine, {"Authorization": f"Bearer {token}"}
    finally:
        app.extensions["harvestsuite"].token_uses.close()
        engine.dispose()


def _last_used(engine: Engine):
    with engine.connect() as conn:
        return conn.scalar(select(s.api_tokens.c.last_used))


def test_a_read_with_a_token_answers_under_a_held_lock_and_its_use_is_recorded_afterwards(web):
    app, engine, headers = web
    client = app.test_client()
    with writers_held(engine, "api_tokens", "domains"):
        answer = client.get("/api/v1/domains", headers=headers)
        assert answer.status_code == 200, answer.get_data(as_text=True)
        assert _last_used(engine) is None
    deadline = time.monotonic() + 30
    while _last_used(engine) is None:
        assert time.monotonic() < deadline, "the token's use was never recorded after the lock ended"
        time.sleep(0.1)


def test_a_route_that_must_write_answers_503_with_the_reason_under_a_held_lock(web):
    app, engine, headers = web
    client = app.test_client()
    client.get("/api/v1/domains", headers=headers)  # the token is looked up (and cached) before the lock
    with writers_held(engine, "api_tokens", "domains", "audit_log"):
        answer = client.post("/api/v1/domains", headers=headers, json={"names": ["kb.dk"]})
    assert answer.status_code == 503, answer.get_data(as_text=True)
    error = answer.get_json()["error"]
    assert error["code"] == "unavailable"
    assert "busy" in error["message"] and "try again" in error["message"], error
    assert client.post("/api/v1/domains", headers=headers, json={"names": ["kb.dk"]}).status_code in (200, 201)


def test_a_database_that_does_not_answer_is_a_503_with_the_reason_on_pages_and_the_api(tmp_path):
    """Nothing listens on the database's port: every route says so, the API as JSON and the pages as a page."""
    settings = load_settings(environ={}, overrides={
        "harvestsuite.database.url": "postgresql+psycopg://nobody@127.0.0.1:1/harvest",
        "harvestsuite.webui.secretKey": "test-secret", "harvestsuite.archive.root": str(tmp_path / "archive")})
    app = create_app(settings, test_config={"TESTING": True})
    client = app.test_client()
    answer = client.get("/api/v1/jobs", headers={"Authorization": "Bearer hs_not_checked"})
    assert answer.status_code == 503, answer.get_data(as_text=True)
    assert "does not answer" in answer.get_json()["error"]["message"]
    login = client.get("/login")
    assert login.status_code == 200  # the login page itself asks the database nothing
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', login.get_data(as_text=True)).group(1)
    page = client.post("/login", data={"csrf_token": csrf, "name": "curator", "password": "whatever it is"})
    assert page.status_code == 503
    assert "does not answer" in page.get_data(as_text=True)


def test_no_get_writes_on_its_way_every_page_and_api_route_answers_under_a_held_lock(web):
    """Every GET route without arguments, pages by session and the API by token, under a held lock: none
    waits for the lock (a write on the way would answer 503 after the lock timeout)."""
    app, engine, headers = web
    with engine.begin() as conn:
        UserRepository(conn).create("admin", "admin", password="correct horse battery")
        admin_token = UserRepository(conn).create_token("admin")
    api = app.test_client()
    pages = app.test_client()
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', pages.get("/login").get_data(as_text=True)).group(1)
    assert pages.post("/login", data={"csrf_token": csrf, "name": "admin",
                                      "password": "correct horse battery"}).status_code == 302
    routes = sorted(rule.rule for rule in app.url_map.iter_rules()
                    if "GET" in rule.methods and not rule.arguments and rule.rule not in ("/login",))
    assert len(routes) > 30
    api.get("/api/v1/jobs", headers={"Authorization": f"Bearer {admin_token}"})  # its use noted before the lock
    app.extensions["harvestsuite"].token_uses.flush()
    answers = {}
    with writers_held(engine, *sorted(s.metadata.tables)):
        for route in routes:
            client, kwargs = ((api, {"headers": {"Authorization": f"Bearer {admin_token}"}})
                              if route.startswith("/api/v1/") and route != "/api/v1/docs" else (pages, {}))
            answers[route] = client.get(route, **kwargs).status_code
    failed = {route: status for route, status in answers.items() if status >= 500}
    assert not failed, failed


def test_token_uses_that_could_not_be_written_are_kept_and_written_once_the_database_answers(web):
    app, engine, _ = web
    recorder = TokenUseRecorder(engine, interval=3600)  # flushed by hand here, never by its thread's look
    with engine.connect() as conn:
        token_id = conn.scalar(select(s.api_tokens.c.token_id))
    recorder.note(token_id)
    with writers_held(engine, "api_tokens"):
        assert not recorder.flush(), "a write under another writer's lock was reported done"
    assert _last_used(engine) is None
    assert recorder.flush()
    assert _last_used(engine) is not None
    recorder.close()
