"""Login, roles, API tokens and CSRF protection, for pages and the API alike."""

from __future__ import annotations

import subprocess
import sys

from sqlalchemy import create_engine, select, update

from harvestdef.db import schema as s
from harvestdef.repositories.users import UserRepository
from harvestdef.settings import load_settings
from tests.webui.conftest import PASSWORD, csrf_of
from webui import create_app
from webui.context import token_cache


def test_every_page_needs_a_login(app):
    client = app.test_client()
    response = client.get("/")
    assert response.status_code == 302 and "/login" in response.headers["Location"]
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] == "unauthorized"


def test_a_wrong_password_and_a_forged_login_are_refused(app):
    client = app.test_client()
    token = csrf_of(client)
    response = client.post("/login", data={"name": "curator", "password": "wrong", "csrf_token": token})
    assert response.status_code == 401 and "Unknown user or wrong password" in response.get_data(as_text=True)
    response = client.post("/login", data={"name": "curator", "password": PASSWORD, "csrf_token": "forged"})
    assert response.status_code == 400
    assert client.get("/").status_code == 302


def test_login_keeps_the_next_page_on_this_site_only(app):
    client = app.test_client()
    token = csrf_of(client)
    response = client.post("/login?next=https://evil.example/", data={"name": "curator", "password": PASSWORD,
                                                                       "csrf_token": token})
    assert response.headers["Location"] == "/"


def test_a_logged_in_user_sees_the_home_page_and_logs_out(login):
    client = login("archivist")
    page = client.get("/").get_data(as_text=True)
    assert "archivist" in page
    assert client.post("/logout", data={"csrf_token": "forged"}).status_code == 403
    assert client.post("/logout", data={"csrf_token": client.csrf}).status_code == 302
    assert client.get("/").status_code == 302


def test_api_tokens_authenticate_and_unknown_ones_do_not(app, tokens):
    client = app.test_client()
    ok = client.get("/api/v1/openapi.json", headers={"Authorization": f"Bearer {tokens['archivist']}"})
    assert ok.status_code == 200
    assert "/openapi.json" in ok.get_json()["paths"]
    bad = client.get("/api/v1/openapi.json", headers={"Authorization": "Bearer hs_not-a-token"})
    assert bad.status_code == 401 and "unknown or revoked" in bad.get_json()["error"]["message"]


def test_cookie_authenticated_api_writes_need_the_csrf_header(login):
    client = login("admin")
    response = client.post("/api/v1/openapi.json", json={})
    assert response.status_code == 403
    assert "CSRF" in response.get_json()["error"]["message"]


def test_users_and_tokens_from_the_command_line(tmp_path):
    database = f"sqlite:///{tmp_path / 'cli.db'}"
    base = [sys.executable, "-m", "harvestdef", "--set", f"harvestsuite.database.url={database}"]
    subprocess.run([*base, "db", "init"], check=True, capture_output=True)
    added = subprocess.run([*base, "users", "add", "karen", "--role", "curator"], input="a long password\n",
                           capture_output=True, text=True)
    assert added.returncode == 0 and "user karen (curator) created" in added.stdout, added.stderr
    token = subprocess.run([*base, "users", "token", "karen"], capture_output=True, text=True, check=True)
    assert token.stdout.strip().startswith("hs_") and len(token.stdout.strip()) > 30
    refused = subprocess.run([*base, "users", "add", "x", "--role", "emperor"], input="pw\n", capture_output=True,
                             text=True)
    assert refused.returncode != 0 and "emperor" in refused.stderr


