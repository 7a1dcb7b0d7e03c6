"""Users and their API tokens through the API: admins list users, change roles, deactivate, reset passwords
and revoke anybody's tokens; every user sees and revokes their own; nobody may leave the installation
without an active admin; every change is audited."""

from __future__ import annotations

from sqlalchemy import select

from harvestdef.db import schema as s
from harvestdef.repositories.users import UserRepository
from tests.webui.conftest import PASSWORD, csrf_of


def test_admins_list_users_with_their_tokens_and_others_may_not(api):
    listed = api("admin", "get", "/api/v1/users")
    assert listed.status_code == 200
    assert [(user["name"], user["role"], user["active"], user["tokens"]) for user in listed.get_json()["items"]] == [
        ("admin", "admin", True, 1), ("archivist", "archivist", True, 1), ("curator", "curator", True, 1),
        ("operator", "operator", True, 1)]
    refused = api("curator", "get", "/api/v1/users")
    assert refused.status_code == 403 and "only admins" in refused.get_json()["error"]["message"]


def test_a_role_change_and_a_deactivation_refuse_the_user_and_are_audited(api, app, webui_engine):
    curator = api("admin", "get", "/api/v1/users").get_json()["items"][2]
    changed = api("admin", "patch", "/api/v1/users/curator", json={"edition": curator["edition"], "role": "operator"})
    assert changed.status_code == 200 and changed.get_json()["role"] == "operator"
    stale = api("admin", "patch", "/api/v1/users/curator", json={"edition": curator["edition"], "active": False})
    assert stale.status_code == 409
    deactivated = api("admin", "patch", "/api/v1/users/curator",
                      json={"edition": changed.get_json()["edition"], "active": False})
    assert deactivated.status_code == 200 and deactivated.get_json()["active"] is False
    client = app.test_client()
    login = client.post("/login", data={"name": "curator", "password": PASSWORD, "csrf_token": csrf_of(client)})
    assert login.status_code != 302  # refused
    with webui_engine.connect() as conn:
        audited = conn.execute(select(s.audit_log.c.actor).where(s.audit_log.c.tablename == "users",
                                                                 s.audit_log.c.action == "update")).scalars().all()
    assert audited == ["admin", "admin"]
    bad = api("admin", "patch", "/api/v1/users/curator", json={"edition": 3, "role": "emperor"})
    assert bad.status_code == 400 and "emperor" in bad.get_json()["error"]["message"]


def test_the_last_active_admin_stays(api):
    admin = api("admin", "get", "/api/v1/users").get_json()["items"][0]
    refused = api("admin", "patch", "/api/v1/users/admin", json={"edition": admin["edition"], "role": "curator"})
    assert refused.status_code == 409 and "last active admin" in refused.get_json()["error"]["message"]
    refused = api("admin", "patch", "/api/v1/users/admin", json={"edition": admin["edition"], "active": False})
    assert refused.status_code == 409


def test_an_admin_resets_a_password_and_the_users_sessions_end(api, login):
    session = login("operator")
    assert session.get("/api/v1/jobs").status_code == 200
    operator = api("admin", "get", "/api/v1/users").get_json()["items"][3]
    reset = api("admin", "put", "/api/v1/users/operator/password",
                json={"edition": operator["edition"], "password": "a brand new password"})
    assert reset.status_code == 200
    assert session.get("/api/v1/jobs").status_code == 401


def test_users_see_and_revoke_their_own_tokens_and_admins_anybodys(api, webui_engine, tokens):
    with webui_engine.begin() as conn:
        second = UserRepository(conn).create_token("operator")
    own = api("operator", "get", "/api/v1/users/operator/tokens")
    assert own.status_code == 200
    ids = [token["id"] for token in own.get_json()["items"]]
    assert len(ids) == 2 and ids == sorted(ids, reverse=True)
    assert own.get_json()["items"][1]["last_used"] is not None  # the token of this very call
    assert api("curator", "get", "/api/v1/users/operator/tokens").status_code == 403
    assert api("curator", "delete", f"/api/v1/users/operator/tokens/{ids[0]}").status_code == 403
    assert api("operator", "delete", f"/api/v1/users/curator/tokens/{ids[0]}").status_code == 403
    not_theirs = api("admin", "delete", f"/api/v1/users/curator/tokens/{ids[0]}")
    assert not_theirs.status_code == 404
    revoked = api("operator", "delete", f"/api/v1/users/operator/tokens/{ids[0]}")
    assert revoked.status_code == 200 and revoked.get_json()["revoked"] is True
    by_admin = api("admin", "delete", f"/api/v1/users/operator/tokens/{ids[1]}")
    assert by_admin.status_code == 200
    with webui_engine.begin() as conn:
        assert UserRepository(conn).user_for_token(second) is None
        assert UserRepository(conn).user_for_token(tokens["operator"]) is None