def test_users_are_listed_deactivated_and_their_tokens_revoked_from_the_command_line(tmp_path):
    database = f"sqlite:///{tmp_path / 'cli.db'}"
    base = [sys.executable, "-m", "harvestdef", "--set", f"harvestsuite.database.url={database}"]

    def run(*arguments: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *arguments], input=stdin, capture_output=True, text=True)

    run("db", "init")
    run("users", "add", "karen", "--role", "curator", stdin="a long password\n")
    token = run("users", "token", "karen").stdout.strip()
    run("users", "token", "karen", "--label", "nightly export")
    listed = run("users", "list").stdout.splitlines()
    assert listed[0].split() == ["NAME", "ROLE", "ACTIVE", "CREATED", "TOKENS"]
    assert listed[1].split()[:3] == ["karen", "curator", "yes"] and listed[1].split()[-1] == "2"
    tokens_listed = run("users", "tokens", "karen").stdout.splitlines()
    assert tokens_listed[0].split() == ["ID", "LABEL", "CREATED", "LAST", "USED", "STATE"]
    assert [line.split()[0] for line in tokens_listed] == ["ID", "2", "1"]
    assert tokens_listed[1].split()[1:3] == ["nightly", "export"] and tokens_listed[2].split()[1] != "nightly"
    assert all(line.endswith("valid") and "never" in line for line in tokens_listed[1:])
    too_long = run("users", "token", "karen", "--label", "x" * 101)
    assert too_long.returncode != 0 and "label: has 101 characters" in too_long.stderr
    assert "API token 1 of user karen revoked" in run("users", "revoke", "1", "--actor", "admin").stdout
    assert run("users", "tokens", "karen").stdout.splitlines()[2].endswith("revoked")
    unknown = run("users", "revoke", "99")
    assert unknown.returncode != 0 and "no API token 99" in unknown.stderr
    assert "deactivated" in run("users", "deactivate", "karen").stdout
    assert run("users", "list").stdout.splitlines()[1].split()[2] == "no"
    engine = create_engine(database)
    try:
        with engine.begin() as conn:
            users = UserRepository(conn)
            assert users.user_for_token(token) is None and users.authenticate("karen", "a long password") is None
        assert "reactivated" in run("users", "reactivate", "karen").stdout
        with engine.begin() as conn:
            users = UserRepository(conn)
            assert users.user_for_token(token) is None  # revoked for good
            assert users.authenticate("karen", "a long password") is not None
            audited = conn.execute(select(s.audit_log.c.tablename, s.audit_log.c.actor)
                                   .where(s.audit_log.c.tablename == "api_tokens",
                                          s.audit_log.c.action == "update")).all()
        assert audited == [("api_tokens", "admin")]
    finally:
        engine.dispose()


def test_a_revoked_token_is_refused_once_the_token_cache_forgets_it(app, tokens, webui_engine):
    """A token found valid is trusted for tokenCacheSeconds (10 by default), then asked about again."""
    clock = [1000.0]
    cache = token_cache_of(app)
    cache.clock = lambda: clock[0]
    headers = {"Authorization": f"Bearer {tokens['operator']}"}
    client = app.test_client()
    assert client.get("/api/v1/harvesters", headers=headers).status_code == 200
    with webui_engine.begin() as conn:
        conn.execute(update(s.api_tokens).values(revoked=True))
    clock[0] += cache.seconds - 1
    assert client.get("/api/v1/harvesters", headers=headers).status_code == 200
    clock[0] += 2
    refused = client.get("/api/v1/harvesters", headers=headers)
    assert refused.status_code == 401 and "unknown or revoked" in refused.get_json()["error"]["message"]


def test_with_no_token_cache_a_revoked_token_is_refused_at_once(webui_engine, tokens, tmp_path):
    settings = load_settings(environ={}, overrides={"harvestsuite.webui.secretKey": "test-secret",
                                                    "harvestsuite.webui.tokenCacheSeconds": 0,
                                                    "harvestsuite.archive.root": str(tmp_path / "archive")})
    client = create_app(settings, webui_engine, {"TESTING": True}).test_client()
    headers = {"Authorization": f"Bearer {tokens['operator']}"}
    assert client.get("/api/v1/harvesters", headers=headers).status_code == 200
    with webui_engine.begin() as conn:
        conn.execute(update(s.api_tokens).values(revoked=True))
    assert client.get("/api/v1/harvesters", headers=headers).status_code == 401


def token_cache_of(app):
    with app.app_context():
        return token_cache()
